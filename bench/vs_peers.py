"""Driver of bench/vs-peers.sh: see that script for what is measured."""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# BAKEOFF_BIN measures another build (e.g. the commit before a change).
BAKEOFF = os.environ.get("BAKEOFF_BIN") or os.path.abspath("target/release/bakeoff")
CLIENTS = 50
RECORDS = 100_000
VALUE = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"server on {port} did not start")


def send_all(port, payload, expect_lines):
    """Pipes a whole fill into a server and waits for every reply line."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    got = 0
    buf = b""
    while got < expect_lines:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("server closed the connection during the fill")
        buf += chunk
        got += chunk.count(b"\n")
    s.close()


def fill_redis(port, keys):
    value = b"x" * VALUE
    parts = []
    for k in keys:
        kb = k.encode()
        parts.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(kb), kb, len(value), value))
    send_all(port, b"".join(parts), len(parts))


def fill_memcached(port, keys):
    value = b"x" * VALUE
    parts = [b"set %s 0 0 %d\r\n%s\r\n" % (k.encode(), len(value), value) for k in keys]
    send_all(port, b"".join(parts), len(parts))


def server_ops(server, port):
    """Operations the server itself counted (GET + SET), so that every tool
    is measured alike, whatever it counts in its own report."""
    s = socket.create_connection(("127.0.0.1", port))
    if server == "redis":
        s.sendall(b"INFO commandstats\r\n")
        end = lambda b: b.count(b"\r\n") >= 2 and len(b) >= b.index(b"\r\n") + 2 + int(b[1:b.index(b"\r\n")]) + 2
    else:
        s.sendall(b"stats\r\n")
        end = lambda b: b.endswith(b"END\r\n")
    buf = b""
    while not (buf and end(buf)):
        buf += s.recv(1 << 16)
    s.close()
    text = buf.decode()
    if server == "redis":
        calls = re.findall(r"cmdstat_(get|set):calls=(\d+)", text)
        return sum(int(c) for _, c in calls)
    return sum(int(v) for k, v in re.findall(r"STAT (cmd_get|cmd_set) (\d+)", text))


def perf_run(cmd, timeout):
    """Runs cmd under perf stat; returns (stdout, task_clock_ms, syscalls,
    kernel_share): the last is the share of the client's CPU time spent in
    the kernel (system over user + system time, from the rusage of the
    children, perf's own included, which is small)."""
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as pf:
        full = ["perf", "stat", "-x,", "-o", pf.name, "-e", "task-clock,raw_syscalls:sys_enter", "--"] + cmd
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        kernel_share = system / (user + system) if user + system > 0 else None
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-500:]}")
        task, calls = None, None
        for line in open(pf.name):
            f = line.strip().split(",")
            if len(f) > 2 and f[2].startswith("task-clock"):
                task = float(f[0])
            if len(f) > 2 and f[2].startswith("raw_syscalls:sys_enter"):
                calls = int(float(f[0]))
        return p.stdout + p.stderr, task, calls, kernel_share


class Tool:
    """One load generator against one server kind."""

    # The operations it runs.
    ops = ("get", "set")

    def __init__(self, name, server, pipelines):
        self.name, self.server, self.pipelines = name, server, pipelines

    def command(self, op, pipeline, port, duration, ops=None, out=None):
        raise NotImplementedError

    def parse(self, text, out, duration):
        """Returns (operations, ops/s, mean latency in seconds or None)."""
        raise NotImplementedError


