//! One run, in stages: open the target, load, measure, compare the
//! server's counters, check, settle the status. Every feature beyond the
//! plain run is an extra (crates/core/src/runner/extras) that hooks these
//! stages; nothing here knows faults, durability, replicas, links or nodes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::driver::JobKind;
use crate::error::RunError;
use crate::plan::{Plan, Point, TargetSpec, Workload};
use crate::result::{ClientUsage, ExperimentResult, PhaseResult, RunResult, TargetRecord};
use crate::value::ValuePool;

use super::extras::{self, Extra, Stage};
use super::job::{load_workload, run_job, JobOutcome, Observer};
use super::notes::run_notes;
use crate::driver::JobInputs;
use crate::target::{Sent, Target, TargetOpener};

/// What every run of an experiment shares.
pub(super) struct Runs<'a> {
    /// The experiment's plan.
    pub plan: &'a Plan,
    /// Where plain values come from.
    pub pool: &'a ValuePool,
    /// Opens the targets.
    pub opener: &'a dyn TargetOpener,
    /// Where the result goes, and the stop flag.
    pub opts: &'a ExperimentOptions,
    /// Told of every second and every run.
    pub observer: &'a mut dyn Observer,
    /// Each target's record, as its latest run opened it.
    pub recorded: BTreeMap<String, TargetRecord>,
    /// The experiment's result so far, written after each run.
    pub result: ExperimentResult,
    /// Runs made so far.
    pub made: usize,
    /// Runs the experiment makes (an estimate for a search).
    pub total: usize,
    /// The target a growth series or a search keeps between its runs, or
    /// a server kept up from the last round.
    pub kept: Option<Box<dyn Target>>,
    /// `kept` is a server kept up from the last round, loaded: this run
    /// measures it as it is, without a load.
    pub loaded: bool,
}

/// Writes `result` where the experiment's options say. Where it cannot
/// (a folder gone read-only, a full disk), it goes to the temporary folder
/// instead and the error says where: a run is never lost to its output.
pub(super) fn write(result: &ExperimentResult, opts: &ExperimentOptions) -> Result<(), RunError> {
    result.write_atomic(&opts.out).map_err(|source| {
        let name = opts
            .out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "result.json".into());
        let instead =
            std::env::temp_dir().join(format!("bakeoff-unsaved-{}-{name}", std::process::id()));
        let saved = result.write_atomic(&instead).ok().map(|()| instead);
        RunError::Write {
            path: opts.out.display().to_string(),
            source,
            saved,
        }
    })
}

/// Which run: its target, point, repetition and index.
pub(super) struct RunAt<'a> {
    /// The target.
    pub spec: &'a TargetSpec,
    /// The point of the experiment's sweep.
    pub point: &'a Point,
    /// Which repetition of the point.
    pub repeat: u32,
    /// The run's index in the experiment.
    pub index: u32,
}

/// How a stage ended the run early: its message (the status stays
/// "failed").
type Ended = String;

