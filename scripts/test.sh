#!/usr/bin/env bash
# Runs the whole test suite: installs the servers the tests start (real
# redis-server and memcached, never mocks) and Chromium for the HTML report,
# then unit, codec, integration and snapshot tests, plus formatting and lint
# checks, and last each fuzz target of fuzz/ for 10 s from its corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
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
cargo fmt --all -- --check
# The logs are private files, removed at exit; the jobs below are stopped
# with everything they started, should the script end before them.
log=$(mktemp)
side=$(mktemp -d)
stop_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do stop_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'for j in $(jobs -p); do stop_tree "$j"; done; rm -rf "$log" "$side"' EXIT
# Beside the tests, at the lowest priority (the tests wait out their fixed
# durations much of the time, and take the CPU first when they want it):
# the lint, and cargo-fuzz (from crates.io, about a minute to build once)
# with the fuzz targets (nightly, in fuzz/target: about 4 minutes the first
# time).
(
  rc=0
  nice -n 19 cargo clippy --workspace --all-targets --quiet -- -D warnings || rc=$?
  echo "$rc" > "$side/clippy.rc"
) > "$side/clippy.log" 2>&1 &
clippy_job=$!
(
  rc=0
  if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz (crates.io) for the fuzz targets"
    nice -n 19 cargo install --locked --quiet cargo-fuzz || rc=$?
  fi
  [ "$rc" -ne 0 ] || bench/fuzz.sh --build-only || rc=$?
  echo "$rc" > "$side/fuzz.rc"
) > "$side/fuzz.log" 2>&1 &
fuzz_job=$!
# In release mode: the test binaries reuse the dependencies setup.sh has
# just built (a debug build compiles them all again, about 8 minutes on 2
# cores), and the load generator under test runs at the speed users get.
tests_rc=0
cargo test --workspace --release --quiet --no-fail-fast 2>&1 | tee "$log" || tests_rc=$?
# Summary line for whoever reads the log from the end.
awk '/^test result:/ { split($0, a, " "); p += a[4]; f += a[6] } END { printf "%d passed, %d failed\n", p, f }' "$log"
wait "$clippy_job" || true
cat "$side/clippy.log"
[ "$(cat "$side/clippy.rc" 2>/dev/null)" = 0 ] || { echo "clippy failed (above)"; exit 1; }
[ "$tests_rc" = 0 ] || exit "$tests_rc"
# The fuzz targets, briefly: a codec or parser change that panics on an
# input of the corpus, or on one found within 10 s, fails here.
wait "$fuzz_job" || true
tail -n 20 "$side/fuzz.log"
[ "$(cat "$side/fuzz.rc" 2>/dev/null)" = 0 ] || { echo "building the fuzz targets failed (above)"; exit 1; }
bench/fuzz.sh --ci
