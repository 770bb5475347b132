//! The loop for targets spoken to through async client libraries (SQL and
//! document stores): per worker thread a single-threaded tokio runtime, one
//! task per client, each awaiting one operation at a time. The harness
//! times each request around its await; sessions never do.
//!
//! Besides one operation per request, this loop runs the request modes
//! only client libraries offer: batched loads (`--batch`), a connection per
//! request (`--request connect`) and phased requests (`--request phases`),
//! each step timed as its own histogram.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use crate::driver::{Job, JobKind, WorkerOutput};
use crate::error::ConnectError;
use crate::error::TargetError;
use crate::harness::{Harness, Outcome, Request, RECONNECT_EVERY_NS, STOP_GRACE_NS};
use crate::keys::Key;
use crate::plan::RequestMode;
use crate::recorder::{monotonic_ns, ErrorKind};
use crate::session::{perform, Answer, OpBuffers, Session, SessionError, SessionResult};

/// `work` on a server, or a timeout after `limit`: every await on a server
/// has a deadline, so a server that stops answering fails requests as
/// timeouts (and the loop opens new connections) instead of hanging the
/// run.
async fn within<T>(
    limit: Duration,
    work: impl Future<Output = SessionResult<T>>,
) -> SessionResult<T> {
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or(Err(SessionError::TimedOut(limit)))
}

/// Connecting, within `limit` (see [`within`]).
async fn connect_within<S>(
    limit: Duration,
    connecting: impl Future<Output = Result<S, ConnectError>>,
) -> Result<S, ConnectError> {
    tokio::time::timeout(limit, connecting)
        .await
        .unwrap_or_else(|_| {
            Err(ConnectError::new(
                ErrorKind::Timeout,
                format!(
                    "no connection within {limit:?}: the server accepts but does not answer (stalled?)"
                ),
            ))
        })
}

/// How often a worker looks whether a stop was asked for.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Whether a failure leaves the connection unusable: lost, or in an
/// unknown state after a timeout.
fn drops_connection(kind: ErrorKind) -> bool {
    matches!(kind, ErrorKind::Reset | ErrorKind::Timeout)
}
use crate::workload::OP_KINDS;

/// Opens one client's session, as a [`Sessions`] keeps it.
type Connect<S> =
    Box<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<S, ConnectError>>>> + Send + Sync>;

/// A client library's sessions, ready to carry a job on this loop: how a
/// client opens its session (again after it is lost, and for every
/// request when the workload asks for a connection per request).
pub struct Sessions<S> {
    connect: Connect<S>,
}

impl<S: Session + 'static> Sessions<S> {
    /// Sessions opened by `connect`.
    pub fn new<F, Fut>(connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<S, ConnectError>> + 'static,
    {
        Sessions {
            connect: Box::new(move || Box::pin(connect())),
        }
    }
}

impl<S> crate::driver::sealed::Sealed for Sessions<S> {}

impl<S: Session + 'static> crate::driver::Carrier for Sessions<S> {
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, TargetError> {
        run_worker(|| (self.connect)(), job, worker)
    }
}

