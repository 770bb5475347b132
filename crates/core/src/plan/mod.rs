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
//! Every check that involves more than one field lives in [`Plan::build`]
//! (the private `build` module: what was given, the workload, the
//! targets, and the merge of them), and every error names the flag or
//! preset key it came from.

mod build;
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

use params::PARAMS;

pub use build::{split_target_list, MAX_POINTS};
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

impl Plan {
    /// The settings of managed target `spec` (its variant's, if it is
    /// one), as given; `None` when none were.
    pub fn settings_of(&self, spec: &TargetSpec) -> Option<&toml::Table> {
        self.servers.get(&spec.id())
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
    use crate::error::PlanError;
    use crate::error::TargetError;
    use crate::workload::OpKind;
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
        let here = build::machine_cpus();
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
    }

    /// A replay's span at its speed, and its rate, are held within the
    /// limits of `--duration` and `--rate`; a trace that cannot be read is
    /// named.
    #[test]
    fn a_replayed_trace_keeps_the_limits_of_span_and_rate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"t\": 0, \"op\": \"set\", \"key\": \"a\", \"size\": 500}\n\
             {\"t\": 1, \"op\": \"get\", \"key\": \"a\"}\n\
             {\"t\": 2, \"op\": \"get\", \"key\": \"b\"}\n",
        )
        .unwrap();
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
