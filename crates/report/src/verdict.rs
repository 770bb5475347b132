//! The verdict a report opens with: for each figure (throughput, p99,
//! client and server CPU per operation, memory per record, bytes the disk
//! wrote per write, durability class), which target leads at each point and by how much, and the seed
//! report's finding next to it when the experiment comes from one.

use std::collections::BTreeMap;

use bakeoff_core::durability::DurableTo;
use bakeoff_core::result::ExperimentResult;
use bakeoff_core::stats::{Basis, Difference};
use bakeoff_core::summary::{FigureSummary, Headline, PointSummary};

/// Most points the verdict speaks of (a sweep's verdict is its charts).
const MAX_POINTS: usize = 4;

/// The figures the verdict ranks by, in its order.
const FIGURES: [Headline; 6] = [
    Headline::Throughput,
    Headline::P99,
    Headline::ClientCpuPerOp,
    Headline::ServerCpuPerOp,
    Headline::MemoryPerRecord,
    Headline::DiskPerWrite,
];

pub use bakeoff_core::summary::{client_cpu_per_op_ns, memory_per_record, server_cpu_per_op_ns};

/// Bytes per write below which the disk wrote next to nothing: another
/// process's writes to the device in the same seconds are more.
const NEXT_TO_NOTHING: f64 = 16.0;

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

/// What one figure says among one group of targets: who leads and by
/// how much, or who cannot be told apart.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// `leader` is better than every other member, beyond the noise.
    Lead {
        /// The leading target.
        leader: String,
        /// Its figure.
        value: FigureSummary,
        /// The runner-up.
        next: String,
        /// The runner-up's figure.
        next_value: FigureSummary,
        /// The leader's lead over the runner-up (1 or more).
        ratio: f64,
        /// What the lead rests on, where judged.
        difference: Option<Difference>,
    },
    /// The leader and `names[1..]` cannot be told apart.
    Tie {
        /// The tied targets, the leader first.
        names: Vec<String>,
        /// Their figures, in the same order.
        values: Vec<FigureSummary>,
        /// The leader over the last tied (1 or more).
        ratio: f64,
        /// Why the last tied is not called different.
        why: String,
        /// The judgement against the last tied.
        difference: Difference,
        /// The fewest repeats of the two.
        fewest: u32,
    },
}

impl Outcome {
    /// What the outcome rests on, in a few words: `p = 0.002`, `one
    /// run`, `3 repeats: too few`.
    pub fn how_sure_short(&self) -> String {
        let (d, fewest) = match self {
            Outcome::Lead { difference, .. } => match difference {
                Some(d) => (d, u32::MAX),
                None => return String::new(),
            },
            Outcome::Tie {
                difference, fewest, ..
            } => (difference, *fewest),
        };
        match (d.basis, d.p) {
            (Basis::Repeats, _) if (fewest as usize) < bakeoff_core::stats::REPEATS_FOR_TEST => {
                format!("{fewest} repeats: too few")
            }
            (Basis::Repeats, Some(p)) => format!("p = {p:.3}"),
            (Basis::Repeats, None) => "intervals apart".into(),
            (Basis::OneRun, _) => "one run".into(),
            (Basis::Nothing, _) => "no interval".into(),
        }
    }
}

/// One figure's outcome.
#[derive(Clone, Debug)]
pub struct Row {
    /// Which figure.
    pub figure: Headline,
    /// Its outcome.
    pub outcome: Outcome,
}

/// The verdict among one group of targets (reached the same way, of the
/// same durability class) at one point.
#[derive(Clone, Debug)]
pub struct Ranking {
    /// `among network servers that survive a power cut`, where the point
    /// has several groups; `None` where it has one.
    pub group: Option<String>,
    /// The group's targets, in the summaries' order.
    pub members: Vec<String>,
    /// One row a figure both sides measured.
    pub rows: Vec<Row>,
}

/// The verdict at one point of the experiment.
#[derive(Clone, Debug)]
pub struct PointVerdict {
    /// The sweep values (empty without a sweep).
    pub point: BTreeMap<String, String>,
    /// One ranking a group of two or more.
    pub rankings: Vec<Ranking>,
    /// Targets alone in their group: `redis (among …)`.
    pub alone: Vec<String>,
}