/// Runs worker `worker`'s share of `job`, opening one session per client
/// with `connect` (again after a session is lost, and for every request
/// when the workload asks for a connection per request).
pub(crate) fn run_worker<S, F, Fut>(
    connect: F,
    job: &Job,
    worker: usize,
) -> Result<WorkerOutput, TargetError>
where
    S: Session + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<S, ConnectError>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| TargetError::Client(format!("cannot start an async runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    let harness = RefCell::new(Harness::new(job, worker));
    let t0_ns = monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64);
    let now_ns = move || monotonic_ns().saturating_sub(t0_ns);
    let w = job.inputs.workload;
    let timeout_ns = (w.timeout_s * 1e9) as u64;
    let limit = Duration::from_nanos(timeout_ns);
    // Requests that open their own connection: measured ones only; the
    // load keeps one connection per client.
    let mode = match job.kind {
        JobKind::Load | JobKind::ReadBack => RequestMode::Op,
        JobKind::Measure => w.request,
    };
    let clients = harness.borrow().clients();
    // Requests sent to each server, when a session spreads them over
    // several (a primary and a replica); empty for one server.
    let node_sent = RefCell::new(Vec::<[u64; OP_KINDS]>::new());
    local.block_on(&rt, async {
        // Connect every client first (with a connection per request, one
        // connection shows the target answers); if none can, the job fails.
        let mut sessions = Vec::new();
        let mut first_err = None;
        for ci in 0..clients {
            if mode != RequestMode::Op && ci > 0 {
                sessions.push(None);
                continue;
            }
            match connect_within(limit, connect()).await {
                Ok(s) => sessions.push(Some(s)),
                Err(e) => {
                    first_err.get_or_insert(e);
                    sessions.push(None);
                }
            }
        }
        if sessions.iter().all(|s| s.is_none()) && clients > 0 {
            let e = first_err.expect("a client failed to connect");
            return Err(TargetError::from(ConnectError::new(
                e.kind,
                format!("cannot connect: {}", e.message),
            )));
        }
        if mode != RequestMode::Op {
            for s in sessions.iter_mut() {
                if let Some(s) = s.take() {
                    let _ = within(limit, s.close()).await;
                }
            }
        }
        let mut tasks = Vec::new();
        for (ci, session) in sessions.into_iter().enumerate() {
            let client = Client {
                ci,
                harness: &harness,
                node_sent: &node_sent,
                connect: &connect,
                now_ns: &now_ns,
                mode,
                timeout_ns,
                limit,
            };
            tasks.push(client.run(session));
        }
        // The clients run concurrently on this thread; they borrow the job,
        // so they are joined here rather than spawned. A stop asked for
        // gives the requests still out STOP_GRACE_NS, then the job ends
        // without them, as the codec loop does.
        let clients_done = futures_util::future::join_all(tasks);
        let stopped = async {
            while !job.inputs.stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(STOP_POLL).await;
            }
            tokio::time::sleep(Duration::from_nanos(STOP_GRACE_NS)).await;
        };
        futures_util::future::select(std::pin::pin!(clients_done), std::pin::pin!(stopped)).await;
        Ok(())
    })?;
    let h = harness.into_inner();
    let mut out = h.finish(now_ns(), crate::recorder::IoLoop::Async);
    out.node_sent = node_sent.into_inner();
    Ok(out)
}

/// One client's task: its index in the worker, and what it shares.
struct Client<'h, 'j, F, N> {
    ci: usize,
    harness: &'h RefCell<Harness<'j>>,
    node_sent: &'h RefCell<Vec<[u64; OP_KINDS]>>,
    connect: &'h F,
    now_ns: &'h N,
    mode: RequestMode,
    timeout_ns: u64,
    /// The request timeout, every await's deadline.
    limit: Duration,
}

