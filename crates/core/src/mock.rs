//! A deterministic, scripted target for tests of the runner and the
//! reports: no network, no clock; time is simulated, so the same plan gives
//! the same result file byte for byte (environment aside). It runs under
//! the same harness as every real target — request streams, phases,
//! warm-up, value checks, the meter and Little's law are the real code —
//! and only its I/O loop is simulated.
//!
//! It never stands in for a real target: it is registered only by tests
//! (`bakeoff run` knows it as `mock` so that end-to-end snapshots can run).

use std::collections::VecDeque;

use crate::driver::{Carrier, Driver, Job, WorkerOutput};
use crate::error::TargetError;
use crate::harness::{CpuClock, Harness, Outcome, Request};
use crate::plan::{Plan, TargetSpec};
use crate::readings::ProcSnapshot;
use crate::recorder::ErrorKind;
use crate::result::TargetRecord;
use crate::target::{Counters, Target, TargetOpener};
use crate::workload::{OpKind, OP_KINDS};

/// Scripted behaviour of the mock.
#[derive(Clone, Debug)]
pub struct MockDriver {
    /// Base latency per operation kind, ns.
    pub latency_ns: [u64; OP_KINDS],
    /// Every n-th read misses (0 = never).
    pub miss_every: u64,
    /// Every n-th operation fails with a server error (0 = never).
    pub error_every: u64,
    /// Requests the scripted server works on at once, first come first
    /// served, per worker thread (0: every connection is served alone,
    /// with no limit): with `k`, throughput saturates at `k` clients and
    /// the capacity is `k` over the mean latency.
    pub servers: usize,
    /// Every latency is multiplied by this (a slower or faster server; a
    /// run's share of run-to-run noise).
    pub scale: f64,
    /// How the latency moves over the job's seconds (a ramp, a shift).
    pub shape: MockShape,
}

/// How a mock's latency moves with the job's simulated time, to test
/// that warm-up and level shifts are found where they are.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MockShape {
    /// Seconds of a ramp at the job's start: latency starts at
    /// `ramp_from` times its level and falls linearly to it.
    pub ramp_s: f64,
    /// The ramp's first multiple of the latency.
    pub ramp_from: f64,
    /// From this second of the job on, latency is `shift_to` times its
    /// level.
    pub shift_at_s: Option<f64>,
    /// The multiple after the shift.
    pub shift_to: f64,
}

impl MockShape {
    /// The multiple of the latency at `now`, ns of the job.
    fn at(&self, now: u64) -> f64 {
        let t = now as f64 / 1e9;
        let ramp = if t < self.ramp_s {
            self.ramp_from + (1.0 - self.ramp_from) * t / self.ramp_s
        } else {
            1.0
        };
        let shift = match self.shift_at_s {
            Some(at) if t >= at => self.shift_to,
            _ => 1.0,
        };
        ramp * shift
    }
}

impl Default for MockDriver {
    fn default() -> Self {
        Self {
            latency_ns: [
                50_000, 80_000, 90_000, 60_000, 500_000, 80_000, 400_000, 130_000,
            ],
            miss_every: 20,
            error_every: 0,
            servers: 0,
            scale: 1.0,
            shape: MockShape::default(),
        }
    }
}

impl MockDriver {
    /// The scripted reply to the `n`-th request (from 1) of global client
    /// `client`: its latency and what it says.
    fn script(&self, kind: OpKind, n: u64, client: u64, now: u64) -> (u64, Scripted) {
        let mut latency = self.latency_ns[kind as usize] * (10 + (n * 7 + client * 3) % 10) / 10;
        let scale = self.scale * self.shape.at(now);
        if scale != 1.0 {
            latency = (latency as f64 * scale).round() as u64;
        }
        let what = if self.error_every > 0 && n.is_multiple_of(self.error_every) {
            Scripted::Error
        } else if kind == OpKind::Get && self.miss_every > 0 && n.is_multiple_of(self.miss_every) {
            Scripted::Miss
        } else if kind == OpKind::Get {
            Scripted::Value
        } else {
            Scripted::Ok
        };
        (latency, what)
    }
}

#[derive(Clone, Copy)]
enum Scripted {
    Ok,
    Value,
    Miss,
    Error,
}

/// One simulated connection: the requests it has out, each with the
/// simulated time its reply arrives. The scripted server answers each
/// connection's requests in order, one at a time.
struct SimConn {
    inflight: VecDeque<(Request, u64, Scripted)>,
    /// Requests made so far (the script's sequence number).
    made: u64,
    /// Global client index.
    client: u64,
}

impl Driver for MockDriver {
    fn carrier(&self, _job: &Job) -> &dyn Carrier {
        self
    }

    fn describe(&self, kind: OpKind) -> String {
        format!(
            "mock {} (scripted latency {} ns)",
            kind.name(),
            self.latency_ns[kind as usize]
        )
    }
}

impl crate::driver::sealed::Sealed for MockDriver {}

