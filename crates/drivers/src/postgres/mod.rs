//! The `postgres` target: PostgreSQL through tokio-postgres, table
//! `kv(k TEXT PRIMARY KEY, v BYTEA)` (records of several fields: table
//! `usertable`, a column per field), prepared statements, one connection
//! per client.
//!
//! Managed: `initdb` and `postgres` from Debian's postgresql package (found
//! under /usr/lib/postgresql/*/bin), run as the `postgres` user (initdb
//! refuses root) in a temporary directory, on a free loopback port and a
//! private socket directory, with the settings of `[servers.postgres]`.
//! External: `postgres://user:password@host:port[?dbname=NAME]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bakeoff_core::driver::{Carrier, Connector, Driver, Job};
use bakeoff_core::error::ConnectError;
use bakeoff_core::error::TargetError;
use bakeoff_core::keys::Key;
use bakeoff_core::plan::{Endpoint, Plan, TargetSpec, Topology, Workload};
use bakeoff_core::profile::{Profile, Query, RecordKind};
use bakeoff_core::recorder::ErrorKind;
use bakeoff_core::session::{io_error_kind, Session, SessionError, SessionResult};
use bakeoff_core::target::{CommandTime, CounterRule, Counters, Target};
use bakeoff_core::workload::OpKind;
use bakeoff_servers::{ManagedServer, ServerCommand, ServerError};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Statement};

use crate::admin::{resolve, Address};
use crate::async_target::{
    block, block_quick, profile_columns, sessions_reached, AsyncDriver, Reach,
};
use crate::codec::postgres::PostgresCodec;
use crate::codec::postgres::BATCH_TAIL;
use crate::codec::postgres_fields::{table as fields_table, PostgresFieldsCodec};
use crate::kind::OpenResult;
use crate::settings::{durable, Durability, Kind, Setting, Settings, PORT};
use crate::sql::{batch_insert, search_params, search_statements, FieldsTable};
use crate::sql_server::{Node, Replication, ServerFacts, SqlServer};
use bakeoff_core::durability::DurableTo;

mod log;
mod wire;
use wire::PgConnector;

const BIN_DIRS: &[&str] = &["/usr/lib/postgresql/*/bin"];
/// `[servers.postgres]`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "shared_buffers",
        kind: Kind::Bytes,
        default: None,
        help: "PostgreSQL's buffer cache (default: its own, 128mb)",
    },
    Setting {
        name: "synchronous_commit",
        kind: Kind::Choice(&["on", "off", "local", "remote_write", "remote_apply"]),
        default: None,
        help: "whether a commit waits for its WAL to reach disk",
    },
    Setting {
        name: "synchronous_replica",
        kind: Kind::Flag,
        default: Some("false"),
        help: "with --topology primary-replica: commits wait for the replica (synchronous_standby_names = '*'); synchronous_commit says how far: remote_write (written there), on (flushed there), remote_apply (applied: visible to reads there)",
    },
    Setting {
        name: "fsync",
        kind: Kind::Choice(&["on", "off", "true", "false"]),
        default: None,
        help: "off: never fsync (data at risk on a crash)",
    },
    Setting {
        name: "max_connections",
        kind: Kind::Count,
        default: Some("300"),
        help: "connection limit",
    },
    PORT,
];

/// What a commit's WAL handling lets acknowledged writes survive:
/// synchronous_commit on (the default) flushes the WAL before the reply;
/// off replies first and leaves the WAL in shared memory for the WAL
/// writer, so a crash of the processes loses it; fsync off writes the WAL
/// to the kernel but never syncs it.
pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("synchronous_commit", "off", DurableTo::MemoryOnly),
        durable("fsync", "off", DurableTo::ProcessCrash),
        durable("fsync", "false", DurableTo::ProcessCrash),
    ],
};

struct PgSettings {
    shared_buffers: Option<u64>,
    synchronous_commit: Option<String>,
    synchronous_replica: bool,
    fsync: Option<String>,
    max_connections: u64,
    port: Option<u16>,
}

impl PgSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(PgSettings {
            shared_buffers: s.bytes("shared_buffers")?,
            synchronous_commit: s.choice("synchronous_commit")?,
            synchronous_replica: s.flag("synchronous_replica")?.unwrap_or_default(),
            fsync: s.choice("fsync")?,
            max_connections: s.count("max_connections")?.unwrap_or_default(),
            port: s.port("port")?,
        })
    }

    fn args(&self, port: u16, dir: &Path) -> Vec<String> {
        let mut a = vec![
            "-D".to_string(),
            dir.join("data").display().to_string(),
            "-p".into(),
            port.to_string(),
            "-c".into(),
            "listen_addresses=127.0.0.1".into(),
            "-c".into(),
            format!("unix_socket_directories={}", dir.display()),
            "-c".into(),
            format!("max_connections={}", self.max_connections),
            // Per-statement call counts for the conservation check, and
            // the time each took.
            "-c".into(),
            "shared_preload_libraries=pg_stat_statements".into(),
            // The commits' WAL writes and flushes, timed: pg_stat_statements
            // leaves them out of a statement's time.
            "-c".into(),
            "track_wal_io_timing=on".into(),
            // Background work with its times, in the log bakeoff reads
            // while a run goes on: every checkpoint and autovacuum, each
            // line after its moment.
            "-c".into(),
            format!("log_line_prefix={}", log::LOG_LINE_PREFIX),
            "-c".into(),
            "log_checkpoints=on".into(),
            "-c".into(),
            "log_autovacuum_min_duration=0".into(),
        ];
        let mut set = |k: &str, v: String| {
            a.push("-c".into());
            a.push(format!("{k}={v}"));
        };
        if let Some(b) = self.shared_buffers {
            set("shared_buffers", format!("{}kB", b / 1024));
        }
        if let Some(v) = &self.synchronous_commit {
            set("synchronous_commit", v.clone());
        }
        if let Some(v) = &self.fsync {
            set("fsync", v.clone());
        }
        a
    }
}

/// How to reach the server.
#[derive(Clone)]
pub(crate) struct Dsn {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    dbname: String,
}

impl Dsn {
    /// A server bakeoff started: superuser `bakeoff` on 127.0.0.1.
    fn managed(port: u16) -> Self {
        Dsn {
            host: "127.0.0.1".into(),
            port,
            user: "bakeoff".into(),
            password: None,
            dbname: "postgres".into(),
        }
    }

