//! Client-side value encodings (seed 001-serialization-compression): what
//! an application stores is often not raw bytes but a structure it
//! serialised, and maybe compressed, on its side. Here the structure is
//! the seed's: an array of 50 integers, stored as PHP's `serialize()`
//! writes it (about 700 B) or joined with commas (about 350 B), with or
//! without zlib (as PHP's memcache extension compresses) or zstd.
//!
//! The bytes a run stores come from a table of payloads made before it
//! ([`EncodedPayloads`]): the servers see real encoded (and compressed)
//! values of the real sizes, and the client's hot path stays free of the
//! encoder. What encoding and decoding cost the client is measured apart,
//! on the same payloads ([`EncodedPayloads::cost`]), and added to the
//! client's CPU per operation in the report.

use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::recorder::thread_cpu_ns;

/// Integers in the seed's array.
pub const ARRAY_LEN: usize = 50;

/// Most bytes the payload table holds, whatever the value size.
const TABLE_BYTES: usize = 16 << 20;

/// How the client turns the record into the bytes it stores.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Encoding {
    /// The value as generated (`--value-size` bytes), not encoded.
    #[default]
    Raw,
    /// The 50-integer array as PHP's `serialize()` writes it:
    /// `a:50:{i:0;i:482913;i:1;…}` (about 700 B).
    PhpSerialize,
    /// The 50-integer array joined with commas: `482913,118204,…` (about
    /// 350 B).
    Joined,
}

impl Encoding {
    /// The name as written in flags and presets.
    pub fn name(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::PhpSerialize => "php-serialize",
            Self::Joined => "joined",
        }
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "raw" => Ok(Self::Raw),
            "php-serialize" | "serialize" => Ok(Self::PhpSerialize),
            "joined" => Ok(Self::Joined),
            o => Err(format!(
                "unknown encoding `{o}`; use raw, php-serialize (a serialised 50-integer array, about 700 B) or joined (the same array joined with commas, about 350 B)"
            )),
        }
    }
}

/// How the client compresses the encoded value before storing it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Stored as encoded.
    #[default]
    None,
    /// zlib at its default level, as PHP's memcache extension does.
    Zlib,
    /// zstd at level 3.
    Zstd,
}

impl Compression {
    /// The name as written in flags and presets.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Zlib => "zlib",
            Self::Zstd => "zstd",
        }
    }
}

impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "none" | "off" => Ok(Self::None),
            "zlib" => Ok(Self::Zlib),
            "zstd" => Ok(Self::Zstd),
            o => Err(format!("unknown compression `{o}`; use none, zlib or zstd")),
        }
    }
}

/// A stored value that does not decode.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("not a value of this encoding: {0}")]
pub struct DecodeError(&'static str);

/// The seed's array number `i`: 50 integers of six digits, the same for
/// every run.
pub fn array(i: u64) -> [u32; ARRAY_LEN] {
    let mut rng = crate::workload::Rng::new(0x5EED_A77A, i);
    std::array::from_fn(|_| 100_000 + (rng.next_u64() % 900_000) as u32)
}

/// Appends `ints` to `out` in `encoding` (not `Raw`).
pub fn encode(encoding: Encoding, ints: &[u32], out: &mut Vec<u8>) {
    match encoding {
        Encoding::Raw => {}
        Encoding::PhpSerialize => {
            let _ = write!(out, "a:{}:{{", ints.len());
            for (k, v) in ints.iter().enumerate() {
                let _ = write!(out, "i:{k};i:{v};");
            }
            out.push(b'}');
        }
        Encoding::Joined => {
            for (k, v) in ints.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                let _ = write!(out, "{v}");
            }
        }
    }
}

/// Parses a decimal number at the start of `b`: its value and the rest.
fn number(b: &[u8]) -> Result<(u64, &[u8]), DecodeError> {
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return Err(DecodeError("a number was expected"));
    }
    let n = b[..digits]
        .iter()
        .fold(0u64, |n, d| n * 10 + (d - b'0') as u64);
    Ok((n, &b[digits..]))
}

fn expect<'b>(b: &'b [u8], what: &[u8]) -> Result<&'b [u8], DecodeError> {
    b.strip_prefix(what).ok_or(DecodeError("unexpected byte"))
}

