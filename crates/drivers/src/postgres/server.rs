//! The server: where it is (its DSN), connecting, the tables made, its
//! facts, and a PostgreSQL bakeoff starts (initdb, postgres, as the
//! `postgres` user).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bakeoff_core::error::{ConnectError, TargetError};
use bakeoff_core::plan::{Endpoint, TargetSpec, Workload};
use bakeoff_core::profile::RecordKind;
use bakeoff_core::recorder::ErrorKind;
use bakeoff_core::session::io_error_kind;
use bakeoff_servers::{ManagedServer, ServerCommand, ServerError};
use tokio_postgres::{Client, Config, NoTls};

use super::settings::{PgSettings, BIN_DIRS};
use crate::admin::{resolve, Address};
use crate::async_target::{block, block_quick};
use crate::codec::postgres_fields::table as fields_table;

/// How to reach the server.
#[derive(Clone)]
pub(crate) struct Dsn {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: String,
    pub(super) password: Option<String>,
    pub(super) dbname: String,
}

impl Dsn {
    /// A server bakeoff started: superuser `bakeoff` on 127.0.0.1.
    pub(super) fn managed(port: u16) -> Self {
        Dsn {
            host: "127.0.0.1".into(),
            port,
            user: "bakeoff".into(),
            password: None,
            dbname: "postgres".into(),
        }
    }

    pub(super) fn config(&self) -> Config {
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
    pub(super) fn socket(&self) -> Option<std::path::PathBuf> {
        self.host
            .starts_with('/')
            .then(|| std::path::Path::new(&self.host).join(format!(".s.PGSQL.{}", self.port)))
    }

    /// Where the codec's connections go: the socket, or the host resolved.
    pub(super) fn address(&self) -> Result<Address, TargetError> {
        match self.socket() {
            Some(path) => Ok(Address::Unix(path)),
            None => resolve(&self.host, self.port).map(Address::Tcp),
        }
    }

    pub(super) fn describe(&self) -> String {
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
pub(super) const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// Opens a connection within [`CONNECT_WITHIN`]; the connection's own
/// task is left to the caller to spawn.
pub(super) async fn open_connection(
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
pub(super) async fn connect(dsn: &Dsn) -> Result<Client, ConnectError> {
    let (client, conn) = open_connection(dsn).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Connects from inside the worker loop (a LocalSet).
pub(super) async fn connect_local(dsn: &Dsn) -> Result<Client, ConnectError> {
    let (client, conn) = open_connection(dsn).await?;
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// A failed connection in words a user can act on: credentials refused, or
/// no server there, or not PostgreSQL.
pub(super) fn explain(dsn: &Dsn, e: tokio_postgres::Error) -> String {
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

/// How a failed connection attempt counts: the server turning it away
/// ("too many clients") is a refusal; socket errors by their kind; the
/// driver's own connect timeout is a timeout.
pub(super) fn connect_kind(e: &tokio_postgres::Error) -> ErrorKind {
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

pub(super) fn dsn_of(spec: &TargetSpec) -> Option<Dsn> {
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

/// Table kv, of one value per key.
pub(super) const KV_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BYTEA NOT NULL)";

/// Table profile, of seed 002's records.
pub(super) const PROFILE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS profile (id BIGINT PRIMARY KEY, \
     name TEXT NOT NULL, sex TEXT NOT NULL, province TEXT NOT NULL, city TEXT NOT NULL, \
     payload BYTEA NOT NULL)";

/// Creates the workload's table (emptied before a load) and its indexes.
pub(super) async fn prepare_table(dsn: &Dsn, workload: &Workload) -> Result<(), TargetError> {
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
pub(super) async fn server_facts(
    dsn: &Dsn,
) -> Result<(String, BTreeMap<String, String>), TargetError> {
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
pub(super) enum Role {
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
pub(super) fn run_tool(
    cmd: &mut std::process::Command,
    dir: &Path,
    what: &str,
) -> Result<(), ServerError> {
    let out = cmd
        .current_dir(dir)
        .output()
        .map_err(|source| ServerError::Prepare {
            what: format!("cannot run {what}"),
            source,
        })?;
    if !out.status.success() {
        return Err(ServerError::InitFailed {
            program: what.into(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().into(),
        });
    }
    Ok(())
}

pub(super) fn start_as(
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
                std::fs::write(&file, pw).map_err(|source| ServerError::Prepare {
                    what: format!("cannot write {}", file.display()),
                    source,
                })?;
                std::os::unix::fs::chown(&file, Some(ids.0), Some(ids.1)).map_err(|source| {
                    ServerError::Prepare {
                        what: format!("cannot hand {} to postgres", file.display()),
                        source,
                    }
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

/// PostgreSQL: what it does its own way, for [`crate::sql_server::SqlKind`].
pub struct Postgres;
