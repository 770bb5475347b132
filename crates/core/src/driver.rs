//! The contract between the runner and a target's driver.
//!
//! A driver knows how to talk to one kind of target; the harness
//! ([`crate::harness`]) knows how to time. A driver is one of three things,
//! each run by one I/O loop under the same harness:
//!
//! - a byte protocol: a [`Codec`] (bytes in, bytes out, no I/O, no clock)
//!   plus a [`Connector`], run by [`crate::net`] ([`crate::net::CodecDriver`]);
//! - a client library: a [`crate::session::Session`] per client, run by
//!   [`crate::async_loop`];
//! - an in-process engine: a [`crate::session::Session`] whose calls never
//!   wait, run by [`crate::embedded`].
//!
//! A [`Driver`] only says which loop carries a job ([`Driver::carrier`],
//! a [`Carrier`], which only core implements) and the runner runs it: no
//! driver reads the clock, records or loops.

use std::net::TcpStream;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::error::TargetError;
use crate::plan::Workload;
use crate::recorder::Interval;
use crate::value::ValuePool;
use crate::workload::{OpKind, ZipfianConstants};

/// What a reply said, as far as the runner cares. Ranges index the buffer
/// given to [`Codec::decode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A value was returned (a read hit) at `start..end`.
    Value {
        /// First byte of the value.
        start: usize,
        /// One past its last byte.
        end: usize,
    },
    /// No such record (read miss, delete of a missing key, or a write the
    /// target declined, such as memcached's NOT_STORED).
    Miss,
    /// Done as asked.
    Ok,
    /// The target answered with an error.
    ServerError,
    /// A Redis Cluster node sent the request elsewhere (`MOVED`, `ASK`):
    /// it did nothing, and the request goes again to the node named.
    Redirect(crate::slots::Redirect),
    /// The first request of the operation did not do it, and its second
    /// request must (HandlerSocket's set: the update found no row, so an
    /// insert follows). Only from codecs whose [`Codec::FOLLOWS_UP`] says
    /// so; the loop then sends [`Codec::encode_follow_up`] on the same
    /// connection and the operation completes with its reply.
    FollowUp,
}

/// Result of trying to decode one reply from the front of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The buffer holds no whole reply yet.
    Incomplete,
    /// A whole reply of `len` bytes.
    Complete {
        /// Bytes the reply took.
        len: usize,
        /// What it said.
        reply: Reply,
    },
    /// The bytes are not a reply of this protocol.
    Invalid,
}

/// Numbers the server gave one connection that its requests must carry
/// (MySQL's prepared statement ids); zeros for protocols without any.
pub type Handles = [u32; 4];

/// One record of a batched load's request: its key, and the value as the
/// header and payload [`Codec::encode`] takes for a write.
#[derive(Clone, Copy, Debug)]
pub struct BatchRow<'v> {
    /// The record's key.
    pub key: crate::keys::Key,
    /// The value's header.
    pub header: [u8; crate::value::HEADER_LEN],
    /// The rest of the value.
    pub payload: &'v [u8],
}

/// One operation as its codec encodes it: the kind, the key, and for a
/// write the value as a header and a payload (both empty otherwise).
#[derive(Clone, Copy, Debug)]
pub struct WireOp<'a> {
    /// What the operation does.
    pub kind: OpKind,
    /// The record's key.
    pub key: &'a [u8],
    /// The value's header (empty unless the operation writes a value).
    pub header: &'a [u8],
    /// The rest of the value.
    pub payload: &'a [u8],
    /// For a scan, the most records it reads (0 otherwise).
    pub limit: u32,
    /// For an update of one field of a record of several, on a protocol
    /// that keeps fields apart ([`Codec::KEEPS_FIELDS`]): which field its
    /// value is.
    pub field: u32,
}

impl<'a> WireOp<'a> {
    /// `kind` on `key`, writing the value `header` then `payload`.
    #[inline]
    pub fn new(kind: OpKind, key: &'a [u8], header: &'a [u8], payload: &'a [u8]) -> Self {
        WireOp {
            kind,
            key,
            header,
            payload,
            limit: 0,
            field: 0,
        }
    }
}

