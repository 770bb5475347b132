//! What the SQL targets share: a target made of an optional managed server,
//! a driver and the record of what was used, and a way to run an admin
//! query from the main thread.

use std::collections::BTreeMap;

use bakeoff_core::driver::Driver;
use bakeoff_core::plan::TargetSpec;
use bakeoff_core::result::{CounterCheck, TargetRecord};
use bakeoff_core::runner::{Counters, ProcSnapshot, Target};
use bakeoff_core::workload::{OpKind, OP_KINDS};
use bakeoff_servers::ManagedServer;

/// A SQL driver that can also count the rows of table `kv`.
pub trait SqlDriver: Driver {
    /// Rows in `kv`, if the server answers.
    fn record_count(&self) -> Option<u64>;
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
        None
    }

    fn counter_checks(&self, _: &Counters, _: &Counters, _: &[u64; OP_KINDS]) -> Vec<CounterCheck> {
        Vec::new()
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
