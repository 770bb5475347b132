//! What a run's writes cost the disk: the block device's own count over
//! the measure job (warm-up and measured phase, then a write-back of what
//! they left of the target's files in the page cache), less what it wrote while the target sat idle
//! just before, set against the writes the job made (002-io-pattern's
//! "disk writes per insert"); beside it what the server's processes say
//! of themselves, which is not the disk's count.

use serde::{Deserialize, Serialize};

use crate::readings::{DeviceCounters, ProcSnapshot, ProcessWrites};
use crate::result::PhaseResult;

/// The operation kinds that write.
const WRITES: [&str; 3] = ["set", "update", "delete"];

/// What reached a server's disk per write operation (set, update, delete)
/// of the measure job: its warm-up and measured phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiskPerWrite {
    /// Write operations completed in the warm-up and the measured phase.
    pub writes: u64,
    /// The block device under the data directory over the measure job and
    /// the flush after it, by its own counters: the figure the answers use. Absent for a
    /// server bakeoff did not start, off a block device, and in files from
    /// before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceWrites>,
    /// Bytes of pages the server's processes dirtied per write
    /// (`write_bytes` of /proc/PID/io, `bytes_per_write` in files from
    /// before the device was read): charged when a page is dirtied, again
    /// each time a page already written back is dirtied anew, and blind to
    /// the filesystem's journal; not what the disk wrote. `None` when a
    /// fault restarted the server, whose new process counts from zero.
    #[serde(alias = "bytes_per_write")]
    pub dirtied_bytes_per_write: Option<f64>,
    /// The server's write system calls per write, to files and sockets
    /// alike (`syscw`; replies to reads included); `None` after a restart,
    /// as above. Not a disk figure: see `file_writes_per_write` and
    /// `socket_writes_per_write`.
    pub write_calls_per_write: Option<f64>,
    /// The server's write system calls per write that went elsewhere than
    /// the data directory's files (its replies on sockets, its log):
    /// `syscw` less the power-cut layer's count of write requests to the
    /// files; only where that layer counts, and not after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_writes_per_write: Option<f64>,
    /// fsync, fdatasync and msync calls per write: counted exactly by the
    /// power-cut layer when the data directory is on it, else by the
    /// filesystem's own tracepoint for the server's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsyncs_per_write: Option<f64>,
    /// Why `fsyncs_per_write` is absent, where bakeoff tried to count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsyncs_not_counted: Option<String>,
    /// Write requests to the data directory's files per write (power-cut
    /// layer only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_writes_per_write: Option<f64>,
    /// Bytes written to the data directory's files per write (power-cut
    /// layer only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_bytes_per_write: Option<f64>,
}

/// The block device under the data directory over the measure job (its
/// warm-up and measured phase, then a write-back of what they left of the
/// target's files in the page cache: a store that writes without fsync owes the disk those pages
/// all the same), and over the idle time just before it that is taken off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceWrites {
    /// The device (`vda`, `sda1`, `loop0`).
    pub name: String,
    /// When the window began (the warm-up's start), seconds since the
    /// Unix epoch: to set the figure beside a reading of the device of
    /// one's own.
    pub started_unix_s: f64,
    /// Length of the window, seconds: the job and the flush after it.
    pub measured_s: f64,
    /// Bytes the device wrote in it, every process's.
    pub written_bytes: u64,
    /// Write requests it completed in it.
    pub write_requests: u64,
    /// Cache flushes it completed in it; `None` on kernels before 5.5.
    pub flushes: Option<u64>,
    /// Length of the idle time before the window, seconds: the target
    /// loaded and flushed to disk, no request sent. As long as the job is
    /// planned to last up to 5 s, cut to 0.5 s when the device wrote
    /// nothing in it.
    pub idle_s: f64,
    /// Bytes the device wrote in the idle time.
    pub idle_written_bytes: u64,
    /// Write requests it completed in the idle time.
    pub idle_write_requests: u64,
    /// Bytes the job made the device write: `written_bytes` less the idle
    /// time's rate over the window (below zero only by noise).
    pub net_bytes: f64,
    /// `net_bytes` per write (0 where noise took it below zero); `None`
    /// without writes.
    pub bytes_per_write: Option<f64>,
    /// Write requests per write, the idle rate taken off likewise.
    pub requests_per_write: Option<f64>,
    /// Cache flushes per write, the idle rate taken off likewise.
    pub flushes_per_write: Option<f64>,
    /// Bytes each write asked to store: the workload's mean value size,
    /// every field of a record included; `None` where the sizes came from
    /// a trace.
    pub asked_bytes_per_write: Option<f64>,
    /// `bytes_per_write` over `asked_bytes_per_write`: how many bytes the
    /// disk wrote for each byte the run asked to store.
    pub write_amplification: Option<f64>,
    /// What other processes' own counters say they wrote in the window (`write_bytes` of /proc/PID/io, to any device); the device's
    /// count holds their writes to it too.
    pub others_claimed_bytes: u64,
}

