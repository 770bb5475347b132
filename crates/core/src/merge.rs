//! Merging what several shards of one experiment measured (`--shard i/N`,
//! `bakeoff merge`): histograms are added bucket by bucket, never their
//! percentiles averaged; counts and errors are summed. A histogram whose
//! bounds differ from the others' cannot be added exactly, and is refused.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::result::{
    decode_histogram, ClientUsage, ExperimentResult, LatencySummary, OpResult, PhaseResult,
    RunResult, ShardSummary, TimelinePoint,
};

/// Why results cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    /// No file was given.
    #[error("no shard files to merge; give every shard's result file, e.g. bakeoff merge shard-*.json -o merged.json")]
    Empty,
    /// A file that is no shard's.
    #[error("{file} is not a shard's result: it was not run with --shard INDEX/COUNT")]
    NotAShard {
        /// The file.
        file: String,
    },
    /// Files of different plans, versions or shard counts.
    #[error("{file} and {first} are not shards of one experiment: their {what} differ ({theirs} against {ours})")]
    Differs {
        /// The file that differs.
        file: String,
        /// The first file, what it is held against.
        first: String,
        /// What differs: plan hash, bakeoff version, shard count, runs.
        what: &'static str,
        /// The first file's.
        ours: String,
        /// This file's.
        theirs: String,
    },
    /// A shard given twice.
    #[error("shard {index} is given twice ({first} and {file}); give each shard's file once")]
    Duplicate {
        /// The shard.
        index: u32,
        /// Its first file.
        first: String,
        /// The second.
        file: String,
    },
    /// Shards missing.
    #[error("shards {missing:?} of {count} are missing: every shard's file is needed for an exact merge")]
    Missing {
        /// Their indexes.
        missing: Vec<u32>,
        /// Shards in all.
        count: u32,
    },
    /// A file whose shard number cannot be: at or past its count, or a
    /// count of 0.
    #[error("{file} says it is shard {index} of {count}, which cannot be: shards are numbered 0 to COUNT-1, and COUNT is at least 1 (--shard INDEX/COUNT)")]
    BadShard {
        /// The file.
        file: String,
        /// Its shard number.
        index: u32,
        /// Its shard count.
        count: u32,
    },
    /// A sum past what a count can hold: the files are corrupt.
    #[error("{what}: the shards' counts add up to more than 2^64 - 1; a file is corrupt")]
    Overflow {
        /// Which count.
        what: String,
    },
    /// A histogram does not decode.
    #[error("{what}: {message}")]
    Histogram {
        /// Where it is.
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// Histograms with different bounds or precision.
    #[error(
        "{what}: histogram bounds differ ({theirs} against {ours}); the shards were run by different bakeoff versions or settings, and their histograms cannot be added exactly"
    )]
    Bounds {
        /// Where it is.
        what: String,
        /// Bounds of the first shard's histogram.
        ours: String,
        /// Bounds of this one.
        theirs: String,
    },
}

/// `low..=high, N significant digits` of `h`, to name its bounds.
fn bounds_of(h: &Histogram<u64>) -> String {
    format!(
        "{}..={} ns, {} significant digits",
        h.low(),
        h.high(),
        h.sigfig()
    )
}

/// Adds the histograms of `parts` bucket by bucket; `what` names them in
/// errors.
pub fn add_latencies(parts: &[&LatencySummary], what: &str) -> Result<LatencySummary, MergeError> {
    let mut sum: Option<Histogram<u64>> = None;
    for (i, p) in parts.iter().enumerate() {
        let h = decode_histogram(&p.hdr).map_err(|message| MergeError::Histogram {
            what: format!("{what} (shard file {})", i + 1),
            message,
        })?;
        match &mut sum {
            None => sum = Some(h),
            Some(s) => {
                if (s.low(), s.high(), s.sigfig()) != (h.low(), h.high(), h.sigfig()) {
                    return Err(MergeError::Bounds {
                        what: what.to_string(),
                        ours: bounds_of(s),
                        theirs: bounds_of(&h),
                    });
                }
                s.add(&h).map_err(|e| MergeError::Histogram {
                    what: what.to_string(),
                    message: format!("{e:?}"),
                })?;
            }
        }
    }
    Ok(sum.map_or_else(LatencySummary::default, |h| LatencySummary::of(&h)))
}