    fn config(&self) -> Config {
        let mut c = Config::new();
        c.host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.dbname)
            .connect_timeout(Duration::from_secs(5));
        if let Some(p) = &self.password {
            c.password(p);
        }
        c
    }

    /// The server's Unix domain socket, when the host is a directory (an
    /// absolute path, as libpq and tokio-postgres take it): PostgreSQL
    /// names its socket there after the port.
    fn socket(&self) -> Option<std::path::PathBuf> {
        self.host
            .starts_with('/')
            .then(|| std::path::Path::new(&self.host).join(format!(".s.PGSQL.{}", self.port)))
    }

    /// Where the codec's connections go: the socket, or the host resolved.
    fn address(&self) -> Result<Address, TargetError> {
        match self.socket() {
            Some(path) => Ok(Address::Unix(path)),
            None => resolve(&self.host, self.port).map(Address::Tcp),
        }
    }

    fn describe(&self) -> String {
        let at = match self.socket() {
            Some(path) => format!("socket {}", path.display()),
            None => format!("{}:{}", self.host, self.port),
        };
        format!(
            "postgres at {at} (user {}, database {})",
            self.user, self.dbname
        )
    }
}

/// How long connecting may take, the start-up handshake included
/// (tokio-postgres's own connect timeout covers the TCP connect alone, so
/// a port that accepts and never answers would otherwise hang).
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// Opens a connection within [`CONNECT_WITHIN`]; the connection's own
/// task is left to the caller to spawn.
async fn open_connection(
    dsn: &Dsn,
) -> Result<
    (
        Client,
        tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
    ),
    ConnectError,
> {
    match tokio::time::timeout(CONNECT_WITHIN, dsn.config().connect(NoTls)).await {
        Ok(r) => r.map_err(|e| ConnectError::new(connect_kind(&e), explain(dsn, e))),
        Err(_) => Err(ConnectError::new(
            ErrorKind::Timeout,
            format!(
                "{} accepted the connection but did not finish the PostgreSQL handshake within {} s: is it stalled, or is it not a PostgreSQL server?",
                dsn.describe(),
                CONNECT_WITHIN.as_secs()
            ),
        )),
    }
}

/// Connects and drives the connection on the current runtime.
async fn connect(dsn: &Dsn) -> Result<Client, ConnectError> {
    let (client, conn) = open_connection(dsn).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Connects from inside the worker loop (a LocalSet).
async fn connect_local(dsn: &Dsn) -> Result<Client, ConnectError> {
    let (client, conn) = open_connection(dsn).await?;
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// How a failed connection attempt counts: the server turning it away
/// ("too many clients") is a refusal; socket errors by their kind; the
/// driver's own connect timeout is a timeout.
fn connect_kind(e: &tokio_postgres::Error) -> ErrorKind {
    if let Some(db) = e.as_db_error() {
        return if *db.code() == tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS {
            ErrorKind::Refused
        } else {
            ErrorKind::ServerError
        };
    }
    let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
    match io {
        Some(io) => io_error_kind(io),
        None if e.is_closed() => ErrorKind::Reset,
        // tokio-postgres keeps its error kinds private; without a source,
        // a failed connect is its own connect_timeout.
        None => ErrorKind::Timeout,
    }
}

fn explain(dsn: &Dsn, e: tokio_postgres::Error) -> String {
    let text = e.to_string();
    let detail = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_default();
    if detail.contains("password") || text.contains("password") {
        format!(
            "{} refused the credentials: {detail}; check the user and password in the URL",
            dsn.describe()
        )
    } else if text.contains("connect") || text.contains("refused") || text.contains("timed out") {
        format!(
            "cannot connect to {}: {text}; is the server running, and are host and port right?",
            dsn.describe()
        )
    } else if detail.is_empty() {
        format!(
            "{}: {text}; is it a PostgreSQL server, and is it answering?",
            dsn.describe()
        )
    } else {
        format!("{}: {text} {detail}", dsn.describe())
    }
}

/// The statement in `slot`, prepared from `sql` on first use.
async fn prepared<'a>(
    client: &Client,
    slot: &'a mut Option<Statement>,
    sql: &str,
) -> SessionResult<&'a Statement> {
    if slot.is_none() {
        *slot = Some(client.prepare(sql).await.map_err(fail)?);
    }
    Ok(slot.as_ref().expect("prepared above"))
}

/// One client's connection and statements.
pub struct PgSession {
    client: Client,
    /// Prepared on first use, so that a connection per request prepares
    /// only what it runs.
    get: Option<Statement>,
    put: Option<Statement>,
    del: Option<Statement>,
    /// [`SCAN`].
    scan: Option<Statement>,
    /// Profile upsert and the four searches (profile workloads only).
    profile: Option<(Statement, [Statement; 4])>,
    /// Multi-row upserts by row count (batched loads).
    batches: std::collections::HashMap<usize, Statement>,
    /// Records of several fields: table usertable, and each field's
    /// one-column `UPDATE` (prepared on first use).
    fields: Option<(FieldsTable, Vec<Option<Statement>>)>,
}

impl PgSession {
    async fn open(dsn: &Dsn, profile: bool, fields: usize) -> Result<Self, ConnectError> {
        let client = connect_local(dsn).await?;
        let e = |r: Result<Statement, tokio_postgres::Error>| {
            r.map_err(|e| ConnectError::new(connect_kind(&e), e.to_string()))
        };
        let profile = if profile {
            let upsert = e(client.prepare(PROFILE_PUT).await)?;
            let [a, b, c, d] = search_statements(|n| format!("${n}"));
            Some((
                upsert,
                [
                    e(client.prepare(&a).await)?,
                    e(client.prepare(&b).await)?,
                    e(client.prepare(&c).await)?,
                    e(client.prepare(&d).await)?,
                ],
            ))
        } else {
            None
        };
        Ok(PgSession {
            client,
            get: None,
            put: None,
            del: None,
            scan: None,
            profile,
            batches: Default::default(),
            fields: (fields > 1).then(|| (fields_table(fields), vec![None; fields])),
        })
    }

