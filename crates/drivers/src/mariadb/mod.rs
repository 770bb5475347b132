//! The `mariadb` target (also MySQL): table `bakeoff.kv(k VARCHAR(32)
//! PRIMARY KEY, v LONGBLOB)` on InnoDB (records of several fields: table
//! `bakeoff.usertable`, a column per field) through mysql_async, prepared
//! statements, one connection per client.
//!
//! Managed: `mariadb-install-db` and `mariadbd` from Debian's mariadb-server
//! in a temporary directory, on a free loopback port and a private socket,
//! with the settings of `[servers.mariadb]`. The server is private to the
//! run, so it skips the grant tables (no accounts to set up).
//! External: `mariadb://user:password@host:port` (a MySQL server too).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bakeoff_core::driver::{Carrier, Connector, Driver, Job, JobKind};
use bakeoff_core::error::ConnectError;
use bakeoff_core::error::TargetError;
use bakeoff_core::keys::{Key, KeyNaming};
use bakeoff_core::plan::{Endpoint, Plan, RequestMode, TargetSpec, Topology, Workload};
use bakeoff_core::profile::{Profile, Query, RecordKind};
use bakeoff_core::recorder::ErrorKind;
use bakeoff_core::session::{io_error_kind, Session, SessionError, SessionResult};
use bakeoff_core::target::{BackgroundLook, CommandTime, CounterRule, Counters, Target};
use bakeoff_core::workload::OpKind;
use bakeoff_servers::{Limits, ManagedServer, ServerCommand, ServerError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Statement, Value};

use crate::admin::{resolve, Address};
use crate::async_target::{
    block, block_quick, profile_columns, sessions_reached, AsyncDriver, Reach,
};
use crate::codec::mysql::{MysqlCodec, STATEMENTS};
use crate::codec::mysql_fields::{table as fields_table, MysqlFieldsCodec};
use crate::kind::OpenResult;
use crate::settings::{durable, Durability, DurableRule, Kind, Setting, Settings, PORT};
use crate::sql::{batch_insert, search_params, search_statements, SCAN};
use crate::sql_server::{Node, Replication, ServerFacts, SqlServer};
use bakeoff_core::durability::DurableTo;

/// What `[servers.mariadb]` and `[servers.handlersocket]` share: the
/// server's own settings.
mod wire;
use wire::MariaConnector;

const BUFFER_POOL: Setting = Setting {
    name: "innodb_buffer_pool_size",
    kind: Kind::Bytes,
    default: None,
    help: "InnoDB's cache of data and indexes (default: MariaDB's, 128mb)",
};
const FLUSH_LOG: Setting = Setting {
    name: "innodb_flush_log_at_trx_commit",
    kind: Kind::Choice(&["0", "1", "2"]),
    default: None,
    help: "1: fsync the log at every commit; 2: write it, fsync once a second; 0: neither",
};
const BINLOG: Setting = Setting {
    name: "binlog",
    kind: Kind::Flag,
    default: Some("false"),
    help:
        "write the binary log (log_bin), as a server with replicas or point-in-time recovery does",
};
const SYNC_BINLOG: Setting = Setting {
    name: "sync_binlog",
    kind: Kind::Count,
    default: None,
    help: "with binlog = true: fsync the binary log every N commits (1: every commit; 0: when the OS writes it)",
};
const MAX_CONNECTIONS: Setting = Setting {
    name: "max_connections",
    kind: Kind::Count,
    default: Some("1000"),
    help: "connection limit (MariaDB raises values below 10 to 10)",
};

const PERFORMANCE_SCHEMA: Setting = Setting {
    name: "performance_schema",
    kind: Kind::Flag,
    default: Some("false"),
    help: "time every statement in performance_schema, so that the report sets the server's time beside the client's (off by default, as MariaDB ships it: see docs/trust.md for what it costs here)",
};

/// `[servers.mariadb]`.
pub const SETTINGS: &[Setting] = &[
    BUFFER_POOL,
    FLUSH_LOG,
    BINLOG,
    SYNC_BINLOG,
    MAX_CONNECTIONS,
    PERFORMANCE_SCHEMA,
    PORT,
    Setting {
        name: "semisync",
        kind: Kind::Flag,
        default: Some("false"),
        help: "with --topology primary-replica: semi-synchronous replication, a commit waits until the replica has received its events (not applied them; after 10 s without an answer the primary goes on alone, counted in Rpl_semi_sync_master_no_tx)",
    },
];

/// What InnoDB's log flushing (and, with a binary log, its syncing) lets
/// acknowledged writes survive: flush_log_at_trx_commit 1 fsyncs at every
/// commit (MariaDB's default), 2 writes to the kernel, 0 leaves the log in
/// memory for up to a second. With a binary log, a commit is only as
/// durable as the binlog: recovery rolls back what it does not hold.
/// Why HandlerSocket's background work is not on the timeline.
pub(crate) const INNODB_NOT_READ: &str = "none read: bakeoff looks at InnoDB's page flushing and checkpoint age on target mariadb, not yet through HandlerSocket";

/// The status InnoDB's background work is read from.
const INNODB_BACKGROUND: &[&str] = &[
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_buffer_pool_pages_dirty",
    "Innodb_checkpoint_age",
    "Innodb_checkpoint_max_age",
    "Innodb_history_list_length",
];

/// A checkpoint age past this share of its maximum: InnoDB flushes hard,
/// and writes wait once it reaches the maximum.
const REDO_NEAR_FULL: f64 = 0.75;

/// InnoDB's background work at one look: pages written by its flushing
/// since the look before, and a redo log near full.
fn innodb_look(flushed: u64, dirty: u64, age: u64, max_age: u64, history: u64) -> BackgroundLook {
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    let share = if max_age > 0 {
        age as f64 / max_age as f64
    } else {
        0.0
    };
    let mut look = BackgroundLook::default();
    if flushed > 0 {
        look.running.push((
            "page flush",
            format!(
                "{flushed} pages written since the last look, {dirty} dirty; checkpoint age {:.1} MB of {:.1} MB ({:.0} %); {history} undo records to purge",
                mb(age),
                mb(max_age),
                share * 100.0
            ),
        ));
    }
    if share >= REDO_NEAR_FULL {
        look.running.push((
            "redo log near full",
            format!(
                "checkpoint age {:.0} % of its maximum: InnoDB flushes hard, and writes wait at the maximum",
                share * 100.0
            ),
        ));
    }
    look
}

pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("innodb_flush_log_at_trx_commit", "0", DurableTo::MemoryOnly),
        durable(
            "innodb_flush_log_at_trx_commit",
            "2",
            DurableTo::ProcessCrash,
        ),
        durable("innodb_flush_log_at_trx_commit", "1", DurableTo::PowerCut),
        durable("innodb_flush_log_at_trx_commit", "", DurableTo::PowerCut),
        DurableRule {
            when: Some(("binlog", "true")),
            ..durable("sync_binlog", "1", DurableTo::PowerCut)
        },
        DurableRule {
            when: Some(("binlog", "true")),
            ..durable("sync_binlog", "*", DurableTo::ProcessCrash)
        },
        DurableRule {
            when: Some(("binlog", "true")),
            ..durable("sync_binlog", "", DurableTo::ProcessCrash)
        },
    ],
};

