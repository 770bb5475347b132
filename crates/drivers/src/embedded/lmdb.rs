//! LMDB through its C library (Debian's liblmdb0), loaded at run time: one
//! environment shared by the workers, one transaction per operation.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::ptr;
use std::sync::Arc;

use bakeoff_core::embedded::EngineSession;
use bakeoff_core::error::TargetError;
use bakeoff_core::session::SessionError;
use bakeoff_core::workload::OpKind;

use super::{DataDir, Engine, EngineError, OpenHow, Opened};
use crate::dl::{self, Lib};
use crate::settings::{durable, Durability, Kind, Setting, Settings, DIR};
use bakeoff_core::durability::DurableTo;

const PACKAGE: &str = "liblmdb0";
const LIB_NAMES: &[&str] = &["liblmdb.so.0", "liblmdb.so"];
const LIB_ENV: &str = "BAKEOFF_LMDB_LIB";

const MDB_NOSYNC: c_uint = 0x10000;
const MDB_NOMETASYNC: c_uint = 0x40000;
const MDB_NOTLS: c_uint = 0x200000;
const MDB_RDONLY: c_uint = 0x20000;
const MDB_NOTFOUND: c_int = -30798;
/// `MDB_cursor_op`: the first key at or after the one given.
const MDB_SET_RANGE: c_int = 17;
/// `MDB_cursor_op`: the next key.
const MDB_NEXT: c_int = 8;

type Env = *mut c_void;
type Txn = *mut c_void;
type Dbi = c_uint;
type Cursor = *mut c_void;

#[repr(C)]
struct Val {
    size: usize,
    data: *mut c_void,
}

#[repr(C)]
#[derive(Default)]
struct Stat {
    psize: c_uint,
    depth: c_uint,
    branch_pages: usize,
    leaf_pages: usize,
    overflow_pages: usize,
    entries: usize,
}

struct Api {
    _lib: Lib,
    version: String,
    env_create: unsafe extern "C" fn(*mut Env) -> c_int,
    env_set_mapsize: unsafe extern "C" fn(Env, usize) -> c_int,
    env_set_maxreaders: unsafe extern "C" fn(Env, c_uint) -> c_int,
    env_open: unsafe extern "C" fn(Env, *const c_char, c_uint, u32) -> c_int,
    env_close: unsafe extern "C" fn(Env),
    env_stat: unsafe extern "C" fn(Env, *mut Stat) -> c_int,
    txn_begin: unsafe extern "C" fn(Env, Txn, c_uint, *mut Txn) -> c_int,
    txn_commit: unsafe extern "C" fn(Txn) -> c_int,
    txn_abort: unsafe extern "C" fn(Txn),
    dbi_open: unsafe extern "C" fn(Txn, *const c_char, c_uint, *mut Dbi) -> c_int,
    get: unsafe extern "C" fn(Txn, Dbi, *mut Val, *mut Val) -> c_int,
    put: unsafe extern "C" fn(Txn, Dbi, *mut Val, *mut Val, c_uint) -> c_int,
    del: unsafe extern "C" fn(Txn, Dbi, *mut Val, *mut Val) -> c_int,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    cursor_open: unsafe extern "C" fn(Txn, Dbi, *mut Cursor) -> c_int,
    cursor_get: unsafe extern "C" fn(Cursor, *mut Val, *mut Val, c_int) -> c_int,
    cursor_close: unsafe extern "C" fn(Cursor),
}

