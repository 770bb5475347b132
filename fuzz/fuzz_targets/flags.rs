//! `bakeoff run` flags over a built-in preset (or none): the overrides that
//! `app::overrides` makes of the command line, built into a plan.
//!
//! Input: a byte choosing the preset (0: none, else `presets/` in name
//! order), then one argument a line, as on the command line: `--clients 10`,
//! `--clients=10`, `-c 10`, `--no-load`, `--sweep-clients 1,10`,
//! `-t redis`, `--set redis.persistence=aof-always`, `--repeats 2`,
//! `--seed 7`, `--scale quick`. Unknown lines are skipped.
#![no_main]

use bakeoff_core::plan::params::PARAMS;
use std::sync::OnceLock;

use bakeoff_core::plan::{Overrides, Plan, RawPreset};
use bakeoff_drivers::registry::Registry;
use bakeoff_fuzz::{check_plan, PRESETS};
use libfuzzer_sys::fuzz_target;

/// The overrides the command line `lines` makes, or `None` where clap or
/// `app::overrides` would refuse it (a conflict, a malformed `--set`).
fn overrides(lines: &str) -> Option<Overrides> {
    let mut o = Overrides::default();
    for line in lines.lines() {
        let (flag, value) = match line.find([' ', '=']) {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, ""),
        };
        match flag {
            "-t" | "--target" => o.targets.push(value.into()),
            "--repeats" => o.repeats = Some(value.into()),
            "--seed" => o.seed = Some(value.into()),
            "--scale" => o.scale = Some(value.into()),
            "--set" => {
                // As app::overrides reads TARGET.KEY=VALUE.
                let (tk, v) = value.split_once('=')?;
                let (t, k) = tk.split_once('.')?;
                if t.is_empty() || k.is_empty() {
                    return None;
                }
                o.server_settings.push((t.into(), k.into(), v.into()));
            }
            _ => {
                for p in PARAMS {
                    let short = p.short.map(|c| format!("-{c}"));
                    if flag == p.flag_name() || short.as_deref() == Some(flag) {
                        let v = p.switch.unwrap_or(value);
                        o.workload.insert(p.key.into(), v.into());
                    }
                    if let Some(s) = &p.sweep {
                        if flag.strip_prefix("--") == Some(s.flag) {
                            o.sweep
                                .entry(p.key.into())
                                .or_default()
                                .extend(value.split(s.separator).map(String::from));
                        }
                    }
                }
            }
        }
    }
    // clap refuses flags declared in conflict.
    for p in PARAMS {
        if o.workload.contains_key(p.key) && p.excludes.iter().any(|x| o.workload.contains_key(*x))
        {
            return None;
        }
    }
    Some(o)
}

/// The built-in presets, parsed once: (origin, preset).
fn presets() -> &'static [(String, RawPreset)] {
    static PARSED: OnceLock<Vec<(String, RawPreset)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        PRESETS
            .iter()
            .map(|(name, text)| {
                let origin = format!("presets/{name}.toml");
                let raw = RawPreset::parse(text, &origin).expect("a built-in preset parses");
                (origin, raw)
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    // Arguments are UTF-8 (clap's String values).
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Some(flags) = overrides(text) else {
        return;
    };
    let presets = presets();
    let preset = match which as usize % (presets.len() + 1) {
        0 => None,
        i => Some((presets[i - 1].0.as_str(), presets[i - 1].1.clone())),
    };
    match Plan::build(preset, &flags, &Registry) {
        Ok(plan) => check_plan(&plan),
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
