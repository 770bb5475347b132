//! The engines' work besides serving: each kind of work a run's engine
//! did, and the tail of the measured seconds it did it in beside the
//! others'.

use bakeoff_core::result::{BackgroundBand, ExperimentResult};
use bakeoff_core::units::fmt_ns;

use crate::model::Rows;
use crate::view::{fmt_seconds, measure_start, run_label};

/// The note of the background-work table.
pub const BACKGROUND_NOTE: &str = "What each engine did besides serving while the measure job ran (warm-up included), as it tells: Redis's INFO persistence and stats every 100 ms (bgsave, AOF rewrite, and each fork, which stops the main thread), PostgreSQL's log (every checkpoint and autovacuum, with their own times), RocksDB's properties every 100 ms (compactions, flushes, write stops and delays), MariaDB's InnoDB status every second (pages flushed, a redo log near full), memcached's stats every second, SQLite's WAL checkpoints (each timed by the commit that runs it). Work seen running is timed from the first look that saw it to the first that did not; work seen only as finished between two looks is a mark. `asked` is work bakeoff asked for (--provoke). The same stretches are shaded on the timeline charts.";

/// The note of the tail table.
pub const TAIL_NOTE: &str = "The measured seconds that any stretch of background work overlaps, every operation in them merged, beside the other measured seconds: where the tail grows inside, the work is what the tail waits on. Seconds, not the work's own instants: a short fork colours its whole second.";

/// One row per run and kind of work: how many, their total and longest
/// time, and what the longest did; a run whose engine tells nothing says
/// why.
pub fn background_rows(r: &ExperimentResult) -> Option<Rows> {
    let mut rows = vec![[
        "run",
        "target",
        "work",
        "times",
        "total",
        "longest",
        "the longest",
    ]
    .map(String::from)
    .to_vec()];
    for run in &r.runs {
        let Some(work) = &run.background else {
            continue;
        };
        let target = run_label(run);
        if work.bands.is_empty() {
            let said = if work.every_ms == 0 {
                work.source.clone()
            } else {
                format!("none seen ({})", work.source)
            };
            let mut row = vec![run.index.to_string(), target, said];
            row.extend(["-"; 4].map(String::from));
            rows.push(row);
            continue;
        }
        let mut kinds: Vec<&str> = Vec::new();
        for b in &work.bands {
            if !kinds.contains(&b.what.as_str()) {
                kinds.push(&b.what);
            }
        }
        for what in kinds {
            let of: Vec<&BackgroundBand> = work.bands.iter().filter(|b| b.what == what).collect();
            let length = |b: &BackgroundBand| b.to_s - b.from_s;
            let total: f64 = of.iter().map(|b| length(b)).sum();
            let longest = of
                .iter()
                .max_by(|a, b| length(a).total_cmp(&length(b)))
                .expect("a kind has a band");
            rows.push(vec![
                run.index.to_string(),
                target.clone(),
                what.to_string(),
                of.len().to_string(),
                fmt_seconds(total),
                fmt_seconds(length(longest)),
                format!(
                    "at {}: {}",
                    fmt_seconds(longest.from_s - measure_start(run)),
                    longest.detail
                ),
            ]);
        }
    }
    (rows.len() > 1).then_some(rows)
}

/// One row per run whose engine did background work in the measured
/// phase: the p99 of the seconds it overlaps beside the others'.
pub fn tail_rows(r: &ExperimentResult) -> Option<Rows> {
    let mut rows = vec![[
        "run",
        "target",
        "seconds with work",
        "p99 in them",
        "seconds without",
        "p99 in them",
        "inside / outside",
    ]
    .map(String::from)
    .to_vec()];
    for run in &r.runs {
        let Some(work) = &run.background else {
            continue;
        };
        let Some(inside) = &work.inside else { continue };
        let outside = work.outside.as_ref();
        rows.push(vec![
            run.index.to_string(),
            run_label(run),
            inside.seconds.to_string(),
            fmt_ns(inside.p99_ns as f64),
            outside.map_or_else(|| "0".into(), |o| o.seconds.to_string()),
            outside.map_or_else(|| "-".into(), |o| fmt_ns(o.p99_ns as f64)),
            outside.filter(|o| o.p99_ns > 0).map_or_else(
                || "-".into(),
                |o| format!("{:.2} ×", inside.p99_ns as f64 / o.p99_ns as f64),
            ),
        ]);
    }
    (rows.len() > 1).then_some(rows)
}
