//! The durability check: what happened to every write around a fault.
//!
//! Writers write unique ids (writer, sequence), one operation per
//! acknowledgement, and log each write as invoked and then acknowledged,
//! failed (a definite rejection) or indeterminate (timeout, reset, no
//! reply). After the fault and the restart every attempted id is read back,
//! and [`classify`] sets the log against what the store holds:
//!
//! | logged | read back | class |
//! |---|---|---|
//! | acknowledged | present | ok |
//! | acknowledged | absent | **lost** |
//! | failed or indeterminate | present | **recovered** (seed 001's "failed" writes that happened) |
//! | failed or indeterminate | absent | not written, as reported |
//! | never attempted | present | unexpected |
//! | any | present, checksum wrong | corrupt |
//!
//! The loss window is the fault time minus the acknowledgement time of the
//! earliest lost write. Where a store promises to lose only a suffix of
//! its writes (PostgreSQL, InnoDB), a **hole** is a lost write followed by
//! a later acknowledged write of the same writer that survived.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// What a target's setting promises acknowledged writes survive: its
/// *durability class*, declared beside the settings that decide it and
/// checked against what 002-crash and 002-power-cut measure. Ordered from
/// weakest to strongest, so that a target's class is the least of what its
/// settings allow.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum DurableTo {
    /// Acknowledged writes live in the server's own memory: a crash of its
    /// process (or a restart) may lose them.
    MemoryOnly,
    /// Acknowledged writes have reached the kernel (written, not synced):
    /// they survive the process's crash, not the machine's power cut.
    ProcessCrash,
    /// Acknowledged writes are synced to the device: they survive a power
    /// cut.
    PowerCut,
}

impl DurableTo {
    /// Every class, weakest first.
    pub const ALL: [DurableTo; 3] = [
        DurableTo::MemoryOnly,
        DurableTo::ProcessCrash,
        DurableTo::PowerCut,
    ];

    /// How the reports name it: `memory only`, `process crash`, `power cut`.
    pub fn text(self) -> &'static str {
        match self {
            DurableTo::MemoryOnly => "memory only",
            DurableTo::ProcessCrash => "process crash",
            DurableTo::PowerCut => "power cut",
        }
    }

    /// How a verdict names the targets of this class: "that survive a
    /// power cut".
    pub fn group(self) -> &'static str {
        match self {
            DurableTo::MemoryOnly => "that keep writes in memory only",
            DurableTo::ProcessCrash => "that survive a process crash",
            DurableTo::PowerCut => "that survive a power cut",
        }
    }
}

impl std::fmt::Display for DurableTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// Record ids of the durability check start here, far above any loaded
/// record, so that its writes never touch what the load wrote.
pub const RECORD_BASE: u64 = 900_000_000_000;

/// Record ids each writer has: writer `w` writes `RECORD_BASE + w *
/// SEQ_SPAN + seq`.
pub const SEQ_SPAN: u64 = 100_000_000;

/// Most writers a durability check can have: their ids must stay within
/// the 12 digits of a key.
pub const MAX_WRITERS: u32 = 999;

/// One write: which writer, and its place in that writer's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WriteId {
    /// The writer (one per client).
    pub writer: u32,
    /// The writer's sequence number, from 0, one per write.
    pub seq: u64,
}

impl WriteId {
    /// The record id this write writes.
    #[inline]
    pub fn record(self) -> u64 {
        RECORD_BASE + self.writer as u64 * SEQ_SPAN + self.seq
    }

    /// The write that writes record `id`, if `id` is one of the check's.
    #[inline]
    pub fn of_record(id: u64) -> Option<WriteId> {
        let rel = id.checked_sub(RECORD_BASE)?;
        let writer = rel / SEQ_SPAN;
        (writer <= MAX_WRITERS as u64).then_some(WriteId {
            writer: writer as u32,
            seq: rel % SEQ_SPAN,
        })
    }
}

/// How a write ended, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The store acknowledged it, at this time (ns since the run's start).
    Acknowledged(u64),
    /// The store rejected it definitely (an error reply).
    Failed,
    /// No definite answer: timeout, reset, connection lost.
    Indeterminate,
}

/// The client side of the check: every write invoked, and how it ended.
#[derive(Clone, Debug, Default)]
pub struct WriteLog {
    writes: BTreeMap<WriteId, WriteOutcome>,
}

