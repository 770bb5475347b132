//! The peak and capacity searches, run as series of ordinary runs: each
//! step is the point with the clients (peak) or the rate (capacity) set,
//! labelled with it, and recorded like any other run; what the next step
//! is comes from [`crate::find`].

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::RunError;
use crate::find::{
    capacity_of, next_peak_step, next_rate, peak_of, LatencyBound, PeakStep, RateStep,
    PEAK_MAX_CLIENTS,
};
use crate::plan::Point;
use crate::result::{decode_histogram, RunResult, SearchResult};
use crate::units::fmt_rate;

/// Most runs one search makes (a peak search from 1 client to
/// [`PEAK_MAX_CLIENTS`], doubling).
pub(super) const MAX_STEPS: usize = 13;

/// What a search needs to know of one of its runs.
#[derive(Clone, Copy, Debug)]
pub(super) struct StepOutcome {
    index: u32,
    throughput: f64,
    /// Successful and failed operations per second.
    achieved: f64,
    errors: u64,
    /// The bound's percentile of the response time, ns (0 without a bound).
    latency_ns: u64,
    ok: bool,
}

impl StepOutcome {
    /// The outcome of `run`, with the percentile of `bound`.
    pub(super) fn of(run: &RunResult, bound: Option<&LatencyBound>) -> Self {
        let m = &run.measure;
        let errors: u64 = m.errors.values().sum();
        let latency_ns = bound
            .and_then(|b| {
                decode_histogram(&m.all.hdr)
                    .ok()
                    .filter(|h| !h.is_empty())
                    .map(|h| h.value_at_quantile(b.quantile()))
            })
            .unwrap_or(0);
        Self {
            index: run.index,
            throughput: m.throughput_per_s,
            achieved: m.attempted_per_s(),
            errors,
            latency_ns,
            ok: run.status == crate::result::RunStatus::Ok,
        }
    }
}

/// `base` with `key` = `value` among its labels and `set` applied to its
/// workload.
fn step_point(
    base: &Point,
    key: &str,
    value: String,
    set: impl Fn(&mut crate::plan::Workload),
) -> Point {
    let mut p = base.clone();
    p.labels.insert(key.into(), value);
    set(&mut p.workload);
    p.workload.find_peak = false;
    p.workload.find_capacity = None;
    p
}

/// Makes one run of a search at a point, with the bound whose percentile
/// it reads.
pub(super) type RunStep<'a> =
    dyn FnMut(&Point, Option<&LatencyBound>) -> Result<StepOutcome, RunError> + 'a;

/// Searches `point` for `target` as its workload asks, making each step
/// with `run`, until the search is over or `stop` is set.
pub(super) fn search(
    point: &Point,
    target: &str,
    stop: &AtomicBool,
    run: &mut RunStep<'_>,
) -> Result<SearchResult, RunError> {
    let w = &point.workload;
    let mut found = SearchResult {
        target: target.into(),
        point: point.labels.clone(),
        ..SearchResult::default()
    };
    if let Some(bound) = w.find_capacity {
        found.kind = "capacity".into();
        found.bound = Some(bound);
        let probe = step_point(point, "rate", "closed loop".into(), |w| w.rate = None);
        let probe = run(&probe, Some(&bound))?;
        found.runs.push(probe.index);
        found.ceiling_per_s = Some(probe.throughput);
        let mut steps: Vec<(RateStep, u32)> = Vec::new();
        loop {
            let rates: Vec<RateStep> = steps.iter().map(|s| s.0).collect();
            let Some(rate) = next_rate(&rates, probe.throughput, &bound) else {
                break;
            };
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let p = step_point(point, "rate", fmt_rate(rate), |w| w.rate = Some(rate));
            let o = run(&p, Some(&bound))?;
            found.runs.push(o.index);
            let step = RateStep {
                rate,
                achieved: o.achieved,
                latency_ns: o.latency_ns,
                errors: o.errors + u64::from(!o.ok),
            };
            steps.push((step, o.index));
        }
        let rates: Vec<RateStep> = steps.iter().map(|s| s.0).collect();
        if let Some(best) = capacity_of(&rates, &bound) {
            let (_, index) = steps
                .iter()
                .find(|s| s.0 == best)
                .expect("one of the steps");
            found.found = Some(*index);
            found.rate_per_s = Some(best.rate);
            found.throughput_per_s = Some(best.achieved);
            found.latency_ns = Some(best.latency_ns);
            found.clients = Some(w.clients);
        }
        return Ok(found);
    }
    found.kind = "peak".into();
    let threads = w.threads;
    let mut steps: Vec<(PeakStep, u32)> = Vec::new();
    loop {
        let done: Vec<PeakStep> = steps.iter().map(|s| s.0).collect();
        let Some(clients) = next_peak_step(&done, 1, PEAK_MAX_CLIENTS) else {
            break;
        };
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let p = step_point(point, "clients", clients.to_string(), |w| {
            w.clients = clients;
            w.threads = threads.min(clients);
            w.rate = None;
        });
        let o = run(&p, None)?;
        found.runs.push(o.index);
        let step = PeakStep {
            clients,
            throughput: o.throughput,
            clean: o.ok && o.errors == 0,
        };
        steps.push((step, o.index));
    }
    let done: Vec<PeakStep> = steps.iter().map(|s| s.0).collect();
    if let Some(best) = peak_of(&done) {
        let (_, index) = steps
            .iter()
            .find(|s| s.0 == best)
            .expect("one of the steps");
        found.found = Some(*index);
        found.throughput_per_s = Some(best.throughput);
        found.clients = Some(best.clients);
    }
    Ok(found)
}
