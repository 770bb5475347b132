//! MySQL/MariaDB replies to COM_STMT_EXECUTE as the client reads them.
//!
//! Input: a byte choosing the request kinds (or batched loads), then the
//! bytes received.
#![no_main]

use bakeoff_core::driver::{Codec, Reply, WireOp};
use bakeoff_drivers::codec::mysql::MysqlCodec;
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
    for (at, len, reply) in check_stream(&MysqlCodec, seed, buf, rules(seed)) {
        // Packets end to end, numbered from 1.
        let r = &buf[at..at + len];
        assert_eq!(r[3], 1);
        if let Reply::Value { end, .. } = reply {
            // A value ends its row; the reply's last packet, the closing
            // OK (0xfe), follows.
            assert!(end + 5 <= len && r[end + 4] == 0xfe, "{end} of {len}");
        }
    }
    check_encode(&MysqlCodec, buf);
    // Statement ids a connection was given go in the request as they are.
    let mut out = Vec::new();
    MysqlCodec.encode(
        &[7, 8, 9, 0],
        WireOp::new(bakeoff_core::workload::OpKind::Delete, b"k", &[], &[]),
        &mut out,
    );
    assert_eq!(&out[5..9], &9u32.to_le_bytes());
});
