//! The loop for engines opened in-process (Tokyo Cabinet, LMDB, RocksDB,
//! SQLite): every operation is a synchronous call, timed here around the
//! call, never inside the engine's driver.
//!
//! Each worker thread runs its clients in turn (round robin in closed loop,
//! by schedule in open loop); give an embedded run as many threads as
//! clients for real concurrency.

use crate::client::{judge, ClientState};
use crate::driver::{Job, JobKind, WorkerOutput};
use crate::net::{format_key, KEY_LEN};
use crate::profile::{Profile, Query, RecordKind};
use crate::recorder::{monotonic_ns, ErrorKind, WorkerMeter};
use crate::workload::{MixChooser, OpKind};

/// One worker's handle on an engine. Implementations do no timing and no
/// recording; an `Err` is a failed operation, counted as a server error.
pub trait EngineSession {
    /// Reads record `key` into `out` (cleared first); `Ok(false)` if absent.
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, String>;
    /// Writes record `key`.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String>;
    /// Removes record `key`; `Ok(false)` if it was absent.
    fn delete(&mut self, key: &[u8]) -> Result<bool, String>;
    /// Stores profile row `id` (key `key`) with `payload` as its payload.
    fn put_profile(
        &mut self,
        _id: u64,
        _key: &[u8],
        _profile: &Profile,
        _payload: &[u8],
    ) -> Result<(), String> {
        Err("this engine has no profile table".into())
    }
    /// Runs a search on the profile table; returns the rows it found.
    fn search(&mut self, _query: &Query) -> Result<u64, String> {
        Err("this engine cannot search".into())
    }
}

/// Runs worker `worker`'s share of `job` on `session`.
pub fn run_worker<S: EngineSession>(session: &mut S, job: &Job, worker: usize) -> WorkerOutput {
    let w = job.workload;
    let open_loop = w.rate.is_some() && job.kind == JobKind::Measure;
    let mut clients: Vec<ClientState> = job
        .clients_of(worker)
        .map(|c| ClientState::new(job, c, open_loop))
        .collect();
    let mut meter = WorkerMeter::for_job(job, open_loop);
    let mix = MixChooser::new(w.mix.weights);
    let warmup_end = job.warmup_end_ns();
    let measure_end = job.measure_end_ns();
    let t0_ns = monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64);
    let now_ns = || monotonic_ns().saturating_sub(t0_ns);
    let mut key_buf = [0u8; KEY_LEN];
    let mut value = Vec::with_capacity(w.value_size.max());
    let mut read = Vec::with_capacity(w.value_size.max());
    let mut next = 0usize;
    // One clock read per operation: in a closed loop the end of one call is
    // the start of the next on the same thread.
    let mut now = now_ns();
    loop {
        meter.on_loop(now, warmup_end, &job.intervals);
        if job.stop.load(std::sync::atomic::Ordering::Relaxed) || clients.is_empty() {
            break;
        }
        // Which client goes next, and when it was meant to.
        let pick = if open_loop {
            clients
                .iter()
                .enumerate()
                .filter(|(_, c)| c.may_issue(job, c.next_due, warmup_end, measure_end))
                .min_by_key(|(_, c)| c.next_due)
                .map(|(i, c)| (i, c.next_due))
        } else {
            (0..clients.len())
                .map(|k| (next + k) % clients.len())
                .find(|&i| clients[i].may_issue(job, now, warmup_end, measure_end))
                .map(|i| (i, now))
        };
        let Some((ci, intended)) = pick else { break };
        next = ci + 1;
        if intended > now {
            let wait = intended - now;
            if wait > 200_000 {
                std::thread::sleep(std::time::Duration::from_nanos(
                    wait.min(meter.next_tick().saturating_sub(now)).max(1),
                ));
                now = now_ns();
                continue;
            }
            while now_ns() < intended {
                std::hint::spin_loop();
            }
            now = now_ns();
        }
        let phase = job.phase_at(intended);
        let c = &mut clients[ci];
        let (kind, key) = c.next_op(job, &mix, phase);
        format_key(key, &mut key_buf);
        if kind.writes_value() {
            let (h, p) = c.value(job, key);
            value.clear();
            value.extend_from_slice(&h);
            value.extend_from_slice(p);
        }
        meter.stats[phase as usize].sent[kind as usize] += 1;
        let start = now;
        let profile = w.record == RecordKind::Profile;
        let mut rows = 0;
        let result = match kind {
            OpKind::Get => session.get(&key_buf, &mut read),
            OpKind::Set | OpKind::Update if profile => session
                .put_profile(key, &key_buf, &Profile::of(key), &value)
                .map(|()| true),
            OpKind::Set | OpKind::Update => session.put(&key_buf, &value).map(|()| true),
            OpKind::Delete => session.delete(&key_buf),
            OpKind::Search => {
                let q = clients[ci].query(w.search);
                session.search(&q).map(|n| {
                    rows = n;
                    true
                })
            }
        };
        let done = now_ns();
        let result = result.map_err(|_| ErrorKind::ServerError);
        let how = judge(job, kind, key, &result, &read);
        meter.record(
            phase,
            kind,
            done.saturating_sub(intended),
            done - start,
            how,
            done,
        );
        meter.stats[phase as usize].rows[kind as usize] += rows;
        now = done;
    }
    meter.finish(now_ns(), "in-process".into(), &job.intervals)
}
