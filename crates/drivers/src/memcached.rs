//! The `memcached` (text protocol) and `memcached-binary` targets.
//!
//! Managed: `memcached` from PATH (Debian package memcached) on a free
//! loopback port with the memory and threads of `[servers.memcached]`.
//! External: `memcached://host:port` or `memcached-binary://host:port`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bakeoff_core::driver::{Codec, Connector, Driver};
use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Endpoint, FaultKind, Plan, TargetSpec, Topology, Workload};
use bakeoff_core::result::TargetRecord;
use bakeoff_core::target::{
    BackgroundLook, BackgroundWork, CounterRule, Counters, Observed, ServerTime, Target,
};
use bakeoff_core::workload::OpKind;
use bakeoff_servers::{ManagedServer, ServerCommand};

use crate::kind::OpenResult;
use crate::nodes::{MultiNode, Node};
use crate::running::RunningServer;

use crate::admin::{memcache_lines_within, resolve};
use crate::codec::memcache_binary::MemcacheBinaryCodec;
use crate::codec::memcache_text::MemcacheTextCodec;
use crate::settings::{Kind, Setting, Settings, PORT};
use bakeoff_core::net::CodecDriver;

/// `[servers.memcached]` and `[servers.memcached-binary]`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "memory",
        kind: Kind::Bytes,
        default: Some("1gb"),
        help: "memory for items (-m), at least 2mb (memcached's 1 MiB item limit must be at most half of it)",
    },
    Setting {
        name: "threads",
        kind: Kind::Count,
        default: Some("4"),
        help: "worker threads (-t)",
    },
    Setting {
        name: "max_connections",
        kind: Kind::Count,
        default: Some("4096"),
        help: "connection limit (-c), at least 8 and more than the run's clients (memcached keeps a few for itself)",
    },
    PORT,
];

/// Fewest connections a managed memcached may be given.
const MIN_CONNECTIONS: u64 = 8;

/// Connections of memcached's own besides the clients': its listening
/// sockets and bakeoff's stats connection.
const OWN_CONNECTIONS: u64 = 4;

/// Settings of a managed memcached.
#[derive(Clone, Debug)]
pub struct MemcachedSettings {
    /// Item memory, MiB (`-m`).
    pub memory_mb: u64,
    /// Worker threads (`-t`).
    pub threads: u64,
    /// Connection limit (`-c`).
    pub max_connections: u64,
    /// Fixed port.
    pub port: Option<u16>,
}

impl MemcachedSettings {
    /// Reads `[servers.memcached]` (or `[servers.memcached-binary]`).
    pub fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        let memory = s.bytes("memory")?.unwrap_or_default();
        // memcached refuses to start when its item size limit (1 MiB) is
        // more than half its memory.
        if memory < 2 << 20 {
            return Err(TargetError::Settings(
                "`memory` must be at least 2mb: memcached does not start when its 1 MiB item limit is more than half its memory".into(),
            ));
        }
        let max_connections = s.count("max_connections")?.unwrap_or_default();
        if max_connections < MIN_CONNECTIONS {
            return Err(TargetError::Settings(format!(
                "`max_connections` must be at least {MIN_CONNECTIONS}: memcached keeps some for its listening sockets, and bakeoff reads its stats on one"
            )));
        }
        Ok(MemcachedSettings {
            memory_mb: memory >> 20,
            threads: s.count("threads")?.unwrap_or_default(),
            max_connections,
            port: s.port("port")?,
        })
    }

    fn args(&self, port: u16) -> Vec<String> {
        let mut a = vec![
            "-p".to_string(),
            port.to_string(),
            "-l".into(),
            "127.0.0.1".into(),
            "-U".into(),
            "0".into(),
            "-m".into(),
            self.memory_mb.to_string(),
            "-t".into(),
            self.threads.to_string(),
            "-c".into(),
            self.max_connections.to_string(),
        ];
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // memcached refuses to run as root without being told which user.
            a.push("-u".into());
            a.push("root".into());
        }
        a
    }
}

/// Plain TCP connections (memcached has no handshake here).
pub struct MemcachedConnector {
    addr: SocketAddr,
}