/// How long a semi-synchronous primary waits for the replica's answer
/// before it goes on without, ms.
const SEMISYNC_TIMEOUT_MS: u64 = 10_000;

/// `[servers.handlersocket]`: the server's settings and the plugin's.
pub const HANDLERSOCKET_SETTINGS: &[Setting] = &[
    BUFFER_POOL,
    FLUSH_LOG,
    BINLOG,
    SYNC_BINLOG,
    MAX_CONNECTIONS,
    PORT,
    Setting {
        name: "threads_wr",
        kind: Kind::Count,
        default: Some("4"),
        help: "threads serving HandlerSocket's write port, which carries every operation (the plugin's own default is 1)",
    },
];

/// The settings of a managed mariadbd (`[servers.mariadb]`, and the
/// server part of `[servers.handlersocket]`).
#[derive(Clone)]
pub(crate) struct MariaSettings {
    buffer_pool: Option<u64>,
    flush_log_at_trx_commit: Option<String>,
    binlog: bool,
    sync_binlog: Option<u64>,
    max_connections: u64,
    performance_schema: bool,
    /// Fixed SQL port, if the preset names one.
    pub(crate) port: Option<u16>,
}

impl MariaSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(MariaSettings {
            // HandlerSocket's requests are not statements: its own.
            performance_schema: s.flag("performance_schema")?.unwrap_or_default(),
            ..Self::read(&s)?
        })
    }

    /// Reads the server's keys from `s`, leaving others to the caller.
    pub(crate) fn read(s: &Settings) -> Result<Self, TargetError> {
        let binlog = s.flag("binlog")?.unwrap_or_default();
        let sync_binlog = s.count("sync_binlog")?;
        if sync_binlog.is_some() && !binlog {
            return Err(TargetError::Settings(
                "sync_binlog is for the binary log, which is off; add binlog = true (in a variant: mariadb[binlog=true,sync_binlog=1])".into(),
            ));
        }
        Ok(MariaSettings {
            buffer_pool: s.bytes("innodb_buffer_pool_size")?,
            flush_log_at_trx_commit: s.choice("innodb_flush_log_at_trx_commit")?,
            binlog,
            sync_binlog,
            max_connections: s.count("max_connections")?.unwrap_or_default(),
            performance_schema: false,
            port: s.port("port")?,
        })
    }

    fn args(&self, port: u16, dir: &Path) -> Vec<String> {
        let mut a = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", dir.join("data").display()),
            format!("--port={port}"),
            "--bind-address=127.0.0.1".into(),
            format!("--socket={}", dir.join("mariadb.sock").display()),
            format!("--pid-file={}", dir.join("mariadb.pid").display()),
            // A private folder for temporary tables: in the shared /tmp,
            // servers started side by side were seen to lose each other's
            // files ("Could not remove temporary table").
            format!("--tmpdir={}", dir.join("tmp").display()),
            "--user=root".into(),
            "--skip-grant-tables".into(),
            "--skip-name-resolve".into(),
            format!("--max-connections={}", self.max_connections),
        ];
        if let Some(b) = self.buffer_pool {
            a.push(format!("--innodb-buffer-pool-size={b}"));
        }
        if let Some(f) = &self.flush_log_at_trx_commit {
            a.push(format!("--innodb-flush-log-at-trx-commit={f}"));
        }
        if self.binlog {
            a.push(format!(
                "--log-bin={}",
                dir.join("data").join("binlog").display()
            ));
            a.push("--server-id=1".into());
        }
        if let Some(n) = self.sync_binlog {
            a.push(format!("--sync-binlog={n}"));
        }
        if self.performance_schema {
            a.push("--performance-schema=ON".into());
            // Only the statements' summaries are read: no history, no
            // digests (binary-protocol executes have none), no text, which
            // would take some 150 MB of memory for nothing.
            for size in [
                "events-statements-history-long-size",
                "events-statements-history-size",
                "events-stages-history-long-size",
                "events-stages-history-size",
                "events-waits-history-long-size",
                "events-waits-history-size",
                "events-transactions-history-long-size",
                "events-transactions-history-size",
                "digests-size",
                "max-digest-length",
                "max-sql-text-length",
                "session-connect-attrs-size",
            ] {
                a.push(format!("--performance-schema-{size}=0"));
            }
        }
        a
    }
}

/// Where a MariaDB server takes SQL connections.
#[derive(Clone)]
pub(crate) struct Dsn {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    /// The server's Unix socket (`?socket=PATH`, as MySQL clients take
    /// it), when the connections go there rather than to host:port.
    socket: Option<std::path::PathBuf>,
}

impl Dsn {
    fn opts(&self, db: Option<&str>) -> Opts {
        OptsBuilder::default()
            .ip_or_hostname(self.host.clone())
            .tcp_port(self.port)
            .socket(self.socket.as_ref().map(|p| p.display().to_string()))
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .db_name(db.map(|d| d.to_string()))
            .prefer_socket(false)
            .into()
    }

    /// Where the codec's connections go: the socket, or the host resolved.
    fn address(&self) -> Result<Address, TargetError> {
        match &self.socket {
            Some(path) => Ok(Address::Unix(path.clone())),
            None => resolve(&self.host, self.port).map(Address::Tcp),
        }
    }

    fn describe(&self) -> String {
        match &self.socket {
            Some(path) => format!("mariadb at socket {} (user {})", path.display(), self.user),
            None => format!(
                "mariadb at {}:{} (user {})",
                self.host, self.port, self.user
            ),
        }
    }
}

/// Opens an SQL connection (to database `db`), within 5 s.
pub(crate) async fn connect(dsn: &Dsn, db: Option<&str>) -> Result<Conn, ConnectError> {
    let fut = Conn::new(dsn.opts(db));
    match tokio::time::timeout(Duration::from_secs(5), fut).await {
        Err(_) => Err(ConnectError::new(
            ErrorKind::Timeout,
            format!(
                "cannot connect to {}: no handshake within 5 s; is the server running and answering, and is it a MariaDB or MySQL server?",
                dsn.describe()
            ),
        )),
        Ok(Err(e)) => {
            let kind = connect_kind(&e);
            let text = e.to_string();
            let message = if matches!(&e, mysql_async::Error::Server(s) if s.code == ER_ACCESS_DENIED)
            {
                format!(
                    "{} refused the credentials: {text}; check the user and password in the URL",
                    dsn.describe()
                )
            } else {
                format!("cannot connect to {}: {text}; is the server running, are host and port right, and is it a MariaDB or MySQL server?", dsn.describe())
            };
            Err(ConnectError::new(kind, message))
        }
        Ok(Ok(c)) => Ok(c),
    }
}

