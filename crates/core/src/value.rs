//! Self-verifying values.
//!
//! Every value bakeoff writes starts with a 24-byte header naming the record
//! it belongs to, followed by a payload cut from a fixed pool of bytes at an
//! offset derived from the header. A reader can therefore check any value it
//! gets back — right key, right length, header intact, payload intact —
//! without remembering what was written and without extra requests.
//!
//! Layout (little endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..2 | magic `BK` |
//! | 2 | format version (2) |
//! | 3 | content: 0 random, 1 compressible, 2 client-encoded (a payload of the run's table, see [`crate::encoding`]) |
//! | 4..12 | record id |
//! | 12..16 | record version (a writer's counter) |
//! | 16..20 | total length of the value, header included |
//! | 20..24 | checksum of bytes 0..20 |

use serde::{Deserialize, Serialize};

use crate::encoding::{EncodedPayloads, ValueForm};
use crate::workload::Rng;

/// Most fields a record may have (`--fields`): a field's index rides in
/// the top byte of its version.
pub const MAX_FIELDS: u32 = 255;

/// The version field `field` of a record written at `version` carries:
/// the version's low 24 bits, the field's index above them, so that a
/// field read back in another field's place fails verification.
#[inline]
pub fn field_version(version: u32, field: u32) -> u32 {
    (version & 0x00FF_FFFF) | (field << 24)
}

/// Version of the value layout; values of another layout fail verification.
pub const FORMAT_VERSION: u8 = 2;

/// Size of the header every value starts with; the smallest legal value.
pub const HEADER_LEN: usize = 24;

/// How the payload bytes look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValueContent {
    /// Incompressible random bytes.
    Random,
    /// Text made of a few repeated words (compresses about 4:1).
    Compressible,
}

impl std::str::FromStr for ValueContent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "random" => Ok(Self::Random),
            "compressible" => Ok(Self::Compressible),
            other => Err(format!(
                "unknown value content `{other}`; use random or compressible"
            )),
        }
    }
}

/// Why a value read back failed verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyError {
    /// Shorter than a header or not starting with the magic bytes.
    NotOurs,
    /// The header belongs to another record.
    WrongKey,
    /// The header's length differs from the bytes received.
    WrongLength,
    /// Header checksum or payload bytes differ from what was written.
    Corrupt,
}

/// The byte pool payloads are cut from: the same for every run, so a value
/// written by one bakeoff process verifies in another.
pub struct ValuePool {
    random: Vec<u8>,
    text: Vec<u8>,
    window: usize,
    /// The run's client-encoded payloads, when its values are encoded or
    /// compressed: every value's payload is one of them.
    encoded: Option<EncodedPayloads>,
}

/// The content byte of a client-encoded value.
const ENCODED: u8 = 2;

impl ValuePool {
    /// A pool able to serve payloads up to `max_value` bytes.
    pub fn new(max_value: usize) -> Self {
        let window = 1 << 20;
        let len = window + max_value.max(HEADER_LEN);
        let mut rng = Rng::new(0xBA4E_0FF5, 0);
        let mut random = vec![0u8; len];
        for chunk in random.chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        const WORDS: [&[u8]; 8] = [
            b"store ",
            b"value ",
            b"bakeoff ",
            b"record ",
            b"latency ",
            b"memory ",
            b"disk ",
            b"key ",
        ];
        let mut text = Vec::with_capacity(len);
        while text.len() < len {
            text.extend_from_slice(WORDS[rng.below(8) as usize]);
        }
        text.truncate(len);
        Self {
            random,
            text,
            window,
            encoded: None,
        }
    }

    /// A pool whose values are client-encoded in `form` (raw payloads of
    /// `value_len` bytes, header included, cut from `content`'s bytes).
    pub fn encoded(form: ValueForm, value_len: usize, content: ValueContent) -> Self {
        let raw_len = value_len.saturating_sub(HEADER_LEN).max(1);
        let mut pool = Self::new(value_len.max(HEADER_LEN + 1));
        let table = EncodedPayloads::new(form, pool.bytes(content as u8), raw_len);
        pool.encoded = Some(table);
        pool
    }

    /// The client-encoded payloads, if the values are encoded.
    pub fn encoded_payloads(&self) -> Option<&EncodedPayloads> {
        self.encoded.as_ref()
    }

    /// Largest value the pool makes (header included), given the largest
    /// size asked for.
    pub fn max_value(&self, asked: usize) -> usize {
        match &self.encoded {
            Some(t) => HEADER_LEN + t.max_len(),
            None => asked,
        }
    }

    fn bytes(&self, content: u8) -> &[u8] {
        if content == 1 {
            &self.text
        } else {
            &self.random
        }
    }

    #[inline]
    fn offset(&self, key_id: u64, version: u32) -> usize {
        // `window` is a power of two: a multiply-mix and a mask.
        let h = (key_id ^ ((version as u64) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 24) as usize) & (self.window - 1)
    }

