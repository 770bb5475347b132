//! The result file: one JSON document per experiment, versioned, with its
//! JSON Schema in the repository (`schema/result.schema.json`).
//!
//! Every number carries its unit in its name (`_ns`, `_s`, `_bytes`,
//! `_per_s`, `_percent`). Histograms are stored serialised (HdrHistogram V2,
//! base64) so that results from several processes merge exactly.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub use crate::disk::{DeviceWrites, DiskPerWrite};
use crate::plan::{Plan, Workload};
use crate::recorder::{ErrorKind, PhaseStats};
use crate::workload::OpKind;

/// Version of the result file format; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole experiment.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExperimentResult {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Always `bakeoff`.
    pub tool: String,
    /// When the experiment started (RFC 3339, UTC).
    pub started_at: String,
    /// `running` while runs are being added, then `complete`,
    /// `interrupted` (Ctrl-C), or `refused` (a run could not keep its
    /// synchronised start; the warning says why).
    pub status: ExperimentStatus,
    /// The validated plan.
    pub plan: Plan,
    /// The machine and the tool.
    pub environment: Environment,
    /// Each target as it was used (or why it was skipped).
    pub targets: Vec<TargetRecord>,
    /// One entry per finished run.
    pub runs: Vec<RunResult>,
    /// Notes for the reader (client saturation, skipped targets, …).
    pub warnings: Vec<String>,
    /// Peak and capacity searches (`--find-peak`, `--find-capacity`): one
    /// per point and target, naming the runs that were its steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<SearchResult>,
    /// The shard of an experiment run from several machines this file is
    /// (`--shard i/N`), if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// A merged file (`bakeoff merge`): what each shard did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardSummary>,
    /// The order the runs were made in, a round at a time: each round
    /// runs every target at every point once, as `target` or
    /// `target point`, in an order drawn from the seed (`--order random`)
    /// or the plan's (`--order fixed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Vec<String>>,
    /// One row per target and point: each headline figure's median over
    /// the repeats with its 95 % interval, and how steady each run was.
    /// Written with every run; reports render these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<crate::headline::PointSummary>,
    /// What `--precision` reached, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionReport>,
}

/// What `--precision` reached: each bound, met or not, and why the rounds
/// stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrecisionReport {
    /// Rounds made.
    pub repeats: u32,
    /// Why no more were made (`every bound met`, `--max-repeats 30
    /// reached`, `--max-time 600 s reached`, `interrupted`).
    pub stopped_by: String,
    /// Each bound asked.
    pub bounds: Vec<PrecisionOutcome>,
}

/// One bound of `--precision` and what was reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrecisionOutcome {
    /// Which figure.
    pub figure: crate::headline::Headline,
    /// The bound: largest half-width over the median, a fraction.
    pub within: f64,
    /// The widest half-width reached over every target and point;
    /// `None` while some had no interval between runs.
    pub reached: Option<f64>,
    /// Whether every target and point met the bound.
    pub met: bool,
}

impl PrecisionReport {
    /// One line a bound: `throughput within 3.0 %: met (2.1 % at most)`.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "precision: {} repeats, stopped as {}",
            self.repeats, self.stopped_by
        )];
        for b in &self.bounds {
            let reached = b.reached.map_or_else(
                || "no interval between runs yet".to_string(),
                |w| format!("{:.1} % at most", w * 100.0),
            );
            lines.push(format!(
                "  {} within {:.1} %: {} ({reached})",
                b.figure.key(),
                b.within * 100.0,
                if b.met { "met" } else { "not met" }
            ));
        }
        lines
    }
}

/// What a shard records of itself, for `bakeoff merge`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardRecord {
    /// This shard, from 0.
    pub index: u32,
    /// Shards in all.
    pub count: u32,
    /// Hash of the plan every shard ran (the plan without the shard's
    /// index): files of different plans are not merged.
    pub plan_hash: String,
    /// When the measured phase was to start (`--start-at`, RFC 3339), if
    /// the shards started together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_start: Option<String>,
    /// When this shard's first measured phase started (RFC 3339, UTC).
    pub started_at: String,
    /// When its last measured phase ended.
    pub ended_at: String,
    /// This machine's clock minus the target's, ns, as measured before
    /// the start, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ns: Option<i64>,
}

/// One shard's part of a merged run, in the merged file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardSummary {
    /// The shard's own record.
    pub shard: ShardRecord,
    /// The file it came from.
    pub file: String,
    /// Per run of the merged file (in its order): the rate the shard
    /// reached, ops/s (failed operations included).
    pub reached_per_s: Vec<f64>,
    /// The open-loop rate it was asked for, per run (`None`: closed loop).
    pub asked_per_s: Vec<Option<f64>>,
    /// Its start after the planned start, seconds (`None` without one).
    pub start_skew_s: Option<f64>,
    /// Whether any of its runs was limited by the client.
    pub client_bound: bool,
}

/// Where the numbers were measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cores: u32,
    /// Physical memory, bytes.
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
    /// Host name.
    pub hostname: String,
    /// bakeoff version.
    pub bakeoff_version: String,
    /// Seed of the plan.
    pub seed: u64,
    /// The command line, with passwords redacted.
    pub command: String,
}

/// A target as used by the experiment.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetRecord {
    /// Target name.
    pub name: String,
    /// `managed`, `external` or `embedded`.
    pub mode: String,
    /// Endpoint (password redacted), if a network target.
    pub endpoint: Option<String>,
    /// Server or library version as the target reports it.
    pub version: Option<String>,
    /// Settings it was started or opened with, as the target reports them.
    pub settings: BTreeMap<String, String>,
    /// Every declared setting of a managed server or engine as this run
    /// used it: set in the preset or by `--set`, else its declared default.
    /// Settings without a default (left to the target) are absent; so is
    /// the whole map for an external target.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub declared: BTreeMap<String, String>,
    /// What bakeoff sends for each operation, e.g. `SET <key> <value>`.
    pub requests: BTreeMap<String, String>,
    /// Set when the target could not be used; says why and how to fix it.
    pub skipped: Option<String>,
    /// What its settings promise acknowledged writes survive, as declared
    /// beside those settings (`bakeoff list` shows the declarations);
    /// absent for an external target, whose settings are its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_to: Option<crate::durability::DurableTo>,
}