/// The sum of `values`, or [`MergeError::Overflow`] naming `what`.
fn total(values: impl IntoIterator<Item = u64>, what: &str) -> Result<u64, MergeError> {
    values
        .into_iter()
        .try_fold(0u64, u64::checked_add)
        .ok_or_else(|| MergeError::Overflow {
            what: what.to_string(),
        })
}

/// One operation kind's figures from every shard that ran it.
fn add_ops(parts: &[&OpResult], what: &str) -> Result<OpResult, MergeError> {
    let latencies: Vec<&LatencySummary> = parts.iter().map(|o| &o.latency).collect();
    let service: Option<Vec<&LatencySummary>> =
        parts.iter().map(|o| o.service_time.as_ref()).collect();
    Ok(OpResult {
        sent: total(parts.iter().map(|o| o.sent), &format!("{what}: sent"))?,
        completed: total(
            parts.iter().map(|o| o.completed),
            &format!("{what}: completed"),
        )?,
        misses: total(parts.iter().map(|o| o.misses), &format!("{what}: misses"))?,
        failed: total(parts.iter().map(|o| o.failed), &format!("{what}: failed"))?,
        rows: total(parts.iter().map(|o| o.rows), &format!("{what}: rows"))?,
        latency: add_latencies(&latencies, what)?,
        service_time: match service {
            Some(s) => Some(add_latencies(&s, &format!("{what} service time"))?),
            None => None,
        },
    })
}

/// The phase the shards' `parts` make together, over `window_s` seconds
/// (the window common to all shards): counts and errors summed, every
/// histogram added, throughput the successful operations over the window.
pub fn add_phases(
    parts: &[&PhaseResult],
    window_s: f64,
    what: &str,
) -> Result<PhaseResult, MergeError> {
    let mut kinds: Vec<&String> = parts.iter().flat_map(|p| p.ops.keys()).collect();
    kinds.sort();
    kinds.dedup();
    let mut ops = BTreeMap::new();
    for kind in kinds {
        let of_kind: Vec<&OpResult> = parts.iter().filter_map(|p| p.ops.get(kind)).collect();
        ops.insert(kind.clone(), add_ops(&of_kind, &format!("{what}, {kind}"))?);
    }
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for p in parts {
        for (k, n) in &p.errors {
            let e = errors.entry(k.clone()).or_default();
            *e = total([*e, *n], &format!("{what}: {k} errors"))?;
        }
    }
    // The first shard's text of each kind stands for them all.
    let mut error_texts = BTreeMap::new();
    for p in parts {
        for (k, t) in &p.error_texts {
            error_texts.entry(k.clone()).or_insert_with(|| t.clone());
        }
    }
    let all: Vec<&LatencySummary> = parts.iter().map(|p| &p.all).collect();
    let send_lag: Option<Vec<&LatencySummary>> =
        parts.iter().map(|p| p.send_lag.as_ref()).collect();
    let stale: Option<Vec<u64>> = parts.iter().map(|p| p.stale_reads).collect();
    let completed = total(
        parts.iter().map(|p| p.completed),
        &format!("{what}: completed"),
    )?;
    Ok(PhaseResult {
        duration_s: window_s,
        completed,
        // Each shard's rate over its own phase, summed: the shards ran side
        // by side, so over the window they share this is the rate the
        // server saw (one shard's longer phase does not dilute it, nor a
        // shorter one inflate it).
        throughput_per_s: parts.iter().map(|p| p.throughput_per_s).sum(),
        misses: total(parts.iter().map(|p| p.misses), &format!("{what}: misses"))?,
        errors,
        error_texts,
        ops,
        all: add_latencies(&all, &format!("{what}, all kinds"))?,
        // Phased requests' steps are MariaDB's single-machine experiment;
        // their per-step histograms are added by name.
        steps: add_steps(parts, what)?,
        stale_reads: match stale {
            Some(s) => Some(total(s, &format!("{what}: stale reads"))?),
            None => None,
        },
        send_lag: match send_lag {
            Some(l) => Some(add_latencies(&l, &format!("{what}, send lag"))?),
            None => None,
        },
    })
}

