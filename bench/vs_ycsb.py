"""Driver of bench/vs-ycsb.sh: see that script for what is measured."""

import argparse
import glob
import json
import os
import pwd
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from vs_peers import BAKEOFF, free_port, wait_port

GO_YCSB = os.environ.get("GO_YCSB", "go-ycsb")
VALUE = 1000
FIELDS, FIELD_LEN = 10, 100

# YCSB's core workloads (workloads/workloada..f at YCSB 0.17.0; go-ycsb's
# own workload files differ: its workloada says uniform), as go-ycsb
# properties and as a bakeoff mix. rmw: whether a read-modify-write is
# one of the operations (its read and its write are two server commands).
WORKLOADS = {
    "a": dict(props={"readproportion": "0.5", "updateproportion": "0.5"}, mix="get=50,update=50", rmw=False),
    "b": dict(props={"readproportion": "0.95", "updateproportion": "0.05"}, mix="get=95,update=5", rmw=False),
    "c": dict(props={"readproportion": "1"}, mix="get=100", rmw=False),
    "f": dict(props={"readproportion": "0.5", "readmodifywriteproportion": "0.5"}, mix="get=50,read-modify-write=50",
              rmw=True),
}
COMMON = {"updateproportion": "0", "scanproportion": "0", "insertproportion": "0", "readmodifywriteproportion": "0",
          "requestdistribution": "zipfian", "readallfields": "true", "fieldcount": str(FIELDS),
          "fieldlength": str(FIELD_LEN)}


def redis_stats(port):
    """Every command's calls (INFO commandstats), as the server counted them."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"INFO commandstats\r\n")
    buf = b""
    while True:
        buf += s.recv(1 << 16)
        if b"\r\n" in buf:
            head = buf.index(b"\r\n")
            if len(buf) >= head + 2 + int(buf[1:head]) + 2:
                break
    s.close()
    return {k: int(v) for k, v in re.findall(r"cmdstat_([a-z|]+):calls=(\d+)", buf.decode())}


def psql(port, sql, db="postgres"):
    p = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "bakeoff", "-d", db, "-At", "-c", sql],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


# Reads and writes of either tool's table, from pg_stat_statements (its
# counts are in shared memory as each statement ends). The patterns
# reach the server as constants, which pg_stat_statements records as $n,
# so this statement never counts itself.
PG_COUNTS = r"""SELECT coalesce(sum(calls) FILTER (WHERE query ~* '^\s*select\s.*\sfrom\s+(kv|usertable)\s'), 0),
 coalesce(sum(calls) FILTER (WHERE query ~* '^\s*(update\s+(kv|usertable)\s|insert\s+into\s+(kv|usertable)\s)'), 0)
 FROM pg_stat_statements"""


def server_counts(target, port):
    """(reads, writes) the server counted: GET/HMGET/HGETALL and
    SET/HSET/HMSET on Redis, SELECTs and UPDATE/INSERTs of the tools'
    tables on PostgreSQL."""
    if target == "redis":
        c = redis_stats(port)
        return (sum(c.get(k, 0) for k in ("get", "hmget", "hgetall")),
                sum(c.get(k, 0) for k in ("set", "hset", "hmset")))
    reads, writes = psql(port, PG_COUNTS).split("|")
    return int(reads), int(writes)


def cpu_seconds(pid):
    """CPU time of a server: its own, its reaped children's (PostgreSQL's
    backends, once their client left) and its live children's."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(p):
        with open(f"/proc/{p}/stat") as f:
            return [int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]]

    total = sum(stat(pid))
    for child in children_of(pid):
        try:
            total += sum(stat(child)[:2])
        except OSError:
            pass
    return total / tick


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def perf_run(cmd, timeout, stop_after=None, env=None):
    """Runs cmd under perf stat; with stop_after, sends the client (perf's
    child) SIGINT after that many seconds. Returns (output, task_clock_ms,
    syscalls, wall seconds)."""
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as pf:
        full = ["perf", "stat", "-x,", "-o", pf.name, "-e", "task-clock,raw_syscalls:sys_enter", "--"] + cmd
        started = time.monotonic()
        p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if stop_after is not None:
            try:
                p.wait(timeout=stop_after)
            except subprocess.TimeoutExpired:
                for child in children_of(p.pid):
                    os.kill(child, signal.SIGINT)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for child in children_of(p.pid):
                os.kill(child, signal.SIGKILL)
            p.kill()
            out, _ = p.communicate()
            raise RuntimeError(f"{' '.join(cmd)} did not finish in {timeout} s: {out[-500:]}")
        wall = time.monotonic() - started
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {out[-800:]}")
        task, calls = None, None
        for line in open(pf.name):
            f = line.strip().split(",")
            if len(f) > 2 and f[2].startswith("task-clock"):
                task = float(f[0])
            if len(f) > 2 and f[2].startswith("raw_syscalls:sys_enter"):
                calls = int(float(f[0]))
        return out, task, calls, wall