impl TargetRecord {
    /// Whether it runs inside bakeoff's process (an embedded engine), not
    /// behind a network hop.
    pub fn in_process(&self) -> bool {
        self.mode == "embedded"
    }
}

impl TargetRecord {
    /// The record of a server target: `managed` when bakeoff started it,
    /// else `external` at `endpoint`; `describe` says what is sent for
    /// each operation kind.
    pub fn server(
        name: &str,
        managed: bool,
        endpoint: Option<String>,
        version: String,
        settings: BTreeMap<String, String>,
        describe: impl Fn(crate::workload::OpKind) -> String,
    ) -> Self {
        Self {
            name: name.to_string(),
            mode: if managed { "managed" } else { "external" }.into(),
            endpoint,
            version: Some(version),
            settings,
            declared: BTreeMap::new(),
            requests: crate::workload::OpKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), describe(*k)))
                .collect(),
            skipped: None,
            durable_to: None,
        }
    }
}

/// What a peak or capacity search found at one point for one target.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchResult {
    /// Target id.
    pub target: String,
    /// Sweep values of the point searched (without the search's own axis).
    pub point: BTreeMap<String, String>,
    /// `peak` or `capacity`.
    pub kind: String,
    /// The capacity's latency bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<crate::find::LatencyBound>,
    /// Indexes of the runs that were its steps, in order.
    pub runs: Vec<u32>,
    /// The step found: the peak, or the highest rate that held (none if no
    /// step held, or the search was cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<u32>,
    /// Throughput there, ops/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_per_s: Option<f64>,
    /// Clients there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// Open-loop rate asked for there (capacity), ops/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    /// The bound's percentile there (capacity), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
    /// The highest throughput of the closed-loop probe (capacity), ops/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_per_s: Option<f64>,
}

/// Latency percentiles of one histogram, nanoseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Minimum, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// 99.99th percentile, ns.
    pub p9999_ns: u64,
    /// Maximum, ns.
    pub max_ns: u64,
    /// The histogram, HdrHistogram V2 serialisation in base64.
    pub hdr: String,
}

impl LatencySummary {
    /// Summarises and serialises `h`.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self {
                hdr: encode_histogram(h),
                ..Self::default()
            };
        }
        Self {
            count: h.len(),
            mean_ns: h.mean(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            p9999_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
            hdr: encode_histogram(h),
        }
    }
}

/// Serialises a histogram (V2, base64).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .expect("serialising into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// Reads a histogram written by [`encode_histogram`]. Its header is
/// checked against the bounds bakeoff's histograms have before anything
/// is allocated for it: a header that claims more (a forged or corrupt
/// file) would have the decoder allocate what it claims.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    // V2 header: cookie, payload length, normalising index offset,
    // significant digits, lowest discernible and highest trackable value.
    let field = |at: usize, len: usize| -> Option<u64> {
        let b = bytes.get(at..at + len)?;
        Some(b.iter().fold(0u64, |v, &x| (v << 8) | x as u64))
    };
    match (field(12, 4), field(16, 8), field(24, 8)) {
        (Some(digits), Some(lowest), Some(highest))
            if digits <= 3 && (1..=highest).contains(&lowest) && highest <= crate::recorder::MAX_TRACKABLE_NS => {}
        (Some(digits), Some(lowest), Some(highest)) => {
            return Err(format!(
                "histogram header claims {digits} significant digits over {lowest}..{highest} ns, beyond bakeoff's (3 over 1..{} ns): a corrupt or forged file",
                crate::recorder::MAX_TRACKABLE_NS
            ))
        }
        _ => return Err("histogram is shorter than its header".into()),
    }
    // The decoder allocates the payload the header claims: no more than
    // the text holds after the header's 40 bytes.
    let payload = field(4, 4).unwrap_or(0);
    let held = bytes.len().saturating_sub(40) as u64;
    if payload > held {
        return Err(format!(
            "histogram header claims a payload of {payload} bytes, and {held} follow it: a corrupt or forged file"
        ));
    }
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("histogram does not decode: {e:?}"))
}

/// One operation kind within a phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpResult {
    /// Requests sent.
    pub sent: u64,
    /// Operations that succeeded (misses included).
    pub completed: u64,
    /// Reads or deletes that found no record.
    pub misses: u64,
    /// Operations that failed.
    pub failed: u64,
    /// Rows returned (searches); the same on every target for the same seed.
    #[serde(default)]
    pub rows: u64,
    /// Response time: from the intended start (open loop) or the moment the
    /// request was made (closed loop) to the parsed reply.
    pub latency: LatencySummary,
    /// Service time (open loop only): from the actual send.
    pub service_time: Option<LatencySummary>,
}

/// One phase of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseResult {
    /// Wall-clock length, seconds.
    pub duration_s: f64,
    /// Operations that succeeded, all kinds.
    pub completed: u64,
    /// Throughput of successful operations, ops/s.
    pub throughput_per_s: f64,
    /// Misses, all kinds.
    pub misses: u64,
    /// Errors by kind.
    pub errors: BTreeMap<String, u64>,
    /// What the target said the first time an operation failed each way
    /// (its error reply, or the client library's message), by error kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_texts: BTreeMap<String, String>,
    /// Per operation kind (only kinds that ran).
    pub ops: BTreeMap<String, OpResult>,
    /// All kinds together.
    pub all: LatencySummary,
    /// Phased requests (000-mysql-phases): the time of each named step, in
    /// the order they run; their means add up to about the request's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepResult>,
    /// A replication run: reads that found an older version of their record
    /// than one whose write was acknowledged before the read was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_reads: Option<u64>,
    /// Open loop: how late requests were sent, from their intended start
    /// to the send (the client's own lateness, part of every response
    /// time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag: Option<LatencySummary>,
}

/// The time of one named step of a phased request.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepResult {
    /// The step: connect, select_db, set_charset, update, select, insert, close.
    pub name: String,
    /// Its latency.
    pub latency: LatencySummary,
}

