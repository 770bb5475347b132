//! The ids a run's inserts write (YCSB's insert with its acknowledged
//! counter): handed out in order from the first id after the records (a
//! shard's own range when several processes insert), and readable by the
//! other operations only once every id before them has been acknowledged,
//! so that a read never asks for a record whose insert may still be on
//! the wire.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Largest record id a key can name (`bk:` and 12 digits).
pub const MAX_ID: u64 = 999_999_999_999;

/// The insert counter of one run, shared by every client of the process.
#[derive(Debug)]
pub struct InsertKeys {
    /// The first id inserts write.
    first: u64,
    /// The next id to hand out.
    next: AtomicU64,
    /// Ids `first..acked` are every one acknowledged.
    acked: AtomicU64,
    /// Acknowledged ids above `acked`, waiting for the ones before them.
    waiting: Mutex<BTreeSet<u64>>,
}

impl InsertKeys {
    /// A counter whose first id is `first`.
    pub fn new(first: u64) -> Self {
        Self {
            first,
            next: AtomicU64::new(first),
            acked: AtomicU64::new(first),
            waiting: Mutex::new(BTreeSet::new()),
        }
    }

    /// The first id inserts write.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The id the next insert writes.
    #[inline]
    pub fn take(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Ids handed out so far.
    pub fn taken(&self) -> u64 {
        self.next.load(Ordering::Relaxed) - self.first
    }

    /// Ids acknowledged in order so far: the chooser may draw the first
    /// this many.
    #[inline]
    pub fn acknowledged(&self) -> u64 {
        self.acked.load(Ordering::Acquire) - self.first
    }

    /// The insert of `id` is over (acknowledged, or failed: YCSB
    /// acknowledges in either case, and a read of a failed one is a
    /// miss). Ids after a gap wait for it.
    pub fn acknowledge(&self, id: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        let mut acked = self.acked.load(Ordering::Relaxed);
        if id != acked {
            waiting.insert(id);
            return;
        }
        acked += 1;
        while waiting.remove(&acked) {
            acked += 1;
        }
        self.acked.store(acked, Ordering::Release);
    }
}

/// The first id shard `index` of `count` inserts, for a run over
/// `records` records: the ids above the records split in equal ranges, so
/// that no two processes insert the same id (YCSB's processes all start
/// at the record count).
pub fn shard_first(records: u64, index: u32, count: u32) -> u64 {
    let span = (MAX_ID + 1).saturating_sub(records) / u64::from(count.max(1));
    records + span * u64::from(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_readable_in_order_only() {
        let k = InsertKeys::new(100);
        let (a, b, c) = (k.take(), k.take(), k.take());
        assert_eq!((a, b, c), (100, 101, 102));
        k.acknowledge(c);
        k.acknowledge(b);
        assert_eq!(k.acknowledged(), 0, "101 and 102 wait for 100");
        k.acknowledge(a);
        assert_eq!(k.acknowledged(), 3);
        assert_eq!(k.taken(), 3);
    }

    #[test]
    fn shards_insert_disjoint_ranges() {
        let firsts: Vec<u64> = (0..4).map(|i| shard_first(1000, i, 4)).collect();
        assert_eq!(firsts[0], 1000);
        for w in firsts.windows(2) {
            assert!(w[1] - w[0] >= 100_000_000_000, "{firsts:?}");
        }
        assert!(firsts[3] < MAX_ID);
    }
}
