//! MySQL/MariaDB records of several fields (`--fields N`), kept as YCSB's
//! JDBC binding keeps them: table usertable, a column per field
//! ([`crate::sql::FieldsTable`]).
//!
//! The protocol is [`super::mysql`]'s: each connection prepares
//! [`MysqlFieldsCodec::statements`] once, in order; its [`Handles`] are the
//! ids of the read, the whole-record upsert, the delete, and the first
//! field's one-column `UPDATE`, the others' ids following it one by one
//! (the connector checks they do: the server numbers a connection's
//! statements in the order it prepares them). A read's binary row holds
//! each field as a length-encoded string after the NULL bitmap:
//! [`Codec::unescape_value`] lays the fields end to end, which is the
//! record.

use bakeoff_core::driver::{Codec, Decoded, Handles, WireOp};
use bakeoff_core::workload::OpKind;

use super::mysql::{
    decode_reply, end_packet, push_execute, push_lenenc, read_lenenc, COM_STMT_EXECUTE, KEY_TYPE,
    VALUE_TYPE,
};
use crate::sql::{Dialect, FieldsTable};
use bakeoff_core::value::MAX_FIELDS;

/// The MySQL/MariaDB codec for records of several fields.
#[derive(Clone, Copy, Debug)]
pub struct MysqlFieldsCodec {
    table: FieldsTable,
}

/// Table usertable in MySQL's dialect.
pub fn table(fields: usize) -> FieldsTable {
    FieldsTable {
        fields,
        dialect: Dialect::Mysql,
    }
}

/// Bytes of a binary row's NULL bitmap for `columns` columns (it starts
/// at bit 2).
const fn bitmap_len(columns: usize) -> usize {
    (columns + 7 + 2) / 8
}

impl MysqlFieldsCodec {
    /// Records of `fields` fields.
    pub fn new(fields: u32) -> Self {
        MysqlFieldsCodec {
            table: table((fields as usize).clamp(1, MAX_FIELDS as usize)),
        }
    }

    /// The statements each connection prepares, in order: the read, the
    /// upsert, the delete, then each field's `UPDATE`.
    pub fn statements(&self) -> Vec<String> {
        let t = &self.table;
        let mut all = vec![t.get(), t.put(), t.del()];
        all.extend((0..t.fields).map(|f| t.put_field(f)));
        all
    }

    /// Appends `COM_STMT_EXECUTE` of the upsert `id`: the key, then
    /// `record` cut into its fields.
    fn push_execute_record(&self, out: &mut Vec<u8>, id: u32, key: &[u8], record: &[u8]) {
        let fields = self.table.fields;
        let at = out.len();
        out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_EXECUTE]);
        out.extend_from_slice(&id.to_le_bytes());
        // No cursor, one iteration, the NULL bitmap (none NULL), types
        // follow.
        out.extend_from_slice(&[0, 1, 0, 0, 0]);
        out.resize(out.len() + (1 + fields).div_ceil(8), 0);
        out.push(1);
        out.extend_from_slice(&KEY_TYPE);
        for _ in 0..fields {
            out.extend_from_slice(&VALUE_TYPE);
        }
        push_lenenc(out, key.len());
        out.extend_from_slice(key);
        let len = (record.len() / fields).max(1);
        let mut chunks = record.chunks(len);
        for _ in 0..fields {
            let field = chunks.next().unwrap_or_default();
            push_lenenc(out, field.len());
            out.extend_from_slice(field);
        }
        end_packet(out, at);
    }
}

