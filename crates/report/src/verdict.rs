//! The verdict a report opens with: for each figure (throughput, p99,
//! client and server CPU per operation, memory per record, durability
//! class), which target leads at each point and by how much, and the seed
//! report's finding next to it when the experiment comes from one.

use std::collections::BTreeMap;

use bakeoff_core::durability::DurableTo;
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
        .find(|t| t.phase == bakeoff_core::result::Phase::Measure)
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

/// How a run's target is reached and what its settings promise: runs
/// are only ranked against runs of the same group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Group {
    in_process: bool,
    durable_to: Option<DurableTo>,
}

impl Group {
    fn of(r: &ExperimentResult, run: &RunResult) -> Self {
        let record = crate::record_of(r, run);
        Group {
            in_process: record.is_some_and(|t| t.in_process()),
            durable_to: record.and_then(|t| t.durable_to),
        }
    }

    /// "among network servers that survive a power cut".
    fn name(self) -> String {
        let reach = if self.in_process {
            "in-process engines"
        } else {
            "network servers"
        };
        match self.durable_to {
            Some(d) => format!("among {reach} {}", d.group()),
            None => format!("among {reach} of undeclared durability"),
        }
    }
}

/// The verdict's lines: per point (up to [`MAX_POINTS`]) and figure, the
/// leader with its value and its lead over the next; the durability class
/// of each target where it was measured; the seed's finding. Targets are
/// ranked only against targets reached the same way (in-process or over
/// the network) and of the same durability class: when a point has runs
/// of several such groups, each line names its group.
pub fn verdict(r: &ExperimentResult) -> Vec<String> {
    let mut points: Vec<&BTreeMap<String, String>> = Vec::new();
    for run in &r.runs {
        if !points.contains(&&run.point) {
            points.push(&run.point);
        }
    }
    let mut lines = Vec::new();
    for point in points.iter().take(MAX_POINTS) {
        // Each target's first clean run at the point, by group.
        let mut groups: BTreeMap<Group, Vec<&RunResult>> = BTreeMap::new();
        for run in r
            .runs
            .iter()
            .filter(|x| &&x.point == point && x.status == bakeoff_core::result::RunStatus::Ok)
        {
            let runs = groups.entry(Group::of(r, run)).or_default();
            if !runs.iter().any(|x| x.target == run.target) {
                runs.push(run);
            }
        }
        let named = groups.len() > 1;
        let mut groups: Vec<(Group, Vec<&RunResult>)> = groups.into_iter().collect();
        // Servers before engines, the most durable first.
        groups.sort_by_key(|(g, _)| (g.in_process, std::cmp::Reverse(g.durable_to)));
        let mut alone = Vec::new();
        for (group, runs) in &groups {
            if runs.len() < 2 {
                if named {
                    alone.extend(
                        runs.iter()
                            .map(|x| format!("{} ({})", x.target, group.name())),
                    );
                }
                continue;
            }
            let mut at = if point.is_empty() {
                String::new()
            } else {
                format!(" at {}", crate::view::point_label(point))
            };
            if named {
                at = format!("{at} {}", group.name());
            }
            lines.extend(leads(runs, &at));
        }
        if !alone.is_empty() {
            lines.push(format!(
                "alone in their group, so ranked against none{}: {}",
                if point.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", crate::view::point_label(point))
                },
                alone.join(", ")
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

/// For each figure, which of `runs` leads and by how much: "throughput`at`:
/// redis leads with …".
fn leads(runs: &[&RunResult], at: &str) -> Vec<String> {
    let mut lines = Vec::new();
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
    lines
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bakeoff_core::result::TargetRecord;

    /// The mock result with four targets at one point: two network
    /// servers that survive a power cut, one memory-only server, one
    /// in-process engine; the faster the later.
    pub(crate) fn four_targets() -> ExperimentResult {
        let mut r: ExperimentResult =
            serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
                .expect("the mock snapshot is a result");
        let template = r.runs[0].clone();
        let kinds = [
            ("pg", "managed", Some(DurableTo::PowerCut)),
            ("maria", "managed", Some(DurableTo::PowerCut)),
            ("redis", "managed", Some(DurableTo::MemoryOnly)),
            ("lmdb", "embedded", Some(DurableTo::ProcessCrash)),
        ];
        r.targets = kinds
            .iter()
            .map(|(name, mode, d)| TargetRecord {
                name: name.to_string(),
                mode: mode.to_string(),
                durable_to: *d,
                ..TargetRecord::default()
            })
            .collect();
        r.runs = kinds
            .iter()
            .enumerate()
            .map(|(i, (name, _, _))| {
                let mut run = template.clone();
                run.target = name.to_string();
                run.point.clear();
                run.measure.throughput_per_s = 1000.0 * 10f64.powi(i as i32);
                run
            })
            .collect();
        r
    }

    /// No line ranks a target against one of another group, each line
    /// names its group, and a target alone in its group is said to be.
    #[test]
    fn the_verdict_ranks_only_like_with_like() {
        let lines = verdict(&four_targets());
        let throughput: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("throughput"))
            .collect();
        assert_eq!(throughput.len(), 1, "{lines:#?}");
        assert!(
            throughput[0].contains("among network servers that survive a power cut")
                && throughput[0].contains("maria leads")
                && throughput[0].contains("than pg"),
            "{lines:#?}"
        );
        for l in &lines {
            assert!(
                !l.contains("lmdb leads") && !l.contains("redis leads"),
                "{l}"
            );
        }
        let alone = lines
            .iter()
            .find(|l| l.starts_with("alone"))
            .expect("an alone line");
        assert!(
            alone.contains("redis (among network servers that keep writes in memory only)"),
            "{alone}"
        );
        assert!(
            alone.contains("lmdb (among in-process engines that survive a process crash)"),
            "{alone}"
        );
    }

    /// Runs of one group read as before: no group named.
    #[test]
    fn one_group_reads_as_before() {
        let mut r = four_targets();
        r.runs.truncate(2);
        let lines = verdict(&r);
        assert!(
            lines[0].starts_with("throughput: maria leads with"),
            "{lines:#?}"
        );
        assert!(lines.iter().all(|l| !l.contains("among")), "{lines:#?}");
    }
}
