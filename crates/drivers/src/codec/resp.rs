//! RESP (Redis serialization protocol, version 2 plus RESP3 nulls).
//!
//! Requests: `GET k`, `SET k v` (for set and update), `DEL k`, as arrays of
//! bulk strings. Replies: simple strings, errors, integers, bulk strings,
//! null bulk strings, arrays (skipped whole), RESP3 null; a Redis
//! Cluster's `MOVED` and `ASK` errors as redirections.

use bakeoff_core::driver::{Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::slots::parse_redirect;
use bakeoff_core::workload::OpKind;

use super::{find_crlf, parse_decimal, push_decimal, MAX_DECLARED_LEN};

/// The RESP codec.
#[derive(Clone, Copy, Debug, Default)]
pub struct RespCodec;

#[inline]
pub(super) fn push_bulk_len(out: &mut Vec<u8>, n: usize) {
    out.push(b'$');
    push_decimal(out, n);
    out.extend_from_slice(b"\r\n");
}

impl Codec for RespCodec {
    #[inline(always)]
    fn encode(&self, _handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        match kind {
            // Search never reaches a key-value protocol: the plan rejects it
            // for targets whose capabilities lack it.
            // A scan never comes here (Redis scans are refused before a run);
            // a read-modify-write's first request is a get.
            OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n")
            }
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n")
            }
            OpKind::Delete => out.extend_from_slice(b"*2\r\n$3\r\nDEL\r\n"),
        }
        push_bulk_len(out, key.len());
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
        if kind.writes_value() {
            push_bulk_len(out, header.len() + payload.len());
            out.extend_from_slice(header);
            out.extend_from_slice(payload);
            out.extend_from_slice(b"\r\n");
        }
    }

    #[inline(always)]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        match common_reply(buf) {
            Some(common) => common,
            None => decode_any(buf, kind),
        }
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Get => "GET <key>".into(),
            OpKind::Set => "SET <key> <value>".into(),
            OpKind::Update => "SET <key> <value> (overwrites an existing key)".into(),
            OpKind::Delete => "DEL <key>".into(),
            OpKind::Insert => "SET <key> <value> (a new key)".into(),
            OpKind::ReadModifyWrite => "GET <key>, then SET <key> <value>".into(),
            OpKind::Search | OpKind::Scan => "not supported".into(),
        }
    }
}

/// Any reply, by the general walk over RESP (out of line: the loop inlines
/// only [`common_reply`]).
#[inline(never)]
fn decode_any(buf: &[u8], kind: OpKind) -> Decoded {
    match skip_value(buf, 0) {
        Step::Incomplete => Decoded::Incomplete,
        Step::Invalid => Decoded::Invalid,
        Step::Done(len, what) => {
            let reply = match what {
                // A cluster's redirection is an error reply that names
                // where to go; any other error is the server's.
                Kind::Error => {
                    parse_redirect(&buf[1..len - 2], 1).map_or(Reply::ServerError, Reply::Redirect)
                }
                Kind::Null => Reply::Miss,
                Kind::Bulk(start, end) => Reply::Value { start, end },
                Kind::Integer(n) => {
                    if kind == OpKind::Delete && n == 0 {
                        Reply::Miss
                    } else {
                        Reply::Ok
                    }
                }
                Kind::Simple | Kind::Array => Reply::Ok,
            };
            Decoded::Complete { len, reply }
        }
    }
}

/// The replies nearly every request gets, read without the general walk
/// over RESP: a bulk string (`$<n>\r\n<n bytes>\r\n`, a GET's value) and
/// `+OK\r\n` (a SET's). `None` for anything else, or anything unusual
/// about these (a null, a length of more than ten digits, a missing CRLF),
/// which [`skip_value`] then reads: this only ever agrees with it, sooner
/// (measured: about 60 instructions per Redis GET fewer).
#[inline(always)]
fn common_reply(buf: &[u8]) -> Option<Decoded> {
    match *buf.first()? {
        b'+' if buf.len() >= 5 && &buf[..5] == b"+OK\r\n" => Some(Decoded::Complete {
            len: 5,
            reply: Reply::Ok,
        }),
        b'$' => {
            let mut n = 0usize;
            let mut i = 1;
            while i < buf.len().min(11) && buf[i].is_ascii_digit() {
                n = n * 10 + (buf[i] - b'0') as usize;
                i += 1;
            }
            if i == 1 || i + 1 >= buf.len() || &buf[i..i + 2] != b"\r\n" || n > MAX_DECLARED_LEN {
                return None;
            }
            let start = i + 2;
            let end = start + n;
            if buf.len() < end + 2 {
                return Some(Decoded::Incomplete);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return None;
            }
            Some(Decoded::Complete {
                len: end + 2,
                reply: Reply::Value { start, end },
            })
        }
        _ => None,
    }
}

