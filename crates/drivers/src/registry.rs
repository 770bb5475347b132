//! The one place that lists targets: names, capabilities, settings checks,
//! and how each is opened. Adding a target is a module plus a line here.

use std::collections::BTreeMap;

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{
    Capabilities, Endpoint, Plan, RequestMode, TargetCatalog, TargetSpec, Workload,
};
use bakeoff_core::runner::{Target, TargetOpener};
use bakeoff_core::workload::OpKind;

/// A target's own readiness check (port free, endpoint answering).
pub type ProbeFn = fn(&TargetSpec, &Plan) -> Result<(), TargetError>;

/// Opens a target for one run.
pub type OpenFn = fn(&TargetSpec, &Plan, &Workload) -> Result<Box<dyn Target>, TargetError>;

/// One row of the registry.
pub struct Entry {
    /// Target name.
    pub name: &'static str,
    /// URL scheme of external endpoints.
    pub scheme: &'static str,
    /// One-line description for `bakeoff list`.
    pub about: &'static str,
    /// Server binary looked up on PATH (empty for embedded engines).
    pub program: &'static str,
    /// Debian package of the server or library.
    pub package: &'static str,
    /// Whether this machine has what the target needs (server binary on
    /// PATH, or the engine's library); the error says what to install.
    pub available: fn() -> Result<(), TargetError>,
    /// Operation kinds.
    pub ops: &'static [OpKind],
    /// Pipelining on one connection.
    pub pipelining: bool,
    /// Whether the load can insert many records per request (`--batch`).
    pub batch_load: bool,
    /// Request modes besides `op` (`--request`).
    pub requests: &'static [RequestMode],
    /// bakeoff can start it.
    pub managed: bool,
    /// Part of the default comparison.
    pub default: bool,
    /// Topologies besides `single` it can have (see
    /// `bakeoff_core::plan::Topology::kind`).
    pub topologies: &'static [&'static str],
    /// Query-string keys its URL takes besides the credentials
    /// (`password`, `user`), e.g. PostgreSQL's `dbname` (also the URL's
    /// path); any other key is refused rather than ignored.
    pub url_options: &'static [&'static str],
    /// Its settings (`[servers.NAME]`, `--set NAME.KEY=VALUE`), declared once.
    pub settings: &'static [crate::settings::Setting],
    /// What those settings promise acknowledged writes survive, declared
    /// beside them.
    pub durability: crate::settings::Durability,
    /// Validates `[servers.NAME]` (types, and checks across settings).
    pub check: fn(Option<&toml::Table>) -> Result<(), TargetError>,
    /// Checks it can be used.
    /// Checks beyond settings and availability (a free port, an external
    /// endpoint that answers); `None` for in-process engines.
    pub probe: Option<ProbeFn>,
    /// Opens it for one run.
    pub open: OpenFn,
}

fn server_available(program: &str, package: &str) -> Result<(), TargetError> {
    match bakeoff_servers::find_on_path(program) {
        Some(_) => Ok(()),
        None => Err(TargetError::NotInstalled {
            what: format!("`{program}` is not on PATH"),
            package: package.into(),
        }),
    }
}

const KV: &[OpKind] = &[OpKind::Get, OpKind::Set, OpKind::Update, OpKind::Delete];
/// Key-value operations plus searches on the profile table.
const KV_SEARCH: &[OpKind] = &[
    OpKind::Get,
    OpKind::Set,
    OpKind::Update,
    OpKind::Delete,
    OpKind::Search,
];

