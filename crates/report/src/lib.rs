//! # bakeoff-report
//!
//! Renders result files. JSON is canonical; every other format is
//! regenerated from it, so `bakeoff report result.json` shows exactly what
//! `bakeoff run` showed, and the HTML, Markdown and CSV reports carry the
//! same numbers.
//!
//! ## Layout
//!
//! - [`Exporter`]: the one trait every format implements.
//! - [`JsonExporter`]: the result file itself.
//! - [`TextExporter`]: the summary table printed at the end of a run.
//! - [`markdown::MarkdownExporter`], [`csv::CsvExporter`]: the numbers as text.
//! - [`html::HtmlExporter`]: the self-contained HTML report with charts.
//! - [`compare`]: two experiments side by side, with run-to-run noise.
//! - [`durability`]: the durability table (lost and recovered writes).
//! - [`encoding`]: the client-side encoding table (sizes and costs).
//! - [`view`]: how runs are grouped into series and points (shared).
//! - [`document`]: the report as one document of sections, every format's
//!   source; [`plots`]: what each section draws.
//! - [`html::charts`]: the charts drawn in SVG.
//! - [`topology`]: requests per node of sharded targets, and the link
//!   relay's cost.

use std::io::Write;

use bakeoff_core::result::{ExperimentResult, RunResult};
use bakeoff_core::units::{fmt_ns, fmt_per_s, fmt_rate};

pub mod background;
pub mod caveats;
pub mod compare;
pub mod csv;
pub mod document;
pub mod durability;
pub mod encoding;
pub mod fit;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod html;
pub mod markdown;
pub mod model;
pub mod plots;
pub mod search;
pub mod sections;
pub mod topology;
pub mod verdict;
pub mod view;

/// A report format. Implementations only read the results; they never
/// measure or recompute what the runner measured.
pub trait Exporter {
    /// Writes `results` (one or more experiments) in this format.
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()>;
}

/// The canonical JSON result file (an array when given several).
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        match results {
            [one] => serde_json::to_writer_pretty(&mut *out, one),
            many => serde_json::to_writer_pretty(&mut *out, many),
        }
        .map_err(std::io::Error::other)?;
        writeln!(out)
    }
}

/// The first screen: what ran, the verdict as a matrix, one row per
/// target and point with each figure's median and 95 % interval, a line
/// per caveat and warnings, none wider than `width`. With `details`, the
/// evidence after it: each repeat's own row, every table some runs have,
/// the notes on runs and the targets' versions.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextExporter {
    /// Also the evidence (`--details`).
    pub details: bool,
    /// The widest line of the first screen, in characters; `None` for
    /// [`DEFAULT_WIDTH`].
    pub width: Option<usize>,
}

/// The first screen's width where the terminal's is not known.
pub const DEFAULT_WIDTH: usize = 120;

/// Headline columns the first screen leaves to `--details`.
const DETAIL_COLUMNS: [&str; 2] = ["mean", "p99.9"];

/// Columns of the headline table: one row per target and point.
pub const HEADLINE_HEAD: [&str; 10] = [
    "target",
    "point",
    "runs",
    "throughput",
    "mean",
    "p50",
    "p99",
    "p99.9",
    "errors",
    "steady",
];

/// `12.3k ops/s −3/+4 %`: a median and its 95 % interval as the share
/// below and above it, short enough for a table; the median alone where
/// there is no interval.
pub fn with_interval(f: &bakeoff_core::summary::FigureSummary) -> String {
    let median = f.figure.format(f.median);
    match &f.interval {
        Some(i) if f.median != 0.0 => {
            let below = (f.median - i.low) / f.median.abs() * 100.0;
            let above = (i.high - f.median) / f.median.abs() * 100.0;
            format!("{median} −{below:.0}/+{above:.0} %")
        }
        _ => median,
    }
}

