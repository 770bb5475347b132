//! The network load loop: many connections multiplexed on one thread,
//! driven by a [`Codec`], over io_uring (default where the kernel allows
//! it) or epoll.
//!
//! One loop serves every mode (closed or open loop; load, warm-up and
//! measure phases); the mode only changes when a request may be made and
//! what its intended start is. Per operation the loop makes one clock read
//! where the reply is parsed, patches the key and value into the request,
//! and allocates nothing: buffers grow to their high-water mark and stay.
//!
//! Syscalls. io_uring: one `io_uring_enter` per wake-up submits every send
//! and receive the wake-up produced, for all connections, and waits for the
//! next completions, so one system call serves many operations. epoll: one
//! `read` per readable connection per wake-up (all replies there are), one
//! `write` per connection per wake-up (the whole pipeline), one
//! `epoll_wait` per wake-up.
//!
//! Bytes move only through [`Loop::arm_recv`], [`Loop::on_readable`] and
//! [`Loop::kick_write`]; parsing, timing and request generation are the
//! same for both mechanisms.
//!
//! The loop is one, in this file; its seams live beside it: `backend`
//! (io_uring and epoll, the only code that talks to the kernel), `route`
//! (which node a request goes to, and redirections), `pacing` (an open
//! loop's wake-ups and spinning) and `conn` (one connection's state).
//!
//! Shards. A target of several nodes (client-side sharding) gives each
//! client one connection per node; a request goes on the connection of the
//! node its key hashes to ([`Ketama`]), and the client's pipeline depth
//! counts its requests on all of them. Connection `k` belongs to client
//! `k / nodes` and node `k % nodes`; with one node, connection and client
//! are the same index and nothing is hashed.
//!
//! Redis Cluster. Keys go by hash slot; a node that does not serve the
//! slot answers `MOVED` (the loop remembers the slot's new node, in this
//! worker) or `ASK` (this once, after `ASKING`), and the request goes
//! again, keeping its intended start and first send, so its latency
//! includes the detour. A redirected request counts as sent to the node
//! that served it, not the one that redirected it, so that each node's own
//! counters still equal what the loop says it sent there.

use std::collections::VecDeque;
use std::io::{ErrorKind as IoErrorKind, Read, Write};
use std::os::fd::AsRawFd;

use io_uring::{opcode, types, IoUring};

use crate::driver::{
    BatchRow, Carrier, Codec, Connected, Connector, Decoded, Driver, Handles, Job, JobKind, Reply,
    WireOp, WorkerOutput,
};
use crate::error::TargetError;
use crate::harness::{Harness, Leg, Outcome, Request, RECONNECT_EVERY_NS};
use crate::ketama::Ketama;
use crate::keys::{format_key, KeyNaming, KEY_LEN, KEY_MAX};
use crate::pacing::WakeLead;
use crate::slots::{key_slot, Redirect, SlotMap};

mod backend;
mod conn;
mod pacing;
mod route;

use backend::{Backend, SEND};
use conn::Conn;
use pacing::MAX_WAKE_LEAD_NS;
pub use route::Route;
use route::ASKING;

use crate::error::ConnectError;
use crate::harness::STOP_GRACE_NS;
use crate::plan::IoBackend;
use crate::recorder::{monotonic_ns, ErrorKind, IoLoop};
use crate::session::io_error_kind;
use crate::workload::{OpKind, OP_KINDS};

/// Longest a lost connection's new attempt may hold the loop: a server
/// that took longer to accept and greet is tried again next round.
const RECONNECT_WITHIN_NS: u64 = 1_000_000_000;
/// How often in-flight requests are checked against the timeout.
const TIMEOUT_CHECK_EVERY_NS: u64 = 10_000_000;

/// Runs worker `worker`'s share of `job` over the network with `codec`, on
/// the nodes `connectors` reach (requests sent as `route` says when there
/// are several).
pub(crate) fn run_worker<C: Codec>(
    codec: &C,
    connectors: &[Box<dyn Connector>],
    route: Option<&Route>,
    job: &Job,
    worker: usize,
) -> Result<WorkerOutput, TargetError> {
    // One node keeps the loop of one connection per client, with none of
    // the bookkeeping of several (monomorphised away).
    if connectors.len() > 1 {
        let mut lp = Loop::<C, true>::new(codec, connectors, route, job, worker)?;
        lp.run();
        Ok(lp.finish())
    } else {
        let mut lp = Loop::<C, false>::new(codec, connectors, route, job, worker)?;
        lp.run();
        Ok(lp.finish())
    }
}

