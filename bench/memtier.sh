#!/usr/bin/env bash
# Builds memtier_benchmark (Redis Ltd's load generator for Redis and
# memcached, the one most used against them) beside the project from its
# public source, with Debian's libevent-dev, and prints the MEMTIER=...
# line that bench/vs-peers.sh reads. Nothing of it enters this repository:
# the source and the binary live in ../memtier_benchmark (or MEMTIER_DIR).
#
#   bench/memtier.sh [SOURCE]
#
# SOURCE is any git URL or local clone of memtier_benchmark (default: its
# GitHub repository). MEMTIER_REF picks the tag or commit (default 2.3.0,
# the release the tables were measured with). Then:
#
#   MEMTIER=$(bench/memtier.sh | sed -n 's/^MEMTIER=//p') bench/vs-peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-https://github.com/RedisLabs/memtier_benchmark.git}
ref=${MEMTIER_REF:-2.3.0}
dir=${MEMTIER_DIR:-$(cd .. && pwd)/memtier_benchmark}
case "$dir" in
  "$(pwd)"|"$(pwd)"/*) echo "MEMTIER_DIR must lie outside the repository ($dir)" >&2; exit 2 ;;
esac
missing=()
for pkg in autoconf automake libtool make g++ pkg-config libevent-dev zlib1g-dev libssl-dev git; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -d "$dir/.git" ]; then
  git clone -q "$src" "$dir"
fi
git -C "$dir" fetch -q --tags "$src" 2>/dev/null || true
git -C "$dir" checkout -q "$ref"
if [ ! -x "$dir/memtier_benchmark" ] || [ "$(cat "$dir/.built-ref" 2>/dev/null)" != "$(git -C "$dir" rev-parse HEAD)" ]; then
  (
    cd "$dir"
    autoreconf -ivf > build.log 2>&1 || { tail -30 build.log >&2; exit 1; }
    ./configure -q >> build.log 2>&1 || { tail -30 build.log >&2; exit 1; }
    make -s -j"$(nproc)" > build.log 2>&1 || { tail -30 build.log >&2; exit 1; }
    git rev-parse HEAD > .built-ref
  )
fi
"$dir/memtier_benchmark" --version | head -1 >&2
echo "MEMTIER=$dir/memtier_benchmark"
