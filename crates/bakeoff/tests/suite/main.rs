//! bakeoff's integration tests, against the real servers and the built
//! binary: one test binary with a module per subject, where each subject
//! was a binary of its own. Each of those 27 binaries compiled the shared
//! fixtures again and linked every dependency again; one binary links
//! once. Its tests share the two cores under one lock: every test takes
//! [`common::alone`] (a test that measures the machine: no other test
//! beside it) or [`common::beside_others`] (any other), which
//! [`every_test_takes_the_lock`] holds them to.
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

/// Every test of the suite takes the lock, one way or the other: a test
/// that took neither would run beside one that must run alone (which
/// separate binaries once hid: a disk test counting the device's bytes
/// failed beside another subject's writes when they became one binary).
#[test]
fn every_test_takes_the_lock() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let mut unguarded = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[test]" {
                continue;
            }
            // The test's body: to the closing brace in the first column.
            let name = lines[i + 1].trim();
            if name.contains("every_test_takes_the_lock") {
                continue;
            }
            let mut body = lines[i + 1..].iter().take_while(|l| **l != "}");
            if !body.any(|l| l.contains("alone()") || l.contains("beside_others()")) {
                unguarded.push(format!("{}: {name}", entry.file_name().to_string_lossy()));
            }
        }
    }
    assert!(
        unguarded.is_empty(),
        "tests that take neither alone() nor beside_others(): {unguarded:#?}"
    );
}
