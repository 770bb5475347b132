//! HandlerSocket: the text protocol of the MariaDB/MySQL `handlersocket`
//! plugin, which reads and writes InnoDB rows by index without SQL.
//!
//! # Wire format
//!
//! One request per line, one reply line per request, in request order;
//! requests may be pipelined. Tokens are separated by TAB (0x09) and a line
//! ends with LF (0x0a). Inside a token every byte 0x00..=0x0f is sent as
//! 0x01 followed by the byte + 0x40 (so 0x40..=0x4f); a token made of a
//! single 0x00 is SQL NULL; an empty token is the empty string. The server
//! always escapes what it sends; it unescapes any `0x01 c` as `c - 0x40`.
//!
//! A reply is `<code>\t<ncols>[\t<token>…]\n`. Code 0 is success. Any other
//! code is an error, always as `<code>\t1\t<message>`: `3\t1\tunauth`,
//! `2\t1\treadonly`, `2\t1\tstmtnum` (index id not opened), `2\t1\tcmd`,
//! `1\t1\topen_table`, `1\t1\t121` (handler error 121,
//! `HA_ERR_FOUND_DUPP_KEY`), …
//!
//! # Connection set-up (not the hot path)
//!
//! Before any operation a connection sends (see [`setup_requests`]):
//! `A\t1\t<secret>` if the server has a secret, then
//! `P\t1\t<db>\t<table>\tPRIMARY\tv` ([`VALUE_INDEX`], for find, update and
//! delete) and `P\t2\t<db>\t<table>\tPRIMARY\tk,v` ([`ROW_INDEX`], for
//! insert, which must name the key column). Each is answered `0\t1`; an
//! error is reported by [`parse_setup_reply`] with its code and message.
//! Index ids belong to the connection: a reconnect must open them again.
//!
//! The write port (`handlersocket_port_wr`, secret
//! `handlersocket_plain_secret_wr`) serves all five operations, so one
//! connection per client suffices; the read port answers every write with
//! `2\t1\treadonly`. Write-port connections are all served by
//! `handlersocket_threads_wr` threads (default 1).
//!
//! # Operations (table `kv(k VARBINARY PRIMARY KEY, v LONGBLOB)`)
//!
//! | op | request | reply → [`Reply`] |
//! |---|---|---|
//! | Get | `1\t=\t1\t<key>` (limit 1) | `0\t1\t<v>` → `Value`; `0\t1` (no row) or `0\t1\t\0` (NULL) → `Miss` |
//! | Set | `1\t=\t1\t<key>\t1\t0\tU\t<value>`, then only if it changed no row `2\t+\t2\t<key>\t<value>` | `0\t1\t<rows>`: more than 0 → `Ok`, 0 → `FollowUp`; the insert's `0\t1` → `Ok`, and `1\t1\t121` (a concurrent set of the key inserted it first) → `Ok` |
//! | Update | `1\t=\t1\t<key>\t1\t0\tU\t<value>` | `0\t1\t<rows>`: 0 → `Miss`, more → `Ok` |
//! | Delete | `1\t=\t1\t<key>\t1\t0\tD` | `0\t1\t<rows>`: 0 → `Miss`, more → `Ok` |
//! | Search | not supported: sent and decoded as Get | |
//!
//! Any other error reply is `ServerError`. HandlerSocket has no upsert,
//! and a plain insert (`+`) of a key that exists is declined, so a Set is
//! an update of the key and, only when that changed no row, an insert: its
//! second request ([`Codec::encode_follow_up`]), pipelined behind whatever
//! else the connection has in flight. MariaDB then counts one
//! `Handler_read_key` per Set, one `Handler_update` per Set that found its
//! row and one `Handler_write` per insert. Update and delete must carry the limit and offset
//! (`1\t0`): without them the server reads `U`/`D` as the limit and
//! silently does a find instead.
//!
//! # Escaped values
//!
//! A value read back is escaped on the wire and bakeoff's values are binary,
//! so [`Reply::Value`] is the range of the value **as escaped** inside the
//! reply. [`Codec::decode`] has already checked that every 0x01 in it is
//! followed by 0x40..=0x4f and that no other byte below 0x10 occurs, so
//! either of these gives the real bytes:
//!
//! * [`unescape_in_place`]: unescaping only shrinks, so the caller may
//!   rewrite `buf[start..end]` (bytes it is about to consume anyway) and use
//!   `buf[start..start + n]`. No copy when the value holds no 0x01.
//! * [`unescape_into`]: appends the value to a scratch buffer the caller
//!   keeps per connection.
//!
//! For instance, in the network loop (the reply is consumed right after):
//!
//! ```text
//! Reply::Value { start, end } => {
//!     let v = &mut rbuf[rstart + start..rstart + end];
//!     let n = handlersocket::unescape_in_place(v);
//!     pool.verify(key, &v[..n])
//! }
//! ```
//!
//! A codec-agnostic hook would be a provided trait method such as
//! `fn unescape_value(&self, v: &mut [u8]) -> usize { v.len() }` that this
//! codec overrides with [`unescape_in_place`].
//!
//! # Server counters (for a conservation check)
//!
//! Measured on MariaDB 10.11 (`SHOW GLOBAL STATUS`), exact per operation:
//! a find adds 1 to `Handler_read_key`; an insert adds 1 to `Handler_write`,
//! duplicates included; an update or delete adds 1 to `Handler_read_key`
//! and, when a row matched, 1 to `Handler_update` or `Handler_delete`.
//! `Handler_commit` moves once per batch of requests the server reads at
//! once; `Com_*`, `Questions` and `Bytes_*` do not move at all.
//!
//! # Limits
//!
//! Replies carry no length, so a reply is whole only once its LF is seen:
//! decoding scans the line (8 bytes at a time where no byte is below 0x10).
//! A stream with no LF within [`MAX_LINE`] bytes is [`Decoded::Invalid`].

