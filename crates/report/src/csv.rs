//! The report as CSV: one row per run and operation kind (`all` first),
//! with the plain numbers in the units their column names give, for
//! spreadsheets and plotting scripts.

use std::io::Write;

use bakeoff_core::result::{ExperimentResult, LatencySummary};

use crate::view::{client_busy, View};
use crate::Exporter;

/// The CSV report.
pub struct CsvExporter;

/// Column names, units in the names.
pub const CSV_HEAD: [&str; 27] = [
    "experiment",
    "host",
    "series",
    "target",
    "run",
    "point",
    "repeat",
    "status",
    "op",
    "duration_s",
    "completed",
    "misses",
    "failed",
    "rows",
    "throughput_ops_per_s",
    "mean_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "p9999_ns",
    "max_ns",
    "errors",
    "client_busy_percent",
    "client_bound",
    "load_records_per_s",
    "littles_law_ratio",
];

/// Quotes a field when it holds a comma, quote or line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

impl Exporter for CsvExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        let refs: Vec<&ExperimentResult> = results.iter().collect();
        let view = View::new(&refs);
        writeln!(out, "{}", CSV_HEAD.join(","))?;
        for r in &view.runs {
            let src = view.sources[r.source];
            let run = r.run;
            let m = &run.measure;
            let point = run
                .point
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            let mut lines: Vec<(String, u64, u64, u64, u64, f64, &LatencySummary)> = vec![(
                "all".into(),
                m.completed,
                m.misses,
                m.ops.values().map(|o| o.failed).sum(),
                m.ops.values().map(|o| o.rows).sum(),
                m.throughput_per_s,
                &m.all,
            )];
            for (k, o) in &m.ops {
                let tp = if m.duration_s > 0.0 {
                    o.completed as f64 / m.duration_s
                } else {
                    0.0
                };
                lines.push((
                    k.clone(),
                    o.completed,
                    o.misses,
                    o.failed,
                    o.rows,
                    tp,
                    &o.latency,
                ));
            }
            for (op, completed, misses, failed, rows, tp, lat) in lines {
                let cells = [
                    src.plan.name.clone(),
                    src.environment.hostname.clone(),
                    view.series[r.series].clone(),
                    run.target.clone(),
                    run.index.to_string(),
                    point.clone(),
                    run.repeat.to_string(),
                    run.status.to_string(),
                    op.clone(),
                    num(m.duration_s),
                    completed.to_string(),
                    misses.to_string(),
                    failed.to_string(),
                    rows.to_string(),
                    num(tp),
                    num(lat.mean_ns),
                    lat.p50_ns.to_string(),
                    lat.p90_ns.to_string(),
                    lat.p99_ns.to_string(),
                    lat.p999_ns.to_string(),
                    lat.p9999_ns.to_string(),
                    lat.max_ns.to_string(),
                    if op == "all" {
                        m.error_total().to_string()
                    } else {
                        failed.to_string()
                    },
                    num(client_busy(run)),
                    run.client.client_bound.to_string(),
                    run.load
                        .as_ref()
                        .map(|l| num(l.records_written_per_s()))
                        .unwrap_or_default(),
                    run.checks
                        .littles_law_ratio
                        .map(|x| format!("{x:.4}"))
                        .unwrap_or_default(),
                ];
                writeln!(
                    out,
                    "{}",
                    cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",")
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("plain"), "plain");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(2.5), "2.500");
    }
}
