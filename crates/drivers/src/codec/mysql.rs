//! The MySQL/MariaDB client protocol's prepared statements, for the
//! key-value operations.
//!
//! Each connection prepares three statements once, [`STATEMENTS`] (the
//! connector does it; the ids the server gave them travel with the
//! connection as its [`Handles`], in that order); an operation is then one
//! `COM_STMT_EXECUTE` with its parameters bound, and its reply the binary
//! result set or OK packet that follows. The server reads commands off the
//! socket one after another, so several can be in flight (pipelining).
//!
//! A packet is a 3-byte little-endian payload length, a sequence number
//! and the payload. With `CLIENT_DEPRECATE_EOF` (the connector requires
//! it), a read's reply is the column count (1), one column definition,
//! a binary row (`0x00`, the NULL bitmap, the value as a length-encoded
//! string) when the key exists, and an OK packet that starts with `0xfe`;
//! a write's is an OK packet (`0x00`, affected rows, ...); an error is an
//! ERR packet (`0xff`) in place of either.

use bakeoff_core::driver::{BatchRow, Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::workload::OpKind;

/// The read.
pub const GET: &str = "SELECT v FROM kv WHERE k = ?";
/// The write (set and update): an upsert.
pub const PUT: &str = "INSERT INTO kv (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)";
/// The delete.
pub const DEL: &str = "DELETE FROM kv WHERE k = ?";

/// The statements each connection prepares; their ids are its
/// [`Handles`] in this order.
pub const STATEMENTS: [&str; 3] = [GET, PUT, DEL];

/// `COM_STMT_EXECUTE`.
pub(super) const COM_STMT_EXECUTE: u8 = 0x17;
/// Parameter types: the key a string (`MYSQL_TYPE_STRING`), the value a
/// blob (`MYSQL_TYPE_BLOB`); neither unsigned.
pub(super) const KEY_TYPE: [u8; 2] = [0xfe, 0];
pub(super) const VALUE_TYPE: [u8; 2] = [0xfc, 0];

/// `COM_STMT_PREPARE`, `COM_STMT_CLOSE`: a batched load's statement.
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_CLOSE: u8 = 0x19;
/// MariaDB's id for "the statement this connection prepared last", so that
/// a statement can be prepared, executed and closed without waiting for
/// its id.
const LAST_STATEMENT: u32 = u32::MAX;

/// The conflict clause of every upsert.
pub const BATCH_TAIL: &str = "ON DUPLICATE KEY UPDATE v = VALUES(v)";

/// The largest packet a batched load of `rows` records of at most
/// `value_len` bytes each sends: what must stay under [`MAX_PAYLOAD`] (the
/// driver keeps larger batches off the codec).
pub fn batch_len(rows: usize, value_len: usize) -> usize {
    64 + BATCH_TAIL.len() + rows * (bakeoff_core::keys::KEY_LEN + value_len + 16)
}

/// The largest payload one packet carries; a longer one would be split,
/// which the codec does not do (the driver keeps larger values off it).
pub const MAX_PAYLOAD: usize = 0xff_ffff;

/// The MySQL/MariaDB codec (prepared statements, binary protocol).
#[derive(Clone, Copy, Debug, Default)]
pub struct MysqlCodec;

/// Bytes of the length-encoded integer `n`.
#[inline]
pub(super) fn lenenc_len(n: usize) -> usize {
    match n {
        0..=250 => 1,
        251..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 9,
    }
}

/// Appends the length-encoded integer `n`.
#[inline]
pub(super) fn push_lenenc(out: &mut Vec<u8>, n: usize) {
    match lenenc_len(n) {
        1 => out.push(n as u8),
        3 => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        4 => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u64).to_le_bytes());
        }
    }
}

