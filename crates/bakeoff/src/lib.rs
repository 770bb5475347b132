//! # bakeoff
//!
//! The command-line tool: argument parsing ([`cli`]) and the subcommands
//! ([`app`]). `main` only parses and calls [`app::main`]; tests call the
//! same functions.
//!
//! ## Layout
//!
//! - [`cli`]: flags with their units and defaults (clap).
//! - [`app`]: `run`, `list`, `report`, `schema`; exit codes.
//! - [`presets`]: the built-in presets, found by name.
//! - [`progress`]: the live progress line on a terminal.

pub mod app;
pub mod cli;
pub mod presets;
pub mod progress;
