//! The `mongodb` target: any server speaking the MongoDB wire protocol,
//! through the official async Rust driver. Collection `kv` holds
//! `{_id: key, v: binary}`, collection `profile` the rows of 000-search
//! (`{_id: key, id, name, sex, province, city, payload}`; a string `_id`,
//! as FerretDB looks up string ids in its storage but scans for others). One client (and one
//! pooled connection) per bakeoff client.
//!
//! Managed: `mongod` if it is installed; otherwise FerretDB (a
//! MongoDB-compatible server storing its data in SQLite files, installed by
//! `scripts/install-ferretdb.sh`), because Debian 12 packages no MongoDB
//! server. Either runs in a temporary directory on a free loopback port.
//! External: `mongodb://[user:password@]host:port`.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bakeoff_core::async_loop::Sessions;
use bakeoff_core::driver::{Carrier, Driver, Job};
use bakeoff_core::error::ConnectError;
use bakeoff_core::error::TargetError;
use bakeoff_core::keys::Key;
use bakeoff_core::plan::{Endpoint, Plan, TargetSpec, Workload};
use bakeoff_core::profile::{Profile, Query, RecordKind, SearchKind};
use bakeoff_core::recorder::ErrorKind;
use bakeoff_core::result::CounterCheck;
use bakeoff_core::session::{io_error_kind, Session, SessionError, SessionResult};
use bakeoff_core::target::{compare_counters, CounterRule, Counters, Sent};
use bakeoff_core::workload::OpKind;
use bakeoff_servers::{ManagedServer, ServerCommand, ServerError};
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use mongodb::options::{ClientOptions, Credential, ServerAddress};
use mongodb::{Client, Collection};

use crate::async_target::{block, block_quick, profile_columns, AsyncDriver, AsyncTarget};
use crate::kind::OpenResult;
use crate::settings::{Durability, Kind, Setting, Settings, PORT};

/// How long the driver looks for the server: a second inside the probe's
/// own deadline ([`crate::async_target::QUICK_WITHIN`]), so that a refused
/// or silent port ends in the driver's reason rather than the deadline's
/// (under load, the two at 5 s raced, and the deadline's won).
const SELECTION_WITHIN: Duration = Duration::from_secs(4);
const _: () =
    assert!(SELECTION_WITHIN.as_millis() + 1000 <= crate::async_target::QUICK_WITHIN.as_millis());

/// `[servers.mongodb]`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "server",
        kind: Kind::Choice(&["auto", "mongod", "ferretdb"]),
        default: Some("auto"),
        help: "which server to start: mongod if installed, else FerretDB",
    },
    Setting {
        name: "cache_size",
        kind: Kind::Bytes,
        default: None,
        help: "mongod's WiredTiger cache",
    },
    Setting {
        name: "ferretdb_backend",
        kind: Kind::Choice(&["postgresql", "sqlite"]),
        default: Some("postgresql"),
        help: "where FerretDB keeps the documents: a PostgreSQL bakeoff starts beside it (2-10x faster here for finds and upserts by _id: bench/ferretdb-backends.sh), or SQLite files",
    },
    PORT,
];
/// What a MongoDB-compatible server promises: mongod acknowledges a write
/// (w:1, no j) before its journal is flushed (every 100 ms), and what
/// FerretDB's backends promise is not declared by any setting here; so
/// memory only, until a measurement shows more.
pub const DURABILITY: Durability = Durability::MEMORY_ONLY;

const DB: &str = "bakeoff";
/// The name under which [`MongoDriver::counters`] keeps the upserts its
/// sessions sent again (not a counter of the server's).
const RETRIED: &str = "bakeoff: upserts sent again";
/// The PostgreSQL database FerretDB keeps its documents in.
const FERRETDB_DATABASE: &str = "ferretdb";
/// Connections FerretDB may open to its PostgreSQL (`pool_max_conns`):
/// its own default, 20, stalled every request at 64 clients of upserts
/// (0 operations, 64 timeouts in 2 s), as each upsert holds one in its
/// transaction; within the 300 the managed PostgreSQL takes.
const FERRETDB_POOL: u32 = 250;
/// Where the two servers may be installed besides PATH.
const BIN_DIRS: &[&str] = &["/usr/bin", "/usr/local/bin"];
const NO_SERVER: &str = "no MongoDB server here: Debian 12 packages no `mongod`. Install MongoDB \
     from mongodb.com, or run `scripts/install-ferretdb.sh` (FerretDB, a server speaking the \
     MongoDB wire protocol), or give a URL: -t mongodb://host:port";

/// Which program serves a managed run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Mongod,
    FerretDb,
}

impl Server {
    fn program(self) -> &'static str {
        match self {
            Server::Mongod => "mongod",
            Server::FerretDb => "ferretdb",
        }
    }
}

struct MongoSettings {
    server: Option<Server>,
    cache_size: Option<u64>,
    /// FerretDB's storage: PostgreSQL (true) or SQLite.
    on_postgres: bool,
    port: Option<u16>,
}

