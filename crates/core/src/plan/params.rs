//! Every workload parameter, declared once: its preset key, its flag, its
//! help and default, whether it is a sweep axis, and how its text is parsed
//! and checked. The flags of `bakeoff run`, the keys of `[workload]` and
//! `[sweep]`, sweep axes, the dry run and the checks of [`super::Plan::build`]
//! are all read from [`PARAMS`].

use serde::Serialize;
use serde_json::Value;

use super::{Fault, IoBackend, Link, Mix, Provoke, ReadFrom, RequestMode, Topology, Workload};
use crate::profile::{RecordKind, SearchKind};
use crate::units::{fmt_bytes, parse_bytes, parse_count, parse_duration};
use crate::value::{ValueContent, HEADER_LEN};
use crate::workload::{KeyDistribution, ValueSizes};

/// One workload parameter.
pub struct Param {
    /// Key in a preset's `[workload]` (and `[sweep]`) table; also the
    /// parameter's name in sweep labels and the dry run.
    pub key: &'static str,
    /// Long flag without its dashes (`key-distribution`, or `no-load` for a
    /// switch).
    pub flag: &'static str,
    /// One-letter flag, if any.
    pub short: Option<char>,
    /// What the flag's value is, in its help (`N`, `TIME`, `BYTES`).
    pub value_name: &'static str,
    /// Help text, without the default (which is added from `default`).
    pub help: &'static str,
    /// The default as a user would write it; `None`: unset.
    pub default: Option<&'static str>,
    /// For a flag that takes no value: the value it stands for.
    pub switch: Option<&'static str>,
    /// If it is a sweep axis: its flag and help.
    pub sweep: Option<SweepFlag>,
    /// A parameter this one replaces when given by a flag, and cannot be
    /// given together with in one source (`duration` and `ops`).
    pub excludes: &'static [&'static str],
    /// The field of [`Workload`] it sets (the result file's spelling).
    pub field: &'static str,
    /// Parses and checks one value, giving it as the field holds it.
    pub parse: fn(&str) -> Result<Value, String>,
    /// The field's value in `w`, as a user would write it.
    pub show: fn(&Workload) -> String,
}

/// The flag that makes a parameter a sweep axis.
pub struct SweepFlag {
    /// Long flag without its dashes (`sweep-clients`).
    pub flag: &'static str,
    /// Help text.
    pub help: &'static str,
    /// What separates the values of its list on the command line (`,`,
    /// or `;` for values that hold commas themselves).
    pub separator: char,
}

impl Param {
    /// `--pipeline`, or `--no-load` for a switch.
    pub fn flag_name(&self) -> String {
        format!("--{}", self.flag)
    }

    /// The help of its flag, with its default.
    pub fn flag_help(&self) -> String {
        match (self.default, self.switch) {
            (Some(d), None) => format!("{} [default: {d}]", self.help),
            _ => self.help.to_string(),
        }
    }

    /// Sets the parameter's field of `w` to `value` (as `parse` gives it).
    pub fn put(&self, w: &mut Workload, value: &Value) {
        let mut fields = match serde_json::to_value(&*w) {
            Ok(Value::Object(fields)) => fields,
            _ => unreachable!("a workload serialises to an object"),
        };
        insert(&mut fields, self.field, value);
        *w = serde_json::from_value(Value::Object(fields))
            .expect("a parsed value has its field's type");
    }
}

/// A parser that sets more fields than its own returns them all in an
/// object under this key: `--warmup auto` sets the warm-up's length and
/// that it is found as the run goes.
pub const SEVERAL: &str = "$fields";

/// Puts a parsed `value` in `field` of a workload's `fields` (or, under
/// [`SEVERAL`], in each field it names).
fn insert(fields: &mut serde_json::Map<String, Value>, field: &str, value: &Value) {
    match value.get(SEVERAL).and_then(Value::as_object) {
        Some(several) => fields.extend(several.clone()),
        None => {
            fields.insert(field.to_string(), value.clone());
        }
    }
}

/// The parameter with preset key `key`.
pub fn param(key: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.key == key)
}

/// The keys of a preset's `[fault]` table and the parameters they set:
/// what is done to the server, and whether the writes are checked.
pub const FAULT_KEYS: [(&str, &str); 2] = [("inject", "fault"), ("durability", "durability")];

/// The keys of a preset's `[topology]` table and the parameters they set.
pub const TOPOLOGY_KEYS: [(&str, &str); 2] = [("kind", "topology"), ("read_from", "read_from")];

/// The keys of a preset's `[link]` table: the parts of `--link`'s value
/// (`[link] rtt = "150us"` is `--link rtt=150us`).
pub const LINK_KEYS: [&str; 2] = ["rtt", "bandwidth"];

