//! Stale reads in a replication run: a read that returns an older version
//! of a record than the last write of it acknowledged before the read was
//! sent.
//!
//! Every value's header carries its writer's version counter. In a run on
//! a primary and a replica each record has one writer (its id modulo the
//! clients, see [`crate::client::ClientState`]), whose versions rise in the
//! order its writes reach the primary, and so in the order a replica
//! applies them. The client keeps, per record, the highest version
//! acknowledged so far; a read carries that floor from the moment it is
//! sent, and a value read back below it is stale.

use std::sync::atomic::{AtomicU32, Ordering};

/// The highest acknowledged version of each record (plus one; 0: none),
/// shared by every worker of a measure job.
pub struct AckedVersions(Vec<AtomicU32>);

impl AckedVersions {
    /// Nothing acknowledged yet, for `records` records.
    pub fn new(records: u64) -> Self {
        Self((0..records).map(|_| AtomicU32::new(0)).collect())
    }

    /// The floor a read of record `id` sent now carries.
    #[inline]
    pub fn floor(&self, id: u64) -> u32 {
        self.0
            .get(id as usize)
            .map_or(0, |v| v.load(Ordering::Acquire))
    }

    /// A write of `version` to record `id` was acknowledged.
    #[inline]
    pub fn ack(&self, id: u64, version: u32) {
        if let Some(v) = self.0.get(id as usize) {
            v.fetch_max(version.saturating_add(1), Ordering::AcqRel);
        }
    }

    /// Whether a read that carried `floor` and found `version` is stale.
    #[inline]
    pub fn is_stale(floor: u32, version: u32) -> bool {
        floor > 0 && version < floor - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_below_the_acknowledged_version_is_stale() {
        let a = AckedVersions::new(10);
        assert_eq!(a.floor(3), 0);
        assert!(
            !AckedVersions::is_stale(a.floor(3), 0),
            "nothing acknowledged"
        );
        a.ack(3, 5);
        a.ack(3, 4); // a late acknowledgement never lowers the floor
        let floor = a.floor(3);
        assert!(AckedVersions::is_stale(floor, 4));
        assert!(!AckedVersions::is_stale(floor, 5));
        assert!(!AckedVersions::is_stale(floor, 6));
        assert_eq!(a.floor(99), 0, "out of range ids are never stale");
    }
}
