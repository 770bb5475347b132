#!/usr/bin/env bash
# Runs the whole test suite: installs the servers the tests start (real
# redis-server and memcached, never mocks) and Chromium for the HTML report,
# then unit, codec, integration and snapshot tests, plus formatting and lint
# checks, the hot path's instructions per operation against the counts kept
# in bench/, and last each fuzz target of fuzz/ for 10 s from its corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, so that whoever reads the log sees where CI's
# minutes go.
started=$SECONDS
stage() { echo "== $1 (at $((SECONDS - started)) s)"; }
stage "setup: servers, toolchain and the release build"
scripts/setup.sh --no-run
# The HTML report's test opens it in headless Chromium (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Debian package: chromium (for the HTML report test)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
export PATH="$HOME/.cargo/bin:$PATH"
stage "fmt and clippy"
cargo fmt --all -- --check
# In release mode, as the build above: clippy then reuses what the build
# scripts made (zstd's, zlib's and ring's C among them) and its proc macros, where
# a debug check builds them all again: 7 minutes on 2 cores, against 1.5.
cargo clippy --workspace --all-targets --release --quiet -- -D warnings
# The drivers crate with no target compiled in: what a feature leaves out
# must not be reached from what stays (about 20 s).
cargo clippy -p bakeoff-drivers --no-default-features --release --quiet -- -D warnings
stage "tests"
# The log is kept only for the summary line: a private file, removed at exit.
log=$(mktemp)
# Each integration test's own time under the suite's lock (see Turn in
# crates/bakeoff/tests/suite/common.rs), for the table at the end.
export BAKEOFF_TEST_TIMES
BAKEOFF_TEST_TIMES=$(mktemp)
trap 'rm -f "$log" "$BAKEOFF_TEST_TIMES"' EXIT
# In release mode: the test binaries reuse the dependencies setup.sh has
# just built (a debug build compiles them all again, about 8 minutes on 2
# cores), and the load generator under test runs at the speed users get.
# A failure ends the script only after the summary and the times below.
tests_status=0
cargo test --workspace --release --quiet --no-fail-fast 2>&1 | tee "$log" || tests_status=$?
# Summary line for whoever reads the log from the end.
awk '/^test result:/ { split($0, a, " "); p += a[4]; f += a[6] } END { printf "%d passed, %d failed\n", p, f }' "$log"
# Where the suite's minutes went: tests alone hold the machine, tests
# beside others share it, and the slowest of each.
awk -F'\t' '{ t[$1] += $2; n[$1]++ } END { for (h in t) printf "integration tests %s: %d, %.0f s of their own\n", h, n[h], t[h] }' "$BAKEOFF_TEST_TIMES"
echo "slowest integration tests (s, how, name):"
sort -t$'\t' -k2,2 -rn "$BAKEOFF_TEST_TIMES" | head -15 | awk -F'\t' '{ printf "  %6.1f  %-6s  %s\n", $2, $1, $3 }'
[ "$tests_status" -eq 0 ] || exit "$tests_status"
stage "instructions per operation"
# The hot path's instruction count, held within 5 % of the counts kept in
# bench/instructions-per-get.tsv (callgrind; counts, not timings, so a
# busy machine moves them by about 1 %). About 20 s.
bench/instructions.sh 3
stage "fuzz"
# The fuzz targets, briefly: a codec or parser change that panics on an
# input of the corpus, or on one found within 10 s, fails here. cargo-fuzz
# comes from crates.io (about a minute to build once); the targets build
# on the nightly toolchain in fuzz/target (about 4 minutes the first time).
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (crates.io) for the fuzz targets"
  cargo install --locked --quiet cargo-fuzz
fi
bench/fuzz.sh --ci
stage "done"
