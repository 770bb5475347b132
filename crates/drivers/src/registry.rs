//! The one place that lists targets: each module's [`TargetKind`], as the
//! plan and the runner see it. Adding a target is a module implementing
//! it plus a line here.

use std::collections::BTreeMap;

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Capabilities, Endpoint, Plan, TargetCatalog, TargetSpec, Workload};
use bakeoff_core::target::{Target, TargetOpener};
use bakeoff_core::workload::OpKind;

use crate::kind::{Reach, TargetKind};

/// Every target this build knows, in the order `bakeoff list` shows them.
pub fn kinds() -> Vec<&'static dyn TargetKind> {
    let mut v: Vec<&'static dyn TargetKind> = Vec::new();
    #[cfg(feature = "redis")]
    v.push(&crate::redis::REDIS_KIND);
    #[cfg(feature = "memcached")]
    v.extend([
        &crate::memcached::TEXT as &dyn TargetKind,
        &crate::memcached::BINARY,
    ]);
    #[cfg(feature = "mariadb")]
    v.extend([
        &crate::mariadb::MARIADB as &dyn TargetKind,
        &crate::handlersocket::HandlerSocket,
    ]);
    #[cfg(feature = "postgres")]
    v.push(&crate::postgres::POSTGRES);
    #[cfg(feature = "mongodb")]
    v.push(&crate::mongodb::Mongodb);
    v.extend([
        &crate::embedded::tokyo::HASH as &dyn TargetKind,
        &crate::embedded::tokyo::BTREE,
        &crate::embedded::tokyo::TABLE,
        &crate::embedded::lmdb::Lmdb,
        &crate::embedded::rocksdb::Rocksdb,
        &crate::embedded::sqlite::Sqlite,
    ]);
    v
}

/// The target named `name`, if this build has it.
pub fn kind(name: &str) -> Option<&'static dyn TargetKind> {
    kinds().into_iter().find(|k| k.name() == name)
}

/// The registry as the plan and the runner see it.
#[derive(Default)]
pub struct Registry;

impl Registry {
    fn find(&self, name: &str) -> Option<&'static dyn TargetKind> {
        kind(name)
    }
}

impl TargetCatalog for Registry {
    fn capabilities(&self, name: &str) -> Option<Capabilities> {
        self.find(name).map(|e| {
            let reach = e.facts().reach;
            let abilities = e.facts().abilities;
            let (topologies, url_options, credentials): (&[&str], &[&str], bool) = match reach {
                Reach::Server {
                    topologies,
                    url_options,
                    credentials,
                    ..
                } => (topologies, url_options, credentials),
                Reach::InProcess => (&[], &[], false),
            };
            Capabilities {
                ops: abilities.ops.to_vec(),
                pipelining: abilities.pipelining,
                batch_load: abilities.batch_load,
                requests: abilities.requests.to_vec(),
                // Servers bakeoff starts can be killed and restarted, and
                // so can its engines, which a run with a fault opens in a
                // child process (`embedded::host`).
                faults: true,
                managed: true,
                // Servers are reached over TCP; engines are called in-process.
                network: !matches!(reach, Reach::InProcess),
                topologies: topologies.iter().map(|t| t.to_string()).collect(),
                url_options: url_options.iter().map(|t| t.to_string()).collect(),
                credentials,
                url_scheme: reach.scheme().map(str::to_string),
                no_scan: (!abilities.ops.contains(&OpKind::Scan))
                    .then(|| abilities.no_scan.to_string()),
                provokes: e.facts().provokes.to_vec(),
            }
        })
    }

    fn names(&self) -> Vec<String> {
        kinds().iter().map(|e| e.name().to_string()).collect()
    }

    fn target_for_scheme(&self, scheme: &str) -> Option<String> {
        kinds()
            .into_iter()
            .find(|e| e.facts().reach.scheme() == Some(scheme))
            .map(|e| e.name().to_string())
    }

    fn check_settings(&self, name: &str, settings: &toml::Table) -> Result<(), TargetError> {
        match self.find(name) {
            Some(e) => e.check(Some(settings)),
            None => Err(TargetError::Settings(format!("unknown target `{name}`"))),
        }
    }

    fn default_targets(&self) -> Vec<String> {
        kinds()
            .iter()
            .filter(|e| e.facts().in_default_comparison)
            .map(|e| e.name().to_string())
            .collect()
    }

    fn durable_settings(
        &self,
        name: &str,
        class: bakeoff_core::durability::DurableTo,
        given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        let e = self
            .find(name)
            .ok_or_else(|| format!("unknown target `{name}`"))?;
        e.facts()
            .durability
            .settings_for(e.facts().settings, given, class)
    }
}