/// Reads a length-encoded integer at the front of `b`: (value, bytes).
#[inline]
pub(super) fn read_lenenc(b: &[u8]) -> Option<(u64, usize)> {
    match *b.first()? {
        n @ 0..=250 => Some((u64::from(n), 1)),
        0xfc => Some((u64::from(u16::from_le_bytes([*b.get(1)?, *b.get(2)?])), 3)),
        0xfd => Some((
            u64::from(u32::from_le_bytes([*b.get(1)?, *b.get(2)?, *b.get(3)?, 0])),
            4,
        )),
        0xfe => Some((u64::from_le_bytes(b.get(1..9)?.try_into().ok()?), 9)),
        _ => None,
    }
}

/// The payload of the packet at `at`, the reply's packet number `seq`
/// (a reply's packets count from 1): `Ok(None)` while incomplete, `Err`
/// for one out of sequence (not this protocol) or split over several (a
/// length of 2^24 - 1).
#[inline]
pub(super) fn packet(buf: &[u8], at: usize, seq: u8) -> Result<Option<(usize, usize)>, ()> {
    let Some(h) = buf.get(at..at + 4) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    if len == MAX_PAYLOAD || h[3] != seq {
        return Err(());
    }
    let end = at + 4 + len;
    Ok((end <= buf.len()).then_some((at + 4, end)))
}

/// Appends `COM_STMT_EXECUTE` of statement `id` with `params`, each made
/// of pieces, typed as `types` says.
#[inline]
pub(super) fn push_execute(out: &mut Vec<u8>, id: u32, types: &[[u8; 2]], params: &[&[&[u8]]]) {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_EXECUTE]);
    out.extend_from_slice(&id.to_le_bytes());
    // No cursor, one iteration, the NULL bitmap (one byte for up to 8
    // parameters, none NULL), types follow.
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 1]);
    for t in types {
        out.extend_from_slice(t);
    }
    for p in params {
        // (A length-encoded length: its width depends on the sum.)
        push_lenenc(out, p.iter().map(|piece| piece.len()).sum());
        for piece in *p {
            out.extend_from_slice(piece);
        }
    }
    end_packet(out, at);
}

/// Appends a batched load of `rows`, MariaDB's way of running a
/// statement in one round trip: `COM_STMT_PREPARE` of the multi-row upsert
/// ([`crate::sql::batch_insert`]'s text, as the client library prepares
/// it), `COM_STMT_EXECUTE` of [`LAST_STATEMENT`] with every key and value
/// bound, and `COM_STMT_CLOSE` of it (which has no reply).
fn push_batch(out: &mut Vec<u8>, rows: &[BatchRow]) {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_PREPARE]);
    out.extend_from_slice(b"INSERT INTO kv (k, v) VALUES ");
    for i in 0..rows.len() {
        out.extend_from_slice(if i == 0 { b"(?, ?)" } else { b", (?, ?)" });
    }
    out.push(b' ');
    out.extend_from_slice(BATCH_TAIL.as_bytes());
    end_packet(out, at);
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_EXECUTE]);
    out.extend_from_slice(&LAST_STATEMENT.to_le_bytes());
    // No cursor, one iteration, no NULLs, types follow.
    out.extend_from_slice(&[0, 1, 0, 0, 0]);
    out.resize(out.len() + (2 * rows.len()).div_ceil(8), 0);
    out.push(1);
    for _ in rows {
        out.extend_from_slice(&KEY_TYPE);
        out.extend_from_slice(&VALUE_TYPE);
    }
    for r in rows {
        push_lenenc(out, r.key.len());
        out.extend_from_slice(&r.key);
        push_lenenc(out, r.header.len() + r.payload.len());
        out.extend_from_slice(&r.header);
        out.extend_from_slice(r.payload);
    }
    end_packet(out, at);
    out.extend_from_slice(&[5, 0, 0, 0, COM_STMT_CLOSE]);
    out.extend_from_slice(&LAST_STATEMENT.to_le_bytes());
}