impl PhaseResult {
    /// Its errors by kind on one line, each with what the target said the
    /// first time: `server_error 12 ("OOM command not allowed …"), timeout 3`.
    pub fn errors_line(&self) -> String {
        self.errors
            .iter()
            .map(|(k, n)| match self.error_texts.get(k) {
                Some(said) => format!("{k} {n} (first: \"{said}\")"),
                None => format!("{k} {n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Records written per second: the rows of batched writes, or one per
    /// completed write otherwise (the load rate of a load phase).
    pub fn records_written_per_s(&self) -> f64 {
        let written: u64 = ["set", "update"]
            .iter()
            .filter_map(|k| self.ops.get(*k))
            .map(|o| if o.rows > 0 { o.rows } else { o.completed })
            .sum();
        if self.duration_s > 0.0 {
            written as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// Operations finished per second, failed ones included: the rate an
    /// open loop reached, to hold against the rate it asked for.
    pub fn attempted_per_s(&self) -> f64 {
        self.throughput_per_s + self.errors.values().sum::<u64>() as f64 / self.duration_s.max(1e-9)
    }

    /// Builds the result of a phase from merged stats.
    pub fn from_stats(stats: &PhaseStats, duration_s: f64) -> Self {
        let mut ops = BTreeMap::new();
        let mut all = crate::recorder::new_histogram();
        for k in OpKind::ALL {
            let i = k as usize;
            all.add(&stats.response[i]).expect("same bounds");
            if stats.sent[i] == 0 && stats.completed[i] == 0 && stats.failed[i] == 0 {
                continue;
            }
            ops.insert(
                k.name().to_string(),
                OpResult {
                    sent: stats.sent[i],
                    completed: stats.completed[i],
                    misses: stats.misses[i],
                    failed: stats.failed[i],
                    rows: stats.rows[i],
                    latency: LatencySummary::of(&stats.response[i]),
                    service_time: stats.service.as_ref().map(|s| LatencySummary::of(&s[i])),
                },
            );
        }
        let completed: u64 = stats.completed.iter().sum();
        let errors = ErrorKind::ALL
            .iter()
            .filter(|e| stats.errors[**e as usize] > 0)
            .map(|e| (e.name().to_string(), stats.errors[*e as usize]))
            .collect();
        let error_texts = ErrorKind::ALL
            .iter()
            .filter_map(|e| {
                let text = stats.error_texts[*e as usize].as_ref()?;
                Some((e.name().to_string(), text.clone()))
            })
            .collect();
        Self {
            duration_s,
            completed,
            throughput_per_s: if duration_s > 0.0 {
                completed as f64 / duration_s
            } else {
                0.0
            },
            misses: stats.misses.iter().sum(),
            errors,
            error_texts,
            ops,
            all: LatencySummary::of(&all),
            steps: stats
                .steps
                .iter()
                .map(|(name, h)| StepResult {
                    name: name.to_string(),
                    latency: LatencySummary::of(h),
                })
                .collect(),
            stale_reads: None,
            send_lag: stats.send_lag.as_ref().map(LatencySummary::of),
        }
    }

    /// Errors of every kind.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// One second of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelinePoint {
    /// Seconds since the start of the warm-up (or of the measure phase).
    pub t_s: u32,
    /// `load`, `warmup`, `measure` or `read-back`.
    pub phase: Phase,
    /// Successful operations in this second.
    pub ops_per_s: u64,
    /// Errors in this second.
    pub errors: u64,
    /// Misses in this second.
    pub misses: u64,
    /// Median latency, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Maximum, ns.
    pub max_ns: u64,
    /// Client CPU used in this second, percent of one core.
    pub client_cpu_percent: f64,
}

/// One resource sample of a server process (or the bakeoff process for an
/// embedded engine).
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResourceSample {
    /// Seconds since the start of the warm-up.
    pub t_s: f64,
    /// CPU used since the previous sample, percent of one core.
    pub cpu_percent: f64,
    /// CPU used since the previous sample by the server's busiest thread
    /// (or process, for a server of one thread per connection), percent of
    /// one core: 100 % is a server held by one thread.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub busiest_thread_percent: Option<f64>,
    /// Share of the time since the previous sample the block device under
    /// the data directory had requests in flight, percent (every process's
    /// requests on that device, not the server's alone).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub device_busy_percent: Option<f64>,
    /// The machine's CPUs busy since the previous sample, every process's
    /// work together, percent of all its cores: only in files from before
    /// the run's own `machine_cpu` series, which is read for every target.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub machine_cpu_percent: Option<f64>,
    /// Resident set size, bytes, summed over the server's processes: a
    /// page that several of them map (PostgreSQL's shared buffers in each
    /// backend) counts once for each, so it overstates a multi-process
    /// server; see `pss_bytes`.
    pub rss_bytes: u64,
    /// Proportional set size, bytes, summed over the server's processes
    /// (`Pss` of /proc/PID/smaps_rollup): a page shared by several counts
    /// once in total. The server's memory as the reports show it; absent
    /// in files from before it was recorded, where `rss_bytes` stands in.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pss_bytes: Option<u64>,
    /// Bytes the server's processes read from storage since the previous
    /// sample, per second (`read_bytes` of /proc/PID/io).
    pub read_bytes_per_s: f64,
    /// Bytes of pages the server's processes dirtied since the previous
    /// sample, per second (`write_bytes` of /proc/PID/io): charged when a
    /// page is dirtied, and again when a page already written back is
    /// dirtied again, so not what the disk wrote; see
    /// `device_write_bytes_per_s`.
    pub write_bytes_per_s: f64,
    /// Bytes the block device under the data directory wrote since the
    /// previous sample, per second, by its own count (every process's
    /// writes to it, journal and writeback included); absent off a block
    /// device and in files from before it was read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub device_write_bytes_per_s: Option<f64>,
    /// The server's write system calls since the previous sample, per
    /// second.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub write_calls_per_s: Option<f64>,
    /// fsync, fdatasync and msync calls of the server's processes since the
    /// previous sample, per second: counted by the power-cut layer when the
    /// data directory is on it, else by the filesystem's tracepoint.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fsyncs_per_s: Option<f64>,
    /// What the data directory holds of the disk, bytes: the blocks
    /// allocated to its files (apparent sizes in files from before).
    pub disk_bytes: u64,
    /// Replication: how far the replica is behind the primary, bytes of
    /// the replication stream (Redis: the primary's offset less the
    /// replica's).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub replication_lag_bytes: Option<u64>,
    /// Sockets the server's processes hold (every node's): its connections
    /// and its one or two listening sockets; when bakeoff started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Memory (RSS + page cache) charged to the target's capped cgroup,
    /// bytes; only in runs with a memory cap.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cgroup_memory_bytes: Option<u64>,
    /// Page cache charged to that cgroup, bytes; only with a memory cap.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cgroup_cache_bytes: Option<u64>,
    /// A target of several servers (shards, a cluster, a primary and its
    /// replica): each node's own figures, in the order of the run's
    /// `nodes`; the fields above are their sums.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub nodes: Vec<NodeResourceSample>,
}

/// One sample of the machine's CPUs (/proc/stat), every process's work
/// together: the server's, bakeoff's and anyone else's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MachineCpuSample {
    /// Seconds since the start of the warm-up (as a [`ResourceSample`]'s).
    pub t_s: f64,
    /// The machine's CPUs busy since the previous sample, percent of all
    /// its cores.
    pub busy_percent: f64,
}

/// One node's share of a [`ResourceSample`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeResourceSample {
    /// CPU used since the previous sample, percent of one core.
    pub cpu_percent: f64,
    /// Resident set size, bytes.
    pub rss_bytes: u64,
    /// Proportional set size, bytes (see [`ResourceSample::pss_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pss_bytes: Option<u64>,
    /// Bytes read from storage since the previous sample, per second.
    pub read_bytes_per_s: f64,
    /// Bytes written to storage since the previous sample, per second.
    pub write_bytes_per_s: f64,
}

impl NodeResourceSample {
    /// The node's memory: its proportional set size, or its resident set
    /// where that was not recorded.
    pub fn memory_bytes(&self) -> u64 {
        self.pss_bytes.unwrap_or(self.rss_bytes)
    }
}

impl ResourceSample {
    /// The server's memory, each shared page counted once: the summed
    /// proportional set size, or the resident set where that was not
    /// recorded.
    pub fn memory_bytes(&self) -> u64 {
        self.pss_bytes.unwrap_or(self.rss_bytes)
    }
}

/// bakeoff's own use of the machine during the measure phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientUsage {
    /// The loop that carried the requests (`epoll`, `io_uring`,
    /// `in-process`, `async (tokio, one task per client)`).
    pub io_backend: crate::recorder::IoLoop,
    /// Busy fraction of each worker thread, percent: its CPU time doing
    /// work, without the spinning in `spin_percent`.
    pub thread_busy_percent: Vec<f64>,
    /// True when a worker was busy more than 90 % of the time: the client,
    /// not the target, limited the numbers.
    pub client_bound: bool,
    /// Share of each worker thread's time spent spinning out the last
    /// microseconds before an open loop's send times, percent: CPU burnt
    /// to send on time (at most an eighth of the thread), not work.
    #[serde(default)]
    pub spin_percent: Vec<f64>,
    /// The link relay's use of the machine, in a run with `--link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkUsage>,
    /// The client's encoding of each value and what it costs, in a run
    /// whose values are client-encoded (`--encoding`, `--compression`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<crate::encoding::EncodingUsage>,
}

/// What the relay that makes a link (`--link`) cost over the measure job
/// (warm-up and measured phase), apart from the client's workers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LinkUsage {
    /// Busy fraction of the relay's thread, percent.
    pub relay_busy_percent: f64,
    /// True when the relay was busy more than 90 % of the time: the relay,
    /// not the link or the target, may have set the pace.
    pub relay_bound: bool,
    /// The relay's own cost per round trip, measured when it started, µs;
    /// it holds bytes that much less, so the round trip it adds is the
    /// link's.
    pub relay_overhead_us: f64,
    /// Mean time a chunk of bytes left after its due moment, µs
    /// (negative: early), over the relay's life.
    pub mean_late_us: f64,
    /// Chunks of bytes the relay sent on during the measure job.
    pub chunks: u64,
}

impl LinkUsage {
    /// Over `wall` between two samples of the relay.
    pub fn between(
        before: &crate::readings::LinkSample,
        after: &crate::readings::LinkSample,
        wall: std::time::Duration,
    ) -> Option<Self> {
        let wall_ns = wall.as_nanos() as f64;
        if wall_ns <= 0.0 {
            return None;
        }
        let busy = after.cpu_ns.saturating_sub(before.cpu_ns) as f64 / wall_ns * 100.0;
        Some(LinkUsage {
            relay_busy_percent: (busy * 10.0).round() / 10.0,
            relay_bound: busy > 90.0,
            relay_overhead_us: after.overhead_ns as f64 / 1e3,
            mean_late_us: (after.mean_late_ns / 100.0).round() / 10.0,
            chunks: after.chunks.saturating_sub(before.chunks),
        })
    }
}

/// A count bakeoff reports compared with the target's own counter.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CounterCheck {
    /// What is counted, e.g. `GET calls (INFO commandstats)`.
    pub what: String,
    /// bakeoff's count.
    pub bakeoff: u64,
    /// The target's count.
    pub target: u64,
}

/// Self-checks of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Checks {
    /// Closed loop: the mean number of requests outstanding over the
    /// measured window (each request's time inside it, summed, ÷ the
    /// window) ÷ the requests the clients keep in flight; 1.0 when the
    /// client leaves no gap between requests and its latency accounting is
    /// complete (Little's law).
    pub littles_law_ratio: Option<f64>,
    /// Operation counts compared with the target's counters.
    pub counters: Vec<CounterCheck>,
    /// Records the target holds after the load phase, if it can tell.
    pub records_after_load: Option<u64>,
    /// The server's memory just before a load into an empty target (its
    /// processes' proportional set sizes, else resident sets), bytes: what
    /// it holds of its own, taken off before memory is counted per record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_before_load_bytes: Option<u64>,
    /// A replication run: whether the replica caught up after the run and
    /// holds what the primary holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<ReplicaCheck>,
}