/// Every target this build knows.
pub fn entries() -> Vec<Entry> {
    let mut v = Vec::new();
    #[cfg(feature = "redis")]
    v.push(Entry {
        name: "redis",
        scheme: "redis",
        about: "Redis over RESP (GET/SET/DEL on string keys)",
        program: "redis-server",
        package: "redis-server",
        available: || server_available("redis-server", "redis-server"),
        ops: KV,
        pipelining: true,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &["shards", "primary-replica", "cluster"],
        url_options: &[],
        settings: crate::redis::SETTINGS,
        durability: crate::redis::DURABILITY,
        check: |t| crate::redis::RedisSettings::parse(t).map(|_| ()),
        probe: Some(crate::redis::probe),
        open: crate::redis::open,
    });
    #[cfg(feature = "memcached")]
    {
        v.push(Entry {
            name: "memcached",
            scheme: "memcached",
            about: "memcached, text protocol (get/set/delete)",
            program: "memcached",
            package: "memcached",
            available: || server_available("memcached", "memcached"),
            ops: KV,
            pipelining: true,
            batch_load: false,
            requests: &[],
            managed: true,
            default: true,
            topologies: &["shards"],
            url_options: &[],
            settings: crate::memcached::SETTINGS,
            durability: crate::settings::Durability::MEMORY_ONLY,
            check: |t| crate::memcached::MemcachedSettings::parse(t).map(|_| ()),
            probe: Some(crate::memcached::probe),
            open: crate::memcached::open,
        });
        v.push(Entry {
            name: "memcached-binary",
            scheme: "memcached-binary",
            about: "memcached, binary protocol (GET/SET/DELETE)",
            program: "memcached",
            package: "memcached",
            available: || server_available("memcached", "memcached"),
            ops: KV,
            pipelining: true,
            batch_load: false,
            requests: &[],
            managed: true,
            default: false,
            topologies: &["shards"],
            url_options: &[],
            settings: crate::memcached::SETTINGS,
            durability: crate::settings::Durability::MEMORY_ONLY,
            check: |t| crate::memcached::MemcachedSettings::parse(t).map(|_| ()),
            probe: Some(crate::memcached::probe),
            open: crate::memcached::open,
        });
    }
    #[cfg(feature = "mariadb")]
    v.push(Entry {
        name: "mariadb",
        scheme: "mariadb",
        about: "MariaDB / MySQL (InnoDB tables kv and profile, prepared statements, one connection per client)",
        program: "mariadbd",
        package: "mariadb-server",
        available: crate::mariadb::available,
        ops: KV_SEARCH,
        pipelining: true,
        batch_load: true,
        requests: &[RequestMode::Connect, RequestMode::Phases],
        managed: true,
        default: true,
        topologies: &["primary-replica"],
        url_options: &["socket"],
        settings: crate::mariadb::SETTINGS,
        durability: crate::mariadb::DURABILITY,
        check: crate::mariadb::check,
        probe: Some(crate::mariadb::probe),
        open: crate::mariadb::open,
    });
    #[cfg(feature = "mariadb")]
    v.push(Entry {
        name: "handlersocket",
        scheme: "handlersocket",
        about: "MariaDB's HandlerSocket plugin: InnoDB table kv by primary key, no SQL (pipelined, tab-separated protocol)",
        program: "mariadbd",
        package: "mariadb-server",
        available: crate::handlersocket::available,
        ops: KV,
        pipelining: true,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::mariadb::HANDLERSOCKET_SETTINGS,
        durability: crate::mariadb::DURABILITY,
        check: crate::handlersocket::check,
        probe: Some(crate::handlersocket::probe),
        open: crate::handlersocket::open,
    });
    #[cfg(feature = "postgres")]
    v.push(Entry {
        name: "postgres",
        scheme: "postgres",
        about: "PostgreSQL (tables kv and profile, prepared statements, one connection per client)",
        program: "postgres",
        package: "postgresql",
        available: crate::postgres::available,
        ops: KV_SEARCH,
        pipelining: true,
        batch_load: true,
        requests: &[RequestMode::Connect],
        managed: true,
        default: true,
        topologies: &["primary-replica"],
        url_options: &["dbname"],
        settings: crate::postgres::SETTINGS,
        durability: crate::postgres::DURABILITY,
        check: crate::postgres::check,
        probe: Some(crate::postgres::probe),
        open: crate::postgres::open,
    });
    #[cfg(feature = "mongodb")]
    v.push(Entry {
        name: "mongodb",
        scheme: "mongodb",
        about: "MongoDB wire protocol: mongod, or FerretDB where no mongod exists (collections kv and profile)",
        program: "mongod",
        package: "mongodb (not in Debian 12; scripts/install-ferretdb.sh installs FerretDB)",
        available: crate::mongodb::available,
        ops: KV_SEARCH,
        pipelining: false,
        batch_load: true,
        requests: &[RequestMode::Connect],
        managed: true,
        // Left out of the default run: mongod is not packaged in Debian, and
        // FerretDB served this workload at a few operations a second here.
        default: false,
        topologies: &[],
        url_options: &[],
        settings: crate::mongodb::SETTINGS,
        durability: crate::mongodb::DURABILITY,
        check: crate::mongodb::check,
        probe: Some(crate::mongodb::probe),
        open: crate::mongodb::open,
    });
    v.push(Entry {
        name: "tokyo-hash",
        scheme: "",
        about: "Tokyo Cabinet hash database (TCH), in-process",
        program: "",
        package: "libtokyocabinet9",
        available: crate::embedded::tokyo::available,
        ops: KV,
        pipelining: false,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::embedded::tokyo::HASH_SETTINGS,
        durability: crate::embedded::tokyo::HASH_DURABILITY,
        check: crate::embedded::tokyo::check_hash,
        probe: None,
        open: |s, p, w| crate::embedded::open_with(s, p, w, crate::embedded::tokyo::opened),
    });
    v.push(Entry {
        name: "tokyo-btree",
        scheme: "",
        about: "Tokyo Cabinet B+tree database (TCB), in-process",
        program: "",
        package: "libtokyocabinet9",
        available: crate::embedded::tokyo::available,
        ops: KV,
        pipelining: false,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::embedded::tokyo::BTREE_SETTINGS,
        durability: crate::embedded::tokyo::BTREE_DURABILITY,
        check: crate::embedded::tokyo::check_btree,
        probe: None,
        open: |s, p, w| crate::embedded::open_with(s, p, w, crate::embedded::tokyo::opened),
    });
    v.push(Entry {
        name: "tokyo-table",
        scheme: "",
        about: "Tokyo Cabinet table database (TCT), in-process (column v)",
        program: "",
        package: "libtokyocabinet9",
        available: crate::embedded::tokyo::available,
        ops: KV_SEARCH,
        pipelining: false,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::embedded::tokyo::TABLE_SETTINGS,
        durability: crate::embedded::tokyo::HASH_DURABILITY,
        check: crate::embedded::tokyo::check_table,
        probe: None,
        open: |s, p, w| crate::embedded::open_with(s, p, w, crate::embedded::tokyo::opened),
    });
    v.push(Entry {
        name: "lmdb",
        scheme: "",
        about: "LMDB, in-process (one transaction per operation)",
        program: "",
        package: "liblmdb0",
        available: crate::embedded::lmdb::available,
        ops: KV,
        pipelining: false,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::embedded::lmdb::SETTINGS,
        durability: crate::embedded::lmdb::DURABILITY,
        check: crate::embedded::lmdb::check,
        probe: None,
        open: |s, p, w| crate::embedded::open_with(s, p, w, crate::embedded::lmdb::opened),
    });
    v.push(Entry {
        name: "rocksdb",
        scheme: "",
        about: "RocksDB, in-process (C API)",
        program: "",
        package: "librocksdb7.8",
        available: crate::embedded::rocksdb::available,
        ops: KV,
        pipelining: false,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::embedded::rocksdb::SETTINGS,
        durability: crate::embedded::rocksdb::DURABILITY,
        check: crate::embedded::rocksdb::check,
        probe: None,
        open: |s, p, w| crate::embedded::open_with(s, p, w, crate::embedded::rocksdb::opened),
    });
    v.push(Entry {
        name: "sqlite",
        scheme: "",
        about: "SQLite, in-process (table kv, prepared statements)",
        program: "",
        package: "libsqlite3-0",
        available: crate::embedded::sqlite::available,
        ops: KV_SEARCH,
        pipelining: false,
        batch_load: false,
        requests: &[],
        managed: true,
        default: true,
        topologies: &[],
        url_options: &[],
        settings: crate::embedded::sqlite::SETTINGS,
        durability: crate::embedded::sqlite::DURABILITY,
        check: crate::embedded::sqlite::check,
        probe: None,
        open: |s, p, w| crate::embedded::open_with(s, p, w, crate::embedded::sqlite::opened),
    });
    v
}

