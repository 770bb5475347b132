//! One job (a load, a measure, a read-back) on worker threads: [`run_job`]
//! starts one thread per worker, each running its share through the
//! target's [`Driver`]; the calling thread is the collector: it merges the
//! workers' per-second intervals into the timeline, samples the target's
//! resources once a second, calls what the run does during the job (its
//! extras: a fault, a provocation) when due, and reports progress.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use crate::driver::{Driver, Job, JobInputs, JobKind};
use crate::durability::WorkerDurability;
use crate::error::TargetError;
use crate::plan::{RequestMode, Workload};
use crate::readings::{MachineTicks, ProcSnapshot, Readings};
use crate::recorder::{Interval, PhaseStats, WorkerOutput};
use crate::result::{
    MachineCpuSample, NodeResourceSample, Phase, ResourceSample, RunResult, TimelinePoint,
};
use crate::workload::OP_KINDS;

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

/// What a run does while one of its jobs goes on, on the thread that
/// collects the job (each call holds that thread up, so keep it short).
pub trait DuringJob {
    /// The measure job's warm-up ended (read the server's cumulative
    /// counters here, and they cover the measured phase alone).
    fn warmed_up(&mut self) {}
    /// When [`DuringJob::at`] is next due, seconds since the job's start.
    fn due_s(&self) -> Option<f64> {
        None
    }
    /// A due moment came, `t_s` seconds since the job's start.
    fn at(&mut self, _t_s: f64) {}
    /// Second `second` of the job (since its start), merged over the
    /// workers: its phase and every operation's latency in it.
    fn second(&mut self, _second: u32, _phase: Phase, _latency: &hdrhistogram::Histogram<u64>) {}
}

/// Nothing to do during a job.
pub struct NothingDuring;
impl DuringJob for NothingDuring {}

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
    /// The machine's CPUs, sampled with the resources but for every
    /// target, one with no process of bakeoff's to read as well.
    pub machine_cpu: Vec<MachineCpuSample>,
    /// Busy percent of each worker in the last phase, without spinning.
    pub busy_percent: Vec<f64>,
    /// Percent of each worker's time in the last phase spent spinning
    /// before send times.
    pub spin_percent: Vec<f64>,
    /// I/O mechanism.
    pub backend: crate::recorder::IoLoop,
    /// Length of the last phase (measure, or load), seconds.
    pub last_phase_s: f64,
    /// Time requests were outstanding inside the measured window, summed
    /// over requests and workers, ns.
    pub busy_in_window_ns: u64,
    /// Length of the measured window: from the end of the warm-up to the
    /// end of a timed phase or the last completion, whichever is first, ns.
    pub window_ns: u64,
    /// The durability check's writes or read-back, merged over workers.
    pub durability: Option<WorkerDurability>,
    /// Requests sent per node and kind, when the target is sharded.
    pub node_sent: Vec<[u64; OP_KINDS]>,
    /// Redis Cluster: `MOVED` and `ASK` replies per node.
    pub node_redirects: Vec<[u64; 2]>,
    /// Single measured operations in time order, when asked for.
    pub trace: Option<crate::trace::LatencyTrace>,
    /// Where the warm-up ended, seconds since the job's start (found, with
    /// `--warmup auto`; else the workload's).
    pub warmup_s: f64,
    /// `--warmup auto`: the first second of the steady window that ended
    /// it (`None`: none was steady within the bound, or not auto).
    pub steady_from_s: Option<u32>,
}

/// Adds per-node counts `more` into `into`.
pub(super) fn add_node_sent<const N: usize>(into: &mut Vec<[u64; N]>, more: &[[u64; N]]) {
    if into.len() < more.len() {
        into.resize(more.len(), [0; N]);
    }
    for (a, b) in into.iter_mut().zip(more) {
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
    }
}

/// Most clients a connection-per-request experiment loads with: fewer
/// than the fewest connections a server can be set to take (MariaDB: 10).
pub const LOAD_CLIENTS_MAX: u32 = 8;

/// The workload of the load before a run of `w`. With a connection per
/// request, `clients` is the crowd of short connections meant to overload
/// the server (000-mysql-conns: 1000 against 500 allowed); the load keeps
/// one connection per client all along, so fewer clients do it rather than
/// be refused.
pub(super) fn load_workload(w: &Workload) -> Workload {
    let mut load = w.clone();
    if w.request != RequestMode::Op {
        load.clients = w.clients.min(LOAD_CLIENTS_MAX);
        load.threads = w.threads.min(load.clients);
    }
    load
}