/// The server's own time per command over a run's measured phase, as the
/// server counts it (cumulative counters read as the warm-up ends and
/// after the measure job, subtracted); or, with no commands, why the
/// server keeps no such time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerTime {
    /// Where the figures come from (`INFO commandstats`), or why there are
    /// none (memcached's stats have no time per command).
    pub source: String,
    /// Each command the server ran during the measured phase.
    pub commands: Vec<CommandTime>,
}

/// One command's time inside the server, beside the client's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandTime {
    /// The server's name of the command (`get`, `set`).
    pub command: String,
    /// Calls during the job.
    pub calls: u64,
    /// Mean time the server spent per call, µs.
    pub server_mean_us: f64,
    /// The client's mean service time (send to reply) of the operations
    /// the command serves, over the measured phase, µs; `None` when the
    /// command serves none of them.
    pub client_mean_us: Option<f64>,
    /// Time the operations spend in the server outside any one command
    /// (PostgreSQL's commits' WAL write and flush), per operation: a part
    /// of their time inside the server, beside the commands' rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub apart: bool,
    /// The server's distribution of the command's time over the measured
    /// phase, where it keeps one (Redis's `LATENCY HISTOGRAM`), beside the
    /// client's service times of the operations it serves, in the same
    /// power-of-two buckets: two distributions side by side, never a
    /// difference of percentiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<TimeBucket>,
}

