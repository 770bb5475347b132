#!/usr/bin/env bash
# FerretDB on its two backends, SQLite and PostgreSQL, for the two operations
# a key-value benchmark does by _id: find({_id: k}).limit(1) and
# update_one({_id: k}, {$set: {v: ...}}, upsert=True) of an existing key, on
# a collection of {_id: "bk:000000001234", v: <100 random bytes>} loaded with
# insert_many in batches of 1000, at each size given. One client (pymongo),
# closed loop, uniform random keys, for --seconds per phase but at least
# --min-ops operations (a point where each operation scans the collection
# takes longer than --seconds).
#
# A third "backend", postgresql+id-index, is PostgreSQL as bakeoff sets it
# up: FerretDB 1.24 pushes {_id: k} down as `_jsonb->$1 @> $2`, which its own
# btree index on (_jsonb->'_id') cannot serve, so bakeoff adds a GIN index
# on that expression when it makes the collection and plans each statement
# with its parameters (plan_cache_mode = force_custom_plan), its database
# being ferretdb_idx here.
#
# Per backend and size: load rate, find and upsert ops/s, and the backend's
# plan for the find (FerretDB's explain: PostgreSQL "Seq Scan"/"Index Scan",
# SQLite "SCAN"/"SEARCH ... USING INDEX"). For PostgreSQL also what each
# operation cost it, from pg_stat_statements: statements per operation and
# shared blocks per statement (an index lookup touches a handful; a scan
# touches the whole table).
#
#   bench/ferretdb-backends.sh [--seconds 5] [--min-ops 10]
#                              [--backends sqlite,postgresql,postgresql+id-index]
#                              [SIZE...]
#
#   SIZE  documents per collection (default: 10000 100000 1000000)
#
# Needs ferretdb (scripts/install-ferretdb.sh), PostgreSQL's server binaries
# (postgresql; PG_BIN to pick a version, default the newest under
# /usr/lib/postgresql) and python3 with pymongo (without it, a venv with
# pymongo is made once under ~/.cache/bakeoff). Starts its own PostgreSQL
# (run as the postgres user when run as root) and FerretDB servers on free
# ports of 127.0.0.1 in a temporary directory, and stops and removes them on
# exit. The 1000000 points take a few minutes (loading, then a few seconds
# per scanning operation).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=5 min_ops=10 backends=sqlite,postgresql,postgresql+id-index sizes=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) [ $# -ge 2 ] || { echo "--seconds needs a number" >&2; exit 2; }; seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --min-ops) [ $# -ge 2 ] || { echo "--min-ops needs a number" >&2; exit 2; }; min_ops=$2; shift 2 ;;
    --min-ops=*) min_ops=${1#*=}; shift ;;
    --backends) [ $# -ge 2 ] || { echo "--backends needs a list" >&2; exit 2; }; backends=$2; shift 2 ;;
    --backends=*) backends=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see $0 --help)" >&2; exit 2 ;;
    *) [[ $1 =~ ^[1-9][0-9]*$ ]] || { echo "a size is a positive number, not $1" >&2; exit 2; }; sizes+=("$1"); shift ;;
  esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
IFS=, read -r -a backends <<<"$backends"
for b in "${backends[@]}"; do
  case $b in sqlite|postgresql|postgresql+id-index) ;; *) echo "unknown backend $b (sqlite, postgresql, postgresql+id-index)" >&2; exit 2 ;; esac
done

command -v ferretdb >/dev/null 2>&1 || { echo "install ferretdb (scripts/install-ferretdb.sh)" >&2; exit 2; }
want_pg=0
for b in "${backends[@]}"; do [ "$b" != sqlite ] && want_pg=1; done
if [ $want_pg = 1 ]; then
  pg_bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
  [ -x "$pg_bin/postgres" ] || { echo "install postgresql (or set PG_BIN to its bin directory)" >&2; exit 2; }
fi
python=python3
if ! python3 -c 'import pymongo' 2>/dev/null; then
  venv=${XDG_CACHE_HOME:-$HOME/.cache}/bakeoff/pymongo-venv
  if ! "$venv/bin/python" -c 'import pymongo' 2>/dev/null; then
    echo "making a venv with pymongo in $venv" >&2
    python3 -m venv "$venv" && "$venv/bin/pip" install -q pymongo
  fi
  python=$venv/bin/python
fi

