#!/usr/bin/env bash
# bakeoff against the load generators people use today, on the same servers
# with the same settings: SET and GET, 100-byte values, 100000 keys filled
# first, 50 connections, pipeline 1 and 16, same duration.
#
# Open-loop rows (bakeoff --rate R at 500, 10000 and 40000/s, Redis,
# pipeline 1) show what sending on time costs per operation against the same
# client in closed loop, and how late the sends left (send lag p99). Beside
# them at the same rates: floor@R, bench/open_loop_floor.c, a loop that does
# nothing but sleep until each send time and send (the least an open loop
# can spend per request on this machine), and memtier@R, memtier_benchmark's
# --rate-limiting (quotas per connection and 20 ms tick, not send times).
#
# Per tool: ops/s, client CPU ns per operation (task-clock of the client
# process / operations), system calls per operation (perf raw_syscalls),
# user-space instructions per operation (callgrind, marginal over two run
# lengths so start-up cancels out), and the Little's-law check of the mean
# latency each tool reports. Timings vary 10-40 % on shared machines: the
# table shows the median of interleaved rounds; the counts are steady.
#
#   bench/vs-peers.sh [--rounds 3] [--duration 4] [--no-callgrind]
#                     [--signals-ab]   (bakeoff also with --no-server-signals
#                                       each round: what reading the server's
#                                       own time and background work costs)
#                     [--before BINARY] (another bakeoff build in every round,
#                                       closed and open loop: before and after
#                                       in one sitting)
#                     [--open-rates 500,10000,40000]
#
# Needs: redis-server, redis-tools (redis-benchmark), memcached,
# libmemcached-tools (memcaslap), linux-perf, valgrind; memtier_benchmark is
# used when it is on PATH (set MEMTIER=/path/to/memtier_benchmark;
# bench/memtier.sh builds it beside the project).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for pair in redis-server:redis-server memcached:memcached redis-benchmark:redis-tools memcaslap:libmemcached-tools perf:linux-perf valgrind:valgrind gcc:gcc; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo build --release --quiet
# The floor rows: a C loop that only sleeps and sends (target/ is not committed).
gcc -O2 -Wall -Wextra -Werror -o target/open_loop_floor bench/open_loop_floor.c
exec python3 bench/vs_peers.py "$@"