/// The registry as the plan and the runner see it.
#[derive(Default)]
pub struct Registry;

impl Registry {
    fn find(&self, name: &str) -> Option<Entry> {
        entries().into_iter().find(|e| e.name == name)
    }
}

impl TargetCatalog for Registry {
    fn capabilities(&self, name: &str) -> Option<Capabilities> {
        self.find(name).map(|e| Capabilities {
            ops: e.ops.to_vec(),
            pipelining: e.pipelining,
            batch_load: e.batch_load,
            requests: e.requests.to_vec(),
            // Servers bakeoff starts can be killed and restarted, and so
            // can its engines, which a run with a fault opens in a child
            // process (`embedded::host`).
            faults: e.managed,
            managed: e.managed,
            // Servers are reached over TCP; engines are called in-process.
            network: !e.program.is_empty(),
            topologies: e.topologies.iter().map(|t| t.to_string()).collect(),
            url_options: e.url_options.iter().map(|t| t.to_string()).collect(),
            url_scheme: (!e.scheme.is_empty()).then(|| e.scheme.to_string()),
        })
    }

    fn names(&self) -> Vec<String> {
        entries().iter().map(|e| e.name.to_string()).collect()
    }

    fn target_for_scheme(&self, scheme: &str) -> Option<String> {
        entries()
            .into_iter()
            .find(|e| e.scheme == scheme)
            .map(|e| e.name.to_string())
    }