/// Writes the payload length of the packet (sequence number 0) started
/// at `at`, which ends here.
#[inline]
pub(super) fn end_packet(out: &mut [u8], at: usize) {
    let len = out.len() - at - 4;
    debug_assert!(
        len < MAX_PAYLOAD,
        "the driver keeps requests under a packet"
    );
    out[at..at + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
}

/// A read's reply: the result set from the packet at `at` (after the
/// column count, `columns`, which must be `want`), or the ERR packet in
/// its place; `row(payload, start, end)` locates the value of a binary
/// row whose payload spans `start..end` of `buf` (`Ok(None)`: no value,
/// `Err`: not a row of this table).
#[inline(always)]
pub(super) fn decode_rows(
    buf: &[u8],
    columns: u64,
    want: u64,
    mut at: usize,
    row: impl Fn(&[u8], usize, usize) -> Result<Option<(usize, usize)>, ()>,
) -> Decoded {
    if columns != want {
        return Decoded::Invalid;
    }
    // The column definitions.
    let mut seq = 2u8;
    for _ in 0..columns {
        match packet(buf, at, seq) {
            Err(()) => return Decoded::Invalid,
            Ok(None) => return Decoded::Incomplete,
            Ok(Some((_, end))) => at = end,
        }
        seq = seq.wrapping_add(1);
    }
    let mut value = None;
    loop {
        let (start, end) = match packet(buf, at, seq) {
            Err(()) => return Decoded::Invalid,
            Ok(None) => return Decoded::Incomplete,
            Ok(Some(p)) => p,
        };
        let p = &buf[start..end];
        match p.first() {
            // A binary row.
            Some(0x00) => match row(p, start, end) {
                Ok(v) => value = v,
                Err(()) => return Decoded::Invalid,
            },
            // The end of the rows (an OK packet headed 0xfe).
            Some(0xfe) => {
                let reply = match value {
                    Some((start, end)) => Reply::Value { start, end },
                    None => Reply::Miss,
                };
                return Decoded::Complete { len: end, reply };
            }
            Some(0xff) => {
                return Decoded::Complete {
                    len: end,
                    reply: Reply::ServerError,
                }
            }
            _ => return Decoded::Invalid,
        }
        at = end;
        seq = seq.wrapping_add(1);
    }
}

/// Decodes the reply to one operation of `kind` at the front of `buf`, a
/// read's result set of `columns` columns by [`decode_rows`] with `row`.
#[inline(always)]
pub(super) fn decode_reply(
    buf: &[u8],
    kind: OpKind,
    columns: u64,
    row: impl Fn(&[u8], usize, usize) -> Result<Option<(usize, usize)>, ()>,
) -> Decoded {
    let (start, end) = match packet(buf, 0, 1) {
        Err(()) => return Decoded::Invalid,
        Ok(None) => return Decoded::Incomplete,
        Ok(Some(p)) => p,
    };
    let p = &buf[start..end];
    let reads = matches!(
        kind,
        OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite
    );
    match p.first() {
        Some(0xff) => Decoded::Complete {
            len: end,
            reply: Reply::ServerError,
        },
        // OK: affected rows next.
        Some(0x00) if !reads => match read_lenenc(&p[1..]) {
            None => Decoded::Invalid,
            Some((0, _)) if kind == OpKind::Delete => Decoded::Complete {
                len: end,
                reply: Reply::Miss,
            },
            Some(_) => Decoded::Complete {
                len: end,
                reply: Reply::Ok,
            },
        },
        Some(_) if reads => match read_lenenc(p) {
            Some((n, used)) if used == p.len() => decode_rows(buf, n, columns, end, row),
            _ => Decoded::Invalid,
        },
        _ => Decoded::Invalid,
    }
}

impl Codec for MysqlCodec {
    #[inline(always)]
    fn encode(&self, ids: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        match kind {
            // Search and scan never reach the codec (the driver runs them
            // through the client library); a read-modify-write's first
            // request is a get.
            OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                push_execute(out, ids[0], &[KEY_TYPE], &[&[key]])
            }
            OpKind::Delete => push_execute(out, ids[2], &[KEY_TYPE], &[&[key]]),
            OpKind::Set | OpKind::Update | OpKind::Insert => push_execute(
                out,
                ids[1],
                &[KEY_TYPE, VALUE_TYPE],
                &[&[key], &[header, payload]],
            ),
        }
    }

    const BATCHES: bool = true;

    fn encode_batch(&self, _: &Handles, rows: &[BatchRow], out: &mut Vec<u8>) {
        push_batch(out, rows)
    }

    fn decode_batch(&self, buf: &[u8]) -> Decoded {
        // The prepare's reply: its OK (id, columns, parameters) and a
        // definition per parameter and column, or an ERR.
        let (start, mut end) = match packet(buf, 0, 1) {
            Err(()) => return Decoded::Invalid,
            Ok(None) => return Decoded::Incomplete,
            Ok(Some(p)) => p,
        };
        let prepared = match buf[start..end] {
            [0x00, _, _, _, _, c0, c1, p0, p1, ..] => {
                let definitions = usize::from(u16::from_le_bytes([c0, c1]))
                    + usize::from(u16::from_le_bytes([p0, p1]));
                for seq in 2..2 + definitions {
                    end = match packet(buf, end, seq as u8) {
                        Err(()) => return Decoded::Invalid,
                        Ok(None) => return Decoded::Incomplete,
                        Ok(Some((_, e))) => e,
                    };
                }
                true
            }
            [0xff, ..] => false,
            _ => return Decoded::Invalid,
        };
        // Then the execute's: a write's reply (which fails when the
        // prepare did).
        match self.decode(&buf[end..], OpKind::Set) {
            Decoded::Complete { len, reply } => Decoded::Complete {
                len: end + len,
                reply: if prepared { reply } else { Reply::ServerError },
            },
            other => other,
        }
    }

    #[inline]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        decode_reply(buf, kind, 1, |p, start, end| {
            // Header, NULL bitmap (offset 2: one byte for one column), the
            // value.
            let Some(&nulls) = p.get(1) else {
                return Err(());
            };
            if nulls & 0b100 == 0 {
                let (n, used) = read_lenenc(&p[2..]).ok_or(())?;
                // (`from` is inside the packet: the length was.)
                let from = start + 2 + used;
                if n != (end - from) as u64 {
                    return Err(());
                }
                Ok(Some((from, end)))
            } else if p.len() != 2 {
                Err(())
            } else {
                Ok(None)
            }
        })
    }

    fn describe(&self, kind: OpKind) -> String {
        let sql = crate::sql::describe(kind, [GET, PUT, DEL], PUT, false);
        format!("{sql} (prepared once per connection; COM_STMT_EXECUTE per operation)")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn packet_of(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        p
    }

    /// A read's reply: column count, definition, rows, the closing OK.
    fn result_set(value: Option<&[u8]>) -> Vec<u8> {
        let mut r = packet_of(1, &[1]);
        r.extend(packet_of(
            2,
            b"\x03def\x07bakeoff\x02kv\x02kv\x01v\x01v\x0c?\0\xff\xff\xff\xff\xfc\x90\0\0\0\0",
        ));
        let mut seq = 3;
        if let Some(v) = value {
            let mut row = vec![0, 0];
            push_lenenc(&mut row, v.len());
            row.extend_from_slice(v);
            r.extend(packet_of(seq, &row));
            seq += 1;
        }
        r.extend(packet_of(seq, &[0xfe, 0, 0, 0x22, 0, 0, 0]));
        r
    }

    #[test]
    fn an_execute_binds_the_key_and_value_with_their_types() {
        let mut out = Vec::new();
        MysqlCodec.encode(
            &[1, 2, 3, 0],
            WireOp::new(OpKind::Set, b"key1", b"hd", b"payload"),
            &mut out,
        );
        let len = u32::from_le_bytes([out[0], out[1], out[2], 0]) as usize;
        assert_eq!(len + 4, out.len());
        let mut want = vec![0x17, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfe, 0, 0xfc, 0, 4];
        want.extend_from_slice(b"key1");
        want.push(9);
        want.extend_from_slice(b"hdpayload");
        assert_eq!(&out[4..], &want[..]);
        // A long value's length takes three bytes.
        let big = vec![7u8; 300];
        out.clear();
        MysqlCodec.encode(
            &[1, 2, 3, 0],
            WireOp::new(OpKind::Update, b"k", b"", &big),
            &mut out,
        );
        assert_eq!(&out[out.len() - 303..out.len() - 300], &[0xfc, 0x2c, 0x01]);
    }

    #[test]
    fn a_batch_prepares_executes_and_closes_the_library_paths_upsert() {
        let rows: Vec<BatchRow> = [(b'a', b"p0".as_slice()), (b'b', b"\x00'\\")]
            .iter()
            .map(|&(k, payload)| BatchRow {
                key: bakeoff_core::keys::Key::from_bytes(&[k; bakeoff_core::keys::KEY_LEN])
                    .unwrap(),
                header: [0xab; bakeoff_core::value::HEADER_LEN],
                payload,
            })
            .collect();
        let mut out = Vec::new();
        MysqlCodec.encode_batch(&Handles::default(), &rows, &mut out);
        let mut packets = Vec::new();
        let mut at = 0;
        while at < out.len() {
            let len = u32::from_le_bytes([out[at], out[at + 1], out[at + 2], 0]) as usize;
            assert_eq!(out[at + 3], 0, "each a command's first packet");
            packets.push(&out[at + 4..at + 4 + len]);
            at += 4 + len;
        }
        assert_eq!(at, out.len());
        let [prepare, execute, close] = packets[..] else {
            panic!("{} packets", packets.len())
        };
        // The library path's statement, prepared.
        assert_eq!(prepare[0], COM_STMT_PREPARE);
        let sql = crate::sql::batch_insert(2, |_| "?".into(), BATCH_TAIL);
        assert_eq!(&prepare[1..], sql.as_bytes());
        // Executed as the last prepared: no NULLs, four typed parameters.
        let mut want = vec![
            COM_STMT_EXECUTE,
            0xff,
            0xff,
            0xff,
            0xff,
            0,
            1,
            0,
            0,
            0,
            0,
            1,
        ];
        for _ in 0..2 {
            want.extend_from_slice(&[0xfe, 0, 0xfc, 0]);
        }
        for r in &rows {
            want.push(r.key.len() as u8);
            want.extend_from_slice(&r.key);
            want.push((r.header.len() + r.payload.len()) as u8);
            want.extend_from_slice(&r.header);
            want.extend_from_slice(r.payload);
        }
        assert_eq!(execute, &want[..]);
        assert_eq!(close, &[COM_STMT_CLOSE, 0xff, 0xff, 0xff, 0xff]);
        // What the driver checks against a packet's limit is no less.
        let longest = bakeoff_core::value::HEADER_LEN + 3;
        assert!(batch_len(2, longest) >= execute.len().max(prepare.len()));

        // The reply: the prepare's OK and four parameter definitions, then
        // the execute's OK.
        let mut reply = packet_of(1, &[0, 7, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0]);
        for seq in 2..6 {
            reply.extend(packet_of(
                seq,
                b"\x03def\0\0\0\x01?\0\x0c?\0\0\0\0\0\xfd\x80\0\0\0\0",
            ));
        }
        let ok = packet_of(1, &[0, 2, 0, 2, 0, 0, 0]);
        reply.extend(&ok);
        let c = MysqlCodec;
        assert_eq!(
            c.decode_batch(&reply),
            Decoded::Complete {
                len: reply.len(),
                reply: Reply::Ok
            }
        );
        for cut in 0..reply.len() {
            assert_eq!(c.decode_batch(&reply[..cut]), Decoded::Incomplete, "{cut}");
        }
        // A failed prepare: its ERR, then the execute's.
        let err = packet_of(1, b"\xff\x28\x04#42000syntax");
        let failed = [err.clone(), err].concat();
        assert_eq!(
            c.decode_batch(&failed),
            Decoded::Complete {
                len: failed.len(),
                reply: Reply::ServerError
            }
        );
        // The most definitions a prepare can declare are waited for, not
        // an overflow (found by fuzzing).
        let most = packet_of(1, &[0, 7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0]);
        assert_eq!(c.decode_batch(&most), Decoded::Incomplete);
        // A definition out of sequence is not this protocol.
        let mut bad = reply.clone();
        bad[16 + 3] = 9;
        assert_eq!(c.decode_batch(&bad), Decoded::Invalid);
    }

    #[test]
    fn reads_writes_and_errors_decode_in_place() {
        let c = MysqlCodec;
        let hit = result_set(Some(b"value"));
        let Decoded::Complete { len, reply } = c.decode(&hit, OpKind::Get) else {
            panic!("{:?}", c.decode(&hit, OpKind::Get))
        };
        assert_eq!(len, hit.len());
        let Reply::Value { start, end } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(&hit[start..end], b"value");
        for cut in 0..hit.len() {
            assert_eq!(c.decode(&hit[..cut], OpKind::Get), Decoded::Incomplete);
        }
        let miss = result_set(None);
        assert_eq!(
            c.decode(&miss, OpKind::Get),
            Decoded::Complete {
                len: miss.len(),
                reply: Reply::Miss
            }
        );
        let ok = |affected: u8| packet_of(1, &[0, affected, 0, 2, 0, 0, 0]);
        assert_eq!(
            c.decode(&ok(0), OpKind::Delete),
            Decoded::Complete {
                len: 11,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            c.decode(&ok(1), OpKind::Delete),
            Decoded::Complete {
                len: 11,
                reply: Reply::Ok
            }
        );
        // An upsert that changed nothing still did as asked.
        assert_eq!(
            c.decode(&ok(0), OpKind::Set),
            Decoded::Complete {
                len: 11,
                reply: Reply::Ok
            }
        );
        let err = packet_of(1, b"\xff\x7a\x04#HY000Lock wait timeout");
        for kind in [OpKind::Get, OpKind::Set] {
            assert_eq!(
                c.decode(&err, kind),
                Decoded::Complete {
                    len: err.len(),
                    reply: Reply::ServerError
                }
            );
        }
        // The next reply behind this one is left alone.
        let mut two = ok(1);
        two.extend(ok(1));
        assert!(matches!(
            c.decode(&two, OpKind::Set),
            Decoded::Complete { len: 11, .. }
        ));
    }

    #[test]
    fn garbage_is_invalid() {
        let c = MysqlCodec;
        // A row whose value runs past its packet.
        let mut bad = result_set(Some(b"value"));
        let row_at = bad.len() - 11 - 12;
        bad[row_at + 6] = 9;
        assert_eq!(c.decode(&bad, OpKind::Get), Decoded::Invalid);
        // A row whose value declares 2^64 - 1 bytes (found by fuzzing: the
        // sum of its offset and length overflowed).
        let mut huge = packet_of(1, &[1]);
        huge.extend(packet_of(2, b"def"));
        let mut row = vec![0, 0, 0xfe];
        row.extend_from_slice(&u64::MAX.to_le_bytes());
        huge.extend(packet_of(3, &row));
        assert_eq!(c.decode(&huge, OpKind::Get), Decoded::Invalid);
        // An OK where a read's result set belongs, a result set for a write.
        let ok = packet_of(1, &[0, 1, 0, 2, 0, 0, 0]);
        assert_eq!(c.decode(&ok, OpKind::Get), Decoded::Invalid);
        assert_eq!(c.decode(&result_set(None), OpKind::Set), Decoded::Invalid);
        // A packet split over several (2^24 - 1 bytes long).
        assert_eq!(
            c.decode(&[0xff, 0xff, 0xff, 0, 0], OpKind::Get),
            Decoded::Invalid
        );
        assert_eq!(c.decode(b"HTTP/1.1 400 Bad", OpKind::Get), Decoded::Invalid);
    }
}