/// The phased requests' steps of every shard, added step by step.
fn add_steps(
    parts: &[&PhaseResult],
    what: &str,
) -> Result<Vec<crate::result::StepResult>, MergeError> {
    let Some(first) = parts.first() else {
        return Ok(Vec::new());
    };
    first
        .steps
        .iter()
        .map(|step| {
            let of_step: Vec<&LatencySummary> = parts
                .iter()
                .filter_map(|p| p.steps.iter().find(|s| s.name == step.name))
                .map(|s| &s.latency)
                .collect();
            Ok(crate::result::StepResult {
                name: step.name.clone(),
                latency: add_latencies(&of_step, &format!("{what}, step {}", step.name))?,
            })
        })
        .collect()
}

/// Checks that `files` are every shard of one experiment, each once: the
/// same plan, bakeoff version, shard count and runs, every index below
/// the count.
fn check_shards(files: &[(String, ExperimentResult)]) -> Result<(), MergeError> {
    let (first_name, first) = files.first().ok_or(MergeError::Empty)?;
    let shard_of = |(name, r): &(String, ExperimentResult)| {
        r.shard
            .clone()
            .ok_or_else(|| MergeError::NotAShard { file: name.clone() })
    };
    let ours = shard_of(&files[0])?;
    let mut by_index: BTreeMap<u32, &String> = BTreeMap::new();
    for f in files {
        let theirs = shard_of(f)?;
        let differs = |what, ours: String, theirs: String| MergeError::Differs {
            file: f.0.clone(),
            first: first_name.clone(),
            what,
            ours,
            theirs,
        };
        if theirs.count == 0 || theirs.index >= theirs.count {
            return Err(MergeError::BadShard {
                file: f.0.clone(),
                index: theirs.index,
                count: theirs.count,
            });
        }
        if theirs.plan_hash != ours.plan_hash {
            return Err(differs(
                "plan hashes",
                ours.plan_hash.clone(),
                theirs.plan_hash,
            ));
        }
        let (v0, v) = (
            &first.environment.bakeoff_version,
            &f.1.environment.bakeoff_version,
        );
        if v != v0 {
            return Err(differs("bakeoff versions", v0.clone(), v.clone()));
        }
        if theirs.count != ours.count {
            return Err(differs(
                "shard counts",
                ours.count.to_string(),
                theirs.count.to_string(),
            ));
        }
        let runs = |r: &ExperimentResult| {
            r.runs
                .iter()
                .map(|run| format!("{} {:?} #{}", run.target, run.point, run.repeat))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if runs(&f.1) != runs(first) {
            return Err(differs("runs", runs(first), runs(&f.1)));
        }
        if let Some(seen) = by_index.insert(theirs.index, &f.0) {
            return Err(MergeError::Duplicate {
                index: theirs.index,
                first: seen.clone(),
                file: f.0.clone(),
            });
        }
    }
    let missing: Vec<u32> = (0..ours.count)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing,
            count: ours.count,
        });
    }
    Ok(())
}