impl MongoSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        let server = match s.choice("server")?.as_deref() {
            Some("mongod") => Some(Server::Mongod),
            Some("ferretdb") => Some(Server::FerretDb),
            _ => None,
        };
        Ok(MongoSettings {
            server,
            cache_size: s.bytes("cache_size")?,
            on_postgres: s.choice("ferretdb_backend")?.as_deref() != Some("sqlite"),
            port: s.port("port")?,
        })
    }

    /// The server a managed run starts: the one asked for, else mongod if
    /// installed, else FerretDB.
    fn server(&self) -> Result<Server, TargetError> {
        let found = |s: Server| bakeoff_servers::find_program(s.program(), BIN_DIRS).is_some();
        match self.server {
            Some(s) if found(s) => Ok(s),
            Some(Server::Mongod) => Err(TargetError::Server(format!(
                "`mongod` is not installed ({NO_SERVER})"
            ))),
            Some(Server::FerretDb) => Err(TargetError::Server(
                "`ferretdb` is not installed; install it with `scripts/install-ferretdb.sh`".into(),
            )),
            None if found(Server::Mongod) => Ok(Server::Mongod),
            None if found(Server::FerretDb) => Ok(Server::FerretDb),
            None => Err(TargetError::Server(NO_SERVER.into())),
        }
    }

    /// `metrics`: FerretDB's metrics port (its debug HTTP listener);
    /// `backend`: the URL of the PostgreSQL database FerretDB keeps its
    /// documents in, if it does not use SQLite.
    fn args(
        &self,
        server: Server,
        port: u16,
        dir: &Path,
        metrics: u16,
        backend: Option<&str>,
    ) -> Vec<String> {
        match server {
            Server::Mongod => {
                let mut a = vec![
                    "--dbpath".to_string(),
                    dir.join("data").display().to_string(),
                    "--port".into(),
                    port.to_string(),
                    "--bind_ip".into(),
                    "127.0.0.1".into(),
                    "--unixSocketPrefix".into(),
                    dir.display().to_string(),
                ];
                if let Some(b) = self.cache_size {
                    a.push("--wiredTigerCacheSizeGB".into());
                    a.push(format!("{:.3}", (b as f64 / (1u64 << 30) as f64).max(0.25)));
                }
                a
            }
            Server::FerretDb => {
                let mut a = vec![format!("--listen-addr=127.0.0.1:{port}")];
                match backend {
                    Some(url) => {
                        a.push("--handler=postgresql".into());
                        a.push(format!("--postgresql-url={url}"));
                    }
                    None => {
                        a.push("--handler=sqlite".into());
                        a.push(format!("--sqlite-url=file:{}/", dir.join("data").display()));
                    }
                }
                a.extend([
                    format!("--state-dir={}", dir.display()),
                    // Its request counters, for the conservation check.
                    format!("--debug-addr=127.0.0.1:{metrics}"),
                    "--telemetry=disable".into(),
                    "--log-level=warn".into(),
                ]);
                a
            }
        }
    }
}

/// How to reach the server.
#[derive(Clone)]
struct Dsn {
    host: String,
    port: u16,
    user: Option<String>,
    password: Option<String>,
}

impl Dsn {
    fn describe(&self) -> String {
        format!("mongodb at {}:{}", self.host, self.port)
    }

    async fn client(&self, pool: u32) -> Result<Client, ConnectError> {
        let mut o = ClientOptions::default();
        o.hosts = vec![ServerAddress::Tcp {
            host: self.host.clone(),
            port: Some(self.port),
        }];
        o.direct_connection = Some(true);
        o.max_pool_size = Some(pool);
        o.connect_timeout = Some(SELECTION_WITHIN);
        o.server_selection_timeout = Some(SELECTION_WITHIN);
        o.app_name = Some("bakeoff".into());
        if let Some(user) = &self.user {
            o.credential = Some(
                Credential::builder()
                    .username(user.clone())
                    .password(self.password.clone())
                    .build(),
            );
        }
        Client::with_options(o)
            .map_err(|e| ConnectError::new(connect_kind(&e), format!("{}: {e}", self.describe())))
    }

    /// A client that has answered a ping.
    async fn connect(&self, pool: u32) -> Result<Client, ConnectError> {
        let c = self.client(pool).await?;
        c.database("admin")
            .run_command(doc! {"ping": 1})
            .await
            .map_err(|e| ConnectError::new(connect_kind(&e), self.explain(e)))?;
        Ok(c)
    }

    fn explain(&self, e: mongodb::error::Error) -> String {
        let text = short_cause(&e);
        if text.contains("Authentication") || text.contains("auth") {
            format!(
                "{} refused the credentials: {text}; check the user and password in the URL",
                self.describe()
            )
        } else {
            format!(
                "cannot connect to {}: {text}; is the server running, are host and port right, and is it a MongoDB server?",
                self.describe()
            )
        }
    }
}

/// What went wrong, in a sentence: the driver's own text, except for a
/// failed server selection, whose text is a dump of its whole topology;
/// from that, the one server's error, if it had one.
fn short_cause(e: &mongodb::error::Error) -> String {
    match &*e.kind {
        mongodb::error::ErrorKind::ServerSelection { message, .. } => {
            match message.split_once("Error: Kind: ") {
                // The socket failed (refused, reset, unreachable): no
                // answer at all, as the I/O error says.
                Some((_, cause)) if cause.trim_start().starts_with("I/O error") => cause
                    .split(", labels")
                    .next()
                    .unwrap_or(cause)
                    .trim()
                    .to_string(),
                Some((_, cause)) => format!(
                    "its answer was not MongoDB's ({})",
                    cause.split(", labels").next().unwrap_or(cause).trim()
                ),
                None => "no MongoDB server answered in time".into(),
            }
        }
        kind => kind.to_string(),
    }
}

