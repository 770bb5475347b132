//! The durability check (`--durability`): the measure job logs every
//! write; after the run (and any fault) the writes are read back, and each
//! acknowledged one is found, lost or changed.

use crate::durability::WriteLog;
use crate::result::RunResult;

use super::super::check;
use super::super::job::{JobOutcome, Observer};
use super::{Extra, Stage};
use crate::error::RunError;

/// The writes of the measure job, and when its fault (or the run) ended,
/// ns since the job's start.
#[derive(Default)]
pub(super) struct Durability {
    writes: Option<(WriteLog, u64)>,
    /// The server's eviction count before the measure job, where it keeps
    /// one.
    evictions_before: Option<u64>,
}

impl Extra for Durability {
    fn before_measure(
        &mut self,
        stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        self.evictions_before = stage.target.evictions();
        Ok(())
    }

    fn measured(
        &mut self,
        _stage: &Stage,
        outcome: &mut JobOutcome,
        load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        // The fault's extra, before this one, put the fault on the run's
        // timeline, which counts the load's seconds.
        let end_ns = run
            .fault
            .as_ref()
            .map(|f| ((f.at_s - load_s) * 1e9) as u64)
            .unwrap_or(((outcome.warmup_s + outcome.last_phase_s) * 1e9) as u64);
        self.writes = outcome.durability.take().map(|d| (d.writes, end_ns));
        Ok(())
    }

    /// Last of the checks: it needs the server up.
    fn check(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        observer: &mut dyn Observer,
    ) -> Result<(), String> {
        let Some((log, end_ns)) = &self.writes else {
            return Ok(());
        };
        let mut checked = check::read_back(stage.target, stage.inputs, log, *end_ns, observer)
            .map_err(|e| {
                format!(
                    "the durability check could not read the writes back: {e}; what was measured before is in the file"
                )
            })?;
        // A restart (a fault) resets the server's count: then only what it
        // counted since can be told.
        checked.evicted = match (self.evictions_before, stage.target.evictions()) {
            (Some(before), Some(after)) if after >= before => Some(after - before),
            (Some(_), Some(after)) => Some(after),
            _ => None,
        };
        run.durability = Some(checked);
        Ok(())
    }

    fn note(&self, run: &RunResult) -> Option<String> {
        let c = run.durability.as_ref()?;
        Some(format!(
            "durability check: {} of {} acknowledged ({} recovered, {} unexpected, {} unread)",
            c.verdict(),
            c.acknowledged,
            c.recovered,
            c.unexpected,
            c.unread
        ))
    }
}
