//! The `postgres` target: PostgreSQL through tokio-postgres, table
//! `kv(k TEXT PRIMARY KEY, v BYTEA)` (records of several fields: table
//! `usertable`, a column per field), prepared statements, one connection
//! per client.
//!
//! Managed: `initdb` and `postgres` from Debian's postgresql package (found
//! under /usr/lib/postgresql/*/bin), run as the `postgres` user (initdb
//! refuses root) in a temporary directory, on a free loopback port and a
//! private socket directory, with the settings of `[servers.postgres]`.
//! External: `postgres://user:password@host:port[?dbname=NAME]`.

use bakeoff_core::error::TargetError;

use bakeoff_core::plan::{Plan, TargetSpec, Workload};
use bakeoff_core::profile::RecordKind;
use bakeoff_servers::ManagedServer;

use crate::async_target::{block, block_quick, Reach};
use crate::kind::OpenResult;
use crate::sql_server::{ServerFacts, SqlKind, SqlServer};

mod driver;
mod log;
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

/// What `postgres` is.
pub const FACTS: crate::kind::TargetFacts = crate::kind::TargetFacts {
    name: "postgres",
    summary: "PostgreSQL (tables kv, usertable and profile, prepared statements, one connection per client)",
    package: "postgresql",
    reach: crate::kind::Reach::Server {
        program: "postgres",
        scheme: "postgres",
        url_options: &["dbname"],
        credentials: true,
        topologies: &["primary-replica"],
    },
    abilities: crate::kind::Abilities {
        ops: crate::kind::KV_SEARCH_SCAN,
        pipelining: true,
        batch_load: true,
        requests: &[bakeoff_core::plan::RequestMode::Connect],
        no_scan: "PostgreSQL scans table kv by its primary key",
    },
    in_default_comparison: true,
    settings: SETTINGS,
    durability: DURABILITY,
    provokes: &[bakeoff_core::plan::Work::Checkpoint],
};

/// `postgres`, as the registry knows it.
pub const POSTGRES: SqlKind<Postgres> = SqlKind::KIND;

impl SqlServer for Postgres {
    type Dsn = Dsn;
    type Driver = PgDriver;
    const PRODUCT: &'static str = "PostgreSQL";
    const FACTS: &'static crate::kind::TargetFacts = &FACTS;

    fn available() -> Result<(), TargetError> {
        available()
    }
    fn fixed_port(settings: Option<&toml::Table>) -> Result<Option<u16>, TargetError> {
        Ok(PgSettings::parse(settings)?.port)
    }
    fn answers(dsn: &Dsn) -> Result<(), TargetError> {
        block_quick(async {
            let c = connect(dsn).await?;
            c.simple_query("SELECT 1")
                .await
                .map(|_| ())
                .map_err(|e| TargetError::Server(explain(dsn, e)))
        })
    }
    fn open_replicated(spec: &TargetSpec, plan: &Plan, workload: &Workload) -> OpenResult {
        open_replicated(spec, plan, workload)
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
        let mut server = start_on(plan.settings_of(spec), None, workload.cuts_power())?;
        server.limit(bakeoff_servers::Limits::of(workload))?;
        let dsn = Dsn::managed(server.addr.port());
        Ok((server, dsn))
    }
    fn prepare(dsn: &Dsn, workload: &Workload) -> Result<(), TargetError> {
        block(prepare_table(dsn, workload))
    }
    fn facts(dsn: &Dsn) -> Result<ServerFacts, TargetError> {
        block_quick(server_facts(dsn))
    }
    fn driver(reach: Reach<Dsn>, workload: &Workload) -> Result<PgDriver, TargetError> {
        PgDriver::new(
            reach,
            workload.record == RecordKind::Profile,
            workload.fields as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    /// PostgreSQL's scan is the shared one, its placeholders numbered.
    #[test]
    fn the_scan_is_the_shared_statement() {
        let numbered = crate::sql::SCAN
            .replacen('?', "$1", 1)
            .replacen('?', "$2", 1);
        assert_eq!(super::SCAN, numbered);
    }
}
