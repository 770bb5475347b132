//! `[servers.mariadb]` and `[servers.handlersocket]`: the settings a
//! managed mariadbd takes, and what each makes durable.

use std::path::Path;

use bakeoff_core::durability::DurableTo;
use bakeoff_core::error::TargetError;

use crate::settings::{durable, Durability, DurableRule, Kind, Setting, Settings, PORT};

pub(super) const BUFFER_POOL: Setting = Setting {
    name: "innodb_buffer_pool_size",
    kind: Kind::Bytes,
    default: None,
    help: "InnoDB's cache of data and indexes (default: MariaDB's, 128mb)",
};

pub(super) const FLUSH_LOG: Setting = Setting {
    name: "innodb_flush_log_at_trx_commit",
    kind: Kind::Choice(&["0", "1", "2"]),
    default: None,
    help: "1: fsync the log at every commit; 2: write it, fsync once a second; 0: neither",
};

pub(super) const BINLOG: Setting = Setting {
    name: "binlog",
    kind: Kind::Flag,
    default: Some("false"),
    help:
        "write the binary log (log_bin), as a server with replicas or point-in-time recovery does",
};

pub(super) const SYNC_BINLOG: Setting = Setting {
    name: "sync_binlog",
    kind: Kind::Count,
    default: None,
    help: "with binlog = true: fsync the binary log every N commits (1: every commit; 0: when the OS writes it)",
};

pub(super) const MAX_CONNECTIONS: Setting = Setting {
    name: "max_connections",
    kind: Kind::Count,
    default: Some("1000"),
    help: "connection limit (MariaDB raises values below 10 to 10)",
};

pub(super) const PERFORMANCE_SCHEMA: Setting = Setting {
    name: "performance_schema",
    kind: Kind::Flag,
    default: Some("false"),
    help: "time every statement in performance_schema, so that the report sets the server's time beside the client's (off by default, as MariaDB ships it: see docs/trust.md for what it costs here)",
};

/// `[servers.mariadb]`.
pub const SETTINGS: &[Setting] = &[
    BUFFER_POOL,
    FLUSH_LOG,
    BINLOG,
    SYNC_BINLOG,
    MAX_CONNECTIONS,
    PERFORMANCE_SCHEMA,
    PORT,
    Setting {
        name: "semisync",
        kind: Kind::Flag,
        default: Some("false"),
        help: "with --topology primary-replica: semi-synchronous replication, a commit waits until the replica has received its events (not applied them; after 10 s without an answer the primary goes on alone, counted in Rpl_semi_sync_master_no_tx)",
    },
];

pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("innodb_flush_log_at_trx_commit", "0", DurableTo::MemoryOnly),
        durable(
            "innodb_flush_log_at_trx_commit",
            "2",
            DurableTo::ProcessCrash,
        ),
        durable("innodb_flush_log_at_trx_commit", "1", DurableTo::PowerCut),
        durable("innodb_flush_log_at_trx_commit", "", DurableTo::PowerCut),
        DurableRule {
            when: Some(("binlog", "true")),
            ..durable("sync_binlog", "1", DurableTo::PowerCut)
        },
        DurableRule {
            when: Some(("binlog", "true")),
            ..durable("sync_binlog", "*", DurableTo::ProcessCrash)
        },
        DurableRule {
            when: Some(("binlog", "true")),
            ..durable("sync_binlog", "", DurableTo::ProcessCrash)
        },
    ],
};

/// How long a semi-synchronous primary waits for the replica's answer
/// before it goes on without, ms.
pub(super) const SEMISYNC_TIMEOUT_MS: u64 = 10_000;

/// `[servers.handlersocket]`: the server's settings and the plugin's.
pub const HANDLERSOCKET_SETTINGS: &[Setting] = &[
    BUFFER_POOL,
    FLUSH_LOG,
    BINLOG,
    SYNC_BINLOG,
    MAX_CONNECTIONS,
    PORT,
    Setting {
        name: "threads_wr",
        kind: Kind::Count,
        default: Some("4"),
        help: "threads serving HandlerSocket's write port, which carries every operation (the plugin's own default is 1)",
    },
];

