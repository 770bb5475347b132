//! Runs jobs on worker threads and experiments over targets.
//!
//! [`run_job`] starts one thread per worker, each running its share through
//! the target's [`Driver`]; the calling thread is the collector: it merges
//! the workers' per-second intervals into the timeline, samples the target's
//! resources once a second and reports progress. [`run_experiment`] walks
//! the plan's matrix, opens each target for each run, and writes the result
//! file after every run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::driver::{Driver, Job, JobKind};
use crate::durability::WorkerDurability;
use crate::error::{RunError, TargetError};
use crate::plan::{FaultKind, Plan, RequestMode, TargetSpec, Workload};
use crate::recorder::{Interval, PhaseStats, WorkerOutput};
use crate::result::{
    CounterCheck, Environment, ExperimentResult, ExperimentStatus, NodeResourceSample, Phase,
    PhaseResult, ResourceSample, RunResult, TargetRecord, TimelinePoint, SCHEMA_VERSION,
};
use crate::value::ValuePool;
use crate::workload::{OpKind, ZipfianConstants, OP_KINDS};

mod check;
mod extras;
mod one;
mod search;
pub mod start;

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
}

impl ProcSnapshot {
    /// Adds the counters of `other`, a process (tree) that serves beside
    /// this one: CPU, memory, I/O, disk and file I/O add up (the
    /// proportional set size only while both have one; memory charged to
    /// capped cgroups, where either is capped); the lag, the connections
    /// and the nodes stay this one's.
    pub fn add(&mut self, other: &ProcSnapshot) {
        self.cpu_ns += other.cpu_ns;
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

/// When a fault struck (the signal sent, or the stop begun) and how long
/// the server then took until its own process held its port again.
#[derive(Clone, Copy, Debug)]
pub struct FaultStruck {
    /// The moment it struck.
    pub at: Instant,
    /// From then until the restarted server held its port.
    pub back_after: Duration,
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

/// Operation counters a target keeps itself (e.g. Redis `INFO commandstats`).
pub type Counters = BTreeMap<String, u64>;

/// How a target's counters add up to operations bakeoff sent: the changes
/// of `counters` over the run must equal the requests of `kinds`.
pub struct CounterRule {
    /// What is compared, with where the figure comes from.
    pub what: &'static str,
    /// The target's counters whose changes are summed.
    pub counters: &'static [&'static str],
    /// The operation kinds whose requests are summed.
    pub kinds: &'static [OpKind],
}

/// What bakeoff sent to a target over a run, all phases, for the
/// conservation checks against the target's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Requests per kind.
    pub requests: [u64; OP_KINDS],
    /// Of the operations completed, those answered as a miss, per kind.
    pub misses: [u64; OP_KINDS],
    /// Second requests of operations that needed one, per kind (not in
    /// `requests`).
    pub follow_ups: [u64; OP_KINDS],
}

impl Sent {
    /// Adds what one phase sent.
    pub fn add(&mut self, phase: &crate::recorder::PhaseStats) {
        for k in 0..OP_KINDS {
            self.requests[k] += phase.sent[k];
            self.misses[k] += phase.misses[k];
            self.follow_ups[k] += phase.follow_ups[k];
        }
    }