    /// A read of a record of several fields: every column, end to end.
    async fn get_fields(&mut self, k: &str, out: &mut Vec<u8>) -> SessionResult<bool> {
        let Some((t, _)) = &self.fields else {
            unreachable!("called for records of fields")
        };
        let sql = t.get();
        let row = self
            .client
            .query_opt(prepared(&self.client, &mut self.get, &sql).await?, &[&k])
            .await
            .map_err(fail)?;
        let Some(row) = row else {
            return Ok(false);
        };
        for f in 0..row.len() {
            let v: Option<&[u8]> = row.try_get(f).map_err(fail)?;
            out.extend_from_slice(v.unwrap_or_default());
        }
        Ok(true)
    }

    /// A write of a whole record of several fields: every column.
    async fn put_fields(&mut self, k: &str, record: &[u8]) -> SessionResult<()> {
        let Some((t, _)) = &self.fields else {
            unreachable!("called for records of fields")
        };
        let (sql, n) = (t.put(), t.fields);
        let len = (record.len() / n).max(1);
        let chunks: Vec<&[u8]> = record.chunks(len).collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&k];
        params.extend(chunks.iter().map(|c| c as &(dyn ToSql + Sync)));
        self.client
            .execute(prepared(&self.client, &mut self.put, &sql).await?, &params)
            .await
            .map(|_| ())
            .map_err(fail)
    }

    /// A scan of records of several fields: each key, its fields end to
    /// end.
    async fn scan_fields(&mut self, k: &str, limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        let Some((t, _)) = &self.fields else {
            unreachable!("called for records of fields")
        };
        let sql = t.scan();
        let rows = self
            .client
            .query(
                prepared(&self.client, &mut self.scan, &sql).await?,
                &[&k, &i64::from(limit)],
            )
            .await
            .map_err(fail)?;
        let mut record = Vec::new();
        for row in &rows {
            let key: &str = row.try_get(0).map_err(fail)?;
            record.clear();
            for f in 1..row.len() {
                let v: Option<&[u8]> = row.try_get(f).map_err(fail)?;
                record.extend_from_slice(v.unwrap_or_default());
            }
            bakeoff_core::scan::push_row(out, key.as_bytes(), &record);
        }
        Ok(rows.len() as u64)
    }
}

impl Session for PgSession {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        out.clear();
        let k = std::str::from_utf8(key).map_err(|e| SessionError::Server(e.to_string()))?;
        if self.fields.is_some() {
            return self.get_fields(k, out).await;
        }
        match self
            .client
            .query_opt(prepared(&self.client, &mut self.get, GET).await?, &[&k])
            .await
            .map_err(fail)?
        {
            Some(row) => {
                let v: &[u8] = row.try_get(0).map_err(fail)?;
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        let k = std::str::from_utf8(key).map_err(|e| SessionError::Server(e.to_string()))?;
        if self.fields.is_some() {
            return self.put_fields(k, value).await;
        }
        self.client
            .execute(
                prepared(&self.client, &mut self.put, PUT).await?,
                &[&k, &value],
            )
            .await
            .map(|_| ())
            .map_err(fail)
    }

    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        let k = std::str::from_utf8(key).map_err(|e| SessionError::Server(e.to_string()))?;
        let sql = match &self.fields {
            Some((t, _)) => t.del(),
            None => DEL.into(),
        };
        self.client
            .execute(prepared(&self.client, &mut self.del, &sql).await?, &[&k])
            .await
            .map(|n| n > 0)
            .map_err(fail)
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
        self.client
            .execute(
                upsert,
                &[&(id as i64), &name, &sex, &province, &city, &payload],
            )
            .await
            .map(|_| ())
            .map_err(fail)
    }

    async fn put_batch(&mut self, keys: &[Key], values: &[&[u8]]) -> SessionResult<()> {
        let n = keys.len();
        if !self.batches.contains_key(&n) {
            let sql = batch_insert(n, |i| format!("${i}"), BATCH_TAIL);
            let st = self.client.prepare(&sql).await.map_err(fail)?;
            self.batches.insert(n, st);
        }
        let texts: Vec<&str> = keys
            .iter()
            .map(|k| std::str::from_utf8(k).unwrap_or(""))
            .collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(2 * n);
        for (k, v) in texts.iter().zip(values) {
            params.push(k);
            params.push(v);
        }
        self.client
            .execute(&self.batches[&n], &params)
            .await
            .map(|_| ())
            .map_err(fail)
    }

    async fn search(&mut self, q: &Query) -> SessionResult<u64> {
        let (_, searches) = self
            .profile
            .as_ref()
            .ok_or_else(|| SessionError::Server("no profile statements".into()))?;
        let (which, params) = search_params(q);
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.client
            .query(&searches[which], &refs)
            .await
            .map(|rows| rows.len() as u64)
            .map_err(fail)
    }

    async fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        out.clear();
        let k = std::str::from_utf8(start).map_err(|e| SessionError::Server(e.to_string()))?;
        if self.fields.is_some() {
            return self.scan_fields(k, limit, out).await;
        }
        // LIMIT's parameter is a bigint to PostgreSQL.
        let rows = self
            .client
            .query(
                prepared(&self.client, &mut self.scan, SCAN).await?,
                &[&k, &i64::from(limit)],
            )
            .await
            .map_err(fail)?;
        for row in &rows {
            let key: &str = row.try_get(0).map_err(fail)?;
            let value: &[u8] = row.try_get(1).map_err(fail)?;
            bakeoff_core::scan::push_row(out, key.as_bytes(), value);
        }
        Ok(rows.len() as u64)
    }

    fn keeps_fields(&self) -> bool {
        self.fields.is_some()
    }

    async fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> SessionResult<()> {
        let k = std::str::from_utf8(key).map_err(|e| SessionError::Server(e.to_string()))?;
        let Some((t, statements)) = &mut self.fields else {
            return Err(SessionError::Server(
                "table kv keeps a record as one value".into(),
            ));
        };
        let sql = t.put_field(field);
        let slot = statements
            .get_mut(field)
            .ok_or_else(|| SessionError::Server(format!("no field {field}")))?;
        self.client
            .execute(prepared(&self.client, slot, &sql).await?, &[&k, &value])
            .await
            .map(|_| ())
            .map_err(fail)
    }
}

