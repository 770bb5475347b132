#!/usr/bin/env bash
# bakeoff against the SQL load generators people use today, on one
# PostgreSQL and one MariaDB server started by bakeoff's own recipes, table
# kv of 200000 rows (100-byte values) loaded once, bakeoff on the first
# half and the peers on the second (their updates write a constant that
# bakeoff would count as corrupt): pgbench (custom scripts,
# -M prepared) and sysbench (a Lua script with a prepared point SELECT and
# an UPDATE by key) side by side with bakeoff, at 1, 16 and 64 connections,
# mixes 100:0 and 50:50 (bakeoff's update is its upsert of an existing
# row), every tool on one thread (pgbench -j 1; sysbench's threads are its
# connections), in interleaved rounds.
#
# Per tool: ops/s (its own measured rate), client CPU per statement
# (task-clock of the client process / statements the server counted),
# the share of that CPU spent in the kernel (system over user + system
# time), system calls per statement (perf raw_syscalls), and the mean latency it
# reports with the Little's-law ratio. bakeoff warms up for a second (its
# connections are made before the measured phase, as pgbench's rate leaves
# out its connection time). Then, once, instructions per statement at 16
# connections, 100:0 (callgrind: two runs of different lengths, their
# difference over the statements the server counted). Timings vary 10-40 %
# on shared machines: the table shows the median of the rounds; the
# instruction counts are exact.
#
#   bench/vs-sql-peers.sh [--rounds 3] [--duration 5] [--connections 1,16,64]
#                         [--mixes 100:0,50:50] [--servers postgres,mariadb]
#                         [--transport tcp|unix]   (unix: over the servers' sockets)
#                         [--no-callgrind]
#                         [--signals-ab]   (bakeoff also with --no-server-signals
#                                           each round: what looking costs)
#
# Needs: postgresql (pgbench, psql), mariadb-server and mariadb-client,
# sysbench, linux-perf, valgrind (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for pair in pgbench:postgresql-client psql:postgresql-client mariadb:mariadb-client sysbench:sysbench perf:linux-perf valgrind:valgrind; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo build --release --quiet
cargo build --release --quiet -p bakeoff-drivers --example sql_servers
exec python3 bench/vs_sql_peers.py "$@"
