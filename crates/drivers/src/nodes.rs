//! A target of several servers of one kind, each opened as a single-node
//! target of its own, and one codec driver that sends each request to one
//! of them:
//!
//! - shards (`--topology shards:N`): keys spread by ketama consistent
//!   hashing, as libmemcached and PHP's memcache clients do;
//! - a primary and a replica (`--topology primary-replica`): writes to the
//!   primary, reads to the node `--read-from` names;
//! - a Redis Cluster (`--topology cluster:N`): keys by hash slot, as the
//!   cluster redirects them.
//!
//! The nodes keep what a single target does (their record, counters,
//! resources, record counts); this module adds them up, and checks each
//! node's counters against the requests the client sent it.

use bakeoff_core::driver::{Codec, Connector, Driver};
use bakeoff_core::error::TargetError;
use bakeoff_core::ketama::{self, Ketama};
use bakeoff_core::net::{CodecDriver, Route};
use bakeoff_core::plan::{Endpoint, TargetSpec};
use bakeoff_core::readings::{LinkSample, NodeProc, ProcSnapshot};
use bakeoff_core::result::{CounterCheck, TargetRecord};
use bakeoff_core::slots::{self, SlotMap};
use bakeoff_core::target::{Counters, Nodes, Sent, Target};
use bakeoff_core::workload::{OpKind, OP_KINDS};

/// One node, opened: the target, where it listens (its name on the
/// ring) and how the load reaches it (through a link relay, if any).
pub struct Node {
    /// The single-node target.
    pub target: Box<dyn Target>,
    /// The server's address, which names it on the ring.
    pub addr: std::net::SocketAddr,
    /// How load connections to it are opened.
    pub connector: Box<dyn Connector>,
}

/// How the nodes share the work.
pub enum Layout {
    /// Keys spread over equal nodes.
    Shards,
    /// Node 0 is the primary, node 1 a replica of it; reads go to node
    /// `reads`. `read_counters` are the server counters that only clients
    /// move, on whichever node serves them (summed over the nodes); every
    /// other counter is the primary's, since a replica also counts the
    /// primary's writes it applies. `lag` reads how far the replica is
    /// behind, in bytes of the replication stream.
    PrimaryReplica {
        /// The node reads go to.
        reads: usize,
        /// Counters only clients move (reads, prepared statements).
        read_counters: &'static [&'static str],
        /// The replica's lag.
        lag: Box<dyn Fn() -> Option<u64> + Send + Sync>,
    },
    /// A Redis Cluster: the first `masters` nodes share the slots, the
    /// rest replicate them (their counters also count the writes they
    /// apply, so the sums are the masters').
    Cluster {
        /// Nodes that are masters, first.
        masters: usize,
    },
}

impl Layout {
    /// The node reads go to (0 for shards, where the ring decides).
    pub fn reads(&self) -> usize {
        match self {
            Layout::PrimaryReplica { reads, .. } => *reads,
            Layout::Shards | Layout::Cluster { .. } => 0,
        }
    }
}

/// N nodes as one target, with one driver over all of them: a codec's
/// routed over the nodes' connections, or a driver of sessions that holds
/// a connection per node itself (see [`bakeoff_core::session::ReadWrite`]).
pub struct MultiNode<D: Driver> {
    // Field order is drop order: the driver goes before the nodes stop.
    driver: D,
    names: Vec<String>,
    nodes: Vec<Box<dyn Target>>,
    layout: Layout,
    record: TargetRecord,
}

/// The specs of each node of an external target whose URL names several
/// hosts (`memcached://h1:p1,h2:p2`), or `None` for one host.
pub fn external_nodes(spec: &TargetSpec) -> Option<Vec<TargetSpec>> {
    let Endpoint::External {
        host, port, more, ..
    } = &spec.endpoint
    else {
        return None;
    };
    if more.is_empty() {
        return None;
    }
    let hosts = std::iter::once((host.clone(), *port)).chain(more.iter().cloned());
    Some(
        hosts
            .map(|(h, p)| {
                let mut one = spec.clone();
                if let Endpoint::External {
                    host, port, more, ..
                } = &mut one.endpoint
                {
                    (*host, *port) = (h, p);
                    more.clear();
                }
                one
            })
            .collect(),
    )
}

/// Separates a node's counters from the sums in [`MultiNode::counters`].
const NODE_MARK: char = '@';

impl<C: Codec> MultiNode<CodecDriver<C>> {
    /// Opens `n` nodes with `open_node` (the index of each is given) and
    /// spreads keys over them; the record is the first node's, with the
    /// topology and the nodes added.
    pub fn shards(
        n: u32,
        codec: C,
        open_node: impl Fn(u32) -> Result<Node, TargetError>,
    ) -> Result<Self, TargetError> {
        let nodes = (0..n).map(open_node).collect::<Result<Vec<_>, _>>()?;
        let ring_names: Vec<(String, u16)> = nodes
            .iter()
            .map(|n| (n.addr.ip().to_string(), n.addr.port()))
            .collect();
        let route = Route::Ring(Ketama::new(&ring_names));
        let mut t = Self::of(nodes, codec, route, Layout::Shards);
        t.record
            .settings
            .insert("topology".into(), format!("shards:{n}"));
        t.record
            .settings
            .insert("sharding".into(), ketama::DESCRIPTION.into());
        Ok(t)
    }

