//! The driver: sessions and wire loops, and what the server counts and
//! times of them (pg_stat counters, statement times, its background
//! work).

use std::time::Duration;

use bakeoff_core::driver::{Carrier, Connector, Driver, Job};
use bakeoff_core::error::TargetError;
use bakeoff_core::target::{CommandTime, CounterRule, Counters};
use bakeoff_core::workload::OpKind;

use super::log;
use super::server::{connect, Dsn};
use super::session::{PgSession, PROFILE_PUT, SCAN};
use super::wire::PgConnector;
use crate::async_target::{block, block_quick, sessions_reached, AsyncDriver, Reach};
use crate::codec::postgres::{PostgresCodec, DEL, GET, PUT};
use crate::codec::postgres_fields::{table as fields_table, PostgresFieldsCodec};
use crate::sql::search_statements;

/// The driver: the key-value operations through the wire codec on the
/// network loop; searches, scans, profile rows, a connection per request
/// and batched loads through tokio-postgres sessions on the async loop.
pub struct PgDriver {
    pub(super) reach: Reach<Dsn>,
    pub(super) profile: bool,
    /// Fields per record: one is table kv's value; several, the columns
    /// of table usertable.
    pub(super) fields: usize,
    /// The same servers as `reach`, through [`PostgresCodec`] (or
    /// [`PostgresFieldsCodec`]).
    pub(super) wire: Box<dyn Driver>,
    /// The same servers as `reach`, through tokio-postgres sessions.
    pub(super) sessions: Box<dyn Carrier>,
}

impl PgDriver {
    /// A driver for the servers of `reach` (resolved here for the codec's
    /// connections).
    pub(super) fn new(
        reach: Reach<Dsn>,
        profile: bool,
        fields: usize,
    ) -> Result<Self, TargetError> {
        let connector = |statements: Vec<(String, String, Vec<u32>)>, table| {
            move |dsn: &Dsn| -> Result<Box<dyn Connector>, TargetError> {
                Ok(Box::new(PgConnector {
                    addr: dsn.address()?,
                    dsn: dsn.clone(),
                    statements: statements.clone(),
                    table,
                }))
            }
        };
        let wire: Box<dyn Driver> = if fields > 1 {
            let codec = PostgresFieldsCodec::new(fields as u32);
            let statements = codec.statements();
            Box::new(reach.codec_driver(codec, connector(statements, "usertable"))?)
        } else {
            let statements = PostgresCodec::statements();
            Box::new(reach.codec_driver(PostgresCodec, connector(statements, "kv"))?)
        };
        let sessions = sessions_reached(&reach, move |dsn: Dsn| async move {
            PgSession::open(&dsn, profile, fields).await
        });
        Ok(PgDriver {
            reach,
            profile,
            fields,
            wire,
            sessions,
        })
    }
}

impl Driver for PgDriver {
    fn carrier(&self, job: &Job) -> &dyn Carrier {
        let fits = |rows| rows <= crate::codec::postgres::MAX_BATCH as usize;
        if crate::sql::wire_serves(job, fits) {
            self.wire.carrier(job)
        } else {
            &*self.sessions
        }
    }

    fn describe(&self, kind: OpKind) -> String {
        if kind == OpKind::Scan {
            // Through tokio-postgres, never the codec; $n placeholders.
            let scan = if self.fields > 1 {
                fields_table(self.fields).scan()
            } else {
                SCAN.into()
            };
            return format!("{scan} (prepared once per connection)");
        }
        if self.profile || kind == OpKind::Search {
            crate::sql::describe(kind, [GET, PUT, DEL], PROFILE_PUT, self.profile)
        } else {
            self.wire.describe(kind)
        }
    }
}

impl AsyncDriver for PgDriver {
    fn record_count(&self) -> Option<u64> {
        let dsn = self.reach.primary().clone();
        let table = match (self.profile, self.fields > 1) {
            (true, _) => "profile",
            (false, true) => "usertable",
            (false, false) => "kv",
        };
        block(async move {
            let c = connect(&dsn).await?;
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .await
                .map_err(TargetError::cause)?
                .get(0);
            Ok(n as u64)
        })
        .ok()
    }