/// Merges the result files of every shard of one experiment, `(file name,
/// its result)`: they must share the plan, the bakeoff version and the
/// shard count, and hold each index once. The merged file is an ordinary
/// result file: its runs add the shards' runs up (see [`add_phases`]), and
/// [`ExperimentResult::shards`] keeps what each shard did.
pub fn merge_results(files: &[(String, ExperimentResult)]) -> Result<ExperimentResult, MergeError> {
    check_shards(files)?;
    let first = &files[0].1;
    let mut runs = Vec::with_capacity(first.runs.len());
    for k in 0..first.runs.len() {
        let parts: Vec<&RunResult> = files.iter().map(|(_, r)| &r.runs[k]).collect();
        runs.push(add_runs(&parts)?);
    }
    let mut merged = first.clone();
    merged.runs = runs;
    merged.summaries = crate::summary::summarise(&merged);
    merged.shard = None;
    merged.started_at = files
        .iter()
        .map(|(_, r)| r.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.status = files
        .iter()
        .map(|(_, r)| r.status)
        .find(|s| *s != crate::result::ExperimentStatus::Complete)
        .unwrap_or(crate::result::ExperimentStatus::Complete);
    merged.warnings = files
        .iter()
        .flat_map(|(name, r)| r.warnings.iter().map(move |w| format!("{name}: {w}")))
        .collect();
    merged.shards = files
        .iter()
        .map(|(name, r)| {
            let shard = r.shard.clone().expect("checked above");
            ShardSummary {
                start_skew_s: shard
                    .planned_start
                    .as_deref()
                    .and_then(|p| seconds_between(p, &shard.started_at)),
                shard,
                file: name.clone(),
                reached_per_s: r
                    .runs
                    .iter()
                    .map(|run| run.measure.attempted_per_s())
                    .collect(),
                asked_per_s: r.runs.iter().map(|run| run.workload.rate).collect(),
                client_bound: r.runs.iter().any(|run| run.client.client_bound),
            }
        })
        .collect();
    merged.shards.sort_by_key(|s| s.shard.index);
    Ok(merged)
}

/// Seconds from the RFC 3339 time `from` to `to` (UTC), when both read.
fn seconds_between(from: &str, to: &str) -> Option<f64> {
    let at = |t: &str| humantime::parse_rfc3339(t).ok();
    let (from, to) = (at(from)?, at(to)?);
    Some(match to.duration_since(from) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    })
}

/// One run of every shard, added up: the clients and the rate the shards
/// ran together, their phases and timelines summed, each shard's client
/// threads side by side.
fn add_runs(parts: &[&RunResult]) -> Result<RunResult, MergeError> {
    let first = parts[0];
    let what = format!("run {} ({})", first.index, first.target);
    let phase =
        |pick: fn(&RunResult) -> Option<&PhaseResult>, window: fn(&[f64]) -> f64, name: &str| {
            let ps: Option<Vec<&PhaseResult>> = parts.iter().map(|r| pick(r)).collect();
            ps.map(|ps| {
                let durations: Vec<f64> = ps.iter().map(|p| p.duration_s).collect();
                add_phases(&ps, window(&durations), &format!("{what}, {name}"))
            })
            .transpose()
        };
    let longest = |d: &[f64]| d.iter().copied().fold(0.0, f64::max);
    let common = |d: &[f64]| d.iter().copied().fold(f64::INFINITY, f64::min);
    let mut run = first.clone();
    // The load: the shards' parts side by side, done when the last is.
    run.load = phase(|r: &RunResult| r.load.as_ref(), longest, "load")?;
    run.warmup = phase(|r: &RunResult| r.warmup.as_ref(), common, "warm-up")?;
    run.measure =
        phase(|r: &RunResult| Some(&r.measure), common, "measure")?.expect("every run measures");
    // The measured window all shards share, from their clocks: the latest
    // start of a measured phase to the earliest end.
    if let Some(window) = common_window(parts) {
        run.measure.duration_s = window;
    }
    // By time, not by text: `…:01.5Z` sorts before `…:01Z`.
    let by_time = |t: &&String| humantime::parse_rfc3339(t).ok();
    run.started_at = parts
        .iter()
        .filter_map(|r| r.started_at.as_ref())
        .min_by_key(by_time)
        .cloned();
    run.ended_at = parts
        .iter()
        .filter_map(|r| r.ended_at.as_ref())
        .max_by_key(by_time)
        .cloned();
    run.clock_offset_ns = None;
    run.workload.clients = parts.iter().map(|r| r.workload.clients).sum();
    run.workload.threads = parts.iter().map(|r| r.workload.threads).sum();
    run.workload.rate = parts.iter().map(|r| r.workload.rate).sum::<Option<f64>>();
    use crate::result::RunStatus;
    run.status = if parts.iter().any(|r| r.status == RunStatus::Failed) {
        RunStatus::Failed
    } else if parts.iter().any(|r| r.status == RunStatus::Interrupted) {
        // One shard stopped early: the sum covers less than the run.
        RunStatus::Interrupted
    } else if parts.iter().any(|r| r.status == RunStatus::Errors) {
        RunStatus::Errors
    } else {
        first.status
    };
    let messages: Vec<String> = parts.iter().filter_map(|r| r.message.clone()).collect();
    run.message = (!messages.is_empty()).then(|| messages.join("; "));
    run.timeline = add_timelines(parts);
    run.client = ClientUsage {
        thread_busy_percent: parts
            .iter()
            .flat_map(|r| r.client.thread_busy_percent.iter().copied())
            .collect(),
        spin_percent: parts
            .iter()
            .flat_map(|r| r.client.spin_percent.iter().copied())
            .collect(),
        client_bound: parts.iter().any(|r| r.client.client_bound),
        ..first.client.clone()
    };
    // Each shard compared the server's counters, which every shard moved,
    // with its own requests: no such check holds for one shard, and the
    // server's counts over the whole window are not in the files.
    run.checks.counters = Vec::new();
    run.checks.littles_law_ratio = None;
    run.checks.records_after_load = parts
        .iter()
        .filter_map(|r| r.checks.records_after_load)
        .max();
    run.trace = None;
    run.nodes = Vec::new();
    Ok(run)
}

