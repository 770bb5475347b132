//! Tokyo Cabinet through its C library (Debian's libtokyocabinet9), loaded
//! at run time: `tokyo-hash` (TCH, `tchdbput`/`tchdbget`/`tchdbout`),
//! `tokyo-btree` (TCB, `tcbdbput`/`tcbdbget`/`tcbdbout`) and `tokyo-table`
//! (TCT, `tctdbput` of a row whose column `v` holds the value). Handles are
//! opened with `setmutex`, so one handle serves every worker thread.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;

use bakeoff_core::embedded::EngineSession;
use bakeoff_core::error::TargetError;
use bakeoff_core::profile::{Profile, Query, RecordKind, SearchKind};
use bakeoff_core::session::SessionError;
use bakeoff_core::workload::OpKind;

use super::{DataDir, Engine, EngineError, OpenHow, Opened};
use crate::dl::{self, Lib};
use crate::kind::TargetFacts;
use crate::settings::{durable, Durability, Kind as SettingKind, Setting, Settings, DIR};
use bakeoff_core::durability::DurableTo;

const PACKAGE: &str = "libtokyocabinet9";
const LIB_NAMES: &[&str] = &["libtokyocabinet.so.9", "libtokyocabinet.so"];
const LIB_ENV: &str = "BAKEOFF_TOKYOCABINET_LIB";

/// `omode` bits shared by tchdbopen and tcbdbopen.
const OWRITER: c_int = 1 << 1;
const OCREAT: c_int = 1 << 2;
const OTRUNC: c_int = 1 << 3;
const OTSYNC: c_int = 1 << 6;
/// `opts` bits shared by tchdbtune and tcbdbtune.
const TLARGE: u8 = 1 << 0;
const TDEFLATE: u8 = 1 << 1;
const TBZIP: u8 = 1 << 2;
const TTCBS: u8 = 1 << 3;

type Db = *mut c_void;

/// The functions bakeoff calls, looked up once.
#[allow(clippy::type_complexity)]
struct Api {
    _lib: Lib,
    version: String,
    errmsg: unsafe extern "C" fn(c_int) -> *const c_char,
    free: unsafe extern "C" fn(*mut c_void),
    hdb_new: unsafe extern "C" fn() -> Db,
    hdb_setmutex: unsafe extern "C" fn(Db) -> bool,
    hdb_tune: unsafe extern "C" fn(Db, i64, i8, i8, u8) -> bool,
    hdb_setcache: unsafe extern "C" fn(Db, i32) -> bool,
    hdb_setxmsiz: unsafe extern "C" fn(Db, i64) -> bool,
    hdb_open: unsafe extern "C" fn(Db, *const c_char, c_int) -> bool,
    hdb_put: unsafe extern "C" fn(Db, *const c_void, c_int, *const c_void, c_int) -> bool,
    hdb_get: unsafe extern "C" fn(Db, *const c_void, c_int, *mut c_int) -> *mut c_void,
    hdb_out: unsafe extern "C" fn(Db, *const c_void, c_int) -> bool,
    hdb_rnum: unsafe extern "C" fn(Db) -> u64,
    hdb_ecode: unsafe extern "C" fn(Db) -> c_int,
    hdb_close: unsafe extern "C" fn(Db) -> bool,
    hdb_sync: unsafe extern "C" fn(Db) -> bool,
    hdb_del: unsafe extern "C" fn(Db),
    bdb_new: unsafe extern "C" fn() -> Db,
    bdb_setmutex: unsafe extern "C" fn(Db) -> bool,
    bdb_tune: unsafe extern "C" fn(Db, i32, i32, i64, i8, i8, u8) -> bool,
    bdb_setcache: unsafe extern "C" fn(Db, i32, i32) -> bool,
    bdb_setxmsiz: unsafe extern "C" fn(Db, i64) -> bool,
    bdb_open: unsafe extern "C" fn(Db, *const c_char, c_int) -> bool,
    bdb_put: unsafe extern "C" fn(Db, *const c_void, c_int, *const c_void, c_int) -> bool,
    bdb_get: unsafe extern "C" fn(Db, *const c_void, c_int, *mut c_int) -> *mut c_void,
    bdb_out: unsafe extern "C" fn(Db, *const c_void, c_int) -> bool,
    bdb_rnum: unsafe extern "C" fn(Db) -> u64,
    bdb_ecode: unsafe extern "C" fn(Db) -> c_int,
    bdb_close: unsafe extern "C" fn(Db) -> bool,
    bdb_sync: unsafe extern "C" fn(Db) -> bool,
    bdb_del: unsafe extern "C" fn(Db),
    bdb_curnew: unsafe extern "C" fn(Db) -> *mut c_void,
    bdb_curdel: unsafe extern "C" fn(*mut c_void),
    bdb_curjump: unsafe extern "C" fn(*mut c_void, *const c_void, c_int) -> bool,
    bdb_curnext: unsafe extern "C" fn(*mut c_void) -> bool,
    bdb_curkey3: unsafe extern "C" fn(*mut c_void, *mut c_int) -> *const c_void,
    bdb_curval3: unsafe extern "C" fn(*mut c_void, *mut c_int) -> *const c_void,
    tdb_new: unsafe extern "C" fn() -> Db,
    tdb_setmutex: unsafe extern "C" fn(Db) -> bool,
    tdb_tune: unsafe extern "C" fn(Db, i64, i8, i8, u8) -> bool,
    tdb_setcache: unsafe extern "C" fn(Db, i32, i32, i32) -> bool,
    tdb_setxmsiz: unsafe extern "C" fn(Db, i64) -> bool,
    tdb_open: unsafe extern "C" fn(Db, *const c_char, c_int) -> bool,
    tdb_put: unsafe extern "C" fn(Db, *const c_void, c_int, *mut c_void) -> bool,
    tdb_get: unsafe extern "C" fn(Db, *const c_void, c_int) -> *mut c_void,
    tdb_out: unsafe extern "C" fn(Db, *const c_void, c_int) -> bool,
    tdb_rnum: unsafe extern "C" fn(Db) -> u64,
    tdb_ecode: unsafe extern "C" fn(Db) -> c_int,
    tdb_close: unsafe extern "C" fn(Db) -> bool,
    tdb_sync: unsafe extern "C" fn(Db) -> bool,
    tdb_del: unsafe extern "C" fn(Db),
    map_new2: unsafe extern "C" fn(u32) -> *mut c_void,
    map_put: unsafe extern "C" fn(*mut c_void, *const c_void, c_int, *const c_void, c_int),
    map_get: unsafe extern "C" fn(*const c_void, *const c_void, c_int, *mut c_int) -> *const c_void,
    map_del: unsafe extern "C" fn(*mut c_void),
    tdb_setindex: unsafe extern "C" fn(Db, *const c_char, c_int) -> bool,
    qry_new: unsafe extern "C" fn(Db) -> *mut c_void,
    qry_addcond: unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *const c_char),
    qry_search: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    qry_del: unsafe extern "C" fn(*mut c_void),
    list_num: unsafe extern "C" fn(*const c_void) -> c_int,
    list_del: unsafe extern "C" fn(*mut c_void),
}

