//! Runs experiments: [`run_experiment`] walks the plan's matrix, opens
//! each target for each run ([`one`]: a run as stages, each feature an
//! extra), runs its jobs on worker threads ([`job`]) and writes the result
//! file after every run.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use crate::error::RunError;
use crate::plan::{Plan, TargetSpec};
use crate::result::{
    Environment, ExperimentResult, ExperimentStatus, TargetRecord, SCHEMA_VERSION,
};
use crate::target::TargetOpener;
use crate::value::ValuePool;

mod check;
mod extras;
mod job;
mod notes;
mod one;
mod search;
pub mod start;

pub use job::{run_job, JobOutcome, Observer, Quiet, LOAD_CLIENTS_MAX};
pub use one::ExperimentOptions;

/// Current time as RFC 3339 UTC, to the second (`2026-11-26T22:07:34Z`).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Runs every point of `plan` on every target, `repeats` times, writing the
/// result file after each run. Setup errors (a target that cannot be used
/// when the user named it) are returned before anything runs.
pub fn run_experiment(
    plan: &Plan,
    opener: &dyn TargetOpener,
    environment: Environment,
    opts: &ExperimentOptions,
    observer: &mut dyn Observer,
) -> Result<ExperimentResult, RunError> {
    let mut result = ExperimentResult {
        schema_version: SCHEMA_VERSION,
        tool: "bakeoff".into(),
        started_at: now_rfc3339(),
        status: crate::result::ExperimentStatus::Running,
        plan: plan.clone(),
        environment,
        targets: Vec::new(),
        runs: Vec::new(),
        warnings: Vec::new(),
        searches: Vec::new(),
        shard: None,
        shards: Vec::new(),
        rounds: Vec::new(),
        summaries: Vec::new(),
        precision: None,
    };
    let usable = probe_targets(plan, opener, opts, observer, &mut result)?;
    one::write(&result, opts)?;

    let points = plan.points();
    // Each target's own points: the same labels, its own base workload
    // where the preset gives it one.
    let target_points: Vec<Vec<crate::plan::Point>> =
        usable.iter().map(|spec| plan.points_for(spec)).collect();
    let max_value = target_points
        .iter()
        .flatten()
        .map(|p| p.workload.value_size.max())
        .max()
        .unwrap_or(100);
    let pool = ValuePool::new(max_value);
    let searching = plan.workload.find_peak || plan.workload.find_capacity.is_some();
    let mut runs = one::Runs {
        plan,
        pool: &pool,
        opener,
        opts,
        observer,
        recorded: BTreeMap::new(),
        result,
        made: 0,
        // A search's count is an estimate: it stops when it has found
        // what it looks for.
        total: usable.len()
            * points.len()
            * if searching {
                search::MAX_STEPS
            } else {
                plan.repeats as usize
            },
        kept: None,
        loaded: false,
    };
    let order = run_order(plan, usable.len(), points.len());
    if !plan.workload.grow && !searching {
        runs.result.rounds = rounds_of(&order, &usable, &points);
    }
    let started = std::time::Instant::now();
    let mut round = Round {
        usable: &usable,
        target_points: &target_points,
        searching,
        up: BTreeMap::new(),
    };
    for item in order {
        if opts.stop.load(Ordering::Relaxed) {
            break;
        }
        round.run(&mut runs, item)?;
    }
    // Precision asked: more rounds until every bound is met.
    if !plan.precision.is_empty() && !plan.workload.grow && !searching {
        round.until_precise(&mut runs, &points, started)?;
    }
    // The servers kept up between rounds stop before the file says done.
    drop(round);
    runs.result.status = if opts.stop.load(Ordering::Relaxed) {
        ExperimentStatus::Interrupted
    } else {
        ExperimentStatus::Complete
    };
    runs.write()?;
    Ok(runs.result)
}

/// The targets of `plan` that can be used; the default comparison skips
/// (and records) those this machine cannot start, any other run refuses
/// to start.
fn probe_targets(
    plan: &Plan,
    opener: &dyn TargetOpener,
    opts: &ExperimentOptions,
    observer: &mut dyn Observer,
    result: &mut ExperimentResult,
) -> Result<Vec<TargetSpec>, RunError> {
    let mut usable = Vec::new();
    for spec in &plan.targets {
        match opener.probe(spec, plan) {
            Ok(()) => usable.push(spec.clone()),
            Err(e) if opts.skip_unavailable => {
                let message = e.to_string();
                let note = format!("skipped {}: {message}", spec.label());
                observer.note(&note);
                result.warnings.push(note);
                result.targets.push(TargetRecord {
                    name: spec.id(),
                    mode: "managed".into(),
                    skipped: Some(message),
                    ..TargetRecord::default()
                });
            }
            Err(source) => {
                return Err(RunError::Setup {
                    target: spec.label(),
                    source,
                })
            }
        }
    }
    Ok(usable)
}

