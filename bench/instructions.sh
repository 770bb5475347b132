#!/usr/bin/env bash
# Holds the hot path to its instruction count: instructions per Redis GET of
# this checkout's release build (see bench/instructions-lib.sh), at
# pipeline 1 and 16, the median of ROUNDS runs, against the counts kept in
# bench/instructions-per-get.tsv. Fails (exit 1) when either has grown by
# more than 5 %: find what added them with bench/ab-get-instructions.sh
# against the commit the file names, and take them out, or, when the growth
# buys something worth it, say so in the commit and keep the new counts
# (--keep).
#
#   bench/instructions.sh [--keep] [ROUNDS]       (scripts/test.sh runs it)
#   BAKEOFF_BIN=path/to/bakeoff bench/instructions.sh   (another build)
set -euo pipefail
cd "$(dirname "$0")/.."
keep=no
[ "${1:-}" = --keep ] && { keep=yes; shift; }
rounds=${1:-3}
kept=bench/instructions-per-get.tsv
bin=${BAKEOFF_BIN:-target/release/bakeoff}
[ -x "$bin" ] || cargo build --release --quiet
. bench/instructions-lib.sh
start_redis "$bin"
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
declare -A now
for p in 1 16; do
  counts=()
  for _ in $(seq "$rounds"); do counts+=("$(per_get "$bin" "$p")"); done
  now[$p]=$(median "${counts[@]}")
  echo "pipeline $p: ${counts[*]} instructions per GET (median ${now[$p]})"
done
if [ "$keep" = yes ]; then
  {
    echo "# Instructions per Redis GET (bench/instructions.sh): pipeline, count, commit measured"
    for p in 1 16; do printf '%s\t%s\t%s\n' "$p" "${now[$p]}" "$(git rev-parse --short HEAD)"; done
  } > "$kept"
  echo "kept in $kept"
  exit 0
fi
failed=0
while IFS=$'\t' read -r p count commit; do
  case "$p" in '#'*|'') continue ;; esac
  limit=$(( count * 105 / 100 ))
  if [ "${now[$p]}" -gt "$limit" ]; then
    echo "FAIL pipeline $p: ${now[$p]} instructions per GET, more than 5 % over the $count kept (measured at $commit; at most $limit)" >&2
    failed=1
  else
    echo "ok pipeline $p: ${now[$p]} instructions per GET against $count kept (at most $limit)"
  fi
done < "$kept"
exit $failed