/// One bucket of [`CommandTime::histogram`]: the calls the server and the
/// operations the client timed above the bucket before and up to `le_us`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeBucket {
    /// The bucket's upper bound, µs (a power of two).
    pub le_us: u64,
    /// The server's calls in it.
    pub server: u64,
    /// The client's operations in it.
    pub client: u64,
}

/// The replica after a replication run, once its lag was 0 (or bakeoff
/// gave up waiting, after 10 s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplicaCheck {
    /// Seconds after the load until the replica's lag was 0, before the
    /// warm-up began (so that reads at the replica start from the loaded
    /// records); `None`: not within 60 s, or nothing was loaded.
    #[serde(default)]
    pub caught_up_after_load_s: Option<f64>,
    /// Seconds after the run until the replica's lag was 0; `None`: not
    /// within 10 s.
    pub caught_up_after_s: Option<f64>,
    /// Records the primary holds.
    pub primary_records: Option<u64>,
    /// Records the replica holds.
    pub replica_records: Option<u64>,
}

/// Where an experiment stands.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ExperimentStatus {
    /// Runs are being added.
    #[default]
    Running,
    /// Every run was made.
    Complete,
    /// Stopped by a signal before its end.
    Interrupted,
    /// A run could not keep its synchronised start.
    Refused,
}

/// How a run ended.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every operation succeeded (or its failures were what it measured:
    /// a fault's).
    Ok,
    /// Some operations failed.
    Errors,
    /// The run could not be made, or not to its end (its message says
    /// why).
    #[default]
    Failed,
    /// Stopped by a signal before its end.
    Interrupted,
}

/// The phase a second of the timeline belongs to.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Loading the records.
    Load,
    /// The warm-up, excluded from the figures.
    Warmup,
    /// The measured phase.
    #[default]
    Measure,
    /// The durability check's read-back.
    ReadBack,
}

macro_rules! as_str {
    ($t:ty { $($v:ident => $s:literal),* }) => {
        impl $t {
            /// The name the result file uses.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
as_str!(ExperimentStatus { Running => "running", Complete => "complete", Interrupted => "interrupted", Refused => "refused" });
as_str!(RunStatus { Ok => "ok", Errors => "errors", Failed => "failed", Interrupted => "interrupted" });
as_str!(Phase { Load => "load", Warmup => "warmup", Measure => "measure", ReadBack => "read-back" });

/// One run: one target at one point of the matrix, one repeat.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunResult {
    /// Index in the experiment.
    pub index: u32,
    /// Target name.
    pub target: String,
    /// Sweep values of this point.
    pub point: BTreeMap<String, String>,
    /// Repeat number, from 0.
    pub repeat: u32,
    /// The workload as run.
    pub workload: Workload,
    /// `ok`, `errors` (some operations failed), `failed` (with a reason)
    /// or `interrupted` (stopped by a signal before its end: its figures
    /// cover what was measured until then).
    pub status: RunStatus,
    /// Why the run failed or what went wrong, if anything.
    pub message: Option<String>,
    /// The load phase, if one ran.
    pub load: Option<PhaseResult>,
    /// The warm-up, if one ran (not part of the measured numbers).
    pub warmup: Option<PhaseResult>,
    /// `--warmup auto`: the second (of the measure job, from 0) at which
    /// the 5-second window whose throughput and p99 were flat began, the
    /// warm-up ending once it was confirmed (`workload.warmup_s`). Absent
    /// when the warm-up was fixed, or nothing was steady within its bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_steady_from_s: Option<u32>,
    /// The measured phase.
    pub measure: PhaseResult,
    /// When the measure job (its warm-up first) started, RFC 3339 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// This machine's clock minus the target's, ns, as measured before a
    /// synchronised start (`--start-at`), when the target tells the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ns: Option<i64>,
    /// Per-second timeline of warm-up and measure phases.
    pub timeline: Vec<TimelinePoint>,
    /// Server (or process) resource samples, one a second.
    pub resources: Vec<ResourceSample>,
    /// The machine's CPUs, one sample a second, whatever the target (given
    /// by URL, started by bakeoff, or in process): what the server and
    /// bakeoff on one machine left of it. Absent in files from before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_cpu: Vec<MachineCpuSample>,
    /// bakeoff's own CPU.
    pub client: ClientUsage,
    /// Self-checks.
    pub checks: Checks,
    /// The fault injected into the measured run, if the workload asked
    /// for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultRecord>,
    /// The durability check's verdict, if the workload asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durability: Option<crate::durability::DurabilityCheck>,
    /// What reached the server's disk per write of the measured phase (a
    /// server bakeoff started, in a run that wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskPerWrite>,
    /// Requests sent to each node of a target made of several servers
    /// (`--topology shards:N`), in the order of the ring; empty for one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeOps>,
    /// Redis Cluster: the redirections the nodes answered with, all
    /// phases (`--topology cluster:N`); absent for other topologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirections: Option<Redirections>,
    /// The run failed because its target did not open (a server that
    /// would not start, an engine with no room for its files): nothing
    /// was loaded or measured.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub did_not_open: bool,
    /// The trace a replay sent: its operations, keys, span, what was
    /// skipped, and its own rate second by second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::TraceSummary>,
    /// The latency of single measured operations in time order (every Nth
    /// once more were measured), when the workload asked for a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::trace::LatencyTrace>,
    /// The server's own time per command over the measured phase, beside
    /// the client's, when the server times its commands (Redis,
    /// PostgreSQL), or why it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_time: Option<ServerTime>,
    /// What limited the run, named from its evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
    /// What the engine did besides serving while the measure job ran
    /// (checkpoints, compactions, forks), or why it tells nothing of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<BackgroundWork>,
}

/// What the engine did besides serving while the measure job ran, as it
/// tells (its own counters, looked at while the job ran, or its log), and
/// the latency of the measured seconds it did it in beside the others'.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackgroundWork {
    /// Where the figures come from (`INFO persistence`), or why there are
    /// none (LMDB has no background threads).
    pub source: String,
    /// How often bakeoff looked, ms (0: it did not).
    pub every_ms: u32,
    /// The work seen, in the order it started.
    pub bands: Vec<BackgroundBand>,
    /// The measured seconds any band overlaps, all operations merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<SecondsLatency>,
    /// The other measured seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<SecondsLatency>,
}

/// One stretch of background work on the run's timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BackgroundBand {
    /// What ran (`checkpoint`, `compaction`, `bgsave`, `fork`).
    pub what: String,
    /// From, seconds on the run's timeline.
    pub from_s: f64,
    /// To, seconds on the run's timeline; equal to `from_s` for work seen
    /// only as finished between two looks (a mark).
    pub to_s: f64,
    /// What it did, as the engine tells (`wrote 1234 buffers`).
    pub detail: String,
    /// Its times are the engine's own (a log line's); else they are the
    /// looks', each within one look's interval of the truth.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
}

