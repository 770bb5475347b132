//! Why a command failed, and the exit code each failure gives.

use bakeoff_core::error::{PlanError, RunError};
use bakeoff_core::result::ResultFileError;

/// Every run clean.
pub const EXIT_OK: i32 = 0;
/// Some run recorded errors, or results could not be written.
pub const EXIT_RUN_ERRORS: i32 = 1;
/// Bad input or an unusable target; nothing measured.
pub const EXIT_USAGE: i32 = 2;
/// Stopped by Ctrl-C (a run stopped by another signal exits with 128 +
/// its number: 143 for SIGTERM, 129 for SIGHUP).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Bad flags, preset or target (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Something failed while running (exit 1).
    #[error("{0}")]
    Failed(String),
}

/// A plan that cannot be built is bad input.
impl From<PlanError> for AppError {
    fn from(e: PlanError) -> Self {
        AppError::Usage(e.to_string())
    }
}

/// A result file that cannot be read is bad input.
impl From<ResultFileError> for AppError {
    fn from(e: ResultFileError) -> Self {
        AppError::Usage(e.to_string())
    }
}

/// A target that cannot be used is bad input (nothing was measured); any
/// other failure of a run is a failure.
impl From<RunError> for AppError {
    fn from(e: RunError) -> Self {
        match e {
            e @ (RunError::Setup { .. } | RunError::Start { .. }) => AppError::Usage(e.to_string()),
            e => AppError::Failed(format!(
                "{e}; the runs finished before it are in the file if it could be written"
            )),
        }
    }
}

impl AppError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            AppError::Usage(_) => EXIT_USAGE,
            AppError::Failed(_) => EXIT_RUN_ERRORS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_core::error::TargetError;

    /// The exit code follows the error's type: an unusable target or a bad
    /// plan is bad input (2), a result that cannot be written is a failed
    /// run (1).
    #[test]
    fn exit_codes_follow_error_types() {
        let setup = RunError::Setup {
            target: "redis".into(),
            source: TargetError::NotInstalled {
                what: "`redis-server` is not on PATH".into(),
                package: "redis-server".into(),
            },
        };
        let e = AppError::from(setup);
        assert_eq!(e.exit_code(), EXIT_USAGE);
        assert!(
            e.to_string().contains("apt-get install redis-server"),
            "{e}"
        );
        let write = RunError::Write {
            path: "/x.json".into(),
            source: std::io::Error::other("disk full"),
            saved: None,
        };
        assert_eq!(AppError::from(write).exit_code(), EXIT_RUN_ERRORS);
        let plan = PlanError::Invalid {
            origin: "flag --clients".into(),
            message: "0 clients cannot run".into(),
        };
        assert_eq!(AppError::from(plan).exit_code(), EXIT_USAGE);
    }
}