/// The workload every parameter's default gives.
pub fn defaults() -> Workload {
    let mut fields = serde_json::Map::new();
    for p in PARAMS {
        let value = match p.default {
            Some(d) => (p.parse)(d).expect("a declared default parses"),
            None => Value::Null,
        };
        insert(&mut fields, p.field, &value);
    }
    fields.insert("load_from".into(), Value::from(0));
    serde_json::from_value(Value::Object(fields)).expect("the defaults make a workload")
}

fn json<T: Serialize>(v: Result<T, String>) -> Result<Value, String> {
    v.map(|v| serde_json::to_value(v).expect("parameter values serialise"))
}

/// A count of at least 1 and at most `most` (`why` says what the bound
/// protects).
fn positive(text: &str, what: &str, most: u32, why: &str) -> Result<u32, String> {
    let v = parse_count(text)?;
    if v == 0 {
        return Err(format!("0 {what} cannot run; use at least 1"));
    }
    if v > u64::from(most) {
        return Err(format!(
            "{v} {what} is more than bakeoff takes ({most}): {why}"
        ));
    }
    Ok(v as u32)
}

/// Most clients: each is a socket with its buffers and histograms, and
/// beyond this many one machine's ports and memory run out long before a
/// server is measured.
pub const MAX_CLIENTS: u32 = 100_000;
/// Most worker threads.
pub const MAX_THREADS: u32 = 1024;
/// Most requests in flight per connection.
pub const MAX_PIPELINE: u32 = 4096;