/// Latency over a set of measured seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecondsLatency {
    /// How many seconds.
    pub seconds: u32,
    /// Operations finished in them.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Maximum, ns.
    pub max_ns: u64,
}

/// What limited a run: one line for the summary, the evidence behind it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bottleneck {
    /// Which resource.
    pub kind: BottleneckKind,
    /// The summary's line ("server CPU: redis's busiest thread at 98 %").
    pub line: String,
    /// The figures it was judged from, each a sentence.
    pub evidence: Vec<String>,
}

/// The resource that limited a run.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum BottleneckKind {
    /// bakeoff's own threads (or, in process, the engine in them).
    Client,
    /// The server's busiest thread (its one thread, for Redis).
    ServerCpu,
    /// The machine's CPUs, shared by the server and bakeoff.
    MachineCpu,
    /// The block device under the data directory.
    Disk,
    /// The relay that makes a link.
    Link,
    /// The engine's background work, holding writes back (RocksDB's
    /// write stops and delays while compaction is behind).
    Background,
    /// None of these: a run held to its rate, or nothing near full.
    #[default]
    None,
}

/// Redirections a Redis Cluster answered requests with: each is a request
/// that went again to another node (and counts as sent there only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Redirections {
    /// `MOVED`: the slot is served elsewhere for good.
    pub moved: u64,
    /// `ASK`: the slot is being migrated, and this key is already at the
    /// node it is going to.
    pub ask: u64,
}

/// The requests the client sent one node of a sharded target, all phases
/// (the load, the warm-up and the measured phase).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeOps {
    /// The node's address.
    pub node: String,
    /// Requests sent to it (a redirected request counts where it was
    /// served).
    pub sent: u64,
    /// Redis Cluster: the requests it redirected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirected: Option<Redirections>,
}

impl RunResult {
    /// Whether the run failed before its load or measure began: its target
    /// did not open (a server that would not start, an engine with no room
    /// for its files).
    pub fn failed_to_start(&self) -> bool {
        self.status == RunStatus::Failed && self.did_not_open
    }

    /// Whether bakeoff's own threads set the pace, so that the numbers
    /// measure bakeoff as much as the target: a client thread was busy
    /// (`client.client_bound`, the raw measurement) and the run's judged
    /// bottleneck, where it has one, is the client. A busy client on a
    /// machine whose CPUs the server and bakeoff filled together was
    /// judged limited by the machine: more threads would have taken from
    /// the server, so it is not called client-bound.
    pub fn client_limited(&self) -> bool {
        self.client.client_bound
            && self
                .bottleneck
                .as_ref()
                .is_none_or(|b| b.kind == BottleneckKind::Client)
    }

    /// How evenly the nodes shared the requests: the busiest node's count
    /// over the mean (1.0 is even; `None` for one server).
    pub fn node_balance(&self) -> Option<f64> {
        if self.nodes.len() < 2 {
            return None;
        }
        let total: u64 = self.nodes.iter().map(|n| n.sent).sum();
        let max = self.nodes.iter().map(|n| n.sent).max()?;
        (total > 0).then(|| max as f64 * self.nodes.len() as f64 / total as f64)
    }
}

/// What a fault did to a run.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultRecord {
    /// `kill` or `restart`.
    pub kind: crate::plan::FaultKind,
    /// When it was injected, seconds on the run's timeline (from the start
    /// of the load if one ran, else of the warm-up).
    pub at_s: f64,
    /// From the fault until the restarted server's own process held its
    /// port again, seconds; `None` if it did not come back.
    pub back_after_s: Option<f64>,
    /// From the fault until the first whole second whose throughput was
    /// back to 90 % of the slowest whole second before the fault, seconds
    /// (1 s resolution); `None` if it never was within the run.
    pub recovered_after_s: Option<f64>,
    /// Why the server could not be brought back, if it could not.
    pub error: Option<String>,
}

impl FaultRecord {
    /// The first whole second at or after `at_s` with throughput back to
    /// 90 % of the slowest whole second before it: its start minus
    /// `at_s`. The slowest, not the mean: on a shared machine throughput
    /// drifts 10–40 % from second to second, and a mean of the fastest
    /// seconds is a level the server may not see again, fault or none.
    pub fn recovery(timeline: &[TimelinePoint], at_s: f64) -> Option<f64> {
        let slowest = timeline
            .iter()
            .filter(|p| (p.t_s as f64) + 1.0 <= at_s)
            .map(|p| p.ops_per_s)
            .min()?;
        timeline
            .iter()
            .filter(|p| p.t_s as f64 >= at_s.floor() + 1.0)
            .find(|p| p.ops_per_s as f64 >= 0.9 * slowest as f64)
            .map(|p| (p.t_s as f64 - at_s).max(0.0))
    }
}

