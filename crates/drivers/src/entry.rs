//! What a target is, as its own module declares it (its `ENTRY`): name,
//! how bakeoff reaches it, what it can do, its settings and how it is
//! opened. The registry lists these rows; nothing else describes a target.

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, RequestMode, TargetSpec, Workload};
use bakeoff_core::target::Target;
use bakeoff_core::workload::OpKind;

/// A target's own readiness check (port free, endpoint answering).
pub type ProbeFn = fn(&TargetSpec, &Plan) -> Result<(), TargetError>;

/// Opens a target for one run.
pub type OpenFn = fn(&TargetSpec, &Plan, &Workload) -> Result<Box<dyn Target>, TargetError>;

/// One row of the registry: what a target is, declared in its own module
/// (its `ENTRY`) beside its settings and code.
pub struct Entry {
    /// Target name.
    pub name: &'static str,
    /// One-line description for `bakeoff list`.
    pub about: &'static str,
    /// Debian package of the server or library.
    pub package: &'static str,
    /// How bakeoff reaches it.
    pub reach: Reach,
    /// What it can do.
    pub abilities: Abilities,
    /// Part of the default comparison.
    pub default: bool,
    /// Its settings (`[servers.NAME]`, `--set NAME.KEY=VALUE`), declared once.
    pub settings: &'static [crate::settings::Setting],
    /// What those settings promise acknowledged writes survive, declared
    /// beside them.
    pub durability: crate::settings::Durability,
    /// Whether this machine has what the target needs (server binary on
    /// PATH, or the engine's library); the error says what to install.
    pub available: fn() -> Result<(), TargetError>,
    /// Validates `[servers.NAME]` (types, and checks across settings).
    pub check: fn(Option<&toml::Table>) -> Result<(), TargetError>,
    /// Opens it for one run (starting its server when bakeoff manages it).
    pub open: OpenFn,
}

/// How bakeoff reaches a target.
pub enum Reach {
    /// A server over the network: started by bakeoff (`program`), or given
    /// by URL.
    Server {
        /// The server's program, looked up on PATH.
        program: &'static str,
        /// URL scheme of external endpoints.
        scheme: &'static str,
        /// Query-string keys its URL takes besides the credentials
        /// (`password`, `user`), e.g. PostgreSQL's `dbname`; any other key
        /// is refused rather than ignored.
        url_options: &'static [&'static str],
        /// Topologies besides `single` it can have (see
        /// `bakeoff_core::plan::Topology::kind`).
        topologies: &'static [&'static str],
        /// Checks beyond settings and availability: a fixed port free, or
        /// an external endpoint that answers.
        probe: ProbeFn,
    },
    /// An engine bakeoff opens in-process, on a directory it creates.
    InProcess,
}

/// What a target can do.
pub struct Abilities {
    /// Operation kinds.
    pub ops: &'static [OpKind],
    /// Pipelining on one connection.
    pub pipelining: bool,
    /// Whether the load can insert many records per request (`--batch`).
    pub batch_load: bool,
    /// Request modes besides `op` (`--request`).
    pub requests: &'static [RequestMode],
}

impl Abilities {
    /// An engine called in-process: `ops`, one call at a time, no batched
    /// load, one request mode.
    pub const fn in_process(ops: &'static [OpKind]) -> Self {
        Abilities {
            ops,
            pipelining: false,
            batch_load: false,
            requests: &[],
        }
    }
}

impl Entry {
    /// Its URL scheme, for a server.
    pub fn scheme(&self) -> Option<&'static str> {
        match self.reach {
            Reach::Server { scheme, .. } => Some(scheme),
            Reach::InProcess => None,
        }
    }

    /// Whether it is an engine opened in-process.
    pub fn in_process(&self) -> bool {
        matches!(self.reach, Reach::InProcess)
    }
}

/// A server target is available where its program is on PATH.
pub(crate) fn server_available(program: &str, package: &str) -> Result<(), TargetError> {
    match bakeoff_servers::find_on_path(program) {
        Some(_) => Ok(()),
        None => Err(TargetError::NotInstalled {
            what: format!("`{program}` is not on PATH"),
            package: package.into(),
        }),
    }
}

/// Key-value operations.
pub(crate) const KV: &[OpKind] = &[OpKind::Get, OpKind::Set, OpKind::Update, OpKind::Delete];
/// Key-value operations plus searches on the profile table.
pub(crate) const KV_SEARCH: &[OpKind] = &[
    OpKind::Get,
    OpKind::Set,
    OpKind::Update,
    OpKind::Delete,
    OpKind::Search,
];
