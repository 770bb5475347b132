#!/usr/bin/env bash
# User-space instructions per GET of two bakeoff builds, interleaved A B A B
# on one redis-server: callgrind, marginal over 20k and 60k operations (so
# start-up and the result file cancel out), 50 connections, pipeline 1 and
# 16. Counts, not timings: repeatable to a few instructions on an idle
# machine (a busy one moves them by tens).
#
#   bench/ab-get-instructions.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# e.g. build the last landed commit in a git worktree, copy its
# target/release/bakeoff aside, and compare it with this checkout's.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [ROUNDS]" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-3}
for pair in redis-server:redis-server valgrind:valgrind; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || { echo "install ${pair##*:} (apt-get install ${pair##*:})" >&2; exit 2; }
done
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
trap 'kill "$(cat "$work/redis.pid")" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/redis.pid" ] && break; sleep 0.1; done
"$new" run -t "redis://127.0.0.1:$port" --records 100000 --value-size 100 --ops 1 -q -o "$work/fill.json" >/dev/null 2>&1
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" run -t "redis://127.0.0.1:$port" \
    --no-load --records 100000 --value-size 100 --mix 100:0 --clients 50 --pipeline "$2" \
    --warmup 0 -q -o "$work/out.json" --ops "$3" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '%-6s %-4s %-4s %s\n' round bin P instructions/GET
for round in $(seq "$rounds"); do
  for bin in old new; do
    path=$old; [ "$bin" = new ] && path=$new
    for p in 1 16; do
      a=$(ir "$path" "$p" 20000); b=$(ir "$path" "$p" 60000)
      printf '%-6s %-4s %-4s %d\n' "$round" "$bin" "$p" $(( (b - a) / 40000 ))
    done
  done
done