impl ExperimentResult {
    /// Every latency histogram of every run that does not decode, each as
    /// `run 3, measure, get: why`: a corrupt or hand-edited file, whose
    /// percentiles are then only as the file states them.
    pub fn histogram_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for run in &self.runs {
            let phases = [
                ("load", run.load.as_ref()),
                ("warm-up", run.warmup.as_ref()),
                ("measure", Some(&run.measure)),
            ];
            for (phase, p) in phases {
                let Some(p) = p else { continue };
                let mut summaries = vec![("all kinds".to_string(), &p.all)];
                for (kind, op) in &p.ops {
                    summaries.push((kind.clone(), &op.latency));
                    if let Some(s) = &op.service_time {
                        summaries.push((format!("{kind} service time"), s));
                    }
                }
                if let Some(l) = &p.send_lag {
                    summaries.push(("send lag".into(), l));
                }
                for (what, summary) in summaries {
                    if let Err(why) = decode_histogram(&summary.hdr) {
                        out.push(format!("run {}, {phase}, {what}: {why}", run.index));
                    }
                }
            }
        }
        out
    }

    /// Writes the result atomically: a temporary file beside `path`, then a
    /// rename, so a reader (or a crash) never sees half a file.
    /// A path that exists but is not a regular file (`/dev/stdout`, a
    /// pipe) is written straight through: renaming over it would replace
    /// the device.
    pub fn write_atomic(&self, path: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return write_to_special(path, &json);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        let written = (|| {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&json)?;
            f.sync_all()
        })()
        .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            // A full disk or a failed rename leaves no half file behind.
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Reads a result file, refusing other schema versions with a clear message.
    pub fn read(path: &Path) -> Result<Self, ResultFileError> {
        let shown = || path.display().to_string();
        let text = read_bounded(path).map_err(|e| match e {
            Bounded::Io(source) => ResultFileError::Read {
                path: shown(),
                source,
            },
            Bounded::TooLarge => ResultFileError::TooLarge {
                path: shown(),
                limit: MAX_RESULT_BYTES,
            },
            Bounded::Binary => ResultFileError::Binary { path: shown() },
        })?;
        // A pod's log (`run --print-result`): the file follows the marker,
        // on a line of its own (inside the JSON it can only stand in a
        // string, never alone on a line).
        let text = match text
            .rfind(&format!("\n{LOG_MARKER}\n"))
            .map(|at| at + 1)
            .or_else(|| text.starts_with(&format!("{LOG_MARKER}\n")).then_some(0))
        {
            Some(at) => &text[at + LOG_MARKER.len()..],
            None => text.as_str(),
        };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ResultFileError::NotJson {
                path: shown(),
                message: e.to_string(),
            })?;
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(n) if n == SCHEMA_VERSION as u64 => {}
            Some(found) => {
                return Err(ResultFileError::Version {
                    path: shown(),
                    found,
                })
            }
            None => return Err(ResultFileError::NotResult { path: shown() }),
        }
        // The path of the field that does not match (`runs[1].measure.
        // completed`), which serde's own message leaves out.
        let result: Self =
            serde_path_to_error::deserialize(v).map_err(|e| ResultFileError::Schema {
                path: shown(),
                message: format!("at {}: {}", e.path(), e.inner()),
            })?;
        // A file written by hand may ask what cannot be measured; it would
        // be judged without a word.
        for (i, r) in result.plan.requirements.iter().enumerate() {
            r.check().map_err(|e| ResultFileError::Schema {
                path: shown(),
                message: format!("at plan.requirements[{i}]: {e}"),
            })?;
        }
        Ok(result)
    }
}

/// Writes `bytes` to `path`, which is no regular file (a device, a FIFO,
/// `/dev/stdout`): in place, never replaced. A FIFO that no one reads is
/// an error at once, where a plain open would wait for a reader for ever.
pub fn write_to_special(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => std::io::Error::new(
                e.kind(),
                format!("{} is a FIFO that no one reads", path.display()),
            ),
            _ => e,
        })?;
    // Opened without waiting; written the plain way (a pipe's reader may
    // be slower than bakeoff).
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    (&f).write_all(bytes)
}

/// The line after which `bakeoff run --print-result` prints the result
/// file, so that it can be taken from a log that holds other lines too.
pub const LOG_MARKER: &str = "--- bakeoff result file ---";

/// The largest result file bakeoff reads: far past any it writes (the
/// largest seed experiment's is a few MB; traces are capped), and short of
/// what would exhaust memory reading `/dev/zero` or a wrong file.
pub const MAX_RESULT_BYTES: u64 = 1 << 30;

/// Why [`read_bounded`] gave up.
enum Bounded {
    Io(std::io::Error),
    TooLarge,
    Binary,
}

/// The text of `path`, read in chunks: refused once it passes
/// [`MAX_RESULT_BYTES`] (at once for a regular file that is larger), or as
/// soon as a NUL byte shows it is no text.
fn read_bounded(path: &Path) -> Result<String, Bounded> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(Bounded::Io)?;
    let meta = f.metadata().map_err(Bounded::Io)?;
    if meta.is_file() && meta.len() > MAX_RESULT_BYTES {
        return Err(Bounded::TooLarge);
    }
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Bounded::Io(e)),
        };
        if chunk[..n].contains(&0) {
            return Err(Bounded::Binary);
        }
        if bytes.len() as u64 + n as u64 > MAX_RESULT_BYTES {
            return Err(Bounded::TooLarge);
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(bytes).map_err(|e| {
        Bounded::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {e}"),
        ))
    })
}

/// A result file could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// It is larger than any result file.
    #[error("{path} is larger than {limit} bytes, more than any result file bakeoff writes: is it a result file (JSON)?")]
    TooLarge {
        /// The file.
        path: String,
        /// [`MAX_RESULT_BYTES`].
        limit: u64,
    },
    /// It holds NUL bytes: no text.
    #[error("{path} is not a result file: it holds binary data (NUL bytes), where a result file is JSON text")]
    Binary {
        /// The file.
        path: String,
    },
    /// It is not JSON.
    #[error("{path} is not JSON: {message}")]
    NotJson {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// It has no schema version: not a result file.
    #[error("{path} is not a bakeoff result file (no schema_version)")]
    NotResult {
        /// The file.
        path: String,
    },
    /// Another version of bakeoff wrote it.
    #[error("{path} has result schema version {found}; this bakeoff reads version {SCHEMA_VERSION}. Use the bakeoff version that wrote it")]
    Version {
        /// The file.
        path: String,
        /// Its version.
        found: u64,
    },
    /// It is JSON of the right version but does not match the schema.
    #[error("{path} does not match the result schema: {message}")]
    Schema {
        /// The file.
        path: String,
        /// The mismatch.
        message: String,
    },
}

