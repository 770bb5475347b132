//! The `postgres` target: PostgreSQL through tokio-postgres, table
//! `kv(k TEXT PRIMARY KEY, v BYTEA)`, prepared statements, one connection
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

use bakeoff_core::async_loop::AsyncSession;
use bakeoff_core::driver::{Driver, Job, WorkerOutput};
use bakeoff_core::plan::{Endpoint, Plan, TargetSpec, Workload};
use bakeoff_core::runner::Target;
use bakeoff_core::workload::OpKind;
use bakeoff_servers::{ManagedServer, ServerCommand};
use tokio_postgres::{Client, Config, NoTls, Statement};

use crate::settings::Settings;
use crate::sql::{block, SqlDriver, SqlTarget};

const BIN_DIRS: &[&str] = &["/usr/lib/postgresql/*/bin"];
const KNOWN: &str = "shared_buffers, synchronous_commit (on, off, local, remote_write, remote_apply), fsync, max_connections, port";

struct PgSettings {
    shared_buffers: Option<u64>,
    synchronous_commit: Option<String>,
    fsync: Option<String>,
    max_connections: u64,
    port: Option<u16>,
}

impl PgSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, String> {
        let mut s = Settings::new(table);
        let out = PgSettings {
            shared_buffers: s.bytes("shared_buffers")?,
            synchronous_commit: s.choice(
                "synchronous_commit",
                &["on", "off", "local", "remote_write", "remote_apply"],
            )?,
            fsync: s.choice("fsync", &["on", "off", "true", "false"])?,
            max_connections: s.positive("max_connections")?.unwrap_or(300),
            port: s.port("port")?,
        };
        s.finish(KNOWN)?;
        Ok(out)
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
struct Dsn {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    dbname: String,
}

impl Dsn {
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