/// `TDBQCSTREQ`, `TDBQCSTRINC`: string equals, string includes.
const QC_STREQ: c_int = 0;
const QC_STRINC: c_int = 1;
/// `TDBQCFTSPH`: full-text phrase search, which a q-gram index serves
/// (a plain "includes" condition never uses an index).
const QC_FTSPH: c_int = 15;
/// `TDBITLEXICAL`, `TDBITQGRAM`, `TDBITVOID`: a lexical index, a q-gram
/// (text) index, or none.
const IT_LEXICAL: c_int = 0;
const IT_QGRAM: c_int = 3;
const IT_VOID: c_int = 9999;

/// `TCENOREC`: no record found.
const ENOREC: c_int = 22;

impl Api {
    fn load() -> Result<Self, TargetError> {
        let lib = dl::open(LIB_NAMES, LIB_ENV, PACKAGE)?;
        // SAFETY: the signatures below are those of tchdb.h, tcbdb.h and
        // tcutil.h of Tokyo Cabinet 1.4; `tcversion` is a `const char *`.
        unsafe {
            let version_ptr: *const *const c_char = dl::sym(&lib, "tcversion")?;
            let version = CStr::from_ptr(*version_ptr).to_string_lossy().into_owned();
            Ok(Api {
                version,
                errmsg: dl::sym(&lib, "tchdberrmsg")?,
                free: dl::sym(&lib, "tcfree")?,
                hdb_new: dl::sym(&lib, "tchdbnew")?,
                hdb_setmutex: dl::sym(&lib, "tchdbsetmutex")?,
                hdb_tune: dl::sym(&lib, "tchdbtune")?,
                hdb_setcache: dl::sym(&lib, "tchdbsetcache")?,
                hdb_setxmsiz: dl::sym(&lib, "tchdbsetxmsiz")?,
                hdb_open: dl::sym(&lib, "tchdbopen")?,
                hdb_put: dl::sym(&lib, "tchdbput")?,
                hdb_get: dl::sym(&lib, "tchdbget")?,
                hdb_out: dl::sym(&lib, "tchdbout")?,
                hdb_rnum: dl::sym(&lib, "tchdbrnum")?,
                hdb_ecode: dl::sym(&lib, "tchdbecode")?,
                hdb_close: dl::sym(&lib, "tchdbclose")?,
                hdb_sync: dl::sym(&lib, "tchdbsync")?,
                hdb_del: dl::sym(&lib, "tchdbdel")?,
                bdb_new: dl::sym(&lib, "tcbdbnew")?,
                bdb_setmutex: dl::sym(&lib, "tcbdbsetmutex")?,
                bdb_tune: dl::sym(&lib, "tcbdbtune")?,
                bdb_setcache: dl::sym(&lib, "tcbdbsetcache")?,
                bdb_setxmsiz: dl::sym(&lib, "tcbdbsetxmsiz")?,
                bdb_open: dl::sym(&lib, "tcbdbopen")?,
                bdb_put: dl::sym(&lib, "tcbdbput")?,
                bdb_get: dl::sym(&lib, "tcbdbget")?,
                bdb_out: dl::sym(&lib, "tcbdbout")?,
                bdb_rnum: dl::sym(&lib, "tcbdbrnum")?,
                bdb_ecode: dl::sym(&lib, "tcbdbecode")?,
                bdb_close: dl::sym(&lib, "tcbdbclose")?,
                bdb_sync: dl::sym(&lib, "tcbdbsync")?,
                bdb_del: dl::sym(&lib, "tcbdbdel")?,
                bdb_curnew: dl::sym(&lib, "tcbdbcurnew")?,
                bdb_curdel: dl::sym(&lib, "tcbdbcurdel")?,
                bdb_curjump: dl::sym(&lib, "tcbdbcurjump")?,
                bdb_curnext: dl::sym(&lib, "tcbdbcurnext")?,
                bdb_curkey3: dl::sym(&lib, "tcbdbcurkey3")?,
                bdb_curval3: dl::sym(&lib, "tcbdbcurval3")?,
                tdb_new: dl::sym(&lib, "tctdbnew")?,
                tdb_setmutex: dl::sym(&lib, "tctdbsetmutex")?,
                tdb_tune: dl::sym(&lib, "tctdbtune")?,
                tdb_setcache: dl::sym(&lib, "tctdbsetcache")?,
                tdb_setxmsiz: dl::sym(&lib, "tctdbsetxmsiz")?,
                tdb_open: dl::sym(&lib, "tctdbopen")?,
                tdb_put: dl::sym(&lib, "tctdbput")?,
                tdb_get: dl::sym(&lib, "tctdbget")?,
                tdb_out: dl::sym(&lib, "tctdbout")?,
                tdb_rnum: dl::sym(&lib, "tctdbrnum")?,
                tdb_ecode: dl::sym(&lib, "tctdbecode")?,
                tdb_close: dl::sym(&lib, "tctdbclose")?,
                tdb_sync: dl::sym(&lib, "tctdbsync")?,
                tdb_del: dl::sym(&lib, "tctdbdel")?,
                map_new2: dl::sym(&lib, "tcmapnew2")?,
                map_put: dl::sym(&lib, "tcmapput")?,
                map_get: dl::sym(&lib, "tcmapget")?,
                map_del: dl::sym(&lib, "tcmapdel")?,
                tdb_setindex: dl::sym(&lib, "tctdbsetindex")?,
                qry_new: dl::sym(&lib, "tctdbqrynew")?,
                qry_addcond: dl::sym(&lib, "tctdbqryaddcond")?,
                qry_search: dl::sym(&lib, "tctdbqrysearch")?,
                qry_del: dl::sym(&lib, "tctdbqrydel")?,
                list_num: dl::sym(&lib, "tclistnum")?,
                list_del: dl::sym(&lib, "tclistdel")?,
                _lib: lib,
            })
        }
    }

