//! HandlerSocket: operation replies as the client reads them, values
//! unescaped both ways, set-up replies (`parse_setup_reply`), and any
//! bytes escaped as a value then read back.
//!
//! Input: a byte choosing the request kinds, then the bytes received.
#![no_main]

use bakeoff_core::driver::{Codec, Decoded, Reply};
use bakeoff_core::workload::OpKind;
use bakeoff_drivers::codec::handlersocket::{
    escape_into, parse_setup_reply, unescape_in_place, unescape_into, HandlerSocketCodec,
    SetupReply,
};
use bakeoff_fuzz::{check_encode, check_stream, cuts, kind_of, Rules};
use libfuzzer_sys::fuzz_target;

const ESCAPE: u8 = 0x01;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, buf)) = data.split_first() else {
        return;
    };
    // A set's insert follows its update where that changed no row: some
    // replies are the insert's.
    let rules = Rules {
        follow_ups: true,
        ..Rules::default()
    };
    for (i, (at, len, reply)) in check_stream(&HandlerSocketCodec, seed, buf, rules)
        .into_iter()
        .enumerate()
    {
        assert_eq!(buf[at + len - 1], b'\n');
        // A scan's reply (not the follow-up decode every third reply
        // gets) holds rows of tokens: they become records, or are refused.
        if kind_of(seed, i) == OpKind::Scan && i % 3 != 2 {
            if let Reply::Value { start, end } = reply {
                assert!(end < len);
                let mut rows = Vec::new();
                if HandlerSocketCodec.scan_rows(&buf[at + start..at + end], &mut rows) {
                    // Read as the harness reads them (keys of any length
                    // end up refused there, never a panic).
                    let _ = bakeoff_core::scan::rows(&rows).count();
                }
            }
            continue;
        }
        if let Reply::Value { start, end } = reply {
            // Checked escapes: both ways of unescaping agree, drop one byte
            // per escape, and escaping gives the wire bytes back.
            assert!(end < len);
            let raw = &buf[at + start..at + end];
            let mut in_place = raw.to_vec();
            let n = unescape_in_place(&mut in_place);
            let mut appended = Vec::new();
            unescape_into(raw, &mut appended);
            assert_eq!(&in_place[..n], &appended[..]);
            assert_eq!(n, raw.len() - raw.iter().filter(|&&b| b == ESCAPE).count());
            let mut again = Vec::new();
            escape_into(&appended, &mut again);
            assert_eq!(again, raw);
        }
    }

    // Unescaping any bytes (what the server does): the two agree.
    let mut in_place = buf.to_vec();
    let n = unescape_in_place(&mut in_place);
    assert!(n <= buf.len());
    let mut appended = Vec::new();
    unescape_into(buf, &mut appended);
    assert_eq!(&in_place[..n], &appended[..]);

    // The set-up replies, read one after another.
    let mut at = 0;
    while at < buf.len() {
        let rest = &buf[at..];
        let len = match parse_setup_reply(rest) {
            SetupReply::Ok { len } => len,
            SetupReply::Failed {
                len,
                code,
                start,
                end,
            } => {
                assert!(code != 0 && start <= end && end < len);
                len
            }
            SetupReply::Incomplete | SetupReply::Invalid => break,
        };
        assert!(len > 0 && len <= rest.len() && rest[len - 1] == b'\n');
        for cut in cuts(len) {
            assert_eq!(parse_setup_reply(&rest[..cut]), SetupReply::Incomplete);
        }
        at += len;
    }

    // Any value, escaped as the server sends it, reads back whole.
    let mut reply = b"0\t1\t".to_vec();
    escape_into(buf, &mut reply);
    assert!(reply[4..].iter().all(|&b| b >= 0x10 || b == ESCAPE));
    reply.push(b'\n');
    let len = reply.len();
    let got = HandlerSocketCodec.decode(&reply, OpKind::Get);
    // (A lone NUL is escaped too: a value, not SQL NULL.)
    let want = Reply::Value {
        start: 4,
        end: len - 1,
    };
    assert_eq!(got, Decoded::Complete { len, reply: want });
    let n = unescape_in_place(&mut reply[4..len - 1]);
    assert_eq!(&reply[4..4 + n], buf);

    check_encode(&HandlerSocketCodec, buf);
});