/// Seconds from the latest start of the shards' measured phases (their
/// measure job's start plus the warm-up) to the earliest end, when every
/// shard recorded its times; 0 when they did not overlap.
fn common_window(parts: &[&RunResult]) -> Option<f64> {
    let at = |t: &Option<String>| humantime::parse_rfc3339(t.as_deref()?).ok();
    let mut latest_start = None;
    let mut earliest_end = None;
    for r in parts {
        let start = at(&r.started_at)? + std::time::Duration::from_secs_f64(r.workload.warmup_s);
        let end = at(&r.ended_at)?;
        latest_start = latest_start.max(Some(start));
        earliest_end = Some(earliest_end.map_or(end, |e: std::time::SystemTime| e.min(end)));
    }
    let (from, to) = (latest_start?, earliest_end?);
    Some(to.duration_since(from).map_or(0.0, |d| d.as_secs_f64()))
}

/// The shards' timelines second by second: operations, errors and misses
/// summed; each second's percentiles the highest any shard saw (an upper
/// bound: the seconds' histograms are not kept).
fn add_timelines(parts: &[&RunResult]) -> Vec<TimelinePoint> {
    let mut by_second: BTreeMap<(u8, u32), TimelinePoint> = BTreeMap::new();
    for r in parts {
        for p in &r.timeline {
            let order = u8::from(p.phase != crate::result::Phase::Warmup);
            let m = by_second
                .entry((order, p.t_s))
                .or_insert_with(|| TimelinePoint {
                    t_s: p.t_s,
                    phase: p.phase,
                    ..TimelinePoint::default()
                });
            m.ops_per_s += p.ops_per_s;
            m.errors += p.errors;
            m.misses += p.misses;
            m.p50_ns = m.p50_ns.max(p.p50_ns);
            m.p99_ns = m.p99_ns.max(p.p99_ns);
            m.p999_ns = m.p999_ns.max(p.p999_ns);
            m.max_ns = m.max_ns.max(p.max_ns);
            m.client_cpu_percent += p.client_cpu_percent;
        }
    }
    by_second.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::new_histogram;

    fn summary(values: &[u64]) -> LatencySummary {
        let mut h = new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        LatencySummary::of(&h)
    }

    fn phase(values: &[u64], errors: u64) -> PhaseResult {
        let mut ops = BTreeMap::new();
        ops.insert(
            "get".to_string(),
            OpResult {
                sent: values.len() as u64 + errors,
                completed: values.len() as u64,
                latency: summary(values),
                ..OpResult::default()
            },
        );
        PhaseResult {
            duration_s: 10.0,
            completed: values.len() as u64,
            throughput_per_s: values.len() as f64 / 10.0,
            errors: if errors > 0 {
                BTreeMap::from([("timeout".to_string(), errors)])
            } else {
                BTreeMap::new()
            },
            ops,
            all: summary(values),
            ..PhaseResult::default()
        }
    }

    #[test]
    fn merged_percentiles_are_those_of_all_samples_together() {
        // Three shards with different latencies: the merged p50 and p99 are
        // the ones of one histogram of every sample, not an average.
        let a: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let b: Vec<u64> = (1..=10).map(|i| i * 5_000_000).collect();
        let c: Vec<u64> = vec![42_000; 500];
        let merged = add_phases(
            &[&phase(&a, 1), &phase(&b, 0), &phase(&c, 2)],
            5.0,
            "measure",
        )
        .unwrap();
        let everything: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
        let one = summary(&everything);
        assert_eq!(merged.all.count, 1510);
        assert_eq!(merged.all.p50_ns, one.p50_ns);
        assert_eq!(merged.all.p99_ns, one.p99_ns);
        assert_eq!(merged.all.max_ns, one.max_ns);
        assert_eq!(merged.all.hdr, one.hdr, "bucket for bucket");
        assert_eq!(merged.ops["get"].latency.hdr, one.hdr);
        assert_eq!(merged.ops["get"].sent, 1513);
        assert_eq!(merged.completed, 1510);
        assert_eq!(merged.errors["timeout"], 3);
        assert_eq!(merged.duration_s, 5.0);
        // Each shard's rate over its own 10 s, summed.
        assert!((merged.throughput_per_s - 151.0).abs() < 1e-9);
    }

    /// The mock run's result file as shard `index` of `count`.
    fn shard_file(index: u32, count: u32) -> (String, ExperimentResult) {
        let mut r: ExperimentResult =
            serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
                .expect("the mock snapshot is a result");
        r.shard = Some(crate::result::ShardRecord {
            index,
            count,
            plan_hash: "plan-1".into(),
            planned_start: Some("2026-11-26T08:00:00Z".into()),
            started_at: format!("2026-11-26T08:00:00.{:03}Z", 10 * index),
            ended_at: "2026-11-26T08:00:05Z".into(),
            clock_offset_ns: Some(0),
        });
        (format!("shard-{index}.json"), r)
    }

    #[test]
    fn shards_add_up_run_by_run_and_keep_their_own_table() {
        let files: Vec<_> = [2, 0, 1].iter().map(|&i| shard_file(i, 3)).collect();
        let merged = merge_results(&files).unwrap();
        let one = &files[0].1;
        assert_eq!(merged.runs.len(), one.runs.len());
        assert!(merged.shard.is_none());
        for (m, o) in merged.runs.iter().zip(&one.runs) {
            assert_eq!(m.measure.completed, 3 * o.measure.completed);
            assert_eq!(m.measure.all.count, 3 * o.measure.all.count);
            assert_eq!(m.workload.clients, 3 * o.workload.clients);
            // Three copies of one histogram: the same percentiles.
            assert_eq!(m.measure.all.p99_ns, o.measure.all.p99_ns);
            for (kind, op) in &o.measure.ops {
                assert_eq!(m.measure.ops[kind].sent, 3 * op.sent, "{kind}");
            }
            let ops = |r: &RunResult| r.timeline.iter().map(|p| p.ops_per_s).sum::<u64>();
            assert_eq!(ops(m), 3 * ops(o));
        }
        // The table: in index order, each start's skew.
        let skews: Vec<Option<f64>> = merged.shards.iter().map(|s| s.start_skew_s).collect();
        assert_eq!(merged.shards[0].file, "shard-0.json");
        assert!((skews[2].unwrap() - 0.02).abs() < 1e-9, "{skews:?}");
        // A merged file reads back as a result file.
        let text = serde_json::to_string(&merged).unwrap();
        let back: ExperimentResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back.shards.len(), 3);
    }

    #[test]
    fn files_that_are_not_one_experiments_shards_are_refused() {
        let three =
            || -> Vec<(String, ExperimentResult)> { (0..3).map(|i| shard_file(i, 3)).collect() };
        let mut other = three();
        other[1].1.shard.as_mut().unwrap().plan_hash = "plan-2".into();
        let e = merge_results(&other).unwrap_err();
        assert!(e.to_string().contains("plan hashes differ"), "{e}");
        let mut twice = three();
        twice[2] = shard_file(1, 3);
        let e = merge_results(&twice).unwrap_err();
        assert!(matches!(e, MergeError::Duplicate { index: 1, .. }), "{e}");
        let e = merge_results(&three()[..2]).unwrap_err();
        assert_eq!(
            e,
            MergeError::Missing {
                missing: vec![2],
                count: 3
            }
        );
        let mut plain = three();
        plain[0].1.shard = None;
        assert!(matches!(
            merge_results(&plain).unwrap_err(),
            MergeError::NotAShard { .. }
        ));
        let mut count = three();
        count[1] = shard_file(1, 4);
        assert!(merge_results(&count)
            .unwrap_err()
            .to_string()
            .contains("shard counts"));
        assert_eq!(merge_results(&[]).unwrap_err(), MergeError::Empty);
    }

    /// A shard numbered past its count, or a count of 0, is no shard of
    /// the experiment: summing it would add a shard that does not exist.
    #[test]
    fn shards_outside_their_count_are_refused() {
        let mut files: Vec<_> = (0..2).map(|i| shard_file(i, 2)).collect();
        files.push(shard_file(5, 2));
        let e = merge_results(&files).unwrap_err();
        assert!(
            matches!(
                e,
                MergeError::BadShard {
                    index: 5,
                    count: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("shard-5.json"), "{e}");
        let e = merge_results(&[shard_file(0, 0)]).unwrap_err();
        assert!(
            matches!(
                e,
                MergeError::BadShard {
                    index: 0,
                    count: 0,
                    ..
                }
            ),
            "{e}"
        );
    }

    /// Counts that would pass u64::MAX are refused, not wrapped.
    #[test]
    fn counts_that_overflow_are_refused() {
        let mut files: Vec<_> = (0..2).map(|i| shard_file(i, 2)).collect();
        for (_, r) in &mut files {
            r.runs[0].measure.completed = u64::MAX - 1;
        }
        let e = merge_results(&files).unwrap_err();
        assert!(matches!(e, MergeError::Overflow { .. }), "{e}");
        assert!(e.to_string().contains("completed"), "{e}");
    }

    #[test]
    fn histograms_of_other_bounds_are_refused() {
        let mut other = Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
        other.record(5).unwrap();
        let mut p = phase(&[5], 0);
        p.all = LatencySummary::of(&other);
        let e = add_phases(&[&phase(&[5], 0), &p], 1.0, "measure").unwrap_err();
        assert!(matches!(e, MergeError::Bounds { .. }), "{e}");
        assert!(e.to_string().contains("2 significant digits"), "{e}");
        let mut garbage = phase(&[5], 0);
        garbage.all.hdr = "not base64!".into();
        let e = add_phases(&[&phase(&[5], 0), &garbage], 1.0, "measure").unwrap_err();
        assert!(e.to_string().contains("shard file 2"), "{e}");
    }

    #[test]
    fn the_measured_window_is_the_one_every_shard_shares() {
        let mut files: Vec<_> = (0..2).map(|i| shard_file(i, 2)).collect();
        let warmup = files[0].1.runs[0].workload.warmup_s;
        // Shard 0 measured from its start plus the warm-up to 4 s; shard
        // 1 started half a second later and ended at 3.8 s.
        for (k, (start, end)) in [("00:00:01", "00:00:04"), ("00:00:01.5", "00:00:03.8")]
            .iter()
            .enumerate()
        {
            let run = &mut files[k].1.runs[0];
            run.started_at = Some(format!("2026-01-01T{start}Z"));
            run.ended_at = Some(format!("2026-01-01T{end}Z"));
        }
        let merged = merge_results(&files).unwrap();
        let window = merged.runs[0].measure.duration_s;
        assert!((window - (3.8 - 1.5 - warmup)).abs() < 1e-9, "{window}");
        assert_eq!(
            merged.runs[0].started_at.as_deref(),
            Some("2026-01-01T00:00:01Z")
        );
        let rates: f64 = files
            .iter()
            .map(|(_, r)| r.runs[0].measure.throughput_per_s)
            .sum();
        assert!((merged.runs[0].measure.throughput_per_s - rates).abs() < 1e-6);
    }
}
