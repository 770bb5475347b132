//! The timing harness: one per worker thread, shared by every I/O loop.
//!
//! The harness owns everything a measurement means: the request stream of
//! each client (which operation next, on which record, with which value,
//! and when in open loop), the phases and the warm-up, the check of every
//! value read, the meter (histograms, errors by kind, the per-second
//! intervals) and Little's-law accounting. The I/O loops — io_uring/epoll
//! for byte codecs ([`crate::net`]), async client libraries
//! ([`crate::async_loop`]), direct calls into in-process engines
//! ([`crate::embedded`]) and the scripted mock on a simulated clock
//! ([`crate::mock`]) — only move bytes, await calls or call an engine. They
//! ask the harness for the next request ([`Harness::begin`]) and hand it
//! each completion with the time it was seen ([`Harness::complete`]); they
//! never judge or record an outcome themselves.
//!
//! The harness reads no clock: every method that needs the time is given
//! it, so the real loops read the clock once per completion where the reply
//! is parsed, and the mock passes simulated time. The only clock it owns is
//! the worker's CPU time, read once a second ([`CpuClock`]).

use crate::client::ClientState;
use crate::driver::Job;
use crate::driver::JobKind;
use crate::durability::{ReadBack, WorkerDurability, WriteId, WriteOutcome};
use crate::profile::Query;
use crate::recorder::{thread_cpu_ns, Completion, ErrorKind, WorkerMeter, WorkerOutput};
use crate::value::HEADER_LEN;
use crate::workload::{MixChooser, OpKind};

/// Time between reconnection attempts to a lost target.
pub const RECONNECT_EVERY_NS: u64 = 100_000_000;

/// How long requests still out may take after a stop was asked for
/// before a loop ends without them (a stalled server would hold Ctrl-C
/// for the request timeout).
pub const STOP_GRACE_NS: u64 = 500_000_000;

/// Which request of an operation is on the wire: one byte, so that a
/// [`Request`] stays 40 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leg {
    /// The operation's request, alone.
    Only,
    /// Redis Cluster: the request, sent after `ASKING`, whose reply comes
    /// first.
    Asking,
    /// Its second request (see [`crate::driver::Codec::encode_follow_up`]):
    /// the reply to read is that one's.
    FollowUp,
    /// A read-modify-write's write, sent when its read's reply came: the
    /// reply to read is the write's.
    Modify,
    /// A read whose write follows on the network loop: a
    /// read-modify-write's, or an update's of one field of a record of
    /// several fields (the record's write, that field changed, follows
    /// it: a read-merge-write, as YCSB's RocksDB binding does).
    Merge,
}

/// One request as the harness made it; the loop keeps it until the reply
/// comes and hands it back to [`Harness::complete`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Index of the client (within this worker) that made it.
    pub client: u32,
    /// What is asked.
    pub kind: OpKind,
    /// Record id.
    pub key: u64,
    /// When it was meant to start, ns since the job's start (open loop:
    /// its place in the schedule; closed loop: when it was made).
    pub intended: u64,
    /// When it was sent, ns since the job's start.
    pub sent: u64,
    /// 0 for the load or the warm-up, 1 for the measured phase.
    pub phase: u8,
    /// In a replication run: the version a write carries, or the
    /// acknowledged version a read must not find older (0 otherwise).
    pub version: u32,
    /// Redis Cluster: times the request was sent elsewhere (`MOVED`,
    /// `ASK`) before this send.
    pub redirects: u8,
    /// Which of its requests is on the wire.
    pub leg: Leg,
    /// Records it writes: 1, or a batched load's count (the records
    /// after the first ride on it, not counted as requests of their own);
    /// for a scan, the most records it reads.
    pub rows: u32,
}

