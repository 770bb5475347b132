//! The loop for targets spoken to through async client libraries (SQL and
//! document stores): per worker thread a single-threaded tokio runtime, one
//! task per client, each awaiting one operation at a time; timed here,
//! around each await, never inside the driver.

use std::cell::RefCell;
use std::future::Future;

use crate::client::{judge, ClientState};
use crate::driver::{Job, JobKind, WorkerOutput};
use crate::net::{format_key, KEY_LEN, RECONNECT_EVERY_NS};
use crate::plan::RequestMode;
use crate::profile::{Profile, Query, RecordKind};
use crate::recorder::{monotonic_ns, ErrorKind, WorkerMeter};
use crate::workload::{MixChooser, OpKind};

/// Why an operation failed.
#[derive(Debug)]
pub enum SessionError {
    /// The server answered with an error; the connection is still usable.
    Server(String),
    /// The connection is gone (reset, closed, timed out); the loop opens a
    /// new one.
    Lost(String),
}

impl SessionError {
    /// How the failure is counted: a lost connection is a reset.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SessionError::Server(_) => ErrorKind::ServerError,
            SessionError::Lost(_) => ErrorKind::Reset,
        }
    }
}

/// What a session's operations return.
pub type SessionResult<T> = Result<T, SessionError>;

/// One client's connection. Implementations do no timing and no recording.
#[allow(async_fn_in_trait)] // sessions live on one thread; no Send needed
pub trait AsyncSession {
    /// Reads record `key` into `out` (cleared first); `Ok(false)` if absent.
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool>;
    /// Writes record `key`.
    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()>;
    /// Removes record `key`; `Ok(false)` if it was absent.
    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool>;
    /// Stores profile row `id` (key `key`) with `payload` as its payload.
    async fn put_profile(
        &mut self,
        _id: u64,
        _key: &[u8],
        _profile: &Profile,
        _payload: &[u8],
    ) -> SessionResult<()> {
        Err(SessionError::Server(
            "this target has no profile table".into(),
        ))
    }
    /// Writes record `key` into a table the load emptied, so it is known to
    /// be absent. A plain insert where an upsert costs more: FerretDB runs
    /// an upsert as a scan of the whole collection.
    async fn insert(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        self.put(key, value).await
    }
    /// Stores profile row `id`, known to be absent (see `insert`).
    async fn insert_profile(
        &mut self,
        id: u64,
        key: &[u8],
        profile: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        self.put_profile(id, key, profile, payload).await
    }
    /// Runs a search on the profile table; returns the rows it found.
    async fn search(&mut self, _query: &Query) -> SessionResult<u64> {
        Err(SessionError::Server("this target cannot search".into()))
    }
    /// Writes records `keys[i]` = `values[i]` in one request (batched
    /// load). The plan allows batches only on targets that do this.
    async fn put_batch(&mut self, _keys: &[[u8; KEY_LEN]], _values: &[&[u8]]) -> SessionResult<()> {
        Err(SessionError::Server(
            "this target cannot insert in batches".into(),
        ))
    }
    /// The steps of a phased request between connecting and closing
    /// (000-mysql-phases), by name; empty if the target has none.
    fn phase_steps(&self) -> &'static [&'static str] {
        &[]
    }
    /// Runs step `step` of `phase_steps` for a request about record `key`
    /// of `records` (the UPDATE and SELECT take the 10 records from `key`),
    /// writing `value`; returns the rows it touched.
    async fn phase_step(
        &mut self,
        _step: usize,
        _key: u64,
        _records: u64,
        _value: &[u8],
    ) -> SessionResult<u64> {
        Err(SessionError::Server(
            "this target has no phased request".into(),
        ))
    }
    /// Closes the connection politely (a request's last step).
    async fn close(self) -> SessionResult<()>
    where
        Self: Sized,
    {
        Ok(())
    }
}

/// How a failed connection attempt is counted: a timeout, a refusal (no
/// listener, or a server turning connections away, "too many
/// connections"), or another server error.
pub fn connect_error_kind(message: &str) -> ErrorKind {
    let m = message.to_ascii_lowercase();
    if m.contains("timed out") || m.contains("timeout") {
        ErrorKind::Timeout
    } else if m.contains("refused") || m.contains("too many") {
        ErrorKind::Refused
    } else if m.contains("reset") || m.contains("broken pipe") || m.contains("closed") {
        ErrorKind::Reset
    } else {
        ErrorKind::ServerError
    }
}

/// What one operation needs besides the session: its kind and record, and
/// the buffers of the client making it.
struct OpInput<'a> {
    kind: OpKind,
    key: u64,
    key_buf: &'a [u8; KEY_LEN],
    value: &'a [u8],
    profile: bool,
    /// The load's write of a record the emptied table lacks.
    fresh: bool,
    query: Option<Query>,
}