class Bakeoff(Tool):
    binary = BAKEOFF

    def command(self, op, pipeline, port, duration, ops=None, out=None):
        url = f"{self.server}://127.0.0.1:{port}"
        cmd = [self.binary, "run", "-t", url, "--no-load", "--records", str(RECORDS), "--value-size", str(VALUE),
               "--mix", "100:0" if op == "get" else "0:100", "--clients", str(CLIENTS), "--pipeline", str(pipeline),
               "--warmup", "0", "-q", "-o", out]
        return cmd + (["--ops", str(ops)] if ops else ["--duration", f"{duration}s"])

    def parse(self, text, out, duration):
        r = json.load(open(out))["runs"][0]
        m = r["measure"]
        ops = m["completed"] + sum(v["failed"] for v in m["ops"].values())
        mean = m["all"]["mean_ns"] / 1e9
        self.backend = r["client"]["io_backend"]
        return ops, m["throughput_per_s"], mean


class BakeoffNoSignals(Bakeoff):
    """bakeoff without reading the server's own signals (its time per
    command, its background work): what looking costs."""

    def command(self, op, pipeline, port, duration, ops=None, out=None):
        return super().command(op, pipeline, port, duration, ops, out) + ["--no-server-signals"]


class BakeoffOpen(Bakeoff):
    """bakeoff in open loop at a fixed rate: what sending on time costs."""

    def __init__(self, name, server, pipelines, rate):
        super().__init__(name, server, pipelines)
        self.rate = rate

    def command(self, op, pipeline, port, duration, ops=None, out=None):
        return super().command(op, pipeline, port, duration, ops, out) + ["--rate", str(self.rate)]

    def parse(self, text, out, duration):
        r = json.load(open(out))["runs"][0]
        m = r["measure"]
        lag = (m.get("send_lag") or {}).get("p99_ns", 0)
        self.last_lag = lag
        self.extra = (f"send lag p99 {lag / 1e3:.1f} us, spin {max(r['client'].get('spin_percent') or [0]):.0f} %, "
                      f"work {max(r['client']['thread_busy_percent']):.0f} % of the thread")
        return super().parse(text, out, duration)


class RedisBenchmark(Tool):
    def command(self, op, pipeline, port, duration, ops=None, out=None):
        n = ops or self.n[(op, pipeline)]
        return ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(CLIENTS), "-n", str(n), "-d", str(VALUE),
                "-r", str(RECORDS), "-P", str(pipeline), "-t", op, "--csv"]

    def parse(self, text, out, duration):
        for line in text.splitlines():
            f = [x.strip('"') for x in line.split(",")]
            if len(f) > 2 and f[0].upper() in ("GET", "SET"):
                rps, avg_ms = float(f[1]), float(f[2])
                return int(self.last_n), rps, avg_ms / 1e3
        raise RuntimeError("no CSV line from redis-benchmark: " + text[-300:])


class Memtier(Tool):
    def command(self, op, pipeline, port, duration, ops=None, out=None):
        proto = "redis" if self.server == "redis" else "memcache_text"
        cmd = [self.binary, "-s", "127.0.0.1", "-p", str(port), "-P", proto, "-t", "1", "-c", str(CLIENTS),
               f"--pipeline={pipeline}", "-d", str(VALUE), "--ratio", "0:1" if op == "get" else "1:0",
               "--key-pattern=R:R", "--key-minimum=1", f"--key-maximum={RECORDS}", "--hide-histogram",
               "--distinct-client-seed", f"--json-out-file={out}"]
        return cmd + ([f"--requests={max(1, ops // CLIENTS)}"] if ops else [f"--test-time={duration}"])

    def parse(self, text, out, duration):
        j = json.load(open(out))
        totals = j["ALL STATS"]["Totals"]
        rate = float(totals["Ops/sec"])
        runtime = j["ALL STATS"].get("Runtime", {})
        secs = (runtime.get("Total duration", duration * 1000)) / 1000.0
        return int(rate * secs), rate, float(totals.get("Latency", totals.get("Average Latency", 0))) / 1e3