/// Decodes `bytes` written by [`encode`] in `encoding` into `out`.
pub fn decode(encoding: Encoding, bytes: &[u8], out: &mut Vec<u32>) -> Result<(), DecodeError> {
    out.clear();
    match encoding {
        Encoding::Raw => Err(DecodeError("raw values are not decoded")),
        Encoding::PhpSerialize => {
            let b = expect(bytes, b"a:")?;
            let (n, b) = number(b)?;
            let mut b = expect(b, b":{")?;
            for k in 0..n {
                b = expect(b, b"i:")?;
                let (index, rest) = number(b)?;
                if index != k {
                    return Err(DecodeError("array index out of order"));
                }
                b = expect(expect(rest, b";")?, b"i:")?;
                let (v, rest) = number(b)?;
                out.push(u32::try_from(v).map_err(|_| DecodeError("integer too large"))?);
                b = expect(rest, b";")?;
            }
            if expect(b, b"}")?.is_empty() {
                Ok(())
            } else {
                Err(DecodeError("bytes after the array"))
            }
        }
        Encoding::Joined => {
            for part in bytes.split(|c| *c == b',') {
                let (v, rest) = number(part)?;
                if !rest.is_empty() {
                    return Err(DecodeError("not a number between commas"));
                }
                out.push(u32::try_from(v).map_err(|_| DecodeError("integer too large"))?);
            }
            Ok(())
        }
    }
}

/// Appends `src` compressed with `compression` to `out`.
pub fn compress(compression: Compression, src: &[u8], out: &mut Vec<u8>) {
    match compression {
        Compression::None => out.extend_from_slice(src),
        Compression::Zlib => {
            let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::default());
            z.write_all(src).expect("writing to a Vec");
            z.finish().expect("writing to a Vec");
        }
        Compression::Zstd => {
            let packed = zstd::bulk::compress(src, 3).expect("zstd compresses any input");
            out.extend_from_slice(&packed);
        }
    }
}

/// Replaces `out` with `src` decompressed.
pub fn decompress(
    compression: Compression,
    src: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    out.clear();
    match compression {
        Compression::None => out.extend_from_slice(src),
        Compression::Zlib => {
            let mut z = flate2::write::ZlibDecoder::new(out);
            z.write_all(src)
                .and_then(|_| z.finish().map(|_| ()))
                .map_err(|_| DecodeError("not zlib data"))?;
        }
        Compression::Zstd => {
            let mut d = zstd::stream::write::Decoder::new(out)
                .map_err(|_| DecodeError("zstd cannot start"))?;
            d.write_all(src)
                .and_then(|_| d.flush())
                .map_err(|_| DecodeError("not zstd data"))?;
        }
    }
    Ok(())
}

/// What a run's values are made of, when the client encodes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueForm {
    /// How the record is encoded.
    pub encoding: Encoding,
    /// How the encoded bytes are compressed.
    pub compression: Compression,
}

impl ValueForm {
    /// Whether the values are the generated bytes as they are.
    pub fn is_plain(self) -> bool {
        self.encoding == Encoding::Raw && self.compression == Compression::None
    }
}

/// The client's cost of one value, measured apart from the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EncodingUsage {
    /// How the record was encoded.
    pub encoding: Encoding,
    /// How it was compressed.
    pub compression: Compression,
    /// Mean bytes of a value before compression (encoded, or raw).
    pub encoded_bytes: f64,
    /// Mean bytes of a value as stored, after compression (the payload,
    /// without bakeoff's 24-byte header).
    pub stored_bytes: f64,
    /// Client CPU to encode and compress one value, ns (thread CPU time).
    pub encode_ns: f64,
    /// Client CPU to decompress and decode one value, ns.
    pub decode_ns: f64,
}

/// The payloads a run stores: a table of values in `form`, each from its
/// own source (array `i`, or a slice of the generated bytes).
pub struct EncodedPayloads {
    form: ValueForm,
    /// What each payload was made from (the raw bytes, or the array's).
    sources: Vec<Source>,
    bytes: Vec<u8>,
    /// Start of payload `i` in `bytes`; one more than there are payloads.
    starts: Vec<usize>,
}

enum Source {
    Array(Box<[u32; ARRAY_LEN]>),
    Raw(Vec<u8>),
}

