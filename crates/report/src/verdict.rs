//! The verdict a report opens with: for each figure (throughput, p99,
//! client and server CPU per operation, memory per record, durability
//! class), which target leads at each point and by how much, and the seed
//! report's finding next to it when the experiment comes from one.

use std::collections::BTreeMap;

use bakeoff_core::result::{ExperimentResult, RunResult};
use bakeoff_core::units::{fmt_bytes, fmt_ns, fmt_rate};

/// Most points the verdict speaks of (a sweep's verdict is its charts).
const MAX_POINTS: usize = 4;

/// One figure: its name, whether more is better, how to read it off a run
/// (`None`: not measured there) and how to print it.
struct Figure {
    name: &'static str,
    higher_is_better: bool,
    value: fn(&RunResult) -> Option<f64>,
    show: fn(f64) -> String,
}

const FIGURES: [Figure; 5] = [
    Figure {
        name: "throughput",
        higher_is_better: true,
        value: |r| Some(r.measure.throughput_per_s).filter(|t| *t > 0.0),
        show: fmt_rate,
    },
    Figure {
        name: "p99 latency",
        higher_is_better: false,
        value: |r| Some(r.measure.all.p99_ns as f64).filter(|v| *v > 0.0),
        show: fmt_ns,
    },
    Figure {
        name: "client CPU per operation",
        higher_is_better: false,
        value: client_cpu_per_op_ns,
        show: fmt_ns,
    },
    Figure {
        name: "server CPU per operation",
        higher_is_better: false,
        value: server_cpu_per_op_ns,
        show: fmt_ns,
    },
    Figure {
        name: "memory per record",
        higher_is_better: false,
        value: memory_per_record,
        show: fmt_bytes,
    },
];

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
        .find(|t| t.phase == "measure")
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

/// The server's resident memory at the end of the run over the records it
/// holds, bytes.
pub fn memory_per_record(r: &RunResult) -> Option<f64> {
    let rss = r.resources.last()?.rss_bytes;
    let records = r.checks.records_after_load.unwrap_or(r.workload.records);
    (rss > 0 && records > 0).then(|| rss as f64 / records as f64)
}

/// The verdict's lines: per point (up to [`MAX_POINTS`]) and figure, the
/// leader with its value and its lead over the next; the durability class
/// of each target where it was measured; the seed's finding.
pub fn verdict(r: &ExperimentResult) -> Vec<String> {
    let mut points: Vec<&BTreeMap<String, String>> = Vec::new();
    for run in &r.runs {
        if !points.contains(&&run.point) {
            points.push(&run.point);
        }
    }
    let mut lines = Vec::new();
    for point in points.iter().take(MAX_POINTS) {
        // Each target's first clean run at the point.
        let mut runs: Vec<&RunResult> = Vec::new();
        for run in r
            .runs
            .iter()
            .filter(|x| &&x.point == point && x.status == "ok")
        {
            if !runs.iter().any(|x| x.target == run.target) {
                runs.push(run);
            }
        }
        if runs.len() < 2 {
            continue;
        }
        let at = if point.is_empty() {
            String::new()
        } else {
            format!(" at {}", crate::view::point_label(point))
        };
        for f in &FIGURES {
            let mut vals: Vec<(&str, f64)> = runs
                .iter()
                .filter_map(|x| (f.value)(x).map(|v| (x.target.as_str(), v)))
                .collect();
            if vals.len() < 2 {
                continue;
            }
            vals.sort_by(|a, b| {
                if f.higher_is_better {
                    b.1.total_cmp(&a.1)
                } else {
                    a.1.total_cmp(&b.1)
                }
            });
            let (lead, next) = (vals[0], vals[1]);
            let ratio = if f.higher_is_better {
                lead.1 / next.1
            } else {
                next.1 / lead.1
            };
            let by = if ratio < 1.05 {
                format!("level with {} ({})", next.0, (f.show)(next.1))
            } else {
                format!("{ratio:.1}× better than {} ({})", next.0, (f.show)(next.1))
            };
            lines.push(format!(
                "{}{at}: {} leads with {}, {by}",
                f.name,
                lead.0,
                (f.show)(lead.1)
            ));
        }
    }
    if points.len() > MAX_POINTS {
        lines.push(format!(
            "(the first {MAX_POINTS} of {} points; the charts show them all)",
            points.len()
        ));
    }
    let classes = crate::durability::Classes::from_results(std::iter::once(r));
    if !classes.is_empty() {
        let mut seen = Vec::new();
        for run in &r.runs {
            if seen.contains(&run.target) {
                continue;
            }
            if let Some(c) = classes.of(r, run) {
                lines.push(format!("durability: {} {c}", run.target));
                seen.push(run.target.clone());
            }
        }
    }
    if let Some(f) = &r.plan.finding {
        lines.push(format!("the seed report found: {f}"));
    }
    lines
}