/// A database error leaves the connection usable; anything else (closed,
/// reset, I/O) loses it.
fn fail(e: tokio_postgres::Error) -> SessionError {
    if e.as_db_error().is_some() {
        SessionError::Server(e.to_string())
    } else {
        SessionError::Lost(e.to_string())
    }
}

use crate::codec::postgres::{DEL, GET, PUT};
/// [`crate::sql::SCAN`] in PostgreSQL's placeholders: the text
/// pg_stat_statements counts it under. bakeoff's keys (`bk:` and 12
/// digits) sort alike under any collation, so `ORDER BY k` is their order.
const SCAN: &str = "SELECT k, v FROM kv WHERE k >= $1 ORDER BY k LIMIT $2";
const KV_TABLE: &str = "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BYTEA NOT NULL)";
const PROFILE_TABLE: &str = "CREATE TABLE IF NOT EXISTS profile (id BIGINT PRIMARY KEY, \
     name TEXT NOT NULL, sex TEXT NOT NULL, province TEXT NOT NULL, city TEXT NOT NULL, \
     payload BYTEA NOT NULL)";
const PROFILE_PUT: &str = "INSERT INTO profile (id, name, sex, province, city, payload) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, \
     sex = EXCLUDED.sex, province = EXCLUDED.province, city = EXCLUDED.city, \
     payload = EXCLUDED.payload";

/// The driver: the key-value operations through the wire codec on the
/// network loop; searches, scans, profile rows, a connection per request
/// and batched loads through tokio-postgres sessions on the async loop.
pub struct PgDriver {
    reach: Reach<Dsn>,
    profile: bool,
    /// Fields per record: one is table kv's value; several, the columns
    /// of table usertable.
    fields: usize,
    /// The same servers as `reach`, through [`PostgresCodec`] (or
    /// [`PostgresFieldsCodec`]).
    wire: Box<dyn Driver>,
    /// The same servers as `reach`, through tokio-postgres sessions.
    sessions: Box<dyn Carrier>,
}

impl PgDriver {
    /// A driver for the servers of `reach` (resolved here for the codec's
    /// connections).
    fn new(reach: Reach<Dsn>, profile: bool, fields: usize) -> Result<Self, TargetError> {
        let connector = |statements: Vec<(String, String, Vec<u32>)>, table| {
            move |dsn: &Dsn| -> Result<Box<dyn Connector>, TargetError> {
                Ok(Box::new(PgConnector {
                    addr: dsn.address()?,
                    dsn: dsn.clone(),
                    statements: statements.clone(),
                    table,
                }))
            }
        };
        let wire: Box<dyn Driver> = if fields > 1 {
            let codec = PostgresFieldsCodec::new(fields as u32);
            let statements = codec.statements();
            Box::new(reach.codec_driver(codec, connector(statements, "usertable"))?)
        } else {
            let statements = PostgresCodec::statements();
            Box::new(reach.codec_driver(PostgresCodec, connector(statements, "kv"))?)
        };
        let sessions = sessions_reached(&reach, move |dsn: Dsn| async move {
            PgSession::open(&dsn, profile, fields).await
        });
        Ok(PgDriver {
            reach,
            profile,
            fields,
            wire,
            sessions,
        })
    }
}

impl Driver for PgDriver {
    fn carrier(&self, job: &Job) -> &dyn Carrier {
        let fits = |rows| rows <= crate::codec::postgres::MAX_BATCH as usize;
        if crate::sql::wire_serves(job, fits) {
            self.wire.carrier(job)
        } else {
            &*self.sessions
        }
    }

    fn describe(&self, kind: OpKind) -> String {
        if kind == OpKind::Scan {
            // Through tokio-postgres, never the codec; $n placeholders.
            let scan = if self.fields > 1 {
                fields_table(self.fields).scan()
            } else {
                SCAN.into()
            };
            return format!("{scan} (prepared once per connection)");
        }
        if self.profile || kind == OpKind::Search {
            crate::sql::describe(kind, [GET, PUT, DEL], PROFILE_PUT, self.profile)
        } else {
            self.wire.describe(kind)
        }
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
            user: spec.user.clone().unwrap_or_else(|| "postgres".into()),
            password: spec.password.clone(),
            dbname: options
                .get("dbname")
                .cloned()
                .unwrap_or_else(|| "postgres".into()),
        }),
        Endpoint::Managed => None,
    }
}

/// Whether PostgreSQL can be started here.
pub fn available() -> Result<(), TargetError> {
    for program in ["postgres", "initdb"] {
        if bakeoff_servers::find_program(program, BIN_DIRS).is_none() {
            return Err(TargetError::Server(format!(
                "`{program}` is not installed; install it with `apt-get install postgresql`"
            )));
        }
    }
    bakeoff_servers::user_ids("postgres")?;
    Ok(())
}

/// Creates the workload's table (emptied before a load) and its indexes.
async fn prepare_table(dsn: &Dsn, workload: &Workload) -> Result<(), TargetError> {
    let c = connect(dsn).await?;
    let q = |sql: &'static str| c.simple_query(sql);
    let e = |r: Result<Vec<tokio_postgres::SimpleQueryMessage>, tokio_postgres::Error>| {
        r.map(|_| ()).map_err(TargetError::cause)
    };
    e(q(KV_TABLE).await)?;
    if workload.record == RecordKind::Profile {
        e(q(PROFILE_TABLE).await)?;
        if workload.empties_before_load() {
            e(q("TRUNCATE profile").await)?;
        }
        if workload.indexes {
            e(q("CREATE INDEX IF NOT EXISTS profile_sex ON profile (sex)").await)?;
            e(q("CREATE INDEX IF NOT EXISTS profile_loc ON profile (province, city)").await)?;
        } else {
            e(q("DROP INDEX IF EXISTS profile_sex").await)?;
            e(q("DROP INDEX IF EXISTS profile_loc").await)?;
        }
    } else if workload.fields > 1 {
        let t = fields_table(workload.fields as usize);
        e(c.simple_query(&t.create()).await)?;
        if workload.empties_before_load() {
            e(q("TRUNCATE usertable").await)?;
        }
    } else if workload.empties_before_load() {
        e(q("TRUNCATE kv").await)?;
    }
    // Statement counters for the conservation check, where the server
    // preloads the extension (a managed server does).
    let _ = q("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").await;
    Ok(())
}