/// A request's reply `first`, decoded from the front of `buf`, followed
/// by an integer reply to a second request sent with it (`WAIT`'s
/// replicas, an index's count): whole when both are, its reply what
/// `judge` makes of the first's and the integer (a server error when the
/// second is not an integer).
#[inline]
pub(super) fn then_count(
    buf: &[u8],
    first: Decoded,
    judge: impl FnOnce(Reply, i64) -> Reply,
) -> Decoded {
    let Decoded::Complete { len, reply } = first else {
        return first;
    };
    match skip_value(buf, len) {
        Step::Incomplete => Decoded::Incomplete,
        Step::Invalid => Decoded::Invalid,
        Step::Done(end, Kind::Integer(n)) => Decoded::Complete {
            len: end,
            reply: judge(reply, n),
        },
        Step::Done(end, _) => Decoded::Complete {
            len: end,
            reply: Reply::ServerError,
        },
    }
}

/// RESP with synchronous replication: every write is followed, in the same
/// send, by `WAIT replicas timeout`, and counts as done only when both
/// replies are in and WAIT says that many replicas acknowledged it (fewer
/// within the timeout is a server error: the write is not replicated).
#[derive(Clone, Debug)]
pub struct RespWaitCodec {
    replicas: u64,
    /// `WAIT n t` as sent.
    wait: Vec<u8>,
}

impl RespWaitCodec {
    /// Waits for `replicas` replicas, at most `timeout_ms` (0: for ever).
    pub fn new(replicas: u64, timeout_ms: u64) -> Self {
        let (n, t) = (replicas.to_string(), timeout_ms.to_string());
        let wait = format!(
            "*3\r\n$4\r\nWAIT\r\n${}\r\n{n}\r\n${}\r\n{t}\r\n",
            n.len(),
            t.len()
        )
        .into_bytes();
        Self { replicas, wait }
    }
}

impl Codec for RespWaitCodec {
    #[inline(always)]
    fn encode(&self, handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        RespCodec.encode(handles, WireOp::new(kind, key, header, payload), out);
        if kind.writes() {
            out.extend_from_slice(&self.wait);
        }
    }

    #[inline]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        let first = RespCodec.decode(buf, kind);
        if !kind.writes() {
            return first;
        }
        then_count(buf, first, |reply, n| {
            if (n as u64) < self.replicas && reply != Reply::ServerError {
                Reply::ServerError
            } else {
                reply
            }
        })
    }

    fn describe(&self, kind: OpKind) -> String {
        let base = RespCodec.describe(kind);
        if kind.writes() {
            format!(
                "{base}, then WAIT {} <timeout> in the same send (done when the replicas acknowledged it)",
                self.replicas
            )
        } else {
            base
        }
    }
}

/// The sorted set that indexes a Redis target's keys for scans: every key,
/// at score 0, so that `ZRANGEBYLEX` walks them in key order.
pub const SCAN_INDEX: &str = "bakeoff:scan-index";

/// A scan through [`SCAN_INDEX`], run on the server in one request: up to
/// `ARGV[2]` keys from `ARGV[1]` on, then their values (`MGET`), answered
/// as key, value, key, value… (a key whose value is gone answers nil).
const SCAN_SCRIPT: &str = "local ks = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1], '+', 'LIMIT', 0, tonumber(ARGV[2])) \
if #ks == 0 then return ks end \
local vs = redis.call('MGET', unpack(ks)) \
local out = {} \
for i = 1, #ks do out[2 * i - 1] = ks[i]; out[2 * i] = vs[i] end \
return out";