/// The headline table of `r`: head and one row per target and point,
/// each figure's median over its repeats with its 95 % interval; and the
/// lines to set under it (what the intervals stand for, runs that were
/// not steady).
pub fn headline_table(r: &ExperimentResult) -> (Vec<String>, Vec<Vec<String>>, Vec<String>) {
    use bakeoff_core::summary::Headline;
    let summaries = bakeoff_core::summary::of(r);
    let head: Vec<String> = HEADLINE_HEAD.iter().map(|s| s.to_string()).collect();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for s in &summaries {
        let cell = |h: Headline| s.figure(h).map_or_else(|| "-".into(), with_interval);
        let errors: u64 = r
            .runs
            .iter()
            .filter(|x| s.runs.contains(&x.index))
            .map(|x| x.measure.error_total())
            .sum();
        let unsteady = s.unsteady();
        rows.push(vec![
            s.target.clone(),
            view::point_label(&s.point),
            s.repeats.to_string(),
            cell(Headline::Throughput),
            cell(Headline::Mean),
            cell(Headline::P50),
            cell(Headline::P99),
            cell(Headline::P999),
            errors.to_string(),
            if !unsteady.is_empty() {
                format!("no ({})", unsteady.len())
            } else if s
                .stability
                .contains(&bakeoff_core::stats::Stability::TooShort)
            {
                "too short".into()
            } else {
                "yes".into()
            },
        ]);
        for u in unsteady {
            notes.push(format!(
                "{}{}: not steady: {u}",
                s.target,
                view::at_point(&s.point)
            ));
        }
    }
    let mut kinds: Vec<String> = summaries.iter().map(|s| s.interval_note()).collect();
    kinds.dedup();
    let mut lines: Vec<String> = kinds.into_iter().map(|k| format!("−/+ %: {k}")).collect();
    if summaries.iter().any(|s| {
        s.stability
            .contains(&bakeoff_core::stats::Stability::TooShort)
    }) {
        let steady = "steady: under 4 s measured is too short to tell";
        match lines.last_mut() {
            Some(last) => *last = format!("{last}; {steady}"),
            None => lines.push(steady.into()),
        }
    }
    if r.plan.workload.warmup_auto {
        lines.push(document::warmup_text(r));
    }
    lines.extend(notes);
    lines.extend(r.precision.iter().flat_map(|p| p.lines()));
    (head, rows, lines)
}

/// Columns of the summary table shared by the text, Markdown and HTML reports.
pub const SUMMARY_HEAD: [&str; 12] = [
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
];

fn run_point_label(run: &RunResult) -> String {
    let mut s: Vec<String> = run.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if run.repeat > 0 {
        s.push(format!("#{}", run.repeat + 1));
    }
    s.join(" ")
}

/// The summary table's column of what each run's settings promise
/// acknowledged writes survive (declared; `-` for an external target).
pub const DURABLE_HEAD: &str = "durable to";

/// The record of the target `run` ran on, in `r`.
pub fn record_of<'a>(
    r: &'a ExperimentResult,
    run: &RunResult,
) -> Option<&'a bakeoff_core::result::TargetRecord> {
    r.targets.iter().find(|t| t.name == run.target)
}

/// One row of the summary table for `run`, shown as `series`.
pub fn summary_row(series: &str, run: &RunResult) -> Vec<String> {
    let m = &run.measure;
    let busy = view::client_busy(run);
    vec![
        series.to_string(),
        run_point_label(run),
        if run.status == bakeoff_core::result::RunStatus::Failed {
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
            if run.client_limited() { " (!)" } else { "" }
        ),
        match &run.load {
            Some(l) => fmt_per_s(l.records_written_per_s(), "rec/s"),
            None => "-".into(),
        },
    ]
}