work=$(mktemp -d)
chmod 755 "$work" # the postgres user reaches its directory through it
pids=() pg_pid=""
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  # PostgreSQL: a fast shutdown of its postmaster (pg_pid is the runuser
  # above it when run as root), then the runuser's exit.
  if [ -s "$work/pg/data/postmaster.pid" ]; then
    kill -INT "$(head -1 "$work/pg/data/postmaster.pid")" 2>/dev/null
  fi
  [ -n "$pg_pid" ] && wait "$pg_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

cat >"$work/client.py" <<'PY'
"""One backend, one size: load, explain, time find and upsert; one JSON line out."""
import json, os, random, re, subprocess, sys, time
import pymongo

port, backend, n, seconds, min_ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
psql = sys.argv[6:]  # the psql command for the postgresql backend's statistics
db = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=10000).bench
name = f"kv_{n}"
kv = db[name]
kv.drop()
if backend.endswith("+id-index"):
    # As bakeoff does: the collection's table made, then the GIN index.
    db.create_collection(name)
    subprocess.run(psql + ["-Atc", r"""DO $$ DECLARE t record; BEGIN
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'bench' AND tablename NOT LIKE '\_ferretdb\_%' LOOP
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON bench.%I USING gin ((_jsonb->''_id'') jsonb_path_ops) WITH (fastupdate = off)',
                   left(t.tablename, 50) || '_bakeoff_id', t.tablename);
  END LOOP; END $$"""], check=True, capture_output=True)
key = lambda i: "bk:%012d" % i
say = lambda *a: print(f"  {backend} {n}:", *a, file=sys.stderr, flush=True)

t = time.monotonic()
for lo in range(0, n, 1000):
    kv.insert_many([{"_id": key(i), "v": os.urandom(100)} for i in range(lo, min(n, lo + 1000))])
load = n / (time.monotonic() - t)
assert kv.count_documents({}) == n
say(f"loaded at {load:.0f} docs/s")

def plan(doc):
    """The scans in FerretDB's explain of the find: PostgreSQL's JSON plan, SQLite's EXPLAIN QUERY PLAN rows."""
    p = doc["queryPlanner"]["Plan"]
    if isinstance(p, list):
        return "; ".join(re.sub(r"^.*detail=", "", row) for row in p)
    out, todo = [], [p]
    while todo:
        node = todo.pop()
        if "Scan" in node.get("Node Type", ""):
            out.append(node["Node Type"] + (" " + node["Index Name"] if "Index Name" in node else ""))
        todo.extend(node.get("Plans", []))
    return "; ".join(out)

