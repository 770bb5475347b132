//! How bakeoff names records: record `id`'s key is `bk:` and its id in
//! 12 decimal digits, so that every key has the same length and keys sort
//! as their ids do.

/// Length of a key: `bk:` and 12 digits.
pub const KEY_LEN: usize = 15;

/// Two ASCII digits for each of 0..100.
const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the key of record `id` into `out` (`bk:000000000042`); two
/// digits per step, as this runs once per operation.
#[inline]
pub fn format_key(id: u64, out: &mut [u8; KEY_LEN]) {
    out[..3].copy_from_slice(b"bk:");
    let mut v = id % 1_000_000_000_000;
    let mut i = KEY_LEN;
    while i > 3 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        out[i - 2..i].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        i -= 2;
    }
}

/// The key of record `id`, by value.
#[inline]
pub fn key_of(id: u64) -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    format_key(id, &mut k);
    k
}

/// The record id a key names, if it is one of bakeoff's keys.
#[inline]
pub fn id_of_key(key: &[u8]) -> Option<u64> {
    let digits = key.strip_prefix(b"bk:")?;
    if digits.len() != KEY_LEN - 3 {
        return None;
    }
    digits.iter().try_fold(0u64, |id, &d| {
        d.is_ascii_digit().then(|| id * 10 + u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width() {
        let mut k = [0u8; KEY_LEN];
        format_key(42, &mut k);
        assert_eq!(&k, b"bk:000000000042");
        format_key(999_999_999_999, &mut k);
        assert_eq!(&k, b"bk:999999999999");
        assert_eq!(&key_of(7), b"bk:000000000007");
        assert_eq!(id_of_key(b"bk:000000000042"), Some(42));
        assert_eq!(id_of_key(b"bk:00000000004x"), None);
        assert_eq!(id_of_key(b"xx:000000000042"), None);
        assert_eq!(id_of_key(b"bk:42"), None);
    }
}
