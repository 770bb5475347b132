//! Readings a target takes of itself at a moment: its processes'
//! cumulative counters, the machine's CPU time, its link relay's, its
//! server's clock. The runner subtracts two of them; the result file holds
//! what it made of them.

use std::time::SystemTime;

/// What a target's link relay (`--link`) did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkSample {
    /// CPU time of the relay's thread, ns.
    pub cpu_ns: u64,
    /// Chunks of bytes sent on, both ways.
    pub chunks: u64,
    /// Mean lateness of a chunk after its due time, ns (negative: early).
    pub mean_late_ns: f64,
    /// The relay's own cost per round trip, measured when it started, ns;
    /// it holds bytes that much less.
    pub overhead_ns: u64,
}

/// Cumulative resource counters of a process (or process tree), read from
/// /proc by whoever owns it.
#[derive(Clone, Debug, Default)]
pub struct ProcSnapshot {
    /// user + system CPU time, ns.
    pub cpu_ns: u64,
    /// Resident set size, bytes: summed over processes, a page that
    /// several map counts once for each.
    pub rss_bytes: u64,
    /// Proportional set size, bytes (`Pss` of /proc/PID/smaps_rollup):
    /// summed over processes, a page that several map counts once in
    /// total; `None` where it could not be read.
    pub pss_bytes: Option<u64>,
    /// Bytes read from storage.
    pub read_bytes: u64,
    /// Bytes written to storage.
    pub write_bytes: u64,
    /// Write system calls (`syscw` of /proc/PID/io).
    pub write_calls: u64,
    /// File I/O on the data directory, counted exactly by the power-cut
    /// layer when the directory is on it.
    pub file_io: Option<FileIo>,
    /// What the data directory holds of the disk, bytes: the blocks
    /// allocated to its files (apparent sizes in files from before).
    pub disk_bytes: u64,
    /// Memory charged to the target's capped cgroup, bytes (capped runs).
    pub cgroup_memory_bytes: Option<u64>,
    /// Page cache charged to that cgroup, bytes (capped runs).
    pub cgroup_cache_bytes: Option<u64>,
    /// Replication: how far the replica is behind, bytes of the stream.
    pub replication_lag_bytes: Option<u64>,
    /// Sockets the server's processes hold (every node's): its
    /// connections and its listening sockets.
    pub connections: Option<u64>,
    /// A target of several servers: each node's own counters (the fields
    /// above are their sums), in the order of [`crate::target::Nodes::nodes`].
    pub nodes: Vec<NodeProc>,
    /// Each thread's user + system CPU time, ns, by thread id, over every
    /// process counted: what tells a server held by one thread (Redis's)
    /// from one with cores to spare.
    pub thread_cpu_ns: Vec<(u32, u64)>,
    /// The block device under the data directory, by its own counters
    /// (every process's requests on it, not the target's alone); `None`
    /// off a block device (tmpfs) or for a server bakeoff did not start.
    pub device: Option<DeviceCounters>,
    /// fsync, fdatasync and msync calls of the target's processes on its
    /// filesystem (io_uring's too), counted by the filesystem's own
    /// tracepoint; `None` where they cannot be counted.
    pub fsyncs: Option<u64>,
    /// Why `fsyncs` is `None`, where bakeoff tried.
    pub fsyncs_unknown: Option<String>,
    /// The processes counted (a server's, or bakeoff's own for an engine
    /// in process).
    pub pids: Vec<u32>,
}

impl ProcSnapshot {
    /// Adds the counters of `other`, a process (tree) that serves beside
    /// this one: CPU, memory, I/O, disk and file I/O add up (the
    /// proportional set size only while both have one; memory charged to
    /// capped cgroups, where either is capped); the lag, the connections
    /// and the nodes stay this one's.
    pub fn add(&mut self, other: &ProcSnapshot) {
        self.cpu_ns += other.cpu_ns;
        self.pids.extend_from_slice(&other.pids);
        self.thread_cpu_ns.extend_from_slice(&other.thread_cpu_ns);
        self.rss_bytes += other.rss_bytes;
        self.pss_bytes = self.pss_bytes.zip(other.pss_bytes).map(|(a, b)| a + b);
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.write_calls += other.write_calls;
        self.file_io = match (self.file_io, other.file_io) {
            (Some(a), Some(b)) => Some(FileIo {
                fsyncs: a.fsyncs + b.fsyncs,
                writes: a.writes + b.writes,
                bytes: a.bytes + b.bytes,
            }),
            (a, b) => a.or(b),
        };
        self.disk_bytes += other.disk_bytes;
        self.device = match (self.device.take(), &other.device) {
            // Nodes on one device read the same counters: once.
            (Some(a), Some(b)) if a.name == b.name => Some(a),
            (Some(a), Some(b)) => Some(a.plus(b)),
            (a, b) => a.or_else(|| b.clone()),
        };
        self.fsyncs = match (self.fsyncs, other.fsyncs) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        if self.fsyncs_unknown.is_none() {
            self.fsyncs_unknown = other.fsyncs_unknown.clone();
        }
        // Each capped process has a cgroup of its own: what they are
        // charged adds up too.
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.cgroup_memory_bytes = sum(self.cgroup_memory_bytes, other.cgroup_memory_bytes);
        self.cgroup_cache_bytes = sum(self.cgroup_cache_bytes, other.cgroup_cache_bytes);
    }
}

