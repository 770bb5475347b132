#!/usr/bin/env bash
# Fuzzes bakeoff's codecs and parsers (the targets of fuzz/, cargo-fuzz and
# libFuzzer): each target runs from its corpus in fuzz/corpus/TARGET, one
# job at the lowest priority, for a fixed time; prints per target the
# executions, their rate and the corpus size, and exits 1 on any crash
# (panic, overflow, stack overflow, a run over 25 s, over 2 GB of memory),
# whose input is kept in fuzz/artifacts/TARGET/ with the command that
# replays it.
#
#   bench/fuzz.sh [--seconds N] [--ci] [--no-save] [--build-only] [TARGET...]
#
#   --seconds N  time per target (default 60; 4 with --ci)
#   --ci         the test suite's short run: 4 s per target, the committed
#                corpus only read
#   --build-only build the targets and stop (the test suite builds them
#                while its tests run)
#   --no-save    leave fuzz/corpus as it is (by default the inputs that
#                reach new code are merged into it, to be committed)
#   TARGET       resp memcache_text memcache_binary handlersocket postgres
#                mysql preset flags url (default: all of them)
#
# Needs the nightly toolchain and cargo-fuzz (exit 2 without them). The
# first build compiles bakeoff-core, bakeoff-drivers and their dependencies
# for fuzzing: under 4 minutes on 2 idle cores, about 7 on busy ones; later
# builds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="" ci=0 save=1 build_only=0 targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) [ $# -ge 2 ] || { echo "--seconds needs a number" >&2; exit 2; }; seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --ci) ci=1 save=0; shift ;;
    --no-save) save=0; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see $0 --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ -n "$seconds" ] || { [ "$ci" = 1 ] && seconds=4 || seconds=60; }
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "--seconds takes a whole number of seconds, not \`$seconds\`" >&2; exit 2; }
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust with rustup (https://rustup.rs), then the nightly toolchain" >&2
  exit 2
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "the nightly toolchain is missing (cargo-fuzz needs it): rustup toolchain install nightly" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
  exit 2
fi
cd fuzz
mapfile -t known < <(cargo +nightly fuzz list)
[ ${#targets[@]} -gt 0 ] || targets=("${known[@]}")
for t in "${targets[@]}"; do
  [[ " ${known[*]} " == *" $t "* ]] || { echo "no fuzz target $t; known: ${known[*]}" >&2; exit 2; }
done
# Safe Rust: libFuzzer's own checks, without AddressSanitizer (twice as
# fast); release code with debug assertions and overflow checks.
nice -n 19 cargo +nightly fuzz build -s none
[ "$build_only" = 0 ] || exit 0
bin=target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release
work=$(mktemp -d /tmp/bakeoff-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
size() { find "$1" -type f -printf '%s\n' | awk '{ n++; b += $1 } END { printf "%d %d\n", n, b }'; }
rows=() failed=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t" "$work/$t"
  echo "== $t: ${seconds} s" >&2
  # New inputs go to the first directory, a scratch one; the committed
  # corpus is only read, and so are the built-in presets for `preset`.
  extra=()
  [ "$t" != preset ] || extra=(../presets)
  rc=0
  nice -n 19 "$bin/$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" "$work/$t" "corpus/$t" "${extra[@]}" \
    > "$work/$t.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log")
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    grep -E -m 3 "panicked at|ERROR: libFuzzer|overflowed|attempt to" "$work/$t.log" >&2 || true
    tail -n 30 "$work/$t.log" >&2
    crash=$(ls -t "artifacts/$t"/{crash,timeout,oom,leak,slow-unit}-* 2>/dev/null | head -n 1 || true)
    echo "$t: crashed (exit $rc); input: fuzz/${crash:-artifacts/$t/ (none written)}" >&2
    [ -z "$crash" ] || echo "replay: cd fuzz && cargo +nightly fuzz run -s none $t $crash" >&2
  elif [ "$save" = 1 ]; then
    # Only the inputs that reach new code join the committed corpus: new
    # edges or edge counts for the codecs, new edges only for the plan
    # targets, whose corpora would otherwise grow to megabytes.
    counters=()
    case $t in preset|flags|url) counters=(-use_counters=0) ;; esac
    nice -n 19 "$bin/$t" -merge=1 "${counters[@]}" -artifact_prefix="artifacts/$t/" \
      "corpus/$t" "$work/$t" > "$work/$t.merge.log" 2>&1
  fi
  # The corpus after the run: the committed one (merged into), or it and
  # the scratch directory.
  read -r files bytes < <(size "corpus/$t")
  if [ "$save" = 0 ]; then
    read -r nfiles nbytes < <(size "$work/$t")
    files=$((files + nfiles)) bytes=$((bytes + nbytes))
  fi
  result=ok; [ "$rc" -eq 0 ] || result=CRASH
  rows+=("$(printf '%-16s %12s %8s %8s %10s  %s' "$t" "${execs:-?}" "${rate:-?}" "$files" "$bytes" "$result")")
done
printf '%-16s %12s %8s %8s %10s  %s\n' target executions exec/s files bytes result
printf '%s\n' "${rows[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "crashed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
