//! Configuration in two stages: a raw preset (TOML) plus raw flags, merged
//! and validated into one serialisable [`Plan`] that the runner executes
//! and the result file echoes.
//!
//! - [`params`]: every workload parameter, declared once (flag, preset key,
//!   sweep axis, default, parsing and checks).
//! - [`raw`]: the preset and the flags as given.
//! - [`workload`]: the validated workload of one run.
//! - [`sweep`]: sweep axes and the points they make.
//! - [`target`]: targets, their capabilities and URLs.
//! - [`fault`]: a fault injected into a measured run.
//! - [`link`]: a network link between clients and server.
//! - [`topology`]: how many servers make a target.
//!
//! Every check that involves more than one field lives in [`Plan::build`],
//! and every error names the flag or preset key it came from.

pub mod fault;
pub mod link;
pub mod params;
pub mod price;
pub mod provoke;
pub mod raw;
pub mod require;
pub mod shard;
pub mod sweep;
pub mod target;
pub mod topology;
pub mod workload;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::profile::RecordKind;
use crate::units::parse_count;
use crate::workload::OpKind;
use params::{param, Param, PARAMS};

pub use fault::{Fault, FaultKind};
pub use link::Link;
pub use price::Prices;
pub use provoke::{Provoke, Work};
pub use raw::{Environment, Overrides, RawPreset, Scalar};
pub use require::{LeftOut, Requirement};
pub use shard::{Shard, StartAt};
pub use sweep::{Point, SweepAxis};
pub use target::{
    parse_target, redact, Capabilities, Endpoint, TargetCatalog, TargetSpec, UrlPassword,
    PASSWORD_ENV_KEY,
};
pub use topology::{ReadFrom, Topology};
pub use workload::{IoBackend, Mix, RequestMode, Workload};

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
    /// The preset's scale that was run (`full`: as written; `quick`: the
    /// test suite's seconds-long version).
    #[serde(default = "full_scale")]
    pub scale: String,
    /// What the seed report found, for the report to set beside this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// Targets, in order.
    pub targets: Vec<TargetSpec>,
    /// The base workload (before sweep values are applied).
    pub workload: Workload,
    /// The base workload of the targets whose workload differs
    /// (`[per_target.NAME]`), by target name; the others run `workload`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_target: BTreeMap<String, Workload>,
    /// Sweep axes (their cartesian product gives the points).
    pub sweep: Vec<SweepAxis>,
    /// Times each point runs on each target.
    pub repeats: u32,
    /// The order of runs within each round of repeats.
    #[serde(default)]
    pub order: RunOrder,
    /// Bounds on the figures' 95 % intervals (`--precision`): rounds are
    /// added past `repeats` until each is met, or `max_repeats` or
    /// `max_time_s` is reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<PrecisionBound>,
    /// Most repeats `precision` may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeats: Option<u32>,
    /// Most seconds `precision` may take, from the experiment's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<f64>,
    /// Seed of every generator.
    pub seed: u64,
    /// Managed servers' settings, per target name, and per variant
    /// (`redis[persistence=aof-always]`: its name's table with the
    /// variant's settings over it).
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub servers: BTreeMap<String, toml::Table>,
    /// The shard of the experiment this process runs (`--shard i/N`), when
    /// several machines run it together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// When the measured run starts (`--start-at`), for shards that start
    /// together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartAt>,
    /// What the user requires of a store (`--require`): the report says
    /// which targets meet it all, ranked by what they cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<Requirement>,
    /// What the user pays for CPU, memory and disk (`--price`): the fit
    /// answer counts its costs in dollars with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// Candidates left out before anything ran, as no setting of theirs
    /// can meet the requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

/// The order of the runs of a round (each round runs every target at
/// every point once).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RunOrder {
    /// A new order each round, drawn from the seed, so that a drift of the
    /// machine spreads over every target (randomised multiple interleaved
    /// trials).
    Random,
    /// The plan's order every round: points in turn, the targets in the
    /// order given (the order of files written before rounds existed).
    #[default]
    Fixed,
}

impl RunOrder {
    /// Parses `random` or `fixed`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "random" => Ok(RunOrder::Random),
            "fixed" => Ok(RunOrder::Fixed),
            other => Err(format!(
                "`{other}` is not an order; use random (a new order each round, drawn from the seed) or fixed (the targets as given)"
            )),
        }
    }
}

/// A bound on a figure's interval: its half-width over the median at most
/// `within` (0.03 for 3 %).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrecisionBound {
    /// Which figure.
    pub figure: crate::headline::Headline,
    /// Largest half-width over the median, as a fraction.
    pub within: f64,
}

impl PrecisionBound {
    /// Parses `throughput=3%,p99=10%`.
    pub fn parse_list(text: &str) -> Result<Vec<Self>, String> {
        use crate::headline::Headline;
        let names: Vec<&str> = Headline::ALL.iter().map(|h| h.key()).collect();
        text.split(',')
            .map(|part| {
                let (name, bound) = part.trim().split_once('=').ok_or_else(|| {
                    format!("`{part}` is not FIGURE=PERCENT, e.g. throughput=3%,p99=10%")
                })?;
                let figure = Headline::from_key(name.trim()).ok_or_else(|| {
                    format!("`{name}` is not a figure; use one of {}", names.join(", "))
                })?;
                let number = bound.trim().trim_end_matches('%').trim();
                let percent: f64 = number
                    .parse()
                    .ok()
                    .filter(|p: &f64| p.is_finite() && *p > 0.0 && *p < 100.0)
                    .ok_or_else(|| {
                        format!("`{bound}` is not a percentage between 0 and 100, e.g. 3%")
                    })?;
                Ok(PrecisionBound {
                    figure,
                    within: percent / 100.0,
                })
            })
            .collect()
    }
}

/// Most repeats `--precision` takes when `--max-repeats` is not given.
pub const PRECISION_MAX_REPEATS: u32 = 30;

impl Plan {
    /// The most rounds this plan may run: `repeats`, or with precision
    /// asked, `max_repeats`.
    pub fn max_rounds(&self) -> u32 {
        if self.precision.is_empty() {
            self.repeats
        } else {
            self.max_repeats
                .unwrap_or(PRECISION_MAX_REPEATS)
                .max(self.repeats)
        }
    }
}

fn full_scale() -> String {
    raw::FULL_SCALE.to_string()
}

/// Where a value came from, for error messages.
#[derive(Clone)]
struct Origin {
    flag: String,
    key: String,
    from_flag: bool,
}

impl Origin {
    /// A workload parameter given in `[workload]` or by its flag.
    fn param(p: &Param, from_flag: bool) -> Self {
        Origin {
            flag: p.flag_name(),
            key: format!("workload.{}", p.key),
            from_flag,
        }
    }

    /// A sweep axis given in `[sweep]` or by its flag.
    fn axis(p: &Param, from_flag: bool) -> Self {
        Origin {
            flag: p
                .sweep
                .as_ref()
                .map(|s| format!("--{}", s.flag))
                .unwrap_or_default(),
            key: format!("sweep.{}", p.key),
            from_flag,
        }
    }

    /// A setting outside the workload (`--repeats`, `targets`).
    fn other(flag: &str, key: &str, from_flag: bool) -> Self {
        Origin {
            flag: flag.into(),
            key: key.into(),
            from_flag,
        }
    }

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

/// The parameter named `key` in table `section` of a preset, or an error
/// that names the closest one.
fn declared(key: &str, section: &str, sweepable: bool) -> Result<&'static Param, PlanError> {
    let known = PARAMS
        .iter()
        .filter(move |p| !sweepable || p.sweep.is_some())
        .map(|p| p.key);
    match param(key) {
        Some(p) if !sweepable || p.sweep.is_some() => Ok(p),
        Some(_) => Err(unknown_key(
            section,
            key,
            "this parameter is not a sweep axis",
            known,
        )),
        None => Err(unknown_key(section, key, "unknown key", known)),
    }
}