/// One reading at an edge of the window.
#[derive(Clone, Debug, Default)]
pub struct DiskReading {
    /// The target's counters.
    pub target: ProcSnapshot,
    /// Every process's own count of what it wrote.
    pub everyone: ProcessWrites,
    /// When it was read, seconds since the Unix epoch.
    pub at_s: f64,
}

/// What the device did while the target sat idle before the window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IdleBaseline {
    /// How long, seconds.
    pub seconds: f64,
    /// The device's counters as it began.
    pub before: DeviceCounters,
    /// And as it ended.
    pub after: DeviceCounters,
}

impl DiskPerWrite {
    /// Per write of the `phases` between two readings, with the `idle`
    /// time before them taken off the device's count; `value_bytes`
    /// is what each write asked to store. When the server was `restarted`
    /// in between, the processes' own counters, which a new process starts
    /// from zero, are left out. `None` when there is neither a write nor a
    /// device to report.
    pub fn between(
        before: &DiskReading,
        after: &DiskReading,
        idle: Option<&IdleBaseline>,
        phases: &[&PhaseResult],
        value_bytes: Option<f64>,
        restarted: bool,
    ) -> Option<DiskPerWrite> {
        let writes: u64 = phases
            .iter()
            .flat_map(|p| WRITES.iter().filter_map(|k| p.ops.get(*k)))
            .map(|o| o.completed)
            .sum();
        let (b, a) = (&before.target, &after.target);
        let device = b
            .device
            .as_ref()
            .zip(a.device.as_ref())
            .filter(|(b, a)| b.name == a.name)
            .map(|(db, da)| {
                let target: Vec<u32> = b.pids.iter().chain(&a.pids).copied().collect();
                let others = after.everyone.since_except(&before.everyone, &target);
                DeviceWrites::new(db, da, after.at_s - before.at_s, idle, writes, value_bytes)
                    .with_window(before.at_s, others)
            });
        if writes == 0 && device.is_none() {
            return None;
        }
        let per = |n: u64, p: u64| (writes > 0).then(|| n.saturating_sub(p) as f64 / writes as f64);
        let file = |f: fn(&crate::readings::FileIo) -> u64| {
            a.file_io
                .zip(b.file_io)
                .and_then(|(a, b)| per(f(&a), f(&b)))
        };
        let write_calls_per_write = (!restarted)
            .then(|| per(a.write_calls, b.write_calls))
            .flatten();
        let file_writes_per_write = file(|f| f.writes);
        // Both counts outlive the server's process: the layer's, and the
        // tracepoint's of the group a restarted server joins again.
        let fsyncs_per_write =
            file(|f| f.fsyncs).or_else(|| a.fsyncs.zip(b.fsyncs).and_then(|(a, b)| per(a, b)));
        let fsyncs_not_counted = (fsyncs_per_write.is_none() && writes > 0)
            .then(|| a.fsyncs_unknown.clone())
            .flatten();
        Some(DiskPerWrite {
            writes,
            device,
            dirtied_bytes_per_write: (!restarted)
                .then(|| per(a.write_bytes, b.write_bytes))
                .flatten(),
            write_calls_per_write,
            socket_writes_per_write: write_calls_per_write
                .zip(file_writes_per_write)
                .map(|(all, files)| (all - files).max(0.0)),
            fsyncs_per_write,
            fsyncs_not_counted,
            file_writes_per_write,
            file_bytes_per_write: file(|f| f.bytes),
        })
    }

    /// Bytes the disk wrote per write, by the device's own count: the
    /// figure the answers rank by; `None` where the device was not read.
    pub fn to_storage_per_write(&self) -> Option<f64> {
        self.device.as_ref()?.bytes_per_write
    }
}