impl Runs<'_> {
    /// Writes the result so far.
    pub fn write(&self) -> Result<(), RunError> {
        write(&self.result, self.opts)
    }

    /// Runs `point` on `spec` (repetition `repeat`, or a search's step
    /// held to `bound`), tells the observer, adds the run to the result
    /// and writes it; returns what a search needs of it.
    pub fn step(
        &mut self,
        spec: &TargetSpec,
        point: &Point,
        repeat: Option<u32>,
        bound: Option<&crate::find::LatencyBound>,
    ) -> Result<super::search::StepOutcome, RunError> {
        let label = self.label(spec, point, repeat);
        let w = &point.workload;
        let duration = w.duration_s.map(|d| d + w.warmup_bound_s());
        self.observer
            .run_started(self.made, self.total, &label, duration);
        let at = RunAt {
            spec,
            point,
            repeat: repeat.unwrap_or(0),
            index: self.made as u32,
        };
        let mut kept = self.kept.take();
        let run = self.run_one(&at, &mut kept);
        self.kept = kept;
        // A run that refused to start (a synchronised start it could not
        // keep) ends the experiment; the file says so and why.
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                self.result.status = crate::result::ExperimentStatus::Refused;
                self.result.warnings.push(e.to_string());
                self.write()?;
                return Err(e);
            }
        };
        for note in run_notes(&run, &label) {
            self.observer.note(&note);
            self.result.warnings.push(note);
        }
        self.observer.run_finished(&run);
        let outcome = super::search::StepOutcome::of(&run, bound);
        self.result.runs.push(run);
        self.result.summaries = crate::summary::summarise(&self.result);
        self.result.shard = shard_record(self.plan, &self.result.runs);
        self.result.targets = merge_records(&self.result.targets, &self.recorded);
        self.write()?;
        self.made += 1;
        Ok(outcome)
    }

    /// How the run is named on the screen: the target, the point's
    /// labels, and which repetition when there are several.
    fn label(&self, spec: &TargetSpec, point: &Point, repeat: Option<u32>) -> String {
        let labels: String = point
            .labels
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect();
        match repeat {
            Some(r) if self.plan.repeats > 1 => {
                format!("{}{labels} repeat {}", spec.label(), r + 1)
            }
            _ => format!("{}{labels}", spec.label()),
        }
    }

    /// Runs one point on one target; `kept` holds the target a growth
    /// series or a search reuses from its previous run.
    fn run_one(
        &mut self,
        at: &RunAt,
        kept: &mut Option<Box<dyn Target>>,
    ) -> Result<RunResult, RunError> {
        // This process's part of the point's workload: all of it, or a shard's.
        let w = self.plan.own_part(&at.point.workload);
        let mut run = fresh_run(at, &w);
        let prepared = match extras::Prepared::of(&w) {
            Ok(p) => p,
            Err(m) => return Ok(ended(run, m)),
        };
        prepared.record(&mut run);
        let target = match self.open(at, &w, kept) {
            Ok(t) => t,
            Err(m) => {
                run.did_not_open = true;
                return Ok(ended(run, m));
            }
        };
        let mut plain = JobInputs::plain(&w, self.plan.run_seed(), self.pool, &self.opts.stop);
        plain.nonce = run_nonce(self.plan.seed, at.index);
        let stage = Stage {
            spec: at.spec,
            plan: self.plan,
            index: at.index,
            repeat: at.repeat,
            target,
            inputs: prepared.inputs(plain),
        };
        let mut extras = extras::for_run(&stage);
        match self.stages(&stage, &mut extras, &mut run) {
            Ok(()) => Ok(run),
            Err(Stop::Ended(m)) => Ok(ended(run, m)),
            Err(Stop::Refused(e)) => Err(e),
        }
    }

    /// The stages after the target is open, up to the settled status.
    fn stages(
        &mut self,
        stage: &Stage,
        extras: &mut [Box<dyn Extra>],
        run: &mut RunResult,
    ) -> Result<(), Stop> {
        let before = stage.target.counters();
        let mut sent = Sent {
            merged_updates: stage.workload().fields > 1 && !stage.target.keeps_fields(),
            ..Sent::default()
        };
        let load_s = if stage.workload().load && !self.loaded {
            self.load(stage, extras, run, &mut sent)?
        } else {
            if self.loaded {
                // Loaded in an earlier round: what it holds now.
                run.checks.records_after_load = stage.target.record_count();
            }
            0.0
        };
        for e in extras.iter_mut() {
            // Interrupted (during the disk's idle time, say): no more
            // asking a server that may be why the user pressed Ctrl-C.
            if self.opts.stop.load(Ordering::Relaxed) {
                break;
            }
            // Nor one that stalled: each question would wait out its
            // own timeout.
            if let Some(why) = stage.target.stalled() {
                return Err(Stop::Ended(format!(
                    "the server stalled before the measured phase: {why}"
                )));
            }
            e.before_measure(stage, run, &mut *self.observer)
                .map_err(Stop::Refused)?;
        }
        let little = if self.opts.stop.load(Ordering::Relaxed) {
            (0, 0)
        } else {
            self.measure(stage, extras, load_s, run, &mut sent)?
        };
        // Interrupted, the counters are not read: Ctrl-C is not held by a
        // server that may be why the user pressed it.
        if !self.opts.stop.load(Ordering::Relaxed) {
            compare_counters(stage, extras, before, &sent, run);
        }
        for e in extras.iter_mut() {
            e.check(stage, run, self.observer).map_err(Stop::Ended)?;
        }
        littles_law(stage.workload(), little, run);
        settle_status(stage, extras, run);
        Ok(())
    }

    /// Opens the run's target, or takes the one a growth checkpoint or a
    /// search step before it kept; records what it is.
    fn open<'k>(
        &mut self,
        at: &RunAt,
        w: &Workload,
        kept: &'k mut Option<Box<dyn Target>>,
    ) -> Result<&'k dyn Target, Ended> {
        let reused = kept.is_some();
        if !reused {
            *kept = Some(
                self.opener
                    .open(at.spec, self.plan, w)
                    .map_err(|e| e.to_string())?,
            );
        }
        let target = kept.as_deref().ok_or_else(String::new)?;
        // A full load again on a target that holds the last one (a
        // search's later step; not a growth checkpoint, whose load adds to
        // what is there): emptied first where the load cannot overwrite
        // (opening empties it once).
        if reused && !self.loaded && w.empties_before_load() && w.load_from == 0 {
            target
                .empty()
                .map_err(|e| format!("emptying the target before its load failed: {e}"))?;
        }
        let mut record = target.record();
        record.name = at.spec.id();
        record.declared = self.opener.declared_settings(at.spec, self.plan);
        record.durable_to = self.opener.durable_to(at.spec, self.plan);
        if w.fields > 1 && !target.keeps_fields() {
            say_fields_are_merged(&mut record, w.fields);
        }
        self.recorded.insert(at.spec.label(), record);
        Ok(target)
    }

    /// The load job; returns its length on the run's timeline, seconds.
    fn load(
        &mut self,
        stage: &Stage,
        extras: &mut [Box<dyn Extra>],
        run: &mut RunResult,
        sent: &mut Sent,
    ) -> Result<f64, Stop> {
        let target = stage.target;
        // The empty server's own memory, taken off what the records cost.
        if stage.workload().load_from == 0 {
            run.checks.memory_before_load_bytes = target
                .readings()
                .process
                .map(|p| p.pss_bytes.unwrap_or(p.rss_bytes))
                .filter(|&b| b > 0);
        }
        let load_workload = load_workload(stage.workload());
        let o = run_job(
            target.driver(),
            JobKind::Load,
            stage.inputs.for_load(&load_workload),
            &mut || target.readings(),
            &mut super::job::NothingDuring,
            self.observer,
        )
        .map_err(|m| Stop::Ended(phase_failed("load", &m, target)))?;
        sent.add(&o.phases[0]);
        for e in extras.iter_mut() {
            e.job_done(stage, JobKind::Load, &o);
        }
        run.load = Some(PhaseResult::from_stats(&o.phases[0], o.last_phase_s));
        let load_s = o
            .timeline
            .last()
            .map(|p| p.t_s as f64 + 1.0)
            .unwrap_or(o.last_phase_s)
            .ceil();
        run.timeline.extend(o.timeline);
        run.resources.extend(o.resources);
        run.machine_cpu.extend(o.machine_cpu);
        run.checks.records_after_load = target.record_count();
        for e in extras.iter_mut() {
            e.loaded(stage, run);
        }
        Ok(load_s)
    }

    /// The measure job (warm-up, then the measured phase); returns Little's
    /// law's numerator and window, ns.
    fn measure(
        &mut self,
        stage: &Stage,
        extras: &mut [Box<dyn Extra>],
        load_s: f64,
        run: &mut RunResult,
        sent: &mut Sent,
    ) -> Result<(u64, u64), Stop> {
        let target = stage.target;
        let now = || humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        run.started_at = Some(now());
        let outcome = run_job(
            target.driver(),
            JobKind::Measure,
            stage.inputs,
            &mut || target.readings(),
            &mut extras::During { stage, extras },
            self.observer,
        );
        run.ended_at = Some(now());
        let mut o = outcome.map_err(|m| Stop::Ended(phase_failed("measure", &m, target)))?;
        for p in &o.phases {
            sent.add(p);
        }
        if o.warmup_s > 0.0 {
            run.warmup = Some(PhaseResult::from_stats(&o.phases[0], o.warmup_s));
        }
        // The run's record says where the warm-up ended (found, with
        // `--warmup auto`) and where the steady window that ended it began.
        run.workload.warmup_s = o.warmup_s;
        run.warmup_steady_from_s = o.steady_from_s;
        run.measure = PhaseResult::from_stats(&o.phases[1], o.last_phase_s);
        run.trace = o.trace.take();
        run.client = client_usage(&o);
        // A server that stalled is asked nothing more (each question would
        // wait out its own timeout): the run ends, saying so, with what
        // was measured.
        let stalled = target.stalled();
        for e in extras.iter_mut().filter(|_| stalled.is_none()) {
            e.job_done(stage, JobKind::Measure, &o);
            e.measured(stage, &mut o, load_s, run)
                .map_err(Stop::Ended)?;
        }
        run.timeline.extend(o.timeline.into_iter().map(|mut p| {
            p.t_s += load_s as u32;
            p
        }));
        run.resources.extend(o.resources.into_iter().map(|mut r| {
            r.t_s += load_s;
            r
        }));
        run.machine_cpu
            .extend(o.machine_cpu.into_iter().map(|mut m| {
                m.t_s += load_s;
                m
            }));
        if let Some(why) = stalled {
            return Err(Stop::Ended(format!(
                "the server stalled: {why}; its counters, records and background work were not read, and what was measured is in the file"
            )));
        }
        Ok((o.busy_in_window_ns, o.window_ns))
    }
}