/// MariaDB's "Access denied for user".
const ER_ACCESS_DENIED: u16 = 1045;
/// MariaDB's "Too many connections" (and its per-user variant).
const ER_CON_COUNT: [u16; 2] = [1040, 1203];

/// How a failed connection attempt counts: the server turning it away for
/// too many connections is a refusal; socket errors by their kind.
fn connect_kind(e: &mysql_async::Error) -> ErrorKind {
    match e {
        mysql_async::Error::Server(s) if ER_CON_COUNT.contains(&s.code) => ErrorKind::Refused,
        mysql_async::Error::Server(_) => ErrorKind::ServerError,
        mysql_async::Error::Io(mysql_async::IoError::Io(io)) => io_error_kind(io),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed) => ErrorKind::Reset,
        _ => ErrorKind::ServerError,
    }
}

use crate::codec::mysql::{DEL, GET, PUT};
// ASCII with binary collation: the same comparisons as the other targets.
const PROFILE_TABLE: &str = "CREATE TABLE IF NOT EXISTS bakeoff.profile (id BIGINT PRIMARY KEY, \
     name VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     sex CHAR(1) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     province CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     city CHAR(2) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     payload LONGBLOB NOT NULL) ENGINE=InnoDB";
const PROFILE_PUT: &str = "INSERT INTO profile (id, name, sex, province, city, payload) \
     VALUES (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), sex = VALUES(sex), \
     province = VALUES(province), city = VALUES(city), payload = VALUES(payload)";

/// The steps of 000-mysql-phases between connect and close.
const PHASE_STEPS: &[&str] = &["select_db", "set_charset", "update", "select", "insert"];