/// The machine's CPU time so far, every core and every process's work
/// together, in clock ticks: what tells how much of the machine the server
/// and bakeoff left to anyone, whether bakeoff started the server or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineTicks {
    /// Ticks spent busy: all but idle and iowait.
    pub busy: u64,
    /// Ticks in all.
    pub all: u64,
}

impl MachineTicks {
    /// This machine's ticks now, from the first line of /proc/stat; `None`
    /// where it cannot be read (not Linux).
    pub fn read() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The ticks of /proc/stat's text `stat` (its `cpu` line: user, nice,
    /// system, idle, iowait, irq, softirq, steal; the guest times after
    /// them are already inside user and nice).
    pub fn parse(stat: &str) -> Option<Self> {
        let ticks: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .collect();
        let all: u64 = ticks.iter().take(8).sum();
        let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
        Some(MachineTicks {
            busy: all.saturating_sub(idle),
            all,
        })
    }

    /// The share of the machine's CPUs busy between `earlier` and this
    /// reading, percent of all its cores; `None` when no tick passed.
    pub fn busy_percent_since(&self, earlier: &MachineTicks) -> Option<f64> {
        let all = self.all.saturating_sub(earlier.all);
        (all > 0).then(|| self.busy.saturating_sub(earlier.busy) as f64 / all as f64 * 100.0)
    }
}

/// What the runner reads of a target and its machine once a second.
#[derive(Clone, Debug, Default)]
pub struct Readings {
    /// The server's processes, when bakeoff started them (or bakeoff's
    /// own, for an engine in process).
    pub process: Option<ProcSnapshot>,
    /// The machine's CPUs, for every target that runs on this machine's
    /// clock (not the scripted mock's).
    pub machine: Option<MachineTicks>,
}

/// One node's cumulative process counters, in a target of several.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeProc {
    /// user + system CPU time, ns.
    pub cpu_ns: u64,
    /// Resident set size, bytes.
    pub rss_bytes: u64,
    /// Proportional set size, bytes, where it could be read.
    pub pss_bytes: Option<u64>,
    /// Bytes read from storage.
    pub read_bytes: u64,
    /// Bytes written to storage.
    pub write_bytes: u64,
}

/// File I/O on a data directory as the power-cut layer counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileIo {
    /// fsync and fdatasync calls on files.
    pub fsyncs: u64,
    /// Write requests to files.
    pub writes: u64,
    /// Bytes in those requests.
    pub bytes: u64,
}

/// What a block device has done since the machine came up, by its own
/// count (/sys/dev/block/MAJOR:MINOR/stat): the nearest counter to what a
/// server's writes cost the disk, page cache, journal and all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// The device's name (`vda`, `sda1`, `loop0`; two names joined by
    /// `+` for nodes on two devices).
    pub name: String,
    /// Bytes written (its sectors of 512 bytes).
    pub written_bytes: u64,
    /// Write requests completed.
    pub writes: u64,
    /// Cache flush requests completed (what an fsync asks of a disk with
    /// a volatile cache); `None` on kernels before 5.5.
    pub flushes: Option<u64>,
    /// Time with requests in flight, ms (`io_ticks`).
    pub busy_ms: u64,
}

impl DeviceCounters {
    /// The counters of device `name` from the text of its `stat` file
    /// (fields: reads, merges, sectors, ms; writes, merges, sectors, ms;
    /// in flight, io_ticks, queue time; discards ×4; flushes, ms).
    pub fn parse(name: &str, stat: &str) -> Option<Self> {
        let f: Vec<u64> = stat
            .split_whitespace()
            .map(|t| t.parse().ok())
            .collect::<Option<_>>()?;
        Some(DeviceCounters {
            name: name.to_string(),
            written_bytes: f.get(6)? * 512,
            writes: *f.get(4)?,
            flushes: f.get(15).copied(),
            busy_ms: *f.get(9)?,
        })
    }