/// The summary table of `runs` (each with the index of its result in
/// `sources` and the name of its series): head and rows. When a
/// durability class is measured in `sources` for the setting of some run,
/// a last column shows it next to that run's throughput.
pub fn summary_table<'a>(
    sources: &[&ExperimentResult],
    runs: impl Iterator<Item = (usize, &'a str, &'a RunResult)>,
) -> (Vec<String>, Vec<Vec<String>>) {
    let classes = durability::Classes::from_results(sources.iter().copied());
    let mut head: Vec<String> = SUMMARY_HEAD.iter().map(|s| s.to_string()).collect();
    head.push(DURABLE_HEAD.into());
    let mut rows = Vec::new();
    for (source, series, run) in runs {
        let mut row = summary_row(series, run);
        row.push(
            sources
                .get(source)
                .and_then(|r| record_of(r, run))
                .and_then(|t| t.durable_to)
                .map_or_else(|| "-".into(), |d| d.text().to_string()),
        );
        if !classes.is_empty() {
            row.push(
                sources
                    .get(source)
                    .and_then(|r| classes.of(r, run))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        rows.push(row);
    }
    if !classes.is_empty() {
        head.push(durability::CLASS_HEAD.into());
    }
    (head, rows)
}

/// Writes an aligned text table: the first `left` columns left-aligned,
/// the rest right-aligned, a rule under the head.
pub fn text_table(rows: &[Vec<String>], left: usize, out: &mut dyn Write) -> std::io::Result<()> {
    aligned_table(rows, left, true, out)
}

/// [`text_table`], with or without the rule under the head (the first
/// screen, where every line counts, goes without).
fn aligned_table(
    rows: &[Vec<String>],
    left: usize,
    rule: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (mut head, mut rows, mut left) = match rows {
        [head, body @ ..] => (head.clone(), body.to_vec(), left),
        [] => return Ok(()),
    };
    view::drop_blank_point(&mut head, &mut rows, &mut left);
    rows.insert(0, head);
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
            if c < left {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            line.push_str("  ");
        }
        writeln!(out, "{}", line.trim_end())?;
        if i == 0 && rule {
            writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1))
            )?;
        }
    }
    Ok(())
}

/// Lines under the table: failures, errors by kind, counts that differ.
pub fn run_notes(r: &ExperimentResult) -> Vec<String> {
    marked_run_notes(r).into_iter().map(|(_, n)| n).collect()
}

/// The runs' notes, each marked when it is an alarm (errors, a promise
/// broken, counts that differ) rather than a run's own message: the first
/// screen keeps alarms whole.
pub fn marked_run_notes(r: &ExperimentResult) -> Vec<(bool, String)> {
    let mut notes = Vec::new();
    for run in &r.runs {
        if let Some(msg) = &run.message {
            notes.push((
                false,
                format!("run {} ({}): {}", run.index, run.target, msg),
            ));
        }
        for (phase, p) in [("load ", run.load.as_ref()), ("", Some(&run.measure))] {
            let Some(p) = p.filter(|p| !p.errors.is_empty()) else {
                continue;
            };
            notes.push((
                true,
                format!(
                    "run {} ({}) {phase}errors by kind: {}",
                    run.index,
                    run.target,
                    p.errors_line()
                ),
            ));
        }
        if let Some(broken) = durability::broken_promise(r, run) {
            notes.push((
                true,
                format!(
                    "run {} ({}): weaker than declared: {broken}",
                    run.index, run.target
                ),
            ));
        }
        let bad: Vec<String> = run
            .checks
            .counters
            .iter()
            .filter(|c| c.bakeoff != c.target)
            .map(|c| format!("{}: bakeoff {} vs target {}", c.what, c.bakeoff, c.target))
            .collect();
        if !bad.is_empty() {
            notes.push((
                true,
                format!(
                    "run {} ({}) counts differ from the target's: {}",
                    run.index,
                    run.target,
                    bad.join("; ")
                ),
            ));
        }
    }
    notes.extend(disk_notes(r).into_iter().map(|n| (false, n)));
    notes
}