    fn message(&self, code: c_int) -> String {
        // SAFETY: tchdberrmsg returns a static string for any code.
        unsafe {
            CStr::from_ptr((self.errmsg)(code))
                .to_string_lossy()
                .into_owned()
        }
    }
}

/// Which Tokyo Cabinet database.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Hash,
    BTree,
    Table,
}

/// Settings of `[servers.tokyo-hash]` / `[servers.tokyo-btree]`.
struct TokyoSettings {
    dir: Option<String>,
    bnum: i64,
    apow: i8,
    fpow: i8,
    opts: Vec<String>,
    rcnum: i32,
    lmemb: i32,
    nmemb: i32,
    lcnum: i32,
    ncnum: i32,
    xmsiz: i64,
    sync: bool,
}

const fn int(name: &'static str, default: &'static str, help: &'static str) -> Setting {
    Setting {
        name,
        kind: SettingKind::Integer,
        default: Some(default),
        help,
    }
}

// Defaults are Tokyo Cabinet's own (tchdbtune / tcbdbtune with -1).
const BNUM: Setting = int("bnum", "-1", "buckets of the hash array");
const APOW: Setting = int("apow", "-1", "record alignment, as a power of 2");
const FPOW: Setting = int("fpow", "-1", "free-block pool size, as a power of 2");
const OPTS: Setting = Setting {
    name: "opts",
    kind: SettingKind::Words(&["large", "deflate", "bzip", "tcbs"]),
    default: Some(""),
    help: "large (over 2 GB), deflate / bzip / tcbs compression",
};
const RCNUM: Setting = int("rcnum", "0", "records cached (0: none)");
const LMEMB: Setting = int("lmemb", "-1", "members per leaf page");
const NMEMB: Setting = int("nmemb", "-1", "members per non-leaf page");
const LCNUM: Setting = int("lcnum", "0", "leaf pages cached (0: the default)");
const NCNUM: Setting = int("ncnum", "0", "non-leaf pages cached (0: the default)");
const XMSIZ: Setting = Setting {
    name: "xmsiz",
    kind: SettingKind::Bytes,
    default: None,
    help: "extra mapped memory (default: Tokyo Cabinet's, 64mb)",
};
const SYNC: Setting = Setting {
    name: "sync",
    kind: SettingKind::Flag,
    default: Some("false"),
    // TSYNC alone syncs only at the end of a transaction, and bakeoff's
    // writes are single calls outside any: measured under a power cut,
    // TSYNC on its own kept nothing more than no sync at all.
    help: "sync the file to the device after every write (tc*sync after each put and out, plus TSYNC for transactions)",
};

