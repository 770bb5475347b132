//! PostgreSQL records of several fields (`--fields N`), kept as YCSB's
//! JDBC binding keeps them: table usertable, a column per field
//! ([`crate::sql::FieldsTable`]).
//!
//! The protocol is [`super::postgres`]'s: each connection prepares the
//! statements of [`PostgresFieldsCodec::statements`] once, and an
//! operation is `Bind`, `Execute`, `Sync`. A read selects every field; a
//! write of the whole record (the load, a set, an insert) binds every
//! field; an update and a read-modify-write's write run the one-column
//! `UPDATE` of their field. A read's `DataRow` holds each field as a
//! length and its bytes: [`Codec::unescape_value`] lays the fields end to
//! end, which is the record.

use bakeoff_core::driver::{Codec, Decoded, Handles, WireOp};
use bakeoff_core::workload::OpKind;

use super::postgres::{
    decode_reply, end_message, push_bind, start_message, BYTEA_OID, EXECUTE_SYNC, TEXT_OID,
};
use crate::sql::{Dialect, FieldsTable};

/// The statements' names: the same on every connection, so that the
/// codec holds no per-connection state.
const GET_NAME: &str = "bakeoff_get_fields";
const PUT_NAME: &str = "bakeoff_put_fields";
const DEL_NAME: &str = "bakeoff_del_fields";

/// The PostgreSQL codec for records of several fields.
#[derive(Clone, Debug)]
pub struct PostgresFieldsCodec {
    table: FieldsTable,
    /// The name of each field's one-column `UPDATE`.
    put_field: Vec<String>,
}

impl PostgresFieldsCodec {
    /// Records of `fields` fields.
    pub fn new(fields: u32) -> Self {
        let fields = fields.max(1) as usize;
        PostgresFieldsCodec {
            table: table(fields),
            put_field: (0..fields)
                .map(|f| format!("bakeoff_put_field{f}"))
                .collect(),
        }
    }

    /// The statements each connection prepares, as (name, SQL, parameter
    /// types).
    pub fn statements(&self) -> Vec<(String, String, Vec<u32>)> {
        let t = &self.table;
        let mut all = vec![
            (GET_NAME.into(), t.get(), vec![TEXT_OID]),
            (
                PUT_NAME.into(),
                t.put(),
                std::iter::once(TEXT_OID)
                    .chain(std::iter::repeat_n(BYTEA_OID, t.fields))
                    .collect(),
            ),
            (DEL_NAME.into(), t.del(), vec![TEXT_OID]),
        ];
        for (f, name) in self.put_field.iter().enumerate() {
            all.push((name.clone(), t.put_field(f), vec![TEXT_OID, BYTEA_OID]));
        }
        all
    }

    /// Appends `Bind` of the whole-record upsert: the key, then `record`
    /// cut into its fields, each a parameter.
    fn push_bind_record(&self, out: &mut Vec<u8>, key: &[u8], record: &[u8]) {
        let fields = self.table.fields;
        let at = start_message(out, b'B');
        out.push(0);
        out.extend_from_slice(PUT_NAME.as_bytes());
        out.extend_from_slice(&[0, 0, 1, 0, 1]);
        out.extend_from_slice(&(1 + fields as u16).to_be_bytes());
        out.extend_from_slice(&(key.len() as u32).to_be_bytes());
        out.extend_from_slice(key);
        let len = (record.len() / fields).max(1);
        let mut chunks = record.chunks(len);
        for _ in 0..fields {
            let field = chunks.next().unwrap_or_default();
            out.extend_from_slice(&(field.len() as u32).to_be_bytes());
            out.extend_from_slice(field);
        }
        out.extend_from_slice(&[0, 1, 0, 1]);
        end_message(out, at);
    }
}

/// Table usertable in PostgreSQL's dialect.
pub fn table(fields: usize) -> FieldsTable {
    FieldsTable {
        fields,
        dialect: Dialect::Postgres,
    }
}