use bakeoff_core::driver::{Codec, Decoded, Handles, Reply, WireOp};
use bakeoff_core::workload::OpKind;

/// Index id opened on `PRIMARY` with the column `v`: find, update, delete.
pub const VALUE_INDEX: u32 = 1;

/// Index id opened on `PRIMARY` with the columns `k,v`: insert.
pub const ROW_INDEX: u32 = 2;

/// Longest reply line accepted (1 GiB, escaped bytes and LF included).
pub const MAX_LINE: usize = 1 << 30;

/// Message of the error reply `1\t1\t121`: the key already exists.
pub const DUPLICATE_KEY: &[u8] = b"121";

/// Message of the error reply `3\t1\tunauth`: no or wrong secret.
pub const UNAUTH: &[u8] = b"unauth";

const ESCAPE: u8 = 0x01;
const SHIFT: u8 = 0x40;

const FIND: &[u8] = b"1\t=\t1\t";
const SCAN: &[u8] = b"2\t>=\t1\t";
const INSERT: &[u8] = b"2\t+\t2\t";
const UPDATE_TAIL: &[u8] = b"\t1\t0\tU\t";
const DELETE_TAIL: &[u8] = b"\t1\t0\tD\n";

/// The HandlerSocket codec. Holds nothing: index ids are [`VALUE_INDEX`]
/// and [`ROW_INDEX`], opened per connection by [`setup_requests`].
#[derive(Clone, Copy, Debug, Default)]
pub struct HandlerSocketCodec;

impl Codec for HandlerSocketCodec {
    #[inline(always)]
    fn encode(&self, _handles: &Handles, op: WireOp, out: &mut Vec<u8>) {
        let (kind, key, header, payload) = (op.kind, op.key, op.header, op.payload);
        out.reserve(16 + key.len() + header.len() + payload.len());
        match kind {
            OpKind::Scan => {
                // On ROW_INDEX, whose columns are k,v: up to `limit` rows
                // from the key on, in the index's order.
                out.extend_from_slice(SCAN);
                escape_into(key, out);
                out.push(b'\t');
                super::push_decimal(out, op.limit as usize);
                out.extend_from_slice(b"\t0\n");
            }
            // Search never reaches it: the plan rejects it for targets
            // whose capabilities lack it. A read-modify-write's first
            // request is a find.
            OpKind::Get | OpKind::Search | OpKind::ReadModifyWrite => {
                out.extend_from_slice(FIND);
                escape_into(key, out);
                out.push(b'\n');
            }
            OpKind::Set | OpKind::Update | OpKind::Insert => {
                out.extend_from_slice(FIND);
                escape_into(key, out);
                out.extend_from_slice(UPDATE_TAIL);
                escape_into(header, out);
                escape_into(payload, out);
                out.push(b'\n');
            }
            OpKind::Delete => {
                out.extend_from_slice(FIND);
                escape_into(key, out);
                out.extend_from_slice(DELETE_TAIL);
            }
        }
    }

    #[inline]
    fn decode(&self, buf: &[u8], kind: OpKind) -> Decoded {
        let line = match scan_line(buf, MAX_LINE) {
            Scan::Incomplete => return Decoded::Incomplete,
            Scan::Invalid => return Decoded::Invalid,
            Scan::Line(line) => line,
        };
        if kind == OpKind::Scan && line.code == 0 {
            // Rows of (k, v) on ROW_INDEX: the tokens, as sent.
            if line.ncols != 2 || line.tokens % 2 != 0 {
                return Decoded::Invalid;
            }
            let start = if line.tokens == 0 {
                line.len - 1
            } else {
                line.first.0
            };
            return Decoded::Complete {
                len: line.len,
                reply: Reply::Value {
                    start,
                    end: line.len - 1,
                },
            };
        }
        // Every other reply to our requests has one column: errors, the
        // write results and finds on VALUE_INDEX alike.
        if line.ncols != 1 {
            return Decoded::Invalid;
        }
        let first = &buf[line.first.0..line.first.1];
        let reply = if line.code != 0 {
            if line.tokens != 1 {
                return Decoded::Invalid;
            }
            Reply::ServerError
        } else {
            match kind {
                OpKind::Get | OpKind::Search | OpKind::Scan | OpKind::ReadModifyWrite => {
                    match line.tokens {
                        0 => Reply::Miss,
                        1 if line.first_null => Reply::Miss,
                        1 => Reply::Value {
                            start: line.first.0,
                            end: line.first.1,
                        },
                        _ => return Decoded::Invalid,
                    }
                }
                // The update that begins a set: no row changed, so the
                // insert follows.
                OpKind::Set | OpKind::Insert => match (line.tokens, count(first)) {
                    (1, Some(false)) => Reply::FollowUp,
                    (1, Some(true)) => Reply::Ok,
                    _ => return Decoded::Invalid,
                },
                OpKind::Update | OpKind::Delete => match (line.tokens, count(first)) {
                    (1, Some(false)) => Reply::Miss,
                    (1, Some(true)) => Reply::Ok,
                    _ => return Decoded::Invalid,
                },
            }
        };
        Decoded::Complete {
            len: line.len,
            reply,
        }
    }

    const ESCAPES_VALUES: bool = true;

    const SCANS: bool = true;

    /// Tokens `k1 TAB v1 TAB k2 TAB v2 …`, each unescaped.
    fn scan_rows(&self, value: &[u8], out: &mut Vec<u8>) -> bool {
        if value.is_empty() {
            return true;
        }
        let mut tokens = value.split(|&b| b == b'\t');
        let mut key = Vec::new();
        let mut val = Vec::new();
        while let Some(k) = tokens.next() {
            let Some(v) = tokens.next() else {
                return false;
            };
            key.clear();
            val.clear();
            unescape_into(k, &mut key);
            unescape_into(v, &mut val);
            bakeoff_core::scan::push_row(out, &key, &val);
        }
        true
    }

