//! A fault during the measured phase (`--fault kill|restart|power-cut`):
//! when it struck, when the server was back and when throughput recovered;
//! the errors around it are what the run measured.

use std::time::{Duration, Instant};

use crate::error::TargetError;
use crate::plan::FaultKind;
use crate::result::{FaultRecord, RunResult};

use super::super::job::{JobOutcome, Observer};
use super::{Extra, Stage};

/// Strikes the run's fault at its moment of the measure job, from the
/// thread that collects the job while the workers go on (and meet the
/// fault as errors), and records it.
pub(super) struct Fault {
    kind: FaultKind,
    /// When, seconds since the measure job's start.
    at_s: f64,
    /// When it struck (seconds since the job's start) and how long the
    /// server took to hold its port again, once struck.
    struck: Option<(f64, Result<Duration, TargetError>)>,
}

impl Fault {
    /// The fault of the run's workload, if it has one, at its moment for
    /// this run and repetition.
    pub(super) fn of(stage: &Stage) -> Option<Self> {
        let f = stage.workload().fault?;
        Some(Fault {
            kind: f.kind,
            at_s: f.moment_s(stage.plan.seed, stage.index, stage.repeat),
            struck: None,
        })
    }
}

impl Extra for Fault {
    fn due_s(&self) -> Option<f64> {
        self.struck.is_none().then_some(self.at_s)
    }

    fn at(&mut self, stage: &Stage, t_s: f64) {
        let called = Instant::now();
        // The moment is when it struck (finding a process tree to kill
        // takes a while), else when it was called.
        self.struck = Some(match stage.target.fault(self.kind) {
            Ok(s) => (
                t_s + s.at.saturating_duration_since(called).as_secs_f64(),
                Ok(s.back_after),
            ),
            Err(e) => (t_s, Err(e)),
        });
    }

    fn reset_counters(&self) -> bool {
        self.struck.is_some()
    }

    fn measured(
        &mut self,
        _stage: &Stage,
        outcome: &mut JobOutcome,
        load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        if let Some((at_s, struck)) = self.struck.as_ref() {
            let back = struck.as_ref().ok().map(|d| d.as_secs_f64());
            run.fault = Some(FaultRecord {
                kind: self.kind,
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
