#!/usr/bin/env bash
# bakeoff's own footprint over a long run or a large crowd: its resident
# memory (RSS) and open file descriptors, sampled every second, with the
# first, largest and last values. Both must stay flat: a leak shows as a
# rise from first to last.
#
#   bash bench/soak.sh                                   # 10000 connections to redis, 60 s (+5 s warm-up)
#   bash bench/soak.sh --target memcached --clients 10000 --rate 10000 --duration 60s
#   bash bench/soak.sh --target redis --clients 50 --rate 20000 --duration 30m   # the soak
#
# Any other flag goes to `bakeoff run` as it is. Exit: 0 when the run was
# clean, else bakeoff's own exit code.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${BAKEOFF:-$here/target/release/bakeoff}"
target=redis
clients=10000
rate=10000
duration=60s
# Long enough for a crowd of 10000 to connect before the measured phase.
warmup=5s
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done
if [ ! -x "$bin" ]; then
  echo "error: $bin is not built; run: cargo build --release (or set BAKEOFF)" >&2
  exit 2
fi
if [ "$target" = memcached ] || [ "$target" = memcached-binary ]; then
  # memcached refuses connections beyond its -c.
  extra+=(--set "$target.max_connections=$((clients + 100))")
fi

work="$(mktemp -d -t bakeoff-soak-XXXXXX)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" run -t "$target" --clients "$clients" --rate "$rate" --duration "$duration" \
  --warmup "$warmup" --records 10000 --quiet --no-html -o "$work/soak.json" "${extra[@]}" \
  >"$work/stdout" 2>"$work/stderr" &
pid=$!
samples="$work/samples.csv"
echo "t_s,rss_kib,fds,threads" >"$samples"
t=0
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l || true)
  [ -n "$rss" ] && echo "$t,$rss,$fds,$threads" >>"$samples"
  sleep 1
  t=$((t + 1))
done
set +e
wait "$pid"
code=$?
set -e
python3 - "$samples" "$work/soak.json" "$target" "$clients" "$rate" "$duration" "$code" "$work/stderr" <<'EOF'
import csv, json, sys
samples, result, target, clients, rate, duration, code, stderr = sys.argv[1:]
rows = [r for r in csv.DictReader(open(samples))]
print(f"bakeoff run -t {target} --clients {clients} --rate {rate} --duration {duration}: exit {code}")
if not rows:
    print("no samples: the run ended at once")
    print(open(stderr).read())
    sys.exit(0)
# The crowd is connected while the descriptor count is within 1 % of its
# largest: that window is the steady state, compared first to last.
fds = [int(r["fds"]) for r in rows]
rss = [int(r["rss_kib"]) for r in rows]
top = max(fds)
# Within 1 % of the largest, or two descriptors (bakeoff's own admin
# connections come and go).
near = top - max(2, 0.01 * top)
steady = next(i for i, f in enumerate(fds) if f >= near)
end = max(i for i, f in enumerate(fds) if f >= near) + 1
s_rss, s_fds = rss[steady:end], fds[steady:end]
print(f"samples: {len(rows)} (1 s apart); connected from t = {rows[steady]['t_s']} to {rows[end - 1]['t_s']} s")
print(f"RSS MiB: first {s_rss[0] / 1024:.1f}, largest {max(s_rss) / 1024:.1f}, last {s_rss[-1] / 1024:.1f}")
# A leak rises all along; buffers touched for the first time rise only
# until every connection has been used once.
quarters = [s_rss[min(len(s_rss) - 1, q * (len(s_rss) - 1) // 4)] / 1024 for q in range(5)]
print("RSS MiB at 0, 25, 50, 75, 100 % of that window: " + ", ".join(f"{v:.1f}" for v in quarters))
print(f"open fds: first {s_fds[0]}, largest {max(s_fds)}, last {s_fds[-1]}")
try:
    r = json.load(open(result))
    m = r["runs"][0]["measure"]
    errors = sum(m["errors"].values())
    print(f"measured: {m['completed']} operations in {m['duration_s']:.1f} s ({m['completed'] / max(m['duration_s'], 1e-9):.0f}/s), {errors} errors; p99 {m['all']['p99_ns'] / 1000:.0f} us")
except Exception as e:
    print(f"no result: {e}")
    print(open(stderr).read())
EOF
exit "$code"