/// How a failed connection attempt counts: socket errors by their kind, no
/// server found in time as a timeout, anything else the server's answer.
fn connect_kind(e: &mongodb::error::Error) -> ErrorKind {
    use mongodb::error::ErrorKind as Mongo;
    match &*e.kind {
        Mongo::Io(io) => io_error_kind(io),
        Mongo::ServerSelection { .. } => ErrorKind::Timeout,
        Mongo::ConnectionPoolCleared { .. } => ErrorKind::Reset,
        _ => ErrorKind::ServerError,
    }
}

/// Network trouble loses the session; anything else is the server's answer.
fn fail(e: mongodb::error::Error) -> SessionError {
    use mongodb::error::ErrorKind as K;
    match *e.kind {
        K::Io(_) | K::ServerSelection { .. } | K::ConnectionPoolCleared { .. } => {
            SessionError::Lost(e.to_string())
        }
        _ => SessionError::Server(e.to_string()),
    }
}

/// A write's outcome, its reply dropped.
fn written<T>(r: Result<T, mongodb::error::Error>) -> SessionResult<()> {
    r.map(|_| ()).map_err(fail)
}

/// Record `key` of `kv` as inserted whole: `{_id: key}` and its value's
/// fields `value` (see `MongoSession::value_doc`).
fn kv_doc(key: &[u8], value: Document) -> Document {
    let mut d = doc! {"_id": String::from_utf8_lossy(key).as_ref()};
    d.extend(value);
    d
}

/// Makes FerretDB's finds by `_id` on PostgreSQL index lookups. FerretDB
/// 1.24 pushes `{_id: v}` down as `_jsonb->$1 @> $2`, which the btree
/// index it keeps on `(_jsonb->'_id')` cannot serve, so every find and
/// every upsert scanned the whole collection (44 finds/s at 100,000
/// documents, 5 at 1,000,000: bench/ferretdb-backends.sh). A GIN index on
/// the same expression serves `@>`, once each statement is planned with
/// its parameters (`plan_cache_mode`, set for the database in
/// [`start_on`]): 2,200 finds/s at any size. Run after each collection is
/// made, on every collection table of the database.
async fn index_ids(pg_port: u16) -> Result<(), TargetError> {
    crate::postgres::execute(
        pg_port,
        FERRETDB_DATABASE,
        &format!(
            r#"DO $$ DECLARE t record; BEGIN
  FOR t IN SELECT tablename FROM pg_tables
      WHERE schemaname = '{DB}' AND tablename NOT LIKE '\_ferretdb\_%' LOOP
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON {DB}.%I USING gin ((_jsonb->''_id'') jsonb_path_ops) WITH (fastupdate = off)',
                   left(t.tablename, 50) || '_bakeoff_id', t.tablename);
  END LOOP;
END $$"#
        ),
    )
    .await
}

/// Makes the collection if it is not there (FerretDB makes its table on
/// the first insert; the `_id` index needs the table before the load).
async fn create_collection(db: &mongodb::Database, name: &str) -> Result<(), TargetError> {
    match db.create_collection(name).await {
        Ok(()) => Ok(()),
        // NamespaceExists.
        Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::Command(ref c) if c.code == 48) => {
            Ok(())
        }
        Err(e) => Err(TargetError::cause(e)),
    }
}

/// What the server does for a find by `_id`, from its explain: the scans
/// of PostgreSQL's plan (FerretDB on PostgreSQL), SQLite's query plan
/// rows (FerretDB on SQLite), or mongod's winning plan's stages.
async fn find_by_id_plan(db: &mongodb::Database, coll: &str) -> Option<String> {
    let explained = db
        .run_command(doc! {"explain": {"find": coll, "filter": {"_id": "bk:plan"}, "limit": 1}})
        .await
        .ok()?;
    let planner = explained.get_document("queryPlanner").ok()?;
    let mut out = Vec::new();
    if let Some(Bson::Array(rows)) = planner.get("Plan") {
        // SQLite's EXPLAIN QUERY PLAN, one row per step.
        for row in rows {
            if let Bson::String(r) = row {
                out.push(r.rsplit("detail=").next().unwrap_or(r.as_str()).to_string());
            }
        }
    }
    let mut todo: Vec<&Document> = planner
        .get_document("Plan")
        .into_iter()
        .chain(planner.get_document("winningPlan"))
        .collect();
    while let Some(node) = todo.pop() {
        if let Ok(kind) = node.get_str("Node Type") {
            if kind.contains("Scan") {
                out.push(match node.get_str("Index Name") {
                    Ok(index) => format!("{kind} ({index})"),
                    Err(_) => kind.to_string(),
                });
            }
        }
        if let Ok(stage) = node.get_str("stage") {
            out.push(stage.to_string());
        }
        for key in ["Plans", "inputStages"] {
            if let Ok(children) = node.get_array(key) {
                todo.extend(children.iter().filter_map(Bson::as_document));
            }
        }
        if let Ok(child) = node.get_document("inputStage") {
            todo.push(child);
        }
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// One client's connection and collections.
pub struct MongoSession {
    // Kept so the pool lives as long as the session.
    _client: Client,
    kv: Collection<Document>,
    profile: Collection<Document>,
    /// Upserts sent again, shared by every session of the driver.
    retried: Arc<AtomicU64>,
    /// Fields per record: several are a document's fields `field0` …
    fields: usize,
}

impl MongoSession {
    async fn open(dsn: &Dsn, retried: Arc<AtomicU64>, fields: usize) -> Result<Self, ConnectError> {
        let client = dsn.connect(1).await?;
        let db = client.database(DB);
        Ok(MongoSession {
            kv: db.collection("kv"),
            profile: db.collection("profile"),
            _client: client,
            retried,
            fields,
        })
    }

    /// A record's value as a document's fields: `{v: value}`, or with
    /// several fields `{field0: …, field1: …}`.
    fn value_doc(&self, value: &[u8]) -> Document {
        if self.fields <= 1 {
            return doc! {"v": binary(value)};
        }
        let len = (value.len() / self.fields).max(1);
        let mut d = Document::new();
        for (f, field) in value.chunks(len).take(self.fields).enumerate() {
            d.insert(format!("field{f}"), binary(field));
        }
        d
    }

    /// Appends the value of record document `d` to `out`: its `v`, or its
    /// fields in order.
    fn value_of(&self, d: &mongodb::bson::RawDocument, out: &mut Vec<u8>) -> SessionResult<()> {
        let field = |name: &str, e: mongodb::bson::raw::ValueAccessError| {
            SessionError::Server(format!("field {name}: {e}"))
        };
        if self.fields <= 1 {
            out.extend_from_slice(d.get_binary("v").map_err(|e| field("v", e))?.bytes);
            return Ok(());
        }
        for f in 0..self.fields {
            let name = format!("field{f}");
            out.extend_from_slice(d.get_binary(&name).map_err(|e| field(&name, e))?.bytes);
        }
        Ok(())
    }

    /// Runs the upsert `send` makes, and once more when it failed on a
    /// duplicate key: two upserts of one absent key at once both find
    /// nothing and both insert, and one insert loses (MongoDB documents
    /// this, and retries such upserts itself since 4.2; FerretDB does
    /// not). The second finds the row and replaces it. Counted, so that
    /// the server's request count still equals bakeoff's.
    async fn upsert<F, Fut>(&self, send: F) -> SessionResult<()>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = mongodb::error::Result<mongodb::results::UpdateResult>>,
    {
        match send().await {
            Err(e) if is_duplicate_key(&e) => {
                self.retried.fetch_add(1, Ordering::Relaxed);
                written(send().await)
            }
            r => written(r),
        }
    }
}

/// Whether `e` is a duplicate key (E11000) reply.
fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind as Mk, WriteFailure};
    match e.kind.as_ref() {
        Mk::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        Mk::Command(c) => c.code == 11000,
        _ => e.to_string().contains("E11000") || e.to_string().contains("duplicate key"),
    }
}

