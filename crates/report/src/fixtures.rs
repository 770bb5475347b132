//! Results shaped like real ones, for tests of the reports (this crate's
//! and the binary's): built from the mock run's snapshot.

use bakeoff_core::durability::DurableTo;
use bakeoff_core::result::{
    Bottleneck, BottleneckKind, ExperimentResult, ResourceSample, TargetRecord,
};

/// The default comparison's shape on the mock: eleven targets in four
/// groups (three durable servers, two in-memory ones, five engines
/// that survive a crash, one that keeps writes in memory), six
/// repeats each, every run with what limited it and a note, and the
/// five figures the verdict ranks by.
pub fn default_shaped() -> ExperimentResult {
    let mut r: ExperimentResult =
        serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
            .expect("the mock snapshot is a result");
    let template = r.runs[0].clone();
    let kinds = [
        ("mariadb", "managed", DurableTo::PowerCut),
        ("postgres", "managed", DurableTo::PowerCut),
        ("handlersocket", "managed", DurableTo::PowerCut),
        ("redis", "managed", DurableTo::MemoryOnly),
        ("memcached", "managed", DurableTo::MemoryOnly),
        ("lmdb", "embedded", DurableTo::ProcessCrash),
        ("tokyo-hash", "embedded", DurableTo::ProcessCrash),
        ("tokyo-table", "embedded", DurableTo::ProcessCrash),
        ("sqlite", "embedded", DurableTo::ProcessCrash),
        ("rocksdb", "embedded", DurableTo::ProcessCrash),
        ("tokyo-btree", "embedded", DurableTo::MemoryOnly),
    ];
    r.targets = kinds
        .iter()
        .map(|(name, mode, d)| TargetRecord {
            name: name.to_string(),
            mode: mode.to_string(),
            durable_to: Some(*d),
            version: Some(format!("{name} 1.0")),
            ..TargetRecord::default()
        })
        .collect();
    let mut index = 0;
    r.runs = Vec::new();
    for repeat in 0..6 {
        for (i, (name, mode, _)) in kinds.iter().enumerate() {
            let mut run = template.clone();
            run.index = index;
            index += 1;
            run.target = name.to_string();
            run.point.clear();
            run.repeat = repeat;
            let scale = (1.0 + i as f64) * (1.0 + 0.01 * f64::from(repeat));
            run.measure.throughput_per_s = 1000.0 * scale;
            // Every figure the verdict ranks by: client and server
            // CPU per operation, memory per record, disk per write.
            run.client.thread_busy_percent = vec![40.0 + scale];
            run.resources = (2..=4)
                .map(|t| ResourceSample {
                    t_s: f64::from(t),
                    cpu_percent: 30.0 * scale,
                    rss_bytes: 10_000_000 * (i as u64 + 1),
                    pss_bytes: Some(9_000_000 * (i as u64 + 1)),
                    ..ResourceSample::default()
                })
                .collect();
            // What the disk wrote per write: nothing for the servers that
            // keep writes in memory, so their group has no disk line.
            let memory_only = matches!(*name, "redis" | "memcached");
            run.disk = Some(bakeoff_core::result::DiskPerWrite {
                writes: 10_000,
                device: Some(bakeoff_core::result::DeviceWrites {
                    bytes_per_write: Some(if memory_only { 0.0 } else { 100.0 * scale }),
                    ..Default::default()
                }),
                ..Default::default()
            });
            run.message = Some(
                "durability check: kept every acknowledged write of 33915 acknowledged".into(),
            );
            let (kind, line) = if *mode == "embedded" {
                (
                    BottleneckKind::Client,
                    "bakeoff: its busiest thread at 99 % (the engine runs inside it)",
                )
            } else {
                (BottleneckKind::MachineCpu, "the machine's CPUs: 94 % of 2 core(s) in use (the server 122 %, bakeoff 58 % of a core)")
            };
            run.bottleneck = Some(Bottleneck {
                kind,
                line: line.into(),
                evidence: vec!["bakeoff's busiest thread 58 % busy (1 thread(s), 58 % of a core in all); the server's busiest thread 91 % of a core, all its threads 122 % (medians of the measured phase's seconds); the machine's CPUs 94 % used of 2 core(s)".into()],
            });
            r.runs.push(run);
        }
    }
    r.summaries = bakeoff_core::summary::summarise(&r);
    r
}

/// The mock run's result file, kept as the snapshot of the suite.
pub fn mock_result() -> ExperimentResult {
    serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
        .expect("the mock snapshot is a result")
}
