//! The driver: sessions and wire loops, and what the server counts and
//! times of them (status counters, statement times, InnoDB's background
//! work).

use std::time::Duration;

use bakeoff_core::driver::{Carrier, Connector, Driver, Job, JobKind};
use bakeoff_core::error::TargetError;
use bakeoff_core::plan::RequestMode;
use bakeoff_core::target::{BackgroundLook, CommandTime, CounterRule, Counters};
use bakeoff_core::workload::OpKind;
use mysql_async::prelude::Queryable;

use super::server::{connect, Dsn};
use super::session::{MariaSession, PROFILE_PUT};
use super::wire::MariaConnector;
use crate::async_target::{block, block_quick, sessions_reached, AsyncDriver, Reach};
use crate::codec::mysql::{MysqlCodec, DEL, GET, PUT, STATEMENTS};
use crate::codec::mysql_fields::{table as fields_table, MysqlFieldsCodec};
use crate::sql::SCAN;

/// What InnoDB's log flushing (and, with a binary log, its syncing) lets
/// acknowledged writes survive: flush_log_at_trx_commit 1 fsyncs at every
/// commit (MariaDB's default), 2 writes to the kernel, 0 leaves the log in
/// memory for up to a second. With a binary log, a commit is only as
/// durable as the binlog: recovery rolls back what it does not hold.
/// Why HandlerSocket's background work is not on the timeline.
pub(crate) const INNODB_NOT_READ: &str = "none read: bakeoff looks at InnoDB's page flushing and checkpoint age on target mariadb, not yet through HandlerSocket";

/// The status InnoDB's background work is read from.
pub(super) const INNODB_BACKGROUND: &[&str] = &[
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_buffer_pool_pages_dirty",
    "Innodb_checkpoint_age",
    "Innodb_checkpoint_max_age",
    "Innodb_history_list_length",
];

/// A checkpoint age past this share of its maximum: InnoDB flushes hard,
/// and writes wait once it reaches the maximum.
pub(super) const REDO_NEAR_FULL: f64 = 0.75;

/// InnoDB's background work at one look: pages written by its flushing
/// since the look before, and a redo log near full.
pub(super) fn innodb_look(
    flushed: u64,
    dirty: u64,
    age: u64,
    max_age: u64,
    history: u64,
) -> BackgroundLook {
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    let share = if max_age > 0 {
        age as f64 / max_age as f64
    } else {
        0.0
    };
    let mut look = BackgroundLook::default();
    if flushed > 0 {
        look.running.push((
            "page flush",
            format!(
                "{flushed} pages written since the last look, {dirty} dirty; checkpoint age {:.1} MB of {:.1} MB ({:.0} %); {history} undo records to purge",
                mb(age),
                mb(max_age),
                share * 100.0
            ),
        ));
    }
    if share >= REDO_NEAR_FULL {
        look.running.push((
            "redo log near full",
            format!(
                "checkpoint age {:.0} % of its maximum: InnoDB flushes hard, and writes wait at the maximum",
                share * 100.0
            ),
        ));
    }
    look
}

/// The driver: the key-value operations through the wire codec on the
/// network loop; searches, scans, profile rows, a connection per request,
/// phased requests and batched loads through mysql_async sessions on the
/// async loop.
pub struct MariaDriver {
    pub(super) reach: Reach<Dsn>,
    pub(super) profile: bool,
    /// Measured requests are the phased script (000-mysql-phases).
    pub(super) phased: bool,
    /// Fields per record: one is table kv's value; several, the columns
    /// of table usertable.
    pub(super) fields: usize,
    /// The same servers as `reach`, through [`MysqlCodec`] (or
    /// [`MysqlFieldsCodec`]).
    pub(super) wire: Box<dyn Driver>,
    /// The same servers as `reach`, through mysql_async sessions.
    pub(super) sessions: Box<dyn Carrier>,
    /// Sessions whose requests are the phased script, for measured
    /// requests when `phased`.
    pub(super) phased_sessions: Box<dyn Carrier>,
    /// InnoDB's pages flushed at the last look at its background work.
    pub(super) flushed: std::sync::Mutex<Option<u64>>,
}

impl MariaDriver {
    /// A driver for the servers of `reach` (resolved here for the codec's
    /// connections).
    pub(super) fn new(
        reach: Reach<Dsn>,
        profile: bool,
        phased: bool,
        fields: usize,
    ) -> Result<Self, TargetError> {
        let connector = |statements: Vec<String>, table| {
            move |dsn: &Dsn| -> Result<Box<dyn Connector>, TargetError> {
                Ok(Box::new(MariaConnector {
                    addr: dsn.address()?,
                    dsn: dsn.clone(),
                    statements: statements.clone(),
                    table,
                }))
            }
        };
        let wire: Box<dyn Driver> = if fields > 1 {
            let codec = MysqlFieldsCodec::new(fields as u32);
            let statements = codec.statements();
            Box::new(reach.codec_driver(codec, connector(statements, "usertable"))?)
        } else {
            let statements = STATEMENTS.map(String::from).to_vec();
            Box::new(reach.codec_driver(MysqlCodec, connector(statements, "kv"))?)
        };
        let sessions_of = |phased: bool| {
            sessions_reached(&reach, move |dsn: Dsn| async move {
                MariaSession::open(&dsn, profile, phased, fields).await
            })
        };
        let (sessions, phased_sessions) = (sessions_of(false), sessions_of(true));
        Ok(MariaDriver {
            reach,
            profile,
            phased,
            fields,
            wire,
            sessions,
            phased_sessions,
            flushed: Default::default(),
        })
    }
}

