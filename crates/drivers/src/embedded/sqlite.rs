//! SQLite through its C library (Debian's libsqlite3-0), loaded at run
//! time: table `kv(k TEXT PRIMARY KEY, v BLOB)`, one connection per worker
//! thread, prepared statements.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bakeoff_core::embedded::EngineSession;
use bakeoff_core::error::TargetError;
use bakeoff_core::profile::{Profile, Query, RecordKind, SearchKind};
use bakeoff_core::session::SessionError;
use bakeoff_core::target::BackgroundLook;
use bakeoff_core::workload::OpKind;

use super::{DataDir, Engine, EngineError, OpenHow, Opened};
use crate::dl::{self, Lib};
use crate::settings::{durable, Durability, Kind, Setting, Settings, DIR};
use crate::sql::{Dialect, FieldsTable};
use bakeoff_core::durability::DurableTo;

const PACKAGE: &str = "libsqlite3-0";
const LIB_NAMES: &[&str] = &["libsqlite3.so.0", "libsqlite3.so"];
const LIB_ENV: &str = "BAKEOFF_SQLITE_LIB";

const OK: c_int = 0;
const ROW: c_int = 100;
const DONE: c_int = 101;
const OPEN_READWRITE: c_int = 0x2;
const OPEN_CREATE: c_int = 0x4;
const OPEN_NOMUTEX: c_int = 0x8000;

type Db = *mut c_void;
type Stmt = *mut c_void;

struct Api {
    _lib: Lib,
    open_v2: unsafe extern "C" fn(*const c_char, *mut Db, c_int, *const c_char) -> c_int,
    close_v2: unsafe extern "C" fn(Db) -> c_int,
    exec: unsafe extern "C" fn(
        Db,
        *const c_char,
        *const c_void,
        *mut c_void,
        *mut *mut c_char,
    ) -> c_int,
    free: unsafe extern "C" fn(*mut c_void),
    errmsg: unsafe extern "C" fn(Db) -> *const c_char,
    busy_timeout: unsafe extern "C" fn(Db, c_int) -> c_int,
    prepare_v2:
        unsafe extern "C" fn(Db, *const c_char, c_int, *mut Stmt, *mut *const c_char) -> c_int,
    bind_text: unsafe extern "C" fn(Stmt, c_int, *const c_char, c_int, isize) -> c_int,
    bind_blob: unsafe extern "C" fn(Stmt, c_int, *const c_void, c_int, isize) -> c_int,
    step: unsafe extern "C" fn(Stmt) -> c_int,
    reset: unsafe extern "C" fn(Stmt) -> c_int,
    finalize: unsafe extern "C" fn(Stmt) -> c_int,
    column_blob: unsafe extern "C" fn(Stmt, c_int) -> *const c_void,
    column_bytes: unsafe extern "C" fn(Stmt, c_int) -> c_int,
    column_int64: unsafe extern "C" fn(Stmt, c_int) -> i64,
    bind_int64: unsafe extern "C" fn(Stmt, c_int, i64) -> c_int,
    changes: unsafe extern "C" fn(Db) -> c_int,
    wal_hook: unsafe extern "C" fn(Db, Option<WalHook>, *mut c_void) -> *mut c_void,
    version: String,
}

/// `sqlite3_wal_hook`'s callback: (its argument, the connection, the
/// database's name, pages in the WAL after the commit).
type WalHook = unsafe extern "C" fn(*mut c_void, Db, *const c_char, c_int) -> c_int;
/// `sqlite3_wal_checkpoint_v2`.
type WalCheckpoint =
    unsafe extern "C" fn(Db, *const c_char, c_int, *mut c_int, *mut c_int) -> c_int;

/// Pages in the WAL past which a commit checkpoints it (SQLite's own
/// `wal_autocheckpoint` default).
const AUTO_CHECKPOINT_PAGES: c_int = 1000;
const CHECKPOINT_PASSIVE: c_int = 0;

/// The WAL checkpoints the engine's connections ran, timed: registering a
/// WAL hook turns SQLite's own auto-checkpoint off, so the hook runs it as
/// SQLite would (passive, by the commit that filled the WAL past 1,000
/// pages, inside that write's latency) and counts it.
pub struct WalCheckpoints {
    checkpoint: WalCheckpoint,
    count: AtomicU64,
    total_ns: AtomicU64,
    last_ns: AtomicU64,
    last_pages: AtomicU64,
}