/// `MULTI`: the target has several nodes (a connection per client and node).
struct Loop<'a, C: Codec, const MULTI: bool> {
    codec: &'a C,
    connectors: &'a [Box<dyn Connector>],
    route: Option<&'a Route>,
    /// Nodes, and so connections per client.
    nodes: usize,
    harness: Harness<'a>,
    /// One per client and node: `k = client * nodes + node`.
    conns: Vec<Conn>,
    /// Requests in flight per client, on all its connections.
    client_inflight: Vec<u32>,
    /// Requests sent per node and kind (several nodes only).
    node_sent: Vec<[u64; OP_KINDS]>,
    /// Redis Cluster: `MOVED` and `ASK` replies per node.
    node_redirects: Vec<[u64; 2]>,
    /// Redis Cluster: this worker's node of each slot.
    slot_owner: Vec<u16>,
    backend: Backend,
    backend_name: IoLoop,
    /// The key of the request being encoded: its first `key_len` bytes.
    key_buf: [u8; KEY_MAX],
    key_len: usize,
    /// How records are named.
    naming: KeyNaming,
    /// Fields per record (see [`crate::value::ValuePool::record`]).
    fields: u32,
    pipeline: usize,
    /// Records per request: a batched load's `--batch`, 1 otherwise.
    batch: usize,
    /// The rows of the batch being encoded (kept for its capacity).
    batch_rows: Vec<BatchRow<'a>>,
    /// An escaped value a read-modify-write's read checks, unescaped; a
    /// scan's records, as the harness checks them.
    scratch: Vec<u8>,
    timeout_ns: u64,
    next_timeout_check: u64,
    /// How late this thread's timed wake-ups come.
    wake: WakeLead,
    /// Spinning this thread may still do, ns (below zero: spun ahead of
    /// its share), and when it last earned some.
    spin_credit_ns: i64,
    spin_credit_at: u64,
    /// The job's `t0` on CLOCK_MONOTONIC, ns.
    t0_ns: u64,
    /// An open loop on io_uring that reads replies when it wakes to send
    /// rather than waking for them, timing each by the kernel's receive
    /// timestamp: one wake-up per send instead of two (see
    /// [`Loop::read_arrived`]). Off once the phase stops generating, so the
    /// last replies are read as they come.
    lazy: bool,
    /// CLOCK_REALTIME less job time, ns: turns the kernel's receive
    /// timestamps (on the real-time clock) into job time.
    real_minus_job_ns: i64,
}

/// CLOCK_REALTIME, ns.
fn realtime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Whether the read of read-modify-write `req`, whose reply `reply` is
/// the front of `buf`, went well, so that its write follows: the record
/// was there as bakeoff wrote it, or absent (YCSB writes it then too). A
/// failed or wrong read ends the operation, recorded as the read's
/// outcome. The reply is left as it is (an escaped value is unescaped in
/// `scratch`), for that outcome to be made from.
#[cold]
#[inline(never)]
fn read_went_well<C: Codec>(
    codec: &C,
    pool: &crate::value::ValuePool,
    fields: u32,
    scratch: &mut Vec<u8>,
    req: &Request,
    reply: Reply,
    buf: &[u8],
) -> bool {
    match reply {
        Reply::Miss => true,
        Reply::Value { start, end } if start <= end && end <= buf.len() => {
            if C::ESCAPES_VALUES {
                scratch.clear();
                scratch.extend_from_slice(&buf[start..end]);
                let n = codec.unescape_value(scratch);
                scratch.truncate(n);
                pool.verify_record(req.key, scratch, fields).is_ok()
            } else {
                pool.verify_record(req.key, &buf[start..end], fields)
                    .is_ok()
            }
        }
        _ => false,
    }
}

/// Keeps the record a read of a read-merge-write found (`reply`, the
/// front of `buf`) in `scratch`, for its write; empties it on a miss. An
/// escaped value is there already, unescaped by [`read_went_well`].
#[cold]
fn keep_read<C: Codec>(reply: Reply, buf: &[u8], scratch: &mut Vec<u8>) {
    match reply {
        Reply::Value { .. } if C::ESCAPES_VALUES => {}
        Reply::Value { start, end } => {
            scratch.clear();
            scratch.extend_from_slice(&buf[start..end]);
        }
        _ => scratch.clear(),
    }
}

