//! The memcache text protocol's replies as the client reads them.
//!
//! Input: a byte choosing the request kinds, then the bytes received.
#![no_main]

use bakeoff_core::driver::Reply;
use bakeoff_drivers::codec::memcache_text::MemcacheTextCodec;
use bakeoff_fuzz::{check_encode, check_stream, Rules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, buf)) = data.split_first() else {
        return;
    };
    // A line that has not ended within 2048 bytes is garbage.
    let rules = Rules {
        line_limit: Some(2048),
        ..Rules::default()
    };
    for (at, len, reply) in check_stream(&MemcacheTextCodec, seed, buf, rules) {
        let r = &buf[at..at + len];
        assert!(r.ends_with(b"\r\n"));
        if let Reply::Value { start, end } = reply {
            // VALUE line, data, CRLF, END CRLF.
            assert!(r.starts_with(b"VALUE "));
            assert_eq!(&r[start - 2..start], b"\r\n");
            assert_eq!(&r[end..], b"\r\nEND\r\n");
        }
    }
    check_encode(&MemcacheTextCodec, buf);
});
