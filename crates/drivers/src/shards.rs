//! A sharded target (`--topology shards:N`): N independent servers of one
//! kind, each opened as a single-node target of its own, and one codec
//! driver that spreads keys over them with ketama consistent hashing, as
//! libmemcached and PHP's memcache clients do.
//!
//! The nodes keep what a single target does (their record, counters,
//! resources, record counts); this module adds them up, and checks each
//! node's counters against the requests the client sent it.

use bakeoff_core::driver::{Codec, Connector, Driver};
use bakeoff_core::error::TargetError;
use bakeoff_core::ketama::{self, Ketama};
use bakeoff_core::net::CodecDriver;
use bakeoff_core::result::{CounterCheck, TargetRecord};
use bakeoff_core::runner::{Counters, LinkSample, ProcSnapshot, Target};
use bakeoff_core::workload::OP_KINDS;

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

/// N nodes as one target.
pub struct Sharded<C: Codec> {
    // Field order is drop order: the driver goes before the nodes stop.
    driver: CodecDriver<C>,
    names: Vec<String>,
    nodes: Vec<Box<dyn Target>>,
    record: TargetRecord,
}

/// Separates a node's counters from the sums in [`Sharded::counters`].
const NODE_MARK: char = '@';

impl<C: Codec> Sharded<C> {
    /// Opens `n` nodes with `open_node` (the index of each is given) and
    /// spreads keys over them; the record is the first node's, with the
    /// topology and the nodes added.
    pub fn open(
        n: u32,
        codec: C,
        open_node: impl Fn(u32) -> Result<Node, TargetError>,
    ) -> Result<Self, TargetError> {
        let mut nodes = Vec::new();
        let mut connectors = Vec::new();
        let mut names = Vec::new();
        let mut ring_names = Vec::new();
        for i in 0..n {
            let node = open_node(i)?;
            names.push(node.addr.to_string());
            ring_names.push((node.addr.ip().to_string(), node.addr.port()));
            connectors.push(node.connector);
            nodes.push(node.target);
        }
        let mut record = nodes[0].record();
        record
            .settings
            .insert("topology".into(), format!("shards:{n}"));
        record
            .settings
            .insert("sharding".into(), ketama::DESCRIPTION.into());
        record.settings.insert("nodes".into(), names.join(" "));
        if let Some(c) = record.settings.get_mut("command_line") {
            *c = format!("{c} (and so on for each node, on its own port and directory)");
        }
        Ok(Sharded {
            driver: CodecDriver::sharded(codec, connectors, Ketama::new(&ring_names)),
            names,
            nodes,
            record,
        })
    }
}

/// The counters of node `i` out of `all` (those [`Sharded::counters`]
/// marked with it).
fn node_counters(all: &Counters, i: usize) -> Counters {
    let mark = format!("{i}{NODE_MARK}");
    all.iter()
        .filter_map(|(k, v)| k.strip_prefix(&mark).map(|k| (k.to_string(), *v)))
        .collect()
}

impl<C: Codec> Target for Sharded<C> {
    fn driver(&self) -> &dyn Driver {
        &self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    /// Every node's counters, summed under their own names, and each also
    /// as `i@name` for the check per node.
    fn counters(&self) -> Option<Counters> {
        let mut out = Counters::new();
        for (i, node) in self.nodes.iter().enumerate() {
            for (k, v) in node.counters()? {
                *out.entry(k.clone()).or_default() += v;
                out.insert(format!("{i}{NODE_MARK}{k}"), v);
            }
        }
        Some(out)
    }

    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &[u64; OP_KINDS],
    ) -> Vec<CounterCheck> {
        // The nodes are of one kind: the first one's rules on the sums.
        self.nodes[0].counter_checks(before, after, sent)
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
            out.extend(node.counter_checks(&b, &a, sent).into_iter().map(|mut c| {
                c.what = format!("node {i} ({}): {}", self.names[i], c.what);
                c
            }));
        }
        out
    }

    fn nodes(&self) -> Vec<String> {
        self.names.clone()
    }

    fn record_count(&self) -> Option<u64> {
        self.nodes.iter().map(|n| n.record_count()).sum()
    }

    /// The nodes' processes added up.
    fn resources(&self) -> Option<ProcSnapshot> {
        let mut sum = ProcSnapshot::default();
        for n in &self.nodes {
            let s = n.resources()?;
            sum.cpu_ns += s.cpu_ns;
            sum.rss_bytes += s.rss_bytes;
            sum.read_bytes += s.read_bytes;
            sum.write_bytes += s.write_bytes;
            sum.write_calls += s.write_calls;
            sum.disk_bytes += s.disk_bytes;
        }
        Some(sum)
    }

    fn gone(&self) -> Option<String> {
        self.nodes
            .iter()
            .zip(&self.names)
            .find_map(|(n, name)| n.gone().map(|why| format!("node {name}: {why}")))
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