/// The JSON Schema of [`ExperimentResult`].
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ExperimentResult)).expect("schema serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result file to write and read back: the mock experiment the
    /// snapshots hold.
    fn mock_result() -> ExperimentResult {
        serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json"))
            .expect("the mock snapshot is a result")
    }

    /// A histogram whose header claims bounds no bakeoff histogram has
    /// (the highest value 2^62 at 5 significant digits: gigabytes of
    /// counts) is refused before anything is allocated for it.
    #[test]
    fn a_histogram_header_beyond_bakeoffs_bounds_is_refused() {
        let honest = encode_histogram(&crate::recorder::new_histogram());
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(&honest)
            .unwrap();
        // V2 header: cookie, payload length, normalising offset,
        // significant digits (12..16), lowest (16..24), highest (24..32).
        bytes[12..16].copy_from_slice(&5u32.to_be_bytes());
        bytes[24..32].copy_from_slice(&(1u64 << 62).to_be_bytes());
        let forged = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let e = decode_histogram(&forged).unwrap_err();
        assert!(e.contains("beyond"), "{e}");
        assert!(decode_histogram(&honest).is_ok());
        // A payload claimed past what the text holds is refused before
        // the decoder allocates it (it took 2.1 GB for a 21 KB file).
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(&honest)
            .unwrap();
        bytes[4..8].copy_from_slice(&(2u32 << 30).to_be_bytes());
        let forged = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let e = decode_histogram(&forged).unwrap_err();
        assert!(e.contains("claims a payload of 2147483648 bytes"), "{e}");
    }

    /// Recovery is measured against the slowest second before the fault:
    /// the 71k, 59k ops/s before and 55k, 47k after of a run on a busy
    /// machine recovered at once, where the mean (65k) was never seen
    /// again and the restart was said never to have recovered.
    #[test]
    fn recovery_is_judged_against_the_slowest_second_before_the_fault() {
        let point = |t_s: u32, ops_per_s: u64| TimelinePoint {
            t_s,
            ops_per_s,
            ..TimelinePoint::default()
        };
        let timeline = [
            point(0, 71_018),
            point(1, 58_948),
            point(2, 4_000),
            point(3, 55_161),
            point(4, 47_440),
        ];
        assert_eq!(FaultRecord::recovery(&timeline, 2.0), Some(1.0));
        let never = [
            point(0, 70_000),
            point(1, 60_000),
            point(2, 0),
            point(3, 10_000),
        ];
        assert_eq!(FaultRecord::recovery(&never, 2.0), None);
        assert_eq!(
            FaultRecord::recovery(&never, 0.5),
            None,
            "nothing before it"
        );
    }

    /// A requirement written by hand that cannot be measured (p150, a
    /// negative percentile at rate 0, memory at 0 records) is refused
    /// when the file is read, never judged.
    #[test]
    fn nonsense_requirements_in_a_result_file_are_refused_when_read() {
        use crate::plan::Requirement;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        for (bad, needle) in [
            (
                Requirement::Latency {
                    percentile: 150.0,
                    at_most_ns: 1_000_000,
                    rate_per_s: 1000.0,
                },
                "p150 is no percentile",
            ),
            (
                Requirement::Latency {
                    percentile: -1.0,
                    at_most_ns: 1_000_000,
                    rate_per_s: 0.0,
                },
                "no percentile",
            ),
            (
                Requirement::Memory {
                    at_most_bytes: 1 << 30,
                    records: 0,
                },
                "0 records",
            ),
        ] {
            let mut r = mock_result();
            r.plan.requirements = vec![bad];
            r.write_atomic(&path).unwrap();
            let e = ExperimentResult::read(&path).unwrap_err().to_string();
            assert!(
                e.contains("plan.requirements[0]") && e.contains(needle),
                "{e}"
            );
        }
    }

    /// A file that does not match the schema names the field that does
    /// not, and histograms that do not decode are told, each by where it
    /// stands, rather than passed over.
    #[test]
    fn schema_errors_name_the_field_and_broken_histograms_are_told() {
        let dir = tempfile::tempdir().unwrap();
        let mut v = serde_json::to_value(mock_result()).unwrap();
        v["runs"][1]["measure"]["completed"] = serde_json::json!("many");
        let path = dir.path().join("bad.json");
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        let e = ExperimentResult::read(&path).unwrap_err().to_string();
        assert!(e.contains("runs[1].measure.completed"), "{e}");
        let mut r = mock_result();
        assert!(r.histogram_problems().is_empty());
        r.runs[0].measure.all.hdr = "not base64!".into();
        let get = r.runs[1].measure.ops.get_mut("get").unwrap();
        get.latency.hdr = "AAAA".into();
        let problems = r.histogram_problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("run 0, measure, all kinds:"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("run 1, measure, get:"),
            "{problems:?}"
        );
    }

    /// A description that holds the marker of a pod's log reads back: the
    /// marker counts only as a line of its own.
    #[test]
    fn a_description_holding_the_log_marker_reads_back() {
        let mut r = mock_result();
        r.plan.description = format!("copied from a log: {LOG_MARKER} and on");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("marked.json");
        r.write_atomic(&path).unwrap();
        let back = ExperimentResult::read(&path).unwrap();
        assert_eq!(back.plan.description, r.plan.description);
        // And a log with the marker on its own line still gives the file.
        let json = std::fs::read_to_string(&path).unwrap();
        let log = dir.path().join("pod.log");
        std::fs::write(&log, format!("starting\n{LOG_MARKER}\n{json}")).unwrap();
        assert_eq!(
            ExperimentResult::read(&log).unwrap().plan.description,
            r.plan.description
        );
    }

    /// A file that is no text (NUL bytes: /dev/zero, a binary) is refused
    /// at once, and nothing past the size of the largest result file is
    /// read: reading /dev/zero ends with an error, not when memory does.
    #[test]
    fn endless_or_binary_input_is_refused_without_reading_it_all() {
        let e = ExperimentResult::read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not a result file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.json");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_RESULT_BYTES + 1).unwrap();
        let e = ExperimentResult::read(&big).unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
    }

    #[test]
    fn histograms_roundtrip() {
        let mut h = crate::recorder::new_histogram();
        for v in [100, 2000, 30000, 400000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
    }
}
