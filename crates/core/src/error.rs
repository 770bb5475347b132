//! Errors of plan building and running.

use crate::recorder::ErrorKind;

/// A plan could not be built: the message names the flag or preset key at
/// fault and says how to fix it. The binary exits with code 2 on these.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A value is malformed or impossible.
    #[error("{origin}: {message}")]
    Invalid {
        /// Where the value came from: `flag --clients` or `preset key workload.clients`.
        origin: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The preset file could not be read.
    #[error("cannot read preset {path}: {source}")]
    Read {
        /// Path as given.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The preset file is not valid TOML, or has an unknown key.
    #[error("preset {path}: {message}")]
    Syntax {
        /// Path as given.
        path: String,
        /// The parser's message, which names the key and line.
        message: String,
    },
}

/// A run could not start or finish. Setup errors (exit code 2) are told apart
/// from failures during measurement.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target cannot be used as asked: missing binary, unreachable
    /// server, wrong password, port in use. Nothing was measured.
    #[error("target {target}: {source}")]
    Setup {
        /// Target name.
        target: String,
        /// What is wrong and how to fix it.
        source: TargetError,
    },
    /// A synchronised start (`--start-at`) could not be kept: nothing was
    /// measured.
    #[error("target {target}: {source}")]
    Start {
        /// Target name.
        target: String,
        /// Why.
        source: StartError,
    },
    /// The result file could not be written where asked; the experiment
    /// ends there. What it had measured was written to `saved` in the
    /// temporary folder instead, when that could be written.
    #[error("cannot write result file {path}: {source}{}", saved.as_ref().map(|at| format!("; the result is in {} instead", at.display())).unwrap_or_default())]
    Write {
        /// Path.
        path: String,
        /// Underlying error.
        source: std::io::Error,
        /// Where the result went instead.
        saved: Option<std::path::PathBuf>,
    },
}

/// Why a target cannot be used or a job could not run: returned by the
/// drivers' availability checks, settings checks, probes, opens and worker
/// loops. Nothing is measured after one; the runner reports it as a
/// [`RunError::Setup`] naming the target, and the binary exits with 2.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// A program or library the target needs is not installed.
    #[error("{what}; install it with `apt-get install {package}` (Debian package {package})")]
    NotInstalled {
        /// What is missing: "`redis-server` is not on PATH".
        what: String,
        /// The Debian package that provides it.
        package: String,
    },
    /// A server setting is malformed, or settings contradict each other.
    #[error("{0}")]
    Settings(String),
    /// No connection could be opened; its kind says how it is counted.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The server could not be started, or refused a setup step (creating
    /// the table, reading its counters).
    #[error("{0}")]
    Server(String),
    /// An in-process engine could not be opened or set up.
    #[error("{0}")]
    Engine(String),
    /// bakeoff's own side failed: a worker thread panicked, a loop could
    /// not be set up.
    #[error("{0}")]
    Client(String),
    /// A lower layer's error that says all there is (a server that could
    /// not start, a client library's refusal), kept whole: its message as
    /// it was, and its chain of sources for whoever walks it.
    #[error(transparent)]
    Cause(Box<dyn std::error::Error + Send + Sync>),
    /// A lower layer's error during a step bakeoff names.
    #[error("{what}: {source}")]
    During {
        /// The step: "cannot read INFO from redis at 127.0.0.1:6379".
        what: String,
        /// What the lower layer said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl TargetError {
    /// `e`, kept whole as the cause: `map_err(TargetError::cause)`.
    pub fn cause(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Cause(e.into())
    }

    /// `e`, kept whole as the source of a failed step named `what`:
    /// `map_err(TargetError::during("creating the table"))`.
    pub fn during<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
        what: impl Into<String>,
    ) -> impl FnOnce(E) -> Self {
        let what = what.into();
        move |e| Self::During {
            what,
            source: e.into(),
        }
    }
}

/// A connection could not be opened. `kind` says how it is counted
/// (refused, timeout, reset, server error), decided by the driver from its
/// library's error type; `message` is for the user.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ConnectError {
    /// How the failed attempt is counted.
    pub kind: ErrorKind,
    /// What went wrong.
    pub message: String,
}

impl ConnectError {
    /// A failure of kind `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Why a synchronised start could not be kept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StartError {
    /// Ready after the start time plus the tolerance.
    #[error("ready {late} after --start-at {at}, more than the tolerance of {tolerance}: this shard would measure another window than the others; start it earlier, or set the start later (a longer --slack for bakeoff kubernetes)")]
    Late {
        /// The planned start.
        at: String,
        /// How late, in words.
        late: String,
        /// The tolerance, in words.
        tolerance: String,
    },
    /// This machine's clock is too far from the server's.
    #[error("this machine's clock is {offset} {side} the server's, more than the tolerance of {tolerance}: the shards' windows would not line up; synchronise the clocks (NTP, chrony), or give --start-tolerance")]
    Clock {
        /// How far, in words.
        offset: String,
        /// `ahead of` or `behind`.
        side: &'static str,
        /// The tolerance, in words.
        tolerance: String,
    },
    /// The server's clock could not be read.
    #[error("the server's clock could not be read for --start-at: {0}")]
    Unreadable(String),
}
