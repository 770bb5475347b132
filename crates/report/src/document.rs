//! The report as one document: its sections in order, each a heading, a
//! note and blocks (bullets, paragraphs, captions, tables, charts), built
//! once from the experiments. The answer comes first (which one fits, the
//! verdict, the summary), the charts next, the tables of detail after
//! them. The HTML report renders every section as it stands, drawing its
//! charts; Markdown renders it with the charts' titles; the terminal's
//! tables come from [`crate::sections`], which this document includes. Its
//! pieces are [`crate::model`]'s.

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::{fmt_bytes, fmt_ns};

use crate::model::{Block, Section, Table};
use crate::view::{point_label, point_without, Figure, Spread, View};

/// Every section of the report of `results` (seen through `view`), in
/// order: the answer, the charts, the tables of detail.
pub fn sections(view: &View, results: &[ExperimentResult]) -> Vec<Section> {
    let mut out = Vec::new();
    out.extend(fit(view));
    out.extend(verdict(view));
    out.push(summary(view));
    out.extend(crate::plots::overview(view));
    out.extend(sweeps(view));
    out.extend(crate::plots::spectrum(view));
    out.extend(crate::plots::timelines(view));
    out.extend(crate::plots::traces(view));
    out.extend(steps(view));
    for r in results {
        for section in crate::sections::TABLE_SECTIONS {
            if let Some(rows) = (section.rows)(r) {
                let mut blocks = section.charts.map_or_else(Vec::new, |c| c(view, r));
                blocks.push(Block::Table(Table {
                    head: rows[0].clone(),
                    rows: rows[1..].to_vec(),
                    left: section.left,
                    charts: Vec::new(),
                }));
                out.push(Section::new(section.id, section.title, blocks).noted(section.note));
            }
        }
    }
    out.push(per_kind(view));
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

/// Who leads, like with like: the report opens with it. One table, a
/// figure a row and a group of like targets a column (who leads, by how
/// much, how sure; or "tie"); what follows the groups; then, folded, each
/// group's own table with the values' intervals, and the same in
/// sentences.
pub fn verdict(view: &View) -> Option<Section> {
    let mut blocks = Vec::new();
    let mut detail = Vec::new();
    let mut sentences = Vec::new();
    for r in &view.sources {
        let (groups, after) = crate::verdict::matrix_rows(r);
        if !groups.is_empty() {
            blocks.push(Block::Table(verdict_matrix(&groups)));
        }
        if !after.is_empty() {
            blocks.push(Block::Bullets(after));
        }
        for (heading, rows) in groups {
            detail.push(Block::Caption(heading));
            detail.push(Block::Table(Table::new(
                &crate::verdict::MATRIX_HEAD,
                rows.into_iter().map(Vec::from).collect(),
                2,
            )));
        }
        sentences.extend(crate::verdict::verdict(r));
    }
    if sentences.is_empty() {
        return None;
    }
    detail.push(Block::Bullets(sentences));
    blocks.push(Block::Folded {
        summary: "each group in detail, and in sentences".into(),
        open: false,
        blocks: detail,
    });
    Some(Section::new("verdict", "Verdict", blocks))
}

/// The verdict's groups side by side: a figure a row, a group a column,
/// each cell who leads (its value, by how much over whom, how sure) or
/// who ties.
fn verdict_matrix(groups: &[crate::verdict::MatrixGroup]) -> Table {
    let mut figures: Vec<&str> = Vec::new();
    for (_, rows) in groups {
        for row in rows {
            if !figures.contains(&row[0].as_str()) {
                figures.push(&row[0]);
            }
        }
    }
    let rows = figures
        .iter()
        .map(|figure| {
            let mut row = vec![figure.to_string()];
            for (_, rows) in groups {
                row.push(match rows.iter().find(|r| r[0] == *figure) {
                    None => String::new(),
                    Some([_, leader, _, sure, who]) if leader == "tie" => {
                        format!("tie: {who}; {sure}")
                    }
                    Some([_, leader, value, sure, margin]) => {
                        format!("{leader} {value}; {margin}; {sure}")
                    }
                });
            }
            row
        })
        .collect();
    let mut head = vec![String::new()];
    head.extend(groups.iter().map(|(heading, _)| heading.clone()));
    Table {
        head,
        rows,
        left: groups.len() + 1,
        charts: Vec::new(),
    }
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

/// The figures against each sweep axis: its charts, then one table a
/// figure and a setting of the other axes, pivoted by series.
fn sweeps(view: &View) -> Option<Section> {
    if view.axes.is_empty() || view.runs.is_empty() {
        return None;
    }
    let mut blocks = crate::plots::sweep_charts(view);
    for axis in &view.axes {
        blocks.push(Block::Folded {
            summary: format!("the figures against {}, as tables", axis.title()),
            open: false,
            blocks: sweep_tables(view, axis),
        });
    }
    Some(
        Section::new("sweeps", "Against each sweep axis", blocks)
            .noted("Median of the repeats, (min–max) when repeated."),
    )
}

/// The tables of one sweep axis: a figure and a setting of the other axes
/// each.
fn sweep_tables(view: &View, axis: &crate::view::AxisView) -> Vec<Block> {
    let groups = view.groups();
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
                format!("{} against {}", fig.name(), axis.name)
            } else {
                format!("{} against {} at {}", fig.name(), axis.name, point_label(f))
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
    blocks
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
        let mut blocks = crate::plots::step_charts(view);
        blocks.push(Block::Table(Table::new(&head, rows, 3)));
        Section::new("steps", "Request steps", blocks)
    })
}

