//! The loop for targets spoken to through async client libraries (SQL and
//! document stores): per worker thread a single-threaded tokio runtime, one
//! task per client, each awaiting one operation at a time; timed here,
//! around each await, never inside the driver.

use std::cell::RefCell;
use std::future::Future;

use crate::client::ClientState;
use crate::driver::{Job, JobKind, WorkerOutput};
use crate::net::{format_key, KEY_LEN};
use crate::recorder::{monotonic_ns, Completion, ErrorKind, WorkerMeter};
use crate::workload::{MixChooser, OpKind};

/// One client's connection. Implementations do no timing and no recording;
/// an `Err` is a failed operation, counted as a server error.
#[allow(async_fn_in_trait)] // sessions live on one thread; no Send needed
pub trait AsyncSession {
    /// Reads record `key` into `out` (cleared first); `Ok(false)` if absent.
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool, String>;
    /// Writes record `key`.
    async fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String>;
    /// Removes record `key`; `Ok(false)` if it was absent.
    async fn delete(&mut self, key: &[u8]) -> Result<bool, String>;
}

/// Runs worker `worker`'s share of `job`, opening one session per client
/// with `connect`.
pub fn run_worker<S, F, Fut>(connect: F, job: &Job, worker: usize) -> Result<WorkerOutput, String>
where
    S: AsyncSession + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<S, String>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start an async runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let w = job.workload;
    let open_loop = w.rate.is_some() && job.kind == JobKind::Measure;
    let meter = RefCell::new(WorkerMeter::new(job.phase_count(), open_loop));
    let t0_ns = monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64);
    let now_ns = move || monotonic_ns().saturating_sub(t0_ns);
    let warmup_end = job.warmup_end_ns();
    let measure_end = job.measure_end_ns();
    let clients: Vec<u32> = job.clients_of(worker).collect();
    local.block_on(&rt, async {
        // Connect every client first; if none can, the job fails.
        let mut sessions = Vec::new();
        let mut first_err = None;
        for _ in &clients {
            match connect().await {
                Ok(s) => sessions.push(Some(s)),
                Err(e) => {
                    first_err.get_or_insert(e);
                    sessions.push(None);
                }
            }
        }
        if sessions.iter().all(|s| s.is_none()) && !clients.is_empty() {
            return Err(format!("cannot connect: {}", first_err.unwrap_or_default()));
        }
        let mut tasks = Vec::new();
        for (client, session) in clients.iter().zip(sessions) {
            let Some(mut session) = session else {
                meter.borrow_mut().stats[0].record_error(ErrorKind::Refused);
                continue;
            };
            let meter = &meter;
            let mut gen = ClientState::new(job, *client, open_loop);
            let mix = MixChooser::new(w.mix.weights);
            tasks.push(async move {
                let mut key_buf = [0u8; KEY_LEN];
                let mut value = Vec::with_capacity(w.value_size.max());
                let mut read = Vec::with_capacity(w.value_size.max());
                loop {
                    let now = now_ns();
                    meter.borrow_mut().on_loop(now, warmup_end, &job.intervals);
                    if job.stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let intended = if open_loop { gen.next_due } else { now };
                    if !gen.may_issue(job, intended, warmup_end, measure_end) {
                        break;
                    }
                    if intended > now {
                        tokio::time::sleep(std::time::Duration::from_nanos(intended - now)).await;
                    }
                    let phase = match job.kind {
                        JobKind::Load => 0,
                        JobKind::Measure => u8::from(intended >= warmup_end),
                    };
                    let (kind, key) = gen.next_op(job, &mix, phase);
                    format_key(key, &mut key_buf);
                    if kind.writes_value() {
                        let (h, p) = gen.value(job, key);
                        value.clear();
                        value.extend_from_slice(&h);
                        value.extend_from_slice(p);
                    }
                    meter.borrow_mut().stats[phase as usize].sent[kind as usize] += 1;
                    let start = now_ns();
                    let result = match kind {
                        OpKind::Get => session.get(&key_buf, &mut read).await,
                        OpKind::Set | OpKind::Update => {
                            session.put(&key_buf, &value).await.map(|()| true)
                        }
                        OpKind::Delete => session.delete(&key_buf).await,
                        OpKind::Search => Err("search is not supported by this target".to_string()),
                    };
                    let done = now_ns();
                    let how = match result {
                        Ok(true) if kind == OpKind::Get => match job.pool.verify(key, &read) {
                            Ok(()) => Completion::Ok,
                            Err(_) => Completion::Error(ErrorKind::Verification),
                        },
                        Ok(true) => Completion::Ok,
                        Ok(false) => Completion::Miss,
                        Err(_) => Completion::Error(ErrorKind::ServerError),
                    };
                    meter.borrow_mut().record(
                        phase,
                        kind,
                        done.saturating_sub(intended),
                        done - start,
                        how,
                        done,
                    );
                }
            });
        }
        // The clients run concurrently on this thread; they borrow the job,
        // so they are joined here rather than spawned.
        futures_util::future::join_all(tasks).await;
        Ok(())
    })?;
    let meter = meter.into_inner();
    Ok(meter.finish(
        now_ns(),
        "async (tokio, one task per client)".into(),
        &job.intervals,
    ))
}
