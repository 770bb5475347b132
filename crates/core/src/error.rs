//! Errors of plan building and running.

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
    #[error("target {target}: {message}")]
    Setup {
        /// Target name.
        target: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The result file could not be written.
    #[error("cannot write result file {path}: {source}")]
    Write {
        /// Path.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
}
