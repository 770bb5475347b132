//! `[servers.postgres]`: the settings a managed PostgreSQL takes, and
//! what each makes durable.

use std::path::Path;

use bakeoff_core::durability::DurableTo;
use bakeoff_core::error::TargetError;

use super::log;
use crate::settings::{durable, Durability, Kind, Setting, Settings, PORT};

pub(super) const BIN_DIRS: &[&str] = &["/usr/lib/postgresql/*/bin"];

/// `[servers.postgres]`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "shared_buffers",
        kind: Kind::Bytes,
        default: None,
        help: "PostgreSQL's buffer cache (default: its own, 128mb)",
    },
    Setting {
        name: "synchronous_commit",
        kind: Kind::Choice(&["on", "off", "local", "remote_write", "remote_apply"]),
        default: None,
        help: "whether a commit waits for its WAL to reach disk",
    },
    Setting {
        name: "synchronous_replica",
        kind: Kind::Flag,
        default: Some("false"),
        help: "with --topology primary-replica: commits wait for the replica (synchronous_standby_names = '*'); synchronous_commit says how far: remote_write (written there), on (flushed there), remote_apply (applied: visible to reads there)",
    },
    Setting {
        name: "fsync",
        kind: Kind::Choice(&["on", "off", "true", "false"]),
        default: None,
        help: "off: never fsync (data at risk on a crash)",
    },
    Setting {
        name: "max_connections",
        kind: Kind::Count,
        default: Some("300"),
        help: "connection limit",
    },
    PORT,
];

/// What a commit's WAL handling lets acknowledged writes survive:
/// synchronous_commit on (the default) flushes the WAL before the reply;
/// off replies first and leaves the WAL in shared memory for the WAL
/// writer, so a crash of the processes loses it; fsync off writes the WAL
/// to the kernel but never syncs it.
pub const DURABILITY: Durability = Durability {
    ceiling: DurableTo::PowerCut,
    rules: &[
        durable("synchronous_commit", "off", DurableTo::MemoryOnly),
        durable("fsync", "off", DurableTo::ProcessCrash),
        durable("fsync", "false", DurableTo::ProcessCrash),
    ],
};

pub(super) struct PgSettings {
    pub(super) shared_buffers: Option<u64>,
    pub(super) synchronous_commit: Option<String>,
    pub(super) synchronous_replica: bool,
    pub(super) fsync: Option<String>,
    pub(super) max_connections: u64,
    pub(super) port: Option<u16>,
}

impl PgSettings {
    pub(super) fn parse(table: Option<&toml::Table>) -> Result<Self, TargetError> {
        let s = Settings::new(table, SETTINGS)?;
        Ok(PgSettings {
            shared_buffers: s.bytes("shared_buffers")?,
            synchronous_commit: s.choice("synchronous_commit")?,
            synchronous_replica: s.flag("synchronous_replica")?.unwrap_or_default(),
            fsync: s.choice("fsync")?,
            max_connections: s.count("max_connections")?.unwrap_or_default(),
            port: s.port("port")?,
        })
    }

    pub(super) fn args(&self, port: u16, dir: &Path) -> Vec<String> {
        let mut a = vec![
            "-D".to_string(),
            dir.join("data").display().to_string(),
            "-p".into(),
            port.to_string(),
            "-c".into(),
            "listen_addresses=127.0.0.1".into(),
            "-c".into(),
            format!("unix_socket_directories={}", dir.display()),
            "-c".into(),
            format!("max_connections={}", self.max_connections),
            // Per-statement call counts for the conservation check, and
            // the time each took.
            "-c".into(),
            "shared_preload_libraries=pg_stat_statements".into(),
            // The commits' WAL writes and flushes, timed: pg_stat_statements
            // leaves them out of a statement's time.
            "-c".into(),
            "track_wal_io_timing=on".into(),
            // Background work with its times, in the log bakeoff reads
            // while a run goes on: every checkpoint and autovacuum, each
            // line after its moment.
            "-c".into(),
            format!("log_line_prefix={}", log::LOG_LINE_PREFIX),
            "-c".into(),
            "log_checkpoints=on".into(),
            "-c".into(),
            "log_autovacuum_min_duration=0".into(),
        ];
        let mut set = |k: &str, v: String| {
            a.push("-c".into());
            a.push(format!("{k}={v}"));
        };
        if let Some(b) = self.shared_buffers {
            set("shared_buffers", format!("{}kB", b / 1024));
        }
        if let Some(v) = &self.synchronous_commit {
            set("synchronous_commit", v.clone());
        }
        if let Some(v) = &self.fsync {
            set("fsync", v.clone());
        }
        a
    }
}