    /// Two devices' counters added (nodes on different devices).
    pub fn plus(self, other: &DeviceCounters) -> DeviceCounters {
        DeviceCounters {
            name: format!("{}+{}", self.name, other.name),
            written_bytes: self.written_bytes + other.written_bytes,
            writes: self.writes + other.writes,
            flushes: self.flushes.zip(other.flushes).map(|(a, b)| a + b),
            busy_ms: self.busy_ms.max(other.busy_ms),
        }
    }
}

/// What every process on the machine says it wrote so far (`write_bytes`
/// of /proc/PID/io, by process id): set against the device's count, it
/// tells whether someone else wrote to the disk during a run.
#[derive(Clone, Debug, Default)]
pub struct ProcessWrites(pub std::collections::HashMap<u32, u64>);

impl ProcessWrites {
    /// Every readable process's count now (kernel threads write nothing
    /// of their own; a process that ends is no longer read).
    pub fn read() -> Self {
        let mut by_pid = std::collections::HashMap::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Self(by_pid);
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(io) = std::fs::read_to_string(p.path().join("io")) else {
                continue;
            };
            if let Some(n) = io
                .lines()
                .find_map(|l| l.strip_prefix("write_bytes:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                by_pid.insert(pid, n);
            }
        }
        Self(by_pid)
    }

    /// What the processes but `except` claim they wrote since `earlier`:
    /// each one's growth, a process born since then all it wrote. (A
    /// parent's count grows by all a child ever wrote when it reaps it:
    /// the target's processes are left out by id, not subtracted.)
    pub fn since_except(&self, earlier: &ProcessWrites, except: &[u32]) -> u64 {
        self.0
            .iter()
            .filter(|(pid, _)| !except.contains(pid))
            .map(|(pid, now)| now.saturating_sub(earlier.0.get(pid).copied().unwrap_or(0)))
            .sum()
    }
}

/// One reading of the server's clock between two of this machine's.
#[derive(Clone, Copy, Debug)]
pub struct ClockReading {
    /// This machine's clock as the request left.
    pub sent: SystemTime,
    /// The server's answer.
    pub server: SystemTime,
    /// This machine's clock as the answer came back.
    pub received: SystemTime,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy is every tick but idle and iowait; guest time, counted inside
    /// user already, is not counted twice.
    #[test]
    fn machine_ticks_from_proc_stat() {
        let stat = "cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 50 2 25 400 20 1 1 0 3 0\n";
        let then = MachineTicks::parse(stat).unwrap();
        assert_eq!(
            then,
            MachineTicks {
                busy: 160,
                all: 1000
            }
        );
        let now = MachineTicks {
            busy: 160 + 98,
            all: 1000 + 100,
        };
        assert_eq!(now.busy_percent_since(&then), Some(98.0));
        assert_eq!(then.busy_percent_since(&then), None);
        assert_eq!(MachineTicks::parse("intr 1 2 3"), None);
    }

    /// A device's stat line, as Linux 6.x writes it: sectors are 512
    /// bytes whatever the device's block size; flushes are the 16th field.
    #[test]
    fn device_counters_from_sys_block_stat() {
        let stat = "     199        0     4910       28     3103     3145    35640     1036        0     1040     1966        2        0   524290        0     2059      902\n";
        let d = DeviceCounters::parse("loop0", stat).unwrap();
        assert_eq!(d.written_bytes, 35640 * 512);
        assert_eq!(d.writes, 3103);
        assert_eq!(d.flushes, Some(2059));
        assert_eq!(d.busy_ms, 1040);
        // A kernel before 5.5 writes 15 fields, or 11 before 4.18.
        let old = "1 0 2 3 4 0 8 5 0 6 7";
        assert_eq!(DeviceCounters::parse("sda", old).unwrap().flushes, None);
        assert_eq!(DeviceCounters::parse("sda", "1 2 x"), None);
    }

    /// Others' claims: growth of each process, all of a new one's.
    #[test]
    fn process_writes_since() {
        let before = ProcessWrites([(1, 100), (2, 50), (3, 7)].into_iter().collect());
        let after = ProcessWrites([(1, 150), (2, 50), (4, 30)].into_iter().collect());
        assert_eq!(after.since_except(&before, &[]), 50 + 30);
        assert_eq!(after.since_except(&before, &[1]), 30);
    }
}
