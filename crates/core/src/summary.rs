//! One row per target and point: each headline figure's median over the
//! repeats, with its 95 % interval and what the interval stands for, and
//! how steady each repeat's measured seconds were.
//!
//! The runner writes these into the result file after every run
//! ([`summarise`]); every report renders them, none recomputes them.
//! With [`stats::REPEATS_FOR_INTERVAL`] repeats or more the interval is
//! the median's across repeats (would a rerun agree); with one run it is
//! that run's own precision (per-second windows for rates and CPU, the
//! run's histogram for percentiles), labelled as such; with 2 to 5
//! repeats there is none, and the figure says how many it would need.

use std::collections::BTreeMap;

use crate::result::{decode_histogram, ExperimentResult, Phase, RunResult, RunStatus};
use crate::stats::{self, Interval, IntervalKind, Stability};

pub use crate::headline::{FigureSummary, Headline, PointSummary};

// Where a figure is read from a run: beside the run's summaries, which the
// headline itself (a name the plan takes) knows nothing of.
impl Headline {
    /// The figure of one measured run; `None` where it was not measured.
    pub fn of(self, r: &RunResult) -> Option<f64> {
        let m = &r.measure;
        let positive = |v: f64| Some(v).filter(|v| *v > 0.0 && v.is_finite());
        match self {
            Headline::Throughput => positive(m.throughput_per_s),
            Headline::Mean => positive(m.all.mean_ns),
            Headline::P50 => positive(m.all.p50_ns as f64),
            Headline::P99 => positive(m.all.p99_ns as f64),
            Headline::P999 => positive(m.all.p999_ns as f64),
            Headline::ClientCpuPerOp => client_cpu_per_op_ns(r),
            Headline::ServerCpuPerOp => server_cpu_per_op_ns(r),
            Headline::MemoryPerRecord => memory_per_record(r),
            Headline::DiskPerWrite => r.disk.as_ref().and_then(|d| d.to_storage_per_write()),
        }
    }

    /// The within-run interval of this figure in one run, where the run's
    /// own seconds or histogram give one.
    fn within(self, r: &RunResult, hdr: Option<&hdrhistogram::Histogram<u64>>) -> Option<Interval> {
        let measured: Vec<_> = r
            .timeline
            .iter()
            .filter(|t| t.phase == Phase::Measure)
            .collect();
        match self {
            Headline::Throughput => {
                let ops: Vec<f64> = measured.iter().map(|t| t.ops_per_s as f64).collect();
                stats::batch_interval(full_seconds(&ops, r.measure.duration_s))
            }
            Headline::P50 | Headline::P99 | Headline::P999 => {
                let q = match self {
                    Headline::P50 => 0.5,
                    Headline::P99 => 0.99,
                    _ => 0.999,
                };
                percentile_interval(hdr?, q)
            }
            Headline::ClientCpuPerOp => {
                let per_op: Vec<f64> = measured
                    .iter()
                    .filter(|t| t.ops_per_s > 0)
                    .map(|t| t.client_cpu_percent / 100.0 * 1e9 / t.ops_per_s as f64)
                    .collect();
                stats::batch_interval(full_seconds(&per_op, r.measure.duration_s))
            }
            Headline::ServerCpuPerOp => {
                let per_op: Vec<f64> = measured
                    .iter()
                    .filter(|t| t.ops_per_s > 0)
                    .filter_map(|t| {
                        let at = f64::from(t.t_s) + 1.0;
                        let s = r.resources.iter().find(|s| (s.t_s - at).abs() < 0.5)?;
                        Some(s.cpu_percent / 100.0 * 1e9 / t.ops_per_s as f64)
                    })
                    .collect();
                stats::batch_interval(full_seconds(&per_op, r.measure.duration_s))
            }
            Headline::Mean | Headline::MemoryPerRecord | Headline::DiskPerWrite => None,
        }
    }
}

/// The whole seconds of a measured series: a last second cut short by
/// the phase's end is left out.
fn full_seconds(series: &[f64], duration_s: f64) -> &[f64] {
    let whole = duration_s.floor() as usize;
    &series[..series.len().min(whole.max(1))]
}

/// The order-statistic interval of quantile `q` from a run's histogram
/// (Lancet's ranks, the operations taken as independent samples); `None`
/// where too few operations lie beyond it.
pub fn percentile_interval(h: &hdrhistogram::Histogram<u64>, q: f64) -> Option<Interval> {
    let n = h.len() as usize;
    let (j, k, confidence) = stats::quantile_ranks(n, q, stats::CONFIDENCE)?;
    let at = |rank: usize| h.value_at_quantile(rank as f64 / n as f64) as f64;
    Some(Interval {
        low: at(j),
        high: at(k),
        confidence,
        kind: IntervalKind::WithinRun,
    })
}

