//! Features beyond the plain run (open → load → measure → check): each is
//! an [`Extra`] that hooks the stages it needs and writes its own part of
//! the run's result. The stages themselves (crates/core/src/runner/one.rs)
//! know none of them.
//!
//! An extra is listed for a run by [`for_run`] when the run asks for it
//! (a fault, a durability check, a replica, a link, a synchronised start,
//! client-encoded values, a target of several nodes), in the order its
//! hooks must run.

mod background;
mod bottleneck;
mod disk;
mod durability;
mod encoding;
mod fault;
mod link;
mod nodes;
mod provoke;
mod replication;
mod server_time;
mod survived;
mod sync_start;

use hdrhistogram::Histogram;

use crate::driver::JobKind;
use crate::error::RunError;
use crate::plan::{Plan, TargetSpec, Workload};
use crate::result::{Phase, RunResult};

use super::job::{DuringJob, JobOutcome, Observer};
use crate::driver::JobInputs;
use crate::target::{Counters, Target};
use crate::value::ValuePool;

/// What every stage of one run sees.
pub(super) struct Stage<'a> {
    /// The target of the run.
    pub spec: &'a TargetSpec,
    /// The experiment's plan.
    pub plan: &'a Plan,
    /// The run's index in the experiment.
    pub index: u32,
    /// Which repetition of its point the run is.
    pub repeat: u32,
    /// The opened target.
    pub target: &'a dyn Target,
    /// What the measure job is handed (its workload, stop flag, values).
    pub inputs: JobInputs<'a>,
}

impl Stage<'_> {
    /// This process's part of the run's workload.
    pub fn workload(&self) -> &Workload {
        self.inputs.workload
    }
}

/// What a run's features make before its jobs, held while the jobs
/// borrow it: each feature makes its own part here, so that the stages
/// name none of them.
pub(super) struct Prepared {
    /// The trace a replay sends.
    trace: Option<std::sync::Arc<crate::replay::Trace>>,
    /// A replication run's acknowledged versions.
    acked: Option<crate::stale::AckedVersions>,
    /// The insert counter, when inserts are in the mix.
    inserts: Option<crate::inserts::InsertKeys>,
    /// The values of a client-encoded form, in place of the plain pool.
    encoded: Option<ValuePool>,
}

impl Prepared {
    /// What the run of `workload` needs made; an error (a trace that
    /// cannot be read) ends the run before it opens its target.
    pub fn of(workload: &Workload) -> Result<Self, String> {
        let trace = workload
            .replay
            .as_deref()
            .map(crate::replay::load)
            .transpose()?;
        Ok(Prepared {
            trace,
            acked: replication::acked_versions(workload),
            inserts: workload
                .mix
                .has(crate::workload::OpKind::Insert)
                .then(|| crate::inserts::InsertKeys::new(workload.first_insert())),
            encoded: encoding::encoded_pool(workload),
        })
    }

    /// What the run records of them before it opens its target.
    pub fn record(&self, run: &mut RunResult) {
        run.replay = self.trace.as_ref().map(|t| t.summary());
    }

    /// The measure job's inputs: `plain` with what was made here.
    pub fn inputs<'a>(&'a self, plain: JobInputs<'a>) -> JobInputs<'a> {
        JobInputs {
            pool: self.encoded.as_ref().unwrap_or(plain.pool),
            acked: self.acked.as_ref(),
            inserts: self.inserts.as_ref(),
            replay: self.trace.as_deref(),
            ..plain
        }
    }
}

/// A feature beyond the plain run. Every hook has a default that does
/// nothing, so an extra says only what it adds.
pub(super) trait Extra {
    /// A job of the run finished (the load, then the measure).
    fn job_done(&mut self, _stage: &Stage, _kind: JobKind, _outcome: &JobOutcome) {}

    /// After the load and the count of records it left.
    fn loaded(&mut self, _stage: &Stage, _run: &mut RunResult) {}

    /// Just before the measure job, in the order the extras are listed;
    /// an error refuses the run (and ends the experiment).
    fn before_measure(
        &mut self,
        _stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        Ok(())
    }

    /// The measure job's warm-up ended (called from the thread that
    /// collects the job, while the workers go on), when it has one.
    fn warmed_up(&mut self, _stage: &Stage) {}