/// `[servers.tokyo-hash]`.
pub const HASH_SETTINGS: &[Setting] = &[DIR, BNUM, APOW, FPOW, OPTS, RCNUM, XMSIZ, SYNC];
/// `[servers.tokyo-btree]`.
pub const BTREE_SETTINGS: &[Setting] = &[
    DIR, BNUM, APOW, FPOW, OPTS, LMEMB, NMEMB, LCNUM, NCNUM, XMSIZ, SYNC,
];
/// `[servers.tokyo-table]`.
pub const TABLE_SETTINGS: &[Setting] = &[
    DIR, BNUM, APOW, FPOW, OPTS, RCNUM, LCNUM, NCNUM, XMSIZ, SYNC,
];

/// What tokyo-hash's and tokyo-table's sync flag lets acknowledged writes
/// survive: without it a record is written to the file (the kernel has
/// it) at each put; with it the file is synced too.
pub const HASH_DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("sync", "true", DurableTo::PowerCut),
        durable("sync", "false", DurableTo::ProcessCrash),
    ],
};

/// tokyo-btree's: without sync the B+tree keeps the leaves it changed in
/// its own cache until they are evicted or the database closes (measured
/// by 002-crash: a crash loses them); with it each write is synced.
pub const BTREE_DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("sync", "true", DurableTo::PowerCut),
        durable("sync", "false", DurableTo::MemoryOnly),
    ],
};

impl TokyoSettings {
    fn parse(kind: Kind, table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let declared = match kind {
            Kind::Hash => HASH_SETTINGS,
            Kind::BTree => BTREE_SETTINGS,
            Kind::Table => TABLE_SETTINGS,
        };
        let s = Settings::new(table, declared)?;
        // A key the kind does not take keeps the value that means "unused".
        let int = |k: &str, unused: i64| -> Result<i64, TargetError> {
            if declared.iter().any(|d| d.name == k) {
                Ok(s.integer(k)?.unwrap_or(unused))
            } else {
                Ok(unused)
            }
        };
        Ok(TokyoSettings {
            dir: s.path("dir")?,
            bnum: int("bnum", -1)?,
            apow: int("apow", -1)? as i8,
            fpow: int("fpow", -1)? as i8,
            opts: s.words("opts")?,
            rcnum: int("rcnum", 0)? as i32,
            lmemb: int("lmemb", -1)? as i32,
            nmemb: int("nmemb", -1)? as i32,
            lcnum: int("lcnum", 0)? as i32,
            ncnum: int("ncnum", 0)? as i32,
            xmsiz: s.bytes("xmsiz")?.map_or(-1, |b| b as i64),
            sync: s.flag("sync")?.unwrap_or_default(),
        })
    }

    fn opt_bits(&self) -> u8 {
        self.opts.iter().fold(0, |b, o| {
            b | match o.as_str() {
                "large" => TLARGE,
                "deflate" => TDEFLATE,
                "bzip" => TBZIP,
                _ => TTCBS,
            }
        })
    }

    fn record(&self, kind: Kind) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let d = |v: i64| {
            if v < 0 {
                "default".to_string()
            } else {
                v.to_string()
            }
        };
        m.insert("bnum".into(), d(self.bnum));
        m.insert("apow".into(), d(self.apow as i64));
        m.insert("fpow".into(), d(self.fpow as i64));
        m.insert(
            "opts".into(),
            if self.opts.is_empty() {
                "none".into()
            } else {
                self.opts.join(",")
            },
        );
        m.insert("xmsiz".into(), d(self.xmsiz));
        m.insert("sync".into(), self.sync.to_string());
        if kind != Kind::BTree {
            m.insert("rcnum".into(), self.rcnum.to_string());
        }
        if kind == Kind::BTree {
            m.insert("lmemb".into(), d(self.lmemb as i64));
            m.insert("nmemb".into(), d(self.nmemb as i64));
        }
        if kind != Kind::Hash {
            m.insert("lcnum".into(), self.lcnum.to_string());
            m.insert("ncnum".into(), self.ncnum.to_string());
        }
        m
    }
}