/// What every run of the matrix needs to be made: the targets, their
/// points, and the servers kept up from one round to the next.
struct Round<'p> {
    usable: &'p [TargetSpec],
    target_points: &'p [Vec<crate::plan::Point>],
    searching: bool,
    /// Servers loaded in an earlier round that serve the later ones (see
    /// [`crate::plan::Workload::stays_up_between_rounds`]); in-process
    /// engines are opened afresh each round, as their memory is
    /// bakeoff's own.
    up: BTreeMap<(usize, usize), Box<dyn crate::target::Target>>,
}

impl Round<'_> {
    /// Rounds past the plan's repeats until every `--precision` bound is
    /// met, or `--max-repeats`, `--max-time` or a stop ends them; the
    /// result says what was reached and why the rounds stopped.
    fn until_precise(
        &mut self,
        runs: &mut one::Runs,
        points: &[crate::plan::Point],
        started: std::time::Instant,
    ) -> Result<(), RunError> {
        let plan = runs.plan;
        let stop = runs.opts.stop.clone();
        let mut made = plan.repeats;
        let stopped_by = loop {
            if precise(&runs.result.summaries, &plan.precision) {
                break "every bound met".to_string();
            }
            if stop.load(Ordering::Relaxed) {
                break "interrupted".to_string();
            }
            if made >= plan.max_rounds() {
                break format!("--max-repeats {} reached", plan.max_rounds());
            }
            if let Some(max) = plan
                .max_time_s
                .filter(|m| started.elapsed().as_secs_f64() >= *m)
            {
                break format!("--max-time {max} s reached");
            }
            let extra = round_order(plan, self.usable.len(), points.len(), made);
            runs.total += extra.len();
            runs.result
                .rounds
                .extend(rounds_of(&extra, self.usable, points));
            for item in extra {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                self.run(runs, item)?;
            }
            made += 1;
        };
        runs.result.precision = Some(precision_report(
            &runs.result.summaries,
            &plan.precision,
            made,
            stopped_by,
        ));
        Ok(())
    }

    /// Makes run `(point, repeat, target)`.
    fn run(
        &mut self,
        runs: &mut one::Runs,
        (p, repeat, s): (usize, u32, usize),
    ) -> Result<(), RunError> {
        let plan = runs.plan;
        let (point, spec) = (&self.target_points[s][p], &self.usable[s]);
        // A growth series keeps its target up between its checkpoints.
        if !plan.workload.grow || p == 0 {
            runs.kept = None;
        }
        runs.loaded = false;
        if let Some(t) = self.up.remove(&(p, s)) {
            runs.kept = Some(t);
            runs.loaded = true;
        }
        if !self.searching {
            runs.step(spec, point, Some(repeat), None)?;
            let ok = runs
                .result
                .runs
                .last()
                .is_some_and(|r| r.status == crate::result::RunStatus::Ok);
            if ok && repeat + 1 < plan.max_rounds() && point.workload.stays_up_between_rounds() {
                if let Some(t) = runs.kept.take().filter(|t| !t.record().in_process()) {
                    self.up.insert((p, s), t);
                }
            }
        } else if repeat == 0 {
            // A search runs once per point and target: its steps stand for
            // repeats.
            let stop = runs.opts.stop.clone();
            let found = search::search(point, &spec.id(), &stop, &mut |point, bound| {
                runs.step(spec, point, None, bound)
            })?;
            if let Some(note) = notes::search_note(&found) {
                runs.observer.note(&note);
            }
            runs.result.searches.push(found);
            runs.write()?;
        }
        Ok(())
    }
}

/// Whether every summary meets every bound of `bounds` with an interval
/// between runs.
fn precise(
    summaries: &[crate::summary::PointSummary],
    bounds: &[crate::plan::PrecisionBound],
) -> bool {
    bounds
        .iter()
        .all(|b| worst_width(summaries, b).is_some_and(|w| w <= b.within))
}

/// The widest half-width over the median of `b`'s figure among
/// `summaries`; `None` where one has no interval between runs.
fn worst_width(
    summaries: &[crate::summary::PointSummary],
    b: &crate::plan::PrecisionBound,
) -> Option<f64> {
    let mut worst: f64 = 0.0;
    for s in summaries {
        let Some(f) = s.figure(b.figure) else {
            continue;
        };
        let i = f
            .interval
            .filter(|i| i.kind == crate::stats::IntervalKind::BetweenRuns)?;
        worst = worst.max(i.relative_half_width(f.median));
    }
    Some(worst)
}