/// Preset key `section.key` is not one of `known`: says so (`why`), with
/// the closest known key and the list.
fn unknown_key<'k>(
    section: &str,
    key: &str,
    why: &str,
    known: impl Iterator<Item = &'k str> + Clone,
) -> PlanError {
    PlanError::Invalid {
        origin: format!("preset key {section}.{key}"),
        message: format!(
            "{why}; {}known keys: {}",
            crate::suggest::did_you_mean(key, known.clone())
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default(),
            known.collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The text of a preset value (`100000`, `"100k"`, `true`).
fn text_of(value: &toml::Value, origin: &Origin) -> Result<String, PlanError> {
    match value {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(x) => Ok(x.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(origin.err(format!("`{other}` is not a number, a word or true/false"))),
    }
}

/// Values given for the workload parameters and sweep axes, flags over
/// the preset, each with where it came from.
#[derive(Clone, Default)]
struct Given {
    values: BTreeMap<&'static str, (String, Origin)>,
    axes: BTreeMap<&'static str, (Vec<String>, Origin)>,
}

impl Given {
    fn collect(raw: &RawPreset, flags: &Overrides) -> Result<Self, PlanError> {
        let mut given = Given::default();
        for (key, value) in &raw.workload {
            let p = declared(key, "workload", false)?;
            let origin = Origin::param(p, false);
            given
                .values
                .insert(p.key, (text_of(value, &origin)?, origin));
        }
        let sections = [
            ("fault", &raw.fault, &params::FAULT_KEYS[..]),
            ("topology", &raw.topology, &params::TOPOLOGY_KEYS[..]),
        ];
        for (section, table, keys) in sections {
            for (key, value) in table {
                let Some((_, name)) = keys.iter().find(|(k, _)| k == key) else {
                    let known = keys.iter().map(|(k, _)| *k);
                    return Err(unknown_key(section, key, "unknown key", known));
                };
                let p = param(name).expect("section keys name parameters");
                let origin = Origin {
                    key: format!("{section}.{key}"),
                    ..Origin::param(p, false)
                };
                if given.values.contains_key(p.key) {
                    return Err(origin.err(format!(
                        "also given as workload.{}; give it once, in [{section}]",
                        p.key
                    )));
                }
                given
                    .values
                    .insert(p.key, (text_of(value, &origin)?, origin));
            }
        }
        if !raw.link.is_empty() {
            let p = param("link").expect("link is a parameter");
            let mut parts = Vec::new();
            for (key, value) in &raw.link {
                let origin = Origin {
                    key: format!("link.{key}"),
                    ..Origin::param(p, false)
                };
                if !params::LINK_KEYS.contains(&key.as_str()) {
                    return Err(unknown_key(
                        "link",
                        key,
                        "unknown key",
                        params::LINK_KEYS.iter().copied(),
                    ));
                }
                parts.push(format!("{key}={}", text_of(value, &origin)?));
            }
            let origin = Origin {
                key: "link".into(),
                ..Origin::param(p, false)
            };
            if given.values.contains_key(p.key) {
                return Err(origin.err("also given as workload.link; give it once, in [link]"));
            }
            given.values.insert(p.key, (parts.join(","), origin));
        }
        for (key, text) in &flags.workload {
            let p = declared(key, "workload", false)?;
            // A flag for one of two exclusive parameters replaces the
            // preset's other one.
            for other in p.excludes {
                if given.values.get(other).is_some_and(|(_, o)| !o.from_flag) {
                    given.values.remove(other);
                }
            }
            given
                .values
                .insert(p.key, (text.clone(), Origin::param(p, true)));
        }
        for (key, list) in &raw.sweep {
            let p = declared(key, "sweep", true)?;
            let origin = Origin::axis(p, false);
            let toml::Value::Array(items) = list else {
                return Err(origin.err(format!(
                    "a sweep axis is a list of values, e.g. {key} = [1, 10, 100]"
                )));
            };
            let texts = items
                .iter()
                .map(|v| text_of(v, &origin))
                .collect::<Result<Vec<_>, _>>()?;
            given.axes.insert(p.key, (texts, origin));
        }
        for (key, texts) in &flags.sweep {
            let p = declared(key, "sweep", true)?;
            if given.values.get(p.key).is_some_and(|(_, o)| o.from_flag) {
                let axis = Origin::axis(p, true);
                return Err(axis.err(format!(
                    "{} is given too, and the sweep's values would replace it at every point; give one of them",
                    p.flag_name()
                )));
            }
            given
                .axes
                .insert(p.key, (texts.clone(), Origin::axis(p, true)));
        }
        Ok(given)
    }

    /// The values for target `target`: its `[per_target.NAME]` keys over
    /// the preset's, each flag still over both.
    fn for_target(
        &self,
        target: &str,
        keys: &BTreeMap<String, toml::Value>,
    ) -> Result<Self, PlanError> {
        let section = format!("per_target.{target}");
        let mut given = self.clone();
        for (key, value) in keys {
            let p = declared(key, &section, false)?;
            let origin = Origin {
                key: format!("{section}.{key}"),
                ..Origin::param(p, false)
            };
            if let Some((_, o)) = self.axes.get(p.key) {
                return Err(origin.err(format!(
                    "{key} is also swept ({}); a swept parameter is the same for every target",
                    o.describe()
                )));
            }
            if self.values.get(p.key).is_some_and(|(_, o)| o.from_flag) {
                continue;
            }
            given
                .values
                .insert(p.key, (text_of(value, &origin)?, origin));
        }
        Ok(given)
    }

    fn has(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// Where `p`'s value came from: its sweep axis when it is swept.
    fn origin_or_axis(&self, p: &'static str) -> Origin {
        match self.axes.get(p) {
            Some((_, o)) => o.clone(),
            None => self.origin(p),
        }
    }

    fn origin(&self, p: &'static str) -> Origin {
        match self.values.get(p) {
            Some((_, o)) => o.clone(),
            None => Origin::param(param(p).expect("declared"), false),
        }
    }
}

/// The base workload: defaults, then the values given, then the checks
/// that involve more than one parameter.
fn workload(given: &Given) -> Result<Workload, PlanError> {
    let mut w = params::defaults();
    for p in PARAMS {
        if let Some((text, origin)) = given.values.get(p.key) {
            let value = (p.parse)(text).map_err(|m| origin.err(m))?;
            p.put(&mut w, &value);
        }
    }
    for counted in ["ops", "ops_per_client"] {
        if !given.has(counted) {
            continue;
        }
        if let Some(other) = ["duration", "ops", "ops_per_client"]
            .into_iter()
            .find(|o| *o != counted && given.has(o))
        {
            return Err(given.origin(counted).err(format!(
                "give one of a duration, an operation count and a count per client, not {counted} and {other}"
            )));
        }
        w.duration_s = None;
    }
    w.threads = w.threads.min(w.clients);
    // `auto` is the default only where it can work: a timed run long
    // enough to judge a trend over, with no fault whose moment counts
    // from the start. Elsewhere the default is a fixed warm-up.
    let too_short = w
        .duration_s
        .is_none_or(|d| d < crate::stats::STEADY_WINDOW_S as f64);
    if w.warmup_auto
        && !given.has("warmup")
        && (w.fault.is_some() || w.provoke.is_some() || too_short)
    {
        w.warmup_auto = false;
        w.warmup_s = workload::FIXED_WARMUP_S;
    }
    // A fault and background work are each asked for at a moment of the
    // run, and keep the same limits for the same reasons.
    let moments = [
        w.fault
            .as_ref()
            .map(|f| ("fault", "a fault", f.to_string(), f.to_s)),
        w.provoke
            .as_ref()
            .map(|p| ("provoke", "background work", p.to_string(), p.at_s)),
    ];
    for (key, what, text, at_s) in moments.into_iter().flatten() {
        check_moment(&w, &given.origin(key), what, &text, at_s)?;
    }
    if w.durability {
        let origin = given.origin("durability");
        let most = crate::durability::MAX_WRITERS + 1;
        if w.clients > most {
            return Err(origin.err(format!(
                "the durability check has one writer per client, at most {most}; lower --clients"
            )));
        }
        if w.record != crate::profile::RecordKind::Kv || w.request != RequestMode::Op {
            return Err(origin.err(
                "the durability check writes key-value records, one operation per request; drop --record and --request",
            ));
        }
    }
    if w.find_peak || w.find_capacity.is_some() {
        if given.has("rate") || given.axes.contains_key("rate") {
            return Err(given.origin_or_axis("rate").err(
                "a search sets the rate itself (the peak runs closed loop, the capacity search bisects the rate): leave out the rate",
            ));
        }
        if w.find_peak && given.axes.contains_key("clients") {
            return Err(given.origin_or_axis("clients").err(
                "--find-peak chooses the clients itself (1, 2, 4, … until throughput stops rising): leave out the clients sweep",
            ));
        }
    }
    if w.durability {
        for key in ["mix", "key_distribution"] {
            if given.has(key) || given.axes.contains_key(key) {
                return Err(given.origin_or_axis(key).err(
                    "the durability check writes fresh ids, one per acknowledgement, and reads them back: it uses no mix and no key distribution; leave it out",
                ));
            }
        }
    }
    let mix_given = given.has("mix");
    let update_only = Mix {
        weights: [0, 0, 1, 0, 0, 0, 0, 0],
    };
    if w.request == RequestMode::Phases {
        // A phased request is its own script: it updates, so the mix is
        // update-only.
        if mix_given && w.mix != update_only {
            return Err(given
                .origin("mix")
                .err("a phased request (--request phases) is a fixed script; leave out the mix"));
        }
        w.mix = update_only;
    }
    if w.batch > 1 && w.record == RecordKind::Profile {
        return Err(given.origin("batch").err(
            "batched loads write kv records; profile rows load one per request (use --batch 1)",
        ));
    }
    if w.record == RecordKind::Profile && !mix_given {
        // Profile records are there to be searched.
        w.mix = Mix {
            weights: [0, 0, 0, 0, 1, 0, 0, 0],
        };
    }
    check_workload_against_itself(&w, given)?;
    if !w.value_form().is_plain() && w.record != RecordKind::Kv {
        return Err(given.origin("encoding").err(
            "client-side encodings and compression are for key-value records; drop --record profile",
        ));
    }
    if w.encoding != crate::encoding::Encoding::Raw && given.has("value_size") {
        return Err(given.origin("value_size").err(format!(
            "--encoding {} sets the value's size (the encoded array); leave out the value size",
            w.encoding.name()
        )));
    }
    Ok(w)
}

/// Something asked for at a moment of the run (`what`, written `text`,
/// at `at_s` from the measure job's start): the moment needs a timed run
/// with a fixed warm-up, before its end, and no search, whose every step
/// would have it.
fn check_moment(
    w: &Workload,
    origin: &Origin,
    what: &str,
    text: &str,
    at_s: f64,
) -> Result<(), PlanError> {
    let Some(d) = w.duration_s else {
        return Err(origin.err(format!(
            "{what} ({text}) needs a timed run; give --duration instead of --ops"
        )));
    };
    if w.warmup_auto {
        return Err(origin.err(format!(
            "the moment of {what} ({text}) counts from the run's start, and `--warmup auto` moves where the measured phase starts; give a fixed --warmup (e.g. 2s)"
        )));
    }
    if at_s >= w.warmup_s + d {
        return Err(origin.err(format!(
            "{text} is past the end of the run ({} s warm-up + {d} s measured); give an earlier moment or a longer --duration",
            w.warmup_s
        )));
    }
    if w.find_peak || w.find_capacity.is_some() {
        return Err(origin.err(format!(
            "a search makes run after run and keeps the best; {what} in each would find its own peak, not the target's: run {text} without --find-peak or --find-capacity"
        )));
    }
    Ok(())
}

/// `search` needs profile records, and profile records are only searched.
/// The checks of one point's workload that involve more than one
/// parameter, each refusal named after the parameter to change.
fn check_workload_against_itself(w: &Workload, given: &Given) -> Result<(), PlanError> {
    if let Some(n) = w.server_cpus.filter(|&n| n as u64 > machine_cpus()) {
        return Err(given.origin("server_cpus").err(format!(
            "this machine lets bakeoff use {} CPU(s), fewer than {n}; give at most that many",
            machine_cpus()
        )));
    }
    if w.replay.is_some() && (w.durability || w.find_peak || w.find_capacity.is_some() || w.grow) {
        return Err(given.origin("replay").err(
            "a replayed trace sets the operations and their times itself; leave out --durability, --find-peak, --find-capacity and growth",
        ));
    }
    check_replay(w, given)?;
    check_link(w, given)?;
    check_mix_against_record(w, &given.origin("mix"))?;
    check_fields(w, &given.origin_or_axis("fields"))?;
    check_pipeline_against_requests(w, &given.origin_or_axis("pipeline"))
}

/// A link a request cannot cross within its timeout would fail every
/// request; one over which the load alone takes far longer than the run
/// would hold it for minutes without a word.
fn check_link(w: &Workload, given: &Given) -> Result<(), PlanError> {
    let Some(link) = &w.link else {
        return Ok(());
    };
    let rtt_s = link.rtt_ns as f64 / 1e9;
    let origin = given.origin_or_axis("link");
    if rtt_s >= w.timeout_s {
        return Err(origin.err(format!(
            "--link {link} adds a round trip of {}, and a request times out after {} (--timeout): every request would fail; raise --timeout above the round trip, or shorten it",
            crate::units::fmt_duration_s(rtt_s),
            crate::units::fmt_duration_s(w.timeout_s)
        )));
    }
    if w.load && w.replay.is_none() {
        let rows_per_trip = f64::from(w.clients.max(1)) * f64::from(w.batch.max(1));
        let load_s = w.records as f64 / rows_per_trip * rtt_s;
        let run_s = w.warmup_s + w.duration_s.unwrap_or(0.0);
        let most = (10.0 * run_s).max(60.0);
        if load_s > most {
            return Err(origin.err(format!(
                "over --link {link}, loading {} records {} at a time takes at least {} (a round trip each), more than {} for a run of {}: give --batch or more --clients, fewer --records, or --no-load to measure what the server holds",
                w.records,
                rows_per_trip,
                crate::units::fmt_duration_s(load_s),
                crate::units::fmt_duration_s(most),
                crate::units::fmt_duration_s(run_s)
            )));
        }
    }
    Ok(())
}

/// A replay takes its operations, times, rate and sizes from the trace:
/// a flag that would set them is refused rather than dropped, as is a
/// speed with no trace; the speed keeps a replay within the rate `--rate`
/// allows and the time bakeoff lets a replay take.
fn check_replay(w: &Workload, given: &Given) -> Result<(), PlanError> {
    let Some(path) = &w.replay else {
        if given.has("replay_speed") || given.axes.contains_key("replay_speed") {
            return Err(given
                .origin_or_axis("replay_speed")
                .err("a replay speed is for a trace; give --replay FILE, or leave the speed out"));
        }
        return Ok(());
    };
    for (key, what) in [
        ("mix", "operations"),
        ("rate", "rate"),
        ("duration", "length"),
        ("ops", "operation count"),
        ("ops_per_client", "operation count"),
        ("value_size", "value sizes"),
        ("records", "records"),
    ] {
        if given.has(key) || given.axes.contains_key(key) {
            return Err(given.origin_or_axis(key).err(format!(
                "a replayed trace sets its own {what}; leave this out (--replay-speed runs it faster or slower)"
            )));
        }
    }
    // The trace was read when --replay was parsed; a failure was said
    // there.
    let Ok(trace) = crate::replay::load(path) else {
        return Ok(());
    };
    let span_s = trace.span_ns() as f64 / 1e9;
    // The speed, where one was given; else the trace itself.
    let origin = if given.has("replay_speed") || given.axes.contains_key("replay_speed") {
        given.origin_or_axis("replay_speed")
    } else {
        given.origin("replay")
    };
    let speed = w.replay_speed;
    if span_s / speed > crate::replay::MAX_REPLAY_S {
        return Err(origin.err(format!(
            "the trace spans {}; at {speed}x its replay would take {}, past bakeoff's limit of {}: give --replay-speed {} or more, or replay a part of it",
            crate::units::fmt_duration_s(span_s),
            crate::units::fmt_duration_s(span_s / speed),
            crate::units::fmt_duration_s(crate::replay::MAX_REPLAY_S),
            (span_s / crate::replay::MAX_REPLAY_S).ceil()
        )));
    }
    let rate = trace.ops.len() as f64 / span_s.max(1e-3) * speed;
    if rate > 1e9 {
        return Err(origin.err(format!(
            "at {speed}x the trace asks for {rate:.3e} ops/s, more than a request a nanosecond, the most an open loop can schedule (as --rate); give a lower --replay-speed"
        )));
    }
    Ok(())
}

/// A record of several fields is a fixed-size value cut into equal fields
/// of a header each, written whole by every writer bakeoff has.
fn check_fields(w: &Workload, origin: &Origin) -> Result<(), PlanError> {
    if w.fields <= 1 {
        return Ok(());
    }
    let n = w.fields as usize;
    let size = match w.value_size {
        crate::workload::ValueSizes::Fixed(size) => size,
        _ => {
            return Err(origin.err(format!(
                "{n} fields need one value size to cut into equal fields; give --value-size one size (e.g. {})",
                n * 100
            )))
        }
    };
    if !size.is_multiple_of(n) || size / n <= crate::value::HEADER_LEN {
        return Err(origin.err(format!(
            "a value of {size} bytes does not cut into {n} equal fields of more than {} bytes (each carries its own header); give --value-size a multiple of {n} of at least {}",
            crate::value::HEADER_LEN,
            n * (crate::value::HEADER_LEN + 1)
        )));
    }
    let other = if w.replay.is_some() {
        Some("a replayed trace, whose values have the trace's sizes")
    } else if w.durability {
        Some("the durability check, whose values carry its run's mark")
    } else if w.record == RecordKind::Profile {
        Some("profile records")
    } else if !w.value_form().is_plain() {
        Some("client-encoded values")
    } else if w.batch > 1 {
        Some("a batched load")
    } else if w.topology.nodes() > 1 {
        Some("several servers (each node's request counts do not yet tell an update's read from its write)")
    } else {
        None
    };
    match other {
        Some(what) => Err(origin.err(format!(
            "records of {n} fields do not go with {what}; leave out --fields or that"
        ))),
        None => Ok(()),
    }
}

/// Pipelining is for key-value operations on kept connections: only they
/// travel through the wire codecs that pipeline, and the rest would
/// ignore it.
fn check_pipeline_against_requests(w: &Workload, origin: &Origin) -> Result<(), PlanError> {
    if w.pipeline <= 1 {
        return Ok(());
    }
    let unpipelined = if w.mix.weights[OpKind::Search as usize] > 0 {
        "searches are"
    } else if w.record == RecordKind::Profile {
        "profile records are"
    } else if w.request != RequestMode::Op {
        "requests on a connection of their own are"
    } else {
        return Ok(());
    };
    Err(origin.err(format!(
        "a pipeline of {}: {unpipelined} not pipelined, only key-value operations on kv; use --pipeline 1",
        w.pipeline
    )))
}

fn check_mix_against_record(w: &Workload, origin: &Origin) -> Result<(), PlanError> {
    let search = OpKind::Search as usize;
    if w.record == RecordKind::Kv && w.mix.weights[search] > 0 {
        return Err(origin.err(
            "`search` needs the profile table: set --record profile (workload.record = \"profile\")",
        ));
    }
    if w.record == RecordKind::Profile
        && w.mix
            .weights
            .iter()
            .enumerate()
            .any(|(i, n)| *n > 0 && i != search)
    {
        return Err(origin
            .err("profile records are only searched here; use a mix of 0:0:0:0:1 (search only)"));
    }
    Ok(())
}

/// The base workloads of the targets whose workload differs
/// (`[per_target.NAME]`), by target name, each checked at every point.
fn per_target(
    raw: &RawPreset,
    given: &Given,
    workload: &Workload,
    sweep: &[SweepAxis],
    requirements: &[Requirement],
    catalog: &dyn TargetCatalog,
) -> Result<BTreeMap<String, Workload>, PlanError> {
    let mut per_target = BTreeMap::new();
    for (name, keys) in &raw.per_target {
        if catalog.capabilities(name).is_none() {
            return Err(PlanError::Invalid {
                origin: format!("preset key per_target.{name}"),
                message: format!(
                    "unknown target `{name}`; known targets: {}",
                    catalog.names().join(", ")
                ),
            });
        }
        let given = given.for_target(name, keys)?;
        let w = at_required_rate(self::workload(&given)?, requirements)?;
        if (w.grow, w.find_peak, &w.find_capacity)
            != (workload.grow, workload.find_peak, &workload.find_capacity)
        {
            return Err(PlanError::Invalid {
                origin: format!("preset key per_target.{name}"),
                message: "growth and searches shape the whole experiment; give them in [workload], for every target".into(),
            });
        }
        for p in &sweep::expand(&w, sweep) {
            check_workload_against_itself(&p.workload, &given)?;
        }
        per_target.insert(name.clone(), w);
    }
    Ok(per_target)
}

/// The requirements: `--require` flags, else the preset's `require`.
fn requirements(raw: &RawPreset, flags: &Overrides) -> Result<Vec<Requirement>, PlanError> {
    let (texts, origin) = if flags.require.is_empty() {
        (&raw.require, Origin::other("--require", "require", false))
    } else {
        (&flags.require, Origin::other("--require", "require", true))
    };
    texts
        .iter()
        .map(|t| Requirement::parse(t).map_err(|m| origin.err(m)))
        .collect()
}

/// `w` with the rate a latency requirement holds it at: an open loop, its
/// latency counted from each request's intended start.
fn at_required_rate(mut w: Workload, requirements: &[Requirement]) -> Result<Workload, PlanError> {
    let origin = Origin::other("--require", "require", true);
    for r in requirements {
        if let Requirement::Latency { rate_per_s, .. } = r {
            if w.replay.is_some() {
                return Err(origin.err(format!(
                    "`{r}` is judged at {rate_per_s:.0}/s, and a replay runs at its trace's own rate; leave out --replay or the latency requirement"
                )));
            }
            if w.rate.is_some_and(|x| x != *rate_per_s) {
                return Err(origin.err(format!(
                    "`{r}` runs at {rate_per_s:.0}/s, and --rate asks for {:.0}/s; leave --rate out",
                    w.rate.unwrap_or(0.0)
                )));
            }
            if w.find_peak || w.find_capacity.is_some() {
                return Err(origin.err(format!(
                    "`{r}` is answered at its rate, not by a search; leave out --find-peak and --find-capacity"
                )));
            }
            w.rate = Some(*rate_per_s);
        }
    }
    Ok(w)
}

/// The targets that can meet `requirements`, each with the settings that
/// make it keep writes as required, and the others with why not.
fn candidates(
    targets: Vec<TargetSpec>,
    requirements: &[Requirement],
    servers: &BTreeMap<String, toml::Table>,
    catalog: &dyn TargetCatalog,
) -> Result<(Vec<TargetSpec>, Vec<LeftOut>), PlanError> {
    if requirements.is_empty() {
        return Ok((targets, Vec::new()));
    }
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    'each: for mut spec in targets {
        let caps = catalog
            .capabilities(&spec.name)
            .expect("the targets were checked");
        for r in requirements {
            let why = match *r {
                Requirement::Reach { in_process } if in_process == caps.network => Some(format!(
                    "it is reached {}, and `{r}` is required",
                    if caps.network {
                        "over the network"
                    } else {
                        "in the application's process"
                    }
                )),
                Requirement::Durable { class } => match &spec.endpoint {
                    Endpoint::External { .. } => Some(format!(
                        "bakeoff did not start it, so its settings are its own and declare nothing; name -t {} to let bakeoff start one with settings that keep writes through a {class}",
                        spec.name
                    )),
                    Endpoint::Managed => match catalog.durable_settings(
                        &spec.name,
                        class,
                        // What `--set` or the preset gave counts as given
                        // too: a setting that keeps writes otherwise is
                        // never overridden in silence.
                        &servers
                            .get(&spec.name)
                            .into_iter()
                            .flatten()
                            .map(|(k, v)| {
                                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                                (k.clone(), v)
                            })
                            .chain(spec.variant.clone())
                            .collect(),
                    ) {
                        Ok(extra) => {
                            spec.variant.extend(extra);
                            None
                        }
                        Err(why) => Some(why),
                    },
                },
                _ => None,
            };
            if let Some(why) = why {
                left_out.push(LeftOut {
                    target: spec.label(),
                    why,
                });
                continue 'each;
            }
        }
        kept.push(spec);
    }
    if kept.is_empty() {
        let why: Vec<String> = left_out
            .iter()
            .map(|l| format!("{}: {}", l.target, l.why))
            .collect();
        return Err(Origin::other("--require", "require", true).err(format!(
            "no target can meet these requirements: {}",
            why.join("; ")
        )));
    }
    Ok((kept, left_out))
}

/// The CPUs bakeoff may use on this machine.
fn machine_cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as u64
}

/// The values of a `server_cpus` axis this machine can give: a preset's
/// values beyond its CPUs are left out, with a note, while one is left
/// (a preset written for two CPUs runs its first point on one); a flag's
/// are the user's own, and refused.
fn cpus_this_machine_has(
    values: Vec<serde_json::Value>,
    origin: &Origin,
    notes: &mut Vec<String>,
) -> Result<Vec<serde_json::Value>, PlanError> {
    let here = machine_cpus();
    let fits = |v: &serde_json::Value| v.as_u64().is_none_or(|n| n <= here);
    let (fit, beyond): (Vec<_>, Vec<_>) = values.into_iter().partition(|v| fits(v));
    if beyond.is_empty() {
        return Ok(fit);
    }
    let listed = beyond
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if origin.from_flag || fit.is_empty() {
        return Err(origin.err(format!(
            "this machine lets bakeoff use {here} CPU(s); {listed} cannot be given: give at most {here}"
        )));
    }
    notes.push(format!(
        "This machine lets bakeoff use {here} CPU(s): the point(s) server_cpus = {listed} are left out."
    ));
    Ok(fit)
}

/// Most points a sweep may make (the product of its axes' lengths): the
/// matrix is built whole, and each point is a run per target and repeat.
pub const MAX_POINTS: usize = 10_000;

/// Sweep axes in the order of [`PARAMS`] (the first outermost), each value
/// parsed and checked as its parameter's.
fn sweep(
    given: &Given,
    base: &Workload,
    notes: &mut Vec<String>,
) -> Result<Vec<SweepAxis>, PlanError> {
    let mut axes = Vec::new();
    let mut points = 1usize;
    for p in PARAMS {
        let Some((texts, origin)) = given.axes.get(p.key) else {
            continue;
        };
        if texts.is_empty() {
            return Err(origin.err("the list is empty; give at least one value"));
        }
        points = points.saturating_mul(texts.len());
        if points > MAX_POINTS {
            return Err(origin.err(format!(
                "the sweep makes more than {MAX_POINTS} points (the product of its axes' lengths), each a run per target; sweep fewer values"
            )));
        }
        let mut values = texts
            .iter()
            .map(|t| (p.parse)(t).map_err(|m| origin.err(m)))
            .collect::<Result<Vec<_>, _>>()?;
        if p.key == "server_cpus" {
            values = cpus_this_machine_has(values, origin, notes)?;
        }
        // The same point twice would be run twice, and read as repeats.
        let mut seen = std::collections::HashSet::new();
        if let Some(i) = values.iter().position(|v| !seen.insert(v.to_string())) {
            return Err(origin.err(format!(
                "`{}` is in the list twice; give each value once (use --repeats to run a point again)",
                texts[i]
            )));
        }
        axes.push(SweepAxis {
            axis: p.key.to_string(),
            values,
        });
    }
    if base.grow {
        let origin = given.origin("grow");
        let checkpoints: Vec<u64> = match axes.as_slice() {
            [axis] if axis.axis == "records" => {
                axis.values.iter().filter_map(|v| v.as_u64()).collect()
            }
            _ => return Err(origin.err(
                "growth needs record-count checkpoints and no other sweep axis: add --sweep-records 1m,2m,5m (sweep.records)",
            )),
        };
        if checkpoints.windows(2).any(|w| w[0] >= w[1]) {
            return Err(
                origin.err("growth checkpoints must increase, e.g. --sweep-records 1m,2m,5m")
            );
        }
        if !base.load {
            return Err(origin.err(
                "growth loads the records between checkpoints; remove --no-load (workload.load = false)",
            ));
        }
    }
    Ok(axes)
}

/// `--repeats` / `repeats` or `--seed` / `seed`.
fn experiment_number(
    flag_v: &Option<String>,
    preset_v: &Option<Scalar>,
    flag: &str,
    key: &str,
    default: u64,
    parse: fn(&str) -> Result<u64, String>,
) -> Result<u64, PlanError> {
    let (text, origin) = match (flag_v, preset_v) {
        (Some(t), _) => (t.clone(), Origin::other(flag, key, true)),
        (None, Some(v)) => (v.to_string(), Origin::other(flag, key, false)),
        (None, None) => return Ok(default),
    };
    parse(&text).map_err(|m| origin.err(m))
}

/// How the repeats run as rounds: their order, and the bounds that add
/// rounds past them (`--precision`, `--max-repeats`, `--max-time`).
struct Rounds {
    order: RunOrder,
    precision: Vec<PrecisionBound>,
    max_repeats: Option<u32>,
    max_time_s: Option<f64>,
}

/// A text given by `flag` (first) or preset key `key`, parsed; `None` when
/// neither gives it. An error names where the text came from.
fn flag_or_key<T>(
    flag_v: Option<&String>,
    preset_v: Option<&String>,
    flag: &str,
    key: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, PlanError> {
    let (text, from_flag) = match (flag_v, preset_v) {
        (Some(t), _) => (t, true),
        (None, Some(t)) => (t, false),
        (None, None) => return Ok(None),
    };
    parse(text)
        .map(Some)
        .map_err(|m| Origin::other(flag, key, from_flag).err(m))
}

/// The rounds of a plan of `repeats` repeats, from flags over the preset.
fn rounds(raw: &RawPreset, flags: &Overrides, repeats: u32) -> Result<Rounds, PlanError> {
    let precision = flag_or_key(
        flags.precision.as_ref(),
        raw.precision.as_ref(),
        "--precision",
        "precision",
        PrecisionBound::parse_list,
    )?
    .unwrap_or_default();
    let max_repeats = match (&flags.max_repeats, &raw.max_repeats) {
        (None, None) => None,
        _ => Some(experiment_number(
            &flags.max_repeats,
            &raw.max_repeats,
            "--max-repeats",
            "max_repeats",
            u64::from(PRECISION_MAX_REPEATS),
            |s| match parse_count(s)? {
                n if n < 6 => Err(format!(
                    "{n} repeats cannot give a 95 % interval between runs; use 6 or more"
                )),
                n if n > 10_000 => Err(format!("{n} repeats is too many")),
                n => Ok(n),
            },
        )? as u32),
    };
    let max_time_s = flag_or_key(
        flags.max_time.as_ref(),
        raw.max_time.as_ref(),
        "--max-time",
        "max_time",
        |t| crate::units::parse_duration(t).map(|d| d.as_secs_f64()),
    )?;
    if (max_repeats.is_some() || max_time_s.is_some()) && precision.is_empty() {
        return Err(Origin::other("--max-repeats", "max_repeats", true).err(
            "--max-repeats and --max-time bound --precision's rounds; give --precision too, e.g. --precision throughput=3%",
        ));
    }
    // Several rounds are interleaved at random; one round keeps the
    // plan's order (a sweep's points in turn).
    let order = flag_or_key(
        flags.order.as_ref(),
        raw.order.as_ref(),
        "--order",
        "order",
        RunOrder::parse,
    )?
    .unwrap_or(if repeats > 1 || !precision.is_empty() {
        RunOrder::Random
    } else {
        RunOrder::Fixed
    });
    Ok(Rounds {
        order,
        precision,
        max_repeats,
        max_time_s,
    })
}

/// The targets: `--target` flags, else the preset's, else the catalog's
/// default comparison; each must be able to run every point.
fn targets(
    raw: &RawPreset,
    flags: &Overrides,
    catalog: &dyn TargetCatalog,
    points_of: &dyn Fn(&str) -> Vec<Point>,
) -> Result<Vec<TargetSpec>, PlanError> {
    let (texts, origin) = if !flags.targets.is_empty() {
        (
            flags
                .targets
                .iter()
                .flat_map(|t| split_target_list(t))
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>(),
            Origin::other("--target", "targets", true),
        )
    } else if let Some(t) = &raw.targets {
        (t.clone(), Origin::other("--target", "targets", false))
    } else {
        (
            catalog.default_targets(),
            Origin::other("--target", "targets", false),
        )
    };
    if texts.iter().all(|t| t.is_empty()) {
        return Err(origin.err("no targets; name at least one, e.g. --target redis"));
    }
    let mut targets = Vec::new();
    for text in texts.iter().filter(|t| !t.is_empty()) {
        let spec = target::parse_target(text, catalog, &flags.env).map_err(|m| origin.err(m))?;
        let caps = catalog
            .capabilities(&spec.name)
            .expect("parse_target checked the name");
        let points = points_of(&spec.name);
        let some_replica = points
            .iter()
            .any(|p| p.workload.topology == Topology::PrimaryReplica);
        for p in &points {
            target::check_capabilities(&spec.name, &caps, &p.workload)
                .map_err(|m| origin.err(m))?;
            target::check_nodes_of_url(&spec, &p.workload).map_err(|m| origin.err(m))?;
            let topology = p.workload.topology;
            // Reads from a replica where no point has one would read from
            // the primary without a word.
            if p.workload.read_from == ReadFrom::Replica && !some_replica {
                return Err(
                    Origin::param(
                        param("read_from").expect("declared"),
                        flags.workload.contains_key("read_from"),
                    ).err(format!(
                        "reads from a replica need one: use --topology primary-replica (not {topology}), or sweep it with single as the baseline"
                    )),
                );
            }
            // A single server serves the reads itself (the baseline of a
            // replication sweep); shards and clusters have no replica.
            if p.workload.read_from == ReadFrom::Replica
                && !matches!(topology, Topology::Single | Topology::PrimaryReplica)
            {
                return Err(Origin::param(
                    param("read_from").expect("declared"),
                    flags.workload.contains_key("read_from"),
                )
                .err(format!(
                    "reads from a replica need one: use --topology primary-replica (not {topology})"
                )));
            }
            if topology != Topology::Single {
                if !caps.topologies.iter().any(|t| t == topology.kind()) {
                    let can: Vec<String> = catalog
                        .names()
                        .into_iter()
                        .filter(|n| {
                            catalog
                                .capabilities(n)
                                .is_some_and(|c| c.topologies.iter().any(|t| t == topology.kind()))
                        })
                        .collect();
                    return Err(origin.err(format!(
                        "--topology {topology}: target {} cannot have it; {}",
                        spec.label(),
                        if can.is_empty() {
                            "no target bakeoff knows can yet".to_string()
                        } else {
                            format!("targets that can: {}", can.join(", "))
                        }
                    )));
                }
                if let Some(f) = &p.workload.fault {
                    return Err(origin.err(format!(
                        "--fault {f} with --topology {topology}: faults strike a single server; drop one of them"
                    )));
                }
                if let Some(w) = &p.workload.provoke {
                    return Err(origin.err(format!(
                        "--provoke {w} with --topology {topology}: background work is asked of a single server; drop one of them"
                    )));
                }
                if !matches!(spec.endpoint, Endpoint::Managed) {
                    return Err(origin.err(format!(
                        "--topology {topology}: bakeoff starts the nodes itself; name the target (e.g. -t {}) rather than a URL",
                        spec.name
                    )));
                }
            }
            if let Endpoint::External { more, .. } = &spec.endpoint {
                if !more.is_empty() && !caps.topologies.iter().any(|t| t == "shards") {
                    return Err(origin.err(format!(
                        "{}: several hosts in one URL make shards, and target {} cannot be sharded; give one host (targets that can: those with --topology shards, see `bakeoff list`)",
                        spec.label(),
                        spec.name
                    )));
                }
            }
            if let (Some(l), false) = (&p.workload.link, caps.network) {
                let can: Vec<String> = catalog
                    .names()
                    .into_iter()
                    .filter(|n| catalog.capabilities(n).is_some_and(|c| c.network))
                    .collect();
                return Err(origin.err(format!(
                    "--link {l}: target {} runs inside bakeoff, with no network to delay; a link is for the servers: {}",
                    spec.label(),
                    can.join(", ")
                )));
            }
            if let (Some(l), Endpoint::External { host, options, .. }) =
                (&p.workload.link, &spec.endpoint)
            {
                // PostgreSQL's socket directory as the host, or MySQL's
                // `?socket=PATH`.
                let socket = options.get("socket").map(String::as_str);
                if let Some(path) = socket.or(host.starts_with('/').then_some(host.as_str())) {
                    return Err(origin.err(format!(
                        "--link {l}: a link relays TCP, and {} is reached by its Unix socket ({path}); give the server's host:port in the URL, without a socket, to run it over a link",
                        spec.label()
                    )));
                }
            }
            if let (Some(f), Endpoint::External { .. }) = (&p.workload.fault, &spec.endpoint) {
                return Err(origin.err(format!(
                    "--fault {f} needs a server bakeoff started; {} runs elsewhere (name the target, e.g. -t {}, to have bakeoff start it)",
                    spec.label(),
                    spec.name
                )));
            }
        }
        targets.push(spec);
    }
    tell_apart(&mut targets).map_err(|m| origin.err(m))?;
    Ok(targets)
}

/// Names targets that would share a name apart: two URLs of one kind by
/// their address (`redis@127.0.0.1:6380`), the same managed target given
/// twice by its turn (`redis#2`); a name the user gave twice is refused.
fn tell_apart(targets: &mut [TargetSpec]) -> Result<(), String> {
    for i in 0..targets.len() {
        let id = targets[i].id();
        let same: Vec<usize> = (0..targets.len())
            .filter(|&j| targets[j].id() == id)
            .collect();
        if same.len() < 2 {
            continue;
        }
        if targets[i].alias.is_some() {
            return Err(format!(
                "two targets are called `{id}`; give each its own name (-t NAME=TARGET)"
            ));
        }
        let addresses: Vec<Option<String>> = same.iter().map(|&j| targets[j].address()).collect();
        let distinct = addresses.iter().all(Option::is_some)
            && addresses
                .iter()
                .enumerate()
                .all(|(a, x)| addresses[a + 1..].iter().all(|y| y != x));
        for (turn, &j) in same.iter().enumerate() {
            targets[j].alias = Some(match (&addresses[turn], distinct) {
                (Some(address), true) => format!("{}@{address}", targets[j].name),
                _ => format!("{id}#{}", turn + 1),
            });
        }
    }
    Ok(())
}

/// Splits `-t a,b[k=v,k2=v2],c` at the commas between targets, not at
/// those between a variant's settings, nor at those between the hosts of
/// one URL (`memcached://h1:11211,h2:11211`: a `host:port` after a URL is
/// another node of it, the last one followed by the URL's query, if any).
pub fn split_target_list(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in split_outside_brackets(text) {
        // The last node carries the URL's query, if it has one.
        let node = part.split_once('?').map_or(part, |(node, _)| node);
        let node_of_previous = !part.contains("://")
            && node.rsplit_once(':').is_some_and(|(h, p)| {
                !h.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
            });
        match out.last_mut() {
            Some(prev) if node_of_previous && prev.contains("://") => {
                prev.push(',');
                prev.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// Splits at the commas outside `[...]`.
fn split_outside_brackets(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// `--start-at` and `--start-tolerance`, checked.
fn start_at(flags: &Overrides) -> Result<Option<StartAt>, PlanError> {
    let tolerance = match &flags.start_tolerance {
        None => shard::START_TOLERANCE,
        Some(t) => {
            let origin = Origin::other("--start-tolerance", "", true);
            let d = crate::units::parse_duration(t).map_err(|m| origin.err(m))?;
            if d.is_zero() {
                return Err(origin.err(
                    "a tolerance of 0 can never be kept: no two clocks agree to the nanosecond; give e.g. 250ms",
                ));
            }
            d
        }
    };
    match &flags.start_at {
        None if flags.start_tolerance.is_some() => {
            Err(Origin::other("--start-tolerance", "", true).err(
                "it applies to --start-at, which is not given; add --start-at TIME or leave it out",
            ))
        }
        None => Ok(None),
        Some(at) => {
            let origin = Origin::other("--start-at", "", true);
            let start = StartAt::parse(at, tolerance).map_err(|m| origin.err(m))?;
            let ahead = start
                .time()
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default();
            if ahead > shard::MAX_START_AHEAD {
                return Err(origin.err(format!(
                    "{} is {} from now, more than a day: a run would wait that long before it measured; give a time within a day (e.g. `date -u +%FT%TZ -d '+2 min'`)",
                    start.at,
                    crate::units::fmt_ns(ahead.as_nanos() as f64)
                )));
            }
            Ok(Some(start))
        }
    }
}

/// What a shard (`--shard`) needs: servers someone runs for all shards (a
/// server bakeoff started would be each shard's own), and a client for
/// every shard at every point.
fn refuse_what_shards_cannot_run(
    targets: &[TargetSpec],
    flags: &Overrides,
    points_of: &dyn Fn(&str) -> Vec<Point>,
) -> Result<(), PlanError> {
    if let Some(shard) = flags.shard {
        let origin = Origin::other("--shard", "", true);
        // The test suite's scripted mock has no server to share: each
        // shard runs the script, which is what a test of the merge needs.
        if let Some(t) = targets
            .iter()
            .find(|t| !matches!(t.endpoint, Endpoint::External { .. }) && t.name != "mock")
        {
            return Err(origin.err(format!(
                "{shard}: target {} is a server bakeoff would start, one per shard, and the shards would not share it; give every shard the server's URL, e.g. -t {}://HOST:PORT",
                t.label(),
                t.name
            )));
        }
        for t in targets {
            for p in points_of(&t.name) {
                if p.workload.replay.is_some() && shard.count > 1 {
                    return Err(origin.err(format!(
                        "{shard}: a trace is replayed by one process, in its own order; run --replay without --shard"
                    )));
                }
                if u64::from(p.workload.clients) < u64::from(shard.count) {
                    return Err(origin.err(format!(
                        "{shard}: {} clients cannot be split between {} shards; give at least --clients {}",
                        p.workload.clients, shard.count, shard.count
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The schedule of a synchronised start over the plan's runs: run k starts
/// `k × every` after the first, `every` being the longest run plus
/// [`shard::RUN_GAP`]. Every run must have a known length, so runs of an
/// operation count and searches (whose steps are not known before) are
/// refused.
fn schedule(
    start: Option<StartAt>,
    targets: &[TargetSpec],
    repeats: u32,
    points_of: &dyn Fn(&str) -> Vec<Point>,
) -> Result<Option<StartAt>, PlanError> {
    let Some(mut start) = start else {
        return Ok(None);
    };
    let origin = Origin::other("--start-at", "", true);
    let mut longest = 0.0f64;
    for t in targets {
        for p in points_of(&t.name) {
            let w = &p.workload;
            if w.find_peak || w.find_capacity.is_some() {
                return Err(origin.err(
                    "a search makes as many runs as it needs, and shards could not agree when each starts; run the search on one machine, or fix --clients or --rate",
                ));
            }
            let Some(d) = w.duration_s else {
                return Err(origin.err(
                    "a run of an operation count (--ops) has no known end, so the next run's start cannot be set; give --duration",
                ));
            };
            longest = longest.max(w.warmup_bound_s() + d);
        }
    }
    let runs = repeats as usize
        * targets
            .iter()
            .map(|t| points_of(&t.name).len())
            .sum::<usize>();
    if runs > 1 {
        start.every_s = longest + shard::RUN_GAP.as_secs_f64();
    }
    Ok(Some(start))
}

/// Refuses a `--set` for a target the run does not have, and what
/// bakeoff can only do to a server it starts, asked of one reached by URL:
/// a `--set` setting of a target that is external only, and a memory cap.
/// None could be applied, and a result that recorded them would be wrong.
fn refuse_what_cannot_apply(
    targets: &[TargetSpec],
    flags: &Overrides,
    points_of: &dyn Fn(&str) -> Vec<Point>,
) -> Result<(), PlanError> {
    let external = |t: &TargetSpec| matches!(t.endpoint, Endpoint::External { .. });
    for (name, key, _) in &flags.server_settings {
        let of_name: Vec<&TargetSpec> = targets.iter().filter(|t| &t.name == name).collect();
        if of_name.is_empty() {
            let names: Vec<String> = targets.iter().map(|t| t.label()).collect();
            return Err(PlanError::Invalid {
                origin: format!("flag --set {name}.{key}"),
                message: format!(
                    "{name} is not among this run's targets ({}), so the setting would do nothing; add -t {name}, or leave the flag out",
                    names.join(", ")
                ),
            });
        }
        if let Some(t) = of_name
            .iter()
            .find(|t| external(t))
            .filter(|_| of_name.iter().all(|t| external(t)))
        {
            return Err(PlanError::Invalid {
                origin: format!("flag --set {name}.{key}"),
                message: format!(
                    "{} is a server bakeoff did not start, and bakeoff does not change those; set it on the server itself, or use -t {name} to let bakeoff start one with it",
                    t.label()
                ),
            });
        }
    }
    for t in targets.iter().filter(|t| external(t)) {
        if points_of(&t.name)
            .iter()
            .any(|p| p.workload.memory_cap.is_some())
        {
            return Err(PlanError::Invalid {
                origin: "memory_cap (--memory-cap, or the preset's workload.memory_cap)".into(),
                message: format!(
                    "a memory cap is put on servers bakeoff starts, in a cgroup; {} is not one of them: use -t {} instead, or leave the cap out",
                    t.label(),
                    t.name
                ),
            });
        }
        if points_of(&t.name)
            .iter()
            .any(|p| p.workload.server_cpus.is_some())
        {
            return Err(PlanError::Invalid {
                origin: "server_cpus (--server-cpus, or the preset's workload.server_cpus)".into(),
                message: format!(
                    "a server's CPUs are set on servers bakeoff starts; {} is not one of them: use -t {} instead, or leave --server-cpus out",
                    t.label(),
                    t.name
                ),
            });
        }
    }
    Ok(())
}

/// Managed servers' settings: the preset's tables, then each `--set` over
/// them, every one checked against its target's declaration (an error
/// names the table or the flag at fault).
fn servers(
    raw: &RawPreset,
    flags: &Overrides,
    catalog: &dyn TargetCatalog,
) -> Result<BTreeMap<String, toml::Table>, PlanError> {
    let check = |name: &str, table: &toml::Table, origin: String| {
        if catalog.capabilities(name).is_none() {
            return Err(PlanError::Invalid {
                origin,
                message: format!(
                    "unknown target `{name}`; known targets: {}",
                    catalog.names().join(", ")
                ),
            });
        }
        catalog
            .check_settings(name, table)
            .map_err(|e| PlanError::Invalid {
                origin,
                message: e.to_string(),
            })
    };
    for (name, table) in &raw.servers {
        check(name, table, format!("preset key servers.{name}"))?;
    }
    let mut servers = raw.servers.clone();
    for (target, key, value) in &flags.server_settings {
        let parsed = setting_value(value);
        let table = servers.entry(target.clone()).or_default();
        table.insert(key.clone(), parsed);
        // The flag at fault, and the table it lands in.
        check(
            target,
            table,
            format!("flag --set {target}.{key} (servers.{target})"),
        )?;
    }
    Ok(servers)
}

/// A text value as a setting: what TOML makes of it (a number, a
/// boolean), else the text itself.
fn setting_value(value: &str) -> toml::Value {
    format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()))
}

/// The settings table of each target variant: its name's table with the
/// variant's settings over it, checked as a whole.
fn variant_settings(
    targets: &[TargetSpec],
    servers: &mut BTreeMap<String, toml::Table>,
    catalog: &dyn TargetCatalog,
) -> Result<(), PlanError> {
    for t in targets.iter().filter(|t| !t.variant.is_empty()) {
        let mut table = servers.get(&t.name).cloned().unwrap_or_default();
        for (k, v) in &t.variant {
            table.insert(k.clone(), setting_value(v));
        }
        catalog
            .check_settings(&t.name, &table)
            .map_err(|e| PlanError::Invalid {
                origin: format!("target {}", t.id()),
                message: e.to_string(),
            })?;
        servers.insert(t.id(), table);
    }
    Ok(())
}

impl Plan {
    /// The settings of managed target `spec` (its variant's, if it is
    /// one), as given; `None` when none were.
    pub fn settings_of(&self, spec: &TargetSpec) -> Option<&toml::Table> {
        self.servers.get(&spec.id())
    }

    /// Merges a preset (if any) with flags and validates the result. An
    /// error in a preset names the file as well as the key.
    pub fn build(
        preset: Option<(&str, RawPreset)>,
        flags: &Overrides,
        catalog: &dyn TargetCatalog,
    ) -> Result<Plan, PlanError> {
        let path = preset.as_ref().map(|(p, _)| p.to_string());
        Self::merge(preset, flags, catalog).map_err(|e| match (e, path) {
            (PlanError::Invalid { origin, message }, Some(path))
                if origin.starts_with("preset key") =>
            {
                PlanError::Invalid {
                    origin: format!("{origin} in {path}"),
                    message,
                }
            }
            (e, _) => e,
        })
    }

    fn merge(
        preset: Option<(&str, RawPreset)>,
        flags: &Overrides,
        catalog: &dyn TargetCatalog,
    ) -> Result<Plan, PlanError> {
        let scale = flags.scale.as_deref().unwrap_or(raw::FULL_SCALE);
        let (path, raw) = match preset {
            Some((p, r)) => (Some(p.to_string()), r.at_scale(scale, p)?),
            None if scale == raw::FULL_SCALE => (None, RawPreset::default()),
            None => {
                return Err(PlanError::Invalid {
                    origin: "flag --scale".into(),
                    message: format!(
                        "a scale is a preset's; name one, e.g. bakeoff run 004-peak --scale {scale}"
                    ),
                })
            }
        };
        let given = Given::collect(&raw, flags)?;
        let requirements = requirements(&raw, flags)?;
        let workload = at_required_rate(workload(&given)?, &requirements)?;
        let mut notes = Vec::new();
        let sweep = sweep(&given, &workload, &mut notes)?;
        let points = sweep::expand(&workload, &sweep);
        for p in &points {
            check_workload_against_itself(&p.workload, &given)?;
        }
        let repeats = experiment_number(
            &flags.repeats,
            &raw.repeats,
            "--repeats",
            "repeats",
            1,
            |s| match parse_count(s)? {
                0 => Err("0 repeats cannot run; use at least 1".into()),
                n if n > u32::MAX as u64 => Err(format!("{n} repeats is too many")),
                n => Ok(n),
            },
        )? as u32;
        let rounds = rounds(&raw, flags, repeats)?;
        let seed = experiment_number(&flags.seed, &raw.seed, "--seed", "seed", 1, |s| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{s}` is not a whole number"))
        })?;

        let per_target = per_target(&raw, &given, &workload, &sweep, &requirements, catalog)?;
        let points_of = |name: &str| match per_target.get(name) {
            Some(w) => sweep::expand(w, &sweep),
            None => points.clone(),
        };
        let mut servers = servers(&raw, flags, catalog)?;
        let (targets, left_out) = candidates(
            targets(&raw, flags, catalog, &points_of)?,
            &requirements,
            &servers,
            catalog,
        )?;
        // A preset's own target dropped by -t keeps its table unused; a
        // table for a target neither the preset nor the run has is a slip.
        let preset_names: Vec<String> = raw
            .targets
            .iter()
            .flatten()
            // Only the names are wanted here: any password will do for a
            // URL that reads its own from the environment.
            .filter_map(|t| {
                target::parse_target(t, catalog, &Environment::of(|_| Some("-".into()))).ok()
            })
            .map(|t| t.name)
            .collect();
        if let Some(name) = per_target
            .keys()
            .find(|n| !targets.iter().any(|t| &t.name == *n) && !preset_names.contains(n))
        {
            return Err(PlanError::Invalid {
                origin: format!("preset key per_target.{name}"),
                message: format!(
                    "`{name}` is not one of this run's targets ({}): its workload would be ignored; add it to the targets or drop the table",
                    targets.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            });
        }
        refuse_what_cannot_apply(&targets, flags, &points_of)?;
        variant_settings(&targets, &mut servers, catalog)?;

        // The name is part of the result file's name: a plain one, so
        // that the file lands in results/ and nowhere else.
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        let name = match &raw.name {
            Some(n) if n.is_empty() || n.len() > 100 || n.starts_with('.') || !n.chars().all(plain) => {
                return Err(PlanError::Invalid {
                    origin: "preset key name".into(),
                    message: format!(
                        "`{n}` is not a plain name; it names the result file, so use letters, digits, `-`, `_` and `.` (not first), at most 100"
                    ),
                })
            }
            Some(n) => n.clone(),
            None => path
                .as_deref()
                .and_then(|p| std::path::Path::new(p).file_stem())
                .map(|s| {
                    s.to_string_lossy()
                        .chars()
                        .map(|c| if plain(c) { c } else { '-' })
                        .collect::<String>()
                        .trim_start_matches('.')
                        .to_string()
                })
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".to_string()),
        };
        refuse_what_shards_cannot_run(&targets, flags, &points_of)?;
        let start = schedule(start_at(flags)?, &targets, repeats, &points_of)?;
        Ok(Plan {
            name,
            description: std::iter::once(raw.description.clone().unwrap_or_default())
                .chain(notes)
                .filter(|d| !d.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            preset: path,
            scale: scale.to_string(),
            finding: raw.finding.clone(),
            targets,
            workload,
            per_target,
            sweep,
            repeats,
            order: rounds.order,
            precision: rounds.precision,
            max_repeats: rounds.max_repeats,
            max_time_s: rounds.max_time_s,
            seed,
            servers,
            shard: flags.shard,
            start,
            requirements,
            prices: flag_or_key(
                flags.price.as_ref(),
                raw.price.as_ref(),
                "--price",
                "price",
                Prices::parse,
            )?,
            left_out,
        })
    }

    /// The seed this process's generators draw from: the plan's, or a
    /// shard's own derived from it.
    pub fn run_seed(&self) -> u64 {
        self.shard.map_or(self.seed, |s| s.seed(self.seed))
    }

    /// The workload this process runs of `w`: all of it, or its shard's
    /// part.
    pub fn own_part(&self, w: &Workload) -> Workload {
        self.shard.map_or_else(|| w.clone(), |s| s.workload(w))
    }

    /// A hash of the plan every shard runs (this plan without the shard's
    /// index), hex: shards' files merge only when theirs are equal.
    pub fn hash(&self) -> String {
        let mut common = self.clone();
        common.shard = self.shard.map(|s| Shard { index: 0, ..s });
        let text = serde_json::to_string(&common).expect("a plan serialises");
        format!("{:016x}", crate::workload::fnv1a64_bytes(text.as_bytes()))
    }

    /// Every point of the matrix, in order (first axis outermost).
    pub fn points(&self) -> Vec<Point> {
        sweep::expand(&self.workload, &self.sweep)
    }

    /// The points as target `spec` runs them: the same labels as
    /// [`Plan::points`], on its own base workload if it has one.
    pub fn points_for(&self, spec: &TargetSpec) -> Vec<Point> {
        match self.per_target.get(&spec.name) {
            Some(w) => sweep::expand(w, &self.sweep),
            None => self.points(),
        }
    }

    /// For each target with a workload of its own: the parameters where it
    /// differs from the others, as `(key, theirs)`, in the order of
    /// [`PARAMS`].
    pub fn per_target_differences(&self) -> Vec<(String, Vec<(&'static str, String)>)> {
        self.per_target
            .iter()
            .map(|(name, w)| {
                let differs = PARAMS
                    .iter()
                    .filter(|p| (p.show)(w) != (p.show)(&self.workload))
                    .map(|p| (p.key, (p.show)(w)))
                    .collect();
                (name.clone(), differs)
            })
            .collect()
    }

    /// Number of runs: targets × points × repeats.
    pub fn run_count(&self) -> usize {
        self.targets.len() * self.points().len() * self.repeats as usize
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)] // tests set one flag each
pub(crate) mod tests {
    use super::*;
    use crate::error::TargetError;
    use crate::workload::ValueSizes;

    #[test]
    fn a_target_list_splits_between_targets_not_inside_variants() {
        assert_eq!(
            split_target_list("redis,mariadb[binlog=true,sync_binlog=1],lmdb"),
            ["redis", "mariadb[binlog=true,sync_binlog=1]", "lmdb"]
        );
        assert_eq!(split_target_list("redis"), ["redis"]);
        // The last node of a URL of several keeps the URL's query (where
        // `bakeoff kubernetes` puts `password_env`).
        assert_eq!(
            split_target_list("memcached://h1:1,h2:2?password_env=V,redis"),
            ["memcached://h1:1,h2:2?password_env=V", "redis"]
        );
        assert_eq!(
            split_target_list("a[x=1"),
            ["a[x=1"],
            "left to the variant's parser"
        );
    }

    /// A catalog of two targets, redis and memcached, for plans in tests.
    pub(crate) struct Cat;
    impl TargetCatalog for Cat {
        fn capabilities(&self, name: &str) -> Option<Capabilities> {
            (name == "redis" || name == "memcached").then(|| Capabilities {
                ops: OpKind::ALL
                    .into_iter()
                    .filter(|k| name != "memcached" || *k != OpKind::Scan)
                    .collect(),
                pipelining: true,
                managed: true,
                url_scheme: Some("redis".into()),
                batch_load: false,
                requests: Vec::new(),
                faults: true,
                network: true,
                topologies: vec!["shards".into()],
                url_options: Vec::new(),
                credentials: name == "redis",
                no_scan: (name == "memcached").then(|| "it keeps its keys hashed".into()),
                provokes: Vec::new(),
            })
        }
        fn names(&self) -> Vec<String> {
            vec!["redis".into(), "memcached".into()]
        }
        fn target_for_scheme(&self, s: &str) -> Option<String> {
            ["redis", "memcached"].contains(&s).then(|| s.to_string())
        }
        fn check_settings(&self, _: &str, t: &toml::Table) -> Result<(), TargetError> {
            match t.keys().find(|k| *k != "maxmemory") {
                Some(k) => Err(TargetError::Settings(format!("unknown setting `{k}`"))),
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

    /// Prices come from the preset's `price` key or, over it, `--price`;
    /// the plan carries them; a bad one names where it came from.
    #[test]
    fn prices_from_the_preset_or_the_flag() {
        let preset = "targets = [\"redis\"]\nprice = \"cpu-hour=0.04\"\n";
        let plan = build(preset, Overrides::default()).unwrap();
        assert_eq!(plan.prices.and_then(|p| p.cpu_hour), Some(0.04));
        let flag = Overrides {
            price: Some("memory-gb-hour=0.005".into()),
            ..Default::default()
        };
        let plan = build(preset, flag).unwrap();
        let prices = plan.prices.unwrap();
        assert_eq!(
            (prices.cpu_hour, prices.memory_gb_hour),
            (None, Some(0.005))
        );
        let e = build("price = \"cpu-hour=-1\"\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("price") && e.contains("0 or more"), "{e}");
        let bad = Overrides {
            price: Some("gpu-hour=2".into()),
            ..Default::default()
        };
        let e = build("", bad).unwrap_err().to_string();
        assert!(
            e.contains("--price") && e.contains("`gpu-hour` is no price"),
            "{e}"
        );
        assert_eq!(build("", Overrides::default()).unwrap().prices, None);
    }

    /// A preset's server CPUs beyond the machine's are left out with a
    /// note while one point is left; beyond on every point, refused.
    #[test]
    fn a_presets_cpus_beyond_the_machine_are_left_out_and_said() {
        let here = machine_cpus();
        let preset = format!(
            "targets = [\"redis\"]\ndescription = \"d\"\n[sweep]\nserver_cpus = [1, {}]\n",
            here + 1
        );
        let plan = build(&preset, Overrides::default()).unwrap();
        assert_eq!(plan.points().len(), 1);
        assert_eq!(plan.points()[0].workload.server_cpus, Some(1));
        assert!(
            plan.description
                .contains(&format!("server_cpus = {} are left out", here + 1)),
            "{}",
            plan.description
        );
        let beyond = format!(
            "targets = [\"redis\"]\n[sweep]\nserver_cpus = [{}]\n",
            here + 1
        );
        let e = build(&beyond, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be given"), "{e}");
    }

    /// Where nothing fixes the warm-up, it is found as the run goes
    /// (issue 49); a run it cannot work on (counted in operations, with
    /// a fault, or measured for under the 5 s a trend is judged over)
    /// keeps a fixed 2 s; a preset's or a flag's warm-up stands.
    #[test]
    fn the_warmup_is_found_by_default_where_it_can_be() {
        let warmup = |preset: &str, flags: &[(&str, &str)]| {
            let f = Overrides {
                workload: flags
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Overrides::default()
            };
            let w = build(preset, f).unwrap().points()[0].workload.clone();
            (w.warmup_auto, w.warmup_s)
        };
        let bare = "targets = [\"redis://h:1\"]\n";
        assert_eq!(warmup(bare, &[]), (true, 0.0));
        assert_eq!(warmup(bare, &[("duration", "5s")]), (true, 0.0));
        assert_eq!(warmup(bare, &[("duration", "4s")]), (false, 2.0));
        assert_eq!(warmup(bare, &[("ops", "1000")]), (false, 2.0));
        let managed = "targets = [\"redis\"]\n";
        assert_eq!(warmup(managed, &[("fault", "kill@3s")]), (false, 2.0));
        assert_eq!(warmup(bare, &[("warmup", "1s")]), (false, 1.0));
        let fixed = "targets = [\"redis://h:1\"]\n[workload]\nwarmup = \"3s\"\n";
        assert_eq!(warmup(fixed, &[]), (false, 3.0));
        assert_eq!(warmup(fixed, &[("warmup", "auto")]), (true, 0.0));
        // Asked for by name, it is refused beside a fault, as before.
        let e = build(
            managed,
            Overrides {
                workload: [("fault", "kill@3s"), ("warmup", "auto")]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Overrides::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--warmup auto"), "{e}");
    }

    /// A start more than a day ahead is refused when the plan is built,
    /// rather than waited for in silence (issue 33, class 1).
    #[test]
    fn a_start_more_than_a_day_ahead_is_refused() {
        let ahead = |d: std::time::Duration| Overrides {
            start_at: Some(
                humantime::format_rfc3339_seconds(std::time::SystemTime::now() + d).to_string(),
            ),
            ..Overrides::default()
        };
        let preset = "targets = [\"redis://h:1\"]\n[workload]\nduration = \"10s\"\n";
        let e = build(preset, ahead(std::time::Duration::from_secs(3 * 86_400)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--start-at") && e.contains("more than a day"),
            "{e}"
        );
        build(preset, ahead(std::time::Duration::from_secs(3600))).unwrap();
    }

    /// YCSB's kinds go in a mix by name, and read back as written; scans
    /// are refused where they cannot run, saying why (issue 34).
    #[test]
    fn ycsb_kinds_are_planned_and_scans_refused_where_they_cannot_run() {
        let p = build(
            "targets = [\"redis\"]\n[workload]\nmix = \"get=50,rmw=50\"\nkey_distribution = \"latest\"\n",
            Overrides::default(),
        )
        .unwrap();
        let w = &p.workload;
        assert_eq!(w.mix.to_string(), "get=50,read-modify-write=50");
        assert_eq!(Mix::parse(&w.mix.to_string()).unwrap(), w.mix);
        assert_eq!(w.key_distribution, crate::workload::KeyDistribution::Latest);
        let err = |preset: &str| build(preset, Overrides::default()).unwrap_err().to_string();
        let e = err("targets = [\"memcached\"]\n[workload]\nmix = \"scan=95,insert=5\"\n");
        assert!(
            e.contains("cannot do `scan` (it keeps its keys hashed)"),
            "{e}"
        );
        let e = err("targets = [\"redis\"]\n[workload]\nmix = \"scan=1\"\n[topology]\nkind = \"shards:2\"\n");
        assert!(e.contains("scans cannot run on shards:2"), "{e}");
        // Nodes named by one URL are shards too.
        let e = err("targets = [\"redis://h1:1,h2:2\"]\n[workload]\nmix = \"scan=1\"\n");
        assert!(
            e.contains("scans cannot run on the 2 servers of redis (redis://h1:1,h2:2)"),
            "{e}"
        );
        let e =
            err("targets = [\"redis://h1:1,h2:2\"]\n[workload]\nfields = 10\nvalue_size = 1000\n");
        assert!(
            e.contains("records of 10 fields do not go with several servers"),
            "{e}"
        );
        let e = err("[workload]\nmix = \"get=1,scan=1,x=1\"\n");
        assert!(e.contains("unknown operation `x`"), "{e}");
        // A result file written before the later kinds held five weights.
        let old: Mix = serde_json::from_str("{\"weights\":[90,10,0,0,0]}").unwrap();
        assert_eq!(old.to_string(), "90:10:0:0");
    }

    /// Records of several fields: a fixed size cut into equal fields of
    /// more than a header each, and nothing that writes values of its own.
    #[test]
    fn records_of_fields_are_checked_before_anything_runs() {
        let ok = build(
            "[workload]\nfields = 10\nvalue_size = 1000\n",
            Overrides::default(),
        )
        .unwrap();
        assert_eq!((ok.workload.fields, ok.workload.field_len()), (10, 100));
        let err = |preset: &str| build(preset, Overrides::default()).unwrap_err().to_string();
        let e = err("[workload]\nfields = 3\nvalue_size = 1000\n");
        assert!(e.contains("does not cut into 3 equal fields"), "{e}");
        let e = err("[workload]\nfields = 10\nvalue_size = 200\n");
        assert!(e.contains("of at least 250"), "{e}");
        let e = err("[workload]\nfields = 10\nvalue_size = \"100-1000\"\n");
        assert!(e.contains("one value size"), "{e}");
        let e = err("[workload]\nfields = 10\nvalue_size = 1000\ndurability = true\n");
        assert!(e.contains("do not go with the durability check"), "{e}");
        let e =
            err("[workload]\nfields = 10\nvalue_size = 1000\n[topology]\nkind = \"shards:2\"\n");
        assert!(e.contains("do not go with several servers"), "{e}");
        let e = err("[workload]\nfields = 0\n");
        assert!(e.contains("0 fields per record cannot run"), "{e}");
    }

    /// A trace sets the records, operations, rate and value sizes of each
    /// point (at each swept speed); what cannot go with it is refused.
    #[test]
    fn a_replayed_trace_shapes_its_points_and_refuses_what_cannot_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"t\": 0, \"op\": \"set\", \"key\": \"a\", \"size\": 500}\n\
             {\"t\": 1, \"op\": \"get\", \"key\": \"a\"}\n\
             {\"t\": 2, \"op\": \"get\", \"key\": \"b\"}\n",
        )
        .unwrap();
        let preset = format!(
            "targets = [\"redis\"]\n[workload]\nreplay = \"{}\"\n[sweep]\nreplay_speed = [1, 10]\n",
            path.display()
        );
        let p = build(&preset, Overrides::default()).unwrap();
        let points = p.points();
        let w: Vec<_> = points.iter().map(|p| &p.workload).collect();
        assert_eq!(
            (w[0].records, w[0].ops, w[0].duration_s),
            (2, Some(3), None)
        );
        assert_eq!((w[0].rate, w[1].rate), (Some(1.5), Some(15.0)));
        assert_eq!(w[0].value_size.max(), 500);
        assert_eq!(w[0].mix.to_string(), "2:1:0:0");
        let e = build(
            &format!("{preset}[fault]\ndurability = true\n"),
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("leave out --durability"), "{e}");
        // What the trace sets is refused, not dropped.
        for (extra, flag) in [
            ("duration = \"30s\"\n", "workload.duration"),
            ("rate = 100\n", "workload.rate"),
            ("mix = \"1:1\"\n", "workload.mix"),
            ("value_size = 100\n", "workload.value_size"),
        ] {
            let p = preset.replace("[sweep]", &format!("{extra}[sweep]"));
            let e = build(&p, Overrides::default()).unwrap_err().to_string();
            assert!(e.contains(flag) && e.contains("sets its own"), "{e}");
        }
        let e = build("[workload]\nreplay_speed = 10\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("give --replay FILE"), "{e}");
        let e = build(
            &format!("require = [\"p99<=1ms@1k/s\"]\n{preset}"),
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("its trace's own rate"), "{e}");
        // Its span at its speed, and its rate, within the limits.
        let year = dir.path().join("year.jsonl");
        std::fs::write(
            &year,
            "{\"t\": 0, \"op\": \"get\", \"key\": \"a\"}\n{\"t\": 31536000, \"op\": \"get\", \"key\": \"a\"}\n",
        )
        .unwrap();
        let long = format!("[workload]\nreplay = \"{}\"\n", year.display());
        let e = build(&long, Overrides::default()).unwrap_err().to_string();
        assert!(
            e.contains("365 days") && e.contains("--replay-speed 365 or more"),
            "{e}"
        );
        assert!(build(&format!("{long}replay_speed = 400\n"), Overrides::default()).is_ok());
        let e = build(
            &format!(
                "[workload]\nreplay = \"{}\"\nreplay_speed = 1000000\n",
                path.display()
            ),
            Overrides::default(),
        );
        assert!(e.is_ok(), "1.5M ops/s is within a request a nanosecond");
        let burst = dir.path().join("burst.jsonl");
        std::fs::write(
            &burst,
            "{\"t\": 0, \"op\": \"get\", \"key\": \"a\"}\n{\"t\": 0.000001, \"op\": \"get\", \"key\": \"a\"}\n",
        )
        .unwrap();
        let e = build(
            &format!(
                "[workload]\nreplay = \"{}\"\nreplay_speed = 1000000\n",
                burst.display()
            ),
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("a request a nanosecond"), "{e}");
        let e = build(
            "[workload]\nreplay = \"/nonexistent/t.csv\"\n",
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("cannot read the trace /nonexistent/t.csv"),
            "{e}"
        );
    }

    #[test]
    fn synchronised_runs_start_one_longest_run_and_a_gap_apart() {
        let preset = "targets = [\"redis://h:1\"]\n[workload]\nclients = 4\nduration = \"10s\"\nwarmup = \"2s\"\n[sweep]\nvalue_size = [100, 1000]\n";
        let flags = |start: &str| Overrides {
            shard: Some(Shard::new(1, 2).unwrap()),
            start_at: Some(start.into()),
            ..Overrides::default()
        };
        // An hour ahead, to the second: a start at most a day ahead is
        // taken.
        let base = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        let at = |plus: u64| {
            humantime::format_rfc3339_seconds(base + std::time::Duration::from_secs(plus))
                .to_string()
        };
        let nanos = |text: &str| {
            humantime::format_rfc3339_nanos(humantime::parse_rfc3339(text).unwrap()).to_string()
        };
        let p = build(preset, flags(&at(0))).unwrap();
        let start = p.start.clone().unwrap();
        assert_eq!(start.every_s, 12.0 + shard::RUN_GAP.as_secs_f64());
        assert_eq!(start.of_run(0).at, nanos(&at(0)));
        assert_eq!(start.of_run(2).at, nanos(&at(84)));
        // Every shard runs one plan: the hash leaves the index out, and
        // a different start is a different plan.
        let other = Overrides {
            shard: Some(Shard::new(0, 2).unwrap()),
            ..flags(&at(0))
        };
        assert_eq!(p.hash(), build(preset, other).unwrap().hash());
        assert_ne!(p.hash(), build(preset, flags(&at(1))).unwrap().hash());
        // An operation count has no known end; a managed server would be
        // each shard's own; clients must go round.
        let ops = "targets = [\"redis://h:1\"]\n[workload]\nclients = 4\nops = 100\n";
        let e = build(ops, flags(&at(0))).unwrap_err();
        assert!(e.to_string().contains("no known end"), "{e}");
        let managed = "targets = [\"redis\"]\n[workload]\nclients = 4\n";
        let e = build(managed, flags(&at(0))).unwrap_err();
        assert!(e.to_string().contains("one per shard"), "{e}");
        let few = "targets = [\"redis://h:1\"]\n[workload]\nclients = 1\n";
        let e = build(few, flags(&at(0))).unwrap_err();
        assert!(
            e.to_string().contains("cannot be split between 2 shards"),
            "{e}"
        );
    }

    #[test]
    fn a_target_runs_its_own_workload_under_the_flags() {
        let preset = "targets = [\"redis\"]\n[workload]\nrecords = \"10k\"\nclients = 4\n[sweep]\nvalue_size = [100, 1000]\n[per_target.redis]\nrecords = \"70k\"\nclients = 2\n";
        let p = build(preset, Overrides::default()).unwrap();
        let redis = &p.targets[0];
        let points = p.points_for(redis);
        assert_eq!(points.len(), 2);
        assert!(points.iter().all(|q| q.workload.records == 70_000));
        assert_eq!(points[1].labels, p.points()[1].labels);
        assert_eq!(p.points()[0].workload.records, 10_000);
        assert_eq!(
            p.per_target_differences(),
            vec![(
                "redis".to_string(),
                vec![
                    ("clients", "2".to_string()),
                    ("records", "70000".to_string())
                ]
            )]
        );
        // A flag is for every target.
        let mut f = Overrides::default();
        f.workload.insert("records".into(), "5k".into());
        let p = build(preset, f).unwrap();
        assert_eq!(p.points_for(&p.targets[0])[0].workload.records, 5_000);
        assert_eq!(p.points_for(&p.targets[0])[0].workload.clients, 2);
    }

    /// A crash input of the `flags` fuzz target (fuzz/): three sweeps of
    /// 700 values, 4 KB of flags, asked for a 100 GB matrix and aborted.
    #[test]
    fn a_sweep_is_bounded() {
        let list = |n: usize, unit: &str| (1..=n).map(|i| format!("{i}{unit}")).collect();
        let mut f = Overrides::default();
        f.sweep.insert("clients".into(), list(700, ""));
        f.sweep.insert("records".into(), list(700, ""));
        f.sweep.insert("mix".into(), list(700, ":1"));
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("more than 10000 points"), "{e}");
        let e = build(
            &format!("[sweep]\nclients = {:?}\n", [1; MAX_POINTS + 1]),
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sweep.clients") && e.contains("points"), "{e}");
        let mut f = Overrides::default();
        f.sweep.insert("clients".into(), list(100, ""));
        f.sweep.insert("records".into(), list(100, ""));
        assert_eq!(build("", f).unwrap().points().len(), MAX_POINTS);
    }

    #[test]
    fn a_per_target_workload_is_checked_like_the_workload() {
        let err = |preset: &str| build(preset, Overrides::default()).unwrap_err().to_string();
        let e = err("[per_target.redis]\nrecods = 1\n");
        assert!(
            e.contains("per_target.redis.recods") && e.contains("records"),
            "{e}"
        );
        let e = err("[sweep]\nrecords = [1, 2]\n[per_target.redis]\nrecords = 5\n");
        assert!(e.contains("also swept"), "{e}");
        let e = err("[per_target.nosuch]\nrecords = 5\n");
        assert!(e.contains("unknown target `nosuch`"), "{e}");
        // What a target cannot do is refused for it alone.
        let e = err("[per_target.redis]\nbatch = 10\n");
        assert!(e.contains("cannot load in batches"), "{e}");
        let e = err("[per_target.redis]\nclients = 0\n");
        assert!(e.contains("per_target.redis.clients"), "{e}");
        // Pipelining is for key-value operations: searches would ignore it.
        // The refusal names the parameter to change, where it was given.
        let e = err("[workload]\npipeline = 4\nrecord = \"profile\"\nmix = \"0:0:0:0:1\"\n");
        assert!(
            e.contains("workload.pipeline")
                && e.contains("a pipeline of 4: searches are not pipelined"),
            "{e}"
        );
        let mut f = Overrides::default();
        f.workload.insert("pipeline".into(), "4".into());
        f.workload.insert("request".into(), "connect".into());
        let e = build("[workload]\nrecords = 10\n", f)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("flag --pipeline:")
                && e.contains("requests on a connection of their own are not pipelined"),
            "{e}"
        );
        assert!(build("[workload]\npipeline = 4\n", Overrides::default()).is_ok());
    }

    #[test]
    fn flags_override_preset() {
        let mut f = Overrides::default();
        f.workload.insert("clients".into(), "7".into());
        let p = build("[workload]\nclients = 3\nrecords = \"10k\"\n", f).unwrap();
        assert_eq!(p.workload.clients, 7);
        assert_eq!(p.workload.records, 10_000);
        assert_eq!(p.name, "p");
    }

    /// Combinations that would be ignored or would measure something
    /// other than what they say are refused before anything starts, each
    /// naming what to drop (issue 33, class 6).
    #[test]
    fn combinations_that_mean_nothing_are_refused() {
        let err = |preset: &str| build(preset, Overrides::default()).unwrap_err().to_string();
        // A fault in every step of a search: the peak found would be the
        // fault's.
        let e = err(
            "[workload]\nduration = \"5s\"\nfind_peak = true\n[fault]\ninject = \"kill@1s..2s\"\n",
        );
        assert!(e.contains("fault") && e.contains("search"), "{e}");
        // What a search sets itself.
        let e = err("[workload]\nfind_peak = true\nrate = 1000\n");
        assert!(e.contains("workload.rate") && e.contains("search"), "{e}");
        let e = err("[workload]\nfind_capacity = \"p99<=1ms\"\nrate = 1000\n");
        assert!(e.contains("workload.rate") && e.contains("search"), "{e}");
        let e = err("[workload]\nfind_peak = true\n[sweep]\nclients = [1, 2]\n");
        assert!(e.contains("sweep.clients") && e.contains("peak"), "{e}");
        // What the durability check does not use.
        let e = err("[workload]\nmix = \"50:50\"\n[fault]\ndurability = true\n");
        assert!(
            e.contains("workload.mix") && e.contains("durability"),
            "{e}"
        );
        let e = err("[workload]\nkey_distribution = \"zipfian\"\n[fault]\ndurability = true\n");
        assert!(
            e.contains("key_distribution") && e.contains("durability"),
            "{e}"
        );
        // A target's own workload for a target that does not run.
        let e = err("targets = [\"redis\"]\n[per_target.memcached]\nrecords = 5\n");
        assert!(
            e.contains("per_target.memcached") && e.contains("not one of this run's targets"),
            "{e}"
        );
        // Reads from a replica with no replica at any point.
        let e = err("[topology]\nread_from = \"replica\"\n");
        assert!(
            e.contains("read_from") && e.contains("primary-replica"),
            "{e}"
        );
        // Each alone is fine.
        for ok in [
            "[workload]\nfind_peak = true\n",
            "[workload]\nrate = 1000\n",
            "[fault]\ndurability = true\n",
            "targets = [\"redis\", \"memcached\"]\n[per_target.memcached]\nrecords = 5\n",
        ] {
            build(ok, Overrides::default()).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    /// A sweep with a value twice, and an empty target, are refused with
    /// what to do (issue 33, class 10).
    #[test]
    fn a_value_twice_in_a_sweep_and_an_empty_target_are_refused() {
        let mut f = Overrides::default();
        f.sweep
            .insert("clients".into(), vec!["1".into(), "2".into(), "1".into()]);
        let e = build("", f).unwrap_err().to_string();
        assert!(
            e.contains("`1` is in the list twice") && e.contains("--repeats"),
            "{e}"
        );
        let f = Overrides {
            targets: vec!["".into()],
            ..Overrides::default()
        };
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("no targets; name at least one"), "{e}");
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
        f.workload.insert("mix".into(), "0:0".into());
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("flag --mix") && e.contains("sums to 0"), "{e}");
        let mut f = Overrides::default();
        f.workload.insert("value_size".into(), "10".into());
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
        // A misspelt --set is blamed on the flag, not on the preset.
        let mut f = Overrides::default();
        f.server_settings = vec![("redis".into(), "bogus".into(), "1".into())];
        let e = build("", f).unwrap_err().to_string();
        assert!(
            e.starts_with("flag --set redis.bogus (servers.redis):"),
            "{e}"
        );
    }

    #[test]
    fn a_fault_section_sets_the_fault_and_the_check() {
        let p = build(
            "[workload]\nduration = \"5s\"\n[fault]\ninject = \"kill@1s..3s\"\ndurability = true\n",
            Overrides::default(),
        )
        .unwrap();
        assert!(p.workload.durability);
        let f = p.workload.fault.unwrap();
        assert_eq!((f.kind, f.from_s, f.to_s), (FaultKind::Kill, 1.0, 3.0));
        // A flag overrides the preset's fault.
        let mut flags = Overrides::default();
        flags.workload.insert("fault".into(), "restart@2s".into());
        let p = build("[fault]\ninject = \"kill@1s\"\n", flags).unwrap();
        assert_eq!(p.workload.fault.unwrap().kind, FaultKind::Restart);
        let e = build("[fault]\ninjct = \"kill@1s\"\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fault.injct") && e.contains("did you mean `inject`?"),
            "{e}"
        );
        let e = build("[fault]\ninject = \"kill@99s\"\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fault.inject") && e.contains("past the end"),
            "{e}"
        );
        let e = build(
            "[workload]\nclients = 1001\n[fault]\ndurability = true\n",
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("fault.durability") && e.contains("at most 1000"),
            "{e}"
        );
    }

    #[test]
    fn target_variants_carry_their_settings() {
        let mut f = Overrides::default();
        f.targets = vec!["redis[maxmemory=1mb]".into(), "redis".into()];
        let p = build("[servers.redis]\nmaxmemory = \"2mb\"\n", f).unwrap();
        let ids: Vec<String> = p.targets.iter().map(|t| t.id()).collect();
        assert_eq!(ids, ["redis[maxmemory=1mb]", "redis"]);
        let v = p.settings_of(&p.targets[0]).unwrap();
        assert_eq!(v["maxmemory"].as_str(), Some("1mb"));
        let plain = p.settings_of(&p.targets[1]).unwrap();
        assert_eq!(plain["maxmemory"].as_str(), Some("2mb"));
        let mut f = Overrides::default();
        f.targets = vec!["redis[bogus=1]".into()];
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("redis[bogus=1]") && e.contains("bogus"), "{e}");
        let mut f = Overrides::default();
        f.targets = vec!["redis[maxmemory]".into()];
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("KEY=VALUE"), "{e}");
    }

    /// `--precision` names figures and percentages; a bad one says what
    /// a good one looks like, and --max-repeats without it is refused.
    #[test]
    fn precision_bounds_parse_and_refuse_nonsense() {
        let b = PrecisionBound::parse_list("throughput=3%, p99=10").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].figure, crate::headline::Headline::Throughput);
        assert!((b[0].within - 0.03).abs() < 1e-12 && (b[1].within - 0.10).abs() < 1e-12);
        let e = PrecisionBound::parse_list("speed=3%").unwrap_err();
        assert!(e.contains("throughput") && e.contains("p99"), "{e}");
        let e = PrecisionBound::parse_list("p99=0%").unwrap_err();
        assert!(e.contains("between 0 and 100"), "{e}");
        let mut f = Overrides::default();
        f.max_repeats = Some("10".into());
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("give --precision too"), "{e}");
        let mut f = Overrides::default();
        f.precision = Some("throughput=3%".into());
        f.max_repeats = Some("5".into());
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("use 6 or more"), "{e}");
    }

    /// Two URLs of one kind are told apart by address, names given with
    /// `NAME=` are the targets' names, and a name given twice is refused.
    #[test]
    fn targets_of_one_kind_are_told_apart() {
        let ids = |targets: &[&str]| {
            let mut f = Overrides::default();
            f.targets = targets.iter().map(|t| t.to_string()).collect();
            build("", f).map(|p| p.targets.iter().map(|t| t.id()).collect::<Vec<_>>())
        };
        assert_eq!(
            ids(&["redis://127.0.0.1:6379", "redis://127.0.0.1:6380"]).unwrap(),
            ["redis@127.0.0.1:6379", "redis@127.0.0.1:6380"]
        );
        assert_eq!(
            ids(&[
                "cache-a=redis://127.0.0.1:6379",
                "cache-b=redis[maxmemory=1mb]"
            ])
            .unwrap(),
            ["cache-a", "cache-b"]
        );
        assert_eq!(ids(&["redis", "redis"]).unwrap(), ["redis#1", "redis#2"]);
        let e = ids(&["a=redis", "a=memcached"]).unwrap_err().to_string();
        assert!(e.contains("two targets are called `a`"), "{e}");
    }

    #[test]
    fn unknown_preset_key_is_rejected() {
        let e = build("[workload]\nclient = 3\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("client"), "{e}");
        assert!(e.contains("did you mean `clients`?"), "{e}");
        let e = build("[sweep]\npipeline = [1, 2]\n", Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sweep.pipeline") && e.contains("not a sweep axis"),
            "{e}"
        );
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

    /// A URL's `password_env` reads the password from the environment the
    /// flags carry (the edge gives the process's).
    #[test]
    fn a_url_reads_its_password_from_the_flags_environment() {
        let f = Overrides {
            targets: vec!["redis://127.0.0.1:6390?password_env=REDIS_PW".into()],
            env: Environment::of(|k| (k == "REDIS_PW").then(|| "hunter2".to_string())),
            ..Overrides::default()
        };
        let p = build("", f).unwrap();
        assert_eq!(p.targets[0].password.as_deref(), Some("hunter2"));
        let json = serde_json::to_string(&p).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        let mut f = Overrides::default();
        f.targets = vec!["redis://127.0.0.1:6390?password_env=REDIS_PW".into()];
        let e = build("", f).unwrap_err().to_string();
        assert!(e.contains("REDIS_PW, which is not set"), "{e}");
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
        assert!(
            e.contains("give one of a duration, an operation count"),
            "{e}"
        );
        let e = build(
            "[workload]\nops = 100\nops_per_client = 10\n",
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not ops and ops_per_client"), "{e}");
        // A count per client replaces a preset's duration given on the command line.
        let mut f = Overrides::default();
        f.workload.insert("ops_per_client".into(), "10".into());
        let p = build("[workload]\nduration = \"5s\"\n", f).unwrap();
        assert_eq!(
            (p.workload.ops_per_client, p.workload.duration_s),
            (Some(10), None)
        );
        let mut f = Overrides::default();
        f.workload.insert("ops".into(), "100".into());
        let p = build("[workload]\nduration = \"5s\"\n", f).unwrap();
        assert_eq!((p.workload.ops, p.workload.duration_s), (Some(100), None));
    }
}