/// `true`/`on` or `false`/`off`.
fn switch(text: &str) -> Result<bool, String> {
    match text.trim() {
        "true" | "on" | "yes" => Ok(true),
        "false" | "off" | "no" => Ok(false),
        o => Err(format!("`{o}` is not on or off")),
    }
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

fn seconds(d: f64) -> String {
    format!("{d}s")
}

/// Names as the result file spells them (`zipfian`, `random`, `kv`).
fn word<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn value_sizes(text: &str) -> Result<ValueSizes, String> {
    let v = ValueSizes::parse(text)?;
    if v.min() < HEADER_LEN {
        return Err(format!(
            "values of {} B are smaller than the {HEADER_LEN}-byte header that lets bakeoff verify every read; use at least {HEADER_LEN}",
            v.min()
        ));
    }
    if v.max() > 64 << 20 {
        return Err(format!(
            "values of {} B are larger than the 64 MiB bakeoff supports",
            v.max()
        ));
    }
    if matches!(&v, ValueSizes::List(l) if l.is_empty()) {
        return Err("the list of value sizes is empty".into());
    }
    Ok(v)
}

fn server_cpus(text: &str) -> Result<Option<u32>, String> {
    let text = text.trim();
    if text == "all" {
        return Ok(None);
    }
    let n: u32 = text.parse().map_err(|_| {
        format!("`{text}` is not a number of CPUs; give one such as 1 or 2, or all")
    })?;
    // Against this machine's CPUs in the plan, where a preset's sweep may
    // leave a point out.
    match n {
        0 => Err("0 CPUs cannot run a server; give at least 1, or all".into()),
        n => Ok(Some(n)),
    }
}

fn memory_cap(text: &str) -> Result<Option<u64>, String> {
    if text.trim() == "none" {
        return Ok(None);
    }
    let b = parse_bytes(text)?;
    if b < 32 << 20 {
        return Err(format!(
            "a cap of {b} B leaves no room for the target; use at least 32mb, or none"
        ));
    }
    Ok(Some(b))
}

/// `none`, or a link (see [`Link::parse`]).
fn link(text: &str) -> Result<Option<Link>, String> {
    match text.trim() {
        "none" | "loopback" => Ok(None),
        t => Link::parse(t).map(Some),
    }
}

fn duration(text: &str, zero: &'static str) -> Result<f64, String> {
    let d = parse_duration(text)?;
    if d.is_zero() && !zero.is_empty() {
        return Err(zero.into());
    }
    Ok(d.as_secs_f64())
}

/// Every workload parameter, in the order of `run --help`. Sweep axes are
/// nested in this order too (the first outermost).
pub static PARAMS: &[Param] = &[
    Param {
        key: "clients",
        flag: "clients",
        short: Some('c'),
        value_name: "N",
        help: "Connections in all, spread over the threads.",
        default: Some("50"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-clients",
            help: "Sweep over client counts, e.g. `1,10,100`.",
            separator: ',',
        }),
        excludes: &[],
        field: "clients",
        parse: |s| {
            json(positive(
                s,
                "clients",
                MAX_CLIENTS,
                "each is a socket with its own buffers; run more from several machines",
            ))
        },
        show: |w| w.clients.to_string(),
    },
    Param {
        key: "threads",
        flag: "threads",
        short: None,
        value_name: "N",
        help: "Client worker threads, each an event loop over its connections (at most one per client).",
        default: Some("1"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "threads",
        parse: |s| {
            json(positive(
                s,
                "threads",
                MAX_THREADS,
                "a thread per core is the most that helps",
            ))
        },
        show: |w| w.threads.to_string(),
    },
    Param {
        key: "pipeline",
        flag: "pipeline",
        short: Some('P'),
        value_name: "N",
        help: "Requests in flight per connection (pipeline depth).",
        default: Some("1"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "pipeline",
        parse: |s| {
            json(positive(
                s,
                "pipeline depth",
                MAX_PIPELINE,
                "deeper pipelines only queue in the server's buffers",
            ))
        },
        show: |w| w.pipeline.to_string(),
    },
    Param {
        key: "duration",
        flag: "duration",
        short: Some('d'),
        value_name: "TIME",
        help: "Length of the measured phase: `10s`, `2m`, `500ms`.",
        default: Some("10s"),
        switch: None,
        sweep: None,
        excludes: &["ops", "ops_per_client"],
        field: "duration_s",
        parse: |s| json(duration(s, "a duration of 0 measures nothing; use e.g. 10s")),
        show: |w| w.duration_s.map(seconds).unwrap_or_else(|| "none".into()),
    },
    Param {
        key: "ops",
        flag: "ops",
        short: Some('n'),
        value_name: "COUNT",
        help: "Measure this many operations (all clients together) instead of a duration.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &["duration", "ops_per_client"],
        field: "ops",
        parse: |s| {
            json(parse_count(s).and_then(|n| match n {
                0 => Err("0 operations measures nothing; use at least 1".into()),
                n => Ok(n),
            }))
        },
        show: |w| w.ops.map(|n| n.to_string()).unwrap_or_else(|| "none".into()),
    },
    Param {
        key: "ops_per_client",
        flag: "ops-per-client",
        short: None,
        value_name: "COUNT",
        help: "Measure this many operations on each client instead of a duration (001-concurrency-errors: 500 clients × 100 operations); the run ends when the last client is done.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &["duration", "ops"],
        field: "ops_per_client",
        parse: |s| {
            json(parse_count(s).and_then(|n| match n {
                0 => Err("0 operations per client measures nothing; use at least 1".into()),
                n => Ok(n),
            }))
        },
        show: |w| {
            w.ops_per_client
                .map(|n| n.to_string())
                .unwrap_or_else(|| "none".into())
        },
    },
    Param {
        key: "warmup",
        flag: "warmup",
        short: None,
        value_name: "TIME",
        help: "Unmeasured warm-up before the measured phase: `auto` ends it once throughput and p99 stop trending (a Theil–Sen slope within ±1 %/s over 5 s), at most the measured phase's length (2 s to 30 s), and the run records where it ended; `2s` for a fixed one; `0` for none. Default `auto`, but 2s for a run counted in operations, one with a --fault, or one measured for under 5 s.",
        default: Some("auto"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "warmup_s",
        parse: |s| {
            let (warmup_s, auto) = match s.trim() {
                "auto" => (0.0, true),
                text => (duration(text, "")?, false),
            };
            Ok(serde_json::json!({ SEVERAL: { "warmup_s": warmup_s, "warmup_auto": auto } }))
        },
        show: |w| {
            if w.warmup_auto {
                "auto".into()
            } else {
                seconds(w.warmup_s)
            }
        },
    },
    Param {
        key: "rate",
        flag: "rate",
        short: None,
        value_name: "OPS/S",
        help: "Target rate in operations per second (open loop: latency counts from each request's intended start). Unset or 0: closed loop.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &[],
        field: "rate",
        parse: |s| {
            let v: f64 = s
                .trim()
                .trim_end_matches("/s")
                .parse()
                .map_err(|_| format!("`{s}` is not a rate in ops/s"))?;
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("`{s}` is not a rate in ops/s"));
            }
            // A request a nanosecond is more than the clock can schedule.
            if v > 1e9 {
                return Err(format!(
                    "{s} ops/s is more than a request a nanosecond, the most an open loop can schedule; leave --rate out for a closed loop at full speed"
                ));
            }
            json(Ok((v > 0.0).then_some(v)))
        },
        show: |w| {
            w.rate
                .map(|r| format!("{r}/s"))
                .unwrap_or_else(|| "closed-loop".into())
        },
    },
    Param {
        key: "timeout",
        flag: "timeout",
        short: None,
        value_name: "TIME",
        help: "A request without a reply after this long fails as a timeout.",
        default: Some("5s"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "timeout_s",
        parse: |s| json(duration(s, "a timeout of 0 fails every request; use e.g. 5s")),
        show: |w| seconds(w.timeout_s),
    },
    Param {
        key: "value_size",
        flag: "value-size",
        short: None,
        value_name: "BYTES",
        help: "Value size in bytes, header included (min 24): `100`, a range `100-1000`, or a list `100,1000,10000`. Suffixes k, m.",
        default: Some("100"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-value-size",
            help: "Sweep over value sizes, e.g. `1k,10k,100k`.",
            separator: ',',
        }),
        excludes: &[],
        field: "value_size",
        parse: |s| json(value_sizes(s)),
        show: |w| w.value_size.to_string(),
    },
    Param {
        key: "fields",
        flag: "fields",
        short: None,
        value_name: "N",
        help: "Fields per record (YCSB's fieldcount; its workloads: 10): each value is N fields of --value-size / N bytes, each verified on its own. A read reads every field; a set, an insert and the load write all of them; an update and a read-modify-write write one (the record read, that field replaced, the record written back).",
        default: Some("1"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "fields",
        parse: |s| {
            json(positive(
                s,
                "fields per record",
                crate::value::MAX_FIELDS,
                "a field's index rides in one byte of its header",
            ))
        },
        show: |w| w.fields.to_string(),
    },
    Param {
        key: "value_content",
        flag: "value-content",
        short: None,
        value_name: "KIND",
        help: "Value content: random (incompressible) or compressible.",
        default: Some("random"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-value-content",
            help: "Sweep over value contents: `random,compressible`.",
            separator: ',',
        }),
        excludes: &[],
        field: "value_content",
        parse: |s| json(s.parse::<ValueContent>()),
        show: |w| word(&w.value_content),
    },
    Param {
        key: "encoding",
        flag: "encoding",
        short: None,
        value_name: "FORM",
        help: "How the client encodes each value before storing it: raw (the generated bytes), php-serialize (an array of 50 integers as PHP's serialize() writes it, about 700 B) or joined (the same array joined with commas, about 350 B). An encoding sets the value's size; what encoding and decoding cost the client is measured apart and reported.",
        default: Some("raw"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-encoding",
            help: "Sweep over encodings: `php-serialize,joined`.",
            separator: ',',
        }),
        excludes: &[],
        field: "encoding",
        parse: |s| json(s.parse::<crate::encoding::Encoding>()),
        show: |w| w.encoding.name().to_string(),
    },
    Param {
        key: "compression",
        flag: "compression",
        short: None,
        value_name: "CODEC",
        help: "How the client compresses each value before storing it: none, zlib (as PHP's memcache extension does) or zstd. Reads are decompressed and checked; the client's cost is measured apart.",
        default: Some("none"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-compression",
            help: "Sweep over compressions: `none,zlib,zstd`.",
            separator: ',',
        }),
        excludes: &[],
        field: "compression",
        parse: |s| json(s.parse::<crate::encoding::Compression>()),
        show: |w| w.compression.name().to_string(),
    },
    Param {
        key: "mix",
        flag: "mix",
        short: None,
        value_name: "G:S:U:D",
        help: "Operation mix as weights get:set:update:delete, e.g. `90:10` or `95:0:5`.",
        default: Some("90:10"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-mix",
            help: "Sweep over mixes, e.g. `100:0,95:5,50:50`.",
            separator: ',',
        }),
        excludes: &[],
        field: "mix",
        parse: |s| json(Mix::parse(s)),
        show: |w| w.mix.to_string(),
    },
    Param {
        key: "records",
        flag: "records",
        short: None,
        value_name: "COUNT",
        help: "Records loaded before measuring (keys bk:000000000000 …). Suffixes k, m.",
        default: Some("100000"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-records",
            help: "Sweep over record counts, e.g. `100k,1m`.",
            separator: ',',
        }),
        excludes: &[],
        field: "records",
        parse: |s| {
            json(parse_count(s).and_then(|v| match v {
                0 => Err("0 records leaves nothing to read; use at least 1".into()),
                v if v >= 1_000_000_000_000 => {
                    Err("at most 999999999999 records (keys have 12 digits)".into())
                }
                v => Ok(v),
            }))
        },
        show: |w| w.records.to_string(),
    },
    Param {
        key: "key_distribution",
        flag: "key-distribution",
        short: None,
        value_name: "DIST",
        help: "Key distribution of the measure phase: uniform, zipfian (YCSB's scrambled zipfian), sequential, latest (the newest records hottest, YCSB's D) or hotspot[:DATA:OPS] (DATA of the records take OPS of the operations; hotspot alone is 0.2:0.8).",
        default: Some("uniform"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "key_distribution",
        parse: |s| json(s.parse::<KeyDistribution>()),
        show: |w| w.key_distribution.to_string(),
    },
    Param {
        key: "key_naming",
        flag: "key-naming",
        short: None,
        value_name: "NAMING",
        help: "How records are named: bakeoff (bk:000000000042: fixed width, in the ids' order) or ycsb (user and the decimal of YCSB's FNV-1a hash of the id, as YCSB's CoreWorkload names them: 22 or 23 bytes, scans in the hashes' order).",
        default: Some("bakeoff"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "key_naming",
        parse: |s| json(s.parse::<crate::keys::KeyNaming>()),
        show: |w| w.key_naming.to_string(),
    },
    Param {
        key: "scan_length",
        flag: "scan-length",
        short: None,
        value_name: "N",
        help: "Most records a scan reads: each scan's length is uniform in 1..=N (YCSB's maxscanlength; workload E uses 100).",
        default: Some("100"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "scan_length",
        parse: |s| {
            json(positive(
                s,
                "records per scan",
                100_000,
                "a scan's records are held in memory while they are checked",
            ))
        },
        show: |w| w.scan_length.to_string(),
    },
    Param {
        key: "replay",
        flag: "replay",
        short: None,
        value_name: "FILE",
        help: "Replay a captured trace instead of a mix: each operation at its own time (open loop), on the record its key maps to, with its own value size, verified; Twitter's cache-trace CSV (.csv) or bakeoff's JSONL (what `bakeoff capture` writes). The trace sets the records, the operations, the rate, the length and the value sizes: --records, --mix, --rate, --duration, --ops and --value-size are refused beside it. Limits: 200 million operations, a span of a year, a replay of a day at its speed, values of 64 MiB, lines of 64 KiB.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &[],
        field: "replay",
        parse: |s| {
            let path = s.trim();
            crate::replay::load(path)?;
            json(Ok(Some(path.to_string())))
        },
        show: |w| w.replay.clone().unwrap_or_else(|| "none".into()),
    },
    Param {
        key: "replay_speed",
        flag: "replay-speed",
        short: None,
        value_name: "FACTOR",
        help: "Replay the trace this many times faster than it was captured (0.5: half as fast).",
        default: Some("1"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-replay-speed",
            help: "Sweep over replay speeds, e.g. `1,10`.",
            separator: ',',
        }),
        excludes: &[],
        field: "replay_speed",
        parse: |s| {
            let v: f64 = s
                .trim()
                .trim_end_matches(['x', '×'])
                .parse()
                .map_err(|_| format!("`{s}` is not a factor (e.g. 1, 10 or 0.5)"))?;
            if !(v > 0.0 && v <= 1e6) {
                return Err(format!("a replay speed of {s} cannot run; give a factor above 0 (e.g. 1 or 10)"));
            }
            json(Ok(v))
        },
        show: |w| format!("{}x", w.replay_speed),
    },
    Param {
        key: "load",
        flag: "no-load",
        short: None,
        value_name: "",
        help: "Skip the load phase (measure against whatever the target holds).",
        default: Some("true"),
        switch: Some("false"),
        sweep: None,
        excludes: &[],
        field: "load",
        parse: |s| json(switch(s)),
        show: |w| w.load.to_string(),
    },
    Param {
        key: "grow",
        flag: "grow",
        short: None,
        value_name: "",
        help: "Growth experiment: --sweep-records gives checkpoints (e.g. 1m,2m,5m); each target stays up and loads only the records added since the previous checkpoint, then measures.",
        default: Some("false"),
        switch: Some("true"),
        sweep: None,
        excludes: &[],
        field: "grow",
        parse: |s| json(switch(s)),
        show: |w| w.grow.to_string(),
    },
    Param {
        key: "memory_cap",
        flag: "memory-cap",
        short: None,
        value_name: "BYTES",
        help: "Cap the target's memory (RSS and page cache together), e.g. `256mb`: a managed server, or bakeoff itself for an in-process engine, runs in a cgroup with this limit (cgroup v1 memory.limit_in_bytes or v2 memory.max; needs root). For data sets larger than memory.",
        default: None,
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-memory-cap",
            help: "Sweep over memory caps, e.g. `256mb,none` (see --memory-cap).",
            separator: ',',
        }),
        excludes: &[],
        field: "memory_cap",
        parse: |s| json(memory_cap(s)),
        show: |w| {
            w.memory_cap
                .map(|b| fmt_bytes(b as f64))
                .unwrap_or_else(|| "none".into())
        },
    },
    Param {
        key: "server_cpus",
        flag: "server-cpus",
        short: None,
        value_name: "N",
        help: "Run the target on N of the machine's CPUs (the last N bakeoff may use): every thread of a managed server's processes, and every process and thread they start, has its CPU affinity set to them (a cgroup cpuset does the same; affinity needs no controller); for an in-process engine, bakeoff's own threads, where the engine runs. `all` for every CPU. `--sweep-server-cpus 1,2` makes the machine an axis: a multi-threaded server scales with its CPUs, Redis's one thread does not.",
        default: None,
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-server-cpus",
            help: "Sweep over the target's CPUs, e.g. `1,2` (see --server-cpus).",
            separator: ',',
        }),
        excludes: &[],
        field: "server_cpus",
        parse: |s| json(server_cpus(s)),
        show: |w| {
            w.server_cpus
                .map(|n| n.to_string())
                .unwrap_or_else(|| "all".into())
        },
    },
    Param {
        key: "io",
        flag: "io",
        short: None,
        value_name: "BACKEND",
        help: "How bakeoff's network loop moves bytes: auto (io_uring where the kernel allows it, else epoll), epoll or io_uring.",
        default: Some("auto"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "io",
        parse: |s| json(s.parse::<IoBackend>()),
        show: |w| word(&w.io),
    },
    Param {
        key: "record",
        flag: "record",
        short: None,
        value_name: "KIND",
        help: "Records stored: kv (a value per key) or profile (the table of 000-search: name, sex, province, city, payload).",
        default: Some("kv"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "record",
        parse: |s| json(s.parse::<RecordKind>()),
        show: |w| word(&w.record),
    },
    Param {
        key: "search",
        flag: "search",
        short: None,
        value_name: "SEARCH",
        help: "Which search `search` operations make on profile records: name (substring, no index helps), sex, location (province + city) or all.",
        default: Some("name"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-search",
            help: "Sweep over searches, e.g. `name,sex,location,all`.",
            separator: ',',
        }),
        excludes: &[],
        field: "search",
        parse: |s| json(s.parse::<SearchKind>()),
        show: |w| w.search.to_string(),
    },
    Param {
        key: "indexes",
        flag: "no-indexes",
        short: None,
        value_name: "",
        help: "Profile table without its indexes on sex and (province, city).",
        default: Some("true"),
        switch: Some("false"),
        sweep: Some(SweepFlag {
            flag: "sweep-indexes",
            help: "Sweep over indexes, e.g. `on,off`.",
            separator: ',',
        }),
        excludes: &[],
        field: "indexes",
        parse: |s| json(switch(s)),
        show: |w| on_off(w.indexes),
    },
    Param {
        key: "batch",
        flag: "batch",
        short: None,
        value_name: "N",
        help: "Records per insert while loading (multi-row INSERT on the SQL servers, insertMany on MongoDB).",
        default: Some("1"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "batch",
        parse: |s| {
            json(parse_count(s).and_then(|n| match n {
                0 => Err("a batch of 0 records inserts nothing; use 1 or more".into()),
                n if n > 100_000 => Err(format!(
                    "a batch of {n} records is too large; use at most 100000"
                )),
                n => Ok(n as u32),
            }))
        },
        show: |w| w.batch.to_string(),
    },
    Param {
        key: "request",
        flag: "request",
        short: None,
        value_name: "MODE",
        help: "What one request is: op (one operation on a kept connection), connect (a new connection per operation: connect, operate, close — many short-lived connections) or phases (MariaDB: connect, select db, set charset, UPDATE 10 rows, SELECT 10 rows, INSERT 1 row, close, each step timed). With connect and phases, the load before the run is done by at most 8 clients on kept connections, so that a crowd meant to overload the server is not refused while loading.",
        default: Some("op"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "request",
        parse: |s| json(s.parse::<RequestMode>()),
        show: |w| w.request.name().to_string(),
    },
    Param {
        key: "fault",
        flag: "fault",
        short: None,
        value_name: "KIND@TIME",
        help: "Inject a fault into each measured run of a server bakeoff started (an embedded engine then runs in a child process of its own, so that the fault hits the engine and not bakeoff): kill@T (SIGKILL to every process of the server, a crash), restart@T (a clean stop) or power-cut@T (a crash that also loses every byte not yet fsynced: the data directory sits on bakeoff's own FUSE layer, which holds such bytes in memory and drops them), then a start on the same data (after a restart or a power cut, from a cold page cache); T counts from the start of the warm-up. A window kill@5s..15s draws the moment from the seed, another each repeat. The run records when, how long until the server held its port again, and when throughput was back to 90 %. Preset: `inject` in a [fault] table.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &[],
        field: "fault",
        parse: |s| json(Fault::parse(s)),
        show: |w| w.fault.map(|f| f.to_string()).unwrap_or_else(|| "none".into()),
    },
    Param {
        key: "provoke",
        flag: "provoke",
        short: None,
        value_name: "WORK@TIME",
        help: "Ask the server for background work at a moment of each measured run, to see what it does to the tail: bgsave@T or aof-rewrite@T (Redis: BGSAVE, BGREWRITEAOF), checkpoint@T (PostgreSQL: CHECKPOINT); T counts from the start of the warm-up. The run's background work (bands on the timeline, the p99 inside and outside them) shows what followed.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &[],
        field: "provoke",
        parse: |s| json(Provoke::parse(s)),
        show: |w| w.provoke.map(|p| p.to_string()).unwrap_or_else(|| "none".into()),
    },
    Param {
        key: "server_signals",
        flag: "no-server-signals",
        short: None,
        value_name: "",
        help: "Do not read the server's own signals during the runs: its time per command (Redis INFO commandstats and LATENCY HISTOGRAM, pg_stat_statements) and its background work (Redis INFO every 100 ms, PostgreSQL's log, RocksDB's properties every 100 ms, memcached's stats). Only to measure what reading them costs: `--sweep-server-signals on,off` runs both.",
        default: Some("true"),
        switch: Some("false"),
        sweep: Some(SweepFlag {
            flag: "sweep-server-signals",
            help: "Sweep over reading the server's signals or not, e.g. `on,off` (what looking costs).",
            separator: ',',
        }),
        excludes: &[],
        field: "server_signals",
        parse: |s| json(switch(s)),
        show: |w| on_off(w.server_signals),
    },
    Param {
        key: "topology",
        flag: "topology",
        short: None,
        value_name: "SHAPE",
        help: "How many servers make each target: single, or shards:N (N managed memcached or Redis nodes; the client spreads keys over them with ketama consistent hashing as libmemcached does, and the run counts operations per node and checks each node's own counters). primary-replica (Redis: a managed primary and a replica made with replicaof; writes go to the primary, reads where --read-from says; the lag is sampled each second, and every read is checked for staleness against the writes acknowledged before it was sent, each record having one writer so that its versions are ordered). cluster:N (Redis: N managed masters made one Redis Cluster, the 16384 hash slots in equal ranges; the client sends each key to its slot's master on a connection per node, follows MOVED and ASK when slots move, and counts the redirections per node). Preset: kind in a [topology] table.",
        default: Some("single"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-topology",
            help: "Sweep over topologies, e.g. `single,shards:4` (see --topology).",
            separator: ',',
        }),
        excludes: &[],
        field: "topology",
        parse: |s| json(s.parse::<Topology>()),
        show: |w| w.topology.to_string(),
    },
    Param {
        key: "read_from",
        flag: "read-from",
        short: None,
        value_name: "NODE",
        help: "With --topology primary-replica: where reads go, primary or replica (writes always go to the primary). Preset: read_from in a [topology] table.",
        default: Some("primary"),
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-read-from",
            help: "Sweep over where reads go, e.g. `primary,replica` (see --read-from).",
            separator: ',',
        }),
        excludes: &[],
        field: "read_from",
        parse: |s| json(s.parse::<ReadFrom>()),
        show: |w| w.read_from.name().to_string(),
    },
    Param {
        key: "link",
        flag: "link",
        short: None,
        value_name: "rtt=TIME[,bandwidth=RATE]",
        help: "Put a network link between bakeoff's clients and each server: rtt=150us adds a round trip of 150 µs (75 µs each way), bandwidth=1gbit caps each direction. The link is a relay bakeoff runs on loopback that holds every byte for half the round trip in each direction (this kernel has no netem); its CPU is measured apart from the client's, and a run says when the relay was busier than 90 % (then the relay, not the link, set the pace). Network servers only; admin connections (counters, record counts) go direct. `none` for loopback. Preset: rtt and bandwidth in a [link] table.",
        default: None,
        switch: None,
        sweep: Some(SweepFlag {
            flag: "sweep-link",
            help: "Sweep over links, e.g. `none;rtt=150us` (see --link; values are separated by `;`).",
            separator: ';',
        }),
        excludes: &[],
        field: "link",
        parse: |s| json(link(s)),
        show: |w| w.link.map(|l| l.to_string()).unwrap_or_else(|| "none".into()),
    },
    Param {
        key: "durability",
        flag: "durability",
        short: None,
        value_name: "",
        help: "Durability check: every client is a writer of fresh ids of its own (writer, sequence), one write per acknowledgement (the mix and key distribution are not used); each write is logged as acknowledged, failed (a definite rejection) or indeterminate (reset, timeout). After the run, and after any --fault, every attempted id is read back and classified: lost (acknowledged, absent), recovered (not acknowledged, yet present), unexpected, corrupt; with the loss window and holes. Preset: `durability` in a [fault] table.",
        default: Some("false"),
        switch: Some("true"),
        sweep: None,
        excludes: &[],
        field: "durability",
        parse: |s| json(switch(s)),
        show: |w| on_off(w.durability),
    },
    Param {
        key: "trace",
        flag: "trace",
        short: None,
        value_name: "COUNT",
        help: "Keep the latency of single measured operations in time order, up to COUNT of them (every one while they fit, then every 2nd, 4th, …, evenly over the run), for the report's chart of each operation's latency (000-set, 000-get); 0 keeps none. At most 1000000.",
        default: Some("0"),
        switch: None,
        sweep: None,
        excludes: &[],
        field: "trace",
        parse: |s| {
            json(parse_count(s).and_then(|n| match n {
                n if n > MAX_TRACE => Err(format!(
                    "{n} traced operations would make a result file of hundreds of MB; keep at most {MAX_TRACE}"
                )),
                n => Ok(n as u32),
            }))
        },
        show: |w| w.trace.to_string(),
    },
    Param {
        key: "find_peak",
        flag: "find-peak",
        short: None,
        value_name: "",
        help: "At each point and target, find the peak: run with 1, 2, 4, … clients (threads up to --threads) until throughput rises by less than 5 % over the best twice running, or a step fails; the report gives the peak and the clients that reached it, and draws throughput against clients with the peak marked (004-peak).",
        default: Some("false"),
        switch: Some("true"),
        sweep: None,
        excludes: &["find_capacity"],
        field: "find_peak",
        parse: |s| json(switch(s)),
        show: |w| on_off(w.find_peak),
    },
    Param {
        key: "find_capacity",
        flag: "find-capacity",
        short: None,
        value_name: "pNN<=TIME",
        help: "At each point and target, find the capacity under a latency bound, e.g. `p99<=1ms`: a closed-loop probe finds the ceiling, then 6 open-loop steps bisect the rate (at --clients connections); a step holds when the percentile stays under the bound, nothing fails and the rate reached is within 5 % of the rate asked for. The report gives each target's capacity and draws the percentile against the offered load, every target on one chart.",
        default: None,
        switch: None,
        sweep: None,
        excludes: &["find_peak"],
        field: "find_capacity",
        parse: |s| {
            json(match s.trim() {
                "none" => Ok(None),
                t => crate::find::LatencyBound::parse(t).map(Some),
            })
        },
        show: |w| w.find_capacity.map(|b| b.to_string()).unwrap_or_else(|| "none".into()),
    },
];