/// After each commit in WAL mode: a checkpoint once the WAL holds
/// [`AUTO_CHECKPOINT_PAGES`] pages, timed.
///
/// # Safety
/// `arg` is the [`WalCheckpoints`] the connection registered, which it
/// keeps alive as long as itself.
unsafe extern "C" fn on_commit(
    arg: *mut c_void,
    db: Db,
    name: *const c_char,
    pages: c_int,
) -> c_int {
    if pages < AUTO_CHECKPOINT_PAGES {
        return OK;
    }
    // SAFETY: as the function's contract says.
    let wal = unsafe { &*(arg as *const WalCheckpoints) };
    let started = std::time::Instant::now();
    let (mut log, mut done) = (0, 0);
    // SAFETY: a passive checkpoint of the connection's own database, as
    // SQLite's default WAL hook runs it.
    unsafe { (wal.checkpoint)(db, name, CHECKPOINT_PASSIVE, &mut log, &mut done) };
    let ns = started.elapsed().as_nanos() as u64;
    wal.count.fetch_add(1, Ordering::Relaxed);
    wal.total_ns.fetch_add(ns, Ordering::Relaxed);
    wal.last_ns.store(ns, Ordering::Relaxed);
    wal.last_pages.store(pages as u64, Ordering::Relaxed);
    OK
}

impl Api {
    fn load() -> Result<Self, TargetError> {
        let lib = dl::open(LIB_NAMES, LIB_ENV, PACKAGE)?;
        // SAFETY: signatures from sqlite3.h (3.x stable C API).
        unsafe {
            let libversion: unsafe extern "C" fn() -> *const c_char =
                dl::sym(&lib, "sqlite3_libversion")?;
            Ok(Api {
                version: CStr::from_ptr(libversion()).to_string_lossy().into_owned(),
                open_v2: dl::sym(&lib, "sqlite3_open_v2")?,
                close_v2: dl::sym(&lib, "sqlite3_close_v2")?,
                exec: dl::sym(&lib, "sqlite3_exec")?,
                free: dl::sym(&lib, "sqlite3_free")?,
                errmsg: dl::sym(&lib, "sqlite3_errmsg")?,
                busy_timeout: dl::sym(&lib, "sqlite3_busy_timeout")?,
                prepare_v2: dl::sym(&lib, "sqlite3_prepare_v2")?,
                bind_text: dl::sym(&lib, "sqlite3_bind_text")?,
                bind_blob: dl::sym(&lib, "sqlite3_bind_blob")?,
                step: dl::sym(&lib, "sqlite3_step")?,
                reset: dl::sym(&lib, "sqlite3_reset")?,
                finalize: dl::sym(&lib, "sqlite3_finalize")?,
                column_blob: dl::sym(&lib, "sqlite3_column_blob")?,
                column_bytes: dl::sym(&lib, "sqlite3_column_bytes")?,
                column_int64: dl::sym(&lib, "sqlite3_column_int64")?,
                bind_int64: dl::sym(&lib, "sqlite3_bind_int64")?,
                changes: dl::sym(&lib, "sqlite3_changes")?,
                wal_hook: dl::sym(&lib, "sqlite3_wal_hook")?,
                _lib: lib,
            })
        }
    }
}

/// One connection with its prepared statements; used by one thread.
struct Conn {
    api: Arc<Api>,
    db: Db,
    get: Stmt,
    put: Stmt,
    del: Stmt,
    /// `SCAN_SQL`, or the table of fields' own.
    scan: Stmt,
    /// Records of several fields: one `UPDATE` per field.
    put_field: Vec<Stmt>,
    /// Fields per record: one is table kv's value; several, columns of
    /// table usertable.
    fields: usize,
    /// Profile statements: insert, then the searches by name, sex,
    /// location and all three (null when the table is kv).
    profile: [Stmt; 5],
    /// What the connection's WAL hook counts into, held as long as it.
    _wal: Arc<WalCheckpoints>,
}

/// A scan: the records from a key on, in key order (`TEXT` keys compare
/// bytewise under SQLite's default collation).
const SCAN_SQL: &str = "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2";