impl WriteLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs that `id` was invoked; until [`WriteLog::settle`] it counts as
    /// indeterminate (a write whose reply never came).
    pub fn invoke(&mut self, id: WriteId) {
        self.writes.insert(id, WriteOutcome::Indeterminate);
    }

    /// Logs how `id` ended.
    pub fn settle(&mut self, id: WriteId, outcome: WriteOutcome) {
        self.writes.insert(id, outcome);
    }

    /// Every write invoked, in (writer, sequence) order.
    pub fn ids(&self) -> impl Iterator<Item = WriteId> + '_ {
        self.writes.keys().copied()
    }

    /// Adds another log's writes (another worker's writers).
    pub fn merge(&mut self, other: WriteLog) {
        self.writes.extend(other.writes);
    }

    /// Whether `id` was invoked.
    pub fn contains(&self, id: WriteId) -> bool {
        self.writes.contains_key(&id)
    }

    /// The last sequence number each writer invoked.
    pub fn last_seq(&self) -> BTreeMap<u32, u64> {
        let mut last = BTreeMap::new();
        for id in self.writes.keys() {
            last.insert(id.writer, id.seq);
        }
        last
    }

    /// Writes invoked.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether nothing was invoked.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }
}

/// What one worker saw of the check: the writes its clients made (a
/// measure job), or what its read-back found (a read-back job).
#[derive(Clone, Debug, Default)]
pub struct WorkerDurability {
    /// Writes invoked, and how each ended.
    pub writes: WriteLog,
    /// Ids read back with a definite answer, and what it was.
    pub found: Vec<(WriteId, ReadBack)>,
    /// Ids holding a value of the check that another run wrote.
    pub foreign: Vec<WriteId>,
    /// Record ids whose read failed (error, reset, timeout): to be read
    /// again.
    pub unanswered: Vec<u64>,
}

impl WorkerDurability {
    /// Adds another worker's log.
    pub fn merge(&mut self, other: WorkerDurability) {
        self.writes.merge(other.writes);
        self.found.extend(other.found);
        self.foreign.extend(other.foreign);
        self.unanswered.extend(other.unanswered);
    }
}

/// What reading an id back found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadBack {
    /// The value is there and verifies.
    Present,
    /// There is no value.
    Absent,
    /// There is a value, but it does not verify (checksum, key, length).
    Corrupt,
}

/// The store side of the check: what each attempted id read back as, and
/// any ids found that were never attempted.
#[derive(Clone, Debug, Default)]
pub struct Stored {
    /// Read-back of attempted ids; an id missing here counts as absent.
    pub found: BTreeMap<WriteId, ReadBack>,
    /// Ids the store holds that no writer attempted.
    pub unexpected: BTreeSet<WriteId>,
    /// Attempted ids whose read-back never got a definite answer (every
    /// try failed): counted apart, neither kept nor lost.
    pub unread: BTreeSet<WriteId>,
}

/// The verdict on every write of one faulted run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DurabilityCheck {
    /// Writes invoked.
    pub attempted: u64,
    /// Writes acknowledged.
    pub acknowledged: u64,
    /// Acknowledged and present.
    pub ok: u64,
    /// Acknowledged and absent: acknowledged writes the store lost.
    pub lost: u64,
    /// Failed or indeterminate, yet present: writes that happened although
    /// the client was not told so.
    pub recovered: u64,
    /// Failed or indeterminate, and absent, as the client was told.
    pub not_written: u64,
    /// Present but never attempted.
    pub unexpected: u64,
    /// Present but not verifying.
    pub corrupt: u64,
    /// Attempted, but the read-back got no definite answer: neither kept
    /// nor lost.
    #[serde(default)]
    pub unread: u64,
    /// Fault time minus the acknowledgement time of the earliest lost
    /// write, ns; `None` when nothing acknowledged was lost.
    pub loss_window_ns: Option<u64>,
    /// Lost writes followed by a later acknowledged write of the same
    /// writer that survived: what a store that loses only a suffix must
    /// never show.
    pub holes: u64,
    /// Records the server evicted between the write phase's start and the
    /// read-back's end, by its own counter, where it keeps one: lost
    /// writes up to this many are evictions, not losses to a fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evicted: Option<u64>,
}

impl DurabilityCheck {
    /// Whether no acknowledged write was lost or damaged.
    pub fn kept_every_acknowledged_write(&self) -> bool {
        self.lost == 0 && self.corrupt == 0
    }

    /// Whether every lost write can be one the server evicted: as many
    /// records or more left by eviction, and nothing corrupt.
    pub fn losses_are_evictions(&self) -> bool {
        self.lost > 0 && self.corrupt == 0 && self.evicted.is_some_and(|e| e >= self.lost)
    }