/// What became of a request, as the driver read it from the reply or the
/// call. The harness turns it into a completion: it checks values read,
/// counts rows and errors by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// Done as asked.
    Ok,
    /// Done; the request returned or wrote this many rows (searches,
    /// batched inserts).
    Rows(u64),
    /// A read found its record: these are the bytes read, checked here
    /// against what bakeoff wrote.
    Value(&'a [u8]),
    /// No such record, or a write the target declined.
    Miss,
    /// A scan read the records in these bytes, as
    /// [`crate::scan::push_row`] writes them: each is checked here. (Their
    /// number is not carried beside them: an outcome is passed on every
    /// completion, and a larger one cost instructions per operation.)
    Scanned(&'a [u8]),
    /// The request failed.
    Failed(ErrorKind),
}

/// The worker's CPU clock, read once a second for the client-busy figure.
/// The mock, on simulated time, reads none.
#[derive(Clone, Copy, Debug)]
pub enum CpuClock {
    /// CPU time of the calling thread.
    Thread,
    /// Always zero: no client CPU is reported.
    None,
}

impl CpuClock {
    fn reader(self) -> fn() -> u64 {
        match self {
            CpuClock::Thread => thread_cpu_ns,
            CpuClock::None => || 0,
        }
    }
}

/// One worker's harness: its clients' request streams and its meter.
pub struct Harness<'j> {
    job: &'j Job<'j>,
    clients: Vec<ClientState>,
    meter: WorkerMeter,
    mix: MixChooser,
    open_loop: bool,
    warmup_end: u64,
    measure_end: u64,
    /// A measure job (warm-up, then measured phase), not a load.
    measures: bool,
    generating: bool,
    /// The durability check's log: its writes, or its read-back.
    durability: Option<WorkerDurability>,
    /// A replication run's acknowledged versions (the job's, kept here to
    /// spare a load per request).
    acked: Option<&'j crate::stale::AckedVersions>,
    /// Whether outcomes are logged or tracked besides being recorded (see
    /// [`Harness::complete`]).
    careful: bool,
    /// The leg each kind's request starts with (see [`Leg::Merge`]).
    first_legs: [Leg; crate::workload::OP_KINDS],
    /// The warm-up's end may still move (`--warmup auto`): followed from
    /// the job at every turn until it is settled.
    follows_warmup: bool,
}

impl<'j> Harness<'j> {
    /// The harness of worker `worker` of `job`, on the thread's CPU clock.
    pub fn new(job: &'j Job<'j>, worker: usize) -> Self {
        Self::with_cpu_clock(job, worker, CpuClock::Thread)
    }

    /// The harness of worker `worker` of `job`, with CPU time read from `cpu`.
    pub fn with_cpu_clock(job: &'j Job<'j>, worker: usize, cpu: CpuClock) -> Self {
        let w = job.inputs.workload;
        let open_loop = w.rate.is_some() && job.kind == JobKind::Measure;
        let clients = job
            .clients_of(worker)
            .map(|c| ClientState::new(job, c, open_loop))
            .collect();
        Self {
            job,
            clients,
            meter: WorkerMeter::new(
                job.phase_count(),
                open_loop,
                job.warmup_end_ns(),
                job.measure_end_ns(),
                cpu.reader(),
            )
            .with_trace(
                (job.kind == JobKind::Measure && w.trace > 0)
                    .then(|| (w.trace as usize).div_ceil(w.threads.max(1) as usize)),
            ),
            mix: MixChooser::new(w.mix.weights),
            open_loop,
            warmup_end: job.warmup_end_ns(),
            measure_end: job.measure_end_ns(),
            measures: job.kind == JobKind::Measure,
            generating: true,
            durability: (job.kind == JobKind::ReadBack
                || (job.kind == JobKind::Measure && w.durability))
                .then(WorkerDurability::default),
            acked: job.inputs.acked,
            careful: job.inputs.acked.is_some()
                || job.inputs.inserts.is_some()
                || job.kind == JobKind::ReadBack
                || (job.kind == JobKind::Measure && w.durability),
            first_legs: OpKind::ALL.map(|kind| match kind {
                OpKind::ReadModifyWrite => Leg::Merge,
                OpKind::Update if w.fields > 1 => Leg::Merge,
                _ => Leg::Only,
            }),
            follows_warmup: job.warmup.may_move(),
        }
    }

