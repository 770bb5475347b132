//! A synchronised start (`--start-at`, shards): the target's clock agrees
//! with this machine's, and the measure job waits for the agreed time.

use crate::error::RunError;
use crate::result::RunResult;

use super::super::job::Observer;

use super::super::start;
use super::{Extra, Stage};

/// Holds the measure job until the plan's start time.
pub(super) struct SyncStart;

impl Extra for SyncStart {
    fn before_measure(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let Some(at) = stage.plan.start.as_ref().map(|s| s.of_run(stage.index)) else {
            return Ok(());
        };
        let refused = |source| RunError::Start {
            target: stage.spec.id(),
            source,
        };
        let offset = start::clock_offset(stage.target)
            .map_err(|e| refused(crate::error::StartError::Unreadable(e.to_string())))?;
        run.clock_offset_ns = offset;
        start::check_offset(&at, offset).map_err(refused)?;
        let wait = at
            .time()
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        if wait > std::time::Duration::from_secs(1) {
            observer.note(&format!(
                "run {} ({}): waiting {} for the synchronised start at {}; Ctrl-C ends the run",
                stage.index,
                stage.spec.id(),
                crate::units::fmt_ns(wait.as_nanos() as f64),
                at.at
            ));
        }
        start::wait_for(&at, stage.inputs.stop, &std::time::SystemTime::now).map_err(refused)
    }
}
