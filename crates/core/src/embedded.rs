//! The loop for engines opened in-process (Tokyo Cabinet, LMDB, RocksDB,
//! SQLite): every operation is a direct, synchronous call, timed by the
//! harness around the call, never inside the engine's driver.
//!
//! Each worker thread runs its clients in turn (round robin in closed loop,
//! by schedule in open loop); give an embedded run as many threads as
//! clients for real concurrency.
//!
//! Engines implement the synchronous [`EngineSession`]; [`InProcess`] makes
//! one a [`Session`], so that operations are dispatched by the same
//! [`perform`] as for client libraries. Its futures never wait: the loop
//! polls each once.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::driver::{Carrier, Driver, Job};
use crate::error::TargetError;
use crate::harness::Harness;
use crate::profile::{Profile, Query};
use crate::recorder::{monotonic_ns, WorkerOutput};
use crate::session::{perform, OpBuffers, Session, SessionError, SessionResult};
use crate::workload::OpKind;

/// An engine's own failure: opening its files, preparing a statement, an
/// operation it refused. Counted as a server error when an operation
/// fails ([`crate::session::SessionError::Server`]); a setup failure of the target
/// ([`TargetError::Engine`]) otherwise.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EngineError(pub String);

impl From<EngineError> for crate::session::SessionError {
    fn from(e: EngineError) -> Self {
        crate::session::SessionError::Server(e.0)
    }
}

impl From<EngineError> for crate::error::TargetError {
    fn from(e: EngineError) -> Self {
        crate::error::TargetError::Engine(e.0)
    }
}

/// One worker's handle on an engine. Implementations do no timing and no
/// recording; an `Err` is a failed operation, counted by its kind (an
/// engine's own errors are [`SessionError::Server`]).
pub trait EngineSession {
    /// Reads record `key` into `out` (cleared first); `Ok(false)` if absent.
    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool>;
    /// Writes record `key`.
    fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()>;
    /// Removes record `key`; `Ok(false)` if it was absent.
    fn delete(&mut self, key: &[u8]) -> SessionResult<bool>;
    /// Stores profile row `id` (key `key`) with `payload` as its payload.
    fn put_profile(
        &mut self,
        _id: u64,
        _key: &[u8],
        _profile: &Profile,
        _payload: &[u8],
    ) -> SessionResult<()> {
        Err(SessionError::Server(
            "this engine has no profile table".into(),
        ))
    }
    /// Runs a search on the profile table; returns the rows it found.
    fn search(&mut self, _query: &Query) -> SessionResult<u64> {
        Err(SessionError::Server("this engine cannot search".into()))
    }
    /// Reads up to `limit` records whose keys are `start` or after, in key
    /// order, into `out` as [`crate::scan::push_row`] writes them; returns
    /// how many.
    fn scan(&mut self, _start: &[u8], _limit: u32, _out: &mut Vec<u8>) -> SessionResult<u64> {
        Err(SessionError::Server("this engine cannot scan".into()))
    }
    /// Whether it keeps the fields of a record of several apart, so that
    /// [`EngineSession::put_field`] writes one.
    fn keeps_fields(&self) -> bool {
        false
    }
    /// Writes field `field` of record `key` (an engine that keeps fields
    /// apart; an absent record stays absent).
    fn put_field(&mut self, _key: &[u8], _field: usize, _value: &[u8]) -> SessionResult<()> {
        Err(SessionError::Server(
            "this engine keeps a record as one value".into(),
        ))
    }
}

/// An engine's session as a [`Session`] whose calls complete at once.
pub struct InProcess<'s, S>(pub &'s mut S);

impl<S: EngineSession> Session for InProcess<'_, S> {
    async fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> SessionResult<bool> {
        self.0.get(key, out)
    }
    async fn put(&mut self, key: &[u8], value: &[u8]) -> SessionResult<()> {
        self.0.put(key, value)
    }
    fn keeps_fields(&self) -> bool {
        self.0.keeps_fields()
    }
    async fn put_field(&mut self, key: &[u8], field: usize, value: &[u8]) -> SessionResult<()> {
        self.0.put_field(key, field, value)
    }
    async fn delete(&mut self, key: &[u8]) -> SessionResult<bool> {
        self.0.delete(key)
    }
    async fn put_profile(
        &mut self,
        id: u64,
        key: &[u8],
        profile: &Profile,
        payload: &[u8],
    ) -> SessionResult<()> {
        self.0.put_profile(id, key, profile, payload)
    }
    async fn search(&mut self, query: &Query) -> SessionResult<u64> {
        self.0.search(query)
    }
    async fn scan(&mut self, start: &[u8], limit: u32, out: &mut Vec<u8>) -> SessionResult<u64> {
        self.0.scan(start, limit, out)
    }
}