/// The whole verdict of one experiment: what [`verdict`] says in
/// sentences and [`matrix`] in a table.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Up to [`MAX_POINTS`] points.
    pub points: Vec<PointVerdict>,
    /// How many points the experiment has, where more than shown.
    pub points_in_all: Option<usize>,
    /// What the intervals stand for.
    pub interval_note: Option<String>,
    /// Each target's measured durability class: `redis kept every …`.
    pub classes: Vec<String>,
    /// The seed report's own finding.
    pub finding: Option<String>,
}

/// The verdict of `r`: per point (up to [`MAX_POINTS`]) and figure, the
/// leader with its median and interval and its lead over the next, or a
/// tie where the difference is within what the repeats (or the one run)
/// can tell; the durability class of each target where it was measured;
/// the seed's finding. Targets are ranked only against targets reached
/// the same way (in-process or over the network) and of the same
/// durability class: when a point has summaries of several such groups,
/// each ranking names its group.
pub fn judge(r: &ExperimentResult) -> Verdict {
    let summaries = bakeoff_core::summary::of(r);
    let mut points: Vec<&BTreeMap<String, String>> = Vec::new();
    for s in &summaries {
        if !points.contains(&&s.point) {
            points.push(&s.point);
        }
    }
    let mut out = Vec::new();
    for point in points.iter().take(MAX_POINTS) {
        let mut groups: BTreeMap<Group, Vec<&PointSummary>> = BTreeMap::new();
        for s in summaries.iter().filter(|s| &&s.point == point) {
            groups.entry(Group::of(r, &s.target)).or_default().push(s);
        }
        let named = groups.len() > 1;
        let mut groups: Vec<(Group, Vec<&PointSummary>)> = groups.into_iter().collect();
        // Servers before engines, the most durable first.
        groups.sort_by_key(|(g, _)| (g.in_process, std::cmp::Reverse(g.durable_to)));
        let mut here = PointVerdict {
            point: (*point).clone(),
            rankings: Vec::new(),
            alone: Vec::new(),
        };
        for (group, members) in &groups {
            if members.len() < 2 {
                if named {
                    here.alone.extend(
                        members
                            .iter()
                            .map(|x| format!("{} ({})", x.target, group.name())),
                    );
                }
                continue;
            }
            here.rankings.push(Ranking {
                group: named.then(|| group.name()),
                members: members.iter().map(|m| m.target.clone()).collect(),
                rows: leads(members),
            });
        }
        out.push(here);
    }
    let classes = crate::durability::Classes::from_results(std::iter::once(r));
    let mut class_lines = Vec::new();
    if !classes.is_empty() {
        let mut seen = Vec::new();
        for run in &r.runs {
            if seen.contains(&run.target) {
                continue;
            }
            if let Some(c) = classes.of(r, run) {
                class_lines.push(format!("{} {c}", run.target));
                seen.push(run.target.clone());
            }
        }
    }
    Verdict {
        points: out,
        points_in_all: (points.len() > MAX_POINTS).then_some(points.len()),
        interval_note: summaries.first().map(|s| s.interval_note()),
        classes: class_lines,
        finding: r.plan.finding.clone(),
    }
}

/// The targets of point `p` alone in their group, so ranked against none.
fn alone_line(p: &PointVerdict, at_point: &str) -> Option<String> {
    (!p.alone.is_empty()).then(|| {
        format!(
            "alone in their group, so ranked against none{at_point}: {}",
            p.alone.join(", ")
        )
    })
}

/// Which points the verdict leaves to the charts, when it leaves any.
fn points_left_out(v: &Verdict) -> Option<String> {
    v.points_in_all
        .map(|n| format!("(the first {MAX_POINTS} of {n} points; the charts show them all)"))
}

/// The verdict of `r` in sentences, one a figure and group: "throughput:
/// redis leads with …", "p99 latency: tie: redis and memcached (1.06×,
/// within what this machine can tell)" (see [`judge`]).
pub fn verdict(r: &ExperimentResult) -> Vec<String> {
    let v = judge(r);
    let mut lines = Vec::new();
    for p in &v.points {
        let at_point = if p.point.is_empty() {
            String::new()
        } else {
            format!(" at {}", crate::view::point_label(&p.point))
        };
        for ranking in &p.rankings {
            let at = match &ranking.group {
                Some(g) => format!("{at_point} {g}"),
                None => at_point.clone(),
            };
            lines.extend(ranking.rows.iter().map(|row| sentence(row, &at)));
        }
        lines.extend(alone_line(p, &at_point));
    }
    lines.extend(points_left_out(&v));
    if let Some(note) = &v.interval_note {
        if !lines.is_empty() {
            lines.push(format!("−/+ %: {note}"));
        }
    }
    lines.extend(v.classes.iter().map(|c| format!("durability: {c}")));
    if let Some(f) = &v.finding {
        lines.push(format!("the seed report found: {f}"));
    }
    lines
}