/// bakeoff's CPU time per successful operation over the measured phase,
/// ns: its worker threads' busy share times the phase's length.
pub fn client_cpu_per_op_ns(r: &RunResult) -> Option<f64> {
    let m = &r.measure;
    let busy: f64 = r.client.thread_busy_percent.iter().sum::<f64>() / 100.0;
    (m.completed > 0 && busy > 0.0).then(|| busy * m.duration_s * 1e9 / m.completed as f64)
}

/// The server's CPU time per successful operation over the measured
/// phase, ns, from the per-second samples of its processes.
pub fn server_cpu_per_op_ns(r: &RunResult) -> Option<f64> {
    let m = &r.measure;
    let start = r
        .timeline
        .iter()
        .find(|t| t.phase == Phase::Measure)
        .map(|t| f64::from(t.t_s))?;
    let end = start + m.duration_s;
    let inside: Vec<f64> = r
        .resources
        .iter()
        .filter(|s| s.t_s > start && s.t_s <= end + 0.5)
        .map(|s| s.cpu_percent)
        .collect();
    if inside.is_empty() || m.completed == 0 {
        return None;
    }
    let mean = inside.iter().sum::<f64>() / inside.len() as f64;
    (mean > 0.0).then(|| mean / 100.0 * m.duration_s * 1e9 / m.completed as f64)
}

/// The server's memory at the end of the run (its processes' summed
/// proportional set sizes, so a page they share counts once) over the
/// records it holds, bytes.
pub fn memory_per_record(r: &RunResult) -> Option<f64> {
    let memory = r.resources.last()?.memory_bytes();
    let records = r.checks.records_after_load.unwrap_or(r.workload.records);
    (memory > 0 && records > 0).then(|| memory as f64 / records as f64)
}

/// How steady a run's measured throughput was, second by second.
pub fn run_stability(r: &RunResult) -> Stability {
    let ops: Vec<f64> = r
        .timeline
        .iter()
        .filter(|t| t.phase == Phase::Measure)
        .map(|t| t.ops_per_s as f64)
        .collect();
    stats::stability(full_seconds(&ops, r.measure.duration_s))
}

/// One summary per target and point of `r`, in the order they first ran.
pub fn summarise(r: &ExperimentResult) -> Vec<PointSummary> {
    let mut groups: Vec<(&str, &BTreeMap<String, String>, Vec<&RunResult>)> = Vec::new();
    for run in r.runs.iter().filter(|x| x.status == RunStatus::Ok) {
        match groups
            .iter_mut()
            .find(|(t, p, _)| *t == run.target && **p == run.point)
        {
            Some((_, _, runs)) => runs.push(run),
            None => groups.push((&run.target, &run.point, vec![run])),
        }
    }
    groups
        .into_iter()
        .map(|(target, point, runs)| summarise_runs(target, point, &runs))
        .collect()
}

/// The summary of the repeats `runs` of `target` at `point`.
pub fn summarise_runs(
    target: &str,
    point: &BTreeMap<String, String>,
    runs: &[&RunResult],
) -> PointSummary {
    // One run: its histogram, decoded once for its three percentiles.
    let hdr = match runs {
        [one] => decode_histogram(&one.measure.all.hdr).ok(),
        _ => None,
    };
    let figures = Headline::ALL
        .into_iter()
        .filter_map(|figure| {
            let values: Vec<f64> = runs.iter().filter_map(|r| figure.of(r)).collect();
            let median = stats::median(&values)?;
            let interval = match values.len() {
                1 => runs.iter().find_map(|r| figure.within(r, hdr.as_ref())),
                _ => stats::median_interval(&values),
            };
            Some(FigureSummary {
                figure,
                median,
                values,
                interval,
            })
        })
        .collect();
    PointSummary {
        target: target.to_string(),
        point: point.clone(),
        repeats: runs.len() as u32,
        runs: runs.iter().map(|r| r.index).collect(),
        figures,
        stability: runs.iter().map(|r| run_stability(r)).collect(),
    }
}

/// How `a` compares with `b` on `figure`: their ratio (a over b, so above
/// 1 is more) and whether it is beyond what the repeats can tell.
pub fn difference(
    a: &PointSummary,
    b: &PointSummary,
    figure: Headline,
) -> Option<stats::Difference> {
    let (fa, fb) = (a.figure(figure)?, b.figure(figure)?);
    Some(stats::judge(
        &fa.values,
        fa.interval.as_ref(),
        &fb.values,
        fb.interval.as_ref(),
    ))
}

/// The summaries of `r`: as written, or made now for a file written
/// before summaries were.
pub fn of(r: &ExperimentResult) -> Vec<PointSummary> {
    if r.summaries.is_empty() && !r.runs.is_empty() {
        summarise(r)
    } else {
        r.summaries.clone()
    }
}
