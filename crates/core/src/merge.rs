//! Merging what several shards of one experiment measured (`--shard i/N`,
//! `bakeoff merge`): histograms are added bucket by bucket, never their
//! percentiles averaged; counts and errors are summed. A histogram whose
//! bounds differ from the others' cannot be added exactly, and is refused.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::result::{decode_histogram, LatencySummary, OpResult, PhaseResult};

/// Why results cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
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

/// One operation kind's figures from every shard that ran it.
fn add_ops(parts: &[&OpResult], what: &str) -> Result<OpResult, MergeError> {
    let latencies: Vec<&LatencySummary> = parts.iter().map(|o| &o.latency).collect();
    let service: Option<Vec<&LatencySummary>> =
        parts.iter().map(|o| o.service_time.as_ref()).collect();
    Ok(OpResult {
        sent: parts.iter().map(|o| o.sent).sum(),
        completed: parts.iter().map(|o| o.completed).sum(),
        misses: parts.iter().map(|o| o.misses).sum(),
        failed: parts.iter().map(|o| o.failed).sum(),
        rows: parts.iter().map(|o| o.rows).sum(),
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
            *errors.entry(k.clone()).or_default() += n;
        }
    }
    let all: Vec<&LatencySummary> = parts.iter().map(|p| &p.all).collect();
    let send_lag: Option<Vec<&LatencySummary>> =
        parts.iter().map(|p| p.send_lag.as_ref()).collect();
    let stale: Option<Vec<u64>> = parts.iter().map(|p| p.stale_reads).collect();
    let completed = parts.iter().map(|p| p.completed).sum();
    Ok(PhaseResult {
        duration_s: window_s,
        completed,
        throughput_per_s: if window_s > 0.0 {
            completed as f64 / window_s
        } else {
            0.0
        },
        misses: parts.iter().map(|p| p.misses).sum(),
        errors,
        ops,
        all: add_latencies(&all, &format!("{what}, all kinds"))?,
        // Phased requests' steps are MariaDB's single-machine experiment;
        // their per-step histograms are added by name.
        steps: add_steps(parts, what)?,
        stale_reads: stale.map(|s| s.iter().sum()),
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
        let merged = add_phases(&[&phase(&a, 1), &phase(&b, 0), &phase(&c, 2)], 5.0, "measure")
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
        assert!((merged.throughput_per_s - 302.0).abs() < 1e-9);
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
}