    /// The measured class in words: `kept every acknowledged write`, or
    /// `lost 11 (window 3.2 ms)`; corrupt values and holes are named.
    pub fn verdict(&self) -> String {
        if self.acknowledged == 0 {
            return "nothing acknowledged".into();
        }
        let mut parts = Vec::new();
        if self.lost == 0 {
            parts.push("kept every acknowledged write".to_string());
        } else {
            let window = self
                .loss_window_ns
                .map(|w| format!(" (window {})", crate::units::fmt_ns(w as f64)))
                .unwrap_or_default();
            parts.push(format!("lost {}{window}", self.lost));
        }
        match self.evicted {
            Some(e) if e > 0 && self.losses_are_evictions() => parts.push(format!(
                "the server evicted {e} records meanwhile (its own count): evictions, not losses to a fault"
            )),
            Some(e) if e > 0 && self.lost > 0 => parts.push(format!(
                "the server evicted {e} records meanwhile (its own count), fewer than were lost"
            )),
            _ => {}
        }
        if self.holes > 0 {
            parts.push(format!("{} holes", self.holes));
        }
        if self.corrupt > 0 {
            parts.push(format!("{} corrupt", self.corrupt));
        }
        parts.join(", ")
    }
}

/// Sets `log` against `stored` for a fault at `fault_ns` (ns since the
/// run's start).
pub fn classify(log: &WriteLog, stored: &Stored, fault_ns: u64) -> DurabilityCheck {
    let mut c = DurabilityCheck {
        attempted: log.len() as u64,
        unexpected: stored.unexpected.len() as u64,
        ..DurabilityCheck::default()
    };
    let mut earliest_lost_ack: Option<u64> = None;
    // Per writer, walking its sequence backwards: whether a later
    // acknowledged write survived, so that a loss before it is a hole.
    let mut by_writer: BTreeMap<u32, Vec<(bool, bool)>> = BTreeMap::new();
    for (id, outcome) in &log.writes {
        if stored.unread.contains(id) {
            c.unread += 1;
            continue;
        }
        let read = stored.found.get(id).copied().unwrap_or(ReadBack::Absent);
        let acked = matches!(outcome, WriteOutcome::Acknowledged(_));
        if acked {
            c.acknowledged += 1;
        }
        match (outcome, read) {
            (_, ReadBack::Corrupt) => c.corrupt += 1,
            (WriteOutcome::Acknowledged(_), ReadBack::Present) => c.ok += 1,
            (WriteOutcome::Acknowledged(at), ReadBack::Absent) => {
                c.lost += 1;
                earliest_lost_ack = Some(earliest_lost_ack.map_or(*at, |e| e.min(*at)));
            }
            (_, ReadBack::Present) => c.recovered += 1,
            (_, ReadBack::Absent) => c.not_written += 1,
        }
        let lost = acked && read == ReadBack::Absent;
        // Only writes acknowledged before the fault make a hole: what the
        // restarted store took afterwards is not part of the sequence the
        // crash cut.
        let survived = matches!(outcome, WriteOutcome::Acknowledged(at) if *at <= fault_ns)
            && read == ReadBack::Present;
        by_writer
            .entry(id.writer)
            .or_default()
            .push((lost, survived));
    }
    for writes in by_writer.values() {
        let mut later_survivor = false;
        for &(lost, survived) in writes.iter().rev() {
            if lost && later_survivor {
                c.holes += 1;
            }
            later_survivor |= survived;
        }
    }
    c.loss_window_ns = earliest_lost_ack.map(|at| fault_ns.saturating_sub(at));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_round_trip_and_stay_in_twelve_digits() {
        let last = WriteId {
            writer: MAX_WRITERS,
            seq: SEQ_SPAN - 1,
        };
        assert!(last.record() <= 999_999_999_999);
        for w in [id(0, 0), id(3, 17), last] {
            assert_eq!(WriteId::of_record(w.record()), Some(w));
        }
        assert_eq!(WriteId::of_record(42), None, "a loaded record");
    }

    /// Everything before the fault lost, what came after it kept (a store
    /// that keeps nothing across a crash): no hole, as the survivors were
    /// written after the fault.
    #[test]
    fn writes_after_the_fault_make_no_hole() {
        let l = log();
        let mut s = everything_present(&l);
        for seq in 0..3 {
            s.found.insert(id(0, seq), ReadBack::Absent);
        }
        let c = classify(&l, &s, 3_500);
        assert_eq!((c.lost, c.holes), (3, 0));
        let c = classify(&l, &s, 10_000);
        assert_eq!(c.holes, 3, "the same losses before the fault are holes");
    }

    #[test]
    fn the_verdict_names_losses_and_holes() {
        let l = log();
        let s = everything_present(&l);
        assert_eq!(
            classify(&l, &s, 10_000).verdict(),
            "kept every acknowledged write"
        );
        let mut s = everything_present(&l);
        s.found.insert(id(0, 1), ReadBack::Absent);
        assert_eq!(
            classify(&l, &s, 10_000).verdict(),
            "lost 1 (window 8.0 µs), 1 holes"
        );
    }

    #[test]
    fn unread_ids_are_neither_kept_nor_lost() {
        let l = log();
        let mut s = everything_present(&l);
        s.found.remove(&id(0, 4));
        s.unread.insert(id(0, 4));
        let c = classify(&l, &s, 10_000);
        assert_eq!((c.unread, c.lost, c.ok), (1, 0, 5));
    }

    fn id(writer: u32, seq: u64) -> WriteId {
        WriteId { writer, seq }
    }

    /// Two writers; writer 0 has five acknowledged writes, writer 1 one
    /// failed, one indeterminate and one acknowledged.
    fn log() -> WriteLog {
        let mut l = WriteLog::new();
        for seq in 0..5 {
            l.invoke(id(0, seq));
            l.settle(id(0, seq), WriteOutcome::Acknowledged(1_000 * (seq + 1)));
        }
        l.invoke(id(1, 0));
        l.settle(id(1, 0), WriteOutcome::Failed);
        l.invoke(id(1, 1)); // never answered
        l.invoke(id(1, 2));
        l.settle(id(1, 2), WriteOutcome::Acknowledged(2_500));
        l
    }

    fn everything_present(log: &WriteLog) -> Stored {
        Stored {
            found: log.ids().map(|i| (i, ReadBack::Present)).collect(),
            unexpected: BTreeSet::new(),
            unread: BTreeSet::new(),
        }
    }

    #[test]
    fn a_store_that_kept_everything_passes() {
        let l = log();
        let mut s = everything_present(&l);
        s.found.insert(id(1, 0), ReadBack::Absent);
        s.found.insert(id(1, 1), ReadBack::Absent);
        let c = classify(&l, &s, 10_000);
        assert_eq!((c.attempted, c.acknowledged, c.ok), (8, 6, 6));
        assert_eq!((c.lost, c.recovered, c.not_written), (0, 0, 2));
        assert_eq!((c.loss_window_ns, c.holes), (None, 0));
        assert!(c.kept_every_acknowledged_write());
    }

    /// A lost suffix: the last two acknowledged writes of writer 0 gone.
    /// The window runs from the earliest of them to the fault; no hole.
    #[test]
    fn a_lost_suffix_has_a_window_and_no_hole() {
        let l = log();
        let mut s = everything_present(&l);
        s.found.insert(id(0, 3), ReadBack::Absent);
        s.found.remove(&id(0, 4)); // missing from the read-back: absent
        let c = classify(&l, &s, 10_000);
        assert_eq!(c.lost, 2);
        assert_eq!(c.loss_window_ns, Some(10_000 - 4_000));
        assert_eq!(c.holes, 0);
        assert!(!c.kept_every_acknowledged_write());
    }

    /// A write lost before a later one of the same writer survived is a
    /// hole; a loss in another writer's sequence does not make one.
    #[test]
    fn a_loss_before_a_survivor_is_a_hole() {
        let l = log();
        let mut s = everything_present(&l);
        s.found.insert(id(0, 1), ReadBack::Absent);
        let c = classify(&l, &s, 10_000);
        assert_eq!((c.lost, c.holes), (1, 1));
        assert_eq!(c.loss_window_ns, Some(10_000 - 2_000));
    }

    /// Seed 001: writes reported as failed, or never answered, that the
    /// store did make.
    #[test]
    fn failed_and_unanswered_writes_that_happened_are_recovered() {
        let l = log();
        let s = everything_present(&l);
        let c = classify(&l, &s, 10_000);
        assert_eq!((c.recovered, c.not_written, c.lost), (2, 0, 0));
    }

    #[test]
    fn corrupt_and_unexpected_values_are_counted_apart() {
        let l = log();
        let mut s = everything_present(&l);
        s.found.insert(id(0, 2), ReadBack::Corrupt);
        s.unexpected.insert(id(7, 0));
        let c = classify(&l, &s, 10_000);
        assert_eq!((c.corrupt, c.unexpected, c.ok, c.lost), (1, 1, 5, 0));
        assert!(!c.kept_every_acknowledged_write());
    }
}