/// An open Tokyo Cabinet database.
pub struct TokyoDb {
    api: Arc<Api>,
    db: Db,
    kind: Kind,
    /// Sync the file to the device after every write (setting `sync`).
    sync: bool,
    /// How a search by part of the name is asked: a phrase search on the
    /// q-gram index when indexes are on (as the seed's table database
    /// answered it), else "includes", a scan.
    name_condition: c_int,
}

// SAFETY: the handle was opened after `setmutex`, which makes Tokyo Cabinet
// lock internally; every call may come from any thread.
unsafe impl Send for TokyoDb {}
// SAFETY: as above.
unsafe impl Sync for TokyoDb {}

impl Drop for TokyoDb {
    fn drop(&mut self) {
        // SAFETY: closing and freeing the handle we opened, once.
        unsafe {
            match self.kind {
                Kind::Hash => {
                    (self.api.hdb_close)(self.db);
                    (self.api.hdb_del)(self.db);
                }
                Kind::BTree => {
                    (self.api.bdb_close)(self.db);
                    (self.api.bdb_del)(self.db);
                }
                Kind::Table => {
                    (self.api.tdb_close)(self.db);
                    (self.api.tdb_del)(self.db);
                }
            }
        }
    }
}

impl TokyoDb {
    /// A write's outcome: with `sync` set, a write that succeeded is
    /// synced to the device before it counts as done.
    fn written(&self, ok: bool) -> Result<(), SessionError> {
        let sync = match self.kind {
            Kind::Hash => self.api.hdb_sync,
            Kind::BTree => self.api.bdb_sync,
            Kind::Table => self.api.tdb_sync,
        };
        // SAFETY: syncing our own open handle.
        if ok && (!self.sync || unsafe { sync(self.db) }) {
            Ok(())
        } else {
            Err(self.error().into())
        }
    }

    fn error(&self) -> EngineError {
        // SAFETY: reading the last error code of our handle.
        EngineError(self.api.message(self.last_code()))
    }

    fn last_code(&self) -> c_int {
        // SAFETY: as above.
        unsafe {
            match self.kind {
                Kind::Hash => (self.api.hdb_ecode)(self.db),
                Kind::BTree => (self.api.bdb_ecode)(self.db),
                Kind::Table => (self.api.tdb_ecode)(self.db),
            }
        }
    }
}

/// A worker's session: the shared handle.
pub struct TokyoSession {
    db: Arc<TokyoDb>,
}

impl EngineSession for TokyoSession {
    fn put_profile(
        &mut self,
        _id: u64,
        key: &[u8],
        p: &Profile,
        payload: &[u8],
    ) -> Result<(), SessionError> {
        let d = &self.db;
        if d.kind != Kind::Table {
            return Err(SessionError::Server(
                "only tokyo-table stores profile rows".into(),
            ));
        }
        let (prov, city) = (p.province_text(), p.city_text());
        let cols: [(&[u8], &[u8]); 5] = [
            (b"name", &p.name),
            (b"sex", std::slice::from_ref(&p.sex)),
            (b"province", &prov),
            (b"city", &city),
            (b"payload", payload),
        ];
        // SAFETY: a row map of our own, filled and freed here.
        let ok = unsafe {
            let row = (d.api.map_new2)(8);
            for (k, v) in cols {
                (d.api.map_put)(
                    row,
                    k.as_ptr().cast(),
                    k.len() as c_int,
                    v.as_ptr().cast(),
                    v.len() as c_int,
                );
            }
            let ok = (d.api.tdb_put)(d.db, key.as_ptr().cast(), key.len() as c_int, row);
            (d.api.map_del)(row);
            ok
        };
        d.written(ok)
    }

