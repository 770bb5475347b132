//! # bakeoff-report
//!
//! Renders a result file. JSON is canonical; every other format is
//! regenerated from it, so `bakeoff report result.json` shows exactly what
//! `bakeoff run` showed.
//!
//! ## Layout
//!
//! - [`Exporter`]: the one trait every format implements.
//! - [`JsonExporter`]: the result file itself.
//! - [`TextExporter`]: the summary table printed at the end of a run.

use std::io::Write;

use bakeoff_core::result::{ExperimentResult, RunResult};
use bakeoff_core::units::{fmt_ns, fmt_per_s, fmt_rate};

/// A report format. Implementations only read the result; they never
/// measure or recompute what the runner measured.
pub trait Exporter {
    /// Writes `result` in this format.
    fn export(&self, result: &ExperimentResult, out: &mut dyn Write) -> std::io::Result<()>;
}

/// The canonical JSON result file.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, result: &ExperimentResult, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, result).map_err(std::io::Error::other)?;
        writeln!(out)
    }
}

/// A side-by-side table of the runs, with units, plus checks and warnings.
pub struct TextExporter;

fn point_label(run: &RunResult) -> String {
    let mut s: Vec<String> = run.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if run.repeat > 0 {
        s.push(format!("#{}", run.repeat + 1));
    }
    if s.is_empty() {
        "-".into()
    } else {
        s.join(" ")
    }
}

fn table(rows: &[Vec<String>], out: &mut dyn Write) -> std::io::Result<()> {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map(|s| s.chars().count()).unwrap_or(0))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c < 2 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            line.push_str("  ");
        }
        writeln!(out, "{}", line.trim_end())?;
        if i == 0 {
            writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1))
            )?;
        }
    }
    Ok(())
}

impl Exporter for TextExporter {
    fn export(&self, r: &ExperimentResult, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "experiment {} — {} run(s), status {}",
            r.plan.name,
            r.runs.len(),
            r.status
        )?;
        let mut rows = vec![[
            "target",
            "point",
            "throughput",
            "mean",
            "p50",
            "p99",
            "p99.9",
            "max",
            "errors",
            "misses",
            "client busy",
            "load",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()];
        for run in &r.runs {
            let m = &run.measure;
            let busy = run
                .client
                .thread_busy_percent
                .iter()
                .cloned()
                .fold(0.0, f64::max);
            rows.push(vec![
                run.target.clone(),
                point_label(run),
                if run.status == "failed" {
                    "failed".into()
                } else {
                    fmt_rate(m.throughput_per_s)
                },
                fmt_ns(m.all.mean_ns),
                fmt_ns(m.all.p50_ns as f64),
                fmt_ns(m.all.p99_ns as f64),
                fmt_ns(m.all.p999_ns as f64),
                fmt_ns(m.all.max_ns as f64),
                m.error_total().to_string(),
                m.misses.to_string(),
                format!(
                    "{busy:.0} %{}",
                    if run.client.client_bound { " (!)" } else { "" }
                ),
                match &run.load {
                    Some(l) => fmt_per_s(l.records_written_per_s(), "rec/s"),
                    None => "-".into(),
                },
            ]);
        }
        table(&rows, out)?;
        for run in &r.runs {
            if let Some(msg) = &run.message {
                writeln!(out, "run {} ({}): {}", run.index, run.target, msg)?;
            }
            if !run.measure.errors.is_empty() {
                let e: Vec<String> = run
                    .measure
                    .errors
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect();
                writeln!(
                    out,
                    "run {} ({}) errors by kind: {}",
                    run.index,
                    run.target,
                    e.join(", ")
                )?;
            }
            let bad: Vec<String> = run
                .checks
                .counters
                .iter()
                .filter(|c| c.bakeoff != c.target)
                .map(|c| format!("{}: bakeoff {} vs target {}", c.what, c.bakeoff, c.target))
                .collect();
            if !bad.is_empty() {
                writeln!(
                    out,
                    "run {} ({}) counts differ from the target's: {}",
                    run.index,
                    run.target,
                    bad.join("; ")
                )?;
            }
        }
        for t in &r.targets {
            if let Some(v) = &t.version {
                writeln!(
                    out,
                    "{}: {}{}",
                    t.name,
                    v,
                    t.endpoint
                        .as_ref()
                        .map(|e| format!(" at {e}"))
                        .unwrap_or_default()
                )?;
            }
        }
        for w in &r.warnings {
            writeln!(out, "warning: {w}")?;
        }
        Ok(())
    }
}