impl Api {
    fn load() -> Result<Self, TargetError> {
        let lib = dl::open(LIB_NAMES, LIB_ENV, PACKAGE)?;
        // SAFETY: signatures from lmdb.h (0.9).
        unsafe {
            let version_fn: unsafe extern "C" fn(
                *mut c_int,
                *mut c_int,
                *mut c_int,
            ) -> *const c_char = dl::sym(&lib, "mdb_version")?;
            let version = CStr::from_ptr(version_fn(
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            ))
            .to_string_lossy()
            .into_owned();
            Ok(Api {
                version,
                env_create: dl::sym(&lib, "mdb_env_create")?,
                env_set_mapsize: dl::sym(&lib, "mdb_env_set_mapsize")?,
                env_set_maxreaders: dl::sym(&lib, "mdb_env_set_maxreaders")?,
                env_open: dl::sym(&lib, "mdb_env_open")?,
                env_close: dl::sym(&lib, "mdb_env_close")?,
                env_stat: dl::sym(&lib, "mdb_env_stat")?,
                txn_begin: dl::sym(&lib, "mdb_txn_begin")?,
                txn_commit: dl::sym(&lib, "mdb_txn_commit")?,
                txn_abort: dl::sym(&lib, "mdb_txn_abort")?,
                dbi_open: dl::sym(&lib, "mdb_dbi_open")?,
                get: dl::sym(&lib, "mdb_get")?,
                put: dl::sym(&lib, "mdb_put")?,
                del: dl::sym(&lib, "mdb_del")?,
                strerror: dl::sym(&lib, "mdb_strerror")?,
                cursor_open: dl::sym(&lib, "mdb_cursor_open")?,
                cursor_get: dl::sym(&lib, "mdb_cursor_get")?,
                cursor_close: dl::sym(&lib, "mdb_cursor_close")?,
                _lib: lib,
            })
        }
    }