impl Connector for MemcachedConnector {
    fn connect(
        &self,
        within: std::time::Duration,
    ) -> std::io::Result<bakeoff_core::driver::Connected> {
        let s = crate::admin::connect_within(self.addr, "memcached", within)?;
        s.set_read_timeout(None)?;
        s.set_write_timeout(None)?;
        Ok(s.into())
    }
}

/// The protocol a memcached target speaks.
enum Proto {
    Text(CodecDriver<MemcacheTextCodec>),
    Binary(CodecDriver<MemcacheBinaryCodec>),
}

/// A memcached target ready for one run.
pub struct MemcachedTarget {
    // Field order is drop order: the relay closes before the server stops.
    relay: Option<crate::link::Relay>,
    server: Option<RunningServer>,
    addr: SocketAddr,
    /// Where load connections go: the server, or the link relay.
    load_addr: SocketAddr,
    proto: Proto,
    record: TargetRecord,
}

/// Reads `stats` as name → value.
fn stats(addr: SocketAddr) -> Result<BTreeMap<String, String>, TargetError> {
    stats_within(addr, Duration::from_secs(5))
}

/// `stats`, the server given `within` to connect and answer.
fn stats_within(
    addr: SocketAddr,
    within: Duration,
) -> Result<BTreeMap<String, String>, TargetError> {
    let mut s: bakeoff_core::driver::Stream =
        crate::admin::connect_within(addr, "memcached", within)
            .map_err(TargetError::cause)?
            .into();
    s.set_read_timeout(Some(within))
        .map_err(TargetError::cause)?;
    let lines = memcache_lines_within(&mut s, "stats\r\n", &["END"], within).map_err(|e| {
        TargetError::Server(format!(
            "{addr} did not answer `stats` ({e}); is it a memcached server?"
        ))
    })?;
    let map: BTreeMap<String, String> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("STAT "))
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if map.is_empty() {
        return Err(TargetError::Server(format!(
            "{addr} answered `stats` with {lines:?}; is it a memcached server?"
        )));
    }
    Ok(map)
}

/// Starts one memcached (node `node` of shards), or connects to the URL.
fn open_one(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
    node: u32,
) -> Result<MemcachedTarget, TargetError> {
    let settings = MemcachedSettings::parse(plan.settings_of(spec))?;
    let (server, addr, mode, endpoint) = match &spec.endpoint {
        Endpoint::Managed => {
            let cmd = ServerCommand {
                program: "memcached",
                name: "memcached",
                package: "memcached",
                // A fixed port is the first node's; the others take free ones.
                port: settings.port.filter(|_| node == 0),
                args: &|port, _| settings.args(port),
                ready: &|addr| stats(addr).is_ok(),
                ready_timeout: Duration::from_secs(20),
                extra_dirs: &[],
                run_as: None,
                init: None,
                // Nothing on disk: a power cut is a crash.
                lazy_disk: false,
                stop_signal: libc::SIGTERM,
            };
            let mut server = ManagedServer::start(&cmd).map_err(TargetError::cause)?;
            server.limit(bakeoff_servers::Limits::of(workload))?;
            let addr = server.addr;
            (Some(server), addr, "managed", None)
        }
        Endpoint::External {
            host, port, url, ..
        } => (None, resolve(host, *port)?, "external", Some(url.clone())),
    };
    let dial = crate::link::dial(workload, addr)?;
    let connector = || Box::new(MemcachedConnector { addr: dial.addr });
    let proto = if spec.name == "memcached-binary" {
        Proto::Binary(CodecDriver::new(MemcacheBinaryCodec, connector()))
    } else {
        Proto::Text(CodecDriver::new(MemcacheTextCodec, connector()))
    };
    let st = stats(addr)?;
    let mut record = TargetRecord {
        name: spec.name.clone(),
        mode: mode.into(),
        endpoint,
        ..TargetRecord::default()
    };
    record.version = st.get("version").map(|v| format!("memcached {v}"));
    let mut s = BTreeMap::new();
    for (k, name) in [
        ("limit_maxbytes", "limit_maxbytes"),
        ("threads", "threads"),
        ("max_connections", "max_connections"),
    ] {
        if let Some(v) = st.get(k) {
            s.insert(name.to_string(), v.clone());
        }
    }
    s.insert(
        "protocol".into(),
        if spec.name == "memcached-binary" {
            "binary"
        } else {
            "text"
        }
        .into(),
    );
    if let Some(server) = &server {
        s.insert(
            "command_line".into(),
            format!("{} {}", server.binary.display(), server.args.join(" ")),
        );
    }
    record.settings = s;
    let mut target = MemcachedTarget {
        relay: dial.relay,
        server: server.map(RunningServer::new),
        addr,
        load_addr: dial.addr,
        proto,
        record,
    };
    let codec_describe = |k: OpKind| match &target.proto {
        Proto::Text(d) => d.codec.describe(k),
        Proto::Binary(d) => d.codec.describe(k),
    };
    let requests = OpKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), codec_describe(*k)))
        .collect();
    target.record.requests = requests;
    Ok(target)
}