    fn search(&mut self, q: &Query) -> Result<u64, SessionError> {
        let d = &self.db;
        if d.kind != Kind::Table {
            return Err(SessionError::Server("only tokyo-table can search".into()));
        }
        let z = |b: &[u8]| -> [u8; 4] {
            let mut out = [0u8; 4];
            out[..b.len()].copy_from_slice(b);
            out
        };
        let (name, sex, prov, city) = (z(&q.name_part), z(&[q.sex]), z(&q.province), z(&q.city));
        let mut conds: Vec<(&[u8], c_int, &[u8; 4])> = Vec::with_capacity(4);
        if matches!(q.kind, SearchKind::Name | SearchKind::All) {
            conds.push((b"name\0", d.name_condition, &name));
        }
        if matches!(q.kind, SearchKind::Sex | SearchKind::All) {
            conds.push((b"sex\0", QC_STREQ, &sex));
        }
        if matches!(q.kind, SearchKind::Location | SearchKind::All) {
            conds.push((b"province\0", QC_STREQ, &prov));
            conds.push((b"city\0", QC_STREQ, &city));
        }
        // SAFETY: a query object of our own; column names and expressions
        // are NUL-terminated; the result list is freed after counting.
        unsafe {
            let qry = (d.api.qry_new)(d.db);
            for (col, op, expr) in conds {
                (d.api.qry_addcond)(qry, col.as_ptr().cast(), op, expr.as_ptr().cast());
            }
            let list = (d.api.qry_search)(qry);
            let n = if list.is_null() {
                0
            } else {
                (d.api.list_num)(list) as u64
            };
            if !list.is_null() {
                (d.api.list_del)(list);
            }
            (d.api.qry_del)(qry);
            Ok(n)
        }
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, SessionError> {
        let d = &self.db;
        out.clear();
        // SAFETY: key and out are valid for the lengths passed; tchdbget3
        // writes at most `capacity` bytes; tcbdbget returns a malloc'ed
        // copy that we free with tcfree.
        unsafe {
            match d.kind {
                Kind::Hash => {
                    // tchdbget (a malloc'ed copy), not tchdbget3 (into our
                    // buffer): measured against tchtest, get3 was 0.77x the
                    // speed of tchtest's own read path and get 1.1x.
                    let mut n: c_int = 0;
                    let p = (d.api.hdb_get)(d.db, key.as_ptr().cast(), key.len() as c_int, &mut n);
                    if p.is_null() {
                        return if d.last_code() == ENOREC {
                            Ok(false)
                        } else {
                            Err(d.error().into())
                        };
                    }
                    out.extend_from_slice(std::slice::from_raw_parts(p as *const u8, n as usize));
                    (d.api.free)(p);
                }
                Kind::BTree => {
                    let mut n: c_int = 0;
                    let p = (d.api.bdb_get)(d.db, key.as_ptr().cast(), key.len() as c_int, &mut n);
                    if p.is_null() {
                        return if d.last_code() == ENOREC {
                            Ok(false)
                        } else {
                            Err(d.error().into())
                        };
                    }
                    out.extend_from_slice(std::slice::from_raw_parts(p as *const u8, n as usize));
                    (d.api.free)(p);
                }
                Kind::Table => {
                    let row = (d.api.tdb_get)(d.db, key.as_ptr().cast(), key.len() as c_int);
                    if row.is_null() {
                        return if d.last_code() == ENOREC {
                            Ok(false)
                        } else {
                            Err(d.error().into())
                        };
                    }
                    let mut n: c_int = 0;
                    let v = (d.api.map_get)(row, b"v".as_ptr().cast(), 1, &mut n);
                    if !v.is_null() {
                        out.extend_from_slice(std::slice::from_raw_parts(
                            v as *const u8,
                            n as usize,
                        ));
                    }
                    (d.api.map_del)(row);
                }
            }
        }
        Ok(true)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), SessionError> {
        let d = &self.db;
        if d.kind == Kind::Table {
            // SAFETY: a row map of our own with one column, freed after use.
            let ok = unsafe {
                let row = (d.api.map_new2)(1);
                (d.api.map_put)(
                    row,
                    b"v".as_ptr().cast(),
                    1,
                    value.as_ptr().cast(),
                    value.len() as c_int,
                );
                let ok = (d.api.tdb_put)(d.db, key.as_ptr().cast(), key.len() as c_int, row);
                (d.api.map_del)(row);
                ok
            };
            return d.written(ok);
        }
        let f = match d.kind {
            Kind::Hash => d.api.hdb_put,
            _ => d.api.bdb_put,
        };
        // SAFETY: key and value are valid for the lengths passed.
        let ok = unsafe {
            f(
                d.db,
                key.as_ptr().cast(),
                key.len() as c_int,
                value.as_ptr().cast(),
                value.len() as c_int,
            )
        };
        d.written(ok)
    }

    /// A B+tree cursor from the first key at or after `start` (the
    /// default comparator orders keys bytewise); the hash and table
    /// databases have no order and are refused before a run.
    fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> Result<u64, SessionError> {
        out.clear();
        let d = &self.db;
        if d.kind != Kind::BTree {
            return Err(SessionError::Server(
                "only the B+tree database keeps its keys in order to scan".into(),
            ));
        }
        let mut n = 0u64;
        // SAFETY: a cursor on our database (its mutex on), deleted before
        // we return; key and value point into it until it moves, and are
        // copied before.
        unsafe {
            let cur = (d.api.bdb_curnew)(d.db);
            let mut more = (d.api.bdb_curjump)(cur, start.as_ptr().cast(), start.len() as c_int);
            while more && n < u64::from(limit) {
                let (mut klen, mut vlen): (c_int, c_int) = (0, 0);
                let k = (d.api.bdb_curkey3)(cur, &mut klen);
                let v = (d.api.bdb_curval3)(cur, &mut vlen);
                if k.is_null() || v.is_null() {
                    break;
                }
                bakeoff_core::scan::push_row(
                    out,
                    std::slice::from_raw_parts(k.cast(), klen as usize),
                    std::slice::from_raw_parts(v.cast(), vlen as usize),
                );
                n += 1;
                more = (d.api.bdb_curnext)(cur);
            }
            (d.api.bdb_curdel)(cur);
        }
        Ok(n)
    }

    fn delete(&mut self, key: &[u8]) -> Result<bool, SessionError> {
        let d = &self.db;
        let f = match d.kind {
            Kind::Hash => d.api.hdb_out,
            Kind::BTree => d.api.bdb_out,
            Kind::Table => d.api.tdb_out,
        };
        // SAFETY: key is valid for the length passed.
        if unsafe { f(d.db, key.as_ptr().cast(), key.len() as c_int) } {
            d.written(true).map(|()| true)
        } else if d.last_code() == ENOREC {
            Ok(false)
        } else {
            Err(d.error().into())
        }
    }
}

/// The engine handed to the shared embedded target.
pub struct TokyoEngine {
    db: Arc<TokyoDb>,
}

impl Engine for TokyoEngine {
    type Session = TokyoSession;

