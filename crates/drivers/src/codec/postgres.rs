//! PostgreSQL's extended query protocol, for the key-value operations.
//!
//! Each connection prepares three statements once ([`STATEMENTS`], by the
//! connector); an operation is then `Bind` (key and value as binary
//! parameters, the result in binary), `Execute` and `Sync`, and its reply
//! everything up to the `ReadyForQuery` that `Sync` brings. `Sync` after
//! every operation keeps them apart: an error ends only its own implicit
//! transaction, and many operations can be in flight on one connection
//! (pipelining) with replies that map one to one onto requests.
//!
//! A backend message is a type byte, a 4-byte big-endian length that counts
//! itself, and the body. A reply to a read is `BindComplete`, a `DataRow`
//! when the key exists, `CommandComplete` (`SELECT 1`), `ReadyForQuery`; a
//! write's has no `DataRow` and `CommandComplete` says `INSERT 0 1` or
//! `DELETE n`; an error puts `ErrorResponse` in place of the rest before
//! `ReadyForQuery`. Notices, parameter changes and notifications may come
//! between them at any time and are skipped.

use bakeoff_core::driver::{BatchRow, Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::workload::OpKind;

use super::MAX_DECLARED_LEN;

/// Object id of `text`, the key's type.
pub const TEXT_OID: u32 = 25;
/// Object id of `bytea`, the value's type.
pub const BYTEA_OID: u32 = 17;

/// The read: the value of one key.
pub const GET: &str = "SELECT v FROM kv WHERE k = $1";
/// The write (set and update): an upsert.
pub const PUT: &str =
    "INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";
/// The delete.
pub const DEL: &str = "DELETE FROM kv WHERE k = $1";

/// The statements each connection prepares, as (name, SQL, parameter
/// types): the names are the same on every connection, so that the codec
/// holds no per-connection state.
pub const STATEMENTS: [(&str, &str, &[u32]); 3] = [
    (GET_NAME, GET, &[TEXT_OID]),
    (PUT_NAME, PUT, &[TEXT_OID, BYTEA_OID]),
    (DEL_NAME, DEL, &[TEXT_OID]),
];

const GET_NAME: &str = "bakeoff_get";
const PUT_NAME: &str = "bakeoff_put";
const DEL_NAME: &str = "bakeoff_del";

/// `Execute` of the unnamed portal, all rows, then `Sync`.
pub(super) const EXECUTE_SYNC: &[u8] = b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04";

/// The PostgreSQL codec (extended query protocol over prepared statements).
#[derive(Clone, Copy, Debug, Default)]
pub struct PostgresCodec;

impl PostgresCodec {
    /// [`STATEMENTS`], owned: what the connector prepares.
    pub fn statements() -> Vec<(String, String, Vec<u32>)> {
        STATEMENTS
            .iter()
            .map(|(name, sql, types)| (name.to_string(), sql.to_string(), types.to_vec()))
            .collect()
    }
}

/// Appends `Bind` of the unnamed portal to statement `name`, every
/// parameter (`params`, each made of pieces) and the result in binary.
#[inline]
pub(super) fn push_bind(out: &mut Vec<u8>, name: &str, params: &[&[&[u8]]]) {
    let at = start_message(out, b'B');
    // Portal "", the statement, one format code for every parameter
    // (binary).
    out.push(0);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&[0, 0, 1, 0, 1]);
    out.extend_from_slice(&(params.len() as u16).to_be_bytes());
    for p in params {
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        for piece in *p {
            out.extend_from_slice(piece);
        }
        let n = (out.len() - len_at - 4) as u32;
        out[len_at..len_at + 4].copy_from_slice(&n.to_be_bytes());
    }
    // One result format code: binary.
    out.extend_from_slice(&[0, 1, 0, 1]);
    end_message(out, at);
}

/// Starts a frontend message of type `t` whose length is patched in by
/// [`end_message`]; returns where it starts.
#[inline]
pub(super) fn start_message(out: &mut Vec<u8>, t: u8) -> usize {
    let at = out.len();
    out.push(t);
    out.extend_from_slice(&[0; 4]);
    at
}

/// Writes the length of the message started at `at`, which ends here.
#[inline]
pub(super) fn end_message(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 1) as u32;
    out[at + 1..at + 5].copy_from_slice(&len.to_be_bytes());
}

