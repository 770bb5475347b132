//! [`EngineKind`], the shorter form of [`TargetKind`] an in-process engine
//! implements: the rest (probing, opening in process or in a child, being
//! served by `engine-host`) follows from being in-process, and is written
//! here once, beside the engines.

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, TargetSpec, Workload};

use super::{Engine, OpenHow, Opened};
use crate::kind::{OpenResult, TargetFacts, TargetKind};

/// What an in-process engine is: a [`TargetKind`] follows from it (probed
/// and opened the engines' way, servable from a child process for faults).
pub trait EngineKind: Sync {
    /// The engine it opens.
    type Engine: Engine;
    /// What it is, as data ([`TargetFacts::engine`]).
    fn facts(&self) -> &'static TargetFacts;
    /// Validates `[servers.NAME]`.
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError>;
    /// Whether its library loads here.
    fn load(&self) -> Result<(), TargetError>;
    /// Opens the engine on its directory as the run asks.
    fn opened(
        &self,
        settings: Option<&toml::Table>,
        how: &OpenHow,
    ) -> Result<Opened<Self::Engine>, TargetError>;
}

impl<K: EngineKind> TargetKind for K {
    fn facts(&self) -> &'static TargetFacts {
        EngineKind::facts(self)
    }
    fn available(&self) -> Result<(), TargetError> {
        self.load()
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        EngineKind::check(self, settings)
    }
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        super::host::probe(spec, plan)
    }
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        super::open_with(spec, plan, workload, |t, how| self.opened(t, how))
    }
    fn serve_hosted(&self, settings: &toml::Table, port: u16) -> Result<(), TargetError> {
        let opened = self.opened(Some(settings), &OpenHow::hosted())?;
        super::host::serve(self.name(), opened, port)
    }
}
