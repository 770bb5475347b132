//! Fuzz-style property test of the codecs: for random and mutated byte
//! streams, decoding never panics, a complete reply never claims more bytes
//! than the buffer holds, value ranges stay inside it, and a prefix of a
//! valid reply is never mistaken for a whole one.

use bakeoff_core::driver::{Codec, Decoded, Reply};
use bakeoff_core::workload::{OpKind, Rng};
use bakeoff_drivers::codec::memcache_binary::MemcacheBinaryCodec;
use bakeoff_drivers::codec::memcache_text::MemcacheTextCodec;
use bakeoff_drivers::codec::resp::RespCodec;

fn check<C: Codec>(codec: &C, buf: &[u8]) {
    for kind in OpKind::ALL {
        match codec.decode(buf, kind) {
            Decoded::Complete { len, reply } => {
                assert!(
                    len > 0 && len <= buf.len(),
                    "len {len} of {} bytes: {buf:?}",
                    buf.len()
                );
                if let Reply::Value { start, end } = reply {
                    assert!(
                        start <= end && end <= len,
                        "value {start}..{end} outside reply of {len}: {buf:?}"
                    );
                }
            }
            Decoded::Incomplete | Decoded::Invalid => {}
        }
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = [
        &b"+OK\r\n"[..],
        b"-ERR x\r\n",
        b":12\r\n",
        b"$5\r\nhello\r\n",
        b"$-1\r\n",
        b"*2\r\n$1\r\na\r\n:1\r\n",
        b"_\r\n",
        b"STORED\r\n",
        b"END\r\n",
        b"VALUE k 0 5\r\nhello\r\nEND\r\n",
        b"SERVER_ERROR out of memory\r\n",
        b"DELETED\r\n",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    let mut bin = vec![0x81, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 9];
    bin.extend_from_slice(&[0; 12]);
    bin.extend_from_slice(&[0, 0, 0, 0, b'h', b'e', b'l', b'l', b'o']);
    v.push(bin);
    v
}

#[test]
fn random_and_mutated_input_never_breaks_the_codecs() {
    let mut rng = Rng::new(0xF022, 0);
    let seeds = seeds();
    for _ in 0..200_000 {
        let mut buf = seeds[rng.below(seeds.len() as u64) as usize].clone();
        match rng.below(4) {
            0 => {
                let i = rng.below(buf.len() as u64) as usize;
                buf[i] = rng.next_u64() as u8;
            }
            1 => buf.truncate(rng.below(buf.len() as u64 + 1) as usize),
            2 => {
                let extra = seeds[rng.below(seeds.len() as u64) as usize].clone();
                buf.extend_from_slice(&extra);
            }
            _ => buf = (0..rng.below(64)).map(|_| rng.next_u64() as u8).collect(),
        }
        check(&RespCodec, &buf);
        check(&MemcacheTextCodec, &buf);
        check(&MemcacheBinaryCodec, &buf);
    }
}

#[test]
fn no_strict_prefix_of_a_reply_is_complete() {
    for seed in seeds() {
        for (codec_name, whole) in [
            ("resp", RespCodec.decode(&seed, OpKind::Get)),
            ("text", MemcacheTextCodec.decode(&seed, OpKind::Get)),
            ("binary", MemcacheBinaryCodec.decode(&seed, OpKind::Get)),
        ] {
            let Decoded::Complete { len, .. } = whole else {
                continue;
            };
            for cut in 0..len {
                let part = &seed[..cut];
                let d = match codec_name {
                    "resp" => RespCodec.decode(part, OpKind::Get),
                    "text" => MemcacheTextCodec.decode(part, OpKind::Get),
                    _ => MemcacheBinaryCodec.decode(part, OpKind::Get),
                };
                assert!(
                    !matches!(d, Decoded::Complete { .. }),
                    "{codec_name}: prefix {cut} of {seed:?} decoded as complete"
                );
            }
        }
    }
}
