//! The report as one document: its sections in order, each a heading, a
//! note and blocks (bullets, paragraphs, captions, tables), built once from
//! the experiments. The Markdown report renders it as it stands; the HTML
//! report takes its sections' headings, notes and tables from here and
//! draws charts beside them; the terminal's tables come from
//! [`crate::sections`], which this document includes.

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::{fmt_bytes, fmt_ns};

use crate::view::{point_label, point_without, Figure, Spread, View};

/// A table: head row, rows, and how many leading columns are text.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column headings.
    pub head: Vec<String>,
    /// Its rows.
    pub rows: Vec<Vec<String>>,
    /// How many of its columns are text (left-aligned).
    pub left: usize,
    /// Per column, the anchor of the chart its figures come from, where
    /// one does (the HTML report links each cell to it); empty for none.
    pub charts: Vec<Option<&'static str>>,
}

impl Table {
    fn new(head: &[&str], rows: Vec<Vec<String>>, left: usize) -> Self {
        Table {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows,
            left,
            charts: Vec::new(),
        }
    }
}

/// One piece of a section.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A list of findings.
    Bullets(Vec<String>),
    /// A paragraph; `strong` opens it in bold ("Client-bound:").
    Paragraph {
        /// Its bold lead, if any.
        strong: Option<String>,
        /// The text.
        text: String,
    },
    /// What the table after it shows ("throughput at clients=8").
    Caption(String),
    /// A table.
    Table(Table),
}

/// One section of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Its anchor in the HTML report.
    pub id: &'static str,
    /// Its heading.
    pub title: String,
    /// What it shows, under the heading.
    pub note: Option<String>,
    /// Its content.
    pub blocks: Vec<Block>,
}

impl Section {
    fn new(id: &'static str, title: impl Into<String>, blocks: Vec<Block>) -> Self {
        Section {
            id,
            title: title.into(),
            note: None,
            blocks,
        }
    }

    fn noted(mut self, note: &str) -> Self {
        self.note = Some(note.to_string());
        self
    }
}

/// Every section of the report of `results` (seen through `view`), in order.
pub fn sections(view: &View, results: &[ExperimentResult]) -> Vec<Section> {
    let mut out = Vec::new();
    out.extend(fit(view));
    out.extend(verdict(view));
    out.push(summary(view));
    for r in results {
        for section in crate::sections::TABLE_SECTIONS {
            if let Some(rows) = (section.rows)(r) {
                let table = Table {
                    head: rows[0].clone(),
                    rows: rows[1..].to_vec(),
                    left: section.left,
                    charts: Vec::new(),
                };
                out.push(
                    Section::new(section.id, section.title, vec![Block::Table(table)])
                        .noted(section.note),
                );
            }
        }
    }
    out.push(per_kind(view));
    out.extend(sweeps(view));
    out.extend(steps(view));
    out.push(errors(view));
    out.push(checks(view));
    out.push(targets(view, results));
    out.push(environment(results));
    out
}

/// Which one fits the requirements (`--require`): the report opens with
/// it when the run has any.
pub fn fit(view: &View) -> Option<Section> {
    let mut blocks = Vec::new();
    for r in &view.sources {
        if let Some(a) = crate::fit::answer(r) {
            blocks.push(Block::Bullets(a.lines));
            let head: Vec<&str> = a.rows[0].iter().map(String::as_str).collect();
            blocks.push(Block::Table(Table {
                charts: a.charts,
                ..Table::new(&head, a.rows[1..].to_vec(), 1)
            }));
        }
    }
    let note = if view.sources.iter().any(|r| r.plan.prices.is_some()) {
        format!("{} {}", crate::fit::FIT_NOTE, crate::fit::PRICE_NOTE)
    } else {
        crate::fit::FIT_NOTE.to_string()
    };
    (!blocks.is_empty()).then(|| Section::new("fit", "Which one fits", blocks).noted(&note))
}

/// Who leads, like with like: the report opens with it.
pub fn verdict(view: &View) -> Option<Section> {
    let lines: Vec<String> = view
        .sources
        .iter()
        .flat_map(|r| crate::verdict::verdict(r))
        .collect();
    (!lines.is_empty()).then(|| Section::new("verdict", "Verdict", vec![Block::Bullets(lines)]))
}