    /// Builds the header of a `len`-byte value (`len >= HEADER_LEN`) and
    /// returns it with the payload slice that must follow it.
    #[inline]
    pub fn value(
        &self,
        key_id: u64,
        version: u32,
        len: usize,
        content: ValueContent,
    ) -> ([u8; HEADER_LEN], &[u8]) {
        let (c, len, payload) = match &self.encoded {
            Some(t) => {
                let p = t.get(self.offset(key_id, version));
                (ENCODED, HEADER_LEN + p.len(), Some(p))
            }
            None => (content as u8, len, None),
        };
        let mut h = [0u8; HEADER_LEN];
        h[0..2].copy_from_slice(b"BK");
        h[2] = FORMAT_VERSION;
        h[3] = c;
        h[4..12].copy_from_slice(&key_id.to_le_bytes());
        h[12..16].copy_from_slice(&version.to_le_bytes());
        h[16..20].copy_from_slice(&(len as u32).to_le_bytes());
        let sum = header_sum(&h[..20]);
        h[20..24].copy_from_slice(&sum.to_le_bytes());
        if let Some(p) = payload {
            return (h, p);
        }
        let off = self.offset(key_id, version);
        (h, &self.bytes(c)[off..off + (len - HEADER_LEN)])
    }

    /// Writes record `key_id` of `fields` fields of `field_len` bytes each
    /// (each a value of its own, as [`ValuePool::value`] makes them, its
    /// version [`field_version`]) into `out`, cleared first.
    pub fn record(
        &self,
        key_id: u64,
        version: u32,
        fields: u32,
        field_len: usize,
        content: ValueContent,
        out: &mut Vec<u8>,
    ) {
        out.clear();
        for f in 0..fields {
            let (h, p) = self.value(key_id, field_version(version, f), field_len, content);
            out.extend_from_slice(&h);
            out.extend_from_slice(p);
        }
    }

    /// Checks a record of `fields` fields read back for record `key_id`:
    /// as one value when it has one field; else each field, of equal
    /// lengths, must verify and carry its own index (see
    /// [`field_version`]).
    #[inline(always)]
    pub fn verify_record(&self, key_id: u64, value: &[u8], fields: u32) -> Result<(), VerifyError> {
        if fields <= 1 {
            return self.verify(key_id, value);
        }
        self.verify_fields(key_id, value, fields)
    }

    #[cold]
    fn verify_fields(&self, key_id: u64, value: &[u8], fields: u32) -> Result<(), VerifyError> {
        let n = fields as usize;
        if value.len() < n * HEADER_LEN || !value.len().is_multiple_of(n) {
            return Err(VerifyError::WrongLength);
        }
        for (f, field) in value.chunks_exact(value.len() / n).enumerate() {
            self.verify(key_id, field)?;
            if version_of(field).map(|v| v >> 24) != Some(f as u32) {
                return Err(VerifyError::Corrupt);
            }
        }
        Ok(())
    }

    /// Checks a value read back for record `key_id`. Inlined where reads
    /// are checked: out of line it cost a call and reloads of the pool's
    /// fields per read.
    #[inline(always)]
    pub fn verify(&self, key_id: u64, value: &[u8]) -> Result<(), VerifyError> {
        if value.len() < HEADER_LEN
            || &value[0..2] != b"BK"
            || value[2] != FORMAT_VERSION
            || value[3] > ENCODED
            || (value[3] == ENCODED) != self.encoded.is_some()
        {
            return Err(VerifyError::NotOurs);
        }
        let sum = u32::from_le_bytes(value[20..24].try_into().unwrap());
        if sum != header_sum(&value[..20]) {
            return Err(VerifyError::Corrupt);
        }
        let id = u64::from_le_bytes(value[4..12].try_into().unwrap());
        if id != key_id {
            return Err(VerifyError::WrongKey);
        }
        let len = u32::from_le_bytes(value[16..20].try_into().unwrap()) as usize;
        if len != value.len() {
            return Err(VerifyError::WrongLength);
        }
        let version = u32::from_le_bytes(value[12..16].try_into().unwrap());
        let off = self.offset(id, version);
        if let Some(t) = &self.encoded {
            return if t.get(off) == &value[HEADER_LEN..] {
                Ok(())
            } else {
                Err(VerifyError::Corrupt)
            };
        }
        let pool = self.bytes(value[3]);
        if pool.len() < off + len - HEADER_LEN
            || pool[off..off + len - HEADER_LEN] != value[HEADER_LEN..]
        {
            return Err(VerifyError::Corrupt);
        }
        Ok(())
    }
}

/// The record id in the header of `value` (whose it claims to be, before
/// [`ValuePool::verify`] says whether it is); `None` if it is too short to
/// have one.
pub fn id_of(value: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(value.get(4..12)?.try_into().ok()?))
}

/// The record version in the header of `value` (a writer's counter, or the
/// durability check's run mark); `None` if it is too short to have one.
pub fn version_of(value: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(value.get(12..16)?.try_into().ok()?))
}

