//! The `redis` target: RESP over TCP, `SET k v` as a plain string.
//!
//! Managed: `redis-server` from PATH (Debian package redis-server) on a
//! free loopback port in a temporary directory, with the persistence and
//! memory settings of `[servers.redis]`. External: `redis://[user][:password@]host:port`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bakeoff_core::driver::{Connector, Driver, Stream};
use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Endpoint, Plan, ReadFrom, TargetSpec, Topology, Work, Workload};
use bakeoff_core::result::TargetRecord;
use bakeoff_core::target::{
    BackgroundLook, BackgroundWork, CommandTime, CounterRule, Counters, Observed, ServerTime,
    Target,
};
use bakeoff_core::workload::OpKind;
use bakeoff_servers::{ManagedServer, ServerCommand};

use crate::kind::OpenResult;
use crate::nodes::{Layout, MultiNode, Node};
use crate::running::RunningServer;

use crate::admin::{
    connect_within, parse_info, resolve, resp_call, resp_call_within, RespReply,
    ADMIN_CONNECT_WITHIN,
};
use crate::codec::resp::{RespCodec, RespScanIndexCodec, RespWaitCodec, SCAN_INDEX};
use crate::codec::resp_fields::RespFieldsCodec;
use crate::settings::{durable, Durability, Kind, Setting, Settings, PORT};
use bakeoff_core::durability::DurableTo;
use bakeoff_core::net::CodecDriver;

/// `[servers.redis]`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "maxmemory",
        kind: Kind::Bytes,
        default: None,
        help: "memory limit for data (default: redis's own, none)",
    },
    Setting {
        name: "maxmemory_policy",
        kind: Kind::Choice(&[
            "noeviction",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
        ]),
        default: None,
        help: "what to evict at maxmemory",
    },
    Setting {
        name: "persistence",
        kind: Kind::Choice(&["none", "aof-always", "aof-everysec", "aof-no", "rdb"]),
        default: Some("none"),
        help: "append-only file with fsync always / every second / never, or RDB snapshots",
    },
    Setting {
        name: "wait_replicas",
        kind: Kind::Count,
        default: None,
        help: "with --topology primary-replica: after each write, WAIT for this many replicas to acknowledge it (synchronous replication; a write that is not acknowledged in time counts as a server error)",
    },
    Setting {
        name: "cluster_replicas",
        kind: Kind::Count,
        default: None,
        help: "with --topology cluster:N: replicas of each master (CLUSTER REPLICATE; default none); they take no load, and their resources are sampled beside the masters'",
    },
    Setting {
        name: "wait_timeout_ms",
        kind: Kind::Count,
        default: Some("1000"),
        help: "how long WAIT waits for the replicas, ms",
    },
    PORT,
];

/// What each persistence setting lets acknowledged writes survive. Redis
/// writes its append-only file before it replies (in `beforeSleep`), so
/// aof-no and aof-everysec survive the process's crash; only aof-always
/// fsyncs first. RDB snapshots leave every write since the last one in
/// memory.
pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("persistence", "none", DurableTo::MemoryOnly),
        durable("persistence", "rdb", DurableTo::MemoryOnly),
        durable("persistence", "aof-no", DurableTo::ProcessCrash),
        durable("persistence", "aof-everysec", DurableTo::ProcessCrash),
        durable("persistence", "aof-always", DurableTo::PowerCut),
    ],
};

/// Settings of a managed redis-server.
#[derive(Clone, Debug, Default)]
pub struct RedisSettings {
    /// `maxmemory` in bytes (0 = no limit).
    pub maxmemory: Option<u64>,
    /// `maxmemory-policy`.
    pub maxmemory_policy: Option<String>,
    /// none, aof-always, aof-everysec, aof-no or rdb.
    pub persistence: String,
    /// Fixed port.
    pub port: Option<u16>,
    /// Replicas WAIT waits for after each write (synchronous replication).
    pub wait_replicas: Option<u64>,
    /// WAIT's timeout, ms.
    pub wait_timeout_ms: u64,
    /// Replicas of each master in a cluster.
    pub cluster_replicas: u64,
}

impl RedisSettings {
    /// Reads `[servers.redis]`.
    pub fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(RedisSettings {
            maxmemory: s.bytes("maxmemory")?,
            maxmemory_policy: s.choice("maxmemory_policy")?,
            persistence: s.choice("persistence")?.unwrap_or_default(),
            port: s.port("port")?,
            wait_replicas: s.count("wait_replicas")?,
            wait_timeout_ms: s.count("wait_timeout_ms")?.unwrap_or(1000),
            cluster_replicas: s.count("cluster_replicas")?.unwrap_or(0),
        })
    }

    fn args(&self, port: u16, dir: &Path) -> Vec<String> {
        let mut a: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--dir",
            &dir.display().to_string(),
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            "--logfile",
            "",
            // As many clients as bakeoff may bring (its 10000 default
            // would refuse a crowd of 10000 plus bakeoff's own admin
            // connection); Redis lowers it to what its file limit allows.
            "--maxclients",
            "100100",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut push = |k: &str, v: &str| {
            a.push(k.into());
            a.push(v.into());
        };
        match self.persistence.as_str() {
            "aof-always" | "aof-everysec" | "aof-no" => {
                push("--save", "");
                push("--appendonly", "yes");
                push("--appendfsync", self.persistence.trim_start_matches("aof-"));
            }
            "rdb" => {
                push("--save", "3600 1 300 100 60 10000");
                push("--appendonly", "no");
            }
            _ => {
                push("--save", "");
                push("--appendonly", "no");
            }
        }
        if let Some(m) = self.maxmemory {
            push("--maxmemory", &m.to_string());
        }
        if let Some(p) = &self.maxmemory_policy {
            push("--maxmemory-policy", p);
        }
        a
    }
}

