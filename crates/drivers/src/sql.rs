//! What the SQL targets share: a target made of an optional managed server,
//! a driver and the record of what was used, and a way to run an admin
//! query from the main thread.

use std::collections::BTreeMap;

use bakeoff_core::driver::Driver;
use bakeoff_core::plan::TargetSpec;
use bakeoff_core::profile::{Profile, Query, SearchKind};
use bakeoff_core::result::{CounterCheck, TargetRecord};
use bakeoff_core::runner::{compare_counters, CounterRule, Counters, ProcSnapshot, Target};
use bakeoff_core::workload::{OpKind, OP_KINDS};
use bakeoff_servers::ManagedServer;

/// A SQL driver that can also count rows and read the server's statement
/// counters.
pub trait SqlDriver: Driver {
    /// Rows in the workload's table (`kv` or `profile`), if the server answers.
    fn record_count(&self) -> Option<u64>;
    /// The server's own statement counters, if it keeps them.
    fn counters(&self) -> Option<Counters>;
    /// How those counters add up to the operations sent.
    fn counter_rules(&self) -> &'static [CounterRule];
}

/// A SQL target ready for one run.
pub struct SqlTarget<D: SqlDriver> {
    // Field order is drop order: the driver goes before the server stops.
    driver: D,
    record: TargetRecord,
    server: Option<ManagedServer>,
}

impl<D: SqlDriver> SqlTarget<D> {
    /// Records `version` and `settings` (plus the managed server's command
    /// line and what the driver sends for each operation).
    pub fn new(
        spec: &TargetSpec,
        endpoint: Option<String>,
        version: String,
        mut settings: BTreeMap<String, String>,
        server: Option<ManagedServer>,
        driver: D,
    ) -> Self {
        if let Some(s) = &server {
            settings.insert(
                "command_line".into(),
                format!("{} {}", s.binary.display(), s.args.join(" ")),
            );
        }
        let requests = OpKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), driver.describe(*k)))
            .collect();
        let record = TargetRecord {
            name: spec.name.clone(),
            mode: if server.is_some() {
                "managed"
            } else {
                "external"
            }
            .into(),
            endpoint,
            version: Some(version),
            settings,
            requests,
            skipped: None,
        };
        Self {
            driver,
            record,
            server,
        }
    }
}

impl<D: SqlDriver> Target for SqlTarget<D> {
    fn driver(&self) -> &dyn Driver {
        &self.driver
    }

    fn record(&self) -> TargetRecord {
        self.record.clone()
    }

    fn counters(&self) -> Option<Counters> {
        self.driver.counters()
    }

    fn counter_checks(
        &self,
        before: &Counters,
        after: &Counters,
        sent: &[u64; OP_KINDS],
    ) -> Vec<CounterCheck> {
        compare_counters(self.driver.counter_rules(), before, after, sent)
    }

    fn record_count(&self) -> Option<u64> {
        self.driver.record_count()
    }

    fn resources(&self) -> Option<ProcSnapshot> {
        self.server.as_ref().map(|s| s.snapshot())
    }
}

/// Runs `f` on a fresh single-threaded runtime (admin queries, probing).
pub fn block<T>(f: impl std::future::Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start an async runtime: {e}"))?
        .block_on(f)
}

/// The four searches of 000-search, in `SearchKind` order (name, sex,
/// location, all), with placeholders written by `ph(n)` (1-based): the same
/// conditions, hence the same rows, on every SQL target.
pub fn search_statements(ph: impl Fn(usize) -> String) -> [String; 4] {
    [
        format!("SELECT id FROM profile WHERE name LIKE {}", ph(1)),
        format!("SELECT id FROM profile WHERE sex = {}", ph(1)),
        format!(
            "SELECT id FROM profile WHERE province = {} AND city = {}",
            ph(1),
            ph(2)
        ),
        format!(
            "SELECT id FROM profile WHERE name LIKE {} AND sex = {} AND province = {} AND city = {}",
            ph(1),
            ph(2),
            ph(3),
            ph(4)
        ),
    ]
}

/// Which of `search_statements` serves `q`, and its parameters in order.
pub fn search_params(q: &Query) -> (usize, Vec<String>) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let like = format!("%{}%", text(&q.name_part));
    let sex = text(std::slice::from_ref(&q.sex));
    match q.kind {
        SearchKind::Name => (0, vec![like]),
        SearchKind::Sex => (1, vec![sex]),
        SearchKind::Location => (2, vec![text(&q.province), text(&q.city)]),
        SearchKind::All => (3, vec![like, sex, text(&q.province), text(&q.city)]),
    }
}

/// The profile row's text columns: name, sex, province, city.
pub fn profile_columns(p: &Profile) -> [String; 4] {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    [
        text(&p.name),
        text(std::slice::from_ref(&p.sex)),
        text(&p.province_text()),
        text(&p.city_text()),
    ]
}

/// What a SQL target sends for each operation (the result's `requests`).
pub fn describe(kind: OpKind, kv: [&str; 3], profile_upsert: &str, profile: bool) -> String {
    match kind {
        OpKind::Get => kv[0].into(),
        OpKind::Set | OpKind::Update if profile => profile_upsert.into(),
        OpKind::Set | OpKind::Update => kv[1].into(),
        OpKind::Delete => kv[2].into(),
        OpKind::Search => "SELECT id FROM profile WHERE <name LIKE ?> / <sex = ?> / <province = ? AND city = ?> / <all three>".into(),
    }
}
