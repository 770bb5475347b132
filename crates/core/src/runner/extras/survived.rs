//! The server bakeoff started is still up after the run: one that died on
//! its own (not by the run's fault, which it survived) fails the run,
//! saying how, since a crash of the engine on its recovered files is a
//! finding, not a connection error.

use crate::result::RunResult;

use super::super::job::Observer;
use super::{Extra, Stage};

/// Fails a run whose server stopped during it.
pub(super) struct Survived;

impl Extra for Survived {
    fn check(
        &mut self,
        stage: &Stage,
        run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), String> {
        let Some(why) = stage.target.gone() else {
            return Ok(());
        };
        Err(format!(
            "{} stopped during the run{}: {why}; what was measured before is in the file",
            stage.spec.label(),
            match &run.fault {
                Some(f) => format!(
                    " (after --fault {} at t = {:.1} s it had come back)",
                    f.kind.name(),
                    f.at_s
                ),
                _ => String::new(),
            }
        ))
    }
}
