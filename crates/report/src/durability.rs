//! The durability table: per run that checked durability, what its fault
//! did to the writes (lost, recovered, the loss window, holes), how long
//! the server took to come back, and the measured class; and the disk
//! table: what reached the server's disk per write. Shared by the text,
//! Markdown and HTML reports.

use bakeoff_core::result::{ExperimentResult, RunResult};
use bakeoff_core::units::{fmt_bytes, fmt_ns, fmt_rate};

/// Columns of the durability table.
pub const DURABILITY_HEAD: [&str; 13] = [
    "target",
    "point",
    "throughput",
    "fault",
    "acknowledged",
    "lost",
    "recovered",
    "unexpected",
    "corrupt",
    "holes",
    "back after",
    "90 % after",
    "measured class",
];

/// The table's rows (head first), or `None` when no run checked
/// durability.
pub fn durability_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![DURABILITY_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(durability_row));
    (rows.len() > 1).then_some(rows)
}

/// The row of `run`, if it checked durability.
pub fn durability_row(run: &RunResult) -> Option<Vec<String>> {
    let c = run.durability.as_ref()?;
    let secs = |s: Option<f64>| s.map(|s| fmt_ns(s * 1e9)).unwrap_or_else(|| "-".into());
    let (fault, back, recovered) = match &run.fault {
        Some(f) => (
            format!("{}@{:.1}s", f.kind.name(), f.at_s),
            secs(f.back_after_s),
            secs(f.recovered_after_s),
        ),
        None => ("none".into(), "-".into(), "-".into()),
    };
    Some(vec![
        run.target.clone(),
        crate::run_point_label(run),
        fmt_rate(run.measure.throughput_per_s),
        fault,
        c.acknowledged.to_string(),
        c.lost.to_string(),
        c.recovered.to_string(),
        c.unexpected.to_string(),
        c.corrupt.to_string(),
        c.holes.to_string(),
        back,
        recovered,
        c.verdict(),
    ])
}

/// Columns of the disk table.
pub const DISK_HEAD: [&str; 8] = [
    "target",
    "point",
    "throughput",
    "writes",
    "bytes to storage / write",
    "write syscalls / write (files and sockets)",
    "file writes / write",
    "fsyncs / write",
];

/// The disk table's rows (head first), or `None` when no run measured its
/// server's disk.
pub fn disk_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![DISK_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(disk_row));
    (rows.len() > 1).then_some(rows)
}

/// The disk row of `run`, if its server's disk was measured. Where the
/// power-cut layer counted the data directory's file I/O, bytes and
/// writes are its exact counts.
pub fn disk_row(run: &RunResult) -> Option<Vec<String>> {
    let d = run.disk.as_ref()?;
    let opt = |v: Option<f64>| v.map(|f| format!("{f:.2}")).unwrap_or_else(|| "-".into());
    Some(vec![
        run.target.clone(),
        crate::run_point_label(run),
        fmt_rate(run.measure.throughput_per_s),
        d.writes.to_string(),
        d.file_bytes_per_write
            .or(d.bytes_per_write)
            .map(fmt_bytes)
            .unwrap_or_else(|| "-".into()),
        opt(d.write_calls_per_write),
        opt(d.file_writes_per_write),
        opt(d.fsyncs_per_write),
    ])
}
