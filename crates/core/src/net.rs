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
    BatchRow, Codec, Connected, Connector, Decoded, Driver, Handles, Job, JobKind, Reply,
    WorkerOutput,
};
use crate::error::TargetError;
use crate::harness::{
    format_key, key_of, Harness, Leg, Outcome, Request, KEY_LEN, RECONNECT_EVERY_NS,
};
use crate::ketama::Ketama;
use crate::pacing::WakeLead;
use crate::slots::{key_slot, Redirect, SlotMap};

/// Which node a request goes to, when a target has several.
#[derive(Clone, Debug)]
pub enum Route {
    /// Keys spread by consistent hashing (shards).
    Ring(Ketama),
    /// Writes to node 0 (a primary), reads to node `reads` (the primary
    /// itself, or a replica).
    ReadWrite {
        /// The node reads go to.
        reads: usize,
    },
    /// Redis Cluster: each key to the node serving its hash slot, as the
    /// map says at the start and `MOVED` replies teach.
    Slots(SlotMap),
}
use crate::plan::IoBackend;
use crate::recorder::{monotonic_ns, ErrorKind};
use crate::session::{io_error_kind, ConnectError};
use crate::workload::{OpKind, OP_KINDS};

/// Redis Cluster's `ASKING`, sent before a request an `ASK` redirected.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// Redirections of one request before it counts as failed.
const MAX_REDIRECTS: u8 = 5;

/// The most an open loop wakes before a send time, ns.
const MAX_WAKE_LEAD_NS: u64 = 100_000;

/// The last stretch before a send time spent spinning rather than
/// waiting, beyond the learnt lateness of wake-ups, ns.
const SPIN_NS: u64 = 3_000;

/// The most of a worker's time spent spinning before send times: an
/// eighth (plus the last SPIN_NS before each send). Past it the thread
/// sleeps until SPIN_NS before the send time and its lateness shows in the
/// send lag, so that a fast open loop does not burn a
/// core (and the target's CPU on a shared machine) to look punctual.
const SPIN_SHARE_DIVISOR: u64 = 8;

/// Spin time saved up at most, ns: a quiet stretch buys no long burst.
const MAX_SPIN_CREDIT_NS: u64 = 5_000_000;

/// How often in-flight requests are checked against the timeout.
const TIMEOUT_CHECK_EVERY_NS: u64 = 10_000_000;

/// `epoll_wait` for at most `wait_ns`: with a nanosecond timeout
/// (`epoll_pwait2`, Linux 5.11). A millisecond timeout rounded down would
/// turn every shorter wait of an open loop into a busy poll; where
/// `epoll_pwait2` fails (an older kernel, a seccomp filter), that busy poll
/// is what remains, as the loop keeps its schedule rather than wake a
/// millisecond late.
fn epoll_wait_ns(epfd: i32, events: &mut [libc::epoll_event], wait_ns: u64) -> i32 {
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_PWAIT2: AtomicBool = AtomicBool::new(false);
    if !NO_PWAIT2.load(Ordering::Relaxed) {
        let ts = libc::timespec {
            tv_sec: (wait_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: events is a valid buffer of the given length, ts lives
        // through the call, and a null signal mask leaves the mask alone.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        } as i32;
        if n >= 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            return n;
        }
        NO_PWAIT2.store(true, Ordering::Relaxed);
    }
    let ms = (wait_ns / 1_000_000) as i32;
    // SAFETY: events is a valid buffer of the given length.
    unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), events.len() as i32, ms) }
}

struct Conn {
    stream: Option<crate::driver::Stream>,
    /// What the server numbered for this connection (see [`Codec::encode`]).
    handles: Handles,
    /// Requests made since the last send was started.
    wbuf: Vec<u8>,
    /// Bytes being sent (with io_uring the kernel holds a pointer into it
    /// until the send completes); `spos` of them are gone.
    sending: Vec<u8>,
    spos: usize,
    /// epoll: EPOLLOUT is armed because the socket buffer was full.
    want_write: bool,
    /// io_uring: a receive / send is in the kernel.
    recv_inflight: bool,
    send_inflight: bool,
    /// io_uring: the socket was shut down; waiting for the kernel to hand
    /// back the buffers before closing.
    closing: bool,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    inflight: VecDeque<Request>,
    retry_at: u64,
    dead_since: Option<u64>,
}

