//! One client's request stream: which operation comes next, on which
//! record, with which value, and — in open loop — when. Every loop (the
//! network loop, the embedded-engine loop) draws requests from here, so a
//! workload means the same thing on every target.

use crate::driver::{Job, JobKind};
use crate::durability::WriteId;
use crate::value::HEADER_LEN;
use crate::workload::{KeyChooser, MixChooser, OpKind, Rng};

/// The generator state of one client.
pub struct ClientState {
    rng: Rng,
    keys: KeyChooser,
    version: u32,
    next_load: u64,
    load_end: u64,
    quota: u64,
    /// Durability check: this client writes fresh ids of its own, as
    /// writer `writer`, its next sequence number `next_seq`.
    unique: bool,
    /// Its measured operations come from somewhere other than the mix
    /// alone: a durability writer, a replay, or a run with inserts.
    special: bool,
    writer: u32,
    next_seq: u64,
    /// Read-back: the next index into the job's ids, and the step between
    /// this client's indices.
    next_read: usize,
    read_stride: usize,
    /// A replication run: this client writes only the records it owns
    /// (id modulo the clients), as (its index, the clients).
    owner: Option<(u64, u64)>,
    /// A replay's measure job: this client's next operation of the trace
    /// (it takes every `stride`-th, from its index on), and the value size
    /// of the operation it made last.
    replay_next: usize,
    replay_size: usize,
    /// Open loop: intended start of the next request, ns since `t0`.
    pub next_due: u64,
    /// Open loop: time between this client's requests, ns (0 = closed loop).
    pub period: u64,
    /// The record of several fields this client writes next (empty until
    /// it writes one).
    record: Vec<u8>,
}

impl ClientState {
    /// The stream of client `client` in `job`; `open_loop` spaces requests
    /// evenly at the workload's rate, staggered between clients.
    pub fn new(job: &Job, client: u32, open_loop: bool) -> Self {
        let w = job.inputs.workload;
        let replays = job.inputs.replay.is_some() && job.kind == JobKind::Measure;
        let period = match w.rate {
            // A replay's requests are due when the trace made them.
            _ if replays => 0,
            Some(r) if open_loop => ((w.clients as f64 * 1e9) / r).max(1.0) as u64,
            _ => 0,
        };
        let range = job.load_range(client);
        Self {
            rng: Rng::new(job.inputs.seed, client as u64),
            keys: KeyChooser::new(
                w.key_distribution,
                w.records,
                client as u64,
                w.clients as u64,
                job.inputs.zipf,
            )
            .with_zipf_items(zipf_items(w, job.inputs.inserts.is_some())),
            version: 1,
            owner: (w.topology == crate::plan::Topology::PrimaryReplica)
                .then_some((client as u64, w.clients.max(1) as u64)),
            next_load: range.start,
            load_end: range.end,
            quota: job.quota(client),
            unique: w.durability,
            special: w.durability || replays || job.inputs.inserts.is_some(),
            writer: client,
            next_seq: 0,
            next_read: client as usize,
            read_stride: w.clients.max(1) as usize,
            replay_next: client as usize,
            replay_size: 0,
            next_due: match job.inputs.replay {
                Some(trace) if replays => replay_due(trace, client as usize, w.replay_speed),
                _ if period > 0 => period * client as u64 / w.clients as u64,
                _ => 0,
            },
            period,
            record: Vec::new(),
        }
    }

    /// Whether a request with intended start `intended` may be made.
    #[inline]
    pub fn may_issue(&self, job: &Job, intended: u64, warmup_end: u64, measure_end: u64) -> bool {
        match job.kind {
            JobKind::Load => self.next_load < self.load_end,
            JobKind::Measure => {
                intended < measure_end && !(self.quota == 0 && intended >= warmup_end)
            }
            JobKind::ReadBack => self.next_read < job.inputs.read_back.len(),
        }
    }

    /// Whether this client has requests left to make in the job at `now`.
    pub fn has_work_left(&self, job: &Job, now: u64, warmup_end: u64) -> bool {
        match job.kind {
            JobKind::Load => self.next_load < self.load_end,
            JobKind::Measure => self.quota > 0 || now < warmup_end,
            JobKind::ReadBack => self.next_read < job.inputs.read_back.len(),
        }
    }