/// A wire protocol: encodes requests into a buffer and decodes replies in
/// place. Implementations hold no per-connection state, allocate nothing
/// per call (beyond growing `out` to its high-water mark) and never read
/// the clock.
pub trait Codec: Send + Sync + 'static {
    /// Appends the request for `op` to `out`, on a connection the server
    /// gave `handles` (only protocols with per-connection numbers look at
    /// them). Implementations are `#[inline(always)]`: inlined in the loop,
    /// the key's fixed length folds into the encoding (measured: 38 fewer
    /// instructions per Redis GET than a call).
    fn encode(&self, handles: &Handles, op: WireOp, out: &mut Vec<u8>);
    /// Whether [`Codec::encode_batch`] is there: the protocol can write
    /// many records in one request (a batched load, `--batch`).
    const BATCHES: bool = false;
    /// Appends one request that writes every record of `rows` (at least
    /// one), on a connection the server gave `handles`; its reply is read by
    /// [`Codec::decode_batch`]. The loop calls it only when
    /// [`Codec::BATCHES`] says so.
    #[inline]
    fn encode_batch(&self, handles: &Handles, rows: &[BatchRow], out: &mut Vec<u8>) {
        let _ = (handles, rows, out);
    }
    /// Decodes the reply at the front of `buf` to a request of
    /// [`Codec::encode_batch`]: by default, a write's.
    #[inline]
    fn decode_batch(&self, buf: &[u8]) -> Decoded {
        self.decode(buf, OpKind::Set)
    }
    /// Decodes the reply at the front of `buf` to a request of `kind`.
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded;
    /// Whether values travel escaped, so that a [`Reply::Value`] must go
    /// through [`Codec::unescape_value`] before it is checked. Known at
    /// compile time: protocols that send values as they are pay nothing.
    const ESCAPES_VALUES: bool = false;
    /// Turns a value [`Reply::Value`] located, as it stands on the wire,
    /// into the bytes written, in place (a protocol that escapes bytes
    /// only shrinks them); returns their length. The loop calls it on bytes
    /// it is about to consume, when [`Codec::ESCAPES_VALUES`] says so.
    #[inline]
    fn unescape_value(&self, value: &mut [u8]) -> usize {
        value.len()
    }
    /// Whether the protocol keeps a record's fields apart (a Redis hash):
    /// with records of several fields, a write of the whole record gets
    /// the record as its payload (no header), an update and a
    /// read-modify-write's write get one field ([`WireOp::field`]), and a
    /// read's reply, once through [`Codec::unescape_value`], is the whole
    /// record. Protocols that do not keep records as one value, which an
    /// update of one field reads and writes back whole.
    const KEEPS_FIELDS: bool = false;
    /// Whether the protocol scans ([`Codec::scan_rows`] is there): a
    /// scan's reply is then a [`Reply::Value`] holding its records.
    /// Known at compile time: protocols that do not pay nothing.
    const SCANS: bool = false;
    /// Appends the records of a scan's reply, `value` being what its
    /// [`Reply::Value`] located, to `out` as
    /// [`crate::scan::push_row`] writes them (keys and values as written);
    /// `false` when they are not well formed.
    #[inline]
    fn scan_rows(&self, value: &[u8], out: &mut Vec<u8>) -> bool {
        let _ = (value, out);
        false
    }
    /// What the request for `kind` looks like, for the report.
    fn describe(&self, kind: OpKind) -> String;
    /// Whether an operation may need a second request ([`Reply::FollowUp`]).
    /// Known at compile time: protocols that never do pay nothing.
    const FOLLOWS_UP: bool = false;
    /// Appends the second request of an operation of `kind` on `key`
    /// whose first reply was [`Reply::FollowUp`]; `header` and `payload`
    /// are its value, as for [`Codec::encode`].
    #[inline]
    fn encode_follow_up(
        &self,
        handles: &Handles,
        kind: OpKind,
        key: &[u8],
        header: &[u8],
        payload: &[u8],
        out: &mut Vec<u8>,
    ) {
        let _ = (handles, kind, key, header, payload, out);
    }
    /// Decodes the reply to a request of [`Codec::encode_follow_up`].
    #[inline]
    fn decode_follow_up(&self, buf: &[u8], kind: OpKind) -> Decoded {
        self.decode(buf, kind)
    }
}

