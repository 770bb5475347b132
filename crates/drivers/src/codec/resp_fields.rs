//! Redis records of several fields (`--fields N`), kept as Redis keeps
//! YCSB's records: a hash of fields `field0` … `fieldN-1`.
//!
//! Requests: a read is `HMGET key field0 … fieldN-1` (every field, in
//! order); a write of the whole record (the load, a set, an insert) is
//! `HSET key field0 v0 …`; an update and a read-modify-write's write are
//! `HSET key fieldJ vJ`, one field; a delete is `DEL key`. With a scan
//! index ([`RespScanIndexCodec`]) each write keeps it as there, and a scan
//! is one `EVAL` of a script that reads the index, then each record's
//! fields in order. Replies: a read's array of fields is the record once
//! [`Codec::unescape_value`] has laid its values end to end (a record
//! with no field is a miss).

use bakeoff_core::driver::{Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::workload::OpKind;

use super::push_decimal;
use super::resp::{
    push_bulk_len, skip_value, then_count, Kind, RespCodec, RespScanIndexCodec, Step, SCAN_INDEX,
};

/// A scan of records of several fields: up to `ARGV[2]` keys from
/// `ARGV[1]` on, each followed by its hash (`HGETALL`: names and values;
/// a hash of long values keeps no order, so [`RespFieldsCodec::scan_rows`]
/// puts them in order by name, on the client, where it costs the server
/// nothing).
const SCAN_SCRIPT: &str = "local ks = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1], '+', 'LIMIT', 0, tonumber(ARGV[2])) \
local out = {} \
for i = 1, #ks do \
out[2 * i - 1] = ks[i] \
out[2 * i] = redis.call('HGETALL', ks[i]) \
end \
return out";

/// RESP for records of several fields, each record a hash.
#[derive(Clone, Debug)]
pub struct RespFieldsCodec {
    fields: usize,
    /// Each field's name as a bulk string (`$6\r\nfield0\r\n`).
    names: Vec<Vec<u8>>,
    /// Every name, in order: the tail of an `HMGET`.
    all_names: Vec<u8>,
    /// The scan index the writes keep, when the run scans.
    index: Option<RespScanIndexCodec>,
    /// `*6 EVAL <script> 1 <index>`, the start of every scan.
    scan_head: Vec<u8>,
}

impl RespFieldsCodec {
    /// Records of `fields` fields, keeping a scan index when `scans`.
    pub fn new(fields: u32, scans: bool) -> Self {
        let fields = fields.max(1) as usize;
        let bulk = |out: &mut Vec<u8>, b: &[u8]| {
            push_bulk_len(out, b.len());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        };
        let names: Vec<Vec<u8>> = (0..fields)
            .map(|f| {
                let mut out = Vec::new();
                bulk(&mut out, format!("field{f}").as_bytes());
                out
            })
            .collect();
        let mut scan_head = b"*6\r\n".to_vec();
        for b in [b"EVAL", SCAN_SCRIPT.as_bytes(), b"1", SCAN_INDEX.as_bytes()] {
            bulk(&mut scan_head, b);
        }
        Self {
            fields,
            all_names: names.concat(),
            names,
            index: scans.then(RespScanIndexCodec::default),
            scan_head,
        }
    }

    #[inline]
    fn key(out: &mut Vec<u8>, key: &[u8]) {
        push_bulk_len(out, key.len());
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    fn head(out: &mut Vec<u8>, args: usize, command: &[u8]) {
        out.push(b'*');
        push_decimal(out, args);
        out.extend_from_slice(b"\r\n");
        push_bulk_len(out, command.len());
        out.extend_from_slice(command);
        out.extend_from_slice(b"\r\n");
    }

    /// Whether the request of `kind` is followed by the index's.
    #[inline]
    fn keeps_index(&self, kind: OpKind) -> bool {
        self.index.is_some() && (kind.writes_value() || kind == OpKind::Delete)
    }
}

impl Codec for RespFieldsCodec {
    fn encode(&self, handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let key = op.key;
        match op.kind {
            OpKind::Scan => {
                out.extend_from_slice(&self.scan_head);
                Self::key(out, key);
                let digits = op.limit.max(1).ilog10() as usize + 1;
                push_bulk_len(out, digits);
                push_decimal(out, op.limit as usize);
                out.extend_from_slice(b"\r\n");
                return;
            }
            OpKind::Update => {
                // One field.
                Self::head(out, 4, b"HSET");
                Self::key(out, key);
                out.extend_from_slice(&self.names[op.field as usize % self.fields]);
                push_bulk_len(out, op.header.len() + op.payload.len());
                out.extend_from_slice(op.header);
                out.extend_from_slice(op.payload);
                out.extend_from_slice(b"\r\n");
            }
            k if k.writes_value() => {
                // The whole record, cut into its fields.
                Self::head(out, 2 + 2 * self.fields, b"HSET");
                Self::key(out, key);
                let record = op.payload;
                let len = record.len() / self.fields;
                for (name, field) in self.names.iter().zip(record.chunks(len.max(1))) {
                    out.extend_from_slice(name);
                    push_bulk_len(out, field.len());
                    out.extend_from_slice(field);
                    out.extend_from_slice(b"\r\n");
                }
            }
            OpKind::Delete => RespCodec.encode(handles, op, out),
            _ => {
                Self::head(out, 2 + self.fields, b"HMGET");
                Self::key(out, key);
                out.extend_from_slice(&self.all_names);
            }
        }
        if let (Some(index), true) = (&self.index, self.keeps_index(op.kind)) {
            index.encode_index_update(op.kind, key, out);
        }
    }

    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        if kind.writes_value() || kind == OpKind::Delete {
            let first = RespCodec.decode(buf, kind);
            return if self.keeps_index(kind) {
                then_count(buf, first, |reply, _| reply)
            } else {
                first
            };
        }
        match skip_value(buf, 0) {
            Step::Incomplete => Decoded::Incomplete,
            Step::Invalid => Decoded::Invalid,
            Step::Done(len, Kind::Array) => {
                let start = buf.iter().position(|&b| b == b'\n').map_or(len, |i| i + 1);
                // A record none of whose fields is there is absent.
                let absent = kind != OpKind::Scan && no_value_in(&buf[start..len]);
                Decoded::Complete {
                    len,
                    reply: if absent {
                        Reply::Miss
                    } else {
                        Reply::Value { start, end: len }
                    },
                }
            }
            Step::Done(len, Kind::Error) => Decoded::Complete {
                len,
                reply: Reply::ServerError,
            },
            Step::Done(len, _) => Decoded::Complete {
                len,
                reply: Reply::Miss,
            },
        }
    }

    const ESCAPES_VALUES: bool = true;

    /// Lays the values of a read's array of fields end to end, in place.
    fn unescape_value(&self, value: &mut [u8]) -> usize {
        let mut at = 0;
        let mut to = 0;
        while at < value.len() {
            match skip_value(value, at) {
                Step::Done(next, Kind::Bulk(s, e)) => {
                    value.copy_within(s..e, to);
                    to += e - s;
                    at = next;
                }
                Step::Done(next, _) => at = next,
                _ => break,
            }
        }
        to
    }

    const KEEPS_FIELDS: bool = true;

    const SCANS: bool = true;

    fn scan_rows(&self, value: &[u8], out: &mut Vec<u8>) -> bool {
        let mut pos = 0;
        let mut record = Vec::new();
        // Where each field's value is, by its index.
        let mut at: Vec<Option<(usize, usize)>> = vec![None; self.fields];
        while pos < value.len() {
            let Step::Done(next, Kind::Bulk(ks, ke)) = skip_value(value, pos) else {
                return false;
            };
            let Step::Done(after, Kind::Array) = skip_value(value, next) else {
                return false;
            };
            let Some(eol) = value[next..after].iter().position(|&b| b == b'\n') else {
                return false;
            };
            // Names and values, in the hash's order.
            at.fill(None);
            let mut p = next + eol + 1;
            let mut any = false;
            while p < after {
                let Step::Done(v, Kind::Bulk(ns, ne)) = skip_value(value, p) else {
                    return false;
                };
                let Step::Done(n, Kind::Bulk(vs, ve)) = skip_value(value, v) else {
                    return false;
                };
                let index = value[ns..ne]
                    .strip_prefix(b"field")
                    .and_then(super::parse_decimal);
                if let Some(slot) = index.and_then(|i| at.get_mut(i)) {
                    *slot = Some((vs, ve));
                }
                any = true;
                p = n;
            }
            if any {
                // Laid end to end in order (a field missing leaves the
                // record short, for verification to find).
                record.clear();
                for &(vs, ve) in at.iter().flatten() {
                    record.extend_from_slice(&value[vs..ve]);
                }
                bakeoff_core::scan::push_row(out, &value[ks..ke], &record);
            }
            pos = after;
        }
        true
    }

    fn describe(&self, kind: OpKind) -> String {
        let n = self.fields;
        let index = if self.index.is_some() && (kind.writes_value() || kind == OpKind::Delete) {
            format!(
                ", then {} {SCAN_INDEX} … <key> in the same send (keeps the scan index)",
                if kind == OpKind::Delete {
                    "ZREM"
                } else {
                    "ZADD"
                }
            )
        } else {
            String::new()
        };
        let what = match kind {
            OpKind::Get => format!("HMGET <key> field0 … field{} (every field)", n - 1),
            OpKind::Set | OpKind::Insert => {
                format!("HSET <key> field0 <value> … field{} <value> (the whole record)", n - 1)
            }
            OpKind::Update => "HSET <key> field<j> <value> (one field, drawn uniformly)".into(),
            OpKind::ReadModifyWrite => format!(
                "HMGET <key> field0 … field{}, then HSET <key> field<j> <value> (one field)",
                n - 1
            ),
            OpKind::Delete => "DEL <key>".into(),
            OpKind::Scan => format!(
                "EVAL of a script: ZRANGEBYLEX {SCAN_INDEX} [<key> + LIMIT 0 <length>, then HGETALL of each key (one request; the fields put in order by bakeoff)"
            ),
            OpKind::Search => "not supported".into(),
        };
        format!("{what}{index}")
    }
}

/// Whether the elements of an array (`bytes`, after its count) hold no
/// value: every one nil, or none at all.
fn no_value_in(bytes: &[u8]) -> bool {
    let mut at = 0;
    while at < bytes.len() {
        match skip_value(bytes, at) {
            Step::Done(_, Kind::Bulk(..)) => return false,
            Step::Done(next, _) => at = next,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::resp::{decode_request, Request};

    fn encoded(codec: &RespFieldsCodec, op: WireOp) -> Vec<u8> {
        let mut out = Vec::new();
        codec.encode(&[0; 4], op, &mut out);
        out
    }

    #[test]
    fn reads_write_and_update_fields_as_a_hash() {
        let codec = RespFieldsCodec::new(3, false);
        let get = encoded(&codec, WireOp::new(OpKind::Get, b"k", &[], &[]));
        assert_eq!(
            get,
            b"*5\r\n$5\r\nHMGET\r\n$1\r\nk\r\n$6\r\nfield0\r\n$6\r\nfield1\r\n$6\r\nfield2\r\n"
        );
        let set = encoded(&codec, WireOp::new(OpKind::Set, b"k", &[], b"aabbcc"));
        assert_eq!(
            String::from_utf8_lossy(&set),
            "*8\r\n$4\r\nHSET\r\n$1\r\nk\r\n$6\r\nfield0\r\n$2\r\naa\r\n$6\r\nfield1\r\n$2\r\nbb\r\n$6\r\nfield2\r\n$2\r\ncc\r\n"
        );
        let update = encoded(
            &codec,
            WireOp {
                field: 2,
                ..WireOp::new(OpKind::Update, b"k", b"x", b"yz")
            },
        );
        assert_eq!(
            update,
            b"*4\r\n$4\r\nHSET\r\n$1\r\nk\r\n$6\r\nfield2\r\n$3\r\nxyz\r\n"
        );
        for req in [&get, &set, &update] {
            assert!(
                matches!(decode_request(req), Request::Complete { len, .. } if len == req.len())
            );
        }
        // A read's fields, laid end to end.
        let reply = b"*3\r\n$2\r\naa\r\n$2\r\nbb\r\n$2\r\ncc\r\n";
        let Decoded::Complete {
            len,
            reply: Reply::Value { start, end },
        } = codec.decode(reply, OpKind::Get)
        else {
            panic!("a record's fields are its value");
        };
        assert_eq!((len, end), (reply.len(), reply.len()));
        let mut value = reply[start..end].to_vec();
        let n = codec.unescape_value(&mut value);
        assert_eq!(&value[..n], b"aabbcc");
        assert_eq!(
            codec.decode(b"*3\r\n$-1\r\n$-1\r\n$-1\r\n", OpKind::Get),
            Decoded::Complete {
                len: 19,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            codec.decode(b"*3\r\n$2\r\naa\r\n", OpKind::Get),
            Decoded::Incomplete
        );
        assert_eq!(
            codec.decode(b":3\r\n", OpKind::Set),
            Decoded::Complete {
                len: 4,
                reply: Reply::Ok
            }
        );
    }

    #[test]
    fn scans_read_each_records_fields_in_order() {
        let codec = RespFieldsCodec::new(2, true);
        let set = encoded(&codec, WireOp::new(OpKind::Insert, b"k", &[], b"aabb"));
        assert!(set.ends_with(b"$1\r\nk\r\n"), "the index's ZADD follows");
        assert_eq!(codec.decode(b":2\r\n", OpKind::Insert), Decoded::Incomplete);
        let scan = encoded(
            &codec,
            WireOp {
                limit: 7,
                ..WireOp::new(OpKind::Scan, b"k", &[], &[])
            },
        );
        let Request::Complete { argc, .. } = decode_request(&scan) else {
            panic!("a whole EVAL");
        };
        assert_eq!(argc, 6, "EVAL, script, 1, index, start, length");
        // Each record's hash in its own order; one with no field.
        let reply = b"*4\r\n$2\r\nk1\r\n*4\r\n$6\r\nfield1\r\n$2\r\nbb\r\n$6\r\nfield0\r\n$2\r\naa\r\n$2\r\nk2\r\n*0\r\n";
        let Decoded::Complete {
            reply: Reply::Value { start, end },
            ..
        } = codec.decode(reply, OpKind::Scan)
        else {
            panic!("a scan's records");
        };
        let mut rows = Vec::new();
        assert!(codec.scan_rows(&reply[start..end], &mut rows));
        let mut want = Vec::new();
        bakeoff_core::scan::push_row(&mut want, b"k1", b"aabb");
        assert_eq!(rows, want, "a record with no field is left out");
        assert!(!codec.scan_rows(b"$2\r\nk1\r\n$2\r\naa\r\n", &mut rows));
    }
}