/// Most operations a trace keeps.
const MAX_TRACE: u64 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parameter sets a field of its own, its default parses, and
    /// `show` of the parsed default reads back as the same value: the
    /// declaration is consistent with the workload it fills.
    #[test]
    fn each_declaration_round_trips_through_its_field() {
        let base = defaults();
        let mut fields = std::collections::BTreeSet::new();
        for p in PARAMS {
            assert!(fields.insert(p.field), "{} shares field {}", p.key, p.field);
            assert!(param(p.key).is_some());
            if let Some(d) = p.default {
                let shown = (p.show)(&base);
                let again = (p.parse)(&shown).unwrap_or_else(|e| panic!("{}: {e}", p.key));
                assert_eq!(again, (p.parse)(d).unwrap(), "{}", p.key);
            }
        }
        // Every field of the workload but the derived one is a parameter.
        let Value::Object(all) = serde_json::to_value(&base).unwrap() else {
            panic!()
        };
        for k in all.keys() {
            assert!(
                k == "load_from"
                    || k == "load_to"
                    || k == "warmup_auto"
                    || fields.contains(k.as_str()),
                "{k}"
            );
        }
    }

    #[test]
    fn put_sets_only_its_field() {
        let mut w = defaults();
        param("pipeline").unwrap().put(&mut w, &Value::from(16));
        assert_eq!((w.pipeline, w.clients), (16, 50));
        let cap = (param("memory_cap").unwrap().parse)("256mb").unwrap();
        param("memory_cap").unwrap().put(&mut w, &cap);
        assert_eq!(w.memory_cap, Some(256 << 20));
    }
}