impl Carrier for MockDriver {
    /// The simulated I/O loop: like the network loop it keeps up to
    /// `pipeline` requests out per client and hands each completion to the
    /// harness, but time is simulated — it jumps to the next reply (or the
    /// next scheduled request in open loop) instead of waiting.
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, TargetError> {
        let mut h = Harness::with_cpu_clock(job, worker, CpuClock::None).on_simulated_time();
        let pipeline = job.inputs.workload.pipeline.max(1) as usize;
        let mut conns: Vec<SimConn> = job
            .clients_of(worker)
            .map(|client| SimConn {
                inflight: VecDeque::with_capacity(pipeline),
                made: 0,
                client: client as u64,
            })
            .collect();
        let w = job.inputs.workload;
        let mut value = Vec::with_capacity(w.value_size.max());
        let mut now = 0u64;
        // When each of the scripted server's workers is next free.
        let mut free = vec![0u64; self.servers];
        loop {
            h.tick(now);
            // Every client makes the requests due now, up to the pipeline.
            for (ci, c) in conns.iter_mut().enumerate() {
                while c.inflight.len() < pipeline {
                    let Some(intended) = h.due(ci, now) else {
                        break;
                    };
                    let req = h.begin(ci, intended, now);
                    c.made += 1;
                    let (latency, what) = self.script(req.kind, c.made, c.client, now);
                    let mut start = c.inflight.back().map_or(now, |&(_, done, _)| done.max(now));
                    if let Some(f) = free.iter_mut().min() {
                        start = start.max(*f);
                        *f = start + latency;
                    }
                    c.inflight.push_back((req, start + latency, what));
                }
            }
            // The next event: a reply, or (open loop) a request falling due.
            let next_reply = conns
                .iter()
                .enumerate()
                .filter_map(|(ci, c)| c.inflight.front().map(|&(_, done, _)| (done, ci)))
                .min();
            let next_due = (0..conns.len())
                .filter(|&ci| conns[ci].inflight.len() < pipeline)
                .filter_map(|ci| h.next_start(ci, now))
                .filter(|&t| t > now)
                .min();
            match (next_reply, next_due) {
                (Some((done, ci)), due) if due.is_none_or(|t| done <= t) => {
                    now = done;
                    h.tick(now);
                    let (req, _, what) = conns[ci].inflight.pop_front().expect("front exists");
                    let outcome = match what {
                        Scripted::Ok => Outcome::Ok,
                        Scripted::Miss => Outcome::Miss,
                        Scripted::Error => Outcome::Failed(ErrorKind::ServerError),
                        Scripted::Value => {
                            // The value bakeoff wrote, as a server would return it.
                            let (head, payload) = job.inputs.pool.value(
                                req.key,
                                0,
                                w.value_size.max(),
                                w.value_content,
                            );
                            value.clear();
                            value.extend_from_slice(&head);
                            value.extend_from_slice(payload);
                            Outcome::Value(&value)
                        }
                    };
                    h.complete(&req, outcome, now);
                }
                (_, Some(t)) => now = t,
                (_, None) => break,
            }
        }
        Ok(h.finish(now, crate::recorder::IoLoop::Other("mock".into())))
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
    fn record_count(&self) -> Option<u64> {
        None
    }
    fn resources(&self) -> Option<ProcSnapshot> {
        None
    }
    /// The mock's time is simulated: the real machine's CPUs say nothing
    /// of its script, and would make its snapshots vary.
    fn machine(&self) -> Option<crate::readings::MachineTicks> {
        None
    }
}

/// Opens [`MockTarget`]s.
#[derive(Default)]
pub struct MockOpener {
    /// The script every mock target follows.
    pub driver: MockDriver,
    /// Run-to-run noise: each opening scales the script's latencies by a
    /// factor drawn from a log-normal distribution of median 1 with this
    /// coefficient of variation (0: none), from the plan's seed and the
    /// count of openings.
    pub noise_cv: f64,
    /// A fixed multiple of the latency of the targets named (a server
    /// known to be slower), by target id.
    pub scale_of: Vec<(String, f64)>,
    /// Openings so far (the noise's stream: a new opener starts at 0).
    pub opened: std::sync::atomic::AtomicU64,
}

impl MockOpener {
    /// The latency factor of the `n`-th opening under `seed`.
    fn noise(&self, seed: u64, n: u64) -> f64 {
        if self.noise_cv <= 0.0 {
            return 1.0;
        }
        let sigma = (1.0 + self.noise_cv * self.noise_cv).ln().sqrt();
        let mut rng = crate::workload::Rng::new(seed ^ 0x5eed_401e, n);
        // Box–Muller.
        let (u1, u2) = (1.0 - rng.unit(), rng.unit());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (sigma * z).exp()
    }
}

impl TargetOpener for MockOpener {
    fn probe(&self, _: &TargetSpec, _: &Plan) -> Result<(), TargetError> {
        Ok(())
    }
    fn open(
        &self,
        spec: &TargetSpec,
        plan: &Plan,
        _: &crate::plan::Workload,
    ) -> Result<Box<dyn Target>, TargetError> {
        let n = self
            .opened
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let fixed = self
            .scale_of
            .iter()
            .find(|(id, _)| *id == spec.id())
            .map_or(1.0, |(_, f)| *f);
        let mut driver = self.driver.clone();
        driver.scale *= fixed * self.noise(plan.seed, n);
        Ok(Box::new(MockTarget { driver }))
    }
}

/// The catalog of plans for the mock: one target, `mock`, that can do
/// everything and is started by "bakeoff" (opened by [`MockOpener`]).
pub struct MockCatalog;

impl crate::plan::TargetCatalog for MockCatalog {
    fn capabilities(&self, name: &str) -> Option<crate::plan::Capabilities> {
        (name == "mock").then(|| crate::plan::Capabilities {
            ops: OpKind::ALL.to_vec(),
            pipelining: true,
            managed: true,
            url_scheme: None,
            batch_load: false,
            requests: Vec::new(),
            faults: false,
            network: false,
            topologies: Vec::new(),
            url_options: Vec::new(),
            credentials: false,
            no_scan: None,
            provokes: Vec::new(),
        })
    }
    fn names(&self) -> Vec<String> {
        vec!["mock".into()]
    }
    fn target_for_scheme(&self, _: &str) -> Option<String> {
        None
    }
    fn check_settings(&self, _: &str, _: &toml::Table) -> Result<(), TargetError> {
        Ok(())
    }
    fn default_targets(&self) -> Vec<String> {
        vec!["mock".into()]
    }
}
