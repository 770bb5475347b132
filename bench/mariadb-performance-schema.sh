#!/usr/bin/env bash
# What MariaDB's performance_schema costs: the same workload on two servers
# bakeoff starts, one as MariaDB ships (performance_schema off) and one with
# mariadb[performance_schema=true], the two interleaved run by run (bakeoff
# interleaves targets within each repeat), each server fresh and loaded.
# Prints each pair's throughput, the median ratio and the memory it takes;
# the report of the runs with it on sets the server's time per statement
# beside the client's.
#
#   bench/mariadb-performance-schema.sh [--repeats 5] [--duration 5s]
#                                       [--clients 16] [--mix 90:10]
#
# Needs: mariadb-server.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=5 duration=5s clients=16 mix=90:10
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --mix) mix=$2; shift 2 ;;
    *) echo "unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 || {
  echo "installing: mariadb-server"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
}
BAKEOFF=${BAKEOFF_BIN:-target/release/bakeoff}
[ -x "$BAKEOFF" ] || cargo build --release -q -p bakeoff
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$BAKEOFF" run -t 'mariadb,mariadb[performance_schema=true]' --repeats "$repeats" \
  --records 50000 --value-size 100 --mix "$mix" --clients "$clients" \
  --duration "$duration" --warmup 1s -q -o "$out/ps.json"
cp "$out/ps.json" "${KEEP:-/dev/null}" 2>/dev/null || true
python3 - "$out/ps.json" <<'PY'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))["runs"]
by = {}
for r in runs:
    by.setdefault(r["target"], {})[r["repeat"]] = r
off, on = by["mariadb"], by["mariadb[performance_schema=true]"]
ratios = []
print(f"{'repeat':>6} {'off ops/s':>11} {'on ops/s':>11} {'on / off':>9}")
for k in sorted(off):
    a, b = off[k]["measure"]["throughput_per_s"], on[k]["measure"]["throughput_per_s"]
    ratios.append(b / a)
    print(f"{k:>6} {a:>11,.0f} {b:>11,.0f} {b / a:>9.3f}")
def memory(r):
    return max((s.get("pss_bytes") or s["rss_bytes"]) for s in r["resources"]) / 2**20
mem = statistics.median(memory(on[k]) - memory(off[k]) for k in off)
print(f"median on / off: {statistics.median(ratios):.3f}: performance_schema costs "
      f"{(1 - statistics.median(ratios)) * 100:.1f} % of throughput and {mem:.0f} MB of the server's memory "
      f"(off: {statistics.median(memory(r) for r in off.values()):.0f} MB)")
t = on[0].get("server_time") or {}
for c in t.get("commands", []):
    print(f"server time with it on (repeat 0): {c['command']}: {c['calls']} calls, server mean "
          f"{c['server_mean_us']:.1f} us, client mean {c['client_mean_us']:.1f} us")
PY