/// Why the stages stopped before the end.
enum Stop {
    /// The run ends as failed, with this message; it is still recorded.
    Ended(Ended),
    /// The run refused to start (a synchronised start it could not keep):
    /// the experiment ends.
    Refused(RunError),
}

/// A run not yet made: status "failed" until its stages say otherwise.
fn fresh_run(at: &RunAt, w: &Workload) -> RunResult {
    RunResult {
        index: at.index,
        target: at.spec.id(),
        point: at.point.labels.clone(),
        repeat: at.repeat,
        workload: w.clone(),
        status: crate::result::RunStatus::Failed,
        message: None,
        load: None,
        warmup: None,
        warmup_steady_from_s: None,
        measure: PhaseResult::default(),
        started_at: None,
        ended_at: None,
        clock_offset_ns: None,
        timeline: Vec::new(),
        resources: Vec::new(),
        machine_cpu: Vec::new(),
        client: ClientUsage::default(),
        checks: Default::default(),
        fault: None,
        durability: None,
        disk: None,
        nodes: Vec::new(),
        redirections: None,
        did_not_open: false,
        replay: None,
        trace: None,
        server_time: None,
        bottleneck: None,
        background: None,
    }
}

/// `run`, ended by a stage with `message`.
fn ended(mut run: RunResult, message: String) -> RunResult {
    run.message = Some(message);
    run
}

