//! The durability table: per run that checked durability, what its fault
//! did to the writes (lost, recovered, the loss window, holes), how long
//! the server took to come back, and the measured class; and the disk
//! table: what reached the server's disk per write. Shared by the text,
//! Markdown and HTML reports.

use std::collections::BTreeMap;

use bakeoff_core::durability::DurabilityCheck;
use bakeoff_core::result::{ExperimentResult, RunResult, TargetRecord};
use bakeoff_core::units::{fmt_bytes, fmt_ns, fmt_rate};

/// Columns of the durability table.
pub const DURABILITY_HEAD: [&str; 14] = [
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
    "declared durable to",
];

/// The table's rows (head first), or `None` when no run checked
/// durability: a row per run, then, for every target and point run more
/// than once, a row of the spread over those runs.
pub fn durability_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![DURABILITY_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(|run| durability_row_of(r, run)));
    rows.extend(spread_rows(r.runs.iter()));
    (rows.len() > 1).then_some(rows)
}

/// The durability row of `run` of `r`, with what its settings declare.
pub fn durability_row_of(r: &ExperimentResult, run: &RunResult) -> Option<Vec<String>> {
    let mut row = durability_row(run)?;
    row.push(declared_cell(r, run));
    Some(row)
}

/// The class `run`'s settings declare, and whether the run kept its
/// promise: "power cut", or "power cut: BROKEN" when it lost acknowledged
/// writes through a fault its class promises to survive.
fn declared_cell(r: &ExperimentResult, run: &RunResult) -> String {
    let Some(declared) = crate::record_of(r, run).and_then(|t| t.durable_to) else {
        return "-".into();
    };
    match broken_promise(r, run) {
        Some(_) => format!("{declared}: BROKEN"),
        None => declared.to_string(),
    }
}

/// When `run` lost (or damaged) acknowledged writes through a fault its
/// settings' declared class promises to survive, what it lost: a measured
/// class weaker than the declared one. An interrupted run promises
/// nothing (its read-back may have stopped short).
pub fn broken_promise(r: &ExperimentResult, run: &RunResult) -> Option<String> {
    let (c, f) = (run.durability.as_ref()?, run.fault.as_ref()?);
    let declared = crate::record_of(r, run)?.durable_to?;
    let promised = declared >= f.kind.survived_by();
    (promised
        && run.status != bakeoff_core::result::RunStatus::Interrupted
        && !c.kept_every_acknowledged_write()
        && !c.losses_are_evictions())
    .then(|| {
        format!(
            "declared durable to {declared}, yet under {} it {}",
            f.kind.name(),
            c.verdict()
        )
    })
}

/// Rows of the spread over repeats: per target and point with more than
/// one checked run, each count as min / median / max, the class over them
/// all.
pub fn spread_rows<'a>(runs: impl Iterator<Item = &'a RunResult>) -> Vec<Vec<String>> {
    let mut groups: BTreeMap<(String, String), Vec<&RunResult>> = BTreeMap::new();
    // An interrupted run's read-back may have stopped short: it is in its
    // own row, not in a measured class.
    for run in runs.filter(|r| {
        r.durability.is_some() && r.status != bakeoff_core::result::RunStatus::Interrupted
    }) {
        let point: Vec<String> = run.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
        groups
            .entry((run.target.clone(), point.join(" ")))
            .or_default()
            .push(run);
    }
    groups
        .into_iter()
        .filter(|(_, runs)| runs.len() > 1)
        .map(|((target, point), runs)| {
            let checks: Vec<&DurabilityCheck> =
                runs.iter().filter_map(|r| r.durability.as_ref()).collect();
            let spread = |f: &dyn Fn(&DurabilityCheck) -> u64| {
                let mut v: Vec<u64> = checks.iter().map(|c| f(c)).collect();
                v.sort_unstable();
                format!("{} / {} / {}", v[0], v[v.len() / 2], v[v.len() - 1])
            };
            let mut throughput: Vec<f64> =
                runs.iter().map(|r| r.measure.throughput_per_s).collect();
            throughput.sort_by(f64::total_cmp);
            let median_secs = |f: &dyn Fn(&RunResult) -> Option<f64>| {
                let mut v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
                v.sort_by(f64::total_cmp);
                v.get(v.len() / 2)
                    .map(|s| format!("median {}", fmt_ns(s * 1e9)))
                    .unwrap_or_else(|| "-".into())
            };
            let kinds: Vec<&str> = runs
                .iter()
                .filter_map(|r| r.fault.as_ref().map(|f| f.kind.name()))
                .collect();
            vec![
                target,
                format!(
                    "{}(min / median / max of {})",
                    if point.is_empty() {
                        String::new()
                    } else {
                        format!("{point} ")
                    },
                    runs.len()
                ),
                format!("median {}", fmt_rate(throughput[throughput.len() / 2])),
                match kinds.first() {
                    Some(k) => format!("{k} × {}", kinds.len()),
                    None => "none".into(),
                },
                spread(&|c| c.acknowledged),
                spread(&|c| c.lost),
                spread(&|c| c.recovered),
                spread(&|c| c.unexpected),
                spread(&|c| c.corrupt),
                spread(&|c| c.holes),
                median_secs(&|r| r.fault.as_ref().and_then(|f| f.back_after_s)),
                median_secs(&|r| r.fault.as_ref().and_then(|f| f.recovered_after_s)),
                Class::over(&checks).text(),
                String::new(),
            ]
        })
        .collect()
}

