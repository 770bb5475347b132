//! RocksDB through its C API (Debian's librocksdb7.8), loaded at run time:
//! `rocksdb_put` / `rocksdb_get` / `rocksdb_delete` on one shared database.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::ptr;
use std::sync::Arc;
use std::time::Duration;

use bakeoff_core::embedded::EngineSession;
use bakeoff_core::error::TargetError;
use bakeoff_core::session::SessionError;
use bakeoff_core::target::BackgroundLook;
use bakeoff_core::workload::OpKind;

use super::{DataDir, Engine, EngineError, OpenHow, Opened};
use crate::dl::{self, Lib};
use crate::settings::{durable, Durability, Kind, Setting, Settings, DIR};
use bakeoff_core::durability::DurableTo;

const PACKAGE: &str = "librocksdb7.8";
const LIB_NAMES: &[&str] = &["librocksdb.so.7.8", "librocksdb.so"];
const LIB_ENV: &str = "BAKEOFF_ROCKSDB_LIB";

type P = *mut c_void;

struct Api {
    lib: Lib,
    options_create: unsafe extern "C" fn() -> P,
    options_set_create_if_missing: unsafe extern "C" fn(P, c_uchar),
    options_set_write_buffer_size: unsafe extern "C" fn(P, usize),
    options_set_compression: unsafe extern "C" fn(P, c_int),
    options_set_block_based_table_factory: unsafe extern "C" fn(P, P),
    block_based_options_create: unsafe extern "C" fn() -> P,
    block_based_options_set_block_cache: unsafe extern "C" fn(P, P),
    cache_create_lru: unsafe extern "C" fn(usize) -> P,
    open: unsafe extern "C" fn(P, *const c_char, *mut *mut c_char) -> P,
    destroy_db: unsafe extern "C" fn(P, *const c_char, *mut *mut c_char),
    close: unsafe extern "C" fn(P),
    writeoptions_create: unsafe extern "C" fn() -> P,
    writeoptions_set_sync: unsafe extern "C" fn(P, c_uchar),
    readoptions_create: unsafe extern "C" fn() -> P,
    put: unsafe extern "C" fn(P, P, *const c_char, usize, *const c_char, usize, *mut *mut c_char),
    get: unsafe extern "C" fn(
        P,
        P,
        *const c_char,
        usize,
        *mut usize,
        *mut *mut c_char,
    ) -> *mut c_char,
    delete: unsafe extern "C" fn(P, P, *const c_char, usize, *mut *mut c_char),
    free: unsafe extern "C" fn(*mut c_void),
    create_iterator: unsafe extern "C" fn(P, P) -> P,
    iter_seek_to_first: unsafe extern "C" fn(P),
    iter_valid: unsafe extern "C" fn(P) -> c_uchar,
    iter_next: unsafe extern "C" fn(P),
    iter_destroy: unsafe extern "C" fn(P),
    iter_seek: unsafe extern "C" fn(P, *const c_char, usize),
    iter_key: unsafe extern "C" fn(P, *mut usize) -> *const c_char,
    iter_value: unsafe extern "C" fn(P, *mut usize) -> *const c_char,
    iter_get_error: unsafe extern "C" fn(P, *mut *mut c_char),
    property_int: unsafe extern "C" fn(P, *const c_char, *mut u64) -> c_int,
}

