//! A primary and its replica (`--topology primary-replica`): the replica
//! started following, caught up, and its lag.

use std::collections::BTreeMap;

use bakeoff_core::error::TargetError;
use bakeoff_core::plan::{Plan, TargetSpec, Workload};
use bakeoff_core::target::Target;
use bakeoff_servers::Limits;
use mysql_async::prelude::Queryable;

use super::server::{connect, prepare_table, start_managed, Dsn, Mariadb};
use super::settings::{MariaSettings, SEMISYNC_TIMEOUT_MS, SETTINGS};
use crate::async_target::{block, block_quick};
use crate::settings::Settings;
use crate::sql_server::Replication;

/// Longest wait for a new replica to apply what its primary logged.
pub(super) const CATCH_UP_WITHIN_S: u64 = 30;

/// A primary writing the binary log and a replica following it by GTID
/// (`MASTER_USE_GTID = slave_pos`); with `semisync`, semi-synchronous
/// replication. Writes go to the primary, reads where `--read-from`
/// says; the lag is the binary log between the primary's position and
/// the one the replica has executed, in bytes.
pub(super) fn open_replicated(
    spec: &TargetSpec,
    plan: &Plan,
    workload: &Workload,
    settings: MariaSettings,
) -> Result<Box<dyn Target>, TargetError> {
    let semisync = Settings::new(plan.settings_of(spec), SETTINGS)?
        .flag("semisync")?
        .unwrap_or_default();
    let primary_settings = MariaSettings {
        binlog: true,
        ..settings.clone()
    };
    let (primary, p) = start_managed(
        &primary_settings,
        &|_| {
            let mut a = vec!["--binlog-format=ROW".to_string()];
            if semisync {
                a.push("--rpl-semi-sync-master-enabled=ON".into());
                a.push(format!(
                    "--rpl-semi-sync-master-timeout={SEMISYNC_TIMEOUT_MS}"
                ));
            }
            a
        },
        &|_| true,
        Limits::of(workload),
        false,
    )?;
    let replica_settings = MariaSettings {
        binlog: false,
        sync_binlog: None,
        port: None,
        ..settings
    };
    let (replica, r) = start_managed(
        &replica_settings,
        &|dir| {
            let mut a = vec![
                "--server-id=2".to_string(),
                format!("--relay-log={}", dir.join("data").join("relay").display()),
            ];
            if semisync {
                a.push("--rpl-semi-sync-slave-enabled=ON".into());
            }
            a
        },
        &|_| true,
        Limits::of(workload),
        false,
    )?;
    block(follow(&r, &p))?;
    block(prepare_table(&p, workload))?;
    block(caught_up(&p, &r))?;
    let replication = Replication {
        // Only clients run prepared statements: the replica applies row
        // events.
        read_counters: &["Com_stmt_execute"],
        lag: {
            let (p, r) = (p.clone(), r.clone());
            Box::new(move || block_quick(binlog_lag(&p, &r)).ok())
        },
    };
    crate::sql_server::open_started_pair::<Mariadb>(
        spec,
        workload,
        (primary, p),
        (replica, r),
        replication,
    )
}

/// Makes the server at `r` a replica of the one at `p`, by GTID.
pub(super) async fn follow(r: &Dsn, p: &Dsn) -> Result<(), TargetError> {
    let mut c = connect(r, None).await?;
    let sql = format!(
        "CHANGE MASTER TO MASTER_HOST = '{}', MASTER_PORT = {}, MASTER_USER = 'root', \
         MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
        p.host, p.port
    );
    for sql in [sql.as_str(), "START SLAVE"] {
        c.query_drop(sql).await.map_err(|e| {
            TargetError::Server(format!("cannot start the mariadb replica ({sql}): {e}"))
        })?;
    }
    Ok(())
}

/// Waits until the replica at `r` has applied everything the primary at
/// `p` has logged so far.
pub(super) async fn caught_up(p: &Dsn, r: &Dsn) -> Result<(), TargetError> {
    let e = |e: mysql_async::Error| TargetError::cause(e);
    let position: Option<String> = connect(p, None)
        .await?
        .query_first("SELECT @@gtid_binlog_pos")
        .await
        .map_err(e)?;
    let waited: Option<i64> = connect(r, None)
        .await?
        .exec_first(
            "SELECT MASTER_GTID_WAIT(?, ?)",
            (position.clone().unwrap_or_default(), CATCH_UP_WITHIN_S),
        )
        .await
        .map_err(e)?;
    if waited == Some(0) {
        return Ok(());
    }
    let status = replica_status(r).await.unwrap_or_default();
    Err(TargetError::Server(format!(
        "the mariadb replica did not reach the primary's GTID position {} within {CATCH_UP_WITHIN_S} s (SHOW SLAVE STATUS: {status:?})",
        position.unwrap_or_default()
    )))
}

/// The replica's `SHOW SLAVE STATUS` fields that say where it is.
pub(super) async fn replica_status(r: &Dsn) -> Result<BTreeMap<String, String>, TargetError> {
    let mut c = connect(r, None).await?;
    let row: Option<mysql_async::Row> = c
        .query_first("SHOW SLAVE STATUS")
        .await
        .map_err(TargetError::cause)?;
    let row = row.ok_or_else(|| TargetError::Server("the server is no replica".into()))?;
    let mut out = BTreeMap::new();
    for name in [
        "Slave_IO_Running",
        "Slave_SQL_Running",
        "Relay_Master_Log_File",
        "Exec_Master_Log_Pos",
        "Last_Error",
        "Last_IO_Error",
    ] {
        if let Some(Ok(v)) = row.get_opt::<Option<String>, _>(name) {
            out.insert(name.to_string(), v.unwrap_or_default());
        }
    }
    Ok(out)
}

/// Bytes of binary log the replica at `r` has still to execute of what
/// the primary at `p` has written. The replica is asked first, so the
/// primary's position read after it is never behind it; the count is
/// exact within one log file, and when the primary has moved on to a new
/// file it is that file's length so far (a lower bound).
pub(super) async fn binlog_lag(p: &Dsn, r: &Dsn) -> Result<u64, TargetError> {
    let at = replica_status(r).await?;
    let executed: u64 = at
        .get("Exec_Master_Log_Pos")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| TargetError::Server(format!("no executed position: {at:?}")))?;
    let mut c = connect(p, None).await?;
    let row: Option<mysql_async::Row> = c
        .query_first("SHOW MASTER STATUS")
        .await
        .map_err(TargetError::cause)?;
    let (file, written): (String, u64) = row
        .and_then(|row| Some((row.get("File")?, row.get("Position")?)))
        .ok_or_else(|| TargetError::Server("the primary writes no binary log".into()))?;
    Ok(if at.get("Relay_Master_Log_File") == Some(&file) {
        written.saturating_sub(executed)
    } else {
        written
    })
}