    /// A Redis Cluster of `nodes`, the first `masters` of them masters with
    /// [`SlotMap::even`]'s slots and the rest their replicas: each key to
    /// its slot's master, redirections followed.
    pub fn cluster(nodes: Vec<Node>, masters: usize, codec: C) -> Self {
        let replicas = nodes.len() - masters;
        let map = SlotMap::even(nodes.iter().map(|n| n.addr.to_string()).collect(), masters);
        let mut t = Self::of(nodes, codec, Route::Slots(map), Layout::Cluster { masters });
        t.record
            .settings
            .insert("topology".into(), format!("cluster:{masters}"));
        if replicas > 0 {
            t.record.settings.insert(
                "cluster_replicas".into(),
                format!(
                    "{replicas} (the last {replicas} nodes; they take no load, only the masters' writes)"
                ),
            );
        }
        t.record
            .settings
            .insert("sharding".into(), slots::DESCRIPTION.into());
        t
    }

    /// A primary and its replica as one target: writes to the primary,
    /// reads as `layout` says.
    pub fn replicated(primary: Node, replica: Node, codec: C, layout: Layout) -> Self {
        let names = [primary.addr.to_string(), replica.addr.to_string()];
        let route = Route::ReadWrite {
            reads: layout.reads(),
        };
        let driver = CodecDriver::routed(codec, vec![primary.connector, replica.connector], route);
        MultiNode::replicated_with(primary.target, replica.target, names, driver, layout)
    }

    fn of(nodes: Vec<Node>, codec: C, route: Route, layout: Layout) -> Self {
        let mut names = Vec::new();
        let mut connectors = Vec::new();
        let mut targets = Vec::new();
        for node in nodes {
            names.push(node.addr.to_string());
            connectors.push(node.connector);
            targets.push(node.target);
        }
        let driver = CodecDriver::routed(codec, connectors, route);
        MultiNode::over(targets, names, driver, layout)
    }
}

impl<D: Driver> MultiNode<D> {
    /// `count` summed over the nodes that hold the data once: every shard,
    /// a cluster's masters, a pair's primary.
    fn over_data_nodes(&self, count: impl Fn(&dyn Target) -> Option<u64>) -> Option<u64> {
        let holders = match self.layout {
            Layout::Shards => &self.nodes[..],
            Layout::Cluster { masters } => &self.nodes[..masters],
            Layout::PrimaryReplica { .. } => &self.nodes[..1],
        };
        holders.iter().map(|n| count(n.as_ref())).sum()
    }

    /// A primary and its replica as one target, `driver` opening the
    /// connections to both itself: writes to the primary, reads as
    /// `layout` says. `names` are the servers' addresses.
    pub fn replicated_with(
        primary: Box<dyn Target>,
        replica: Box<dyn Target>,
        names: [String; 2],
        driver: D,
        layout: Layout,
    ) -> Self {
        let reads = layout.reads();
        let mut t = Self::over(vec![primary, replica], names.into(), driver, layout);
        t.record
            .settings
            .insert("topology".into(), "primary-replica".into());
        t.record.settings.insert(
            "read_from".into(),
            if reads == 0 { "primary" } else { "replica" }.into(),
        );
        t
    }

    fn over(targets: Vec<Box<dyn Target>>, names: Vec<String>, driver: D, layout: Layout) -> Self {
        let mut record = targets[0].record();
        record.settings.insert("nodes".into(), names.join(" "));
        if let Some(c) = record.settings.get_mut("command_line") {
            *c = format!("{c} (and so on for each node, on its own port and directory)");
        }
        // What is sent is this driver's (a codec of its own, e.g. WAIT).
        record.requests = OpKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), driver.describe(*k)))
            .collect();
        MultiNode {
            driver,
            names,
            nodes: targets,
            layout,
            record,
        }
    }
}

/// The counters of node `i` out of `all` (those [`MultiNode::counters`]
/// marked with it).
fn node_counters(all: &Counters, i: usize) -> Counters {
    let mark = format!("{i}{NODE_MARK}");
    all.iter()
        .filter_map(|(k, v)| k.strip_prefix(&mark).map(|k| (k.to_string(), *v)))
        .collect()
}

impl<D: Driver> Target for MultiNode<D> {
    fn several(&self) -> Option<&dyn Nodes> {
        Some(self)
    }

