#!/usr/bin/env bash
# Runs the whole test suite: installs the servers the tests start (real
# redis-server and memcached, never mocks), then unit, codec, integration
# and snapshot tests, plus formatting and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-run
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --quiet 2>&1 | tee /tmp/bakeoff-test.log
# Summary line for whoever reads the log from the end.
awk '/^test result:/ { split($0, a, " "); p += a[4]; f += a[6] } END { printf "%d passed, %d failed\n", p, f }' /tmp/bakeoff-test.log