impl EncodedPayloads {
    /// A table of payloads in `form`. Raw values are cut from `raw` (the
    /// generated bytes), `raw_len` bytes each.
    pub fn new(form: ValueForm, raw: &[u8], raw_len: usize) -> Self {
        let each = match form.encoding {
            Encoding::Raw => raw_len.max(1),
            _ => 700,
        };
        let n = (TABLE_BYTES / each).clamp(16, 4096);
        let mut bytes = Vec::new();
        let mut starts = vec![0];
        let mut sources = Vec::with_capacity(n);
        let mut encoded = Vec::new();
        for i in 0..n {
            encoded.clear();
            let source = match form.encoding {
                Encoding::Raw => {
                    let at = (i * 7919 * 64) % raw.len().saturating_sub(raw_len).max(1);
                    let slice = raw[at..(at + raw_len).min(raw.len())].to_vec();
                    encoded.extend_from_slice(&slice);
                    Source::Raw(slice)
                }
                e => {
                    let ints = array(i as u64);
                    encode(e, &ints, &mut encoded);
                    Source::Array(Box::new(ints))
                }
            };
            compress(form.compression, &encoded, &mut bytes);
            starts.push(bytes.len());
            sources.push(source);
        }
        Self {
            form,
            sources,
            bytes,
            starts,
        }
    }

    /// The form of the payloads.
    pub fn form(&self) -> ValueForm {
        self.form
    }

