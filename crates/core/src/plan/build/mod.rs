//! The second stage of configuration: a raw preset and raw flags merged
//! into one [`Plan`], every check that involves more than one field made
//! here, every error naming the flag or preset key it came from.

mod given;
mod targets;
mod workload;

use std::collections::BTreeMap;

use crate::error::PlanError;
use crate::plan::params::PARAMS;
use crate::plan::{
    raw, shard, sweep, target, Endpoint, Environment, Overrides, Plan, Point, PrecisionBound,
    Prices, RawPreset, RunOrder, Scalar, StartAt, SweepAxis, TargetCatalog, TargetSpec, Workload,
    PRECISION_MAX_REPEATS,
};
use crate::units::parse_count;
use given::{Given, Origin};
#[cfg(test)]
pub(super) use targets::machine_cpus;
pub use targets::split_target_list;
use targets::{candidates, cpus_this_machine_has, targets};
use workload::{
    at_required_rate, check_workload_against_itself, per_target, requirements, workload,
};

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
    pub(super) order: RunOrder,
    pub(super) precision: Vec<PrecisionBound>,
    pub(super) max_repeats: Option<u32>,
    pub(super) max_time_s: Option<f64>,
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
        let (path, raw) = scaled(preset, scale)?;
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
        refuse_unused_per_target(&raw, &per_target, &targets, catalog)?;
        refuse_what_cannot_apply(&targets, flags, &points_of)?;
        variant_settings(&targets, &mut servers, catalog)?;

        let name = plan_name(&raw, path.as_deref())?;
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
}

/// The preset at `scale` with its path, or none at full scale; a scale
/// without a preset is refused.
fn scaled(
    preset: Option<(&str, RawPreset)>,
    scale: &str,
) -> Result<(Option<String>, RawPreset), PlanError> {
    Ok(match preset {
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
    })
}

/// Refuses a `per_target` table for a target neither the run nor the
/// preset has: its workload would be ignored without a word.
fn refuse_unused_per_target(
    raw: &RawPreset,
    per_target: &BTreeMap<String, Workload>,
    targets: &[TargetSpec],
    catalog: &dyn TargetCatalog,
) -> Result<(), PlanError> {
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
    Ok(())
}

/// The experiment's name: the preset's `name`, else its file's stem made
/// plain, else "default".
fn plan_name(raw: &RawPreset, path: Option<&str>) -> Result<String, PlanError> {
    // The name is part of the result file's name: a plain one, so
    // that the file lands in results/ and nowhere else.
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    Ok(match &raw.name {
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
    })
}