class MemtierRate(Memtier):
    """memtier_benchmark with --rate-limiting at the same total rate: its
    own game of a rate-limited run. It is not an open loop: each connection
    gets a quota of requests per 20 ms tick and sends them as soon as the
    one before is answered, and it times each from its actual send."""

    def __init__(self, name, server, pipelines, rate):
        super().__init__(name, server, pipelines)
        self.rate = rate

    def command(self, op, pipeline, port, duration, ops=None, out=None):
        return super().command(op, pipeline, port, duration, ops, out) + [
            f"--rate-limiting={max(1, self.rate // CLIENTS)}"]


class OpenLoopFloor(Tool):
    """bench/open_loop_floor.c: one timed sleep per request and a send,
    nothing else (no parsing, no latency): the least CPU per request an
    open loop can spend on this machine at this rate."""

    ops = ("get",)
    binary = os.path.abspath("target/open_loop_floor")

    def __init__(self, name, server, pipelines, rate):
        super().__init__(name, server, pipelines)
        self.rate = rate

    def command(self, op, pipeline, port, duration, ops=None, out=None):
        return [self.binary, str(port), str(self.rate), str(duration), str(CLIENTS)]

    def parse(self, text, out, duration):
        f = dict(zip(*[iter(text.split())] * 2))
        self.last_lag = float(f["lag_p99_us"]) * 1e3
        self.extra = f"send lag p99 {float(f['lag_p99_us']):.1f} us"
        return int(f["requests"]), int(f["requests"]) / duration, None