/// Failed operations by kind, run by run, with each run's error message.
pub fn errors(view: &View) -> Section {
    let rows = crate::view::error_rows(view);
    let mut blocks = crate::plots::error_charts(view);
    blocks.push(if rows.is_empty() {
        Block::Paragraph {
            strong: None,
            text: "No operation failed in any measured phase.".into(),
        }
    } else {
        let head = ["run", "target", "point", "errors", "message"];
        Block::Table(Table::new(&head, rows, 5))
    });
    Section::new("errors", "Errors by kind", blocks)
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

    /// Every section of the document is rendered in Markdown (under its
    /// title) and in HTML (under its anchor), every row of its tables in
    /// both; the tables the terminal shows behind `--details` are there
    /// under their headings with every row. A section added to the
    /// document reaches every format, or this fails.
    #[test]
    fn every_section_renders_in_text_markdown_and_html() {
        for r in [
            crate::verdict::tests::four_targets(),
            crate::fixtures::default_shaped(),
        ] {
            let refs = [&r];
            let view = View::new(&refs);
            let doc = sections(&view, std::slice::from_ref(&r));
            assert!(doc.iter().any(|s| s.id == "verdict"), "{doc:?}");
            assert!(doc.iter().any(|s| s.id == "bottleneck"), "{doc:?}");
            let render = |e: &dyn Exporter| {
                let mut out = Vec::new();
                e.export(std::slice::from_ref(&r), &mut out).unwrap();
                String::from_utf8(out).unwrap()
            };
            let md = render(&crate::markdown::MarkdownExporter);
            let html = render(&crate::html::HtmlExporter);
            let text = render(&crate::TextExporter {
                details: true,
                width: None,
            });
            for s in &doc {
                assert!(md.contains(&format!("## {}\n", s.title)), "{}", s.title);
                assert!(html.contains(&format!("id=\"{}\"", s.id)), "{}", s.id);
                let declared = crate::sections::TABLE_SECTIONS
                    .iter()
                    .find(|t| t.id == s.id);
                if let Some(t) = declared {
                    assert!(text.contains(t.text_heading), "{}", t.text_heading);
                }
                for t in tables(&s.blocks) {
                    for row in &t.rows {
                        let first = &row[0];
                        let esc = crate::html::charts::esc(first);
                        assert!(html.contains(&*esc), "{}: {first} not in the HTML", s.id);
                        assert!(
                            md.contains(first.as_str()),
                            "{}: {first} not in Markdown",
                            s.id
                        );
                        if declared.is_some() {
                            assert!(
                                text.contains(first.as_str()),
                                "{}: {first} not in the text",
                                s.id
                            );
                        }
                    }
                }
            }
        }
    }

    /// Every table among `blocks`, folded ones too.
    fn tables(blocks: &[Block]) -> Vec<&Table> {
        blocks
            .iter()
            .flat_map(|b| match b {
                Block::Table(t) => vec![t],
                Block::Folded { blocks, .. } => tables(blocks),
                _ => Vec::new(),
            })
            .collect()
    }
}