impl Api {
    fn load() -> Result<Self, TargetError> {
        let lib = dl::open(LIB_NAMES, LIB_ENV, PACKAGE)?;
        // SAFETY: signatures from rocksdb/c.h (7.x).
        unsafe {
            Ok(Api {
                options_create: dl::sym(&lib, "rocksdb_options_create")?,
                options_set_create_if_missing: dl::sym(
                    &lib,
                    "rocksdb_options_set_create_if_missing",
                )?,
                options_set_write_buffer_size: dl::sym(
                    &lib,
                    "rocksdb_options_set_write_buffer_size",
                )?,
                options_set_compression: dl::sym(&lib, "rocksdb_options_set_compression")?,
                options_set_block_based_table_factory: dl::sym(
                    &lib,
                    "rocksdb_options_set_block_based_table_factory",
                )?,
                block_based_options_create: dl::sym(&lib, "rocksdb_block_based_options_create")?,
                block_based_options_set_block_cache: dl::sym(
                    &lib,
                    "rocksdb_block_based_options_set_block_cache",
                )?,
                cache_create_lru: dl::sym(&lib, "rocksdb_cache_create_lru")?,
                open: dl::sym(&lib, "rocksdb_open")?,
                destroy_db: dl::sym(&lib, "rocksdb_destroy_db")?,
                close: dl::sym(&lib, "rocksdb_close")?,
                writeoptions_create: dl::sym(&lib, "rocksdb_writeoptions_create")?,
                writeoptions_set_sync: dl::sym(&lib, "rocksdb_writeoptions_set_sync")?,
                readoptions_create: dl::sym(&lib, "rocksdb_readoptions_create")?,
                put: dl::sym(&lib, "rocksdb_put")?,
                get: dl::sym(&lib, "rocksdb_get")?,
                delete: dl::sym(&lib, "rocksdb_delete")?,
                free: dl::sym(&lib, "rocksdb_free")?,
                create_iterator: dl::sym(&lib, "rocksdb_create_iterator")?,
                iter_seek_to_first: dl::sym(&lib, "rocksdb_iter_seek_to_first")?,
                iter_valid: dl::sym(&lib, "rocksdb_iter_valid")?,
                iter_next: dl::sym(&lib, "rocksdb_iter_next")?,
                iter_destroy: dl::sym(&lib, "rocksdb_iter_destroy")?,
                iter_seek: dl::sym(&lib, "rocksdb_iter_seek")?,
                iter_key: dl::sym(&lib, "rocksdb_iter_key")?,
                iter_value: dl::sym(&lib, "rocksdb_iter_value")?,
                iter_get_error: dl::sym(&lib, "rocksdb_iter_get_error")?,
                property_int: dl::sym(&lib, "rocksdb_property_int")?,
                lib,
            })
        }
    }

    /// Turns a RocksDB error pointer into a message (and frees it).
    fn take_error(&self, err: *mut c_char) -> Result<(), EngineError> {
        if err.is_null() {
            return Ok(());
        }
        // SAFETY: err is a NUL-terminated string RocksDB allocated.
        let m = unsafe { CStr::from_ptr(err).to_string_lossy().into_owned() };
        // SAFETY: freed once, with RocksDB's own free.
        unsafe { (self.free)(err.cast()) };
        Err(EngineError(m))
    }
}

/// The open database and its option objects.
pub struct RocksDb {
    api: Api,
    db: P,
    write: P,
    read: P,
}

// SAFETY: a RocksDB handle and its read/write options are safe to use from
// several threads at once (the C++ API is thread-safe for these calls).
unsafe impl Send for RocksDb {}
// SAFETY: as above.
unsafe impl Sync for RocksDb {}

impl Drop for RocksDb {
    fn drop(&mut self) {
        // SAFETY: closing the database once, after every session ended.
        unsafe { (self.api.close)(self.db) };
    }
}

/// A worker's session on the shared database.
pub struct RocksSession {
    db: Arc<RocksDb>,
}

