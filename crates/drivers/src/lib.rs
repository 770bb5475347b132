//! # bakeoff-drivers
//!
//! The targets bakeoff can measure. Each target is one module behind a
//! cargo feature (on by default) plus one line in [`registry`]. Byte
//! protocols are spoken through lean codecs of our own ([`codec`]) run as a
//! `bakeoff_core::net::CodecDriver`; client libraries and in-process
//! engines through `bakeoff_core::session::Session`s. Every one runs under
//! core's harness: drivers contain no timing code.
//!
//! ## Layout
//!
//! - [`codec`]: RESP, memcache text, memcache binary.
//! - [`kind`]: what a target is ([`kind::TargetKind`]), which each target
//!   module implements.
//! - [`registry`]: the list of those implementations, as the plan and the
//!   runner see it.
//! - [`redis`], [`memcached`], [`postgres`], [`mariadb`], [`handlersocket`],
//!   `mongodb`: the targets, managed or external.
//! - [`admin`]: blocking request/reply helpers for counters and versions.
//! - [`link`]: the relay that puts a round-trip time between clients and
//!   a server (`--link`).
//! - [`nodes`]: several servers of one kind as one target: shards (keys
//!   spread by ketama) or a primary and a replica (`--topology`).
//! - [`settings`]: typed reading of `[servers.NAME]` tables.
//! - [`sql`]: what the SQL targets share (their codecs use it too, so it
//!   needs no feature); `sql_server`, the skeleton their targets share.
//! - [`embedded`]: engines opened in-process (Tokyo Cabinet, …), loaded
//!   with [`dl`] at run time.

pub mod admin;
#[cfg(any(feature = "postgres", feature = "mariadb", feature = "mongodb"))]
pub mod async_target;
pub mod codec;
pub mod dl;
pub mod embedded;
#[cfg(feature = "mariadb")]
pub mod handlersocket;
pub mod kind;
pub mod link;
#[cfg(feature = "mariadb")]
pub mod mariadb;
#[cfg(feature = "memcached")]
pub mod memcached;
#[cfg(feature = "mongodb")]
pub mod mongodb;
#[cfg(any(
    feature = "redis",
    feature = "memcached",
    feature = "postgres",
    feature = "mariadb"
))]
pub mod nodes;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "redis")]
mod redis_cluster;
pub mod registry;
pub mod running;
pub mod settings;
pub mod sql;
#[cfg(any(feature = "postgres", feature = "mariadb"))]
mod sql_server;
