#!/usr/bin/env bash
# A/A on real servers: two identical redis-server processes (the same
# binary, the same settings: no persistence, on loopback, ports of their
# own) given to bakeoff as two external targets, `a` and `b`, with
# --repeats 6 in interleaved random rounds, EXPERIMENTS times with a new
# seed each. Every verdict line should call them a tie; the script counts,
# per line, the experiments where it did, and fails when any line is a
# tie in fewer than 9 of 10 (scaled to EXPERIMENTS).
#
#   bench/aa-redis.sh [--experiments 10] [--duration 1500ms] [--warmup 1s]
#                     [--clients 50] [--bin target/release/bakeoff]
#
# Needs redis-server (Debian's package) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
experiments=10 duration=1500ms warmup=1s clients=50 bin=target/release/bakeoff
while [ $# -gt 0 ]; do
  case "$1" in
    --experiments) experiments=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v redis-server >/dev/null || { echo "redis-server is missing: apt-get install redis-server" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin is missing: cargo build --release" >&2; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# Two free ports from the kernel.
ports=$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')
for port in $ports; do
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --dbfilename "dump-$port.rdb" --daemonize no --logfile "$work/redis-$port.log" &
  pids+=($!)
done
set -- $ports
for port in "$1" "$2"; do
  for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
done

for seed in $(seq 1 "$experiments"); do
  echo "experiment $seed of $experiments" >&2
  "$bin" run -t "a=redis://127.0.0.1:$1" -t "b=redis://127.0.0.1:$2" \
    --repeats 6 --seed "$seed" --duration "$duration" --warmup "$warmup" \
    --clients "$clients" --records 50000 --mix 90:10 \
    -o "$work/aa-$seed.json" >"$work/aa-$seed.txt" 2>"$work/aa-$seed.err"
done

python3 - "$work" "$experiments" <<'EOF'
import json, re, sys, subprocess, collections
work, n = sys.argv[1], int(sys.argv[2])
ties = collections.Counter()
lines_seen = collections.Counter()
for seed in range(1, n + 1):
    text = open(f"{work}/aa-{seed}.txt").read()
    verdict = []
    inside = False
    for line in text.splitlines():
        # The verdict's matrix runs from the line after the experiment's
        # to the summary table: a group's line at no indent, its rows (a
        # figure, then who leads or "tie") at two spaces, a wrapped
        # line's rest at four.
        if line.startswith("experiment "):
            inside = True
            continue
        if line.startswith("target "):
            break
        if inside and line.startswith("  ") and not line.startswith("   "):
            verdict.append(line.strip())
    for line in verdict:
        cells = re.split(r"\s{2,}", line)
        figure = cells[0]
        lines_seen[figure] += 1
        ties[figure] += cells[1] == "tie"
        print(f"seed {seed}: {line}")
print()
print(f"{'verdict line':<40} ties of {n}")
ok = True
for figure in sorted(lines_seen):
    print(f"{figure:<40} {ties[figure]}")
    if ties[figure] < 0.9 * n:
        ok = False
sys.exit(0 if ok else 1)
EOF