impl Codec for PostgresFieldsCodec {
    fn encode(&self, _handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let key = op.key;
        match op.kind {
            // Scans and searches never reach the codec (the driver runs
            // them through the client library); a read-modify-write's
            // first request is a read.
            OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                push_bind(out, GET_NAME, &[&[key]])
            }
            OpKind::Delete => push_bind(out, DEL_NAME, &[&[key]]),
            OpKind::Update => {
                let name = &self.put_field[op.field as usize % self.put_field.len()];
                push_bind(out, name, &[&[key], &[op.header, op.payload]])
            }
            OpKind::Set | OpKind::Insert => self.push_bind_record(out, key, op.payload),
        }
        out.extend_from_slice(EXECUTE_SYNC);
    }

    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        let fields = self.table.fields;
        decode_reply(buf, kind, |body, at, end| {
            // Every field: its length (-1: NULL), its bytes.
            if body.len() < 2 || usize::from(u16::from_be_bytes([body[0], body[1]])) != fields {
                return Err(());
            }
            let mut pos = 2;
            for _ in 0..fields {
                let Some(n) = body.get(pos..pos + 4) else {
                    return Err(());
                };
                let n = i32::from_be_bytes([n[0], n[1], n[2], n[3]]);
                pos += 4;
                if n > 0 {
                    pos += n as usize;
                } else if n < -1 {
                    return Err(());
                }
            }
            if pos != body.len() {
                return Err(());
            }
            // From the first field's length: unescaped below.
            Ok(Some((at + 7, end)))
        })
    }

    const ESCAPES_VALUES: bool = true;

    /// Drops each field's length (a NULL field adds nothing), in place.
    fn unescape_value(&self, value: &mut [u8]) -> usize {
        let (mut at, mut to) = (0, 0);
        while let Some(n) = value.get(at..at + 4) {
            let n = i32::from_be_bytes([n[0], n[1], n[2], n[3]]);
            at += 4;
            if n > 0 {
                let n = (n as usize).min(value.len() - at);
                value.copy_within(at..at + n, to);
                to += n;
                at += n;
            }
        }
        to
    }

    const KEEPS_FIELDS: bool = true;

    fn describe(&self, kind: OpKind) -> String {
        format!(
            "{} (prepared once per connection; Bind, Execute, Sync per operation)",
            self.table.describe(kind)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::postgres::tests::msg;
    use bakeoff_core::driver::Reply;

    fn data_row(fields: &[Option<&[u8]>]) -> Vec<u8> {
        let mut b = (fields.len() as u16).to_be_bytes().to_vec();
        for f in fields {
            match f {
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v);
                }
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        msg(b'D', &b)
    }

    fn reply(parts: &[Vec<u8>]) -> Vec<u8> {
        let mut r = msg(b'2', b"");
        r.extend(parts.concat());
        r.extend(msg(b'Z', b"I"));
        r
    }

    #[test]
    fn a_read_of_three_fields_is_the_record_once_unescaped() {
        let codec = PostgresFieldsCodec::new(3);
        let mut buf = reply(&[
            data_row(&[Some(b"aa"), Some(b"bbb"), Some(b"c")]),
            msg(b'C', b"SELECT 1\0"),
        ]);
        let Decoded::Complete {
            len,
            reply: Reply::Value { start, end },
        } = codec.decode(&buf, OpKind::Get)
        else {
            panic!("not a value")
        };
        assert_eq!(len, buf.len());
        let n = codec.unescape_value(&mut buf[start..end]);
        assert_eq!(&buf[start..start + n], b"aabbbc");
        // A row of another shape is not this table's.
        let other = reply(&[data_row(&[Some(b"aa")]), msg(b'C', b"SELECT 1\0")]);
        assert!(matches!(
            codec.decode(&other, OpKind::Get),
            Decoded::Invalid
        ));
        // Cut short: incomplete.
        assert!(matches!(
            codec.decode(&buf[..10], OpKind::Get),
            Decoded::Incomplete
        ));
    }

    #[test]
    fn an_update_of_no_record_is_a_miss() {
        let codec = PostgresFieldsCodec::new(3);
        let buf = reply(&[msg(b'C', b"UPDATE 0\0")]);
        assert!(matches!(
            codec.decode(&buf, OpKind::Update),
            Decoded::Complete {
                reply: Reply::Miss,
                ..
            }
        ));
        let buf = reply(&[msg(b'C', b"UPDATE 1\0")]);
        assert!(matches!(
            codec.decode(&buf, OpKind::Update),
            Decoded::Complete {
                reply: Reply::Ok,
                ..
            }
        ));
    }

    #[test]
    fn writes_bind_the_whole_record_or_one_field_by_name() {
        let codec = PostgresFieldsCodec::new(2);
        let mut out = Vec::new();
        codec.encode(
            &[0; 4],
            WireOp::new(OpKind::Set, b"k1", b"", b"aabb"),
            &mut out,
        );
        let len = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        let mut want = vec![0];
        want.extend_from_slice(b"bakeoff_put_fields\0");
        want.extend_from_slice(&[0, 1, 0, 1, 0, 3]);
        for p in [&b"k1"[..], b"aa", b"bb"] {
            want.extend_from_slice(&(p.len() as u32).to_be_bytes());
            want.extend_from_slice(p);
        }
        want.extend_from_slice(&[0, 1, 0, 1]);
        assert_eq!(&out[5..1 + len], &want[..]);
        out.clear();
        let op = WireOp {
            field: 1,
            ..WireOp::new(OpKind::Update, b"k1", b"h", b"v")
        };
        codec.encode(&[0; 4], op, &mut out);
        assert!(out.windows(18).any(|w| w == b"bakeoff_put_field1"));
        // Every statement named is one the connection prepares.
        let names: Vec<String> = codec.statements().into_iter().map(|s| s.0).collect();
        assert!(names.contains(&"bakeoff_put_field1".to_string()));
        assert_eq!(names.len(), 3 + 2);
    }
}
