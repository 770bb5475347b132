#!/usr/bin/env bash
# Does bakeoff's zipfian key chooser draw what YCSB's own client draws?
# For each record count N, YCSB 0.17.0's Client runs M reads in workload C's
# shape (readproportion=1, requestdistribution=zipfian, one thread) against
# BasicDB, which prints the key of each READ. bakeoff's chooser draws M
# record ids over the same N (crates/core/examples/key_draws.rs). Both sides
# are reduced to three figures: the hottest record's share of draws, the
# share of draws that went to the top 1 % most drawn records, and the share
# of records drawn at least once. Prints a markdown table and exits 1 if any
# figure is outside its tolerance:
#   hottest share   within 0.5 percentage points
#   top 1 % share   within 2 points
#   coverage        within 2 points when M >= 20 x N; below that it is shown
#                   as is and not judged (the table says so)
#
#   bash bench/ycsb-distribution.sh [--records "1000 100000"] [--draws 2000000]
#                                   [--distribution zipfian|uniform]
#
# YCSB's key is "user" + decimal of abs(FNV-1a-64(keynum)), so the YCSB side
# counts distinct key strings; that is enough for these shares. YCSB cannot
# be seeded (each run differs); bakeoff's side uses the example's seed 7.
# YCSB's CoreWorkload builds ScrambledZipfianGenerator(insertstart,
# insertstart + insertcount), whose max is inclusive: its key is
# abs(fnv64(rank)) % (N + 1), key N being redrawn; bakeoff does the same
# (with % N, which ranks share a record changed, and at N = 1000 the top
# 1 % share was half a point above YCSB's).
# The jars (YCSB's core and what Client and BasicDB load at run time:
# HdrHistogram, jackson-core-asl/mapper-asl, htrace-core4) come from Maven
# Central into ${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/ycsb (YCSB_CACHE
# overrides), checked against the SHA-1s below; nothing goes into the repo.
# Needs java, curl, python3 and cargo. With BasicDB printing every key, YCSB
# does about a million reads a second here, so the default M = 2,000,000
# takes a few seconds a record count; the whole run stays well under a
# minute once the example is built.
set -euo pipefail
cd "$(dirname "$0")/.."
records="1000 100000" draws=2000000 dist=zipfian
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --draws) draws=$2; shift 2 ;;
    --distribution) dist=$2; shift 2 ;;
    *) echo "usage: $0 [--records \"N...\"] [--draws M] [--distribution zipfian|uniform]" >&2; exit 2 ;;
  esac
done
case "$dist" in zipfian|uniform) ;; *) echo "--distribution: zipfian or uniform" >&2; exit 2 ;; esac
command -v java >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null