/// What `--precision` reached.
fn precision_report(
    summaries: &[crate::summary::PointSummary],
    bounds: &[crate::plan::PrecisionBound],
    repeats: u32,
    stopped_by: String,
) -> crate::result::PrecisionReport {
    crate::result::PrecisionReport {
        repeats,
        stopped_by,
        bounds: bounds
            .iter()
            .map(|b| {
                let reached = worst_width(summaries, b);
                crate::result::PrecisionOutcome {
                    figure: b.figure,
                    within: b.within,
                    reached,
                    met: reached.is_some_and(|w| w <= b.within),
                }
            })
            .collect(),
    }
}

/// Round number `repeat`: every target at every point once, in an order
/// drawn from the seed (`--order random`) or as given.
fn round_order(
    plan: &Plan,
    targets: usize,
    points: usize,
    repeat: u32,
) -> Vec<(usize, u32, usize)> {
    let mut round: Vec<(usize, u32, usize)> = (0..points)
        .flat_map(|p| (0..targets).map(move |s| (p, repeat, s)))
        .collect();
    if plan.order == crate::plan::RunOrder::Random {
        let mut rng = crate::workload::Rng::new(plan.seed ^ 0x0bde_72ed, u64::from(repeat));
        for i in (1..round.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            round.swap(i, j);
        }
    }
    round
}

/// The order of runs, as (point, repeat, target) indices. Repeats run as
/// rounds, each round every target at every point once: in an order drawn
/// from the seed, a new one each round (`--order random`), so that a drift
/// of the machine spreads over every target; or, with `--order fixed`,
/// point after point, each point's repeats together, the targets in turn
/// within them. A growth experiment instead takes each target through all
/// its checkpoints, staying up between.
fn run_order(plan: &Plan, targets: usize, points: usize) -> Vec<(usize, u32, usize)> {
    let mut order = Vec::with_capacity(targets * points * plan.repeats as usize);
    if plan.workload.grow {
        for s in 0..targets {
            for repeat in 0..plan.repeats {
                for p in 0..points {
                    order.push((p, repeat, s));
                }
            }
        }
    } else if plan.order == crate::plan::RunOrder::Random {
        for repeat in 0..plan.repeats {
            order.extend(round_order(plan, targets, points, repeat));
        }
    } else {
        for p in 0..points {
            for repeat in 0..plan.repeats {
                for s in 0..targets {
                    order.push((p, repeat, s));
                }
            }
        }
    }
    order
}

/// The rounds of `order` as the result file records them: each round's
/// runs in the order made, as `target` or `target point`.
fn rounds_of(
    order: &[(usize, u32, usize)],
    targets: &[TargetSpec],
    points: &[crate::plan::Point],
) -> Vec<Vec<String>> {
    let first = order.iter().map(|&(_, r, _)| r as usize).min().unwrap_or(0);
    let rounds = order
        .iter()
        .map(|&(_, r, _)| r as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out = vec![Vec::new(); rounds.saturating_sub(first)];
    for &(p, repeat, s) in order {
        let labels: Vec<String> = points[p]
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let name = if labels.is_empty() {
            targets[s].id()
        } else {
            format!("{} {}", targets[s].id(), labels.join(" "))
        };
        out[repeat as usize - first].push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(order: &str, repeats: &str) -> Plan {
        let flags = crate::plan::Overrides {
            targets: vec![
                "redis".into(),
                "memcached".into(),
                "redis://127.0.0.1:7000".into(),
            ],
            repeats: Some(repeats.into()),
            order: Some(order.into()),
            ..Default::default()
        };
        Plan::build(None, &flags, &crate::plan::tests::Cat).expect("a plan")
    }

    /// Random rounds run every target once a round, in orders that differ
    /// from round to round and are the same for the same seed; fixed keeps
    /// the targets as given.
    #[test]
    fn random_rounds_run_every_target_once_a_round_in_a_drawn_order() {
        let p = plan("random", "6");
        let order = run_order(&p, 3, 1);
        assert_eq!(order.len(), 18);
        let rounds: Vec<Vec<usize>> = order
            .chunks(3)
            .map(|c| c.iter().map(|&(_, _, s)| s).collect())
            .collect();
        for (i, r) in rounds.iter().enumerate() {
            let mut sorted = r.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2], "round {i}: {r:?}");
            assert!(order[i * 3..i * 3 + 3]
                .iter()
                .all(|&(_, rep, _)| rep == i as u32));
        }
        assert!(rounds.iter().any(|r| r != &rounds[0]), "{rounds:?}");
        assert_eq!(order, run_order(&p, 3, 1), "drawn from the seed");
        let fixed = run_order(&plan("fixed", "2"), 3, 1);
        let targets: Vec<usize> = fixed.iter().map(|&(_, _, s)| s).collect();
        assert_eq!(targets, vec![0, 1, 2, 0, 1, 2]);
    }
}
