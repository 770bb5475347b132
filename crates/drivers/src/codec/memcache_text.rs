//! The memcache text protocol.
//!
//! Requests: `get k`, `set k 0 0 <n>` + data (for set and update),
//! `delete k`. Replies: `VALUE k f n [cas]` + data + `END`, `END`,
//! `STORED`, `NOT_STORED`, `EXISTS`, `NOT_FOUND`, `DELETED`, `ERROR`,
//! `CLIENT_ERROR …`, `SERVER_ERROR …`.

use bakeoff_core::driver::{Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::workload::OpKind;

use super::{find_crlf, parse_decimal, push_decimal, MAX_DECLARED_LEN};

/// The memcache text codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemcacheTextCodec;

impl Codec for MemcacheTextCodec {
    #[inline(always)]
    fn encode(&self, _handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        match kind {
            // Search never reaches a key-value protocol (the plan rejects it).
            // A scan never comes here (refused before a run).
            OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                out.extend_from_slice(b"get ");
                out.extend_from_slice(key);
                out.extend_from_slice(b"\r\n");
            }
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                out.extend_from_slice(b"set ");
                out.extend_from_slice(key);
                out.extend_from_slice(b" 0 0 ");
                push_decimal(out, header.len() + payload.len());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(header);
                out.extend_from_slice(payload);
                out.extend_from_slice(b"\r\n");
            }
            OpKind::Delete => {
                out.extend_from_slice(b"delete ");
                out.extend_from_slice(key);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    #[inline]
    fn decode(&self, buf: &[u8], _kind: OpKind) -> Decoded {
        let Some(eol) = find_crlf(buf) else {
            return if buf.len() > 2048 {
                Decoded::Invalid
            } else {
                Decoded::Incomplete
            };
        };
        let line = &buf[..eol];
        let next = eol + 2;
        let done = |reply| Decoded::Complete { len: next, reply };
        match line {
            b"STORED" | b"DELETED" | b"TOUCHED" => done(Reply::Ok),
            b"END" | b"NOT_FOUND" | b"NOT_STORED" | b"EXISTS" => done(Reply::Miss),
            b"ERROR" => done(Reply::ServerError),
            _ if line.starts_with(b"CLIENT_ERROR") || line.starts_with(b"SERVER_ERROR") => {
                done(Reply::ServerError)
            }
            _ if line.starts_with(b"VALUE ") => {
                // VALUE <key> <flags> <bytes> [<cas>]
                let mut fields = line[6..].split(|&b| b == b' ');
                let (Some(_key), Some(_flags), Some(bytes)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    return Decoded::Invalid;
                };
                let Some(n) = parse_decimal(bytes).filter(|&n| n <= MAX_DECLARED_LEN) else {
                    return Decoded::Invalid;
                };
                let end = next + n;
                // data, CRLF, then "END\r\n"
                if buf.len() < end + 7 {
                    return Decoded::Incomplete;
                }
                if &buf[end..end + 7] != b"\r\nEND\r\n" {
                    return Decoded::Invalid;
                }
                Decoded::Complete {
                    len: end + 7,
                    reply: Reply::Value { start: next, end },
                }
            }
            _ => Decoded::Invalid,
        }
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Get => "get <key>".into(),
            OpKind::Set => "set <key> 0 0 <bytes> + value".into(),
            OpKind::Update => "set <key> 0 0 <bytes> + value (overwrites an existing key)".into(),
            OpKind::Delete => "delete <key>".into(),
            OpKind::Insert => "set <key> 0 0 <bytes> + value (a new key)".into(),
            OpKind::ReadModifyWrite => "get <key>, then set <key> 0 0 <bytes> + value".into(),
            OpKind::Search | OpKind::Scan => "not supported".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(b: &[u8]) -> Decoded {
        MemcacheTextCodec.decode(b, OpKind::Get)
    }

    #[test]
    fn encodes_requests_byte_for_byte() {
        let mut out = Vec::new();
        MemcacheTextCodec.encode(&[0; 4], WireOp::new(OpKind::Get, b"k1", &[], &[]), &mut out);
        assert_eq!(out, b"get k1\r\n");
        out.clear();
        MemcacheTextCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Set, b"k1", b"ab", b"cde"),
            &mut out,
        );
        assert_eq!(out, b"set k1 0 0 5\r\nabcde\r\n");
        out.clear();
        MemcacheTextCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Delete, b"k1", &[], &[]),
            &mut out,
        );
        assert_eq!(out, b"delete k1\r\n");
    }

    #[test]
    fn decodes_every_reply_type() {
        let c = |len, reply| Decoded::Complete { len, reply };
        assert_eq!(dec(b"STORED\r\n"), c(8, Reply::Ok));
        assert_eq!(dec(b"DELETED\r\n"), c(9, Reply::Ok));
        assert_eq!(dec(b"END\r\n"), c(5, Reply::Miss));
        assert_eq!(dec(b"NOT_FOUND\r\n"), c(11, Reply::Miss));
        assert_eq!(dec(b"NOT_STORED\r\n"), c(12, Reply::Miss));
        assert_eq!(dec(b"EXISTS\r\n"), c(8, Reply::Miss));
        assert_eq!(dec(b"ERROR\r\n"), c(7, Reply::ServerError));
        assert_eq!(
            dec(b"CLIENT_ERROR bad data chunk\r\n"),
            c(29, Reply::ServerError)
        );
        assert_eq!(
            dec(b"SERVER_ERROR out of memory storing object\r\n"),
            c(43, Reply::ServerError)
        );
        assert_eq!(
            dec(b"VALUE k1 0 5\r\nhello\r\nEND\r\n"),
            c(26, Reply::Value { start: 14, end: 19 })
        );
        assert_eq!(
            dec(b"VALUE k1 0 5 99\r\nhello\r\nEND\r\n"),
            c(29, Reply::Value { start: 17, end: 22 })
        );
    }

    #[test]
    fn waits_for_whole_replies() {
        for p in [
            &b"STOR"[..],
            b"VALUE k1 0 5\r\nhel",
            b"VALUE k1 0 5\r\nhello\r\nEN",
            b"END\r",
        ] {
            assert_eq!(
                dec(p),
                Decoded::Incomplete,
                "{:?}",
                String::from_utf8_lossy(p)
            );
        }
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(dec(b"HELLO\r\n"), Decoded::Invalid);
        assert_eq!(dec(b"VALUE k1 0 x\r\n"), Decoded::Invalid);
        assert_eq!(dec(b"VALUE k1 0 2\r\nhello\r\nEND\r\n"), Decoded::Invalid);
        assert_eq!(dec(b"VALUE k1\r\n"), Decoded::Invalid);
    }
}