    const FOLLOWS_UP: bool = true;

    /// A set's insert, after its update changed no row.
    #[inline]
    fn encode_follow_up(
        &self,
        _handles: &Handles,
        _kind: OpKind,
        key: &[u8],
        header: &[u8],
        payload: &[u8],
        out: &mut Vec<u8>,
    ) {
        out.reserve(16 + key.len() + header.len() + payload.len());
        out.extend_from_slice(INSERT);
        escape_into(key, out);
        out.push(b'\t');
        escape_into(header, out);
        escape_into(payload, out);
        out.push(b'\n');
    }

    /// The insert's reply: `0\t1` (a table with an auto-increment column
    /// would add the id as a number); or `1\t1\t121` when another set of
    /// the same key inserted it since this one's update looked: the two
    /// raced, and the row holds the other's value as if it came after this
    /// one, which is what two concurrent upserts may leave: `Ok`.
    fn decode_follow_up(&self, buf: &[u8], kind: OpKind) -> Decoded {
        let line = match scan_line(buf, MAX_LINE) {
            Scan::Incomplete => return Decoded::Incomplete,
            Scan::Invalid => return Decoded::Invalid,
            Scan::Line(line) => line,
        };
        if line.ncols != 1 || kind != OpKind::Set {
            return Decoded::Invalid;
        }
        let first = &buf[line.first.0..line.first.1];
        let reply = match (line.code, line.tokens) {
            (0, 0) => Reply::Ok,
            (0, 1) if count(first).is_some() => Reply::Ok,
            (0, _) => return Decoded::Invalid,
            (_, 1) if first == DUPLICATE_KEY => Reply::Ok,
            (_, 1) => Reply::ServerError,
            _ => return Decoded::Invalid,
        };
        Decoded::Complete {
            len: line.len,
            reply,
        }
    }

    #[inline]
    fn unescape_value(&self, value: &mut [u8]) -> usize {
        unescape_in_place(value)
    }

    fn describe(&self, kind: OpKind) -> String {
        match kind {
            OpKind::Get => "find `1 = 1 <key>` (tab-separated; index 1 = PRIMARY → v, limit 1)".into(),
            OpKind::Set => {
                "update `1 = 1 <key> 1 0 U <value>`, then only if it changed no row insert `2 + 2 <key> <value>` (tab-separated; index 1 = PRIMARY → v, index 2 = PRIMARY → k,v)"
                    .into()
            }
            OpKind::Update => {
                "update `1 = 1 <key> 1 0 U <value>` (tab-separated; index 1 = PRIMARY → v; 0 rows: miss)"
                    .into()
            }
            OpKind::Delete => {
                "delete `1 = 1 <key> 1 0 D` (tab-separated; index 1 = PRIMARY → v; 0 rows: miss)"
                    .into()
            }
            OpKind::Insert => "as set (a new key: the update changes no row, so the insert follows)".into(),
            OpKind::ReadModifyWrite => "find `1 = 1 <key>`, then as set".into(),
            OpKind::Scan => "find `2 >= 1 <key> <length> 0` (tab-separated; index 2 = PRIMARY → k,v)".into(),
            OpKind::Search => "not supported".into(),
        }
    }
}

/// Appends `src` to `out` escaped as a HandlerSocket token: each byte
/// 0x00..=0x0f becomes 0x01 followed by the byte + 0x40.
#[inline]
pub fn escape_into(src: &[u8], out: &mut Vec<u8>) {
    let mut from = 0;
    loop {
        let i = next_special(src, from);
        out.extend_from_slice(&src[from..i]);
        if i == src.len() {
            return;
        }
        out.push(ESCAPE);
        out.push(src[i] + SHIFT);
        from = i + 1;
    }
}

/// Unescapes a token in place (as the server does: `0x01 c` becomes
/// `c - 0x40`; a trailing lone 0x01 is kept) and returns its new length;
/// `buf[..n]` then holds the bytes. Writes nothing when `buf` holds no 0x01.
#[inline]
pub fn unescape_in_place(buf: &mut [u8]) -> usize {
    let Some(mut r) = buf.iter().position(|&b| b == ESCAPE) else {
        return buf.len();
    };
    let mut w = r;
    while r < buf.len() {
        if buf[r] == ESCAPE && r + 1 < buf.len() {
            buf[w] = buf[r + 1].wrapping_sub(SHIFT);
            r += 2;
            w += 1;
        } else {
            // Copy the run up to the next escape in one go.
            let end = buf[r + 1..]
                .iter()
                .position(|&b| b == ESCAPE)
                .map_or(buf.len(), |p| r + 1 + p);
            buf.copy_within(r..end, w);
            w += end - r;
            r = end;
        }
    }
    w
}

/// Appends the unescaped bytes of the token `src` to `out` (same rules as
/// [`unescape_in_place`]).
#[inline]
pub fn unescape_into(src: &[u8], out: &mut Vec<u8>) {
    let mut rest = src;
    while let Some(i) = rest.iter().position(|&b| b == ESCAPE) {
        out.extend_from_slice(&rest[..i]);
        match rest.get(i + 1) {
            Some(&c) => {
                out.push(c.wrapping_sub(SHIFT));
                rest = &rest[i + 2..];
            }
            None => {
                out.push(ESCAPE);
                rest = &[];
            }
        }
    }
    out.extend_from_slice(rest);
}

/// The authentication request `A\t1\t<secret>\n`. Answered `0\t1`, or
/// `3\t1\tunauth` for a wrong secret (the connection stays open but every
/// request gets `unauth` until a right one is sent).
pub fn auth_request(secret: &[u8]) -> Vec<u8> {
    let mut out = b"A\t1\t".to_vec();
    escape_into(secret, &mut out);
    out.push(b'\n');
    out
}