/// Opens connections to a network target. Called once per client at the
/// start and again after a connection is lost; blocks the loop meanwhile,
/// so it keeps to its deadline.
pub trait Connector: Send + Sync {
    /// A connected stream on which any handshake (AUTH, …) is done, or an
    /// error (`TimedOut` when the server did not finish in time) within
    /// about `within`.
    fn connect(&self, within: std::time::Duration) -> std::io::Result<Connected>;
}

/// A connection a [`Connector`] opened.
pub struct Connected {
    /// The stream, its handshake done.
    pub stream: Stream,
    /// What the server numbered for this connection.
    pub handles: Handles,
}

impl<S: Into<Stream>> From<S> for Connected {
    fn from(stream: S) -> Self {
        Connected {
            stream: stream.into(),
            handles: Handles::default(),
        }
    }
}

/// A connection's byte stream: TCP, or a Unix domain socket to a server
/// on this machine (no TCP/IP stack between the two, so each message costs
/// the kernel less; what pgbench uses by default).
pub enum Stream {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A Unix domain stream socket.
    Unix(UnixStream),
}

impl Stream {
    /// Switches the socket to non-blocking reads and writes (or back).
    pub fn set_nonblocking(&self, on: bool) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
        }
    }

    /// Bounds each blocking read (`None`: no bound).
    pub fn set_read_timeout(&self, t: Option<std::time::Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// Bounds each blocking write (`None`: no bound).
    pub fn set_write_timeout(&self, t: Option<std::time::Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }
}

impl From<TcpStream> for Stream {
    fn from(s: TcpStream) -> Self {
        Stream::Tcp(s)
    }
}

impl From<UnixStream> for Stream {
    fn from(s: UnixStream) -> Self {
        Stream::Unix(s)
    }
}

impl std::io::Read for Stream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl std::io::Write for Stream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::os::fd::AsRawFd for Stream {
    #[inline]
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// Which job a worker runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// Write every record once (ids split between clients), no warm-up.
    Load,
    /// Warm-up, then the measured phase.
    Measure,
    /// The durability check's read-back: every id in [`JobInputs::read_back`]
    /// read once, split between clients, no warm-up.
    ReadBack,
}

/// What a run hands each of its jobs: the workload and what its features
/// made for it before the jobs (a replica's acknowledged versions, the
/// insert counter, a trace), made once by the run and copied into each
/// job, with the parts a job does not take left out.
#[derive(Clone, Copy)]
pub struct JobInputs<'a> {
    /// The workload of this job.
    pub workload: &'a Workload,
    /// Seed of the plan.
    pub seed: u64,
    /// Where value payloads come from.
    pub pool: &'a ValuePool,
    /// Zipfian constants when the key distribution is zipfian.
    pub zipf: Option<ZipfianConstants>,
    /// Set on Ctrl-C: stop making requests, finish those in flight.
    pub stop: &'a AtomicBool,
    /// The mark of this run in the version field of the durability check's
    /// values, so that a value another run left is told from one this run
    /// wrote.
    pub nonce: u32,
    /// Record ids a read-back job reads (empty otherwise).
    pub read_back: &'a [u64],
    /// A replication run's acknowledged versions, against which reads are
    /// checked for staleness.
    pub acked: Option<&'a crate::stale::AckedVersions>,
    /// The run's insert counter, when inserts are in the mix.
    pub inserts: Option<&'a crate::inserts::InsertKeys>,
    /// The trace a replay sends (the measure job of a replay).
    pub replay: Option<&'a crate::replay::Trace>,
}

impl<'a> JobInputs<'a> {
    /// The inputs of a plain job of `workload`: its Zipfian constants,
    /// nothing any feature adds.
    pub fn plain(
        workload: &'a Workload,
        seed: u64,
        pool: &'a ValuePool,
        stop: &'a AtomicBool,
    ) -> Self {
        JobInputs {
            workload,
            seed,
            pool,
            zipf: ZipfianConstants::of(workload.key_distribution, workload.records),
            stop,
            nonce: 0,
            read_back: &[],
            acked: None,
            inserts: None,
            replay: None,
        }
    }

    /// The inputs of the load before the measured job, of `workload`: what
    /// only a measured job takes (acknowledged versions, inserts, a trace)
    /// left out.
    pub fn for_load(self, workload: &'a Workload) -> Self {
        JobInputs {
            workload,
            acked: None,
            inserts: None,
            replay: None,
            ..self
        }
    }

