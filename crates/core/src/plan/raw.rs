//! The first stage: a preset file and the flags as given, not yet checked.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::PlanError;

/// A number or a string in a preset (`repeats = 3` or `repeats = "3"`).
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

/// A preset file as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPreset {
    /// Experiment name (defaults to the file name).
    pub name: Option<String>,
    /// What the experiment asks.
    pub description: Option<String>,
    /// The seed report it comes from (`000` … `004`, in ../shared/seeds).
    pub report: Option<String>,
    /// The experiments of the seed reports it runs (ids of SCENARIOS.md).
    #[serde(default)]
    pub covers: Vec<String>,
    /// What it measures, in one line (`bakeoff presets`).
    pub measures: Option<String>,
    /// What the seed report found, in one line, to set beside this
    /// machine's result.
    pub finding: Option<String>,
    /// Targets: names (`redis`) or URLs (`redis://127.0.0.1:6379`).
    pub targets: Option<Vec<String>>,
    /// Times each point is run.
    pub repeats: Option<Scalar>,
    /// The order of runs within a round: `random` (drawn from the seed)
    /// or `fixed` (the plan's).
    pub order: Option<String>,
    /// Bounds on the figures' intervals (as `--precision`):
    /// `throughput=3%,p99=10%`.
    pub precision: Option<String>,
    /// Most repeats `precision` may take.
    pub max_repeats: Option<Scalar>,
    /// Most time `precision`'s rounds may take (`10m`).
    pub max_time: Option<String>,
    /// Seed of every generator.
    pub seed: Option<Scalar>,
    /// What a store must do (as `--require`): `p99<=2ms@20k/s`,
    /// `durable=power-cut`, `memory<=2GB@10M`, `reach=network`.
    #[serde(default)]
    pub require: Vec<String>,
    /// What the user pays (as `--price`):
    /// `cpu-hour=0.04,memory-gb-hour=0.005,disk-gb-month=0.08`.
    pub price: Option<String>,
    /// The `[workload]` table: parameter key → value (see
    /// [`super::params::PARAMS`]); keys are checked when the plan is built.
    #[serde(default)]
    pub workload: BTreeMap<String, toml::Value>,
    /// The `[fault]` table: `inject` (as `--fault`) and `durability` (as
    /// `--durability`); see [`super::params::FAULT_KEYS`].
    #[serde(default)]
    pub fault: BTreeMap<String, toml::Value>,
    /// The `[topology]` table: `kind` (as `--topology`); see
    /// [`super::params::TOPOLOGY_KEYS`].
    #[serde(default)]
    pub topology: BTreeMap<String, toml::Value>,
    /// The `[link]` table: `rtt` and `bandwidth`, the parts of `--link`;
    /// see [`super::params::LINK_KEYS`].
    #[serde(default)]
    pub link: BTreeMap<String, toml::Value>,
    /// The `[sweep]` table: parameter key → list of values.
    #[serde(default)]
    pub sweep: BTreeMap<String, toml::Value>,
    /// Settings of managed servers, per target name.
    #[serde(default)]
    pub servers: BTreeMap<String, toml::Table>,
    /// Workload keys that differ for one target (`[per_target.mariadb]`
    /// `batch = 1`: MariaDB loads row by row where the others load in
    /// bulk), by target name; over `[workload]`, under the flags.
    #[serde(default)]
    pub per_target: BTreeMap<String, BTreeMap<String, toml::Value>>,
    /// Other scales of the same experiment, by name (`[scale.quick]`):
    /// what each changes of the keys above.
    #[serde(default)]
    pub scale: BTreeMap<String, RawScale>,
}

/// Largest preset file read (the built-in ones are a few KiB).
pub const MAX_PRESET_BYTES: u64 = 1 << 20;

/// The default scale's name: the preset as written.
pub const FULL_SCALE: &str = "full";

/// What a scale changes of its preset: each key given replaces the
/// preset's (workload keys and sweep axes one by one).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScale {
    /// What the scale is for, in one line.
    pub about: Option<String>,
    /// Targets, replacing the preset's list.
    pub targets: Option<Vec<String>>,
    /// Requirements, replacing the preset's list.
    pub require: Option<Vec<String>>,
    /// Times each point is run.
    pub repeats: Option<Scalar>,
    /// The order of runs within a round.
    pub order: Option<String>,
    /// Bounds on the figures' intervals.
    pub precision: Option<String>,
    /// Workload keys replaced.
    #[serde(default)]
    pub workload: BTreeMap<String, toml::Value>,
    /// Fault keys replaced.
    #[serde(default)]
    pub fault: BTreeMap<String, toml::Value>,
    /// Sweep axes replaced (give an axis one value to hold it still).
    #[serde(default)]
    pub sweep: BTreeMap<String, toml::Value>,
    /// Per-target workload keys replaced, target by target and key by key.
    #[serde(default)]
    pub per_target: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

