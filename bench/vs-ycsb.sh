#!/usr/bin/env bash
# bakeoff beside go-ycsb (github.com/pingcap/go-ycsb, YCSB's Go port) on
# YCSB's core workloads A, B, C and F (A read 0.5 / update 0.5, B 0.95 /
# 0.05, C read only, F read 0.5 / read-modify-write 0.5; zipfian keys), on
# one redis-server and one PostgreSQL started here (loopback, a temporary
# directory, both stopped on exit): same record count, same connections,
# same duration, interleaved rounds. Each tool loads its own records once
# per server and reads and writes only those.
#
# go-ycsb stores YCSB's record (ten 100-byte fields) as a Redis hash
# (HSET, HMGET of the ten fields) and as a row of ten VARCHAR columns
# (an update writes one field). bakeoff does the same on Redis
# (--fields 10: HMGET of the ten fields, HSET of one), and on PostgreSQL
# stores one 1000-byte value (SELECT, INSERT ... ON CONFLICT of the whole
# record). go-ycsb has no
# run time limit (its maxexecutiontime property is never read), so it is
# given an operation count it cannot reach and stopped with SIGINT after
# the duration: its handler stops the workers and prints its totals.
#
# Per run: the operations the server counted over the client's whole life
# (Redis INFO commandstats; PostgreSQL pg_stat_statements calls), each
# tool's own count and rate, client CPU per operation (perf task-clock of
# the client process / server-counted operations), system calls per
# operation (perf raw_syscalls), the mean latency each tool reports and its
# Little's-law ratio (mean x own ops/s / connections: near 1 when the mean
# is what the clients waited). A read-modify-write is one operation (two
# server commands), for both tools. The table shows the median of the
# rounds; timings vary 10-40 % on shared machines.
#
#   bench/vs-ycsb.sh [--rounds 3] [--duration 10] [--records 10000]
#                    [--clients 16] [--workloads a,b,c,f]
#                    [--targets redis,postgres] [--go-maxprocs N]
#
# go-ycsb is built once into ${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/go-ycsb
# from the Go module proxy (GO_YCSB_VERSION=vX.Y.Z for another tag than the
# latest; GO_YCSB=/path/to/go-ycsb to use a binary of your own);
# BAKEOFF_BIN=/path/to/bakeoff measures another build of bakeoff.
#
# Needs: go, redis-server, postgresql (initdb, postgres, psql), linux-perf.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for pair in redis-server:redis-server psql:postgresql-client perf:linux-perf; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
done
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# go-ycsb, built once per version into the cache (never into the repository).
if [ -z "${GO_YCSB:-}" ]; then
  command -v go >/dev/null 2>&1 || { echo "go is needed to build go-ycsb (https://go.dev/dl/)" >&2; exit 1; }
  module=github.com/pingcap/go-ycsb
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/go-ycsb"
  version="${GO_YCSB_VERSION:-}"
  if [ -z "$version" ]; then
    version=$(go list -m -json "$module@latest" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Version"])')
  fi
  GO_YCSB="$cache/bin/go-ycsb-$version"
  if [ ! -x "$GO_YCSB" ]; then
    mkdir -p "$cache/bin"
    echo "building go-ycsb $version into $cache (once)" >&2
    rm -rf "$cache/gobin"
    if GOBIN="$cache/gobin" go install "$module/cmd/go-ycsb@$version" 2>"$cache/install.log"; then
      mv "$cache/gobin/go-ycsb" "$GO_YCSB"
    else
      # go install refuses a module whose go.mod has replace directives
      # (go-ycsb's replaces apache/thrift): build its source from the
      # module cache instead, in a writable copy.
      sed 's/^/  go install: /' "$cache/install.log" | tail -n 3 >&2
      dir=$(go mod download -json "$module@$version" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
      src="$cache/src-$version"
      rm -rf "$src"
      cp -r "$dir" "$src"
      chmod -R u+w "$src"
      # Without cgo: the bindings that need it (rocksdb, sqlite,
      # foundationdb) are behind build tags left unset here.
      (cd "$src" && CGO_ENABLED=0 go build -mod=mod -o "$GO_YCSB.tmp" ./cmd/go-ycsb)
      mv "$GO_YCSB.tmp" "$GO_YCSB"
    fi
    rm -rf "$cache/gobin"
  fi
fi
export GO_YCSB

if [ -z "${BAKEOFF_BIN:-}" ]; then
  cargo build --release --quiet -p bakeoff
  BAKEOFF_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/release/bakeoff"
fi
export BAKEOFF_BIN
exec python3 bench/vs_ycsb.py "$@"
