//! Configuration in two stages: a raw preset (TOML) plus raw flags, merged
//! and validated into one serialisable [`Plan`] that the runner executes
//! and the result file echoes.
//!
//! Every check that involves more than one field lives in [`Plan::build`],
//! and every error names the flag or preset key it came from.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::units::{parse_count, parse_duration};
use crate::value::{ValueContent, HEADER_LEN};
use crate::workload::{KeyDistribution, OpKind, ValueSizes, OP_KINDS};

/// A number or a string in a preset (`records = 100000` or `records = "100k"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string with an optional unit.
    Str(String),
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Str(s) => write!(f, "{s}"),
        }
    }
}

/// The `[workload]` table of a preset, or the workload flags: raw text,
/// not yet validated.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// Records loaded before measuring.
    pub records: Option<Scalar>,
    /// uniform, zipfian or sequential.
    pub key_distribution: Option<Scalar>,
    /// `100`, `100-1000` or `100,1000`.
    pub value_size: Option<Scalar>,
    /// random or compressible.
    pub value_content: Option<Scalar>,
    /// `get:set:update:delete` weights.
    pub mix: Option<Scalar>,
    /// Connections in all.
    pub clients: Option<Scalar>,
    /// Worker threads.
    pub threads: Option<Scalar>,
    /// Requests in flight per connection.
    pub pipeline: Option<Scalar>,
    /// Measure for this long.
    pub duration: Option<Scalar>,
    /// Or measure this many operations.
    pub ops: Option<Scalar>,
    /// Unmeasured time before measuring.
    pub warmup: Option<Scalar>,
    /// Target rate in ops/s (open loop); 0 or unset = closed loop.
    pub rate: Option<Scalar>,
    /// Request timeout.
    pub timeout: Option<Scalar>,
    /// Whether to load the records first.
    pub load: Option<bool>,
    /// auto, epoll or io_uring.
    pub io: Option<Scalar>,
    /// Memory cap on the target (RSS + page cache), e.g. `256mb`.
    pub memory_cap: Option<Scalar>,
    /// `kv` (default) or `profile` (the search table of 000-search).
    pub record: Option<Scalar>,
    /// Which search `search` operations make: name, sex, location, all.
    pub search: Option<Scalar>,
    /// Whether the profile table has indexes on sex and (province, city).
    pub indexes: Option<bool>,
    /// Records per insert in the load phase (multi-row INSERT, insertMany).
    pub batch: Option<Scalar>,
    /// Growth: the record-count sweep is a series of checkpoints on one
    /// target, each loading only the records added since the last.
    pub grow: Option<bool>,
    /// What one request is: op, connect or phases.
    pub request: Option<Scalar>,
}

/// The `[sweep]` table of a preset: axes, each a list of values.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    /// Client counts.
    pub clients: Option<Vec<Scalar>>,
    /// Value sizes.
    pub value_size: Option<Vec<Scalar>>,
    /// Mixes.
    pub mix: Option<Vec<Scalar>>,
    /// Record counts.
    pub records: Option<Vec<Scalar>>,
    /// Memory caps (`"256mb"`, or `"none"` for no cap).
    pub memory_cap: Option<Vec<Scalar>>,
    /// Searches (name, sex, location, all).
    pub search: Option<Vec<Scalar>>,
    /// Indexes on or off.
    pub indexes: Option<Vec<bool>>,
}

/// A preset file as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPreset {
    /// Experiment name (defaults to the file name).
    pub name: Option<String>,
    /// What the experiment asks.
    pub description: Option<String>,
    /// Targets: names (`redis`) or URLs (`redis://127.0.0.1:6379`).
    pub targets: Option<Vec<String>>,
    /// Times each point is run.
    pub repeats: Option<Scalar>,
    /// Seed of every generator.
    pub seed: Option<Scalar>,
    /// The workload.
    #[serde(default)]
    pub workload: RawWorkload,
    /// Sweep axes.
    #[serde(default)]
    pub sweep: RawSweep,
    /// Settings of managed servers, per target name.
    #[serde(default)]
    pub servers: BTreeMap<String, toml::Table>,
}

impl RawPreset {
    /// Reads and parses a preset file; unknown keys are errors.
    pub fn load(path: &str) -> Result<Self, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
            path: path.to_string(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| PlanError::Syntax {
            path: path.to_string(),
            message: e.to_string().trim().replace('\n', "\n  "),
        })
    }
}

/// Flags given on the command line; each overrides the preset key of the
/// same name.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--target`, repeatable or comma-separated.
    pub targets: Vec<String>,
    /// `--repeats`.
    pub repeats: Option<String>,
    /// `--seed`.
    pub seed: Option<String>,
    /// Workload flags, as raw text.
    pub workload: RawWorkload,
    /// `--sweep-*` flags.
    pub sweep: RawSweep,
    /// `--set target.key=value` server settings.
    pub server_settings: Vec<(String, String, String)>,
}

