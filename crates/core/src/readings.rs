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
    /// Size of the data directory, bytes.
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
    /// above are their sums), in the order of [`Target::nodes`].
    pub nodes: Vec<NodeProc>,
    /// Each thread's user + system CPU time, ns, by thread id, over every
    /// process counted: what tells a server held by one thread (Redis's)
    /// from one with cores to spare.
    pub thread_cpu_ns: Vec<(u32, u64)>,
    /// Time the block device under the data directory had requests in
    /// flight, ms (`io_ticks`); `None` off a block device (tmpfs).
    pub device_busy_ms: Option<u64>,
}

impl ProcSnapshot {
    /// Adds the counters of `other`, a process (tree) that serves beside
    /// this one: CPU, memory, I/O, disk and file I/O add up (the
    /// proportional set size only while both have one; memory charged to
    /// capped cgroups, where either is capped); the lag, the connections
    /// and the nodes stay this one's.
    pub fn add(&mut self, other: &ProcSnapshot) {
        self.cpu_ns += other.cpu_ns;
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
}