/// The settings of every target, for `bakeoff list`: one line a setting.
pub fn settings_text() -> String {
    let mut out = String::new();
    let mut shown: Vec<&[crate::settings::Setting]> = Vec::new();
    for e in kinds() {
        let settings = e.facts().settings;
        let same_as = kinds()
            .into_iter()
            .find(|o| std::ptr::eq(o.facts().settings, settings) && o.name() != e.name());
        if let Some(o) = same_as.filter(|_| shown.iter().any(|s| std::ptr::eq(*s, settings))) {
            out.push_str(&format!("  {}: as {}\n", e.name(), o.name()));
            continue;
        }
        shown.push(settings);
        out.push_str(&format!("  {}:\n", e.name()));
        for s in settings {
            out.push_str(&format!("    {}\n", s.describe()));
        }
        for line in e.facts().durability.describe(settings).lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

impl TargetOpener for Registry {
    fn declared_settings(&self, spec: &TargetSpec, plan: &Plan) -> BTreeMap<String, String> {
        match (self.find(&spec.name), &spec.endpoint) {
            (Some(e), Endpoint::Managed) => {
                crate::settings::declared_values(e.facts().settings, plan.settings_of(spec))
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
            (Some(e), Endpoint::Managed) => Some(e.facts().durability.of(
                &crate::settings::declared_values(e.facts().settings, plan.settings_of(spec)),
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
        e.check(plan.settings_of(spec))?;
        if matches!(spec.endpoint, Endpoint::Managed) {
            e.available()?;
        }
        e.probe(spec, plan)
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
        e.open(spec, plan, workload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A durability requirement gets each target the settings it
    /// declares reach it, and every class is reachable from the defaults
    /// of a target whose ceiling allows it; a target that keeps writes in
    /// memory only says so.
    #[test]
    fn durable_settings_are_chosen_from_the_declarations() {
        use bakeoff_core::durability::DurableTo;
        let none = BTreeMap::new();
        let r = Registry;
        assert_eq!(
            r.durable_settings("redis", DurableTo::PowerCut, &none),
            Ok(BTreeMap::from([(
                "persistence".into(),
                "aof-always".into()
            )]))
        );
        assert_eq!(
            r.durable_settings("redis", DurableTo::ProcessCrash, &none),
            Ok(BTreeMap::from([("persistence".into(), "aof-no".into())]))
        );
        let e = r
            .durable_settings("memcached", DurableTo::ProcessCrash, &none)
            .unwrap_err();
        assert!(e.contains("in memory only whatever its settings"), "{e}");
        assert_eq!(
            r.durable_settings("redis", DurableTo::MemoryOnly, &none),
            Ok(none.clone())
        );
        for e in kinds() {
            let d = e.facts().durability;
            for class in DurableTo::ALL.into_iter().filter(|c| *c <= d.ceiling) {
                let extra = r
                    .durable_settings(e.name(), class, &none)
                    .unwrap_or_else(|m| panic!("{} to a {class}: {m}", e.name()));
                let table: toml::Table = extra
                    .into_iter()
                    .map(|(k, v)| (k, toml::Value::String(v)))
                    .collect();
                let reached = d.of(&crate::settings::declared_values(
                    e.facts().settings,
                    Some(&table),
                ));
                assert!(
                    reached >= class,
                    "{}: {class} asked, {reached} reached",
                    e.name()
                );
            }
        }
    }

    /// Every target takes an empty table and a table of every declared
    /// default, and every setting it reads is declared (reading an
    /// undeclared one is an error).
    #[test]
    fn every_declared_default_is_accepted() {
        for e in kinds() {
            e.check(None)
                .unwrap_or_else(|m| panic!("{}: {m}", e.name()));
            let mut t = toml::Table::new();
            for s in e.facts().settings {
                if let Some(d) = s.default {
                    t.insert(s.name.into(), toml::Value::String(d.into()));
                }
            }
            e.check(Some(&t))
                .unwrap_or_else(|m| panic!("{}: {m}", e.name()));
        }
    }

    /// Every line of every durability declaration names a declared
    /// setting and a value that setting takes (a renamed setting or value
    /// fails here rather than leave a class that never applies).
    #[test]
    fn durability_declarations_name_declared_settings_and_values() {
        use crate::settings::Kind;
        for e in kinds() {
            for r in e.facts().durability.rules {
                let takes = |name: &str, value: &str| {
                    let s = e
                        .facts()
                        .settings
                        .iter()
                        .find(|s| s.name == name)
                        .unwrap_or_else(|| panic!("{}: `{name}` is not a setting", e.name()));
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
                    e.name(),
                    r.setting,
                    r.value
                );
                if let Some((other, v)) = r.when {
                    assert!(takes(other, v), "{}: {other} = {v}", e.name());
                }
            }
        }
    }

    /// The class follows the settings: the least of what each allows.
    #[test]
    fn a_targets_class_is_the_least_its_settings_allow() {
        use bakeoff_core::durability::DurableTo;
        let class = |name: &str, set: &[(&str, &str)]| {
            let e = kind(name).unwrap();
            let mut t = toml::Table::new();
            for (k, v) in set {
                t.insert(k.to_string(), toml::Value::String(v.to_string()));
            }
            e.facts().durability.of(&crate::settings::declared_values(
                e.facts().settings,
                Some(&t),
            ))
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

    /// Names and URL schemes are each one target's, and only an engine can
    /// be served from a child process.
    #[test]
    fn every_kind_is_found_by_its_name_and_scheme() {
        let mut names = std::collections::HashSet::new();
        for e in kinds() {
            let facts = e.facts();
            assert!(names.insert(facts.name), "{} twice", facts.name);
            assert_eq!(kind(facts.name).map(|k| k.name()), Some(facts.name));
            match facts.reach {
                Reach::Server { scheme, .. } => {
                    assert_eq!(
                        Registry.target_for_scheme(scheme).as_deref(),
                        Some(facts.name)
                    );
                    let refused = e.serve_hosted(&toml::Table::new(), 0).unwrap_err();
                    assert!(refused.to_string().contains("not an embedded engine"));
                }
                Reach::InProcess => assert!(!Registry.capabilities(facts.name).unwrap().network),
            }
        }
        assert!(kind("nosuch").is_none());
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