/// The summary: one row per target and point, each figure's median and
/// 95 % interval, what the intervals stand for; then one row a run, and
/// which runs were client-bound.
pub fn summary(view: &View) -> Section {
    let mut blocks = Vec::new();
    for r in &view.sources {
        let (head, rows, lines) = crate::headline_table(r);
        blocks.push(Block::Table(Table {
            head,
            rows,
            left: 2,
            charts: Vec::new(),
        }));
        for line in lines {
            blocks.push(Block::Paragraph {
                strong: None,
                text: line,
            });
        }
    }
    blocks.push(Block::Paragraph {
        strong: Some("Each run:".into()),
        text: "every repeat on its own row.".into(),
    });
    let (head, rows) = crate::summary_table(
        &view.sources,
        view.runs
            .iter()
            .map(|r| (r.source, view.series[r.series].as_str(), r.run)),
    );
    blocks.push(Block::Table(Table {
        head,
        rows,
        left: 2,
        charts: Vec::new(),
    }));
    for r in &view.runs {
        if r.run.client_limited() {
            blocks.push(Block::Paragraph {
                strong: Some("Client-bound:".into()),
                text: format!(
                    "run {} ({}): a client thread was busy more than 90 % of the time; these numbers measure bakeoff as much as the target.",
                    r.run.index, view.series[r.series]
                ),
            });
        }
    }
    Section::new("summary", "Summary", blocks)
}

fn per_kind(view: &View) -> Section {
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
    let head = [
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
    ];
    Section::new(
        "kinds",
        "Per operation kind",
        vec![Block::Table(Table::new(&head, rows, 4))],
    )
}

/// Each sweep axis, pivoted by series: one table a figure and a setting of
/// the other axes.
fn sweeps(view: &View) -> Vec<Section> {
    let groups = view.groups();
    let mut out = Vec::new();
    for axis in &view.axes {
        let mut fixed = Vec::new();
        for g in &groups {
            let f = point_without(&g.point, &axis.name);
            if !fixed.contains(&f) {
                fixed.push(f);
            }
        }
        let mut blocks = Vec::new();
        for f in &fixed {
            for fig in [Figure::Throughput, Figure::Mean, Figure::P99] {
                blocks.push(Block::Caption(if f.is_empty() {
                    fig.name().to_string()
                } else {
                    format!("{} at {}", fig.name(), point_label(f))
                }));
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
                blocks.push(Block::Table(Table {
                    head,
                    rows,
                    left: 1,
                    charts: Vec::new(),
                }));
            }
        }
        out.push(
            Section::new("sweeps", format!("Against {}", axis.title()), blocks)
                .noted("Median of the repeats, (min–max) when repeated."),
        );
    }
    out
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

/// The request steps of runs whose requests have them (`--request phases`).
pub fn steps(view: &View) -> Option<Section> {
    let mut rows = Vec::new();
    for r in &view.runs {
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
    let head = ["target", "point", "step", "count", "mean", "p50", "p99"];
    (!rows.is_empty()).then(|| {
        Section::new(
            "steps",
            "Request steps",
            vec![Block::Table(Table::new(&head, rows, 3))],
        )
    })
}

/// Failed operations by kind, run by run, with each run's error message.
pub fn errors(view: &View) -> Section {
    let rows = crate::view::error_rows(view);
    let block = if rows.is_empty() {
        Block::Paragraph {
            strong: None,
            text: "No operation failed in any measured phase.".into(),
        }
    } else {
        let head = ["run", "target", "point", "errors", "message"];
        Block::Table(Table::new(&head, rows, 5))
    };
    Section::new("errors", "Errors by kind", vec![block])
}

/// Little's law, the records after the load and the counter checks, run
/// by run.
pub fn checks(view: &View) -> Section {
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
                c.records_after_load
                    .map(|x| x.to_string())
                    .unwrap_or("-".into()),
                c.counters
                    .iter()
                    .map(|k| {
                        let mark = if k.bakeoff == k.target { "✓" } else { "✗" };
                        format!("{}: {} vs {} {mark}", k.what, k.bakeoff, k.target)
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ]
        })
        .collect();
    let head = [
        "run",
        "target",
        "point",
        "Little's law",
        "records after load",
        "bakeoff vs target counters",
    ];
    Section::new(
        "checks",
        "Checks",
        vec![Block::Table(Table::new(&head, rows, 3))],
    )
    .noted(CHECKS_NOTE)
}

/// What the checks table shows.
pub const CHECKS_NOTE: &str = "Little's law (closed loop): mean latency × throughput ÷ requests in flight, 1.00 when no waiting time went uncounted. Counters: bakeoff's request counts next to the target's own.";

/// Each target's mode, version, endpoint, settings and what was sent.
fn targets(view: &View, results: &[ExperimentResult]) -> Section {
    let mut rows = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for t in &r.targets {
            let name = if view.tags[i].is_empty() {
                t.name.clone()
            } else {
                format!("{} · {}", t.name, view.tags[i])
            };
            let join = |m: &std::collections::BTreeMap<String, String>, sep: &str, eq: &str| {
                m.iter()
                    .map(|(k, v)| format!("{k}{eq}{v}"))
                    .collect::<Vec<_>>()
                    .join(sep)
            };
            rows.push(vec![
                name,
                t.mode.clone(),
                t.version.clone().unwrap_or("-".into()),
                t.endpoint.clone().unwrap_or_default(),
                join(&t.settings, ", ", "="),
                join(&t.requests, "; ", ": "),
                t.skipped.clone().unwrap_or_default(),
            ]);
        }
    }
    let head = [
        "target", "mode", "version", "endpoint", "settings", "sent", "skipped",
    ];
    Section::new(
        "targets",
        "Targets",
        vec![Block::Table(Table::new(&head, rows, 7))],
    )
}