/// The SQL of the profile table's statements, in `Conn::profile` order.
const PROFILE_SQL: [&str; 5] = [
    "INSERT OR REPLACE INTO profile (id, name, sex, province, city, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    "SELECT id FROM profile WHERE name LIKE ?1",
    "SELECT id FROM profile WHERE sex = ?1",
    "SELECT id FROM profile WHERE province = ?1 AND city = ?2",
    "SELECT id FROM profile WHERE name LIKE ?1 AND sex = ?2 AND province = ?3 AND city = ?4",
];

impl Conn {
    fn open(
        api: &Arc<Api>,
        path: &CString,
        pragmas: &str,
        (profile, fields): (bool, usize),
        wal: &Arc<WalCheckpoints>,
    ) -> Result<Self, EngineError> {
        let mut db: Db = ptr::null_mut();
        // SAFETY: sqlite3 C API calls on a connection we own.
        unsafe {
            let rc = (api.open_v2)(
                path.as_ptr(),
                &mut db,
                OPEN_READWRITE | OPEN_CREATE | OPEN_NOMUTEX,
                ptr::null(),
            );
            let mut c = Conn {
                api: api.clone(),
                db,
                get: ptr::null_mut(),
                put: ptr::null_mut(),
                del: ptr::null_mut(),
                scan: ptr::null_mut(),
                put_field: Vec::new(),
                fields,
                profile: [ptr::null_mut(); 5],
                _wal: wal.clone(),
            };
            if rc != OK {
                return Err(EngineError(format!(
                    "cannot open {}: {}",
                    path.to_string_lossy(),
                    c.error()
                )));
            }
            (api.busy_timeout)(db, 30_000);
            c.exec(pragmas)?;
            (api.wal_hook)(db, Some(on_commit), Arc::as_ptr(wal) as *mut c_void);
            if fields > 1 {
                let t = fields_table(fields);
                c.exec(&t.create())?;
                c.get = c.prepare(&t.get())?;
                c.put = c.prepare(&t.put())?;
                c.del = c.prepare(&t.del())?;
                c.scan = c.prepare(&t.scan())?;
                for f in 0..fields {
                    c.put_field.push(c.prepare(&t.put_field(f))?);
                }
            } else {
                c.exec("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL)")?;
                c.get = c.prepare("SELECT v FROM kv WHERE k = ?1")?;
                c.put = c.prepare("INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)")?;
                c.del = c.prepare("DELETE FROM kv WHERE k = ?1")?;
                c.scan = c.prepare(SCAN_SQL)?;
            }
            if profile {
                c.exec(PROFILE_TABLE)?;
                for (i, sql) in PROFILE_SQL.iter().enumerate() {
                    c.profile[i] = c.prepare(sql)?;
                }
            }
            Ok(c)
        }
    }

    fn error(&self) -> EngineError {
        // SAFETY: sqlite3_errmsg returns a string owned by the connection.
        EngineError(unsafe {
            CStr::from_ptr((self.api.errmsg)(self.db))
                .to_string_lossy()
                .into_owned()
        })
    }

    fn exec(&self, sql: &str) -> Result<(), EngineError> {
        let c =
            CString::new(sql).map_err(|_| EngineError("SQL contains a NUL byte".to_string()))?;
        let mut err: *mut c_char = ptr::null_mut();
        // SAFETY: exec without callback; the error string is freed below.
        let rc =
            unsafe { (self.api.exec)(self.db, c.as_ptr(), ptr::null(), ptr::null_mut(), &mut err) };
        if rc == OK {
            return Ok(());
        }
        // SAFETY: err is either null or a string sqlite allocated.
        let msg = unsafe {
            if err.is_null() {
                self.error().0
            } else {
                let m = CStr::from_ptr(err).to_string_lossy().into_owned();
                (self.api.free)(err.cast());
                m
            }
        };
        Err(EngineError(format!("{sql}: {msg}")))
    }

    fn prepare(&self, sql: &str) -> Result<Stmt, EngineError> {
        let c =
            CString::new(sql).map_err(|_| EngineError("SQL contains a NUL byte".to_string()))?;
        let mut st: Stmt = ptr::null_mut();
        // SAFETY: preparing on our connection.
        let rc =
            unsafe { (self.api.prepare_v2)(self.db, c.as_ptr(), -1, &mut st, ptr::null_mut()) };
        if rc != OK {
            return Err(EngineError(format!("{sql}: {}", self.error())));
        }
        Ok(st)
    }