    /// The inputs of a read-back of `ids`, stopped by `stop`.
    pub fn for_read_back(self, ids: &'a [u64], stop: &'a AtomicBool) -> Self {
        JobInputs {
            read_back: ids,
            stop,
            ..self.for_load(self.workload)
        }
    }
}

/// Everything a worker needs to run its share of a job. Shared read-only by
/// all workers of the job.
pub struct Job<'a> {
    /// Load or measure.
    pub kind: JobKind,
    /// What the run handed the job.
    pub inputs: JobInputs<'a>,
    /// Time zero of the job; every worker measures from it.
    pub t0: Instant,
    /// Where workers send their per-second intervals.
    pub intervals: Sender<Interval>,
    /// Where the warm-up ends: fixed, or moved by the collector once the
    /// job is steady (`--warmup auto`).
    pub warmup: WarmupEnd,
}

impl<'a> Job<'a> {
    /// A `kind` job of `inputs`, starting now, whose workers send their
    /// intervals to `intervals`.
    pub fn new(kind: JobKind, inputs: JobInputs<'a>, intervals: Sender<Interval>) -> Self {
        Job {
            kind,
            warmup: WarmupEnd::of(kind, inputs.workload),
            inputs,
            t0: Instant::now(),
            intervals,
        }
    }
}

/// The end of a measure job's warm-up, ns since the job's start. Fixed,
/// or (`--warmup auto`) at its bound until the collector finds the job
/// steady and moves it ([`WarmupEnd::settle`]); workers follow it from
/// their harness.
#[derive(Debug)]
pub struct WarmupEnd {
    end_ns: AtomicU64,
    auto: bool,
    /// Seconds the collector has judged, plus one (0: none yet), so that a
    /// loop on simulated time can wait for each judgement and stay
    /// deterministic; told to the waiting workers by `judgement`.
    judged: Mutex<u32>,
    judgement: Condvar,
    /// Set once the end has moved, or can no longer.
    settled: AtomicBool,
    /// The workers run on simulated time (the mock): the end is put at
    /// the judged second's end, not after the wall clock's now.
    simulated: AtomicBool,
}

impl WarmupEnd {
    /// The warm-up of a `kind` job of `workload`: none for a load or a
    /// read-back; the workload's, or its bound when found as the job runs.
    pub fn of(kind: JobKind, workload: &Workload) -> Self {
        let (end_s, auto) = match kind {
            JobKind::Load | JobKind::ReadBack => (0.0, false),
            JobKind::Measure => (workload.warmup_bound_s(), workload.warmup_auto),
        };
        Self {
            end_ns: AtomicU64::new((end_s * 1e9) as u64),
            auto,
            judged: Mutex::new(0),
            judgement: Condvar::new(),
            settled: AtomicBool::new(!auto),
            simulated: AtomicBool::new(false),
        }
    }

    /// The workers run on simulated time.
    pub fn simulate(&self) {
        self.simulated.store(true, Ordering::Relaxed);
    }

    /// Whether the workers run on simulated time.
    pub fn simulated(&self) -> bool {
        self.simulated.load(Ordering::Relaxed)
    }

    /// The end, ns since the job's start.
    #[inline]
    pub fn end_ns(&self) -> u64 {
        self.end_ns.load(Ordering::Relaxed)
    }

    /// Whether the end is found as the job runs and may still move.
    #[inline]
    pub fn may_move(&self) -> bool {
        self.auto && !self.settled.load(Ordering::Acquire)
    }

    /// Moves the end to `ns` (never later than its bound) and keeps it.
    pub fn settle(&self, ns: u64) {
        self.end_ns.fetch_min(ns, Ordering::Relaxed);
        self.settled.store(true, Ordering::Release);
        let _judged = self.judged.lock().unwrap_or_else(|e| e.into_inner());
        self.judgement.notify_all();
    }

    /// The collector has judged second `second`.
    pub fn judged(&self, second: u32) {
        let mut judged = self.judged.lock().unwrap_or_else(|e| e.into_inner());
        *judged = (*judged).max(second.saturating_add(1));
        self.judgement.notify_all();
    }

