//! A captured trace as the source of a run's requests: each operation at
//! its own time (or scaled by a factor), on the record its key maps to,
//! with its own value size, in open loop.
//!
//! Two formats are read:
//!
//! - the public production cache traces' CSV (Twitter's
//!   `twitter/cache-trace`): `timestamp,anonymized key,key size,value
//!   size,client id,operation,TTL`, timestamps in whole seconds;
//! - bakeoff's own JSONL, one operation per line:
//!   `{"t": 0.000125, "op": "get", "key": "user:42", "size": 100}`
//!   (`t` in seconds, from any origin; `size` the value's bytes), what
//!   `bakeoff capture` writes.
//!
//! Keys map onto bakeoff's records one to one, in the order they first
//! appear: the same key is the same record wherever it recurs. An
//! operation bakeoff has no kind for is counted as skipped, by name,
//! never silently dropped.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::value::HEADER_LEN;
use crate::workload::{OpKind, OP_KINDS};

/// Largest value a replayed operation writes (bakeoff's bound on values).
const MAX_VALUE: u32 = 64 << 20;

/// Most operations a trace may hold (each takes 24 bytes in memory, so
/// this bounds a replay's memory to under 5 GB).
pub const MAX_OPS: usize = 200_000_000;

/// Longest line a trace may hold: far past any operation's (a Twitter
/// line is under 300 bytes), short of what reading a file with no line
/// breaks would take.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// Widest span a trace's own timestamps may cover: a year (Twitter's are
/// a week), which also keeps every time within bakeoff's nanoseconds.
pub const MAX_SPAN_S: f64 = 366.0 * 86_400.0;

/// Longest a replay may take at its speed (the trace's span over the
/// speed): a day. Each second of a run is a row of its timeline.
pub const MAX_REPLAY_S: f64 = 86_400.0;

/// Most entries of a trace's own rate table ([`TraceSummary::per_second`]):
/// a longer trace is counted in buckets of several seconds.
pub const MAX_RATE_BUCKETS: usize = 3_600;

/// How a trace file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Twitter's cache-trace CSV.
    Twitter,
    /// bakeoff's JSONL.
    Jsonl,
}

/// One operation of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceOp {
    /// When it was made, ns since the trace's first operation.
    pub at_ns: u64,
    /// What bakeoff sends for it.
    pub kind: OpKind,
    /// The record its key maps to.
    pub record: u64,
    /// Its value's size, bytes (at least bakeoff's header).
    pub size: u32,
}

/// A trace read into memory.
#[derive(Debug)]
pub struct Trace {
    /// How its file was written.
    pub format: TraceFormat,
    /// Its operations, in time order.
    pub ops: Vec<TraceOp>,
    /// Each record's value size for the load: the first size its key was
    /// seen with.
    pub sizes: Vec<u32>,
    /// Operations bakeoff has no kind for, by their name in the trace.
    pub skipped: BTreeMap<String, u64>,
}

/// What a trace holds, as a result file keeps it beside the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceSummary {
    /// How its file was written.
    pub format: TraceFormat,
    /// Operations replayed.
    pub ops: u64,
    /// Distinct keys, which are the records.
    pub records: u64,
    /// From its first operation to its last, seconds.
    pub span_s: f64,
    /// Operations not replayed, by their name in the trace.
    pub skipped: BTreeMap<String, u64>,
    /// Its operations in each bucket of [`TraceSummary::bucket_s`] seconds
    /// of its own time (the rate the replay is asked to keep, before any
    /// speed-up).
    pub per_second: Vec<u64>,
    /// Seconds of the trace's own time each entry of `per_second` counts:
    /// 1, or more for a trace longer than [`MAX_RATE_BUCKETS`] seconds.
    #[serde(default = "one_second")]
    pub bucket_s: u64,
}

/// A rate table's bucket in files written before buckets were kept.
fn one_second() -> u64 {
    1
}

