//! The validated workload of one run, and the value types only it uses.

use serde::{Deserialize, Serialize};

use crate::value::{ValueContent, HEADER_LEN};
use crate::workload::{KeyDistribution, OpKind, ValueSizes, OP_KINDS};

/// How the network loop moves bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IoBackend {
    /// io_uring where the kernel allows it, else epoll (the result says which).
    #[default]
    Auto,
    /// epoll.
    Epoll,
    /// io_uring (falls back to epoll, and says so, where unavailable).
    IoUring,
}

impl std::str::FromStr for IoBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "auto" => Ok(Self::Auto),
            "epoll" => Ok(Self::Epoll),
            "io_uring" | "iouring" | "uring" => Ok(Self::IoUring),
            other => Err(format!(
                "unknown I/O backend `{other}`; use auto, epoll or io_uring"
            )),
        }
    }
}

/// Operation weights `get:set:update:delete`, and the kinds after them
/// (`search`, `insert`, `scan`, `read-modify-write`) by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mix {
    /// Weights indexed like [`OpKind`] (a result file written before the
    /// later kinds existed holds fewer: the rest are 0).
    #[serde(deserialize_with = "weights_of_any_length")]
    pub weights: [u32; OP_KINDS],
}

/// Reads up to [`OP_KINDS`] weights; the kinds not given weigh 0.
fn weights_of_any_length<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<[u32; OP_KINDS], D::Error> {
    let v: Vec<u32> = Vec::deserialize(d)?;
    if v.len() > OP_KINDS {
        return Err(serde::de::Error::custom(format!(
            "{} weights; there are {OP_KINDS} operation kinds",
            v.len()
        )));
    }
    let mut weights = [0; OP_KINDS];
    weights[..v.len()].copy_from_slice(&v);
    Ok(weights)
}

/// The operations a mix names, for its errors.
const MIX_NAMES: &str = "get, set, update, delete, search, insert, scan or read-modify-write (rmw)";

impl Mix {
    /// Parses `90:10`, `95:5:0:0`, `0:0:0:0:1`, or `get=90,set=10`
    /// (every kind by name: `get=95,insert=5`, `scan=95,insert=5`,
    /// `get=50,rmw=50`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut weights = [0u32; OP_KINDS];
        let t = text.trim();
        if t.contains('=') {
            for part in t.split(',') {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| format!("`{part}` is not name=weight"))?;
                let kind = OpKind::named(k)
                    .ok_or_else(|| format!("unknown operation `{}`; use {MIX_NAMES}", k.trim()))?;
                weights[kind as usize] = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("weight `{v}` is not a whole number"))?;
            }
        } else {
            let parts: Vec<&str> = t.split(':').collect();
            if parts.len() > 5 {
                return Err(format!(
                    "`{text}` has {} weights; the order is get:set:update:delete[:search], and the other kinds go by name (get=95,insert=5)",
                    parts.len()
                ));
            }
            for (i, p) in parts.iter().enumerate() {
                weights[i] = p
                    .trim()
                    .parse()
                    .map_err(|_| format!("weight `{p}` in `{text}` is not a whole number (order get:set:update:delete)"))?;
            }
        }
        if weights.iter().map(|&w| w as u64).sum::<u64>() == 0 {
            return Err(format!(
                "mix `{text}` sums to 0; give at least one operation a weight, e.g. 90:10"
            ));
        }
        Ok(Self { weights })
    }

    /// Operation kinds with a non-zero weight.
    pub fn kinds(&self) -> impl Iterator<Item = OpKind> + '_ {
        OpKind::ALL
            .into_iter()
            .filter(|k| self.weights[*k as usize] > 0)
    }

    /// Whether `kind` has a non-zero weight.
    pub fn has(&self, kind: OpKind) -> bool {
        self.weights[kind as usize] > 0
    }

    /// `kind`'s share of the operations.
    pub fn share(&self, kind: OpKind) -> f64 {
        let total: u64 = self.weights.iter().map(|&w| u64::from(w)).sum();
        f64::from(self.weights[kind as usize]) / total.max(1) as f64
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = self.weights;
        if w[OpKind::Insert as usize..].iter().any(|&x| x > 0) {
            // The later kinds have no place in the colon form: by name.
            let named: Vec<String> = self
                .kinds()
                .map(|k| format!("{}={}", k.name(), w[k as usize]))
                .collect();
            return f.write_str(&named.join(","));
        }
        write!(f, "{}:{}:{}:{}", w[0], w[1], w[2], w[3])?;
        if w[4] > 0 {
            write!(f, ":{}", w[4])?;
        }
        Ok(())
    }
}