/// `bytes` as hexadecimal digits (an SQL `X'…'` literal).
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// The keys of the 10 records from `key` (wrapping at `records`), quoted
/// for an `IN (…)` list.
fn ten_keys(key: u64, records: u64, naming: KeyNaming) -> String {
    (0..10)
        .map(|i| {
            let k = naming.key((key + i) % records.max(1));
            format!("'{}'", String::from_utf8_lossy(&k))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One client's connection and statements.
pub struct MariaSession {
    conn: Conn,
    /// Profile upsert and the four searches (profile workloads only).
    profile: Option<(Statement, [Statement; 4])>,
    /// Multi-row upserts by row count (batched loads).
    batches: std::collections::HashMap<usize, Statement>,
    /// Records of several fields: the statements on table usertable.
    fields: Option<FieldsSql>,
}

/// The statements on table usertable, of a column per field (mysql_async
/// prepares each once per connection, by its text).
struct FieldsSql {
    get: String,
    put: String,
    del: String,
    scan: String,
    /// Each field's one-column `UPDATE`.
    put_field: Vec<String>,
}

impl FieldsSql {
    fn new(fields: usize) -> Self {
        let t = fields_table(fields);
        FieldsSql {
            get: t.get(),
            put: t.put(),
            del: t.del(),
            scan: t.scan(),
            put_field: (0..fields).map(|f| t.put_field(f)).collect(),
        }
    }
}

/// A row's columns from `from` on, end to end (a NULL adds nothing); an
/// error names a column that is not bytes.
fn columns_end_to_end(
    row: &mysql_async::Row,
    from: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for i in from..row.len() {
        match row.as_ref(i) {
            Some(Value::Bytes(b)) => out.extend_from_slice(b),
            Some(Value::NULL) => {}
            other => return Err(format!("column {i} of a row is not bytes: {other:?}")),
        }
    }
    Ok(())
}

impl MariaSession {
    /// Statements are prepared on first use (mysql_async caches them per
    /// connection), so a connection per request prepares only what it uses.
    async fn open(
        dsn: &Dsn,
        profile: bool,
        phased: bool,
        fields: usize,
    ) -> Result<Self, ConnectError> {
        // A phased request selects its database itself, as a step.
        let mut conn = connect(dsn, (!phased).then_some("bakeoff")).await?;
        let e = |r: Result<Statement, mysql_async::Error>| {
            r.map_err(|e| ConnectError::new(connect_kind(&e), e.to_string()))
        };
        let profile = if profile {
            let upsert = e(conn.prep(PROFILE_PUT).await)?;
            let [a, b, c, d] = search_statements(|_| "?".into());
            Some((
                upsert,
                [
                    e(conn.prep(a).await)?,
                    e(conn.prep(b).await)?,
                    e(conn.prep(c).await)?,
                    e(conn.prep(d).await)?,
                ],
            ))
        } else {
            None
        };
        Ok(MariaSession {
            conn,
            profile,
            batches: Default::default(),
            fields: (fields > 1).then(|| FieldsSql::new(fields)),
        })
    }
}

impl Session for MariaSession {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        out.clear();
        if let Some(sql) = &self.fields {
            let row: Option<mysql_async::Row> =
                self.conn.exec_first(&sql.get, (key,)).await.map_err(fail)?;
            let Some(row) = row else {
                return Ok(false);
            };
            columns_end_to_end(&row, 0, out).map_err(SessionError::Server)?;
            return Ok(true);
        }
        let row: Option<Vec<u8>> = self.conn.exec_first(GET, (key,)).await.map_err(fail)?;
        match row {
            Some(v) => {
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        let Some(sql) = &self.fields else {
            return self.conn.exec_drop(PUT, (key, value)).await.map_err(fail);
        };
        let fields = sql.put_field.len();
        let mut params = vec![Value::Bytes(key.to_vec())];
        let len = (value.len() / fields).max(1);
        params.extend(value.chunks(len).map(|f| Value::Bytes(f.to_vec())));
        self.conn.exec_drop(&sql.put, params).await.map_err(fail)
    }

    fn keeps_fields(&self) -> bool {
        self.fields.is_some()
    }

    async fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> SessionResult<()> {
        let sql = self
            .fields
            .as_ref()
            .and_then(|sql| sql.put_field.get(field))
            .ok_or_else(|| SessionError::Server(format!("no field {field}")))?;
        // `SET fieldJ = ? WHERE k = ?`: the value binds first.
        self.conn.exec_drop(sql, (value, key)).await.map_err(fail)
    }

    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        let sql = self.fields.as_ref().map_or(DEL, |sql| &sql.del);
        self.conn.exec_drop(sql, (key,)).await.map_err(fail)?;
        Ok(self.conn.affected_rows() > 0)
    }

    async fn put_profile(
        &mut self,
        id: u64,
        _key: &[u8],
        p: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        let (upsert, _) = self
            .profile
            .as_ref()
            .ok_or_else(|| SessionError::Server("no profile statements".into()))?;
        let [name, sex, province, city] = profile_columns(p);
        self.conn
            .exec_drop(upsert, (id, name, sex, province, city, payload))
            .await
            .map_err(fail)
    }

    async fn put_batch(&mut self, keys: &[Key], values: &[&[u8]]) -> SessionResult<()> {
        let n = keys.len();
        if !self.batches.contains_key(&n) {
            let sql = batch_insert(n, |_| "?".into(), crate::codec::mysql::BATCH_TAIL);
            let st = self.conn.prep(sql).await.map_err(fail)?;
            self.batches.insert(n, st);
        }
        let mut params = Vec::with_capacity(2 * n);
        for (k, v) in keys.iter().zip(values) {
            params.push(mysql_async::Value::Bytes(k.to_vec()));
            params.push(mysql_async::Value::Bytes(v.to_vec()));
        }
        let st = self.batches[&n].clone();
        self.conn.exec_drop(&st, params).await.map_err(fail)
    }

    fn phase_steps(&self) -> &'static [&'static str] {
        PHASE_STEPS
    }

    async fn phase_step(
        &mut self,
        step: usize,
        key: u64,
        records: u64,
        naming: KeyNaming,
        value: &[u8],
    ) -> SessionResult<u64> {
        // Plain text queries, as the PHP client of seed 000 sent them.
        let c = &mut self.conn;
        match PHASE_STEPS[step] {
            "select_db" => c.query_drop("USE bakeoff").await.map(|()| 0),
            "set_charset" => c.query_drop("SET NAMES utf8mb4").await.map(|()| 0),
            "update" => {
                let sql = format!(
                    "UPDATE kv SET v = X'{}' WHERE k IN ({})",
                    hex(value),
                    ten_keys(key, records, naming)
                );
                c.query_drop(sql).await.map(|()| c.affected_rows())
            }
            "select" => {
                // A full scan, as in the seed, whose table had no index on
                // what it searched by: the primary key is not used.
                let sql = format!(
                    "SELECT k, v FROM kv IGNORE INDEX (PRIMARY) WHERE k IN ({})",
                    ten_keys(key, records, naming)
                );
                c.query::<(Vec<u8>, Vec<u8>), _>(sql)
                    .await
                    .map(|rows| rows.len() as u64)
            }
            _ => {
                let k = naming.key(key);
                let sql = format!(
                    "INSERT INTO requests (k, v) VALUES ('{}', X'{}')",
                    String::from_utf8_lossy(&k),
                    hex(value)
                );
                c.query_drop(sql).await.map(|()| 1)
            }
        }
        .map_err(fail)
    }

    async fn close(self) -> SessionResult<()> {
        self.conn.disconnect().await.map_err(fail)
    }

    async fn search(&mut self, q: &Query) -> SessionResult<u64> {
        let (_, searches) = self
            .profile
            .as_ref()
            .ok_or_else(|| SessionError::Server("no profile statements".into()))?;
        let (which, params) = search_params(q);
        let ids: Vec<u64> = self
            .conn
            .exec(&searches[which], params)
            .await
            .map_err(fail)?;
        Ok(ids.len() as u64)
    }

    async fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        out.clear();
        // Rows as they come, their bytes taken as they are: mysql_async's
        // conversion to a tuple panics on a value of another type.
        // A key, then the value or each field.
        let sql = self.fields.as_ref().map_or(SCAN, |sql| &sql.scan);
        let mut record = Vec::new();
        let rows = self
            .conn
            .exec_fold(
                sql,
                (start, limit),
                Ok(0u64),
                |n: Result<u64, String>, row: mysql_async::Row| {
                    let n = n?;
                    let Some(Value::Bytes(k)) = row.as_ref(0) else {
                        return Err(format!("a scan's row has no key: {row:?}"));
                    };
                    record.clear();
                    columns_end_to_end(&row, 1, &mut record)?;
                    bakeoff_core::scan::push_row(out, k, &record);
                    Ok(n + 1)
                },
            )
            .await
            .map_err(fail)?;
        rows.map_err(SessionError::Server)
    }
}

/// A server error leaves the connection usable; anything else (closed,
/// reset, I/O, protocol) loses it.
fn fail(e: mysql_async::Error) -> SessionError {
    match e {
        mysql_async::Error::Server(_) => SessionError::Server(e.to_string()),
        e => SessionError::Lost(e.to_string()),
    }
}

/// The driver: the key-value operations through the wire codec on the
/// network loop; searches, scans, profile rows, a connection per request,
/// phased requests and batched loads through mysql_async sessions on the
/// async loop.
pub struct MariaDriver {
    reach: Reach<Dsn>,
    profile: bool,
    /// Measured requests are the phased script (000-mysql-phases).
    phased: bool,
    /// Fields per record: one is table kv's value; several, the columns
    /// of table usertable.
    fields: usize,
    /// The same servers as `reach`, through [`MysqlCodec`] (or
    /// [`MysqlFieldsCodec`]).
    wire: Box<dyn Driver>,
    /// The same servers as `reach`, through mysql_async sessions.
    sessions: Box<dyn Carrier>,
    /// Sessions whose requests are the phased script, for measured
    /// requests when `phased`.
    phased_sessions: Box<dyn Carrier>,
    /// InnoDB's pages flushed at the last look at its background work.
    flushed: std::sync::Mutex<Option<u64>>,
}

impl MariaDriver {
    /// A driver for the servers of `reach` (resolved here for the codec's
    /// connections).
    fn new(
        reach: Reach<Dsn>,
        profile: bool,
        phased: bool,
        fields: usize,
    ) -> Result<Self, TargetError> {
        let connector = |statements: Vec<String>, table| {
            move |dsn: &Dsn| -> Result<Box<dyn Connector>, TargetError> {
                Ok(Box::new(MariaConnector {
                    addr: dsn.address()?,
                    dsn: dsn.clone(),
                    statements: statements.clone(),
                    table,
                }))
            }
        };
        let wire: Box<dyn Driver> = if fields > 1 {
            let codec = MysqlFieldsCodec::new(fields as u32);
            let statements = codec.statements();
            Box::new(reach.codec_driver(codec, connector(statements, "usertable"))?)
        } else {
            let statements = STATEMENTS.map(String::from).to_vec();
            Box::new(reach.codec_driver(MysqlCodec, connector(statements, "kv"))?)
        };
        let sessions_of = |phased: bool| {
            sessions_reached(&reach, move |dsn: Dsn| async move {
                MariaSession::open(&dsn, profile, phased, fields).await
            })
        };
        let (sessions, phased_sessions) = (sessions_of(false), sessions_of(true));
        Ok(MariaDriver {
            reach,
            profile,
            phased,
            fields,
            wire,
            sessions,
            phased_sessions,
            flushed: Default::default(),
        })
    }
}

impl Driver for MariaDriver {
    fn carrier(&self, job: &Job) -> &dyn Carrier {
        // A value, and a batch, must fit one packet (16 MiB).
        use crate::codec::mysql::{batch_len, MAX_PAYLOAD};
        let longest = job.workload.value_size.max();
        let fits = |rows| batch_len(rows, longest) < MAX_PAYLOAD;
        if crate::sql::wire_serves(job, fits) && longest + 1024 < MAX_PAYLOAD {
            self.wire.carrier(job)
        } else if job.kind == JobKind::Measure && job.workload.request == RequestMode::Phases {
            &*self.phased_sessions
        } else {
            &*self.sessions
        }
    }

    fn describe(&self, kind: OpKind) -> String {
        if kind == OpKind::Update && self.phased {
            return "request: connect; USE bakeoff; SET NAMES utf8mb4; UPDATE kv SET v = X'…' WHERE k IN (10 keys); SELECT k, v FROM kv WHERE k IN (10 keys); INSERT INTO requests (k, v) VALUES ('key', X'…'); close".into();
        }
        if kind == OpKind::Scan {
            // Through mysql_async, which caches it per connection.
            let scan = if self.fields > 1 {
                fields_table(self.fields).scan()
            } else {
                SCAN.into()
            };
            format!("{scan} (prepared once per connection)")
        } else if self.profile || kind == OpKind::Search {
            crate::sql::describe(kind, [GET, PUT, DEL], PROFILE_PUT, self.profile)
        } else {
            self.wire.describe(kind)
        }
    }
}

/// Whether `path` (a URL's `?socket=`) is a socket, with what it is
/// instead: a connection to a regular file fails with a bare "connection
/// refused".
fn socket_there(path: &Path) -> Result<(), TargetError> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(m) => Err(TargetError::Server(format!(
            "{} is not a socket (it is a {}); `?socket=` names the server's Unix socket, e.g. /run/mysqld/mysqld.sock",
            path.display(),
            if m.is_dir() { "directory" } else { "regular file" }
        ))),
        Err(e) => Err(TargetError::Server(format!(
            "no socket at {} ({e}); is the server running, and is this the socket it listens on?",
            path.display()
        ))),
    }
}