    /// Runs `st` with key (and value) bound; returns the first step's code.
    /// A record of several fields is bound a field to a parameter. The
    /// caller reads columns before `finish`.
    unsafe fn run(&self, st: Stmt, key: &[u8], value: Option<&[u8]>) -> c_int {
        // SQLITE_STATIC (0): the buffers outlive the step.
        (self.api.bind_text)(st, 1, key.as_ptr().cast(), key.len() as c_int, 0);
        if let Some(v) = value {
            let len = v.len() / self.fields;
            for (i, field) in v.chunks(len.max(1)).take(self.fields).enumerate() {
                let p = 2 + i as c_int;
                (self.api.bind_blob)(st, p, field.as_ptr().cast(), field.len() as c_int, 0);
            }
        }
        (self.api.step)(st)
    }

    /// Appends columns `from..from + n` of the row `st` stands on to `out`.
    unsafe fn columns_into(&self, st: Stmt, from: c_int, n: usize, out: &mut Vec<u8>) {
        for i in from..from + n as c_int {
            let p = (self.api.column_blob)(st, i);
            let len = (self.api.column_bytes)(st, i) as usize;
            if !p.is_null() {
                out.extend_from_slice(std::slice::from_raw_parts(p as *const u8, len));
            }
        }
    }

    unsafe fn finish(&self, st: Stmt) {
        (self.api.reset)(st);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: finalising our statements and closing our connection once.
        unsafe {
            for st in [self.get, self.put, self.del, self.scan]
                .into_iter()
                .chain(self.profile)
                .chain(self.put_field.iter().copied())
            {
                if !st.is_null() {
                    (self.api.finalize)(st);
                }
            }
            (self.api.close_v2)(self.db);
        }
    }
}

/// Table usertable in SQLite's dialect.
fn fields_table(fields: usize) -> FieldsTable {
    FieldsTable {
        fields,
        dialect: Dialect::Sqlite,
    }
}

/// A worker's session: its own connection.
pub struct SqliteSession {
    conn: Conn,
}

/// The profile table of 000-search.
const PROFILE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS profile (id INTEGER PRIMARY KEY, name TEXT NOT NULL, \
     sex TEXT NOT NULL, province TEXT NOT NULL, city TEXT NOT NULL, payload BLOB NOT NULL)";

impl EngineSession for SqliteSession {
    fn put_profile(
        &mut self,
        id: u64,
        _key: &[u8],
        p: &Profile,
        payload: &[u8],
    ) -> Result<(), SessionError> {
        let c = &self.conn;
        let st = c.profile[0];
        let (prov, city) = (p.province_text(), p.city_text());
        // SAFETY: binding buffers that outlive the step (SQLITE_STATIC).
        unsafe {
            (c.api.bind_int64)(st, 1, id as i64);
            (c.api.bind_text)(st, 2, p.name.as_ptr().cast(), 8, 0);
            (c.api.bind_text)(st, 3, (&p.sex as *const u8).cast(), 1, 0);
            (c.api.bind_text)(st, 4, prov.as_ptr().cast(), 3, 0);
            (c.api.bind_text)(st, 5, city.as_ptr().cast(), 2, 0);
            (c.api.bind_blob)(st, 6, payload.as_ptr().cast(), payload.len() as c_int, 0);
            let rc = (c.api.step)(st);
            let r = if rc == DONE {
                Ok(())
            } else {
                Err(c.error().into())
            };
            c.finish(st);
            r
        }
    }

