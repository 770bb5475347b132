//! A link relay in front of the target (`--link`): its CPU over the
//! measure job, apart from the client's.

use std::time::Instant;

use crate::error::RunError;
use crate::result::{LinkUsage, RunResult};

use super::super::job::JobOutcome;
use super::super::job::Observer;
use super::{Extra, Stage};
use crate::readings::LinkSample;

/// The relay's counters as the measure job began.
#[derive(Default)]
pub(super) struct Link {
    before: Option<(LinkSample, Instant)>,
}

impl Extra for Link {
    fn before_measure(
        &mut self,
        stage: &Stage,
        _run: &mut RunResult,
        _observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        // After any wait for the start: a few counters read from memory.
        self.before = stage.target.link().map(|l| (l, Instant::now()));
        Ok(())
    }

    fn measured(
        &mut self,
        stage: &Stage,
        _outcome: &mut JobOutcome,
        _load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        run.client.link = self.before.as_ref().and_then(|(before, at)| {
            LinkUsage::between(before, &stage.target.link()?, at.elapsed())
        });
        Ok(())
    }
}
