#!/usr/bin/env bash
# Installs FerretDB, a server speaking the MongoDB wire protocol, for the
# `mongodb` target on machines where no mongod can be installed (Debian 12
# packages none). It is built from the Go module proxy, since FerretDB is not
# in Debian either, and stores its data in SQLite files.
#
#   scripts/install-ferretdb.sh [PREFIX]   installs PREFIX/bin/ferretdb (default /usr/local)
set -euo pipefail
version=v1.24.2
prefix=${1:-/usr/local}
if [ -x "$prefix/bin/ferretdb" ] && "$prefix/bin/ferretdb" --version 2>/dev/null | grep -q "$version"; then
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "installing Go (golang-go, from Debian) to build FerretDB"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y -qq golang-go >/dev/null
fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
echo "building FerretDB $version from the Go module proxy (a few minutes the first time)"
src=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/FerretDB/FerretDB@$version" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
# The module copy lacks the generated version file the binary insists on.
echo "$version" > "$work/src/build/version/version.txt"
(cd "$work/src" && CGO_ENABLED=0 go build -trimpath -o "$work/ferretdb" ./cmd/ferretdb)
mkdir -p "$prefix/bin"
install -m 0755 "$work/ferretdb" "$prefix/bin/ferretdb"
echo "installed $prefix/bin/ferretdb"