    fn search(&mut self, q: &Query) -> Result<u64, SessionError> {
        let c = &self.conn;
        let like = [b'%', q.name_part[0], q.name_part[1], q.name_part[2], b'%'];
        let st = match q.kind {
            SearchKind::Name => c.profile[1],
            SearchKind::Sex => c.profile[2],
            SearchKind::Location => c.profile[3],
            SearchKind::All => c.profile[4],
        };
        // SAFETY: binding buffers that outlive the steps; reset after.
        unsafe {
            let text = |i: c_int, b: &[u8]| {
                (c.api.bind_text)(st, i, b.as_ptr().cast(), b.len() as c_int, 0)
            };
            match q.kind {
                SearchKind::Name => {
                    text(1, &like);
                }
                SearchKind::Sex => {
                    text(1, std::slice::from_ref(&q.sex));
                }
                SearchKind::Location => {
                    text(1, &q.province);
                    text(2, &q.city);
                }
                SearchKind::All => {
                    text(1, &like);
                    text(2, std::slice::from_ref(&q.sex));
                    text(3, &q.province);
                    text(4, &q.city);
                }
            }
            let mut rows = 0;
            let r = loop {
                match (c.api.step)(st) {
                    ROW => rows += 1,
                    DONE => break Ok(rows),
                    _ => break Err(c.error().into()),
                }
            };
            c.finish(st);
            r
        }
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, SessionError> {
        let c = &self.conn;
        out.clear();
        // SAFETY: statement use per the sqlite3 API; the column pointer is
        // valid until reset, and copied before it.
        unsafe {
            let rc = c.run(c.get, key, None);
            let found = match rc {
                ROW => {
                    c.columns_into(c.get, 0, c.fields, out);
                    Ok(true)
                }
                DONE => Ok(false),
                _ => Err(c.error().into()),
            };
            c.finish(c.get);
            found
        }
    }

    fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> Result<u64, SessionError> {
        let c = &self.conn;
        out.clear();
        let mut n = 0u64;
        let mut record = Vec::new();
        // SAFETY: statement use per the sqlite3 API; column pointers are
        // valid until the next step, and copied before it.
        unsafe {
            let st = c.scan;
            (c.api.bind_text)(st, 1, start.as_ptr().cast(), start.len() as c_int, 0);
            (c.api.bind_int64)(st, 2, i64::from(limit));
            let result = loop {
                match (c.api.step)(st) {
                    ROW => {
                        let column = |i: c_int| {
                            let p = (c.api.column_blob)(st, i);
                            let len = (c.api.column_bytes)(st, i) as usize;
                            if p.is_null() {
                                &[][..]
                            } else {
                                std::slice::from_raw_parts(p as *const u8, len)
                            }
                        };
                        let key = column(0).to_vec();
                        if c.fields > 1 {
                            record.clear();
                            c.columns_into(st, 1, c.fields, &mut record);
                            bakeoff_core::scan::push_row(out, &key, &record);
                        } else {
                            bakeoff_core::scan::push_row(out, &key, column(1));
                        }
                        n += 1;
                    }
                    DONE => break Ok(n),
                    _ => break Err(c.error().into()),
                }
            };
            c.finish(st);
            result
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), SessionError> {
        let c = &self.conn;
        // SAFETY: as above.
        unsafe {
            let rc = c.run(c.put, key, Some(value));
            let r = if rc == DONE {
                Ok(())
            } else {
                Err(c.error().into())
            };
            c.finish(c.put);
            r
        }
    }

    fn keeps_fields(&self) -> bool {
        self.conn.fields > 1
    }

    fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> Result<(), SessionError> {
        let c = &self.conn;
        let st = *c
            .put_field
            .get(field)
            .ok_or_else(|| SessionError::Server(format!("no field {field}")))?;
        // SAFETY: binding buffers that outlive the step (SQLITE_STATIC).
        unsafe {
            (c.api.bind_text)(st, 1, key.as_ptr().cast(), key.len() as c_int, 0);
            (c.api.bind_blob)(st, 2, value.as_ptr().cast(), value.len() as c_int, 0);
            let r = if (c.api.step)(st) == DONE {
                Ok(())
            } else {
                Err(c.error().into())
            };
            c.finish(st);
            r
        }
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool, SessionError> {
        let c = &self.conn;
        // SAFETY: as above.
        unsafe {
            let rc = c.run(c.del, key, None);
            let r = if rc == DONE {
                Ok((c.api.changes)(c.db) > 0)
            } else {
                Err(c.error().into())
            };
            c.finish(c.del);
            r
        }
    }
}

/// Settings of `[servers.sqlite]`.
struct SqliteSettings {
    dir: Option<String>,
    journal_mode: String,
    synchronous: String,
    cache_size: Option<u64>,
}

/// `[servers.sqlite]`.
pub const SETTINGS: &[Setting] = &[
    DIR,
    Setting {
        name: "journal_mode",
        kind: Kind::Choice(&["delete", "truncate", "persist", "memory", "wal", "off"]),
        default: Some("wal"),
        help: "PRAGMA journal_mode",
    },
    Setting {
        name: "synchronous",
        kind: Kind::Choice(&["off", "normal", "full", "extra"]),
        default: Some("normal"),
        help: "PRAGMA synchronous: when SQLite fsyncs",
    },
    Setting {
        name: "cache_size",
        kind: Kind::Bytes,
        default: None,
        help: "page cache (default: SQLite's own, 2mb)",
    },
];

/// What SQLite's synchronous and journal settings let acknowledged writes
/// survive: each commit writes its pages (or WAL frames) to the files;
/// full and extra sync them at each commit, normal (in WAL mode) only at
/// checkpoints, off never. A journal in memory or none cannot make a
/// commit survive a power cut whatever the sync.
pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("synchronous", "full", DurableTo::PowerCut),
        durable("synchronous", "extra", DurableTo::PowerCut),
        durable("synchronous", "*", DurableTo::ProcessCrash),
        durable("journal_mode", "memory", DurableTo::ProcessCrash),
        durable("journal_mode", "off", DurableTo::ProcessCrash),
    ],
};

impl SqliteSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(SqliteSettings {
            dir: s.path("dir")?,
            journal_mode: s.choice("journal_mode")?.unwrap_or_default(),
            synchronous: s.choice("synchronous")?.unwrap_or_default(),
            cache_size: s.bytes("cache_size")?,
        })
    }

    fn pragmas(&self) -> String {
        let mut p = format!(
            "PRAGMA journal_mode = {}; PRAGMA synchronous = {};",
            self.journal_mode, self.synchronous
        );
        if let Some(c) = self.cache_size {
            p.push_str(&format!(" PRAGMA cache_size = -{};", (c / 1024).max(1)));
        }
        p
    }
}

