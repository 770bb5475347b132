//! Disk per write: the server's disk counters over the measure job, set
//! against the writes it acknowledged.

use crate::result::{DiskPerWrite, PhaseResult, RunResult};

use super::super::job::Observer;
use super::{Extra, Stage};
use crate::readings::ProcSnapshot;

/// The server's counters as the measure job began.
#[derive(Default)]
pub(super) struct Disk {
    before: Option<ProcSnapshot>,
}

impl Extra for Disk {
    fn before_measure(
        &mut self,
        stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), crate::error::RunError> {
        self.before = stage.target.resources();
        Ok(())
    }

    fn check(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), String> {
        if let (Some(b), Some(a)) = (self.before.as_ref(), stage.target.resources()) {
            let phases: Vec<&PhaseResult> = run.warmup.iter().chain([&run.measure]).collect();
            run.disk = DiskPerWrite::between(b, &a, &phases, run.fault.is_some());
        }
        Ok(())
    }
}
