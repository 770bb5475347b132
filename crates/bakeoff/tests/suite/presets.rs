//! Every built-in preset: listed by `bakeoff presets`, found by name,
//! planned at both scales, and run at `--scale quick` against the targets
//! this machine has.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::common::{bakeoff, read_json, tmp};

/// The preset files of the checkout, by name.
fn preset_names() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

/// Target names `bakeoff list` says this machine cannot start.
fn unavailable() -> BTreeSet<String> {
    let o = bakeoff(&["list"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut out = BTreeSet::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") {
            current = line.split_whitespace().next().unwrap_or("").to_string();
        }
        if line.contains("not available here") {
            out.insert(current.clone());
        }
    }
    out
}

#[test]
fn every_preset_is_listed_with_its_finding_and_found_by_name() {
    let _beside = crate::common::beside_others();
    let o = bakeoff(&["presets"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    for name in preset_names() {
        assert!(
            text.contains(&format!("\n  {name}  (")),
            "{name} not listed:\n{text}"
        );
    }
    assert!(text.contains("seed found: 2955 requests/s"), "{text}");
    assert!(text.contains("scales: full, quick"), "{text}");

    // By name, with or without the directory and extension, and by path.
    for what in ["004-peak", "presets/004-peak.toml", "004-peak.toml"] {
        let o = bakeoff(&["run", what, "--dry-run"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with("experiment 004-peak (scale full)"), "{out}");
        assert!(out.contains("the seed found: 95:5"), "{out}");
    }
    let o = bakeoff(&["run", "004-peek", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("did you mean 004-peak?") && err.contains("bakeoff presets"),
        "{err}"
    );

    let o = bakeoff(&["run", "004-peak", "--scale", "huge", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--scale") && err.contains("full, quick"),
        "{err}"
    );
    let o = bakeoff(&["run", "-t", "redis", "--scale", "quick", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--scale"));
}

/// Every experiment of ../shared/SCENARIOS.md (the seeds' experiments, one
/// table row each) is covered by a preset.
#[test]
fn every_seed_experiment_has_a_preset() {
    let _beside = crate::common::beside_others();
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/SCENARIOS.md");
    let Ok(text) = std::fs::read_to_string(scenarios) else {
        panic!("{scenarios} is missing: the suite runs with ../shared beside the checkout");
    };
    let experiments: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| ")?.split(" |").next())
        .filter(|id| {
            id.len() > 4
                && id.as_bytes()[..3].iter().all(u8::is_ascii_digit)
                && id.as_bytes()[3] == b'-'
        })
        .map(str::to_string)
        .collect();
    assert_eq!(experiments.len(), 23, "{experiments:?}");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets");
    let mut covered = BTreeSet::new();
    for name in preset_names() {
        let text = std::fs::read_to_string(format!("{dir}/{name}.toml")).unwrap();
        let line = text.lines().find(|l| l.starts_with("covers")).unwrap_or("");
        covered.extend(line.split('"').skip(1).step_by(2).map(str::to_string));
    }
    let missing: Vec<&String> = experiments.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "experiments without a preset: {missing:?}"
    );
}

#[test]
fn every_preset_plans_at_both_scales_and_quick_is_smaller() {
    let _beside = crate::common::beside_others();
    for name in preset_names() {
        let runs = |scale: &str| -> f64 {
            let o = bakeoff(&["run", &name, "--scale", scale, "--dry-run"]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{name} at {scale}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            assert!(out.contains(&format!("(scale {scale})")), "{out}");
            let line = out
                .lines()
                .find(|l| l.starts_with("measuring takes at least"))
                .unwrap_or("measuring takes at least 0 s");
            line.trim_start_matches("measuring takes at least ")
                .split_whitespace()
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap_or(0.0)
        };
        let (full, quick) = (runs("full"), runs("quick"));
        assert!(
            quick <= full,
            "{name}: quick measures {quick} s, full {full} s"
        );
    }
}

/// The suite's run of every experiment: each preset at `--scale quick`,
/// on the targets of its quick scale this machine can start, must finish
/// with every run measured. In two halves that run side by side: most of a
/// quick run is waiting out its fixed durations.
#[test]
fn every_other_preset_runs_at_quick_scale() {
    let _beside = crate::common::beside_others();
    presets_run_at_quick_scale(0);
}

/// The other half of [`every_other_preset_runs_at_quick_scale`].
#[test]
fn the_remaining_presets_run_at_quick_scale() {
    let _beside = crate::common::beside_others();
    presets_run_at_quick_scale(1);
}

/// Runs the presets whose place in the list has parity `half`.
fn presets_run_at_quick_scale(half: usize) {
    let missing = unavailable();
    for name in preset_names().into_iter().skip(half).step_by(2) {
        let dir = tmp();
        let out = dir.path().join("r.json");
        let plan = bakeoff(&["run", &name, "--scale", "quick", "--dry-run"]);
        let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
        let targets: Vec<&str> = plan
            .lines()
            .find_map(|l| l.strip_prefix("targets: "))
            .unwrap()
            .split(", ")
            .collect();
        let here: Vec<&str> = targets
            .iter()
            .copied()
            .filter(|t| !missing.contains(t.split('[').next().unwrap()))
            .collect();
        if here.is_empty() {
            eprintln!("{name}: none of {targets:?} can start here; skipped");
            continue;
        }
        let t = here.join(",");
        let started = Instant::now();
        let o = bakeoff(&[
            "run",
            &name,
            "--scale",
            "quick",
            "-t",
            &t,
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ]);
        let r = read_json(&out);
        eprintln!(
            "{name}: {} targets, {:.1} s",
            here.len(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(r["plan"]["scale"], "quick");
        let runs = r["runs"].as_array().unwrap();
        assert!(!runs.is_empty(), "{name}: no runs");
        for run in runs {
            // A run that failed says how, in the target's own words (a
            // CI run once failed 004-hardware's MariaDB on 30 errors while
            // loading, and the kinds were not kept).
            assert_eq!(
                run["status"],
                "ok",
                "{name}: {} at {}: {}; load errors {} ({}); measured errors {} ({})",
                run["target"],
                run["point"],
                run["message"],
                run["load"]["errors"],
                run["load"]["error_texts"],
                run["measure"]["errors"],
                run["measure"]["error_texts"]
            );
            assert!(
                run["measure"]["completed"].as_u64().unwrap_or(0) > 0,
                "{name}: {} measured nothing",
                run["target"]
            );
        }
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