/// The engine: where the database is and how connections are set up.
pub struct SqliteEngine {
    api: Arc<Api>,
    path: CString,
    pragmas: String,
    profile: bool,
    /// Fields per record (several: table usertable).
    fields: usize,
    /// Whether the journal is a WAL, whose checkpoints the connections
    /// count.
    wal_mode: bool,
    wal: Arc<WalCheckpoints>,
}

impl SqliteEngine {
    /// A connection of its own.
    fn connect(&self) -> Result<Conn, EngineError> {
        Conn::open(
            &self.api,
            &self.path,
            &self.pragmas,
            (self.profile, self.fields),
            &self.wal,
        )
    }
}

impl Engine for SqliteEngine {
    type Session = SqliteSession;

    fn session(&self) -> Result<SqliteSession, EngineError> {
        Ok(SqliteSession {
            conn: self.connect()?,
        })
    }

    fn count(&self) -> Option<u64> {
        let c = self.connect().ok()?;
        let table = match (self.profile, self.fields > 1) {
            (true, _) => "profile",
            (false, true) => "usertable",
            (false, false) => "kv",
        };
        let st = c.prepare(&format!("SELECT count(*) FROM {table}")).ok()?;
        // SAFETY: one step of a statement on our connection, then finalise.
        unsafe {
            let n = if (c.api.step)(st) == ROW {
                Some((c.api.column_int64)(st, 0) as u64)
            } else {
                None
            };
            (c.api.finalize)(st);
            n
        }
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }

    fn background_source(&self) -> Option<(&'static str, std::time::Duration)> {
        self.wal_mode.then_some((
            "WAL checkpoints, each run and timed by the commit that fills the WAL past 1,000 pages (inside that write's latency, as SQLite's own auto-checkpoint runs it); counted every 1 s",
            std::time::Duration::from_secs(1),
        ))
    }

    fn background(&self) -> Option<BackgroundLook> {
        let w = &self.wal;
        let ms = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
        Some(BackgroundLook {
            finished: vec![(
                "WAL checkpoint",
                w.count.load(Ordering::Relaxed),
                format!(
                    "the latest took {:.1} ms over {} pages; {:.1} ms in checkpoints so far",
                    ms(&w.last_ns),
                    w.last_pages.load(Ordering::Relaxed),
                    ms(&w.total_ns)
                ),
            )],
            ..BackgroundLook::default()
        })
    }