/// The server's version and the settings in force, read back from it.
async fn server_facts(dsn: &Dsn) -> Result<(String, BTreeMap<String, String>), TargetError> {
    let c = connect(dsn).await?;
    let version: String = c
        .query_one("SHOW server_version", &[])
        .await
        .map_err(TargetError::cause)?
        .get(0);
    let mut settings = BTreeMap::new();
    for name in [
        "shared_buffers",
        "synchronous_commit",
        "synchronous_standby_names",
        "fsync",
        "max_connections",
        "wal_level",
        "shared_preload_libraries",
    ] {
        if let Ok(row) = c.query_one(&format!("SHOW {name}"), &[]).await {
            settings.insert(name.to_string(), row.get::<_, String>(0));
        }
    }
    Ok((version, settings))
}

/// What a managed postgres is in its topology.
#[derive(Clone, Copy)]
enum Role {
    /// A server made with initdb: alone, or a primary.
    Primary,
    /// A streaming replica of the primary on this port, its data directory
    /// copied from it by pg_basebackup.
    ReplicaOf(u16),
}

/// Starts a private postgres with the settings of `[servers.postgres]`
/// (`table`) on a free loopback port, superuser `bakeoff`. Without a
/// `password` every connection is trusted; with one, TCP connections must
/// give it (the tests use this for an external, password-protected server).
pub fn start(
    table: Option<&toml::Table>,
    password: Option<&str>,
) -> Result<ManagedServer, TargetError> {
    start_on(table, password, false)
}

/// Starts a PostgreSQL server with the table `kv` and returns it with a
/// connector of the wire codec ([`PostgresCodec`]) to it, for tests of
/// the network loop.
pub fn start_with_kv(
    table: Option<&toml::Table>,
) -> Result<(ManagedServer, Box<dyn Connector>), TargetError> {
    let server = start(table, None)?;
    let dsn = Dsn::managed(server.addr.port());
    let sql = dsn.clone();
    block(async move {
        connect(&sql)
            .await?
            .simple_query(KV_TABLE)
            .await
            .map_err(TargetError::cause)
    })?;
    let connector = PgConnector {
        addr: Address::Tcp(server.addr),
        dsn,
        statements: PostgresCodec::statements(),
        table: "kv",
    };
    Ok((server, Box::new(connector)))
}

/// [`start`], with the data directory on the power-cut layer when
/// `lazy_disk` (see [`bakeoff_servers::ServerCommand::lazy_disk`]).
pub fn start_on(
    table: Option<&toml::Table>,
    password: Option<&str>,
    lazy_disk: bool,
) -> Result<ManagedServer, TargetError> {
    start_as(
        &PgSettings::parse(table)?,
        password,
        lazy_disk,
        Role::Primary,
    )
}

/// Starts a PostgreSQL server with its defaults and a database `name`
/// (trust authentication for `bakeoff` on loopback), for a server that
/// keeps its data in one (FerretDB); the data directory on the power-cut
/// layer when `lazy_disk`.
pub fn start_database(name: &str, lazy_disk: bool) -> Result<ManagedServer, TargetError> {
    let server = start_on(None, None, lazy_disk)?;
    execute_in(
        server.addr.port(),
        "postgres",
        &format!("CREATE DATABASE {name}"),
    )?;
    Ok(server)
}

/// Runs `sql` (one or more statements) in `database` of the server bakeoff
/// started on `port` of 127.0.0.1, as its superuser.
pub fn execute_in(port: u16, database: &str, sql: &str) -> Result<(), TargetError> {
    block(execute(port, database, sql))
}

/// [`execute_in`], for callers already in an async context.
pub async fn execute(port: u16, database: &str, sql: &str) -> Result<(), TargetError> {
    let dsn = Dsn {
        dbname: database.into(),
        ..Dsn::managed(port)
    };
    connect(&dsn)
        .await?
        .batch_execute(sql)
        .await
        .map_err(TargetError::during(format!(
            "PostgreSQL, database {database}"
        )))
}