fn binary(bytes: &[u8]) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

/// The filter of a search: the same conditions as the SQL targets'
/// (`LIKE '%abc%'` is a regular expression on plain letters).
fn search_filter(q: &Query) -> Document {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let name = || mongodb::bson::Regex {
        pattern: text(&q.name_part),
        options: String::new(),
    };
    let sex = || text(std::slice::from_ref(&q.sex));
    match q.kind {
        SearchKind::Name => doc! {"name": name()},
        SearchKind::Sex => doc! {"sex": sex()},
        SearchKind::Location => doc! {"province": text(&q.province), "city": text(&q.city)},
        SearchKind::All => doc! {
            "name": name(), "sex": sex(), "province": text(&q.province), "city": text(&q.city)
        },
    }
}

/// Profile row `id` as a document, with its `_id` when it is inserted
/// (a replacement takes the `_id` from its filter).
fn profile_doc(id: u64, key: Option<&str>, p: &Profile, payload: &[u8]) -> Document {
    let [name, sex, province, city] = profile_columns(p);
    let mut d = Document::new();
    if let Some(k) = key {
        d.insert("_id", k);
    }
    d.extend(doc! {
        "id": id as i64, "name": name, "sex": sex, "province": province, "city": city,
        "payload": binary(payload)
    });
    d
}

impl Session for MongoSession {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        out.clear();
        let k = String::from_utf8_lossy(key);
        let found = self
            .kv
            .clone_with_type::<mongodb::bson::RawDocumentBuf>()
            .find_one(doc! {"_id": k.as_ref()})
            .await
            .map_err(fail)?;
        match found {
            Some(d) => {
                self.value_of(&d, out)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        let k = String::from_utf8_lossy(key);
        let kv = &self.kv;
        let value = self.value_doc(value);
        self.upsert(|| {
            kv.replace_one(doc! {"_id": k.as_ref()}, value.clone())
                .upsert(true)
                .into_future()
        })
        .await
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }

    async fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> SessionResult<()> {
        let k = String::from_utf8_lossy(key);
        let set = doc! {"$set": {format!("field{field}"): binary(value)}};
        written(self.kv.update_one(doc! {"_id": k.as_ref()}, set).await)
    }

    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        let k = String::from_utf8_lossy(key);
        self.kv
            .delete_one(doc! {"_id": k.as_ref()})
            .await
            .map(|r| r.deleted_count > 0)
            .map_err(fail)
    }

    async fn put_profile(
        &mut self,
        id: u64,
        key: &[u8],
        p: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        let k = String::from_utf8_lossy(key);
        let profile = &self.profile;
        self.upsert(|| {
            profile
                .replace_one(doc! {"_id": k.as_ref()}, profile_doc(id, None, p, payload))
                .upsert(true)
                .into_future()
        })
        .await
    }

    async fn insert(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        written(self.kv.insert_one(kv_doc(key, self.value_doc(value))).await)
    }

    async fn insert_profile(
        &mut self,
        id: u64,
        key: &[u8],
        p: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        let k = String::from_utf8_lossy(key);
        written(
            self.profile
                .insert_one(profile_doc(id, Some(&k), p, payload))
                .await,
        )
    }

