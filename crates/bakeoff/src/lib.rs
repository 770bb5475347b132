//! # bakeoff
//!
//! The command-line tool: argument parsing ([`cli`]) and the subcommands
//! ([`app`]). `main` only parses and calls [`app::main`]; tests call the
//! same functions.
//!
//! ## Layout
//!
//! - [`cli`]: flags with their units and defaults (clap).
//! - [`capture`]: a live Redis's traffic recorded into a trace.
//! - [`app`]: `run`, `list`, `report`, `schema`; exit codes.
//! - [`error`]: why a command failed, and its exit code.
//! - [`planning`]: a run's plan from its preset and flags.
//! - [`kubernetes`]: the manifests of a run as shards on a cluster.
//! - [`presets`]: the built-in presets, found by name.
//! - [`progress`]: the live progress line on a terminal.
//! - [`signals`]: Ctrl-C, SIGTERM, SIGHUP and SIGQUIT end a run cleanly.

/// `eprintln!` that never panics: a line for a standard error nobody reads
/// any more (`bakeoff run 2>&1 | head -1`) is dropped and the run goes on
/// to write its result.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// `eprint!` that never panics (see `say!`).
macro_rules! say_inline {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}

pub mod app;
pub mod capture;
pub mod cli;
pub mod error;
pub mod kubernetes;
pub mod planning;
pub mod presets;
pub mod progress;
pub mod signals;
