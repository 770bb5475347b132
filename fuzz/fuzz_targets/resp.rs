//! RESP: replies as the Redis client reads them (`RespCodec`,
//! `RespWaitCodec`'s reply pairs, `RespScanIndexCodec`'s pairs and scans,
//! and `RespFieldsCodec`'s records of fields, laid end to end, and scans;
//! their records read as the harness reads them), requests as the engine host reads them
//! (`decode_request`), and requests encoded then read back.
//!
//! Input: a byte choosing the request kinds and WAIT's replica count, then
//! the bytes received.
#![no_main]

use bakeoff_core::driver::{Codec, Reply, WireOp};
use bakeoff_core::workload::OpKind;
use bakeoff_drivers::codec::resp::{
    decode_request, Request, RespCodec, RespScanIndexCodec, RespWaitCodec, MAX_ARGS,
};
use bakeoff_drivers::codec::resp_fields::RespFieldsCodec;
use bakeoff_fuzz::{check_encode, check_stream, cuts, kind_of, Rules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, buf)) = data.split_first() else {
        return;
    };
    for (at, len, reply) in check_stream(&RespCodec, seed, buf, Rules::default()) {
        if let Reply::Redirect(r) = reply {
            // The node named runs to the end of the error line.
            assert!(r.start > 1 && r.end + 2 == len, "{at}: {r:?} in {len}");
        }
    }
    check_stream(
        &RespWaitCodec::new(u64::from(seed % 4), 0),
        seed,
        buf,
        Rules::default(),
    );
    let indexed = RespScanIndexCodec::default();
    for (i, (at, _, reply)) in check_stream(&indexed, seed, buf, Rules::default())
        .into_iter()
        .enumerate()
    {
        if let (OpKind::Scan, Reply::Value { start, end }) = (kind_of(seed, i), reply) {
            let mut rows = Vec::new();
            if indexed.scan_rows(&buf[at + start..at + end], &mut rows) {
                let _ = bakeoff_core::scan::rows(&rows).count();
            }
        }
    }

    let fields = RespFieldsCodec::new(u32::from(seed % 4) + 2, seed & 1 == 1);
    for (i, (at, _, reply)) in check_stream(&fields, seed, buf, Rules::default())
        .into_iter()
        .enumerate()
    {
        if let Reply::Value { start, end } = reply {
            let mut value = buf[at + start..at + end].to_vec();
            if kind_of(seed, i) == OpKind::Scan {
                let mut rows = Vec::new();
                if fields.scan_rows(&value, &mut rows) {
                    let _ = bakeoff_core::scan::rows(&rows).count();
                }
            } else {
                // Laying the fields end to end only shrinks them.
                let n = fields.unescape_value(&mut value);
                assert!(n <= end - start);
            }
        }
    }

    // The engine host's loop over what a client sent.
    let mut at = 0;
    while at < buf.len() {
        let rest = &buf[at..];
        match decode_request(rest) {
            Request::Complete { len, argc, args } => {
                assert!(len > 0 && len <= rest.len());
                assert!(argc >= 1);
                for &(s, e) in &args[..argc.min(MAX_ARGS)] {
                    assert!(s <= e && e <= len);
                }
                for cut in cuts(len) {
                    assert_eq!(
                        decode_request(&rest[..cut]),
                        Request::Incomplete,
                        "{cut} of {len}"
                    );
                }
                at += len;
            }
            Request::Incomplete | Request::Invalid => break,
        }
    }

    // What the client sends is what the engine host reads.
    check_encode(&RespCodec, buf);
    let kind = OpKind::ALL[seed as usize % OpKind::ALL.len()];
    let (key, rest) = buf.split_at(buf.len().min(seed as usize % 32));
    let (header, payload) = rest.split_at(rest.len() / 2);
    let mut out = Vec::new();
    RespCodec.encode(&[0; 4], WireOp::new(kind, key, header, payload), &mut out);
    let Request::Complete { len, argc, args } = decode_request(&out) else {
        panic!("an encoded request does not read back");
    };
    assert_eq!(len, out.len());
    let arg = |i: usize| &out[args[i].0..args[i].1];
    assert_eq!(arg(1), key);
    if kind.writes_value() {
        assert_eq!((argc, arg(0)), (3, &b"SET"[..]));
        assert_eq!(arg(2), [header, payload].concat());
    } else {
        assert_eq!(argc, 2);
    }
});