impl DeviceWrites {
    /// The device between `before` and `after`, `measured_s` apart, the
    /// idle rate taken off, over `writes` writes of `value_bytes` each.
    fn new(
        before: &DeviceCounters,
        after: &DeviceCounters,
        measured_s: f64,
        idle: Option<&IdleBaseline>,
        writes: u64,
        value_bytes: Option<f64>,
    ) -> Self {
        let measured_s = measured_s.max(0.0);
        let written_bytes = after.written_bytes.saturating_sub(before.written_bytes);
        let write_requests = after.writes.saturating_sub(before.writes);
        let flushes = after
            .flushes
            .zip(before.flushes)
            .map(|(a, b)| a.saturating_sub(b));
        let idle = idle.filter(|i| i.seconds > 0.0 && i.before.name == before.name);
        let scale = idle.map_or(0.0, |i| measured_s / i.seconds);
        let idle_of = |f: fn(&DeviceCounters) -> u64| {
            idle.map_or(0, |i| f(&i.after).saturating_sub(f(&i.before)))
        };
        let idle_written_bytes = idle_of(|d| d.written_bytes);
        let idle_write_requests = idle_of(|d| d.writes);
        let idle_flushes = idle
            .and_then(|i| i.after.flushes.zip(i.before.flushes))
            .map_or(0, |(a, b)| a.saturating_sub(b));
        let net = |all: u64, quiet: u64| all as f64 - quiet as f64 * scale;
        let net_bytes = net(written_bytes, idle_written_bytes);
        let per = |n: f64| (writes > 0).then(|| n.max(0.0) / writes as f64);
        let bytes_per_write = per(net_bytes);
        let asked_bytes_per_write = value_bytes.filter(|v| *v > 0.0);
        DeviceWrites {
            name: after.name.clone(),
            started_unix_s: 0.0,
            measured_s,
            written_bytes,
            write_requests,
            flushes,
            idle_s: idle.map_or(0.0, |i| i.seconds),
            idle_written_bytes,
            idle_write_requests,
            net_bytes,
            bytes_per_write,
            requests_per_write: per(net(write_requests, idle_write_requests)),
            flushes_per_write: flushes.and_then(|f| per(net(f, idle_flushes))),
            asked_bytes_per_write,
            write_amplification: bytes_per_write
                .zip(asked_bytes_per_write)
                .map(|(b, v)| b / v),
            others_claimed_bytes: 0,
        }
    }

    fn with_window(mut self, started_unix_s: f64, others_claimed_bytes: u64) -> Self {
        self.started_unix_s = started_unix_s;
        self.others_claimed_bytes = others_claimed_bytes;
        self
    }