/// One row as a sentence; `at` names the point and group.
fn sentence(row: &Row, at: &str) -> String {
    let name = figure_name(row.figure);
    match &row.outcome {
        Outcome::Tie {
            names,
            values,
            ratio,
            why,
            ..
        } => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let values: Vec<String> = values.iter().map(crate::with_interval).collect();
            format!(
                "{name}{at}: tie: {} ({ratio:.2}×, {why}): {}",
                and_list(&names),
                values.join(" and ")
            )
        }
        Outcome::Lead {
            leader,
            value,
            next,
            next_value,
            ratio,
            difference,
        } => format!(
            "{name}{at}: {leader} leads with {}, {ratio:.2}× better than {next} ({}){}",
            crate::with_interval(value),
            crate::with_interval(next_value),
            difference.as_ref().map(how_sure).unwrap_or_default()
        ),
    }
}

/// The verdict as a matrix: each group's heading (its name and targets)
/// with one row a figure (figure, leader or "tie", value with interval,
/// how sure, by how much over whom, or who ties); then what follows the
/// groups (targets alone in theirs, points left out, durability classes,
/// the seed's finding).
pub fn matrix_rows(r: &ExperimentResult) -> (Vec<MatrixGroup>, Vec<String>) {
    let v = judge(r);
    let mut blocks: Vec<MatrixGroup> = Vec::new();
    let mut after = Vec::new();
    for p in &v.points {
        let at_point = if p.point.is_empty() {
            String::new()
        } else {
            format!(" at {}", crate::view::point_label(&p.point))
        };
        for ranking in &p.rankings {
            let group = ranking
                .group
                .as_deref()
                .map(|g| g.trim_start_matches("among ").to_string())
                .unwrap_or_else(|| "all targets".into());
            let heading = format!("{group}{at_point}: {}", ranking.members.join(", "));
            let rows = ranking
                .rows
                .iter()
                .map(|row| {
                    let sure = row.outcome.how_sure_short();
                    let figure = short_figure_name(row.figure).to_string();
                    match &row.outcome {
                        Outcome::Lead {
                            leader,
                            value,
                            next,
                            ratio,
                            ..
                        } => [
                            figure,
                            leader.clone(),
                            crate::with_interval(value),
                            sure,
                            format!("{ratio:.2}× over {next}"),
                        ],
                        Outcome::Tie { names, ratio, .. } => [
                            figure,
                            "tie".into(),
                            String::new(),
                            sure,
                            format!("{} ({ratio:.2}×)", names.join(", ")),
                        ],
                    }
                })
                .collect();
            blocks.push((heading, rows));
        }
        after.extend(alone_line(p, &at_point));
    }
    after.extend(points_left_out(&v));
    after.extend(v.classes.iter().map(|c| format!("durability: {c}")));
    if let Some(f) = &v.finding {
        after.push(format!("the seed report found: {f}"));
    }
    (blocks, after)
}

/// One group of the matrix: its heading and one row a figure.
pub type MatrixGroup = (String, Vec<[String; 5]>);

/// The matrix's column headings.
pub const MATRIX_HEAD: [&str; 5] = [
    "figure",
    "leader",
    "its value (95 % interval)",
    "how sure",
    "by how much",
];