    async fn put_batch(&mut self, keys: &[Key], values: &[&[u8]]) -> SessionResult<()> {
        // Batches load fresh records: a plain insertMany, as 002 did.
        let docs = keys
            .iter()
            .zip(values)
            .map(|(k, v)| kv_doc(k, self.value_doc(v)));
        written(self.kv.insert_many(docs).await)
    }

    async fn search(&mut self, q: &Query) -> SessionResult<u64> {
        let mut cursor = self
            .profile
            .find(search_filter(q))
            .projection(doc! {"_id": 1})
            .await
            .map_err(fail)?;
        let mut n = 0;
        while cursor.advance().await.map_err(fail)? {
            n += 1;
        }
        Ok(n)
    }

    async fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        out.clear();
        let k = String::from_utf8_lossy(start);
        // String `_id`s compare bytewise, which is bakeoff's key order. A
        // batch of the limit (the driver asks for one more) brings every
        // record in the find's own reply, and the server closes the cursor
        // there: one find per scan, no getMore or killCursors, unless the
        // records pass the 16 MiB a reply holds.
        let mut cursor = self
            .kv
            .find(doc! {"_id": {"$gte": k.as_ref()}})
            .sort(doc! {"_id": 1})
            .limit(i64::from(limit))
            .batch_size(limit)
            .await
            .map_err(fail)?;
        let mut n = 0;
        let mut record = Vec::new();
        let field = |name: &str, e: mongodb::bson::raw::ValueAccessError| {
            SessionError::Server(format!("field {name}: {e}"))
        };
        while cursor.advance().await.map_err(fail)? {
            let d = cursor.current();
            let key = d.get_str("_id").map_err(|e| field("_id", e))?;
            record.clear();
            self.value_of(d, &mut record)?;
            bakeoff_core::scan::push_row(out, key.as_bytes(), &record);
            n += 1;
        }
        Ok(n)
    }
}

/// The driver: opens sessions inside the shared async loop.
pub struct MongoDriver {
    dsn: Dsn,
    /// Sessions on `dsn`, each counting its retried upserts in `retried`.
    sessions: Sessions<MongoSession>,
    /// Upserts its sessions sent again after a duplicate key.
    retried: Arc<AtomicU64>,
    profile: bool,
    /// Fields per record: several are a document's fields.
    fields: usize,
    /// The profile table's search indexes are kept (`--indexes`).
    indexes: bool,
    /// A managed FerretDB's metrics listener (it keeps no opcounters).
    metrics: Option<std::net::SocketAddr>,
    /// The port of the PostgreSQL a managed FerretDB keeps its documents
    /// in, for the `_id` index of a collection made again.
    pg_port: Option<u16>,
}

/// FerretDB's requests per command from its Prometheus metrics, under the
/// names of mongod's opcounters (`find` counts as `query`).
pub fn ferretdb_counters(addr: std::net::SocketAddr) -> Result<Counters, TargetError> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(TargetError::cause)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(TargetError::cause)?;
    write!(
        s,
        "GET /debug/metrics HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(TargetError::cause)?;
    let mut body = String::new();
    s.read_to_string(&mut body).map_err(TargetError::cause)?;
    let mut out = Counters::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("ferretdb_client_requests_total{command=\"") else {
            continue;
        };
        let Some((command, tail)) = rest.split_once('"') else {
            continue;
        };
        let Some(n) = tail.rsplit(' ').next().and_then(|n| n.parse::<f64>().ok()) else {
            continue;
        };
        let name = if command == "find" { "query" } else { command };
        *out.entry(name.to_string()).or_default() += n as u64;
    }
    Ok(out)
}

impl Driver for MongoDriver {
    fn carrier(&self, _job: &Job) -> &dyn Carrier {
        &self.sessions
    }

    fn describe(&self, kind: OpKind) -> String {
        if self.fields > 1 && !self.profile {
            let last = self.fields - 1;
            return match kind {
                OpKind::Get => format!("kv.findOne({{_id: key}}) (fields field0 … field{last})"),
                OpKind::Set | OpKind::Insert => format!(
                    "kv.replaceOne({{_id: key}}, {{field0: binary, … field{last}: binary}}, {{upsert: true}}); the load: kv.insertOne"
                ),
                OpKind::Update => "kv.updateOne({_id: key}, {$set: {field<j>: binary}}) (one field, drawn uniformly)".into(),
                OpKind::ReadModifyWrite => "kv.findOne({_id: key}), then kv.updateOne({_id: key}, {$set: {field<j>: binary}})".into(),
                OpKind::Scan => "kv.find({_id: {$gte: key}}).sort({_id: 1}).limit(n), batchSize n + 1".into(),
                OpKind::Delete => "kv.deleteOne({_id: key})".into(),
                OpKind::Search => "not supported".into(),
            };
        }
        match kind {
            OpKind::Get => "kv.findOne({_id: key})".into(),
            OpKind::Set | OpKind::Update | OpKind::Insert if self.profile => {
                "profile.replaceOne({_id: key}, {id, name, sex, province, city, payload}, {upsert: true}); the load: profile.insertOne"
                    .into()
            }
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                "kv.replaceOne({_id: key}, {v: binary}, {upsert: true}); the load: kv.insertOne".into()
            }
            OpKind::ReadModifyWrite => {
                "kv.findOne({_id: key}), then kv.replaceOne({_id: key}, {v: binary}, {upsert: true})".into()
            }
            OpKind::Scan => {
                "kv.find({_id: {$gte: key}}).sort({_id: 1}).limit(n), batchSize n + 1".into()
            }
            OpKind::Delete => "kv.deleteOne({_id: key})".into(),
            OpKind::Search => "profile.find(<{name: /abc/}> / <{sex}> / <{province, city}> / <all three>, {_id: 1})".into(),
        }
    }
}

