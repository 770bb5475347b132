//! The skeleton every SQL server target shares: a server bakeoff starts or
//! one at a URL, its tables made, its version and settings read, a driver
//! whose sessions reach it through a link relay when the workload has one,
//! and, for `--topology primary-replica`, the pair as one target. A SQL
//! target implements [`SqlServer`] with what differs (how to start it, make
//! its tables, name its driver) and calls [`open_single`] or
//! [`open_pair`].

use std::collections::BTreeMap;

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Endpoint, Plan, ReadFrom, TargetSpec, Topology, Workload};
use bakeoff_servers::ManagedServer;

use crate::async_target::{AsyncDriver, AsyncTarget, Reach};
use crate::kind::{OpenResult, TargetFacts, TargetKind};
use crate::nodes::{Layout, MultiNode};

/// A server's version and the settings in force that the result records.
pub(crate) type ServerFacts = (String, BTreeMap<String, String>);

/// What one SQL server target does its own way.
pub(crate) trait SqlServer: Sync + 'static {
    /// Where its sessions connect.
    type Dsn: Clone;
    /// The driver its sessions run under.
    type Driver: AsyncDriver + 'static;
    /// The product, for the result's version line ("PostgreSQL").
    const PRODUCT: &'static str;
    /// What it is.
    const FACTS: &'static TargetFacts;

    /// Whether this machine has its programs; the error says what to install.
    fn available() -> Result<(), TargetError>;
    /// Checks `[servers.NAME]`; the fixed port it asks for, if any.
    fn fixed_port(settings: Option<&toml::Table>) -> Result<Option<u16>, TargetError>;
    /// Whether the server at `dsn` answers and takes its credentials.
    fn answers(dsn: &Self::Dsn) -> Result<(), TargetError>;
    /// A primary and its replica, started and following, as one target.
    fn open_replicated(spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult;

    /// The connection of an external endpoint; `None` for a managed one.
    fn dsn_of(spec: &TargetSpec) -> Option<Self::Dsn>;
    /// Host and port of `dsn`.
    fn host_port(dsn: &Self::Dsn) -> (&str, u16);
    /// `dsn` at another host and port (a link relay's).
    fn moved(dsn: &Self::Dsn, host: String, port: u16) -> Self::Dsn;
    /// Starts the server of one node, within the workload's memory cap.
    fn start(
        spec: &TargetSpec,
        plan: &Plan,
        workload: &Workload,
    ) -> Result<(ManagedServer, Self::Dsn), TargetError>;
    /// Makes the tables the workload needs.
    fn prepare(dsn: &Self::Dsn, workload: &Workload) -> Result<(), TargetError>;
    /// The server's version and the settings in force that the result
    /// records.
    fn facts(dsn: &Self::Dsn) -> Result<ServerFacts, TargetError>;
    /// The driver whose sessions go where `reach` says.
    fn driver(reach: Reach<Self::Dsn>, workload: &Workload) -> Result<Self::Driver, TargetError>;
}

/// A SQL server as the registry knows it: the target of `S`, whose
/// checks, probe and opening are the same for every SQL server.
pub struct SqlKind<S>(std::marker::PhantomData<S>);

impl<S> SqlKind<S> {
    /// The kind of `S`.
    pub const KIND: Self = Self(std::marker::PhantomData);
}

impl<S: SqlServer> TargetKind for SqlKind<S> {
    fn facts(&self) -> &'static TargetFacts {
        S::FACTS
    }
    fn available(&self) -> Result<(), TargetError> {
        S::available()
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        S::fixed_port(settings).map(|_| ())
    }

    /// Checks a fixed port is free, or an external endpoint answers and
    /// takes its credentials.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        let port = S::fixed_port(plan.settings_of(spec))?;
        match S::dsn_of(spec) {
            None => crate::settings::fixed_port_free(S::FACTS.name, port),
            Some(dsn) => S::answers(&dsn),
        }
    }

    /// Opens the target: starts the server (one, or a primary and its
    /// replica), or connects to the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        if workload.topology == Topology::PrimaryReplica {
            return S::open_replicated(spec, plan, workload);
        }
        open_single::<S>(spec, plan, workload)
    }
}

