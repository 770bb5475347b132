#!/usr/bin/env bash
# Disk per write as bakeoff reports it, beside the block device's own
# count over the same seconds, read here every 50 ms from
# /sys/block/DEV/stat (as iostat would), and beside the figure bakeoff
# reported before it read the device: the bytes of pages the server's
# processes dirtied (write_bytes of /proc/PID/io).
#
#   bash bench/disk-per-write.sh [BAKEOFF] [OUT_DIR]
# Runs PostgreSQL, MariaDB, Redis with aof-always and RocksDB one after
# the other (nothing else should write to the disk meanwhile).
set -euo pipefail
bakeoff=${1:-./target/release/bakeoff}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
common=(--records 50k --duration 6s --warmup 2s --quiet)
declare -A args=(
  [postgres]="-t postgres --clients 16 --mix 50:50"
  [mariadb]="-t mariadb --clients 16 --mix 50:50"
  [redis-aof-always]="-t redis --set redis.persistence=aof-always --mix 0:100 --value-size 100"
  [rocksdb]="-t rocksdb --mix 50:50"
)
for name in postgres mariadb redis-aof-always rocksdb; do
  # shellcheck disable=SC2086
  python3 - "$bakeoff" "$out/$name.json" ${args[$name]} "${common[@]}" <<'PY'
import json, os, subprocess, sys, threading, time
bakeoff, out, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
dev = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(os.stat(os.environ.get('TMPDIR', '/tmp')).st_dev)}:{os.minor(os.stat(os.environ.get('TMPDIR', '/tmp')).st_dev)}"))
samples, stop = [], threading.Event()
def sample():
    while not stop.is_set():
        f = open(f"/sys/block/{dev}/stat").read().split()
        samples.append((time.time(), int(f[6]) * 512))
        time.sleep(0.05)
t = threading.Thread(target=sample); t.start()
subprocess.run([bakeoff, "run", *rest, "-o", out], check=True)
stop.set(); t.join()
d = json.load(open(out))["runs"][0]["disk"]; v = d["device"]
a, b = v["started_unix_s"], v["started_unix_s"] + v["measured_s"]
before = max(s for s in samples if s[0] <= a)[1]; after = min(s for s in samples if s[0] >= b)[1]
own = (after - before) / d["writes"]
print(f"{rest[1]:9} {' '.join(rest[2:4]) if 'persistence' in ' '.join(rest) else '':32} writes {d['writes']:7}  "
      f"dirtied {d['dirtied_bytes_per_write']:9.0f} B/write  device (reported) {v['bytes_per_write']:7.0f} B/write  "
      f"device (own reading, same seconds) {own:7.0f} B/write  amplification {v['write_amplification']:6.1f}x  "
      f"fsyncs {d.get('fsyncs_per_write') or 0:.3f}/write  flushes {v['flushes_per_write'] or 0:.3f}/write  "
      f"idle taken off {v['idle_written_bytes']} B in {v['idle_s']:.1f} s")
PY
done
echo "result files: $out"
