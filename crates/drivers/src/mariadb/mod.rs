//! The `mariadb` target (also MySQL): table `bakeoff.kv(k VARCHAR(32)
//! PRIMARY KEY, v LONGBLOB)` on InnoDB (records of several fields: table
//! `bakeoff.usertable`, a column per field) through mysql_async, prepared
//! statements, one connection per client.
//!
//! Managed: `mariadb-install-db` and `mariadbd` from Debian's mariadb-server
//! in a temporary directory, on a free loopback port and a private socket,
//! with the settings of `[servers.mariadb]`. The server is private to the
//! run, so it skips the grant tables (no accounts to set up).
//! External: `mariadb://user:password@host:port` (a MySQL server too).

use bakeoff_core::error::TargetError;

use bakeoff_core::plan::{Plan, RequestMode, TargetSpec, Workload};
use bakeoff_core::profile::RecordKind;
use bakeoff_servers::{Limits, ManagedServer};
use mysql_async::prelude::Queryable;

use crate::async_target::{block, block_quick, Reach};
use crate::kind::OpenResult;
use crate::sql_server::{ServerFacts, SqlKind, SqlServer};

mod driver;
mod replication;
mod server;
mod session;
mod settings;
mod wire;

pub use self::driver::*;
use self::replication::*;
pub use self::server::*;
pub use self::session::*;
pub use self::settings::*;
pub use self::wire::start_with_kv;

/// What `mariadb` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "mariadb",
    summary: "MariaDB / MySQL (InnoDB tables kv, usertable and profile, prepared statements, one connection per client)",
    package: "mariadb-server",
    reach: crate::kind::Reach::Server {
        program: "mariadbd",
        scheme: "mariadb",
        url_options: &["socket"],
        credentials: true,
        topologies: &["primary-replica"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SEARCH_SCAN,
        pipelining: true,
        batch_load: true,
        requests: &[RequestMode::Connect, RequestMode::Phases],
        no_scan: "MariaDB scans table kv by its primary key",
    },
    in_default_comparison: true,
    settings: SETTINGS,
    durability: DURABILITY,
    provokes: &[],
};

/// `mariadb`, as the registry knows it.
pub const MARIADB: SqlKind<Mariadb> = SqlKind::KIND;

impl SqlServer for Mariadb {
    type Dsn = Dsn;
    type Driver = MariaDriver;
    const PRODUCT: &'static str = "MariaDB";
    const FACTS: &'static crate::kind::TargetFacts = &FACTS;

    fn available() -> Result<(), TargetError> {
        available()
    }
    fn fixed_port(settings: Option<&toml::Table>) -> Result<Option<u16>, TargetError> {
        Ok(MariaSettings::parse(settings)?.port)
    }
    fn answers(dsn: &Dsn) -> Result<(), TargetError> {
        block_quick(async {
            if let Some(socket) = &dsn.socket {
                socket_there(socket)?;
            }
            let mut c = connect(dsn, None).await?;
            c.query_drop("SELECT 1").await.map_err(TargetError::cause)
        })
    }
    fn open_replicated(spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        let settings = MariaSettings::parse(plan.settings_of(spec))?;
        open_replicated(spec, plan, workload, settings)
    }

    fn dsn_of(spec: &TargetSpec) -> Option<Dsn> {
        dsn_of(spec)
    }
    fn host_port(dsn: &Dsn) -> (&str, u16) {
        (&dsn.host, dsn.port)
    }
    fn moved(dsn: &Dsn, host: String, port: u16) -> Dsn {
        Dsn {
            host,
            port,
            ..dsn.clone()
        }
    }
    fn start(
        spec: &TargetSpec,
        plan: &Plan,
        workload: &Workload,
    ) -> Result<(ManagedServer, Dsn), TargetError> {
        start_managed(
            &MariaSettings::parse(plan.settings_of(spec))?,
            &|_| Vec::new(),
            &|_| true,
            Limits::of(workload),
            workload.cuts_power(),
        )
    }
    fn prepare(dsn: &Dsn, workload: &Workload) -> Result<(), TargetError> {
        block(prepare_table(dsn, workload))
    }
    fn facts(dsn: &Dsn) -> Result<ServerFacts, TargetError> {
        block(server_facts(dsn))
    }
    fn driver(reach: Reach<Dsn>, workload: &Workload) -> Result<MariaDriver, TargetError> {
        MariaDriver::new(
            reach,
            workload.record == RecordKind::Profile,
            workload.request == RequestMode::Phases,
            workload.fields as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_core::target::BackgroundLook;

    /// Pages written since the last look are flushing at work; a
    /// checkpoint age past three quarters of its maximum is a redo log
    /// near full; neither, nothing.
    #[test]
    fn innodb_flushing_and_a_redo_log_near_full() {
        let mb = 1 << 20;
        let busy = innodb_look(868, 3379, 70 * mb, 77 * mb, 15792);
        let names: Vec<&str> = busy.running.iter().map(|(w, _)| *w).collect();
        assert_eq!(names, ["page flush", "redo log near full"]);
        assert!(
            busy.running[0].1.starts_with("868 pages written"),
            "{:?}",
            busy.running[0]
        );
        assert!(busy.running[1].1.contains("91 %"), "{:?}", busy.running[1]);
        assert_eq!(
            innodb_look(0, 10, 10 * mb, 77 * mb, 0),
            BackgroundLook::default()
        );
    }
}