/// RESP for a run that scans: the keys are kept in a sorted set beside
/// the records ([`SCAN_INDEX`]), which every write keeps up to date in the
/// same send (`SET` then `ZADD`, `DEL` then `ZREM`, done when both replies
/// are in), and a scan is one `EVAL` of a script that reads the index
/// (`ZRANGEBYLEX`) and the records' values (`MGET`). The order is the
/// keys' order, as in every engine that scans, not YCSB's Redis binding's
/// (a score of the key's hash).
#[derive(Clone, Debug)]
pub struct RespScanIndexCodec {
    /// `*6 EVAL <script> 1 <index>`, the start of every scan (the start
    /// key and the length follow).
    scan_head: Vec<u8>,
    /// `*4 ZADD <index> 0`, before the key.
    zadd_head: Vec<u8>,
    /// `*3 ZREM <index>`, before the key.
    zrem_head: Vec<u8>,
}

impl Default for RespScanIndexCodec {
    fn default() -> Self {
        let bulk = |out: &mut Vec<u8>, b: &[u8]| {
            push_bulk_len(out, b.len());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        };
        let mut scan_head = b"*6\r\n".to_vec();
        for b in [b"EVAL", SCAN_SCRIPT.as_bytes(), b"1", SCAN_INDEX.as_bytes()] {
            bulk(&mut scan_head, b);
        }
        let mut zadd_head = b"*4\r\n".to_vec();
        for b in [&b"ZADD"[..], SCAN_INDEX.as_bytes(), b"0"] {
            bulk(&mut zadd_head, b);
        }
        let mut zrem_head = b"*3\r\n".to_vec();
        for b in [&b"ZREM"[..], SCAN_INDEX.as_bytes()] {
            bulk(&mut zrem_head, b);
        }
        Self {
            scan_head,
            zadd_head,
            zrem_head,
        }
    }
}

impl RespScanIndexCodec {
    /// Appends what keeps the index after a write of `kind` on `key`: its
    /// `ZADD`, or a delete's `ZREM`.
    pub(super) fn encode_index_update(&self, kind: OpKind, key: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(if kind == OpKind::Delete {
            &self.zrem_head
        } else {
            &self.zadd_head
        });
        push_bulk_len(out, key.len());
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }
}

impl Codec for RespScanIndexCodec {
    #[inline]
    fn encode(&self, handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let key = op.key;
        match op.kind {
            OpKind::Scan => {
                out.extend_from_slice(&self.scan_head);
                push_bulk_len(out, key.len());
                out.extend_from_slice(key);
                out.extend_from_slice(b"\r\n");
                let digits = op.limit.max(1).ilog10() as usize + 1;
                push_bulk_len(out, digits);
                push_decimal(out, op.limit as usize);
                out.extend_from_slice(b"\r\n");
                return;
            }
            k if k.writes_value() || k == OpKind::Delete => {}
            _ => return RespCodec.encode(handles, op, out),
        }
        RespCodec.encode(handles, op, out);
        self.encode_index_update(op.kind, key, out);
    }

    #[inline]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        if kind == OpKind::Scan {
            // The script's array, whole: its elements are the records.
            return match skip_value(buf, 0) {
                Step::Incomplete => Decoded::Incomplete,
                Step::Invalid => Decoded::Invalid,
                Step::Done(len, what) => Decoded::Complete {
                    len,
                    reply: match what {
                        Kind::Array => Reply::Value {
                            start: find_crlf(buf).map_or(len, |eol| eol + 2),
                            end: len,
                        },
                        Kind::Error => Reply::ServerError,
                        _ => Reply::Miss,
                    },
                },
            };
        }
        let first = RespCodec.decode(buf, kind);
        if !(kind.writes_value() || kind == OpKind::Delete) {
            return first;
        }
        // The index's reply: a count, or an error that fails the write.
        then_count(buf, first, |reply, _| reply)
    }

    const SCANS: bool = true;

    fn scan_rows(&self, value: &[u8], out: &mut Vec<u8>) -> bool {
        let mut pos = 0;
        while pos < value.len() {
            let Step::Done(next, Kind::Bulk(ks, ke)) = skip_value(value, pos) else {
                return false;
            };
            match skip_value(value, next) {
                Step::Done(after, Kind::Bulk(vs, ve)) => {
                    bakeoff_core::scan::push_row(out, &value[ks..ke], &value[vs..ve]);
                    pos = after;
                }
                // The key is indexed, its record gone: nothing to return,
                // and the scan's count check says whether that is right.
                Step::Done(after, Kind::Null) => pos = after,
                _ => return false,
            }
        }
        true
    }

    fn describe(&self, kind: OpKind) -> String {
        let index = SCAN_INDEX;
        match kind {
            OpKind::Scan => format!(
                "EVAL of a script: ZRANGEBYLEX {index} [<key> + LIMIT 0 <length>, then MGET of the keys it gave (one request; the index is a sorted set of every key at score 0)"
            ),
            OpKind::Delete => format!("DEL <key>, then ZREM {index} <key> in the same send"),
            k if k.writes_value() => format!(
                "{}, then ZADD {index} 0 <key> in the same send (keeps the scan index)",
                RespCodec.describe(k)
            ),
            OpKind::ReadModifyWrite => format!(
                "GET <key>, then SET <key> <value> and ZADD {index} 0 <key> in one send"
            ),
            k => RespCodec.describe(k),
        }
    }
}

