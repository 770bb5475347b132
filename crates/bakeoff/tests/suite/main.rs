//! bakeoff's integration tests, against the real servers and the built
//! binary: one test binary with a module per subject, where each subject
//! was a binary of its own. Each of those 27 binaries compiled the shared
//! fixtures again and linked every dependency again; one binary links
//! once, and its tests share the two cores under one lock
//! ([`common::alone`]) rather than binary by binary.
//!
//! Run one subject with `cargo test --release -p bakeoff --test suite
//! faults::`, one test by its name as before.

mod common;

mod background;
mod bad_input;
mod cluster;
mod conservation;
mod databases;
mod disk;
mod docs;
mod durability;
mod embedded;
mod faults;
mod fit;
mod handlersocket;
mod kubernetes;
mod link;
mod machine_cpu;
mod mock_snapshots;
mod open_loop;
mod presets;
mod replay;
mod replication;
mod scans;
mod server_cpus;
mod shards;
mod statistics;
mod topology;
mod verification;
mod ycsb;