    /// The next operation and record id, for a request of `phase` (1 =
    /// measured). Advances the open-loop schedule.
    #[inline]
    pub fn next_op(&mut self, job: &Job, mix: &MixChooser, phase: u8) -> (OpKind, u64) {
        self.next_due += self.period;
        match job.kind {
            JobKind::Load => {
                let k = self.next_load;
                self.next_load += 1;
                (OpKind::Set, k)
            }
            JobKind::Measure => {
                if phase == 1 && self.quota != u64::MAX {
                    self.quota -= 1;
                }
                if self.special {
                    return self.next_special(job, mix);
                }
                let kind = mix.next(&mut self.rng);
                let key = self.keys.next(&mut self.rng, 0);
                if let (Some(owner), true) = (self.owner, kind.writes()) {
                    return (kind, owned(owner, key, job.inputs.workload.records));
                }
                (kind, key)
            }
            JobKind::ReadBack => {
                let k = job.inputs.read_back[self.next_read];
                self.next_read += self.read_stride;
                (OpKind::Get, k)
            }
        }
    }

    /// The next operation of a durability writer, a replay or a run with
    /// inserts. Out of line, so that other runs check one flag.
    #[cold]
    #[inline(never)]
    fn next_special(&mut self, job: &Job, mix: &MixChooser) -> (OpKind, u64) {
        if self.unique {
            return self.next_unique();
        }
        if let Some(trace) = job.inputs.replay {
            return self.next_replayed(job, trace);
        }
        let kind = mix.next(&mut self.rng);
        match job.inputs.inserts {
            Some(inserts) => self.next_with_inserts(job, inserts, kind),
            None => (kind, self.keys.next(&mut self.rng, 0)),
        }
    }

    /// The record of an operation of `kind` in a run with inserts: an
    /// insert writes the counter's next id; the others draw among the
    /// records and the inserted ids acknowledged so far. Out of line, so
    /// that runs without inserts keep the short path.
    #[inline(never)]
    fn next_with_inserts(
        &mut self,
        job: &Job,
        inserts: &crate::inserts::InsertKeys,
        kind: OpKind,
    ) -> (OpKind, u64) {
        if kind == OpKind::Insert {
            return (kind, inserts.take());
        }
        let w = job.inputs.workload;
        let index = self.keys.next(&mut self.rng, inserts.acknowledged());
        (
            kind,
            crate::workload::id_of(index, w.records, inserts.first()),
        )
    }

    /// A replay's next operation: this client's next of the trace, its
    /// value size kept for the write, and when the one after it is due.
    /// Out of line, so that other runs keep the short path.
    #[inline(never)]
    fn next_replayed(&mut self, job: &Job, trace: &crate::replay::Trace) -> (OpKind, u64) {
        let op = trace.ops[self.replay_next];
        self.replay_next += job.inputs.workload.clients.max(1) as usize;
        self.replay_size = op.size as usize;
        self.next_due = replay_due(trace, self.replay_next, job.inputs.workload.replay_speed);
        (op.kind, op.record)
    }

    /// The durability check's next write: a fresh id of this writer. Out
    /// of line, so that the request path of every other run stays small
    /// enough to be inlined.
    #[inline(never)]
    fn next_unique(&mut self) -> (OpKind, u64) {
        let id = WriteId {
            writer: self.writer,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        (OpKind::Set, id.record())
    }

    /// Every write this client made as a durability writer, in order
    /// (none for any other client).
    pub fn unique_writes(&self) -> impl Iterator<Item = WriteId> + '_ {
        let n = if self.unique { self.next_seq } else { 0 };
        (0..n).map(|seq| WriteId {
            writer: self.writer,
            seq,
        })
    }

    /// The version the next write of this client carries (1 and up in a
    /// measure job; the load writes version 0).
    #[inline]
    pub fn next_version(&self) -> u32 {
        self.version
    }