/// Appends a batched load of `rows`: `Parse` of the unnamed statement (a
/// multi-row upsert, [`crate::sql::batch_insert`]'s text), `Bind` of every
/// key and value in binary, `Execute`, `Sync`. The statement is parsed per
/// batch: its size varies (a client's last batch is shorter), and one
/// parse per many rows is a small part of the work.
fn push_batch(out: &mut Vec<u8>, rows: &[BatchRow]) {
    let at = start_message(out, b'P');
    out.extend_from_slice(b"\0INSERT INTO kv (k, v) VALUES ");
    for i in 0..rows.len() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(b"($");
        super::push_decimal(out, 2 * i + 1);
        out.extend_from_slice(b", $");
        super::push_decimal(out, 2 * i + 2);
        out.push(b')');
    }
    out.push(b' ');
    out.extend_from_slice(BATCH_TAIL.as_bytes());
    out.push(0);
    out.extend_from_slice(&(2 * rows.len() as u16).to_be_bytes());
    for _ in rows {
        out.extend_from_slice(&TEXT_OID.to_be_bytes());
        out.extend_from_slice(&BYTEA_OID.to_be_bytes());
    }
    end_message(out, at);
    let at = start_message(out, b'B');
    // Portal "", statement "", every parameter in binary.
    out.extend_from_slice(&[0, 0, 0, 1, 0, 1]);
    out.extend_from_slice(&(2 * rows.len() as u16).to_be_bytes());
    for r in rows {
        out.extend_from_slice(&(r.key.len() as u32).to_be_bytes());
        out.extend_from_slice(&r.key);
        out.extend_from_slice(&((r.header.len() + r.payload.len()) as u32).to_be_bytes());
        out.extend_from_slice(&r.header);
        out.extend_from_slice(r.payload);
    }
    out.extend_from_slice(&[0, 1, 0, 1]);
    end_message(out, at);
    out.extend_from_slice(EXECUTE_SYNC);
}

/// The conflict clause of every upsert.
pub const BATCH_TAIL: &str = "ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";

/// Most rows one batched load request carries: each is two parameters,
/// and `Bind` counts them in 16 bits.
pub const MAX_BATCH: u32 = u16::MAX as u32 / 2;

/// The row count at the end of a `CommandComplete` tag (`SELECT 1`,
/// `INSERT 0 1`, `DELETE 0`), NUL-terminated in `body`.
fn tag_rows(body: &[u8]) -> Option<u64> {
    let tag = body.strip_suffix(b"\0")?;
    let digits = &tag[tag.iter().rposition(|&b| b == b' ')? + 1..];
    super::parse_decimal(digits).map(|n| n as u64)
}

/// Decodes the reply to one operation of `kind` at the front of `buf`,
/// up to its `ReadyForQuery`; `row(body, at, end)` locates the value in a
/// `DataRow` whose body is `body` and which spans `at..end` of `buf`
/// (`Ok(None)`: no value, `Err`: not a row of this table).
#[inline(always)]
pub(super) fn decode_reply(
    buf: &[u8],
    kind: OpKind,
    row: impl Fn(&[u8], usize, usize) -> Result<Option<(usize, usize)>, ()>,
) -> Decoded {
    let mut at = 0;
    let mut value = None;
    let mut rows = None;
    let mut failed = false;
    loop {
        let Some(head) = buf.get(at..at + 5) else {
            return Decoded::Incomplete;
        };
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if !(4..=MAX_DECLARED_LEN).contains(&len) {
            return Decoded::Invalid;
        }
        let end = at + 1 + len;
        let Some(body) = buf.get(at + 5..end) else {
            return Decoded::Incomplete;
        };
        match head[0] {
            // BindComplete, and ParseComplete before it (a batch).
            b'2' | b'1' if len == 4 => {}
            // DataRow: where `row` says its value is.
            b'D' => match row(body, at, end) {
                Ok(v) => value = v,
                Err(()) => return Decoded::Invalid,
            },
            // CommandComplete.
            b'C' => match tag_rows(body) {
                Some(n) => rows = Some(n),
                None => return Decoded::Invalid,
            },
            // ErrorResponse.
            b'E' => failed = true,
            // NoticeResponse, ParameterStatus, NotificationResponse.
            b'N' | b'S' | b'A' => {}
            // ReadyForQuery: the end of this operation's reply.
            b'Z' if len == 5 => {
                let reply = if failed {
                    Reply::ServerError
                } else {
                    match (kind, rows, value) {
                        (_, None, _) => return Decoded::Invalid,
                        (
                            OpKind::Get | OpKind::Search | OpKind::ReadModifyWrite,
                            _,
                            Some((start, end)),
                        ) => Reply::Value { start, end },
                        (OpKind::Get | OpKind::Search | OpKind::ReadModifyWrite, _, None) => {
                            Reply::Miss
                        }
                        (OpKind::Delete | OpKind::Update, Some(0), _) => Reply::Miss,
                        _ => Reply::Ok,
                    }
                };
                return Decoded::Complete { len: end, reply };
            }
            _ => return Decoded::Invalid,
        }
        at = end;
    }
}

