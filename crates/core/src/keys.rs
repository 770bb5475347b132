//! How records are named. bakeoff's own naming: record `id`'s key is
//! `bk:` and its id in 12 decimal digits, so that every key has the same
//! length and keys sort as their ids do. YCSB's (`--key-naming ycsb`):
//! `user` and the decimal of YCSB's hash of the id, unpadded, as YCSB's
//! CoreWorkload names them by default (`insertorder=hashed`,
//! `zeropadding=1`): 22 or 23 bytes mostly, in no order of the ids.

use serde::{Deserialize, Serialize};

/// Length of a key of bakeoff's naming: `bk:` and 12 digits.
pub const KEY_LEN: usize = 15;

/// Longest key of any naming: YCSB's `user` and up to 19 digits.
pub const KEY_MAX: usize = 23;

/// How records are named.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum KeyNaming {
    /// `bk:000000000042`: fixed width, in the ids' order.
    #[default]
    Bakeoff,
    /// `user6284781860667377211`: YCSB's, `user` and the decimal of
    /// `abs(FNV-1a-64)` of the id's 8 little-endian bytes.
    Ycsb,
}

impl std::str::FromStr for KeyNaming {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bakeoff" => Ok(Self::Bakeoff),
            "ycsb" => Ok(Self::Ycsb),
            other => Err(format!(
                "unknown key naming `{other}`; use bakeoff (bk:000000000042) or ycsb (user and a hash of the id, as YCSB names records)"
            )),
        }
    }
}

impl std::fmt::Display for KeyNaming {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            Self::Bakeoff => "bakeoff",
            Self::Ycsb => "ycsb",
        })
    }
}

/// A record's key, held inline (no allocation): its bytes and length.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key {
    bytes: [u8; KEY_MAX],
    len: u8,
}

impl Key {
    /// A key of these bytes; `None` when longer than [`KEY_MAX`].
    pub fn from_bytes(bytes: &[u8]) -> Option<Key> {
        let mut k = Key {
            bytes: [0; KEY_MAX],
            len: u8::try_from(bytes.len())
                .ok()
                .filter(|&n| n as usize <= KEY_MAX)?,
        };
        k.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(k)
    }

    /// The key's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl KeyNaming {
    /// Writes the key of record `id` into `out`; returns its length.
    #[inline]
    pub fn write(self, id: u64, out: &mut [u8; KEY_MAX]) -> usize {
        match self {
            Self::Bakeoff => {
                let fixed: &mut [u8; KEY_LEN] = (&mut out[..KEY_LEN])
                    .try_into()
                    .expect("KEY_LEN <= KEY_MAX");
                format_key(id, fixed);
                KEY_LEN
            }
            Self::Ycsb => ycsb_key(id, out),
        }
    }

    /// The key of record `id`, by value.
    #[inline]
    pub fn key(self, id: u64) -> Key {
        let mut k = Key {
            bytes: [0; KEY_MAX],
            len: 0,
        };
        k.len = self.write(id, &mut k.bytes) as u8;
        k
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the id's 8 little-endian bytes,
/// as a Java `long`, made positive with `Math.abs` (the one hash Java
/// leaves negative, `i64::MIN`, is taken as its magnitude here).
#[inline]
pub fn ycsb_hash(id: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut v = id;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    (h as i64).unsigned_abs()
}

/// Writes YCSB's key of record `id` (`user` and the unpadded decimal of
/// [`ycsb_hash`]) into `out`; returns its length.
#[inline]
fn ycsb_key(id: u64, out: &mut [u8; KEY_MAX]) -> usize {
    out[..4].copy_from_slice(b"user");
    let mut digits = [0u8; 20];
    let mut v = ycsb_hash(id);
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let n = (digits.len() - i).min(KEY_MAX - 4);
    out[4..4 + n].copy_from_slice(&digits[digits.len() - n..]);
    4 + n
}

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

    #[test]
    fn ycsb_keys_are_ycsbs_own() {
        // As YCSB 0.17.0's CoreWorkload named records 0..5 (BasicDB,
        // verbose, a load of 5 records).
        let want = [
            "user6284781860667377211",
            "user8517097267634966620",
            "user1820151046732198393",
            "user4052466453699787802",
            "user3232700585171816769",
        ];
        for (id, w) in want.iter().enumerate() {
            assert_eq!(KeyNaming::Ycsb.key(id as u64).as_bytes(), w.as_bytes());
        }
        assert_eq!(KeyNaming::Bakeoff.key(42).as_bytes(), b"bk:000000000042");
        // Every key fits; most are 22 or 23 bytes.
        let lens: Vec<usize> = (0..10_000u64)
            .map(|id| KeyNaming::Ycsb.key(id).len())
            .collect();
        assert!(lens.iter().all(|&n| (5..=KEY_MAX).contains(&n)));
        let long = lens.iter().filter(|&&n| n >= 22).count();
        assert!(long > 9_800, "{long} of 10000 keys are 22 or 23 bytes");
        assert_eq!("YCSB".parse::<KeyNaming>(), Ok(KeyNaming::Ycsb));
        assert!("hashed".parse::<KeyNaming>().is_err());
    }
}