impl MongoDriver {
    /// The server's own operation counters: FerretDB's request metrics,
    /// or mongod's opcounters.
    fn server_counters(&self) -> Option<Counters> {
        if let Some(addr) = self.metrics {
            return ferretdb_counters(addr).ok();
        }
        let dsn = self.dsn.clone();
        block_quick(async move {
            let c = dsn.connect(1).await?;
            let status = c
                .database("admin")
                .run_command(doc! {"serverStatus": 1})
                .await
                .map_err(TargetError::cause)?;
            let ops = status
                .get_document("opcounters")
                .map_err(TargetError::cause)?;
            Ok(ops
                .iter()
                .filter_map(|(k, v)| {
                    let n = match v {
                        Bson::Int32(n) => *n as u64,
                        Bson::Int64(n) => *n as u64,
                        Bson::Double(n) => *n as u64,
                        _ => return None,
                    };
                    Some((k.clone(), n))
                })
                .collect())
        })
        .ok()
    }
}

impl AsyncDriver for MongoDriver {
    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }

    fn no_background(&self, _managed: bool) -> Option<&'static str> {
        Some(if self.metrics.is_some() {
            "none: FerretDB tells nothing of background work, and bakeoff does not read its PostgreSQL's log"
        } else {
            "none read yet: bakeoff does not read WiredTiger's checkpoints from serverStatus"
        })
    }

    fn no_command_times(&self) -> Option<&'static str> {
        Some(if self.metrics.is_some() {
            "FerretDB's serverStatus has no opLatencies"
        } else {
            "bakeoff does not read mongod's opLatencies yet"
        })
    }

    /// Its load inserts (an upsert scans the whole collection on FerretDB),
    /// so a second full load needs the collection empty: dropped (FerretDB
    /// on PostgreSQL deletes every document by listing their ids, and
    /// refuses past 65,535 of them), its indexes made again.
    fn empty(&self) -> Result<(), TargetError> {
        let dsn = self.dsn.clone();
        let (profile, indexes, pg_port) = (self.profile, self.indexes, self.pg_port);
        block(async move {
            let c = dsn.connect(1).await?;
            let db = c.database(DB);
            db.collection::<Document>(if profile { "profile" } else { "kv" })
                .drop()
                .await
                .map_err(TargetError::cause)?;
            make_collection(&db, profile, indexes, pg_port).await
        })
    }

    fn record_count(&self) -> Option<u64> {
        let dsn = self.dsn.clone();
        let name = if self.profile { "profile" } else { "kv" };
        block(async move {
            let c = dsn.connect(1).await?;
            c.database(DB)
                .collection::<Document>(name)
                .count_documents(doc! {})
                .await
                .map_err(TargetError::cause)
        })
        .ok()
    }

    fn counters(&self) -> Option<Counters> {
        let mut counters = self.server_counters()?;
        // bakeoff's own count beside the server's, read at the same
        // moments, so that its change covers the same run.
        counters.insert(RETRIED.into(), self.retried.load(Ordering::Relaxed));
        Some(counters)
    }

    /// The rules, with the upserts sent again after a duplicate key
    /// added to the writes.
    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &Sent,
    ) -> Vec<CounterCheck> {
        let at = |c: &Counters| c.get(RETRIED).copied().unwrap_or(0);
        let retried = at(after).saturating_sub(at(before));
        let mut checks = compare_counters(self.counter_rules(), before, after, sent);
        for c in checks.iter_mut().filter(|c| c.what.starts_with("writes")) {
            c.bakeoff += retried;
        }
        checks
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        &[
            CounterRule {
                what: "queries (opcounters.query; FerretDB: find requests)",
                counters: &["query"],
                kinds: &[OpKind::Get, OpKind::Search, OpKind::Scan],
            },
            CounterRule {
                what: "writes (opcounters.update + insert; FerretDB: update + insert requests)",
                counters: &["update", "insert"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
            CounterRule {
                what: "deletes (opcounters.delete; FerretDB: delete requests)",
                counters: &["delete"],
                kinds: &[OpKind::Delete],
            },
        ]
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        let dsn = self.dsn.clone();
        let read = block_quick(async move {
            let c = dsn.connect(1).await?;
            let admin = c.database("admin");
            // The first command connects; the second is one round trip.
            admin
                .run_command(doc! {"ping": 1})
                .await
                .map_err(TargetError::cause)?;
            let sent = std::time::SystemTime::now();
            let hello = admin
                .run_command(doc! {"hello": 1})
                .await
                .map_err(TargetError::cause)?;
            let received = std::time::SystemTime::now();
            // `localTime`: the server's clock, to the millisecond.
            let ms = hello
                .get_datetime("localTime")
                .map_err(TargetError::during("hello gave no localTime"))?
                .timestamp_millis();
            let ms = u64::try_from(ms)
                .map_err(|_| TargetError::Server(format!("localTime {ms} ms is before 1970")))?;
            Ok(bakeoff_core::readings::ClockReading {
                sent,
                server: std::time::UNIX_EPOCH + Duration::from_millis(ms),
                received,
            })
        });
        Some(read.map_err(std::io::Error::other))
    }
}

fn dsn_of(spec: &TargetSpec) -> Option<Dsn> {
    match &spec.endpoint {
        Endpoint::External { host, port, .. } => Some(Dsn {
            host: host.clone(),
            port: *port,
            user: spec.user.clone(),
            password: spec.password.clone(),
        }),
        Endpoint::Managed => None,
    }
}

/// Empties and indexes the workload's collection; reads the server's
/// version.
/// The profile collection's indexes for the equality searches when
/// `indexes`, else none.
async fn profile_indexes(coll: &Collection<Document>, indexes: bool) -> Result<(), TargetError> {
    let keys = [doc! {"sex": 1}, doc! {"province": 1, "city": 1}];
    let names = ["profile_sex", "profile_loc"];
    for (k, name) in keys.into_iter().zip(names) {
        if indexes {
            let model = mongodb::IndexModel::builder()
                .keys(k)
                .options(
                    mongodb::options::IndexOptions::builder()
                        .name(name.to_string())
                        .build(),
                )
                .build();
            coll.create_index(model).await.map_err(TargetError::cause)?;
        } else {
            // Dropping an index that is not there is not a failure.
            let _ = coll.drop_index(name).await;
        }
    }
    Ok(())
}

/// Makes the workload's collection (`profile` or `kv`) with its indexes:
/// the profile's search indexes when `indexes`, and on FerretDB's
/// PostgreSQL (`pg_port`) the `_id` index its finds use.
async fn make_collection(
    db: &mongodb::Database,
    profile: bool,
    indexes: bool,
    pg_port: Option<u16>,
) -> Result<(), TargetError> {
    let name = if profile { "profile" } else { "kv" };
    create_collection(db, name).await?;
    if profile {
        profile_indexes(&db.collection(name), indexes).await?;
    }
    if let Some(port) = pg_port {
        index_ids(port).await?;
    }
    Ok(())
}

async fn prepare(
    dsn: &Dsn,
    workload: &Workload,
    pg_port: Option<u16>,
) -> Result<(String, BTreeMap<String, String>), TargetError> {
    let c = dsn.connect(1).await?;
    let db = c.database(DB);
    let e = |r: mongodb::error::Error| TargetError::Server(r.to_string());
    let profile = workload.record == RecordKind::Profile;
    let name = if profile { "profile" } else { "kv" };
    let coll: Collection<Document> = db.collection(name);
    if workload.empties_before_load() {
        // Dropped rather than emptied document by document (see
        // `MongoDriver::empty`); made again below.
        coll.drop().await.map_err(e)?;
    }
    make_collection(&db, profile, workload.indexes, pg_port).await?;
    let info = db.run_command(doc! {"buildInfo": 1}).await.map_err(e)?;
    let wire = info.get_str("version").unwrap_or("?").to_string();
    let mut settings = BTreeMap::new();
    settings.insert("wire_version".to_string(), wire.clone());
    let version = match info.get_str("ferretdbVersion") {
        Ok(f) => format!("FerretDB {f} (MongoDB {wire} wire protocol)"),
        Err(_) => format!("MongoDB {wire}"),
    };
    if let Some(plan) = find_by_id_plan(&db, name).await {
        settings.insert("find_by_id_plan".into(), plan);
    }
    if let Ok(status) = db.run_command(doc! {"serverStatus": 1}).await {
        if let Ok(engine) = status.get_document("storageEngine") {
            if let Ok(name) = engine.get_str("name") {
                settings.insert("storage_engine".into(), name.to_string());
            }
        }
    }
    Ok((version, settings))
}

/// A server started by bakeoff.
pub struct Started {
    /// The running server.
    pub server: ManagedServer,
    /// FerretDB's metrics listener (none for mongod).
    pub metrics: Option<std::net::SocketAddr>,
    /// The PostgreSQL FerretDB keeps its documents in, when it does: part
    /// of the server (its CPU, memory and disk are the service's), started
    /// before FerretDB and stopped after it.
    pub backend: Option<ManagedServer>,
}

fn local(port: u16) -> Dsn {
    Dsn {
        host: "127.0.0.1".into(),
        port,
        user: None,
        password: None,
    }
}

/// Starts mongod, or FerretDB where there is none, with the settings of
/// `[servers.mongodb]` (`table`) on a free loopback port, without
/// authentication (the tests use it as an external server too).
pub fn start(table: Option<&toml::Table>) -> Result<Started, TargetError> {
    start_on(table, false)
}

/// [`start`], with the data directory on the power-cut layer when
/// `lazy_disk` (see [`bakeoff_servers::ServerCommand::lazy_disk`]).
pub fn start_on(table: Option<&toml::Table>, lazy_disk: bool) -> Result<Started, TargetError> {
    let settings = MongoSettings::parse(table)?;
    let which = settings.server()?;
    // FerretDB on PostgreSQL: the database first, on the power-cut layer
    // if the run cuts the power (FerretDB itself keeps nothing).
    let backend = match (which, settings.on_postgres) {
        (Server::FerretDb, true) => {
            let pg = crate::postgres::start_database(FERRETDB_DATABASE, lazy_disk)?;
            // Each statement planned with its parameters, so that
            // `_jsonb->$1 @> $2` meets the `_id` index (see `index_ids`).
            crate::postgres::execute_in(
                pg.addr.port(),
                FERRETDB_DATABASE,
                &format!(
                    "ALTER DATABASE {FERRETDB_DATABASE} SET plan_cache_mode = force_custom_plan"
                ),
            )?;
            Some(pg)
        }
        _ => None,
    };
    let backend_url = backend.as_ref().map(|pg| {
        format!(
            "postgres://bakeoff@127.0.0.1:{}/{FERRETDB_DATABASE}?sslmode=disable&pool_max_conns={FERRETDB_POOL}",
            pg.addr.port()
        )
    });
    let metrics_port = bakeoff_servers::free_port()
        .map_err(TargetError::during("no free port for FerretDB's metrics"))?;
    let init = |_: &Path, dir: &Path| -> Result<(), ServerError> {
        std::fs::create_dir_all(dir.join("data")).map_err(|source| ServerError::Prepare {
            what: format!("cannot create {}", dir.join("data").display()),
            source,
        })
    };
    let cmd = ServerCommand {
        program: which.program(),
        name: which.program(),
        package: "mongodb (not in Debian; see scripts/install-ferretdb.sh)",
        port: settings.port,
        args: &|port, dir| settings.args(which, port, dir, metrics_port, backend_url.as_deref()),
        ready: &|addr| {
            block_quick(async { Ok(local(addr.port()).connect(1).await.map(|_| ())?) }).is_ok()
        },
        ready_timeout: Duration::from_secs(30),
        extra_dirs: BIN_DIRS,
        run_as: None,
        init: Some(&init),
        lazy_disk: lazy_disk && backend.is_none(),
        stop_signal: libc::SIGTERM,
    };
    let server = ManagedServer::start(&cmd).map_err(TargetError::cause)?;
    let metrics = (which == Server::FerretDb)
        .then(|| std::net::SocketAddr::from(([127, 0, 0, 1], metrics_port)));
    Ok(Started {
        server,
        metrics,
        backend,
    })
}

/// What `mongodb` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "mongodb",
    summary: "MongoDB wire protocol: mongod, or FerretDB where no mongod exists (collections kv and profile)",
    package: "mongodb (not in Debian 12; scripts/install-ferretdb.sh installs FerretDB)",
    reach: crate::kind::Reach::Server {
        program: "mongod",
        scheme: "mongodb",
        url_options: &[],
        credentials: true,
        topologies: &[],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SEARCH_SCAN,
        pipelining: false,
        batch_load: true,
        requests: &[bakeoff_core::plan::RequestMode::Connect],
        no_scan: "MongoDB scans collection kv by its _id index",
    },
    // Left out of the default run: Debian packages no mongod, and what
    // stands in (FerretDB, bench/ferretdb-backends.sh) is another server.
    in_default_comparison: false,
    settings: SETTINGS,
    durability: DURABILITY,
    provokes: &[],
};

