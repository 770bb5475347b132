//! What every report format reads off the result files: the runs of one or
//! more experiments labelled by series (a target, and the file it came from
//! when there are several), grouped by point with their repeats, and the
//! sweep axes with numeric positions where the values are numbers.
//!
//! Nothing here measures: it only arranges what the runner recorded, so
//! the HTML, Markdown and CSV reports show the same numbers.

use std::collections::BTreeMap;

use bakeoff_core::result::{decode_histogram, ExperimentResult, RunResult};
use bakeoff_core::workload::ValueSizes;

/// One run, with the series it belongs to.
#[derive(Clone, Copy)]
pub struct RunRef<'a> {
    /// Index of the result file it came from.
    pub source: usize,
    /// The run.
    pub run: &'a RunResult,
    /// Index into [`View::series`].
    pub series: usize,
}

/// Runs of one series at one point: the repeats.
pub struct Group<'a> {
    /// Index into [`View::series`].
    pub series: usize,
    /// Sweep values of the point.
    pub point: BTreeMap<String, String>,
    /// The repeats, in order.
    pub runs: Vec<&'a RunResult>,
}

/// Median, minimum and maximum of one figure over repeats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// How many values.
    pub n: usize,
}

impl Spread {
    /// Spread of `values`; `None` when empty.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        Some(Spread {
            median: bakeoff_core::stats::median(&v)?,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// (max − min) / median: the run-to-run spread as a fraction.
    pub fn relative_width(&self) -> f64 {
        if self.median != 0.0 {
            (self.max - self.min) / self.median.abs()
        } else {
            0.0
        }
    }
}

/// A figure of a run that reports chart and compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// Successful operations per second in the measured phase.
    Throughput,
    /// Mean latency, ns.
    Mean,
    /// Median latency, ns.
    P50,
    /// 99th percentile, ns.
    P99,
    /// 99.9th percentile, ns.
    P999,
}

impl Figure {
    /// Every figure, in table order.
    pub const ALL: [Figure; 5] = [
        Figure::Throughput,
        Figure::Mean,
        Figure::P50,
        Figure::P99,
        Figure::P999,
    ];

    /// Short name with its unit's kind.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Throughput => "throughput",
            Figure::Mean => "mean",
            Figure::P50 => "p50",
            Figure::P99 => "p99",
            Figure::P999 => "p99.9",
        }
    }

    /// The figure of one run (ops/s or ns).
    pub fn of(self, run: &RunResult) -> f64 {
        let m = &run.measure;
        match self {
            Figure::Throughput => m.throughput_per_s,
            Figure::Mean => m.all.mean_ns,
            Figure::P50 => m.all.p50_ns as f64,
            Figure::P99 => m.all.p99_ns as f64,
            Figure::P999 => m.all.p999_ns as f64,
        }
    }

    /// Whether more is better (throughput) or worse (latency).
    pub fn higher_is_better(self) -> bool {
        self == Figure::Throughput
    }

    /// Formats a value of this figure with its unit.
    pub fn format(self, v: f64) -> String {
        match self {
            Figure::Throughput => bakeoff_core::units::fmt_rate(v),
            _ => bakeoff_core::units::fmt_ns(v),
        }
    }
}

/// A sweep axis as the report draws it.
#[derive(Clone, Debug)]
pub struct AxisView {
    /// Name as in presets (`clients`, `mix`, …).
    pub name: String,
    /// Its values' labels in sweep order.
    pub labels: Vec<String>,
    /// Numeric position of each label, when every value is a number
    /// (clients, records, fixed value sizes, memory caps).
    pub numbers: Option<Vec<f64>>,
}

impl AxisView {
    /// The axis title with its unit.
    pub fn title(&self) -> String {
        match self.name.as_str() {
            "clients" => "clients (connections)".into(),
            "records" => "records".into(),
            "value_size" => "value size (bytes)".into(),
            "memory_cap" => "memory cap (bytes)".into(),
            "mix" => "mix (get:set:update:delete)".into(),
            other => other.replace('_', " "),
        }
    }

    /// Whether the values are ordered so that a line between them means
    /// something (numbers, and mixes from all reads to all writes).
    pub fn is_ordered(&self) -> bool {
        self.numbers.is_some() || self.name == "mix"
    }
}

/// The runs of one or more result files, ready for any report format.
pub struct View<'a> {
    /// The result files, in the order given.
    pub sources: Vec<&'a ExperimentResult>,
    /// A short tag per file, telling them apart (empty for one file).
    pub tags: Vec<String>,
    /// Series names: a target, or `target · tag` with several files.
    pub series: Vec<String>,
    /// Every run, in file order.
    pub runs: Vec<RunRef<'a>>,
    /// Sweep axes (from every file, in first-seen order).
    pub axes: Vec<AxisView>,
}