    fn error(&self, rc: c_int) -> EngineError {
        // SAFETY: mdb_strerror returns a static string.
        EngineError(unsafe {
            CStr::from_ptr((self.strerror)(rc))
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// An open environment and its main database.
pub struct LmdbEnv {
    api: Api,
    env: Env,
    dbi: Dbi,
}

// SAFETY: the environment is opened with MDB_NOTLS; LMDB allows its use from
// any thread, with each transaction used by one thread only (ours are).
unsafe impl Send for LmdbEnv {}
// SAFETY: as above.
unsafe impl Sync for LmdbEnv {}

impl Drop for LmdbEnv {
    fn drop(&mut self) {
        // SAFETY: closing the environment we opened, after all sessions ended.
        unsafe { (self.api.env_close)(self.env) };
    }
}

/// A worker's session on the shared environment.
pub struct LmdbSession {
    env: Arc<LmdbEnv>,
}

impl LmdbSession {
    fn txn(&self, flags: c_uint) -> Result<Txn, EngineError> {
        let e = &self.env;
        let mut txn: Txn = ptr::null_mut();
        // SAFETY: beginning a top-level transaction on our environment.
        let rc = unsafe { (e.api.txn_begin)(e.env, ptr::null_mut(), flags, &mut txn) };
        if rc == 0 {
            Ok(txn)
        } else {
            Err(e.api.error(rc))
        }
    }
}

fn val(b: &[u8]) -> Val {
    Val {
        size: b.len(),
        data: b.as_ptr() as *mut c_void,
    }
}

impl EngineSession for LmdbSession {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, SessionError> {
        out.clear();
        let txn = self.txn(MDB_RDONLY)?;
        let e = &self.env;
        let mut k = val(key);
        let mut v = Val {
            size: 0,
            data: ptr::null_mut(),
        };
        // SAFETY: the value points into the map, valid until the transaction
        // ends; it is copied before the abort.
        unsafe {
            let rc = (e.api.get)(txn, e.dbi, &mut k, &mut v);
            let r = match rc {
                0 => {
                    out.extend_from_slice(std::slice::from_raw_parts(v.data as *const u8, v.size));
                    Ok(true)
                }
                MDB_NOTFOUND => Ok(false),
                _ => Err(e.api.error(rc).into()),
            };
            (e.api.txn_abort)(txn);
            r
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), SessionError> {
        let txn = self.txn(0)?;
        let e = &self.env;
        let (mut k, mut v) = (val(key), val(value));
        // SAFETY: a write transaction of our own, committed or aborted once.
        unsafe {
            let rc = (e.api.put)(txn, e.dbi, &mut k, &mut v, 0);
            if rc != 0 {
                (e.api.txn_abort)(txn);
                return Err(e.api.error(rc).into());
            }
            match (e.api.txn_commit)(txn) {
                0 => Ok(()),
                rc => Err(e.api.error(rc).into()),
            }
        }
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool, SessionError> {
        let txn = self.txn(0)?;
        let e = &self.env;
        let mut k = val(key);
        // SAFETY: as above.
        unsafe {
            let rc = (e.api.del)(txn, e.dbi, &mut k, ptr::null_mut());
            if rc == MDB_NOTFOUND {
                (e.api.txn_abort)(txn);
                return Ok(false);
            }
            if rc != 0 {
                (e.api.txn_abort)(txn);
                return Err(e.api.error(rc).into());
            }
            match (e.api.txn_commit)(txn) {
                0 => Ok(true),
                rc => Err(e.api.error(rc).into()),
            }
        }
    }

    fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> Result<u64, SessionError> {
        out.clear();
        let txn = self.txn(MDB_RDONLY)?;
        let e = &self.env;
        let mut cursor: Cursor = ptr::null_mut();
        // SAFETY: a cursor of our read-only transaction, closed before it
        // ends; keys and values point into the map until then and are
        // copied out before.
        unsafe {
            let rc = (e.api.cursor_open)(txn, e.dbi, &mut cursor);
            if rc != 0 {
                (e.api.txn_abort)(txn);
                return Err(e.api.error(rc).into());
            }
            let mut k = val(start);
            let mut v = Val {
                size: 0,
                data: ptr::null_mut(),
            };
            let mut op = MDB_SET_RANGE;
            let mut n = 0u64;
            let result = loop {
                if n == u64::from(limit) {
                    break Ok(n);
                }
                match (e.api.cursor_get)(cursor, &mut k, &mut v, op) {
                    0 => {
                        let key = std::slice::from_raw_parts(k.data as *const u8, k.size);
                        let value = std::slice::from_raw_parts(v.data as *const u8, v.size);
                        bakeoff_core::scan::push_row(out, key, value);
                        n += 1;
                        op = MDB_NEXT;
                    }
                    MDB_NOTFOUND => break Ok(n),
                    rc => break Err(e.api.error(rc).into()),
                }
            };
            (e.api.cursor_close)(cursor);
            (e.api.txn_abort)(txn);
            result
        }
    }
}

/// The engine handed to the shared target.
pub struct LmdbEngine {
    env: Arc<LmdbEnv>,
}

impl Engine for LmdbEngine {
    type Session = LmdbSession;

    fn session(&self) -> Result<LmdbSession, EngineError> {
        Ok(LmdbSession {
            env: self.env.clone(),
        })
    }

    fn count(&self) -> Option<u64> {
        let mut st = Stat::default();
        // SAFETY: statistics of our environment's main database.
        let rc = unsafe { (self.env.api.env_stat)(self.env.env, &mut st) };
        (rc == 0).then_some(st.entries as u64)
    }

    fn no_background(&self) -> Option<&'static str> {
        Some("none: LMDB has no background threads; page reuse and the fsync happen inside each write's commit, and so inside its latency")
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Search => "not supported".into(),
            OpKind::Get => "mdb_get in a read-only transaction".into(),
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                "mdb_put + mdb_txn_commit (one write transaction per operation)".into()
            }
            OpKind::Scan => {
                "mdb_cursor_get MDB_SET_RANGE <key>, then MDB_NEXT up to the length, in a read-only transaction".into()
            }
            OpKind::ReadModifyWrite => {
                "mdb_get in a read-only transaction, then mdb_put + mdb_txn_commit".into()
            }
            OpKind::Delete => "mdb_del + mdb_txn_commit".into(),
        }
    }
}

struct LmdbSettings {
    dir: Option<String>,
    map_size: u64,
    sync: String,
}

/// `[servers.lmdb]`.
pub const SETTINGS: &[Setting] = &[
    DIR,
    Setting {
        name: "map_size",
        kind: Kind::Bytes,
        default: Some("16gb"),
        help: "largest size the database may grow to (mdb_env_set_mapsize)",
    },
    // No fsync per commit by default, like the other engines here (Tokyo
    // Cabinet without TSYNC, Redis without AOF): `full` is LMDB's own
    // durable default.
    Setting {
        name: "sync",
        kind: Kind::Choice(&["full", "nometasync", "nosync"]),
        default: Some("nosync"),
        help: "fsync at every commit (full), all but the meta page (nometasync), or never (nosync)",
    },
];

/// What LMDB's sync setting lets acknowledged writes survive: every
/// commit writes its pages to the file (the kernel has them); full syncs
/// data and meta page, nometasync leaves the meta page (the last commit)
/// unsynced.
pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("sync", "full", DurableTo::PowerCut),
        durable("sync", "nometasync", DurableTo::ProcessCrash),
        durable("sync", "nosync", DurableTo::ProcessCrash),
    ],
};

impl LmdbSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(LmdbSettings {
            dir: s.path("dir")?,
            map_size: s.bytes("map_size")?.unwrap_or_default(),
            sync: s.choice("sync")?.unwrap_or_default(),
        })
    }
}