class Bakeoff:
    name = "bakeoff"

    def __init__(self, args, urls):
        self.args, self.urls = args, urls

    def base(self, target):
        a = self.args
        # YCSB's record as go-ycsb keeps it: a Redis hash of ten fields, a
        # PostgreSQL row of ten columns (bakeoff's table usertable is in a
        # database of its own: go-ycsb's has the same name, other columns).
        return [BAKEOFF, "run", "-t", self.urls[target], "--records", str(a.records), "--value-size", str(VALUE),
                "--clients", str(a.clients), "--threads", "1", "--warmup", "0", "-q", "--fields", str(FIELDS)]

    def load(self, target, work):
        # The load, then one operation (the least a run measures).
        subprocess.run(self.base(target) + ["--ops", "1", "-o", os.path.join(work, "load.json")], check=True,
                       capture_output=True)

    def run(self, target, workload, work):
        out = os.path.join(work, f"bakeoff-{target}-{workload}.json")
        cmd = self.base(target) + ["--no-load", "--mix", WORKLOADS[workload]["mix"], "--key-distribution", "zipfian",
                                   "--duration", f"{self.args.duration}s", "-o", out]
        text, task, calls, wall = perf_run(cmd, timeout=self.args.duration * 4 + 120)
        r = json.load(open(out))["runs"][0]
        m = r["measure"]
        failed = sum(v.get("failed", 0) for v in m["ops"].values())
        self.backend = r["client"]["io_backend"]
        return dict(own_ops=m["completed"] + failed, failed=failed, own_rate=m["throughput_per_s"],
                    mean=m["all"]["mean_ns"] / 1e9, task_ms=task, calls=calls, wall=wall)