/// The verdict of `r` as a matrix for the terminal: a line naming each
/// group and its targets, then one row a figure: who leads, its value
/// with its interval, what that rests on, and by how much over whom; or
/// "tie", and who. Then the targets alone in their group. Rows start at
/// two spaces, a group's line at none.
pub fn matrix(r: &ExperimentResult) -> Vec<String> {
    let (blocks, after) = matrix_rows(r);
    let mut widths = [0usize; 5];
    for (_, rows) in &blocks {
        for row in rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut lines = Vec::new();
    for (heading, rows) in &blocks {
        lines.push(heading.clone());
        for row in rows {
            let mut line = String::from("  ");
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                // The value is right-aligned, the rest left.
                if c == 2 {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                }
                line.push_str("  ");
            }
            lines.push(line.trim_end().to_string());
        }
    }
    lines.extend(after);
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
/// tie with the leader.
fn leads(members: &[&PointSummary]) -> Vec<Row> {
    let mut rows = Vec::new();
    for f in FIGURES {
        let mut vals: Vec<(&PointSummary, &FigureSummary)> = members
            .iter()
            .filter_map(|s| s.figure(f).map(|x| (*s, x)))
            .collect();
        // Targets that all wrote next to nothing to the disk (servers
        // that keep writes in memory) have no order worth a line.
        let nothing_written =
            f == Headline::DiskPerWrite && vals.iter().all(|(_, x)| x.median < NEXT_TO_NOTHING);
        if vals.len() < 2 || nothing_written {
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
        if let Some(last) = tied.last() {
            rows.push(Row {
                figure: f,
                outcome: Outcome::Tie {
                    names: std::iter::once(lead.target.clone())
                        .chain(tied.iter().map(|(s, _, _)| s.target.clone()))
                        .collect(),
                    values: std::iter::once(lead_fig.clone())
                        .chain(tied.iter().map(|(_, x, _)| (*x).clone()))
                        .collect(),
                    ratio: lead_ratio(f, lead_fig.median, last.1.median),
                    why: why_tied(&last.2, lead, last.0),
                    difference: last.2,
                    fewest: lead.repeats.min(last.0.repeats),
                },
            });
            continue;
        }
        let (next, next_fig) = vals[1];
        rows.push(Row {
            figure: f,
            outcome: Outcome::Lead {
                leader: lead.target.clone(),
                value: lead_fig.clone(),
                next: next.target.clone(),
                next_value: next_fig.clone(),
                ratio: lead_ratio(f, lead_fig.median, next_fig.median),
                difference: bakeoff_core::summary::difference(lead, next, f),
            },
        });
    }
    rows
}

/// How the verdict's matrix names a figure.
fn short_figure_name(f: Headline) -> &'static str {
    match f {
        Headline::Throughput => "throughput",
        Headline::P99 => "p99 latency",
        Headline::ClientCpuPerOp => "client CPU/op",
        Headline::ServerCpuPerOp => "server CPU/op",
        Headline::MemoryPerRecord => "memory/record",
        Headline::DiskPerWrite => "disk/write",
        other => other.key(),
    }
}

/// How the verdict names a figure.
fn figure_name(f: Headline) -> &'static str {
    match f {
        Headline::Throughput => "throughput",
        Headline::P99 => "p99 latency",
        Headline::ClientCpuPerOp => "client CPU per operation",
        Headline::ServerCpuPerOp => "server CPU per operation",
        Headline::MemoryPerRecord => "memory per record",
        Headline::DiskPerWrite => "bytes the disk wrote per write",
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

    /// The disk's own count per write ranks like any cost (the fewer bytes
    /// the better); targets that all wrote next to nothing get no line.
    #[test]
    fn the_disk_line_ranks_by_the_devices_bytes() {
        let with_disk = |bytes: fn(&str) -> f64| {
            let mut r = four_targets();
            r.runs.retain(|x| x.target == "pg" || x.target == "maria");
            for run in &mut r.runs {
                let per_write = bytes(&run.target) * (1.0 + 0.01 * f64::from(run.repeat));
                run.disk = Some(bakeoff_core::result::DiskPerWrite {
                    writes: 1000,
                    device: Some(bakeoff_core::result::DeviceWrites {
                        bytes_per_write: Some(per_write),
                        ..Default::default()
                    }),
                    // The processes' own count, ten times off, is not used.
                    dirtied_bytes_per_write: Some(10.0 * per_write),
                    ..Default::default()
                });
            }
            r.summaries = bakeoff_core::summary::summarise(&r);
            verdict(&r)
        };
        let lines = with_disk(|t| if t == "pg" { 2600.0 } else { 1400.0 });
        let disk = lines
            .iter()
            .find(|l| l.starts_with("bytes the disk wrote per write"))
            .unwrap_or_else(|| panic!("a disk line: {lines:#?}"));
        assert!(
            disk.contains("maria leads with 1.4 KiB") && disk.contains("than pg"),
            "{disk}"
        );
        let lines = with_disk(|_| 2.0);
        assert!(
            lines.iter().all(|l| !l.starts_with("bytes the disk wrote")),
            "{lines:#?}"
        );
    }
}
