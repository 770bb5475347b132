#!/usr/bin/env bash
# Checks every target setting's declared durability class (`bakeoff list`,
# the summary's "durable to") against what 002-crash and 002-power-cut
# measure: every setting of both presets, at a small scale (1,000 records,
# one run of 4 s each, the fault between 1 s and 2 s). A setting declared
# to survive a process crash must lose no acknowledged write under a kill;
# one declared to survive a power cut, none under a power cut either. Prints
# each preset's durability table and fails (exit 1) on any setting whose
# measured class is weaker than declared.
#
#   bash bench/durability-classes.sh [--repeats N]
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=1
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    *) echo "usage: $0 [--repeats N]" >&2; exit 2 ;;
  esac
done
cargo build --release --quiet
bin=$PWD/target/release/bakeoff
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
broken=0
for preset in 002-crash 002-power-cut; do
  fault=kill
  [ "$preset" = 002-power-cut ] && fault=power-cut
  echo "== $preset"
  # Runs that fail or err still say what they measured: the exit code of
  # the run is not this check's.
  "$bin" run "$preset" --repeats "$repeats" --records 1000 --duration 4s --warmup 0 \
    --fault "$fault@1s..2s" --quiet -o "$work/$preset.json" >/dev/null 2>"$work/$preset.err" || true
  "$bin" report "$work/$preset.json" >"$work/$preset.txt"
  # The durability table and every note on it.
  sed -n '/^durability (every write/,/^$/p' "$work/$preset.txt"
  grep -E 'weaker than declared|could not read the writes back|did not come back' "$work/$preset.txt" || true
  if grep -q 'weaker than declared' "$work/$preset.txt"; then
    broken=1
  fi
done
if [ "$broken" -ne 0 ]; then
  echo "FAIL: a setting lost acknowledged writes its declared class promises to keep" >&2
  exit 1
fi
echo "every measured class is at least as strong as declared"