/// Runs a program of PostgreSQL's as the `postgres` user in `dir`; `what`
/// names it in the error.
fn run_tool(cmd: &mut std::process::Command, dir: &Path, what: &str) -> Result<(), ServerError> {
    let out = cmd
        .current_dir(dir)
        .output()
        .map_err(|e| ServerError::Init(format!("cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(ServerError::Init(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

fn start_as(
    settings: &PgSettings,
    password: Option<&str>,
    lazy_disk: bool,
    role: Role,
) -> Result<ManagedServer, TargetError> {
    let init = |binary: &Path, dir: &Path| -> Result<(), ServerError> {
        let ids = bakeoff_servers::user_ids("postgres")?;
        let data = dir.join("data").display().to_string();
        if let Role::ReplicaOf(port) = role {
            // A copy of the primary that follows its WAL (-R writes
            // standby.signal and the primary's address).
            let tool =
                bakeoff_servers::find_program("pg_basebackup", BIN_DIRS).ok_or_else(|| {
                    ServerError::NotInstalled {
                        program: "pg_basebackup".into(),
                        package: "postgresql".into(),
                    }
                })?;
            let mut cmd = bakeoff_servers::command_as(&tool, Some(ids));
            cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "bakeoff"])
                .args(["-D", &data, "-R", "-X", "stream", "-c", "fast"]);
            return run_tool(&mut cmd, dir, "pg_basebackup");
        }
        let initdb = binary.with_file_name("initdb");
        let mut cmd = bakeoff_servers::command_as(&initdb, Some(ids));
        cmd.args(["-D", &data, "-U", "bakeoff", "-E", "UTF8", "--locale=C"]);
        match password {
            None => {
                cmd.arg("--auth=trust");
            }
            Some(pw) => {
                let file = dir.join("pwfile");
                std::fs::write(&file, pw).map_err(|e| {
                    ServerError::Init(format!("cannot write {}: {e}", file.display()))
                })?;
                std::os::unix::fs::chown(&file, Some(ids.0), Some(ids.1)).map_err(|e| {
                    ServerError::Init(format!("cannot hand {} to postgres: {e}", file.display()))
                })?;
                cmd.args(["--auth-local=trust", "--auth-host=scram-sha-256"])
                    .arg(format!("--pwfile={}", file.display()));
            }
        }
        let done = run_tool(&mut cmd, dir, "initdb");
        let _ = std::fs::remove_file(dir.join("pwfile"));
        done
    };
    let cmd = ServerCommand {
        program: "postgres",
        name: "postgres",
        package: "postgresql",
        // A fixed port is the primary's; a replica takes a free one.
        port: settings.port.filter(|_| matches!(role, Role::Primary)),
        args: &|port, dir| {
            let mut a = settings.args(port, dir);
            if let Role::ReplicaOf(_) = role {
                // Report replay positions each second, not each ten.
                a.extend(["-c".into(), "wal_receiver_status_interval=1s".into()]);
            }
            a
        },
        ready: &|addr| {
            let dsn = Dsn {
                password: password.map(str::to_string),
                ..Dsn::managed(addr.port())
            };
            block_quick(async { Ok(connect(&dsn).await.map(|_| ())?) }).is_ok()
        },
        ready_timeout: Duration::from_secs(30),
        extra_dirs: BIN_DIRS,
        run_as: Some("postgres"),
        init: Some(&init),
        lazy_disk,
        // SIGTERM is PostgreSQL's smart shutdown, which waits for every
        // client to leave; SIGINT is its fast one.
        stop_signal: libc::SIGINT,
    };
    ManagedServer::start(&cmd).map_err(TargetError::cause)
}

/// Longest wait for a new replica to stream from its primary.
const STREAMING_WITHIN: Duration = Duration::from_secs(30);

/// A primary and a streaming replica made from it with pg_basebackup;
/// with `synchronous_replica`, commits then wait for the replica as
/// `synchronous_commit` says. Writes go to the primary, reads where
/// `--read-from` says; the lag is the WAL between the primary's position
/// and the replica's replay position, in bytes.
fn open_replicated(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
) -> Result<Box<dyn Target>, TargetError> {
    let settings = PgSettings::parse(plan.settings_of(spec))?;
    let primary = start_as(&settings, None, false, Role::Primary)?;
    let p = Dsn::managed(primary.addr.port());
    block(prepare_table(&p, workload))?;
    let replica = start_as(&settings, None, false, Role::ReplicaOf(p.port))?;
    let r = Dsn::managed(replica.addr.port());
    block(wait_streaming(&p, STREAMING_WITHIN))?;
    if settings.synchronous_replica {
        // Only now: with a synchronous standby named before one streams,
        // the primary's own set-up would wait for ever.
        block(synchronous_standby(&p))?;
    }
    let node = |server: ManagedServer, dsn: &Dsn| -> Result<Node<Postgres>, TargetError> {
        Ok(Node {
            server: Some(server),
            facts: block_quick(server_facts(dsn))?,
            dsn: dsn.clone(),
            endpoint: None,
        })
    };
    let (primary, replica) = (node(primary, &p)?, node(replica, &r)?);
    let replication = Replication {
        // Statements only clients run: WAL replay runs none.
        read_counters: &["get", "search", "scan"],
        lag: Box::new(move || block_quick(wal_lag(&p)).ok()),
    };
    crate::sql_server::open_pair(spec, workload, primary, replica, replication)
}

/// Makes the primary at `p` wait for its replica at each commit, and
/// waits until new connections see it so.
async fn synchronous_standby(p: &Dsn) -> Result<(), TargetError> {
    let fail = |e: tokio_postgres::Error| {
        let detail = e.as_db_error().map(|d| d.message().to_string());
        TargetError::Server(format!(
            "cannot make the postgres replica synchronous: {}",
            detail.unwrap_or_else(|| e.to_string())
        ))
    };
    let c = connect(p).await?;
    // Two statements: ALTER SYSTEM refuses to run inside a transaction,
    // which a batch of several is.
    c.batch_execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        .await
        .map_err(fail)?;
    c.batch_execute("SELECT pg_reload_conf()")
        .await
        .map_err(fail)?;
    // The reload reaches new backends a moment later.
    for _ in 0..100 {
        let names: String = connect(p)
            .await?
            .query_one("SHOW synchronous_standby_names", &[])
            .await
            .map_err(fail)?
            .get(0);
        if names == "*" {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(TargetError::Server(
        "postgres did not take synchronous_standby_names = '*' within 5 s".into(),
    ))
}

/// Waits until the primary at `p` streams WAL to a replica.
async fn wait_streaming(p: &Dsn, within: Duration) -> Result<(), TargetError> {
    let c = connect(p).await?;
    let start = std::time::Instant::now();
    loop {
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
                &[],
            )
            .await
            .map_err(TargetError::cause)?
            .get(0);
        if n > 0 {
            return Ok(());
        }
        if start.elapsed() > within {
            return Err(TargetError::Server(format!(
                "the postgres replica did not stream from its primary ({}) within {} s",
                p.describe(),
                within.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Bytes of WAL the replica has still to replay of what the primary at
/// `p` has written, as the primary sees it (`pg_stat_replication`, where
/// the replica reports its replay position each second and after each
/// flush): one snapshot, and no call to a replica that may be stalled.
async fn wal_lag(p: &Dsn) -> Result<u64, TargetError> {
    let c = connect(p).await?;
    let lag: Option<i64> = c
        .query_opt(
            "SELECT (pg_current_wal_lsn() - replay_lsn)::bigint FROM pg_stat_replication",
            &[],
        )
        .await
        .map_err(TargetError::cause)?
        .ok_or_else(|| TargetError::Server("the replica is not connected".into()))?
        .get(0);
    lag.map(|b| b.max(0) as u64)
        .ok_or_else(|| TargetError::Server("the replica reported no replay position".into()))
}

impl AsyncDriver for PgDriver {
    fn record_count(&self) -> Option<u64> {
        let dsn = self.reach.primary().clone();
        let table = match (self.profile, self.fields > 1) {
            (true, _) => "profile",
            (false, true) => "usertable",
            (false, false) => "kv",
        };
        block(async move {
            let c = connect(&dsn).await?;
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .await
                .map_err(TargetError::cause)?
                .get(0);
            Ok(n as u64)
        })
        .ok()
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        let dsn = self.reach.primary().clone();
        let read = block_quick(async move {
            let c = connect(&dsn).await?;
            let server = |e: tokio_postgres::Error| TargetError::cause(e);
            // One simple query is one round trip, which bounds the error.
            let sent = std::time::SystemTime::now();
            let rows = c
                .simple_query("SELECT extract(epoch FROM clock_timestamp())")
                .await
                .map_err(server)?;
            let received = std::time::SystemTime::now();
            let epoch: f64 = rows
                .iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0)?.parse().ok(),
                    _ => None,
                })
                .ok_or_else(|| TargetError::Server("clock_timestamp() gave no time".into()))?;
            Ok(bakeoff_core::readings::ClockReading {
                sent,
                server: std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(epoch),
                received,
            })
        });
        Some(read.map_err(|e| std::io::Error::other(e.to_string())))
    }

    fn counters(&self) -> Option<Counters> {
        let dsn = self.reach.primary().clone();
        let mut statements = vec![
            ("get", GET.to_string()),
            ("put", PUT.into()),
            ("del", DEL.into()),
            ("put", PROFILE_PUT.into()),
            ("scan", SCAN.into()),
        ];
        statements.extend(search_statements(|n| format!("${n}")).map(|s| ("search", s)));
        if self.fields > 1 {
            let t = fields_table(self.fields);
            statements.extend([("get", t.get()), ("put", t.put()), ("del", t.del())]);
            statements.push(("scan", t.scan()));
            statements.extend((0..self.fields).map(|f| ("put", t.put_field(f))));
        }
        block_quick(async move {
            let c = connect(&dsn).await?;
            let mut out = Counters::new();
            for (name, sql) in statements {
                let calls: Option<i64> = c
                    .query_one(
                        "SELECT sum(calls)::bigint FROM pg_stat_statements WHERE query = $1",
                        &[&sql],
                    )
                    .await
                    .map_err(TargetError::cause)?
                    .get(0);
                *out.entry(name.to_string()).or_default() += calls.unwrap_or(0) as u64;
            }
            // Batched loads: one multi-row upsert per batch, as many texts
            // as batch sizes.
            let batches: Option<i64> = c
                .query_one(
                    "SELECT sum(calls)::bigint FROM pg_stat_statements WHERE query LIKE $1",
                    &[&"INSERT INTO kv (k, v) VALUES ($1, $2), %"],
                )
                .await
                .map_err(TargetError::cause)?
                .get(0);
            *out.entry("put".to_string()).or_default() += batches.unwrap_or(0) as u64;
            Ok(out)
        })
        .ok()
    }

    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        let dsn = self.reach.primary().clone();
        let timed = self.timed_statements();
        let times = block_quick(async move {
            let c = connect(&dsn).await?;
            let server = |e: tokio_postgres::Error| TargetError::cause(e);
            let texts: Vec<&str> = timed.iter().map(|(_, _, sql)| sql.as_str()).collect();
            // One round trip: every statement's calls and time (ms).
            let rows = c
                .query(
                    "SELECT query, sum(calls)::bigint, sum(total_exec_time)::float8 \
                     FROM pg_stat_statements WHERE query = ANY($1) GROUP BY query",
                    &[&texts],
                )
                .await
                .map_err(server)?;
            let mut out: Vec<CommandTime> = Vec::new();
            for (command, kinds, sql) in &timed {
                let (calls, ms) = rows
                    .iter()
                    .find(|r| r.get::<_, &str>(0) == sql)
                    .map_or((0, 0.0), |r| (r.get::<_, i64>(1), r.get::<_, f64>(2)));
                match out.iter_mut().find(|t| t.command == *command) {
                    Some(t) => {
                        t.calls += calls as u64;
                        t.usec += (ms * 1e3).round() as u64;
                    }
                    None => out.push(CommandTime {
                        command: command.to_string(),
                        kinds,
                        calls: calls as u64,
                        usec: (ms * 1e3).round() as u64,
                        apart: false,
                        histogram_usec: Vec::new(),
                    }),
                }
            }
            // The commits' WAL writes and flushes, outside the statements'
            // time: per write statement (where the server times them).
            let wal: Option<f64> = c
                .query_one(
                    "SELECT (wal_write_time + wal_sync_time)::float8 FROM pg_stat_wal \
                     WHERE current_setting('track_wal_io_timing')::bool",
                    &[],
                )
                .await
                .ok()
                .map(|r| r.get(0));
            if let Some(ms) = wal {
                let writes = out
                    .iter()
                    .filter(|t| {
                        t.kinds
                            .iter()
                            .any(|k| k.writes_value() || *k == OpKind::Delete)
                    })
                    .map(|t| t.calls)
                    .sum();
                out.push(CommandTime {
                    command: "commit: WAL write and flush (pg_stat_wal), per write".into(),
                    kinds: WRITES,
                    calls: writes,
                    usec: (ms * 1e3).round() as u64,
                    apart: true,
                    histogram_usec: Vec::new(),
                });
            }
            Ok(out)
        });
        times.ok().map(|t| {
            (
                "pg_stat_statements (calls, total_exec_time) and pg_stat_wal",
                t,
            )
        })
    }

    fn background_source(&self, managed: bool) -> Option<(&'static str, Duration)> {
        managed.then_some((
            "the server's log: checkpoint and autovacuum lines, with their times; read every 1 s",
            Duration::from_secs(1),
        ))
    }

    fn provoke(&self, work: bakeoff_core::plan::Work) -> Result<(), TargetError> {
        if work != bakeoff_core::plan::Work::Checkpoint {
            return Err(TargetError::Client(format!(
                "postgres cannot be asked for {}",
                work.name()
            )));
        }
        let dsn = self.reach.primary().clone();
        // A checkpoint writes every dirty buffer before it answers.
        crate::async_target::block_within(Duration::from_secs(60), async move {
            let c = connect(&dsn).await?;
            c.batch_execute("CHECKPOINT")
                .await
                .map_err(TargetError::during("CHECKPOINT"))
        })
    }

    fn logs_background(&self) -> bool {
        true
    }

    fn logged_background(&self, text: &str) -> (Vec<bakeoff_core::target::LoggedWork>, usize) {
        log::logged_work(text)
    }

    fn no_background(&self, _managed: bool) -> Option<&'static str> {
        Some("none read: bakeoff reads PostgreSQL's checkpoints and autovacuums from the log of a server it starts, and did not start this one")
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        if self.fields > 1 {
            FIELDS_RULES
        } else {
            KV_RULES
        }
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }
}

/// How pg_stat_statements' calls add up to bakeoff's requests on table
/// kv (and profile).
const KV_RULES: &[CounterRule] = &[
    CounterRule {
        what: "SELECT by key calls (pg_stat_statements)",
        counters: &["get"],
        kinds: &[OpKind::Get],
    },
    CounterRule {
        what: "INSERT … ON CONFLICT calls (pg_stat_statements)",
        counters: &["put"],
        kinds: &[OpKind::Set, OpKind::Update],
    },
    DEL_RULE,
    CounterRule {
        what: "search calls (pg_stat_statements)",
        counters: &["search"],
        kinds: &[OpKind::Search],
    },
    CounterRule {
        what: "scan calls: SELECT … WHERE k >= $1 ORDER BY k LIMIT $2 (pg_stat_statements)",
        counters: &["scan"],
        kinds: &[OpKind::Scan],
    },
];

/// The same on table usertable, of a column per field.
const FIELDS_RULES: &[CounterRule] = &[
    CounterRule {
        what: "SELECT field0, … by key calls (pg_stat_statements)",
        counters: &["get"],
        kinds: &[OpKind::Get],
    },
    CounterRule {
        what: "INSERT … ON CONFLICT and UPDATE … SET field<j> calls (pg_stat_statements)",
        counters: &["put"],
        kinds: &[OpKind::Set, OpKind::Update],
    },
    DEL_RULE,
    CounterRule {
        what:
            "scan calls: SELECT k, field0, … WHERE k >= $1 ORDER BY k LIMIT $2 (pg_stat_statements)",
        counters: &["scan"],
        kinds: &[OpKind::Scan],
    },
];

/// The kinds of operation that write (for the commits' WAL time).
const WRITES: &[OpKind] = &[OpKind::Set, OpKind::Update, OpKind::Insert, OpKind::Delete];

impl PgDriver {
    /// The statements whose time the server keeps, as (name shown, the
    /// operations each serves, its text as pg_stat_statements holds it).
    fn timed_statements(&self) -> Vec<(&'static str, &'static [OpKind], String)> {
        if self.fields > 1 {
            let t = fields_table(self.fields);
            let mut all = vec![
                ("SELECT by key", &[OpKind::Get][..], t.get()),
                (
                    "INSERT … ON CONFLICT",
                    &[OpKind::Set, OpKind::Insert][..],
                    t.put(),
                ),
                ("DELETE", &[OpKind::Delete][..], t.del()),
                ("scan", &[OpKind::Scan][..], t.scan()),
            ];
            all.extend((0..self.fields).map(|f| {
                (
                    "UPDATE … SET field<j>",
                    &[OpKind::Update][..],
                    t.put_field(f),
                )
            }));
            all
        } else {
            vec![
                ("SELECT by key", &[OpKind::Get][..], GET.to_string()),
                (
                    "INSERT … ON CONFLICT",
                    &[OpKind::Set, OpKind::Update, OpKind::Insert][..],
                    PUT.to_string(),
                ),
                ("DELETE", &[OpKind::Delete][..], DEL.to_string()),
                ("scan", &[OpKind::Scan][..], SCAN.to_string()),
            ]
        }
    }
}

/// Deletes, on either table.
const DEL_RULE: CounterRule = CounterRule {
    what: "DELETE calls (pg_stat_statements)",
    counters: &["del"],
    kinds: &[OpKind::Delete],
};

/// What `postgres` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "postgres",
    summary: "PostgreSQL (tables kv, usertable and profile, prepared statements, one connection per client)",
    package: "postgresql",
    reach: crate::kind::Reach::Server {
        program: "postgres",
        scheme: "postgres",
        url_options: &["dbname"],
        credentials: true,
        topologies: &["primary-replica"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SEARCH_SCAN,
        pipelining: true,
        batch_load: true,
        requests: &[bakeoff_core::plan::RequestMode::Connect],
        no_scan: "PostgreSQL scans table kv by its primary key",
    },
    in_default_comparison: true,
    settings: SETTINGS,
    durability: DURABILITY,
    provokes: &[bakeoff_core::plan::Work::Checkpoint],
};

/// `postgres`, as the registry knows it.
pub struct Postgres;

impl crate::kind::TargetKind for Postgres {
    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn available(&self) -> Result<(), TargetError> {
        available()
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        PgSettings::parse(settings).map(|_| ())
    }

    /// Checks an external endpoint answers and accepts the credentials.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        let settings = PgSettings::parse(plan.settings_of(spec))?;
        match dsn_of(spec) {
            None => crate::settings::fixed_port_free("postgres", settings.port),
            Some(dsn) => block_quick(async {
                let c = connect(&dsn).await?;
                c.simple_query("SELECT 1")
                    .await
                    .map(|_| ())
                    .map_err(|e| TargetError::Server(explain(&dsn, e)))
            }),
        }
    }

    /// Opens the target: starts postgres (one, or a primary and its replica),
    /// or connects to the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        if workload.topology == Topology::PrimaryReplica {
            return open_replicated(spec, plan, workload);
        }
        crate::sql_server::open_single::<Self>(spec, plan, workload)
    }
}

impl SqlServer for Postgres {
    type Dsn = Dsn;
    type Driver = PgDriver;
    const PRODUCT: &'static str = "PostgreSQL";

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
        let mut server = start_on(plan.settings_of(spec), None, workload.cuts_power())?;
        server.limit(bakeoff_servers::Limits::of(workload))?;
        let dsn = Dsn::managed(server.addr.port());
        Ok((server, dsn))
    }
    fn prepare(dsn: &Dsn, workload: &Workload) -> Result<ServerFacts, TargetError> {
        block(prepare_table(dsn, workload))?;
        block_quick(server_facts(dsn))
    }
    fn driver(reach: Reach<Dsn>, workload: &Workload) -> Result<PgDriver, TargetError> {
        PgDriver::new(
            reach,
            workload.record == RecordKind::Profile,
            workload.fields as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    /// PostgreSQL's scan is the shared one, its placeholders numbered.
    #[test]
    fn the_scan_is_the_shared_statement() {
        let numbered = crate::sql::SCAN
            .replacen('?', "$1", 1)
            .replacen('?', "$2", 1);
        assert_eq!(super::SCAN, numbered);
    }
}