    fn session(&self) -> Result<TokyoSession, EngineError> {
        Ok(TokyoSession {
            db: self.db.clone(),
        })
    }

    fn count(&self) -> Option<u64> {
        let d = &self.db;
        // SAFETY: reading the record count of our handle.
        Some(unsafe {
            match d.kind {
                Kind::Hash => (d.api.hdb_rnum)(d.db),
                Kind::BTree => (d.api.bdb_rnum)(d.db),
                Kind::Table => (d.api.tdb_rnum)(d.db),
            }
        })
    }

    fn no_background(&self) -> Option<&'static str> {
        Some("none: Tokyo Cabinet has no background threads; its defragmentation and syncs run inside the calls that trigger them, and so inside their latency")
    }

    fn describe(&self, kind: OpKind) -> String {
        let (p, get) = match self.db.kind {
            Kind::Hash => ("tchdb", "tchdbget <key>"),
            Kind::BTree => ("tcbdb", "tcbdbget <key>"),
            Kind::Table => ("tctdb", "tctdbget <key>, column v"),
        };
        let put = if self.db.kind == Kind::Table {
            "put <key> {v: <value>}"
        } else {
            "put <key> <value>"
        };
        match kind {
            OpKind::Search => {
                if self.db.kind == Kind::Table {
                    "tctdbqrysearch with conditions on name (TDBQCFTSPH on its q-gram index with indexes on, else TDBQCSTRINC) / sex / province and city (TDBQCSTREQ)".into()
                } else {
                    "not supported".into()
                }
            }
            OpKind::Get => get.to_string(),
            OpKind::Set => format!("{p}{put}"),
            OpKind::Insert => format!("{p}{put} (a new key)"),
            OpKind::ReadModifyWrite => format!("{get}, then {p}{put}"),
            OpKind::Scan if self.db.kind == Kind::BTree => {
                "tcbdbcurjump <key>, then tcbdbcurnext up to the length".into()
            }
            OpKind::Scan => "not supported (no key order)".into(),
            OpKind::Update => format!("{p}{put} (overwrites an existing key)"),
            OpKind::Delete => format!("{p}out <key>"),
        }
    }
}

/// A new handle of `kind`, thread-safe and tuned by `settings`, not yet
/// open.
fn tuned(api: &Api, kind: Kind, settings: &TokyoSettings) -> Db {
    // SAFETY: calls on a handle we create here, in the order the Tokyo
    // Cabinet manual prescribes (mutex and tuning before open).
    unsafe {
        match kind {
            Kind::Hash => {
                let h = (api.hdb_new)();
                (api.hdb_setmutex)(h);
                (api.hdb_tune)(
                    h,
                    settings.bnum,
                    settings.apow,
                    settings.fpow,
                    settings.opt_bits(),
                );
                (api.hdb_setcache)(h, settings.rcnum);
                (api.hdb_setxmsiz)(h, settings.xmsiz);
                h
            }
            Kind::BTree => {
                let h = (api.bdb_new)();
                (api.bdb_setmutex)(h);
                (api.bdb_tune)(
                    h,
                    settings.lmemb,
                    settings.nmemb,
                    settings.bnum,
                    settings.apow,
                    settings.fpow,
                    settings.opt_bits(),
                );
                (api.bdb_setcache)(h, settings.lcnum, settings.ncnum);
                (api.bdb_setxmsiz)(h, settings.xmsiz);
                h
            }
            Kind::Table => {
                let h = (api.tdb_new)();
                (api.tdb_setmutex)(h);
                (api.tdb_tune)(
                    h,
                    settings.bnum,
                    settings.apow,
                    settings.fpow,
                    settings.opt_bits(),
                );
                (api.tdb_setcache)(h, settings.rcnum, settings.lcnum, settings.ncnum);
                (api.tdb_setxmsiz)(h, settings.xmsiz);
                h
            }
        }
    }
}