/// The disk table's notes, each said once for the runs it holds for
/// (whether fsyncs could be counted is the same in every run of a target).
fn disk_notes(r: &ExperimentResult) -> Vec<String> {
    let mut said: Vec<((String, String), Vec<u32>)> = Vec::new();
    for run in &r.runs {
        for n in durability::disk_notes(run) {
            let key = (run.target.clone(), n);
            match said.iter_mut().find(|(k, _)| *k == key) {
                Some((_, runs)) => runs.push(run.index),
                None => said.push((key, vec![run.index])),
            }
        }
    }
    said.into_iter()
        .map(|((target, note), runs)| match runs.as_slice() {
            [one] => format!("run {one} ({target}): {note}"),
            many => format!("{} runs of {target}: {note}", many.len()),
        })
        .collect()
}

impl Exporter for TextExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        let sources: Vec<&ExperimentResult> = results.iter().collect();
        let width = self.width.unwrap_or(DEFAULT_WIDTH);
        let say = |out: &mut dyn Write, text: &str, indent: usize| -> std::io::Result<()> {
            for line in caveats::wrap(text, width, indent) {
                writeln!(out, "{line}")?;
            }
            Ok(())
        };
        for (i, r) in results.iter().enumerate() {
            let env = &r.environment;
            say(
                out,
                &format!(
                    "experiment {} — {} run(s), status {}; on {} CPU(s), {}, Linux {}",
                    r.plan.name,
                    r.runs.len(),
                    r.status,
                    env.cores,
                    bakeoff_core::units::fmt_bytes(env.memory_bytes as f64),
                    env.kernel
                ),
                4,
            )?;
            if let Some(answer) = fit::answer(r) {
                writeln!(out, "which one fits:")?;
                for line in &answer.lines {
                    say(out, &format!("  {line}"), 4)?;
                }
                text_table(&answer.rows, 1, out)?;
                writeln!(out)?;
            }
            // The verdict: each group's line, its rows at two spaces, a
            // wrapped line's rest at four.
            let verdict = verdict::matrix(r);
            for line in &verdict {
                say(out, line, 4)?;
            }
            let (mut head, mut body, lines) = headline_table(r);
            if !self.details {
                let keep: Vec<bool> = head
                    .iter()
                    .map(|h| !DETAIL_COLUMNS.contains(&h.as_str()))
                    .collect();
                let pick = |row: &mut Vec<String>| {
                    let mut k = keep.iter();
                    row.retain(|_| *k.next().unwrap_or(&true));
                };
                pick(&mut head);
                body.iter_mut().for_each(pick);
            }
            let mut rows = vec![head];
            rows.extend(body);
            aligned_table(&rows, 2, self.details, out)?;
            for line in lines {
                say(out, &line, 2)?;
            }
            if !self.details {
                for line in caveats::lines(r, width) {
                    say(out, &line, 2)?;
                }
                for w in &r.warnings {
                    say(out, &format!("warning: {w}"), 2)?;
                }
                continue;
            }
            details(&sources, i, r, out)?;
            for w in &r.warnings {
                writeln!(out, "warning: {w}")?;
            }
        }
        Ok(())
    }
}

/// Behind `--details`: each run's row, every table some runs have, the
/// runs' notes and the targets' versions.
fn details(
    sources: &[&ExperimentResult],
    i: usize,
    r: &ExperimentResult,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "\neach run:")?;
    let (head, body) = summary_table(
        sources,
        r.runs.iter().map(|run| (i, run.target.as_str(), run)),
    );
    let mut rows = vec![head];
    rows.extend(body);
    text_table(&rows, 2, out)?;
    // The tables some runs have, each under its heading.
    for section in sections::TABLE_SECTIONS {
        if let Some(rows) = (section.rows)(r) {
            writeln!(out, "\n{}", section.text_heading)?;
            text_table(&rows, section.left, out)?;
            writeln!(out)?;
        }
    }
    for n in run_notes(r) {
        writeln!(out, "{n}")?;
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
    Ok(())
}
