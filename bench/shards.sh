#!/usr/bin/env bash
# One experiment as one process against the same as N shards (issue 18),
# in one sitting against one Redis: 1 process with N x C clients, then N
# shards with C clients each, started together (--start-at) and merged.
# Interleaved rounds; prints each round's throughput, p50 and p99 both
# ways, the shards' start skews, and then the time `bakeoff merge` takes
# for 100 synthetic shard files.
#
#   bash bench/shards.sh [--shards N] [--clients C] [--duration S] [--rounds R]
set -euo pipefail
cd "$(dirname "$0")/.."
shards=2 clients=8 duration=5 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --shards) shards=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--shards N] [--clients C] [--duration S] [--rounds R]" >&2; exit 2 ;;
  esac
done
cargo build --release --quiet
bin=$PWD/target/release/bakeoff
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
redis=$!
trap 'kill $redis 2>/dev/null; wait $redis 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
url=redis://127.0.0.1:$port
common=(-t "$url" --records 100000 --mix 90:10 --warmup 1s --duration "${duration}s" --quiet --no-html)
total=$((shards * clients))

summary() { # file -> "ops/s p50 p99"
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]["measure"]
a = r["all"]
print(f'{r["throughput_per_s"]:.0f} {a["p50_ns"]/1000:.1f} {a["p99_ns"]/1000:.1f}')
EOF
}

echo "round  one process ($total clients): ops/s p50_us p99_us | $shards shards ($clients clients each), merged: ops/s p50_us p99_us | start skews"
for r in $(seq "$rounds"); do
  "$bin" run "${common[@]}" --clients "$total" -o "$work/one-$r.json" >/dev/null 2>&1
  start=$(date -u +%FT%TZ -d '+6 sec')
  pids=()
  for i in $(seq 0 $((shards - 1))); do
    "$bin" run "${common[@]}" --clients "$total" --shard "$i/$shards" --start-at "$start" \
      -o "$work/shard-$r-$i.json" >/dev/null 2>"$work/shard-$r-$i.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  "$bin" merge "$work"/shard-"$r"-*.json -o "$work/merged-$r.json" 2>/dev/null
  skews=$(python3 - "$work/merged-$r.json" <<'PY'
import json, sys
print(" ".join(f"{s['start_skew_s'] * 1e3:.2f} ms" for s in json.load(open(sys.argv[1]))["shards"]))
PY
)
  echo "$r      $(summary "$work/one-$r.json") | $(summary "$work/merged-$r.json") | $skews"
done

# Merge time: 100 synthetic shards made from one shard file (indexes 0..99).
python3 - "$work/shard-1-0.json" "$work/synthetic" <<'EOF'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
r = json.load(open(src))
for i in range(100):
    r["shard"]["index"], r["shard"]["count"] = i, 100
    json.dump(r, open(f"{out}/s{i:03}.json", "w"))
EOF
s=$(date +%s.%N)
"$bin" merge "$work"/synthetic/s*.json -o "$work/synthetic/merged.json" 2>/dev/null
e=$(date +%s.%N)
size=$(du -sh "$work/synthetic" | cut -f1)
python3 -c "import sys; print(f'merge of 100 shard files ({sys.argv[3]} on disk), with the HTML report: {float(sys.argv[2]) - float(sys.argv[1]):.2f} s')" "$s" "$e" "$size"