    /// The loop runs on simulated time (the mock): an undecided warm-up
    /// waits at each second for the collector to judge it, so that the
    /// end falls where the same plan always puts it.
    pub fn on_simulated_time(self) -> Self {
        self.job.warmup.simulate();
        self
    }

    /// The target keeps a record's fields apart: an update of one field is
    /// written as it is, with no read before it.
    pub fn keeps_fields(&mut self) {
        self.first_legs[OpKind::Update as usize] = Leg::Only;
    }

    /// The leg a request of `kind` starts with, and starts again with
    /// when a cluster sends it elsewhere.
    #[inline]
    pub fn first_leg(&self, kind: OpKind) -> Leg {
        self.first_legs[kind as usize]
    }

    /// The job this harness measures.
    #[inline]
    pub fn job(&self) -> &'j Job<'j> {
        self.job
    }

    /// Number of clients this worker runs.
    #[inline]
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// Whether requests follow a schedule (a rate was asked for).
    #[inline]
    pub fn open_loop(&self) -> bool {
        self.open_loop
    }

    /// Whether new requests may still be made (the phase has not ended and
    /// no stop was asked for).
    #[inline]
    pub fn generating(&self) -> bool {
        self.generating
    }

    /// When the current second ends, ns since the job's start: loops wake
    /// up by then so the second is handed over on time.
    #[inline]
    pub fn next_tick(&self) -> u64 {
        self.meter.next_tick()
    }

    /// End of the warm-up, ns since the job's start.
    #[inline]
    pub fn warmup_end(&self) -> u64 {
        self.warmup_end
    }

    /// End of a timed measured phase, ns since the job's start (`u64::MAX`
    /// when the run counts operations).
    #[inline]
    pub fn measure_end(&self) -> u64 {
        self.measure_end
    }

    /// Called once per turn of the loop: hands finished seconds to the
    /// collector, and stops making requests at the end of a timed phase or
    /// when a stop was asked for. Returns [`Harness::generating`].
    #[inline]
    pub fn tick(&mut self, now: u64) -> bool {
        self.meter
            .on_loop(now, self.warmup_end, &self.job.intervals);
        if self.follows_warmup {
            self.follow_warmup(now);
        }
        if self.generating
            && (now >= self.measure_end
                || self
                    .job
                    .inputs
                    .stop
                    .load(std::sync::atomic::Ordering::Relaxed))
        {
            self.generating = false;
        }
        self.generating
    }

    /// Takes up the warm-up's end once the collector has found it (and, on
    /// simulated time, first waits for its judgement of the seconds handed
    /// over). Out of line: only `--warmup auto` comes here, and only
    /// until the end is settled.
    #[cold]
    #[inline(never)]
    fn follow_warmup(&mut self, now: u64) {
        // Seconds handed over so far: those before the current one.
        let handed = (self.meter.next_tick() / 1_000_000_000) as u32 - 1;
        if handed > 0 && now < self.warmup_end && self.job.warmup.simulated() {
            self.job
                .warmup
                .wait_judged(handed - 1, std::time::Duration::from_secs(2));
        }
        // Settled first: once it is, the end read after is the last.
        let moving = self.job.warmup.may_move();
        let end = self.job.warmup_end_ns();
        if end != self.warmup_end {
            self.warmup_end = end;
            self.measure_end = self.job.measure_end_ns();
            self.meter.set_window(self.warmup_end, self.measure_end);
        }
        self.follows_warmup = moving;
    }

