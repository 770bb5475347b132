"""Driver of bench/vs-sql-peers.sh: see that script for what is measured."""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

from vs_peers import BAKEOFF, callgrind_ir, perf_run

RECORDS = 100_000
# The peers read and write records RECORDS..2*RECORDS-1 of the same table:
# their updates write a constant, which bakeoff's reads would (rightly)
# count as corrupt in its own records.
PEER_FIRST = RECORDS
VALUE = 100
# The same 100 bytes every update: the peers' scripts write a constant.
VALUE_HEX = "61" * VALUE
# Keys as bakeoff writes them: bk: and the id in 12 digits.
KEY_PG = "'bk:' || lpad(:n::text, 12, '0')"

MIXES = {"100:0": 100, "50:50": 50}

# pgbench itself, not Debian's wrapper script (whose Perl would be counted
# as pgbench's CPU, and which valgrind would trace instead).
PGBENCH = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"), reverse=True)), "pgbench")


def pg_scripts(work):
    get = os.path.join(work, "get.sql")
    upd = os.path.join(work, "update.sql")
    with open(get, "w") as f:
        f.write(f"\\set n random({PEER_FIRST}, {PEER_FIRST + RECORDS - 1})\nSELECT v FROM kv WHERE k = {KEY_PG};\n")
    with open(upd, "w") as f:
        f.write(f"\\set n random({PEER_FIRST}, {PEER_FIRST + RECORDS - 1})\nUPDATE kv SET v = '\\x{VALUE_HEX}'::bytea WHERE k = {KEY_PG};\n")
    return get, upd


SYSBENCH_LUA = """
-- A prepared point SELECT (read_pct of the events) or UPDATE by key on
-- bakeoff.kv, keys bk:%%012d of first..first+records-1.
sysbench.cmdline.options = {
  read_pct = {"percentage of point SELECTs", 100},
  records = {"records in kv", 100000},
  first = {"first record", 100000},
}
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  sel = con:prepare("SELECT v FROM kv WHERE k = ?")
  sel_k = sel:bind_create(sysbench.sql.type.VARCHAR, 32)
  sel:bind_param(sel_k)
  upd = con:prepare("UPDATE kv SET v = ? WHERE k = ?")
  upd_v = upd:bind_create(sysbench.sql.type.VARCHAR, 256)
  upd_k = upd:bind_create(sysbench.sql.type.VARCHAR, 32)
  upd:bind_param(upd_v, upd_k)
  value = string.rep("a", %d)
end
function event()
  local key = string.format("bk:%%012d", sysbench.rand.uniform(sysbench.opt.first, sysbench.opt.first + sysbench.opt.records - 1))
  if sysbench.rand.uniform(1, 100) <= sysbench.opt.read_pct then
    sel_k:set(key)
    sel:execute()
  else
    upd_v:set(value)
    upd_k:set(key)
    upd:execute()
  end
end
function thread_done()
  sel:close()
  upd:close()
  con:disconnect()
end
""" % VALUE


def psql(port, sql):
    p = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "bakeoff", "-d", "postgres", "-At", "-c", sql],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


