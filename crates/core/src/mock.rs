//! A deterministic, scripted driver for tests of the runner and the
//! reports: no network, no clock; time is simulated, so the same plan gives
//! the same result file byte for byte (environment aside).
//!
//! It never stands in for a real target: it is registered only by tests
//! (`bakeoff run` knows it as `mock` so that end-to-end snapshots can run).

use std::collections::BTreeMap;

use crate::driver::{Driver, Job, JobKind, WorkerOutput};
use crate::plan::{Plan, TargetSpec};
use crate::recorder::{overlap_ns, Completion, ErrorKind, Interval, PhaseStats};
use crate::result::{CounterCheck, TargetRecord};
use crate::runner::{Counters, ProcSnapshot, Target, TargetOpener};
use crate::workload::{KeyChooser, MixChooser, OpKind, Rng, OP_KINDS};

/// Scripted behaviour of the mock.
#[derive(Clone, Debug)]
pub struct MockDriver {
    /// Base latency per operation kind, ns.
    pub latency_ns: [u64; OP_KINDS],
    /// Every n-th read misses (0 = never).
    pub miss_every: u64,
    /// Every n-th operation fails with a server error (0 = never).
    pub error_every: u64,
}

impl Default for MockDriver {
    fn default() -> Self {
        Self {
            latency_ns: [50_000, 80_000, 90_000, 60_000, 500_000],
            miss_every: 20,
            error_every: 0,
        }
    }
}

impl Driver for MockDriver {
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, String> {
        let w = job.workload;
        let open_loop = w.rate.is_some() && job.kind == JobKind::Measure;
        let mut phases: Vec<PhaseStats> = (0..job.phase_count())
            .map(|_| PhaseStats::new(open_loop))
            .collect();
        let mut seconds: BTreeMap<u32, Interval> = BTreeMap::new();
        let warmup_end = job.warmup_end_ns();
        let measure_end = job.measure_end_ns();
        let mix = MixChooser::new(w.mix.weights);
        let mut last = 0;
        let mut busy_in_window = 0;
        for client in job.clients_of(worker) {
            let mut rng = Rng::new(job.seed, client as u64);
            let mut keys = KeyChooser::new(
                w.key_distribution,
                w.records,
                client as u64,
                w.clients as u64,
                job.zipf,
            );
            let mut quota = job.quota(client);
            let mut load = job.load_range(client);
            let mut now = 0u64;
            let mut n = 0u64;
            loop {
                let phase = match job.kind {
                    JobKind::Load => 0,
                    JobKind::Measure => usize::from(now >= warmup_end),
                };
                let kind = match job.kind {
                    JobKind::Load => match load.next() {
                        Some(_) => OpKind::Set,
                        None => break,
                    },
                    JobKind::Measure => {
                        if now >= measure_end || (phase == 1 && quota == 0) {
                            break;
                        }
                        if phase == 1 && quota != u64::MAX {
                            quota -= 1;
                        }
                        let k = mix.next(&mut rng);
                        keys.next(&mut rng);
                        k
                    }
                };
                n += 1;
                let lat =
                    self.latency_ns[kind as usize] * (10 + (n * 7 + client as u64 * 3) % 10) / 10;
                let how = if self.error_every > 0 && n.is_multiple_of(self.error_every) {
                    Completion::Error(ErrorKind::ServerError)
                } else if kind == OpKind::Get
                    && self.miss_every > 0
                    && n.is_multiple_of(self.miss_every)
                {
                    Completion::Miss
                } else {
                    Completion::Ok
                };
                phases[phase].sent[kind as usize] += 1;
                let done = now + lat * w.pipeline.max(1) as u64;
                phases[phase].record(kind, done - now, done - now, how);
                let sec = (done / 1_000_000_000) as u32;
                seconds
                    .entry(sec)
                    .or_insert_with(|| Interval::new(sec))
                    .record(done - now, how);
                busy_in_window += overlap_ns(now, done, warmup_end, measure_end);
                now = done;
                last = last.max(done);
            }
        }
        for (_, iv) in seconds {
            let _ = job.intervals.send(iv);
        }
        Ok(WorkerOutput {
            phases,
            busy_cpu_ns: 0,
            busy_wall_ns: 0,
            last_completion_ns: last,
            busy_in_window_ns: busy_in_window,
            backend: "mock".into(),
        })
    }

    fn describe(&self, kind: OpKind) -> String {
        format!(
            "mock {} (scripted latency {} ns)",
            kind.name(),
            self.latency_ns[kind as usize]
        )
    }
}

/// A mock target: counts what it was sent, as a server would.
pub struct MockTarget {
    driver: MockDriver,
}

impl Target for MockTarget {
    fn driver(&self) -> &dyn Driver {
        &self.driver
    }
    fn record(&self) -> TargetRecord {
        TargetRecord {
            name: "mock".into(),
            mode: "embedded".into(),
            version: Some("scripted".into()),
            requests: OpKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), self.driver.describe(*k)))
                .collect(),
            ..TargetRecord::default()
        }
    }
    fn counters(&self) -> Option<Counters> {
        None
    }
    fn counter_checks(&self, _: &Counters, _: &Counters, _: &[u64; OP_KINDS]) -> Vec<CounterCheck> {
        Vec::new()
    }
    fn record_count(&self) -> Option<u64> {
        None
    }
    fn resources(&self) -> Option<ProcSnapshot> {
        None
    }
}

/// Opens [`MockTarget`]s.
#[derive(Default)]
pub struct MockOpener {
    /// The script every mock target follows.
    pub driver: MockDriver,
}

impl TargetOpener for MockOpener {
    fn probe(&self, _: &TargetSpec, _: &Plan) -> Result<(), String> {
        Ok(())
    }
    fn open(
        &self,
        _: &TargetSpec,
        _: &Plan,
        _: &crate::plan::Workload,
    ) -> Result<Box<dyn Target>, String> {
        Ok(Box::new(MockTarget {
            driver: self.driver.clone(),
        }))
    }
}