class Memaslap(Tool):
    def command(self, op, pipeline, port, duration, ops=None, out=None):
        cfg = out + ".cfg"
        with open(cfg, "w") as f:
            f.write("key\n16 16 1\nvalue\n%d %d 1\ncmd\n0 %s\n1 %s\n" % (VALUE, VALUE, "0" if op == "get" else "1", "1" if op == "get" else "0"))
        # A window of 2k keys per connection: its warm-up fills 100000 keys.
        cmd = ["memcaslap", "-s", f"127.0.0.1:{port}", "-T", "1", "-c", str(CLIENTS), "-X", str(VALUE), "-w", "2k", "-F", cfg]
        return cmd + (["-x", str(ops)] if ops else ["-t", f"{duration}s"])

    def parse(self, text, out, duration):
        m = re.search(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", text)
        if not m:
            raise RuntimeError("memaslap printed no totals: " + text[-300:])
        avg = None
        g = re.search(r"Get Statistics.*?Global.*?Avg:\s+(\d+)", text, re.S) if "Get Statistics" in text else None
        if g:
            avg = int(g.group(1)) / 1e6
        return int(m.group(2)), float(m.group(3)), avg


def callgrind_ir(cmd):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd,
                           capture_output=True, text=True, timeout=900)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if not m:
            raise RuntimeError("callgrind: " + p.stderr[-400:])
        return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--before", metavar="BINARY",
                    help="also run this other bakeoff build (e.g. the last landed commit's) in every round, "
                         "closed and open loop, as bakeoff-before: before and after in one sitting")
    ap.add_argument("--open-rates", default="500,10000,40000",
                    help="rates of the open-loop rows (bakeoff --rate, GET and SET on Redis, pipeline 1); empty for none")
    ap.add_argument("--signals-ab", action="store_true",
                    help="also run bakeoff with --no-server-signals in every round: what reading the server's own signals costs")
    args = ap.parse_args()
    pipelines = [int(p) for p in args.pipelines.split(",")]
    # SIGTERM and SIGHUP (a session or a CI job ending) unwind through the
    # `finally` below as Ctrl-C does: the servers stop, the folder goes.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    work = tempfile.mkdtemp(prefix="bakeoff-bench-")
    rport, mport = free_port(), free_port()
    servers = [
        subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--dir", work, "--logfile", os.path.join(work, "redis.log")]),
        subprocess.Popen(["memcached", "-p", str(mport), "-l", "127.0.0.1", "-U", "0", "-m", "1024", "-t", "1", "-c", "4096"]
                         + (["-u", "root"] if os.geteuid() == 0 else [])),
    ]
    try:
        wait_port(rport)
        wait_port(mport)
        ports = {"redis": rport, "memcached": mport}
        tools = [Bakeoff("bakeoff", "redis", pipelines), RedisBenchmark("redis-benchmark", "redis", pipelines),
                 Bakeoff("bakeoff", "memcached", pipelines), Memaslap("memaslap", "memcached", [1])]
        if args.signals_ab:
            tools += [BakeoffNoSignals("bakeoff-nosignals", s, pipelines) for s in ("redis", "memcached")]
        builds = [("bakeoff", BAKEOFF)]
        if args.before:
            builds.append(("bakeoff-before", os.path.abspath(args.before)))
            for server in ("redis", "memcached"):
                t = Bakeoff("bakeoff-before", server, pipelines)
                t.binary = builds[1][1]
                tools.append(t)
        for name, binary in builds:
            for rate in [int(r) for r in args.open_rates.split(",") if r]:
                t = BakeoffOpen(f"{name}@{rate}", "redis", [1], rate)
                t.binary = binary
                tools.append(t)
        memtier = os.environ.get("MEMTIER") or shutil.which("memtier_benchmark")
        if memtier:
            for server in ("redis", "memcached"):
                t = Memtier("memtier", server, pipelines)
                t.binary = memtier
                tools.append(t)
            for rate in [int(r) for r in args.open_rates.split(",") if r]:
                t = MemtierRate(f"memtier@{rate}", "redis", [1], rate)
                t.binary = memtier
                tools.append(t)
        else:
            print("memtier_benchmark not on PATH: left out (set MEMTIER=/path/to/memtier_benchmark)")
        if os.access(OpenLoopFloor.binary, os.X_OK):
            tools += [OpenLoopFloor(f"floor@{rate}", "redis", [1], rate)
                      for rate in [int(r) for r in args.open_rates.split(",") if r]]
        # Fill every tool's own key space: 100000 keys of 100 bytes.
        for server, port in ports.items():
            subprocess.run([BAKEOFF, "run", "-t", f"{server}://127.0.0.1:{port}", "--records", str(RECORDS), "--value-size",
                            str(VALUE), "--ops", "1", "--warmup", "0", "--clients", str(CLIENTS), "-q", "-o",
                            os.path.join(work, "fill.json")], check=True, capture_output=True)
        fill_redis(rport, ["key:%012d" % i for i in range(RECORDS)])
        fill_redis(rport, ["memtier-%d" % i for i in range(1, RECORDS + 1)])
        fill_memcached(mport, ["memtier-%d" % i for i in range(1, RECORDS + 1)])
        # redis-benchmark counts requests, not seconds: size them to last about as long.
        for t in tools:
            if isinstance(t, RedisBenchmark):
                t.n = {(op, p): (70_000 if p == 1 else 500_000) * args.duration for op in ("get", "set") for p in pipelines}
        results = {}
        for rnd in range(args.rounds):
            for p in pipelines:
                for op in ("get", "set"):
                    for t in tools:
                        if p not in t.pipelines or op not in t.ops:
                            continue
                        out = os.path.join(work, f"{t.name}-{t.server}-{op}-{p}.json")
                        cmd = t.command(op, p, ports[t.server], args.duration, out=out)
                        if isinstance(t, RedisBenchmark):
                            t.last_n = t.n[(op, p)]
                        before = server_ops(t.server, ports[t.server])
                        started = time.monotonic()
                        text, task_ms, calls, kernel = perf_run(cmd, timeout=300)
                        wall = time.monotonic() - started
                        ops = server_ops(t.server, ports[t.server]) - before
                        own_ops, own_rate, mean = t.parse(text, out, args.duration)
                        rate = ops / wall
                        key = (t.server, p, op, t.name)
                        results.setdefault(key, []).append((rate, task_ms * 1e6 / ops, calls / ops, mean, own_rate,
                                                            kernel, getattr(t, "last_lag", None)))
                        print(f"round {rnd + 1} {t.server:9} P{p:<2} {op} {t.name:16} {rate:>10.0f} ops/s "
                              f"(own report {own_rate:>9.0f}) {task_ms * 1e6 / ops:>7.0f} ns CPU/op "
                              f"{calls / ops:6.3f} syscalls/op {getattr(t, 'extra', '')}", file=sys.stderr)
        ir = {}
        if not args.no_callgrind:
            for t in tools:
                if isinstance(t, (BakeoffOpen, BakeoffNoSignals, MemtierRate, OpenLoopFloor)):
                    continue
                if t.name == "bakeoff-before" and t.server != "redis":
                    continue
                for p in t.pipelines:
                    small, large = 20_000, 60_000
                    try:
                        out = os.path.join(work, "cg.json")
                        if isinstance(t, RedisBenchmark):
                            t.last_n = small
                        a = callgrind_ir(t.command("get", p, ports[t.server], args.duration, ops=small, out=out))
                        b = callgrind_ir(t.command("get", p, ports[t.server], args.duration, ops=large, out=out))
                        ir[(t.server, p, t.name)] = (b - a) / (large - small)
                    except Exception as e:  # a tool that cannot run under valgrind is reported, not fatal
                        print(f"callgrind {t.name} {t.server} P{p}: {e}", file=sys.stderr)
        report(results, ir, tools)
    finally:
        for s in servers:
            s.terminate()
        for s in servers:
            s.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