    /// Requests of `kind`.
    pub fn of(&self, kind: OpKind) -> u64 {
        self.requests[kind as usize]
    }
}

/// Applies `rules` to the counters `before` and `after` a run and the
/// requests `sent` per kind; a rule with nothing on either side is left out.
pub fn compare_counters(
    rules: &[CounterRule],
    before: &Counters,
    after: &Counters,
    sent: &Sent,
) -> Vec<CounterCheck> {
    let delta = |k: &str| {
        let a = after.get(k).copied().unwrap_or(0);
        a.saturating_sub(before.get(k).copied().unwrap_or(0))
    };
    rules
        .iter()
        .map(|r| CounterCheck {
            what: r.what.into(),
            bakeoff: r.kinds.iter().map(|k| sent.of(*k)).sum(),
            target: r.counters.iter().map(|c| delta(c)).sum(),
        })
        .filter(|c| c.bakeoff > 0 || c.target > 0)
        .collect()
}

/// One target, ready for one run: a started server, an external endpoint or
/// an opened engine. Dropping it stops and cleans up what it started.
pub trait Target {
    /// The driver that talks to it.
    fn driver(&self) -> &dyn Driver;
    /// Version, settings and requests, for the result file.
    fn record(&self) -> TargetRecord;
    /// The target's own operation counters, if it keeps any.
    fn counters(&self) -> Option<Counters>;
    /// Compares bakeoff's requests sent per kind (all phases) with the
    /// change of the target's counters over the run.
    fn counter_checks(&self, before: &Counters, after: &Counters, sent: &Sent)
        -> Vec<CounterCheck>;
    /// Records the target holds, if it can tell.
    fn record_count(&self) -> Option<u64>;
    /// Removes every record of the workload's table before a full load on
    /// a target already loaded (a search's later step), where a load
    /// cannot overwrite what is there (MongoDB's inserts); others keep
    /// their records, which the load's upserts overwrite.
    fn empty(&self) -> Result<(), TargetError> {
        Ok(())
    }
    /// Resource counters of the server process, if bakeoff started it.
    fn resources(&self) -> Option<ProcSnapshot>;
    /// Kills (`kill`, `power-cut`) or stops (`restart`) the server and
    /// starts it again on its data; returns when the fault struck and how
    /// long until its own process held the port again. Only servers
    /// bakeoff started can; the plan refuses `--fault` for the others, so
    /// this default is not reached through it.
    fn fault(&self, kind: FaultKind) -> Result<FaultStruck, TargetError> {
        Err(TargetError::Client(format!(
            "--fault {}: bakeoff cannot fault this target",
            kind.name()
        )))
    }
    /// Why the server bakeoff started is no longer running (how it exited,
    /// or the signal that killed it, and the end of its log); `None` while
    /// it runs, and for targets bakeoff did not start.
    fn gone(&self) -> Option<String> {
        None
    }
    /// What the link relay in front of the target did so far, when the
    /// workload has a link.
    fn link(&self) -> Option<LinkSample> {
        None
    }
    /// Records the replica of a primary-replica target holds, if it is one.
    fn replica_records(&self) -> Option<u64> {
        None
    }
    /// The server's clock, read now, if it tells the time (Redis `TIME`):
    /// what a synchronised start (`--start-at`) holds this machine's clock
    /// against.
    fn clock(&self) -> Option<std::io::Result<start::ClockReading>> {
        None
    }
    /// The nodes of a target made of several servers (their addresses), in
    /// the order of the client's per-node counts; empty for one server.
    fn nodes(&self) -> Vec<String> {
        Vec::new()
    }
    /// The server's own time per command so far, cumulative (Redis:
    /// `INFO commandstats`), and where it comes from; `None` where the
    /// server does not time its commands.
    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        None
    }
    /// Each node's counters compared with the requests sent to it
    /// (`sent[i]` for node `i`, all phases); empty for one server.
    fn node_checks(
        &self,
        _before: &Counters,
        _after: &Counters,
        _sent: &[[u64; OP_KINDS]],
    ) -> Vec<CounterCheck> {
        Vec::new()
    }
}

/// One command's calls and time inside the server, cumulative since it
/// started (see [`Target::command_times`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandTime {
    /// The server's name of the command.
    pub command: String,
    /// The operations of bakeoff's the command serves.
    pub kinds: &'static [OpKind],
    /// Calls so far.
    pub calls: u64,
    /// Time spent in them so far, µs.
    pub usec: u64,
}

/// Opens targets; implemented by the driver registry.
pub trait TargetOpener {
    /// Checks, without starting anything lasting, that `spec` can be used
    /// (binary on PATH, endpoint answers, password accepted). The message
    /// says what is wrong and how to fix it.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError>;
    /// Every declared setting of `spec` as a run of `plan` uses it (set,
    /// else its default), for the result file; empty for an external
    /// target, whose settings are its own.
    fn declared_settings(&self, _spec: &TargetSpec, _plan: &Plan) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    /// What the settings `spec` runs with in `plan` promise acknowledged
    /// writes survive, as the target declares; `None` for an external
    /// target, whose settings are its own.
    fn durable_to(&self, _spec: &TargetSpec, _plan: &Plan) -> Option<crate::durability::DurableTo> {
        None
    }
    /// Opens `spec` for one run of `workload` (a point of `plan`).
    fn open(
        &self,
        spec: &TargetSpec,
        plan: &Plan,
        workload: &Workload,
    ) -> Result<Box<dyn Target>, TargetError>;
}

/// Told about progress; the CLI draws it, tests ignore it.
pub trait Observer {
    /// A run starts: `index` of `total`.
    fn run_started(
        &mut self,
        _index: usize,
        _total: usize,
        _label: &str,
        _expected_s: Option<f64>,
    ) {
    }
    /// A second of the current job was completed.
    fn second(&mut self, _job: JobKind, _point: &TimelinePoint) {}
    /// A run finished.
    fn run_finished(&mut self, _run: &RunResult) {}
    /// A note for the user (skipped target, client-bound run).
    fn note(&mut self, _text: &str) {}
}