class GoYcsb:
    name = "go-ycsb"

    def __init__(self, args, ports):
        self.args, self.ports = args, ports

    def command(self, verb, target, props):
        a = self.args
        p = {"recordcount": str(a.records), "threadcount": str(a.clients), "debug.pprof": "127.0.0.1:0",
             "fieldcount": str(FIELDS), "fieldlength": str(FIELD_LEN)}
        if target == "redis":
            db = "redis"
            p.update({"redis.addr": f"127.0.0.1:{self.ports['redis']}", "redis.pool_size": str(a.clients)})
        else:
            db = "postgresql"
            p.update({"pg.host": "127.0.0.1", "pg.port": str(self.ports["postgres"]), "pg.user": "bakeoff",
                      "pg.db": "postgres", "pg.sslmode": "disable"})
        p.update(props)
        cmd = [GO_YCSB, verb, db]
        for k, v in p.items():
            cmd += ["-p", f"{k}={v}"]
        return cmd

    def env(self):
        env = dict(os.environ)
        if self.args.go_maxprocs:
            env["GOMAXPROCS"] = str(self.args.go_maxprocs)
        return env

    def load(self, target, work):
        p = subprocess.run(self.command("load", target, {}), capture_output=True, text=True, env=self.env())
        if p.returncode != 0 or "_ERROR" in p.stdout:
            raise SystemExit(f"go-ycsb load {target} failed: {(p.stdout + p.stderr)[-800:]}")

    def run(self, target, workload, work):
        props = dict(COMMON)
        props.update(WORKLOADS[workload]["props"])
        # No run time limit in go-ycsb: more operations than it can do,
        # and SIGINT after the duration.
        props["operationcount"] = str(10 ** 12)
        cmd = self.command("run", target, props)
        text, task, calls, wall = perf_run(cmd, timeout=self.args.duration * 4 + 120, stop_after=self.args.duration,
                                           env=self.env())
        if "Run finished" not in text:
            raise RuntimeError("go-ycsb printed no totals: " + text[-800:])
        rows = {}
        for line in text.split("Run finished", 1)[1].splitlines():
            m = re.match(r"(\S+)\s+- Takes\(s\): ([\d.]+), Count: (\d+), OPS: ([\d.]+), Avg\(us\): (\d+)", line)
            if m:
                rows[m.group(1)] = (float(m.group(2)), int(m.group(3)), int(m.group(5)))
        if "TOTAL" not in rows:
            raise RuntimeError("no TOTAL line from go-ycsb: " + text[-800:])
        takes, total, total_avg = rows["TOTAL"]
        rmw = rows.get("READ_MODIFY_WRITE", (0, 0, 0))[1]
        errors = {k: v[1] for k, v in rows.items() if k.endswith("_ERROR")}
        failed = sum(errors.values())
        # TOTAL counts every database call: a read-modify-write is there as
        # its READ and its UPDATE. One operation per YCSB operation here.
        own = total - rmw + failed
        if rmw:
            # Plain reads timed as the READs (which include the
            # read-modify-writes' inner reads: the same call), plus the
            # read-modify-writes as one operation each.
            _, reads, read_avg = rows["READ"]
            mean = ((reads - rmw) * read_avg + rmw * rows["READ_MODIFY_WRITE"][2]) / reads / 1e6
        else:
            mean = total_avg / 1e6
        return dict(own_ops=own, failed=failed, errors=errors, own_rate=(total - rmw) / takes, mean=mean, task_ms=task,
                    calls=calls, wall=wall)