fn dsn_of(spec: &TargetSpec) -> Option<Dsn> {
    match &spec.endpoint {
        Endpoint::External {
            host,
            port,
            options,
            ..
        } => Some(Dsn {
            host: host.clone(),
            port: *port,
            user: spec.user.clone().unwrap_or_else(|| "root".into()),
            password: spec.password.clone(),
            socket: options.get("socket").map(std::path::PathBuf::from),
        }),
        Endpoint::Managed => None,
    }
}

/// Whether MariaDB can be started here.
pub fn available() -> Result<(), TargetError> {
    for program in ["mariadbd", "mariadb-install-db"] {
        if bakeoff_servers::find_program(program, &["/usr/sbin"]).is_none() {
            return Err(TargetError::Server(format!(
                "`{program}` is not installed; install it with `apt-get install mariadb-server`"
            )));
        }
    }
    Ok(())
}

/// Creates database `bakeoff` and its table `kv`, if absent.
pub(crate) async fn create_kv(c: &mut Conn) -> Result<(), TargetError> {
    let e = |r: Result<(), mysql_async::Error>| r.map_err(TargetError::cause);
    e(c.query_drop("CREATE DATABASE IF NOT EXISTS bakeoff").await)?;
    e(c.query_drop("CREATE TABLE IF NOT EXISTS bakeoff.kv (k VARCHAR(32) PRIMARY KEY, v LONGBLOB NOT NULL) ENGINE=InnoDB").await)
}

/// Creates the workload's table (emptied before a load) and its indexes,
/// and reads the server's version and settings.
pub(crate) async fn prepare_table(
    dsn: &Dsn,
    workload: &Workload,
) -> Result<(String, BTreeMap<String, String>), TargetError> {
    let mut c = connect(dsn, None).await?;
    let e = |r: Result<(), mysql_async::Error>| r.map_err(TargetError::cause);
    create_kv(&mut c).await?;
    if workload.request == RequestMode::Phases {
        // The one-row INSERT of each phased request goes here, not into kv.
        e(c.query_drop("CREATE TABLE IF NOT EXISTS bakeoff.requests (id BIGINT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(32) NOT NULL, v LONGBLOB NOT NULL) ENGINE=InnoDB").await)?;
    }
    if workload.record == RecordKind::Profile {
        e(c.query_drop(PROFILE_TABLE).await)?;
        if workload.empties_before_load() {
            e(c.query_drop("TRUNCATE TABLE bakeoff.profile").await)?;
        }
        // Plain CREATE / DROP INDEX (MySQL has no IF [NOT] EXISTS here):
        // "duplicate key name" and "can't drop" mean it is already so.
        for (create, drop) in [
            (
                "CREATE INDEX profile_sex ON bakeoff.profile (sex)",
                "DROP INDEX profile_sex ON bakeoff.profile",
            ),
            (
                "CREATE INDEX profile_loc ON bakeoff.profile (province, city)",
                "DROP INDEX profile_loc ON bakeoff.profile",
            ),
        ] {
            let sql = if workload.indexes { create } else { drop };
            if let Err(err) = c.query_drop(sql).await {
                let text = err.to_string();
                if !(text.contains("Duplicate key name") || text.contains("check that")) {
                    return Err(TargetError::Server(format!("{sql}: {text}")));
                }
            }
        }
    } else if workload.fields > 1 {
        let t = fields_table(workload.fields as usize);
        e(c.query_drop(t.create()).await)?;
        if workload.empties_before_load() {
            e(c.query_drop("TRUNCATE TABLE bakeoff.usertable").await)?;
        }
    } else if workload.empties_before_load() {
        e(c.query_drop("TRUNCATE TABLE bakeoff.kv").await)?;
    }
    facts(&mut c).await
}

/// The version and settings in force of the server at `dsn`.
async fn server_facts(dsn: &Dsn) -> Result<(String, BTreeMap<String, String>), TargetError> {
    facts(&mut connect(dsn, None).await?).await
}

/// The version and settings in force of the server `c` is connected to.
async fn facts(c: &mut Conn) -> Result<(String, BTreeMap<String, String>), TargetError> {
    let version: Option<String> = c
        .query_first("SELECT VERSION()")
        .await
        .map_err(TargetError::cause)?;
    let mut settings = BTreeMap::new();
    for name in [
        "innodb_buffer_pool_size",
        "innodb_flush_log_at_trx_commit",
        "max_connections",
        "innodb_doublewrite",
        "log_bin",
        "sync_binlog",
        "binlog_format",
        "rpl_semi_sync_master_enabled",
        "rpl_semi_sync_slave_enabled",
    ] {
        let v: Option<String> = c
            .query_first(format!("SELECT @@{name}"))
            .await
            .ok()
            .flatten();
        if let Some(v) = v {
            settings.insert(name.to_string(), v);
        }
    }
    Ok((version.unwrap_or_default(), settings))
}

