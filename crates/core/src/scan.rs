//! Scans: how a target hands back the records a scan read, and how every
//! one of them is checked — its key in range and in order, its value what
//! bakeoff wrote, and their number what the target is known to hold from
//! the start key on.

use crate::keys::{id_of_key, KeyNaming};
use crate::value::ValuePool;

/// Appends one record a scan read to `out`: its key's length (one byte),
/// its key (bakeoff's keys are [`crate::keys::KEY_MAX`] bytes at most; a
/// longer one is cut, and fails the check as not one of them), its
/// value's length as 4 little-endian bytes, and the value.
#[inline]
pub fn push_row(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let key = &key[..key.len().min(u8::MAX as usize)];
    out.push(key.len() as u8);
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
        let Some((&key_len, after)) = rest.split_first() else {
            rest = &[];
            return Some(None);
        };
        let Some((key, after)) = after.split_at_checked(key_len as usize) else {
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

/// Checks the records a scan from record `start`'s key for at most
/// `limit` records returned in `bytes`, keys named as `naming` says: each
/// key is the start key or after it, in increasing order, each value
/// verifies as its key's record (of `fields` fields), and there are as many as the target is
/// known to hold there (`held`, counted by id: bakeoff's naming only, where
/// keys sort as ids do), up to `limit`. The error says what was wrong.
pub fn check(
    pool: &ValuePool,
    naming: KeyNaming,
    fields: u32,
    start: u64,
    limit: u32,
    bytes: &[u8],
    held: Option<Held>,
) -> Result<(), String> {
    let start_key = naming.key(start);
    let mut count = 0u64;
    let mut last: Option<&[u8]> = None;
    for row in rows(bytes) {
        let (key, value) = row.ok_or("the scan's records end inside a record")?;
        let shown = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
        if key < start_key.as_bytes() || last.is_some_and(|l| key <= l) {
            return Err(format!(
                "the scan from `{}` returned `{}` after {}: not in key order from its start",
                shown(&start_key),
                shown(key),
                last.map_or("its start".into(), |l| format!("`{}`", shown(l)))
            ));
        }
        // The record a key names: read from the key where it can be, else
        // from the value's header (checked against the key below).
        let id = match naming {
            KeyNaming::Bakeoff => id_of_key(key),
            KeyNaming::Ycsb => {
                crate::value::id_of(value).filter(|&id| naming.key(id).as_bytes() == key)
            }
        }
        .ok_or_else(|| {
            format!(
                "the scan returned `{}`, not one of bakeoff's keys",
                shown(key)
            )
        })?;
        pool.verify_record(id, value, fields).map_err(|e| {
            format!(
                "the scan's record `{}` is not what bakeoff wrote ({e:?})",
                shown(key)
            )
        })?;
        last = Some(key);
        count += 1;
    }
    if count > u64::from(limit) {
        return Err(format!(
            "the scan returned {count} records, more than the {limit} asked for"
        ));
    }
    if let Some(held) = held.filter(|_| naming == KeyNaming::Bakeoff) {
        let least = held.from(start).min(u64::from(limit));
        if count < least {
            return Err(format!(
                "the scan from `{}` returned {count} records where {least} are stored",
                String::from_utf8_lossy(&start_key)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::ValueContent;

    fn scanned(pool: &ValuePool, naming: KeyNaming, ids: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            let (head, payload) = pool.value(id, 0, 100, ValueContent::Random);
            let mut v = head.to_vec();
            v.extend_from_slice(payload);
            push_row(&mut out, &naming.key(id), &v);
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
        let bytes = scanned(&pool, KeyNaming::Bakeoff, &[5, 6, 7]);
        assert_eq!(
            check(&pool, KeyNaming::Bakeoff, 1, 5, 3, &bytes, held(10)),
            Ok(())
        );
        // Near the end of the records, fewer than asked are all there are.
        assert_eq!(
            check(
                &pool,
                KeyNaming::Bakeoff,
                1,
                5,
                10,
                &scanned(&pool, KeyNaming::Bakeoff, &[5, 6, 7]),
                held(8)
            ),
            Ok(())
        );
    }

    #[test]
    fn missing_out_of_order_and_corrupt_records_are_caught() {
        let pool = ValuePool::new(4096);
        let short = check(
            &pool,
            KeyNaming::Bakeoff,
            1,
            5,
            3,
            &scanned(&pool, KeyNaming::Bakeoff, &[5, 6]),
            held(10),
        );
        assert!(short.unwrap_err().contains("where 3 are stored"));
        let order = check(
            &pool,
            KeyNaming::Bakeoff,
            1,
            5,
            3,
            &scanned(&pool, KeyNaming::Bakeoff, &[5, 7, 6]),
            held(10),
        );
        assert!(order.unwrap_err().contains("not in key order"));
        let before = check(
            &pool,
            KeyNaming::Bakeoff,
            1,
            5,
            3,
            &scanned(&pool, KeyNaming::Bakeoff, &[4]),
            held(10),
        );
        assert!(before.unwrap_err().contains("not in key order"));
        let mut bytes = scanned(&pool, KeyNaming::Bakeoff, &[5]);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let corrupt = check(&pool, KeyNaming::Bakeoff, 1, 5, 1, &bytes, held(10));
        assert!(corrupt.unwrap_err().contains("not what bakeoff wrote"));
        let cut = scanned(&pool, KeyNaming::Bakeoff, &[5]);
        assert!(check(
            &pool,
            KeyNaming::Bakeoff,
            1,
            5,
            1,
            &cut[..cut.len() - 1],
            None
        )
        .is_err());
    }

    #[test]
    fn ycsb_named_records_are_checked_in_their_keys_order() {
        let pool = ValuePool::new(4096);
        let naming = KeyNaming::Ycsb;
        // The records after record 0's key, in key order (not id order).
        let start = naming.key(0);
        let mut after: Vec<u64> = (0..50).filter(|&id| naming.key(id) >= start).collect();
        after.sort_by_key(|&id| naming.key(id));
        assert!(
            after.windows(2).any(|w| w[0] > w[1]),
            "hash order is not id order"
        );
        let ok = scanned(&pool, naming, &after[..5]);
        assert_eq!(check(&pool, naming, 1, 0, 5, &ok, held(50)), Ok(()));
        let mut swapped = after[..5].to_vec();
        swapped.swap(1, 2);
        let order = check(
            &pool,
            naming,
            1,
            0,
            5,
            &scanned(&pool, naming, &swapped),
            None,
        );
        assert!(order.unwrap_err().contains("not in key order"));
        // A key whose value is another record's.
        let mut wrong = Vec::new();
        let (head, payload) = pool.value(after[1], 0, 100, ValueContent::Random);
        push_row(
            &mut wrong,
            &naming.key(after[0]),
            &[&head[..], payload].concat(),
        );
        let e = check(&pool, naming, 1, 0, 5, &wrong, None).unwrap_err();
        assert!(e.contains("not one of bakeoff's keys"), "{e}");
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