/// What a target can do, as the plan needs to know it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capabilities {
    /// Operation kinds supported, by name.
    pub ops: Vec<OpKind>,
    /// Whether requests can be pipelined on one connection.
    pub pipelining: bool,
    /// Whether bakeoff can start this target itself.
    pub managed: bool,
    /// URL scheme for external endpoints, if any.
    pub url_scheme: Option<String>,
    /// Whether the load can insert many records per request.
    pub batch_load: bool,
    /// Request modes besides `op`.
    pub requests: Vec<RequestMode>,
}

/// The targets bakeoff knows, as the plan sees them (implemented by the
/// driver registry, so that core stays free of driver code).
pub trait TargetCatalog {
    /// Capabilities of target `name`, or `None` if unknown.
    fn capabilities(&self, name: &str) -> Option<Capabilities>;
    /// Names of every known target.
    fn names(&self) -> Vec<String>;
    /// Target name for URL scheme `scheme`.
    fn target_for_scheme(&self, scheme: &str) -> Option<String>;
    /// Checks a managed server's settings table (`[servers.NAME]`).
    fn check_settings(&self, name: &str, settings: &toml::Table) -> Result<(), String>;
    /// Targets of the default comparison.
    fn default_targets(&self) -> Vec<String>;
}

/// Where a target lives.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Endpoint {
    /// bakeoff starts and stops the server (or opens the engine) itself.
    Managed,
    /// A server someone else runs.
    External {
        /// The URL with any password replaced by `***`.
        url: String,
        /// Host name or address.
        host: String,
        /// TCP port.
        port: u16,
        /// Options from the URL's query string.
        options: BTreeMap<String, String>,
    },
}

/// One target of the plan.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetSpec {
    /// Driver name, e.g. `redis`.
    pub name: String,
    /// Managed or external.
    pub endpoint: Endpoint,
    /// Password for an external endpoint: never serialised, never printed.
    #[serde(skip)]
    pub password: Option<String>,
    /// User name for an external endpoint, if the URL gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl TargetSpec {
    /// `redis` or `redis (redis://127.0.0.1:6379)`.
    pub fn label(&self) -> String {
        match &self.endpoint {
            Endpoint::Managed => self.name.clone(),
            Endpoint::External { url, .. } => format!("{} ({url})", self.name),
        }
    }
}

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

/// Operation weights `get:set:update:delete`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mix {
    /// Weights indexed like [`OpKind`].
    pub weights: [u32; OP_KINDS],
}