fn environment(results: &[ExperimentResult]) -> Section {
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
                workload_line(r),
                sweep_line(r),
                r.plan.repeats.to_string(),
            ]
        })
        .collect();
    let head = [
        "experiment",
        "host",
        "CPU",
        "memory",
        "kernel",
        "command",
        "workload",
        "sweep",
        "repeats",
    ];
    Section::new(
        "environment",
        "Environment",
        vec![Block::Table(Table::new(&head, rows, 8))],
    )
}

/// The workload of `r` in one line: records, values, mix, clients, how
/// long, warm-up and loop.
pub fn workload_line(r: &ExperimentResult) -> String {
    let w = &r.plan.workload;
    format!(
        "{} records, values {} B, mix {} (get:set:update:delete), {} clients on {} thread(s), pipeline {}, {}, {}, {}",
        w.records,
        w.value_size,
        w.mix,
        w.clients,
        w.threads,
        w.pipeline,
        match (w.duration_s, w.ops) {
            (Some(d), _) => format!("{d} s measured"),
            (None, Some(n)) => format!("{n} operations measured"),
            _ => w
                .ops_per_client
                .map(|n| format!("{n} operations per client measured"))
                .unwrap_or_default(),
        },
        warmup_text(r),
        match w.rate {
            Some(r) => format!("open loop at {r} ops/s"),
            None => "closed loop".into(),
        }
    )
}

/// The warm-up of `r`'s runs: fixed, or (`--warmup auto`) where the runs
/// found it ended.
pub fn warmup_text(r: &ExperimentResult) -> String {
    let w = &r.plan.workload;
    if !w.warmup_auto {
        return format!("warm-up {} s", w.warmup_s);
    }
    let ends: Vec<f64> = r.runs.iter().map(|run| run.workload.warmup_s).collect();
    let never = r
        .runs
        .iter()
        .filter(|run| run.warmup_steady_from_s.is_none())
        .count();
    let (lo, hi) = ends.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), e| {
        (lo.min(*e), hi.max(*e))
    });
    let mut text = format!(
        "warm-up found as each run went (at most {} s",
        w.warmup_bound_s()
    );
    if !ends.is_empty() {
        if lo == hi {
            text += &format!("; ended at {lo} s");
        } else {
            text += &format!("; ended at {lo}–{hi} s");
        }
    }
    if never > 0 {
        text += &format!("; {never} never steady within it");
    }
    text + ")"
}

/// The sweep axes of `r`, `a × b`.
pub fn sweep_line(r: &ExperimentResult) -> String {
    r.plan
        .sweep
        .iter()
        .map(|a| a.name().to_string())
        .collect::<Vec<_>>()
        .join(" × ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Exporter;

    /// Markdown renders every section of the document under its title, and
    /// the HTML report has each one the HTML report draws (all but the per
    /// kind table, which it leaves to Markdown and CSV) under its anchor.
    #[test]
    fn markdown_and_html_render_every_section() {
        let r = crate::verdict::tests::four_targets();
        let refs = [&r];
        let view = View::new(&refs);
        let doc = sections(&view, std::slice::from_ref(&r));
        assert!(doc.iter().any(|s| s.id == "verdict"), "{doc:?}");
        let render = |e: &dyn Exporter| {
            let mut out = Vec::new();
            e.export(std::slice::from_ref(&r), &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let md = render(&crate::markdown::MarkdownExporter);
        let html = render(&crate::html::HtmlExporter);
        for s in &doc {
            assert!(
                md.contains(&format!("## {}\n", s.title)),
                "{} not in\n{md}",
                s.title
            );
            if s.id != "kinds" {
                assert!(
                    html.contains(&format!("id=\"{}\"", s.id)),
                    "{} not in the HTML",
                    s.id
                );
            }
            for b in &s.blocks {
                if let Block::Table(t) = b {
                    for row in &t.rows {
                        let first = crate::svg::esc(&row[0]);
                        assert!(html.contains(&*first) || s.id == "kinds", "{first}");
                    }
                }
            }
        }
    }
}
