//! The memcache binary protocol's replies as the client reads them.
//!
//! Input: a byte choosing the request kinds, then the bytes received.
#![no_main]

use bakeoff_core::driver::Reply;
use bakeoff_drivers::codec::memcache_binary::MemcacheBinaryCodec;
use bakeoff_fuzz::{check_encode, check_stream, Rules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, buf)) = data.split_first() else {
        return;
    };
    for (at, len, reply) in check_stream(&MemcacheBinaryCodec, seed, buf, Rules::default()) {
        // A response: its 24-byte header, then the body it declares.
        let r = &buf[at..at + len];
        assert!(len >= 24 && r[0] == 0x81);
        assert_eq!(
            len - 24,
            u32::from_be_bytes([r[8], r[9], r[10], r[11]]) as usize
        );
        if let Reply::Value { start, end } = reply {
            assert!(start >= 24 && end == len);
        }
    }
    check_encode(&MemcacheBinaryCodec, buf);
});
