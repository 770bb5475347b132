//! The `handlersocket` target: InnoDB rows read and written by index
//! through MariaDB's HandlerSocket plugin, without SQL (seed 002 compares
//! it with MongoDB and MySQL).
//!
//! It is built from parts every target shares: the protocol is a codec of
//! our own ([`crate::codec::handlersocket`]) pipelined on core's io_uring
//! loop like Redis; the server is MariaDB's recipe
//! ([`crate::mariadb::start_managed`]) with the plugin loaded and two more
//! ports; the table `bakeoff.kv` is MariaDB's; the counters are MariaDB's
//! own (`Handler_read_key`, `Handler_write`).
//!
//! Managed mode starts mariadbd with the plugin on loopback ports and a
//! fresh random secret for the write port. External mode takes
//! `handlersocket://:SECRET@HOST:PORT`, the write port of a server whose
//! `bakeoff.kv` table exists; the secret is never printed or stored, and
//! there are no SQL counters to compare with.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use bakeoff_core::driver::{Codec, Connector};
use bakeoff_core::error::TargetError;
use bakeoff_core::net::CodecDriver;
use bakeoff_core::plan::{Endpoint, Plan, TargetSpec, Workload};
use bakeoff_core::result::{CounterCheck, TargetRecord};
use bakeoff_core::target::{
    compare_counters, BackgroundWork, CounterRule, Counters, Observed, Sent, ServerTime, Target,
};
use bakeoff_core::workload::OpKind;
use bakeoff_servers::ManagedServer;

use crate::kind::OpenResult;
use crate::running::RunningServer;

use crate::admin::resolve;
use crate::codec::handlersocket::{
    parse_setup_reply, setup_requests, HandlerSocketCodec, SetupReply, UNAUTH,
};
use crate::mariadb::{self, MariaSettings};
use crate::settings::Settings;

/// Where Debian's mariadb-server keeps the plugin.
const PLUGIN_DIRS: &[&str] = &["/usr/lib/mysql/plugin", "/usr/lib/mariadb/plugin"];

/// `[servers.handlersocket]`: the MariaDB server's settings plus the
/// plugin's.
struct HsSettings {
    server: MariaSettings,
    /// `handlersocket_threads_wr`: threads serving the write port, which
    /// carries every operation here (the plugin's default is 1).
    threads_wr: u64,
}

impl HsSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, mariadb::HANDLERSOCKET_SETTINGS)?;
        Ok(Self {
            server: MariaSettings::read(&s)?,
            threads_wr: s.count("threads_wr")?.unwrap_or_default(),
        })
    }
}

fn plugin_path() -> Option<std::path::PathBuf> {
    PLUGIN_DIRS
        .iter()
        .map(|d| Path::new(d).join("handlersocket.so"))
        .find(|p| p.exists())
}

/// Whether MariaDB with the HandlerSocket plugin can be started here.
fn available() -> Result<(), TargetError> {
    mariadb::available()?;
    match plugin_path() {
        Some(_) => Ok(()),
        None => Err(TargetError::Server("MariaDB's HandlerSocket plugin (handlersocket.so) is not installed; install it with `apt-get install mariadb-server`".into())),
    }
}

/// Opens connections to the write port: authenticates and opens the two
/// indexes of `bakeoff.kv` (index ids belong to the connection, so every
/// reconnection does it again).
pub struct HsConnector {
    addr: SocketAddr,
    secret: Option<Vec<u8>>,
}