/// What several checked runs of one setting under one kind of fault
/// showed: how many, the fewest and most writes lost, the widest window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Class {
    runs: usize,
    lost_min: u64,
    lost_max: u64,
    window_max_ns: Option<u64>,
    corrupt: u64,
}

impl Class {
    /// The class over `checks`.
    pub fn over(checks: &[&DurabilityCheck]) -> Self {
        Class {
            runs: checks.len(),
            lost_min: checks.iter().map(|c| c.lost).min().unwrap_or(0),
            lost_max: checks.iter().map(|c| c.lost).max().unwrap_or(0),
            window_max_ns: checks.iter().filter_map(|c| c.loss_window_ns).max(),
            corrupt: checks.iter().map(|c| c.corrupt).sum(),
        }
    }

    /// "kept every acknowledged write (3 runs)", "lost 12–40 (window ≤ 1.00 s, 3 runs)".
    pub fn text(&self) -> String {
        let runs = if self.runs == 1 {
            "1 run".to_string()
        } else {
            format!("{} runs", self.runs)
        };
        let corrupt = if self.corrupt > 0 {
            format!(", {} corrupt", self.corrupt)
        } else {
            String::new()
        };
        if self.lost_max == 0 {
            return format!("kept every acknowledged write ({runs}{corrupt})");
        }
        let lost = if self.lost_min == self.lost_max {
            self.lost_max.to_string()
        } else {
            format!("{}–{}", self.lost_min, self.lost_max)
        };
        let window = self
            .window_max_ns
            .map(|w| format!("window ≤ {}, ", fmt_ns(w as f64)))
            .unwrap_or_default();
        format!("lost {lost} ({window}{runs}{corrupt})")
    }
}

/// Settings that decide what a crash or a power cut costs, by the names
/// targets record them under (as set, or as read back from the server).
const DURABILITY_SETTINGS: &[&str] = &[
    "persistence",
    "appendonly",
    "appendfsync",
    "save",
    "innodb_flush_log_at_trx_commit",
    "log_bin",
    "sync_binlog",
    "innodb_doublewrite",
    "synchronous_commit",
    "fsync",
    "sync",
    "synchronous",
    "journal_mode",
];

/// A setting: the target without its variant, and its durability settings.
fn setting_of(record: &TargetRecord) -> String {
    let base = record.name.split('[').next().unwrap_or(&record.name);
    let mut key = base.to_string();
    for k in DURABILITY_SETTINGS {
        if let Some(v) = record.settings.get(*k) {
            key.push_str(&format!(" {k}={v}"));
        }
    }
    key
}

/// The durability classes measured in a set of results, per setting and
/// kind of fault, so that any run with the same setting (in any of the
/// results) can show what its setting is measured to keep.
#[derive(Debug, Default)]
pub struct Classes(BTreeMap<String, BTreeMap<&'static str, Vec<DurabilityCheck>>>);

impl Classes {
    /// Collects every checked run with a fault in `results`.
    pub fn from_results<'a>(results: impl Iterator<Item = &'a ExperimentResult>) -> Self {
        let mut classes = Classes::default();
        for r in results {
            // An interrupted run's read-back may have stopped short: no
            // class is measured from it.
            for run in r
                .runs
                .iter()
                .filter(|run| run.status != bakeoff_core::result::RunStatus::Interrupted)
            {
                let (Some(c), Some(f), Some(t)) = (
                    &run.durability,
                    &run.fault,
                    r.targets.iter().find(|t| t.name == run.target),
                ) else {
                    continue;
                };
                classes
                    .0
                    .entry(setting_of(t))
                    .or_default()
                    .entry(f.kind.name())
                    .or_default()
                    .push(c.clone());
            }
        }
        classes
    }

    /// Whether no class is known.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The measured class of `run`'s setting in `r`, if one is known:
    /// "kill: kept every acknowledged write (3 runs); power-cut: lost 40 (...)".
    pub fn of(&self, r: &ExperimentResult, run: &RunResult) -> Option<String> {
        let t = r.targets.iter().find(|t| t.name == run.target)?;
        let by_fault = self.0.get(&setting_of(t))?;
        Some(
            by_fault
                .iter()
                .map(|(kind, checks)| {
                    let checks: Vec<&DurabilityCheck> = checks.iter().collect();
                    format!("{kind}: {}", Class::over(&checks).text())
                })
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

/// The head of the column the summary table gains when a class is known.
pub const CLASS_HEAD: &str = "durability (measured)";

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
        if run.status == bakeoff_core::result::RunStatus::Interrupted {
            // Unread writes are neither kept nor lost: no class.
            format!("none: interrupted, {} unread", c.unread)
        } else {
            c.verdict()
        },
    ])
}