    /// When the extra next wants [`Extra::at`] called while the measure
    /// job runs, seconds since the job's start.
    fn due_s(&self) -> Option<f64> {
        None
    }

    /// A moment the extra asked for came (from the thread that collects
    /// the measure job): `t_s` seconds since the job's start.
    fn at(&mut self, _stage: &Stage, _t_s: f64) {}

    /// A second of the measure job, merged over its workers: its index
    /// since the job's start, its phase and its operations' latency.
    fn second(&mut self, _second: u32, _phase: Phase, _latency: &Histogram<u64>) {}

    /// The measure job's outcome, before its timeline joins the run's
    /// (`load_s`: the seconds of the load before it on that timeline).
    /// An error ends the run as failed, with that message.
    fn measured(
        &mut self,
        _stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        _run: &mut RunResult,
    ) -> Result<(), String> {
        Ok(())
    }

    /// The server's counters before the run's jobs and after them, when
    /// the target keeps counters.
    fn counters(
        &mut self,
        _stage: &Stage,
        _before: &Counters,
        _after: &Counters,
        _run: &mut RunResult,
    ) {
    }

    /// Whether the extra made the server count from zero during the run
    /// (a restart): its counters then cannot be set against what was sent.
    fn reset_counters(&self) -> bool {
        false
    }

    /// A check after the measure job; an error ends the run as failed,
    /// with that message (what was measured stays in the file).
    fn check(
        &mut self,
        _stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), String> {
        Ok(())
    }

    /// Why the run's `errors` failed operations are what it measured
    /// rather than a failure of it: the run's message then.
    fn explains_errors(&self, _run: &RunResult, _errors: u64) -> Option<String> {
        None
    }

    /// A last line for the run's message.
    fn note(&self, _run: &RunResult) -> Option<String> {
        None
    }
}

/// The extras a run of `workload` needs, in the order their hooks run:
/// counts first, then what must happen just before the measure job (the
/// server's disk counters, slow on a server of many processes, before a
/// synchronised start, and the link's counters after it), then the checks
/// (the fault's, the server still up, and last the read-back that needs
/// it up).
pub(super) fn for_run(stage: &Stage) -> Vec<Box<dyn Extra>> {
    let workload = stage.workload();
    let mut extras: Vec<Box<dyn Extra>> = Vec::new();
    extras.push(Box::new(nodes::Nodes::default()));
    if stage.inputs.acked.is_some() {
        extras.push(Box::new(replication::Replication::default()));
    }
    extras.push(Box::new(disk::Disk::default()));
    if workload.server_signals {
        if let Some(time) = server_time::ServerTime::of(stage.target) {
            extras.push(Box::new(time));
        }
        if let Some(work) = background::Background::of(stage.target) {
            extras.push(Box::new(work));
        }
    }
    if let Some(asked) = workload.provoke {
        extras.push(Box::new(provoke::Provoke::new(asked)));
    }
    extras.push(Box::new(bottleneck::Bottleneck));
    if stage.plan.start.is_some() {
        extras.push(Box::new(sync_start::SyncStart));
    }
    extras.push(Box::new(link::Link::default()));
    extras.push(Box::new(encoding::Encoding));
    if let Some(fault) = fault::Fault::of(stage) {
        extras.push(Box::new(fault));
    }
    extras.push(Box::new(survived::Survived));
    if workload.durability {
        extras.push(Box::new(durability::Durability::default()));
    }
    extras
}

/// The extras of a run, as what it does while its measure job goes on.
pub(super) struct During<'a, 's> {
    /// The run's stage.
    pub stage: &'a Stage<'s>,
    /// Its extras.
    pub extras: &'a mut [Box<dyn Extra>],
}

impl DuringJob for During<'_, '_> {
    fn warmed_up(&mut self) {
        for e in self.extras.iter_mut() {
            e.warmed_up(self.stage);
        }
    }

    fn due_s(&self) -> Option<f64> {
        self.extras
            .iter()
            .filter_map(|e| e.due_s())
            .reduce(f64::min)
    }

    fn at(&mut self, t_s: f64) {
        for e in self.extras.iter_mut() {
            if e.due_s().is_some_and(|at| at <= t_s) {
                e.at(self.stage, t_s);
            }
        }
    }

    fn second(&mut self, second: u32, phase: Phase, latency: &Histogram<u64>) {
        for e in self.extras.iter_mut() {
            e.second(second, phase, latency);
        }
    }
}