    fn clock(&self) -> Option<std::io::Result<bakeoff_core::readings::ClockReading>> {
        let dsn = self.reach.primary().clone();
        let read = block_quick(async move {
            let c = connect(&dsn).await?;
            let server = |e: tokio_postgres::Error| TargetError::cause(e);
            // One simple query is one round trip, which bounds the error.
            let sent = std::time::SystemTime::now();
            let rows = c
                .simple_query("SELECT extract(epoch FROM clock_timestamp())")
                .await
                .map_err(server)?;
            let received = std::time::SystemTime::now();
            let epoch: f64 = rows
                .iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0)?.parse().ok(),
                    _ => None,
                })
                .ok_or_else(|| TargetError::Server("clock_timestamp() gave no time".into()))?;
            Ok(bakeoff_core::readings::ClockReading {
                sent,
                server: std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(epoch),
                received,
            })
        });
        Some(read.map_err(std::io::Error::other))
    }

    fn counters(&self) -> Option<Counters> {
        let dsn = self.reach.primary().clone();
        let mut statements = vec![
            ("get", GET.to_string()),
            ("put", PUT.into()),
            ("del", DEL.into()),
            ("put", PROFILE_PUT.into()),
            ("scan", SCAN.into()),
        ];
        statements.extend(search_statements(|n| format!("${n}")).map(|s| ("search", s)));
        if self.fields > 1 {
            let t = fields_table(self.fields);
            statements.extend([("get", t.get()), ("put", t.put()), ("del", t.del())]);
            statements.push(("scan", t.scan()));
            statements.extend((0..self.fields).map(|f| ("put", t.put_field(f))));
        }
        block_quick(async move {
            let c = connect(&dsn).await?;
            let mut out = Counters::new();
            for (name, sql) in statements {
                let calls: Option<i64> = c
                    .query_one(
                        "SELECT sum(calls)::bigint FROM pg_stat_statements WHERE query = $1",
                        &[&sql],
                    )
                    .await
                    .map_err(TargetError::cause)?
                    .get(0);
                *out.entry(name.to_string()).or_default() += calls.unwrap_or(0) as u64;
            }
            // Batched loads: one multi-row upsert per batch, as many texts
            // as batch sizes.
            let batches: Option<i64> = c
                .query_one(
                    "SELECT sum(calls)::bigint FROM pg_stat_statements WHERE query LIKE $1",
                    &[&"INSERT INTO kv (k, v) VALUES ($1, $2), %"],
                )
                .await
                .map_err(TargetError::cause)?
                .get(0);
            *out.entry("put".to_string()).or_default() += batches.unwrap_or(0) as u64;
            Ok(out)
        })
        .ok()
    }

    fn command_times(&self) -> Option<(&'static str, Vec<CommandTime>)> {
        let dsn = self.reach.primary().clone();
        let timed = self.timed_statements();
        let times = block_quick(async move {
            let c = connect(&dsn).await?;
            let server = |e: tokio_postgres::Error| TargetError::cause(e);
            let texts: Vec<&str> = timed.iter().map(|(_, _, sql)| sql.as_str()).collect();
            // One round trip: every statement's calls and time (ms).
            let rows = c
                .query(
                    "SELECT query, sum(calls)::bigint, sum(total_exec_time)::float8 \
                     FROM pg_stat_statements WHERE query = ANY($1) GROUP BY query",
                    &[&texts],
                )
                .await
                .map_err(server)?;
            let mut out: Vec<CommandTime> = Vec::new();
            for (command, kinds, sql) in &timed {
                let (calls, ms) = rows
                    .iter()
                    .find(|r| r.get::<_, &str>(0) == sql)
                    .map_or((0, 0.0), |r| (r.get::<_, i64>(1), r.get::<_, f64>(2)));
                match out.iter_mut().find(|t| t.command == *command) {
                    Some(t) => {
                        t.calls += calls as u64;
                        t.usec += (ms * 1e3).round() as u64;
                    }
                    None => out.push(CommandTime {
                        command: command.to_string(),
                        kinds,
                        calls: calls as u64,
                        usec: (ms * 1e3).round() as u64,
                        apart: false,
                        histogram_usec: Vec::new(),
                    }),
                }
            }
            // The commits' WAL writes and flushes, outside the statements'
            // time: per write statement (where the server times them).
            let wal: Option<f64> = c
                .query_one(
                    "SELECT (wal_write_time + wal_sync_time)::float8 FROM pg_stat_wal \
                     WHERE current_setting('track_wal_io_timing')::bool",
                    &[],
                )
                .await
                .ok()
                .map(|r| r.get(0));
            if let Some(ms) = wal {
                let writes = out
                    .iter()
                    .filter(|t| {
                        t.kinds
                            .iter()
                            .any(|k| k.writes_value() || *k == OpKind::Delete)
                    })
                    .map(|t| t.calls)
                    .sum();
                out.push(CommandTime {
                    command: "commit: WAL write and flush (pg_stat_wal), per write".into(),
                    kinds: WRITES,
                    calls: writes,
                    usec: (ms * 1e3).round() as u64,
                    apart: true,
                    histogram_usec: Vec::new(),
                });
            }
            Ok(out)
        });
        times.ok().map(|t| {
            (
                "pg_stat_statements (calls, total_exec_time) and pg_stat_wal",
                t,
            )
        })
    }

    fn background_source(&self, managed: bool) -> Option<(&'static str, Duration)> {
        managed.then_some((
            "the server's log: checkpoint and autovacuum lines, with their times; read every 1 s",
            Duration::from_secs(1),
        ))
    }

    fn provoke(&self, work: bakeoff_core::plan::Work) -> Result<(), TargetError> {
        if work != bakeoff_core::plan::Work::Checkpoint {
            return Err(TargetError::Client(format!(
                "postgres cannot be asked for {}",
                work.name()
            )));
        }
        let dsn = self.reach.primary().clone();
        // A checkpoint writes every dirty buffer before it answers.
        crate::async_target::block_within(Duration::from_secs(60), async move {
            let c = connect(&dsn).await?;
            c.batch_execute("CHECKPOINT")
                .await
                .map_err(TargetError::during("CHECKPOINT"))
        })
    }

    fn logs_background(&self) -> bool {
        true
    }

    fn logged_background(&self, text: &str) -> (Vec<bakeoff_core::target::LoggedWork>, usize) {
        log::logged_work(text)
    }

    fn no_background(&self, _managed: bool) -> Option<&'static str> {
        Some("none read: bakeoff reads PostgreSQL's checkpoints and autovacuums from the log of a server it starts, and did not start this one")
    }

    fn counter_rules(&self) -> &'static [CounterRule] {
        if self.fields > 1 {
            FIELDS_RULES
        } else {
            KV_RULES
        }
    }

    fn keeps_fields(&self) -> bool {
        self.fields > 1
    }
}