/// Opens connections, authenticating when a password was given.
pub struct RedisConnector {
    addr: SocketAddr,
    user: Option<String>,
    password: Option<String>,
}

impl Connector for RedisConnector {
    fn connect(&self, within: Duration) -> std::io::Result<bakeoff_core::driver::Connected> {
        let mut s: Stream = connect_within(self.addr, "redis", within)?.into();
        if let Some(p) = &self.password {
            let reply = match &self.user {
                Some(u) => {
                    resp_call_within(&mut s, &[b"AUTH", u.as_bytes(), p.as_bytes()], within)?
                }
                None => resp_call_within(&mut s, &[b"AUTH", p.as_bytes()], within)?,
            };
            if let RespReply::Error(e) = reply {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "redis at {} refused the credentials: {e}; check the password in the URL",
                        self.addr
                    ),
                ));
            }
        }
        s.set_read_timeout(None)?;
        s.set_write_timeout(None)?;
        Ok(s.into())
    }
}

/// A redis target ready for one run.
pub struct RedisTarget {
    // Field order is drop order: the relay closes before the server stops.
    relay: Option<crate::link::Relay>,
    server: Option<RunningServer>,
    connector_addr: SocketAddr,
    /// Where load connections go: the server, or the link relay.
    load_addr: SocketAddr,
    user: Option<String>,
    password: Option<String>,
    /// RESP, or RESP keeping a scan index when the run scans.
    driver: Box<dyn Driver>,
    record: TargetRecord,
    /// Until when (monotonic ns) admin calls fail at once: a server that
    /// let one time out is not asked again for a while, so that the reads
    /// after a run on a stalled server (counters, command times, records)
    /// cost one timeout, not one each.
    quiet_until_ns: std::sync::atomic::AtomicU64,
    /// A Redis Cluster node: its `rejected_calls` also count the MOVED and
    /// ASK answers, which bakeoff counts as redirections, not requests.
    in_cluster: bool,
    /// Whether writes keep a scan index beside the records.
    scan_index: bool,
    /// Fields per record: several are kept as a hash.
    fields: u32,
    /// Whether it is redis-server (not an engine's host speaking RESP),
    /// and so tells of its forks and saves.
    tells_background: bool,
    /// The connection the looks at background work go through, kept
    /// between looks (ten a second).
    looks: std::sync::Mutex<Option<Stream>>,
}

/// How long a look at background work waits for the server, connecting
/// and answering: the thread that collects the run waits with it.
const LOOK_WITHIN: Duration = Duration::from_millis(300);

/// How long admin calls fail at once after one timed out.
const QUIET_AFTER_TIMEOUT_NS: u64 = 10_000_000_000;

/// `wait_replicas` asks each write to wait for that many replicas: more
/// than the topology has, at any point of the run, would hold every write
/// until `wait_timeout_ms` (or be dropped without a word where there is no
/// replica at all); a single server is the baseline of a sweep that has a
/// replica elsewhere.
fn check_wait_replicas(
    settings: &RedisSettings,
    spec: &TargetSpec,
    plan: &Plan,
) -> Result<(), TargetError> {
    let Some(n) = settings.wait_replicas else {
        return Ok(());
    };
    let points = plan.points_for(spec);
    // A single server in a sweep that also has a replica is the
    // baseline: it has nothing to wait for, and WAIT is left out there.
    let some_replica = points
        .iter()
        .any(|p| p.workload.topology == Topology::PrimaryReplica);
    for point in &points {
        let topology = point.workload.topology;
        let replicas = match topology {
            Topology::PrimaryReplica => 1,
            _ => 0,
        };
        let baseline = topology == Topology::Single && some_replica;
        if n > replicas && !baseline {
            let has = match replicas {
                0 => "has no replica to wait for".to_string(),
                r => format!("has {r} replica"),
            };
            return Err(TargetError::Settings(format!(
                "servers.{}.wait_replicas={n}: --topology {topology} {has}, so every write would wait in vain; use --topology primary-replica with wait_replicas=1, or drop the setting",
                spec.name
            )));
        }
    }
    Ok(())
}

/// Starts `server`'s program, node `node` of a run of `workload` with
/// `settings`, a replica of `replica_of` where given, in cluster mode
/// where the topology is a cluster, within the run's limits.
fn start_server(
    server: &RespServer,
    settings: &RedisSettings,
    workload: &Workload,
    node: u32,
    replica_of: Option<SocketAddr>,
) -> Result<ManagedServer, TargetError> {
    let args = |port, dir: &Path| {
        let mut a = settings.args(port, dir);
        if let Topology::Cluster(_) = workload.topology {
            a.extend(crate::redis_cluster::ARGS.iter().map(|s| s.to_string()));
        }
        if let Some(p) = replica_of {
            a.extend([
                "--replicaof".into(),
                p.ip().to_string(),
                p.port().to_string(),
            ]);
        }
        a
    };
    let cmd = ServerCommand {
        program: server.program(),
        name: server.program(),
        package: server.facts.package,
        // A fixed port is the first node's; the others take free ones.
        port: settings.port.filter(|_| node == 0),
        args: &args,
        ready: &|addr| crate::admin::resp_pings(addr, server.facts.name),
        ready_timeout: Duration::from_secs(20),
        extra_dirs: &[],
        run_as: None,
        init: None,
        lazy_disk: workload.cuts_power(),
        stop_signal: libc::SIGTERM,
    };
    let mut server = ManagedServer::start(&cmd).map_err(TargetError::cause)?;
    server.limit(bakeoff_servers::Limits::of(workload))?;
    Ok(server)
}