impl EngineSession for RocksSession {
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, SessionError> {
        let d = &self.db;
        out.clear();
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: the returned buffer is malloc'ed by RocksDB, copied and freed.
        unsafe {
            let v = (d.api.get)(
                d.db,
                d.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            d.api.take_error(err)?;
            if v.is_null() {
                return Ok(false);
            }
            out.extend_from_slice(std::slice::from_raw_parts(v as *const u8, len));
            (d.api.free)(v.cast());
        }
        Ok(true)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), SessionError> {
        let d = &self.db;
        let mut err = ptr::null_mut();
        // SAFETY: key and value are valid for the lengths passed.
        unsafe {
            (d.api.put)(
                d.db,
                d.write,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        Ok(d.api.take_error(err)?)
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool, SessionError> {
        let d = &self.db;
        let mut err = ptr::null_mut();
        // SAFETY: key is valid for the length passed.
        unsafe { (d.api.delete)(d.db, d.write, key.as_ptr().cast(), key.len(), &mut err) };
        // RocksDB writes a tombstone without looking: it cannot tell a miss.
        d.api.take_error(err)?;
        Ok(true)
    }

    fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> Result<u64, SessionError> {
        out.clear();
        let d = &self.db;
        let mut n = 0u64;
        let mut err = ptr::null_mut();
        // SAFETY: an iterator of our database, destroyed before we return;
        // its key and value stay valid until it moves, and are copied
        // before.
        unsafe {
            let it = (d.api.create_iterator)(d.db, d.read);
            (d.api.iter_seek)(it, start.as_ptr().cast(), start.len());
            while n < u64::from(limit) && (d.api.iter_valid)(it) != 0 {
                let (mut klen, mut vlen) = (0usize, 0usize);
                let k = (d.api.iter_key)(it, &mut klen);
                let v = (d.api.iter_value)(it, &mut vlen);
                bakeoff_core::scan::push_row(
                    out,
                    std::slice::from_raw_parts(k.cast(), klen),
                    std::slice::from_raw_parts(v.cast(), vlen),
                );
                n += 1;
                (d.api.iter_next)(it);
            }
            (d.api.iter_get_error)(it, &mut err);
            (d.api.iter_destroy)(it);
        }
        d.api.take_error(err)?;
        Ok(n)
    }
}

/// The engine handed to the shared target.
pub struct RocksEngine {
    db: Arc<RocksDb>,
}

impl Engine for RocksEngine {
    type Session = RocksSession;

    fn session(&self) -> Result<RocksSession, EngineError> {
        Ok(RocksSession {
            db: self.db.clone(),
        })
    }

    fn count(&self) -> Option<u64> {
        let d = &self.db;
        let mut n = 0;
        // SAFETY: a full iteration with our read options, then destroyed.
        unsafe {
            let it = (d.api.create_iterator)(d.db, d.read);
            (d.api.iter_seek_to_first)(it);
            while (d.api.iter_valid)(it) != 0 {
                n += 1;
                (d.api.iter_next)(it);
            }
            (d.api.iter_destroy)(it);
        }
        Some(n)
    }

    fn background_source(&self) -> Option<(&'static str, Duration)> {
        Some((
            "rocksdb_property_int: running compactions and flushes, write stops and delays, every 100 ms (work shorter than that is seen only if it runs at a look)",
            Duration::from_millis(100),
        ))
    }

    fn background(&self) -> Option<BackgroundLook> {
        let d = &self.db;
        let property = |name: &CStr| {
            let mut v = 0u64;
            // SAFETY: an integer property of the open database, read into
            // `v`; 0 means it was read.
            let ok = unsafe { (d.api.property_int)(d.db, name.as_ptr(), &mut v) } == 0;
            ok.then_some(v)
        };
        let mb = |b: u64| b as f64 / (1 << 20) as f64;
        let mut look = BackgroundLook::default();
        let compactions = property(c"rocksdb.num-running-compactions")?;
        if compactions > 0 {
            let pending = property(c"rocksdb.estimate-pending-compaction-bytes").unwrap_or(0);
            look.running.push((
                "compaction",
                format!(
                    "{compactions} running, {:.1} MB still to compact",
                    mb(pending)
                ),
            ));
        }
        let flushes = property(c"rocksdb.num-running-flushes").unwrap_or(0);
        if flushes > 0 {
            let immutable = property(c"rocksdb.num-immutable-mem-table").unwrap_or(0);
            look.running.push((
                "flush",
                format!("{flushes} running, {immutable} memtables waiting"),
            ));
        }
        if property(c"rocksdb.is-write-stopped") == Some(1) {
            look.running.push((
                bakeoff_core::target::WRITE_STOP,
                "writes stopped until compaction catches up".into(),
            ));
        }
        let delayed = property(c"rocksdb.actual-delayed-write-rate").unwrap_or(0);
        if delayed > 0 {
            look.running.push((
                bakeoff_core::target::WRITE_DELAY,
                format!("writes slowed to {:.1} MB/s", mb(delayed)),
            ));
        }
        Some(look)
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Search => "not supported".into(),
            OpKind::Get => "rocksdb_get <key>".into(),
            OpKind::Set | OpKind::Update | OpKind::Insert => "rocksdb_put <key> <value>".into(),
            OpKind::Scan => {
                "rocksdb_iter_seek <key>, then rocksdb_iter_next up to the length".into()
            }
            OpKind::ReadModifyWrite => "rocksdb_get <key>, then rocksdb_put <key> <value>".into(),
            OpKind::Delete => {
                "rocksdb_delete <key> (a tombstone: deletes never report a miss)".into()
            }
        }
    }
}

struct RocksSettings {
    dir: Option<String>,
    block_cache: u64,
    write_buffer: u64,
    compression: String,
    sync: bool,
}

/// `[servers.rocksdb]`.
pub const SETTINGS: &[Setting] = &[
    DIR,
    Setting {
        name: "block_cache",
        kind: Kind::Bytes,
        default: Some("8mb"),
        help: "LRU cache of uncompressed blocks",
    },
    Setting {
        name: "write_buffer",
        kind: Kind::Bytes,
        default: Some("64mb"),
        help: "memtable size before a flush",
    },
    Setting {
        name: "compression",
        kind: Kind::Choice(&["none", "snappy", "zlib", "lz4", "zstd"]),
        default: Some("snappy"),
        help: "block compression",
    },
    Setting {
        name: "sync",
        kind: Kind::Flag,
        default: Some("false"),
        help: "fsync the write-ahead log at every write",
    },
];

/// What RocksDB's sync flag lets acknowledged writes survive: each write
/// goes to the write-ahead log file (the kernel has it); with sync the log
/// is synced before the write returns.
pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("sync", "true", DurableTo::PowerCut),
        durable("sync", "false", DurableTo::ProcessCrash),
    ],
};

impl RocksSettings {
    fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(RocksSettings {
            dir: s.path("dir")?,
            block_cache: s.bytes("block_cache")?.unwrap_or_default(),
            write_buffer: s.bytes("write_buffer")?.unwrap_or_default(),
            compression: s.choice("compression")?.unwrap_or_default(),
            sync: s.flag("sync")?.unwrap_or_default(),
        })
    }