/// Most arguments of a request the engine host looks at (`SET key value`).
pub const MAX_ARGS: usize = 3;

/// A request as a RESP server reads it: an array of bulk strings.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// More bytes are needed.
    Incomplete,
    /// Not an array of bulk strings: the connection cannot go on.
    Invalid,
    /// `len` bytes make one request of `argc` arguments; the first
    /// [`MAX_ARGS`] are `args` (start and end offsets in the buffer).
    Complete {
        /// Bytes the request took.
        len: usize,
        /// How many arguments it had.
        argc: usize,
        /// Where the first arguments are.
        args: [(usize, usize); MAX_ARGS],
    },
}

/// Reads one request (`*N` then N bulk strings) from the start of `buf`:
/// the other side of [`RespCodec::encode`], for bakeoff's engine host.
pub fn decode_request(buf: &[u8]) -> Request {
    let Some(eol) = find_crlf(buf) else {
        return match buf.first() {
            None | Some(b'*') => Request::Incomplete,
            Some(_) => Request::Invalid,
        };
    };
    if buf[0] != b'*' {
        return Request::Invalid;
    }
    let Some(argc) = parse_decimal(&buf[1..eol]).filter(|&n| (1..=1024).contains(&n)) else {
        return Request::Invalid;
    };
    let mut args = [(0, 0); MAX_ARGS];
    let mut pos = eol + 2;
    for i in 0..argc {
        if pos < buf.len() && buf[pos] != b'$' {
            return Request::Invalid;
        }
        match skip_value(buf, pos) {
            Step::Done(next, Kind::Bulk(start, end)) => {
                if let Some(slot) = args.get_mut(i) {
                    *slot = (start, end);
                }
                pos = next;
            }
            Step::Incomplete => return Request::Incomplete,
            _ => return Request::Invalid,
        }
    }
    Request::Complete {
        len: pos,
        argc,
        args,
    }
}

pub(super) enum Kind {
    Simple,
    Error,
    Integer(i64),
    Bulk(usize, usize),
    Null,
    Array,
}

pub(super) enum Step {
    Incomplete,
    Invalid,
    Done(usize, Kind),
}

/// Parses one value starting at `at`; returns its end offset. The elements
/// of arrays are counted off in a loop rather than by recursion, so that no
/// nesting (a reply may be `*1\r\n` a million times over) can overflow the
/// stack.
pub(super) fn skip_value(buf: &[u8], at: usize) -> Step {
    let (mut pending, mut pos) = match item(buf, at) {
        Item::Value(step) => return step,
        Item::Array { count, next } => (count, next),
    };
    while pending > 0 {
        pending -= 1;
        match item(buf, pos) {
            Item::Value(Step::Done(next, _)) => pos = next,
            Item::Value(other) => return other,
            Item::Array { count, next } => {
                pending = pending.saturating_add(count);
                pos = next;
            }
        }
    }
    Step::Done(pos, Kind::Array)
}

/// A value, or the head of an array: its element count and where the
/// elements start.
enum Item {
    Value(Step),
    Array { count: usize, next: usize },
}

