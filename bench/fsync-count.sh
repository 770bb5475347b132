#!/usr/bin/env bash
# What counting fsyncs costs the server (crates/servers/src/fsyncs.rs):
# redis-server in a cgroup v2 group of its own, redis-benchmark's GETs
# against it, rounds interleaved with and without the counting perf
# events open on the group (one per CPU, ext4:ext4_sync_file_enter, as
# bakeoff opens them). Prints the server's CPU per request and the
# requests per second of each round, and the medians.
#
#   bash bench/fsync-count.sh [ROUNDS] [REQUESTS]
set -euo pipefail
rounds=${1:-6}
requests=${2:-300000}
exec python3 - "$rounds" "$requests" <<'PY'
import ctypes, os, socket, statistics, subprocess, sys, tempfile, time

rounds, requests = int(sys.argv[1]), int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
SYS_perf_event_open = 298  # x86_64
mount = next(l.split()[4] for l in open("/proc/self/mountinfo") if " - cgroup2 " in l)
own = next(l[3:].strip() for l in open("/proc/self/cgroup") if l.startswith("0::"))
group = os.path.join(mount, own.lstrip("/"), f"bench-fsyncs-{os.getpid()}")
os.mkdir(group)
tp = int(open("/sys/kernel/tracing/events/ext4/ext4_sync_file_enter/id").read())

def open_events():
    class Attr(ctypes.Structure):
        _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                    ("config", ctypes.c_uint64), ("rest", ctypes.c_uint64 * 15)]
    gfd = os.open(group, os.O_RDONLY)
    fds = []
    for cpu in range(os.cpu_count()):
        a = Attr(2, ctypes.sizeof(Attr), tp)
        fd = libc.syscall(SYS_perf_event_open, ctypes.byref(a), gfd, cpu, -1, (1 << 2) | (1 << 3))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "perf_event_open")
        fds.append(fd)
    os.close(gfd)
    return fds

def cpu_ns(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1e9 / os.sysconf("SC_CLK_TCK")

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
d = tempfile.mkdtemp(prefix="bench-fsyncs-")
srv = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                        "--dir", d], stdout=subprocess.DEVNULL)
open(os.path.join(group, "cgroup.procs"), "w").write(str(srv.pid))
time.sleep(0.5)
subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", "1000", "-t", "set"], check=True,
               stdout=subprocess.DEVNULL)
res = {"off": [], "on": []}
try:
    for r in range(rounds):
        for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
            fds = open_events() if mode == "on" else []
            c0, t0 = cpu_ns(srv.pid), time.time()
            subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", str(requests), "-c", "16",
                            "-t", "get"], check=True, stdout=subprocess.DEVNULL)
            c1, t1 = cpu_ns(srv.pid), time.time()
            for fd in fds:
                os.close(fd)
            res[mode].append(((c1 - c0) / requests, requests / (t1 - t0)))
            print(f"round {r} counting {mode:3}: server {res[mode][-1][0]:7.0f} ns/request, "
                  f"{res[mode][-1][1]:9.0f} requests/s", flush=True)
finally:
    srv.terminate(); srv.wait()
    os.rmdir(group)
    subprocess.run(["rm", "-rf", d])
for mode in ("off", "on"):
    print(f"median counting {mode:3}: server {statistics.median(x[0] for x in res[mode]):7.0f} ns/request, "
          f"{statistics.median(x[1] for x in res[mode]):9.0f} requests/s")
off = statistics.median(x[0] for x in res["off"]); on = statistics.median(x[0] for x in res["on"])
print(f"server CPU per request, counting / not: {on / off:.3f}")
PY