/// An observer that shows nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// What a job measured, merged over workers.
#[derive(Debug)]
pub struct JobOutcome {
    /// Merged stats per phase.
    pub phases: Vec<PhaseStats>,
    /// Per-second timeline.
    pub timeline: Vec<TimelinePoint>,
    /// Resource samples taken while the job ran.
    pub resources: Vec<ResourceSample>,
    /// Busy percent of each worker in the last phase, without spinning.
    pub busy_percent: Vec<f64>,
    /// Percent of each worker's time in the last phase spent spinning
    /// before send times.
    pub spin_percent: Vec<f64>,
    /// I/O mechanism.
    pub backend: String,
    /// Length of the last phase (measure, or load), seconds.
    pub last_phase_s: f64,
    /// Time requests were outstanding inside the measured window, summed
    /// over requests and workers, ns.
    pub busy_in_window_ns: u64,
    /// Length of the measured window: from the end of the warm-up to the
    /// end of a timed phase or the last completion, whichever is first, ns.
    pub window_ns: u64,
    /// When the scheduled fault was injected (seconds since the job's
    /// start) and how it ended, if it was.
    pub fault: Option<(f64, Result<Duration, TargetError>)>,
    /// The durability check's writes or read-back, merged over workers.
    pub durability: Option<WorkerDurability>,
    /// Requests sent per node and kind, when the target is sharded.
    pub node_sent: Vec<[u64; OP_KINDS]>,
    /// Redis Cluster: `MOVED` and `ASK` replies per node.
    pub node_redirects: Vec<[u64; 2]>,
    /// Single measured operations in time order, when asked for.
    pub trace: Option<crate::trace::LatencyTrace>,
}

/// Adds per-node counts `more` into `into`.
fn add_node_sent<const N: usize>(into: &mut Vec<[u64; N]>, more: &[[u64; N]]) {
    if into.len() < more.len() {
        into.resize(more.len(), [0; N]);
    }
    for (a, b) in into.iter_mut().zip(more) {
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
    }
}

/// Everything a job needs from its run.
pub struct JobContext<'a> {
    /// The workload.
    pub workload: &'a Workload,
    /// Seed.
    pub seed: u64,
    /// Value pool.
    pub pool: &'a ValuePool,
    /// Zipfian constants, if needed.
    pub zipf: Option<ZipfianConstants>,
    /// Ctrl-C flag.
    pub stop: &'a AtomicBool,
    /// A fault to inject while the job runs.
    pub fault: Option<ScheduledFault<'a>>,
    /// The run's mark in the durability check's values.
    pub nonce: u32,
    /// Record ids a read-back job reads.
    pub read_back: &'a [u64],
    /// A replication run's acknowledged versions (measure job only).
    pub acked: Option<&'a crate::stale::AckedVersions>,
}

/// A fault due while a job runs: at `at_s` seconds since the job's start
/// the collecting thread calls `inject`, while the workers go on (and meet
/// the fault as errors).
#[derive(Clone, Copy)]
pub struct ScheduledFault<'a> {
    /// When, seconds since the start of the job.
    pub at_s: f64,
    /// Kills or stops the server and starts it again; returns how long
    /// until its own process held the port again.
    pub inject: &'a dyn Fn() -> Result<FaultStruck, TargetError>,
}

/// Most clients a connection-per-request experiment loads with: fewer
/// than the fewest connections a server can be set to take (MariaDB: 10).
pub const LOAD_CLIENTS_MAX: u32 = 8;

/// The workload of the load before a run of `w`. With a connection per
/// request, `clients` is the crowd of short connections meant to overload
/// the server (000-mysql-conns: 1000 against 500 allowed); the load keeps
/// one connection per client all along, so fewer clients do it rather than
/// be refused.
fn load_workload(w: &Workload) -> Workload {
    let mut load = w.clone();
    if w.request != RequestMode::Op {
        load.clients = w.clients.min(LOAD_CLIENTS_MAX);
        load.threads = w.threads.min(load.clients);
    }
    load
}

/// Runs one job on `workload.threads` worker threads; the calling thread
/// collects intervals, samples `resources` each second and tells `observer`.
pub fn run_job(
    driver: &dyn Driver,
    kind: JobKind,
    ctx: &JobContext,
    resources: &mut dyn FnMut() -> Option<ProcSnapshot>,
    observer: &mut dyn Observer,
) -> Result<JobOutcome, TargetError> {
    let (tx, rx) = mpsc::channel::<Interval>();
    let job = Job {
        kind,
        workload: ctx.workload,
        seed: ctx.seed,
        pool: ctx.pool,
        zipf: ctx.zipf,
        t0: Instant::now(),
        stop: ctx.stop,
        intervals: tx,
        nonce: ctx.nonce,
        read_back: ctx.read_back,
        acked: ctx.acked,
    };
    let threads = ctx.workload.threads.max(1) as usize;
    let mut collector = Collector::new(&job, threads, resources());
    let outputs = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let job = &job;
                s.spawn(move || driver.run_worker(job, w))
            })
            .collect();
        let mut due_fault = ctx.fault;
        loop {
            let all_done = handles.iter().all(|h| h.is_finished());
            collector.wait(&rx, due_fault.is_some(), resources, observer);
            let elapsed = job.t0.elapsed().as_secs_f64();
            if let Some(f) = due_fault.take_if(|f| elapsed >= f.at_s && !all_done) {
                collector.strike(&f, elapsed);
            }
            if all_done {
                break;
            }
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| TargetError::Client("a worker thread panicked".into()))?
            })
            .collect::<Result<Vec<_>, TargetError>>()
    })?;
    collector.drain(&rx, resources, observer);
    Ok(merge_outputs(&job, outputs, collector))
}