impl Conn {
    fn usable(&self) -> bool {
        self.stream.is_some() && !self.closing
    }

    /// Makes room at the end of the read buffer (compacting, or growing
    /// once when a single reply is larger than the buffer).
    fn make_room(&mut self) {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        } else if self.rbuf.len() - self.rend < 4096 {
            if self.rstart > 0 {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            }
            if self.rbuf.len() - self.rend < 4096 {
                let n = self.rbuf.len() * 2;
                self.rbuf.resize(n, 0);
            }
        }
    }

    fn reset_buffers(&mut self) {
        self.wbuf.clear();
        self.sending.clear();
        self.spos = 0;
        self.want_write = false;
        self.rstart = 0;
        self.rend = 0;
    }
}

/// How bytes move: io_uring or epoll.
enum Backend {
    Uring {
        ring: Box<IoUring>,
        /// Completions copied out of the ring before they are handled.
        completions: Vec<(u64, i32)>,
    },
    Epoll {
        epfd: i32,
        events: Vec<libc::epoll_event>,
    },
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Backend::Epoll { epfd, .. } = *self {
            if epfd >= 0 {
                // SAFETY: closing the epoll fd we created.
                unsafe { libc::close(epfd) };
            }
        }
    }
}

const RECV: u64 = 0;
const SEND: u64 = 1;

impl Backend {
    fn new(choice: IoBackend, conns: usize) -> (Self, String) {
        if choice != IoBackend::Epoll {
            let entries = (2 * conns + 16).next_power_of_two().clamp(64, 4096) as u32;
            // Completions are run only when this thread enters the ring
            // (single issuer, deferred task work): no interrupting task work,
            // cheaper per operation. Older kernels get a plain ring.
            let tuned = IoUring::builder()
                .setup_cqsize(entries * 2)
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag()
                .build(entries);
            let ring =
                tuned.or_else(|_| IoUring::builder().setup_cqsize(entries * 2).build(entries));
            match ring {
                Ok(ring) => {
                    return (
                        Backend::Uring {
                            ring: Box::new(ring),
                            completions: Vec::with_capacity(entries as usize * 2),
                        },
                        "io_uring".to_string(),
                    )
                }
                Err(e) if choice == IoBackend::IoUring => {
                    return (
                        Self::epoll(conns),
                        format!("epoll (io_uring was asked for but is unavailable: {e})"),
                    )
                }
                Err(e) => {
                    return (
                        Self::epoll(conns),
                        format!("epoll (io_uring unavailable: {e})"),
                    )
                }
            }
        }
        (Self::epoll(conns), "epoll".to_string())
    }

    fn epoll(conns: usize) -> Self {
        // SAFETY: plain syscall; the fd is closed in Drop.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        Backend::Epoll {
            epfd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; conns.clamp(1, 1024)],
        }
    }

    /// Queues an io_uring operation, submitting first if the queue is full.
    fn push(ring: &mut IoUring, entry: io_uring::squeue::Entry) {
        // SAFETY: every buffer an entry points to lives in a Conn that is
        // neither moved, resized nor dropped until the entry's completion
        // has been reaped (recv_inflight / send_inflight guard them).
        unsafe {
            if ring.submission().push(&entry).is_err() {
                let _ = ring.submit();
                let _ = ring.submission().push(&entry);
            }
        }
    }
}