    /// Whether other processes claim enough of the window's writes to
    /// matter: at least 1 MiB and a tenth of what the device wrote.
    pub fn others_wrote(&self) -> bool {
        self.others_claimed_bytes >= 1 << 20
            && self.others_claimed_bytes as f64 >= 0.1 * self.written_bytes as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readings::FileIo;
    use crate::result::OpResult;

    fn phase(sets: u64, gets: u64) -> PhaseResult {
        let mut p = PhaseResult::default();
        for (kind, n) in [("set", sets), ("get", gets)] {
            p.ops.insert(
                kind.into(),
                OpResult {
                    completed: n,
                    ..OpResult::default()
                },
            );
        }
        p
    }

    fn device(written_bytes: u64, writes: u64, flushes: u64) -> DeviceCounters {
        DeviceCounters {
            name: "vda".into(),
            written_bytes,
            writes,
            flushes: Some(flushes),
            busy_ms: 0,
        }
    }

    fn reading(target: ProcSnapshot, at_s: f64) -> DiskReading {
        DiskReading {
            target,
            everyone: ProcessWrites::default(),
            at_s,
        }
    }

    /// The processes' counters only when no fault restarted them; the
    /// layer's counts always; the file writes and the sockets' told apart.
    #[test]
    fn per_write_of_the_measured_phase_and_counters_a_restart_reset() {
        let before = ProcSnapshot {
            write_bytes: 1_000,
            write_calls: 10,
            file_io: Some(FileIo {
                fsyncs: 5,
                writes: 10,
                bytes: 1_000,
            }),
            ..ProcSnapshot::default()
        };
        let after = ProcSnapshot {
            write_bytes: 41_000,
            // 400 file writes and 4,000 replies on sockets.
            write_calls: 4_410,
            file_io: Some(FileIo {
                fsyncs: 205,
                writes: 410,
                bytes: 81_000,
            }),
            ..ProcSnapshot::default()
        };
        let (b, a) = (reading(before, 0.0), reading(after, 1.0));
        let measured = phase(400, 3600);
        let d = DiskPerWrite::between(&b, &a, None, &[&measured], None, false).unwrap();
        assert_eq!(d.writes, 400);
        assert_eq!(d.dirtied_bytes_per_write, Some(100.0));
        assert_eq!(d.write_calls_per_write, Some(11.0));
        assert_eq!(d.file_writes_per_write, Some(1.0));
        assert_eq!(d.socket_writes_per_write, Some(10.0));
        assert_eq!(d.fsyncs_per_write, Some(0.5));
        assert_eq!(d.file_bytes_per_write, Some(200.0));
        assert_eq!(d.device, None);
        let d = DiskPerWrite::between(&b, &a, None, &[&measured], None, true).unwrap();
        assert_eq!(
            (d.dirtied_bytes_per_write, d.write_calls_per_write),
            (None, None)
        );
        assert_eq!(d.fsyncs_per_write, Some(0.5));
        // The tracepoint's count is the server's group's, which a restarted
        // server joins again: it outlives the process, like the layer's.
        let counted = |fsyncs| {
            reading(
                ProcSnapshot {
                    fsyncs: Some(fsyncs),
                    ..ProcSnapshot::default()
                },
                0.0,
            )
        };
        let d = DiskPerWrite::between(&counted(10), &counted(210), None, &[&measured], None, true)
            .unwrap();
        assert_eq!(
            (d.fsyncs_per_write, d.fsyncs_not_counted),
            (Some(0.5), None)
        );
        assert!(DiskPerWrite::between(&b, &a, None, &[&phase(0, 10)], None, false).is_none());
    }

    /// The device's count over the window less the idle rate scaled to it;
    /// the write amplification against the asked bytes; fsyncs from the
    /// tracepoint's count where no power-cut layer counts them.
    #[test]
    fn the_device_less_its_idle_rate_per_write() {
        let before = ProcSnapshot {
            device: Some(device(10_000_000, 1_000, 100)),
            fsyncs: Some(7),
            ..ProcSnapshot::default()
        };
        let after = ProcSnapshot {
            // 2 s: 4 MB and 1,000 requests written, 400 flushes.
            device: Some(device(14_000_000, 2_000, 500)),
            fsyncs: Some(407),
            ..ProcSnapshot::default()
        };
        // 1 s idle: 200 kB, 50 requests, no flush; twice that is taken off.
        let idle = IdleBaseline {
            seconds: 1.0,
            before: device(9_800_000, 950, 100),
            after: device(10_000_000, 1_000, 100),
        };
        let d = DiskPerWrite::between(
            &reading(before.clone(), 10.0),
            &reading(after.clone(), 12.0),
            Some(&idle),
            &[&phase(100, 0), &phase(300, 0)],
            Some(1_000.0),
            false,
        )
        .unwrap();
        let dev = d.device.as_ref().unwrap();
        assert_eq!(dev.written_bytes, 4_000_000);
        assert_eq!(dev.net_bytes, 3_600_000.0);
        assert_eq!(dev.bytes_per_write, Some(9_000.0));
        assert_eq!(d.to_storage_per_write(), Some(9_000.0));
        assert_eq!(dev.write_amplification, Some(9.0));
        assert_eq!(dev.requests_per_write, Some(2.25));
        assert_eq!(dev.flushes_per_write, Some(1.0));
        assert_eq!(d.fsyncs_per_write, Some(1.0));
        // No writes: the device's net bytes are still told (about 0 when
        // only the idle rate wrote), with nothing per write.
        let quiet = ProcSnapshot {
            device: Some(device(10_400_000, 1_100, 100)),
            ..ProcSnapshot::default()
        };
        let d = DiskPerWrite::between(
            &reading(before, 10.0),
            &reading(quiet, 12.0),
            Some(&idle),
            &[&phase(0, 500)],
            Some(1_000.0),
            false,
        )
        .unwrap();
        let dev = d.device.unwrap();
        assert_eq!((dev.net_bytes, dev.bytes_per_write), (0.0, None));
    }
}
