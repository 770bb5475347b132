//! A fault during the measured phase (`--fault kill|restart|power-cut`):
//! when it struck, when the server was back and when throughput recovered;
//! the errors around it are what the run measured.

use crate::result::{FaultRecord, RunResult};

use super::super::job::{JobOutcome, Observer};
use super::{Extra, Stage};

/// Records the fault the measure job injected (the job schedules it:
/// `JobContext::fault`).
pub(super) struct Fault;

impl Extra for Fault {
    fn measured(
        &mut self,
        stage: &Stage,
        outcome: &mut JobOutcome,
        load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        if let (Some(f), Some((at_s, struck))) = (stage.workload().fault, outcome.fault.as_ref()) {
            let back = struck.as_ref().ok().map(|d| d.as_secs_f64());
            run.fault = Some(FaultRecord {
                kind: f.kind,
                // On the run's timeline, which counts the load's seconds.
                at_s: at_s + load_s,
                back_after_s: back,
                recovered_after_s: back
                    .and_then(|_| FaultRecord::recovery(&outcome.timeline, *at_s)),
                error: struck.as_ref().err().map(|e| e.to_string()),
            });
        }
        Ok(())
    }

    fn check(
        &mut self,
        _stage: &Stage,
        run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), String> {
        match &run.fault {
            Some(FaultRecord {
                error: Some(e),
                kind,
                at_s,
                ..
            }) => Err(format!(
                "after --fault {} (t = {at_s:.1} s on the timeline) the server did not come back: {e}; what was measured before is in the file",
                kind.name(),
            )),
            _ => Ok(()),
        }
    }

    fn explains_errors(&self, run: &RunResult, errors: u64) -> Option<String> {
        let f = run.fault.as_ref()?;
        Some(format!(
            "--fault {} (t = {:.1} s on the timeline): {errors} operations or connection attempts failed around it; see errors by kind and the timeline",
            f.kind.name(),
            f.at_s
        ))
    }
}
