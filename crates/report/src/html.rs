//! The self-contained HTML report: one file, inline CSS and SVG, a few
//! lines of inline script, no network access. It opens offline in any
//! browser and prints in greyscale.
//!
//! Sections, each present only when the runs have something for it:
//! summary table; throughput and latency per target; one chart per sweep
//! axis; the latency percentile spectrum; per-second throughput, latency,
//! server CPU / memory / disk I/O with the warm-up (and a fault) shaded; request steps;
//! errors by kind; checks; targets (version, settings, requests sent);
//! environment.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use bakeoff_core::result::{ExperimentResult, RunResult};
use bakeoff_core::summary::{summarise_runs, Headline};
use bakeoff_core::units::{fmt_bytes, fmt_ns};
use bakeoff_core::workload::OpKind;

use crate::document::{self, Block, Section};
use crate::svg::{esc, Axis, Band, BarChart, BarGroup, Line, LineChart, RightAxis, Scale, XAxis};
use crate::view::{
    at_point, client_busy, fmt_seconds, measure_start, percentile_spectrum, point_label,
    point_without, Figure, Group, Spread, View,
};
use crate::Exporter;

/// The HTML report.
pub struct HtmlExporter;

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111; margin: 24px auto; max-width: 1320px; padding: 0 16px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 34px; border-bottom: 2px solid #333; padding-bottom: 3px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #bbb; padding: 3px 8px; text-align: right; vertical-align: top; }
th { background: #eee; } td.l, th.l { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; }
figure { margin: 0; border: 1px solid #ccc; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #111; }
svg.chart text.title { font-weight: 600; font-size: 13px; }
svg.chart text.axis { font-size: 12px; fill: #333; }
svg.chart .grid { stroke: #e2e2e2; stroke-width: 1; }
svg.chart .frame { fill: none; stroke: #555; stroke-width: 1; }
svg.chart .band { fill: #000; }
svg.chart .band.work { fill: #d9730d; }
svg.chart text.band-label { font-size: 11px; fill: #444; font-style: italic; }
.warn { border: 2px solid #b00; background: #fff3f3; padding: 8px 12px; margin: 10px 0; }
.note { color: #444; } code { font-size: 12px; } details > summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
@media print { figure { break-inside: avoid; } }
"#;

/// Marks each chart once the browser has laid it out, so a test (or a
/// reader of the DOM) can tell that every chart really rendered.
const SCRIPT: &str = r#"
document.querySelectorAll('svg.chart').forEach(function (s) {
  var b = s.getBBox();
  s.setAttribute('data-rendered', (b.width > 0 && b.height > 0 && s.querySelectorAll('path,rect,circle').length > 2) ? 'yes' : 'no');
});
document.body.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
"#;

/// Builds the page.
struct Page<'a> {
    view: View<'a>,
    html: String,
    charts: usize,
}

/// Tick labels are short: the unit is in the axis title.
fn fmt_ops(v: f64) -> String {
    fmt_count(v)
}
/// Latency ticks with the shortest exact number: `10 µs`, `2.5 ms`.
fn fmt_lat(v: f64) -> String {
    let (x, unit) = if v >= 1e9 {
        (v / 1e9, "s")
    } else if v >= 1e6 {
        (v / 1e6, "ms")
    } else if v >= 1e3 {
        (v / 1e3, "µs")
    } else {
        (v, "ns")
    };
    format!("{} {unit}", trim_num(x))
}
fn fmt_pct(v: f64) -> String {
    format!("{v:.0} %")
}
/// Byte ticks with three significant digits at most: `977 KiB`, `4.8 MiB`.
fn fmt_bytes_axis(v: f64) -> String {
    let (x, unit) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .iter()
        .find(|(b, _)| v >= *b as f64)
        .map(|(b, u)| (v / *b as f64, *u))
        .unwrap_or((v, "B"));
    let digits = if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        trim_num((x * 10.0).round() / 10.0)
    } else {
        trim_num(x)
    };
    format!("{digits} {unit}")
}
fn fmt_bps(v: f64) -> String {
    format!("{}/s", fmt_bytes_axis(v))
}
fn fmt_secs(v: f64) -> String {
    format!("{v:.0} s")
}
fn fmt_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", trim_num(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", trim_num(v / 1e3))
    } else {
        trim_num(v)
    }
}
fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
fn fmt_rows(v: f64) -> String {
    fmt_count(v)
}
fn fmt_percentile(p: f64) -> String {
    // p is the "nines" position: 10^p = 1 / (1 - q), so 3 is 99.9 %.
    let q = 100.0 * (1.0 - 10f64.powf(-p));
    let decimals = (p.ceil() as usize).saturating_sub(2);
    format!("{q:.decimals$} %")
}

impl<'a> Page<'a> {
    fn h2(&mut self, id: &str, title: &str) {
        let _ = write!(self.html, r#"<h2 id="{id}">{}</h2>"#, esc(title));
    }

    /// A section of the report's document: its heading and note.
    fn section_head(&mut self, section: &Section) {
        self.h2(section.id, &section.title);
        if let Some(note) = &section.note {
            let _ = write!(self.html, r#"<p class="note">{}</p>"#, esc(note));
        }
    }

    /// A section's blocks, as the document has them.
    fn section_blocks(&mut self, section: &Section) {
        for block in &section.blocks {
            match block {
                Block::Bullets(lines) => {
                    self.html.push_str("<ul>");
                    for l in lines {
                        let _ = write!(self.html, "<li>{}</li>", esc(l));
                    }
                    self.html.push_str("</ul>");
                }
                Block::Paragraph { strong, text } => {
                    let lead = strong
                        .as_ref()
                        .map(|s| format!("<strong>{}</strong> ", esc(s)))
                        .unwrap_or_default();
                    let _ = write!(self.html, "<p>{lead}{}</p>", esc(text));
                }
                Block::Caption(c) => {
                    let _ = write!(self.html, "<p>{}:</p>", esc(c));
                }
                Block::Table(t) if !t.charts.is_empty() => self.linked_table(t),
                Block::Table(t) => {
                    let head: Vec<&str> = t.head.iter().map(String::as_str).collect();
                    self.table(&head, &t.rows, t.left);
                }
            }
        }
    }

    fn line(&mut self, chart: LineChart) {
        self.charts += 1;
        let _ = write!(self.html, "<figure>{}</figure>", chart.to_svg());
    }

    fn bars(&mut self, chart: BarChart) {
        self.charts += 1;
        let id = format!("c{}", self.charts);
        let _ = write!(self.html, "<figure>{}</figure>", chart.to_svg(&id));
    }

    /// A table whose cells link to the charts their figures come from
    /// (`t.charts`, per column), where the report has that chart.
    fn linked_table(&mut self, t: &crate::document::Table) {
        let chart = |i: usize| t.charts.get(i).copied().flatten();
        let cell = |i: usize, text: &str| match chart(i) {
            Some(anchor) => format!(r##"<a href="#{anchor}">{}</a>"##, esc(text)),
            None => esc(text),
        };
        let class = |i: usize| if i < t.left { r#" class="l""# } else { "" };
        self.html.push_str("<table><tr>");
        for (i, h) in t.head.iter().enumerate() {
            let _ = write!(self.html, "<th{}>{}</th>", class(i), cell(i, h));
        }
        self.html.push_str("</tr>");
        for r in &t.rows {
            self.html.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let _ = write!(self.html, "<td{}>{}</td>", class(i), cell(i, c));
            }
            self.html.push_str("</tr>");
        }
        self.html.push_str("</table>");
    }

    fn table(&mut self, head: &[&str], rows: &[Vec<String>], left_cols: usize) {
        let (mut head, mut rows, mut left_cols) = (head.to_vec(), rows.to_vec(), left_cols);
        crate::view::drop_blank_point(&mut head, &mut rows, &mut left_cols);
        self.html.push_str("<table><tr>");
        for (i, h) in head.iter().enumerate() {
            let _ = write!(
                self.html,
                "<th{}>{}</th>",
                if i < left_cols { r#" class="l""# } else { "" },
                esc(h)
            );
        }
        self.html.push_str("</tr>");
        for r in rows {
            self.html.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let _ = write!(
                    self.html,
                    "<td{}>{}</td>",
                    if i < left_cols { r#" class="l""# } else { "" },
                    esc(c)
                );
            }
            self.html.push_str("</tr>");
        }
        self.html.push_str("</table>");
    }

    fn header(&mut self) {
        let names: Vec<String> = self
            .view
            .sources
            .iter()
            .map(|r| r.plan.name.clone())
            .collect();
        let _ = write!(
            self.html,
            "<h1>bakeoff report: {}</h1>",
            esc(&names.join(" vs "))
        );
        for (i, r) in self.view.sources.iter().enumerate() {
            let tag = &self.view.tags[i];
            let _ = write!(
                self.html,
                r#"<p class="note">{}{} — started {}, status <b>{}</b>, {} run(s) on {} ({} cores, {}).</p>"#,
                if tag.is_empty() {
                    String::new()
                } else {
                    format!("<b>{}</b>: ", esc(tag))
                },
                esc(&r.plan.name),
                esc(&r.started_at),
                esc(r.status.as_str()),
                r.runs.len(),
                esc(&r.environment.hostname),
                r.environment.cores,
                esc(&r.environment.cpu_model)
            );
            if !r.plan.description.is_empty() {
                let _ = write!(self.html, "<p>{}</p>", esc(r.plan.description.trim()));
            }
        }
        let bound: Vec<String> = self
            .view
            .runs
            .iter()
            .filter(|r| r.run.client_limited())
            .map(|r| {
                format!(
                    "run {} ({}{}): client thread {:.0} % busy",
                    r.run.index,
                    self.view.series[r.series],
                    at_point(&r.run.point),
                    client_busy(r.run)
                )
            })
            .collect();
        if !bound.is_empty() {
            let _ = write!(
                self.html,
                r#"<div class="warn"><b>Client-bound:</b> in these runs a bakeoff client thread was busy more than 90 % of the time, so the numbers measure bakeoff as much as the target; give it more --threads or fewer clients. <ul>{}</ul></div>"#,
                bound
                    .iter()
                    .map(|b| format!("<li>{}</li>", esc(b)))
                    .collect::<String>()
            );
        }
        for (i, r) in self.view.sources.iter().enumerate() {
            for w in &r.warnings {
                let tag = &self.view.tags[i];
                let _ = write!(
                    self.html,
                    r#"<div class="warn">{}{}</div>"#,
                    if tag.is_empty() {
                        String::new()
                    } else {
                        format!("{}: ", esc(tag))
                    },
                    esc(w)
                );
            }
        }
    }

    /// Which target leads each figure, by how much; the seed's finding;
    /// first, which one fits the requirements, when the run has any.
    fn verdict(&mut self) {
        if let Some(section) = document::fit(&self.view) {
            self.section_head(&section);
            self.section_blocks(&section);
        }
        if let Some(section) = document::verdict(&self.view) {
            self.section_head(&section);
            self.section_blocks(&section);
        }
    }

    fn summary(&mut self) {
        let section = document::summary(&self.view);
        self.section_head(&section);
        self.section_blocks(&section);
        self.durability();
        self.disk();
        self.encoding();
        self.topology();
        self.searches();
        self.why_these_numbers();
        self.html.push_str(r#"<p class="note">Latencies are response times of the measured phase (warm-up excluded), all operation kinds together; throughput counts successful operations. Per operation kind: see the CSV or Markdown report.</p>"#);
    }

    /// The durability table, when some run checked durability.
    fn durability(&mut self) {
        let rows: Vec<Vec<String>> = self
            .view
            .runs
            .iter()
            .filter_map(|rr| {
                crate::durability::durability_row_of(self.view.sources[rr.source], rr.run)
            })
            .chain(crate::durability::spread_rows(
                self.view.runs.iter().map(|rr| rr.run),
            ))
            .collect();
        if rows.is_empty() {
            return;
        }
        self.declared_heading("durability");
        self.table(&crate::durability::DURABILITY_HEAD, &rows, 3);
    }

    /// The disk-per-write table, when some run measured its server's disk.
    fn disk(&mut self) {
        self.run_table(
            "disk",
            (&crate::durability::DISK_HEAD, 2),
            crate::durability::disk_row,
        );
    }

    /// The client-side encoding table, when some run's values were
    /// client-encoded.
    fn encoding(&mut self) {
        self.run_table(
            "encoding",
            (&crate::encoding::ENCODING_HEAD, 2),
            crate::encoding::encoding_row,
        );
    }

    /// The heading and note of the section declared under `id`
    /// ([`crate::sections`]).
    fn declared_heading(&mut self, id: &str) {
        let section = crate::sections::section(id);
        self.h2(section.id, section.title);
        let _ = write!(self.html, r#"<p class="note">{}</p>"#, esc(section.note));
    }

    /// The section declared under `id` with a table of one row per run
    /// that has one (`row`), under `head` with its first `left` columns
    /// aligned left; nothing when no run has a row.
    fn run_table(
        &mut self,
        id: &str,
        (head, left): (&[&str], usize),
        row: fn(&RunResult) -> Option<Vec<String>>,
    ) {
        let rows: Vec<Vec<String>> = self.view.runs.iter().filter_map(|rr| row(rr.run)).collect();
        if rows.is_empty() {
            return;
        }
        self.declared_heading(id);
        self.table(head, &rows, left);
    }

    /// Why the numbers are what they are: what limited each run, the
    /// server's own time per command for each result whose runs have it,
    /// then, where the server keeps a distribution, the server's and the
    /// client's side by side, drawn and in a table.
    fn why_these_numbers(&mut self) {
        let sources = self.view.sources.clone();
        for (id, rows_of, left) in [
            (
                "bottleneck",
                crate::sections::bottleneck_rows as fn(&_) -> _,
                2,
            ),
            ("server-time", crate::sections::server_time_rows, 3),
            (
                "server-time-distribution",
                crate::sections::server_distribution_rows,
                4,
            ),
            ("background", crate::background::background_rows, 3),
            ("background-tail", crate::background::tail_rows, 2),
        ] {
            let tables: Vec<_> = sources.iter().filter_map(|r| rows_of(r)).collect();
            if tables.is_empty() {
                continue;
            }
            self.declared_heading(id);
            if id == "server-time-distribution" {
                self.distribution_charts(&sources);
            }
            for rows in tables {
                let head: Vec<&str> = rows[0].iter().map(String::as_str).collect();
                self.table(&head, &rows[1..], left);
            }
        }
    }

    /// One chart per command whose server keeps a distribution: the
    /// server's calls and the client's operations per bucket, as shares.
    fn distribution_charts(&mut self, sources: &[&bakeoff_core::result::ExperimentResult]) {
        self.html.push_str(r#"<div class="charts">"#);
        for r in sources {
            for run in &r.runs {
                for c in run.server_time.iter().flat_map(|t| &t.commands) {
                    if c.histogram.is_empty() {
                        continue;
                    }
                    let total = |pick: fn(&bakeoff_core::result::TimeBucket) -> u64| {
                        c.histogram.iter().map(pick).sum::<u64>().max(1) as f64
                    };
                    let (server, client) = (total(|b| b.server), total(|b| b.client));
                    let groups = vec![
                        BarGroup {
                            name: "inside the server".into(),
                            style: 0,
                            values: c
                                .histogram
                                .iter()
                                .map(|b| Some(b.server as f64 / server * 100.0))
                                .collect(),
                            ranges: Vec::new(),
                        },
                        BarGroup {
                            name: "at the client".into(),
                            style: 1,
                            values: c
                                .histogram
                                .iter()
                                .map(|b| Some(b.client as f64 / client * 100.0))
                                .collect(),
                            ranges: Vec::new(),
                        },
                    ];
                    self.bars(BarChart {
                        title: format!(
                            "{} {}: time inside the server and at the client",
                            run.target, c.command
                        ),
                        categories: c
                            .histogram
                            .iter()
                            .map(|b| format!("≤ {}", fmt_ns(b.le_us as f64 * 1e3)))
                            .collect(),
                        x_title: "time, power-of-two buckets".into(),
                        y: Axis::linear("share of calls", |v| format!("{} %", trim_num(v))),
                        groups,
                    });
                }
            }
        }
        self.html.push_str("</div>");
    }

    /// Replication drawn: write and read rates alone against with a
    /// replica, for each target and point; the stale-read rate of each
    /// replicated run. (Lag over time is among the resource charts.)
    fn replication_charts(&mut self, runs: &[&bakeoff_core::result::RunResult]) {
        use crate::topology::{replication_rates, stale_read_rates};
        let rates = replication_rates(runs);
        let categories: Vec<String> = rates.iter().map(|r| r.label.clone()).collect();
        self.html.push_str(r#"<div class="charts">"#);
        type Pick = fn(&crate::topology::ReplicationRates) -> [Option<f64>; 2];
        let picks: [(&str, Pick); 2] = [("Write rate", |r| r.writes), ("Read rate", |r| r.reads)];
        for (what, pick) in picks {
            let groups: Vec<BarGroup> = ["single server", "with a replica"]
                .iter()
                .enumerate()
                .map(|(side, name)| BarGroup {
                    name: name.to_string(),
                    style: side,
                    values: rates.iter().map(|r| pick(r)[side]).collect(),
                    ranges: Vec::new(),
                })
                .collect();
            if groups[1].values.iter().all(|v| v.is_none_or(|v| v == 0.0)) {
                continue;
            }
            self.bars(BarChart {
                title: format!("{what}, single server and with a replica (higher is better)"),
                categories: categories.clone(),
                x_title: "target and point".into(),
                y: Axis::linear("operations per second", fmt_count),
                groups,
            });
        }
        let stale = stale_read_rates(runs);
        if !stale.is_empty() {
            self.bars(BarChart {
                title: "Stale reads at the replica, % of reads (lower is better)".into(),
                categories: stale.iter().map(|(l, _)| l.clone()).collect(),
                x_title: "target and point".into(),
                y: Axis::linear("stale reads", |v| format!("{} %", trim_num(v))),
                groups: vec![BarGroup {
                    name: "stale reads".into(),
                    style: 0,
                    values: stale.iter().map(|(_, v)| Some(*v)).collect(),
                    ranges: Vec::new(),
                }],
            });
        }
        self.html.push_str("</div>");
    }

    /// Peak and capacity searches: the table of what each found, then per
    /// point throughput against clients with each peak marked, and the
    /// percentile against the offered load with the bound, every target on
    /// one chart.
    fn searches(&mut self) {
        use crate::search::*;
        let sources = self.view.sources.clone();
        let rows: Vec<Vec<String>> = sources
            .iter()
            .flat_map(|r| r.searches.iter().map(search_row))
            .collect();
        if rows.is_empty() {
            return;
        }
        self.declared_heading("searches");
        self.table(&SEARCH_HEAD, &rows, 3);
        // One chart per kind and point, a line per series.
        // (kind, point) → (series, steps drawn, the step found).
        type Steps = Vec<(usize, Vec<(f64, f64)>, Option<(f64, f64)>)>;
        let mut charts: BTreeMap<(String, String), Steps> = BTreeMap::new();
        let mut bounds: BTreeMap<(String, String), f64> = BTreeMap::new();
        for (si, r) in sources.iter().enumerate() {
            for s in &r.searches {
                let Some(series) = s
                    .runs
                    .first()
                    .and_then(|i| {
                        self.view
                            .runs
                            .iter()
                            .find(|rr| rr.source == si && rr.run.index == *i)
                    })
                    .map(|rr| rr.series)
                else {
                    continue;
                };
                let key = (s.kind.clone(), crate::view::point_label(&s.point));
                let (points, mark) = if s.kind == "capacity" {
                    let b = s.bound.map(|b| b.max_ns as f64).unwrap_or(0.0);
                    bounds.insert(key.clone(), b);
                    let mark = s.rate_per_s.zip(s.latency_ns.map(|l| l as f64));
                    (latency_against_load(r, s), mark)
                } else {
                    let mark = s.clients.map(f64::from).zip(s.throughput_per_s);
                    (throughput_against_clients(r, s), mark)
                };
                charts.entry(key).or_default().push((series, points, mark));
            }
        }
        self.html.push_str(r#"<div class="charts">"#);
        // The seed's bars: each target's peak at each point.
        let peak_points: Vec<String> = charts
            .keys()
            .filter(|(k, _)| k == "peak")
            .map(|(_, p)| p.clone())
            .collect();
        if !peak_points.is_empty() {
            let mut groups: BTreeMap<usize, Vec<Option<f64>>> = BTreeMap::new();
            for (pi, p) in peak_points.iter().enumerate() {
                for (series, _, mark) in &charts[&("peak".to_string(), p.clone())] {
                    let g = groups
                        .entry(*series)
                        .or_insert_with(|| vec![None; peak_points.len()]);
                    g[pi] = mark.map(|m| m.1);
                }
            }
            self.bars(BarChart {
                title: "Peak throughput (higher is better)".into(),
                categories: peak_points.clone(),
                x_title: "point".into(),
                y: Axis::linear("operations per second", fmt_ops),
                groups: groups
                    .into_iter()
                    .map(|(series, values)| BarGroup {
                        name: self.view.series[series].clone(),
                        style: series,
                        values,
                        ranges: Vec::new(),
                    })
                    .collect(),
            });
        }
        for ((kind, point), lines) in charts {
            let mut all: Vec<Line> = Vec::new();
            for (series, points, mark) in &lines {
                let name = &self.view.series[*series];
                all.push(Line {
                    name: name.clone(),
                    points: points.clone(),
                    ranges: Vec::new(),
                    style: *series,
                    markers: true,
                    band: false,
                });
                if let Some(m) = mark {
                    all.push(Line {
                        name: format!(
                            "{name}: {}",
                            if kind == "capacity" {
                                "capacity"
                            } else {
                                "peak"
                            }
                        ),
                        points: vec![*m],
                        ranges: vec![Some((m.1 * 0.9, m.1 * 1.1))],
                        style: *series,
                        markers: true,
                        band: false,
                    });
                }
            }
            if kind == "capacity" {
                let b = bounds
                    .get(&(kind.clone(), point.clone()))
                    .copied()
                    .unwrap_or(0.0);
                let xs = all.iter().flat_map(|l| l.points.iter().map(|p| p.0));
                let hi = xs.fold(0.0f64, f64::max);
                all.push(Line {
                    name: format!("bound {}", fmt_lat(b)),
                    points: vec![(0.0, b), (hi, b)],
                    ranges: Vec::new(),
                    style: 7,
                    markers: false,
                    band: false,
                });
                let scale =
                    Scale::fitting(all.iter().flat_map(|l| l.points.iter().map(|p| p.1)), 50.0);
                self.line(LineChart {
                    title: format!(
                        "{point}: latency against the offered load (the bound's percentile)"
                    ),
                    x: XAxis::Numeric(Axis::linear("offered load (ops/s)", fmt_ops)),
                    y: Axis::linear("response time", fmt_lat).with_scale(scale),
                    lines: all,
                    bands: Vec::new(),
                });
            } else {
                self.line(LineChart {
                    title: format!("{point}: throughput against clients, the peak marked"),
                    x: XAxis::Numeric(Axis::linear("clients", fmt_count).with_scale(Scale::Log)),
                    y: Axis::linear("operations per second", fmt_ops),
                    lines: all,
                    bands: Vec::new(),
                });
            }
        }
        self.html.push_str("</div>");
    }

    /// The per-node and link tables, when some run was sharded or linked.
    fn topology(&mut self) {
        use crate::topology::*;
        let runs: Vec<&bakeoff_core::result::RunResult> =
            self.view.runs.iter().map(|rr| rr.run).collect();
        let nodes: Vec<Vec<String>> = runs.iter().filter_map(|r| nodes_row(r)).collect();
        if !nodes.is_empty() {
            self.declared_heading("nodes");
            self.table(&NODES_HEAD, &nodes, 2);
        }
        let replication: Vec<Vec<String>> =
            runs.iter().filter_map(|r| replication_row(r)).collect();
        if !replication.is_empty() {
            self.declared_heading("replication");
            self.table(&REPLICATION_HEAD, &replication, 3);
            self.replication_charts(&runs);
        }
        let sources = self.view.sources.clone();
        for r in sources {
            if let Some(rows) = shards_rows(r) {
                self.declared_heading("shards");
                let head: Vec<&str> = rows[0].iter().map(String::as_str).collect();
                self.table(&head, &rows[1..], 2);
            }
        }
        let links: Vec<Vec<String>> = runs.iter().filter_map(|r| link_row(r)).collect();
        if !links.is_empty() {
            self.declared_heading("link");
            self.table(&LINK_HEAD, &links, 3);
        }
    }

    /// Throughput bars and latency-percentile bars per series, one category
    /// per point: the median of the repeats, with its 95 % interval as
    /// whiskers (between runs with 6 repeats or more, within the run for
    /// one; none for 2 to 5).
    fn overview(&mut self) {
        let groups = self.view.groups();
        let points = self.view.points();
        if points.len() > 12 {
            return; // the sweep charts say it better
        }
        self.h2("overview", "Throughput and latency per target");
        self.html.push_str(r#"<div class="charts">"#);
        let cats: Vec<String> = points.iter().map(point_label).collect();
        let series = self.view.series.clone();
        let summary_of = |g: &Group| summarise_runs(&series[g.series], &g.point, &g.runs);
        let tp: Vec<BarGroup> = (0..self.view.series.len())
            .map(|s| {
                let bars: Vec<_> = points
                    .iter()
                    .map(|p| {
                        groups
                            .iter()
                            .find(|g| g.series == s && &g.point == p)
                            .map_or((None, None), |g| {
                                bar_of(&summary_of(g), Headline::Throughput)
                            })
                    })
                    .collect();
                BarGroup {
                    name: self.view.series[s].clone(),
                    style: s,
                    values: bars.iter().map(|b| b.0).collect(),
                    ranges: bars.iter().map(|b| b.1).collect(),
                }
            })
            .collect();
        let scale = Scale::fitting(
            tp.iter().flat_map(|g| g.values.iter().flatten().copied()),
            50.0,
        );
        self.bars(BarChart {
            title: "Throughput (higher is better)".into(),
            // Without a sweep, one category with no name: no axis title.
            x_title: if cats.iter().all(String::is_empty) {
                String::new()
            } else {
                "point".into()
            },
            categories: cats.clone(),
            y: Axis::linear("throughput (ops/s)", fmt_ops).with_scale(scale),
            groups: tp,
        });
        // Percentiles: one chart, categories = percentile, bars = series; a
        // sweep gets one chart per point.
        for p in &points {
            let mut gs = Vec::new();
            for s in 0..self.view.series.len() {
                let Some(g) = groups.iter().find(|g| g.series == s && &g.point == p) else {
                    continue;
                };
                let summary = summary_of(g);
                let bars: Vec<_> = [Headline::P50, Headline::P99, Headline::P999]
                    .into_iter()
                    .map(|h| bar_of(&summary, h))
                    .collect();
                gs.push(BarGroup {
                    name: self.view.series[s].clone(),
                    style: s,
                    values: bars.iter().map(|b| b.0).collect(),
                    ranges: bars.iter().map(|b| b.1).collect(),
                });
            }
            let scale = Scale::fitting(
                gs.iter().flat_map(|g| g.values.iter().flatten().copied()),
                20.0,
            );
            self.bars(BarChart {
                title: format!("Latency percentiles (lower is better){}", at_point(p)),
                categories: vec!["p50".into(), "p99".into(), "p99.9".into()],
                x_title: "percentile".into(),
                y: Axis::linear("latency", fmt_lat).with_scale(scale),
                groups: gs,
            });
            self.kinds_side_by_side(p, &groups);
        }
        self.html.push_str("</div>");
        self.html.push_str(r#"<p class="note">Bars: the median of each target's repeats. Whiskers: its 95 % interval, between runs with 6 repeats or more (would a rerun agree), within the run for one (per-second windows for throughput, order statistics of the operations for percentiles: a rerun may differ more); none for 2 to 5 repeats, too few for one.</p>"#);
    }

    /// A point that mixes several kinds of operation (YCSB's workloads, a
    /// replayed trace): each kind's throughput and p99 side by side, a bar
    /// per series (the median over repeats).
    fn kinds_side_by_side(&mut self, p: &BTreeMap<String, String>, groups: &[Group]) {
        let mine: Vec<&Group> = groups.iter().filter(|g| &g.point == p).collect();
        let kinds: Vec<&str> = OpKind::ALL
            .iter()
            .map(|k| k.name())
            .filter(|k| {
                mine.iter()
                    .flat_map(|g| &g.runs)
                    .any(|r| r.measure.ops.get(*k).is_some_and(|o| o.completed > 0))
            })
            .collect();
        if kinds.len() < 2 {
            return;
        }
        type PickK = fn(&RunResult, &str) -> Option<f64>;
        let figures: [(&str, PickK, Axis); 2] = [
            (
                "Throughput of each kind of operation (higher is better)",
                |r, k| {
                    let o = r.measure.ops.get(k)?;
                    (r.measure.duration_s > 0.0).then(|| o.completed as f64 / r.measure.duration_s)
                },
                Axis::linear("throughput (ops/s)", fmt_ops),
            ),
            (
                "p99 latency of each kind of operation (lower is better)",
                |r, k| r.measure.ops.get(k).map(|o| o.latency.p99_ns as f64),
                Axis::linear("p99 latency", fmt_lat),
            ),
        ];
        for (title, pick, axis) in figures {
            let gs: Vec<BarGroup> = mine
                .iter()
                .map(|g| {
                    let sps: Vec<Option<Spread>> = kinds
                        .iter()
                        .map(|k| Spread::of(g.runs.iter().filter_map(|r| pick(r, k))))
                        .collect();
                    BarGroup {
                        name: self.view.series[g.series].clone(),
                        style: g.series,
                        values: sps.iter().map(|x| x.map(|x| x.median)).collect(),
                        ranges: sps
                            .iter()
                            .map(|x| x.filter(|x| x.n > 1).map(|x| (x.min, x.max)))
                            .collect(),
                    }
                })
                .collect();
            let scale = Scale::fitting(
                gs.iter().flat_map(|g| g.values.iter().flatten().copied()),
                20.0,
            );
            self.bars(BarChart {
                title: format!("{title}{}", at_point(p)),
                categories: kinds.iter().map(|k| k.to_string()).collect(),
                x_title: "operation".into(),
                y: axis.with_scale(scale),
                groups: gs,
            });
        }
    }

    /// For each sweep axis and each combination of the other axes: the
    /// figures against the axis, one line (or bar) per series.
    fn sweeps(&mut self) {
        if self.view.axes.is_empty() {
            return;
        }
        self.h2("sweeps", "Against each sweep axis");
        let groups = self.view.groups();
        let axes = self.view.axes.clone();
        for axis in axes {
            let ordered = axis.is_ordered();
            let title = axis.title();
            let (name, labels, numbers) = (axis.name, axis.labels, axis.numbers);
            let mut fixed: Vec<BTreeMap<String, String>> = Vec::new();
            for g in &groups {
                let f = point_without(&g.point, &name);
                if !fixed.contains(&f) {
                    fixed.push(f);
                }
            }
            let _ = write!(self.html, "<h3>{}</h3>", esc(&title));
            self.html.push_str(r#"<div class="charts">"#);
            let has_load = groups
                .iter()
                .any(|g| g.runs.iter().any(|r| r.load.is_some()));
            for f in &fixed {
                let suffix = if f.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", point_label(f))
                };
                type Pick = fn(&RunResult) -> Option<f64>;
                let mut figs: Vec<(&str, Pick, Axis)> = vec![
                    (
                        "Throughput",
                        (|r: &RunResult| Some(Figure::Throughput.of(r))),
                        Axis::linear("throughput (ops/s)", fmt_ops),
                    ),
                    (
                        "Mean latency",
                        (|r: &RunResult| Some(Figure::Mean.of(r))),
                        Axis::linear("mean latency", fmt_lat),
                    ),
                    (
                        "p99 latency",
                        (|r: &RunResult| Some(Figure::P99.of(r))),
                        Axis::linear("p99 latency", fmt_lat),
                    ),
                ];
                if has_load && name == "records" {
                    figs.push((
                        "Load rate",
                        (|r: &RunResult| r.load.as_ref().map(|l| l.records_written_per_s())),
                        Axis::linear("records written (rec/s)", fmt_rows),
                    ));
                }
                let faulted = groups
                    .iter()
                    .any(|g| g.runs.iter().any(|r| r.fault.is_some()));
                if faulted {
                    figs.push((
                        "Time to serve again after the fault",
                        (|r: &RunResult| r.fault.as_ref().and_then(|f| f.back_after_s)),
                        Axis::linear("until its port answered", fmt_seconds),
                    ));
                    figs.push((
                        "Time to 90 % throughput after the fault",
                        (|r: &RunResult| r.fault.as_ref().and_then(|f| f.recovered_after_s)),
                        Axis::linear("until throughput was back", fmt_seconds),
                    ));
                }
                for (what, get, axis) in figs {
                    let chart_title = format!("{what} vs {name}{suffix}");
                    let series_groups: Vec<(usize, Vec<(usize, Spread)>)> =
                        (0..self.view.series.len())
                            .map(|s| {
                                let pts = labels
                                    .iter()
                                    .enumerate()
                                    .filter_map(|(i, l)| {
                                        let mut want = f.clone();
                                        want.insert(name.clone(), l.clone());
                                        let g: &Group = groups
                                            .iter()
                                            .find(|g| g.series == s && g.point == want)?;
                                        Spread::of(g.runs.iter().filter_map(|r| get(r)))
                                            .map(|sp| (i, sp))
                                    })
                                    .collect();
                                (s, pts)
                            })
                            .filter(|(_, p): &(usize, Vec<(usize, Spread)>)| !p.is_empty())
                            .collect();
                    let all_values = series_groups
                        .iter()
                        .flat_map(|(_, p)| p.iter().map(|x| x.1.median));
                    let yscale = Scale::fitting(
                        all_values,
                        if what == "Throughput" || what == "Load rate" {
                            50.0
                        } else {
                            20.0
                        },
                    );
                    let axis = axis.with_scale(yscale);
                    if ordered {
                        let x = match &numbers {
                            Some(nums) => XAxis::Numeric(
                                Axis::linear(
                                    title.clone(),
                                    if name == "value_size" || name == "memory_cap" {
                                        fmt_bytes_axis
                                    } else {
                                        fmt_count
                                    },
                                )
                                .with_scale(Scale::fitting(nums.iter().copied(), 20.0)),
                            ),
                            None => XAxis::Categories {
                                title: title.clone(),
                                labels: labels.clone(),
                            },
                        };
                        let lines = series_groups
                            .iter()
                            .map(|(s, pts)| Line {
                                name: self.view.series[*s].clone(),
                                points: pts
                                    .iter()
                                    .map(|(i, sp)| {
                                        (
                                            numbers.as_ref().map(|n| n[*i]).unwrap_or(*i as f64),
                                            sp.median,
                                        )
                                    })
                                    .collect(),
                                ranges: pts
                                    .iter()
                                    .map(|(_, sp)| (sp.n > 1).then_some((sp.min, sp.max)))
                                    .collect(),
                                style: *s,
                                markers: true,
                                band: false,
                            })
                            .collect();
                        self.line(LineChart {
                            title: chart_title,
                            x,
                            y: axis,
                            lines,
                            bands: vec![],
                        });
                    } else {
                        let groups_b = series_groups
                            .iter()
                            .map(|(s, pts)| BarGroup {
                                name: self.view.series[*s].clone(),
                                style: *s,
                                values: (0..labels.len())
                                    .map(|i| pts.iter().find(|p| p.0 == i).map(|p| p.1.median))
                                    .collect(),
                                ranges: (0..labels.len())
                                    .map(|i| {
                                        pts.iter()
                                            .find(|p| p.0 == i && p.1.n > 1)
                                            .map(|p| (p.1.min, p.1.max))
                                    })
                                    .collect(),
                            })
                            .collect();
                        self.bars(BarChart {
                            title: chart_title,
                            categories: labels.clone(),
                            x_title: title.clone(),
                            y: axis,
                            groups: groups_b,
                        });
                    }
                }
            }
            self.html.push_str("</div>");
        }
    }

    /// Latency at every percentile, per point, one line per series.
    fn spectrum(&mut self) {
        self.h2("spectrum", "Latency percentile spectrum");
        self.html.push_str(r#"<p class="note">Response time at each percentile of the measured phase (first repeat); the x axis counts nines, so the tail gets the room it needs. Shaded: each percentile's 95 % interval within the run (order statistics of its operations; it ends where too few operations lie beyond the percentile to give one). A rerun may differ more.</p><div class="charts">"#);
        for p in self.view.points() {
            let lines: Vec<Line> = self
                .view
                .runs
                .iter()
                .filter(|r| r.run.point == p && r.run.repeat == 0)
                .map(|r| {
                    let spectrum = percentile_spectrum(r.run);
                    Line {
                        name: self.view.series[r.series].clone(),
                        points: spectrum
                            .iter()
                            .map(|s| (-(1.0 - s.percentile / 100.0).log10(), s.latency_ns))
                            .collect(),
                        ranges: spectrum.iter().map(|s| s.interval).collect(),
                        band: true,
                        style: r.series,
                        ..Line::default()
                    }
                })
                .collect();
            let scale = Scale::fitting(
                lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
                20.0,
            );
            self.line(LineChart {
                title: format!("Latency by percentile{}", at_point(&p)),
                x: XAxis::Numeric(Axis {
                    title: "percentile".into(),
                    scale: Scale::Linear,
                    format: fmt_percentile,
                    from_zero: false,
                }),
                y: Axis::linear("latency", fmt_lat).with_scale(scale),
                lines,
                bands: vec![],
            });
        }
        self.html.push_str("</div>");
    }

    /// Per-second charts for each point (first repeat), warm-up shaded.
    /// The latency of each traced operation in time order, one line per
    /// target, the means in the title (the charts of 000-set and 000-get).
    fn traces(&mut self) {
        let points = self.view.points();
        let mut charts = Vec::new();
        for p in &points {
            let runs: Vec<(usize, &bakeoff_core::trace::LatencyTrace)> = self
                .view
                .runs
                .iter()
                .filter(|r| &r.run.point == p && r.run.repeat == 0)
                .filter_map(|r| r.run.trace.as_ref().map(|t| (r.series, t)))
                .filter(|(_, t)| !t.latency_us.is_empty())
                .collect();
            if !runs.is_empty() {
                charts.push((p, runs));
            }
        }
        if charts.is_empty() {
            return;
        }
        self.h2("trace", "Latency of each operation");
        self.html.push_str(r#"<p class="note">The response time of single measured operations in the order they finished (all clients together), as the seeds drew them: every operation while the trace's bound (<code>--trace</code>) held them all, else every Nth, evenly over the run. The mean in the title is that of the operations drawn.</p><div class="charts">"#);
        for (p, runs) in charts {
            let means = runs
                .iter()
                .map(|(s, t)| format!("{} {}", self.view.series[*s], fmt_lat(t.mean_us() * 1e3)))
                .collect::<Vec<_>>()
                .join(", ");
            let lines: Vec<Line> = runs
                .iter()
                .map(|(s, t)| {
                    let step = t.operations as f64 / t.latency_us.len() as f64;
                    Line {
                        name: self.view.series[*s].clone(),
                        points: t
                            .latency_us
                            .iter()
                            .enumerate()
                            .map(|(i, us)| ((i as f64 * step).round(), us * 1e3))
                            .collect(),
                        ranges: Vec::new(),
                        style: *s,
                        markers: false,
                        band: false,
                    }
                })
                .collect();
            let scale = Scale::fitting(
                lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
                50.0,
            );
            self.line(LineChart {
                title: match point_label(p) {
                    label if label.is_empty() => format!("mean: {means}"),
                    label => format!("{label} — mean: {means}"),
                },
                x: XAxis::Numeric(Axis::linear("operation, in time order", fmt_count)),
                y: Axis::linear("response time", fmt_lat).with_scale(scale),
                lines,
                bands: Vec::new(),
            });
        }
        self.html.push_str("</div>");
    }

    fn timelines(&mut self) {
        self.h2("timeline", "Second by second");
        self.html.push_str(r#"<p class="note">Each point's first repeat; time 0 is the start of the measured phase; the shaded stretches before it are the load and the warm-up, excluded from every other number; a fault (<code>--fault</code>) is shaded from its moment until the server held its port again. Server resources are those of the managed server (its processes summed), or of bakeoff itself for an in-process engine.</p>"#);
        let points = self.view.points();
        let many = points.len() > 4;
        for (pi, p) in points.iter().enumerate() {
            let runs: Vec<(usize, &RunResult)> = self
                .view
                .runs
                .iter()
                .filter(|r| &r.run.point == p && r.run.repeat == 0)
                .map(|r| (r.series, r.run))
                .collect();
            let _ = write!(
                self.html,
                "<details{}><summary>{}</summary><div class=\"charts\">",
                if many && pi > 0 { "" } else { " open" },
                esc(&match point_label(p) {
                    label if label.is_empty() => "every run".to_string(),
                    label => format!("point {label}"),
                })
            );
            let bands = phase_bands(&runs);
            let xaxis = || {
                XAxis::Numeric(Axis {
                    title: "time from the start of measurement (s)".into(),
                    scale: Scale::Linear,
                    format: fmt_secs,
                    from_zero: false,
                })
            };
            type Pick = fn(&bakeoff_core::result::TimelinePoint) -> f64;
            let tl: [(&str, Pick, Axis); 2] = [
                (
                    "Throughput per second",
                    |t| t.ops_per_s as f64,
                    Axis::linear("throughput (ops/s)", fmt_ops),
                ),
                (
                    "p99 latency per second",
                    |t| t.p99_ns as f64,
                    Axis::linear("p99 latency", fmt_lat),
                ),
            ];
            for (i, (title, pick, axis)) in tl.into_iter().enumerate() {
                let mut lines: Vec<Line> = runs
                    .iter()
                    .map(|(s, r)| Line {
                        name: self.view.series[*s].clone(),
                        // The value of second t is drawn at its middle.
                        points: measured_seconds(r)
                            .map(|t| (t.t_s as f64 - measure_start(r) + 0.5, pick(t)))
                            .collect(),
                        style: *s,
                        markers: r.timeline.len() <= 30,
                        ..Line::default()
                    })
                    .collect();
                if i == 0 {
                    // A replay's throughput beside the rate of the trace it
                    // replays, at the replay's speed.
                    lines.extend(trace_rate_line(&runs, self.view.series.len()));
                }
                let scale = Scale::fitting(
                    lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
                    50.0,
                );
                self.line(LineChart {
                    title: title.into(),
                    x: xaxis(),
                    y: axis.with_scale(scale),
                    lines,
                    bands: bands.clone(),
                });
            }
            let capped = runs
                .iter()
                .any(|(_, r)| r.resources.iter().any(|s| s.cgroup_memory_bytes.is_some()));
            type PickR = fn(&bakeoff_core::result::ResourceSample) -> Option<f64>;
            let mut res: Vec<(&str, PickR, Axis)> = vec![
                (
                    "Server CPU",
                    |s| Some(s.cpu_percent),
                    Axis::linear("CPU (% of one core)", fmt_pct),
                ),
                (
                    "Server memory (proportional set size: a page its processes share counts once)",
                    |s| Some(s.memory_bytes() as f64),
                    Axis::linear("memory", fmt_bytes_axis),
                ),
                (
                    "Disk reads",
                    |s| Some(s.read_bytes_per_s),
                    Axis::linear("read from storage (bytes/s)", fmt_bps),
                ),
                (
                    "Disk writes",
                    |s| Some(s.write_bytes_per_s),
                    Axis::linear("written to storage (bytes/s)", fmt_bps),
                ),
            ];
            if runs
                .iter()
                .any(|(_, r)| r.resources.iter().any(|s| s.write_calls_per_s.is_some()))
            {
                res.push((
                    "Server write calls",
                    |s| s.write_calls_per_s,
                    Axis::linear("write system calls per second", fmt_count),
                ));
            }
            if runs
                .iter()
                .any(|(_, r)| r.resources.iter().any(|s| s.fsyncs_per_s.is_some()))
            {
                res.push((
                    "fsync calls (power-cut layer)",
                    |s| s.fsyncs_per_s,
                    Axis::linear("fsync + fdatasync per second", fmt_count),
                ));
            }
            if runs.iter().any(|(_, r)| {
                r.resources
                    .iter()
                    .any(|s| s.replication_lag_bytes.is_some())
            }) {
                res.push((
                    "Replication lag (bytes of the stream the replica has still to apply)",
                    |s| s.replication_lag_bytes.map(|b| b as f64),
                    Axis::linear("lag", fmt_bytes_axis),
                ));
            }
            if runs
                .iter()
                .any(|(_, r)| r.resources.iter().any(|s| s.disk_bytes > 0))
            {
                res.push((
                    "Data size (the server's data directory)",
                    |s| Some(s.disk_bytes as f64),
                    Axis::linear("bytes on disk", fmt_bytes_axis),
                ));
            }
            if runs
                .iter()
                .any(|(_, r)| r.resources.iter().any(|s| s.connections.is_some()))
            {
                res.push((
                    "Connections the server holds",
                    |s| s.connections.map(|c| c as f64),
                    Axis::linear("established TCP connections", fmt_count),
                ));
            }
            if capped {
                res.insert(
                    1,
                    (
                        "Memory in the capped cgroup (RSS + page cache)",
                        |s| s.cgroup_memory_bytes.map(|b| b as f64),
                        Axis::linear("memory charged", fmt_bytes_axis),
                    ),
                );
                res.insert(
                    2,
                    (
                        "Page cache in the capped cgroup",
                        |s| s.cgroup_cache_bytes.map(|b| b as f64),
                        Axis::linear("page cache", fmt_bytes_axis),
                    ),
                );
            }
            if runs.iter().any(|(_, r)| !r.resources.is_empty()) {
                for (title, pick, axis) in res {
                    let lines: Vec<Line> = runs
                        .iter()
                        .filter(|(_, r)| !r.resources.is_empty())
                        .map(|(s, r)| Line {
                            name: self.view.series[*s].clone(),
                            points: r
                                .resources
                                .iter()
                                .filter_map(|x| pick(x).map(|v| (x.t_s - measure_start(r), v)))
                                .collect(),
                            style: *s,
                            markers: r.resources.len() <= 30,
                            ..Line::default()
                        })
                        .collect();
                    self.line(LineChart {
                        title: title.into(),
                        x: xaxis(),
                        y: axis,
                        lines,
                        bands: bands.clone(),
                    });
                }
            }
            if capped {
                self.latency_and_memory(&runs, &bands);
            }
            self.node_charts(&runs, &bands);
            self.html.push_str("</div></details>");
        }
    }

    /// Under a memory cap (000-beyond-memory): each run's latency per
    /// second and the memory charged to its cgroup on one timeline, so the
    /// moment the data outgrows memory shows in both.
    fn latency_and_memory(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        for (s, r) in runs {
            let start = measure_start(r);
            let latency =
                |name: &str,
                 style: usize,
                 pick: fn(&bakeoff_core::result::TimelinePoint) -> u64| Line {
                    name: name.into(),
                    points: r
                        .timeline
                        .iter()
                        .map(|t| (t.t_s as f64 - start + 0.5, pick(t) as f64))
                        .collect(),
                    style,
                    markers: r.timeline.len() <= 30,
                    ..Line::default()
                };
            let memory = Line {
                name: "memory charged (RSS + page cache)".into(),
                points: r
                    .resources
                    .iter()
                    .filter_map(|x| Some((x.t_s - start, x.cgroup_memory_bytes? as f64)))
                    .collect(),
                style: 2,
                markers: false,
                ..Line::default()
            };
            if memory.points.is_empty() {
                continue;
            }
            let chart = LineChart {
                title: format!("Latency and memory over the run: {}", self.view.series[*s]),
                x: XAxis::Numeric(Axis {
                    title: "time from the start of measurement (s)".into(),
                    scale: Scale::Linear,
                    format: fmt_secs,
                    from_zero: false,
                }),
                y: Axis::linear("latency per second", fmt_lat),
                lines: vec![
                    latency("p50 latency", 0, |t| t.p50_ns),
                    latency("p99 latency", 1, |t| t.p99_ns),
                ],
                bands: bands.to_vec(),
            };
            let right = RightAxis {
                axis: Axis::linear("memory", fmt_bytes_axis),
                lines: vec![memory],
            };
            self.charts += 1;
            let _ = write!(
                self.html,
                "<figure>{}</figure>",
                chart.to_svg_with_right(&right)
            );
        }
    }

    /// CPU, memory and disk writes of each node, for runs on several
    /// servers: one line per run and node, named by its role and address.
    fn node_charts(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        let runs: Vec<&(usize, &RunResult)> = runs
            .iter()
            .filter(|(_, r)| r.resources.iter().any(|x| !x.nodes.is_empty()))
            .collect();
        if runs.is_empty() {
            return;
        }
        type PickN = fn(&bakeoff_core::result::NodeResourceSample) -> f64;
        let charts: [(&str, PickN, Axis); 3] = [
            (
                "Server CPU of each node",
                |n| n.cpu_percent,
                Axis::linear("CPU (% of one core)", fmt_pct),
            ),
            (
                "Server memory (proportional set size) of each node",
                |n| n.memory_bytes() as f64,
                Axis::linear("memory", fmt_bytes_axis),
            ),
            (
                "Disk writes of each node",
                |n| n.write_bytes_per_s,
                Axis::linear("written to storage (bytes/s)", fmt_bps),
            ),
        ];
        for (title, pick, axis) in charts {
            let mut lines = Vec::new();
            for (s, r) in &runs {
                let n = r.resources.iter().map(|x| x.nodes.len()).max().unwrap_or(0);
                for i in 0..n {
                    lines.push(Line {
                        name: format!("{} · {}", self.view.series[*s], node_name(r, i)),
                        points: r
                            .resources
                            .iter()
                            .filter_map(|x| {
                                x.nodes.get(i).map(|v| (x.t_s - measure_start(r), pick(v)))
                            })
                            .collect(),
                        style: *s * n + i,
                        markers: r.resources.len() <= 30,
                        ..Line::default()
                    });
                }
            }
            self.line(LineChart {
                title: title.into(),
                x: XAxis::Numeric(Axis {
                    title: "time from the start of measurement (s)".into(),
                    scale: Scale::Linear,
                    format: fmt_secs,
                    from_zero: false,
                }),
                y: axis,
                lines,
                bands: bands.to_vec(),
            });
        }
    }

    /// Phased requests: mean time of each step, per series.
    fn steps(&mut self) {
        let with_steps: Vec<(usize, &RunResult)> = self
            .view
            .runs
            .iter()
            .filter(|r| !r.run.measure.steps.is_empty() && r.run.repeat == 0)
            .map(|r| (r.series, r.run))
            .collect();
        let Some(section) = document::steps(&self.view) else {
            return;
        };
        self.section_head(&section);
        let mut names: Vec<String> = Vec::new();
        for (_, r) in &with_steps {
            for s in &r.measure.steps {
                if !names.contains(&s.name) {
                    names.push(s.name.clone());
                }
            }
        }
        let groups: Vec<BarGroup> = with_steps
            .iter()
            .map(|(s, r)| BarGroup {
                name: format!("{} {}", self.view.series[*s], point_label(&r.point))
                    .trim_end()
                    .to_string(),
                style: *s,
                values: names
                    .iter()
                    .map(|n| {
                        r.measure
                            .steps
                            .iter()
                            .find(|x| &x.name == n)
                            .map(|x| x.latency.mean_ns)
                    })
                    .collect(),
                ranges: vec![],
            })
            .collect();
        self.html.push_str(r#"<div class="charts">"#);
        self.bars(BarChart {
            title: "Mean time of each step of a request".into(),
            categories: names.clone(),
            x_title: "step".into(),
            y: Axis::linear("mean time", fmt_lat),
            groups,
        });
        self.html.push_str("</div>");
        self.section_blocks(&section);
    }

    fn errors(&mut self) {
        let mut kinds: Vec<String> = Vec::new();
        for r in &self.view.runs {
            for k in r.run.measure.errors.keys() {
                if !kinds.contains(k) {
                    kinds.push(k.clone());
                }
            }
        }
        let section = document::errors(&self.view);
        self.section_head(&section);
        if kinds.is_empty() {
            self.section_blocks(&section);
            return;
        }
        let mut totals: Vec<BarGroup> = Vec::new();
        for s in 0..self.view.series.len() {
            let values = kinds
                .iter()
                .map(|k| {
                    let n: u64 = self
                        .view
                        .runs
                        .iter()
                        .filter(|r| r.series == s)
                        .map(|r| r.run.measure.errors.get(k).copied().unwrap_or(0))
                        .sum();
                    (n > 0).then_some(n as f64)
                })
                .collect();
            totals.push(BarGroup {
                name: self.view.series[s].clone(),
                style: s,
                values,
                ranges: vec![],
            });
        }
        self.html.push_str(r#"<div class="charts">"#);
        self.bars(BarChart {
            title: "Failed operations by kind, all runs".into(),
            categories: kinds.clone(),
            x_title: "error kind".into(),
            y: Axis::linear("operations", fmt_count),
            groups: totals,
        });
        self.html.push_str("</div>");
        self.section_blocks(&section);
    }

    fn checks(&mut self) {
        let section = document::checks(&self.view);
        self.section_head(&section);
        self.section_blocks(&section);
    }

    fn targets(&mut self) {
        self.h2("targets", "Targets: versions, settings, what was sent");
        let sources = self.view.sources.clone();
        for (i, r) in sources.iter().enumerate() {
            for t in &r.targets {
                let tag = self.view.tags[i].clone();
                let _ = write!(
                    self.html,
                    "<h3>{}{}</h3>",
                    esc(&t.name),
                    if tag.is_empty() {
                        String::new()
                    } else {
                        format!(" · {}", esc(&tag))
                    }
                );
                let mut rows = vec![
                    vec!["mode".to_string(), t.mode.clone()],
                    vec!["version".into(), t.version.clone().unwrap_or("-".into())],
                ];
                if let Some(e) = &t.endpoint {
                    rows.push(vec!["endpoint".into(), e.clone()]);
                }
                if let Some(s) = &t.skipped {
                    rows.push(vec!["skipped".into(), s.clone()]);
                }
                for (k, v) in &t.settings {
                    rows.push(vec![format!("setting {k}"), v.clone()]);
                }
                for (k, v) in &t.requests {
                    rows.push(vec![format!("sent for {k}"), v.clone()]);
                }
                self.table(&["", ""], &rows, 2);
            }
        }
    }

    fn environment(&mut self) {
        self.h2("environment", "Environment and plan");
        let sources = self.view.sources.clone();
        for (i, r) in sources.iter().enumerate() {
            let e = &r.environment;
            let tag = self.view.tags[i].clone();
            if !tag.is_empty() {
                let _ = write!(self.html, "<h3>{}</h3>", esc(&tag));
            }
            let rows = vec![
                vec![
                    "CPU".to_string(),
                    format!("{} ({} logical cores)", e.cpu_model, e.cores),
                ],
                vec!["memory".into(), fmt_bytes(e.memory_bytes as f64)],
                vec!["kernel".into(), e.kernel.clone()],
                vec!["host".into(), e.hostname.clone()],
                vec!["bakeoff".into(), e.bakeoff_version.clone()],
                vec!["seed".into(), e.seed.to_string()],
                vec!["command".into(), e.command.clone()],
                vec!["workload".into(), document::workload_line(r)],
                vec!["sweep".into(), document::sweep_line(r)],
                vec!["repeats".into(), r.plan.repeats.to_string()],
            ];
            self.table(&["", ""], &rows, 2);
        }
    }
}

/// Where a run's measured phase starts on its own clock, seconds; every
/// per-second chart puts that moment at 0 so runs whose loads took
/// different times line up.
/// Node `i` of `r` as a chart names it: its role in a replication pair,
/// and its address.
fn node_name(r: &RunResult, i: usize) -> String {
    let addr = r
        .nodes
        .get(i)
        .map(|n| n.node.clone())
        .unwrap_or_else(|| format!("node {i}"));
    match (r.workload.topology, i) {
        (bakeoff_core::plan::Topology::PrimaryReplica, 0) => format!("primary {addr}"),
        (bakeoff_core::plan::Topology::PrimaryReplica, _) => format!("replica {addr}"),
        _ => addr,
    }
}

/// Shaded stretches before 0: the warm-up, and before it the load (the
/// longest of the runs').
fn phase_bands(runs: &[(usize, &RunResult)]) -> Vec<Band> {
    let mut bands = Vec::new();
    let load_from = runs
        .iter()
        .filter_map(|(_, r)| {
            let first = r
                .timeline
                .iter()
                .find(|t| t.phase == bakeoff_core::result::Phase::Load)?;
            Some(first.t_s as f64 - measure_start(r))
        })
        .fold(0.0, f64::min);
    let warm = runs
        .iter()
        .map(|(_, r)| r.workload.warmup_s)
        .fold(0.0, f64::max);
    if load_from < -warm {
        bands.push(Band {
            from: load_from,
            to: -warm,
            label: "load".into(),
            hover: String::new(),
        });
    }
    if warm > 0.0 {
        bands.push(Band {
            from: -warm,
            to: 0.0,
            label: "warm-up".into(),
            hover: String::new(),
        });
    }
    // A fault: from the moment it struck until the server held its port
    // again (the whole rest of the chart if it never did).
    for (_, r) in runs {
        let Some(f) = &r.fault else { continue };
        let from = f.at_s - measure_start(r);
        let to = match f.back_after_s {
            Some(back) => from + back.max(0.05),
            None => r
                .timeline
                .last()
                .map_or(from, |t| t.t_s as f64 + 1.0 - measure_start(r)),
        };
        let label = match f.back_after_s {
            Some(back) => format!("{} (back in {})", f.kind.name(), fmt_seconds(back)),
            None => format!("{} (not back)", f.kind.name()),
        };
        if !bands.iter().any(|b| b.from == from && b.label == label) {
            bands.push(Band {
                from,
                to,
                label,
                hover: String::new(),
            });
        }
    }
    bands.extend(background_bands(runs));
    bands
}

/// The engines' background work, each stretch a band (a mark as wide as
/// a twentieth of a second), named at the first of its kind in each run,
/// what it did on hover.
fn background_bands(runs: &[(usize, &RunResult)]) -> Vec<Band> {
    let mut bands = Vec::new();
    let several = runs.len() > 1;
    for (_, r) in runs {
        let Some(work) = &r.background else { continue };
        let mut named: Vec<&str> = Vec::new();
        for b in &work.bands {
            let from = b.from_s - measure_start(r);
            let label = if named.contains(&b.what.as_str()) {
                String::new()
            } else {
                named.push(&b.what);
                if several {
                    format!("{}: {}", r.target, b.what)
                } else {
                    b.what.clone()
                }
            };
            bands.push(Band {
                from,
                to: from + (b.to_s - b.from_s).max(0.05),
                label,
                hover: format!(
                    "{}: {} at {} for {}: {}",
                    r.target,
                    b.what,
                    fmt_seconds(from),
                    fmt_seconds(b.to_s - b.from_s),
                    b.detail
                ),
            });
        }
    }
    bands
}

/// The timeline without the sliver after the measured phase ends (the last
/// interval the workers hand in holds only the replies still in flight).
fn measured_seconds(r: &RunResult) -> impl Iterator<Item = &bakeoff_core::result::TimelinePoint> {
    let end = r
        .timeline
        .iter()
        .find(|t| t.phase == bakeoff_core::result::Phase::Measure)
        .map(|t| t.t_s as f64 + r.measure.duration_s);
    r.timeline.iter().filter(move |t| {
        !(t.phase == bakeoff_core::result::Phase::Measure
            && end.is_some_and(|e| t.t_s as f64 >= e - 0.01))
    })
}

impl Exporter for HtmlExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        let refs: Vec<&ExperimentResult> = results.iter().collect();
        let mut page = Page {
            view: View::new(&refs),
            html: String::new(),
            charts: 0,
        };
        let title: Vec<&str> = results.iter().map(|r| r.plan.name.as_str()).collect();
        page.header();
        page.verdict();
        page.summary();
        if !page.view.runs.is_empty() {
            page.overview();
            page.sweeps();
            page.spectrum();
            page.timelines();
            page.traces();
            page.steps();
        }
        page.errors();
        page.checks();
        page.targets();
        page.environment();
        write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>bakeoff: {}</title><style>{STYLE}</style></head><body>{}<p class=\"note\">Written by bakeoff from the result file(s); every figure here is in them. Hover over a mark for its exact value.</p><script>{SCRIPT}</script></body></html>\n",
            esc(&title.join(" vs ")),
            page.html
        )
    }
}

/// The rate a replayed trace asks for second by second, at the replay's
/// speed (the first replay of the point's runs; they share the trace),
/// drawn in the style after the runs'.
fn trace_rate_line(runs: &[(usize, &RunResult)], style: usize) -> Option<Line> {
    let (trace, speed) = runs
        .iter()
        .find_map(|(_, r)| r.replay.as_ref().map(|t| (t, r.workload.replay_speed)))?;
    Some(Line {
        name: format!("the trace's own rate (×{speed})"),
        points: trace
            .per_second
            .iter()
            .enumerate()
            .map(|(i, &n)| ((i as f64 + 0.5) / speed, n as f64 * speed))
            .collect(),
        style,
        markers: trace.per_second.len() <= 30,
        ..Line::default()
    })
}

/// The bar of `figure` in `summary`: the median over the repeats, and its
/// 95 % interval as whiskers where there is one.
fn bar_of(
    summary: &bakeoff_core::summary::PointSummary,
    figure: Headline,
) -> (Option<f64>, Option<(f64, f64)>) {
    summary.figure(figure).map_or((None, None), |f| {
        (Some(f.median), f.interval.map(|i| (i.low, i.high)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_core::plan::FaultKind;
    use bakeoff_core::result::{ExperimentResult, FaultRecord};

    /// The mock run's result file, kept as the snapshot of the suite.
    fn mock_result() -> ExperimentResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../bakeoff/tests/snapshots/mock.json");
        ExperimentResult::read(&path).expect("the mock snapshot reads")
    }

    fn html(r: &ExperimentResult) -> String {
        let mut out = Vec::new();
        HtmlExporter
            .export(std::slice::from_ref(r), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A faulted run's timeline charts mark the fault, from its moment to
    /// the server's return, beside the load and warm-up bands.
    #[test]
    fn a_fault_is_a_band_on_the_timeline() {
        let mut run = mock_result().runs[0].clone();
        let start = measure_start(&run);
        assert!(phase_bands(&[(0, &run)])
            .iter()
            .all(|b| !b.label.starts_with("kill")));
        run.fault = Some(FaultRecord {
            kind: FaultKind::Kill,
            at_s: start + 1.5,
            back_after_s: Some(0.25),
            recovered_after_s: Some(1.0),
            error: None,
        });
        let bands = phase_bands(&[(0, &run)]);
        let kill = bands
            .iter()
            .find(|b| b.label == "kill (back in 0.25 s)")
            .unwrap_or_else(|| panic!("{bands:?}"));
        assert_eq!((kill.from, kill.to), (1.5, 1.75));
        run.fault.as_mut().unwrap().back_after_s = None;
        let bands = phase_bands(&[(0, &run)]);
        assert!(
            bands.iter().any(|b| b.label == "kill (not back)"),
            "{bands:?}"
        );
    }

    /// A run on a primary and a replica draws each node's CPU, memory and
    /// disk writes as lines of their own, named by role and address; a
    /// single server's report has no such charts.
    #[test]
    fn each_node_gets_lines_of_its_own() {
        use bakeoff_core::result::{NodeOps, NodeResourceSample};
        // The mock run is of one server and was not sampled: both are set here.
        let mut result = mock_result();
        assert!(!html(&result).contains("of each node"));
        let run = &mut result.runs[0];
        run.workload.topology = bakeoff_core::plan::Topology::PrimaryReplica;
        run.nodes = ["127.0.0.1:7001", "127.0.0.1:7002"]
            .iter()
            .map(|n| NodeOps {
                node: n.to_string(),
                sent: 10,
                redirected: None,
            })
            .collect();
        let start = measure_start(run);
        run.resources = (0..3)
            .map(|k| bakeoff_core::result::ResourceSample {
                t_s: start + k as f64,
                ..Default::default()
            })
            .collect();
        for (k, x) in run.resources.iter_mut().enumerate() {
            x.nodes = (0..2)
                .map(|i| NodeResourceSample {
                    cpu_percent: 10.0 * (i + 1) as f64 + k as f64,
                    rss_bytes: 1 << (20 + i),
                    pss_bytes: None,
                    read_bytes_per_s: 0.0,
                    write_bytes_per_s: 4096.0,
                })
                .collect();
        }
        let page = html(&result);
        for title in [
            "Server CPU of each node",
            "Server memory (proportional set size) of each node",
            "Disk writes of each node",
        ] {
            assert!(page.contains(title), "{title}");
        }
        assert!(page.contains("primary 127.0.0.1:7001"));
        assert!(page.contains("replica 127.0.0.1:7002"));
    }

    /// Under a memory cap, each run's latency and the memory charged to it
    /// share one timeline, memory on an axis of its own on the right.
    #[test]
    fn latency_and_memory_share_a_timeline_under_a_memory_cap() {
        let mut result = mock_result();
        assert!(!html(&result).contains("Latency and memory over the run"));
        let run = &mut result.runs[0];
        let start = measure_start(run);
        run.resources = (0..4)
            .map(|k| bakeoff_core::result::ResourceSample {
                t_s: start + k as f64,
                cgroup_memory_bytes: Some((64 + 32 * k) << 20),
                ..Default::default()
            })
            .collect();
        let page = html(&result);
        let at = page
            .find("Latency and memory over the run")
            .unwrap_or_else(|| panic!("no latency-and-memory chart"));
        let figure = &page[at..at + page[at..].find("</svg>").unwrap()];
        assert!(figure.contains("p99 latency"), "{figure}");
        assert!(
            figure.contains("memory charged (RSS + page cache) (right axis)"),
            "{figure}"
        );
        // The right axis is labelled in bytes, up to the last sample.
        assert!(figure.contains("rotate(90)"), "{figure}");
        assert!(figure.contains("MiB"), "{figure}");
    }
}