/// The calling thread's part of a job: the per-second timeline merged
/// over workers, resource samples, and the fault it injected.
struct Collector<'j> {
    job: &'j Job<'j>,
    threads: usize,
    warmup_end_s: f64,
    timeline: Vec<TimelinePoint>,
    samples: Vec<ResourceSample>,
    /// Seconds some workers have handed over, and how many have.
    pending: BTreeMap<u32, (Interval, usize)>,
    last_snap: Option<ProcSnapshot>,
    last_snap_t: f64,
    next_sample: Duration,
    fault: Option<(f64, Result<Duration, TargetError>)>,
}

impl<'j> Collector<'j> {
    fn new(job: &'j Job<'j>, threads: usize, first: Option<ProcSnapshot>) -> Self {
        Collector {
            job,
            threads,
            warmup_end_s: job.warmup_end_ns() as f64 / 1e9,
            timeline: Vec::new(),
            samples: Vec::new(),
            pending: BTreeMap::new(),
            last_snap: first,
            last_snap_t: 0.0,
            next_sample: Duration::from_secs(1),
            fault: None,
        }
    }

    fn phase_name(&self, t: u32) -> Phase {
        match self.job.kind {
            JobKind::Load => Phase::Load,
            JobKind::Measure if (t as f64) < self.warmup_end_s => Phase::Warmup,
            JobKind::Measure => Phase::Measure,
            JobKind::ReadBack => Phase::ReadBack,
        }
    }

    /// Waits for the next interval (a short while when a fault is due),
    /// and samples the resources once a second.
    fn wait(
        &mut self,
        rx: &mpsc::Receiver<Interval>,
        fault_due: bool,
        resources: &mut dyn FnMut() -> Option<ProcSnapshot>,
        observer: &mut dyn Observer,
    ) {
        let wait = self
            .next_sample
            .saturating_sub(self.job.t0.elapsed())
            .min(Duration::from_millis(if fault_due { 5 } else { 50 }));
        if let Ok(iv) = rx.recv_timeout(wait) {
            if let Some(iv) = self.add(iv) {
                let p = timeline_point(&iv, self.phase_name(iv.second));
                observer.second(self.job.kind, &p);
                self.timeline.push(p);
            }
            return;
        }
        let elapsed = self.job.t0.elapsed();
        if elapsed >= self.next_sample {
            self.sample(elapsed.as_secs_f64(), resources);
            self.next_sample += Duration::from_secs(1);
        }
    }

    /// Adds one worker's second; the second merged over every worker once
    /// all have handed it over.
    fn add(&mut self, iv: Interval) -> Option<Interval> {
        let second = iv.second;
        (self.merge_in(iv) == self.threads)
            .then(|| self.pending.remove(&second).expect("just added").0)
    }

    /// Merges one worker's second into the pending ones; returns how many
    /// workers have handed that second over.
    fn merge_in(&mut self, iv: Interval) -> usize {
        let entry = self
            .pending
            .entry(iv.second)
            .or_insert_with(|| (Interval::new(iv.second), 0));
        entry.0.merge(&iv);
        entry.1 += 1;
        entry.1
    }

    fn sample(&mut self, t: f64, resources: &mut dyn FnMut() -> Option<ProcSnapshot>) {
        if let (Some(now), Some(prev)) = (resources(), self.last_snap.as_ref()) {
            self.samples
                .push(resource_sample(prev, &now, t - self.last_snap_t, t));
            self.last_snap = Some(now);
            self.last_snap_t = t;
        }
    }

    /// Injects the due fault; the moment is when it struck (finding a
    /// process tree to kill takes a while), else when it was called.
    fn strike(&mut self, f: &ScheduledFault, elapsed: f64) {
        self.fault = Some(match (f.inject)() {
            Ok(s) => (
                s.at.saturating_duration_since(self.job.t0).as_secs_f64(),
                Ok(s.back_after),
            ),
            Err(e) => (elapsed, Err(e)),
        });
    }

