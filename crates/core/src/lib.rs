//! # bakeoff-core
//!
//! Everything of bakeoff that is not a database: the plan, the workload
//! generators, the runner, the recorder and the result model. Drivers plug
//! in through [`driver::Driver`] (and, for byte protocols, [`driver::Codec`]
//! with the shared network loop in [`net`]); nothing here depends on a
//! database client.
//!
//! ## Layout
//!
//! - [`units`]: parsing and formatting of durations, sizes, rates.
//! - [`plan`]: raw preset and flags → validated [`plan::Plan`].
//! - [`profile`]: the `profile` record and searches of 000-search.
//! - [`workload`]: seeded key, value-size and operation generators.
//! - [`value`]: self-verifying values (header + pooled payload).
//! - [`recorder`]: per-worker HDR histograms, counters, intervals.
//! - [`async_loop`]: the loop for targets behind async client libraries.
//! - [`client`]: one client's request stream, shared by every loop.
//! - [`driver`]: the contract between runner and drivers.
//! - [`embedded`]: the loop for in-process engines.
//! - [`net`]: the epoll network loop shared by byte-protocol drivers.
//! - [`runner`]: jobs on worker threads, experiments over targets.
//! - [`result`]: the versioned result file.
//! - [`mock`]: a deterministic scripted driver for snapshot tests.
//! - [`environment`]: what machine the numbers come from.

pub mod async_loop;
pub mod client;
pub mod driver;
pub mod embedded;
pub mod environment;
pub mod error;
pub mod mock;
pub mod net;
pub mod plan;
pub mod profile;
pub mod recorder;
pub mod result;
pub mod runner;
pub mod units;
pub mod value;
pub mod workload;