# Maven Central path and SHA-1 of each jar on YCSB's run-time class path
# (site.ycsb:core:0.17.0 and its compile dependencies, from its pom).
jars=(
  "site/ycsb/core/0.17.0/core-0.17.0.jar d47f6ddaedd1c2e531e5ed73eecdde140d4f7aa9"
  "org/hdrhistogram/HdrHistogram/2.1.4/HdrHistogram-2.1.4.jar 2b0da22320f0ac0bbedc7b9df7881d9853d8a754"
  "org/codehaus/jackson/jackson-core-asl/1.9.4/jackson-core-asl-1.9.4.jar 8d8b2a3e5bc77ee1be67d060b44ac77d48a27d6e"
  "org/codehaus/jackson/jackson-mapper-asl/1.9.4/jackson-mapper-asl-1.9.4.jar 5206191b35112f50b8e25fcbd3f3b84e12e11cee"
  "org/apache/htrace/htrace-core4/4.1.0-incubating/htrace-core4-4.1.0-incubating.jar 12b3e2adda95e8c41d9d45d33db075137871d2e2"
)
cache=${YCSB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/ycsb}
mkdir -p "$cache"
cp=
for entry in "${jars[@]}"; do
  read -r path sha1 <<<"$entry"
  jar=$cache/${path##*/}
  if ! echo "$sha1  $jar" | sha1sum -c --status 2>/dev/null; then
    curl -sSfL -o "$jar.part" "https://repo1.maven.org/maven2/$path"
    echo "$sha1  $jar.part" | sha1sum -c --status || { echo "SHA-1 mismatch for $path" >&2; exit 1; }
    mv "$jar.part" "$jar"
  fi
  cp=$cp${cp:+:}$jar
done

cargo build --release --quiet -p bakeoff-core --example key_draws
work=$(mktemp -d /tmp/bakeoff-ycsb-distribution.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The three figures over BasicDB's verbose output on stdin
# ("READ usertable user6862728708791239180 [ <all fields>]"), as the
# example prints them.
shape_py='
import collections, json, sys
n, m = int(sys.argv[1]), int(sys.argv[2])
counts = collections.Counter(
    line.split(" ", 3)[2] for line in sys.stdin if line.startswith("READ usertable "))
reads = sum(counts.values())
if reads != m or len(counts) > n:
    sys.exit(f"YCSB read {reads} times ({m} asked), {len(counts)} distinct keys ({n} records)")
top = sorted(counts.values(), reverse=True)
print(json.dumps({"records": n, "draws": m, "hottest_share": top[0] / m,
                  "top1pct_share": sum(top[:max(1, n // 100)]) / m,
                  "coverage": len(counts) / n}))
'

for n in $records; do
  echo "records $n: YCSB ($draws reads) ..." >&2
  # workload= is required by Client when no -P file is given.
  java -cp "$cp" site.ycsb.Client -t -db site.ycsb.BasicDB \
    -p workload=site.ycsb.workloads.CoreWorkload \
    -p basicdb.verbose=true -p basicdb.randomizedelay=false \
    -p recordcount="$n" -p operationcount="$draws" \
    -p readproportion=1 -p updateproportion=0 -p requestdistribution="$dist" \
    -threads 1 2>"$work/ycsb-$n.log" \
    | python3 -c "$shape_py" "$n" "$draws" >"$work/ycsb-$n.json" \
    || { tail -20 "$work/ycsb-$n.log" >&2; exit 1; }
  echo "records $n: bakeoff ($draws draws) ..." >&2
  cargo run --release --quiet -p bakeoff-core --example key_draws -- \
    --records "$n" --draws "$draws" --distribution "$dist" >"$work/bakeoff-$n.json"
done

python3 - "$work" "$draws" "$dist" $records <<'EOF'
import json, sys
work, m, dist, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
figures = [("hottest_share", "hottest record's share", 0.5),
           ("top1pct_share", "top 1 % records' share", 2.0),
           ("coverage", "records drawn at least once", 2.0)]
print(f"YCSB 0.17.0 (Client + BasicDB, reads only, requestdistribution={dist}, 1 thread) "
      f"vs bakeoff's KeyChooser, {m} draws each\n")
print("| records | figure | YCSB | bakeoff | difference | tolerance | within |")
print("|---:|---|---:|---:|---:|---:|---|")
failed = 0
notes = []
for n in sizes:
    y = json.load(open(f"{work}/ycsb-{n}.json"))
    b = json.load(open(f"{work}/bakeoff-{n}.json"))
    for key, name, tol in figures:
        yv, bv = 100 * y[key], 100 * b[key]
        diff = bv - yv
        shown = f"±{tol:g} pts"
        if key == "coverage" and m < 20 * int(n):
            shown, verdict = "—", "not judged: draws < 20 × records"
            notes.append(n)
        elif abs(diff) <= tol:
            verdict = "yes"
        else:
            verdict = "**no**"
            failed += 1
        print(f"| {n} | {name} | {yv:.3f} % | {bv:.3f} % | {diff:+.3f} pts | {shown} | {verdict} |")
print()
if notes:
    print(f"Coverage for {', '.join(notes)} records is shown as drawn, not judged: "
          "with fewer than 20 draws a record it depends on the draw count as much as on the distribution.")
print(f"{failed} figure(s) outside tolerance." if failed else "All judged figures within tolerance.")
sys.exit(1 if failed else 0)
EOF