    /// Whether a stop was asked for (Ctrl-C, a signal), rather than the
    /// phase having ended.
    #[inline]
    pub fn stop_asked(&self) -> bool {
        self.job
            .inputs
            .stop
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stops making requests: the loop can no longer send.
    pub fn stop(&mut self) {
        self.generating = false;
    }

    /// Intended start of client `ci`'s next request as of `now` (`now`
    /// itself in closed loop, its place in the schedule in open loop), or
    /// `None` when the client has no more requests to make.
    #[inline(always)]
    pub fn next_start(&self, ci: usize, now: u64) -> Option<u64> {
        if !self.generating {
            return None;
        }
        let c = &self.clients[ci];
        let intended = if self.open_loop { c.next_due } else { now };
        c.may_issue(self.job, intended, self.warmup_end, self.measure_end)
            .then_some(intended)
    }

    /// Intended start of client `ci`'s next request if it is due at `now`.
    #[inline(always)]
    pub fn due(&self, ci: usize, now: u64) -> Option<u64> {
        self.next_start(ci, now).filter(|&t| t <= now)
    }

    /// The client a loop that runs one call at a time should serve next
    /// (after `after` in turn, in closed loop; the earliest due, in open
    /// loop), with its request's intended start.
    pub fn next_client(&self, now: u64, after: usize) -> Option<(usize, u64)> {
        let n = self.clients.len();
        if self.open_loop {
            (0..n)
                .filter_map(|ci| self.next_start(ci, now).map(|t| (ci, t)))
                .min_by_key(|&(_, t)| t)
        } else {
            (0..n)
                .map(|k| (after + k) % n)
                .find_map(|ci| self.next_start(ci, now).map(|t| (ci, t)))
        }
    }

    /// Whether client `ci` still has requests to make in this job (or may
    /// have, once the warm-up is over).
    #[inline]
    pub fn has_work_left(&self, ci: usize, now: u64) -> bool {
        self.generating
            && self.clients[ci].has_work_left(self.job, now, self.warmup_end)
            && now < self.measure_end
    }

    /// Makes client `ci`'s next request, meant to start at `intended` and
    /// sent at `now`: draws the operation and the record, and counts it as
    /// sent.
    #[inline(always)]
    pub fn begin(&mut self, ci: usize, intended: u64, now: u64) -> Request {
        self.make(ci, intended, now)
    }

    /// Makes client `ci`'s next request if it is due at `now` (what
    /// [`Harness::due`] then [`Harness::begin`] do, with one look-up: the
    /// network loop calls this once per request).
    #[inline(always)]
    pub fn begin_due(&mut self, ci: usize, now: u64) -> Option<Request> {
        if !self.generating {
            return None;
        }
        let c = &self.clients[ci];
        let intended = if self.open_loop { c.next_due } else { now };
        if intended > now || !c.may_issue(self.job, intended, self.warmup_end, self.measure_end) {
            return None;
        }
        Some(self.make(ci, intended, now))
    }

    #[inline(always)]
    fn make(&mut self, ci: usize, intended: u64, now: u64) -> Request {
        // The same as `Job::phase_at`, from the cached end of the warm-up.
        let phase = u8::from(self.measures && intended >= self.warmup_end);
        let (kind, key) = self.clients[ci].next_op(self.job, &self.mix, phase);
        self.meter.stats[phase as usize].sent[kind as usize] += 1;
        let version = match self.acked {
            None => 0,
            Some(_) if kind.writes_value() => self.clients[ci].next_version(),
            Some(acked) => acked.floor(key),
        };
        // Computed before the request is built, so that it is built where
        // it is returned (building it, then changing or replacing it, cost
        // about 30 instructions per operation).
        let (version, rows) = if kind == OpKind::Scan {
            self.scan_request(ci)
        } else {
            (version, 1)
        };
        Request {
            client: ci as u32,
            kind,
            key,
            intended,
            sent: now,
            phase,
            version,
            redirects: 0,
            leg: self.first_legs[kind as usize],
            rows,
        }
    }

    /// A scan of client `ci`: the inserted ids acknowledged when it is
    /// sent, for its `version`, and its length (uniform in
    /// `1..=scan_length`), for its `rows` (scans run on one node, never in
    /// a replication run): what its records are checked against. Out of
    /// line: only scans come here.
    #[cold]
    #[inline(never)]
    fn scan_request(&mut self, ci: usize) -> (u32, u32) {
        let most = self.job.inputs.workload.scan_length.max(1);
        let rows = 1 + self.clients[ci].draw_below(u64::from(most)) as u32;
        let acked = self
            .job
            .inputs
            .inserts
            .map_or(0, |i| i.acknowledged().min(u64::from(u32::MAX)) as u32);
        (acked, rows)
    }

    /// One field client `ci` writes into record `key` (an update or a
    /// read-modify-write of a record of several fields): which field,
    /// drawn uniformly, and its value as a header and a payload.
    pub fn field(&mut self, ci: usize, key: u64) -> (usize, [u8; HEADER_LEN], &'j [u8]) {
        self.clients[ci].field(self.job, key)
    }

    /// Which field of a record of several fields client `ci` writes next
    /// (uniform, YCSB's `writeallfields=false`).
    pub fn draw_field(&mut self, ci: usize) -> usize {
        let fields = self.job.inputs.workload.fields.max(1);
        self.clients[ci].draw_below(u64::from(fields)) as usize
    }

    /// The record of several fields client `ci` writes to record `key`
    /// (see [`crate::client::ClientState::record`]).
    pub fn record(&mut self, ci: usize, key: u64) -> &[u8] {
        self.clients[ci].record(self.job, key)
    }

    /// The value client `ci` writes to record `key`: its header and the
    /// payload that follows it.
    #[inline(always)]
    pub fn value(&mut self, ci: usize, key: u64) -> ([u8; HEADER_LEN], &'j [u8]) {
        self.clients[ci].value(self.job, key)
    }

    /// The value of the second request of client `ci`'s write of `key`
    /// (see [`crate::client::Client::value_again`]): its stream unmoved.
    pub fn value_again(&self, ci: usize, key: u64) -> ([u8; HEADER_LEN], &'j [u8]) {
        self.clients[ci].value_again(self.job, key)
    }

    /// The parameters of client `ci`'s next search.
    pub fn query(&mut self, ci: usize) -> Query {
        self.clients[ci].query(self.job.inputs.workload.search)
    }

    /// Counts the second request `req` needed (its first reply asked for
    /// one: see [`crate::driver::Reply::FollowUp`]).
    #[inline]
    pub fn followed_up(&mut self, req: &Request) {
        self.meter.stats[req.phase as usize].follow_ups[req.kind as usize] += 1;
    }

    /// Takes back the count of `req` as sent: it never reached the target
    /// (its connection could not be opened).
    pub fn not_sent(&mut self, req: &Request) {
        self.meter.stats[req.phase as usize].sent[req.kind as usize] -= 1;
    }

    /// `req` finished at `now` with `outcome`: values read are checked
    /// against what was written, and the request is recorded from its
    /// intended start (response time) and from its send (service time).
    #[inline(always)]
    pub fn complete(&mut self, req: &Request, outcome: Outcome, now: u64) {
        if self.careful {
            return self.complete_carefully(req, outcome, now);
        }
        self.record_outcome(req, outcome, now)
    }

    /// [`Harness::complete`] in a run that logs or tracks its outcomes
    /// (a durability check, a replication run, inserts): out of line, so
    /// that every other run checks one flag.
    #[cold]
    #[inline(never)]
    fn complete_carefully(&mut self, req: &Request, outcome: Outcome, now: u64) {
        if self.durability.is_some() {
            self.log_durability(req, outcome, now);
        }
        if let Some(acked) = self.acked {
            self.track_versions(acked, req, outcome);
        }
        if req.kind == OpKind::Insert {
            self.acknowledge_insert(req);
        }
        self.record_outcome(req, outcome, now)
    }

    /// An insert is over: its id may be read once the ones before it are
    /// (YCSB acknowledges a failed insert too; reading it is a miss).
    #[cold]
    fn acknowledge_insert(&self, req: &Request) {
        if let Some(inserts) = self.job.inputs.inserts {
            inserts.acknowledge(req.key);
        }
    }

    /// Keeps what the target said when `req` failed as `e` (the first
    /// text of each kind, each phase): the error reply, or the message of
    /// the client library or engine. Call it before [`Harness::complete`].
    #[cold]
    pub fn failed_saying(&mut self, req: &Request, e: ErrorKind, said: &[u8]) {
        self.meter.stats[req.phase as usize].note_error_text(e, said);
    }

    /// [`Harness::failed_saying`] with a text made only when none of its
    /// kind was kept yet (a message formatted per failure would cost the
    /// failures' flood).
    #[cold]
    pub fn failed_saying_lazily(
        &mut self,
        req: &Request,
        e: ErrorKind,
        said: impl FnOnce() -> String,
    ) {
        let stats = &mut self.meter.stats[req.phase as usize];
        if stats.error_texts[e as usize].is_none() {
            stats.note_error_text(e, said().as_bytes());
        }
    }

    /// A replication run: an acknowledged write raises its record's
    /// floor; a read that found a version below the floor it was sent
    /// with is counted stale. Out of line, as only such runs do it.
    #[cold]
    #[inline(never)]
    fn track_versions(
        &mut self,
        acked: &crate::stale::AckedVersions,
        req: &Request,
        outcome: Outcome,
    ) {
        match outcome {
            Outcome::Ok if req.kind.writes_value() => acked.ack(req.key, req.version),
            Outcome::Value(bytes) if req.kind == OpKind::Get => {
                let found = crate::value::version_of(bytes).unwrap_or(u32::MAX);
                if crate::stale::AckedVersions::is_stale(req.version, found) {
                    self.meter.stats[req.phase as usize].stale_reads += 1;
                }
            }
            _ => {}
        }
    }

    /// Checks and records `req`'s outcome (see [`Harness::complete`]).
    #[inline(always)]
    fn record_outcome(&mut self, req: &Request, outcome: Outcome, now: u64) {
        let how = match outcome {
            Outcome::Ok => Completion::Ok,
            Outcome::Rows(n) => {
                self.meter.stats[req.phase as usize].rows[req.kind as usize] += n;
                Completion::Ok
            }
            Outcome::Miss => Completion::Miss,
            Outcome::Scanned(bytes) => self.check_scan(req, bytes),
            // A value answers a read, or an update's read of a record of
            // several fields (a read-merge-write's, its write not sent).
            Outcome::Value(_)
                if !(matches!(req.kind, OpKind::Get | OpKind::ReadModifyWrite)
                    || req.kind == OpKind::Update && self.job.inputs.workload.fields > 1) =>
            {
                Completion::Error(ErrorKind::Protocol)
            }
            Outcome::Value(bytes) => {
                match self.job.inputs.pool.verify_record(
                    req.key,
                    bytes,
                    self.job.inputs.workload.fields,
                ) {
                    Ok(()) => Completion::Ok,
                    Err(_) => Completion::Error(ErrorKind::Verification),
                }
            }
            Outcome::Failed(e) => Completion::Error(e),
        };
        self.meter.record(
            req.phase,
            req.kind,
            now.saturating_sub(req.intended),
            now.saturating_sub(req.sent),
            how,
            now,
        );
    }

    /// Counts and checks the records a scan returned in `bytes` (see
    /// [`crate::scan::check`]); the first wrong one's story is kept.
    #[cold]
    #[inline(never)]
    fn check_scan(&mut self, req: &Request, bytes: &[u8]) -> Completion {
        let w = self.job.inputs.workload;
        let n = crate::scan::rows(bytes).count() as u64;
        self.meter.stats[req.phase as usize].rows[req.kind as usize] += n;
        // What is known to be there: the loaded records while nothing
        // deletes them, and the inserts acknowledged before the scan.
        let held = (w.load && !w.mix.has(OpKind::Delete)).then(|| crate::scan::Held {
            records: w.records,
            first_insert: w.first_insert(),
            inserted: u64::from(req.version),
        });
        match crate::scan::check(
            self.job.inputs.pool,
            w.key_naming,
            w.fields,
            req.key,
            req.rows,
            bytes,
            held,
        ) {
            Ok(()) => Completion::Ok,
            Err(why) => {
                self.failed_saying(req, ErrorKind::Verification, why.as_bytes());
                Completion::Error(ErrorKind::Verification)
            }
        }
    }

    /// Logs how a write of the durability check ended, or what reading one
    /// back found. A definite rejection is a failed write; anything else
    /// that is not an acknowledgement (reset, timeout, no reply) leaves it
    /// indeterminate.
    fn log_durability(&mut self, req: &Request, outcome: Outcome, now: u64) {
        let (Some(d), Some(id)) = (&mut self.durability, WriteId::of_record(req.key)) else {
            return;
        };
        if self.measures {
            let how = match outcome {
                Outcome::Ok | Outcome::Rows(_) => WriteOutcome::Acknowledged(now),
                Outcome::Miss | Outcome::Failed(ErrorKind::ServerError) => WriteOutcome::Failed,
                _ => WriteOutcome::Indeterminate,
            };
            d.writes.settle(id, how);
            return;
        }
        match outcome {
            Outcome::Value(bytes) => match self.job.inputs.pool.verify(req.key, bytes) {
                Ok(()) if crate::value::version_of(bytes) != Some(self.job.inputs.nonce) => {
                    d.foreign.push(id)
                }
                Ok(()) => d.found.push((id, ReadBack::Present)),
                Err(_) => d.found.push((id, ReadBack::Corrupt)),
            },
            Outcome::Miss => d.found.push((id, ReadBack::Absent)),
            _ => d.unanswered.push(req.key),
        }
    }

    /// Step `index` (`name`) of a phased request of `phase` took `ns`.
    pub fn record_step(&mut self, phase: u8, index: usize, name: &'static str, ns: u64) {
        self.meter.stats[phase as usize].record_step(index, name, ns);
    }

    /// A connection attempt failed at `now` with `kind` (no request made).
    pub fn connect_failed(&mut self, now: u64, kind: ErrorKind) {
        let phase = self.job.phase_at(now);
        self.meter.record_connect_error(phase, kind);
    }

    /// The worker spun `ns` waiting for a send time.
    #[inline]
    pub fn spun(&mut self, ns: u64) {
        self.meter.spun(ns);
    }

    /// Drops the rest of client `ci`'s work: its target is gone for good.
    pub fn give_up(&mut self, ci: usize) {
        self.clients[ci].give_up();
    }

    /// Open loop: requests of client `ci` that fell due while its target
    /// was unreachable are dropped, not made late.
    pub fn skip_missed(&mut self, ci: usize, now: u64) {
        self.clients[ci].skip_missed(now);
    }

    /// Hands over the last partial second and everything measured; `backend`
    /// names the I/O mechanism.
    pub fn finish(self, now: u64, backend: crate::recorder::IoLoop) -> WorkerOutput {
        let mut out = self.meter.finish(now, backend, &self.job.intervals);
        let mut durability = self.durability;
        if let (Some(d), true) = (durability.as_mut(), self.measures) {
            // A writer's sequence numbers are consecutive: every one below
            // its next was invoked, and those that never settled are
            // indeterminate. Logged here rather than per request.
            for c in &self.clients {
                for id in c.unique_writes() {
                    if !d.writes.contains(id) {
                        d.writes.invoke(id);
                    }
                }
            }
        }
        out.durability = durability;
        out
    }
}

#[cfg(test)]
mod request_size {
    /// The loop keeps every request in flight in a queue per connection:
    /// its size is on the hot path.
    #[test]
    fn a_request_is_40_bytes() {
        assert_eq!(std::mem::size_of::<super::Request>(), 40);
    }
}

#[cfg(test)]
mod timing_tests;