impl Connector for HsConnector {
    fn connect(&self, within: Duration) -> std::io::Result<bakeoff_core::driver::Connected> {
        let mut s = crate::admin::connect_within(self.addr, "handlersocket", within)?;
        let (setup, replies) = setup_requests(self.secret.as_deref(), "bakeoff", "kv");
        s.write_all(&setup)?;
        let mut buf = Vec::with_capacity(256);
        let mut chunk = [0u8; 256];
        let mut answered = 0;
        while answered < replies {
            match parse_setup_reply(&buf) {
                SetupReply::Incomplete => {
                    let n = s.read(&mut chunk)?;
                    if n == 0 {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!(
                                "handlersocket at {} closed the connection during set-up",
                                self.addr
                            ),
                        ));
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                SetupReply::Ok { len } => {
                    buf.drain(..len);
                    answered += 1;
                }
                SetupReply::Failed {
                    code, start, end, ..
                } => {
                    let message = String::from_utf8_lossy(&buf[start..end]).into_owned();
                    let (kind, text) = if buf[start..end] == *UNAUTH {
                        (
                            std::io::ErrorKind::PermissionDenied,
                            format!("handlersocket at {} refused the secret (unauth); give the write port's secret as handlersocket://:SECRET@host:port", self.addr),
                        )
                    } else {
                        (
                            std::io::ErrorKind::Other,
                            format!("handlersocket at {} cannot open bakeoff.kv: error {code} ({message}); the table must exist with columns k and v", self.addr),
                        )
                    };
                    return Err(std::io::Error::new(kind, text));
                }
                SetupReply::Invalid => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "{} does not speak HandlerSocket; is it the plugin's write port?",
                            self.addr
                        ),
                    ))
                }
            }
        }
        s.set_read_timeout(None)?;
        s.set_write_timeout(None)?;
        Ok(s.into())
    }
}

/// A secret nobody else knows, for one managed server.
fn fresh_secret() -> String {
    let mut bytes = [0u8; 12];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_err()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes[..8].copy_from_slice(&((t as u64) ^ u64::from(std::process::id())).to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Starts mariadbd with the plugin: `secret` guards both of its ports.
/// Returns the server, where it takes SQL and the plugin's write port.
fn start_with(
    settings: &HsSettings,
    secret: &str,
    limits: bakeoff_servers::Limits,
    lazy_disk: bool,
) -> Result<(ManagedServer, mariadb::Dsn, SocketAddr), TargetError> {
    let plugin = plugin_path().ok_or_else(|| available().unwrap_err())?;
    // The plugin's two ports, picked with the server's own (again if that
    // pick is retried).
    let ports = Cell::new((0u16, 0u16));
    let extra = |_: &Path| {
        let pick = || bakeoff_servers::free_port().unwrap_or(0);
        let (read, write) = (pick(), pick());
        ports.set((read, write));
        vec![
            "--plugin-maturity=beta".to_string(),
            format!(
                "--plugin-dir={}",
                plugin.parent().unwrap_or(Path::new("/")).display()
            ),
            "--plugin-load-add=handlersocket.so".into(),
            "--handlersocket_address=127.0.0.1".into(),
            format!("--handlersocket_port={read}"),
            format!("--handlersocket_port_wr={write}"),
            format!("--handlersocket_threads_wr={}", settings.threads_wr),
            format!("--handlersocket_plain_secret_wr={secret}"),
            // The read port is not used; it gets the secret too, so nothing
            // else on this machine reads the data unasked.
            format!("--handlersocket_plain_secret={secret}"),
        ]
    };
    let ready = |_: SocketAddr| {
        TcpStream::connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], ports.get().1)),
            Duration::from_millis(200),
        )
        .is_ok()
    };
    let (server, dsn) =
        mariadb::start_managed(&settings.server, &extra, &ready, limits, lazy_disk)?;
    let write_port = ports.get().1;
    if bakeoff_servers::listens_on(server.pid, write_port) == Some(false) {
        return Err(TargetError::Server(format!(
            "HandlerSocket's port {write_port} was taken by another process while mariadbd started; run again"
        )));
    }
    Ok((server, dsn, SocketAddr::from(([127, 0, 0, 1], write_port))))
}

/// Starts a MariaDB server with the plugin and the table `bakeoff.kv`, its
/// write port guarded by `secret`, for tests and external use: returns the
/// server (stopped when dropped) and the write port's address.
pub fn start(
    table: Option<&toml::Table>,
    secret: &str,
) -> Result<(ManagedServer, SocketAddr), TargetError> {
    let settings = HsSettings::parse(table)?;
    let (server, dsn, addr) =
        start_with(&settings, secret, bakeoff_servers::Limits::default(), false)?;
    crate::async_target::block(async move {
        let mut c = mariadb::connect(&dsn, None).await?;
        mariadb::create_kv(&mut c).await
    })?;
    Ok((server, addr))
}