impl<'a, C: Codec, const MULTI: bool> Loop<'a, C, MULTI> {
    fn new(
        codec: &'a C,
        connectors: &'a [Box<dyn Connector>],
        route: Option<&'a Route>,
        job: &'a Job<'a>,
        worker: usize,
    ) -> Result<Self, TargetError> {
        let nodes = connectors.len().max(1);
        let w = job.inputs.workload;
        let harness = Harness::new(job, worker);
        let pipeline = w.pipeline.max(1) as usize;
        let batch = match job.kind {
            JobKind::Load if w.batch > 1 && !C::BATCHES => {
                return Err(TargetError::Client(
                    "this target's protocol cannot load in batches; use --batch 1".into(),
                ))
            }
            JobKind::Load => w.batch.max(1) as usize,
            _ => 1,
        };
        let wcap = pipeline * (w.value_size.max() + 128) + 4096;
        // Room for a pipeline's replies; it grows (doubling) when a reply
        // is larger. Small to begin with: a crowd of 10000 connections
        // holds 10000 of these.
        let rcap = (pipeline * (w.value_size.max() + 128)).max(16 * 1024);
        let conns: Vec<Conn> = (0..harness.clients() * nodes)
            .map(|_| Conn::new(wcap, rcap, pipeline))
            .collect();
        let (backend, backend_name) = Backend::new(w.io, conns.len());
        if let Backend::Epoll { epfd, .. } = &backend {
            if *epfd < 0 {
                return Err(TargetError::Client(format!(
                    "epoll_create1 failed: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
        let clients = harness.clients();
        let mut harness = harness;
        if C::KEEPS_FIELDS {
            harness.keeps_fields();
        }
        let mut lp = Loop {
            codec,
            connectors,
            route: route.filter(|_| nodes > 1),
            nodes,
            harness,
            conns,
            client_inflight: vec![0; clients],
            node_sent: if nodes > 1 {
                vec![[0; OP_KINDS]; nodes]
            } else {
                Vec::new()
            },
            node_redirects: match route {
                Some(Route::Slots(_)) if nodes > 1 => vec![[0; 2]; nodes],
                _ => Vec::new(),
            },
            slot_owner: match route {
                Some(Route::Slots(map)) if nodes > 1 => map.owners(),
                _ => Vec::new(),
            },
            backend,
            backend_name,
            key_buf: [0; KEY_MAX],
            key_len: 0,
            naming: w.key_naming,
            fields: w.fields,
            pipeline,
            batch,
            batch_rows: Vec::with_capacity(if batch > 1 { batch } else { 0 }),
            scratch: Vec::new(),
            timeout_ns: (w.timeout_s * 1e9) as u64,
            next_timeout_check: 0,
            wake: WakeLead::of_tail(MAX_WAKE_LEAD_NS),
            spin_credit_ns: 0,
            spin_credit_at: 0,
            t0_ns: monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64),
            lazy: false,
            real_minus_job_ns: 0,
        };
        lp.lazy = lp.harness.open_loop() && matches!(lp.backend, Backend::Uring { .. });
        lp.real_minus_job_ns = realtime_ns() - lp.now() as i64;
        lp.connect_all()?;
        Ok(lp)
    }

    /// Connects every client up front; if none can connect the job
    /// fails. A server that let no connection through for a whole timeout
    /// is not asked again here (a stalled one would hold the job a timeout
    /// per client): the rest are left to the loop's reconnections.
    fn connect_all(&mut self) -> Result<(), TargetError> {
        let mut first_err = None;
        let mut deadline = self.now() + self.timeout_ns;
        for ci in 0..self.conns.len() {
            let left = deadline.saturating_sub(self.now());
            if left == 0 {
                break;
            }
            match self.connect_within(ci, left) {
                Ok(()) => deadline = self.now() + self.timeout_ns,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        // Those not connected have been gone since the start: after a
        // timeout of failed reconnections, their clients give up.
        let now = self.now();
        for c in self.conns.iter_mut().filter(|c| c.stream.is_none()) {
            c.dead_since.get_or_insert(now);
        }
        if !self.conns.is_empty() && self.conns.iter().all(|c| c.stream.is_none()) {
            let e = first_err.expect("a client failed to connect");
            return Err(
                ConnectError::new(io_error_kind(&e), format!("cannot connect: {e}")).into(),
            );
        }
        Ok(())
    }

    /// Writes the key of record `id` into `key_buf`.
    #[inline(always)]
    fn name_key(&mut self, id: u64) {
        if self.naming == KeyNaming::Bakeoff {
            let fixed: &mut [u8; KEY_LEN] = (&mut self.key_buf[..KEY_LEN])
                .try_into()
                .expect("KEY_LEN <= KEY_MAX");
            format_key(id, fixed);
            self.key_len = KEY_LEN;
        } else {
            self.name_key_otherwise(id);
        }
    }

    /// [`Loop::name_key`] for namings other than bakeoff's.
    #[inline(never)]
    fn name_key_otherwise(&mut self, id: u64) {
        self.key_len = self.naming.write(id, &mut self.key_buf);
    }

    /// Nanoseconds since the job's time zero: one vDSO clock read and a
    /// subtraction (cheaper than `Instant::elapsed`, on the same clock).
    #[inline]
    fn now(&self) -> u64 {
        monotonic_ns().saturating_sub(self.t0_ns)
    }

    /// Opens client `ci`'s connection, waiting at most `within_ns` for the
    /// connection and its handshake: the loop thread waits with it.
    fn connect_within(&mut self, ci: usize, within_ns: u64) -> std::io::Result<()> {
        let within = std::time::Duration::from_nanos(within_ns);
        let Connected { stream, handles } = self.connectors[ci % self.nodes].connect(within)?;
        stream.set_nonblocking(true)?;
        if let Backend::Epoll { epfd, .. } = &self.backend {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: ci as u64,
            };
            // SAFETY: registering a valid fd we own with our epoll instance.
            if unsafe { libc::epoll_ctl(*epfd, libc::EPOLL_CTL_ADD, stream.as_raw_fd(), &mut ev) }
                < 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        if self.lazy {
            let on: libc::c_int = 1;
            // SAFETY: setting an integer option on a socket we own.
            unsafe {
                libc::setsockopt(
                    stream.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_TIMESTAMPNS,
                    (&on as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
        }
        let c = &mut self.conns[ci];
        c.stream = Some(stream);
        c.handles = handles;
        c.reset_buffers();
        c.closing = false;
        c.dead_since = None;
        if !self.lazy {
            self.arm_recv(ci);
        }
        Ok(())
    }

    /// Whether client `ci` has room for a request: every connection of it
    /// is up (with one node, its connection) and its pipeline is not full.
    #[inline]
    fn has_room(&self, ci: usize) -> bool {
        if !MULTI {
            let c = &self.conns[ci];
            return c.usable() && c.inflight.len() < self.pipeline;
        }
        self.client_inflight[ci] < self.pipeline as u32
            && self.conns[self.conns_of(ci)].iter().all(Conn::usable)
    }

    /// The connections of client `ci`, one per node.
    #[inline(always)]
    fn conns_of(&self, ci: usize) -> std::ops::Range<usize> {
        if MULTI {
            ci * self.nodes..(ci + 1) * self.nodes
        } else {
            ci..ci + 1
        }
    }

    /// The client connection `k` belongs to.
    #[inline(always)]
    fn client_of(&self, k: usize) -> usize {
        if MULTI {
            k / self.nodes
        } else {
            k
        }
    }

    /// Encodes request `req` of client `ci` into the write buffer of the
    /// connection to its key's node.
    #[inline]
    fn issue(&mut self, ci: usize, req: Request) {
        let k = self.conn_for(ci, &req);
        self.encode_on(k, req);
    }

    /// A batched load: `first` and up to `batch - 1` records client `ci`
    /// may write after it, in one request. Out of line: only loads with
    /// `--batch` come here.
    #[inline(never)]
    fn issue_batch(&mut self, ci: usize, mut first: Request, now: u64) {
        self.batch_rows.clear();
        let mut key = first.key;
        loop {
            let (header, payload) = self.harness.value(ci, key);
            self.batch_rows.push(BatchRow {
                key: self.naming.key(key),
                header,
                payload,
            });
            if self.batch_rows.len() == self.batch {
                break;
            }
            // The records after the first ride on its request: drawn from
            // the stream, but not counted as requests of their own.
            let Some(next) = self.harness.begin_due(ci, now) else {
                break;
            };
            self.harness.not_sent(&next);
            key = next.key;
        }
        first.rows = self.batch_rows.len() as u32;
        let k = self.conn_for(ci, &first);
        let c = &mut self.conns[k];
        self.codec
            .encode_batch(&c.handles, &self.batch_rows, &mut c.wbuf);
        c.inflight.push_back(first);
    }

    /// Encodes `req` (its key in `key_buf`) on connection `k`.
    #[inline]
    fn encode_on(&mut self, k: usize, req: Request) {
        if self.naming == KeyNaming::Bakeoff {
            // bakeoff's keys have one length: known here, it folds into
            // the encoding (measured: about 90 instructions per Redis GET
            // fewer than a length read at run time).
            self.encode_key_of_len(k, req, KEY_LEN);
        } else {
            self.encode_named_on(k, req);
        }
    }

    /// [`Loop::encode_on`] for keys of any length (YCSB's naming).
    #[inline(never)]
    fn encode_named_on(&mut self, k: usize, req: Request) {
        self.encode_key_of_len(k, req, self.key_len);
    }

    /// Encodes `req`, its key the first `key_len` bytes of `key_buf`, on
    /// connection `k`.
    #[inline(always)]
    fn encode_key_of_len(&mut self, k: usize, req: Request, key_len: usize) {
        if self.fields > 1 {
            return self.encode_fields_on(k, req, key_len);
        }
        let key = &self.key_buf[..key_len];
        let c = &mut self.conns[k];
        if req.leg == Leg::Asking {
            c.wbuf.extend_from_slice(ASKING);
        }
        if req.kind.writes_value() {
            let (h, p) = self.harness.value(req.client as usize, req.key);
            self.codec
                .encode(&c.handles, WireOp::new(req.kind, key, &h, p), &mut c.wbuf);
        } else {
            self.codec.encode(
                &c.handles,
                WireOp {
                    // A scan's length; codecs that do not scan never read it.
                    limit: req.rows,
                    ..WireOp::new(req.kind, key, &[], &[])
                },
                &mut c.wbuf,
            );
        }
        c.inflight.push_back(req);
    }

    /// [`Loop::encode_key_of_len`] for records of several fields: a write
    /// writes the whole record, built in the client's buffer, and an
    /// update of one field reads the record first (see [`Leg::Merge`]).
    #[inline(never)]
    fn encode_fields_on(&mut self, k: usize, req: Request, key_len: usize) {
        let key = &self.key_buf[..key_len];
        let c = &mut self.conns[k];
        if req.leg == Leg::Asking {
            c.wbuf.extend_from_slice(ASKING);
        }
        let op = if req.kind == OpKind::Update && C::KEEPS_FIELDS {
            // One field, as it is.
            let (field, h, p) = self.harness.field(req.client as usize, req.key);
            let c = &mut self.conns[k];
            let op = WireOp {
                field: field as u32,
                ..WireOp::new(OpKind::Update, key, &h, p)
            };
            self.codec.encode(&c.handles, op, &mut c.wbuf);
            c.inflight.push_back(req);
            return;
        } else if req.kind == OpKind::Update {
            WireOp::new(OpKind::Get, key, &[], &[])
        } else if req.kind.writes_value() {
            let record = self.harness.record(req.client as usize, req.key);
            WireOp::new(req.kind, key, &[], record)
        } else {
            WireOp {
                limit: req.rows,
                ..WireOp::new(req.kind, key, &[], &[])
            }
        };
        self.codec.encode(&c.handles, op, &mut c.wbuf);
        c.inflight.push_back(req);
    }

    /// The first reply to `req` on connection `k` asked for its second
    /// request: it goes on the same connection, and `req` stays in flight
    /// (its clock still running from its intended start) until that
    /// request's reply. Out of line: only codecs that follow up come here.
    #[inline(never)]
    fn follow_up(&mut self, k: usize, mut req: Request) {
        req.leg = Leg::FollowUp;
        self.harness.followed_up(&req);
        self.name_key(req.key);
        let c = &mut self.conns[k];
        let key = &self.key_buf[..self.key_len];
        if self.fields > 1 {
            let record = self.harness.record(req.client as usize, req.key);
            let kind = req.kind.write();
            self.codec
                .encode_follow_up(&c.handles, kind, key, &[], record, &mut c.wbuf);
        } else {
            let (h, p) = self.harness.value_again(req.client as usize, req.key);
            let kind = req.kind.write();
            self.codec
                .encode_follow_up(&c.handles, kind, key, &h, p, &mut c.wbuf);
        }
        c.inflight.push_back(req);
    }

    /// The read of read-modify-write `req` on connection `k` went well:
    /// its write goes on the same connection, `req` staying in flight, its
    /// clock running from its intended start, until the write's reply.
    /// Out of line: only read-modify-writes come here.
    #[inline(never)]
    fn modify(&mut self, k: usize, mut req: Request) {
        req.leg = Leg::Modify;
        self.harness.followed_up(&req);
        if MULTI && !self.node_sent.is_empty() {
            // Its node's count of sets, for the per-node checks.
            self.node_sent[k % self.nodes][OpKind::Set as usize] += 1;
        }
        self.name_key(req.key);
        let c = &mut self.conns[k];
        let key = &self.key_buf[..self.key_len];
        let field_len = self.harness.job().inputs.workload.field_len();
        let whole = self.fields as usize * field_len;
        if self.fields > 1 && C::KEEPS_FIELDS {
            // One field, as it is.
            let (field, h, p) = self.harness.field(req.client as usize, req.key);
            let op = WireOp {
                field: field as u32,
                ..WireOp::new(OpKind::Update, key, &h, p)
            };
            self.codec.encode(&c.handles, op, &mut c.wbuf);
        } else if self.fields > 1 && self.scratch.len() == whole {
            // The record read, its one field written anew: a
            // read-merge-write of one field.
            let (f, h, p) = self.harness.field(req.client as usize, req.key);
            let at = f * field_len;
            self.scratch[at..at + h.len()].copy_from_slice(&h);
            self.scratch[at + h.len()..at + field_len].copy_from_slice(p);
            let op = WireOp::new(OpKind::Set, key, &[], &self.scratch);
            self.codec.encode(&c.handles, op, &mut c.wbuf);
        } else if self.fields > 1 {
            // No record there: all of it is written.
            let record = self.harness.record(req.client as usize, req.key);
            let op = WireOp::new(OpKind::Set, key, &[], record);
            self.codec.encode(&c.handles, op, &mut c.wbuf);
        } else {
            let (h, p) = self.harness.value(req.client as usize, req.key);
            let op = WireOp::new(OpKind::Set, key, &h, p);
            self.codec.encode(&c.handles, op, &mut c.wbuf);
        }
        c.inflight.push_back(req);
    }

    /// Makes every request client `ci` may make at `now`.
    fn fill(&mut self, ci: usize, now: u64) {
        loop {
            if !self.has_room(ci) {
                return;
            }
            let Some(req) = self.harness.begin_due(ci, now) else {
                return;
            };
            if self.batch > 1 {
                self.issue_batch(ci, req, now);
            } else {
                self.issue(ci, req);
            }
        }
    }

    /// Starts sending what client `ci` has buffered, on each of its
    /// connections.
    #[inline]
    fn kick_client(&mut self, ci: usize, now: u64) {
        if !MULTI {
            return self.kick_write(ci, now);
        }
        for k in self.conns_of(ci) {
            self.kick_write(k, now);
        }
    }

    /// Starts sending what is buffered for `ci`: epoll writes it now (one
    /// `write`); io_uring queues one send for the next submission. Small
    /// enough to inline where replies are handled: epoll's write and an
    /// open loop's immediate send are out of line.
    #[inline]
    fn kick_write(&mut self, ci: usize, now: u64) {
        let c = &mut self.conns[ci];
        if !c.usable() {
            return;
        }
        if c.spos == c.sending.len() {
            if c.wbuf.is_empty() {
                return;
            }
            c.sending.clear();
            c.spos = 0;
            std::mem::swap(&mut c.wbuf, &mut c.sending);
        }
        if self.lazy && !self.conns[ci].send_inflight && self.send_now(ci) {
            return;
        }
        let c = &mut self.conns[ci];
        match &mut self.backend {
            Backend::Uring { ring, .. } => {
                if c.send_inflight {
                    return;
                }
                let fd = c.stream.as_ref().expect("usable").as_raw_fd();
                let rest = &c.sending[c.spos..];
                let e = opcode::Send::new(types::Fd(fd), rest.as_ptr(), rest.len() as u32)
                    .build()
                    .user_data(((ci as u64) << 1) | SEND);
                Backend::push(ring, e);
                c.send_inflight = true;
            }
            Backend::Epoll { .. } => self.write_now(ci, now),
        }
    }

    /// Every request in flight on `ci` fails with `kind`; the connection is
    /// closed and retried later.
    fn fail(&mut self, ci: usize, kind: ErrorKind, now: u64) {
        while let Some(f) = self.conns[ci].inflight.pop_front() {
            if MULTI {
                self.client_inflight[ci / self.nodes] -= 1;
            }
            self.harness.complete(&f, Outcome::Failed(kind), now);
        }
        let c = &mut self.conns[ci];
        c.retry_at = now + RECONNECT_EVERY_NS;
        c.dead_since.get_or_insert(now);
        if c.recv_inflight || c.send_inflight {
            // The kernel still holds our buffers: shut the socket down so the
            // operations finish, and close once they have.
            if let Some(s) = &c.stream {
                // SAFETY: shutting down a socket we own.
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
            c.closing = true;
        } else {
            c.stream = None; // closing the fd also removes it from epoll
            c.closing = false;
            c.reset_buffers();
        }
    }

    /// `n` bytes arrived on `ci` (0 = closed by the peer): completes every
    /// whole reply and makes the requests that may follow.
    /// `ARRIVED`: they are timed by `arrived`, when the kernel received
    /// them (see [`Loop::read_arrived`]); otherwise each reply is timed as
    /// it is parsed. A parameter of the type, so that the loop's usual
    /// path pays nothing for it.
    fn on_bytes<const ARRIVED: bool>(&mut self, ci: usize, n: usize, now: u64, arrived: u64) {
        if n == 0 {
            return self.fail(ci, ErrorKind::Reset, now);
        }
        self.conns[ci].rend += n;
        loop {
            let c = &self.conns[ci];
            if c.rstart == c.rend {
                break;
            }
            let Some(&front) = c.inflight.front() else {
                // Bytes nobody asked for: the stream is out of step.
                return self.fail(ci, ErrorKind::Protocol, now);
            };
            let rstart = c.rstart;
            let buf = &c.rbuf[rstart..c.rend];
            if front.leg == Leg::Asking {
                match self.asking_answered(ci, front.kind) {
                    Decoded::Incomplete => break,
                    Decoded::Invalid => return self.fail(ci, ErrorKind::Protocol, now),
                    Decoded::Complete { .. } => continue,
                }
            }
            match self.decode_front(&front, buf) {
                Decoded::Incomplete => break,
                Decoded::Invalid => return self.fail(ci, ErrorKind::Protocol, now),
                Decoded::Complete {
                    len,
                    reply: Reply::Redirect(r),
                } if MULTI && !self.slot_owner.is_empty() => self.redirected(ci, front, r, len),
                Decoded::Complete {
                    len,
                    reply: Reply::FollowUp,
                } if C::FOLLOWS_UP && front.leg != Leg::FollowUp => {
                    self.consume_front(ci, len);
                    self.follow_up(ci, front);
                }
                Decoded::Complete { len, reply } => {
                    // One clock read per reply, where it is parsed; a
                    // reply read after it arrived is timed by its arrival.
                    let t = self.now();
                    let done = if ARRIVED { arrived.max(front.sent) } else { t };
                    if front.leg == Leg::Merge
                        && (front.kind == OpKind::ReadModifyWrite || reply != Reply::Miss)
                        && read_went_well(
                            self.codec,
                            self.harness.job().inputs.pool,
                            self.harness.job().inputs.workload.fields,
                            &mut self.scratch,
                            &front,
                            reply,
                            &buf[..len],
                        )
                    {
                        // Its read came back as it should: its write goes
                        // out, and it stays in flight. Decided before the
                        // outcome is made, so that the outcome goes once,
                        // straight to the harness.
                        self.write_after_read(ci, front, reply, len);
                        continue;
                    }
                    let outcome = match reply {
                        Reply::Ok if self.batch > 1 => Outcome::Rows(front.rows.into()),
                        Reply::Ok => Outcome::Ok,
                        Reply::Miss => Outcome::Miss,
                        // A follow-up asked for twice, or a redirection
                        // where no cluster is: the protocol is out of step.
                        Reply::FollowUp => Outcome::Failed(ErrorKind::Protocol),
                        Reply::ServerError | Reply::Redirect(_) => {
                            let said = &buf[..len];
                            self.harness
                                .failed_saying(&front, ErrorKind::ServerError, said);
                            Outcome::Failed(ErrorKind::ServerError)
                        }
                        Reply::Value { start, end } if end > len || start > end => {
                            Outcome::Failed(ErrorKind::Protocol)
                        }
                        Reply::Value { start, end } if C::SCANS && front.kind == OpKind::Scan => {
                            self.scratch.clear();
                            if self.codec.scan_rows(&buf[start..end], &mut self.scratch) {
                                Outcome::Scanned(&self.scratch)
                            } else {
                                Outcome::Failed(ErrorKind::Protocol)
                            }
                        }
                        Reply::Value { start, end } if C::ESCAPES_VALUES => {
                            // The reply is consumed below: its bytes may be
                            // rewritten in place.
                            let value = &mut self.conns[ci].rbuf[rstart + start..rstart + end];
                            let n = self.codec.unescape_value(value);
                            Outcome::Value(&value[..n])
                        }
                        Reply::Value { start, end } => Outcome::Value(&buf[start..end]),
                    };
                    self.harness.complete(&front, outcome, done);
                    self.consume_front(ci, len);
                    let client = self.client_of(ci);
                    if MULTI {
                        self.client_inflight[client] -= 1;
                    }
                    self.fill(client, t);
                }
            }
        }
        self.kick_client(self.client_of(ci), now);
    }

    /// Decodes the reply at the front of `buf` as the one `front`, the
    /// request in flight first, waits for: a batch's, its own, its second
    /// request's, or the read or write of a read-then-write.
    #[inline(always)]
    fn decode_front(&self, front: &Request, buf: &[u8]) -> Decoded {
        if self.batch > 1 {
            self.codec.decode_batch(buf)
        } else if front.leg == Leg::Only {
            self.codec.decode(buf, front.kind)
        } else if C::FOLLOWS_UP && front.leg == Leg::FollowUp {
            self.codec.decode_follow_up(buf, front.kind.write())
        } else if front.leg == Leg::Merge {
            self.codec.decode(buf, OpKind::Get)
        } else {
            // A read-modify-write's write.
            self.codec.decode(buf, OpKind::Set)
        }
    }

    /// The reply of `len` bytes to the front request on `ci` is read:
    /// both leave.
    #[inline(always)]
    fn consume_front(&mut self, ci: usize, len: usize) {
        let c = &mut self.conns[ci];
        c.rstart += len;
        c.inflight.pop_front();
    }

    /// The read of `front` on `ci` (its reply `reply`, `len` bytes at the
    /// front of the connection's buffer) went well: the record read is kept
    /// for a read-merge-write, and the write goes out. Out of line: only
    /// reads a write follows come here.
    #[inline(never)]
    fn write_after_read(&mut self, ci: usize, front: Request, reply: Reply, len: usize) {
        if self.fields > 1 {
            let c = &self.conns[ci];
            let read = &c.rbuf[c.rstart..c.rstart + len];
            keep_read::<C>(reply, read, &mut self.scratch);
        }
        self.consume_front(ci, len);
        self.modify(ci, front);
    }

    /// Redis Cluster: the node on `ci` answered `front` with redirection
    /// `r` (`len` bytes): it goes to the node named. Out of line:
    /// redirections are rare.
    #[inline(never)]
    fn redirected(&mut self, ci: usize, front: Request, r: Redirect, len: usize) {
        let c = &self.conns[ci];
        let named = &c.rbuf[c.rstart + r.start..c.rstart + r.end];
        let to = match self.route {
            Some(Route::Slots(map)) => map.node_named(named),
            _ => None,
        };
        let t = self.now();
        self.consume_front(ci, len);
        self.redirect(ci, front, r, to, t);
        self.fill(self.client_of(ci), t);
    }

    /// Redis Cluster: reads the reply to the `ASKING` before the front
    /// request on `ci`, which is then sent as it started.
    #[inline(never)]
    fn asking_answered(&mut self, ci: usize, kind: OpKind) -> Decoded {
        let c = &self.conns[ci];
        let decoded = self.codec.decode(&c.rbuf[c.rstart..c.rend], OpKind::Get);
        if let Decoded::Complete { len, .. } = decoded {
            let first = self.harness.first_leg(kind);
            let c = &mut self.conns[ci];
            c.rstart += len;
            c.inflight.front_mut().expect("front").leg = first;
        }
        decoded
    }

    fn check_timeouts(&mut self, now: u64) {
        self.next_timeout_check = now + TIMEOUT_CHECK_EVERY_NS;
        if self.lazy {
            // The real-time clock may have been set meanwhile.
            self.real_minus_job_ns = realtime_ns() - self.now() as i64;
        }
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if let Some(f) = c.inflight.front() {
                if now.saturating_sub(f.sent) > self.timeout_ns {
                    self.fail(ci, ErrorKind::Timeout, now);
                }
            }
        }
    }

    fn reconnect_due(&mut self, now: u64) {
        // A connection lost is opened again within the request timeout but
        // at most RECONNECT_WITHIN_NS, and after one attempt fails the
        // others wait for the next round: a stalled server holds the loop
        // (and its end of phase, and Ctrl-C) one short attempt per round,
        // not a timeout per client one after another.
        let within = self.timeout_ns.min(RECONNECT_WITHIN_NS);
        let mut failed = false;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if c.stream.is_some() || c.retry_at > now || !self.harness.generating() {
                continue;
            }
            if failed {
                // Not tried this round; gone for longer than the request
                // timeout, it gives up as a tried one would.
                let c = &mut self.conns[ci];
                c.retry_at = now + RECONNECT_EVERY_NS;
                if c.dead_since.is_some_and(|d| now - d > self.timeout_ns) {
                    self.harness.give_up(self.client_of(ci));
                }
                continue;
            }
            match self.connect_within(ci, within) {
                Ok(()) => {
                    let now = self.now();
                    let client = self.client_of(ci);
                    if self.has_room(client) {
                        self.harness.skip_missed(client, now);
                        self.fill(client, now);
                        self.kick_client(client, now);
                    }
                }
                Err(e) => {
                    failed = true;
                    let kind = if e.kind() == IoErrorKind::TimedOut {
                        ErrorKind::Timeout
                    } else {
                        ErrorKind::Refused
                    };
                    self.harness.connect_failed(now, kind);
                    let c = &mut self.conns[ci];
                    c.retry_at = now + RECONNECT_EVERY_NS;
                    // A target gone for longer than the request timeout takes
                    // this client's remaining work with it, so that counted
                    // runs end too.
                    if c.dead_since.is_some_and(|d| now - d > self.timeout_ns) {
                        self.harness.give_up(self.client_of(ci));
                    }
                }
            }
        }
    }

    /// Open loop: reads the replies that arrived (when the loop reads them
    /// as it wakes) and makes every request due at `now`.
    fn send_due(&mut self, now: u64) {
        if self.lazy {
            for k in 0..self.conns.len() {
                self.read_arrived(k, now);
            }
        }
        for ci in 0..self.client_inflight.len() {
            if self.harness.due(ci, now).is_none() {
                continue;
            }
            if self.has_room(ci) {
                self.fill(ci, now);
                self.kick_client(ci, now);
            } else if self.lazy {
                // Due, but its pipeline waits on a reply not yet here: wake
                // for that reply (the send is late, and its lag says so).
                for k in self.conns_of(ci) {
                    self.arm_recv(k);
                }
            }
        }
    }

    fn run(&mut self) {
        // This thread keeps an open loop's schedule (see crate::pacing).
        crate::pacing::least_timer_slack();
        let start = self.now();
        self.spin_credit_at = start;
        let clients = self.client_inflight.len();
        for ci in 0..clients {
            self.fill(ci, start);
            self.kick_client(ci, start);
        }
        // When a stop was asked for: requests still out get STOP_GRACE_NS,
        // then the loop ends without them (a stalled server would hold
        // Ctrl-C for the request timeout).
        let mut stop_asked_at: Option<u64> = None;
        loop {
            let now = self.now();
            let generating = self.harness.tick(now);
            if !generating && self.harness.stop_asked() {
                let at = *stop_asked_at.get_or_insert(now);
                if now.saturating_sub(at) > STOP_GRACE_NS {
                    break;
                }
            }
            if now >= self.next_timeout_check {
                self.check_timeouts(now);
                self.reconnect_due(now);
            }
            if self.lazy && !generating {
                // The last replies are read as they come.
                self.lazy = false;
                for k in 0..self.conns.len() {
                    self.arm_recv(k);
                }
            }
            if self.harness.open_loop() && generating {
                self.send_due(now);
            }
            let idle = if MULTI {
                self.client_inflight.iter().all(|&n| n == 0)
            } else {
                self.conns.iter().all(|c| c.inflight.is_empty())
            };
            if idle {
                let now = self.now();
                let more = (0..clients).any(|ci| self.harness.has_work_left(ci, now));
                if !more {
                    break;
                }
            }
            let (wait_ns, to_send) = self.wait_ns(now);
            if !to_send || wait_ns == 0 {
                self.wait_and_handle(wait_ns);
                continue;
            }
            self.wait_for_send(now, wait_ns);
        }
        self.drain_kernel();
    }

    fn finish(mut self) -> WorkerOutput {
        let now = self.now();
        let backend = std::mem::take(&mut self.backend_name);
        let mut out = self.harness.finish(now, backend);
        out.node_sent = std::mem::take(&mut self.node_sent);
        out.node_redirects = std::mem::take(&mut self.node_redirects);
        out
    }
}

/// A driver for a byte protocol: a codec and a way to connect to each
/// node, run by the network loop under the harness.
pub struct CodecDriver<C: Codec> {
    /// The protocol.
    pub codec: C,
    /// How connections to each node are opened (and authenticated): one
    /// for a single server.
    pub connectors: Vec<Box<dyn Connector>>,
    /// Which node a request goes to, when there are several.
    pub route: Option<Route>,
}

impl<C: Codec> CodecDriver<C> {
    /// A driver for one server.
    pub fn new(codec: C, connector: Box<dyn Connector>) -> Self {
        CodecDriver {
            codec,
            connectors: vec![connector],
            route: None,
        }
    }

    /// A driver for several nodes: requests sent to `connectors`' nodes
    /// as `route` says.
    pub fn routed(codec: C, connectors: Vec<Box<dyn Connector>>, route: Route) -> Self {
        CodecDriver {
            codec,
            connectors,
            route: Some(route),
        }
    }
}

impl<C: Codec> crate::driver::sealed::Sealed for CodecDriver<C> {}

impl<C: Codec> Carrier for CodecDriver<C> {
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, TargetError> {
        run_worker(
            &self.codec,
            &self.connectors,
            self.route.as_ref(),
            job,
            worker,
        )
    }
}

impl<C: Codec> Driver for CodecDriver<C> {
    fn carrier(&self, _job: &Job) -> &dyn Carrier {
        self
    }

    fn describe(&self, kind: OpKind) -> String {
        self.codec.describe(kind)
    }
}
