//! The durability check (`--durability`): the measure job logs every
//! write; after the run (and any fault) the writes are read back, and each
//! acknowledged one is found, lost or changed.

use crate::durability::WriteLog;
use crate::result::RunResult;

use super::super::check;
use super::super::job::{JobOutcome, Observer};
use super::{Extra, Stage};

/// The writes of the measure job, and when its fault (or the run) ended,
/// ns since the job's start.
#[derive(Default)]
pub(super) struct Durability {
    writes: Option<(WriteLog, u64)>,
}

impl Extra for Durability {
    fn measured(
        &mut self,
        stage: &Stage,
        outcome: &mut JobOutcome,
        _load_s: f64,
        _run: &mut RunResult,
    ) -> Result<(), String> {
        let w = stage.workload();
        let end_ns = outcome
            .fault
            .as_ref()
            .map(|(at_s, _)| (at_s * 1e9) as u64)
            .unwrap_or((w.warmup_s * 1e9) as u64 + (outcome.last_phase_s * 1e9) as u64);
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
        run.durability = Some(
            check::read_back(stage.target, stage.ctx, log, *end_ns, observer).map_err(|e| {
                format!(
                    "the durability check could not read the writes back: {e}; what was measured before is in the file"
                )
            })?,
        );
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