impl Driver for MariaDriver {
    fn carrier(&self, job: &Job) -> &dyn Carrier {
        // A value, and a batch, must fit one packet (16 MiB).
        use crate::codec::mysql::{batch_len, MAX_PAYLOAD};
        let longest = job.inputs.workload.value_size.max();
        let fits = |rows| batch_len(rows, longest) < MAX_PAYLOAD;
        if crate::sql::wire_serves(job, fits) && longest + 1024 < MAX_PAYLOAD {
            self.wire.carrier(job)
        } else if job.kind == JobKind::Measure && job.inputs.workload.request == RequestMode::Phases
        {
            &*self.phased_sessions
        } else {
            &*self.sessions
        }
    }

    fn describe(&self, kind: OpKind) -> String {
        if kind == OpKind::Update && self.phased {
            return "request: connect; USE bakeoff; SET NAMES utf8mb4; UPDATE kv SET v = X'…' WHERE k IN (10 keys); SELECT k, v FROM kv WHERE k IN (10 keys); INSERT INTO requests (k, v) VALUES ('key', X'…'); close".into();
        }
        if kind == OpKind::Scan {
            // Through mysql_async, which caches it per connection.
            let scan = if self.fields > 1 {
                fields_table(self.fields).scan()
            } else {
                SCAN.into()
            };
            format!("{scan} (prepared once per connection)")
        } else if self.profile || kind == OpKind::Search {
            crate::sql::describe(kind, [GET, PUT, DEL], PROFILE_PUT, self.profile)
        } else {
            self.wire.describe(kind)
        }
    }
}

/// The server's own counters named in `names` (`SHOW GLOBAL STATUS`).
pub(crate) fn status_counters(dsn: &Dsn, names: &[&str]) -> Option<Counters> {
    status_counters_within(dsn, names, crate::async_target::QUICK_WITHIN)
}

/// [`status_counters`], the server given `within` to connect and answer.
pub(super) fn status_counters_within(
    dsn: &Dsn,
    names: &[&str],
    within: Duration,
) -> Option<Counters> {
    let dsn = dsn.clone();
    let list = names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    crate::async_target::block_within(within, async move {
        let mut c = connect(&dsn, None).await?;
        let rows: Vec<(String, String)> = c
            .query(format!(
                "SHOW GLOBAL STATUS WHERE Variable_name IN ({list})"
            ))
            .await
            .map_err(TargetError::cause)?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
            .collect())
    })
    .ok()
}

/// Where MariaDB's time per statement comes from.
pub(super) const STATEMENT_TIMES: &str = "performance_schema.events_statements_summary_global_by_event_name (COUNT_STAR, SUM_TIMER_WAIT)";

/// The server's time in prepared statements so far, from
/// performance_schema where it is on (`None` where it is off): binary
/// protocol executes carry no digest, so every prepared statement, read or
/// write, is one row, `statement/com/Execute`, against every operation's
/// client time.
pub(super) fn statement_times(dsn: &Dsn) -> Option<Vec<CommandTime>> {
    let dsn = dsn.clone();
    block_quick(async move {
        let mut c = connect(&dsn, None).await?;
        let row: Option<(u64, u64)> = c
            .query_first(
                "SELECT COUNT_STAR, SUM_TIMER_WAIT \
                 FROM performance_schema.events_statements_summary_global_by_event_name \
                 WHERE EVENT_NAME = 'statement/com/Execute' AND @@performance_schema = 1",
            )
            .await
            .map_err(TargetError::cause)?;
        Ok(row)
    })
    .ok()
    .flatten()
    .map(|(calls, picoseconds)| {
        vec![CommandTime {
            command: "COM_STMT_EXECUTE (every prepared statement, reads and writes together)"
                .into(),
            kinds: &OpKind::ALL,
            calls,
            usec: picoseconds / 1_000_000,
            apart: false,
            histogram_usec: Vec::new(),
        }]
    })
}

/// Rows in `bakeoff.TABLE`, if the server answers.
pub(crate) fn count_rows(dsn: &Dsn, table: &str) -> Option<u64> {
    let dsn = dsn.clone();
    let sql = format!("SELECT COUNT(*) FROM bakeoff.{table}");
    block(async move {
        let mut c = connect(&dsn, None).await?;
        let n: Option<u64> = c.query_first(sql).await.map_err(TargetError::cause)?;
        Ok(n.unwrap_or(0))
    })
    .ok()
}

