//! PostgreSQL's replies to Bind/Execute/Sync as the client reads them.
//!
//! Input: a byte choosing the request kinds (or batched loads), then the
//! bytes received. Records of several fields too (table usertable).
#![no_main]

use bakeoff_core::driver::{Codec, Reply};
use bakeoff_drivers::codec::postgres_fields::PostgresFieldsCodec;
use bakeoff_drivers::codec::postgres::PostgresCodec;
use bakeoff_fuzz::{check_encode, check_stream, Rules};
use libfuzzer_sys::fuzz_target;

/// A quarter of the inputs are replies to batched loads.
fn rules(seed: u8) -> Rules {
    Rules {
        batches: seed >= 0xc0,
        ..Rules::default()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, buf)) = data.split_first() else {
        return;
    };
    for (at, len, reply) in check_stream(&PostgresCodec, seed, buf, rules(seed)) {
        // Messages end to end, the last a ReadyForQuery.
        let r = &buf[at..at + len];
        assert!(len >= 6 && r[len - 6] == b'Z');
        if let Reply::Value { start, end } = reply {
            // A DataRow's one column, its length just before it.
            assert!(start >= 11);
            let n = i32::from_be_bytes([r[start - 4], r[start - 3], r[start - 2], r[start - 1]]);
            assert_eq!(n as usize, end - start);
        }
    }
    check_encode(&PostgresCodec, buf);
    // Records of 2 to 5 fields, in columns of table usertable: each
    // read's fields, laid end to end, only shrink.
    let fields = PostgresFieldsCodec::new(u32::from(seed % 4) + 2);
    for (at, _, reply) in check_stream(&fields, seed, buf, Rules::default()) {
        if let Reply::Value { start, end } = reply {
            let mut value = buf[at + start..at + end].to_vec();
            assert!(fields.unescape_value(&mut value) <= end - start);
        }
    }
    check_encode(&fields, buf);
});