def report(results, ir, tools):
    backend = next((getattr(t, "backend", None) for t in tools if isinstance(t, Bakeoff) and hasattr(t, "backend")), "?")
    print(f"\nmedians of interleaved rounds; {CLIENTS} connections, {VALUE}-byte values, {RECORDS} keys; bakeoff I/O: {backend}")
    print("ops: counted by the server (INFO commandstats, stats) over the client's whole life; ops/s = those / wall time;")
    print("'own' = the rate the tool itself reported (memaslap counts its warm-up sets in it).")
    print("kernel = the share of the client's CPU time spent in the kernel (system / (user + system)).")
    print(f"{'server':9} {'P':>3} {'op':4} {'tool':20} {'ops/s':>10} {'own ops/s':>10} {'CPU ns/op':>10} {'kernel':>7} {'syscalls/op':>12} {'instr/op':>9} {'Little':>7}")
    goals = []
    for key in sorted(results):
        server, p, op, name = key
        rows = results[key]
        rate = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        calls = statistics.median(r[2] for r in rows)
        own = statistics.median(r[4] for r in rows)
        means = [r[3] for r in rows if r[3]]
        # Little's law holds the clients' concurrency only in closed loop.
        little = f"{statistics.median(means) * own / (CLIENTS * p):.2f}" if means and "@" not in name else "-"
        instr = ir.get((server, p, name))
        istr = f"{instr:,.0f}" if instr and op == "get" else "-"
        shares = [r[5] for r in rows if r[5] is not None]
        kernel = f"{statistics.median(shares) * 100:.0f} %" if shares else "-"
        print(f"{server:9} {p:>3} {op:4} {name:20} {rate:>10,.0f} {own:>10,.0f} {cpu:>10,.0f} {kernel:>7} {calls:>12.3f} {istr:>9} {little:>7}")
        lags = [r[6] for r in rows if r[6] is not None]
        goals.append((server, p, op, name, rate, cpu, calls, statistics.median(lags) if lags else None))
    print("\ngoals (bakeoff vs the peers in the same run):")
    for me in ("bakeoff", "bakeoff-before"):
      for server in ("redis", "memcached"):
        for p in sorted({g[1] for g in goals}):
            for op in ("get", "set"):
                mine = [g for g in goals if g[:3] == (server, p, op) and g[3] == me]
                peers = [g for g in goals if g[:3] == (server, p, op) and not g[3].startswith("bakeoff") and "@" not in g[3]]
                if not mine or not peers:
                    continue
                m = mine[0]
                cheapest = min(peers, key=lambda g: g[5])
                fastest = max(peers, key=lambda g: g[4])
                print(f"  {me:14} {server:9} P{p:<2} {op}: syscalls/op {m[6]:.3f} (goal <= 1); CPU/op {m[5] / cheapest[5]:.2f} x "
                      f"cheapest peer {cheapest[3]} (goal <= 0.8); ops/s {m[4] / fastest[4]:.2f} x fastest peer {fastest[3]} (goal > 1)")
    # What reading the server's own signals costs: the same client with and without.
    for g in goals:
        server, p, op, name = g[:4]
        if name == "bakeoff-nosignals":
            on = [c for c in goals if c[:4] == (server, p, op, "bakeoff")]
            if on:
                print(f"  {server:9} P{p:<2} {op} reading the server's signals: ops/s {on[0][4] / g[4]:.3f} x, "
                      f"CPU/op {on[0][5] / g[5]:.3f} x without (goal: within noise)")
    # Open loop: what sending on time costs against the same client in closed loop.
    for g in goals:
        server, p, op, name = g[:4]
        if "@" in name and name.startswith("bakeoff"):
            build, rate = name.split("@")
            closed = [c for c in goals if c[:4] == (server, p, op, build)]
            if closed:
                # Not like for like: an open loop's wake-ups serve fewer requests each.
                goal = "" if int(rate) < 10_000 else " (goal <= 3)" if int(rate) < 40_000 else " (goal <= 2)"
                lag = f"; send lag p99 {g[7] / 1e3:.1f} us (goal < 30)" if g[7] is not None else ""
                print(f"  {build:14} {server:9} P{p:<2} {op} open loop at {int(rate):,}/s: CPU/op {g[5]:,.0f} ns = "
                      f"{g[5] / closed[0][5]:.2f} x closed loop's at {closed[0][4]:,.0f} ops/s{goal}{lag}")
                # What the machine allows: a loop that does nothing but sleep
                # until each send time and send, against the same closed loop.
                floor = [f for f in goals if f[:4] == (server, p, op, f"floor@{rate}")]
                if floor and build == "bakeoff":
                    f = floor[0]
                    print(f"  {'floor':14} {server:9} P{p:<2} {op} at {int(rate):,}/s (bench/open_loop_floor.c, one timed "
                          f"sleep per send): CPU/op {f[5]:,.0f} ns = {f[5] / closed[0][5]:.2f} x bakeoff's closed loop; "
                          f"send lag p99 {f[7] / 1e3:.1f} us; bakeoff {g[5] / f[5]:.2f} x it")
                mt = [m for m in goals if m[:4] == (server, p, op, f"memtier@{rate}")]
                mclosed = [m for m in goals if m[:4] == (server, p, op, "memtier")]
                if mt and mclosed and build == "bakeoff":
                    m = mt[0]
                    print(f"  {'memtier':14} {server:9} P{p:<2} {op} --rate-limiting to {int(rate):,}/s (quotas per 20 ms "
                          f"tick, not send times): CPU/op {m[5]:,.0f} ns = {m[5] / mclosed[0][5]:.2f} x its closed loop; "
                          f"bakeoff {g[5] / m[5]:.2f} x it")
    for (server, p, name), v in sorted(ir.items()):
        if name == "redis-benchmark":
            for me in ("bakeoff", "bakeoff-before"):
                mine = ir.get((server, p, me))
                if mine:
                    print(f"  instructions/op GET P{p}: {me} {mine:,.0f} vs redis-benchmark {v:,.0f} ({mine / v:.2f} x; goal < 1)")
        if name == "memtier":
            mine = ir.get((server, p, "bakeoff"))
            if mine:
                print(f"  instructions/op GET P{p} on {server}: bakeoff {mine:,.0f} vs memtier {v:,.0f} ({mine / v:.2f} x)")


if __name__ == "__main__":
    main()