impl Target for MemcachedTarget {
    fn server_time(&self) -> Observed<'_, dyn ServerTime + '_> {
        Err(Some(
            "memcached's stats have no time per command (only the server's CPU time)",
        ))
    }

    fn background_work(&self) -> Observed<'_, dyn BackgroundWork + '_> {
        Ok(self)
    }

    fn driver(&self) -> &dyn Driver {
        match &self.proto {
            Proto::Text(d) => d,
            Proto::Binary(d) => d,
        }
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    fn counters(&self) -> Option<Counters> {
        let st = stats(self.addr).ok()?;
        Some(
            st.into_iter()
                .filter_map(|(k, v)| v.parse::<u64>().ok().map(|n| (k, n)))
                .collect(),
        )
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        &[
            CounterRule {
                what: "get commands (stats cmd_get)",
                counters: &["cmd_get"],
                kinds: &[OpKind::Get],
            },
            CounterRule {
                what: "set commands (stats cmd_set)",
                counters: &["cmd_set"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
            CounterRule {
                what: "delete commands (stats delete_hits + delete_misses)",
                counters: &["delete_hits", "delete_misses"],
                kinds: &[OpKind::Delete],
            },
        ]
    }

    fn record_count(&self) -> Option<u64> {
        stats(self.addr).ok()?.get("curr_items")?.parse().ok()
    }

    fn evictions(&self) -> Option<u64> {
        stats(self.addr).ok()?.get("evictions")?.parse().ok()
    }

    crate::running::one_server_methods!();
}

impl BackgroundWork for MemcachedTarget {
    fn source(&self) -> (&'static str, Duration) {
        (
            "stats: hash table expansion, slab page moves and the LRU crawler, every 1 s",
            Duration::from_secs(1),
        )
    }

    fn look(&self) -> Option<BackgroundLook> {
        // The thread that collects the run waits for the look.
        let st = stats_within(self.addr, Duration::from_millis(500)).ok()?;
        let n = |k: &str| st.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let mut look = BackgroundLook::default();
        if n("hash_is_expanding") == 1 {
            look.running.push((
                "hash expansion",
                format!(
                    "the hash table grows to 2^{} buckets",
                    n("hash_power_level") + 1
                ),
            ));
        }
        if n("slab_reassign_running") == 1 {
            look.running
                .push(("slab move", "a slab page moving to another class".into()));
        }
        if n("lru_crawler_running") == 1 {
            look.running
                .push(("LRU crawl", "the crawler reclaims expired items".into()));
        }
        look.finished.push((
            "slab move",
            n("slabs_moved"),
            "a slab page moved to another class".into(),
        ));
        Some(look)
    }
}

/// What `memcached` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "memcached",
    summary: "memcached, text protocol (get/set/delete)",
    package: "memcached",
    reach: crate::kind::Reach::Server {
        program: "memcached",
        scheme: "memcached",
        url_options: &[],
        credentials: false,
        topologies: &["shards"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV,
        pipelining: true,
        batch_load: false,
        requests: &[],
        no_scan: "memcached keeps its keys hashed, in no order to scan",
    },
    in_default_comparison: true,
    settings: SETTINGS,
    durability: crate::settings::Durability::MEMORY_ONLY,
    provokes: &[],
};

/// What `memcached-binary` is: the same server, spoken to in its binary
/// protocol.
pub const BINARY_FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "memcached-binary",
    summary: "memcached, binary protocol (GET/SET/DELETE)",
    package: "memcached",
    reach: crate::kind::Reach::Server {
        program: "memcached",
        scheme: "memcached-binary",
        url_options: &[],
        credentials: false,
        topologies: &["shards"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV,
        pipelining: true,
        batch_load: false,
        requests: &[],
        no_scan: "memcached keeps its keys hashed, in no order to scan",
    },
    in_default_comparison: false,
    settings: SETTINGS,
    durability: crate::settings::Durability::MEMORY_ONLY,
    provokes: &[],
};

/// `memcached`, in its text protocol.
pub const TEXT: Memcached = Memcached(&FACTS);
/// `memcached-binary`, in its binary protocol.
pub const BINARY: Memcached = Memcached(&BINARY_FACTS);

/// memcached, as the registry knows it: one kind a protocol.
pub struct Memcached(&'static crate::kind::TargetFacts);

impl crate::kind::TargetKind for Memcached {
    fn facts(&self) -> &'static crate::kind::TargetFacts {
        self.0
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        MemcachedSettings::parse(settings).map(|_| ())
    }

    /// Checks that the target can be used.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        match &spec.endpoint {
            Endpoint::Managed => {
                let settings = MemcachedSettings::parse(plan.settings_of(spec))?;
                // Nothing on disk to lose: a power cut would be a kill under
                // another name.
                if let Some(f) = plan
                    .points_for(spec)
                    .iter()
                    .find_map(|p| p.workload.fault.filter(|f| f.kind == FaultKind::PowerCut))
                {
                    return Err(TargetError::Settings(format!(
                        "--fault {f}: memcached keeps nothing on disk, so a power cut is the same as a crash; use --fault kill@… (the same moment)"
                    )));
                }
                if let Some(clients) = plan
                    .points_for(spec)
                    .iter()
                    .map(|p| u64::from(p.workload.clients))
                    .find(|&c| c + OWN_CONNECTIONS > settings.max_connections)
                {
                    return Err(TargetError::Settings(format!(
                        "servers.{}.max_connections={}: the run's {clients} clients and the {OWN_CONNECTIONS} connections memcached keeps for itself do not fit; give at least {}",
                        spec.name,
                        settings.max_connections,
                        clients + OWN_CONNECTIONS
                    )));
                }
                if bakeoff_servers::find_on_path("memcached").is_none() {
                    return Err(TargetError::Server("`memcached` is not on PATH; install it with `apt-get install memcached` (Debian package memcached)".into()));
                }
                crate::settings::fixed_port_free(&spec.name, settings.port)
            }
            Endpoint::External { host, port, .. } => {
                let addr = resolve(host, *port)?;
                stats(addr).map(|_| ())
            }
        }
    }

    /// Opens the target: starts memcached (one, or a node per shard), or
    /// connects to the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        // Shards: N managed nodes, or the hosts of one URL.
        let specs = match (workload.topology, crate::nodes::external_nodes(spec)) {
            (_, Some(specs)) => specs,
            (Topology::Shards(n), None) => vec![spec.clone(); n as usize],
            _ => return Ok(Box::new(open_one(spec, plan, workload, 0)?)),
        };
        let n = specs.len() as u32;
        let node = |i: u32| {
            let node = open_one(&specs[i as usize], plan, workload, i)?;
            Ok(Node {
                addr: node.addr,
                connector: Box::new(MemcachedConnector {
                    addr: node.load_addr,
                }),
                target: Box::new(node),
            })
        };
        Ok(if spec.name == "memcached-binary" {
            Box::new(MultiNode::shards(n, MemcacheBinaryCodec, node)?)
        } else {
            Box::new(MultiNode::shards(n, MemcacheTextCodec, node)?)
        })
    }
}
