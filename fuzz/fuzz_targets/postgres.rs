//! PostgreSQL's replies to Bind/Execute/Sync as the client reads them.
//!
//! Input: a byte choosing the request kinds (or batched loads), then the
//! bytes received.
#![no_main]

use bakeoff_core::driver::Reply;
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
});