/// Starts one of `server`'s program, or connects to the URL.
fn open_one(
    server: &RespServer,
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
    node: u32,
    replica_of: Option<SocketAddr>,
) -> Result<RedisTarget, TargetError> {
    let settings = RedisSettings::parse(plan.settings_of(spec))?;
    let (started, addr, mode, endpoint) = match &spec.endpoint {
        Endpoint::Managed => {
            let started = start_server(server, &settings, workload, node, replica_of)?;
            let addr = started.addr;
            (Some(started), addr, "managed", None)
        }
        Endpoint::External {
            host, port, url, ..
        } => (None, resolve(host, *port)?, "external", Some(url.clone())),
    };
    let command_line = started
        .as_ref()
        .map(|s| format!("{} {}", s.binary.display(), s.args.join(" ")));
    let dial = crate::link::dial(workload, addr)?;
    let scans = workload.mix.has(OpKind::Scan);
    let mut target = RedisTarget::over(
        started,
        addr,
        dial,
        spec.user.clone(),
        spec.password.clone(),
        (scans, workload.fields),
    );
    target.in_cluster = matches!(workload.topology, Topology::Cluster(_));
    target.record = TargetRecord {
        name: spec.name.clone(),
        mode: mode.into(),
        endpoint,
        ..TargetRecord::default()
    };
    target.record.requests = OpKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), target.driver.describe(*k)))
        .collect();
    let info = target.info("default").map_err(TargetError::during(format!(
        "cannot read INFO from {} at {addr}",
        server.facts.name
    )))?;
    let get = |k: &str| {
        info.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    target.record.version = server.version(&info);
    let mut s = BTreeMap::new();
    for k in [
        "maxmemory",
        "maxmemory_policy",
        "aof_enabled",
        "mem_allocator",
        "io_threads_active",
        "os",
        "arch_bits",
    ] {
        if let Some(v) = get(k) {
            s.insert(k.to_string(), v);
        }
    }
    // What decides durability, as the server reports it (CONFIG may be
    // renamed away on an external server: then it is left out).
    for k in ["appendonly", "appendfsync", "save"] {
        if let Some(v) = target.config(k) {
            s.insert(k.to_string(), v);
        }
    }
    if let Some(command_line) = command_line {
        s.insert("persistence".into(), settings.persistence.clone());
        s.insert("command_line".into(), command_line);
    }
    target.record.settings = s;
    Ok(target)
}

/// The value in a `CONFIG GET` reply for one parameter, given as the raw
/// array after its `*`: `2\r\n$11\r\nappendfsync\r\n$6\r\nalways`.
fn config_value(raw: &str) -> Option<String> {
    let lines: Vec<&str> = raw.split("\r\n").collect();
    match lines.as_slice() {
        ["2", _, _, _, value] => Some(value.to_string()),
        _ => None,
    }
}

impl RedisTarget {
    /// A target that speaks RESP to `addr`, where `server` (if bakeoff
    /// started one) listens, with its load connections dialled as `dial`
    /// says, keeping a scan index beside the records when `scans` and
    /// records of `fields` fields as hashes when there are several; its
    /// record is set after.
    fn over(
        server: Option<ManagedServer>,
        addr: SocketAddr,
        dial: crate::link::Dial,
        user: Option<String>,
        password: Option<String>,
        (scans, fields): (bool, u32),
    ) -> Self {
        let connector = Box::new(RedisConnector {
            addr: dial.addr,
            user: user.clone(),
            password: password.clone(),
        });
        let driver: Box<dyn Driver> = if fields > 1 {
            Box::new(CodecDriver::new(
                RespFieldsCodec::new(fields, scans),
                connector,
            ))
        } else if scans {
            Box::new(CodecDriver::new(RespScanIndexCodec::default(), connector))
        } else {
            Box::new(CodecDriver::new(RespCodec, connector))
        };
        RedisTarget {
            relay: dial.relay,
            server: server.map(RunningServer::new),
            connector_addr: addr,
            load_addr: dial.addr,
            driver,
            user,
            password,
            record: TargetRecord::default(),
            quiet_until_ns: Default::default(),
            in_cluster: false,
            scan_index: scans,
            fields,
            tells_background: true,
            looks: Default::default(),
        }
    }

    /// A target that speaks RESP to `server`, a process bakeoff started
    /// that is not redis-server (an embedded engine's host): sampled,
    /// counted and faulted as redis-server is. Its record is set after.
    pub(crate) fn serving(server: ManagedServer) -> Self {
        let addr = server.addr;
        let direct = crate::link::Dial { addr, relay: None };
        let mut target = Self::over(Some(server), addr, direct, None, None, (false, 1));
        target.tells_background = false;
        target
    }

    /// Replaces what the result records of the target.
    pub(crate) fn set_record(&mut self, record: TargetRecord) {
        self.record = record;
    }

    /// A handle that reaches the same server for admin calls only (no
    /// server, driver or relay of its own), for a closure that outlives
    /// this target's borrow.
    fn admin_handle(&self) -> RedisTarget {
        let direct = crate::link::Dial {
            addr: self.connector_addr,
            relay: None,
        };
        Self::over(
            None,
            self.connector_addr,
            direct,
            self.user.clone(),
            self.password.clone(),
            (self.scan_index, self.fields),
        )
    }

