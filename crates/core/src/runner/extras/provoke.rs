//! Background work asked of the server at a moment of the measured run
//! (`--provoke checkpoint@5s`): asked from the thread that collects the
//! measure job, and marked on the run's background work, where the bands
//! the server then reports follow it.

use crate::plan::Provoke as Asked;
use crate::result::{BackgroundBand, BackgroundWork, RunResult};

use super::super::job::JobOutcome;
use super::{Extra, Stage};

/// Asks for the work once, when due.
pub(super) struct Provoke {
    asked: Asked,
    /// When it was asked (seconds since the job's start) and the server's
    /// refusal, once it was.
    done: Option<(f64, Option<String>)>,
}

impl Provoke {
    /// The extra for `asked`.
    pub fn new(asked: Asked) -> Self {
        Provoke { asked, done: None }
    }
}

impl Extra for Provoke {
    fn due_s(&self) -> Option<f64> {
        self.done.is_none().then_some(self.asked.at_s)
    }

    fn at(&mut self, stage: &Stage, t_s: f64) {
        let refused = stage.target.provoke(self.asked.work).err();
        self.done = Some((t_s, refused.map(|e| e.to_string())));
    }

    fn measured(
        &mut self,
        _stage: &Stage,
        _outcome: &mut JobOutcome,
        load_s: f64,
        run: &mut RunResult,
    ) -> Result<(), String> {
        let name = self.asked.work.name();
        let (at_s, detail) = match &self.done {
            Some((at_s, None)) => (*at_s, format!("bakeoff asked for {name} (--provoke)")),
            Some((at_s, Some(e))) => (
                *at_s,
                format!("bakeoff asked for {name} (--provoke); the server refused: {e}"),
            ),
            None => return Ok(()),
        };
        let work = run.background.get_or_insert_with(|| BackgroundWork {
            source: "none: the server tells nothing of its background work".into(),
            ..BackgroundWork::default()
        });
        let band = BackgroundBand {
            what: format!("asked: {name}"),
            from_s: at_s + load_s,
            to_s: at_s + load_s,
            detail,
            exact: true,
        };
        let at = work.bands.partition_point(|b| b.from_s <= band.from_s);
        work.bands.insert(at, band);
        Ok(())
    }

    fn note(&self, _run: &RunResult) -> Option<String> {
        let (at_s, Some(e)) = self.done.as_ref()? else {
            return None;
        };
        Some(format!(
            "--provoke {}: the server refused at {at_s:.1} s: {e}",
            self.asked.work.name()
        ))
    }
}