/// Columns of the disk table: the device's own count first (what the
/// answers use), then the server's own counters. A column no run could
/// fill leaves the table (fsyncs, for one, where the filesystem has no
/// tracepoint bakeoff knows; the run notes say why).
pub const DISK_HEAD: [&str; 12] = [
    "target",
    "point",
    "writes",
    "disk / write",
    "amplification",
    "disk requests / write",
    "disk flushes / write",
    "fsyncs / write",
    "idle time taken off",
    "pages dirtied / write",
    "file writes / write",
    "other write calls / write (sockets, logs)",
];

/// The disk table's rows (head first), without the columns no run
/// filled, or `None` when no run measured its server's disk.
pub fn disk_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![DISK_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(disk_row));
    if rows.len() == 1 {
        return None;
    }
    let filled: Vec<bool> = (0..DISK_HEAD.len())
        .map(|c| c < 3 || rows[1..].iter().any(|row| row[c] != "-"))
        .collect();
    Some(
        rows.into_iter()
            .map(|row| {
                row.into_iter()
                    .zip(&filled)
                    .filter(|(_, keep)| **keep)
                    .map(|(cell, _)| cell)
                    .collect()
            })
            .collect(),
    )
}

/// The disk row of `run`, if its server's disk was measured.
pub fn disk_row(run: &RunResult) -> Option<Vec<String>> {
    let d = run.disk.as_ref()?;
    let dev = d.device.as_ref();
    let opt = |v: Option<f64>| v.map(|f| format!("{f:.2}")).unwrap_or_else(|| "-".into());
    let bytes = |v: Option<f64>| v.map(fmt_bytes).unwrap_or_else(|| "-".into());
    Some(vec![
        run.target.clone(),
        crate::run_point_label(run),
        d.writes.to_string(),
        bytes(d.to_storage_per_write()),
        dev.and_then(|v| v.write_amplification)
            .map(|a| format!("{a:.1}×"))
            .unwrap_or_else(|| "-".into()),
        opt(dev.and_then(|v| v.requests_per_write)),
        opt(dev.and_then(|v| v.flushes_per_write)),
        opt(d.fsyncs_per_write),
        dev.filter(|v| v.idle_s > 0.0)
            .map(|v| {
                format!(
                    "{} ({:.1} s idle)",
                    fmt_bytes(v.idle_written_bytes as f64 * v.measured_s / v.idle_s),
                    v.idle_s
                )
            })
            .unwrap_or_else(|| "-".into()),
        bytes(d.dirtied_bytes_per_write),
        opt(d.file_writes_per_write),
        opt(d.socket_writes_per_write),
    ])
}