/// How pg_stat_statements' calls add up to bakeoff's requests on table
/// kv (and profile).
pub(super) const KV_RULES: &[CounterRule] = &[
    CounterRule {
        what: "SELECT by key calls (pg_stat_statements)",
        counters: &["get"],
        kinds: &[OpKind::Get],
    },
    CounterRule {
        what: "INSERT … ON CONFLICT calls (pg_stat_statements)",
        counters: &["put"],
        kinds: &[OpKind::Set, OpKind::Update],
    },
    DEL_RULE,
    CounterRule {
        what: "search calls (pg_stat_statements)",
        counters: &["search"],
        kinds: &[OpKind::Search],
    },
    CounterRule {
        what: "scan calls: SELECT … WHERE k >= $1 ORDER BY k LIMIT $2 (pg_stat_statements)",
        counters: &["scan"],
        kinds: &[OpKind::Scan],
    },
];

/// The same on table usertable, of a column per field.
pub(super) const FIELDS_RULES: &[CounterRule] = &[
    CounterRule {
        what: "SELECT field0, … by key calls (pg_stat_statements)",
        counters: &["get"],
        kinds: &[OpKind::Get],
    },
    CounterRule {
        what: "INSERT … ON CONFLICT and UPDATE … SET field<j> calls (pg_stat_statements)",
        counters: &["put"],
        kinds: &[OpKind::Set, OpKind::Update],
    },
    DEL_RULE,
    CounterRule {
        what:
            "scan calls: SELECT k, field0, … WHERE k >= $1 ORDER BY k LIMIT $2 (pg_stat_statements)",
        counters: &["scan"],
        kinds: &[OpKind::Scan],
    },
];

/// The kinds of operation that write (for the commits' WAL time).
pub(super) const WRITES: &[OpKind] = &[OpKind::Set, OpKind::Update, OpKind::Insert, OpKind::Delete];

impl PgDriver {
    /// The statements whose time the server keeps, as (name shown, the
    /// operations each serves, its text as pg_stat_statements holds it).
    pub(super) fn timed_statements(&self) -> Vec<(&'static str, &'static [OpKind], String)> {
        if self.fields > 1 {
            let t = fields_table(self.fields);
            let mut all = vec![
                ("SELECT by key", &[OpKind::Get][..], t.get()),
                (
                    "INSERT … ON CONFLICT",
                    &[OpKind::Set, OpKind::Insert][..],
                    t.put(),
                ),
                ("DELETE", &[OpKind::Delete][..], t.del()),
                ("scan", &[OpKind::Scan][..], t.scan()),
            ];
            all.extend((0..self.fields).map(|f| {
                (
                    "UPDATE … SET field<j>",
                    &[OpKind::Update][..],
                    t.put_field(f),
                )
            }));
            all
        } else {
            vec![
                ("SELECT by key", &[OpKind::Get][..], GET.to_string()),
                (
                    "INSERT … ON CONFLICT",
                    &[OpKind::Set, OpKind::Update, OpKind::Insert][..],
                    PUT.to_string(),
                ),
                ("DELETE", &[OpKind::Delete][..], DEL.to_string()),
                ("scan", &[OpKind::Scan][..], SCAN.to_string()),
            ]
        }
    }
}

/// Deletes, on either table.
pub(super) const DEL_RULE: CounterRule = CounterRule {
    what: "DELETE calls (pg_stat_statements)",
    counters: &["del"],
    kinds: &[OpKind::Delete],
};