/// The settings of a managed mariadbd (`[servers.mariadb]`, and the
/// server part of `[servers.handlersocket]`).
#[derive(Clone)]
pub(crate) struct MariaSettings {
    pub(super) buffer_pool: Option<u64>,
    pub(super) flush_log_at_trx_commit: Option<String>,
    pub(super) binlog: bool,
    pub(super) sync_binlog: Option<u64>,
    pub(super) max_connections: u64,
    pub(super) performance_schema: bool,
    /// Fixed SQL port, if the preset names one.
    pub(crate) port: Option<u16>,
}

impl MariaSettings {
    pub(super) fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(MariaSettings {
            // HandlerSocket's requests are not statements: its own.
            performance_schema: s.flag("performance_schema")?.unwrap_or_default(),
            ..Self::read(&s)?
        })
    }

    /// Reads the server's keys from `s`, leaving others to the caller.
    pub(crate) fn read(s: &Settings) -> Result<Self, TargetError> {
        let binlog = s.flag("binlog")?.unwrap_or_default();
        let sync_binlog = s.count("sync_binlog")?;
        if sync_binlog.is_some() && !binlog {
            return Err(TargetError::Settings(
                "sync_binlog is for the binary log, which is off; add binlog = true (in a variant: mariadb[binlog=true,sync_binlog=1])".into(),
            ));
        }
        Ok(MariaSettings {
            buffer_pool: s.bytes("innodb_buffer_pool_size")?,
            flush_log_at_trx_commit: s.choice("innodb_flush_log_at_trx_commit")?,
            binlog,
            sync_binlog,
            max_connections: s.count("max_connections")?.unwrap_or_default(),
            performance_schema: false,
            port: s.port("port")?,
        })
    }

    pub(super) fn args(&self, port: u16, dir: &Path) -> Vec<String> {
        let mut a = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", dir.join("data").display()),
            format!("--port={port}"),
            "--bind-address=127.0.0.1".into(),
            format!("--socket={}", dir.join("mariadb.sock").display()),
            format!("--pid-file={}", dir.join("mariadb.pid").display()),
            // A private folder for temporary tables: in the shared /tmp,
            // servers started side by side were seen to lose each other's
            // files ("Could not remove temporary table").
            format!("--tmpdir={}", dir.join("tmp").display()),
            "--user=root".into(),
            "--skip-grant-tables".into(),
            "--skip-name-resolve".into(),
            format!("--max-connections={}", self.max_connections),
        ];
        if let Some(b) = self.buffer_pool {
            a.push(format!("--innodb-buffer-pool-size={b}"));
        }
        if let Some(f) = &self.flush_log_at_trx_commit {
            a.push(format!("--innodb-flush-log-at-trx-commit={f}"));
        }
        if self.binlog {
            a.push(format!(
                "--log-bin={}",
                dir.join("data").join("binlog").display()
            ));
            a.push("--server-id=1".into());
        }
        if let Some(n) = self.sync_binlog {
            a.push(format!("--sync-binlog={n}"));
        }
        if self.performance_schema {
            a.push("--performance-schema=ON".into());
            // Only the statements' summaries are read: no history, no
            // digests (binary-protocol executes have none), no text, which
            // would take some 150 MB of memory for nothing.
            for size in [
                "events-statements-history-long-size",
                "events-statements-history-size",
                "events-stages-history-long-size",
                "events-stages-history-size",
                "events-waits-history-long-size",
                "events-waits-history-size",
                "events-transactions-history-long-size",
                "events-transactions-history-size",
                "digests-size",
                "max-digest-length",
                "max-sql-text-length",
                "session-connect-attrs-size",
            ] {
                a.push(format!("--performance-schema-{size}=0"));
            }
        }
        a
    }
}