/// HandlerSocket over a MariaDB server, ready for one run.
pub struct HsTarget {
    // Field order is drop order: the driver goes before the server stops.
    driver: CodecDriver<HandlerSocketCodec>,
    record: TargetRecord,
    /// SQL access to the same server (managed mode): counters, row count.
    sql: Option<mariadb::Dsn>,
    /// Index reads bakeoff's own `SELECT COUNT(*)` made (InnoDB counts
    /// with a few), taken out of `Handler_read_key`.
    own_reads: Cell<u64>,
    /// The link relay the load goes through, if any.
    relay: Option<crate::link::Relay>,
    server: Option<RunningServer>,
}

/// The MariaDB counters HandlerSocket's work moves.
const HANDLER_COUNTERS: [&str; 3] = ["Handler_read_key", "Handler_update", "Handler_write"];

/// How MariaDB's handler counters add up to HandlerSocket requests
/// (measured: a find, and the lookup of an update, a delete or a set's
/// update, is one index read; an insert, declined or not, one row write;
/// an update that found its row, one row update).
const RULES: &[CounterRule] = &[CounterRule {
    what: "index lookups: finds, updates, deletes, sets, scans (Handler_read_key)",
    counters: &["Handler_read_key"],
    kinds: &[
        OpKind::Get,
        OpKind::Update,
        OpKind::Delete,
        OpKind::Set,
        OpKind::Scan,
    ],
}];

/// The checks of `sent` against the counters' change: [`RULES`], and the
/// row writes, which depend on what each update found. A set is an update
/// and, when that found no row, an insert (its follow-up): the sets that
/// found their row, and the updates that did, are row updates; the
/// follow-ups are row inserts.
fn handler_checks(before: &Counters, after: &Counters, sent: &Sent) -> Vec<CounterCheck> {
    let delta = |k: &str| {
        after
            .get(k)
            .copied()
            .unwrap_or(0)
            .saturating_sub(before.get(k).copied().unwrap_or(0))
    };
    let (set, update) = (OpKind::Set as usize, OpKind::Update as usize);
    let inserts = sent.follow_ups[set];
    let updated = sent.requests[set].saturating_sub(inserts)
        + sent.requests[update].saturating_sub(sent.misses[update]);
    let mut checks = compare_counters(RULES, before, after, sent);
    checks.extend(
        [
            (
                "row updates: sets and updates that found their row (Handler_update)",
                updated,
                "Handler_update",
            ),
            (
                "row inserts: sets whose update found no row (Handler_write)",
                inserts,
                "Handler_write",
            ),
        ]
        .into_iter()
        .map(|(what, bakeoff, counter)| CounterCheck {
            what: what.into(),
            bakeoff,
            target: delta(counter),
        })
        .filter(|c| c.bakeoff > 0 || c.target > 0),
    );
    checks
}

impl Target for HsTarget {
    fn server_time(&self) -> Observed<'_, dyn ServerTime + '_> {
        Err(Some("HandlerSocket keeps no time per request"))
    }

    fn background_work(&self) -> Observed<'_, dyn BackgroundWork + '_> {
        Err(Some(crate::mariadb::INNODB_NOT_READ))
    }

    fn driver(&self) -> &dyn bakeoff_core::driver::Driver {
        &self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    fn counters(&self) -> Option<Counters> {
        let mut c = mariadb::status_counters(self.sql.as_ref()?, &HANDLER_COUNTERS)?;
        if let Some(reads) = c.get_mut("Handler_read_key") {
            *reads = reads.saturating_sub(self.own_reads.get());
        }
        Some(c)
    }

    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &Sent,
    ) -> Vec<CounterCheck> {
        handler_checks(before, after, sent)
    }

    fn record_count(&self) -> Option<u64> {
        let sql = self.sql.as_ref()?;
        let reads = |c: Option<Counters>| c.and_then(|c| c.get("Handler_read_key").copied());
        let before = reads(mariadb::status_counters(sql, &HANDLER_COUNTERS));
        let n = mariadb::count_rows(sql, "kv");
        let after = reads(mariadb::status_counters(sql, &HANDLER_COUNTERS));
        if let (Some(b), Some(a)) = (before, after) {
            self.own_reads
                .set(self.own_reads.get() + a.saturating_sub(b));
        }
        n
    }

