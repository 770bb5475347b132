//! What a target is: the [`TargetKind`] each target module implements —
//! its name, how bakeoff reaches it, what it can do, its settings and
//! durability, and how it is checked, probed and opened. An in-process
//! engine implements the shorter [`crate::embedded::EngineKind`] beside
//! the engines, and the rest follows from being in-process. The registry
//! lists the implementations; nothing else describes a target.

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, RequestMode, TargetSpec, Work, Workload};
use bakeoff_core::target::Target;
use bakeoff_core::workload::OpKind;

use crate::settings::{Durability, Setting};

/// What a target is, as data: declared once, in its own module.
pub struct TargetFacts {
    /// Its name (`--target NAME`).
    pub name: &'static str,
    /// One line for `bakeoff list`.
    pub summary: &'static str,
    /// The Debian package of its server or library.
    pub package: &'static str,
    /// How bakeoff reaches it.
    pub reach: Reach,
    /// What it can do.
    pub abilities: Abilities,
    /// Whether it is part of the default comparison.
    pub in_default_comparison: bool,
    /// Its settings (`[servers.NAME]`, `--set NAME.KEY=VALUE`), declared once.
    pub settings: &'static [Setting],
    /// What those settings promise acknowledged writes survive, declared
    /// beside them.
    pub durability: Durability,
    /// Background work it can be asked to start (`--provoke`).
    pub provokes: &'static [Work],
}

impl TargetFacts {
    /// An engine bakeoff opens in-process, part of the default comparison.
    pub const fn engine(
        name: &'static str,
        summary: &'static str,
        package: &'static str,
        ops: &'static [OpKind],
        settings: &'static [Setting],
        durability: Durability,
    ) -> Self {
        TargetFacts {
            name,
            summary,
            package,
            reach: Reach::InProcess,
            abilities: Abilities::in_process(ops),
            in_default_comparison: true,
            settings,
            durability,
            provokes: &[],
        }
    }
}

/// A target opened for one run, or why it could not be.
pub type OpenResult = Result<Box<dyn Target>, TargetError>;

/// What a target is and does, implemented once in its own module.
pub trait TargetKind: Sync {
    /// What it is, as data.
    fn facts(&self) -> &'static TargetFacts;
    /// Its name.
    fn name(&self) -> &'static str {
        self.facts().name
    }
    /// Whether this machine has what it needs; the error says what to
    /// install. A server's program on PATH, unless it says otherwise.
    fn available(&self) -> Result<(), TargetError> {
        let facts = self.facts();
        match facts.reach {
            Reach::Server { program, .. } => server_available(program, facts.package),
            Reach::InProcess => Ok(()),
        }
    }
    /// Validates `[servers.NAME]` (types, and checks across settings).
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError>;
    /// Its own checks before a run: a fixed port free, an external
    /// endpoint that answers, a directory it can write.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError>;
    /// Opens it for one run (starting its server when bakeoff manages it).
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult;
    /// Serves it over RESP on 127.0.0.1:`port` from a child process of its
    /// own (`bakeoff engine-host`, for runs with a fault) until SIGTERM;
    /// only an in-process engine can.
    fn serve_hosted(&self, _settings: &toml::Table, _port: u16) -> Result<(), TargetError> {
        Err(TargetError::Settings(format!(
            "engine-host: `{}` is a server, not an embedded engine",
            self.name()
        )))
    }
}

/// How bakeoff reaches a target.
#[derive(Clone, Copy, Debug)]
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
        /// Whether it takes a password or a user at all (memcached's text
        /// protocol has none): a URL that gives one to a server that takes
        /// none is refused rather than ignored.
        credentials: bool,
        /// Topologies besides `single` it can have (see
        /// `bakeoff_core::plan::Topology::kind`).
        topologies: &'static [&'static str],
    },
    /// An engine bakeoff opens in-process, on a directory it creates.
    InProcess,
}

/// What a target can do.
#[derive(Clone, Copy, Debug)]
pub struct Abilities {
    /// Operation kinds.
    pub ops: &'static [OpKind],
    /// Pipelining on one connection.
    pub pipelining: bool,
    /// Whether the load can insert many records per request (`--batch`).
    pub batch_load: bool,
    /// Request modes besides `op` (`--request`).
    pub requests: &'static [RequestMode],
    /// Why it cannot scan, said when a mix asks it to (unused when `ops`
    /// has scans).
    pub no_scan: &'static str,
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
            no_scan: "it keeps its records hashed, in no key order to scan",
        }
    }
}

impl Reach {
    /// Its URL scheme, for a server.
    pub fn scheme(&self) -> Option<&'static str> {
        match self {
            Reach::Server { scheme, .. } => Some(scheme),
            Reach::InProcess => None,
        }
    }

    /// The program bakeoff starts, for a server.
    pub fn program(&self) -> Option<&'static str> {
        match self {
            Reach::Server { program, .. } => Some(program),
            Reach::InProcess => None,
        }
    }
}

/// A server target is available where its program is on PATH.
fn server_available(program: &str, package: &str) -> Result<(), TargetError> {
    match bakeoff_servers::find_on_path(program) {
        Some(_) => Ok(()),
        None => Err(TargetError::NotInstalled {
            what: format!("`{program}` is not on PATH"),
            package: package.into(),
        }),
    }
}

/// Key-value operations (YCSB's insert and read-modify-write among them).
pub(crate) const KV: &[OpKind] = &[
    OpKind::Get,
    OpKind::Set,
    OpKind::Update,
    OpKind::Delete,
    OpKind::Insert,
    OpKind::ReadModifyWrite,
];
/// Key-value operations plus searches on the profile table.
pub(crate) const KV_SEARCH: &[OpKind] = &[
    OpKind::Get,
    OpKind::Set,
    OpKind::Update,
    OpKind::Delete,
    OpKind::Insert,
    OpKind::ReadModifyWrite,
    OpKind::Search,
];
/// Key-value operations plus scans in key order.
pub(crate) const KV_SCAN: &[OpKind] = &[
    OpKind::Get,
    OpKind::Set,
    OpKind::Update,
    OpKind::Delete,
    OpKind::Insert,
    OpKind::ReadModifyWrite,
    OpKind::Scan,
];
/// Key-value operations, searches and scans.
pub(crate) const KV_SEARCH_SCAN: &[OpKind] = &[
    OpKind::Get,
    OpKind::Set,
    OpKind::Update,
    OpKind::Delete,
    OpKind::Insert,
    OpKind::ReadModifyWrite,
    OpKind::Search,
    OpKind::Scan,
];