impl Mix {
    /// Parses `90:10`, `95:5:0:0`, `0:0:0:0:1`, or `get=90,set=10`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut weights = [0u32; OP_KINDS];
        let t = text.trim();
        if t.contains('=') {
            for part in t.split(',') {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| format!("`{part}` is not name=weight"))?;
                let i = OpKind::ALL
                    .iter()
                    .position(|o| o.name() == k.trim())
                    .ok_or_else(|| {
                        format!(
                            "unknown operation `{}`; use get, set, update or delete",
                            k.trim()
                        )
                    })?;
                weights[i] = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("weight `{v}` is not a whole number"))?;
            }
        } else {
            let parts: Vec<&str> = t.split(':').collect();
            if parts.len() > OP_KINDS {
                return Err(format!(
                    "`{text}` has {} weights; the order is get:set:update:delete",
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
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = self.weights;
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
    pub key_distribution: KeyDistribution,
    /// Value sizes, bytes (header included).
    pub value_size: ValueSizes,
    /// Payload content.
    pub value_content: ValueContent,
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
    /// Warm-up length in seconds (not measured).
    pub warmup_s: f64,
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
    /// What one measured request is.
    #[serde(default)]
    pub request: RequestMode,
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

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

impl Workload {
    /// Requests in flight when every client is busy.
    pub fn in_flight(&self) -> u64 {
        self.clients as u64 * self.pipeline as u64
    }
}

/// One axis of a sweep and its values.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "axis", content = "values", rename_all = "snake_case")]
pub enum SweepAxis {
    /// Connection counts.
    Clients(Vec<u32>),
    /// Value sizes.
    ValueSize(Vec<ValueSizes>),
    /// Operation mixes.
    Mix(Vec<Mix>),
    /// Record counts.
    Records(Vec<u64>),
    /// Memory caps, bytes (`None` = no cap).
    MemoryCap(Vec<Option<u64>>),
    /// Searches.
    Search(Vec<crate::profile::SearchKind>),
    /// Indexes on or off.
    Indexes(Vec<bool>),
}

impl SweepAxis {
    /// The axis name as in presets and results.
    pub fn name(&self) -> &'static str {
        match self {
            SweepAxis::Clients(_) => "clients",
            SweepAxis::ValueSize(_) => "value_size",
            SweepAxis::Mix(_) => "mix",
            SweepAxis::Records(_) => "records",
            SweepAxis::MemoryCap(_) => "memory_cap",
            SweepAxis::Search(_) => "search",
            SweepAxis::Indexes(_) => "indexes",
        }
    }

    fn len(&self) -> usize {
        match self {
            SweepAxis::Clients(v) => v.len(),
            SweepAxis::ValueSize(v) => v.len(),
            SweepAxis::Mix(v) => v.len(),
            SweepAxis::Records(v) => v.len(),
            SweepAxis::MemoryCap(v) => v.len(),
            SweepAxis::Search(v) => v.len(),
            SweepAxis::Indexes(v) => v.len(),
        }
    }

    /// Applies value `i` of the axis to `w`; returns the value's label.
    fn apply(&self, i: usize, w: &mut Workload) -> String {
        match self {
            SweepAxis::Clients(v) => {
                w.clients = v[i];
                w.threads = w.threads.min(v[i]);
                v[i].to_string()
            }
            SweepAxis::ValueSize(v) => {
                w.value_size = v[i].clone();
                v[i].to_string()
            }
            SweepAxis::Mix(v) => {
                w.mix = v[i];
                v[i].to_string()
            }
            SweepAxis::Records(v) => {
                w.records = v[i];
                v[i].to_string()
            }
            SweepAxis::Search(v) => {
                w.search = v[i];
                v[i].to_string()
            }
            SweepAxis::Indexes(v) => {
                w.indexes = v[i];
                if v[i] {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            SweepAxis::MemoryCap(v) => {
                w.memory_cap = v[i];
                v[i].map(|b| crate::units::fmt_bytes(b as f64))
                    .unwrap_or_else(|| "none".into())
            }
        }
    }
}

/// One point of the matrix: the workload with the sweep values applied.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Sweep values of this point, by axis name (empty without a sweep).
    pub labels: BTreeMap<String, String>,
    /// The workload at this point.
    pub workload: Workload,
}

/// A validated experiment: everything the runner needs, echoed into the
/// result file.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// Experiment name.
    pub name: String,
    /// What it asks.
    pub description: String,
    /// Preset file, if one was used.
    pub preset: Option<String>,
    /// Targets, in order.
    pub targets: Vec<TargetSpec>,
    /// The base workload (before sweep values are applied).
    pub workload: Workload,
    /// Sweep axes (their cartesian product gives the points).
    pub sweep: Vec<SweepAxis>,
    /// Times each point runs on each target.
    pub repeats: u32,
    /// Seed of every generator.
    pub seed: u64,
    /// Managed servers' settings, per target name.
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub servers: BTreeMap<String, toml::Table>,
}

/// Where a value came from, for error messages.
struct Origin {
    flag: &'static str,
    key: &'static str,
    from_flag: bool,
}

impl Origin {
    fn describe(&self) -> String {
        if self.from_flag {
            format!("flag {}", self.flag)
        } else {
            format!("preset key {}", self.key)
        }
    }
    fn err(&self, message: impl Into<String>) -> PlanError {
        PlanError::Invalid {
            origin: self.describe(),
            message: message.into(),
        }
    }
}

fn pick(
    flag_v: &Option<Scalar>,
    preset_v: &Option<Scalar>,
    flag: &'static str,
    key: &'static str,
) -> Option<(String, Origin)> {
    if let Some(v) = flag_v {
        Some((
            v.to_string(),
            Origin {
                flag,
                key,
                from_flag: true,
            },
        ))
    } else {
        preset_v.as_ref().map(|v| {
            (
                v.to_string(),
                Origin {
                    flag,
                    key,
                    from_flag: false,
                },
            )
        })
    }
}

fn parse_with<T>(
    flag_v: &Option<Scalar>,
    preset_v: &Option<Scalar>,
    flag: &'static str,
    key: &'static str,
    default: T,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<T, PlanError> {
    match pick(flag_v, preset_v, flag, key) {
        None => Ok(default),
        Some((text, origin)) => parse(&text).map_err(|m| origin.err(m)),
    }
}

fn positive_u32(what: &'static str) -> impl Fn(&str) -> Result<u32, String> {
    move |s: &str| {
        let v = parse_count(s)?;
        if v == 0 {
            return Err(format!("0 {what} cannot run; use at least 1"));
        }
        u32::try_from(v).map_err(|_| format!("{v} {what} is too many"))
    }
}

impl Plan {
    /// Merges a preset (if any) with flags and validates the result.
    pub fn build(
        preset: Option<(&str, RawPreset)>,
        flags: &Overrides,
        catalog: &dyn TargetCatalog,
    ) -> Result<Plan, PlanError> {
        let (path, raw) = match preset {
            Some((p, r)) => (Some(p.to_string()), r),
            None => (None, RawPreset::default()),
        };
        let fw = &flags.workload;
        let pw = &raw.workload;

        let records = parse_with(
            &fw.records,
            &pw.records,
            "--records",
            "workload.records",
            100_000,
            |s| {
                let v = parse_count(s)?;
                if v == 0 {
                    return Err("0 records leaves nothing to read; use at least 1".into());
                }
                if v >= 1_000_000_000_000 {
                    return Err("at most 999999999999 records (keys have 12 digits)".into());
                }
                Ok(v)
            },
        )?;
        let key_distribution = parse_with(
            &fw.key_distribution,
            &pw.key_distribution,
            "--key-distribution",
            "workload.key_distribution",
            KeyDistribution::Uniform,
            |s| s.parse(),
        )?;
        let value_origin = pick(
            &fw.value_size,
            &pw.value_size,
            "--value-size",
            "workload.value_size",
        );
        let value_size = parse_with(
            &fw.value_size,
            &pw.value_size,
            "--value-size",
            "workload.value_size",
            ValueSizes::Fixed(100),
            ValueSizes::parse,
        )?;
        let value_content = parse_with(
            &fw.value_content,
            &pw.value_content,
            "--value-content",
            "workload.value_content",
            ValueContent::Random,
            |s| s.parse(),
        )?;
        let mix = parse_with(
            &fw.mix,
            &pw.mix,
            "--mix",
            "workload.mix",
            Mix {
                weights: [90, 10, 0, 0, 0],
            },
            Mix::parse,
        )?;
        let clients = parse_with(
            &fw.clients,
            &pw.clients,
            "--clients",
            "workload.clients",
            50,
            positive_u32("clients"),
        )?;
        let threads_given = pick(&fw.threads, &pw.threads, "--threads", "workload.threads");
        let threads = parse_with(
            &fw.threads,
            &pw.threads,
            "--threads",
            "workload.threads",
            1,
            positive_u32("threads"),
        )?;
        let pipeline = parse_with(
            &fw.pipeline,
            &pw.pipeline,
            "--pipeline",
            "workload.pipeline",
            1,
            positive_u32("pipeline depth"),
        )?;
        let warmup = parse_with(
            &fw.warmup,
            &pw.warmup,
            "--warmup",
            "workload.warmup",
            Duration::from_secs(2),
            parse_duration,
        )?;
        let timeout = parse_with(
            &fw.timeout,
            &pw.timeout,
            "--timeout",
            "workload.timeout",
            Duration::from_secs(5),
            |s| {
                let d = parse_duration(s)?;
                if d.is_zero() {
                    return Err("a timeout of 0 fails every request; use e.g. 5s".into());
                }
                Ok(d)
            },
        )?;
        let rate = parse_with(&fw.rate, &pw.rate, "--rate", "workload.rate", None, |s| {
            let v: f64 = s
                .trim()
                .trim_end_matches("/s")
                .parse()
                .map_err(|_| format!("`{s}` is not a rate in ops/s"))?;
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("`{s}` is not a rate in ops/s"));
            }
            Ok((v > 0.0).then_some(v))
        })?;
        // A flag for one of duration/ops replaces the preset's other one.
        let (dur_src, ops_src) = if fw.duration.is_some() || fw.ops.is_some() {
            (&fw.duration, &fw.ops)
        } else {
            (&pw.duration, &pw.ops)
        };
        let from_flag = fw.duration.is_some() || fw.ops.is_some();
        let duration = match dur_src {
            None => None,
            Some(v) => Some(parse_duration(&v.to_string()).map_err(|m| {
                Origin {
                    flag: "--duration",
                    key: "workload.duration",
                    from_flag,
                }
                .err(m)
            })?),
        };
        let ops = match ops_src {
            None => None,
            Some(v) => Some(parse_count(&v.to_string()).map_err(|m| {
                Origin {
                    flag: "--ops",
                    key: "workload.ops",
                    from_flag,
                }
                .err(m)
            })?),
        };
        if duration.is_some() && ops.is_some() {
            return Err(Origin {
                flag: "--ops",
                key: "workload.ops",
                from_flag,
            }
            .err("give either a duration or an operation count, not both"));
        }
        if ops == Some(0) {
            return Err(Origin {
                flag: "--ops",
                key: "workload.ops",
                from_flag,
            }
            .err("0 operations measures nothing; use at least 1"));
        }
        let duration = match (duration, ops) {
            (None, None) => Some(Duration::from_secs(10)),
            (d, _) => d,
        };
        if duration.is_some_and(|d| d.is_zero()) {
            return Err(Origin {
                flag: "--duration",
                key: "workload.duration",
                from_flag,
            }
            .err("a duration of 0 measures nothing; use e.g. 10s"));
        }
        let load = fw.load.or(pw.load).unwrap_or(true);
        let record = parse_with(
            &fw.record,
            &pw.record,
            "--record",
            "workload.record",
            crate::profile::RecordKind::Kv,
            |s| s.parse(),
        )?;
        let search = parse_with(
            &fw.search,
            &pw.search,
            "--search",
            "workload.search",
            crate::profile::SearchKind::Name,
            |s| s.parse(),
        )?;
        let indexes = fw.indexes.or(pw.indexes).unwrap_or(true);
        let batch = parse_with(
            &fw.batch,
            &pw.batch,
            "--batch",
            "workload.batch",
            1u32,
            |s| match parse_count(s)? {
                0 => Err("a batch of 0 records inserts nothing; use 1 or more".into()),
                n if n > 100_000 => Err(format!(
                    "a batch of {n} records is too large; use at most 100000"
                )),
                n => Ok(n as u32),
            },
        )?;
        let grow = fw.grow.or(pw.grow).unwrap_or(false);
        let request = parse_with(
            &fw.request,
            &pw.request,
            "--request",
            "workload.request",
            RequestMode::Op,
            |s| s.parse(),
        )?;
        // A phased request is its own script: it updates, so the mix is
        // update-only.
        let mix = if request == RequestMode::Phases {
            if (fw.mix.is_some() || pw.mix.is_some()) && mix.weights != [0, 0, 1, 0, 0] {
                return Err(Origin {
                    flag: "--mix",
                    key: "workload.mix",
                    from_flag: fw.mix.is_some(),
                }
                .err("a phased request (--request phases) is a fixed script; leave out the mix"));
            }
            Mix {
                weights: [0, 0, 1, 0, 0],
            }
        } else {
            mix
        };
        if batch > 1 && record == crate::profile::RecordKind::Profile {
            return Err(Origin {
                flag: "--batch",
                key: "workload.batch",
                from_flag: fw.batch.is_some(),
            }
            .err(
                "batched loads write kv records; profile rows load one per request (use --batch 1)",
            ));
        }
        let mix_given = fw.mix.is_some() || pw.mix.is_some();
        // Profile records are there to be searched.
        let mix = if record == crate::profile::RecordKind::Profile && !mix_given {
            Mix {
                weights: [0, 0, 0, 0, 1],
            }
        } else {
            mix
        };
        if record == crate::profile::RecordKind::Kv
            && mix.weights[crate::workload::OpKind::Search as usize] > 0
        {
            return Err(Origin { flag: "--mix", key: "workload.mix", from_flag: fw.mix.is_some() }
                .err("`search` needs the profile table: set --record profile (workload.record = \"profile\")"));
        }
        if record == crate::profile::RecordKind::Profile
            && mix
                .weights
                .iter()
                .enumerate()
                .any(|(i, w)| *w > 0 && i != crate::workload::OpKind::Search as usize)
        {
            return Err(Origin {
                flag: "--mix",
                key: "workload.mix",
                from_flag: fw.mix.is_some(),
            }
            .err("profile records are only searched here; use a mix of 0:0:0:0:1 (search only)"));
        }
        let memory_cap = parse_with(
            &fw.memory_cap,
            &pw.memory_cap,
            "--memory-cap",
            "workload.memory_cap",
            None,
            |s| {
                let b = crate::units::parse_bytes(s)?;
                if b < 32 << 20 {
                    return Err(format!(
                        "a cap of {b} B leaves no room for the target; use at least 32mb"
                    ));
                }
                Ok(Some(b))
            },
        )?;
        let io = parse_with(
            &fw.io,
            &pw.io,
            "--io",
            "workload.io",
            IoBackend::Auto,
            |s| s.parse(),
        )?;

        let mut workload = Workload {
            records,
            key_distribution,
            value_size,
            value_content,
            mix,
            clients,
            threads: threads.min(clients),
            pipeline,
            duration_s: duration.map(|d| d.as_secs_f64()),
            ops,
            warmup_s: warmup.as_secs_f64(),
            rate,
            timeout_s: timeout.as_secs_f64(),
            load,
            io,
            memory_cap,
            record,
            search,
            indexes,
            batch,
            grow,
            load_from: 0,
            request,
        };
        if threads_given.is_none() {
            workload.threads = 1;
        }
        check_value_size(&workload.value_size, value_origin.as_ref().map(|(_, o)| o))?;

        // Sweep axes, flags replacing the preset's axis of the same name.
        let fs = &flags.sweep;
        let ps = &raw.sweep;
        let mut sweep = Vec::new();
        if let Some((vals, o)) =
            pick_list(&fs.clients, &ps.clients, "--sweep-clients", "sweep.clients")
        {
            let v = vals
                .iter()
                .map(|s| positive_u32("clients")(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| o.err(m))?;
            sweep.push(SweepAxis::Clients(v));
        }
        if let Some((vals, o)) = pick_list(
            &fs.value_size,
            &ps.value_size,
            "--sweep-value-size",
            "sweep.value_size",
        ) {
            let v = vals
                .iter()
                .map(|s| ValueSizes::parse(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| o.err(m))?;
            for vs in &v {
                check_value_size(vs, Some(&o))?;
            }
            sweep.push(SweepAxis::ValueSize(v));
        }
        if let Some((vals, o)) = pick_list(&fs.mix, &ps.mix, "--sweep-mix", "sweep.mix") {
            let v = vals
                .iter()
                .map(|s| Mix::parse(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| o.err(m))?;
            sweep.push(SweepAxis::Mix(v));
        }
        if let Some((vals, o)) =
            pick_list(&fs.records, &ps.records, "--sweep-records", "sweep.records")
        {
            let v = vals
                .iter()
                .map(|s| {
                    parse_count(s).and_then(|n| {
                        if n == 0 {
                            Err("0 records leaves nothing to read".to_string())
                        } else {
                            Ok(n)
                        }
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| o.err(m))?;
            sweep.push(SweepAxis::Records(v));
        }
        if let Some((vals, o)) = pick_list(
            &fs.memory_cap,
            &ps.memory_cap,
            "--sweep-memory-cap",
            "sweep.memory_cap",
        ) {
            let v = vals
                .iter()
                .map(|s| {
                    if s.trim() == "none" {
                        return Ok(None);
                    }
                    let b = crate::units::parse_bytes(s)?;
                    if b < 32 << 20 {
                        return Err(format!("a cap of {b} B leaves no room for the target; use at least 32mb, or none"));
                    }
                    Ok(Some(b))
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(|m| o.err(m))?;
            sweep.push(SweepAxis::MemoryCap(v));
        }
        if let Some((vals, o)) = pick_list(&fs.search, &ps.search, "--sweep-search", "sweep.search")
        {
            let v = vals
                .iter()
                .map(|s| s.parse())
                .collect::<Result<Vec<_>, String>>()
                .map_err(|m| o.err(m))?;
            sweep.push(SweepAxis::Search(v));
        }
        if let Some(v) = fs.indexes.clone().or_else(|| ps.indexes.clone()) {
            sweep.push(SweepAxis::Indexes(v));
        }
        if workload.grow {
            let origin = Origin {
                flag: "--grow",
                key: "workload.grow",
                from_flag: fw.grow.is_some(),
            };
            let checkpoints = match sweep.as_slice() {
                [SweepAxis::Records(v)] => v,
                _ => return Err(origin.err(
                    "growth needs record-count checkpoints and no other sweep axis: add --sweep-records 1m,2m,5m (sweep.records)",
                )),
            };
            if checkpoints.windows(2).any(|w| w[0] >= w[1]) {
                return Err(
                    origin.err("growth checkpoints must increase, e.g. --sweep-records 1m,2m,5m")
                );
            }
            if !workload.load {
                return Err(origin.err("growth loads the records between checkpoints; remove --no-load (workload.load = false)"));
            }
        }

        let repeats = parse_with(
            &flags.repeats.clone().map(Scalar::Str),
            &raw.repeats,
            "--repeats",
            "repeats",
            1,
            positive_u32("repeats"),
        )?;
        let seed = parse_with(
            &flags.seed.clone().map(Scalar::Str),
            &raw.seed,
            "--seed",
            "seed",
            1,
            |s| {
                s.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("`{s}` is not a whole number"))
            },
        )?;

        // Targets.
        let (target_texts, t_origin) = if !flags.targets.is_empty() {
            (
                flags
                    .targets
                    .iter()
                    .flat_map(|t| t.split(','))
                    .map(|s| s.trim().to_string())
                    .collect::<Vec<_>>(),
                Origin {
                    flag: "--target",
                    key: "targets",
                    from_flag: true,
                },
            )
        } else if let Some(t) = &raw.targets {
            (
                t.clone(),
                Origin {
                    flag: "--target",
                    key: "targets",
                    from_flag: false,
                },
            )
        } else {
            (
                catalog.default_targets(),
                Origin {
                    flag: "--target",
                    key: "targets",
                    from_flag: false,
                },
            )
        };
        if target_texts.is_empty() {
            return Err(t_origin.err("no targets; name at least one, e.g. --target redis"));
        }
        let mut targets = Vec::new();
        for text in target_texts.iter().filter(|t| !t.is_empty()) {
            let spec = parse_target(text, catalog).map_err(|m| t_origin.err(m))?;
            let caps = catalog
                .capabilities(&spec.name)
                .expect("parse_target checked the name");
            check_capabilities(&spec.name, &caps, &workload, &sweep)
                .map_err(|m| t_origin.err(m))?;
            targets.push(spec);
        }

        // Server settings: preset tables, then --set overrides.
        let mut servers = raw.servers.clone();
        for (target, key, value) in &flags.server_settings {
            let parsed: toml::Value = format!("v = {value}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.clone()));
            servers
                .entry(target.clone())
                .or_default()
                .insert(key.clone(), parsed);
        }
        for (name, table) in &servers {
            if catalog.capabilities(name).is_none() {
                return Err(PlanError::Invalid {
                    origin: format!("preset key servers.{name}"),
                    message: format!(
                        "unknown target `{name}`; known targets: {}",
                        catalog.names().join(", ")
                    ),
                });
            }
            catalog
                .check_settings(name, table)
                .map_err(|m| PlanError::Invalid {
                    origin: format!("preset key servers.{name}"),
                    message: m,
                })?;
        }

        let name = raw.name.clone().unwrap_or_else(|| {
            path.as_deref()
                .and_then(|p| std::path::Path::new(p).file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "default".to_string())
        });
        Ok(Plan {
            name,
            description: raw.description.clone().unwrap_or_default(),
            preset: path,
            targets,
            workload,
            sweep,
            repeats,
            seed,
            servers,
        })
    }

    /// Every point of the matrix, in order (first axis outermost).
    pub fn points(&self) -> Vec<Point> {
        let mut points = vec![Point {
            labels: BTreeMap::new(),
            workload: self.workload.clone(),
        }];
        for axis in &self.sweep {
            let mut next = Vec::with_capacity(points.len() * axis.len());
            for p in &points {
                for i in 0..axis.len() {
                    let mut q = p.clone();
                    let label = axis.apply(i, &mut q.workload);
                    q.labels.insert(axis.name().to_string(), label);
                    next.push(q);
                }
            }
            points = next;
        }
        if self.workload.grow {
            // Each checkpoint adds the records beyond the previous one.
            for i in 1..points.len() {
                points[i].workload.load_from = points[i - 1].workload.records;
            }
        }
        points
    }

    /// Number of runs: targets × points × repeats.
    pub fn run_count(&self) -> usize {
        self.targets.len() * self.points().len() * self.repeats as usize
    }
}

fn pick_list(
    flag_v: &Option<Vec<Scalar>>,
    preset_v: &Option<Vec<Scalar>>,
    flag: &'static str,
    key: &'static str,
) -> Option<(Vec<String>, Origin)> {
    let (v, from_flag) = match (flag_v, preset_v) {
        (Some(v), _) => (v, true),
        (None, Some(v)) => (v, false),
        _ => return None,
    };
    Some((
        v.iter().map(|s| s.to_string()).collect(),
        Origin {
            flag,
            key,
            from_flag,
        },
    ))
}

fn check_value_size(v: &ValueSizes, origin: Option<&Origin>) -> Result<(), PlanError> {
    let fail = |m: String| match origin {
        Some(o) => o.err(m),
        None => PlanError::Invalid {
            origin: "flag --value-size".into(),
            message: m,
        },
    };
    if v.min() < HEADER_LEN {
        return Err(fail(format!(
            "values of {} B are smaller than the {HEADER_LEN}-byte header that lets bakeoff verify every read; use at least {HEADER_LEN}",
            v.min()
        )));
    }
    if v.max() > 64 << 20 {
        return Err(fail(format!(
            "values of {} B are larger than the 64 MiB bakeoff supports",
            v.max()
        )));
    }
    if let ValueSizes::List(l) = v {
        if l.is_empty() {
            return Err(fail("the list of value sizes is empty".into()));
        }
    }
    Ok(())
}

fn check_capabilities(
    name: &str,
    caps: &Capabilities,
    w: &Workload,
    sweep: &[SweepAxis],
) -> Result<(), String> {
    let mut mixes = vec![w.mix];
    for axis in sweep {
        if let SweepAxis::Mix(m) = axis {
            mixes.extend(m.iter().copied());
        }
    }
    for m in mixes {
        for k in m.kinds() {
            if !caps.ops.contains(&k) {
                return Err(format!(
                    "target {name} cannot do `{}`; remove it from the mix",
                    k.name()
                ));
            }
        }
    }
    if w.pipeline > 1 && !caps.pipelining {
        return Err(format!(
            "target {name} does not support pipelining; use --pipeline 1"
        ));
    }
    if w.request != RequestMode::Op && !caps.requests.contains(&w.request) {
        return Err(format!(
            "target {name} cannot make `{}` requests; use --request op{}",
            w.request.name(),
            if w.request == RequestMode::Phases {
                " (phased requests are MariaDB's)"
            } else {
                " (a connection per request is for the SQL and document stores)"
            }
        ));
    }
    if w.batch > 1 && !caps.batch_load {
        return Err(format!(
            "target {name} cannot load in batches; use --batch 1 (batches are for the SQL and document stores)"
        ));
    }
    Ok(())
}

/// Parses `redis`, `redis://[user][:password@]host:port[?k=v]`.
fn parse_target(text: &str, catalog: &dyn TargetCatalog) -> Result<TargetSpec, String> {
    let Some((scheme, rest)) = text.split_once("://") else {
        let caps = catalog.capabilities(text).ok_or_else(|| {
            format!(
                "unknown target `{text}`; known targets: {} (see `bakeoff list`)",
                catalog.names().join(", ")
            )
        })?;
        if !caps.managed {
            return Err(format!(
                "target {text} cannot be started by bakeoff; give its URL instead"
            ));
        }
        return Ok(TargetSpec {
            name: text.to_string(),
            endpoint: Endpoint::Managed,
            password: None,
            user: None,
        });
    };
    let name = catalog.target_for_scheme(scheme).ok_or_else(|| {
        format!(
            "unknown URL scheme `{scheme}://`; known targets: {} (see `bakeoff list`)",
            catalog.names().join(", ")
        )
    })?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let rest = rest.trim_end_matches('/');
    let (auth, hostport) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    let (user, password) = match auth {
        None => (None, None),
        Some(a) => match a.split_once(':') {
            Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
            None => (Some(a.to_string()), None),
        },
    };
    let hostport = hostport.split('/').next().unwrap_or(hostport);
    let (host, port) = hostport.rsplit_once(':').ok_or_else(|| {
        format!(
            "URL `{}` has no port; write e.g. {scheme}://127.0.0.1:6379",
            redact(text)
        )
    })?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("`{port}` in `{}` is not a port number", redact(text)))?;
    if host.is_empty() {
        return Err(format!("URL `{}` has no host", redact(text)));
    }
    let mut options = BTreeMap::new();
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        options.insert(k.to_string(), v.to_string());
    }
    Ok(TargetSpec {
        name,
        endpoint: Endpoint::External {
            url: redact(text),
            host: host.to_string(),
            port,
            options,
        },
        password,
        user,
    })
}

/// Replaces the password of a URL with `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)] // tests set one flag each
mod tests {
    use super::*;

    struct Cat;
    impl TargetCatalog for Cat {
        fn capabilities(&self, name: &str) -> Option<Capabilities> {
            (name == "redis").then(|| Capabilities {
                ops: OpKind::ALL.to_vec(),
                pipelining: true,
                managed: true,
                url_scheme: Some("redis".into()),
                batch_load: false,
                requests: Vec::new(),
            })
        }
        fn names(&self) -> Vec<String> {
            vec!["redis".into()]
        }
        fn target_for_scheme(&self, s: &str) -> Option<String> {
            (s == "redis").then(|| "redis".into())
        }
        fn check_settings(&self, _: &str, t: &toml::Table) -> Result<(), String> {
            match t.keys().find(|k| *k != "maxmemory") {
                Some(k) => Err(format!("unknown setting `{k}`")),
                None => Ok(()),
            }
        }
        fn default_targets(&self) -> Vec<String> {
            vec!["redis".into()]
        }
    }

    fn build(preset: &str, f: Overrides) -> Result<Plan, PlanError> {
        let raw: RawPreset = toml::from_str(preset).unwrap();
        Plan::build(Some(("p.toml", raw)), &f, &Cat)
    }

    #[test]
    fn flags_override_preset() {
        let mut f = Overrides::default();
        f.workload.clients = Some(Scalar::Str("7".into()));
        let p = build("[workload]\nclients = 3\nrecords = \"10k\"\n", f).unwrap();
        assert_eq!(p.workload.clients, 7);
        assert_eq!(p.workload.records, 10_000);
        assert_eq!(p.name, "p");
    }

    #[test]
    fn errors_name_their_origin() {
        let e = build("[workload]\nclients = 0\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("preset key workload.clients") && e.contains("at least 1"),
            "{e}"
        );
        let mut f = Overrides::default();
        f.workload.mix = Some(Scalar::Str("0:0".into()));
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("flag --mix") && e.contains("sums to 0"), "{e}");
        let mut f = Overrides::default();
        f.workload.value_size = Some(Scalar::Str("10".into()));
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("--value-size") && e.contains("header"), "{e}");
        let mut f = Overrides::default();
        f.targets = vec!["nosuch".into()];
        let e = build("", f).unwrap_err().to_string();
        assert!(
            e.contains("unknown target `nosuch`") && e.contains("redis"),
            "{e}"
        );
        let e = build("[servers.redis]\nbogus = 1\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("servers.redis") && e.contains("bogus"), "{e}");
    }

    #[test]
    fn unknown_preset_key_is_rejected() {
        let e = toml::from_str::<RawPreset>("[workload]\nclient = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("client"), "{e}");
    }

    #[test]
    fn urls_keep_passwords_out() {
        let mut f = Overrides::default();
        f.targets = vec!["redis://:hunter2@127.0.0.1:6390".into()];
        let p = build("", f).unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        assert_eq!(p.targets[0].password.as_deref(), Some("hunter2"));
        assert!(json.contains("redis://:***@127.0.0.1:6390"));
    }

    #[test]
    fn sweep_is_a_cartesian_product() {
        let p = build(
            "[sweep]\nclients = [1, 10]\nvalue_size = [\"1k\", \"10k\", 100]\n",
            Overrides::default(),
        )
        .unwrap();
        let pts = p.points();
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[5].workload.clients, 10);
        assert_eq!(pts[5].workload.value_size, ValueSizes::Fixed(100));
        assert_eq!(pts[5].labels["value_size"], "100");
        assert_eq!(p.run_count(), 6);
    }

    #[test]
    fn duration_and_ops_exclude_each_other_within_one_source() {
        let e = build(
            "[workload]\nduration = \"5s\"\nops = 100\n",
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("either a duration or an operation count"), "{e}");
        let mut f = Overrides::default();
        f.workload.ops = Some(Scalar::Str("100".into()));
        let p = build("[workload]\nduration = \"5s\"\n", f).unwrap();
        assert_eq!((p.workload.ops, p.workload.duration_s), (Some(100), None));
    }
}