    fn compression_code(&self) -> c_int {
        match self.compression.as_str() {
            "none" => 0,
            "snappy" => 1,
            "zlib" => 2,
            "lz4" => 4,
            _ => 7,
        }
    }
}

/// What `rocksdb` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts::engine(
    "rocksdb",
    "RocksDB, in-process (C API)",
    PACKAGE,
    crate::kind::KV_SCAN,
    SETTINGS,
    DURABILITY,
);

/// `rocksdb`, as the registry knows it.
pub struct Rocksdb;

impl super::EngineKind for Rocksdb {
    type Engine = RocksEngine;

    fn facts(&self) -> &'static crate::kind::TargetFacts {
        &FACTS
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        RocksSettings::parse(settings).map(|_| ())
    }
    fn load(&self) -> Result<(), TargetError> {
        Api::load().map(|_| ())
    }
    /// Opens the database (destroyed first for a run that loads).
    fn opened(
        &self,
        table: Option<&toml::Table>,
        how: &OpenHow,
    ) -> Result<Opened<RocksEngine>, TargetError> {
        let name = FACTS.name;
        let settings = RocksSettings::parse(table)?;
        let api = Api::load()?;
        let dir = DataDir::new(settings.dir.clone(), name)?;
        let path = CString::new(dir.path().join("db").display().to_string())
            .map_err(|_| EngineError("path contains a NUL byte".to_string()))?;
        // SAFETY: building options and opening the database per rocksdb/c.h;
        // the option objects live as long as the process (a few per run).
        let db = unsafe {
            let opts = (api.options_create)();
            (api.options_set_create_if_missing)(opts, 1);
            (api.options_set_write_buffer_size)(opts, settings.write_buffer as usize);
            (api.options_set_compression)(opts, settings.compression_code());
            let table = (api.block_based_options_create)();
            (api.block_based_options_set_block_cache)(
                table,
                (api.cache_create_lru)(settings.block_cache as usize),
            );
            (api.options_set_block_based_table_factory)(opts, table);
            if how.load {
                let mut err = ptr::null_mut();
                (api.destroy_db)(opts, path.as_ptr(), &mut err);
                api.take_error(err).map_err(|e| {
                    EngineError(format!("cannot empty {}: {e}", path.to_string_lossy()))
                })?;
            }
            let mut err = ptr::null_mut();
            let db = (api.open)(opts, path.as_ptr(), &mut err);
            api.take_error(err)
                .map_err(|e| EngineError(format!("cannot open {}: {e}", path.to_string_lossy())))?;
            let write = (api.writeoptions_create)();
            (api.writeoptions_set_sync)(write, settings.sync as c_uchar);
            let read = (api.readoptions_create)();
            let version = format!("RocksDB ({})", api.lib.name);
            (
                RocksDb {
                    api,
                    db,
                    write,
                    read,
                },
                version,
            )
        };
        let (db, version) = db;
        let mut record = BTreeMap::new();
        record.insert("block_cache".into(), settings.block_cache.to_string());
        record.insert("write_buffer".into(), settings.write_buffer.to_string());
        record.insert("compression".into(), settings.compression.clone());
        record.insert("sync".into(), settings.sync.to_string());
        Ok(Opened {
            engine: RocksEngine { db: Arc::new(db) },
            dir,
            version,
            settings: record,
        })
    }
}
