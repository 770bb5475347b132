#!/usr/bin/env bash
# Installs what bakeoff needs on Debian (servers under test, Rust if absent),
# builds it in release mode, and runs the default comparison.
#
#   scripts/setup.sh            install, build, run the default comparison
#   scripts/setup.sh --no-run   install and build only
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for pair in redis-server:redis-server memcached:memcached redis-benchmark:redis-tools; do
  bin=${pair%%:*} pkg=${pair##*:}
  command -v "$bin" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# Embedded engines are loaded at run time; their runtime packages suffice.
libs=$(ldconfig -p 2>/dev/null || true)
for pair in libtokyocabinet.so.9:libtokyocabinet9 liblmdb.so.0:liblmdb0 librocksdb.so.7.8:librocksdb7.8 libsqlite3.so.0:libsqlite3-0; do
  file=${pair%%:*} pkg=${pair##*:}
  grep -qF "$file" <<<"$libs" || need_apt+=("$pkg")
done
# PostgreSQL's server binaries live outside PATH on Debian.
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql)
[ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
# tchtest / tchmgr: Tokyo Cabinet's own tools, used by the tests and bench/.
command -v tchmgr >/dev/null 2>&1 || need_apt+=(tokyocabinet-bin)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Debian packages: ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# Debian 12 packages no MongoDB server: the `mongodb` target then starts
# FerretDB, which speaks its wire protocol (built from the Go module proxy).
if ! command -v mongod >/dev/null 2>&1 && ! command -v ferretdb >/dev/null 2>&1 \
  && [ ! -x /usr/local/bin/ferretdb ]; then
  scripts/install-ferretdb.sh
fi
# Debian starts the packaged services; bakeoff starts its own servers and
# needs none of them running.
for svc in redis-server memcached mariadb postgresql; do
  if command -v service >/dev/null 2>&1; then service "$svc" stop >/dev/null 2>&1 || true; fi
done

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "installing Rust (rustup, from Debian)"
    ${sudo:-} apt-get install -y -qq rustup >/dev/null 2>&1 && rustup default stable \
      || ${sudo:-} apt-get install -y -qq cargo rustc >/dev/null
  fi
fi

# fsyncs are counted on the filesystem's tracepoints, read through tracefs;
# a machine that boots without it mounted (this class of machine does) gets
# it here, as root. Without it, runs say "fsyncs not counted" and why.
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null \
    || echo "note: tracefs could not be mounted at /sys/kernel/tracing; fsyncs will not be counted"
fi

cargo build --release --quiet
echo "built target/release/bakeoff"
if [ "${1:-}" != "--no-run" ]; then
  ./target/release/bakeoff run
fi