impl RawPreset {
    /// Reads and parses a preset file; unknown top-level keys are errors
    /// here, unknown parameters when the plan is built.
    pub fn load(path: &str) -> Result<Self, PlanError> {
        use std::io::Read;
        let read = |source| PlanError::Read {
            path: path.to_string(),
            source,
        };
        let syntax = |message: String| PlanError::Syntax {
            path: path.to_string(),
            message,
        };
        let file = std::fs::File::open(path).map_err(read)?;
        let kind = file.metadata().map_err(read)?.file_type();
        {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_dir() {
                return Err(syntax("is a directory; give a preset file (TOML)".into()));
            }
            if kind.is_char_device() || kind.is_block_device() || kind.is_socket() {
                return Err(syntax("is a device, not a preset file (TOML)".into()));
            }
        }
        // A bound, so that a pipe that never ends cannot hold bakeoff.
        let mut bytes = Vec::new();
        file.take(MAX_PRESET_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        if bytes.len() as u64 > MAX_PRESET_BYTES {
            return Err(syntax(format!(
                "is larger than {} KiB, more than any preset; is it a preset file (TOML)?",
                MAX_PRESET_BYTES >> 10
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| syntax("is not text (UTF-8); is it a preset file (TOML)?".into()))?;
        Self::parse(&text, path)
    }

    /// Parses a preset's text; `origin` names it in errors. A preset that
    /// sets nothing is refused: run without one for the default comparison.
    pub fn parse(text: &str, origin: &str) -> Result<Self, PlanError> {
        let syntax = |message: String| PlanError::Syntax {
            path: origin.to_string(),
            message,
        };
        let raw: RawPreset =
            toml::from_str(text).map_err(|e| syntax(e.to_string().trim().replace('\n', "\n  ")))?;
        if toml::from_str::<toml::Table>(text).is_ok_and(|t| t.is_empty()) {
            return Err(syntax(
                "is empty: it names no target and no workload; write e.g. `targets = [\"redis\"]` and a [workload] table, or run `bakeoff run` without a preset for the default comparison".into(),
            ));
        }
        Ok(raw)
    }

    /// The scales a preset has: `full` (as written) and those of its
    /// `[scale.NAME]` tables.
    pub fn scales(&self) -> Vec<String> {
        std::iter::once(FULL_SCALE.to_string())
            .chain(self.scale.keys().cloned())
            .collect()
    }

    /// The preset at scale `name`: `full` is the preset as written; another
    /// scale's keys replace the preset's.
    pub fn at_scale(mut self, name: &str, origin: &str) -> Result<Self, PlanError> {
        if name == FULL_SCALE {
            return Ok(self);
        }
        let Some(scale) = self.scale.remove(name) else {
            return Err(PlanError::Invalid {
                origin: "flag --scale".into(),
                message: format!(
                    "preset {origin} has no scale `{name}`; its scales: {}",
                    self.scales().join(", ")
                ),
            });
        };
        if let Some(t) = scale.targets {
            self.targets = Some(t);
        }
        if let Some(r) = scale.require {
            self.require = r;
        }
        if let Some(r) = scale.repeats {
            self.repeats = Some(r);
        }
        if let Some(o) = scale.order {
            self.order = Some(o);
        }
        if let Some(p) = scale.precision {
            self.precision = Some(p);
        }
        self.workload.extend(scale.workload);
        self.fault.extend(scale.fault);
        self.sweep.extend(scale.sweep);
        for (target, keys) in scale.per_target {
            self.per_target.entry(target).or_default().extend(keys);
        }
        Ok(self)
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
    /// `--order`.
    pub order: Option<String>,
    /// `--precision`.
    pub precision: Option<String>,
    /// `--max-repeats`.
    pub max_repeats: Option<String>,
    /// `--max-time`.
    pub max_time: Option<String>,
    /// `--seed`.
    pub seed: Option<String>,
    /// Workload flags as raw text, by parameter key (`pipeline` → `16`).
    pub workload: BTreeMap<String, String>,
    /// `--sweep-*` flags, by parameter key (`clients` → `1`, `10`).
    pub sweep: BTreeMap<String, Vec<String>>,
    /// `--set target.key=value` server settings.
    pub server_settings: Vec<(String, String, String)>,
    /// `--scale`: a scale of the preset other than `full`.
    pub scale: Option<String>,
    /// `--shard i/N` (or the Indexed Job's environment), read at the edge.
    pub shard: Option<super::Shard>,
    /// `--start-at`: an RFC 3339 time.
    pub start_at: Option<String>,
    /// `--start-tolerance`: a duration.
    pub start_tolerance: Option<String>,
    /// `--require`, repeatable: what a store must do.
    pub require: Vec<String>,
    /// `--price`: what the user pays for CPU, memory and disk.
    pub price: Option<String>,
    /// The environment a target URL's `password_env=NAME` reads its
    /// password from.
    pub env: Environment,
}

/// Environment variables, as the plan reads them: a target URL's
/// `password_env=NAME` takes its password from variable NAME. The plan
/// reads no variable itself; the edge hands it the process's environment
/// (and a test, the variables it wants). The default has none.
#[derive(Clone, Default)]
pub struct Environment {
    lookup: Option<std::sync::Arc<Lookup>>,
}

/// Reads one variable: its value, if it is set.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Environment {
    /// The environment that `lookup` reads a variable from.
    pub fn of(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Environment {
            lookup: Some(std::sync::Arc::new(lookup)),
        }
    }

    /// The value of variable `name`, if it is set.
    pub fn get(&self, name: &str) -> Option<String> {
        self.lookup.as_ref().and_then(|l| l(name))
    }
}

/// Shows no value: the variables read through it are passwords.
impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Environment")
    }
}
