//! MySQL/MariaDB replies to COM_STMT_EXECUTE as the client reads them.
//!
//! Input: a byte choosing the request kinds (or batched loads), then the
//! bytes received. Records of several fields too (table usertable).
#![no_main]

use bakeoff_core::driver::{Codec, Reply, WireOp};
use bakeoff_drivers::codec::mysql_fields::MysqlFieldsCodec;
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
    // Records of 2 to 5 fields, in columns of table usertable: each
    // read's fields, laid end to end, only shrink.
    let fields = MysqlFieldsCodec::new(u32::from(seed % 4) + 2);
    for (at, _, reply) in check_stream(&fields, seed, buf, Rules::default()) {
        if let Reply::Value { start, end } = reply {
            let mut value = buf[at + start..at + end].to_vec();
            assert!(fields.unescape_value(&mut value) <= end - start);
        }
    }
    check_encode(&fields, buf);
});