    /// The value for a write of record `key`: its header and the payload
    /// that follows it.
    #[inline]
    pub fn value<'p>(&mut self, job: &'p Job, key: u64) -> ([u8; HEADER_LEN], &'p [u8]) {
        let w = job.inputs.workload;
        let len = match job.inputs.replay {
            None => w.value_size.next(&mut self.rng),
            Some(trace) => self.replayed_size(job, trace, key),
        };
        let version = self.value_version(job);
        self.version = self.version.wrapping_add(1);
        job.inputs.pool.value(key, version, len, w.value_content)
    }

    /// The record of several fields for a write of record `key` (see
    /// [`crate::value::ValuePool::record`]), in this client's buffer. Out
    /// of line: only records of several fields come here.
    #[inline(never)]
    pub fn record(&mut self, job: &Job, key: u64) -> &[u8] {
        let w = job.inputs.workload;
        let version = self.value_version(job);
        self.version = self.version.wrapping_add(1);
        job.inputs.pool.record(
            key,
            version,
            w.fields,
            w.field_len(),
            w.value_content,
            &mut self.record,
        );
        &self.record
    }

    /// A write of one field of record `key` (of several fields): which
    /// field, drawn uniformly (YCSB's `writeallfields=false`), and its
    /// value as a header and a payload. Out of line: only records of
    /// several fields come here.
    #[inline(never)]
    pub fn field<'p>(&mut self, job: &'p Job, key: u64) -> (usize, [u8; HEADER_LEN], &'p [u8]) {
        let w = job.inputs.workload;
        let field = self.rng.below(u64::from(w.fields.max(1))) as u32;
        let version = crate::value::field_version(self.value_version(job), field);
        self.version = self.version.wrapping_add(1);
        let (h, p) = job
            .inputs
            .pool
            .value(key, version, w.field_len(), w.value_content);
        (field as usize, h, p)
    }

    /// A replay's value size: the trace's operation's, or in the load the
    /// size the record's key was first seen with.
    #[inline(never)]
    fn replayed_size(&self, job: &Job, trace: &crate::replay::Trace, key: u64) -> usize {
        match job.kind {
            JobKind::Measure => self.replay_size,
            _ => trace
                .sizes
                .get(key as usize)
                .map_or(HEADER_LEN, |&s| s as usize),
        }
    }

    /// The version a value written now carries.
    #[inline]
    fn value_version(&self, job: &Job) -> u32 {
        if job.kind == JobKind::Load {
            0
        } else if self.unique {
            // The durability check's values carry the run's mark.
            job.inputs.nonce
        } else {
            self.version
        }
    }

    /// The value of a write's second request (see
    /// [`crate::driver::Codec::encode_follow_up`]): a value of record `key`
    /// like [`Client::value`]'s, its length drawn from a stream of its own,
    /// so that the client's stream of operations, keys and lengths is the
    /// same whatever number of writes needed a second request (and so the
    /// same on every target of a run).
    #[inline(never)]
    pub fn value_again<'p>(&self, job: &'p Job, key: u64) -> ([u8; HEADER_LEN], &'p [u8]) {
        let w = job.inputs.workload;
        let version = self.value_version(job);
        let mut own = Rng::new(key ^ u64::from(version).rotate_left(32), 1);
        let len = w.value_size.next(&mut own);
        job.inputs.pool.value(key, version, len, w.value_content)
    }

    /// Parameters of a `kind` search, from this client's stream.
    pub fn query(&mut self, kind: crate::profile::SearchKind) -> crate::profile::Query {
        crate::profile::Query::draw(kind, &mut self.rng)
    }

    /// A number uniform in `0..n` from this client's stream.
    pub fn draw_below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// Drops the rest of this client's work (its target is gone for good).
    pub fn give_up(&mut self) {
        self.quota = 0;
        self.next_load = self.load_end;
        self.next_read = usize::MAX;
    }

    /// Open loop: requests that fell due while the target was unreachable
    /// are dropped, not made late.
    pub fn skip_missed(&mut self, now: u64) {
        if self.period > 0 && self.next_due < now {
            let behind = (now - self.next_due) / self.period;
            self.next_due += behind * self.period;
        }
    }
}

/// When the trace's operation `index` is due, ns since the job's start,
/// at `speed` times its own pace (`u64::MAX` past its end).
fn replay_due(trace: &crate::replay::Trace, index: usize, speed: f64) -> u64 {
    trace
        .ops
        .get(index)
        .map_or(u64::MAX, |op| (op.at_ns as f64 / speed) as u64)
}

/// The items the zipfian hashes onto in a run with inserts (YCSB's
/// `insertcount + 2 × operationcount × insert share`), when the run counts
/// its operations; a timed run hashes onto the records there are.
fn zipf_items(w: &crate::plan::Workload, inserts: bool) -> Option<u64> {
    let ops = w
        .ops
        .or(w.ops_per_client.map(|n| n * u64::from(w.clients)))?;
    inserts.then(|| w.records + (2.0 * ops as f64 * w.mix.share(OpKind::Insert)) as u64)
}

/// The record near `key` that client `owner.0` of `owner.1` owns (ids equal
/// to its index modulo the clients), among `records`.
#[inline]
fn owned((index, clients): (u64, u64), key: u64, records: u64) -> u64 {
    let k = key - key % clients + index;
    if k < records {
        k
    } else if k >= clients {
        k - clients
    } else {
        index.min(records.saturating_sub(1))
    }
}

#[cfg(test)]
mod owned_tests {
    use super::owned;

    #[test]
    fn a_writer_keeps_to_its_own_records() {
        for key in 0..1003 {
            let k = owned((2, 4), key, 1003);
            assert!(k < 1003 && k % 4 == 2, "{key} -> {k}");
            assert!(k.abs_diff(key) < 8);
        }
        assert_eq!(owned((3, 4), 0, 2), 1, "fewer records than clients");
    }
}