def start_postgres(work):
    """A private PostgreSQL on a free loopback port, superuser bakeoff
    trusted, pg_stat_statements loaded (as bakeoff's own recipe)."""
    binary = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), reverse=True)), None)
    if not binary:
        raise SystemExit("no /usr/lib/postgresql/*/bin/postgres: install postgresql")
    d = os.path.join(work, "pg")
    os.mkdir(d)
    ids = {}
    if os.geteuid() == 0:  # initdb refuses root
        pw = pwd.getpwnam("postgres")
        os.chown(d, pw.pw_uid, pw.pw_gid)
        ids = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
    subprocess.run([os.path.join(os.path.dirname(binary), "initdb"), "-D", os.path.join(d, "data"), "-U", "bakeoff",
                    "-E", "UTF8", "--locale=C", "--auth=trust"], cwd=d, check=True, capture_output=True, **ids)
    port = free_port()
    log = open(os.path.join(work, "postgres.log"), "w")
    proc = subprocess.Popen([binary, "-D", os.path.join(d, "data"), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                             "-c", f"unix_socket_directories={d}", "-c", "max_connections=300",
                             "-c", "shared_preload_libraries=pg_stat_statements"],
                            cwd=d, stdout=log, stderr=subprocess.STDOUT, **ids)
    end = time.time() + 30
    while True:
        if proc.poll() is not None:
            raise SystemExit("postgres exited: " + open(os.path.join(work, "postgres.log")).read()[-800:])
        if subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "bakeoff", "-d", "postgres", "-c", "SELECT 1"],
                          capture_output=True).returncode == 0:
            break
        if time.time() > end:
            raise SystemExit("postgres did not start")
        time.sleep(0.2)
    psql(port, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return proc, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--clients", type=int, default=16, help="connections (go-ycsb threads)")
    ap.add_argument("--workloads", default="a,b,c,f")
    ap.add_argument("--targets", default="redis,postgres")
    ap.add_argument("--go-maxprocs", type=int, default=0, help="GOMAXPROCS of go-ycsb (default: Go's, all cores)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    workloads = args.workloads.split(",")
    targets = args.targets.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"workload {w}: one of {','.join(WORKLOADS)}")
    for t in targets:
        if t not in ("redis", "postgres"):
            ap.error(f"target {t}: redis or postgres")
    # Our servers are stopped however this ends: SIGTERM and SIGHUP too.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    work = tempfile.mkdtemp(prefix="bakeoff-ycsb-")
    os.chmod(work, 0o755)
    servers = []
    try:
        ports, urls, pids = {}, {}, {}
        if "redis" in targets:
            ports["redis"] = free_port()
            servers.append((subprocess.Popen(
                ["redis-server", "--port", str(ports["redis"]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", work, "--logfile", os.path.join(work, "redis.log")]), signal.SIGTERM))
            wait_port(ports["redis"])
            pids["redis"] = servers[-1][0].pid
            urls["redis"] = f"redis://127.0.0.1:{ports['redis']}"
        if "postgres" in targets:
            proc, ports["postgres"] = start_postgres(work)
            # SIGINT: PostgreSQL's fast shutdown.
            servers.append((proc, signal.SIGINT))
            pids["postgres"] = proc.pid
            psql(ports["postgres"], "CREATE DATABASE bakeoff")
            urls["postgres"] = f"postgres://bakeoff@127.0.0.1:{ports['postgres']}/bakeoff"
        tools = [Bakeoff(args, urls), GoYcsb(args, ports)]
        for t in targets:
            for tool in tools:
                tool.load(t, work)
            print(f"loaded {args.records} records per tool into {t}: {loaded(t, ports[t])}", file=sys.stderr)
        results = {}
        for rnd in range(args.rounds):
            order = tools if rnd % 2 == 0 else tools[::-1]
            for w in workloads:
                for t in targets:
                    for tool in order:
                        before = server_counts(t, ports[t])
                        cpu_before = cpu_seconds(pids[t])
                        r = tool.run(t, w, work)
                        reads, writes = (a - b for a, b in zip(server_counts(t, ports[t]), before))
                        if t == "postgres":
                            time.sleep(0.3)  # the client's backends reaped
                        r["server_cpu"] = cpu_seconds(pids[t]) - cpu_before
                        # A read-modify-write is one read and one write: one
                        # operation per read then.
                        r["server_ops"] = reads if WORKLOADS[w]["rmw"] else reads + writes
                        r["reads"], r["writes"] = reads, writes
                        results.setdefault((w, t, tool.name), []).append(r)
                        ops = r["server_ops"]
                        print(f"round {rnd + 1} {w.upper()} {t:8} {tool.name:8} {ops / r['wall']:>9,.0f} ops/s "
                              f"(own {r['own_rate']:>9,.0f}; server {ops} ops = {reads} reads + {writes} writes, "
                              f"own {r['own_ops']}, failed {r['failed']}{' ' + str(r['errors']) if r.get('errors') else ''}) {r['task_ms'] * 1e3 / ops:6.1f} us CPU/op "
                              f"{r['calls'] / ops:6.2f} syscalls/op mean {r['mean'] * 1e6:7.0f} us, "
                              f"server {r['server_cpu'] * 1e6 / ops:6.1f} us CPU/op", file=sys.stderr)
        report(args, results, workloads, targets, tools)
    finally:
        for proc, sig in servers:
            if proc.poll() is None:
                proc.send_signal(sig)
        for proc, _ in servers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def loaded(target, port):
    if target == "redis":
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"DBSIZE\r\n")
        n = s.recv(64).decode().strip().lstrip(":")
        s.close()
        return f"{n} keys"
    return (f"bakeoff's usertable {psql(port, 'SELECT count(*) FROM usertable', 'bakeoff')} rows, "
            f"go-ycsb's usertable {psql(port, 'SELECT count(*) FROM usertable')} rows")


def report(args, results, workloads, targets, tools):
    backend = next((getattr(t, "backend", None) for t in tools if hasattr(t, "backend")), "?")
    med = lambda rows, f: statistics.median(f(r) for r in rows)
    print(f"\nMedians of {args.rounds} interleaved round(s); {args.records} records per tool, {args.clients} connections, "
          f"{args.duration} s per run, zipfian keys; bakeoff --threads 1 (I/O: {backend}), go-ycsb "
          f"GOMAXPROCS={args.go_maxprocs or os.cpu_count()}.")
    print("go-ycsb's record is YCSB's, ten 100-byte fields: a Redis hash (read HMGET of the ten fields, update HSET of "
          "one) and a row of ten VARCHAR(100) columns (SELECT of the ten, UPDATE of one); bakeoff's is the same hash on "
          "Redis and a row of ten BYTEA columns on PostgreSQL (--fields 10: SELECT of the ten, UPDATE of one), each "
          "field checked on every read.")
    print("server ops: what the server counted over the client's whole life (Redis INFO commandstats, PostgreSQL "
          "pg_stat_statements; a read-modify-write is one op, its read and write two commands); own: the tool's own "
          "count (both summed over the rounds). ops/s: server ops / the client's wall time; own ops/s: its own count over its own measured time. "
          "CPU and syscalls per server op (perf, the client process). Little: mean x own ops/s / connections. "
          "server CPU: redis-server's, or the postmaster's with its backends'. failed: go-ycsb's calls that SIGINT cut "
          "short (in F, mostly the update of a read-modify-write whose read had been done).\n")
    print("| workload | target | tool | ops/s | own ops/s | server ops / own | CPU µs/op | syscalls/op | mean µs | Little "
          "| server CPU µs/op |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = {}
    for w in workloads:
        for t in targets:
            for tool in ("bakeoff", "go-ycsb"):
                rs = results.get((w, t, tool))
                if not rs:
                    continue
                rate = med(rs, lambda r: r["server_ops"] / r["wall"])
                own = med(rs, lambda r: r["own_rate"])
                cpu = med(rs, lambda r: r["task_ms"] * 1e3 / r["server_ops"])
                calls = med(rs, lambda r: r["calls"] / r["server_ops"])
                mean = med(rs, lambda r: r["mean"])
                little = mean * own / args.clients
                server_cpu = med(rs, lambda r: r["server_cpu"] * 1e6 / r["server_ops"])
                server, mine, failed = (sum(r[k] for r in rs) for k in ("server_ops", "own_ops", "failed"))
                counts = f"{server:,} / {mine:,}"
                if failed:
                    counts += f" ({failed:,} failed)"
                rows[(w, t, tool)] = (rate, cpu)
                print(f"| {w.upper()} | {t} | {tool} | {rate:,.0f} | {own:,.0f} | {counts} | {cpu:.1f} | {calls:.2f} | "
                      f"{mean * 1e6:.0f} | {little:.2f} | {server_cpu:.1f} |")
    print("\nbakeoff ÷ go-ycsb (medians):")
    for w in workloads:
        for t in targets:
            b, g = rows.get((w, t, "bakeoff")), rows.get((w, t, "go-ycsb"))
            if b and g:
                print(f"  {w.upper()} {t:8}: CPU/op {b[1] / g[1]:.2f} x, ops/s {b[0] / g[0]:.2f} x")


if __name__ == "__main__":
    main()
