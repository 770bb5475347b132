//! The verdict a report opens with: for each figure (throughput, p99,
//! client and server CPU per operation, memory per record, durability
//! class), which target leads at each point and by how much, and the seed
//! report's finding next to it when the experiment comes from one.

use std::collections::BTreeMap;

use bakeoff_core::durability::DurableTo;
use bakeoff_core::result::ExperimentResult;
use bakeoff_core::stats::{Basis, Difference};
use bakeoff_core::summary::{FigureSummary, Headline, PointSummary};

/// Most points the verdict speaks of (a sweep's verdict is its charts).
const MAX_POINTS: usize = 4;

/// The figures the verdict ranks by, in its order.
const FIGURES: [Headline; 5] = [
    Headline::Throughput,
    Headline::P99,
    Headline::ClientCpuPerOp,
    Headline::ServerCpuPerOp,
    Headline::MemoryPerRecord,
];

pub use bakeoff_core::summary::{client_cpu_per_op_ns, memory_per_record, server_cpu_per_op_ns};

/// How a run's target is reached and what its settings promise: runs
/// are only ranked against runs of the same group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Group {
    in_process: bool,
    durable_to: Option<DurableTo>,
}

impl Group {
    fn of(r: &ExperimentResult, target: &str) -> Self {
        let record = r.targets.iter().find(|t| t.name == target);
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
/// leader with its median and interval and its lead over the next, or a
/// tie where the difference is within what the repeats (or the one run)
/// can tell; the durability class of each target where it was measured;
/// the seed's finding. Targets are ranked only against targets reached
/// the same way (in-process or over the network) and of the same
/// durability class: when a point has summaries of several such groups,
/// each line names its group.
pub fn verdict(r: &ExperimentResult) -> Vec<String> {
    let summaries = bakeoff_core::summary::of(r);
    let mut points: Vec<&BTreeMap<String, String>> = Vec::new();
    for s in &summaries {
        if !points.contains(&&s.point) {
            points.push(&s.point);
        }
    }
    let mut lines = Vec::new();
    for point in points.iter().take(MAX_POINTS) {
        let mut groups: BTreeMap<Group, Vec<&PointSummary>> = BTreeMap::new();
        for s in summaries.iter().filter(|s| &&s.point == point) {
            groups.entry(Group::of(r, &s.target)).or_default().push(s);
        }
        let named = groups.len() > 1;
        let mut groups: Vec<(Group, Vec<&PointSummary>)> = groups.into_iter().collect();
        // Servers before engines, the most durable first.
        groups.sort_by_key(|(g, _)| (g.in_process, std::cmp::Reverse(g.durable_to)));
        let mut alone = Vec::new();
        for (group, members) in &groups {
            if members.len() < 2 {
                if named {
                    alone.extend(
                        members
                            .iter()
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
            lines.extend(leads(members, &at));
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
    if let Some(note) = summaries.first().map(|s| s.interval_note()) {
        if !lines.is_empty() {
            lines.push(format!("−/+ %: {note}"));
        }
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

/// The ratio of `better` over `worse` as a lead (1 or more).
fn lead_ratio(figure: Headline, better: f64, worse: f64) -> f64 {
    if figure.higher_is_better() {
        better / worse
    } else {
        worse / better
    }
}

/// For each figure, which of `members` leads and by how much, or which
/// tie with the leader: "throughput`at`: redis leads with …", "p99
/// latency`at`: tie: redis and memcached (1.06×, within what this machine
/// can tell)".
fn leads(members: &[&PointSummary], at: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for f in FIGURES {
        let mut vals: Vec<(&PointSummary, &FigureSummary)> = members
            .iter()
            .filter_map(|s| s.figure(f).map(|x| (*s, x)))
            .collect();
        if vals.len() < 2 {
            continue;
        }
        vals.sort_by(|a, b| {
            if f.higher_is_better() {
                b.1.median.total_cmp(&a.1.median)
            } else {
                a.1.median.total_cmp(&b.1.median)
            }
        });
        let (lead, lead_fig) = vals[0];
        // Every target the leader cannot be told apart from.
        let tied: Vec<(&PointSummary, &FigureSummary, Difference)> = vals[1..]
            .iter()
            .filter_map(|(s, x)| {
                let d = bakeoff_core::summary::difference(lead, s, f)?;
                (!d.significant).then_some((*s, *x, d))
            })
            .collect();
        let name = figure_name(f);
        if let Some(last) = tied.last() {
            let mut names: Vec<&str> = vec![lead.target.as_str()];
            names.extend(tied.iter().map(|(s, _, _)| s.target.as_str()));
            let ratio = lead_ratio(f, lead_fig.median, last.1.median);
            let values: Vec<String> = std::iter::once(lead_fig)
                .chain(tied.iter().map(|(_, x, _)| *x))
                .map(crate::with_interval)
                .collect();
            lines.push(format!(
                "{name}{at}: tie: {} ({ratio:.2}×, {}): {}",
                and_list(&names),
                why_tied(&last.2, lead, last.0),
                values.join(" and ")
            ));
            continue;
        }
        let (next, next_fig) = vals[1];
        let d = bakeoff_core::summary::difference(lead, next, f);
        let ratio = lead_ratio(f, lead_fig.median, next_fig.median);
        lines.push(format!(
            "{name}{at}: {} leads with {}, {ratio:.2}× better than {} ({}){}",
            lead.target,
            crate::with_interval(lead_fig),
            next.target,
            crate::with_interval(next_fig),
            d.map(|d| how_sure(&d)).unwrap_or_default()
        ));
    }
    lines
}

/// How the verdict names a figure.
fn figure_name(f: Headline) -> &'static str {
    match f {
        Headline::Throughput => "throughput",
        Headline::P99 => "p99 latency",
        Headline::ClientCpuPerOp => "client CPU per operation",
        Headline::ServerCpuPerOp => "server CPU per operation",
        Headline::MemoryPerRecord => "memory per record",
        other => other.key(),
    }
}

/// `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Why a difference is not called one.
fn why_tied(d: &Difference, a: &PointSummary, b: &PointSummary) -> String {
    let fewest = a.repeats.min(b.repeats) as usize;
    match d.basis {
        Basis::Repeats if fewest < bakeoff_core::stats::REPEATS_FOR_TEST => format!(
            "{fewest} repeats cannot tell; --repeats {} can",
            bakeoff_core::stats::REPEATS_FOR_INTERVAL
        ),
        Basis::Repeats => match d.p {
            Some(p) => format!("within what this machine can tell: p = {p:.2}"),
            None => "within what this machine can tell".into(),
        },
        Basis::OneRun => "within what one run can tell".into(),
        Basis::Nothing => format!(
            "no interval to tell them apart: one run too short for one; --repeats {} gives one",
            bakeoff_core::stats::REPEATS_FOR_INTERVAL
        ),
    }
}

/// What a called lead rests on: `; p = 0.002 over 6 repeats`, `; on one
/// run`.
fn how_sure(d: &Difference) -> String {
    match (d.basis, d.p) {
        (Basis::Repeats, Some(p)) => format!("; p = {p:.3}"),
        (Basis::OneRun, _) => "; on one run, intervals apart".into(),
        _ => String::new(),
    }
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
        // Six repeats each, a few per cent apart: a between-run interval.
        r.runs = (0..6)
            .flat_map(|repeat| {
                let template = &template;
                kinds.iter().enumerate().map(move |(i, (name, _, _))| {
                    let mut run = template.clone();
                    run.target = name.to_string();
                    run.point.clear();
                    run.repeat = repeat;
                    run.measure.throughput_per_s =
                        1000.0 * 10f64.powi(i as i32) * (1.0 + 0.01 * f64::from(repeat));
                    run
                })
            })
            .collect();
        r.summaries = bakeoff_core::summary::summarise(&r);
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
        r.runs.retain(|x| x.target == "pg" || x.target == "maria");
        r.summaries = bakeoff_core::summary::summarise(&r);
        let lines = verdict(&r);
        assert!(
            lines[0].starts_with("throughput: maria leads with"),
            "{lines:#?}"
        );
        assert!(lines.iter().all(|l| !l.contains("among")), "{lines:#?}");
    }
}
