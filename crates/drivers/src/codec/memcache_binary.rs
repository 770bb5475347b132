//! The memcache binary protocol.
//!
//! Every packet starts with a 24-byte header: magic (0x80 request, 0x81
//! response), opcode, key length, extras length, data type, vbucket id or
//! status, total body length, opaque, CAS. Requests: GET (0x00), SET (0x01,
//! 8 bytes of extras: flags and expiry), DELETE (0x04).

use bakeoff_core::driver::{Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::workload::OpKind;

/// The memcache binary codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemcacheBinaryCodec;

const HEADER: usize = 24;
const OP_GET: u8 = 0x00;
const OP_SET: u8 = 0x01;
const OP_DELETE: u8 = 0x04;

/// Response statuses.
const STATUS_OK: u16 = 0x0000;
const STATUS_NOT_FOUND: u16 = 0x0001;
const STATUS_EXISTS: u16 = 0x0002;
const STATUS_NOT_STORED: u16 = 0x0005;

#[inline]
fn push_header(out: &mut Vec<u8>, opcode: u8, key_len: usize, extras: u8, body: usize) {
    out.push(0x80);
    out.push(opcode);
    out.extend_from_slice(&(key_len as u16).to_be_bytes());
    out.push(extras);
    out.push(0); // data type
    out.extend_from_slice(&[0, 0]); // vbucket
    out.extend_from_slice(&(body as u32).to_be_bytes());
    out.extend_from_slice(&[0; 4]); // opaque
    out.extend_from_slice(&[0; 8]); // cas
}

impl Codec for MemcacheBinaryCodec {
    #[inline(always)]
    fn encode(&self, _handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        match kind {
            // Search never reaches a key-value protocol (the plan rejects it).
            // A scan never comes here (refused before a run).
            OpKind::Get
            | OpKind::Delete
            | OpKind::Search
            | OpKind::Scan
            | OpKind::ReadModifyWrite => {
                let op = if kind == OpKind::Delete {
                    OP_DELETE
                } else {
                    OP_GET
                };
                push_header(out, op, key.len(), 0, key.len());
                out.extend_from_slice(key);
            }
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                let vlen = header.len() + payload.len();
                push_header(out, OP_SET, key.len(), 8, 8 + key.len() + vlen);
                out.extend_from_slice(&[0; 8]); // flags, expiry
                out.extend_from_slice(key);
                out.extend_from_slice(header);
                out.extend_from_slice(payload);
            }
        }
    }

    #[inline]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        if buf.len() < HEADER {
            return if buf.first().is_some_and(|&m| m != 0x81) {
                Decoded::Invalid
            } else {
                Decoded::Incomplete
            };
        }
        if buf[0] != 0x81 {
            return Decoded::Invalid;
        }
        let key_len = u16::from_be_bytes([buf[2], buf[3]]) as usize;
        let extras = buf[4] as usize;
        let status = u16::from_be_bytes([buf[6], buf[7]]);
        let body = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
        if extras + key_len > body || body > super::MAX_DECLARED_LEN {
            return Decoded::Invalid;
        }
        let len = HEADER + body;
        if buf.len() < len {
            return Decoded::Incomplete;
        }
        let reply = match status {
            STATUS_OK if matches!(kind, OpKind::Get | OpKind::ReadModifyWrite) => Reply::Value {
                start: HEADER + extras + key_len,
                end: len,
            },
            STATUS_OK => Reply::Ok,
            STATUS_NOT_FOUND | STATUS_EXISTS | STATUS_NOT_STORED => Reply::Miss,
            _ => Reply::ServerError,
        };
        Decoded::Complete { len, reply }
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Get => "binary GET (0x00) <key>".into(),
            OpKind::Set => "binary SET (0x01) <key> + value, flags 0, expiry 0".into(),
            OpKind::Update => "binary SET (0x01) <key> + value (overwrites an existing key)".into(),
            OpKind::Delete => "binary DELETE (0x04) <key>".into(),
            OpKind::Insert => "binary SET (0x01) <key> + value (a new key)".into(),
            OpKind::ReadModifyWrite => {
                "binary GET (0x00) <key>, then binary SET (0x01) <key> + value".into()
            }
            OpKind::Search | OpKind::Scan => "not supported".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut v = vec![0x81, 0x00];
        v.extend_from_slice(&(key.len() as u16).to_be_bytes());
        v.push(extras.len() as u8);
        v.push(0);
        v.extend_from_slice(&status.to_be_bytes());
        v.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
        v.extend_from_slice(&[0; 12]);
        v.extend_from_slice(extras);
        v.extend_from_slice(key);
        v.extend_from_slice(value);
        v
    }

    #[test]
    fn encodes_requests_byte_for_byte() {
        let mut out = Vec::new();
        MemcacheBinaryCodec.encode(&[0; 4], WireOp::new(OpKind::Get, b"ab", &[], &[]), &mut out);
        assert_eq!(
            out,
            [
                &[0x80, 0x00, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2][..],
                &[0; 12],
                b"ab"
            ]
            .concat()
        );
        out.clear();
        MemcacheBinaryCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Set, b"k", b"v", b"w"),
            &mut out,
        );
        assert_eq!(
            out,
            [
                &[0x80, 0x01, 0, 1, 8, 0, 0, 0, 0, 0, 0, 11][..],
                &[0; 12],
                &[0; 8],
                b"k",
                b"vw"
            ]
            .concat()
        );
        out.clear();
        MemcacheBinaryCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Delete, b"k", &[], &[]),
            &mut out,
        );
        assert_eq!(out[1], OP_DELETE);
        assert_eq!(out.len(), 25);
    }

    #[test]
    fn decodes_every_reply_type() {
        let d = |b: &[u8], k| MemcacheBinaryCodec.decode(b, k);
        let hit = response(STATUS_OK, &[0, 0, 0, 0], b"", b"hello");
        assert_eq!(
            d(&hit, OpKind::Get),
            Decoded::Complete {
                len: 33,
                reply: Reply::Value { start: 28, end: 33 }
            }
        );
        let stored = response(STATUS_OK, &[], b"", b"");
        assert_eq!(
            d(&stored, OpKind::Set),
            Decoded::Complete {
                len: 24,
                reply: Reply::Ok
            }
        );
        let miss = response(STATUS_NOT_FOUND, &[], b"", b"Not found");
        assert_eq!(
            d(&miss, OpKind::Get),
            Decoded::Complete {
                len: 33,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            d(&response(STATUS_EXISTS, &[], b"", b""), OpKind::Set),
            Decoded::Complete {
                len: 24,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            d(&response(STATUS_NOT_STORED, &[], b"", b""), OpKind::Set),
            Decoded::Complete {
                len: 24,
                reply: Reply::Miss
            }
        );
        let oom = response(0x0082, &[], b"", b"Out of memory");
        assert_eq!(
            d(&oom, OpKind::Set),
            Decoded::Complete {
                len: 37,
                reply: Reply::ServerError
            }
        );
        assert_eq!(d(&hit[..30], OpKind::Get), Decoded::Incomplete);
        assert_eq!(d(&hit[..10], OpKind::Get), Decoded::Incomplete);
        assert_eq!(d(b"VALUE", OpKind::Get), Decoded::Invalid);
        let mut bad = hit.clone();
        bad[4] = 200; // extras longer than the body
        assert_eq!(d(&bad, OpKind::Get), Decoded::Invalid);
    }
}