/// Makes one operation; returns its outcome and the rows it returned.
async fn perform<S: AsyncSession>(
    s: &mut S,
    op: &OpInput<'_>,
    read: &mut Vec<u8>,
) -> (SessionResult<bool>, u64) {
    let mut rows = 0;
    let result = match op.kind {
        OpKind::Get => s.get(op.key_buf, read).await,
        OpKind::Set if op.fresh && op.profile => s
            .insert_profile(op.key, op.key_buf, &Profile::of(op.key), op.value)
            .await
            .map(|()| true),
        OpKind::Set if op.fresh => s.insert(op.key_buf, op.value).await.map(|()| true),
        OpKind::Set | OpKind::Update if op.profile => s
            .put_profile(op.key, op.key_buf, &Profile::of(op.key), op.value)
            .await
            .map(|()| true),
        OpKind::Set | OpKind::Update => s.put(op.key_buf, op.value).await.map(|()| true),
        OpKind::Delete => s.delete(op.key_buf).await,
        OpKind::Search => match &op.query {
            Some(q) => s.search(q).await.map(|n| {
                rows = n;
                true
            }),
            None => Err(SessionError::Server("search without a query".into())),
        },
    };
    (result, rows)
}

/// Runs worker `worker`'s share of `job`, opening one session per client
/// with `connect` (again after a session is lost, and for every request
/// when the workload asks for a connection per request).
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
    let meter = RefCell::new(WorkerMeter::for_job(job, open_loop));
    let t0_ns = monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64);
    let now_ns = move || monotonic_ns().saturating_sub(t0_ns);
    let warmup_end = job.warmup_end_ns();
    let measure_end = job.measure_end_ns();
    let timeout_ns = (w.timeout_s * 1e9) as u64;
    // Requests that open their own connection: measured ones only; the
    // load keeps one connection per client.
    let mode = match job.kind {
        JobKind::Load => RequestMode::Op,
        JobKind::Measure => w.request,
    };
    let clients: Vec<u32> = job.clients_of(worker).collect();
    local.block_on(&rt, async {
        // Connect every client first (with a connection per request, one
        // connection shows the target answers); if none can, the job fails.
        let mut sessions = Vec::new();
        let mut first_err = None;
        for (i, _) in clients.iter().enumerate() {
            if mode != RequestMode::Op && i > 0 {
                sessions.push(None);
                continue;
            }
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
        if mode != RequestMode::Op {
            for s in sessions.iter_mut() {
                if let Some(s) = s.take() {
                    let _ = s.close().await;
                }
            }
        }
        let mut tasks = Vec::new();
        for (client, mut session) in clients.iter().zip(sessions) {
            let meter = &meter;
            let connect = &connect;
            let mut gen = ClientState::new(job, *client, open_loop);
            let mix = MixChooser::new(w.mix.weights);
            let profile = w.record == RecordKind::Profile;
            tasks.push(async move {
                let mut key_buf = [0u8; KEY_LEN];
                let mut value = Vec::with_capacity(w.value_size.max());
                let mut read = Vec::with_capacity(w.value_size.max());
                let fresh = job.kind == JobKind::Load;
                let batched = w.batch > 1 && fresh;
                let mut batch_keys: Vec<[u8; KEY_LEN]> = Vec::new();
                let mut batch_values: Vec<Vec<u8>> = Vec::new();
                // When the connection was lost (ns since t0), while it is.
                let mut lost_since: Option<u64> =
                    (mode == RequestMode::Op && session.is_none()).then(now_ns);
                loop {
                    let now = now_ns();
                    meter.borrow_mut().on_loop(now, warmup_end, &job.intervals);
                    if job.stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    if mode == RequestMode::Op && session.is_none() {
                        // Reconnect, at most every RECONNECT_EVERY_NS; a
                        // target gone longer than the request timeout takes
                        // this client's remaining work with it.
                        if !gen.has_work_left(job, now, warmup_end) || now >= measure_end {
                            break;
                        }
                        match connect().await {
                            Ok(s) => {
                                session = Some(s);
                                lost_since = None;
                                gen.skip_missed(now_ns());
                            }
                            Err(_) => {
                                meter
                                    .borrow_mut()
                                    .record_connect_error(job.phase_at(now), ErrorKind::Refused);
                                if lost_since.is_some_and(|t| now - t > timeout_ns) {
                                    gen.give_up();
                                }
                                tokio::time::sleep(std::time::Duration::from_nanos(
                                    RECONNECT_EVERY_NS,
                                ))
                                .await;
                            }
                        }
                        continue;
                    }
                    let intended = if open_loop { gen.next_due } else { now };
                    if !gen.may_issue(job, intended, warmup_end, measure_end) {
                        break;
                    }
                    if intended > now {
                        tokio::time::sleep(std::time::Duration::from_nanos(intended - now)).await;
                    }
                    let phase = job.phase_at(intended);
                    let (kind, key) = gen.next_op(job, &mix, phase);
                    if batched {
                        let Some(s) = session.as_mut() else { continue };
                        // One request for up to `batch` records: counted
                        // once, with the records as its rows.
                        batch_keys.clear();
                        batch_values.clear();
                        let mut k = key;
                        loop {
                            let mut kb = [0u8; KEY_LEN];
                            format_key(k, &mut kb);
                            batch_keys.push(kb);
                            let (h, p) = gen.value(job, k);
                            batch_values.push([&h[..], p].concat());
                            if batch_keys.len() == w.batch as usize
                                || !gen.may_issue(job, now, warmup_end, measure_end)
                            {
                                break;
                            }
                            k = gen.next_op(job, &mix, phase).1;
                        }
                        let values: Vec<&[u8]> = batch_values.iter().map(|v| &v[..]).collect();
                        meter.borrow_mut().stats[0].sent[OpKind::Set as usize] += 1;
                        let start = now_ns();
                        let result = s.put_batch(&batch_keys, &values).await;
                        let done = now_ns();
                        let result = result.map(|()| true).map_err(|e| e.kind());
                        if result == Err(ErrorKind::Reset) {
                            session = None;
                            lost_since = Some(done);
                        }
                        let how = judge(job, OpKind::Set, k, &result, &read);
                        let mut m = meter.borrow_mut();
                        if result.is_ok() {
                            m.stats[0].rows[OpKind::Set as usize] += batch_keys.len() as u64;
                        }
                        m.record(
                            0,
                            OpKind::Set,
                            done.saturating_sub(intended),
                            done - start,
                            how,
                            done,
                        );
                        continue;
                    }
                    format_key(key, &mut key_buf);
                    if kind.writes_value() {
                        let (h, p) = gen.value(job, key);
                        value.clear();
                        value.extend_from_slice(&h);
                        value.extend_from_slice(p);
                    }
                    let query = (kind == OpKind::Search).then(|| gen.query(w.search));
                    let op = OpInput {
                        kind,
                        key,
                        key_buf: &key_buf,
                        value: &value,
                        profile,
                        fresh,
                        query,
                    };
                    meter.borrow_mut().stats[phase as usize].sent[kind as usize] += 1;
                    let start = now_ns();
                    let (result, rows) = match mode {
                        RequestMode::Op => {
                            let Some(s) = session.as_mut() else { continue };
                            let (result, rows) = perform(s, &op, &mut read).await;
                            let result = result.map_err(|e| e.kind());
                            if result == Err(ErrorKind::Reset) {
                                session = None;
                                lost_since = Some(now_ns());
                            }
                            (result, rows)
                        }
                        RequestMode::Connect => match connect().await {
                            Err(e) => {
                                // The request never reached the server: it
                                // is a failed connection, not a sent request.
                                meter.borrow_mut().stats[phase as usize].sent[kind as usize] -= 1;
                                (Err(connect_error_kind(&e)), 0)
                            }
                            Ok(mut s) => {
                                let (result, rows) = perform(&mut s, &op, &mut read).await;
                                let closed = s.close().await;
                                let result = result.and_then(|r| closed.map(|()| r));
                                (result.map_err(|e| e.kind()), rows)
                            }
                        },
                        RequestMode::Phases => {
                            let steps = |i: usize, name: &'static str, from: u64| {
                                meter.borrow_mut().stats[phase as usize].record_step(
                                    i,
                                    name,
                                    now_ns() - from,
                                );
                            };
                            match connect().await {
                                Err(e) => {
                                    meter.borrow_mut().stats[phase as usize].sent[kind as usize] -=
                                        1;
                                    (Err(connect_error_kind(&e)), 0)
                                }
                                Ok(mut s) => {
                                    steps(0, "connect", start);
                                    let names = s.phase_steps();
                                    let mut result = Ok(true);
                                    let mut rows = 0;
                                    for (i, name) in names.iter().enumerate() {
                                        let t = now_ns();
                                        match s.phase_step(i, key, w.records, &value).await {
                                            Ok(n) => rows += n,
                                            Err(e) => {
                                                result = Err(e.kind());
                                                break;
                                            }
                                        }
                                        steps(i + 1, name, t);
                                    }
                                    let t = now_ns();
                                    let closed = s.close().await;
                                    if result.is_ok() {
                                        steps(names.len() + 1, "close", t);
                                        result = closed.map(|()| true).map_err(|e| e.kind());
                                    }
                                    (result, rows)
                                }
                            }
                        }
                    };
                    let done = now_ns();
                    let how = judge(job, kind, key, &result, &read);
                    let mut m = meter.borrow_mut();
                    m.stats[phase as usize].rows[kind as usize] += rows;
                    m.record(
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