    fn driver(&self) -> &dyn Driver {
        &self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    /// Every node's counters, each as `i@name` for the check per node,
    /// and the target's under their own names: shards' summed; a
    /// replication pair's reads from the node that served them and the
    /// rest from the primary.
    fn counters(&self) -> Option<Counters> {
        let mut out = Counters::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for (k, v) in node.counters()? {
                let counts = match &self.layout {
                    Layout::Shards => true,
                    Layout::Cluster { masters } => i < *masters,
                    Layout::PrimaryReplica { read_counters, .. } => {
                        read_counters.contains(&k.as_str()) || i == 0
                    }
                };
                if counts {
                    *out.entry(k.clone()).or_default() += v;
                }
                out.insert(format!("{i}{NODE_MARK}{k}"), v);
            }
        }
        Some(out)
    }

    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &Sent,
    ) -> Vec<CounterCheck> {
        // The nodes are of one kind: the first one's rules on the sums.
        self.nodes[0].counter_checks(before, after, sent)
    }

    /// Shards: the sum; a cluster: the masters' sum; a primary and a
    /// replica: the primary's.
    fn record_count(&self) -> Option<u64> {
        self.over_data_nodes(|n| n.record_count())
    }

    fn evictions(&self) -> Option<u64> {
        self.over_data_nodes(|n| n.evictions())
    }

    fn flush_disk(&self, stop: &std::sync::atomic::AtomicBool) {
        for n in &self.nodes {
            n.flush_disk(stop);
        }
    }

    /// The nodes' processes added up, and each node's apart.
    fn resources(&self) -> Option<ProcSnapshot> {
        let mut sum: Option<ProcSnapshot> = None;
        let (mut nodes, mut connections) = (Vec::new(), None);
        for n in &self.nodes {
            let s = n.resources()?;
            nodes.push(NodeProc {
                cpu_ns: s.cpu_ns,
                rss_bytes: s.rss_bytes,
                pss_bytes: s.pss_bytes,
                read_bytes: s.read_bytes,
                write_bytes: s.write_bytes,
            });
            if let Some(c) = s.connections {
                *connections.get_or_insert(0) += c;
            }
            match sum.as_mut() {
                Some(total) => total.add(&s),
                None => sum = Some(s),
            }
        }
        let mut sum = sum?;
        sum.nodes = nodes;
        sum.connections = connections;
        if let Layout::PrimaryReplica { lag, .. } = &self.layout {
            sum.replication_lag_bytes = lag();
        }
        Some(sum)
    }

    fn gone(&self) -> Option<String> {
        self.nodes
            .iter()
            .zip(&self.names)
            .find_map(|(n, name)| n.gone().map(|why| format!("node {name}: {why}")))
    }

    fn stalled(&self) -> Option<String> {
        self.nodes
            .iter()
            .zip(&self.names)
            .find_map(|(n, name)| n.stalled().map(|why| format!("node {name}: {why}")))
    }

    /// The relays of every node added up.
    fn link(&self) -> Option<LinkSample> {
        let samples: Vec<LinkSample> = self.nodes.iter().filter_map(|n| n.link()).collect();
        let first = samples.first()?;
        let chunks: u64 = samples.iter().map(|s| s.chunks).sum();
        Some(LinkSample {
            cpu_ns: samples.iter().map(|s| s.cpu_ns).sum(),
            chunks,
            mean_late_ns: if chunks > 0 {
                samples
                    .iter()
                    .map(|s| s.mean_late_ns * s.chunks as f64)
                    .sum::<f64>()
                    / chunks as f64
            } else {
                first.mean_late_ns
            },
            overhead_ns: samples.iter().map(|s| s.overhead_ns).max().unwrap_or(0),
        })
    }
}

impl<D: Driver> Nodes for MultiNode<D> {
    fn nodes(&self) -> Vec<String> {
        self.names.clone()
    }

    fn node_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &[[u64; OP_KINDS]],
    ) -> Vec<CounterCheck> {
        let mut out = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let Some(sent) = sent.get(i) else { continue };
            let (b, a) = (node_counters(before, i), node_counters(after, i));
            // Per node only the requests are counted: the targets with
            // nodes have no rule on misses or follow-ups.
            let sent = Sent::of_node(sent);
            let checks = node.counter_checks(&b, &a, &sent).into_iter();
            // A replica also executes the primary's writes: its check is
            // of the requests sent to it.
            let replica = match self.layout {
                Layout::PrimaryReplica { .. } => i > 0,
                Layout::Cluster { masters } => i >= masters,
                Layout::Shards => false,
            };
            out.extend(checks.filter(|c| !replica || c.bakeoff > 0).map(|mut c| {
                c.what = format!(
                    "{} {i} ({}): {}",
                    if replica {
                        "replica"
                    } else if i == 0 && matches!(self.layout, Layout::PrimaryReplica { .. }) {
                        "primary"
                    } else {
                        "node"
                    },
                    self.names[i],
                    c.what
                );
                c
            }));
        }
        out
    }

    fn replica_records(&self) -> Option<u64> {
        match self.layout {
            Layout::Shards | Layout::Cluster { .. } => None,
            Layout::PrimaryReplica { .. } => self.nodes[1].record_count(),
        }
    }
}
