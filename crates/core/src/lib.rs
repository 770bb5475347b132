//! # bakeoff-core
//!
//! Everything of bakeoff that is not a database: the plan, the workload
//! generators, the timing harness and its I/O loops, the runner, the
//! recorder and the result model. Drivers plug in as a [`driver::Codec`]
//! (byte protocols, run by [`net`]) or a [`session::Session`] (client
//! libraries and in-process engines, run by [`async_loop`] and
//! [`embedded`]); all four loops, the mock's included, hand every request
//! and completion to one [`harness::Harness`]. Nothing here depends on a
//! database client.
//!
//! ## Layout
//!
//! - [`units`]: parsing and formatting of durations, sizes, rates.
//! - [`plan`]: raw preset and flags → validated [`plan::Plan`]; every
//!   workload parameter declared once in [`plan::params`].
//! - [`suggest`]: "did you mean" for misspelt names.
//! - [`profile`]: the `profile` record and searches of 000-search.
//! - [`workload`]: seeded key, value-size and operation generators.
//! - [`value`]: self-verifying values (header + pooled payload).
//! - [`recorder`]: per-worker HDR histograms, counters, intervals.
//! - [`client`]: one client's request stream.
//! - [`harness`]: one per worker: request streams, phases, value checks,
//!   the meter, Little's law; the loops below only move bytes or calls.
//! - [`driver`]: the contract between runner and drivers.
//! - [`durability`]: what happened to every write around a fault (lost,
//!   recovered, holes, loss window).
//! - [`session`]: the call contract of client libraries and engines, and
//!   the one dispatch of an operation to a call.
//! - [`net`]: the io_uring/epoll loop for byte-protocol codecs, on one
//!   node or on shards ([`ketama`] picks the node of a key).
//! - [`async_loop`]: the loop for targets behind async client libraries.
//! - [`embedded`]: the loop for in-process engines.
//! - [`runner`]: jobs on worker threads, experiments over targets.
//! - [`result`]: the versioned result file.
//! - [`stats`]: distribution-free intervals, the Mann–Whitney test,
//!   steadiness of a series of seconds.
//! - [`summary`]: one row per target and point, each headline figure's
//!   median over the repeats with its 95 % interval.
//! - [`mock`]: a scripted target on a simulated clock, for snapshot tests.
//! - [`environment`]: what machine the numbers come from.

pub mod async_loop;
pub mod client;
pub mod disk;
pub mod driver;
pub mod durability;
pub mod embedded;
pub mod encoding;
pub mod environment;
pub mod error;
pub mod find;
pub mod harness;
pub mod headline;
pub mod inserts;
pub mod ketama;
pub mod keys;
pub mod merge;
pub mod mock;
pub mod net;
pub mod pacing;
pub mod plan;
pub mod profile;
pub mod readings;
pub mod recorder;
pub mod replay;
pub mod result;
pub mod runner;
pub mod scan;
pub mod session;
pub mod slots;
pub mod stale;
pub mod stats;
pub mod suggest;
pub mod summary;
pub mod target;
pub mod trace;
pub mod units;
pub mod value;
pub mod workload;
