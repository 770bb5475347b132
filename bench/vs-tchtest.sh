#!/usr/bin/env bash
# bakeoff's tokyo-hash against Tokyo Cabinet's own tchtest, same record
# count, same bucket number, both with the handle's mutex on (-mt), in
# interleaved rounds; prints write and read ops/s and bakeoff / tchtest.
#
#   bench/vs-tchtest.sh [RECORDS] [ROUNDS]      defaults: 1000000 3
#
# tchtest writes 8-byte values (the key string itself); bakeoff's smallest
# value is 24 bytes, because every value carries the header that lets bakeoff
# verify each read. bakeoff's rates cover the operations only; tchtest's
# "time" also covers opening and closing the database.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tchtest >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tokyocabinet-bin >/dev/null
cargo build --release --quiet
RNUM=${1:-1000000}
ROUNDS=${2:-3}
BNUM=$((RNUM * 2))
# The same memory-mapped region for both (Tokyo Cabinet's default, 64 MiB,
# is smaller than bakeoff's data set, whose keys and values are longer, and
# past it Tokyo Cabinet falls back to a pread per record).
XMSIZ=${XMSIZ:-268435456}
work=$(mktemp -d /tmp/bakeoff-vs-tchtest.XXXXXX)
trap 'rm -rf "$work"' EXIT
for round in $(seq "$ROUNDS"); do
  rm -rf "$work"/*
    t=$(tchtest write -mt -xm "$XMSIZ" "$work/t.tch" "$RNUM" "$BNUM" | awk '/^time:/ {print $2}')
  echo "tchtest write $RNUM $t" >> "$work/../vs-tchtest.$$"
    t=$(tchtest read -mt -xm "$XMSIZ" "$work/t.tch" | awk '/^time:/ {print $2}')
  echo "tchtest read $RNUM $t" >> "$work/../vs-tchtest.$$"
    ./target/release/bakeoff run -t tokyo-hash --set "tokyo-hash.bnum=$BNUM" --set "tokyo-hash.dir=$work/b" \
    --set "tokyo-hash.xmsiz=$XMSIZ" \
    --records "$RNUM" --value-size 24 --clients 1 --mix 100:0 --key-distribution sequential --ops "$RNUM" \
    --warmup 0 --quiet -o "$work/b.json" > /dev/null 2>&1
  python3 - "$work/b.json" >> "$work/../vs-tchtest.$$" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
for name, phase in (("write", run["load"]), ("read", run["measure"])):
    print(f"bakeoff {name} {phase['completed']} {phase['duration_s']}")
PY
  echo "round $round done" >&2
done
python3 - "$work/../vs-tchtest.$$" <<'PY'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    tool, op, n, secs = line.split()
    rates.setdefault((tool, op), []).append(int(n) / float(secs))
print(f"{'op':6} {'tchtest ops/s':>14} {'bakeoff ops/s':>14} {'bakeoff/tchtest':>16}")
for op in ("write", "read"):
    t = statistics.median(rates[("tchtest", op)])
    b = statistics.median(rates[("bakeoff", op)])
    print(f"{op:6} {t:>14,.0f} {b:>14,.0f} {b / t:>16.2f}")
PY
rm -f "$work/../vs-tchtest.$$"