/// The validated workload of one run.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Workload {
    /// Records in the key space (ids `0..records`).
    pub records: u64,
    /// Key distribution in the measure phase.
    #[schemars(with = "String")]
    pub key_distribution: KeyDistribution,
    /// Value sizes, bytes (header included).
    pub value_size: ValueSizes,
    /// Fields per record (YCSB's `fieldcount`): each record's value is
    /// this many fields of equal length, each verified on its own.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub fields: u32,
    /// Payload content.
    pub value_content: ValueContent,
    /// How the client encodes each value (001-serialization-compression).
    #[serde(default)]
    pub encoding: crate::encoding::Encoding,
    /// How the client compresses each encoded value.
    #[serde(default)]
    pub compression: crate::encoding::Compression,
    /// Operation mix.
    pub mix: Mix,
    /// Connections in all.
    pub clients: u32,
    /// Worker threads the connections are spread over.
    pub threads: u32,
    /// Requests in flight per connection.
    pub pipeline: u32,
    /// Measure phase length in seconds, when timed.
    pub duration_s: Option<f64>,
    /// Operations to measure (all clients together), when counted.
    pub ops: Option<u64>,
    /// Operations each client measures, when counted per client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_per_client: Option<u64>,
    /// Warm-up length in seconds (not measured). With `warmup_auto`, 0 in
    /// a plan (see [`Workload::warmup_bound_s`]) and, in a run's record,
    /// where the warm-up ended.
    pub warmup_s: f64,
    /// The warm-up ends where throughput and p99 stop trending (`--warmup
    /// auto`), found as the run goes, within [`Workload::warmup_bound_s`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup_auto: bool,
    /// Target rate in ops/s (open loop); `None` = closed loop.
    pub rate: Option<f64>,
    /// Request timeout in seconds.
    pub timeout_s: f64,
    /// Whether the load phase fills every record first.
    pub load: bool,
    /// How the network loop moves bytes.
    #[serde(default)]
    pub io: IoBackend,
    /// Memory cap on the target (its RSS and page cache together), bytes:
    /// a managed server, or the bakeoff process for an in-process engine.
    #[serde(default)]
    pub memory_cap: Option<u64>,
    /// How many CPUs the target runs on (a managed server's processes, or
    /// bakeoff itself for an in-process engine); `None`: every CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<u32>,
    /// What records are stored.
    #[serde(default)]
    pub record: crate::profile::RecordKind,
    /// Which search `search` operations make.
    #[serde(default)]
    pub search: crate::profile::SearchKind,
    /// Whether the profile table has its secondary indexes.
    #[serde(default = "yes")]
    pub indexes: bool,
    /// Records per insert in the load phase; 1 = one statement per record.
    #[serde(default = "one")]
    pub batch: u32,
    /// Growth experiment: the record-count sweep is a series of checkpoints
    /// on one target that stays up between them.
    #[serde(default)]
    pub grow: bool,
    /// Records already stored before this point's load (growth: the
    /// previous checkpoint); the load adds ids `load_from..records`.
    #[serde(default)]
    pub load_from: u64,
    /// The end of the ids this load adds, when it adds only a part of them
    /// (a shard's, `--shard i/N`); `None`: up to `records`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_to: Option<u64>,
    /// What one measured request is.
    #[serde(default)]
    pub request: RequestMode,
    /// A fault injected into the measured run, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<super::Fault>,
    /// Background work asked of the server during the measured run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provoke: Option<super::Provoke>,
    /// Whether the server's own signals are read during each run (its
    /// time per command, its background work); off only to measure what
    /// reading them costs.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub server_signals: bool,
    /// How many servers make the target, and how they share the work.
    #[serde(default, skip_serializing_if = "is_single")]
    pub topology: super::Topology,
    /// Where reads go in a primary-replica run.
    #[serde(default, skip_serializing_if = "is_primary")]
    pub read_from: super::ReadFrom,
    /// A network link between the clients and the server, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<super::Link>,
    /// The durability check: every client writes fresh ids of its own, and
    /// every attempted id is read back after the run.
    #[serde(default, skip_serializing_if = "is_false")]
    pub durability: bool,
    /// Operations whose single latencies are kept in time order (every
    /// Nth once more are measured); 0 keeps none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trace: u32,
    /// At each point, raise the clients until throughput stops rising.
    #[serde(default, skip_serializing_if = "is_false")]
    pub find_peak: bool,
    /// At each point, search the highest open-loop rate at which this
    /// bound holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_capacity: Option<crate::find::LatencyBound>,
    /// Most records a scan reads: each scan's length is uniform in
    /// `1..=scan_length` (YCSB's `maxscanlength`; its workload E: 100).
    #[serde(default = "hundred")]
    pub scan_length: u32,
    /// How records are named: bakeoff's `bk:000000000042`, or YCSB's
    /// `user` and a hash of the id.
    #[serde(default, skip_serializing_if = "is_default")]
    pub key_naming: crate::keys::KeyNaming,
    /// The first id this process's inserts write (`--shard`: its own
    /// range); `None`: the one after the records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_from: Option<u64>,
    /// A trace replayed instead of a mix (its path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// How many times faster than captured the trace is replayed.
    #[serde(default = "one_f64")]
    pub replay_speed: f64,
}