fn file_tags(sources: &[&ExperimentResult]) -> Vec<String> {
    if sources.len() < 2 {
        return vec![String::new(); sources.len()];
    }
    let distinct = |f: &dyn Fn(&ExperimentResult) -> String| {
        let v: Vec<String> = sources.iter().map(|r| f(r)).collect();
        let mut u = v.clone();
        u.sort();
        u.dedup();
        (u.len() == v.len()).then_some(v)
    };
    distinct(&|r| r.plan.name.clone())
        .or_else(|| distinct(&|r| r.environment.hostname.clone()))
        .or_else(|| distinct(&|r| r.started_at.clone()))
        .unwrap_or_else(|| (1..=sources.len()).map(|i| format!("file {i}")).collect())
}

/// Numeric value of sweep axis `axis` in a run's workload, if it is a number.
fn axis_number(axis: &str, run: &RunResult) -> Option<f64> {
    let w = &run.workload;
    match axis {
        "clients" => Some(w.clients as f64),
        "records" => Some(w.records as f64),
        "value_size" => match &w.value_size {
            ValueSizes::Fixed(n) => Some(*n as f64),
            _ => None,
        },
        "memory_cap" => w.memory_cap.map(|b| b as f64),
        _ => None,
    }
}

impl<'a> View<'a> {
    /// Arranges the runs of `sources`.
    pub fn new(sources: &[&'a ExperimentResult]) -> View<'a> {
        let tags = file_tags(sources);
        let mut series: Vec<String> = Vec::new();
        let mut runs = Vec::new();
        for (si, r) in sources.iter().enumerate() {
            for run in &r.runs {
                let name = if tags[si].is_empty() {
                    run.target.clone()
                } else {
                    format!("{} · {}", run.target, tags[si])
                };
                let idx = match series.iter().position(|s| *s == name) {
                    Some(i) => i,
                    None => {
                        series.push(name);
                        series.len() - 1
                    }
                };
                runs.push(RunRef {
                    source: si,
                    run,
                    series: idx,
                });
            }
        }
        let mut axes: Vec<AxisView> = Vec::new();
        for r in sources {
            for a in &r.plan.sweep {
                if axes.iter().any(|x| x.name == a.name()) {
                    continue;
                }
                axes.push(AxisView {
                    name: a.name().to_string(),
                    labels: Vec::new(),
                    numbers: None,
                });
            }
        }
        for axis in &mut axes {
            let mut numbers = Some(Vec::new());
            for rr in &runs {
                let Some(label) = rr.run.point.get(&axis.name) else {
                    continue;
                };
                if axis.labels.contains(label) {
                    continue;
                }
                axis.labels.push(label.clone());
                numbers = match (numbers, axis_number(&axis.name, rr.run)) {
                    (Some(mut v), Some(n)) => {
                        v.push(n);
                        Some(v)
                    }
                    _ => None,
                };
            }
            axis.numbers = numbers.filter(|v| !v.is_empty());
        }
        View {
            sources: sources.to_vec(),
            tags,
            series,
            runs,
            axes,
        }
    }

    /// Runs grouped by (series, point), in first-seen order; repeats together.
    pub fn groups(&self) -> Vec<Group<'a>> {
        let mut out: Vec<Group<'a>> = Vec::new();
        for rr in &self.runs {
            match out
                .iter_mut()
                .find(|g| g.series == rr.series && g.point == rr.run.point)
            {
                Some(g) => g.runs.push(rr.run),
                None => out.push(Group {
                    series: rr.series,
                    point: rr.run.point.clone(),
                    runs: vec![rr.run],
                }),
            }
        }
        out
    }

    /// The distinct points in first-seen order.
    pub fn points(&self) -> Vec<BTreeMap<String, String>> {
        let mut out: Vec<BTreeMap<String, String>> = Vec::new();
        for rr in &self.runs {
            if !out.contains(&rr.run.point) {
                out.push(rr.run.point.clone());
            }
        }
        out
    }

    /// Whether any run repeats a point.
    pub fn has_repeats(&self) -> bool {
        self.runs.iter().any(|r| r.run.repeat > 0)
    }
}

/// Runs that failed or had errors: run index, series, point, errors by
/// kind, message.
pub fn error_rows(view: &View) -> Vec<Vec<String>> {
    view.runs
        .iter()
        .filter(|r| !r.run.measure.errors.is_empty() || r.run.message.is_some())
        .map(|r| {
            vec![
                r.run.index.to_string(),
                view.series[r.series].clone(),
                point_label(&r.run.point),
                r.run.measure.errors_line(),
                r.run.message.clone().unwrap_or_default(),
            ]
        })
        .collect()
}

/// `k=v k=v`, or empty without a sweep.
pub fn point_label(point: &BTreeMap<String, String>) -> String {
    if point.is_empty() {
        String::new()
    } else {
        point
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `, k=v k=v` to follow a title, or nothing without a sweep.
pub fn at_point(point: &BTreeMap<String, String>) -> String {
    if point.is_empty() {
        String::new()
    } else {
        format!(", {}", point_label(point))
    }
}

/// Drops the `point` column of a table whose every row leaves it blank (a
/// run without a sweep has no point to show): from `head`, from each of
/// `rows`, and from the `left` count of left-aligned columns it was among.
pub fn drop_blank_point<S: AsRef<str>>(
    head: &mut Vec<S>,
    rows: &mut [Vec<String>],
    left: &mut usize,
) {
    let Some(i) = head.iter().position(|h| h.as_ref() == "point") else {
        return;
    };
    if rows
        .iter()
        .any(|r| r.get(i).is_some_and(|c| !c.is_empty() && c != "-"))
    {
        return;
    }
    head.remove(i);
    for r in rows.iter_mut().filter(|r| r.len() > i) {
        r.remove(i);
    }
    if i < *left {
        *left -= 1;
    }
}

/// The point without `axis`: what stays fixed along a chart of `axis`.
pub fn point_without(point: &BTreeMap<String, String>, axis: &str) -> BTreeMap<String, String> {
    point
        .iter()
        .filter(|(k, _)| k.as_str() != axis)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Latency at increasing percentiles of a run's measured histogram, as
/// (percentile in %, ns), up to the maximum; empty if the histogram is.
pub fn percentile_spectrum(run: &RunResult) -> Vec<SpectrumPoint> {
    let Ok(h) = decode_histogram(&run.measure.all.hdr) else {
        return Vec::new();
    };
    if h.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Eight steps per "nine", from the median to where samples run out.
    let count = h.len() as f64;
    for k in 0..=48 {
        let tail = 0.5 * 10f64.powf(-(k as f64) / 8.0);
        if tail * count < 1.0 {
            break;
        }
        let q = 1.0 - tail;
        out.push(SpectrumPoint {
            percentile: q * 100.0,
            latency_ns: h.value_at_quantile(q) as f64,
            interval: bakeoff_core::summary::percentile_interval(&h, q).map(|i| (i.low, i.high)),
        });
    }
    out.push(SpectrumPoint {
        percentile: 100.0 * (1.0 - 0.5 / count),
        latency_ns: h.max() as f64,
        interval: None,
    });
    out
}

/// One point of a run's percentile spectrum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpectrumPoint {
    /// The percentile, 50 to just under 100.
    pub percentile: f64,
    /// The latency at it, ns.
    pub latency_ns: f64,
    /// Its 95 % interval within the run, ns (order statistics of the
    /// run's operations; `None` where too few lie beyond it, and at the
    /// maximum).
    pub interval: Option<(f64, f64)>,
}

/// Busiest client thread of a run, percent.
pub fn client_busy(run: &RunResult) -> f64 {
    run.client
        .thread_busy_percent
        .iter()
        .cloned()
        .fold(0.0, f64::max)
}

/// A run's target and, where the experiment sweeps, its point
/// (`redis clients=4`).
pub(crate) fn run_label(run: &bakeoff_core::result::RunResult) -> String {
    match point_label(&run.point) {
        p if p.is_empty() => run.target.clone(),
        p => format!("{} {p}", run.target),
    }
}

/// `0.07 s`, `1.2 s`, `12 s`.
pub(crate) fn fmt_seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{s:.2} s")
    } else if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// Where the measured phase starts on the run's timeline, seconds.
pub(crate) fn measure_start(r: &bakeoff_core::result::RunResult) -> f64 {
    r.timeline
        .iter()
        .find(|t| t.phase == bakeoff_core::result::Phase::Measure)
        .map(|t| t.t_s as f64)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    /// A run without a sweep has no point: its tables drop the column
    /// (before, every row read "-"), its titles name none; a table where
    /// some run has a point keeps it.
    #[test]
    fn no_point_without_a_sweep() {
        let mut r: ExperimentResult =
            serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
                .expect("the mock snapshot is a result");
        for run in &mut r.runs {
            run.point.clear();
            run.repeat = 0;
        }
        r.summaries = bakeoff_core::summary::summarise(&r);
        let mut text = Vec::new();
        crate::Exporter::export(
            &crate::TextExporter::default(),
            std::slice::from_ref(&r),
            &mut text,
        )
        .unwrap();
        let text = String::from_utf8(text).unwrap();
        let head = text.lines().nth(1).unwrap();
        assert!(
            head.starts_with("target ") && !head.contains("point"),
            "{text}"
        );
        assert!(!text.contains(" -  "), "{text}");
        assert_eq!(at_point(&r.runs[0].point), "");
        let mut rows = vec![vec!["mock".to_string(), String::new()]];
        let (mut head, mut left) = (vec!["target", "point"], 2);
        drop_blank_point(&mut head, &mut rows, &mut left);
        assert_eq!((head, rows[0].len(), left), (vec!["target"], 1, 1));
        let mut rows = vec![vec!["mock".to_string(), "clients=4".to_string()]];
        let (mut head, mut left) = (vec!["target", "point"], 2);
        drop_blank_point(&mut head, &mut rows, &mut left);
        assert_eq!((head.len(), left), (2, 2));
    }

    use super::*;

    #[test]
    fn spread_is_median_min_max() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let e = Spread::of([1.0, 3.0]).unwrap();
        assert_eq!(e.median, 2.0);
        assert!((e.relative_width() - 1.0).abs() < 1e-12);
        assert!(Spread::of([]).is_none());
    }
}