/// Parses the value at `at`, or only the head of an array.
#[inline]
fn item(buf: &[u8], at: usize) -> Item {
    if at >= buf.len() {
        return Item::Value(Step::Incomplete);
    }
    let Some(eol) = find_crlf(&buf[at..]) else {
        // A line without its CRLF yet; but bytes that cannot start a reply are
        // invalid right away.
        return Item::Value(if b"+-:$*_".contains(&buf[at]) {
            Step::Incomplete
        } else {
            Step::Invalid
        });
    };
    if eol == 0 {
        // An empty line has no type byte.
        return Item::Value(Step::Invalid);
    }
    let line = &buf[at + 1..at + eol];
    let next = at + eol + 2;
    Item::Value(match buf[at] {
        b'+' => Step::Done(next, Kind::Simple),
        b'-' => Step::Done(next, Kind::Error),
        b'_' => Step::Done(next, Kind::Null),
        b':' => {
            let (neg, digits) = match line.split_first() {
                Some((b'-', rest)) => (true, rest),
                _ => (false, line),
            };
            // A signed 64-bit integer: -2^63 is one, 2^63 is not.
            let n = parse_decimal(digits).map(|n| if neg { -(n as i128) } else { n as i128 });
            match n.and_then(|n| i64::try_from(n).ok()) {
                Some(n) => Step::Done(next, Kind::Integer(n)),
                None => Step::Invalid,
            }
        }
        b'$' => {
            if line == b"-1" {
                return Item::Value(Step::Done(next, Kind::Null));
            }
            let Some(n) = parse_decimal(line).filter(|&n| n <= MAX_DECLARED_LEN) else {
                return Item::Value(Step::Invalid);
            };
            let end = next + n;
            if buf.len() < end + 2 {
                return Item::Value(Step::Incomplete);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Item::Value(Step::Invalid);
            }
            Step::Done(end + 2, Kind::Bulk(next, end))
        }
        b'*' => {
            if line == b"-1" {
                return Item::Value(Step::Done(next, Kind::Null));
            }
            match parse_decimal(line).filter(|&n| n <= MAX_DECLARED_LEN) {
                Some(count) => return Item::Array { count, next },
                None => Step::Invalid,
            }
        }
        _ => Step::Invalid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the general walk makes of `buf`, as `decode` would without
    /// the common replies' shortcut.
    fn general(buf: &[u8]) -> Decoded {
        match skip_value(buf, 0) {
            Step::Incomplete => Decoded::Incomplete,
            Step::Invalid => Decoded::Invalid,
            Step::Done(len, Kind::Bulk(start, end)) => Decoded::Complete {
                len,
                reply: Reply::Value { start, end },
            },
            Step::Done(len, Kind::Simple) => Decoded::Complete {
                len,
                reply: Reply::Ok,
            },
            Step::Done(len, _) => Decoded::Complete {
                len,
                reply: Reply::ServerError,
            },
        }
    }

    #[test]
    fn the_common_replies_shortcut_agrees_with_the_general_walk() {
        let mut cases: Vec<Vec<u8>> = [
            &b"$5\r\nhello\r\n"[..],
            b"$0\r\n\r\n",
            b"$-1\r\n",
            b"$5\r\nhello\r\n+OK\r\n",
            b"$5\r\nhelloXY",
            b"$5\rX",
            b"$\r\n",
            b"$12345678901\r\n",
            b"$0005\r\nhello\r\n",
            b"+OK\r\n",
            b"+OK\r",
            b"+OKAY\r\n",
            b"$99999999999999999999\r\n",
        ]
        .iter()
        .map(|c| c.to_vec())
        .collect();
        // Every prefix of a value and of a SET's reply, and every byte of
        // them changed.
        for whole in [&b"$11\r\nhello world\r\n"[..], b"+OK\r\n"] {
            for cut in 0..=whole.len() {
                cases.push(whole[..cut].to_vec());
            }
            for i in 0..whole.len() {
                for b in [b'0', b'9', b'\r', b'\n', b'$', b'-', b'x'] {
                    let mut c = whole.to_vec();
                    c[i] = b;
                    cases.push(c);
                }
            }
        }
        for c in &cases {
            if let Some(fast) = common_reply(c) {
                assert_eq!(fast, general(c), "{:?}", String::from_utf8_lossy(c));
            }
        }
        assert!(common_reply(b"$5\r\nhello\r\n").is_some());
        assert!(common_reply(b"+OK\r\n").is_some());
    }

    #[test]
    fn requests_are_read_back_as_encoded() {
        let mut out = Vec::new();
        RespCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Set, b"k1", b"HE", b"LLO"),
            &mut out,
        );
        let Request::Complete { len, argc, args } = decode_request(&out) else {
            panic!("a whole SET is complete");
        };
        assert_eq!((len, argc), (out.len(), 3));
        let arg = |i: usize| &out[args[i].0..args[i].1];
        assert_eq!(
            (arg(0), arg(1), arg(2)),
            (&b"SET"[..], &b"k1"[..], &b"HELLO"[..])
        );
        for cut in 0..out.len() {
            assert_eq!(
                decode_request(&out[..cut]),
                Request::Incomplete,
                "{cut} bytes"
            );
        }
        assert_eq!(
            decode_request(b"PING\r\n"),
            Request::Invalid,
            "inline commands"
        );
        assert_eq!(
            decode_request(b"*1\r\n:1\r\n"),
            Request::Invalid,
            "an integer argument"
        );
        assert_eq!(decode_request(b"*0\r\n"), Request::Invalid, "no arguments");
        let many = b"*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n";
        assert!(
            matches!(decode_request(many), Request::Complete { argc: 5, len, .. } if len == many.len())
        );
    }

    fn dec(b: &[u8], k: OpKind) -> Decoded {
        RespCodec.decode(b, k)
    }

    #[test]
    fn encodes_requests_byte_for_byte() {
        let mut out = Vec::new();
        RespCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Get, b"bk:000000000001", &[], &[]),
            &mut out,
        );
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$15\r\nbk:000000000001\r\n");
        out.clear();
        RespCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Set, b"k", b"HE", b"LLO"),
            &mut out,
        );
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nHELLO\r\n");
        out.clear();
        RespCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Update, b"k", b"a", b""),
            &mut out,
        );
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\na\r\n");
        out.clear();
        RespCodec.encode(
            &[0; 4],
            WireOp::new(OpKind::Delete, b"k", &[], &[]),
            &mut out,
        );
        assert_eq!(out, b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n");
    }

    /// A cluster's MOVED and ASK are redirections naming the node, where
    /// it stands in the reply; other errors stay the server's.
    #[test]
    fn decodes_cluster_redirections() {
        let reply = b"-MOVED 3999 127.0.0.1:6381\r\n";
        let Decoded::Complete {
            len,
            reply: Reply::Redirect(r),
        } = dec(reply, OpKind::Get)
        else {
            panic!("not a redirection");
        };
        assert_eq!(len, reply.len());
        assert_eq!((r.ask, r.slot), (false, 3999));
        assert_eq!(&reply[r.start..r.end], b"127.0.0.1:6381");
        let reply = b"-ASK 12 10.0.0.2:7000\r\n";
        let Decoded::Complete {
            reply: Reply::Redirect(r),
            ..
        } = dec(reply, OpKind::Set)
        else {
            panic!("not a redirection");
        };
        assert!(r.ask);
        assert_eq!(&reply[r.start..r.end], b"10.0.0.2:7000");
        for other in [
            &b"-MOVED\r\n"[..],
            b"-MOVEDX 1 a:1\r\n",
            b"-CLUSTERDOWN\r\n",
        ] {
            assert!(
                matches!(
                    dec(other, OpKind::Get),
                    Decoded::Complete {
                        reply: Reply::ServerError,
                        ..
                    }
                ),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn decodes_every_reply_type() {
        assert_eq!(
            dec(b"+OK\r\n", OpKind::Set),
            Decoded::Complete {
                len: 5,
                reply: Reply::Ok
            }
        );
        assert_eq!(
            dec(b"-ERR wrong\r\n", OpKind::Set),
            Decoded::Complete {
                len: 12,
                reply: Reply::ServerError
            }
        );
        assert_eq!(
            dec(b":1\r\n", OpKind::Delete),
            Decoded::Complete {
                len: 4,
                reply: Reply::Ok
            }
        );
        assert_eq!(
            dec(b":0\r\n", OpKind::Delete),
            Decoded::Complete {
                len: 4,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            dec(b":-5\r\n", OpKind::Get),
            Decoded::Complete {
                len: 5,
                reply: Reply::Ok
            }
        );
        assert_eq!(
            dec(b"$-1\r\n", OpKind::Get),
            Decoded::Complete {
                len: 5,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            dec(b"_\r\n", OpKind::Get),
            Decoded::Complete {
                len: 3,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            dec(b"$5\r\nhello\r\n", OpKind::Get),
            Decoded::Complete {
                len: 11,
                reply: Reply::Value { start: 4, end: 9 }
            }
        );
        assert_eq!(
            dec(b"$0\r\n\r\n", OpKind::Get),
            Decoded::Complete {
                len: 6,
                reply: Reply::Value { start: 4, end: 4 }
            }
        );
        assert_eq!(
            dec(b"*2\r\n$1\r\na\r\n:3\r\n", OpKind::Get),
            Decoded::Complete {
                len: 15,
                reply: Reply::Ok
            }
        );
        assert_eq!(
            dec(b"*-1\r\n", OpKind::Get),
            Decoded::Complete {
                len: 5,
                reply: Reply::Miss
            }
        );
    }

    #[test]
    fn waits_for_whole_replies() {
        for partial in [
            &b""[..],
            b"+O",
            b"+OK\r",
            b"$5\r\nhel",
            b"$5\r\nhello\r",
            b"*2\r\n$1\r\na\r\n",
            b":1",
        ] {
            assert_eq!(
                dec(partial, OpKind::Get),
                Decoded::Incomplete,
                "{:?}",
                String::from_utf8_lossy(partial)
            );
        }
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(dec(b"hello\r\n", OpKind::Get), Decoded::Invalid);
        assert_eq!(dec(b"$abc\r\n", OpKind::Get), Decoded::Invalid);
        assert_eq!(dec(b"$2\r\nhello\r\n", OpKind::Get), Decoded::Invalid);
        assert_eq!(dec(b"?", OpKind::Get), Decoded::Invalid);
        assert_eq!(dec(b"\r\n", OpKind::Get), Decoded::Invalid);
        assert_eq!(dec(b"$99999999999\r\n", OpKind::Get), Decoded::Invalid);
    }

    /// A crash input of the `resp` fuzz target (fuzz/): `-(n as i64)`
    /// overflowed on `:-9223372036854775808` (a panic with overflow checks),
    /// and integers beyond 64 bits wrapped instead of being refused.
    #[test]
    fn integers_are_signed_64_bit() {
        let ok = |b: &[u8]| Decoded::Complete {
            len: b.len(),
            reply: Reply::Ok,
        };
        for reply in [
            &b":-9223372036854775808\r\n"[..],
            b":9223372036854775807\r\n",
            b":-0\r\n",
        ] {
            assert_eq!(dec(reply, OpKind::Set), ok(reply));
        }
        for reply in [
            &b":9223372036854775808\r\n"[..],
            b":-9223372036854775809\r\n",
            b":9999999999999999999\r\n",
        ] {
            assert_eq!(dec(reply, OpKind::Set), Decoded::Invalid);
        }
    }

    /// A crash input of the `resp` fuzz target (fuzz/), 400 KB: arrays
    /// nested a hundred thousand deep, which a server may send, overflowed
    /// the stack when each level was a recursive call.
    #[test]
    fn deeply_nested_arrays_do_not_overflow_the_stack() {
        let depth = 1 << 20;
        let mut reply = b"*1\r\n".repeat(depth);
        assert_eq!(dec(&reply, OpKind::Get), Decoded::Incomplete);
        reply.extend_from_slice(b"+OK\r\n");
        assert_eq!(
            dec(&reply, OpKind::Get),
            Decoded::Complete {
                len: reply.len(),
                reply: Reply::Ok
            }
        );
        reply.truncate(4 * depth);
        reply.extend_from_slice(b"?\r\n");
        assert_eq!(dec(&reply, OpKind::Get), Decoded::Invalid);
        // Arrays of arrays: every element is counted.
        assert_eq!(
            dec(b"*3\r\n*2\r\n:1\r\n:2\r\n*0\r\n+OK\r\n+OK\r\n", OpKind::Get),
            Decoded::Complete {
                len: 25,
                reply: Reply::Ok
            }
        );
        assert_eq!(
            dec(b"*2\r\n*2\r\n:1\r\n:2\r\n", OpKind::Get),
            Decoded::Incomplete
        );
    }

    #[test]
    fn decodes_pipelined_replies_one_at_a_time() {
        let buf = b"+OK\r\n$1\r\nx\r\n";
        let Decoded::Complete { len, .. } = dec(buf, OpKind::Set) else {
            panic!()
        };
        assert_eq!(
            dec(&buf[len..], OpKind::Get),
            Decoded::Complete {
                len: 7,
                reply: Reply::Value { start: 4, end: 5 }
            }
        );
    }

    #[test]
    fn a_scan_index_codec_keeps_the_index_and_scans_it() {
        let codec = RespScanIndexCodec::default();
        let mut out = Vec::new();
        codec.encode(
            &[0; 4],
            WireOp::new(OpKind::Insert, b"k1", b"HE", b"LLO"),
            &mut out,
        );
        let zadd = format!(
            "*4\r\n$4\r\nZADD\r\n${}\r\n{SCAN_INDEX}\r\n$1\r\n0\r\n$2\r\nk1\r\n",
            SCAN_INDEX.len()
        );
        let want = format!("*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$5\r\nHELLO\r\n{zadd}");
        assert_eq!(String::from_utf8_lossy(&out), want);
        // A scan: six arguments, the last two the start key and length.
        out.clear();
        codec.encode(
            &[0; 4],
            WireOp {
                limit: 100,
                ..WireOp::new(OpKind::Scan, b"k7", &[], &[])
            },
            &mut out,
        );
        let Request::Complete { len, argc, .. } = decode_request(&out) else {
            panic!("a whole EVAL");
        };
        assert_eq!((len, argc), (out.len(), 6));
        assert!(out.ends_with(b"$2\r\nk7\r\n$3\r\n100\r\n"));
        // A write is done when the index's reply is in too, and fails
        // when the index refused it.
        let dec = |b: &[u8], k| codec.decode(b, k);
        assert_eq!(dec(b"+OK\r\n", OpKind::Set), Decoded::Incomplete);
        assert_eq!(
            dec(b"+OK\r\n:1\r\n", OpKind::Insert),
            Decoded::Complete {
                len: 9,
                reply: Reply::Ok
            }
        );
        assert_eq!(
            dec(b"+OK\r\n-WRONGTYPE no\r\n", OpKind::Update),
            Decoded::Complete {
                len: 20,
                reply: Reply::ServerError
            }
        );
        assert_eq!(
            dec(b":0\r\n:0\r\n", OpKind::Delete),
            Decoded::Complete {
                len: 8,
                reply: Reply::Miss
            }
        );
        assert_eq!(
            dec(b"$1\r\nx\r\n", OpKind::Get),
            Decoded::Complete {
                len: 7,
                reply: Reply::Value { start: 4, end: 5 }
            }
        );
        // A scan's reply: keys and values, a record gone skipped.
        let reply = b"*6\r\n$2\r\nk7\r\n$1\r\na\r\n$2\r\nk8\r\n$-1\r\n$2\r\nk9\r\n$2\r\nbc\r\n";
        let Decoded::Complete {
            len,
            reply: Reply::Value { start, end },
        } = dec(reply, OpKind::Scan)
        else {
            panic!("a scan's reply is its records");
        };
        assert_eq!((len, end), (reply.len(), reply.len()));
        let mut rows = Vec::new();
        assert!(codec.scan_rows(&reply[start..end], &mut rows));
        let mut want = Vec::new();
        bakeoff_core::scan::push_row(&mut want, b"k7", b"a");
        bakeoff_core::scan::push_row(&mut want, b"k9", b"bc");
        assert_eq!(rows, want);
        assert_eq!(
            dec(b"*0\r\n", OpKind::Scan),
            Decoded::Complete {
                len: 4,
                reply: Reply::Value { start: 4, end: 4 }
            }
        );
        assert!(!codec.scan_rows(b":1\r\n", &mut rows), "not a key");
        assert!(!codec.scan_rows(b"$1\r\nk\r\n", &mut rows), "a key alone");
        assert_eq!(
            dec(b"-ERR script\r\n", OpKind::Scan),
            Decoded::Complete {
                len: 13,
                reply: Reply::ServerError
            }
        );
    }
}
