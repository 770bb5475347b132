//! What the fuzz targets share: the client's reply loop run over arbitrary
//! bytes with the invariants it relies on, and the checks of a built plan.
//!
//! A reply codec must, on any bytes: never panic; report a whole reply of
//! `0 < len <= buf.len()` bytes whose value (or redirection) lies inside
//! it; decode the same reply whether or not bytes follow it; and call every
//! strict prefix of a whole reply incomplete, never invalid (the network
//! loop drops a connection on invalid, and replies arrive in pieces).

use bakeoff_core::driver::{Codec, Decoded, Reply, WireOp};
use bakeoff_core::plan::Plan;
use bakeoff_core::workload::OpKind;

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// The kind of the request whose reply is the `i`-th of the stream: the
/// first input byte chooses the sequence.
pub fn kind_of(seed: u8, i: usize) -> OpKind {
    let step = 1 + seed as usize / 5;
    OpKind::ALL[(seed as usize + i * step) % OpKind::ALL.len()]
}

/// Strict prefix lengths of a reply of `len` bytes to decode again: all of
/// them for a short reply, the first and last 16 and about 16 between for a
/// long one.
pub fn cuts(len: usize) -> impl Iterator<Item = usize> {
    let every = (len / 16).max(1);
    (0..len).filter(move |&c| len <= 64 || c < 16 || c + 16 >= len || c % every == 0)
}

/// What a codec allows beyond the common rules.
#[derive(Clone, Copy, Default)]
pub struct Rules {
    /// A first line longer than this without its end is invalid (memcache
    /// text's 2048 bytes), even where the whole line would be accepted.
    pub line_limit: Option<usize>,
    /// The replies are to batched loads ([`Codec::decode_batch`]).
    pub batches: bool,
    /// Every third reply is to a second request
    /// ([`Codec::decode_follow_up`]).
    pub follow_ups: bool,
}

fn has_crlf(b: &[u8]) -> bool {
    b.windows(2).any(|w| w == b"\r\n")
}

/// Decodes `buf` reply after reply as the network loop does (kinds chosen
/// by `seed`), checking every invariant; returns the whole replies seen
/// as `(offset, len, reply)`.
pub fn check_stream<C: Codec>(
    codec: &C,
    seed: u8,
    buf: &[u8],
    rules: Rules,
) -> Vec<(usize, usize, Reply)> {
    let decode = |b: &[u8], kind, i: usize| {
        if rules.batches {
            codec.decode_batch(b)
        } else if rules.follow_ups && i % 3 == 2 {
            codec.decode_follow_up(b, kind)
        } else {
            codec.decode(b, kind)
        }
    };
    let mut owned = buf.to_vec();
    let mut replies = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < buf.len() {
        let kind = kind_of(seed, i);
        let rest = &buf[at..];
        let got = decode(rest, kind, i);
        match got {
            Decoded::Complete { len, reply } => {
                assert!(len > 0, "a whole reply of 0 bytes: the loop would spin");
                assert!(len <= rest.len(), "reply of {len} bytes in {}", rest.len());
                match reply {
                    Reply::Value { start, end } => {
                        assert!(start <= end && end <= len, "value {start}..{end} of {len}")
                    }
                    Reply::Redirect(r) => {
                        assert!(
                            r.start <= r.end && r.end <= len,
                            "node {}..{} of {len}",
                            r.start,
                            r.end
                        )
                    }
                    Reply::Ok | Reply::Miss | Reply::ServerError | Reply::FollowUp => {}
                }
                // The reply is read the same with nothing after it…
                assert_eq!(decode(&rest[..len], kind, i), got, "alone");
                // …and is only waited for while it arrives.
                for cut in cuts(len) {
                    let part = &rest[..cut];
                    let d = decode(part, kind, i);
                    let long_line = rules
                        .line_limit
                        .is_some_and(|l| part.len() > l && !has_crlf(part));
                    assert!(
                        d == Decoded::Incomplete || (long_line && d == Decoded::Invalid),
                        "{cut} of {len} bytes decode as {d:?}"
                    );
                }
                if let Reply::Value { start, end } = reply {
                    if C::ESCAPES_VALUES {
                        let v = &mut owned[at + start..at + end];
                        let n = codec.unescape_value(v);
                        assert!(n <= end - start);
                    }
                }
                replies.push((at, len, reply));
                at += len;
                i += 1;
            }
            Decoded::Incomplete => {
                // Waiting for the rest: no shorter part of it is invalid.
                for cut in cuts(rest.len()) {
                    let part = &rest[..cut];
                    let d = decode(part, kind, i);
                    let long_line = rules
                        .line_limit
                        .is_some_and(|l| part.len() > l && !has_crlf(part));
                    assert!(
                        d == Decoded::Incomplete || (long_line && d == Decoded::Invalid),
                        "{cut} bytes of an incomplete {} decode as {d:?}",
                        rest.len()
                    );
                }
                break;
            }
            Decoded::Invalid => break,
        }
    }
    replies
}

/// Encodes a request of every kind from parts of `data` (never panics,
/// only appends).
pub fn check_encode<C: Codec>(codec: &C, data: &[u8]) {
    let (key, rest) = data.split_at(data.len().min(data.first().map_or(0, |&b| b as usize % 64)));
    let (header, payload) = rest.split_at(rest.len() / 2);
    for kind in OpKind::ALL {
        let mut out = b"x".to_vec();
        codec.encode(&[0; 4], WireOp::new(kind, key, header, payload), &mut out);
        assert_eq!(out[0], b'x');
        assert!(out.len() > 1 + key.len());
        assert!(!codec.describe(kind).is_empty());
    }
    if C::BATCHES {
        use bakeoff_core::driver::BatchRow;
        let rows: Vec<BatchRow> = payload
            .chunks(payload.len() / 3 + 1)
            .chain([&[][..]])
            .enumerate()
            .map(|(i, p)| BatchRow {
                key: bakeoff_core::keys::KeyNaming::Bakeoff.key(i as u64),
                header: [i as u8; bakeoff_core::value::HEADER_LEN],
                payload: p,
            })
            .collect();
        let mut out = b"x".to_vec();
        codec.encode_batch(&Default::default(), &rows, &mut out);
        assert_eq!(out[0], b'x');
        let least: usize = rows.iter().map(|r| r.key.len() + r.payload.len()).sum();
        assert!(out.len() > 1 + least);
    }
}

/// Uses a built plan as `run --dry-run` and the result file do, and checks
/// the plan the result file echoes reads back.
pub fn check_plan(plan: &Plan) {
    let points = plan.points();
    assert!(!points.is_empty());
    // (A plan may have no target: `--target ""` or `--target ,` gives
    // none, past the check that some were named.)
    assert_eq!(
        plan.run_count(),
        plan.targets.len() * points.len() * plan.repeats as usize
    );
    for t in &plan.targets {
        assert_eq!(plan.points_for(t).len(), points.len());
        let _ = (t.id(), t.label(), plan.settings_of(t));
    }
    let _ = plan.per_target_differences();
    let json = serde_json::to_string(plan).expect("a plan serialises");
    if let Err(e) = serde_json::from_str::<Plan>(&json) {
        panic!("the plan echoed in a result file does not read back: {e}\n{json}");
    }
}
