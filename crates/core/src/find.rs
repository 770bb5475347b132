//! Searches that choose their own runs: the peak (raise the clients until
//! throughput stops rising) and the capacity under a latency bound (the
//! highest open-loop rate at which a percentile stays under the bound).
//! Each step is an ordinary run; what is decided here is only the next
//! step, from the steps before it, so the searches are tested apart from
//! any target.

use serde::{Deserialize, Serialize};

use crate::units::{fmt_ns, parse_duration};

/// A latency bound on a percentile: `p99<=1ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyBound {
    /// The percentile, 0–100 (99 for p99).
    pub percentile: f64,
    /// The most that percentile may be, ns.
    pub max_ns: u64,
}

impl LatencyBound {
    /// Parses `pNN<=TIME` (`p99<=1ms`, `p99.9<=500us`, `p50<=200us`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let help = "give a percentile and a bound, e.g. p99<=1ms or p99.9<=500us";
        let (p, bound) = t
            .split_once("<=")
            .ok_or_else(|| format!("`{t}` is not a latency bound; {help}"))?;
        let percentile: f64 = p
            .trim()
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .filter(|n: &f64| *n > 0.0 && *n < 100.0)
            .ok_or_else(|| format!("`{p}` is not a percentile between p0 and p100; {help}"))?;
        let d = parse_duration(bound)?;
        if d.is_zero() {
            return Err(format!("a bound of 0 holds at no rate; {help}"));
        }
        Ok(Self {
            percentile,
            max_ns: u64::try_from(d.as_nanos()).map_err(|_| format!("`{bound}` is too long"))?,
        })
    }

    /// Its quantile, 0–1.
    pub fn quantile(&self) -> f64 {
        self.percentile / 100.0
    }
}

impl std::fmt::Display for LatencyBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p{}<={}",
            self.percentile,
            fmt_ns(self.max_ns as f64).replace(' ', "")
        )
    }
}

/// Throughput must rise by this share over the best so far for a step to
/// count as still rising.
pub const PEAK_GAIN: f64 = 0.05;

/// Steps in a row that did not rise before the peak search stops.
pub const PEAK_FLAT_STEPS: usize = 2;

/// Most clients the peak search tries.
pub const PEAK_MAX_CLIENTS: u32 = 4096;

/// One step of the peak search: its clients and the throughput reached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeakStep {
    /// Clients.
    pub clients: u32,
    /// Successful operations per second.
    pub throughput: f64,
    /// Whether it ran cleanly (no errors).
    pub clean: bool,
}

/// The clients of the next step of a peak search starting at `start`
/// clients and doubling, or `None` when it is over: throughput rose by
/// less than [`PEAK_GAIN`] over the best for [`PEAK_FLAT_STEPS`] steps
/// running, a step failed, or the clients reached `max`.
pub fn next_peak_step(steps: &[PeakStep], start: u32, max: u32) -> Option<u32> {
    let Some(last) = steps.last() else {
        return Some(start.clamp(1, max));
    };
    if !last.clean || last.clients >= max {
        return None;
    }
    let mut best = 0.0f64;
    let mut flat = 0;
    for s in steps {
        if s.throughput > best * (1.0 + PEAK_GAIN) {
            flat = 0;
        } else {
            flat += 1;
        }
        best = best.max(s.throughput);
    }
    (flat < PEAK_FLAT_STEPS).then(|| last.clients.saturating_mul(2).min(max))
}

/// The best step: the highest throughput (the fewest clients among equals).
pub fn peak_of(steps: &[PeakStep]) -> Option<PeakStep> {
    steps
        .iter()
        .copied()
        .filter(|s| s.throughput > 0.0)
        .fold(None, |best: Option<PeakStep>, s| match best {
            Some(b) if b.throughput >= s.throughput => Some(b),
            _ => Some(s),
        })
}

/// Open-loop steps the capacity search makes after its closed-loop probe.
pub const CAPACITY_STEPS: usize = 6;

/// A step whose achieved rate is more than this share under the rate
/// asked for is rejected, whatever its latency (as Lancet does).
pub const RATE_SHORTFALL: f64 = 0.05;

/// One open-loop step of the capacity search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateStep {
    /// Rate asked for, ops/s.
    pub rate: f64,
    /// Rate reached, ops/s (successful and failed operations).
    pub achieved: f64,
    /// The bound's percentile of the response time, ns.
    pub latency_ns: u64,
    /// Failed operations.
    pub errors: u64,
}

impl RateStep {
    /// Whether the step held: the rate was reached, nothing failed and the
    /// percentile stayed under the bound.
    pub fn holds(&self, bound: &LatencyBound) -> bool {
        self.achieved >= (1.0 - RATE_SHORTFALL) * self.rate
            && self.errors == 0
            && self.latency_ns <= bound.max_ns
    }
}