/// The value of a future that completes without waiting (an in-process
/// call), polled once.
#[inline]
fn at_once<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("an in-process engine's call waited; engines must not suspend"),
    }
}

/// The most an in-process open loop spins before a request's time, beyond
/// how late its wake-ups come: a longer wait sleeps.
const SPIN_AT_MOST_NS: u64 = 20_000;

/// The most a wake-up's lateness counts (a longer one is a stall, not the
/// timer's).
const MAX_WAKE_LEAD_NS: u64 = 200_000;

/// Runs worker `worker`'s share of `job` on `session`.
pub(crate) fn run_worker<S: EngineSession>(
    session: &mut S,
    job: &Job,
    worker: usize,
) -> WorkerOutput {
    let session = &mut InProcess(session);
    let mut h = Harness::new(job, worker);
    let t0_ns = monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64);
    let now_ns = || monotonic_ns().saturating_sub(t0_ns);
    let mut buffers = OpBuffers::new(job.inputs.workload);
    let mut after = 0usize;
    // An open loop keeps a schedule (see crate::pacing): the least timer
    // slack, wake-ups set early by how late they have come, the rest
    // spun out.
    let mut lead = crate::pacing::WakeLead::of_tail(MAX_WAKE_LEAD_NS);
    if h.open_loop() {
        crate::pacing::least_timer_slack();
    }
    // One clock read per operation: in a closed loop the end of one call is
    // the start of the next on the same thread.
    let mut now = now_ns();
    loop {
        h.tick(now);
        let Some((ci, intended)) = h.next_client(now, after) else {
            break;
        };
        after = ci + 1;
        if intended > now {
            let wait = intended - now;
            if wait > lead.lead_ns() + SPIN_AT_MOST_NS {
                let planned = (intended - lead.lead_ns()).min(h.next_tick()).max(now + 1);
                std::thread::sleep(std::time::Duration::from_nanos(planned - now));
                now = now_ns();
                lead.learn(planned, now);
                continue;
            }
            while now_ns() < intended {
                std::hint::spin_loop();
            }
            now = now_ns();
        }
        let req = h.begin(ci, intended, now);
        let (op, read) = buffers.prepare(&mut h, req);
        let result = at_once(perform(session, &op, read));
        let done = now_ns();
        crate::session::record(&mut h, &req, &result, read, done);
        now = done;
    }
    h.finish(now_ns(), crate::recorder::IoLoop::InProcess)
}

/// An opened engine, shared by the worker threads.
pub trait Engine: Send + Sync + 'static {
    /// A worker's handle.
    type Session: EngineSession;
    /// Opens a handle for one worker thread.
    fn session(&self) -> Result<Self::Session, EngineError>;
    /// Records stored, if the engine can tell exactly.
    fn count(&self) -> Option<u64>;
    /// Whether it keeps the fields of a record of several apart (see
    /// [`EngineSession::keeps_fields`]).
    fn keeps_fields(&self) -> bool {
        false
    }
    /// What one operation does, for the report.
    fn describe(&self, kind: OpKind) -> String;
    /// Where the engine tells of its background work and how often to
    /// look (see [`crate::target::BackgroundWork::source`]).
    fn background_source(&self) -> Option<(&'static str, std::time::Duration)> {
        None
    }
    /// One look at its background work.
    fn background(&self) -> Option<crate::target::BackgroundLook> {
        None
    }
    /// Why it tells nothing of background work, where it does not.
    fn no_background(&self) -> Option<&'static str> {
        None
    }
}

/// The driver of an embedded engine: runs the shared loop on a session.
pub struct EmbeddedDriver<E: Engine> {
    engine: std::sync::Arc<E>,
}

impl<E: Engine> EmbeddedDriver<E> {
    /// The driver of `engine`, shared by the worker threads.
    pub fn new(engine: std::sync::Arc<E>) -> Self {
        EmbeddedDriver { engine }
    }

    /// The engine it drives.
    pub fn engine(&self) -> &E {
        &self.engine
    }
}

impl<E: Engine> crate::driver::sealed::Sealed for EmbeddedDriver<E> {}

impl<E: Engine> Carrier for EmbeddedDriver<E> {
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, TargetError> {
        let mut session = self.engine.session()?;
        Ok(run_worker(&mut session, job, worker))
    }
}

impl<E: Engine> Driver for EmbeddedDriver<E> {
    fn carrier(&self, _job: &Job) -> &dyn Carrier {
        self
    }

    fn describe(&self, kind: OpKind) -> String {
        self.engine.describe(kind)
    }
}
