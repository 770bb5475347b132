//! Scans: how a target hands back the records a scan read, and how every
//! one of them is checked — its key in range and in order, its value what
//! bakeoff wrote, and their number what the target is known to hold from
//! the start key on.

use crate::keys::{id_of_key, KEY_LEN};
use crate::value::ValuePool;

/// Appends one record a scan read to `out`: its key (bakeoff's keys have
/// [`KEY_LEN`] bytes), its value's length as 4 little-endian bytes, and
/// the value.
#[inline]
pub fn push_row(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(key);
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

/// The records [`push_row`] wrote into `bytes`, as (key, value); `None`
/// where the bytes end inside a record.
pub fn rows(bytes: &[u8]) -> impl Iterator<Item = Option<(&[u8], &[u8])>> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some((key, after)) = rest.split_at_checked(KEY_LEN) else {
            rest = &[];
            return Some(None);
        };
        let Some((len, after)) = after.split_at_checked(4) else {
            rest = &[];
            return Some(None);
        };
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let Some((value, after)) = after.split_at_checked(len) else {
            rest = &[];
            return Some(None);
        };
        rest = after;
        Some(Some((key, value)))
    })
}

/// What the target is known to hold when a scan is sent: the records
/// the load wrote (when nothing deletes them) and the inserted ids
/// acknowledged before it.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    /// Ids `0..records` are there (0 when the load was skipped or
    /// records are deleted).
    pub records: u64,
    /// The first inserted id.
    pub first_insert: u64,
    /// Inserted ids acknowledged, from `first_insert` on.
    pub inserted: u64,
}

impl Held {
    /// How many records known to be there have ids `start` or after.
    pub fn from(&self, start: u64) -> u64 {
        let loaded = self.records.saturating_sub(start);
        let end = self.first_insert + self.inserted;
        let inserted = end.saturating_sub(start.max(self.first_insert));
        loaded + inserted
    }
}

/// Checks the records a scan from id `start` for at most `limit` records
/// returned in `bytes`: each key names a record at `start` or after, in
/// increasing order, each value verifies, and there are as many as the
/// target is known to hold there (`held`), up to `limit`. The error says
/// what was wrong.
pub fn check(
    pool: &ValuePool,
    start: u64,
    limit: u32,
    bytes: &[u8],
    held: Option<Held>,
) -> Result<(), String> {
    let mut count = 0u64;
    let mut last: Option<u64> = None;
    for row in rows(bytes) {
        let (key, value) = row.ok_or("the scan's records end inside a record")?;
        let id = id_of_key(key).ok_or_else(|| {
            format!(
                "the scan returned `{}`, not one of bakeoff's keys",
                String::from_utf8_lossy(key)
            )
        })?;
        if id < start || last.is_some_and(|l| id <= l) {
            return Err(format!(
                "the scan from id {start} returned id {id} after {}: not in key order from its start",
                last.map_or("its start".into(), |l| format!("id {l}"))
            ));
        }
        pool.verify(id, value)
            .map_err(|e| format!("the scan's record {id} is not what bakeoff wrote ({e:?})"))?;
        last = Some(id);
        count += 1;
    }
    if count > u64::from(limit) {
        return Err(format!(
            "the scan returned {count} records, more than the {limit} asked for"
        ));
    }
    if let Some(held) = held {
        let least = held.from(start).min(u64::from(limit));
        if count < least {
            return Err(format!(
                "the scan from id {start} returned {count} records where {least} are stored"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::key_of;
    use crate::value::ValueContent;

    fn scanned(pool: &ValuePool, ids: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            let (head, payload) = pool.value(id, 0, 100, ValueContent::Random);
            let mut v = head.to_vec();
            v.extend_from_slice(payload);
            push_row(&mut out, &key_of(id), &v);
        }
        out
    }

    fn held(records: u64) -> Option<Held> {
        Some(Held {
            records,
            first_insert: records,
            inserted: 0,
        })
    }

    #[test]
    fn a_full_scan_in_order_passes() {
        let pool = ValuePool::new(4096);
        let bytes = scanned(&pool, &[5, 6, 7]);
        assert_eq!(check(&pool, 5, 3, &bytes, held(10)), Ok(()));
        // Near the end of the records, fewer than asked are all there are.
        assert_eq!(
            check(&pool, 5, 10, &scanned(&pool, &[5, 6, 7]), held(8)),
            Ok(())
        );
    }

    #[test]
    fn missing_out_of_order_and_corrupt_records_are_caught() {
        let pool = ValuePool::new(4096);
        let short = check(&pool, 5, 3, &scanned(&pool, &[5, 6]), held(10));
        assert!(short.unwrap_err().contains("where 3 are stored"));
        let order = check(&pool, 5, 3, &scanned(&pool, &[5, 7, 6]), held(10));
        assert!(order.unwrap_err().contains("not in key order"));
        let before = check(&pool, 5, 3, &scanned(&pool, &[4]), held(10));
        assert!(before.unwrap_err().contains("not in key order"));
        let mut bytes = scanned(&pool, &[5]);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let corrupt = check(&pool, 5, 1, &bytes, held(10));
        assert!(corrupt.unwrap_err().contains("not what bakeoff wrote"));
        let cut = scanned(&pool, &[5]);
        assert!(check(&pool, 5, 1, &cut[..cut.len() - 1], None).is_err());
    }

    #[test]
    fn acknowledged_inserts_count_as_held() {
        let h = Held {
            records: 10,
            first_insert: 1000,
            inserted: 5,
        };
        assert_eq!(h.from(8), 2 + 5);
        assert_eq!(h.from(1002), 3);
        assert_eq!(h.from(2000), 0);
    }
}