/// Runs one job on `workload.threads` worker threads; the calling thread
/// collects intervals, samples `readings` each second, calls `during` as
/// a measure job's warm-up ends, at the moments it asks for and with each
/// second, and tells `observer`.
pub fn run_job(
    driver: &dyn Driver,
    kind: JobKind,
    inputs: JobInputs,
    readings: &mut dyn FnMut() -> Readings,
    during: &mut dyn DuringJob,
    observer: &mut dyn Observer,
) -> Result<JobOutcome, TargetError> {
    let (tx, rx) = mpsc::channel::<Interval>();
    let job = Job::new(kind, inputs, tx);
    let threads = job.inputs.workload.threads.max(1) as usize;
    let mut collector = Collector::new(&job, threads, readings());
    let outputs = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let job = &job;
                s.spawn(move || {
                    let out = driver.carrier(job).run_worker(job, w);
                    // Told at once, so that the job ends with its workers,
                    // not at the collector's next look (up to 100 ms a
                    // job: seconds over an experiment of rounds).
                    let _ = job.intervals.send(Interval::new(WORKER_DONE));
                    out
                })
            })
            .collect();
        // A warm-up's end, when it has one, in seconds since the start.
        let mut due_warm = (kind == JobKind::Measure && job.warmup_end_ns() > 0)
            .then(|| job.warmup_end_ns() as f64 / 1e9);
        loop {
            let all_done = collector.finished == threads || handles.iter().all(|h| h.is_finished());
            let due_s = [due_warm, during.due_s()]
                .into_iter()
                .flatten()
                .reduce(f64::min);
            if !all_done {
                collector.wait(&rx, due_s, readings, during, observer);
            }
            if let (Some(at), Some(due)) = (collector.warmup_moved.take(), due_warm.as_mut()) {
                *due = at;
            }
            let elapsed = job.t0.elapsed().as_secs_f64();
            if due_warm.take_if(|at| elapsed >= *at).is_some() {
                during.warmed_up();
            }
            // Nothing is due once the workers are done: a fault or a
            // provocation after the job would measure nothing.
            if !all_done && during.due_s().is_some_and(|at| elapsed >= at) {
                during.at(elapsed);
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
    collector.drain(&rx, readings, during, observer);
    Ok(merge_outputs(&job, outputs, collector))
}

/// The calling thread's part of a job: the per-second timeline merged
/// over workers and resource samples.
struct Collector<'j> {
    job: &'j Job<'j>,
    threads: usize,
    warmup_end_s: f64,
    timeline: Vec<TimelinePoint>,
    samples: Vec<ResourceSample>,
    machine_cpu: Vec<MachineCpuSample>,
    /// Seconds some workers have handed over, and how many have.
    pending: BTreeMap<u32, (Interval, usize)>,
    last_snap: Option<ProcSnapshot>,
    last_snap_t: f64,
    /// The machine's CPU ticks at the last sample of them, and when.
    last_machine: Option<MachineTicks>,
    last_machine_t: f64,
    next_sample: Duration,
    /// Workers that said they are done.
    finished: usize,
    /// `--warmup auto`, until the end is settled: each warm-up second's
    /// throughput and p99, judged as they come.
    warm: Option<(Vec<f64>, Vec<f64>)>,
    /// Where the steady window that ended an automatic warm-up starts.
    steady_from: Option<u32>,
    /// The warm-up's new end, seconds, once moved (taken by the job's loop
    /// to call the extras' `warmed_up` then).
    warmup_moved: Option<f64>,
}

/// The second of the interval a worker sends when it is done.
const WORKER_DONE: u32 = u32::MAX;