fn hundred() -> u32 {
    100
}

fn one_f64() -> f64 {
    1.0
}

/// Longest warm-up `--warmup auto` waits for a steady state, seconds.
pub const AUTO_WARMUP_MAX_S: f64 = 30.0;

/// Shortest bound of `--warmup auto`, seconds: a short run waits as long
/// as a fixed warm-up would.
pub const AUTO_WARMUP_MIN_S: f64 = 2.0;

/// The warm-up, seconds, where `auto` would be the default but cannot
/// work: a run counted in operations, one with a fault (whose moment
/// counts from the start), or a measured phase shorter than the window a
/// trend is judged over ([`crate::stats::STEADY_WINDOW_S`]).
pub const FIXED_WARMUP_S: f64 = 2.0;

impl Workload {
    /// The longest the warm-up may last: its length, or with
    /// `warmup_auto` the measured phase's length (a warm-up never outlasts
    /// what it precedes) within [`AUTO_WARMUP_MIN_S`] and
    /// [`AUTO_WARMUP_MAX_S`].
    pub fn warmup_bound_s(&self) -> f64 {
        if self.warmup_auto {
            self.duration_s
                .unwrap_or(AUTO_WARMUP_MAX_S)
                .clamp(AUTO_WARMUP_MIN_S, AUTO_WARMUP_MAX_S)
        } else {
            self.warmup_s
        }
    }

    /// The first id inserts write.
    pub fn first_insert(&self) -> u64 {
        self.insert_from.unwrap_or(self.records)
    }

    /// Bytes of one field of a record (the whole value when it has one).
    pub fn field_len(&self) -> usize {
        self.value_size.max() / self.fields.max(1) as usize
    }
}

/// What one measured request is.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RequestMode {
    /// One operation on a connection kept for the whole run.
    #[default]
    Op,
    /// A new connection per operation: connect, operate, close, all timed
    /// (000-mysql-conns).
    Connect,
    /// The named steps of 000-mysql-phases, each timed: connect, select
    /// database, set charset, UPDATE of 10 rows, SELECT of 10 rows, INSERT
    /// of one row, close.
    Phases,
}

