//! Peak and capacity searches (`--find-peak`, `--find-capacity`): what
//! each found, as table rows, and the steps of each as points to draw.
//! Shared by the text, Markdown and HTML reports.

use bakeoff_core::result::{decode_histogram, ExperimentResult, RunResult, SearchResult};
use bakeoff_core::units::{fmt_ns, fmt_rate};

/// Heading of the searches table.
pub const SEARCH_HEAD: [&str; 6] = ["target", "point", "search", "found", "at", "steps"];

/// What the searches table says about them.
pub const SEARCH_NOTE: &str = "Peak: clients doubled from 1 until throughput rose by less than 5 % over the best twice running; the peak is the highest throughput of those steps. Capacity: a closed-loop probe gives the ceiling, then 6 open-loop steps bisect the rate; a step holds when the percentile stays under the bound, nothing fails and the rate reached is within 5 % of the rate asked for; the capacity is the highest rate that held.";

/// The row of one search.
pub fn search_row(s: &SearchResult) -> Vec<String> {
    let point = crate::view::point_label(&s.point);
    let (what, found, at) = match s.kind.as_str() {
        "capacity" => {
            let bound = s.bound.map(|b| b.to_string()).unwrap_or_default();
            match (s.rate_per_s, s.latency_ns) {
                (Some(r), Some(l)) => (
                    format!("capacity, {bound}"),
                    fmt_rate(r),
                    format!(
                        "p{} {} at {} clients; closed-loop ceiling {}",
                        s.bound.map(|b| b.percentile).unwrap_or(0.0),
                        fmt_ns(l as f64),
                        s.clients.unwrap_or(0),
                        fmt_rate(s.ceiling_per_s.unwrap_or(0.0))
                    ),
                ),
                _ => (
                    format!("capacity, {bound}"),
                    "no rate held".into(),
                    format!(
                        "closed-loop ceiling {}",
                        fmt_rate(s.ceiling_per_s.unwrap_or(0.0))
                    ),
                ),
            }
        }
        _ => match (s.throughput_per_s, s.clients) {
            (Some(t), Some(c)) => ("peak".into(), fmt_rate(t), format!("{c} clients")),
            _ => ("peak".into(), "none".into(), "every step failed".into()),
        },
    };
    vec![
        s.target.clone(),
        point,
        what,
        found,
        at,
        s.runs.len().to_string(),
    ]
}

/// The searches table of `r` (head first), if it searched.
pub fn search_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    if r.searches.is_empty() {
        return None;
    }
    let mut rows = vec![SEARCH_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.searches.iter().map(search_row));
    Some(rows)
}

/// The runs that were the steps of `s`, in order.
pub fn steps<'a>(r: &'a ExperimentResult, s: &SearchResult) -> Vec<&'a RunResult> {
    s.runs
        .iter()
        .filter_map(|i| r.runs.iter().find(|run| run.index == *i))
        .collect()
}

/// A capacity search's open-loop steps as (rate asked for, ops/s; the
/// bound's percentile, ns), by rate.
pub fn latency_against_load(r: &ExperimentResult, s: &SearchResult) -> Vec<(f64, f64)> {
    let Some(bound) = s.bound else {
        return Vec::new();
    };
    let mut points: Vec<(f64, f64)> = steps(r, s)
        .into_iter()
        .filter_map(|run| {
            let rate = run.workload.rate?;
            let h = decode_histogram(&run.measure.all.hdr).ok()?;
            (!h.is_empty()).then(|| (rate, h.value_at_quantile(bound.quantile()) as f64))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// A peak search's steps as (clients, ops/s), by clients.
pub fn throughput_against_clients(r: &ExperimentResult, s: &SearchResult) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = steps(r, s)
        .into_iter()
        .map(|run| {
            (
                f64::from(run.workload.clients),
                run.measure.throughput_per_s,
            )
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}