impl Trace {
    /// Reads the trace at `path`; its format from its extension (`.csv`:
    /// Twitter's; otherwise JSONL). Only a regular file is read: a device
    /// or a FIFO could feed it for ever.
    pub fn read(path: &Path) -> Result<Trace, String> {
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => TraceFormat::Twitter,
            _ => TraceFormat::Jsonl,
        };
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!(
                "the trace {} is not a regular file (a device, a FIFO or a directory); give a trace file",
                path.display()
            ));
        }
        Self::parse(std::io::BufReader::new(file), format)
            .map_err(|e| format!("trace {}: {e}", path.display()))
    }

    /// Parses a trace of `format` from `input`.
    pub fn parse(input: impl BufRead, format: TraceFormat) -> Result<Trace, String> {
        let mut keys: HashMap<String, u64> = HashMap::new();
        let mut sizes = Vec::new();
        let mut skipped = BTreeMap::new();
        // (time in ns from the trace's own origin, kind, record, size).
        let mut raw: Vec<(f64, OpKind, u64, u32)> = Vec::new();
        let mut input = input;
        let mut bytes = Vec::new();
        for i in 0.. {
            bytes.clear();
            let n = input
                .by_ref()
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .map_err(|e| format!("line {}: {e}", i + 1))?;
            if n == 0 {
                break;
            }
            if bytes.len() > MAX_LINE_BYTES {
                return Err(format!(
                    "line {} is longer than {} KiB, past any operation's; is this a trace?",
                    i + 1,
                    MAX_LINE_BYTES >> 10
                ));
            }
            let line = std::str::from_utf8(&bytes)
                .map_err(|_| format!("line {}: not UTF-8 text; is this a trace?", i + 1))?;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parsed = match format {
                TraceFormat::Twitter => twitter_line(line),
                TraceFormat::Jsonl => jsonl_line(line),
            }
            .map_err(|e| format!("line {}: {e}", i + 1))?;
            let Some(kind) = kind_of(&parsed.op) else {
                *skipped.entry(parsed.op.to_ascii_lowercase()).or_insert(0) += 1;
                continue;
            };
            if raw.len() == MAX_OPS {
                return Err(format!(
                    "more than {MAX_OPS} operations; replay a part of it"
                ));
            }
            if parsed.size > MAX_VALUE {
                return Err(format!(
                    "line {}: a value of {} bytes is past bakeoff's largest, {} MiB",
                    i + 1,
                    parsed.size,
                    MAX_VALUE >> 20
                ));
            }
            let size = parsed.size.max(HEADER_LEN as u32);
            let next = keys.len() as u64;
            let record = *keys.entry(parsed.key).or_insert(next);
            if record == next {
                sizes.push(if parsed.size > 0 { size } else { 0 });
            } else if sizes[record as usize] == 0 && parsed.size > 0 {
                sizes[record as usize] = size;
            }
            raw.push((parsed.t, kind, record, size));
        }
        if raw.is_empty() {
            return Err(if skipped.is_empty() {
                "it holds no operations".into()
            } else {
                format!("none of its operations can be replayed (skipped: {skipped:?})")
            });
        }
        check_span(&raw)?;
        size_the_unsized(&mut sizes);
        let ops = timed(raw, format);
        Ok(Trace {
            format,
            ops,
            sizes,
            skipped,
        })
    }

    /// What it holds.
    pub fn summary(&self) -> TraceSummary {
        let span_ns = self.span_ns();
        let seconds = span_ns / 1_000_000_000 + 1;
        let bucket_s = seconds.div_ceil(MAX_RATE_BUCKETS as u64).max(1);
        let mut per_second = vec![0u64; seconds.div_ceil(bucket_s) as usize];
        for op in &self.ops {
            per_second[(op.at_ns / 1_000_000_000 / bucket_s) as usize] += 1;
        }
        TraceSummary {
            format: self.format,
            ops: self.ops.len() as u64,
            records: self.sizes.len() as u64,
            span_s: span_ns as f64 / 1e9,
            skipped: self.skipped.clone(),
            per_second,
            bucket_s,
        }
    }

    /// From its first operation to its last, ns.
    pub fn span_ns(&self) -> u64 {
        self.ops.last().map_or(0, |o| o.at_ns)
    }

    /// Operations of each kind, indexed by `OpKind as usize`.
    pub fn kinds(&self) -> [u64; OP_KINDS] {
        let mut n = [0; OP_KINDS];
        for op in &self.ops {
            n[op.kind as usize] += 1;
        }
        n
    }
}

