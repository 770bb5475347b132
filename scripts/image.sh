#!/usr/bin/env bash
# Assembles bakeoff's container image from scratch with buildah, for
# machines that reach no container registry (the Dockerfile needs a Debian
# base image pulled): the release binary, the libraries `ldd` lists for it,
# and bakeoff as the entry point. Then podman runs `bakeoff --version` in
# it. Usage: scripts/image.sh [TAG]   (default: bakeoff:VERSION)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in buildah podman; do
  command -v "$tool" >/dev/null || { echo "error: $tool is not installed; apt-get install $tool" >&2; exit 2; }
done
bin=target/release/bakeoff
[ -x "$bin" ] || { echo "error: $bin is missing; run cargo build --release first" >&2; exit 2; }
version=$("$bin" --version | awk '{print $2}')
tag=${1:-bakeoff:$version}
ctr=$(buildah from scratch)
trap 'buildah rm "$ctr" >/dev/null' EXIT
# The dynamic loader and every library the binary links (absolute paths).
for lib in $(ldd "$bin" | grep -o '/[^ )]*'); do
  buildah copy --quiet "$ctr" "$lib" "$lib" >/dev/null
done
# Without its debug information (the release profile keeps it for perf).
stripped=$(mktemp)
trap 'buildah rm "$ctr" >/dev/null; rm -f "$stripped"' EXIT
strip -o "$stripped" "$bin"
buildah copy --quiet --chmod 755 "$ctr" "$stripped" /usr/local/bin/bakeoff >/dev/null
buildah config --entrypoint '["/usr/local/bin/bakeoff"]' --cmd '' \
  --env TMPDIR=/tmp --label "org.opencontainers.image.version=$version" "$ctr"
buildah commit --quiet "$ctr" "$tag" >/dev/null
echo "built $tag: $(buildah images --format '{{.Size}}' "$tag" | head -1)"
# Limits the container may have where raising them is not allowed (as in
# these machines' sandbox, where podman's default of 1048576 open files is
# refused); crun there also refuses hybrid cgroups, which runc takes.
run=(podman run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
echo "${run[*]} $tag --version:"
if ! "${run[@]}" "$tag" --version 2>/tmp/image-run.$$; then
  cat /tmp/image-run.$$ >&2
  rm -f /tmp/image-run.$$
  command -v runc >/dev/null || { echo "error: podman could not run the image (above); runc (apt-get install runc) may" >&2; exit 1; }
  echo "again with --runtime runc:"
  podman --runtime runc run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$tag" --version
fi
rm -f /tmp/image-run.$$
