//! The server: where it is (its DSN), connecting, the tables made, its
//! facts, and a mariadbd bakeoff starts.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bakeoff_core::error::{ConnectError, TargetError};
use bakeoff_core::plan::{Endpoint, RequestMode, TargetSpec, Workload};
use bakeoff_core::profile::RecordKind;
use bakeoff_core::recorder::ErrorKind;
use bakeoff_core::session::io_error_kind;
use bakeoff_servers::{Limits, ManagedServer, ServerCommand, ServerError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};

use super::settings::MariaSettings;
use crate::admin::{resolve, Address};
use crate::async_target::block_quick;
use crate::codec::mysql_fields::table as fields_table;

/// Where a MariaDB server takes SQL connections.
#[derive(Clone)]
pub(crate) struct Dsn {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: String,
    pub(super) password: Option<String>,
    /// The server's Unix socket (`?socket=PATH`, as MySQL clients take
    /// it), when the connections go there rather than to host:port.
    pub(super) socket: Option<std::path::PathBuf>,
}

impl Dsn {
    pub(super) fn opts(&self, db: Option<&str>) -> Opts {
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
    pub(super) fn address(&self) -> Result<Address, TargetError> {
        match &self.socket {
            Some(path) => Ok(Address::Unix(path.clone())),
            None => resolve(&self.host, self.port).map(Address::Tcp),
        }
    }

    pub(super) fn describe(&self) -> String {
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
pub(super) const ER_ACCESS_DENIED: u16 = 1045;

/// MariaDB's "Too many connections" (and its per-user variant).
pub(super) const ER_CON_COUNT: [u16; 2] = [1040, 1203];

/// How a failed connection attempt counts: the server turning it away for
/// too many connections is a refusal; socket errors by their kind.
pub(super) fn connect_kind(e: &mysql_async::Error) -> ErrorKind {
    match e {
        mysql_async::Error::Server(s) if ER_CON_COUNT.contains(&s.code) => ErrorKind::Refused,
        mysql_async::Error::Server(_) => ErrorKind::ServerError,
        mysql_async::Error::Io(mysql_async::IoError::Io(io)) => io_error_kind(io),
        mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed) => ErrorKind::Reset,
        _ => ErrorKind::ServerError,
    }
}

/// Whether `path` (a URL's `?socket=`) is a socket, with what it is
/// instead: a connection to a regular file fails with a bare "connection
/// refused".
pub(super) fn socket_there(path: &Path) -> Result<(), TargetError> {
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

/// Table profile, of seed 002's records, in
/// ASCII with binary collation: the same comparisons as the other targets.
pub(super) const PROFILE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS bakeoff.profile (id BIGINT PRIMARY KEY, \
     name VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     sex CHAR(1) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     province CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     city CHAR(2) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, \
     payload LONGBLOB NOT NULL) ENGINE=InnoDB";

/// Creates the workload's table (emptied before a load) and its indexes,
/// and reads the server's version and settings.
pub(crate) async fn prepare_table(dsn: &Dsn, workload: &Workload) -> Result<(), TargetError> {
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
    Ok(())
}

/// The version and settings in force of the server at `dsn`.
pub(super) async fn server_facts(
    dsn: &Dsn,
) -> Result<(String, BTreeMap<String, String>), TargetError> {
    facts(&mut connect(dsn, None).await?).await
}

/// The version and settings in force of the server `c` is connected to.
pub(super) async fn facts(c: &mut Conn) -> Result<(String, BTreeMap<String, String>), TargetError> {
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
        std::fs::create_dir_all(&tmp).map_err(|source| ServerError::Prepare {
            what: format!("cannot create {}", tmp.display()),
            source,
        })?;
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
            .map_err(|source| ServerError::Prepare {
                what: "cannot run mariadb-install-db".into(),
                source,
            })?;
        if !out.status.success() {
            return Err(ServerError::InitFailed {
                program: "mariadb-install-db".into(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().into(),
            });
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

/// MariaDB: what it does its own way, for [`crate::sql_server::SqlKind`].
pub struct Mariadb;