/// One line of a trace, before its key is mapped.
struct Line {
    t: f64,
    op: String,
    key: String,
    size: u32,
}

/// Refuses raw operations (time in s, kind, record, size) whose times
/// span more than [`MAX_SPAN_S`].
fn check_span(raw: &[(f64, OpKind, u64, u32)]) -> Result<(), String> {
    let (first, last) = raw
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r.0), hi.max(r.0))
        });
    if last - first > MAX_SPAN_S {
        // Times far past any clock's read best in powers of ten.
        let t = |x: f64| {
            if x.abs() >= 1e12 {
                format!("{x:e}")
            } else {
                format!("{x}")
            }
        };
        return Err(format!(
            "its times run from {} s to {} s, a span past bakeoff's limit of {}; replay a part of it",
            t(first),
            t(last),
            crate::units::fmt_duration_s(MAX_SPAN_S)
        ));
    }
    Ok(())
}

/// Keys only ever read were never sized: gives them the mean size of
/// those that were (at least a header's).
fn size_the_unsized(sizes: &mut [u32]) {
    let known: Vec<u32> = sizes.iter().copied().filter(|&s| s > 0).collect();
    let mean = if known.is_empty() {
        HEADER_LEN as u32
    } else {
        (known.iter().map(|&s| u64::from(s)).sum::<u64>() / known.len() as u64) as u32
    };
    for s in sizes.iter_mut() {
        if *s == 0 {
            *s = mean.max(HEADER_LEN as u32);
        }
    }
}

/// `timestamp,anonymized key,key size,value size,client id,operation,TTL`:
/// the key may hold commas, so the fields are taken from both ends.
fn twitter_line(line: &str) -> Result<Line, String> {
    let fields: Vec<&str> = line.split(',').collect();
    if fields.len() < 7 {
        return Err(format!(
            "`{line}` has {} fields; Twitter's traces have 7 (timestamp,key,key size,value size,client id,operation,TTL)",
            fields.len()
        ));
    }
    let n = fields.len();
    let t = fields[0]
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite())
        .ok_or_else(|| format!("timestamp `{}` is not a number of seconds", fields[0]))?;
    let size = fields[n - 4]
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("value size `{}` is not a whole number", fields[n - 4]))?;
    Ok(Line {
        t,
        op: fields[n - 2].trim().to_string(),
        key: fields[1..n - 5].join(","),
        size,
    })
}

/// `{"t": …, "op": …, "key": …, "size": …}`.
fn jsonl_line(line: &str) -> Result<Line, String> {
    #[derive(Deserialize)]
    struct Json {
        t: f64,
        op: String,
        key: String,
        #[serde(default)]
        size: u32,
    }
    let j: Json = serde_json::from_str(line).map_err(|e| {
        format!("{e}; each line is {{\"t\": seconds, \"op\": \"get\", \"key\": \"…\", \"size\": bytes}}")
    })?;
    if !j.t.is_finite() {
        return Err(format!("time `{}` is not a number of seconds", j.t));
    }
    Ok(Line {
        t: j.t,
        op: j.op,
        key: j.key,
        size: j.size,
    })
}

/// What bakeoff sends for a trace's operation: reads as gets (Twitter's
/// `gets`, a get that returns a CAS token, too), writes as sets
/// (`add`, `replace` and `cas` write the whole value), deletes as deletes;
/// `None` for what has no equivalent (`incr`, `append`, …).
fn kind_of(op: &str) -> Option<OpKind> {
    match op.trim().to_ascii_lowercase().as_str() {
        "get" | "gets" | "read" => Some(OpKind::Get),
        "set" | "add" | "replace" | "cas" | "write" | "update" => Some(OpKind::Set),
        "delete" | "del" => Some(OpKind::Delete),
        "insert" => Some(OpKind::Insert),
        _ => None,
    }
}