/// Runs worker `worker`'s share of `job` over the network with `codec`, on
/// the nodes `connectors` reach (requests sent as `route` says when there
/// are several).
pub fn run_worker<C: Codec>(
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
    backend_name: String,
    key_buf: [u8; KEY_LEN],
    pipeline: usize,
    /// Records per request: a batched load's `--batch`, 1 otherwise.
    batch: usize,
    /// The rows of the batch being encoded (kept for its capacity).
    batch_rows: Vec<BatchRow<'a>>,
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
        let w = job.workload;
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
        let mut conns = Vec::new();
        for _ in 0..harness.clients() * nodes {
            conns.push(Conn {
                stream: None,
                handles: Handles::default(),
                wbuf: Vec::with_capacity(wcap),
                sending: Vec::with_capacity(wcap),
                spos: 0,
                want_write: false,
                recv_inflight: false,
                send_inflight: false,
                closing: false,
                rbuf: vec![0u8; rcap],
                rstart: 0,
                rend: 0,
                inflight: VecDeque::with_capacity(pipeline),
                retry_at: 0,
                dead_since: None,
            });
        }
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
            key_buf: [0; KEY_LEN],
            pipeline,
            batch,
            batch_rows: Vec::with_capacity(if batch > 1 { batch } else { 0 }),
            timeout_ns: (w.timeout_s * 1e9) as u64,
            next_timeout_check: 0,
            wake: WakeLead::of_tail(MAX_WAKE_LEAD_NS),
            spin_credit_ns: 0,
            spin_credit_at: 0,
            t0_ns: monotonic_ns().saturating_sub(job.t0.elapsed().as_nanos() as u64),
        };
        // Connect every client up front; if none can connect the job fails.
        let mut first_err = None;
        for ci in 0..lp.conns.len() {
            if let Err(e) = lp.connect(ci) {
                first_err.get_or_insert(e);
            }
        }
        if !lp.conns.is_empty() && lp.conns.iter().all(|c| c.stream.is_none()) {
            let e = first_err.expect("a client failed to connect");
            return Err(
                ConnectError::new(io_error_kind(&e), format!("cannot connect: {e}")).into(),
            );
        }
        Ok(lp)
    }

    /// Nanoseconds since the job's time zero: one vDSO clock read and a
    /// subtraction (cheaper than `Instant::elapsed`, on the same clock).
    #[inline]
    fn now(&self) -> u64 {
        monotonic_ns().saturating_sub(self.t0_ns)
    }

    fn connect(&mut self, ci: usize) -> std::io::Result<()> {
        // Within the request timeout: a stalled server holds the loop no
        // longer per connection than it would hold a request.
        let within = std::time::Duration::from_nanos(self.timeout_ns);
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
        let c = &mut self.conns[ci];
        c.stream = Some(stream);
        c.handles = handles;
        c.reset_buffers();
        c.closing = false;
        c.dead_since = None;
        self.arm_recv(ci);
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
            && self.conns[ci * self.nodes..(ci + 1) * self.nodes]
                .iter()
                .all(Conn::usable)
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

    /// Whether client `ci` may make a request now, and with which
    /// intended start.
    #[inline]
    fn due(&self, ci: usize, now: u64) -> Option<u64> {
        if !self.has_room(ci) {
            return None;
        }
        self.harness.due(ci, now)
    }

    /// Encodes request `req` of client `ci` into the write buffer of the
    /// connection to its key's node.
    #[inline]
    fn issue(&mut self, ci: usize, req: Request) {
        let k = self.conn_for(ci, &req);
        self.encode_on(k, req);
    }

    /// The connection of client `ci` that request `req` goes on, counted
    /// there as sent; leaves its key in `key_buf`.
    #[inline]
    fn conn_for(&mut self, ci: usize, req: &Request) -> usize {
        format_key(req.key, &mut self.key_buf);
        let k = match self.route {
            _ if !MULTI => ci,
            None => ci * self.nodes,
            Some(route) => {
                let node = match route {
                    Route::Ring(ring) => ring.node_of(&self.key_buf),
                    Route::ReadWrite { .. } if req.kind.writes() => 0,
                    Route::ReadWrite { reads } => *reads,
                    Route::Slots(_) => self.slot_owner[key_slot(&self.key_buf) as usize] as usize,
                };
                self.node_sent[node][req.kind as usize] += 1;
                ci * self.nodes + node
            }
        };
        if MULTI {
            self.client_inflight[ci] += 1;
        }
        k
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
                key: key_of(key),
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
        let c = &mut self.conns[k];
        if req.leg == Leg::Asking {
            c.wbuf.extend_from_slice(ASKING);
        }
        if req.kind.writes_value() {
            let (h, p) = self.harness.value(req.client as usize, req.key);
            self.codec
                .encode(&c.handles, req.kind, &self.key_buf, &h, p, &mut c.wbuf);
        } else {
            self.codec
                .encode(&c.handles, req.kind, &self.key_buf, &[], &[], &mut c.wbuf);
        }
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
        format_key(req.key, &mut self.key_buf);
        let (h, p) = self.harness.value_again(req.client as usize, req.key);
        let c = &mut self.conns[k];
        self.codec
            .encode_follow_up(&c.handles, req.kind, &self.key_buf, &h, p, &mut c.wbuf);
        c.inflight.push_back(req);
    }

    /// Redis Cluster: the node on connection `ci` sent `req` to the node
    /// at `to` (an index, if the address is one of the cluster's); it goes
    /// there now. Out of line: redirections are rare.
    #[inline(never)]
    fn redirect(&mut self, ci: usize, mut req: Request, r: Redirect, to: Option<usize>, now: u64) {
        let from = ci % self.nodes;
        let client = self.client_of(ci);
        self.node_sent[from][req.kind as usize] -= 1;
        self.node_redirects[from][r.ask as usize] += 1;
        let Some(to) = to.filter(|_| req.redirects < MAX_REDIRECTS) else {
            // An address outside the cluster, or a request passed round:
            // the cluster is not serving it.
            self.client_inflight[client] -= 1;
            return self
                .harness
                .complete(&req, Outcome::Failed(ErrorKind::ServerError), now);
        };
        if !r.ask {
            self.slot_owner[r.slot as usize] = to as u16;
        }
        req.redirects += 1;
        req.leg = if r.ask { Leg::Asking } else { Leg::Only };
        self.node_sent[to][req.kind as usize] += 1;
        format_key(req.key, &mut self.key_buf);
        self.encode_on(client * self.nodes + to, req);
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
        for k in ci * self.nodes..(ci + 1) * self.nodes {
            self.kick_write(k, now);
        }
    }

    /// Starts sending what is buffered for `ci`: epoll writes it now (one
    /// `write`); io_uring queues one send for the next submission.
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
            Backend::Epoll { epfd, .. } => {
                let epfd = *epfd;
                let stream = c.stream.as_mut().expect("usable");
                match stream.write(&c.sending[c.spos..]) {
                    Ok(n) => c.spos += n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            IoErrorKind::WouldBlock | IoErrorKind::Interrupted
                        ) => {}
                    Err(_) => return self.fail(ci, ErrorKind::Reset, now),
                }
                let pending = c.spos < c.sending.len();
                if pending != c.want_write {
                    c.want_write = pending;
                    let mut events = libc::EPOLLIN as u32;
                    if pending {
                        events |= libc::EPOLLOUT as u32;
                    }
                    let mut ev = libc::epoll_event {
                        events,
                        u64: ci as u64,
                    };
                    let fd = c.stream.as_ref().expect("usable").as_raw_fd();
                    // SAFETY: modifying the registration of a fd we own.
                    unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, &mut ev) };
                }
            }
        }
    }

    /// io_uring: keeps one receive in the kernel for `ci`.
    fn arm_recv(&mut self, ci: usize) {
        let Backend::Uring { ring, .. } = &mut self.backend else {
            return;
        };
        let c = &mut self.conns[ci];
        if c.recv_inflight || !c.usable() {
            return;
        }
        c.make_room();
        let fd = c.stream.as_ref().expect("usable").as_raw_fd();
        let room = &mut c.rbuf[c.rend..];
        // (IORING_RECVSEND_POLL_FIRST was measured here and cost more CPU
        // per operation than the immediate attempt it saves.)
        let e = opcode::Recv::new(types::Fd(fd), room.as_mut_ptr(), room.len() as u32)
            .build()
            .user_data((ci as u64) << 1);
        Backend::push(ring, e);
        c.recv_inflight = true;
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

    /// epoll: reads what is there on `ci` (one `read`).
    fn on_readable(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if c.stream.is_none() {
            return;
        }
        c.make_room();
        let stream = c.stream.as_mut().expect("checked above");
        let res = stream.read(&mut c.rbuf[c.rend..]);
        let now = self.now();
        match res {
            Ok(n) => self.on_bytes(ci, n, now),
            Err(e) if matches!(e.kind(), IoErrorKind::WouldBlock | IoErrorKind::Interrupted) => {}
            Err(_) => self.fail(ci, ErrorKind::Reset, now),
        }
    }

    /// `n` bytes arrived on `ci` (0 = closed by the peer): completes every
    /// whole reply and makes the requests that may follow.
    fn on_bytes(&mut self, ci: usize, n: usize, now: u64) {
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
                // `ASKING`'s own reply, before the request's.
                match self.codec.decode(buf, OpKind::Get) {
                    Decoded::Incomplete => break,
                    Decoded::Invalid => return self.fail(ci, ErrorKind::Protocol, now),
                    Decoded::Complete { len, .. } => {
                        let c = &mut self.conns[ci];
                        c.rstart += len;
                        c.inflight.front_mut().expect("front").leg = Leg::Only;
                        continue;
                    }
                }
            }
            let decoded = if self.batch > 1 {
                self.codec.decode_batch(buf)
            } else if C::FOLLOWS_UP && front.leg == Leg::FollowUp {
                self.codec.decode_follow_up(buf, front.kind)
            } else {
                self.codec.decode(buf, front.kind)
            };
            match decoded {
                Decoded::Incomplete => break,
                Decoded::Invalid => return self.fail(ci, ErrorKind::Protocol, now),
                Decoded::Complete {
                    len,
                    reply: Reply::Redirect(r),
                } if MULTI && !self.slot_owner.is_empty() => {
                    let to = match self.route {
                        Some(Route::Slots(map)) => map.node_named(&buf[r.start..r.end]),
                        _ => None,
                    };
                    let t = self.now();
                    let c = &mut self.conns[ci];
                    c.rstart += len;
                    c.inflight.pop_front();
                    self.redirect(ci, front, r, to, t);
                    self.fill(self.client_of(ci), t);
                }
                Decoded::Complete {
                    len,
                    reply: Reply::FollowUp,
                } if C::FOLLOWS_UP && front.leg != Leg::FollowUp => {
                    let c = &mut self.conns[ci];
                    c.rstart += len;
                    c.inflight.pop_front();
                    self.follow_up(ci, front);
                }
                Decoded::Complete { len, reply } => {
                    // One clock read per reply, where it is parsed.
                    let t = self.now();
                    let outcome = match reply {
                        Reply::Ok if self.batch > 1 => Outcome::Rows(front.rows.into()),
                        Reply::Ok => Outcome::Ok,
                        Reply::Miss => Outcome::Miss,
                        // A follow-up asked for twice, or a redirection
                        // where no cluster is: the protocol is out of step.
                        Reply::FollowUp => Outcome::Failed(ErrorKind::Protocol),
                        Reply::ServerError | Reply::Redirect(_) => {
                            Outcome::Failed(ErrorKind::ServerError)
                        }
                        Reply::Value { start, end } if end > len || start > end => {
                            Outcome::Failed(ErrorKind::Protocol)
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
                    self.harness.complete(&front, outcome, t);
                    let c = &mut self.conns[ci];
                    c.rstart += len;
                    c.inflight.pop_front();
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

    /// io_uring: handles one completion.
    fn on_completion(&mut self, user_data: u64, res: i32) {
        let ci = (user_data >> 1) as usize;
        let op = user_data & 1;
        let now = self.now();
        let c = &mut self.conns[ci];
        if op == RECV {
            c.recv_inflight = false;
        } else {
            c.send_inflight = false;
        }
        if c.closing {
            if !c.recv_inflight && !c.send_inflight {
                c.stream = None;
                c.closing = false;
                c.reset_buffers();
            }
            return;
        }
        if c.stream.is_none() {
            return;
        }
        if res < 0 {
            let kind = if -res == libc::ECANCELED || -res == libc::EINTR || -res == libc::EAGAIN {
                // Not a failure of the connection: try again.
                if op == RECV {
                    self.arm_recv(ci);
                } else {
                    self.kick_write(ci, now);
                }
                return;
            } else {
                ErrorKind::Reset
            };
            return self.fail(ci, kind, now);
        }
        if op == RECV {
            self.on_bytes(ci, res as usize, now);
            self.arm_recv(ci);
        } else {
            c.spos += res as usize;
            self.kick_write(ci, now);
        }
    }

    fn check_timeouts(&mut self, now: u64) {
        self.next_timeout_check = now + TIMEOUT_CHECK_EVERY_NS;
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
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            if c.stream.is_some() || c.retry_at > now || !self.harness.generating() {
                continue;
            }
            match self.connect(ci) {
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
        loop {
            let now = self.now();
            let generating = self.harness.tick(now);
            if now >= self.next_timeout_check {
                self.check_timeouts(now);
                self.reconnect_due(now);
            }
            if self.harness.open_loop() && generating {
                for ci in 0..clients {
                    if self.due(ci, now).is_some() {
                        self.fill(ci, now);
                        self.kick_client(ci, now);
                    }
                }
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
            // The wait ends at a send time: wake early by what wake-ups
            // have been late, and spin out the rest, as long as the spin
            // stays within its share of the thread.
            self.spin_credit_ns = (self.spin_credit_ns
                + (now.saturating_sub(self.spin_credit_at) / SPIN_SHARE_DIVISOR) as i64)
                .clamp(-(MAX_SPIN_CREDIT_NS as i64), MAX_SPIN_CREDIT_NS as i64);
            self.spin_credit_at = now;
            // Out of credit, the thread sleeps until just before the send
            // time; it still spins out a wait shorter than SPIN_NS, which a
            // sleep would turn into a wake-up tens of µs late (so the share
            // is an eighth plus at most SPIN_NS a send).
            let early = if self.spin_credit_ns > 0 {
                self.wake.lead_ns() + SPIN_NS
            } else {
                SPIN_NS
            };
            if wait_ns <= early {
                if self.has_unsubmitted() || self.has_completions() {
                    self.wait_and_handle(0);
                } else {
                    // A reply that comes meanwhile ends the spin: it is
                    // handled (and timed) at once, and the spin resumes.
                    // The spin is timed from its own start: the sends made
                    // above are work.
                    let until = now + wait_ns;
                    let from = self.now();
                    let mut t = from;
                    while t < until && !self.has_completions() {
                        std::hint::spin_loop();
                        t = self.now();
                    }
                    let spun = t - from;
                    self.spin_credit_ns -= spun as i64;
                    self.harness.spun(spun);
                }
                continue;
            }
            let planned = now + wait_ns - early;
            if self.wait_and_handle(wait_ns - early) {
                let woke = self.now();
                if woke >= planned {
                    self.wake.learn(planned, woke);
                }
            }
        }
        self.drain_kernel();
    }

    /// Whether io_uring has completions waiting to be handled, or (on the
    /// tuned ring, whose receive completions wait as deferred task work
    /// until this thread enters the kernel) work that would post some.
    /// epoll cannot tell without a system call: never.
    fn has_completions(&mut self) -> bool {
        match &mut self.backend {
            Backend::Uring { ring, .. } => {
                ring.submission().taskrun() || !ring.completion().is_empty()
            }
            Backend::Epoll { .. } => false,
        }
    }

    /// Whether io_uring holds requests not yet submitted to the kernel.
    fn has_unsubmitted(&mut self) -> bool {
        match &mut self.backend {
            Backend::Uring { ring, .. } => !ring.submission().is_empty(),
            Backend::Epoll { .. } => false,
        }
    }

    /// One wait: io_uring submits everything queued and waits for at least
    /// one completion in the same system call; epoll waits for readiness.
    /// Whether it ended with nothing to handle (by its time, or on a
    /// signal).
    fn wait_and_handle(&mut self, wait_ns: u64) -> bool {
        match &mut self.backend {
            Backend::Uring { ring, completions } => {
                let ts = types::Timespec::new()
                    .sec(wait_ns / 1_000_000_000)
                    .nsec((wait_ns % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                let r = if wait_ns == 0 {
                    ring.submit()
                } else {
                    ring.submitter().submit_with_args(1, &args)
                };
                if let Err(e) = r {
                    if !matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                    ) {
                        // Nothing sensible is left to do with a broken ring
                        // but to stop making requests.
                        self.harness.stop();
                    }
                }
                completions.clear();
                completions.extend(ring.completion().map(|cqe| (cqe.user_data(), cqe.result())));
                let completions_len = completions.len();
                for i in 0..completions_len {
                    let (ud, res) = match &self.backend {
                        Backend::Uring { completions, .. } => completions[i],
                        Backend::Epoll { .. } => unreachable!(),
                    };
                    self.on_completion(ud, res);
                }
                // A timeout is not always an error (ETIME) here: a wait
                // that brought no completion ended by its time.
                completions_len == 0
            }
            Backend::Epoll { epfd, events } => {
                let n = epoll_wait_ns(*epfd, events, wait_ns.min(100_000_000));
                for i in 0..n.max(0) as usize {
                    let (ci, flags) = match &self.backend {
                        Backend::Epoll { events, .. } => (events[i].u64 as usize, events[i].events),
                        Backend::Uring { .. } => unreachable!(),
                    };
                    if flags & (libc::EPOLLIN | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0 {
                        self.on_readable(ci);
                    }
                    if flags & libc::EPOLLOUT as u32 != 0 {
                        let now = self.now();
                        self.kick_write(ci, now);
                    }
                }
                n == 0
            }
        }
    }

    /// io_uring: shuts every socket down and waits until the kernel has
    /// returned every buffer, so none is freed while it may still be written.
    fn drain_kernel(&mut self) {
        if !matches!(self.backend, Backend::Uring { .. }) {
            return;
        }
        for c in &mut self.conns {
            if c.recv_inflight || c.send_inflight {
                if let Some(s) = &c.stream {
                    // SAFETY: shutting down a socket we own.
                    unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
                }
                c.closing = true;
            }
        }
        let deadline = self.now() + 5_000_000_000;
        while self
            .conns
            .iter()
            .any(|c| c.recv_inflight || c.send_inflight)
            && self.now() < deadline
        {
            self.wait_and_handle(10_000_000);
        }
    }

    /// How long the next wait may last, ns, and whether it ends at an
    /// open-loop send time.
    fn wait_ns(&self, now: u64) -> (u64, bool) {
        let h = &self.harness;
        let mut until = h
            .next_tick()
            .min(self.next_timeout_check + TIMEOUT_CHECK_EVERY_NS);
        let mut send_at = u64::MAX;
        if h.generating() {
            until = until.min(h.measure_end()).min(if h.warmup_end() > now {
                h.warmup_end()
            } else {
                u64::MAX
            });
            if h.open_loop() {
                for ci in 0..self.client_inflight.len() {
                    if self.has_room(ci) {
                        if let Some(t) = h.next_start(ci, now) {
                            send_at = send_at.min(t);
                        }
                    }
                }
            }
        }
        let wait = until.min(send_at).saturating_sub(now).min(100_000_000);
        (wait, send_at <= until)
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

impl<C: Codec> Driver for CodecDriver<C> {
    fn run_worker(&self, job: &Job, worker: usize) -> Result<WorkerOutput, TargetError> {
        run_worker(
            &self.codec,
            &self.connectors,
            self.route.as_ref(),
            job,
            worker,
        )
    }

    fn describe(&self, kind: OpKind) -> String {
        self.codec.describe(kind)
    }
}
