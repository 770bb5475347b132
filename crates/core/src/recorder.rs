//! Per-worker measurement: HDR histograms in nanoseconds per operation kind,
//! counters, errors by kind, and the per-second interval that feeds the
//! timeline.
//!
//! A recorder belongs to one worker thread and is never shared: no locks, no
//! atomics. Workers hand finished intervals to the collector once a second
//! and their phase recorders at the end; merging is exact because HDR
//! histograms add bucket by bucket.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::workload::{OpKind, OP_KINDS};

/// Largest latency a histogram holds: one hour, in nanoseconds. Longer
/// latencies are clamped to it (and show as max = 1 h).
pub const MAX_TRACKABLE_NS: u64 = 3_600_000_000_000;

/// Kinds of failed operation. Misses are not errors and are counted apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No reply within the request timeout.
    Timeout,
    /// The connection could not be (re-)established.
    Refused,
    /// The connection was closed or reset with requests in flight.
    Reset,
    /// The reply could not be parsed.
    Protocol,
    /// The target answered with an error reply.
    ServerError,
    /// A value read back did not match what bakeoff wrote for that key.
    Verification,
}

/// Number of [`ErrorKind`]s.
pub const ERROR_KINDS: usize = 6;

impl ErrorKind {
    /// All kinds in index order.
    pub const ALL: [ErrorKind; ERROR_KINDS] = [
        ErrorKind::Timeout,
        ErrorKind::Refused,
        ErrorKind::Reset,
        ErrorKind::Protocol,
        ErrorKind::ServerError,
        ErrorKind::Verification,
    ];

    /// snake_case name as in result files.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Refused => "refused",
            ErrorKind::Reset => "reset",
            ErrorKind::Protocol => "protocol",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Verification => "verification",
        }
    }
}

/// The loop that carried a job's requests, as the result file names it
/// (`client.io_backend`): the same strings as before it was a type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum IoLoop {
    /// bakeoff's network loop on io_uring.
    IoUring,
    /// bakeoff's network loop on epoll; `note` says why io_uring was not
    /// used, where it was tried (`io_uring unavailable: …`).
    Epoll {
        /// Why not io_uring, when it was tried.
        note: Option<String>,
    },
    /// A client library's async runtime, one task per client.
    Async,
    /// An engine called in-process, on the worker thread.
    InProcess,
    /// Another loop, by name (the test suite's scripted and mock loops);
    /// empty before any job ran.
    #[default]
    Unnamed,
    /// A loop this build does not know, read from a result file.
    Other(String),
}

impl IoLoop {
    /// Its name in the result file.
    pub fn name(&self) -> String {
        match self {
            IoLoop::IoUring => "io_uring".into(),
            IoLoop::Epoll { note: None } => "epoll".into(),
            IoLoop::Epoll { note: Some(n) } => format!("epoll ({n})"),
            IoLoop::Async => "async (tokio, one task per client)".into(),
            IoLoop::InProcess => "in-process".into(),
            IoLoop::Unnamed => String::new(),
            IoLoop::Other(s) => s.clone(),
        }
    }

    /// The loop a result file names `name`.
    pub fn parse(name: &str) -> IoLoop {
        match name {
            "io_uring" => IoLoop::IoUring,
            "epoll" => IoLoop::Epoll { note: None },
            "async (tokio, one task per client)" => IoLoop::Async,
            "in-process" => IoLoop::InProcess,
            "" => IoLoop::Unnamed,
            n => match n.strip_prefix("epoll (").and_then(|r| r.strip_suffix(')')) {
                Some(note) => IoLoop::Epoll {
                    note: Some(note.into()),
                },
                None => IoLoop::Other(n.into()),
            },
        }
    }
}

impl std::fmt::Display for IoLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for IoLoop {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for IoLoop {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(IoLoop::parse(&String::deserialize(d)?))
    }
}

impl schemars::JsonSchema for IoLoop {
    fn schema_name() -> String {
        "IoLoop".into()
    }
    fn is_referenceable() -> bool {
        // A plain string in the schema, as the field was.
        false
    }
    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        String::json_schema(g)
    }
}