/// The operations in time order, their times in ns from the first. The
/// same whole-second stamp (Twitter's resolution) on several operations
/// spreads them evenly over that second, in their order.
fn timed(mut raw: Vec<(f64, OpKind, u64, u32)>, format: TraceFormat) -> Vec<TraceOp> {
    raw.sort_by(|a, b| a.0.total_cmp(&b.0));
    let origin = raw[0].0;
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let mut j = i + 1;
        if format == TraceFormat::Twitter {
            while j < raw.len() && raw[j].0 == raw[i].0 {
                j += 1;
            }
        }
        let group = (j - i) as f64;
        for (k, &(t, kind, record, size)) in raw[i..j].iter().enumerate() {
            let within = if format == TraceFormat::Twitter {
                k as f64 / group
            } else {
                0.0
            };
            out.push(TraceOp {
                at_ns: ((t - origin + within) * 1e9) as u64,
                kind,
                record,
                size,
            });
        }
        i = j;
    }
    out
}

/// One operation of bakeoff's JSONL, as `bakeoff capture` writes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CapturedOp {
    /// Seconds (the server's clock, since the epoch).
    pub t: f64,
    /// `get`, `set` or `delete`.
    pub op: &'static str,
    /// The key, or its FNV-1a hash (`k` and 16 hex digits) unless keys are
    /// kept.
    pub key: String,
    /// The value's bytes written (0 for reads and deletes: MONITOR does
    /// not show replies).
    pub size: u32,
}

/// What one line of Redis's `MONITOR` says (`1700000000.123456 [0
/// 127.0.0.1:50000] "SET" "k" "v"`): the operations it makes, or the
/// command's name when bakeoff has no kind for it. `keep_keys` keeps keys
/// as they are (else hashed). `None` for a line that is not a command.
pub fn monitor_line(line: &str, keep_keys: bool) -> Option<Result<Vec<CapturedOp>, String>> {
    let line = line.strip_prefix('+').unwrap_or(line);
    let (t, rest) = line.split_once(' ')?;
    let t: f64 = t.parse().ok()?;
    let rest = rest.strip_prefix('[')?;
    let (_, args) = rest.split_once("] ")?;
    let args = quoted_args(args)?;
    let name = String::from_utf8_lossy(args.first()?).to_ascii_lowercase();
    let key = |k: &[u8]| {
        if keep_keys {
            String::from_utf8_lossy(k).into_owned()
        } else {
            format!("k{:016x}", crate::workload::fnv1a64_bytes(k))
        }
    };
    let op = |op: &'static str, k: &[u8], size: usize| CapturedOp {
        t,
        op,
        key: key(k),
        size: size.min(u32::MAX as usize) as u32,
    };
    let a = &args[1..];
    let ops = match (name.as_str(), a) {
        ("get" | "getex" | "getdel", [k, ..]) => vec![op("get", k, 0)],
        ("mget", keys) if !keys.is_empty() => keys.iter().map(|k| op("get", k, 0)).collect(),
        ("set" | "setnx" | "getset", [k, v, ..]) => vec![op("set", k, v.len())],
        ("setex" | "psetex", [k, _, v]) => vec![op("set", k, v.len())],
        ("mset" | "msetnx", pairs) if !pairs.is_empty() && pairs.len() % 2 == 0 => pairs
            .chunks(2)
            .map(|kv| op("set", &kv[0], kv[1].len()))
            .collect(),
        ("del" | "unlink", keys) if !keys.is_empty() => {
            keys.iter().map(|k| op("delete", k, 0)).collect()
        }
        _ => return Some(Err(name)),
    };
    Some(Ok(ops))
}