    fn check_settings(&self, name: &str, settings: &toml::Table) -> Result<(), TargetError> {
        match self.find(name) {
            Some(e) => (e.check)(Some(settings)),
            None => Err(TargetError::Settings(format!("unknown target `{name}`"))),
        }
    }

    fn default_targets(&self) -> Vec<String> {
        entries()
            .iter()
            .filter(|e| e.default)
            .map(|e| e.name.to_string())
            .collect()
    }
}

/// The settings of every target, for `bakeoff list`: one line a setting.
pub fn settings_text() -> String {
    let mut out = String::new();
    let mut shown: Vec<&[crate::settings::Setting]> = Vec::new();
    for e in entries() {
        let same_as = entries()
            .into_iter()
            .find(|o| std::ptr::eq(o.settings, e.settings) && o.name != e.name);
        if let Some(o) = same_as.filter(|_| shown.iter().any(|s| std::ptr::eq(*s, e.settings))) {
            out.push_str(&format!("  {}: as {}\n", e.name, o.name));
            continue;
        }
        shown.push(e.settings);
        out.push_str(&format!("  {}:\n", e.name));
        for s in e.settings {
            out.push_str(&format!("    {}\n", s.describe()));
        }
        for line in e.durability.describe(e.settings).lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

impl TargetOpener for Registry {
    fn declared_settings(&self, spec: &TargetSpec, plan: &Plan) -> BTreeMap<String, String> {
        match (self.find(&spec.name), &spec.endpoint) {
            (Some(e), Endpoint::Managed) => {
                crate::settings::declared_values(e.settings, plan.settings_of(spec))
                    .into_iter()
                    .filter_map(|d| Some((d.name.to_string(), d.value?)))
                    .collect()
            }
            _ => BTreeMap::new(),
        }
    }

    fn durable_to(
        &self,
        spec: &TargetSpec,
        plan: &Plan,
    ) -> Option<bakeoff_core::durability::DurableTo> {
        match (self.find(&spec.name), &spec.endpoint) {
            (Some(e), Endpoint::Managed) => Some(e.durability.of(
                &crate::settings::declared_values(e.settings, plan.settings_of(spec)),
            )),
            _ => None,
        }
    }

    fn probe(&self, spec: &TargetSpec, plan: &Plan) -> Result<(), TargetError> {
        let e = self
            .find(&spec.name)
            .ok_or_else(|| TargetError::Settings(format!("unknown target `{}`", spec.name)))?;
        // Every target: its settings, and (when bakeoff is to start or open
        // it) what it needs installed; then its own checks, if any.
        (e.check)(plan.settings_of(spec))?;
        if matches!(spec.endpoint, Endpoint::Managed) {
            (e.available)()?;
        }
        if e.program.is_empty() {
            crate::embedded::host::probe(spec, plan)?;
        }
        match e.probe {
            Some(p) => p(spec, plan),
            None => Ok(()),
        }
    }

    fn open(
        &self,
        spec: &TargetSpec,
        plan: &Plan,
        workload: &Workload,
    ) -> Result<Box<dyn Target>, TargetError> {
        let e = self
            .find(&spec.name)
            .ok_or_else(|| TargetError::Settings(format!("unknown target `{}`", spec.name)))?;
        (e.open)(spec, plan, workload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every target takes an empty table and a table of every declared
    /// default, and every setting it reads is declared (reading an
    /// undeclared one is an error).
    #[test]
    fn every_declared_default_is_accepted() {
        for e in entries() {
            (e.check)(None).unwrap_or_else(|m| panic!("{}: {m}", e.name));
            let mut t = toml::Table::new();
            for s in e.settings {
                if let Some(d) = s.default {
                    t.insert(s.name.into(), toml::Value::String(d.into()));
                }
            }
            (e.check)(Some(&t)).unwrap_or_else(|m| panic!("{}: {m}", e.name));
        }
    }

    /// Every line of every durability declaration names a declared
    /// setting and a value that setting takes (a renamed setting or value
    /// fails here rather than leave a class that never applies).
    #[test]
    fn durability_declarations_name_declared_settings_and_values() {
        use crate::settings::Kind;
        for e in entries() {
            for r in e.durability.rules {
                let takes = |name: &str, value: &str| {
                    let s = e
                        .settings
                        .iter()
                        .find(|s| s.name == name)
                        .unwrap_or_else(|| panic!("{}: `{name}` is not a setting", e.name));
                    match s.kind {
                        _ if value == "*" || value.is_empty() => true,
                        Kind::Choice(c) => c.contains(&value),
                        Kind::Flag => value == "true" || value == "false",
                        Kind::Count => value.parse::<u64>().is_ok_and(|n| n > 0),
                        _ => true,
                    }
                };
                assert!(
                    takes(r.setting, r.value),
                    "{}: {} = {}",
                    e.name,
                    r.setting,
                    r.value
                );
                if let Some((other, v)) = r.when {
                    assert!(takes(other, v), "{}: {other} = {v}", e.name);
                }
            }
        }
    }

    /// The class follows the settings: the least of what each allows.
    #[test]
    fn a_targets_class_is_the_least_its_settings_allow() {
        use bakeoff_core::durability::DurableTo;
        let class = |name: &str, set: &[(&str, &str)]| {
            let e = entries().into_iter().find(|e| e.name == name).unwrap();
            let mut t = toml::Table::new();
            for (k, v) in set {
                t.insert(k.to_string(), toml::Value::String(v.to_string()));
            }
            e.durability
                .of(&crate::settings::declared_values(e.settings, Some(&t)))
        };
        assert_eq!(class("redis", &[]), DurableTo::MemoryOnly);
        assert_eq!(
            class("redis", &[("persistence", "aof-everysec")]),
            DurableTo::ProcessCrash
        );
        assert_eq!(
            class("redis", &[("persistence", "aof-always")]),
            DurableTo::PowerCut
        );
        assert_eq!(class("memcached", &[]), DurableTo::MemoryOnly);
        assert_eq!(class("postgres", &[]), DurableTo::PowerCut);
        assert_eq!(
            class("postgres", &[("synchronous_commit", "off")]),
            DurableTo::MemoryOnly
        );
        assert_eq!(
            class("postgres", &[("fsync", "off")]),
            DurableTo::ProcessCrash
        );
        assert_eq!(class("mariadb", &[]), DurableTo::PowerCut);
        assert_eq!(
            class("mariadb", &[("innodb_flush_log_at_trx_commit", "2")]),
            DurableTo::ProcessCrash
        );
        // sync_binlog matters only with a binary log.
        assert_eq!(
            class("mariadb", &[("sync_binlog", "100")]),
            DurableTo::PowerCut
        );
        assert_eq!(
            class("mariadb", &[("binlog", "true"), ("sync_binlog", "100")]),
            DurableTo::ProcessCrash
        );
        assert_eq!(
            class("mariadb", &[("binlog", "true")]),
            DurableTo::ProcessCrash
        );
        assert_eq!(
            class("mariadb", &[("binlog", "true"), ("sync_binlog", "1")]),
            DurableTo::PowerCut
        );
        assert_eq!(class("lmdb", &[]), DurableTo::ProcessCrash);
        assert_eq!(class("lmdb", &[("sync", "full")]), DurableTo::PowerCut);
        assert_eq!(class("sqlite", &[]), DurableTo::ProcessCrash);
        assert_eq!(
            class("sqlite", &[("synchronous", "full")]),
            DurableTo::PowerCut
        );
        assert_eq!(
            class(
                "sqlite",
                &[("synchronous", "full"), ("journal_mode", "memory")]
            ),
            DurableTo::ProcessCrash
        );
        assert_eq!(class("tokyo-btree", &[]), DurableTo::MemoryOnly);
        assert_eq!(class("tokyo-hash", &[]), DurableTo::ProcessCrash);
        let text = settings_text();
        assert!(
            text.contains("durable to: memory only with the defaults"),
            "{text}"
        );
        assert!(text.contains("power cut: persistence=aof-always"), "{text}");
    }

    #[test]
    fn a_misspelt_setting_names_the_right_one() {
        let mut t = toml::Table::new();
        t.insert("maxmemroy".into(), toml::Value::String("1gb".into()));
        let e = Registry
            .check_settings("redis", &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean `maxmemory`?"), "{e}");
        let text = settings_text();
        assert!(
            text.contains("persistence = none|aof-always|aof-everysec|aof-no|rdb (default: none)"),
            "{text}"
        );
        assert!(text.contains("memcached-binary: as memcached"), "{text}");
    }
}