    /// Waits until this replica's link to its primary is up and the first
    /// sync is done.
    fn wait_for_primary(&self, within: Duration) -> Result<(), TargetError> {
        let start = std::time::Instant::now();
        loop {
            let info = self.info("replication").unwrap_or_default();
            let up = info
                .iter()
                .any(|(k, v)| k == "master_link_status" && v == "up");
            let syncing = info
                .iter()
                .any(|(k, v)| k == "master_sync_in_progress" && v == "1");
            if up && !syncing {
                return Ok(());
            }
            if start.elapsed() > within {
                return Err(TargetError::Server(format!(
                    "the redis replica at {} did not finish its first sync with its primary within {} s (INFO replication: {info:?})",
                    self.connector_addr,
                    within.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's address (not a link relay's).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.connector_addr
    }

    /// A connection for admin calls, straight to the server.
    pub(crate) fn admin(&self) -> std::io::Result<Stream> {
        use std::sync::atomic::Ordering;
        if bakeoff_core::recorder::monotonic_ns() < self.quiet_until_ns.load(Ordering::Relaxed) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "redis at {} let an admin call time out a moment ago; not asked again yet",
                    self.connector_addr
                ),
            ));
        }
        let s = RedisConnector {
            addr: self.connector_addr,
            user: self.user.clone(),
            password: self.password.clone(),
        }
        .connect(ADMIN_CONNECT_WITHIN)
        .map_err(|e| self.timed_out(e))?
        .stream;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(s)
    }

    /// One admin call: the server's reply to `words`.
    fn call(&self, words: &[&[u8]]) -> std::io::Result<RespReply> {
        let mut s = self.admin()?;
        resp_call(&mut s, words).map_err(|e| self.timed_out(e))
    }

    /// `e`, remembered when it is a timeout (see `quiet_until_ns`).
    fn timed_out(&self, e: std::io::Error) -> std::io::Error {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            self.quiet_until_ns.store(
                bakeoff_core::recorder::monotonic_ns() + QUIET_AFTER_TIMEOUT_NS,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        e
    }

    /// The value of configuration parameter `name` (`CONFIG GET`), if the
    /// server answers it.
    fn config(&self, name: &str) -> Option<String> {
        match self.call(&[b"CONFIG", b"GET", name.as_bytes()]).ok()? {
            RespReply::Simple(raw) => config_value(&raw),
            _ => None,
        }
    }

    /// `INFO section` as key-value pairs.
    pub(crate) fn info(&self, section: &str) -> std::io::Result<Vec<(String, String)>> {
        match self.call(&[b"INFO", section.as_bytes()])? {
            RespReply::Bulk(b) => Ok(parse_info(&String::from_utf8_lossy(&b))),
            other => Err(std::io::Error::other(format!(
                "unexpected INFO reply {other:?}"
            ))),
        }
    }
}

impl Target for RedisTarget {
    fn server_time(&self) -> Observed<'_, dyn ServerTime + '_> {
        Ok(self)
    }

    fn background_work(&self) -> Observed<'_, dyn BackgroundWork + '_> {
        // Redis tells of its forks where bakeoff reads its INFO as it runs.
        if self.tells_background {
            Ok(self)
        } else {
            Err(None)
        }
    }

    fn driver(&self) -> &dyn Driver {
        &*self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    fn counters(&self) -> Option<Counters> {
        let info = self.info("commandstats").ok()?;
        let mut out = Counters::new();
        for (k, v) in info {
            if let Some(cmd) = k.strip_prefix("cmdstat_") {
                // A command refused before it ran (OOM under noeviction, a
                // replica's read-only) is in rejected_calls, not calls
                // (Redis 7): it is a request received all the same. In a
                // cluster, a redirection is one too, and bakeoff counts it
                // apart (`redirections`), not as the operation's request.
                let rejected = if self.in_cluster {
                    0
                } else {
                    stat_field(&v, "rejected_calls")
                };
                let received = stat_field(&v, "calls") + rejected;
                out.insert(cmd.to_string(), received);
            }
        }
        Some(out)
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        if self.fields > 1 {
            HASH_RULES
        } else {
            STRING_RULES
        }
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        Some(
            self.admin()
                .and_then(|mut s| crate::admin::resp_time(&mut s)),
        )
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }

    fn record_count(&self) -> Option<u64> {
        let count = |command: &[&[u8]]| match self.call(command).ok()? {
            RespReply::Simple(n) => n.parse::<u64>().ok(),
            _ => None,
        };
        let keys = count(&[b"DBSIZE"])?;
        if !self.scan_index {
            return Some(keys);
        }
        // The index is a key, not a record.
        Some(keys - count(&[b"EXISTS", SCAN_INDEX.as_bytes()])?.min(keys))
    }

    fn evictions(&self) -> Option<u64> {
        let stats = self.info("stats").ok()?;
        let (_, n) = stats.iter().find(|(k, _)| k == "evicted_keys")?;
        n.parse().ok()
    }

    fn provoke(&self, work: Work) -> Result<(), TargetError> {
        let command: &[u8] = match work {
            Work::Bgsave => b"BGSAVE",
            Work::AofRewrite => b"BGREWRITEAOF",
            Work::Checkpoint => return Err(TargetError::Client("redis has no checkpoint".into())),
        };
        match self.call(&[command]) {
            Ok(RespReply::Simple(_)) | Ok(RespReply::Bulk(_)) => Ok(()),
            Ok(other) => Err(TargetError::Server(format!(
                "redis answered {} with {other:?}",
                String::from_utf8_lossy(command)
            ))),
            Err(e) => Err(TargetError::cause(e)),
        }
    }

    crate::running::one_server_methods!();
}

impl ServerTime for RedisTarget {
    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        let info = self.info("commandstats").ok()?;
        // Redis 7's distributions (latency-tracking, on by default); an
        // older server's error leaves them out.
        let mut histograms = match self.call(&[b"LATENCY", b"HISTOGRAM"]) {
            Ok(RespReply::Simple(raw)) => latency_histograms(&raw),
            _ => Default::default(),
        };
        let field = stat_field;
        let times = info
            .iter()
            .filter_map(|(k, v)| {
                let command = k.strip_prefix("cmdstat_")?;
                Some(CommandTime {
                    command: command.to_string(),
                    kinds: match command {
                        "get" | "hmget" => &[OpKind::Get],
                        "set" | "hset" => &[OpKind::Set, OpKind::Update, OpKind::Insert],
                        "del" => &[OpKind::Delete],
                        _ => &[],
                    },
                    calls: field(v, "calls"),
                    usec: field(v, "usec"),
                    apart: false,
                    histogram_usec: histograms.remove(command).unwrap_or_default(),
                })
            })
            .collect();
        Some((
            "INFO commandstats (calls, usec) and LATENCY HISTOGRAM",
            times,
        ))
    }
}

impl BackgroundWork for RedisTarget {
    fn source(&self) -> (&'static str, Duration) {
        (
            "INFO persistence and stats (bgsave, AOF rewrite, forks), every 100 ms",
            Duration::from_millis(100),
        )
    }

