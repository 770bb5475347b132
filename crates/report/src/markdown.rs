//! The report as Markdown: the HTML report's numbers as tables (summary,
//! per operation kind, each sweep axis pivoted by series, request steps,
//! errors, checks, targets, environment), for pasting into an issue or a
//! wiki page.

use std::io::Write;

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::{fmt_bytes, fmt_ns};

use crate::view::{point_label, point_without, Figure, Spread, View};
use crate::Exporter;

/// The Markdown report.
pub struct MarkdownExporter;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Writes a Markdown table; the first `left` columns are left-aligned.
pub fn md_table(
    head: &[String],
    rows: &[Vec<String>],
    left: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (mut head, mut rows, mut left) = (head.to_vec(), rows.to_vec(), left);
    crate::view::drop_blank_point(&mut head, &mut rows, &mut left);
    writeln!(
        out,
        "| {} |",
        head.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | ")
    )?;
    writeln!(
        out,
        "|{}|",
        (0..head.len())
            .map(|i| if i < left { " --- " } else { " ---: " })
            .collect::<Vec<_>>()
            .join("|")
    )?;
    for r in &rows {
        writeln!(
            out,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        )?;
    }
    writeln!(out)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Median of a figure over a group's repeats, with `(min–max)` when repeated.
pub fn with_spread(sp: Option<Spread>, fig: Figure) -> String {
    match sp {
        None => "-".into(),
        Some(s) if s.n > 1 => format!(
            "{} ({}–{})",
            fig.format(s.median),
            fig.format(s.min),
            fig.format(s.max)
        ),
        Some(s) => fig.format(s.median),
    }
}

impl Exporter for MarkdownExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        let refs: Vec<&ExperimentResult> = results.iter().collect();
        let view = View::new(&refs);
        let names: Vec<&str> = results.iter().map(|r| r.plan.name.as_str()).collect();
        writeln!(out, "# bakeoff report: {}\n", names.join(" vs "))?;
        for (i, r) in results.iter().enumerate() {
            let tag = &view.tags[i];
            writeln!(
                out,
                "{}**{}** — started {}, status {}, {} run(s); {} ({} cores, {}), kernel {}, bakeoff {}, seed {}.\n",
                if tag.is_empty() { String::new() } else { format!("{tag}: ") },
                r.plan.name,
                r.started_at,
                r.status,
                r.runs.len(),
                r.environment.hostname,
                r.environment.cores,
                r.environment.cpu_model,
                r.environment.kernel,
                r.environment.bakeoff_version,
                r.environment.seed
            )?;
            if !r.plan.description.is_empty() {
                writeln!(out, "> {}\n", r.plan.description.trim().replace('\n', " "))?;
            }
            for w in &r.warnings {
                writeln!(out, "**Warning:** {w}\n")?;
            }
        }

        // Who leads, like with like, first: as the terminal and the HTML
        // report open.
        let verdict: Vec<String> = view
            .sources
            .iter()
            .flat_map(|r| crate::verdict::verdict(r))
            .collect();
        if !verdict.is_empty() {
            writeln!(out, "## Verdict\n")?;
            for line in &verdict {
                writeln!(out, "- {}", cell(line))?;
            }
            writeln!(out)?;
        }

        writeln!(out, "## Summary\n")?;
        let (head, rows) = crate::summary_table(
            &view.sources,
            view.runs
                .iter()
                .map(|r| (r.source, view.series[r.series].as_str(), r.run)),
        );
        md_table(&head, &rows, 2, out)?;
        for r in &view.runs {
            if r.run.client.client_bound {
                writeln!(
                    out,
                    "**Client-bound:** run {} ({}): a client thread was busy more than 90 % of the time; these numbers measure bakeoff as much as the target.\n",
                    r.run.index, view.series[r.series]
                )?;
            }
        }

        for r in results {
            for section in crate::sections::TABLE_SECTIONS {
                if let Some(rows) = (section.rows)(r) {
                    writeln!(out, "## {}\n", section.title)?;
                    writeln!(out, "{}\n", section.note)?;
                    md_table(&rows[0], &rows[1..], section.left, out)?;
                }
            }
        }

        writeln!(out, "## Per operation kind\n")?;
        let mut rows = Vec::new();
        for r in &view.runs {
            for (kind, op) in &r.run.measure.ops {
                rows.push(vec![
                    view.series[r.series].clone(),
                    point_label(&r.run.point),
                    r.run.repeat.to_string(),
                    kind.clone(),
                    op.completed.to_string(),
                    op.misses.to_string(),
                    op.failed.to_string(),
                    op.rows.to_string(),
                    fmt_ns(op.latency.mean_ns),
                    fmt_ns(op.latency.p50_ns as f64),
                    fmt_ns(op.latency.p99_ns as f64),
                    fmt_ns(op.latency.p999_ns as f64),
                    op.service_time
                        .as_ref()
                        .map(|s| fmt_ns(s.p99_ns as f64))
                        .unwrap_or("-".into()),
                ]);
            }
        }
        md_table(
            &strings(&[
                "target",
                "point",
                "repeat",
                "op",
                "completed",
                "misses",
                "failed",
                "rows",
                "mean",
                "p50",
                "p99",
                "p99.9",
                "service p99",
            ]),
            &rows,
            4,
            out,
        )?;

        let groups = view.groups();
        for axis in &view.axes {
            writeln!(
                out,
                "## Against {}\n\nMedian of the repeats, (min–max) when repeated.\n",
                axis.title()
            )?;
            let mut fixed = Vec::new();
            for g in &groups {
                let f = point_without(&g.point, &axis.name);
                if !fixed.contains(&f) {
                    fixed.push(f);
                }
            }
            for f in &fixed {
                for fig in [Figure::Throughput, Figure::Mean, Figure::P99] {
                    if !f.is_empty() {
                        writeln!(out, "{} at {}:\n", fig.name(), point_label(f))?;
                    } else {
                        writeln!(out, "{}:\n", fig.name())?;
                    }
                    let mut head = vec![axis.name.clone()];
                    head.extend(view.series.iter().cloned());
                    let rows: Vec<Vec<String>> = axis
                        .labels
                        .iter()
                        .map(|l| {
                            let mut want = f.clone();
                            want.insert(axis.name.clone(), l.clone());
                            let mut row = vec![l.clone()];
                            for s in 0..view.series.len() {
                                let sp = groups
                                    .iter()
                                    .find(|g| g.series == s && g.point == want)
                                    .and_then(|g| Spread::of(g.runs.iter().map(|r| fig.of(r))));
                                row.push(with_spread(sp, fig));
                            }
                            row
                        })
                        .collect();
                    md_table(&head, &rows, 1, out)?;
                }
            }
        }

        let stepped: Vec<_> = view
            .runs
            .iter()
            .filter(|r| !r.run.measure.steps.is_empty())
            .collect();
        if !stepped.is_empty() {
            writeln!(out, "## Request steps\n")?;
            let mut rows = Vec::new();
            for r in stepped {
                for s in &r.run.measure.steps {
                    rows.push(vec![
                        view.series[r.series].clone(),
                        point_label(&r.run.point),
                        s.name.clone(),
                        s.latency.count.to_string(),
                        fmt_ns(s.latency.mean_ns),
                        fmt_ns(s.latency.p50_ns as f64),
                        fmt_ns(s.latency.p99_ns as f64),
                    ]);
                }
            }
            md_table(
                &strings(&["target", "point", "step", "count", "mean", "p50", "p99"]),
                &rows,
                3,
                out,
            )?;
        }

        writeln!(out, "## Errors by kind\n")?;
        let rows = crate::view::error_rows(&view);
        if rows.is_empty() {
            writeln!(out, "No operation failed in any measured phase.\n")?;
        } else {
            md_table(
                &strings(&["run", "target", "point", "errors", "message"]),
                &rows,
                5,
                out,
            )?;
        }

        writeln!(out, "## Checks\n")?;
        let rows: Vec<Vec<String>> = view
            .runs
            .iter()
            .map(|r| {
                let c = &r.run.checks;
                vec![
                    r.run.index.to_string(),
                    view.series[r.series].clone(),
                    point_label(&r.run.point),
                    c.littles_law_ratio
                        .map(|x| format!("{x:.3}"))
                        .unwrap_or("-".into()),
                    c.counters
                        .iter()
                        .map(|k| format!("{}: {} vs {}", k.what, k.bakeoff, k.target))
                        .collect::<Vec<_>>()
                        .join("; "),
                ]
            })
            .collect();
        md_table(
            &strings(&[
                "run",
                "target",
                "point",
                "Little's law",
                "bakeoff vs target counters",
            ]),
            &rows,
            3,
            out,
        )?;

        writeln!(out, "## Targets\n")?;
        let mut rows = Vec::new();
        for (i, r) in results.iter().enumerate() {
            for t in &r.targets {
                let name = if view.tags[i].is_empty() {
                    t.name.clone()
                } else {
                    format!("{} · {}", t.name, view.tags[i])
                };
                rows.push(vec![
                    name,
                    t.mode.clone(),
                    t.version.clone().unwrap_or("-".into()),
                    t.settings
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    t.requests
                        .iter()
                        .map(|(k, v)| format!("{k}: {v}"))
                        .collect::<Vec<_>>()
                        .join("; "),
                    t.skipped.clone().unwrap_or_default(),
                ]);
            }
        }
        md_table(
            &strings(&["target", "mode", "version", "settings", "sent", "skipped"]),
            &rows,
            6,
            out,
        )?;

        writeln!(out, "## Environment\n")?;
        let rows: Vec<Vec<String>> = results
            .iter()
            .map(|r| {
                let e = &r.environment;
                vec![
                    r.plan.name.clone(),
                    e.hostname.clone(),
                    format!("{} ({} cores)", e.cpu_model, e.cores),
                    fmt_bytes(e.memory_bytes as f64),
                    e.kernel.clone(),
                    e.command.clone(),
                ]
            })
            .collect();
        md_table(
            &strings(&["experiment", "host", "CPU", "memory", "kernel", "command"]),
            &rows,
            6,
            out,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Markdown report opens with the verdict the terminal and the
    /// HTML report give: each of its lines, as a bullet, before the
    /// summary.
    #[test]
    fn markdown_opens_with_the_verdict() {
        let r = crate::verdict::tests::four_targets();
        let lines = crate::verdict::verdict(&r);
        assert!(!lines.is_empty());
        let mut out = Vec::new();
        MarkdownExporter
            .export(std::slice::from_ref(&r), &mut out)
            .unwrap();
        let md = String::from_utf8(out).unwrap();
        let (head, summary) = md.split_once("## Summary").expect("a summary");
        assert!(head.contains("## Verdict"), "{md}");
        for l in &lines {
            assert!(
                head.contains(&format!("- {}", cell(l))),
                "{l} not in\n{head}"
            );
        }
        assert!(!summary.contains("## Verdict"));
    }
}