/// A new empty latency histogram (1 ns .. 1 h, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3).expect("valid histogram bounds")
}

/// How a completed operation ended, as far as the recorder cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// The target did what was asked (a read found its value).
    Ok,
    /// A read or delete found no record.
    Miss,
    /// The operation failed.
    Error(ErrorKind),
}

/// The longest error text a phase keeps for one error kind, bytes.
pub const ERROR_TEXT_MAX: usize = 200;

/// `said` as one printable line of at most [`ERROR_TEXT_MAX`] bytes: a
/// protocol's framing (a leading `-`, `\r\n`, NULs) is dropped and control
/// bytes become spaces.
pub fn error_text(said: &[u8]) -> String {
    let cut = &said[..said.len().min(ERROR_TEXT_MAX)];
    let text: String = String::from_utf8_lossy(cut)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.trim_start_matches(|c: char| !c.is_alphanumeric());
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Everything measured for one phase (load, warm-up or measure) by one
/// worker, or merged over workers.
#[derive(Clone, Debug)]
pub struct PhaseStats {
    /// Response time per kind: from the intended start (open loop) or the
    /// send (closed loop) to the parsed reply. Successful operations and
    /// misses only.
    pub response: [Histogram<u64>; OP_KINDS],
    /// Service time per kind (from the actual send); recorded in open loop
    /// only, where it differs from the response time.
    pub service: Option<[Histogram<u64>; OP_KINDS]>,
    /// Successful operations per kind (misses included).
    pub completed: [u64; OP_KINDS],
    /// Misses per kind (reads and deletes that found no record).
    pub misses: [u64; OP_KINDS],
    /// Failed operations per kind of operation.
    pub failed: [u64; OP_KINDS],
    /// Failures per error kind.
    pub errors: [u64; ERROR_KINDS],
    /// What the target said, for each error kind, the first time it failed
    /// that way ("OOM command not allowed …", "MDB_MAP_FULL …").
    pub error_texts: [Option<String>; ERROR_KINDS],
    /// Requests sent, per kind (a conservation check against the target).
    pub sent: [u64; OP_KINDS],
    /// Second requests sent, per kind of the operation that needed one
    /// (HandlerSocket's set: an insert after an update that found no
    /// row; a read-modify-write's write); not in `sent`.
    pub follow_ups: [u64; OP_KINDS],
    /// Rows returned, per kind (searches).
    pub rows: [u64; OP_KINDS],
    /// Time of each named step of a phased request (000-mysql-phases), in
    /// the order the steps run; empty otherwise.
    pub steps: Vec<(&'static str, Histogram<u64>)>,
    /// Reads that found an older version than one acknowledged before
    /// they were sent (replication runs).
    pub stale_reads: u64,
    /// Send lag (open loop only): from each request's intended start to
    /// its actual send, all kinds; the response time less the service time.
    pub send_lag: Option<Histogram<u64>>,
}

impl PhaseStats {
    /// Empty stats; `open_loop` adds service-time histograms.
    pub fn new(open_loop: bool) -> Self {
        Self {
            response: std::array::from_fn(|_| new_histogram()),
            service: open_loop.then(|| std::array::from_fn(|_| new_histogram())),
            completed: [0; OP_KINDS],
            misses: [0; OP_KINDS],
            failed: [0; OP_KINDS],
            errors: [0; ERROR_KINDS],
            error_texts: Default::default(),
            sent: [0; OP_KINDS],
            follow_ups: [0; OP_KINDS],
            rows: [0; OP_KINDS],
            steps: Vec::new(),
            stale_reads: 0,
            send_lag: open_loop.then(new_histogram),
        }
    }

    /// Records that step `name` (the `index`-th of the request) took `ns`.
    pub fn record_step(&mut self, index: usize, name: &'static str, ns: u64) {
        while self.steps.len() <= index {
            self.steps.push(("", new_histogram()));
        }
        let step = &mut self.steps[index];
        step.0 = name;
        step.1.saturating_record(ns.max(1));
    }

    /// Records one finished operation.
    #[inline]
    pub fn record(&mut self, kind: OpKind, response_ns: u64, service_ns: u64, how: Completion) {
        let k = kind as usize;
        match how {
            Completion::Ok | Completion::Miss => {
                self.completed[k] += 1;
                if how == Completion::Miss {
                    self.misses[k] += 1;
                }
                self.response[k].saturating_record(response_ns.max(1));
                if let Some(s) = self.service.as_mut() {
                    s[k].saturating_record(service_ns.max(1));
                }
                if let Some(l) = self.send_lag.as_mut() {
                    l.saturating_record(response_ns.saturating_sub(service_ns));
                }
            }
            Completion::Error(e) => {
                self.failed[k] += 1;
                self.errors[e as usize] += 1;
            }
        }
    }

    /// Counts an error not tied to one operation (a failed reconnect).
    pub fn record_error(&mut self, e: ErrorKind) {
        self.errors[e as usize] += 1;
    }

    /// Keeps what the target said when it failed as `e`, if nothing was
    /// kept for `e` yet: printable, on one line, at most
    /// [`ERROR_TEXT_MAX`] bytes.
    #[cold]
    pub fn note_error_text(&mut self, e: ErrorKind, said: &[u8]) {
        let slot = &mut self.error_texts[e as usize];
        if slot.is_none() {
            *slot = Some(error_text(said));
        }
    }

    /// Adds `other` into `self`, exactly.
    pub fn merge(&mut self, other: &PhaseStats) {
        for k in 0..OP_KINDS {
            self.response[k]
                .add(&other.response[k])
                .expect("same bounds");
            self.completed[k] += other.completed[k];
            self.misses[k] += other.misses[k];
            self.failed[k] += other.failed[k];
            self.sent[k] += other.sent[k];
            self.follow_ups[k] += other.follow_ups[k];
            self.rows[k] += other.rows[k];
        }
        self.stale_reads += other.stale_reads;
        match (self.service.as_mut(), other.service.as_ref()) {
            (Some(a), Some(b)) => {
                for k in 0..OP_KINDS {
                    a[k].add(&b[k]).expect("same bounds");
                }
            }
            (None, Some(b)) => self.service = Some(b.clone()),
            _ => {}
        }
        match (self.send_lag.as_mut(), other.send_lag.as_ref()) {
            (Some(a), Some(b)) => a.add(b).expect("same bounds"),
            (None, Some(b)) => self.send_lag = Some(b.clone()),
            _ => {}
        }
        for e in 0..ERROR_KINDS {
            self.errors[e] += other.errors[e];
            if self.error_texts[e].is_none() {
                self.error_texts[e].clone_from(&other.error_texts[e]);
            }
        }
        for (i, (name, h)) in other.steps.iter().enumerate() {
            if self.steps.len() <= i {
                self.steps.push((name, new_histogram()));
            }
            self.steps[i].0 = name;
            self.steps[i].1.add(h).expect("same bounds");
        }
    }

    /// Operations that finished, successfully or not.
    pub fn finished(&self) -> u64 {
        self.completed.iter().sum::<u64>() + self.failed.iter().sum::<u64>()
    }

    /// Total errors of every kind.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }
}

/// One second of one worker, handed to the collector.
#[derive(Clone, Debug)]
pub struct Interval {
    /// Index of the second since the start of the timed phases.
    pub second: u32,
    /// Latency of every operation finished in this second (all kinds).
    pub latency: Histogram<u64>,
    /// Operations finished successfully (misses included).
    pub ops: u64,
    /// Operations failed, and connection-level errors.
    pub errors: u64,
    /// Misses.
    pub misses: u64,
    /// CPU time the worker thread used in this second, nanoseconds.
    pub cpu_ns: u64,
}

impl Interval {
    /// An empty interval for second `second`.
    pub fn new(second: u32) -> Self {
        Self {
            second,
            latency: new_histogram(),
            ops: 0,
            errors: 0,
            misses: 0,
            cpu_ns: 0,
        }
    }

    /// Counts one operation into the interval.
    #[inline]
    pub fn record(&mut self, response_ns: u64, how: Completion) {
        match how {
            Completion::Ok | Completion::Miss => {
                self.ops += 1;
                if how == Completion::Miss {
                    self.misses += 1;
                }
                self.latency.saturating_record(response_ns.max(1));
            }
            Completion::Error(_) => self.errors += 1,
        }
    }

    /// Adds another worker's interval for the same second.
    pub fn merge(&mut self, other: &Interval) {
        self.latency.add(&other.latency).expect("same bounds");
        self.ops += other.ops;
        self.errors += other.errors;
        self.misses += other.misses;
        self.cpu_ns += other.cpu_ns;
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the clock `Instant` uses on Linux): one
/// vDSO read, no system call; loops call it once per operation.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How much of the span `start..end` lies inside `from..to`, ns.
#[inline]
pub fn overlap_ns(start: u64, end: u64, from: u64, to: u64) -> u64 {
    end.min(to).saturating_sub(start.max(from))
}

/// What one worker hands back at the end of a job.
#[derive(Debug)]
pub struct WorkerOutput {
    /// One entry per phase of the job.
    pub phases: Vec<PhaseStats>,
    /// CPU time of the worker thread during the last phase, ns, without
    /// the time it spun waiting for send times (`spin_ns`).
    pub busy_cpu_ns: u64,
    /// Time the worker spent spinning out the last microseconds before an
    /// open loop's send times during the last phase, ns: CPU it burnt to
    /// send on time, not work.
    pub spin_ns: u64,
    /// Wall time of the last phase as this worker saw it, ns.
    pub busy_wall_ns: u64,
    /// Time of the last completion, ns since `t0`.
    pub last_completion_ns: u64,
    /// Time requests were outstanding inside the measured window (from the
    /// end of the warm-up to the end of a timed phase), summed over
    /// requests, ns: Little's law's numerator.
    pub busy_in_window_ns: u64,
    /// The loop that carried the requests, with the reason for a fallback.
    pub backend: IoLoop,
    /// The durability check's writes or read-back, when the job has one.
    pub durability: Option<crate::durability::WorkerDurability>,
    /// Requests sent per node and kind, all phases, when the target is
    /// sharded (empty otherwise).
    pub node_sent: Vec<[u64; crate::workload::OP_KINDS]>,
    /// Redis Cluster: `MOVED` and `ASK` replies per node, all phases
    /// (empty otherwise).
    pub node_redirects: Vec<[u64; 2]>,
    /// Single measured operations in time order, when asked for.
    pub trace: Option<crate::trace::TraceRecorder>,
}

/// The bookkeeping of one worker: phase stats, the current one-second
/// interval and its hand-off to the collector, the worker's CPU over the
/// measured phase, the time of the last completion, Little's-law sum.
/// Owned by the harness ([`crate::harness::Harness`]).
pub struct WorkerMeter {
    /// Stats per phase of the job.
    pub stats: Vec<PhaseStats>,
    /// The second being recorded.
    pub interval: Interval,
    next_tick: u64,
    cpu: fn() -> u64,
    cpu_at_tick: u64,
    busy_cpu_start: Option<u64>,
    busy_wall_start: u64,
    /// Spinning before send times, in the current second and since the
    /// start of the measured phase, ns.
    spin_in_interval: u64,
    spin_measured: u64,
    last_completion: u64,
    window_start: u64,
    window_end: u64,
    busy_in_window: u64,
    trace: Option<crate::trace::TraceRecorder>,
}

impl WorkerMeter {
    /// A meter for `phases` phases (`open_loop` adds service-time
    /// histograms) whose Little's-law sum covers `window_start..window_end`
    /// (the measured window: end of the warm-up to the end of a timed
    /// phase); `cpu` reads the worker's CPU time, once a second.
    pub fn new(
        phases: usize,
        open_loop: bool,
        window_start: u64,
        window_end: u64,
        cpu: fn() -> u64,
    ) -> Self {
        Self {
            stats: (0..phases).map(|_| PhaseStats::new(open_loop)).collect(),
            interval: Interval::new(0),
            next_tick: 1_000_000_000,
            cpu,
            cpu_at_tick: cpu(),
            busy_cpu_start: None,
            busy_wall_start: 0,
            spin_in_interval: 0,
            spin_measured: 0,
            last_completion: 0,
            window_start,
            window_end,
            busy_in_window: 0,
            trace: None,
        }
    }

    /// Keeps the latency of up to `cap` measured operations in time order
    /// (none when `None`).
    pub fn with_trace(mut self, cap: Option<usize>) -> Self {
        self.trace = cap.map(crate::trace::TraceRecorder::new);
        self
    }

    /// When the current second ends, ns since the job's start.
    #[inline]
    pub fn next_tick(&self) -> u64 {
        self.next_tick
    }

    /// Moves the measured window (the warm-up's end was found as the job
    /// ran).
    pub fn set_window(&mut self, start: u64, end: u64) {
        self.window_start = start;
        self.window_end = end;
    }

    /// Called once per loop iteration: starts the busy-CPU window at the end
    /// of the warm-up and hands finished seconds to the collector.
    #[inline]
    pub fn on_loop(&mut self, now: u64, warmup_end: u64, tx: &std::sync::mpsc::Sender<Interval>) {
        if self.busy_cpu_start.is_none() && now >= warmup_end {
            self.busy_cpu_start = Some((self.cpu)());
            self.busy_wall_start = now;
            self.spin_measured = 0;
        }
        while now >= self.next_tick {
            let cpu = (self.cpu)();
            let second = (self.next_tick / 1_000_000_000) as u32;
            let mut done = std::mem::replace(&mut self.interval, Interval::new(second));
            done.cpu_ns = (cpu - self.cpu_at_tick).saturating_sub(self.spin_in_interval);
            self.spin_in_interval = 0;
            self.cpu_at_tick = cpu;
            let _ = tx.send(done);
            self.next_tick += 1_000_000_000;
        }
    }

    /// Records one finished operation of `phase`. Inlined into the loops
    /// (a call here cost about 20 instructions per operation).
    #[inline(always)]
    pub fn record(
        &mut self,
        phase: u8,
        kind: OpKind,
        response_ns: u64,
        service_ns: u64,
        how: Completion,
        now: u64,
    ) {
        self.stats[phase as usize].record(kind, response_ns, service_ns, how);
        self.interval.record(response_ns, how);
        self.last_completion = now;
        if self.trace.is_some() {
            self.trace_one(phase, response_ns, how, now);
        }
        // Only the part of each request inside the window counts: the
        // requests still out when a timed phase ends (or sent during the
        // warm-up) would otherwise skew Little's law by the drain.
        self.busy_in_window += overlap_ns(
            now.saturating_sub(response_ns),
            now,
            self.window_start,
            self.window_end,
        );
    }

    /// Keeps a measured operation's latency in the trace (`--trace`).
    #[cold]
    #[inline(never)]
    fn trace_one(&mut self, phase: u8, response_ns: u64, how: Completion, now: u64) {
        if let (Some(t), 1, false) = (&mut self.trace, phase, matches!(how, Completion::Error(_))) {
            t.record(now.saturating_sub(self.window_start), response_ns);
        }
    }

    /// The worker spun `ns` waiting for a send time: CPU spent, counted
    /// apart from work. Timed on the wall clock (a clock read per spin is
    /// cheaper than a CPU clock's system call), so a preemption during a
    /// spin is counted as spin.
    #[inline]
    pub fn spun(&mut self, ns: u64) {
        self.spin_in_interval += ns;
        self.spin_measured += ns;
    }

    /// Records a failed connection attempt in `phase` (no operation made).
    pub fn record_connect_error(&mut self, phase: u8, kind: ErrorKind) {
        self.stats[phase as usize].record_error(kind);
        self.interval.errors += 1;
    }

    /// Hands over the last partial second and everything measured.
    pub fn finish(
        mut self,
        now: u64,
        backend: IoLoop,
        tx: &std::sync::mpsc::Sender<Interval>,
    ) -> WorkerOutput {
        let cpu = (self.cpu)();
        let mut done = std::mem::replace(&mut self.interval, Interval::new(0));
        done.cpu_ns = (cpu - self.cpu_at_tick).saturating_sub(self.spin_in_interval);
        done.second = (now / 1_000_000_000) as u32;
        if done.ops + done.errors > 0 {
            let _ = tx.send(done);
        }
        let start = self.busy_cpu_start.unwrap_or(cpu);
        let spin_ns = self.spin_measured;
        WorkerOutput {
            phases: self.stats,
            busy_cpu_ns: (cpu - start).saturating_sub(spin_ns),
            spin_ns,
            busy_wall_ns: now.saturating_sub(self.busy_wall_start),
            last_completion_ns: self.last_completion,
            busy_in_window_ns: self.busy_in_window,
            backend,
            durability: None,
            node_sent: Vec::new(),
            node_redirects: Vec::new(),
            trace: self.trace,
        }
    }
}

/// CPU time used by the calling thread so far, nanoseconds.
///
/// A system call (CLOCK_THREAD_CPUTIME_ID has no vDSO fast path): call it
/// once a second, not per operation.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first text of each kind is kept, on one printable line without
    /// the protocol's framing, and merging keeps the first worker's.
    #[test]
    fn the_first_error_text_of_each_kind_is_kept_readable() {
        assert_eq!(
            error_text(b"-OOM command not allowed\r\n"),
            "OOM command not allowed"
        );
        assert_eq!(
            error_text(b"SERVER_ERROR object\0 too large\r\n"),
            "SERVER_ERROR object too large"
        );
        assert_eq!(error_text(&[b'x'; 500]).len(), ERROR_TEXT_MAX);
        let mut a = PhaseStats::new(false);
        a.note_error_text(ErrorKind::ServerError, b"-first");
        a.note_error_text(ErrorKind::ServerError, b"-second");
        assert_eq!(
            a.error_texts[ErrorKind::ServerError as usize].as_deref(),
            Some("first")
        );
        let mut b = PhaseStats::new(false);
        b.note_error_text(ErrorKind::Timeout, b"late");
        b.note_error_text(ErrorKind::ServerError, b"other");
        a.merge(&b);
        assert_eq!(
            a.error_texts[ErrorKind::ServerError as usize].as_deref(),
            Some("first")
        );
        assert_eq!(
            a.error_texts[ErrorKind::Timeout as usize].as_deref(),
            Some("late")
        );
    }

    /// The loop's name in the result file reads back as the same loop, the
    /// reason for an epoll fallback with it; a name this build does not
    /// know is kept as it was written.
    #[test]
    fn an_io_loop_reads_back_from_its_name() {
        let loops = [
            IoLoop::IoUring,
            IoLoop::Epoll { note: None },
            IoLoop::Epoll {
                note: Some("io_uring unavailable: Operation not permitted (os error 1)".into()),
            },
            IoLoop::Async,
            IoLoop::InProcess,
            IoLoop::Unnamed,
            IoLoop::Other("dpdk".into()),
        ];
        for l in loops {
            let json = serde_json::to_string(&l).unwrap();
            assert_eq!(serde_json::from_str::<IoLoop>(&json).unwrap(), l, "{json}");
        }
        assert_eq!(
            serde_json::to_string(&IoLoop::Epoll {
                note: Some("x".into())
            })
            .unwrap(),
            "\"epoll (x)\""
        );
        assert_eq!(IoLoop::parse("in-process"), IoLoop::InProcess);
    }

    #[test]
    fn record_and_merge_are_exact() {
        let mut a = PhaseStats::new(false);
        let mut b = PhaseStats::new(false);
        a.record(OpKind::Get, 1000, 1000, Completion::Ok);
        a.record(OpKind::Get, 2000, 2000, Completion::Miss);
        b.record(OpKind::Set, 5000, 5000, Completion::Ok);
        b.record(OpKind::Get, 9, 9, Completion::Error(ErrorKind::Timeout));
        a.merge(&b);
        assert_eq!(a.completed, [2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(a.misses, [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(a.failed, [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(a.errors[ErrorKind::Timeout as usize], 1);
        assert_eq!(a.response[0].len(), 2);
        assert_eq!(a.finished(), 4);
    }
}