    fn describe(&self) -> String {
        format!(
            "postgres at {}:{} (user {}, database {})",
            self.host, self.port, self.user, self.dbname
        )
    }
}

/// Connects and drives the connection on the current runtime.
async fn connect(dsn: &Dsn) -> Result<Client, String> {
    let (client, conn) = dsn
        .config()
        .connect(NoTls)
        .await
        .map_err(|e| explain(dsn, e))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Connects from inside the worker loop (a LocalSet).
async fn connect_local(dsn: &Dsn) -> Result<Client, String> {
    let (client, conn) = dsn
        .config()
        .connect(NoTls)
        .await
        .map_err(|e| explain(dsn, e))?;
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(client)
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
    } else {
        format!("{}: {text} {detail}", dsn.describe())
    }
}

/// One client's connection and statements.
pub struct PgSession {
    client: Client,
    get: Statement,
    put: Statement,
    del: Statement,
}

impl AsyncSession for PgSession {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, String> {
        out.clear();
        let k = std::str::from_utf8(key).map_err(|e| e.to_string())?;
        match self
            .client
            .query_opt(&self.get, &[&k])
            .await
            .map_err(|e| e.to_string())?
        {
            Some(row) => {
                let v: &[u8] = row.try_get(0).map_err(|e| e.to_string())?;
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        let k = std::str::from_utf8(key).map_err(|e| e.to_string())?;
        self.client
            .execute(&self.put, &[&k, &value])
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn delete(&mut self, key: &[u8]) -> Result<bool, String> {
        let k = std::str::from_utf8(key).map_err(|e| e.to_string())?;
        self.client
            .execute(&self.del, &[&k])
            .await
            .map(|n| n > 0)
            .map_err(|e| e.to_string())
    }
}

const GET: &str = "SELECT v FROM kv WHERE k = $1";
const PUT: &str =
    "INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";
const DEL: &str = "DELETE FROM kv WHERE k = $1";

/// The driver: opens sessions inside the shared async loop.
pub struct PgDriver {
    dsn: Dsn,
}

impl Driver for PgDriver {
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, String> {
        let dsn = self.dsn.clone();
        bakeoff_core::async_loop::run_worker(
            || {
                let dsn = dsn.clone();
                async move {
                    let client = connect_local(&dsn).await?;
                    let prep = |sql| client.prepare(sql);
                    let (get, put, del) = (prep(GET).await, prep(PUT).await, prep(DEL).await);
                    let e =
                        |r: Result<Statement, tokio_postgres::Error>| r.map_err(|e| e.to_string());
                    Ok(PgSession {
                        get: e(get)?,
                        put: e(put)?,
                        del: e(del)?,
                        client,
                    })
                }
            },
            job,
            worker,
        )
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Get => GET.into(),
            OpKind::Set | OpKind::Update => PUT.into(),
            OpKind::Delete => DEL.into(),
            OpKind::Search => "not supported yet".into(),
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

/// Checks `[servers.postgres]`.
pub fn check(t: Option<&toml::Table>) -> Result<(), String> {
    PgSettings::parse(t).map(|_| ())
}

/// Whether PostgreSQL can be started here.
pub fn available() -> Result<(), String> {
    for program in ["postgres", "initdb"] {
        if bakeoff_servers::find_program(program, BIN_DIRS).is_none() {
            return Err(format!(
                "`{program}` is not installed; install it with `apt-get install postgresql`"
            ));
        }
    }
    bakeoff_servers::user_ids("postgres").map(|_| ())
}

/// Checks an external endpoint answers and accepts the credentials.
pub fn probe(spec: &TargetSpec, plan: &Plan) -> Result<(), String> {
    let settings = PgSettings::parse(plan.servers.get(&spec.name))?;
    match dsn_of(spec) {
        None => match settings.port {
            Some(p) if !bakeoff_servers::port_is_free(p) => Err(format!(
                "port {p} (servers.postgres.port) on 127.0.0.1 is already in use; free it, or remove the setting"
            )),
            _ => Ok(()),
        },
        Some(dsn) => block(async {
            let c = connect(&dsn).await?;
            c.simple_query("SELECT 1").await.map(|_| ()).map_err(|e| explain(&dsn, e))
        }),
    }
}

async fn prepare_table(
    dsn: &Dsn,
    load: bool,
) -> Result<(String, BTreeMap<String, String>), String> {
    let c = connect(dsn).await?;
    let q = |sql: &'static str| c.simple_query(sql);
    q("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BYTEA NOT NULL)")
        .await
        .map_err(|e| e.to_string())?;
    if load {
        q("TRUNCATE kv").await.map_err(|e| e.to_string())?;
    }
    let version: String = c
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| e.to_string())?
        .get(0);
    let mut settings = BTreeMap::new();
    for name in [
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "max_connections",
        "wal_level",
    ] {
        if let Ok(row) = c.query_one(&format!("SHOW {name}"), &[]).await {
            settings.insert(name.to_string(), row.get::<_, String>(0));
        }
    }
    Ok((version, settings))
}

/// Opens the target: starts postgres, or connects to the URL.
pub fn open(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
) -> Result<Box<dyn Target>, String> {
    let settings = PgSettings::parse(plan.servers.get(&spec.name))?;
    let (server, dsn, endpoint) = match dsn_of(spec) {
        Some(dsn) => {
            let url = match &spec.endpoint {
                Endpoint::External { url, .. } => Some(url.clone()),
                Endpoint::Managed => None,
            };
            (None, dsn, url)
        }
        None => {
            let init = |binary: &Path, dir: &Path| -> Result<(), String> {
                let initdb = binary.with_file_name("initdb");
                let ids = bakeoff_servers::user_ids("postgres")?;
                let out = bakeoff_servers::command_as(&initdb, Some(ids))
                    .args([
                        "-D",
                        &dir.join("data").display().to_string(),
                        "-U",
                        "bakeoff",
                        "--auth=trust",
                        "-E",
                        "UTF8",
                        "--locale=C",
                    ])
                    .current_dir(dir)
                    .output()
                    .map_err(|e| format!("cannot run {}: {e}", initdb.display()))?;
                if !out.status.success() {
                    return Err(format!(
                        "initdb failed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                Ok(())
            };
            let cmd = ServerCommand {
                program: "postgres",
                package: "postgresql",
                port: settings.port,
                args: &|port, dir| settings.args(port, dir),
                ready: &|addr| {
                    let dsn = Dsn {
                        host: "127.0.0.1".into(),
                        port: addr.port(),
                        user: "bakeoff".into(),
                        password: None,
                        dbname: "postgres".into(),
                    };
                    block(async { connect(&dsn).await.map(|_| ()) }).is_ok()
                },
                ready_timeout: Duration::from_secs(30),
                extra_dirs: BIN_DIRS,
                run_as: Some("postgres"),
                init: Some(&init),
            };
            let mut server = ManagedServer::start(&cmd).map_err(|e| e.to_string())?;
            if let Some(limit) = workload.memory_cap {
                server.cap_memory(limit)?;
            }
            let dsn = Dsn {
                host: "127.0.0.1".into(),
                port: server.addr.port(),
                user: "bakeoff".into(),
                password: None,
                dbname: "postgres".into(),
            };
            (Some(server), dsn, None)
        }
    };
    let (version, recorded) = block(prepare_table(&dsn, workload.load))?;
    Ok(Box::new(SqlTarget::new(
        spec,
        endpoint,
        format!("PostgreSQL {version}"),
        recorded,
        server,
        PgDriver { dsn },
    )))
}

impl SqlDriver for PgDriver {
    fn record_count(&self) -> Option<u64> {
        let dsn = self.dsn.clone();
        block(async move {
            let c = connect(&dsn).await?;
            let n: i64 = c
                .query_one("SELECT count(*) FROM kv", &[])
                .await
                .map_err(|e| e.to_string())?
                .get(0);
            Ok(n as u64)
        })
        .ok()
    }
}