    fn no_background(&self) -> Option<&'static str> {
        Some("none: with a journal that is not a WAL, SQLite's work happens inside each commit, and so inside its latency")
    }

    fn describe(&self, kind: OpKind) -> String {
        if self.fields > 1 {
            return fields_table(self.fields).describe(kind);
        }
        match kind {
            OpKind::Search => "SELECT id FROM profile WHERE <name LIKE ?> / <sex = ?> / <province = ? AND city = ?> / <all three>".into(),
            OpKind::Get => "SELECT v FROM kv WHERE k = ?1".into(),
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)".into()
            }
            OpKind::Scan => SCAN_SQL.into(),
            OpKind::ReadModifyWrite => {
                "SELECT v FROM kv WHERE k = ?1, then INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)"
                    .into()
            }
            OpKind::Delete => "DELETE FROM kv WHERE k = ?1".into(),
        }
    }
}

/// What `sqlite` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts::engine(
    "sqlite",
    "SQLite, in-process (table kv, prepared statements)",
    PACKAGE,
    crate::kind::KV_SEARCH_SCAN,
    SETTINGS,
    DURABILITY,
);

/// `sqlite`, as the registry knows it.
pub struct Sqlite;

impl super::EngineKind for Sqlite {
    type Engine = SqliteEngine;

    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        SqliteSettings::parse(settings).map(|_| ())
    }
    fn load(&self) -> Result<(), TargetError> {
        Api::load().map(|_| ())
    }
    /// Opens (and, for a run that loads, empties) the database.
    fn opened(
        &self,
        table: Option<&toml::Table>,
        how: &OpenHow,
    ) -> Result<Opened<SqliteEngine>, TargetError> {
        let name = FACTS.name;
        let settings = SqliteSettings::parse(table)?;
        let api = Arc::new(Api::load()?);
        let dir = DataDir::new(settings.dir.clone(), name)?;
        let file: PathBuf = dir.path().join("bakeoff.sqlite");
        let path = CString::new(file.display().to_string())
            .map_err(|_| EngineError("directory path contains a NUL byte".to_string()))?;
        let pragmas = settings.pragmas();
        let profile = how.record == RecordKind::Profile;
        // An error opening or emptying the database says where it is:
        // SQLite's own "database or disk is full" names no place.
        let at = |e: EngineError| {
            let full = if e.0.contains("full") {
                "; free space there, or set TMPDIR or [servers.sqlite] dir elsewhere"
            } else {
                ""
            };
            EngineError(format!("{} (database {}){full}", e.0, file.display()))
        };
        let wal = Arc::new(WalCheckpoints {
            // SAFETY: the signature from sqlite3.h.
            checkpoint: unsafe { dl::sym(&api._lib, "sqlite3_wal_checkpoint_v2")? },
            count: AtomicU64::new(0),
            total_ns: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            last_pages: AtomicU64::new(0),
        });
        {
            let fields = how.fields.max(1) as usize;
            let c = Conn::open(&api, &path, &pragmas, (profile, fields), &wal).map_err(at)?;
            if how.load {
                c.exec(match (profile, fields > 1) {
                    (true, _) => "DELETE FROM profile",
                    (false, true) => "DELETE FROM usertable",
                    (false, false) => "DELETE FROM kv",
                })
                .map_err(at)?;
            }
            if profile {
                if how.indexes {
                    c.exec("CREATE INDEX IF NOT EXISTS profile_sex ON profile (sex)")?;
                    c.exec("CREATE INDEX IF NOT EXISTS profile_loc ON profile (province, city)")?;
                } else {
                    c.exec("DROP INDEX IF EXISTS profile_sex")?;
                    c.exec("DROP INDEX IF EXISTS profile_loc")?;
                }
            }
        }
        let mut record = BTreeMap::new();
        record.insert("journal_mode".into(), settings.journal_mode.clone());
        record.insert("synchronous".into(), settings.synchronous.clone());
        record.insert(
            "cache_size".into(),
            settings
                .cache_size
                .map(|c| c.to_string())
                .unwrap_or_else(|| "default".into()),
        );
        let version = format!("SQLite {} ({})", api.version, api._lib.name);
        if profile {
            record.insert(
                "indexes".into(),
                if how.indexes {
                    "sex, (province, city)"
                } else {
                    "none"
                }
                .into(),
            );
        }
        let engine = SqliteEngine {
            api,
            path,
            pragmas,
            profile,
            fields: how.fields.max(1) as usize,
            wal_mode: settings.journal_mode == "wal",
            wal,
        };
        Ok(Opened {
            engine,
            dir,
            version,
            settings: record,
        })
    }
}