/// What `lmdb` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts::engine(
    "lmdb",
    "LMDB, in-process (one transaction per operation)",
    PACKAGE,
    crate::kind::KV_SCAN,
    SETTINGS,
    DURABILITY,
);

/// `lmdb`, as the registry knows it.
pub struct Lmdb;

impl super::EngineKind for Lmdb {
    type Engine = LmdbEngine;

    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        LmdbSettings::parse(settings).map(|_| ())
    }
    fn load(&self) -> Result<(), TargetError> {
        Api::load().map(|_| ())
    }
    /// Opens the environment (emptied first for a run that loads).
    fn opened(
        &self,
        table: Option<&toml::Table>,
        how: &OpenHow,
    ) -> Result<Opened<LmdbEngine>, TargetError> {
        let name = FACTS.name;
        let settings = LmdbSettings::parse(table)?;
        let api = Api::load()?;
        let dir = DataDir::new(settings.dir.clone(), name)?;
        if how.load {
            let _ = std::fs::remove_file(dir.path().join("data.mdb"));
            let _ = std::fs::remove_file(dir.path().join("lock.mdb"));
        }
        let path = CString::new(dir.path().display().to_string())
            .map_err(|_| EngineError("directory path contains a NUL byte".to_string()))?;
        let mut flags = MDB_NOTLS;
        match settings.sync.as_str() {
            "nosync" => flags |= MDB_NOSYNC,
            "nometasync" => flags |= MDB_NOMETASYNC,
            _ => {}
        }
        let mut env: Env = ptr::null_mut();
        // SAFETY: creating, sizing and opening an environment we own, then
        // opening its main database in a first write transaction.
        let dbi = unsafe {
            let rc = (api.env_create)(&mut env);
            if rc != 0 {
                return Err(api.error(rc).into());
            }
            (api.env_set_mapsize)(env, settings.map_size as usize);
            (api.env_set_maxreaders)(env, 4096);
            let rc = (api.env_open)(env, path.as_ptr(), flags, 0o644);
            if rc != 0 {
                (api.env_close)(env);
                return Err(TargetError::Engine(format!(
                    "cannot open LMDB environment in {}: {}",
                    dir.path().display(),
                    api.error(rc)
                )));
            }
            let mut txn: Txn = ptr::null_mut();
            let rc = (api.txn_begin)(env, ptr::null_mut(), 0, &mut txn);
            if rc != 0 {
                (api.env_close)(env);
                return Err(api.error(rc).into());
            }
            let mut dbi: Dbi = 0;
            let rc = (api.dbi_open)(txn, ptr::null(), 0, &mut dbi);
            if rc != 0 {
                (api.txn_abort)(txn);
                (api.env_close)(env);
                return Err(api.error(rc).into());
            }
            (api.txn_commit)(txn);
            dbi
        };
        let mut record = BTreeMap::new();
        record.insert("map_size".into(), settings.map_size.to_string());
        record.insert("sync".into(), settings.sync.clone());
        let version = format!("{} ({})", api.version, api._lib.name);
        let engine = LmdbEngine {
            env: Arc::new(LmdbEnv { api, env, dbi }),
        };
        Ok(Opened {
            engine,
            dir,
            version,
            settings: record,
        })
    }
}