/// The next rate of a capacity search whose closed-loop probe reached
/// `ceiling` ops/s: bisection between the highest rate that held (0 at
/// first) and the lowest that did not (1.1 × the ceiling at first), for
/// [`CAPACITY_STEPS`] steps; `None` when they are done.
pub fn next_rate(steps: &[RateStep], ceiling: f64, bound: &LatencyBound) -> Option<f64> {
    if steps.len() >= CAPACITY_STEPS || ceiling <= 0.0 {
        return None;
    }
    let (lo, hi) = rate_bracket(steps, ceiling, bound);
    Some(((lo + hi) / 2.0).max(1.0).round())
}

fn rate_bracket(steps: &[RateStep], ceiling: f64, bound: &LatencyBound) -> (f64, f64) {
    let mut lo = 0.0f64;
    let mut hi = 1.1 * ceiling;
    for s in steps {
        if s.holds(bound) {
            lo = lo.max(s.rate);
        } else {
            hi = hi.min(s.rate);
        }
    }
    (lo, hi.max(lo))
}

/// The capacity: the highest rate that held, if any did.
pub fn capacity_of(steps: &[RateStep], bound: &LatencyBound) -> Option<RateStep> {
    steps
        .iter()
        .copied()
        .filter(|s| s.holds(bound))
        .max_by(|a, b| a.rate.total_cmp(&b.rate))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(clients: u32, throughput: f64) -> PeakStep {
        PeakStep {
            clients,
            throughput,
            clean: true,
        }
    }

    #[test]
    fn bounds_parse_and_show() {
        let b = LatencyBound::parse("p99<=1ms").unwrap();
        assert_eq!((b.percentile, b.max_ns), (99.0, 1_000_000));
        assert_eq!(b.to_string(), "p99<=1.00ms");
        assert_eq!(LatencyBound::parse(&b.to_string()).unwrap(), b);
        let b = LatencyBound::parse(" p99.9 <= 500us").unwrap();
        assert_eq!((b.percentile, b.max_ns), (99.9, 500_000));
        for bad in [
            "99<=1ms",
            "p99",
            "p100<=1ms",
            "p0<=1ms",
            "p99<=0",
            "p99<=fast",
        ] {
            assert!(LatencyBound::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_peak_search_doubles_until_throughput_stops_rising() {
        // A server that saturates at 8 clients.
        let tput = |c: u32| 1000.0 * f64::from(c.min(8)) - f64::from(c.saturating_sub(8));
        let mut steps = Vec::new();
        while let Some(c) = next_peak_step(&steps, 1, PEAK_MAX_CLIENTS) {
            steps.push(step(c, tput(c)));
        }
        let clients: Vec<u32> = steps.iter().map(|s| s.clients).collect();
        assert_eq!(clients, [1, 2, 4, 8, 16, 32]);
        assert_eq!(peak_of(&steps).unwrap().clients, 8);
    }

    #[test]
    fn the_peak_search_stops_at_a_failure_and_at_its_limit() {
        let mut steps = vec![step(1, 10.0)];
        steps.push(PeakStep {
            clients: 2,
            throughput: 20.0,
            clean: false,
        });
        assert_eq!(next_peak_step(&steps, 1, 64), None);
        let steps = vec![step(32, 10.0), step(64, 20.0)];
        assert_eq!(next_peak_step(&steps, 32, 64), None);
        assert_eq!(next_peak_step(&[step(32, 10.0)], 32, 40), Some(40));
    }

    #[test]
    fn the_capacity_search_brackets_the_highest_rate_that_holds() {
        let bound = LatencyBound::parse("p99<=1ms").unwrap();
        // A server whose p99 crosses 1 ms at 6000 ops/s, and that reaches
        // at most 9000.
        let run = |rate: f64| RateStep {
            rate,
            achieved: rate.min(9000.0),
            latency_ns: if rate <= 6000.0 { 400_000 } else { 3_000_000 },
            errors: 0,
        };
        let mut steps = Vec::new();
        while let Some(r) = next_rate(&steps, 9000.0, &bound) {
            steps.push(run(r));
        }
        assert_eq!(steps.len(), CAPACITY_STEPS);
        let cap = capacity_of(&steps, &bound).unwrap().rate;
        assert!((5700.0..=6000.0).contains(&cap), "{cap}: {steps:?}");
    }

    #[test]
    fn a_step_short_of_its_rate_does_not_hold_whatever_its_latency() {
        let bound = LatencyBound::parse("p99<=1ms").unwrap();
        let s = RateStep {
            rate: 10_000.0,
            achieved: 9_000.0,
            latency_ns: 1,
            errors: 0,
        };
        assert!(!s.holds(&bound));
        assert!(RateStep {
            achieved: 9_600.0,
            ..s
        }
        .holds(&bound));
        assert!(!RateStep {
            errors: 1,
            achieved: 10_000.0,
            ..s
        }
        .holds(&bound));
    }
}