impl Codec for MysqlFieldsCodec {
    fn encode(&self, ids: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let key = op.key;
        match op.kind {
            // Scans and searches never reach the codec (the driver runs
            // them through the client library); a read-modify-write's
            // first request is a read.
            OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                push_execute(out, ids[0], &[KEY_TYPE], &[&[key]])
            }
            OpKind::Delete => push_execute(out, ids[2], &[KEY_TYPE], &[&[key]]),
            OpKind::Update => {
                // `SET fieldJ = ? WHERE k = ?`: the value binds first.
                let field = op.field % self.table.fields as u32;
                push_execute(
                    out,
                    ids[3] + field,
                    &[VALUE_TYPE, KEY_TYPE],
                    &[&[op.header, op.payload], &[key]],
                )
            }
            OpKind::Set | OpKind::Insert => self.push_execute_record(out, ids[1], key, op.payload),
        }
    }

    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        let fields = self.table.fields;
        decode_reply(buf, kind, fields as u64, |p, start, end| {
            // Header, the NULL bitmap, each field not NULL.
            let nulls = bitmap_len(fields);
            let mut pos = 1 + nulls;
            if p.len() < pos {
                return Err(());
            }
            for f in 0..fields {
                let bit = f + 2;
                if p[1 + bit / 8] & (1 << (bit % 8)) != 0 {
                    continue;
                }
                let (n, used) = read_lenenc(p.get(pos..).ok_or(())?).ok_or(())?;
                pos += used + n as usize;
            }
            if pos != p.len() {
                return Err(());
            }
            // From the bitmap: unescaped below.
            Ok(Some((start + 1, end)))
        })
    }

    const ESCAPES_VALUES: bool = true;

    /// Drops the NULL bitmap and each field's length (a NULL field adds
    /// nothing), in place.
    fn unescape_value(&self, value: &mut [u8]) -> usize {
        let fields = self.table.fields;
        // The bitmap, kept aside: the first field is written over it.
        let mut nulls = [0u8; bitmap_len(MAX_FIELDS as usize)];
        let len = bitmap_len(fields).min(value.len());
        nulls[..len].copy_from_slice(&value[..len]);
        let (mut at, mut to) = (len, 0);
        for f in 0..fields {
            let bit = f + 2;
            if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
                continue;
            }
            let Some((n, used)) = value.get(at..).and_then(read_lenenc) else {
                break;
            };
            at += used;
            let n = (n as usize).min(value.len() - at);
            value.copy_within(at..at + n, to);
            to += n;
            at += n;
        }
        to
    }

    const KEEPS_FIELDS: bool = true;

    fn describe(&self, kind: OpKind) -> String {
        format!(
            "{} (prepared once per connection; COM_STMT_EXECUTE per operation)",
            self.table.describe(kind)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::mysql::tests::packet_of;
    use bakeoff_core::driver::Reply;

    /// A read's reply of `fields` columns, one row of `row` (None: NULL).
    fn result_set(row: &[Option<&[u8]>]) -> Vec<u8> {
        let mut r = packet_of(1, &[row.len() as u8]);
        let mut seq = 2;
        for _ in row {
            r.extend(packet_of(seq, b"\x03def\x07bakeoff\x01u\x01u\x01f\x01f"));
            seq += 1;
        }
        let mut p = vec![0; 1 + bitmap_len(row.len())];
        for (f, v) in row.iter().enumerate() {
            match v {
                Some(v) => {
                    push_lenenc(&mut p, v.len());
                    p.extend_from_slice(v);
                }
                None => p[1 + (f + 2) / 8] |= 1 << ((f + 2) % 8),
            }
        }
        r.extend(packet_of(seq, &p));
        r.extend(packet_of(seq + 1, &[0xfe, 0, 0, 0x22, 0, 0, 0]));
        r
    }

    #[test]
    fn a_read_of_fields_is_the_record_once_unescaped() {
        let codec = MysqlFieldsCodec::new(7);
        // The first field longer than the bitmap it is laid over.
        let fields: [&[u8]; 7] = [b"aaaa", b"bb", b"", b"ccc", b"d", b"ee", b"f"];
        let mut buf = result_set(&fields.map(Some));
        let Decoded::Complete {
            len,
            reply: Reply::Value { start, end },
        } = codec.decode(&buf, OpKind::Get)
        else {
            panic!("not a value")
        };
        assert_eq!(len, buf.len());
        let n = codec.unescape_value(&mut buf[start..end]);
        assert_eq!(&buf[start..start + n], b"aaaabbcccdeef");
        // A NULL field adds nothing.
        let mut buf = result_set(&[Some(b"aa"), None, Some(b"b"), None, None, None, Some(b"c")]);
        let Decoded::Complete {
            reply: Reply::Value { start, end },
            ..
        } = codec.decode(&buf, OpKind::Get)
        else {
            panic!("not a value")
        };
        let n = codec.unescape_value(&mut buf[start..end]);
        assert_eq!(&buf[start..start + n], b"aabc");
        // Another table's row is not this one's.
        let other = result_set(&[Some(b"aa")]);
        assert!(matches!(
            codec.decode(&other, OpKind::Get),
            Decoded::Invalid
        ));
        let whole = result_set(&fields.map(Some));
        assert!(matches!(
            codec.decode(&whole[..whole.len() - 3], OpKind::Get),
            Decoded::Incomplete
        ));
    }

    #[test]
    fn an_update_executes_its_fields_statement_value_first() {
        let codec = MysqlFieldsCodec::new(10);
        let ids = [1, 2, 3, 4];
        let mut out = Vec::new();
        let op = WireOp {
            field: 9,
            ..WireOp::new(OpKind::Update, b"key", b"h", b"v")
        };
        codec.encode(&ids, op, &mut out);
        assert_eq!(out[4], COM_STMT_EXECUTE);
        assert_eq!(u32::from_le_bytes(out[5..9].try_into().unwrap()), 4 + 9);
        assert!(out.ends_with(b"\x02hv\x03key"));
        // A whole record: eleven parameters, a bitmap of two bytes.
        out.clear();
        codec.encode(
            &ids,
            WireOp::new(OpKind::Set, b"key", b"", b"0123456789"),
            &mut out,
        );
        let len = u32::from_le_bytes([out[0], out[1], out[2], 0]) as usize;
        assert_eq!(len + 4, out.len());
        assert_eq!(&out[9..16], &[0, 1, 0, 0, 0, 0, 0]);
        assert_eq!(out[16], 1);
        assert!(out.ends_with(b"\x017\x018\x019"));
        assert_eq!(codec.statements().len(), 13);
    }
}
