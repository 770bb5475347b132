# Shared by bench/ab-get-instructions.sh and bench/instructions.sh: user-space
# instructions per Redis GET of a bakeoff binary's workers (the hot path,
# inside net::run_worker), by callgrind, marginal over 20k and 60k
# operations (so start-up and the result file cancel out), 50 connections,
# on a redis-server of its own. Counts, not timings: repeatable to one or
# two instructions. Only the workers are counted because the main thread's
# once-a-second work (the server's INFO, the run's second-by-second
# record) grows with how long the run lasts under valgrind, which a busy
# machine stretches: counted whole, the same build moved by 30 to 80 per
# GET between rounds. Source it; call start_redis first.

for pair in redis-server:redis-server valgrind:valgrind; do
  if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing Debian package: ${pair##*:}" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pair##*:}" >/dev/null
  fi
done

# Starts a redis-server on a free loopback port, filled with the 100,000
# records of 100 bytes the counts read; stopped and removed at exit.
start_redis() {
  local fill_with=$1
  work=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
  trap 'kill "$(cat "$work/redis.pid")" 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 50); do [ -s "$work/redis.pid" ] && break; sleep 0.1; done
  "$fill_with" run -t "redis://127.0.0.1:$port" --records 100000 --value-size 100 --ops 1 -q -o "$work/fill.json" >/dev/null 2>&1
}

# Instructions of one run of BINARY at pipeline P for N GETs.
ir() {
  valgrind --tool=callgrind --toggle-collect='bakeoff_core::net::run_worker*' --callgrind-out-file=/dev/null "$1" run -t "redis://127.0.0.1:$port" \
    --no-load --records 100000 --value-size 100 --mix 100:0 --clients 50 --pipeline "$2" \
    --warmup 0 -q -o "$work/out.json" --ops "$3" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

# Instructions per GET of BINARY at pipeline P.
per_get() {
  local a b
  a=$(ir "$1" "$2" 20000); b=$(ir "$1" "$2" 60000)
  echo $(( (b - a) / 40000 ))
}