    /// After the workers: intervals sent after the last wait, partial
    /// seconds, and a last resource sample.
    fn drain(
        &mut self,
        rx: &mpsc::Receiver<Interval>,
        resources: &mut dyn FnMut() -> Option<ProcSnapshot>,
        observer: &mut dyn Observer,
    ) {
        while let Ok(iv) = rx.try_recv() {
            self.merge_in(iv);
        }
        for (_, (iv, _)) in std::mem::take(&mut self.pending) {
            let p = timeline_point(&iv, self.phase_name(iv.second));
            observer.second(self.job.kind, &p);
            self.timeline.push(p);
        }
        self.timeline.sort_by_key(|p| p.t_s);
        let t = self.job.t0.elapsed().as_secs_f64();
        if t - self.last_snap_t > 0.2 {
            self.sample(t, resources);
        }
    }
}

/// The workers' outputs merged, with what the collector gathered.
fn merge_outputs(job: &Job, mut outputs: Vec<WorkerOutput>, collected: Collector) -> JobOutcome {
    let mut durability: Option<WorkerDurability> = None;
    for out in &mut outputs {
        if let Some(d) = out.durability.take() {
            durability.get_or_insert_with(Default::default).merge(d);
        }
    }
    let mut node_sent = Vec::new();
    let mut node_redirects = Vec::new();
    for out in &outputs {
        add_node_sent(&mut node_sent, &out.node_sent);
        add_node_sent(&mut node_redirects, &out.node_redirects);
    }
    let mut phases: Vec<PhaseStats> = Vec::new();
    for out in &outputs {
        for (i, p) in out.phases.iter().enumerate() {
            if phases.len() <= i {
                phases.push(p.clone());
            } else {
                phases[i].merge(p);
            }
        }
    }
    let trace = outputs.iter().any(|o| o.trace.is_some()).then(|| {
        let measured = phases.get(1).map_or(0, |p| p.completed.iter().sum());
        crate::trace::LatencyTrace::merge(outputs.iter().filter_map(|o| o.trace.as_ref()), measured)
    });
    let warmup_end = job.warmup_end_ns();
    let last = outputs
        .iter()
        .map(|o| o.last_completion_ns)
        .max()
        .unwrap_or(0);
    JobOutcome {
        phases,
        timeline: collected.timeline,
        resources: collected.samples,
        busy_percent: outputs
            .iter()
            .map(|o| share_percent(o.busy_cpu_ns, o.busy_wall_ns))
            .collect(),
        spin_percent: outputs
            .iter()
            .map(|o| share_percent(o.spin_ns, o.busy_wall_ns))
            .collect(),
        backend: outputs
            .first()
            .map(|o| o.backend.to_string())
            .unwrap_or_default(),
        last_phase_s: last_phase_s(job, last),
        busy_in_window_ns: outputs.iter().map(|o| o.busy_in_window_ns).sum(),
        window_ns: last.min(job.measure_end_ns()).saturating_sub(warmup_end),
        fault: collected.fault,
        durability,
        node_sent,
        node_redirects,
        trace,
    }
}

/// Length of the job's last phase, seconds, its last completion at `last`
/// ns: a timed phase lasts its duration plus the drain of the last
/// requests, never less than the nominal length.
fn last_phase_s(job: &Job, last: u64) -> f64 {
    let nominal = match (job.kind, job.workload.duration_s) {
        (JobKind::Measure, Some(d)) => d,
        _ => 0.0,
    };
    let s = last.saturating_sub(job.warmup_end_ns()) as f64 / 1e9;
    if job.stop.load(Ordering::Relaxed) || s == 0.0 {
        s.max(1e-9)
    } else if nominal > 0.0 {
        s.max(nominal)
    } else {
        s
    }
}