/// The arguments of a MONITOR line: each in double quotes, with Redis's
/// escapes (`\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b`, `\xHH`).
fn quoted_args(text: &str) -> Option<Vec<Vec<u8>>> {
    let b = text.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' => i += 1,
            b'"' => {
                let mut arg = Vec::new();
                i += 1;
                loop {
                    match *b.get(i)? {
                        b'"' => {
                            i += 1;
                            break;
                        }
                        b'\\' => {
                            let c = *b.get(i + 1)?;
                            i += 2;
                            arg.push(match c {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'a' => 7,
                                b'b' => 8,
                                b'x' => {
                                    let hex = std::str::from_utf8(b.get(i..i + 2)?).ok()?;
                                    i += 2;
                                    u8::from_str_radix(hex, 16).ok()?
                                }
                                other => other,
                            });
                        }
                        c => {
                            arg.push(c);
                            i += 1;
                        }
                    }
                }
                args.push(arg);
            }
            _ => return None,
        }
    }
    Some(args)
}

/// The trace of each path read so far in this process (a plan shapes its
/// points from it, and the run replays it).
static READ: Mutex<Vec<(String, Arc<Trace>)>> = Mutex::new(Vec::new());

/// The trace at `path`, read once per process.
pub fn load(path: &str) -> Result<Arc<Trace>, String> {
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = read.iter().find(|(p, _)| p == path) {
        return Ok(t.clone());
    }
    let t = Arc::new(Trace::read(Path::new(path))?);
    read.push((path.to_string(), t.clone()));
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWITTER: &str = "\
0,a:1,3,100,1,get,0
0,b:2,3,200,1,set,0
0,a:1,3,100,2,gets,0
1,c,x:3,5,0,3,get,0
1,b:2,3,50,1,incr,0
2,a:1,3,120,1,delete,0
";

    #[test]
    fn twitter_traces_map_keys_to_records_and_spread_each_second() {
        let t = Trace::parse(TWITTER.as_bytes(), TraceFormat::Twitter).unwrap();
        let kinds: Vec<OpKind> = t.ops.iter().map(|o| o.kind).collect();
        assert_eq!(
            kinds,
            [
                OpKind::Get,
                OpKind::Set,
                OpKind::Get,
                OpKind::Get,
                OpKind::Delete
            ]
        );
        let records: Vec<u64> = t.ops.iter().map(|o| o.record).collect();
        assert_eq!(records, [0, 1, 0, 2, 0], "the same key is the same record");
        let at: Vec<u64> = t.ops.iter().map(|o| o.at_ns / 1_000_000).collect();
        assert_eq!(
            at,
            [0, 333, 666, 1000, 2000],
            "ms: a second's operations spread over it"
        );
        assert_eq!(t.skipped.get("incr"), Some(&1));
        // A key with a comma in it; a read-only key's size is the mean.
        assert_eq!(t.sizes, [100, 200, 150]);
        let s = t.summary();
        assert_eq!(
            (s.ops, s.records, s.per_second.clone()),
            (5, 3, vec![3, 1, 1])
        );
    }

    /// A trace's numbers are not trusted: each bound is named with its
    /// line, before anything is allocated from it.
    #[test]
    fn hostile_traces_are_refused_with_the_bound_they_pass() {
        let twitter = |text: &str| Trace::parse(text.as_bytes(), TraceFormat::Twitter);
        let jsonl = |text: &str| Trace::parse(text.as_bytes(), TraceFormat::Jsonl);
        for t in ["NaN", "inf", "-inf"] {
            let e = twitter(&format!("0,a,1,10,1,get,0\n{t},b,1,10,1,get,0\n")).unwrap_err();
            assert!(
                e.starts_with("line 2:") && e.contains("not a number"),
                "{t}: {e}"
            );
        }
        let e = jsonl("{\"t\": 0, \"op\": \"get\", \"key\": \"a\"}\n{\"t\": 1e300, \"op\": \"get\", \"key\": \"a\"}\n")
            .unwrap_err();
        assert!(
            e.contains("from 0 s to 1e300 s, a span past bakeoff's limit of 366 days"),
            "{e}"
        );
        let e = twitter("0,a,1,4000000000,1,set,0\n").unwrap_err();
        assert!(
            e.starts_with("line 1:") && e.contains("4000000000 bytes") && e.contains("64 MiB"),
            "{e}"
        );
        let long = format!("0,{},1,10,1,get,0\n", "k".repeat(MAX_LINE_BYTES));
        let e = twitter(&long).unwrap_err();
        assert!(e.contains("line 1 is longer than 64 KiB"), "{e}");
        // No line breaks at all: refused after the bound, not read whole.
        let endless = std::io::BufReader::new(std::io::repeat(b'x'));
        let e = Trace::parse(endless, TraceFormat::Jsonl).unwrap_err();
        assert!(e.contains("longer than 64 KiB"), "{e}");
        let e = Trace::read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        // A long trace's rate table is counted in buckets, never a row
        // per second of its span.
        let t = jsonl("{\"t\": 0, \"op\": \"get\", \"key\": \"a\"}\n{\"t\": 31536000, \"op\": \"get\", \"key\": \"a\"}\n")
            .unwrap();
        let s = t.summary();
        assert!(
            s.per_second.len() <= MAX_RATE_BUCKETS,
            "{}",
            s.per_second.len()
        );
        assert_eq!(s.per_second.iter().sum::<u64>(), 2);
        assert_eq!(s.bucket_s, 8761, "a year and a second in 3,600 buckets");
    }

    #[test]
    fn monitor_lines_become_operations_with_keys_hashed() {
        let ops = |l: &str| monitor_line(l, true).unwrap().unwrap();
        let set = ops(r#"+1700000000.250000 [0 127.0.0.1:5000] "SET" "user:\x01\"q" "hello""#);
        assert_eq!(set.len(), 1);
        assert_eq!(
            (set[0].t, set[0].op, set[0].size),
            (1_700_000_000.25, "set", 5)
        );
        assert_eq!(set[0].key, "user:\u{1}\"q");
        let m = ops(r#"1.5 [0 unix:/tmp/r.sock] "MSET" "a" "xy" "b" "xyz""#);
        assert_eq!(m.iter().map(|o| o.size).collect::<Vec<_>>(), [2, 3]);
        let d = ops(r#"2 [0 lua] "del" "a" "b""#);
        assert!(d.iter().all(|o| o.op == "delete"));
        let hashed = monitor_line(r#"3 [0 h:1] "GET" "secret""#, false)
            .unwrap()
            .unwrap();
        assert!(hashed[0].key.starts_with('k') && !hashed[0].key.contains("secret"));
        assert_eq!(
            monitor_line(r#"4 [0 h:1] "INFO""#, false).unwrap(),
            Err("info".into())
        );
        assert!(monitor_line("+OK", false).is_none());
        // What capture writes, the replay reads.
        let line = serde_json::to_string(&set[0]).unwrap();
        let t = Trace::parse(line.as_bytes(), TraceFormat::Jsonl).unwrap();
        assert_eq!(t.ops[0].kind, OpKind::Set);
    }

    #[test]
    fn jsonl_traces_keep_their_times_and_bad_lines_are_named() {
        let text = "{\"t\": 10.5, \"op\": \"set\", \"key\": \"k\", \"size\": 10}\n\
                    {\"t\": 10.0, \"op\": \"get\", \"key\": \"k\", \"size\": 0}\n";
        let t = Trace::parse(text.as_bytes(), TraceFormat::Jsonl).unwrap();
        assert_eq!(t.ops[0].kind, OpKind::Get, "sorted by time");
        assert_eq!(t.ops[1].at_ns, 500_000_000);
        assert_eq!(t.ops[1].size, HEADER_LEN as u32, "at least a header");
        let e = Trace::parse("{\"t\": 1}\n".as_bytes(), TraceFormat::Jsonl).unwrap_err();
        assert!(
            e.starts_with("line 1:") && e.contains("missing field"),
            "{e}"
        );
        let e = Trace::parse("1,k,1,1\n".as_bytes(), TraceFormat::Twitter).unwrap_err();
        assert!(e.contains("7 (timestamp"), "{e}");
        let e = Trace::parse("".as_bytes(), TraceFormat::Jsonl).unwrap_err();
        assert!(e.contains("no operations"), "{e}");
    }
}