/// What the disk table cannot show of a run, as notes: other processes
/// wrote to the device meanwhile, or its fsyncs were not counted, and why.
pub fn disk_notes(run: &RunResult) -> Vec<String> {
    let Some(d) = run.disk.as_ref() else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if let Some(dev) = d.device.as_ref().filter(|v| v.others_wrote()) {
        notes.push(format!(
            "other processes wrote while it was measured: their own counters claim {} of the {} {} wrote; disk per write counts what the device wrote",
            fmt_bytes(dev.others_claimed_bytes as f64),
            fmt_bytes(dev.written_bytes as f64),
            dev.name
        ));
    }
    if let Some(why) = &d.fsyncs_not_counted {
        notes.push(format!("fsyncs not counted: {why}"));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_core::plan::FaultKind;
    use bakeoff_core::result::FaultRecord;

    fn mock() -> ExperimentResult {
        serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
            .expect("the mock snapshot is a result")
    }

    fn checked(run: &mut RunResult, lost: u64, window_ms: u64) {
        run.fault = Some(FaultRecord {
            kind: FaultKind::PowerCut,
            at_s: 2.0,
            back_after_s: Some(0.05),
            recovered_after_s: Some(1.0),
            error: None,
        });
        run.durability = Some(DurabilityCheck {
            acknowledged: 1000 + lost,
            lost,
            loss_window_ns: (lost > 0).then_some(window_ms * 1_000_000),
            ..DurabilityCheck::default()
        });
    }

    /// A class measured in one result shows next to the throughput of a run
    /// with the same setting in another, and not next to another setting.
    #[test]
    fn a_measured_class_follows_its_setting_across_results() {
        let mut crash = mock();
        crash.targets[0]
            .settings
            .insert("sync".into(), "nosync".into());
        checked(&mut crash.runs[0], 40, 900);
        checked(&mut crash.runs[1], 10, 300);
        let mut other = mock();
        other.targets[0]
            .settings
            .insert("sync".into(), "nosync".into());
        let classes = Classes::from_results([&crash, &other].into_iter());
        assert_eq!(
            classes.of(&other, &other.runs[3]).as_deref(),
            Some("power-cut: lost 10–40 (window ≤ 900.00 ms, 2 runs)")
        );
        other.targets[0]
            .settings
            .insert("sync".into(), "full".into());
        assert_eq!(classes.of(&other, &other.runs[3]), None);
        let (head, rows) = crate::summary_table(
            &[&crash, &other],
            other.runs.iter().map(|r| (1, r.target.as_str(), r)),
        );
        assert_eq!(head.last().map(String::as_str), Some(CLASS_HEAD));
        assert!(rows.iter().all(|r| r.last().unwrap() == "-"), "{rows:?}");
        let (head, _) = crate::summary_table(&[&other], other.runs.iter().map(|r| (0, "x", r)));
        assert_ne!(head.last().map(String::as_str), Some(CLASS_HEAD));
    }

    /// A run that lost acknowledged writes through a fault its declared
    /// class promises to survive is flagged, in the table and the notes;
    /// one whose class promises nothing there, or that was interrupted, is
    /// not.
    #[test]
    fn a_loss_its_class_promised_to_survive_is_flagged() {
        use bakeoff_core::durability::DurableTo;
        let mut r = mock();
        checked(&mut r.runs[0], 40, 900);
        checked(&mut r.runs[1], 0, 0);
        r.targets[0].durable_to = Some(DurableTo::PowerCut);
        let broken = broken_promise(&r, &r.runs[0]).expect("a broken promise");
        assert!(
            broken.contains("declared durable to power cut, yet under power-cut it lost 40"),
            "{broken}"
        );
        assert_eq!(broken_promise(&r, &r.runs[1]), None);
        let rows = durability_rows(&r).unwrap();
        assert_eq!(rows[1].last().unwrap(), "power cut: BROKEN");
        assert_eq!(rows[2].last().unwrap(), "power cut");
        assert!(crate::run_notes(&r)
            .iter()
            .any(|n| n.contains("weaker than declared")));
        // A process-crash class promises nothing under a power cut.
        r.targets[0].durable_to = Some(DurableTo::ProcessCrash);
        assert_eq!(broken_promise(&r, &r.runs[0]), None);
        // An interrupted run's read-back may have stopped short.
        r.targets[0].durable_to = Some(DurableTo::PowerCut);
        r.runs[0].status = bakeoff_core::result::RunStatus::Interrupted;
        assert_eq!(broken_promise(&r, &r.runs[0]), None);
    }

    /// Repeats of one target and point get a row of min / median / max.
    #[test]
    fn repeats_get_a_spread_row() {
        let mut r = mock();
        // The two repeats of clients=1 first (the snapshot ran in rounds).
        r.runs
            .sort_by_key(|x| (x.point.get("clients").cloned(), x.repeat));
        checked(&mut r.runs[0], 0, 0);
        checked(&mut r.runs[1], 7, 500);
        let rows = durability_rows(&r).unwrap();
        assert_eq!(rows.len(), 1 + 2 + 1, "{rows:?}");
        let spread = &rows[3];
        assert_eq!(spread[1], "clients=1 (min / median / max of 2)");
        assert_eq!(spread[3], "power-cut × 2");
        assert_eq!(spread[5], "0 / 7 / 7");
        assert_eq!(spread[12], "lost 0–7 (window ≤ 500.00 ms, 2 runs)");
    }
}