/// One server: started by bakeoff, or at the spec's URL.
pub(crate) fn open_single<S: SqlServer>(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
) -> OpenResult {
    let (server, dsn, endpoint) = match S::dsn_of(spec) {
        Some(dsn) => {
            let url = match &spec.endpoint {
                Endpoint::External { url, .. } => Some(url.clone()),
                Endpoint::Managed => None,
            };
            (None, dsn, url)
        }
        None => {
            let (server, dsn) = S::start(spec, plan, workload)?;
            (Some(server), dsn, None)
        }
    };
    S::prepare(&dsn, workload)?;
    let facts = S::facts(&dsn)?;
    let node = Node {
        server,
        dsn,
        facts,
        endpoint,
    };
    let (target, _) = node_target::<S>(spec, workload, node, Reach::One)?;
    Ok(Box::new(target))
}

/// One node of a target: its server (if bakeoff started it), where it is,
/// what it is.
pub(crate) struct Node<S: SqlServer> {
    /// The server bakeoff started.
    pub server: Option<ManagedServer>,
    /// Where its sessions connect.
    pub dsn: S::Dsn,
    /// Its version and settings.
    pub facts: ServerFacts,
    /// The URL it was given by, for an external one.
    pub endpoint: Option<String>,
}

/// The target of one node, with a driver whose sessions reach it (through
/// a link relay, if the workload has one) as `reach` makes of its address.
/// Returns that address too.
fn node_target<S: SqlServer>(
    spec: &TargetSpec,
    workload: &Workload,
    node: Node<S>,
    reach: impl FnOnce(S::Dsn) -> Reach<S::Dsn>,
) -> Result<(AsyncTarget<S::Driver>, S::Dsn), TargetError> {
    let (host, port) = S::host_port(&node.dsn);
    // With a link, every connection of the driver goes through its relay.
    let (host, port, relay) = crate::link::dial_host(workload, host, port)?;
    let linked = S::moved(&node.dsn, host, port);
    let (version, recorded) = node.facts;
    let target = AsyncTarget::new(
        spec,
        node.endpoint,
        format!("{} {version}", S::PRODUCT),
        recorded,
        node.server,
        S::driver(reach(linked.clone()), workload)?,
    )
    .linked(relay);
    Ok((target, linked))
}

/// How the replica of a pair is counted and watched.
pub(crate) struct Replication {
    /// Counters only clients move (see [`Layout::PrimaryReplica`]).
    pub read_counters: &'static [&'static str],
    /// How far the replica is behind, in bytes of the replication stream.
    pub lag: Box<dyn Fn() -> Option<u64> + Send + Sync>,
}

/// A primary and its replica bakeoff started, both following and the
/// tables made, as one target; each node's facts read from it.
pub(crate) fn open_started_pair<S: SqlServer>(
    spec: &TargetSpec,
    workload: &Workload,
    primary: (ManagedServer, S::Dsn),
    replica: (ManagedServer, S::Dsn),
    replication: Replication,
) -> OpenResult {
    let node = |(server, dsn): (ManagedServer, S::Dsn)| -> Result<Node<S>, TargetError> {
        Ok(Node {
            server: Some(server),
            facts: S::facts(&dsn)?,
            dsn,
            endpoint: None,
        })
    };
    open_pair(spec, workload, node(primary)?, node(replica)?, replication)
}

/// A primary and its replica, both started and following, as one target:
/// writes go to the primary, reads where `--read-from` says.
fn open_pair<S: SqlServer>(
    spec: &TargetSpec,
    workload: &Workload,
    primary: Node<S>,
    replica: Node<S>,
    replication: Replication,
) -> OpenResult {
    let names = [name_of(&primary), name_of(&replica)];
    let reads = match workload.read_from {
        ReadFrom::Primary => 0,
        ReadFrom::Replica => 1,
    };
    let (replica_target, r_linked) = node_target(spec, workload, replica, Reach::One)?;
    let (primary_target, p_linked) = node_target(spec, workload, primary, Reach::One)?;
    let driver = S::driver(
        Reach::Pair {
            primary: p_linked,
            reads: (reads == 1).then_some(r_linked),
        },
        workload,
    )?;
    let layout = Layout::PrimaryReplica {
        reads,
        read_counters: replication.read_counters,
        lag: replication.lag,
    };
    Ok(Box::new(MultiNode::replicated_with(
        Box::new(primary_target),
        Box::new(replica_target),
        names,
        driver,
        layout,
    )))
}

/// A node's name in the result: its server's address, or host:port.
fn name_of<S: SqlServer>(node: &Node<S>) -> String {
    match &node.server {
        Some(server) => server.addr.to_string(),
        None => {
            let (host, port) = S::host_port(&node.dsn);
            format!("{host}:{port}")
        }
    }
}