/// What the client's threads did in the measure job.
fn client_usage(o: &JobOutcome) -> ClientUsage {
    let busy_max = o.busy_percent.iter().cloned().fold(0.0, f64::max);
    // In-process engines do their work on bakeoff's threads: a busy
    // thread there is the engine, not a saturated client.
    let in_process = o.backend == crate::recorder::IoLoop::InProcess;
    let tenth = |v: &[f64]| v.iter().map(|b| (b * 10.0).round() / 10.0).collect();
    ClientUsage {
        io_backend: o.backend.clone(),
        thread_busy_percent: tenth(&o.busy_percent),
        client_bound: busy_max > 90.0 && !in_process,
        spin_percent: tenth(&o.spin_percent),
        link: None,
        encoding: None,
    }
}

/// Why a job failed: the server bakeoff started having died says why
/// (how it exited, its log's end: a full disk, say), where the job's own
/// error only says it could not connect.
fn phase_failed(phase: &str, error: &crate::error::TargetError, target: &dyn Target) -> String {
    if let Some(why) = target.stalled() {
        return format!("{phase} phase failed: the server stalled: {why}");
    }
    match target.gone() {
        Some(why) => format!("{phase} phase failed: the server is no longer running: {why}"),
        None => format!("{phase} phase failed: {error}"),
    }
}

/// The server's counters set against what was sent. A server an extra
/// restarted counts from zero: its counters cannot be set against what
/// was sent.
/// Nor can one shard's requests be: the server counts every shard's (the
/// merged file's sum is what they add up to).
fn compare_counters(
    stage: &Stage,
    extras: &mut [Box<dyn Extra>],
    before: Option<crate::target::Counters>,
    sent: &Sent,
    run: &mut RunResult,
) {
    let alone = stage.plan.shard.is_none_or(|s| s.count == 1);
    let reset = extras.iter().any(|e| e.reset_counters());
    if let (Some(b), Some(a), false, true) = (before, stage.target.counters(), reset, alone) {
        run.checks.counters = stage.target.counter_checks(&b, &a, sent);
        for e in extras.iter_mut() {
            e.counters(stage, &b, &a, run);
        }
    }
}