/// Opens a fresh database of `kind` in the target's directory.
fn opened(
    kind: Kind,
    table: Option<&toml::Table>,
    how: &OpenHow,
) -> Result<Opened<TokyoEngine>, TargetError> {
    let name = super::EngineKind::facts(&Tokyo(kind)).name;
    let settings = TokyoSettings::parse(kind, table)?;
    let api = Arc::new(Api::load()?);
    let dir = DataDir::new(settings.dir.clone(), name)?;
    let file = dir.path().join(match kind {
        Kind::Hash => "bakeoff.tch",
        Kind::BTree => "bakeoff.tcb",
        Kind::Table => "bakeoff.tct",
    });
    let path = CString::new(file.display().to_string())
        .map_err(|_| EngineError("directory path contains a NUL byte".to_string()))?;
    // A run that loads starts from an empty database; one that does not
    // (`--no-load`) measures what the directory already holds.
    let mut mode = OWRITER | OCREAT;
    if how.load {
        mode |= OTRUNC;
    }
    if settings.sync {
        mode |= OTSYNC;
    }
    let db = tuned(&api, kind, &settings);
    let text_index = kind == Kind::Table && how.record == RecordKind::Profile && how.indexes;
    let handle = TokyoDb {
        api: api.clone(),
        db,
        kind,
        sync: settings.sync,
        name_condition: if text_index { QC_FTSPH } else { QC_STRINC },
    };
    // SAFETY: opening our handle on a path we own.
    let opened = unsafe {
        match kind {
            Kind::Hash => (api.hdb_open)(db, path.as_ptr(), mode),
            Kind::BTree => (api.bdb_open)(db, path.as_ptr(), mode),
            Kind::Table => (api.tdb_open)(db, path.as_ptr(), mode),
        }
    };
    if !opened {
        return Err(TargetError::Engine(format!(
            "cannot open {}: {}",
            file.display(),
            handle.error()
        )));
    }
    let mut record = settings.record(kind);
    if kind == Kind::Table && how.record == RecordKind::Profile {
        let kind_of_index = if how.indexes { IT_LEXICAL } else { IT_VOID };
        let name_index = if how.indexes { IT_QGRAM } else { IT_VOID };
        for (col, index) in [
            (&b"sex\0"[..], kind_of_index),
            (b"province\0", kind_of_index),
            (b"city\0", kind_of_index),
            (b"name\0", name_index),
        ] {
            // SAFETY: setting an index on our open handle; the name is
            // NUL-terminated.
            unsafe { (api.tdb_setindex)(db, col.as_ptr().cast(), index) };
        }
        record.insert(
            "indexes".into(),
            if how.indexes {
                "sex, province, city (lexical); name (q-gram, searched by phrase)"
            } else {
                "none"
            }
            .into(),
        );
    }
    let version = format!("Tokyo Cabinet {} ({})", api.version, api._lib.name);
    let engine = TokyoEngine {
        db: Arc::new(handle),
    };
    Ok(Opened {
        engine,
        dir,
        version,
        settings: record,
    })
}

/// What `tokyo-hash` is.
pub const HASH_FACTS: TargetFacts = TargetFacts::engine(
    "tokyo-hash",
    "Tokyo Cabinet hash database (TCH), in-process",
    PACKAGE,
    crate::kind::KV,
    HASH_SETTINGS,
    HASH_DURABILITY,
);
/// What `tokyo-btree` is.
pub const BTREE_FACTS: TargetFacts = TargetFacts::engine(
    "tokyo-btree",
    "Tokyo Cabinet B+tree database (TCB), in-process",
    PACKAGE,
    crate::kind::KV_SCAN,
    BTREE_SETTINGS,
    BTREE_DURABILITY,
);
/// What `tokyo-table` is: it can search.
pub const TABLE_FACTS: TargetFacts = TargetFacts::engine(
    "tokyo-table",
    "Tokyo Cabinet table database (TCT), in-process (column v)",
    PACKAGE,
    crate::kind::KV_SEARCH,
    TABLE_SETTINGS,
    HASH_DURABILITY,
);

/// One of Tokyo Cabinet's databases, as the registry knows it.
pub struct Tokyo(Kind);

/// `tokyo-hash`: the hash database (TCH).
pub const HASH: Tokyo = Tokyo(Kind::Hash);
/// `tokyo-btree`: the B+tree database (TCB).
pub const BTREE: Tokyo = Tokyo(Kind::BTree);
/// `tokyo-table`: the table database (TCT).
pub const TABLE: Tokyo = Tokyo(Kind::Table);

impl super::EngineKind for Tokyo {
    type Engine = TokyoEngine;

    fn facts(&self) -> &'static TargetFacts {
        match self.0 {
            Kind::Hash => &HASH_FACTS,
            Kind::BTree => &BTREE_FACTS,
            Kind::Table => &TABLE_FACTS,
        }
    }
    fn check(&self, settings: Option<&toml::Table>) -> Result<(), TargetError> {
        TokyoSettings::parse(self.0, settings).map(|_| ())
    }
    fn load(&self) -> Result<(), TargetError> {
        Api::load().map(|_| ())
    }
    fn opened(
        &self,
        settings: Option<&toml::Table>,
        how: &OpenHow,
    ) -> Result<Opened<TokyoEngine>, TargetError> {
        opened(self.0, settings, how)
    }
}