impl AsyncDriver for MariaDriver {
    fn record_count(&self) -> Option<u64> {
        let table = match (self.profile, self.fields > 1) {
            (true, _) => "profile",
            (false, true) => "usertable",
            (false, false) => "kv",
        };
        count_rows(self.reach.primary(), table)
    }

    fn counters(&self) -> Option<Counters> {
        status_counters(
            self.reach.primary(),
            &["Com_stmt_execute", "Com_insert", "Com_delete", "Com_update"],
        )
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        // bakeoff's own admin queries go as plain text, never as prepared
        // statements, so Com_stmt_execute counts the workload alone, scans
        // among the reads (Com_select would count the admin queries too).
        const PREPARED: &[CounterRule] = &[
            CounterRule {
                what: "prepared statements executed (Com_stmt_execute)",
                counters: &["Com_stmt_execute"],
                kinds: &OpKind::ALL,
            },
            CounterRule {
                what: "INSERT … ON DUPLICATE KEY UPDATE (Com_insert)",
                counters: &["Com_insert"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
            CounterRule {
                what: "DELETE (Com_delete)",
                counters: &["Com_delete"],
                kinds: &[OpKind::Delete],
            },
        ];
        // Phased requests are text queries: one UPDATE and one INSERT each;
        // the load's upserts stay prepared.
        const PHASED: &[CounterRule] = &[
            CounterRule {
                what: "prepared upserts of the load (Com_stmt_execute)",
                counters: &["Com_stmt_execute"],
                kinds: &[OpKind::Set],
            },
            CounterRule {
                what: "UPDATE of 10 rows, one per request (Com_update)",
                counters: &["Com_update"],
                kinds: &[OpKind::Update],
            },
            CounterRule {
                what: "INSERTs: load upserts + one per request (Com_insert)",
                counters: &["Com_insert"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
        ];
        // On table usertable an update is an UPDATE of its one field.
        const FIELDS: &[CounterRule] = &[
            PREPARED[0],
            CounterRule {
                what: "INSERT … ON DUPLICATE KEY UPDATE and UPDATE … SET field<j> (Com_insert + Com_update)",
                counters: &["Com_insert", "Com_update"],
                kinds: &[OpKind::Set, OpKind::Update],
            },
            PREPARED[2],
        ];
        if self.phased {
            PHASED
        } else if self.fields > 1 {
            FIELDS
        } else {
            PREPARED
        }
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }

    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        statement_times(self.reach.primary()).map(|t| (STATEMENT_TIMES, t))
    }

    fn no_command_times(&self) -> Option<&'static str> {
        Some("MariaDB times statements only in performance_schema, off by default; mariadb[performance_schema=true] turns it on where bakeoff starts the server")
    }

    fn background_source(&self, _managed: bool) -> Option<(&'static str, Duration)> {
        Some((
            "SHOW GLOBAL STATUS: InnoDB's pages flushed and checkpoint age against its maximum, every 1 s",
            Duration::from_secs(1),
        ))
    }

    fn background_look(&self) -> Option<BackgroundLook> {
        // The thread that collects the run waits for the look.
        let st = status_counters_within(
            self.reach.primary(),
            INNODB_BACKGROUND,
            Duration::from_millis(500),
        )?;
        let n = |k: &str| st.get(k).copied().unwrap_or(0);
        let mut last = self.flushed.lock().unwrap_or_else(|e| e.into_inner());
        let flushed = n("Innodb_buffer_pool_pages_flushed");
        let before = last.replace(flushed);
        Some(innodb_look(
            flushed.saturating_sub(before.unwrap_or(flushed)),
            n("Innodb_buffer_pool_pages_dirty"),
            n("Innodb_checkpoint_age"),
            n("Innodb_checkpoint_max_age"),
            n("Innodb_history_list_length"),
        ))
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        let dsn = self.reach.primary().clone();
        let read = block_quick(async move {
            let mut c = connect(&dsn, None).await?;
            // One text query is one round trip, which bounds the error.
            let sent = std::time::SystemTime::now();
            let epoch: Option<String> = c
                .query_first("SELECT UNIX_TIMESTAMP(NOW(6))")
                .await
                .map_err(TargetError::cause)?;
            let received = std::time::SystemTime::now();
            let epoch: f64 = epoch
                .and_then(|t| t.parse().ok())
                .ok_or_else(|| TargetError::Server("NOW(6) gave no time".into()))?;
            Ok(bakeoff_core::readings::ClockReading {
                sent,
                server: std::time::UNIX_EPOCH + Duration::from_secs_f64(epoch),
                received,
            })
        });
        Some(read.map_err(std::io::Error::other))
    }
}