/// `mongodb`, as the registry knows it.
pub struct Mongodb;

impl crate::kind::TargetKind for Mongodb {
    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn available(&self) -> Result<(), TargetError> {
        MongoSettings::parse(None)?.server().map(|_| ())
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        MongoSettings::parse(settings).map(|_| ())
    }

    /// Checks the managed server exists and a fixed port is free, or an
    /// external endpoint answers.
    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        let settings = MongoSettings::parse(plan.settings_of(spec))?;
        match dsn_of(spec) {
            None => {
                settings.server()?;
                crate::settings::fixed_port_free("mongodb", settings.port)
            }
            Some(dsn) => block_quick(async { Ok(dsn.connect(1).await.map(|_| ())?) }),
        }
    }

    /// Opens the target: starts mongod (or FerretDB), or connects to the URL.
    fn open(&self, spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        let (server, backend, dsn, endpoint, metrics) = match dsn_of(spec) {
            Some(dsn) => {
                let url = match &spec.endpoint {
                    Endpoint::External { url, .. } => Some(url.clone()),
                    Endpoint::Managed => None,
                };
                (None, None, dsn, url, None)
            }
            None => {
                let mut started = start_on(plan.settings_of(spec), workload.cuts_power())?;
                let limits = bakeoff_servers::Limits::of(workload);
                match started.backend.as_mut() {
                    // The memory cap is on whichever keeps the documents;
                    // both run on the CPUs given.
                    Some(pg) => {
                        pg.limit(limits)?;
                        started.server.limit(bakeoff_servers::Limits {
                            memory: None,
                            ..limits
                        })?;
                    }
                    None => started.server.limit(limits)?,
                }
                let dsn = local(started.server.addr.port());
                (
                    Some(started.server),
                    started.backend,
                    dsn,
                    None,
                    started.metrics,
                )
            }
        };
        let pg_port = backend.as_ref().map(|pg| pg.addr.port());
        let (mut version, mut recorded) = block(prepare(&dsn, workload, pg_port))?;
        if let Some(pg) = &backend {
            version.push_str(", documents in PostgreSQL");
            recorded.insert(
                "ferretdb_backend".into(),
                format!("postgresql: {} {}", pg.binary.display(), pg.args.join(" ")),
            );
        }
        // With a link, every connection of the driver goes through its relay.
        let (host, port, relay) = crate::link::dial_host(workload, &dsn.host, dsn.port)?;
        let dsn = Dsn { host, port, ..dsn };
        let retried = Arc::<AtomicU64>::default();
        Ok(Box::new(
            AsyncTarget::new(
                spec,
                endpoint,
                version,
                recorded,
                server,
                MongoDriver {
                    sessions: {
                        let (dsn, retried) = (dsn.clone(), retried.clone());
                        let fields = workload.fields.max(1) as usize;
                        Sessions::new(move || {
                            let (dsn, retried) = (dsn.clone(), retried.clone());
                            async move { MongoSession::open(&dsn, retried, fields).await }
                        })
                    },
                    dsn,
                    retried,
                    profile: workload.record == RecordKind::Profile,
                    fields: workload.fields.max(1) as usize,
                    indexes: workload.indexes,
                    metrics,
                    pg_port,
                },
            )
            .linked(relay)
            .with_backend(backend),
        ))
    }
}