impl<'j> Collector<'j> {
    fn new(job: &'j Job<'j>, threads: usize, first: Readings) -> Self {
        Collector {
            job,
            threads,
            warmup_end_s: job.warmup_end_ns() as f64 / 1e9,
            timeline: Vec::new(),
            samples: Vec::new(),
            machine_cpu: Vec::new(),
            pending: BTreeMap::new(),
            last_snap: first.process,
            last_snap_t: 0.0,
            last_machine: first.machine,
            last_machine_t: 0.0,
            next_sample: Duration::from_secs(1),
            finished: 0,
            warm: job.warmup.may_move().then(Default::default),
            steady_from: None,
            warmup_moved: None,
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

    /// Waits for the next interval, no later than `due_s` (when a fault or
    /// the warm-up's end is due), and samples the resources once a second.
    fn wait(
        &mut self,
        rx: &mpsc::Receiver<Interval>,
        due_s: Option<f64>,
        readings: &mut dyn FnMut() -> Readings,
        during: &mut dyn DuringJob,
        observer: &mut dyn Observer,
    ) {
        let elapsed = self.job.t0.elapsed();
        let until_due = due_s.map_or(Duration::MAX, |at| {
            Duration::try_from_secs_f64((at - elapsed.as_secs_f64()).max(0.0))
                .unwrap_or(Duration::MAX)
        });
        let wait = self
            .next_sample
            .saturating_sub(elapsed)
            .min(until_due)
            .min(Duration::from_millis(50));
        if let Ok(iv) = rx.recv_timeout(wait) {
            if iv.second == WORKER_DONE {
                self.finished += 1;
                return;
            }
            if let Some(iv) = self.add(iv) {
                self.push(&iv, during, observer);
            }
            return;
        }
        let elapsed = self.job.t0.elapsed();
        if elapsed >= self.next_sample {
            self.sample(elapsed.as_secs_f64(), readings);
            self.next_sample += Duration::from_secs(1);
        }
    }

    /// A second merged over every worker, onto the timeline.
    fn push(&mut self, iv: &Interval, during: &mut dyn DuringJob, observer: &mut dyn Observer) {
        let phase = self.phase_name(iv.second);
        let p = timeline_point(iv, phase);
        during.second(iv.second, phase, &iv.latency);
        observer.second(self.job.kind, &p);
        if self.warm.is_some() {
            if phase == Phase::Warmup {
                self.judge_warmup(&p);
            }
            self.job.warmup.judged(iv.second);
        }
        self.timeline.push(p);
    }

    /// `--warmup auto`: adds a warm-up second to the series and ends the
    /// warm-up once throughput and p99 have been flat over a window
    /// ([`crate::stats::warmup_end`]), at the next whole second (on
    /// simulated time, the judged second's end); at its bound, keeps the
    /// end where it is.
    fn judge_warmup(&mut self, p: &TimelinePoint) {
        let Some((ops, p99)) = self.warm.as_mut() else {
            return;
        };
        ops.push(p.ops_per_s as f64);
        p99.push(p.p99_ns as f64);
        let judged_end_s = f64::from(p.t_s) + 1.0;
        if let Some(start) = crate::stats::warmup_end(&[ops, p99]) {
            let mut end_s = judged_end_s;
            if !self.job.warmup.simulated() {
                // Workers may be past the judged second: the end falls
                // after now, with time for every worker to see it.
                end_s = end_s.max((self.job.t0.elapsed().as_secs_f64() + 0.1).ceil());
            }
            let end_s = end_s.min(self.warmup_end_s);
            self.job.warmup.settle((end_s * 1e9) as u64);
            self.steady_from = Some(start as u32);
            self.warmup_end_s = end_s;
            self.warmup_moved = Some(end_s);
            self.warm = None;
        } else if judged_end_s >= self.warmup_end_s {
            self.job.warmup.settle(u64::MAX);
            self.warm = None;
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

    /// Reads the target and the machine at `t` seconds into the job; a
    /// sample of each that was read now and before.
    fn sample(&mut self, t: f64, readings: &mut dyn FnMut() -> Readings) {
        let now = readings();
        if let (Some(now), Some(prev)) = (now.process, self.last_snap.as_ref()) {
            self.samples
                .push(resource_sample(prev, &now, t - self.last_snap_t, t));
            self.last_snap = Some(now);
            self.last_snap_t = t;
        }
        if let Some(machine) = now.machine {
            let busy = self
                .last_machine
                .and_then(|prev| machine.busy_percent_since(&prev));
            if let Some(busy_percent) = busy {
                self.machine_cpu.push(MachineCpuSample {
                    t_s: (t * 1000.0).round() / 1000.0,
                    busy_percent: (busy_percent * 10.0).round() / 10.0,
                });
            }
            self.last_machine = Some(machine);
            self.last_machine_t = t;
        }
    }

    /// After the workers: intervals sent after the last wait, partial
    /// seconds, and a last resource sample.
    fn drain(
        &mut self,
        rx: &mpsc::Receiver<Interval>,
        readings: &mut dyn FnMut() -> Readings,
        during: &mut dyn DuringJob,
        observer: &mut dyn Observer,
    ) {
        while let Ok(iv) = rx.try_recv() {
            if iv.second != WORKER_DONE {
                self.merge_in(iv);
            }
        }
        for (_, (iv, _)) in std::mem::take(&mut self.pending) {
            self.push(&iv, during, observer);
        }
        self.timeline.sort_by_key(|p| p.t_s);
        let t = self.job.t0.elapsed().as_secs_f64();
        if t - self.last_snap_t.max(self.last_machine_t) > 0.2 {
            self.sample(t, readings);
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
        machine_cpu: collected.machine_cpu,
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
            .map(|o| o.backend.clone())
            .unwrap_or_default(),
        last_phase_s: last_phase_s(job, last),
        busy_in_window_ns: outputs.iter().map(|o| o.busy_in_window_ns).sum(),
        window_ns: last.min(job.measure_end_ns()).saturating_sub(warmup_end),
        durability,
        node_sent,
        node_redirects,
        trace,
        warmup_s: warmup_end as f64 / 1e9,
        steady_from_s: collected.steady_from,
    }
}

/// Length of the job's last phase, seconds, its last completion at `last`
/// ns: a timed phase lasts its duration plus the drain of the last
/// requests, never less than the nominal length.
pub(super) fn last_phase_s(job: &Job, last: u64) -> f64 {
    let nominal = match (job.kind, job.inputs.workload.duration_s) {
        (JobKind::Measure, Some(d)) => d,
        _ => 0.0,
    };
    let s = last.saturating_sub(job.warmup_end_ns()) as f64 / 1e9;
    if job.inputs.stop.load(Ordering::Relaxed) || s == 0.0 {
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

/// The CPU time of the thread that used most between `prev` and `now`,
/// ns (a thread that started in between, a new connection's backend or a
/// worker, from nothing); `None` when no thread was read.
fn busiest_thread(prev: &ProcSnapshot, now: &ProcSnapshot) -> Option<u64> {
    let before: std::collections::HashMap<u32, u64> = prev.thread_cpu_ns.iter().copied().collect();
    now.thread_cpu_ns
        .iter()
        .map(|(tid, ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .max()
}

fn resource_sample(prev: &ProcSnapshot, now: &ProcSnapshot, dt: f64, t: f64) -> ResourceSample {
    let dt = dt.max(1e-3);
    ResourceSample {
        t_s: (t * 1000.0).round() / 1000.0,
        cpu_percent: now.cpu_ns.saturating_sub(prev.cpu_ns) as f64 / 1e9 / dt * 100.0,
        busiest_thread_percent: busiest_thread(prev, now).map(|ns| ns as f64 / 1e9 / dt * 100.0),
        device_busy_percent: now.device.as_ref().zip(prev.device.as_ref()).map(|(n, p)| {
            (n.busy_ms.saturating_sub(p.busy_ms) as f64 / 1e3 / dt * 100.0).min(100.0)
        }),
        device_write_bytes_per_s: now
            .device
            .as_ref()
            .zip(prev.device.as_ref())
            .map(|(n, p)| n.written_bytes.saturating_sub(p.written_bytes) as f64 / dt),
        // The machine's CPUs are the run's `machine_cpu`, read for every
        // target; only files from before it hold them here.
        machine_cpu_percent: None,
        rss_bytes: now.rss_bytes,
        pss_bytes: now.pss_bytes,
        read_bytes_per_s: now.read_bytes.saturating_sub(prev.read_bytes) as f64 / dt,
        write_bytes_per_s: now.write_bytes.saturating_sub(prev.write_bytes) as f64 / dt,
        write_calls_per_s: Some(now.write_calls.saturating_sub(prev.write_calls) as f64 / dt),
        fsyncs_per_s: now
            .file_io
            .map(|f| f.fsyncs)
            .zip(prev.file_io.map(|f| f.fsyncs))
            .or(now.fsyncs.zip(prev.fsyncs))
            .map(|(n, p)| n.saturating_sub(p) as f64 / dt),
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