def maria(port, sql):
    p = subprocess.run(["mariadb", "-h", "127.0.0.1", "-P", str(port), "-u", "root", "-N", "-B", "-e", sql],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


def server_ops(server, port):
    """Statements the server counted: PostgreSQL's committed transactions
    (every statement here is one), MariaDB's executed prepared
    statements."""
    if server == "postgres":
        # Statistics reach shared memory when a backend ends or within a
        # second; the tools have all disconnected by now.
        time.sleep(1.1)
        return int(psql(port, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'"))
    return int(maria(port, "SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").split()[1])


class Tool:
    def __init__(self, name, server):
        self.name, self.server = name, server


class Bakeoff(Tool):
    def command(self, url, mix, conns, duration, out, work, ops=None):
        m = "100:0" if mix == "100:0" else "50:0:50"
        # A second of warm-up: the connections are made before the
        # measured phase, as pgbench's rate leaves out its connection time.
        run = ["--ops", str(ops), "--warmup", "0"] if ops else ["--warmup", "1s", "--duration", f"{duration}s"]
        return [BAKEOFF, "run", "-t", url, "--no-load", "--records", str(RECORDS), "--value-size", str(VALUE),
                "--mix", m, "--clients", str(conns), "-q", "-o", out] + run

    def parse(self, text, out, conns):
        r = json.load(open(out))["runs"][0]
        m = r["measure"]
        self.backend = r["client"]["io_backend"]
        return m["throughput_per_s"], m["all"]["mean_ns"] / 1e9


class BakeoffNoSignals(Bakeoff):
    """bakeoff without reading the server's own signals: what looking costs."""

    def command(self, url, mix, conns, duration, out, work, ops=None):
        return super().command(url, mix, conns, duration, out, work, ops) + ["--no-server-signals"]


class Pgbench(Tool):
    def command(self, url, mix, conns, duration, out, work, ops=None):
        get, upd = pg_scripts(work)
        port = url.rsplit(":", 1)[1].split("/")[0]
        scripts = ["-f", f"{get}@100"] if mix == "100:0" else ["-f", f"{get}@50", "-f", f"{upd}@50"]
        run = ["-t", str(ops // conns)] if ops else ["-T", str(duration)]
        host = urllib.parse.unquote(url.split("@", 1)[1].rsplit(":", 1)[0])
        return [PGBENCH, "-h", host, "-p", port, "-U", "bakeoff", "-n", "-M", "prepared", "-c", str(conns),
                "-j", "1"] + run + scripts + ["postgres"]

    def parse(self, text, out, conns):
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", text)
        lat = re.search(r"latency average = ([\d.]+) ms", text)
        if not tps:
            raise RuntimeError("pgbench printed no tps: " + text[-400:])
        return float(tps.group(1)), float(lat.group(1)) / 1e3 if lat else None


class Sysbench(Tool):
    def command(self, url, mix, conns, duration, out, work, ops=None):
        lua = os.path.join(work, "kv.lua")
        with open(lua, "w") as f:
            f.write(SYSBENCH_LUA)
        base, _, query = url.partition("?")
        port = base.rsplit(":", 1)[1]
        socket = [f"--mysql-socket={query.split('=', 1)[1]}"] if query.startswith("socket=") else []
        return ["sysbench", lua, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={port}", *socket,
                "--mysql-user=root", "--mysql-db=bakeoff", f"--threads={conns}",
                *([f"--events={ops}", "--time=0"] if ops else [f"--time={duration}"]),
                f"--read_pct={MIXES[mix]}", f"--records={RECORDS}", f"--first={PEER_FIRST}", "--report-interval=0", "run"]

    def parse(self, text, out, conns):
        ev = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", text)
        avg = re.search(r"avg:\s+([\d.]+)", text)
        if not ev:
            raise RuntimeError("sysbench printed no transactions per second: " + text[-400:])
        return float(ev.group(1)), float(avg.group(1)) / 1e3 if avg else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", default="1,16,64")
    ap.add_argument("--mixes", default="100:0,50:50")
    ap.add_argument("--servers", default="postgres,mariadb")
    ap.add_argument("--transport", choices=["tcp", "unix"], default="tcp",
                    help="unix: every tool reaches each server over its Unix socket")
    ap.add_argument("--signals-ab", action="store_true",
                    help="also run bakeoff with --no-server-signals in every round: what reading the server's own signals costs")
    ap.add_argument("--no-callgrind", action="store_true",
                    help="skip counting instructions per statement under valgrind")
    args = ap.parse_args()
    conns_list = [int(c) for c in args.connections.split(",")]
    mixes = args.mixes.split(",")
    wanted = args.servers.split(",")
    work = tempfile.mkdtemp(prefix="bakeoff-sqlbench-")
    starter = subprocess.Popen(["target/release/examples/sql_servers"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    try:
        urls, pg_socket, maria_socket = {}, None, None
        for _ in range(6):
            line = starter.stdout.readline().strip()
            if not line:
                raise SystemExit("the servers did not start (see above)")
            if "://" in line:
                urls[line.split("://")[0]] = line
            if line.startswith("postgres socket "):
                pg_socket = line.split(" ", 2)[2]
            if line.startswith("mariadb socket "):
                maria_socket = line.split(" ", 2)[2]
        ports = {s: int(re.search(r":(\d+)", u.split("@")[1]).group(1)) for s, u in urls.items()}
        if args.transport == "unix":
            # The socket's directory as the host, percent-encoded (libpq's form).
            urls["postgres"] = f"postgres://bakeoff@{urllib.parse.quote(pg_socket, safe='')}:{ports['postgres']}/postgres"
            # MySQL clients' form: ?socket=PATH.
            urls["mariadb"] = f"mariadb://root@127.0.0.1:{ports['mariadb']}?socket={maria_socket}"
        tools = []
        if "postgres" in wanted:
            tools += [Bakeoff("bakeoff", "postgres"), Pgbench("pgbench", "postgres")]
        if "mariadb" in wanted:
            tools += [Bakeoff("bakeoff", "mariadb"), Sysbench("sysbench", "mariadb")]
        if args.signals_ab:
            tools += [BakeoffNoSignals("bakeoff-nosignals", s) for s in wanted if s in ("postgres", "mariadb")]
        for server in {t.server for t in tools}:
            subprocess.run([BAKEOFF, "run", "-t", urls[server], "--records", str(PEER_FIRST + RECORDS), "--value-size", str(VALUE),
                            "--ops", "1", "--warmup", "0", "--clients", "16", "-q", "-o", os.path.join(work, "fill.json")],
                           check=True, capture_output=True)
        results = {}
        for rnd in range(args.rounds):
            for conns in conns_list:
                for mix in mixes:
                    for t in tools:
                        out = os.path.join(work, f"{t.name}-{t.server}.json")
                        cmd = t.command(urls[t.server], mix, conns, args.duration, out, work)
                        before = server_ops(t.server, ports[t.server])
                        started = time.monotonic()
                        text, task_ms, calls, kernel = perf_run(cmd, timeout=args.duration * 10 + 120)
                        wall = time.monotonic() - started
                        ops = server_ops(t.server, ports[t.server]) - before
                        rate, mean = t.parse(text, out, conns)
                        little = mean * rate / conns if mean else None
                        key = (t.server, conns, mix, t.name)
                        results.setdefault(key, []).append((rate, task_ms * 1e6 / ops, calls / ops, mean, little, kernel, ops / wall))
                        print(f"round {rnd + 1} {t.server:8} c{conns:<3} {mix:6} {t.name:9} {rate:>9.0f} ops/s "
                              f"{task_ms * 1e6 / ops:>7.0f} ns CPU/op {calls / ops:6.3f} syscalls/op "
                              f"mean {mean * 1e6 if mean else 0:>7.0f} us", file=sys.stderr)
        ir = {}
        if not args.no_callgrind:
            # Instructions per statement: two runs of different lengths at
            # 16 connections, 100:0, their difference over the statements
            # the server counted (start-up and connections cancel out).
            conns, small, large = 16, 16_000, 48_000
            for t in tools:
                if isinstance(t, BakeoffNoSignals):
                    continue
                try:
                    out = os.path.join(work, "cg.json")
                    counts = []
                    for n in (small, large):
                        before = server_ops(t.server, ports[t.server])
                        ins = callgrind_ir(t.command(urls[t.server], "100:0", conns, 0, out, work, ops=n))
                        counts.append((ins, server_ops(t.server, ports[t.server]) - before))
                    (a, na), (b, nb) = counts
                    ir[(t.server, t.name)] = (b - a) / (nb - na)
                except Exception as e:  # a tool that cannot run under valgrind is reported, not fatal
                    print(f"callgrind {t.name} {t.server}: {e}", file=sys.stderr)
        report(results, ir, tools, args.transport)
    finally:
        starter.stdin.close()
        starter.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


def report(results, ir, tools, transport):
    backend = next((getattr(t, "backend", None) for t in tools if hasattr(t, "backend")), "?")
    if transport == "unix":
        backend += "; every tool over the servers' Unix sockets"
    print(f"\nmedians of interleaved rounds; table kv of {RECORDS} rows, {VALUE}-byte values, point SELECT by key and "
          f"UPDATE by key; bakeoff I/O: {backend}")
    print("ops/s: each tool's own measured rate; CPU and system calls per statement the server counted "
          "(PostgreSQL xact_commit, MariaDB Com_stmt_execute) over the client's whole life;")
    print("Little: mean latency x ops/s / connections (1.00 when the reported latency is what the clients waited).")
    print("kernel: the share of the client's CPU time spent in the kernel (system / (user + system) time).")
    print(f"{'server':8} {'conns':>5} {'mix':6} {'tool':9} {'ops/s':>9} {'CPU us/op':>10} {'kernel':>7} "
          f"{'syscalls/op':>12} {'mean us':>8} {'Little':>7}")
    rows = {}
    for key in sorted(results):
        server, conns, mix, name = key
        r = results[key]
        med = [statistics.median(x[i] for x in r) if all(x[i] is not None for x in r) else None for i in range(6)]
        rows[key] = med
        little = f"{med[4]:.2f}" if med[4] is not None else "-"
        mean = f"{med[3] * 1e6:.0f}" if med[3] is not None else "-"
        kernel = f"{med[5] * 100:.0f} %" if med[5] is not None else "-"
        print(f"{server:8} {conns:>5} {mix:6} {name:9} {med[0]:>9,.0f} {med[1] / 1e3:>10.1f} {kernel:>7} "
              f"{med[2]:>12.3f} {mean:>8} {little:>7}")
    print("\ngoals (bakeoff vs the peer in the same run): CPU/op <= 0.5 x, ops/s >= 1.1 x")
    for (server, conns, mix, name), mine in sorted(rows.items()):
        if name != "bakeoff":
            continue
        peer = next((v for k, v in rows.items() if k[:3] == (server, conns, mix) and not k[3].startswith("bakeoff")), None)
        if peer:
            print(f"  {server:8} c{conns:<3} {mix:6}: CPU/op {mine[1] / peer[1]:.2f} x, ops/s {mine[0] / peer[0]:.2f} x")
        off = rows.get((server, conns, mix, "bakeoff-nosignals"))
        if off:
            print(f"  {server:8} c{conns:<3} {mix:6}: reading the server's signals: ops/s {mine[0] / off[0]:.3f} x, "
                  f"CPU/op {mine[1] / off[1]:.3f} x without (goal: within noise)")
    if ir:
        print("\ninstructions per statement (callgrind, 16 connections, 100:0, the client process):")
        for (server, name), n in sorted(ir.items()):
            peer = next((v for k, v in ir.items() if k[0] == server and not k[1].startswith("bakeoff")), None)
            ratio = f" ({n / peer:.2f} x the peer)" if peer and name == "bakeoff" else ""
            print(f"  {server:8} {name:9} {n:>8,.0f}{ratio}")


if __name__ == "__main__":
    main()