/// The MariaDB recipe: installs a fresh data directory with
/// mariadb-install-db and starts mariadbd on a free loopback port with
/// `settings` plus `extra` arguments (given the server's folder), ready once
/// it answers SQL and `extra_ready` says so; holds it to the workload's
/// `limits` (memory, CPUs). Returns the server and where it takes SQL.
/// Starts a MariaDB server with the table `bakeoff.kv` and returns it
/// with a connector of the wire codec ([`MysqlCodec`]) to it, for tests of
/// the network loop.
pub fn start_with_kv(
    table: Option<&toml::Table>,
) -> Result<(ManagedServer, Box<dyn Connector>), TargetError> {
    let settings = MariaSettings::parse(table)?;
    let (server, dsn) = start_managed(
        &settings,
        &|_| Vec::new(),
        &|_| true,
        Limits::default(),
        false,
    )?;
    let sql = dsn.clone();
    block(async move {
        let mut c = connect(&sql, None).await?;
        create_kv(&mut c).await
    })?;
    let connector = MariaConnector {
        addr: Address::Tcp(server.addr),
        dsn,
        statements: STATEMENTS.map(String::from).to_vec(),
        table: "kv",
    };
    Ok((server, Box::new(connector)))
}

pub(crate) fn start_managed(
    settings: &MariaSettings,
    extra: &dyn Fn(&Path) -> Vec<String>,
    extra_ready: &dyn Fn(SocketAddr) -> bool,
    limits: Limits,
    lazy_disk: bool,
) -> Result<(ManagedServer, Dsn), TargetError> {
    let init = |_: &Path, dir: &Path| -> Result<(), ServerError> {
        let install = bakeoff_servers::find_program("mariadb-install-db", &["/usr/sbin"])
            .ok_or_else(|| ServerError::NotInstalled {
                program: "mariadb-install-db".into(),
                package: "mariadb-server".into(),
            })?;
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp)
            .map_err(|e| ServerError::Init(format!("cannot create {}: {e}", tmp.display())))?;
        let out = bakeoff_servers::command_as(&install, None)
            .args([
                "--no-defaults",
                &format!("--datadir={}", dir.join("data").display()),
                &format!("--tmpdir={}", tmp.display()),
                "--user=root",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
            ])
            .current_dir(dir)
            .output()
            .map_err(|e| ServerError::Init(format!("cannot run mariadb-install-db: {e}")))?;
        if !out.status.success() {
            return Err(ServerError::Init(format!(
                "mariadb-install-db failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    };
    let local = |port: u16| Dsn {
        host: "127.0.0.1".into(),
        port,
        user: "root".into(),
        password: None,
        socket: None,
    };
    let cmd = ServerCommand {
        program: "mariadbd",
        name: "mariadbd",
        package: "mariadb-server",
        port: settings.port,
        args: &|port, dir| {
            let mut a = settings.args(port, dir);
            a.extend(extra(dir));
            a
        },
        ready: &|addr| {
            block_quick(async { Ok(connect(&local(addr.port()), None).await.map(|_| ())?) }).is_ok()
                && extra_ready(addr)
        },
        ready_timeout: Duration::from_secs(60),
        extra_dirs: &["/usr/sbin"],
        run_as: None,
        init: Some(&init),
        lazy_disk,
        stop_signal: libc::SIGTERM,
    };
    let mut server = ManagedServer::start(&cmd).map_err(TargetError::cause)?;
    server.limit(limits)?;
    let dsn = local(server.addr.port());
    Ok((server, dsn))
}

/// The server's own counters named in `names` (`SHOW GLOBAL STATUS`).
pub(crate) fn status_counters(dsn: &Dsn, names: &[&str]) -> Option<Counters> {
    status_counters_within(dsn, names, crate::async_target::QUICK_WITHIN)
}

/// [`status_counters`], the server given `within` to connect and answer.
fn status_counters_within(dsn: &Dsn, names: &[&str], within: Duration) -> Option<Counters> {
    let dsn = dsn.clone();
    let list = names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    crate::async_target::block_within(within, async move {
        let mut c = connect(&dsn, None).await?;
        let rows: Vec<(String, String)> = c
            .query(format!(
                "SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"
            ))
            .await
            .map_err(TargetError::cause)?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
            .collect())
    })
    .ok()
}

/// Where MariaDB's time per statement comes from.
const STATEMENT_TIMES: &str = "performance_schema.events_statements_summary_global_by_event_name (COUNT_STAR, SUM_TIMER_WAIT)";

/// The server's time in prepared statements so far, from
/// performance_schema where it is on (`None` where it is off): binary
/// protocol executes carry no digest, so every prepared statement, read or
/// write, is one row, `statement/com/Execute`, against every operation's
/// client time.
fn statement_times(dsn: &Dsn) -> Option<Vec<CommandTime>> {
    let dsn = dsn.clone();
    block_quick(async move {
        let mut c = connect(&dsn, None).await?;
        let row: Option<(u64, u64)> = c
            .query_first(
                "SELECT COUNT_STAR, SUM_TIMER_WAIT \
                 FROM performance_schema.events_statements_summary_global_by_event_name \
                 WHERE EVENT_NAME = 'statement/com/Execute' AND @@performance_schema = 1",
            )
            .await
            .map_err(TargetError::cause)?;
        Ok(row)
    })
    .ok()
    .flatten()
    .map(|(calls, picoseconds)| {
        vec![CommandTime {
            command: "COM_STMT_EXECUTE (every prepared statement, reads and writes together)"
                .into(),
            kinds: &OpKind::ALL,
            calls,
            usec: picoseconds / 1_000_000,
            apart: false,
            histogram_usec: Vec::new(),
        }]
    })
}

/// Rows in `bakeoff.TABLE`, if the server answers.
pub(crate) fn count_rows(dsn: &Dsn, table: &str) -> Option<u64> {
    let dsn = dsn.clone();
    let sql = format!("SELECT COUNT(*) FROM bakeoff.{table}");
    block(async move {
        let mut c = connect(&dsn, None).await?;
        let n: Option<u64> = c.query_first(sql).await.map_err(TargetError::cause)?;
        Ok(n.unwrap_or(0))
    })
    .ok()
}

/// Longest wait for a new replica to apply what its primary logged.
const CATCH_UP_WITHIN_S: u64 = 30;

/// A primary writing the binary log and a replica following it by GTID
/// (`MASTER_USE_GTID = slave_pos`); with `semisync`, semi-synchronous
/// replication. Writes go to the primary, reads where `--read-from`
/// says; the lag is the binary log between the primary's position and
/// the one the replica has executed, in bytes.
fn open_replicated(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
    settings: MariaSettings,
) -> Result<Box<dyn Target>, TargetError> {
    let semisync = Settings::new(plan.settings_of(spec), SETTINGS)?
        .flag("semisync")?
        .unwrap_or_default();
    let primary_settings = MariaSettings {
        binlog: true,
        ..settings.clone()
    };
    let (primary, p) = start_managed(
        &primary_settings,
        &|_| {
            let mut a = vec!["--binlog-format=ROW".to_string()];
            if semisync {
                a.push("--rpl-semi-sync-master-enabled=ON".into());
                a.push(format!(
                    "--rpl-semi-sync-master-timeout={SEMISYNC_TIMEOUT_MS}"
                ));
            }
            a
        },
        &|_| true,
        Limits::of(workload),
        false,
    )?;
    let replica_settings = MariaSettings {
        binlog: false,
        sync_binlog: None,
        port: None,
        ..settings
    };
    let (replica, r) = start_managed(
        &replica_settings,
        &|dir| {
            let mut a = vec![
                "--server-id=2".to_string(),
                format!("--relay-log={}", dir.join("data").join("relay").display()),
            ];
            if semisync {
                a.push("--rpl-semi-sync-slave-enabled=ON".into());
            }
            a
        },
        &|_| true,
        Limits::of(workload),
        false,
    )?;
    block(follow(&r, &p))?;
    let (version, recorded) = block(prepare_table(&p, workload))?;
    block(caught_up(&p, &r))?;
    let (r_version, r_recorded) = block(server_facts(&r))?;
    let node = |server, dsn: &Dsn, facts| Node::<Mariadb> {
        server: Some(server),
        dsn: dsn.clone(),
        facts,
        endpoint: None,
    };
    let primary = node(primary, &p, (version, recorded));
    let replica = node(replica, &r, (r_version, r_recorded));
    let replication = Replication {
        // Only clients run prepared statements: the replica applies row
        // events.
        read_counters: &["Com_stmt_execute"],
        lag: Box::new(move || block_quick(binlog_lag(&p, &r)).ok()),
    };
    crate::sql_server::open_pair(spec, workload, primary, replica, replication)
}

/// Makes the server at `r` a replica of the one at `p`, by GTID.
async fn follow(r: &Dsn, p: &Dsn) -> Result<(), TargetError> {
    let mut c = connect(r, None).await?;
    let sql = format!(
        "CHANGE MASTER TO MASTER_HOST = '{}', MASTER_PORT = {}, MASTER_USER = 'root', \
         MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
        p.host, p.port
    );
    for sql in [sql.as_str(), "START SLAVE"] {
        c.query_drop(sql).await.map_err(|e| {
            TargetError::Server(format!("cannot start the mariadb replica ({sql}): {e}"))
        })?;
    }
    Ok(())
}

/// Waits until the replica at `r` has applied everything the primary at
/// `p` has logged so far.
async fn caught_up(p: &Dsn, r: &Dsn) -> Result<(), TargetError> {
    let e = |e: mysql_async::Error| TargetError::cause(e);
    let position: Option<String> = connect(p, None)
        .await?
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .map_err(e)?;
    let waited: Option<i64> = connect(r, None)
        .await?
        .exec_first(
            "SELECT MASTER_GTID_WAIT(?, ?)",
            (position.clone().unwrap_or_default(), CATCH_UP_WITHIN_S),
        )
        .await
        .map_err(e)?;
    if waited == Some(0) {
        return Ok(());
    }
    let status = replica_status(r).await.unwrap_or_default();
    Err(TargetError::Server(format!(
        "the mariadb replica did not reach the primary's GTID position {} within {CATCH_UP_WITHIN_S} s (SHOW SLAVE STATUS: {status:?})",
        position.unwrap_or_default()
    )))
}

/// The replica's `SHOW SLAVE STATUS` fields that say where it is.
async fn replica_status(r: &Dsn) -> Result<BTreeMap<String, String>, TargetError> {
    let mut c = connect(r, None).await?;
    let row: Option<mysql_async::Row> = c
        .query_first("SHOW SLAVE STATUS")
        .await
        .map_err(TargetError::cause)?;
    let row = row.ok_or_else(|| TargetError::Server("the server is no replica".into()))?;
    let mut out = BTreeMap::new();
    for name in [
        "Slave_IO_Running",
        "Slave_SQL_Running",
        "Relay_Master_Log_File",
        "Exec_Master_Log_Pos",
        "Last_Error",
        "Last_IO_Error",
    ] {
        if let Some(Ok(v)) = row.get_opt::<Option<String>, _>(name) {
            out.insert(name.to_string(), v.unwrap_or_default());
        }
    }
    Ok(out)
}

/// Bytes of binary log the replica at `r` has still to execute of what
/// the primary at `p` has written. The replica is asked first, so the
/// primary's position read after it is never behind it; the count is
/// exact within one log file, and when the primary has moved on to a new
/// file it is that file's length so far (a lower bound).
async fn binlog_lag(p: &Dsn, r: &Dsn) -> Result<u64, TargetError> {
    let at = replica_status(r).await?;
    let executed: u64 = at
        .get("Exec_Master_Log_Pos")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| TargetError::Server(format!("no executed position: {at:?}")))?;
    let mut c = connect(p, None).await?;
    let row: Option<mysql_async::Row> = c
        .query_first("SHOW MASTER STATUS")
        .await
        .map_err(TargetError::cause)?;
    let (file, written): (String, u64) = row
        .and_then(|row| Some((row.get("File")?, row.get("Position")?)))
        .ok_or_else(|| TargetError::Server("the primary writes no binary log".into()))?;
    Ok(if at.get("Relay_Master_Log_File") == Some(&file) {
        written.saturating_sub(executed)
    } else {
        written
    })
}

impl AsyncDriver for MariaDriver {
    fn record_count(&self) -> Option<u64> {
        let table = match (self.profile, self.fields > 1) {
            (true, _) => "profile",
            (false, true) => "usertable",
            (false, false) => "kv",
        };
        count_rows(self.reach.primary(), table)
    }

    fn counters(&self) -> Option<Counters> {
        status_counters(
            self.reach.primary(),
            &["Com_stmt_execute", "Com_insert", "Com_delete", "Com_update"],
        )
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        // bakeoff's own admin queries go as plain text, never as prepared
        // statements, so Com_stmt_execute counts the workload alone, scans
        // among the reads (Com_select would count the admin queries too).
        const PREPARED: &[CounterRule] = &[
            CounterRule {
                what: "prepared statements executed (Com_stmt_execute)",
                counters: &["Com_stmt_execute"],
                kinds: &OpKind::ALL,
            },
            CounterRule {
                what: "INSERT … ON DUPLICATE KEY UPDATE (Com_insert)",
                counters: &["Com_insert"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
            CounterRule {
                what: "DELETE (Com_delete)",
                counters: &["Com_delete"],
                kinds: &[OpKind::Delete],
            },
        ];
        // Phased requests are text queries: one UPDATE and one INSERT each;
        // the load's upserts stay prepared.
        const PHASED: &[CounterRule] = &[
            CounterRule {
                what: "prepared upserts of the load (Com_stmt_execute)",
                counters: &["Com_stmt_execute"],
                kinds: &[OpKind::Set],
            },
            CounterRule {
                what: "UPDATE of 10 rows, one per request (Com_update)",
                counters: &["Com_update"],
                kinds: &[OpKind::Update],
            },
            CounterRule {
                what: "INSERTs: load upserts + one per request (Com_insert)",
                counters: &["Com_insert"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
        ];
        // On table usertable an update is an UPDATE of its one field.
        const FIELDS: &[CounterRule] = &[
            PREPARED[0],
            CounterRule {
                what: "INSERT … ON DUPLICATE KEY UPDATE and UPDATE … SET field<j> (Com_insert + Com_update)",
                counters: &["Com_insert", "Com_update"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
            PREPARED[2],
        ];
        if self.phased {
            PHASED
        } else if self.fields > 1 {
            FIELDS
        } else {
            PREPARED
        }
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }

    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        statement_times(self.reach.primary()).map(|t| (STATEMENT_TIMES, t))
    }

    fn no_command_times(&self) -> Option<&'static str> {
        Some("MariaDB times statements only in performance_schema, off by default; mariadb[performance_schema=true] turns it on where bakeoff starts the server")
    }

    fn background_source(&self, _managed: bool) -> Option<(&'static str, Duration)> {
        Some((
            "SHOW GLOBAL STATUS: InnoDB's pages flushed and checkpoint age against its maximum, every 1 s",
            Duration::from_secs(1),
        ))
    }

    fn background_look(&self) -> Option<BackgroundLook> {
        // The thread that collects the run waits for the look.
        let st = status_counters_within(
            self.reach.primary(),
            INNODB_BACKGROUND,
            Duration::from_millis(500),
        )?;
        let n = |k: &str| st.get(k).copied().unwrap_or(0);
        let mut last = self.flushed.lock().unwrap_or_else(|e| e.into_inner());
        let flushed = n("Innodb_buffer_pool_pages_flushed");
        let before = last.replace(flushed);
        Some(innodb_look(
            flushed.saturating_sub(before.unwrap_or(flushed)),
            n("Innodb_buffer_pool_pages_dirty"),
            n("Innodb_checkpoint_age"),
            n("Innodb_checkpoint_max_age"),
            n("Innodb_history_list_length"),
        ))
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        let dsn = self.reach.primary().clone();
        let read = block_quick(async move {
            let mut c = connect(&dsn, None).await?;
            // One text query is one round trip, which bounds the error.
            let sent = std::time::SystemTime::now();
            let epoch: Option<String> = c
                .query_first("SELECT UNIX_TIMESTAMP(NOW(6))")
                .await
                .map_err(TargetError::cause)?;
            let received = std::time::SystemTime::now();
            let epoch: f64 = epoch
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| TargetError::Server("NOW(6) gave no time".into()))?;
            Ok(bakeoff_core::readings::ClockReading {
                sent,
                server: std::time::UNIX_EPOCH + Duration::from_secs_f64(epoch),
                received,
            })
        });
        Some(read.map_err(|e| std::io::Error::other(e.to_string())))
    }
}

/// What `mariadb` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "mariadb",
    summary: "MariaDB / MySQL (InnoDB tables kv, usertable and profile, prepared statements, one connection per client)",
    package: "mariadb-server",
    reach: crate::kind::Reach::Server {
        program: "mariadbd",
        scheme: "mariadb",
        url_options: &["socket"],
        credentials: true,
        topologies: &["primary-replica"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SEARCH_SCAN,
        pipelining: true,
        batch_load: true,
        requests: &[RequestMode::Connect, RequestMode::Phases],
        no_scan: "MariaDB scans table kv by its primary key",
    },
    in_default_comparison: true,
    settings: SETTINGS,
    durability: DURABILITY,
    provokes: &[],
};

/// `mariadb`, as the registry knows it.
pub struct Mariadb;

impl crate::kind::TargetKind for Mariadb {
    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn available(&self) -> Result<(), TargetError> {
        available()
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        MariaSettings::parse(settings).map(|_| ())
    }

    /// Checks a fixed port is free, or an external endpoint answers.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        let settings = MariaSettings::parse(plan.settings_of(spec))?;
        match dsn_of(spec) {
            None => crate::settings::fixed_port_free("mariadb", settings.port),
            Some(dsn) => block_quick(async {
                if let Some(socket) = &dsn.socket {
                    socket_there(socket)?;
                }
                let mut c = connect(&dsn, None).await?;
                c.query_drop("SELECT 1").await.map_err(TargetError::cause)
            }),
        }
    }

    /// Opens the target: starts mariadbd (one, or a primary and its replica),
    /// or connects to the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        if workload.topology == Topology::PrimaryReplica {
            let settings = MariaSettings::parse(plan.settings_of(spec))?;
            return open_replicated(spec, plan, workload, settings);
        }
        crate::sql_server::open_single::<Self>(spec, plan, workload)
    }
}

impl SqlServer for Mariadb {
    type Dsn = Dsn;
    type Driver = MariaDriver;
    const PRODUCT: &'static str = "MariaDB";

    fn dsn_of(spec: &TargetSpec) -> Option<Dsn> {
        dsn_of(spec)
    }
    fn host_port(dsn: &Dsn) -> (&str, u16) {
        (&dsn.host, dsn.port)
    }
    fn moved(dsn: &Dsn, host: String, port: u16) -> Dsn {
        Dsn {
            host,
            port,
            ..dsn.clone()
        }
    }
    fn start(
        spec: &TargetSpec,
        plan: &Plan,
        workload: &Workload,
    ) -> Result<(ManagedServer, Dsn), TargetError> {
        start_managed(
            &MariaSettings::parse(plan.settings_of(spec))?,
            &|_| Vec::new(),
            &|_| true,
            Limits::of(workload),
            workload.cuts_power(),
        )
    }
    fn prepare(dsn: &Dsn, workload: &Workload) -> Result<ServerFacts, TargetError> {
        block(prepare_table(dsn, workload))
    }
    fn driver(reach: Reach<Dsn>, workload: &Workload) -> Result<MariaDriver, TargetError> {
        MariaDriver::new(
            reach,
            workload.record == RecordKind::Profile,
            workload.request == RequestMode::Phases,
            workload.fields as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages written since the last look are flushing at work; a
    /// checkpoint age past three quarters of its maximum is a redo log
    /// near full; neither, nothing.
    #[test]
    fn innodb_flushing_and_a_redo_log_near_full() {
        let mb = 1 << 20;
        let busy = innodb_look(868, 3379, 70 * mb, 77 * mb, 15792);
        let names: Vec<&str> = busy.running.iter().map(|(w, _)| *w).collect();
        assert_eq!(names, ["page flush", "redo log near full"]);
        assert!(
            busy.running[0].1.starts_with("868 pages written"),
            "{:?}",
            busy.running[0]
        );
        assert!(busy.running[1].1.contains("91 %"), "{:?}", busy.running[1]);
        assert_eq!(
            innodb_look(0, 10, 10 * mb, 77 * mb, 0),
            BackgroundLook::default()
        );
    }
}
