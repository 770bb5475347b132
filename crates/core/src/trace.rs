//! The latency of single operations in time order (the seeds' "one point
//! per request" charts), kept within a bound: every operation while they
//! fit, then every 2nd, 4th, … — the stride doubles each time the buffer
//! fills, so a run of any length keeps between half the bound and the
//! bound, evenly spread over the run.

use serde::{Deserialize, Serialize};

/// One worker's trace of its measured operations.
#[derive(Debug, Default)]
pub struct TraceRecorder {
    cap: usize,
    every: u64,
    skip: u64,
    /// (finish time, ns since the end of the warm-up; response time, ns).
    points: Vec<(u64, u64)>,
}

impl TraceRecorder {
    /// A recorder keeping at most `cap` operations (at least 2).
    pub fn new(cap: usize) -> Self {
        let cap = cap.max(2);
        Self {
            cap,
            every: 1,
            skip: 0,
            points: Vec::with_capacity(cap),
        }
    }

    /// One measured operation finished at `at_ns` (since the end of the
    /// warm-up) after `response_ns`.
    #[inline]
    pub fn record(&mut self, at_ns: u64, response_ns: u64) {
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        self.skip = self.every - 1;
        self.points.push((at_ns, response_ns));
        if self.points.len() == self.cap {
            self.thin();
        }
    }

    /// Keeps every other point and doubles the stride.
    #[cold]
    fn thin(&mut self) {
        let mut i = 0;
        self.points.retain(|_| {
            i += 1;
            i % 2 == 1
        });
        // With an even bound the last point went and the pending skip
        // already leads to the next multiple of the new stride; with an odd
        // one the last point stayed, and a whole new stride follows it.
        if self.cap % 2 == 1 {
            self.skip = 2 * self.every - 1;
        }
        self.every *= 2;
    }

    /// Every `every`-th operation was kept.
    pub fn every(&self) -> u64 {
        self.every
    }

    /// The points kept: (ns since the end of the warm-up, response ns).
    pub fn points(&self) -> &[(u64, u64)] {
        &self.points
    }
}

/// The latency of single measured operations in time order, in the result
/// file: the operations of every worker merged by finish time.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyTrace {
    /// Operations measured, all of them (the trace keeps a sample).
    pub operations: u64,
    /// The largest stride among the workers: one operation in `every`
    /// (or more often) is here.
    pub every: u64,
    /// Finish time of each kept operation, ms since the end of the warm-up.
    pub t_ms: Vec<f64>,
    /// Its response time, µs.
    pub latency_us: Vec<f64>,
}

impl LatencyTrace {
    /// Merges the workers' traces by finish time; `operations` is the
    /// number of operations they measured in all.
    pub fn merge<'a>(traces: impl IntoIterator<Item = &'a TraceRecorder>, operations: u64) -> Self {
        let mut every = 1;
        let mut points: Vec<(u64, u64)> = Vec::new();
        for t in traces {
            every = every.max(t.every);
            points.extend_from_slice(&t.points);
        }
        points.sort_unstable();
        let round = |v: f64, per_unit: f64| (v * per_unit).round() / per_unit;
        Self {
            operations,
            every,
            t_ms: points
                .iter()
                .map(|p| round(p.0 as f64 / 1e6, 1e3))
                .collect(),
            latency_us: points
                .iter()
                .map(|p| round(p.1 as f64 / 1e3, 1e2))
                .collect(),
        }
    }

    /// Mean response time of the kept operations, µs.
    pub fn mean_us(&self) -> f64 {
        self.latency_us.iter().sum::<f64>() / self.latency_us.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_below_the_bound() {
        let mut t = TraceRecorder::new(100);
        for i in 0..99 {
            t.record(i, i * 10);
        }
        assert_eq!((t.points().len(), t.every()), (99, 1));
        assert_eq!(t.points()[98], (98, 980));
    }

    #[test]
    fn thins_to_an_even_stride_within_the_bound() {
        let mut t = TraceRecorder::new(100);
        for i in 0..10_000u64 {
            t.record(i, 1);
        }
        let p = t.points();
        assert!(p.len() >= 50 && p.len() < 100, "{}", p.len());
        // Every kept point is a multiple of the final stride apart.
        for w in p.windows(2) {
            assert_eq!(w[1].0 - w[0].0, t.every(), "{w:?}");
        }
        assert_eq!(p[0].0, 0);
        // The last kept is within one stride of the last operation.
        assert!(p[p.len() - 1].0 + t.every() >= 9_999, "{:?}", p.last());
    }

    #[test]
    fn odd_bounds_keep_an_even_stride_too() {
        let mut t = TraceRecorder::new(7);
        for i in 0..1000u64 {
            t.record(i, 1);
        }
        for w in t.points().windows(2) {
            assert_eq!(w[1].0 - w[0].0, t.every(), "{:?}", t.points());
        }
    }

    #[test]
    fn merge_orders_by_time_and_converts_units() {
        let mut a = TraceRecorder::new(10);
        let mut b = TraceRecorder::new(10);
        a.record(2_000_000, 5_000);
        b.record(1_000_000, 7_500);
        a.record(3_000_000, 1_000);
        let m = LatencyTrace::merge([&a, &b], 3);
        assert_eq!(m.t_ms, vec![1.0, 2.0, 3.0]);
        assert_eq!(m.latency_us, vec![7.5, 5.0, 1.0]);
        assert_eq!((m.operations, m.every), (3, 1));
        assert!((m.mean_us() - 4.5).abs() < 1e-9);
    }
}