/// The open-index request `P\t<id>\t<db>\t<table>\t<index>\t<c1,c2,…>\n`.
/// Answered `0\t1`, or e.g. `1\t1\topen_table` (no such database or table),
/// `2\t1\tidxnum` (no such index), `2\t1\tfld` (no such column). Opening an
/// id again replaces it.
pub fn open_index_request(
    id: u32,
    db: &str,
    table: &str,
    index: &str,
    columns: &[&str],
) -> Vec<u8> {
    let mut out = format!("P\t{id}\t").into_bytes();
    for part in [db, table, index] {
        escape_into(part.as_bytes(), &mut out);
        out.push(b'\t');
    }
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        escape_into(c.as_bytes(), &mut out);
    }
    out.push(b'\n');
    out
}

/// Everything a new connection sends before its first operation, pipelined:
/// the authentication (when `secret` is given) and the opening of
/// [`VALUE_INDEX`] and [`ROW_INDEX`] on `db`.`table`. Returns the bytes and
/// the number of replies to read with [`parse_setup_reply`].
pub fn setup_requests(secret: Option<&[u8]>, db: &str, table: &str) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut replies = 2;
    if let Some(s) = secret {
        out.extend_from_slice(&auth_request(s));
        replies += 1;
    }
    out.extend_from_slice(&open_index_request(
        VALUE_INDEX,
        db,
        table,
        "PRIMARY",
        &["v"],
    ));
    out.extend_from_slice(&open_index_request(
        ROW_INDEX,
        db,
        table,
        "PRIMARY",
        &["k", "v"],
    ));
    (out, replies)
}

/// A reply to [`auth_request`] or [`open_index_request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupReply {
    /// The buffer holds no whole reply yet.
    Incomplete,
    /// `0\t1`: done; the reply took `len` bytes.
    Ok {
        /// Bytes the reply took.
        len: usize,
    },
    /// `<code>\t1\t<message>`, e.g. code 3 with [`UNAUTH`].
    Failed {
        /// Bytes the reply took.
        len: usize,
        /// The non-zero error code.
        code: u32,
        /// First byte of the message (escaped) in the buffer.
        start: usize,
        /// One past its last byte.
        end: usize,
    },
    /// The bytes are not a HandlerSocket reply of this shape.
    Invalid,
}

/// Parses the reply to a set-up request at the front of `buf`.
pub fn parse_setup_reply(buf: &[u8]) -> SetupReply {
    match scan_line(buf, MAX_LINE) {
        Scan::Incomplete => SetupReply::Incomplete,
        Scan::Invalid => SetupReply::Invalid,
        Scan::Line(l) if l.ncols != 1 => SetupReply::Invalid,
        Scan::Line(l) if l.code == 0 && l.tokens == 0 => SetupReply::Ok { len: l.len },
        Scan::Line(l) if l.code != 0 && l.tokens == 1 => SetupReply::Failed {
            len: l.len,
            code: l.code,
            start: l.first.0,
            end: l.first.1,
        },
        Scan::Line(_) => SetupReply::Invalid,
    }
}

/// `Some(rows != 0)` if `b` is a decimal count, else `None`.
#[inline]
fn count(b: &[u8]) -> Option<bool> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().any(|&c| c != b'0'))
}

/// Index of the first byte below 0x10 (escape, tab, LF, NUL, …) in
/// `buf[from..]`, or `buf.len()`.
#[inline]
fn next_special(buf: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Eight bytes at a time: `(w - 0x10…) & !w & 0x80…` is non-zero exactly
    // when some byte of `w` is below 0x10.
    while let Some(chunk) = buf.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        if w.wrapping_sub(ONES * 0x10) & !w & HIGHS != 0 {
            break;
        }
        i += 8;
    }
    while i < buf.len() && buf[i] >= 0x10 {
        i += 1;
    }
    i
}

/// The shape of one reply line.
struct Line {
    /// Bytes of the line, LF included.
    len: usize,
    code: u32,
    ncols: u32,
    /// Tokens after `ncols`.
    tokens: usize,
    /// Range of the first of them (escaped), if any.
    first: (usize, usize),
    /// Whether that first token is NULL.
    first_null: bool,
}

enum Scan {
    Incomplete,
    Invalid,
    Line(Line),
}

/// Parses a decimal number at `at` ending at a byte in `ends`; returns it
/// and the position of that byte.
#[inline]
fn number(view: &[u8], at: usize, ends: &[u8], short: fn() -> Scan) -> Result<(u32, usize), Scan> {
    let mut n: u32 = 0;
    let mut i = at;
    loop {
        let Some(&c) = view.get(i) else {
            return Err(short());
        };
        if c.is_ascii_digit() && i - at < 9 {
            n = n * 10 + u32::from(c - b'0');
            i += 1;
        } else if i > at && ends.contains(&c) {
            return Ok((n, i));
        } else {
            return Err(Scan::Invalid);
        }
    }
}