impl RequestMode {
    /// Its name in presets and flags.
    pub fn name(self) -> &'static str {
        match self {
            RequestMode::Op => "op",
            RequestMode::Connect => "connect",
            RequestMode::Phases => "phases",
        }
    }
}

impl std::str::FromStr for RequestMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "op" => Ok(Self::Op),
            "connect" => Ok(Self::Connect),
            "phases" => Ok(Self::Phases),
            o => Err(format!("unknown request `{o}`; use op, connect or phases")),
        }
    }
}

fn is_primary(r: &super::ReadFrom) -> bool {
    *r == super::ReadFrom::Primary
}

fn is_single(t: &super::Topology) -> bool {
    *t == super::Topology::Single
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Workload {
    /// Whether a server of this workload may stay up, loaded, from one
    /// round of repeats to the next: a plain run (no fault, provocation,
    /// growth, durability read-back, topology, link, trace or memory cap,
    /// each of which needs the server as it starts).
    pub fn stays_up_between_rounds(&self) -> bool {
        self.load
            && !self.grow
            && !self.durability
            && self.fault.is_none()
            && self.provoke.is_none()
            && self.topology == super::Topology::Single
            && self.link.is_none()
            && self.replay.is_none()
            && self.memory_cap.is_none()
    }

    /// Whether the target's table is emptied before this workload's load:
    /// it is, unless the load adds only a shard's part of the ids, beside
    /// the other shards' parts (those load at the same time, and the table
    /// must be empty before any of them starts).
    pub fn empties_before_load(&self) -> bool {
        self.load && self.load_to.is_none()
    }

    /// The form of the values the client stores.
    pub fn value_form(&self) -> crate::encoding::ValueForm {
        crate::encoding::ValueForm {
            encoding: self.encoding,
            compression: self.compression,
        }
    }

    /// Whether the run cuts the power: a managed server's data directory
    /// must then be on the FUSE layer that can drop unsynced bytes.
    pub fn cuts_power(&self) -> bool {
        self.fault
            .is_some_and(|f| f.kind == super::FaultKind::PowerCut)
    }

    /// Requests in flight when every client is busy.
    pub fn in_flight(&self) -> u64 {
        self.clients as u64 * self.pipeline as u64
    }
}

impl Workload {
    /// Shapes a workload that replays a trace: its records are the trace's
    /// keys, its operations the trace's, in open loop at the trace's mean
    /// rate times the speed, no warm-up, values from the header's size to the
    /// trace's largest. A workload without a trace, or whose trace cannot be
    /// read (the plan said why already), is left as it is.
    pub fn shape_to_trace(&mut self) {
        let w = self;
        let Some(path) = &w.replay else {
            return;
        };
        let Ok(t) = crate::replay::load(path) else {
            return;
        };
        let ops = t.ops.len() as u64;
        w.records = t.sizes.len() as u64;
        w.ops = Some(ops);
        w.ops_per_client = None;
        w.duration_s = None;
        w.warmup_s = 0.0;
        w.warmup_auto = false;
        let span_s = (t.span_ns() as f64 / 1e9).max(1e-3);
        w.rate = Some(ops as f64 / span_s * w.replay_speed);
        let largest = t
            .ops
            .iter()
            .map(|o| o.size)
            .chain(t.sizes.iter().copied())
            .max();
        w.value_size = ValueSizes::Range {
            min: HEADER_LEN,
            max: largest.unwrap_or(HEADER_LEN as u32) as usize,
        };
        let kinds = t.kinds();
        let mut weights = [0u32; OP_KINDS];
        for (w, n) in weights.iter_mut().zip(kinds) {
            *w = n.min(u64::from(u32::MAX)) as u32;
        }
        w.mix = Mix { weights };
    }
}