    fn look(&self) -> Option<BackgroundLook> {
        let mut looks = self.looks.lock().unwrap_or_else(|e| e.into_inner());
        if looks.is_none() {
            // A look holds up the thread that collects the run: a server
            // that does not answer at once is left alone for a while.
            let quiet = self
                .quiet_until_ns
                .load(std::sync::atomic::Ordering::Relaxed);
            if bakeoff_core::recorder::monotonic_ns() < quiet {
                return None;
            }
            let connector = RedisConnector {
                addr: self.connector_addr,
                user: self.user.clone(),
                password: self.password.clone(),
            };
            match connector.connect(LOOK_WITHIN) {
                Ok(c) => *looks = Some(c.stream),
                Err(e) => {
                    self.timed_out(e);
                    return None;
                }
            }
        }
        let reply = resp_call_within(
            looks.as_mut()?,
            &[b"INFO", b"persistence", b"stats"],
            LOOK_WITHIN,
        );
        let text = match reply {
            Ok(RespReply::Bulk(text)) => text,
            other => {
                // Another connection at the next look; none for a while
                // after a timeout.
                if let Err(e) = other {
                    self.timed_out(e);
                }
                *looks = None;
                return None;
            }
        };
        Some(background_look(&parse_info(&String::from_utf8_lossy(
            &text,
        ))))
    }
}

/// Redis's background work in its `INFO persistence` and `stats`: a
/// save or an AOF rewrite running in a forked child, and the forks
/// themselves (the main thread stops while it forks).
fn background_look(info: &[(String, String)]) -> BackgroundLook {
    let get = |name: &str| {
        info.iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let n = |name: &str| get(name).parse::<u64>().unwrap_or(0);
    let mb = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    let mut look = BackgroundLook::default();
    if n("rdb_bgsave_in_progress") == 1 {
        look.running.push((
            "bgsave",
            format!(
                "{} of {} keys written, copy-on-write {:.1} MB",
                n("current_save_keys_processed"),
                n("current_save_keys_total"),
                mb(n("current_cow_size"))
            ),
        ));
    }
    if n("aof_rewrite_in_progress") == 1 {
        look.running.push((
            "AOF rewrite",
            format!(
                "{} of {} keys written, copy-on-write {:.1} MB",
                n("current_save_keys_processed"),
                n("current_save_keys_total"),
                mb(n("current_cow_size"))
            ),
        ));
    }
    look.finished.push((
        "bgsave",
        n("rdb_saves"),
        format!(
            "took {} s, {}",
            get("rdb_last_bgsave_time_sec"),
            get("rdb_last_bgsave_status")
        ),
    ));
    look.finished.push((
        "AOF rewrite",
        n("aof_rewrites"),
        format!(
            "took {} s, {}",
            get("aof_last_rewrite_time_sec"),
            get("aof_last_bgrewrite_status")
        ),
    ));
    look.finished.push((
        "fork",
        n("total_forks"),
        format!(
            "the main thread stopped {} µs to fork",
            n("latest_fork_usec")
        ),
    ));
    if !get("aof_delayed_fsync").is_empty() {
        look.finished.push((
            "AOF write delayed",
            n("aof_delayed_fsync"),
            "a write waited for an fsync still running (appendfsync everysec)".into(),
        ));
    }
    look
}

/// Each command's distribution in a `LATENCY HISTOGRAM` reply, `raw` being
/// the array as [`RespReply::Simple`] holds it (its text after the first
/// `*`): per command, (a bucket's upper bound, µs; the calls at or under
/// it). The reply is, per command, its name, then `calls`, the count,
/// `histogram_usec` and the buckets' bounds and counts in turn.
fn latency_histograms(raw: &str) -> std::collections::BTreeMap<String, Vec<(u64, u64)>> {
    enum Token<'a> {
        Int(u64),
        Text(&'a str),
    }
    let mut tokens = Vec::new();
    // The first line is the array's length.
    let mut lines = raw.split("\r\n").skip(1);
    while let Some(line) = lines.next() {
        match line.as_bytes().first() {
            Some(b':') => tokens.push(Token::Int(line[1..].parse().unwrap_or(0))),
            Some(b'$') => {
                if let Some(text) = lines.next() {
                    tokens.push(Token::Text(text));
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeMap::new();
    let mut at = 0;
    while at < tokens.len() {
        let (Token::Text(command), Some(Token::Text("calls")), Some(Token::Int(_))) =
            (&tokens[at], tokens.get(at + 1), tokens.get(at + 2))
        else {
            at += 1;
            continue;
        };
        at += 3;
        if let Some(Token::Text("histogram_usec")) = tokens.get(at) {
            at += 1;
        }
        let mut buckets = Vec::new();
        while let (Some(Token::Int(le)), Some(Token::Int(calls))) =
            (tokens.get(at), tokens.get(at + 1))
        {
            buckets.push((*le, *calls));
            at += 2;
        }
        out.insert(command.to_string(), buckets);
    }
    out
}

/// How Redis's commandstats add up to bakeoff's requests, records kept
/// as strings.
const STRING_RULES: &[CounterRule] = &[
    CounterRule {
        what: "GET calls (INFO commandstats)",
        counters: &["get"],
        kinds: &[OpKind::Get],
    },
    CounterRule {
        what: "SET calls (INFO commandstats)",
        counters: &["set"],
        kinds: &[OpKind::Set, OpKind::Update],
    },
    DEL_RULE,
    SCAN_RULE,
];

/// The same, records of several fields kept as hashes.
const HASH_RULES: &[CounterRule] = &[
    CounterRule {
        what: "HMGET calls (INFO commandstats)",
        counters: &["hmget"],
        kinds: &[OpKind::Get],
    },
    CounterRule {
        what: "HSET calls (INFO commandstats)",
        counters: &["hset"],
        kinds: &[OpKind::Set, OpKind::Update],
    },
    DEL_RULE,
    SCAN_RULE,
];

/// Deletes, whichever way records are kept.
const DEL_RULE: CounterRule = CounterRule {
    what: "DEL calls (INFO commandstats)",
    counters: &["del"],
    kinds: &[OpKind::Delete],
};

/// A scan's script reads the index once (Redis counts the calls a script
/// makes, by command).
const SCAN_RULE: CounterRule = CounterRule {
    what: "ZRANGEBYLEX calls, one per scan (INFO commandstats)",
    counters: &["zrangebylex"],
    kinds: &[OpKind::Scan],
};

/// Field `name` of an `INFO commandstats` line's value
/// (`calls=3,usec=5,…`), 0 where absent.
fn stat_field(v: &str, name: &str) -> u64 {
    v.split(',')
        .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// What `redis` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "redis",
    summary: "Redis over RESP (GET/SET/DEL on string keys)",
    package: "redis-server",
    reach: crate::kind::Reach::Server {
        program: "redis-server",
        scheme: "redis",
        url_options: &[],
        credentials: true,
        topologies: &["shards", "primary-replica", "cluster"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SCAN,
        pipelining: true,
        batch_load: false,
        requests: &[],
        no_scan: "Redis scans through a sorted set of its keys kept beside the records",
    },
    in_default_comparison: true,
    settings: SETTINGS,
    durability: DURABILITY,
    provokes: &[
        bakeoff_core::plan::Work::Bgsave,
        bakeoff_core::plan::Work::AofRewrite,
    ],
};

/// `target` as a node of a target of several, its sessions connecting
/// with `spec`'s credentials.
fn node_of(spec: &TargetSpec, target: RedisTarget) -> Node {
    Node {
        addr: target.connector_addr,
        connector: Box::new(RedisConnector {
            addr: target.load_addr,
            user: spec.user.clone(),
            password: spec.password.clone(),
        }),
        target: Box::new(target),
    }
}

/// What differs between servers that speak RESP as redis-server does and
/// take its command line (Redis; Valkey and KeyDB are such servers): their
/// facts, the program among them, and how they name their version. A
/// second such server managed by bakeoff is one value of this type and a
/// line in the registry (docs/targets.md).
pub struct RespServer {
    /// Its facts: name, program, package, settings, abilities.
    pub facts: crate::kind::TargetFacts,
    /// The product's name in the report's version line (`Redis`).
    pub product: &'static str,
    /// The INFO field that holds its version (`redis_version`).
    pub version_field: &'static str,
}

impl RespServer {
    /// The program bakeoff starts (looked up on PATH).
    pub fn program(&self) -> &'static str {
        self.facts.reach.program().unwrap_or(self.facts.name)
    }

    /// Its version line from its INFO fields: `Redis 7.0.15`.
    pub fn version(&self, info: &[(String, String)]) -> Option<String> {
        info.iter()
            .find(|(k, _)| k == self.version_field)
            .map(|(_, v)| format!("{} {v}", self.product))
    }
}

/// Redis.
pub const REDIS: RespServer = RespServer {
    facts: FACTS,
    product: "Redis",
    version_field: "redis_version",
};

/// `redis`, as the registry knows it.
pub const REDIS_KIND: RespKind = RespKind(&REDIS);

/// A RESP server as the registry knows it: the target of its facts.
pub struct RespKind(pub &'static RespServer);

impl crate::kind::TargetKind for RespKind {
    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &self.0.facts
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        RedisSettings::parse(settings).map(|_| ())
    }

    /// Checks that the target can be used, without starting anything lasting.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        match &spec.endpoint {
            Endpoint::Managed => {
                let settings = RedisSettings::parse(plan.settings_of(spec))?;
                check_wait_replicas(&settings, spec, plan)?;
                let (program, package) = (self.0.program(), self.0.facts.package);
                if bakeoff_servers::find_on_path(program).is_none() {
                    return Err(TargetError::Server(format!("`{program}` is not on PATH; install it with `apt-get install {package}` (Debian package {package})")));
                }
                crate::settings::fixed_port_free(self.0.facts.name, settings.port)
            }
            Endpoint::External { host, port, .. } => {
                let addr = resolve(host, *port)?;
                let c = RedisConnector {
                    addr,
                    user: spec.user.clone(),
                    password: spec.password.clone(),
                };
                let mut s = c
                    .connect(ADMIN_CONNECT_WITHIN)
                    .map_err(TargetError::cause)?
                    .stream;
                s.set_read_timeout(Some(Duration::from_secs(5)))
                    .map_err(TargetError::cause)?;
                match resp_call(&mut s, &[b"PING"]) {
                    Ok(RespReply::Simple(p)) if p == "PONG" => {
                        records_of_this_form(&mut s, &format!("{host}:{port}"), plan)
                    }
                    Ok(RespReply::Error(e)) => Err(TargetError::Server(format!("redis at {addr} answered PING with an error: {e}; if it needs a password, give it in the URL: redis://:PASSWORD@{host}:{port}"))),
                    Ok(other) => Err(TargetError::Server(format!("{addr} answered PING with {other:?}; is it a Redis server?"))),
                    Err(e) => Err(TargetError::Server(format!("{addr} did not answer PING: {e}; is it a Redis server?"))),
                }
            }
        }
    }

    /// Opens the target: starts redis-server (one, a node per shard, or a
    /// primary and its replica), or connects to the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        let node = |target: RedisTarget| node_of(spec, target);
        let settings = RedisSettings::parse(plan.settings_of(spec))?;
        if settings.cluster_replicas > 0 && !matches!(workload.topology, Topology::Cluster(_)) {
            return Err(TargetError::Settings(format!(
                "servers.{}.cluster_replicas = {} is for a Redis Cluster; add --topology cluster:N (not {})",
                spec.name, settings.cluster_replicas, workload.topology
            )));
        }
        if let Some(specs) = crate::nodes::external_nodes(spec) {
            return Ok(Box::new(MultiNode::shards(
                specs.len() as u32,
                RespCodec,
                |i| {
                    Ok(node(open_one(
                        self.0,
                        &specs[i as usize],
                        plan,
                        workload,
                        i,
                        None,
                    )?))
                },
            )?));
        }
        match workload.topology {
            Topology::Shards(n) => Ok(Box::new(MultiNode::shards(n, RespCodec, |i| {
                Ok(node(open_one(self.0, spec, plan, workload, i, None)?))
            })?)),
            Topology::Cluster(n) => {
                let replicas = n as u64 * settings.cluster_replicas;
                if n as u64 + replicas > 64 {
                    return Err(TargetError::Settings(format!(
                        "--topology {} with servers.{}.cluster_replicas = {} is {} servers; at most 64 run on one machine",
                        workload.topology,
                        spec.name,
                        settings.cluster_replicas,
                        n as u64 + replicas
                    )));
                }
                let targets = (0..n + replicas as u32)
                    .map(|i| open_one(self.0, spec, plan, workload, i, None))
                    .collect::<Result<Vec<_>, _>>()?;
                crate::redis_cluster::form(&targets, n as usize)?;
                Ok(Box::new(MultiNode::cluster(
                    targets.into_iter().map(node).collect(),
                    n as usize,
                    RespCodec,
                )))
            }
            Topology::PrimaryReplica => {
                let primary = open_one(self.0, spec, plan, workload, 0, None)?;
                let replica = open_one(
                    self.0,
                    spec,
                    plan,
                    workload,
                    1,
                    Some(primary.connector_addr),
                )?;
                replica.wait_for_primary(Duration::from_secs(20))?;
                let (p, r) = (primary.admin_handle(), replica.admin_handle());
                let layout = Layout::PrimaryReplica {
                    reads: match workload.read_from {
                        ReadFrom::Primary => 0,
                        ReadFrom::Replica => 1,
                    },
                    read_counters: &["get"],
                    lag: Box::new(move || {
                        let offset = |t: &RedisTarget, field: &str| -> Option<u64> {
                            let info = t.info("replication").ok()?;
                            info.iter().find(|(k, _)| k == field)?.1.parse().ok()
                        };
                        let (a, b) = (
                            offset(&p, "master_repl_offset")?,
                            offset(&r, "slave_repl_offset")?,
                        );
                        Some(a.saturating_sub(b))
                    }),
                };
                let (primary, replica) = (node(primary), node(replica));
                Ok(match settings.wait_replicas {
                    Some(n) => Box::new(MultiNode::replicated(
                        primary,
                        replica,
                        RespWaitCodec::new(n, settings.wait_timeout_ms),
                        layout,
                    )),
                    None => Box::new(MultiNode::replicated(primary, replica, RespCodec, layout)),
                })
            }
            _ => Ok(Box::new(open_one(self.0, spec, plan, workload, 0, None)?)),
        }
    }
}

impl crate::redis_cluster::ClusterNode for RedisTarget {
    fn addr(&self) -> SocketAddr {
        RedisTarget::addr(self)
    }

    fn admin(&self) -> std::io::Result<Stream> {
        RedisTarget::admin(self)
    }

    fn info(&self, section: &str) -> std::io::Result<Vec<(String, String)>> {
        RedisTarget::info(self, section)
    }
}

/// A Redis given by URL that already holds bakeoff's first record in the
/// other form (a plain value where this run keeps hashes of several
/// fields, or a hash where it writes plain values) would answer every
/// write with WRONGTYPE: it is named before the load, with the way out.
fn records_of_this_form(s: &mut Stream, at: &str, plan: &Plan) -> Result<(), TargetError> {
    let points = plan.points();
    let hashes = points.iter().any(|p| p.workload.fields > 1);
    let plain = points.iter().any(|p| p.workload.fields <= 1);
    if hashes == plain {
        // A sweep over --fields writes both forms itself.
        return Ok(());
    }
    let key = plan.workload.key_naming.key(0);
    let shown = String::from_utf8_lossy(key.as_bytes()).into_owned();
    let (want, wants, earlier) = if hashes {
        ("hash", "hashes", "plain values")
    } else {
        (
            "string",
            "strings",
            "records of several fields, kept as hashes",
        )
    };
    match resp_call(s, &[b"TYPE", key.as_bytes()]) {
        Ok(RespReply::Simple(t)) if t == "none" || t == want => Ok(()),
        Ok(RespReply::Simple(t)) => Err(TargetError::Server(format!(
            "the server at {at} already holds keys of another type ({shown} is a {t}, where this run writes {wants}: an earlier run's {earlier}); flush it (redis-cli -h HOST -p PORT FLUSHALL) or point at another server"
        ))),
        // A server that cannot say: the load will.
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis 7.0.15's reply to `LATENCY HISTOGRAM` after 20,000 GETs and
    /// SETs (redis-benchmark), as the admin connection holds it.
    #[test]
    fn latency_histograms_are_read_per_command() {
        let raw = "4\r\n$3\r\nget\r\n*4\r\n$5\r\ncalls\r\n:20000\r\n$14\r\nhistogram_usec\r\n*4\r\n:1\r\n:19994\r\n:132\r\n:20000\r\n$3\r\nset\r\n*4\r\n$5\r\ncalls\r\n:7\r\n$14\r\nhistogram_usec\r\n*2\r\n:2\r\n:7";
        let h = latency_histograms(raw);
        assert_eq!(h["get"], [(1, 19994), (132, 20000)]);
        assert_eq!(h["set"], [(2, 7)]);
        assert_eq!(h.len(), 2);
    }

    /// A second RESP server: redis-server itself under another name and
    /// product, as Valkey would be (`valkey-server`, `valkey_version`).
    const SECOND: RespServer = RespServer {
        facts: crate::kind::TargetFacts {
            name: "second-resp",
            summary: "a second RESP server, for the test",
            ..FACTS
        },
        product: "SecondRESP",
        version_field: "redis_version",
    };

    /// One whose program this machine does not have.
    const ABSENT: RespServer = RespServer {
        facts: crate::kind::TargetFacts {
            name: "absent-resp",
            package: "absent-resp-package",
            reach: crate::kind::Reach::Server {
                program: "absent-resp-server",
                scheme: "absent-resp",
                url_options: &[],
                credentials: true,
                topologies: &[],
            },
            ..FACTS
        },
        product: "AbsentRESP",
        version_field: "absent_version",
    };

    /// A second RESP server managed by bakeoff is one value of facts: its
    /// name, program and package come from them, the server it starts is
    /// its program, and its version line names its product.
    #[test]
    fn a_second_resp_server_is_one_module_of_facts() {
        use crate::kind::TargetKind;
        let kind = RespKind(&SECOND);
        assert_eq!(kind.name(), "second-resp");
        assert_eq!(SECOND.program(), "redis-server");
        kind.check(None).unwrap();
        let missing = RespKind(&ABSENT).available().unwrap_err().to_string();
        assert!(
            missing.contains("absent-resp-server") && missing.contains("absent-resp-package"),
            "{missing}"
        );
        if bakeoff_servers::find_on_path("redis-server").is_none() {
            assert!(
                std::env::var("CI").map_or(true, |v| v.is_empty() || v == "false"),
                "redis-server missing under CI"
            );
            return;
        }
        let settings = RedisSettings::parse(None).unwrap();
        let workload = bakeoff_core::plan::params::defaults();
        let server = start_server(&SECOND, &settings, &workload, 0, None).unwrap();
        assert!(
            server.binary.ends_with("redis-server"),
            "{:?}",
            server.binary
        );
        let addr = server.addr;
        let dial = crate::link::dial(&workload, addr).unwrap();
        let target = RedisTarget::over(Some(server), addr, dial, None, None, (false, 0));
        let version = SECOND.version(&target.info("default").unwrap()).unwrap();
        assert!(version.starts_with("SecondRESP "), "{version}");
        assert_eq!(ABSENT.version(&target.info("default").unwrap()), None);
    }

    #[test]
    fn config_get_replies_give_their_value() {
        assert_eq!(
            config_value("2\r\n$11\r\nappendfsync\r\n$6\r\nalways").as_deref(),
            Some("always")
        );
        assert_eq!(
            config_value("2\r\n$4\r\nsave\r\n$0\r\n").as_deref(),
            Some("")
        );
        assert_eq!(config_value("0"), None, "an unknown parameter");
    }
}