find_plan = plan(db.command("explain", {"find": name, "filter": {"_id": key(n // 2)}, "limit": 1}))
say("find plan:", find_plan)

def sql(q):
    return subprocess.run(psql + ["-Atc", q], check=True, capture_output=True, text=True).stdout

def find(k):
    doc = next(kv.find({"_id": k}).limit(1), None)
    assert doc is not None and doc["_id"] == k and len(doc["v"]) == 100, k

def upsert(k):
    r = kv.update_one({"_id": k}, {"$set": {"v": os.urandom(100)}}, upsert=True)
    assert r.matched_count == 1 and r.upserted_id is None, k

out = {"backend": backend, "n": n, "load": load, "find_plan": find_plan}
for op, f in (("find", find), ("upsert", upsert)):
    warm = time.monotonic() + 0.5
    f(key(random.randrange(n)))
    while time.monotonic() < warm:
        f(key(random.randrange(n)))
    if psql:
        sql("SELECT pg_stat_statements_reset()")
    ops, t = 0, time.monotonic()
    while True:
        f(key(random.randrange(n)))
        ops += 1
        dt = time.monotonic() - t
        if dt >= seconds and ops >= min_ops:
            break
    out[op] = ops / dt
    out[op + "_ops"] = ops
    if psql:
        rows = sql(
            "SELECT split_part(ltrim(query), ' ', 1),"
            " sum(calls), sum(shared_blks_hit + shared_blks_read), sum(rows)"
            # Statements on the collection's table (FerretDB's name for it
            # mangles the digits: kv______b1f3d3d0), not its metadata table.
            """ FROM pg_stat_statements WHERE query ~ '"bench"\\."kv_' GROUP BY 1 ORDER BY 1"""
        )
        cost = []
        for line in rows.split():
            verb, calls, blocks, nrows = line.split("|")
            cost.append(f"{verb} {int(calls) / ops:.1f}/op {int(blocks) / int(calls):.0f} blk {int(nrows) / int(calls):.1f} rows")
        out[op + "_pg"] = ", ".join(cost)
        say(op, out[op + "_pg"])
    say(f"{op}: {out[op]:.1f} ops/s ({ops} ops)")
kv.drop()
print(json.dumps(out), flush=True)
PY

# PostgreSQL: initdb with trust auth, one server for all sizes, the database
# FerretDB needs made beforehand (it does not create it: every command fails
# with "database ... does not exist" until it exists).
if [ $want_pg = 1 ]; then
  pg_port=$(free_port)
  mkdir "$work/pg"
  if [ "$(id -u)" = 0 ]; then chown postgres "$work/pg"; fi
  as_pg "$pg_bin/initdb" -D "$work/pg/data" -A trust -U postgres >"$work/pg/initdb.log" 2>&1 ||
    { cat "$work/pg/initdb.log" >&2; exit 1; }
  t0=$(now)
  as_pg "$pg_bin/postgres" -D "$work/pg/data" -p "$pg_port" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$work/pg" -c shared_preload_libraries=pg_stat_statements \
    >"$work/pg/log" 2>&1 &
  pg_pid=$!
  psql=(psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres)
  for _ in $(seq 300); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.1; done
  "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" || { cat "$work/pg/log" >&2; exit 1; }
  "${psql[@]}" -d postgres -c 'CREATE DATABASE ferretdb'
  "${psql[@]}" -d ferretdb -c 'CREATE EXTENSION pg_stat_statements'
  "${psql[@]}" -d postgres -c 'CREATE DATABASE ferretdb_idx'
  "${psql[@]}" -d ferretdb_idx -c 'CREATE EXTENSION pg_stat_statements'
  "${psql[@]}" -d postgres -c 'ALTER DATABASE ferretdb_idx SET plan_cache_mode = force_custom_plan'
  printf 'postgresql %s ready in %.1f s\n' "$("$pg_bin/postgres" --version | awk '{print $3}')" "$(echo "$(now) - $t0" | bc)" >&2
fi

results=()
for backend in "${backends[@]}"; do
  port=$(free_port) dir=$work/ferretdb-$backend
  mkdir -p "$dir/data"
  args=(--listen-addr="127.0.0.1:$port" --state-dir="$dir" --debug-addr=127.0.0.1:0
    --telemetry=disable --log-level=error)
  if [ "$backend" = sqlite ]; then
    args+=(--handler=sqlite --sqlite-url="file:$dir/data/")
    stats=()
  else
    database=ferretdb
    [ "$backend" = postgresql+id-index ] && database=ferretdb_idx
    args+=(--handler=postgresql --postgresql-url="postgres://postgres@127.0.0.1:$pg_port/$database?sslmode=disable")
    stats=("${psql[@]}" -d "$database")
  fi
  t0=$(now)
  ferretdb "${args[@]}" >"$dir/log" 2>&1 &
  pids+=($!)
  # Ready = a ping answered, which for PostgreSQL goes through to the database.
  ready=0
  for _ in $(seq 300); do
    "$python" -c 'import pymongo, sys; pymongo.MongoClient(f"mongodb://127.0.0.1:{sys.argv[1]}/", serverSelectionTimeoutMS=300).admin.command("ping")' \
      "$port" >/dev/null 2>&1 && { ready=1; break; }
    sleep 0.1
  done
  [ $ready = 1 ] || { echo "ferretdb ($backend) did not answer a ping:" >&2; tail -20 "$dir/log" >&2; exit 1; }
  printf 'ferretdb %s (%s) ready in %.1f s: ferretdb %s\n' "$(ferretdb --version | awk '/^version/ {print $2}')" \
    "$backend" "$(echo "$(now) - $t0" | bc)" "${args[*]}" >&2
  for n in "${sizes[@]}"; do
    results+=("$("$python" "$work/client.py" "$port" "$backend" "$n" "$seconds" "$min_ops" "${stats[@]}")")
  done
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
  unset 'pids[-1]'
done

printf '%s\n' "${results[@]}" | python3 -c "$(cat <<'PY'
import json, sys
rows = [json.loads(line) for line in sys.stdin]
print(f"{'backend':<19} {'documents':>9} {'load docs/s':>11} {'find ops/s':>10} {'upsert ops/s':>12}  find plan")
for r in rows:
    print(f"{r['backend']:<19} {r['n']:>9} {r['load']:>11.0f} {r['find']:>10.1f} {r['upsert']:>12.1f}  {r['find_plan']}")
pg = [r for r in rows if "find_pg" in r]
if pg:
    print("\npostgresql per operation (pg_stat_statements: statements per op; shared blocks, rows per statement):")
    for r in pg:
        print(f"  {r['backend']:<19} {r['n']:>9}  find:   {r['find_pg']}")
        print(f"  {'':<19} {'':>9}  upsert: {r['upsert_pg']}")
PY
)"
