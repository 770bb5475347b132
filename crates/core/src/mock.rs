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
        }
    }
}

impl MockDriver {
    /// The scripted reply to the `n`-th request (from 1) of global client
    /// `client`: its latency and what it says.
    fn script(&self, kind: OpKind, n: u64, client: u64) -> (u64, Scripted) {
        let latency = self.latency_ns[kind as usize] * (10 + (n * 7 + client * 3) % 10) / 10;
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
        let mut h = Harness::with_cpu_clock(job, worker, CpuClock::None);
        let pipeline = job.workload.pipeline.max(1) as usize;
        let mut conns: Vec<SimConn> = job
            .clients_of(worker)
            .map(|client| SimConn {
                inflight: VecDeque::with_capacity(pipeline),
                made: 0,
                client: client as u64,
            })
            .collect();
        let w = job.workload;
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
                    let (latency, what) = self.script(req.kind, c.made, c.client);
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
                            let (head, payload) =
                                job.pool
                                    .value(req.key, 0, w.value_size.max(), w.value_content);
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
}

/// Opens [`MockTarget`]s.
#[derive(Default)]
pub struct MockOpener {
    /// The script every mock target follows.
    pub driver: MockDriver,
}

impl TargetOpener for MockOpener {
    fn probe(&self, _: &TargetSpec, _: &Plan) -> Result<(), TargetError> {
        Ok(())
    }
    fn open(
        &self,
        _: &TargetSpec,
        _: &Plan,
        _: &crate::plan::Workload,
    ) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(MockTarget {
            driver: self.driver.clone(),
        }))
    }
}