impl<'j, S, F, Fut, N> Client<'_, 'j, F, N>
where
    S: Session + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<S, ConnectError>>,
    N: Fn() -> u64,
{
    async fn run(self, mut session: Option<S>) {
        let (ci, now_ns) = (self.ci, self.now_ns);
        let job = self.harness.borrow().job();
        let mut buffers = OpBuffers::new(job.inputs.workload);
        let batched = job.inputs.workload.batch > 1 && job.kind == JobKind::Load;
        // When the connection was lost (ns since t0), while it is.
        let mut lost_since: Option<u64> =
            (self.mode == RequestMode::Op && session.is_none()).then(now_ns);
        loop {
            let now = now_ns();
            if !self.harness.borrow_mut().tick(now) {
                break;
            }
            if self.mode == RequestMode::Op && session.is_none() {
                // Reconnect, at most every RECONNECT_EVERY_NS; a target gone
                // longer than the request timeout takes this client's
                // remaining work with it.
                if !self.harness.borrow().has_work_left(ci, now) {
                    break;
                }
                match connect_within(self.limit, (self.connect)()).await {
                    Ok(s) => {
                        session = Some(s);
                        lost_since = None;
                        self.harness.borrow_mut().skip_missed(ci, now_ns());
                    }
                    Err(e) => {
                        {
                            let mut h = self.harness.borrow_mut();
                            h.connect_failed(now, e.kind);
                            if lost_since.is_some_and(|t| now - t > self.timeout_ns) {
                                h.give_up(ci);
                            }
                        }
                        tokio::time::sleep(std::time::Duration::from_nanos(RECONNECT_EVERY_NS))
                            .await;
                    }
                }
                continue;
            }
            let Some(intended) = self.harness.borrow().next_start(ci, now) else {
                break;
            };
            if intended > now {
                tokio::time::sleep(std::time::Duration::from_nanos(intended - now)).await;
            }
            let req = self.harness.borrow_mut().begin(ci, intended, now_ns());
            if batched {
                let Some(s) = session.as_mut() else { continue };
                if s.nodes() > 1 {
                    self.count_node(s.nodes(), s.node_of(req.kind), req.kind);
                }
                let result = self.load_batch(s, req).await;
                if matches!(result, Outcome::Failed(k) if drops_connection(k)) {
                    session = None;
                    lost_since = Some(now_ns());
                }
                continue;
            }
            let (op, read) = buffers.prepare(&mut self.harness.borrow_mut(), req);
            // Err: the request's own connection could not be opened.
            let result: Result<SessionResult<Answer>, ErrorKind> = match self.mode {
                RequestMode::Op => {
                    let Some(s) = session.as_mut() else { continue };
                    if s.nodes() > 1 {
                        self.count_node(s.nodes(), s.node_of(op.req.kind), op.req.kind);
                    }
                    let result = within(self.limit, perform(s, &op, read)).await;
                    if matches!(&result, Err(e) if drops_connection(e.kind())) {
                        session = None;
                        lost_since = Some(now_ns());
                    }
                    Ok(result)
                }
                RequestMode::Connect => match connect_within(self.limit, (self.connect)()).await {
                    Err(e) => Err(e.kind),
                    Ok(mut s) => {
                        let result = within(self.limit, perform(&mut s, &op, read)).await;
                        let closed = within(self.limit, s.close()).await;
                        Ok(result.and_then(|r| closed.map(|()| r)))
                    }
                },
                RequestMode::Phases => match connect_within(self.limit, (self.connect)()).await {
                    Err(e) => Err(e.kind),
                    Ok(s) => Ok(within(self.limit, self.phased(s, &req, op.value)).await),
                },
            };
            let done = now_ns();
            let mut h = self.harness.borrow_mut();
            match result {
                Ok(result) => crate::session::record(&mut h, &req, &result, read, done),
                Err(kind) => {
                    // The request never reached the server: a failed
                    // connection, not a sent request.
                    h.not_sent(&req);
                    h.complete(&req, Outcome::Failed(kind), done);
                }
            }
        }
    }

    /// Counts a request sent to server `node` of `nodes`.
    fn count_node(&self, nodes: usize, node: usize, kind: crate::workload::OpKind) {
        let mut sent = self.node_sent.borrow_mut();
        if sent.len() < nodes {
            sent.resize(nodes, [0; OP_KINDS]);
        }
        sent[node][kind as usize] += 1;
    }

    /// A phased request on a connection of its own: every step between
    /// connecting and closing timed as its own histogram.
    async fn phased(&self, mut s: S, req: &Request, value: &[u8]) -> SessionResult<Answer> {
        let now_ns = self.now_ns;
        let step = |i: usize, name: &'static str, from: u64| {
            self.harness
                .borrow_mut()
                .record_step(req.phase, i, name, now_ns() - from);
        };
        step(0, "connect", req.sent);
        let names = s.phase_steps();
        let (records, naming) = {
            let h = self.harness.borrow();
            (
                h.job().inputs.workload.records,
                h.job().inputs.workload.key_naming,
            )
        };
        let mut rows = 0;
        for (i, name) in names.iter().enumerate() {
            let t = now_ns();
            rows += match s.phase_step(i, req.key, records, naming, value).await {
                Ok(n) => n,
                Err(e) => {
                    let _ = s.close().await;
                    return Err(e);
                }
            };
            step(i + 1, name, t);
        }
        let t = now_ns();
        s.close().await?;
        step(names.len() + 1, "close", t);
        Ok(Answer::Rows(rows))
    }

    /// A batched load: up to `batch` records from `first` on, in one
    /// request, counted once with the records as its rows.
    async fn load_batch(&self, s: &mut S, mut first: Request) -> Outcome<'static> {
        let ci = self.ci;
        let mut keys: Vec<Key> = Vec::new();
        let mut values: Vec<Vec<u8>> = Vec::new();
        {
            let mut h = self.harness.borrow_mut();
            let batch = h.job().inputs.workload.batch as usize;
            let mut req = first;
            loop {
                keys.push(h.job().inputs.workload.key_naming.key(req.key));
                let (head, payload) = h.value(ci, req.key);
                values.push([&head[..], payload].concat());
                let now = (self.now_ns)();
                if keys.len() == batch || h.due(ci, now).is_none() {
                    break;
                }
                // The records after the first ride on its request: drawn
                // from the stream, but not counted as requests of their own.
                req = h.begin(ci, now, now);
                h.not_sent(&req);
            }
        }
        let refs: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
        first.sent = (self.now_ns)();
        let result = within(self.limit, s.put_batch(&keys, &refs)).await;
        let done = (self.now_ns)();
        let outcome = match &result {
            Ok(()) => Outcome::Rows(keys.len() as u64),
            Err(e) => {
                let kind = e.kind();
                let mut h = self.harness.borrow_mut();
                h.failed_saying_lazily(&first, kind, || e.said());
                Outcome::Failed(kind)
            }
        };
        self.harness.borrow_mut().complete(&first, outcome, done);
        outcome
    }
}