    /// Number of payloads.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether the table is empty (never, once made).
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Payload `slot` (taken modulo the table's length).
    #[inline]
    pub fn get(&self, slot: usize) -> &[u8] {
        let i = slot % self.sources.len();
        &self.bytes[self.starts[i]..self.starts[i + 1]]
    }

    /// Largest payload.
    pub fn max_len(&self) -> usize {
        self.starts
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// Encodes and decodes every payload's source again, timed on this
    /// thread's CPU clock, for at least `at_least` of CPU each way, and
    /// checks that each decodes to its source.
    pub fn cost(&self, at_least: std::time::Duration) -> Result<EncodingUsage, DecodeError> {
        let floor = at_least.as_nanos() as u64;
        let (mut encoded, mut packed) = (Vec::new(), Vec::new());
        let (mut encode_ns, mut encodes) = (0u64, 0u64);
        let mut encoded_bytes = 0u64;
        while encode_ns < floor || encodes == 0 {
            let t = thread_cpu_ns();
            for s in &self.sources {
                encoded.clear();
                packed.clear();
                match s {
                    Source::Array(ints) => encode(self.form.encoding, &ints[..], &mut encoded),
                    Source::Raw(bytes) => encoded.extend_from_slice(bytes),
                }
                compress(self.form.compression, &encoded, &mut packed);
                encoded_bytes += encoded.len() as u64;
            }
            encode_ns += thread_cpu_ns() - t;
            encodes += self.sources.len() as u64;
        }
        let (mut plain, mut ints) = (Vec::new(), Vec::new());
        let (mut decode_ns, mut decodes) = (0u64, 0u64);
        while decode_ns < floor || decodes == 0 {
            let t = thread_cpu_ns();
            for (i, s) in self.sources.iter().enumerate() {
                decompress(self.form.compression, self.get(i), &mut plain)?;
                match s {
                    Source::Array(want) => {
                        decode(self.form.encoding, &plain, &mut ints)?;
                        if ints[..] != want[..] {
                            return Err(DecodeError("decoded to another array"));
                        }
                    }
                    Source::Raw(want) => {
                        if plain != *want {
                            return Err(DecodeError("decompressed to other bytes"));
                        }
                    }
                }
            }
            decode_ns += thread_cpu_ns() - t;
            decodes += self.sources.len() as u64;
        }
        Ok(EncodingUsage {
            encoding: self.form.encoding,
            compression: self.form.compression,
            encoded_bytes: encoded_bytes as f64 / encodes as f64,
            stored_bytes: self.bytes.len() as f64 / self.sources.len() as f64,
            encode_ns: encode_ns as f64 / encodes as f64,
            decode_ns: decode_ns as f64 / decodes as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_encodings_have_the_seeds_sizes_and_round_trip() {
        let (mut serialised, mut joined, mut back) = (Vec::new(), Vec::new(), Vec::new());
        let mut sizes = [0usize; 2];
        for i in 0..100 {
            let ints = array(i);
            serialised.clear();
            joined.clear();
            encode(Encoding::PhpSerialize, &ints, &mut serialised);
            encode(Encoding::Joined, &ints, &mut joined);
            sizes[0] += serialised.len();
            sizes[1] += joined.len();
            decode(Encoding::PhpSerialize, &serialised, &mut back).unwrap();
            assert_eq!(back, ints);
            decode(Encoding::Joined, &joined, &mut back).unwrap();
            assert_eq!(back, ints);
        }
        // The seed: about 700 B serialised, about 350 B joined.
        assert_eq!(sizes, [697 * 100, 349 * 100]);
        let ints = array(7);
        serialised.clear();
        encode(Encoding::PhpSerialize, &ints, &mut serialised);
        let text = String::from_utf8(serialised).unwrap();
        assert!(
            text.starts_with(&format!("a:50:{{i:0;i:{};i:1;i:{};", ints[0], ints[1])),
            "{text}"
        );
        assert!(text.ends_with(&format!("i:49;i:{};}}", ints[49])), "{text}");
    }

    #[test]
    fn broken_values_do_not_decode() {
        let mut out = Vec::new();
        for (e, bad) in [
            (Encoding::PhpSerialize, &b"a:2:{i:0;i:5;i:1;i:6;"[..]),
            (Encoding::PhpSerialize, b"a:1:{i:1;i:5;}"),
            (Encoding::PhpSerialize, b"a:1:{i:0;i:5;}x"),
            (Encoding::Joined, b"1,,2"),
            (Encoding::Joined, b"1,2x"),
            (Encoding::Joined, b""),
        ] {
            assert!(decode(e, bad, &mut out).is_err(), "{e:?} {bad:?}");
        }
        for c in [Compression::Zlib, Compression::Zstd] {
            let mut bytes = Vec::new();
            assert!(decompress(c, b"not compressed at all", &mut bytes).is_err());
        }
    }

    #[test]
    fn compression_round_trips_and_pays_only_on_compressible_bytes() {
        let text = b"the same few words again and again ".repeat(30);
        let mut rng = crate::workload::Rng::new(1, 2);
        let noise: Vec<u8> = (0..text.len()).map(|_| rng.next_u64() as u8).collect();
        for c in [Compression::None, Compression::Zlib, Compression::Zstd] {
            for (src, compressible) in [(&text, true), (&noise, false)] {
                let (mut packed, mut plain) = (Vec::new(), Vec::new());
                compress(c, src, &mut packed);
                decompress(c, &packed, &mut plain).unwrap();
                assert_eq!(&plain, src, "{c:?}");
                if c != Compression::None {
                    if compressible {
                        assert!(packed.len() * 4 < src.len(), "{c:?}: {}", packed.len());
                    } else {
                        assert!(packed.len() >= src.len(), "{c:?}: {}", packed.len());
                    }
                }
            }
        }
    }

    #[test]
    fn a_table_holds_its_form_and_measures_what_it_costs() {
        let raw: Vec<u8> = b"compressible words ".repeat(10_000);
        for (form, raw_len) in [
            (
                ValueForm {
                    encoding: Encoding::PhpSerialize,
                    compression: Compression::None,
                },
                0,
            ),
            (
                ValueForm {
                    encoding: Encoding::Joined,
                    compression: Compression::Zlib,
                },
                0,
            ),
            (
                ValueForm {
                    encoding: Encoding::Raw,
                    compression: Compression::Zstd,
                },
                1000,
            ),
        ] {
            let t = EncodedPayloads::new(form, &raw, raw_len);
            assert!(t.len() >= 16);
            let u = t.cost(std::time::Duration::from_millis(5)).unwrap();
            assert!(u.encode_ns > 0.0 && u.decode_ns > 0.0, "{u:?}");
            match form.encoding {
                Encoding::PhpSerialize => assert_eq!(u.stored_bytes, 697.0),
                Encoding::Joined => assert!(u.stored_bytes < 349.0, "{u:?}"),
                Encoding::Raw => {
                    assert_eq!(u.encoded_bytes, 1000.0);
                    assert!(u.stored_bytes < 100.0, "{u:?}");
                }
            }
        }
    }
}