/// Scans the reply line at the front of `buf`, validating every token;
/// no LF within `max` bytes is invalid.
fn scan_line(buf: &[u8], max: usize) -> Scan {
    let view = &buf[..buf.len().min(max)];
    // What running out of bytes means: more may come, or the line is too long.
    let short: fn() -> Scan = if buf.len() >= max {
        || Scan::Invalid
    } else {
        || Scan::Incomplete
    };
    let (code, at) = match number(view, 0, b"\t", short) {
        Ok(v) => v,
        Err(s) => return s,
    };
    let (ncols, mut i) = match number(view, at + 1, b"\t\n", short) {
        Ok(v) => v,
        Err(s) => return s,
    };
    let mut line = Line {
        len: 0,
        code,
        ncols,
        tokens: 0,
        first: (0, 0),
        first_null: false,
    };
    // `view[i]` is the TAB before a token or the final LF.
    while view[i] == b'\t' {
        let start = i + 1;
        let mut j = start;
        let null = view.get(j) == Some(&0);
        if null {
            match view.get(j + 1) {
                None => return short(),
                Some(b'\t' | b'\n') => j += 1,
                Some(_) => return Scan::Invalid,
            }
        } else {
            loop {
                j = next_special(view, j);
                match view.get(j) {
                    None => return short(),
                    Some(b'\t' | b'\n') => break,
                    Some(&ESCAPE) => match view.get(j + 1) {
                        None => return short(),
                        Some(0x40..=0x4f) => j += 2,
                        Some(_) => return Scan::Invalid,
                    },
                    Some(_) => return Scan::Invalid,
                }
            }
        }
        if line.tokens == 0 {
            line.first = (start, j);
            line.first_null = null;
        }
        line.tokens += 1;
        i = j;
    }
    line.len = i + 1;
    Scan::Line(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: HandlerSocketCodec = HandlerSocketCodec;
    const KINDS: [OpKind; 5] = [
        OpKind::Get,
        OpKind::Set,
        OpKind::Update,
        OpKind::Delete,
        OpKind::Search,
    ];

    // Replies captured from MariaDB 10.11.19's handlersocket plugin
    // (Debian 12 package) on 127.0.0.1; see FINDINGS.md for the requests.
    const AUTH_OK: &[u8] = b"0\t1\n";
    const UNAUTH_REPLY: &[u8] = b"3\t1\tunauth\n";
    const OPEN_OK: &[u8] = b"0\t1\n";
    const OPEN_NO_TABLE: &[u8] = b"1\t1\topen_table\n";
    const OPEN_NO_INDEX: &[u8] = b"2\t1\tidxnum\n";
    const OPEN_NO_COLUMN: &[u8] = b"2\t1\tfld\n";
    const FIND_HIT: &[u8] = b"0\t1\thello\n";
    const FIND_MISS: &[u8] = b"0\t1\n";
    const FIND_EMPTY: &[u8] = b"0\t1\t\n";
    const FIND_NULL: &[u8] = b"0\t1\t\x00\n";
    /// The value 0x00..=0x0f, 0xff read back.
    const FIND_BINARY: &[u8] =
        b"0\t1\t\x01@\x01A\x01B\x01C\x01D\x01E\x01F\x01G\x01H\x01I\x01J\x01K\x01L\x01M\x01N\x01O\xff\n";
    /// The value 0x00..=0xff read back.
    const FIND_ALL_BYTES: &[u8] = b"0\t1\t\x01@\x01A\x01B\x01C\x01D\x01E\x01F\x01G\x01H\x01I\x01J\x01K\x01L\x01M\x01N\x01O\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf\xe0\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff\n";
    const INSERT_OK: &[u8] = b"0\t1\n";
    const INSERT_DUP: &[u8] = b"1\t1\t121\n";
    const ROWS_1: &[u8] = b"0\t1\t1\n";
    const ROWS_0: &[u8] = b"0\t1\t0\n";
    const READONLY: &[u8] = b"2\t1\treadonly\n";
    const STMTNUM: &[u8] = b"2\t1\tstmtnum\n";
    const BAD_CMD: &[u8] = b"2\t1\tcmd\n";
    /// Replies to find hit, find miss, insert, update, delete, find miss,
    /// sent in one write.
    const PIPELINED: &[u8] = b"0\t1\tup2\n0\t1\n0\t1\n0\t1\t1\n0\t1\t1\n0\t1\n";
    /// Replies to an update and an insert of an existing key, sent in one write.
    const PIPELINED_UPSERT: &[u8] = b"0\t1\t1\n1\t1\t121\n";

    fn done(len: usize, reply: Reply) -> Decoded {
        Decoded::Complete { len, reply }
    }

    fn follow_up(key: &[u8], header: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        C.encode_follow_up(&[0; 4], OpKind::Set, key, header, payload, &mut out);
        out
    }

    /// A scan is a find with `>=` and the length on the index of (k, v);
    /// its reply's rows come out as (key, value) records, unescaped, and a
    /// reply of no rows is an empty scan.
    #[test]
    fn scans_find_from_the_key_on_and_their_rows_are_records() {
        let mut out = Vec::new();
        C.encode(
            &[0; 4],
            WireOp {
                limit: 57,
                ..WireOp::new(OpKind::Scan, b"bk:1", &[], &[])
            },
            &mut out,
        );
        assert_eq!(out, b"2\t>=\t1\tbk:1\t57\t0\n");
        let reply = b"0\t2\tbk:000000000001\tA\x01\x40B\tbk:000000000002\tC\n";
        let Decoded::Complete {
            len,
            reply: Reply::Value { start, end },
        } = C.decode(reply, OpKind::Scan)
        else {
            panic!("not a scan's rows");
        };
        assert_eq!(len, reply.len());
        let mut rows = Vec::new();
        assert!(C.scan_rows(&reply[start..end], &mut rows));
        let got: Vec<(Vec<u8>, Vec<u8>)> = bakeoff_core::scan::rows(&rows)
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        assert_eq!(
            got,
            [
                (b"bk:000000000001".to_vec(), b"A\0B".to_vec()),
                (b"bk:000000000002".to_vec(), b"C".to_vec())
            ]
        );
        let Decoded::Complete {
            reply: Reply::Value { start, end },
            ..
        } = C.decode(b"0\t2\n", OpKind::Scan)
        else {
            panic!("no rows is an empty scan");
        };
        assert_eq!(start, end);
        assert_eq!(C.decode(b"0\t2\tbk:1\n", OpKind::Scan), Decoded::Invalid);
        assert_eq!(
            C.decode(b"2\t1\tstmtnum\n", OpKind::Scan),
            Decoded::Complete {
                len: 12,
                reply: Reply::ServerError
            }
        );
    }

    fn enc(kind: OpKind, key: &[u8], header: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        C.encode(&[0; 4], WireOp::new(kind, key, header, payload), &mut out);
        out
    }

    /// Every (reply, kind, decoded) fixture; all are whole replies.
    fn fixtures() -> Vec<(&'static [u8], OpKind, Reply)> {
        use OpKind::*;
        let mut v = vec![
            (FIND_HIT, Get, Reply::Value { start: 4, end: 9 }),
            (FIND_HIT, Search, Reply::Value { start: 4, end: 9 }),
            (FIND_MISS, Get, Reply::Miss),
            (FIND_EMPTY, Get, Reply::Value { start: 4, end: 4 }),
            (FIND_NULL, Get, Reply::Miss),
            (FIND_BINARY, Get, Reply::Value { start: 4, end: 37 }),
            (FIND_ALL_BYTES, Get, Reply::Value { start: 4, end: 276 }),
            (ROWS_1, Set, Reply::Ok),
            (ROWS_0, Set, Reply::FollowUp),
            (INSERT_DUP, Set, Reply::ServerError),
            (INSERT_DUP, Update, Reply::ServerError),
            (INSERT_DUP, Get, Reply::ServerError),
            (ROWS_1, Update, Reply::Ok),
            (ROWS_0, Update, Reply::Miss),
            (ROWS_1, Delete, Reply::Ok),
            (ROWS_0, Delete, Reply::Miss),
            (&b"0\t1\t12\n"[..], Delete, Reply::Ok),
            (&b"0\t1\t7\n"[..], Set, Reply::Ok),
        ];
        for kind in KINDS {
            for e in [UNAUTH_REPLY, READONLY, STMTNUM, BAD_CMD, OPEN_NO_TABLE] {
                v.push((e, kind, Reply::ServerError));
            }
        }
        v
    }

    #[test]
    fn encodes_every_op() {
        assert_eq!(
            enc(OpKind::Get, b"bk:000000000042", b"", b""),
            b"1\t=\t1\tbk:000000000042\n"
        );
        assert_eq!(enc(OpKind::Search, b"bk:1", b"", b""), b"1\t=\t1\tbk:1\n");
        // A set begins as an update; its insert follows only if needed.
        assert_eq!(
            enc(OpKind::Set, b"bk:000000000042", b"he", b"llo"),
            b"1\t=\t1\tbk:000000000042\t1\t0\tU\thello\n"
        );
        assert_eq!(
            follow_up(b"bk:000000000042", b"he", b"llo"),
            b"2\t+\t2\tbk:000000000042\thello\n"
        );
        assert_eq!(
            enc(OpKind::Update, b"bk:000000000042", b"wor", b"ld"),
            b"1\t=\t1\tbk:000000000042\t1\t0\tU\tworld\n"
        );
        assert_eq!(
            enc(OpKind::Delete, b"bk:000000000042", b"", b""),
            b"1\t=\t1\tbk:000000000042\t1\t0\tD\n"
        );
        // Escaping in key, header and payload; 0xff passes as is.
        assert_eq!(
            follow_up(b"k\t\n", b"\x00\x0f", b"\x10\xff\x01"),
            b"2\t+\t2\tk\x01I\x01J\t\x01@\x01O\x10\xff\x01A\n"
        );
        assert_eq!(
            enc(OpKind::Update, b"k", b"\x09", b""),
            b"1\t=\t1\tk\t1\t0\tU\t\x01I\n"
        );
        // The value 0x00..=0x0f, 0xff as it was sent to the server (the
        // server answered FIND_BINARY for it).
        let v: Vec<u8> = (0u8..16).chain([0xff]).collect();
        let mut want = b"2\t+\t2\tbk:c\t".to_vec();
        want.extend_from_slice(&FIND_BINARY[4..]);
        assert_eq!(follow_up(b"bk:c", &v[..5], &v[5..]), want);
    }

    /// The insert that follows a set's update: done, either way; anything
    /// else is an error or garbage.
    #[test]
    fn decodes_the_sets_insert() {
        let d = |buf: &[u8]| C.decode_follow_up(buf, OpKind::Set);
        assert_eq!(d(INSERT_OK), done(4, Reply::Ok));
        assert_eq!(d(b"0\t1\t7\n"), done(6, Reply::Ok));
        // Another set of the key inserted it first: the race is lost, the
        // set done (the row holds a set's value).
        assert_eq!(d(INSERT_DUP), done(8, Reply::Ok));
        assert_eq!(d(READONLY), done(READONLY.len(), Reply::ServerError));
        assert_eq!(d(&INSERT_OK[..3]), Decoded::Incomplete);
        for bad in [
            &b"0\t1\tabc\n"[..],
            b"0\t1\t1\t1\n",
            b"1\t1\n",
            b"1\t2\t121\n",
        ] {
            assert_eq!(d(bad), Decoded::Invalid, "{bad:?}");
        }
        assert_eq!(C.decode_follow_up(INSERT_OK, OpKind::Get), Decoded::Invalid);
    }

    #[test]
    fn encode_appends() {
        let mut out = b"x".to_vec();
        C.encode(&[0; 4], WireOp::new(OpKind::Get, b"a", b"", b""), &mut out);
        C.encode(
            &[0; 4],
            WireOp::new(OpKind::Delete, b"b", b"", b""),
            &mut out,
        );
        assert_eq!(out, b"x1\t=\t1\ta\n1\t=\t1\tb\t1\t0\tD\n");
    }

    #[test]
    fn decodes_captured_replies() {
        for (buf, kind, reply) in fixtures() {
            assert_eq!(
                C.decode(buf, kind),
                done(buf.len(), reply),
                "{kind:?} {buf:?}"
            );
        }
    }

    #[test]
    fn captured_values_unescape() {
        let Decoded::Complete {
            reply: Reply::Value { start, end },
            ..
        } = C.decode(FIND_ALL_BYTES, OpKind::Get)
        else {
            panic!("not a value");
        };
        let all: Vec<u8> = (0..=255).collect();
        let mut buf = FIND_ALL_BYTES.to_vec();
        let n = unescape_in_place(&mut buf[start..end]);
        assert_eq!(&buf[start..start + n], &all[..]);
        let mut out = b"x".to_vec();
        unescape_into(&FIND_ALL_BYTES[start..end], &mut out);
        assert_eq!(&out[1..], &all[..]);

        let mut buf = FIND_BINARY.to_vec();
        let n = unescape_in_place(&mut buf[4..37]);
        let want: Vec<u8> = (0u8..16).chain([0xff]).collect();
        assert_eq!(&buf[4..4 + n], &want[..]);
        // A value without escapes is left alone.
        let mut hello = FIND_HIT.to_vec();
        assert_eq!(unescape_in_place(&mut hello[4..9]), 5);
        assert_eq!(hello, FIND_HIT);
    }

    #[test]
    fn escape_round_trip_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let mut esc = Vec::new();
        escape_into(&all, &mut esc);
        assert_eq!(esc.len(), 256 + 16);
        // What the server sends back for that value is exactly this.
        assert_eq!(&esc[..], &FIND_ALL_BYTES[4..FIND_ALL_BYTES.len() - 1]);
        assert!(!esc.iter().any(|&b| b < 0x10 && b != ESCAPE));
        let mut back = Vec::new();
        unescape_into(&esc, &mut back);
        assert_eq!(back, all);
        let n = unescape_in_place(&mut esc);
        assert_eq!(&esc[..n], &all[..]);
        for b in 0..=255u8 {
            for v in [vec![b], vec![b'a', b, b'z'], vec![b; 9], vec![0x01; 3]] {
                let mut e = Vec::new();
                escape_into(&v, &mut e);
                let mut reply = b"0\t1\t".to_vec();
                reply.extend_from_slice(&e);
                reply.push(b'\n');
                let len = reply.len();
                assert_eq!(
                    C.decode(&reply, OpKind::Get),
                    done(
                        len,
                        Reply::Value {
                            start: 4,
                            end: len - 1
                        }
                    )
                );
                let n = unescape_in_place(&mut e);
                assert_eq!(&e[..n], &v[..]);
            }
        }
        // Lone trailing escape byte: kept (the decoder never yields one).
        let mut lone = vec![b'a', ESCAPE];
        assert_eq!(unescape_in_place(&mut lone), 2);
        let mut out = Vec::new();
        unescape_into(&[b'a', ESCAPE], &mut out);
        assert_eq!(out, [b'a', ESCAPE]);
    }

    #[test]
    fn every_strict_prefix_is_incomplete() {
        let mut all = fixtures();
        all.push((PIPELINED, OpKind::Get, Reply::Value { start: 4, end: 7 }));
        for (buf, kind, _) in all {
            let Decoded::Complete { len, .. } = C.decode(buf, kind) else {
                panic!("{buf:?} is not whole");
            };
            for cut in 0..len {
                assert_eq!(
                    C.decode(&buf[..cut], kind),
                    Decoded::Incomplete,
                    "{kind:?} {:?}",
                    &buf[..cut]
                );
                assert_eq!(parse_setup_reply(&buf[..cut]), SetupReply::Incomplete);
            }
        }
    }

    #[test]
    fn garbage_is_invalid() {
        use OpKind::*;
        let cases: &[(&[u8], OpKind)] = &[
            (b"garbage\n", Get),
            (b"g", Get),
            (b"\n", Get),
            (b"\t1\n", Get),
            (b"0\n", Get),
            (b"0\t\n", Get),
            (b"0\tx", Get),
            (b"-1\t1\n", Get),
            (b"0\t1\r\n", Get),        // CR is a raw control byte
            (b"0\t1\ta\x02b\n", Get),  // raw control byte in a token
            (b"0\t1\ta\x01zb\n", Get), // bad escape
            (b"0\t1\ta\x01\x3f", Get), // bad escape, line not ended yet
            (b"0\t1\ta\x00\n", Get),   // NUL inside a token
            (b"0\t1\t\x00b\n", Get),   // NUL not alone
            (b"0\t1\ta\tb\n", Get),    // two rows
            (b"0\t2\tk\tv\n", Get),    // two columns
            (b"0\t1\tabc\n", Set),
            (b"0\t1\t1\t1\n", Set),
            (b"0\t1\n", Set),    // no row count
            (b"0\t1\n", Update), // no row count: LIM was missing
            (b"0\t1\tx\n", Delete),
            (b"0\t1\t\n", Delete),
            (b"1\t1\n", Set), // error without a message
            (b"1\t1\t121\tx\n", Set),
            (b"1\t2\t121\n", Set),
            (b"1234567890\t1\n", Get), // absurd code
        ];
        for &(buf, kind) in cases {
            assert_eq!(C.decode(buf, kind), Decoded::Invalid, "{kind:?} {buf:?}");
        }
        // Invalid right away, before any LF.
        assert_eq!(C.decode(b"HTTP/1.1 400", Get), Decoded::Invalid);
        assert_eq!(parse_setup_reply(b"0\t1\tx\n"), SetupReply::Invalid);
        assert_eq!(parse_setup_reply(b"1\t1\n"), SetupReply::Invalid);
    }

    #[test]
    fn long_lines() {
        // A long value still arriving is incomplete…
        let mut buf = b"0\t1\t".to_vec();
        buf.resize(1 << 16, b'a');
        assert_eq!(C.decode(&buf, OpKind::Get), Decoded::Incomplete);
        buf.push(b'\n');
        assert_eq!(
            C.decode(&buf, OpKind::Get),
            done(
                buf.len(),
                Reply::Value {
                    start: 4,
                    end: buf.len() - 1
                }
            )
        );
        // …until no LF comes within the limit (a small one here).
        buf.pop();
        for max in [5, 100, buf.len()] {
            assert!(matches!(scan_line(&buf, max), Scan::Invalid));
            assert!(matches!(scan_line(&buf[..max - 1], max), Scan::Incomplete));
        }
        assert!(matches!(scan_line(b"0\t1\n", 4), Scan::Line(_)));
        assert!(matches!(scan_line(b"0\t1\n", 3), Scan::Invalid));
    }

    #[test]
    fn pipelined_replies_decode_in_order() {
        use OpKind::*;
        let want = [
            (Get, Reply::Value { start: 4, end: 7 }),
            (Get, Reply::Miss),
            // The insert's bare `0\t1` (read here as a find's miss).
            (Get, Reply::Miss),
            (Update, Reply::Ok),
            (Delete, Reply::Ok),
            (Get, Reply::Miss),
        ];
        let mut at = 0;
        for (kind, reply) in want {
            let Decoded::Complete { len, reply: got } = C.decode(&PIPELINED[at..], kind) else {
                panic!("reply at {at} incomplete");
            };
            assert_eq!(got, reply);
            if let Reply::Value { start, end } = got {
                assert_eq!(&PIPELINED[at + start..at + end], b"up2");
            }
            at += len;
        }
        assert_eq!(at, PIPELINED.len());
        assert_eq!(C.decode(&PIPELINED[at..], Get), Decoded::Incomplete);

        assert_eq!(C.decode(PIPELINED_UPSERT, Update), done(6, Reply::Ok));
        assert_eq!(
            C.decode_follow_up(&PIPELINED_UPSERT[6..], Set),
            done(8, Reply::Ok)
        );
    }

    #[test]
    fn setup_requests_and_replies() {
        assert_eq!(auth_request(b"wsecret"), b"A\t1\twsecret\n");
        assert_eq!(
            open_index_request(2, "bakeoff", "kv", "PRIMARY", &["k", "v"]),
            b"P\t2\tbakeoff\tkv\tPRIMARY\tk,v\n"
        );
        let (req, n) = setup_requests(Some(b"wsecret"), "bakeoff", "kv");
        assert_eq!(
            req,
            b"A\t1\twsecret\nP\t1\tbakeoff\tkv\tPRIMARY\tv\nP\t2\tbakeoff\tkv\tPRIMARY\tk,v\n"
        );
        assert_eq!(n, 3);
        assert_eq!(setup_requests(None, "bakeoff", "kv").1, 2);

        assert_eq!(parse_setup_reply(AUTH_OK), SetupReply::Ok { len: 4 });
        assert_eq!(parse_setup_reply(OPEN_OK), SetupReply::Ok { len: 4 });
        // The captured set-up replies, pipelined.
        assert_eq!(
            parse_setup_reply(b"0\t1\n0\t1\n0\t1\n"),
            SetupReply::Ok { len: 4 }
        );
        for (buf, code, msg) in [
            (UNAUTH_REPLY, 3, UNAUTH),
            (OPEN_NO_TABLE, 1, &b"open_table"[..]),
            (OPEN_NO_INDEX, 2, &b"idxnum"[..]),
            (OPEN_NO_COLUMN, 2, &b"fld"[..]),
        ] {
            let SetupReply::Failed {
                len,
                code: c,
                start,
                end,
            } = parse_setup_reply(buf)
            else {
                panic!("{buf:?}");
            };
            assert_eq!((len, c, &buf[start..end]), (buf.len(), code, msg));
        }
    }

    #[test]
    fn describes_every_op() {
        for kind in KINDS {
            assert!(!C.describe(kind).is_empty());
        }
    }

    /// Random and mutated input never panics and never claims bytes or a
    /// value range outside the buffer.
    #[test]
    fn mutated_input_stays_in_bounds() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let seeds: Vec<&[u8]> = fixtures().iter().map(|f| f.0).chain([PIPELINED]).collect();
        for _ in 0..100_000 {
            let mut buf = seeds[rnd() as usize % seeds.len()].to_vec();
            match rnd() % 4 {
                0 => {
                    let i = rnd() as usize % buf.len();
                    buf[i] = rnd() as u8;
                }
                1 => buf.truncate(rnd() as usize % (buf.len() + 1)),
                2 => buf.extend_from_slice(seeds[rnd() as usize % seeds.len()]),
                _ => {
                    buf = (0..rnd() % 40)
                        .map(|_| [b'0', b'1', b'\t', b'\n', 0, 1, 0x41, b'x'][rnd() as usize % 8])
                        .collect()
                }
            }
            for kind in KINDS {
                if let Decoded::Complete { len, reply } = C.decode(&buf, kind) {
                    assert!(len > 0 && len <= buf.len());
                    assert_eq!(buf[len - 1], b'\n');
                    if let Reply::Value { start, end } = reply {
                        assert!(start <= end && end < len);
                        let mut v = buf[start..end].to_vec();
                        let n = unescape_in_place(&mut v);
                        let mut w = Vec::new();
                        unescape_into(&buf[start..end], &mut w);
                        assert_eq!(&v[..n], &w[..]);
                    }
                }
            }
            if let SetupReply::Failed {
                len, start, end, ..
            } = parse_setup_reply(&buf)
            {
                assert!(start <= end && end < len && len <= buf.len());
            }
        }
    }
}