/// Checksum of the first 20 header bytes: three words, multiply-mixed.
#[inline]
fn header_sum(bytes: &[u8]) -> u32 {
    let a = u64::from_le_bytes(bytes[0..8].try_into().expect("20 bytes"));
    let b = u64::from_le_bytes(bytes[8..16].try_into().expect("20 bytes"));
    let c = u32::from_le_bytes(bytes[16..20].try_into().expect("20 bytes")) as u64;
    let h = (a ^ 0x243F_6A88_85A3_08D3).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (b ^ 0x1319_8A2E_0370_7344).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (c ^ 0xA409_3822_299F_31D0).wrapping_mul(0x1656_67B1_9E37_79F9);
    ((h ^ (h >> 29)) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(h: [u8; HEADER_LEN], p: &[u8]) -> Vec<u8> {
        let mut v = h.to_vec();
        v.extend_from_slice(p);
        v
    }

    #[test]
    fn roundtrip_verifies() {
        let pool = ValuePool::new(4096);
        for (len, c) in [
            (24, ValueContent::Random),
            (100, ValueContent::Random),
            (4096, ValueContent::Compressible),
        ] {
            let (h, p) = pool.value(42, 7, len, c);
            let v = join(h, p);
            assert_eq!(v.len(), len);
            assert_eq!(pool.verify(42, &v), Ok(()));
        }
    }

    #[test]
    fn encoded_values_verify_and_a_plain_pool_refuses_them() {
        use crate::encoding::{Compression, Encoding};
        let form = ValueForm {
            encoding: Encoding::PhpSerialize,
            compression: Compression::Zlib,
        };
        let pool = ValuePool::encoded(form, 100, ValueContent::Random);
        let (h, p) = pool.value(42, 3, 100, ValueContent::Random);
        let v = join(h, p);
        assert_ne!(
            v.len(),
            100,
            "the encoding, not --value-size, sets the length"
        );
        assert!(v.len() <= pool.max_value(100));
        assert_eq!(pool.verify(42, &v), Ok(()));
        let mut bad = v.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(pool.verify(42, &bad), Err(VerifyError::Corrupt));
        assert_eq!(pool.verify(43, &v), Err(VerifyError::WrongKey));
        // Another version of the record is (most likely) another payload,
        // and each verifies.
        let (h2, p2) = pool.value(42, 4, 100, ValueContent::Random);
        assert_eq!(pool.verify(42, &join(h2, p2)), Ok(()));
        let plain = ValuePool::new(1000);
        assert_eq!(plain.verify(42, &v), Err(VerifyError::NotOurs));
        let (h, p) = plain.value(42, 3, 100, ValueContent::Random);
        assert_eq!(pool.verify(42, &join(h, p)), Err(VerifyError::NotOurs));
    }

    #[test]
    fn records_of_fields_verify_field_by_field() {
        let pool = ValuePool::new(4096);
        let mut rec = Vec::new();
        pool.record(7, 3, 10, 100, ValueContent::Random, &mut rec);
        assert_eq!(rec.len(), 1000);
        assert_eq!(pool.verify_record(7, &rec, 10), Ok(()));
        assert_eq!(pool.verify_record(8, &rec, 10), Err(VerifyError::WrongKey));
        // One field rewritten at another version still verifies.
        let (h, p) = pool.value(7, field_version(9, 4), 100, ValueContent::Random);
        rec[400..424].copy_from_slice(&h);
        rec[424..500].copy_from_slice(p);
        assert_eq!(pool.verify_record(7, &rec, 10), Ok(()));
        // Two fields swapped: each is whole, but in the other's place.
        let mut swapped = rec.clone();
        swapped[100..200].copy_from_slice(&rec[200..300]);
        swapped[200..300].copy_from_slice(&rec[100..200]);
        assert_eq!(
            pool.verify_record(7, &swapped, 10),
            Err(VerifyError::Corrupt)
        );
        let mut flipped = rec.clone();
        flipped[950] ^= 1;
        assert_eq!(
            pool.verify_record(7, &flipped, 10),
            Err(VerifyError::Corrupt)
        );
        assert_eq!(
            pool.verify_record(7, &rec[..990], 10),
            Err(VerifyError::WrongLength)
        );
        // As one value, a record of fields is not one.
        assert_eq!(
            pool.verify_record(7, &rec, 1),
            Err(VerifyError::WrongLength)
        );
    }

    #[test]
    fn tampering_is_detected() {
        let pool = ValuePool::new(1024);
        let (h, p) = pool.value(9, 1, 200, ValueContent::Random);
        let v = join(h, p);
        assert_eq!(pool.verify(10, &v), Err(VerifyError::WrongKey));
        let mut bad = v.clone();
        bad[150] ^= 1;
        assert_eq!(pool.verify(9, &bad), Err(VerifyError::Corrupt));
        let mut bad = v.clone();
        bad[13] ^= 1;
        assert_eq!(pool.verify(9, &bad), Err(VerifyError::Corrupt));
        assert_eq!(pool.verify(9, &v[..199]), Err(VerifyError::WrongLength));
        assert_eq!(
            pool.verify(9, b"hello world, not a bakeoff value"),
            Err(VerifyError::NotOurs)
        );
    }
}