fn timeline_point(iv: &Interval, phase: Phase) -> TimelinePoint {
    let h = &iv.latency;
    let q = |x: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(x)
        }
    };
    TimelinePoint {
        t_s: iv.second,
        phase,
        ops_per_s: iv.ops,
        errors: iv.errors,
        misses: iv.misses,
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns: if h.is_empty() { 0 } else { h.max() },
        client_cpu_percent: iv.cpu_ns as f64 / 1e7,
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
fn share_percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// Writes that stored nothing: more than half of a run's sets or updates
/// came back as misses (the target declined them, or found no row to
/// change). HandlerSocket's set is an insert, which it declines for a key
/// that exists; a store may skip an update that changes nothing. The
/// throughput of such writes is not that of stored writes.
fn unstored_write_notes(index: u32, measure: &PhaseResult, label: &str) -> Vec<String> {
    ["set", "update"]
        .iter()
        .filter_map(|kind| {
            let o = measure.ops.get(*kind)?;
            (o.completed >= 100 && o.misses * 2 > o.completed).then(|| {
                format!(
                    "run {} ({label}): {} of {} {kind}s stored nothing (declined by the target, as memcached's NOT_STORED, or an update or delete that found no row): the {kind} figures of this run are of requests that wrote nothing.",
                    index, o.misses, o.completed
                )
            })
        })
        .collect()
}

/// An open loop's own failings: requests sent late (send lag p99 above
/// 10 µs and above 5 % of the response time's p99), or a rate asked for
/// that was not reached (more than 5 % under it).
fn open_loop_notes(run: &RunResult, label: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(rate) = run.workload.rate else {
        return notes;
    };
    let m = &run.measure;
    if let Some(lag) = m.send_lag.as_ref().filter(|l| l.count > 0) {
        if lag.p99_ns > 10_000 && lag.p99_ns as f64 > 0.05 * m.all.p99_ns as f64 {
            // A thread whose spin reached its share woke at send times
            // rather than before them.
            let spin = run.client.spin_percent.iter().cloned().fold(0.0, f64::max);
            let why = if spin >= 11.0 {
                format!(" (a thread spent {spin:.0} % of its time spinning before send times, the most it may)")
            } else {
                String::new()
            };
            notes.push(format!(
                "run {} ({label}): requests left late, send lag p99 {} (response time p99 {}){why}: part of the response time is bakeoff's own lateness; fewer --clients per thread or more --threads.",
                run.index,
                crate::units::fmt_ns(lag.p99_ns as f64),
                crate::units::fmt_ns(m.all.p99_ns as f64)
            ));
        }
    }
    let achieved = m.attempted_per_s();
    if run.status == crate::result::RunStatus::Ok && m.duration_s > 0.0 && achieved < 0.95 * rate {
        notes.push(format!(
            "run {} ({label}): the rate asked for was not reached: {} of {} ({:.0} % short); the target or the client could not keep up.",
            run.index,
            crate::units::fmt_rate(achieved),
            crate::units::fmt_rate(rate),
            100.0 * (1.0 - achieved / rate)
        ));
    }
    notes
}

/// What a search found, in a line for the terminal.
fn search_note(s: &crate::result::SearchResult) -> Option<String> {
    use crate::units::{fmt_ns, fmt_rate};
    let point = s
        .point
        .iter()
        .map(|(k, v)| format!(" {k}={v}"))
        .collect::<String>();
    Some(match (s.kind.as_str(), s.found) {
        ("peak", Some(_)) => format!(
            "{}{point}: peak {} at {} clients",
            s.target,
            fmt_rate(s.throughput_per_s?),
            s.clients?
        ),
        ("capacity", Some(_)) => format!(
            "{}{point}: capacity {} with {} (p{} {}); closed-loop ceiling {}",
            s.target,
            fmt_rate(s.rate_per_s?),
            s.bound?,
            s.bound?.percentile,
            fmt_ns(s.latency_ns? as f64),
            fmt_rate(s.ceiling_per_s.unwrap_or(0.0))
        ),
        ("capacity", None) => format!(
            "{}{point}: no rate held {} (closed-loop ceiling {})",
            s.target,
            s.bound?,
            fmt_rate(s.ceiling_per_s.unwrap_or(0.0))
        ),
        _ => format!("{}{point}: no peak found (every step failed)", s.target),
    })
}

fn resource_sample(prev: &ProcSnapshot, now: &ProcSnapshot, dt: f64, t: f64) -> ResourceSample {
    let dt = dt.max(1e-3);
    ResourceSample {
        t_s: (t * 1000.0).round() / 1000.0,
        cpu_percent: now.cpu_ns.saturating_sub(prev.cpu_ns) as f64 / 1e9 / dt * 100.0,
        rss_bytes: now.rss_bytes,
        pss_bytes: now.pss_bytes,
        read_bytes_per_s: now.read_bytes.saturating_sub(prev.read_bytes) as f64 / dt,
        write_bytes_per_s: now.write_bytes.saturating_sub(prev.write_bytes) as f64 / dt,
        write_calls_per_s: Some(now.write_calls.saturating_sub(prev.write_calls) as f64 / dt),
        fsyncs_per_s: now
            .file_io
            .zip(prev.file_io)
            .map(|(n, p)| n.fsyncs.saturating_sub(p.fsyncs) as f64 / dt),
        disk_bytes: now.disk_bytes,
        replication_lag_bytes: now.replication_lag_bytes,
        connections: now.connections,
        cgroup_memory_bytes: now.cgroup_memory_bytes,
        cgroup_cache_bytes: now.cgroup_cache_bytes,
        nodes: now
            .nodes
            .iter()
            .zip(&prev.nodes)
            .map(|(n, p)| NodeResourceSample {
                cpu_percent: n.cpu_ns.saturating_sub(p.cpu_ns) as f64 / 1e9 / dt * 100.0,
                rss_bytes: n.rss_bytes,
                pss_bytes: n.pss_bytes,
                read_bytes_per_s: n.read_bytes.saturating_sub(p.read_bytes) as f64 / dt,
                write_bytes_per_s: n.write_bytes.saturating_sub(p.write_bytes) as f64 / dt,
            })
            .collect(),
    }
}

/// Options of an experiment run.
pub struct ExperimentOptions {
    /// Result file path.
    pub out: PathBuf,
    /// Ctrl-C flag.
    pub stop: std::sync::Arc<AtomicBool>,
    /// Skip targets that cannot be used (the default comparison) instead
    /// of refusing to start.
    pub skip_unavailable: bool,
}

/// Current time as RFC 3339 UTC, to the second (`2026-11-26T22:07:34Z`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Runs every point of `plan` on every target, `repeats` times, writing the
/// result file after each run. Setup errors (a target that cannot be used
/// when the user named it) are returned before anything runs.
pub fn run_experiment(
    plan: &Plan,
    opener: &dyn TargetOpener,
    environment: Environment,
    opts: &ExperimentOptions,
    observer: &mut dyn Observer,
) -> Result<ExperimentResult, RunError> {
    let mut result = ExperimentResult {
        schema_version: SCHEMA_VERSION,
        tool: "bakeoff".into(),
        started_at: now_rfc3339(),
        status: crate::result::ExperimentStatus::Running,
        plan: plan.clone(),
        environment,
        targets: Vec::new(),
        runs: Vec::new(),
        warnings: Vec::new(),
        searches: Vec::new(),
        shard: None,
        shards: Vec::new(),
    };
    let usable = probe_targets(plan, opener, opts, observer, &mut result)?;
    one::write(&result, opts)?;

    let points = plan.points();
    // Each target's own points: the same labels, its own base workload
    // where the preset gives it one.
    let target_points: Vec<Vec<crate::plan::Point>> =
        usable.iter().map(|spec| plan.points_for(spec)).collect();
    let max_value = target_points
        .iter()
        .flatten()
        .map(|p| p.workload.value_size.max())
        .max()
        .unwrap_or(100);
    let pool = ValuePool::new(max_value);
    let searching = plan.workload.find_peak || plan.workload.find_capacity.is_some();
    let mut runs = one::Runs {
        plan,
        pool: &pool,
        opener,
        opts,
        observer,
        recorded: BTreeMap::new(),
        result,
        made: 0,
        // A search's count is an estimate: it stops when it has found
        // what it looks for.
        total: usable.len()
            * points.len()
            * if searching {
                search::MAX_STEPS
            } else {
                plan.repeats as usize
            },
        kept: None,
    };
    for (p, repeat, s) in run_order(plan, usable.len(), points.len()) {
        let (point, spec) = (&target_points[s][p], &usable[s]);
        if opts.stop.load(Ordering::Relaxed) {
            break;
        }
        // A growth series keeps its target up between its checkpoints.
        if !plan.workload.grow || p == 0 {
            runs.kept = None;
        }
        if !searching {
            runs.step(spec, point, Some(repeat), None)?;
        } else if repeat == 0 {
            // A search runs once per point and target: its steps stand for
            // repeats.
            let found = search::search(point, &spec.id(), &opts.stop, &mut |point, bound| {
                runs.step(spec, point, None, bound)
            })?;
            if let Some(note) = search_note(&found) {
                runs.observer.note(&note);
            }
            runs.result.searches.push(found);
            runs.write()?;
        }
    }
    runs.result.status = if opts.stop.load(Ordering::Relaxed) {
        ExperimentStatus::Interrupted
    } else {
        ExperimentStatus::Complete
    };
    runs.write()?;
    Ok(runs.result)
}

/// The targets of `plan` that can be used; the default comparison skips
/// (and records) those this machine cannot start, any other run refuses
/// to start.
fn probe_targets(
    plan: &Plan,
    opener: &dyn TargetOpener,
    opts: &ExperimentOptions,
    observer: &mut dyn Observer,
    result: &mut ExperimentResult,
) -> Result<Vec<TargetSpec>, RunError> {
    let mut usable = Vec::new();
    for spec in &plan.targets {
        match opener.probe(spec, plan) {
            Ok(()) => usable.push(spec.clone()),
            Err(e) if opts.skip_unavailable => {
                let message = e.to_string();
                let note = format!("skipped {}: {message}", spec.label());
                observer.note(&note);
                result.warnings.push(note);
                result.targets.push(TargetRecord {
                    name: spec.id(),
                    mode: "managed".into(),
                    skipped: Some(message),
                    ..TargetRecord::default()
                });
            }
            Err(source) => {
                return Err(RunError::Setup {
                    target: spec.label(),
                    source,
                })
            }
        }
    }
    Ok(usable)
}

/// The order of runs, as (point, repeat, target) indices: targets
/// interleave within a point so that drift of the machine hits every
/// target alike; a growth experiment instead takes each target through
/// all its checkpoints, staying up between.
fn run_order(plan: &Plan, targets: usize, points: usize) -> Vec<(usize, u32, usize)> {
    let mut order = Vec::with_capacity(targets * points * plan.repeats as usize);
    if plan.workload.grow {
        for s in 0..targets {
            for repeat in 0..plan.repeats {
                for p in 0..points {
                    order.push((p, repeat, s));
                }
            }
        }
    } else {
        for p in 0..points {
            for repeat in 0..plan.repeats {
                for s in 0..targets {
                    order.push((p, repeat, s));
                }
            }
        }
    }
    order
}

/// What a finished run tells the user beyond its figures: a client that
/// set the pace, an open loop that fell behind, writes that stored
/// nothing, a link relay that set the pace.
fn run_notes(run: &RunResult, label: &str) -> Vec<String> {
    let mut notes = Vec::new();
    if run.client.client_bound {
        notes.push(format!(
            "run {} ({label}) was client-bound: a bakeoff thread was busy {:.0} % of the time; these numbers measure bakeoff, not the target. Add --threads or lower --clients.",
            run.index,
            run.client.thread_busy_percent.iter().cloned().fold(0.0, f64::max)
        ));
    }
    notes.extend(open_loop_notes(run, label));
    notes.extend(unstored_write_notes(run.index, &run.measure, label));
    if let Some(l) = run.client.link.as_ref().filter(|l| l.relay_bound) {
        notes.push(format!(
            "run {} ({label}): the link relay was busy {:.0} % of the time; the relay, not the link, may have set the pace. Lower --clients or --rate.",
            run.index, l.relay_busy_percent
        ));
    }
    notes
}

/// What a shard's file says of the shard: its index, the plan's hash, and
/// when its measured runs started and ended; `None` for a process that is
/// no shard.
fn shard_record(plan: &Plan, runs: &[RunResult]) -> Option<crate::result::ShardRecord> {
    let shard = plan.shard?;
    Some(crate::result::ShardRecord {
        index: shard.index,
        count: shard.count,
        plan_hash: plan.hash(),
        planned_start: plan.start.as_ref().map(|s| s.at.clone()),
        started_at: runs
            .iter()
            .find_map(|r| r.started_at.clone())
            .unwrap_or_default(),
        ended_at: runs
            .iter()
            .rev()
            .find_map(|r| r.ended_at.clone())
            .unwrap_or_default(),
        clock_offset_ns: runs.iter().find_map(|r| r.clock_offset_ns),
    })
}

/// The mark of run `index` in the durability check's values: differs
/// between runs and between invocations, so that values a run left in a
/// store are not taken for another's.
fn run_nonce(seed: u64, index: u32) -> u32 {
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mixed = crate::workload::fnv1a64(seed ^ clock ^ ((index as u64) << 40));
    (mixed as u32) | 1
}

fn merge_records(
    existing: &[TargetRecord],
    recorded: &BTreeMap<String, TargetRecord>,
) -> Vec<TargetRecord> {
    let mut out: Vec<TargetRecord> = existing
        .iter()
        .filter(|t| t.skipped.is_some())
        .cloned()
        .collect();
    out.extend(recorded.values().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::OpResult;

    fn measure(kind: &str, completed: u64, misses: u64) -> PhaseResult {
        let mut m = PhaseResult::default();
        m.ops.insert(
            kind.to_string(),
            OpResult {
                completed,
                misses,
                ..Default::default()
            },
        );
        m
    }

    #[test]
    fn writes_that_mostly_stored_nothing_are_named() {
        let notes = unstored_write_notes(3, &measure("set", 1000, 990), "handlersocket");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("run 3 (handlersocket): 990 of 1000 sets stored nothing"));
        let notes = unstored_write_notes(0, &measure("update", 1000, 600), "x");
        assert!(notes[0].contains("600 of 1000 updates"), "{notes:?}");
        // A few misses, a few requests, or misses of reads: no note.
        assert!(unstored_write_notes(0, &measure("set", 1000, 400), "x").is_empty());
        assert!(unstored_write_notes(0, &measure("set", 50, 50), "x").is_empty());
        assert!(unstored_write_notes(0, &measure("get", 1000, 1000), "x").is_empty());
    }
}
