//! A primary and its streaming replica (`--topology primary-replica`):
//! the replica started from a base backup, streaming, and its lag.

use std::time::Duration;

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, TargetSpec, Workload};
use bakeoff_core::target::Target;

use super::server::{connect, prepare_table, start_as, Dsn, Postgres, Role};
use super::settings::PgSettings;
use crate::async_target::{block, block_quick};
use crate::sql_server::Replication;

/// Longest wait for a new replica to stream from its primary.
pub(super) const STREAMING_WITHIN: Duration = Duration::from_secs(30);

/// A primary and a streaming replica made from it with pg_basebackup;
/// with `synchronous_replica`, commits then wait for the replica as
/// `synchronous_commit` says. Writes go to the primary, reads where
/// `--read-from` says; the lag is the WAL between the primary's position
/// and the replica's replay position, in bytes.
pub(super) fn open_replicated(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
) -> Result<Box<dyn Target>, TargetError> {
    let settings = PgSettings::parse(plan.settings_of(spec))?;
    let primary = start_as(&settings, None, false, Role::Primary)?;
    let p = Dsn::managed(primary.addr.port());
    block(prepare_table(&p, workload))?;
    let replica = start_as(&settings, None, false, Role::ReplicaOf(p.port))?;
    let r = Dsn::managed(replica.addr.port());
    block(wait_streaming(&p, STREAMING_WITHIN))?;
    if settings.synchronous_replica {
        // Only now: with a synchronous standby named before one streams,
        // the primary's own set-up would wait for ever.
        block(synchronous_standby(&p))?;
    }
    let replication = Replication {
        // Statements only clients run: WAL replay runs none.
        read_counters: &["get", "search", "scan"],
        lag: {
            let p = p.clone();
            Box::new(move || block_quick(wal_lag(&p)).ok())
        },
    };
    crate::sql_server::open_started_pair::<Postgres>(
        spec,
        workload,
        (primary, p),
        (replica, r),
        replication,
    )
}

/// Makes the primary at `p` wait for its replica at each commit, and
/// waits until new connections see it so.
pub(super) async fn synchronous_standby(p: &Dsn) -> Result<(), TargetError> {
    let fail = |e: tokio_postgres::Error| {
        let detail = e.as_db_error().map(|d| d.message().to_string());
        TargetError::Server(format!(
            "cannot make the postgres replica synchronous: {}",
            detail.unwrap_or_else(|| e.to_string())
        ))
    };
    let c = connect(p).await?;
    // Two statements: ALTER SYSTEM refuses to run inside a transaction,
    // which a batch of several is.
    c.batch_execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        .await
        .map_err(fail)?;
    c.batch_execute("SELECT pg_reload_conf()")
        .await
        .map_err(fail)?;
    // The reload reaches new backends a moment later.
    for _ in 0..100 {
        let names: String = connect(p)
            .await?
            .query_one("SHOW synchronous_standby_names", &[])
            .await
            .map_err(fail)?
            .get(0);
        if names == "*" {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(TargetError::Server(
        "postgres did not take synchronous_standby_names = '*' within 5 s".into(),
    ))
}

/// Waits until the primary at `p` streams WAL to a replica.
pub(super) async fn wait_streaming(p: &Dsn, within: Duration) -> Result<(), TargetError> {
    let c = connect(p).await?;
    let start = std::time::Instant::now();
    loop {
        let n: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
                &[],
            )
            .await
            .map_err(TargetError::cause)?
            .get(0);
        if n > 0 {
            return Ok(());
        }
        if start.elapsed() > within {
            return Err(TargetError::Server(format!(
                "the postgres replica did not stream from its primary ({}) within {} s",
                p.describe(),
                within.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Bytes of WAL the replica has still to replay of what the primary at
/// `p` has written, as the primary sees it (`pg_stat_replication`, where
/// the replica reports its replay position each second and after each
/// flush): one snapshot, and no call to a replica that may be stalled.
pub(super) async fn wal_lag(p: &Dsn) -> Result<u64, TargetError> {
    let c = connect(p).await?;
    let lag: Option<i64> = c
        .query_opt(
            "SELECT (pg_current_wal_lsn() - replay_lsn)::bigint FROM pg_stat_replication",
            &[],
        )
        .await
        .map_err(TargetError::cause)?
        .ok_or_else(|| TargetError::Server("the replica is not connected".into()))?
        .get(0);
    lag.map(|b| b.max(0) as u64)
        .ok_or_else(|| TargetError::Server("the replica reported no replay position".into()))
}