impl Codec for PostgresCodec {
    #[inline(always)]
    fn encode(&self, _handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        match kind {
            // Search and scan never reach the codec (the driver runs them
            // through the client library); a read-modify-write's first
            // request is a get.
            OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                push_bind(out, GET_NAME, &[&[key]])
            }
            OpKind::Delete => push_bind(out, DEL_NAME, &[&[key]]),
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                push_bind(out, PUT_NAME, &[&[key], &[header, payload]])
            }
        }
        out.extend_from_slice(EXECUTE_SYNC);
    }

    const BATCHES: bool = true;

    fn encode_batch(&self, _: &Handles, rows: &[BatchRow], out: &mut Vec<u8>) {
        push_batch(out, rows)
    }

    #[inline]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        decode_reply(buf, kind, |body, at, end| {
            // One column: its length (-1: NULL), its bytes.
            if body.len() < 6 || body[..2] != [0, 1] {
                return Err(());
            }
            let n = i32::from_be_bytes([body[2], body[3], body[4], body[5]]);
            if n >= 0 {
                if 6 + n as usize != body.len() {
                    return Err(());
                }
                Ok(Some((at + 11, end)))
            } else if n != -1 || body.len() != 6 {
                Err(())
            } else {
                Ok(None)
            }
        })
    }

    fn describe(&self, kind: OpKind) -> String {
        let sql = crate::sql::describe(kind, [GET, PUT, DEL], PUT, false);
        format!("{sql} (prepared once per connection; Bind, Execute, Sync per operation)")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A backend message of type `t` with `body`.
    pub(crate) fn msg(t: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![t];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn data_row(v: Option<&[u8]>) -> Vec<u8> {
        let mut b = vec![0, 1];
        match v {
            Some(v) => {
                b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                b.extend_from_slice(v);
            }
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
        msg(b'D', &b)
    }

    fn sequence(parts: &[Vec<u8>]) -> Vec<u8> {
        let mut r: Vec<u8> = parts.concat();
        r.extend(msg(b'Z', b"I"));
        r
    }

    #[test]
    fn a_bind_carries_the_statement_key_and_value_in_binary() {
        let mut out = Vec::new();
        PostgresCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Set, b"key1", b"hd", b"payload"),
            &mut out,
        );
        let len = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        assert_eq!(out[0], b'B');
        let bind = &out[5..1 + len];
        let mut want = vec![0];
        want.extend_from_slice(b"bakeoff_put\0");
        want.extend_from_slice(&[0, 1, 0, 1, 0, 2]);
        want.extend_from_slice(&4u32.to_be_bytes());
        want.extend_from_slice(b"key1");
        want.extend_from_slice(&9u32.to_be_bytes());
        want.extend_from_slice(b"hdpayload");
        want.extend_from_slice(&[0, 1, 0, 1]);
        assert_eq!(bind, &want[..]);
        assert_eq!(&out[1 + len..], EXECUTE_SYNC);
    }

    #[test]
    fn a_batch_parses_the_library_paths_upsert_and_binds_every_row() {
        let payloads = [b"p0".as_slice(), b"payload1", b""];
        let rows: Vec<BatchRow> = (0..3u8)
            .map(|i| BatchRow {
                key: bakeoff_core::keys::Key::from_bytes(&[b'a' + i; bakeoff_core::keys::KEY_LEN])
                    .unwrap(),
                header: [i; bakeoff_core::value::HEADER_LEN],
                payload: payloads[i as usize],
            })
            .collect();
        let mut out = Vec::new();
        PostgresCodec.encode_batch(&Handles::default(), &rows, &mut out);
        // Parse: the unnamed statement, the same text as the library's.
        assert_eq!(out[0], b'P');
        let plen = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        let parse = &out[5..1 + plen];
        let sql = crate::sql::batch_insert(3, |i| format!("${i}"), BATCH_TAIL);
        assert_eq!(&parse[..sql.len() + 2], format!("\0{sql}\0").as_bytes());
        let types = &parse[sql.len() + 2..];
        assert_eq!(&types[..2], &6u16.to_be_bytes());
        assert_eq!(types.len(), 2 + 6 * 4);
        assert_eq!(&types[6..10], &BYTEA_OID.to_be_bytes());
        // Bind: six parameters, each row's key then its whole value.
        let bind = &out[1 + plen..];
        assert_eq!(bind[0], b'B');
        let blen = u32::from_be_bytes(bind[1..5].try_into().unwrap()) as usize;
        let body = &bind[5..1 + blen];
        assert_eq!(&body[..8], &[0, 0, 0, 1, 0, 1, 0, 6]);
        let mut at = 8;
        for r in &rows {
            let want_value = [&r.header[..], r.payload].concat();
            for want in [&r.key[..], &want_value[..]] {
                let n = u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
                assert_eq!(&body[at + 4..at + 4 + n], want);
                at += 4 + n;
            }
        }
        assert_eq!(&body[at..], &[0, 1, 0, 1]);
        assert_eq!(&bind[1 + blen..], EXECUTE_SYNC);
        // Its reply: ParseComplete first, then as a write's.
        let reply = sequence(&[msg(b'1', b""), msg(b'2', b""), msg(b'C', b"INSERT 0 3\0")]);
        assert_eq!(
            PostgresCodec.decode(&reply, OpKind::Set),
            Decoded::Complete {
                len: reply.len(),
                reply: Reply::Ok
            }
        );
    }

    #[test]
    fn replies_end_at_ready_for_query() {
        let c = PostgresCodec;
        let hit = sequence(&[
            msg(b'2', b""),
            data_row(Some(b"value")),
            msg(b'C', b"SELECT 1\0"),
        ]);
        let Decoded::Complete { len, reply } = c.decode(&hit, OpKind::Get) else {
            panic!("{:?}", c.decode(&hit, OpKind::Get));
        };
        assert_eq!(len, hit.len());
        let Reply::Value { start, end } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(&hit[start..end], b"value");
        for cut in 0..hit.len() {
            assert_eq!(c.decode(&hit[..cut], OpKind::Get), Decoded::Incomplete);
        }

        let miss = sequence(&[msg(b'2', b""), msg(b'C', b"SELECT 0\0")]);
        assert_eq!(
            c.decode(&miss, OpKind::Get),
            Decoded::Complete {
                len: miss.len(),
                reply: Reply::Miss
            }
        );
        let gone = sequence(&[msg(b'2', b""), msg(b'C', b"DELETE 0\0")]);
        assert_eq!(
            c.decode(&gone, OpKind::Delete),
            Decoded::Complete {
                len: gone.len(),
                reply: Reply::Miss
            }
        );
        let deleted = sequence(&[msg(b'2', b""), msg(b'C', b"DELETE 1\0")]);
        assert!(matches!(
            c.decode(&deleted, OpKind::Delete),
            Decoded::Complete {
                reply: Reply::Ok,
                ..
            }
        ));
        // A notice in the middle, then the next reply already behind.
        let mut put = sequence(&[
            msg(b'2', b""),
            msg(b'N', b"SWARNING\0\0"),
            msg(b'C', b"INSERT 0 1\0"),
        ]);
        let first = put.len();
        put.extend(sequence(&[msg(b'2', b"")]));
        assert_eq!(
            c.decode(&put, OpKind::Set),
            Decoded::Complete {
                len: first,
                reply: Reply::Ok
            }
        );
    }

    #[test]
    fn errors_and_garbage_are_told_apart() {
        let c = PostgresCodec;
        let err = sequence(&[msg(b'E', b"SERROR\0C23505\0Mduplicate\0\0")]);
        assert_eq!(
            c.decode(&err, OpKind::Set),
            Decoded::Complete {
                len: err.len(),
                reply: Reply::ServerError
            }
        );
        // No CommandComplete and no error: not a reply to an operation.
        assert_eq!(
            c.decode(&sequence(&[msg(b'2', b"")]), OpKind::Get),
            Decoded::Invalid
        );
        assert_eq!(c.decode(b"HTTP/1.1 400", OpKind::Get), Decoded::Invalid);
        assert_eq!(
            c.decode(&[b'D', 0xff, 0xff, 0xff, 0xff], OpKind::Get),
            Decoded::Invalid
        );
        // A row longer than its message.
        let mut bad = data_row(Some(b"abc"));
        bad[10] = 9;
        assert_eq!(c.decode(&bad, OpKind::Get), Decoded::Invalid);
        // NULL is no value.
        let null = sequence(&[msg(b'2', b""), data_row(None), msg(b'C', b"SELECT 1\0")]);
        assert!(matches!(
            c.decode(&null, OpKind::Get),
            Decoded::Complete {
                reply: Reply::Miss,
                ..
            }
        ));
    }
}