    /// Waits until second `second` is judged or the end can no longer
    /// move; at most `patience`, so that a collector that never judges
    /// (it has no second of some worker) cannot hold the job.
    pub fn wait_judged(&self, second: u32, patience: std::time::Duration) {
        let judged = self.judged.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .judgement
            .wait_timeout_while(judged, patience, |judged| {
                self.may_move() && *judged <= second
            });
    }
}

impl Job<'_> {
    /// Number of phases the job records (load: 1; measure: warm-up, measure).
    pub fn phase_count(&self) -> usize {
        match self.kind {
            JobKind::Load | JobKind::ReadBack => 1,
            JobKind::Measure => 2,
        }
    }

    /// Global indices of the clients worker `worker` runs.
    pub fn clients_of(&self, worker: usize) -> impl Iterator<Item = u32> {
        let t = self.inputs.workload.threads.max(1);
        (0..self.inputs.workload.clients).filter(move |c| c % t == worker as u32)
    }

    /// Record ids client `client` writes in a load job.
    pub fn load_range(&self, client: u32) -> Range<u64> {
        let to = self
            .inputs
            .workload
            .load_to
            .unwrap_or(self.inputs.workload.records)
            .min(self.inputs.workload.records);
        let from = self.inputs.workload.load_from.min(to);
        let n = (to - from) as u128;
        let c = self.inputs.workload.clients as u128;
        let i = client as u128;
        (from + (n * i / c) as u64)..(from + (n * (i + 1) / c) as u64)
    }

    /// Operations client `client` measures in an operation-count run.
    pub fn quota(&self, client: u32) -> u64 {
        match self.inputs.workload.ops {
            None => self.inputs.workload.ops_per_client.unwrap_or(u64::MAX),
            Some(ops) => {
                let c = self.inputs.workload.clients as u64;
                ops / c + u64::from((client as u64) < ops % c)
            }
        }
    }

    /// End of the warm-up, ns since `t0` (0 for a load job).
    pub fn warmup_end_ns(&self) -> u64 {
        match self.kind {
            JobKind::Load | JobKind::ReadBack => 0,
            JobKind::Measure => self.warmup.end_ns(),
        }
    }

    /// The phase a request meant to start at `intended` belongs to: 0 for
    /// the load or the warm-up, 1 for the measured phase.
    #[inline]
    pub fn phase_at(&self, intended: u64) -> u8 {
        match self.kind {
            JobKind::Load | JobKind::ReadBack => 0,
            JobKind::Measure => u8::from(intended >= self.warmup_end_ns()),
        }
    }

    /// End of the measured phase in a timed run, ns since `t0`.
    pub fn measure_end_ns(&self) -> u64 {
        match (self.kind, self.inputs.workload.duration_s) {
            (JobKind::Measure, Some(d)) => self.warmup_end_ns() + (d * 1e9) as u64,
            _ => u64::MAX,
        }
    }
}

pub use crate::recorder::WorkerOutput;

/// A target's driver, as the runner uses it. Shared by all worker threads.
pub trait Driver: Send + Sync {
    /// What carries `job`'s requests to the target: one of core's loops,
    /// made ready by the driver (a codec and its connectors, a way to open
    /// a client library's session, an engine). The runner runs it; a
    /// driver cannot loop or time on its own.
    fn carrier(&self, job: &Job) -> &dyn Carrier;

    /// What is sent for each operation kind, for the report.
    fn describe(&self, kind: OpKind) -> String;
}

/// One of core's loops, ready to carry a job's requests: bakeoff's network
/// loop over a codec ([`crate::net::CodecDriver`]), the async loop over a
/// client library's sessions ([`crate::async_loop::Sessions`]), the
/// in-process loop over an engine ([`crate::embedded::InProcess`]), or
/// the scripted loop of the test suite ([`crate::mock`]). Sealed: only
/// core's loops are carriers, so every target is timed by the same
/// harness.
pub trait Carrier: sealed::Sealed + Send + Sync {
    /// Runs worker `worker`'s share of `job` on the calling thread and
    /// returns what it measured. Errors are reserved for failures that make
    /// the whole job meaningless (no connection could ever be opened);
    /// failed operations are counted, not returned.
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, TargetError>;
}

pub(crate) mod sealed {
    /// Implemented by core's loops only (see [`super::Carrier`]).
    pub trait Sealed {}
}