    crate::running::one_server_methods!();
}

/// What `handlersocket` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "handlersocket",
    summary: "MariaDB's HandlerSocket plugin: InnoDB table kv by primary key, no SQL (pipelined, tab-separated protocol)",
    package: "mariadb-server",
    reach: crate::kind::Reach::Server {
        program: "mariadbd",
        scheme: "handlersocket",
        url_options: &[],
        credentials: true,
        topologies: &[],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SCAN,
        pipelining: true,
        batch_load: false,
        requests: &[],
        no_scan: "HandlerSocket scans InnoDB's primary key with `>=` and a limit",
    },
    in_default_comparison: true,
    settings: crate::mariadb::HANDLERSOCKET_SETTINGS,
    durability: crate::mariadb::DURABILITY,
    provokes: &[],
};

/// `handlersocket`, as the registry knows it.
pub struct HandlerSocket;

impl crate::kind::TargetKind for HandlerSocket {
    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn available(&self) -> Result<(), TargetError> {
        available()
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        HsSettings::parse(settings).map(|_| ())
    }

    /// Checks the target can be used: a fixed port free, or the endpoint
    /// answering and accepting the secret.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        let settings = HsSettings::parse(plan.settings_of(spec))?;
        match &spec.endpoint {
            Endpoint::Managed => {
                crate::settings::fixed_port_free("handlersocket", settings.server.port)
            }
            Endpoint::External { host, port, .. } => {
                let connector = HsConnector {
                    addr: resolve(host, *port)?,
                    secret: spec.password.as_ref().map(|p| p.as_bytes().to_vec()),
                };
                connector
                    .connect(crate::admin::ADMIN_CONNECT_WITHIN)
                    .map(|_| ())
                    .map_err(TargetError::cause)
            }
        }
    }

    /// Opens the target: starts mariadbd with the plugin, or uses the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        let settings = HsSettings::parse(plan.settings_of(spec))?;
        let mut recorded = BTreeMap::new();
        let (server, sql, addr, secret, endpoint, version) = match &spec.endpoint {
            Endpoint::External {
                host, port, url, ..
            } => (
                None,
                None,
                resolve(host, *port)?,
                spec.password.clone(),
                Some(url.clone()),
                "HandlerSocket (external; server version unknown)".to_string(),
            ),
            Endpoint::Managed => {
                let secret = fresh_secret();
                let (server, dsn, addr) = start_with(
                    &settings,
                    &secret,
                    bakeoff_servers::Limits::of(workload),
                    workload.cuts_power(),
                )?;
                let command_line = format!("{} {}", server.binary.display(), server.args.join(" "))
                    .replace(&secret, "***");
                recorded.insert("command_line".to_string(), command_line);
                recorded.insert("threads_wr".to_string(), settings.threads_wr.to_string());
                (
                    Some(server),
                    Some(dsn),
                    addr,
                    Some(secret),
                    None,
                    String::new(),
                )
            }
        };
        let version = match &sql {
            Some(dsn) => {
                // The table is MariaDB's, made (and emptied before a load) by SQL.
                crate::async_target::block(mariadb::prepare_table(dsn, workload))?;
                let (v, settings) = <mariadb::Mariadb as crate::sql_server::SqlServer>::facts(dsn)?;
                recorded.extend(settings);
                format!("MariaDB {v} HandlerSocket plugin")
            }
            None => version,
        };
        let dial = crate::link::dial(workload, addr)?;
        let driver = CodecDriver::new(
            HandlerSocketCodec,
            Box::new(HsConnector {
                addr: dial.addr,
                secret: secret.map(String::into_bytes),
            }),
        );
        let record = TargetRecord::server(
            &spec.name,
            server.is_some(),
            endpoint,
            version,
            recorded,
            |k| driver.codec.describe(k),
        );
        Ok(Box::new(HsTarget {
            driver,
            record,
            sql,
            own_reads: Cell::new(0),
            relay: dial.relay,
            server: server.map(RunningServer::new),
        }))
    }
}