/// Little's law: the mean number of requests out over the measured
/// window, against the number the clients keep out (below 1 when the
/// client leaves gaps between requests). Closed loop, clean runs only.
fn littles_law(w: &Workload, (busy_ns, window_ns): (u64, u64), run: &mut RunResult) {
    let m = &run.measure;
    if w.rate.is_some() || m.error_total() > 0 || m.completed == 0 || window_ns == 0 {
        return;
    }
    // In-process workers make one call at a time each.
    let in_flight = if run.client.io_backend == crate::recorder::IoLoop::InProcess {
        w.clients.min(w.threads) as f64
    } else {
        w.in_flight() as f64
    };
    let ratio = busy_ns as f64 / window_ns as f64 / in_flight;
    run.checks.littles_law_ratio = Some((ratio * 1000.0).round() / 1000.0);
}

/// The run's status and message from its errors, the extras that explain
/// them, a stop, and the extras' notes.
fn settle_status(stage: &Stage, extras: &[Box<dyn Extra>], run: &mut RunResult) {
    let load_errors = run.load.as_ref().map(|l| l.error_total()).unwrap_or(0);
    let errors = load_errors + run.measure.error_total();
    let explained = (errors > 0)
        .then(|| extras.iter().find_map(|e| e.explains_errors(run, errors)))
        .flatten();
    let stopped = stage.inputs.stop.load(Ordering::Relaxed);
    if let Some(why) = explained {
        // The errors are what the run measured (a fault's).
        run.status = crate::result::RunStatus::Ok;
        run.message = Some(why);
    } else if errors > 0 {
        run.status = crate::result::RunStatus::Errors;
        let split = if load_errors > 0 {
            format!(
                " ({load_errors} while loading, {} measured)",
                errors - load_errors
            )
        } else {
            String::new()
        };
        run.message = Some(format!(
            "{errors} operations or connection attempts failed{split}; see errors by kind"
        ));
    } else if run.measure.completed == 0 && !stopped {
        // Nothing to report is not a clean result: a phase too short for
        // one reply, or clients that never got to send.
        run.status = crate::result::RunStatus::Errors;
        run.message = Some(format!(
            "the measured phase ({:.3} s) completed no operation, so there is nothing to report; measure longer (--duration) or check the target",
            run.measure.duration_s
        ));
    } else {
        run.status = crate::result::RunStatus::Ok;
    }
    if stopped {
        // Stopped by a signal before its end: what it measured is real but
        // partial, and a durability check read back what it could in its
        // grace time (the rest unread, not lost); no class is measured
        // from it.
        run.status = crate::result::RunStatus::Interrupted;
        let line = "stopped by a signal before the run's end; its figures cover what was measured until then";
        run.message = Some(match run.message.take() {
            Some(m) => format!("{line}; {m}"),
            None => line.to_string(),
        });
    }
    let notes: Vec<String> = extras.iter().filter_map(|e| e.note(run)).collect();
    for line in notes {
        run.message = Some(match run.message.take() {
            Some(m) => format!("{m}; {line}"),
            None => line,
        });
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

/// What a shard's file says of the shard: its index, the plan's hash, and
/// when its measured runs started and ended; `None` for a process that is
/// no shard.
pub(super) fn shard_record(plan: &Plan, runs: &[RunResult]) -> Option<crate::result::ShardRecord> {
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

/// Records of several fields on a target that keeps a record as one value:
/// the record of what was sent says how updates and read-modify-writes
/// write one field (a read-merge-write), beside the driver's own words.
fn say_fields_are_merged(record: &mut crate::result::TargetRecord, fields: u32) {
    let read = record.requests.get("get").cloned().unwrap_or_default();
    let write = record.requests.get("update").cloned().unwrap_or_default();
    let merged = format!(
        "{read}, then {write} of the whole record with one of its {fields} fields replaced (a read-merge-write; nothing is written when the record is absent)"
    );
    record.requests.insert("update".into(), merged);
    let rmw = format!(
        "{read}, then {write} of the whole record with one of its {fields} fields replaced"
    );
    record.requests.insert("read-modify-write".into(), rmw);
}
