//! How sure bakeoff's answers are, where the truth is known: the scripted
//! mock on its simulated clock, with run-to-run noise injected (each
//! opening scales its latencies by a log-normal factor of median 1), run
//! through the real runner, summaries and verdict over many seeded
//! experiments.
//!
//! - coverage: the nominal 95 % between-run intervals hold the true
//!   median throughput, p50 and p99 in 93–99 % of experiments;
//! - A/A: two identical mocks are a tie on every verdict line in at least
//!   93 of 100 experiments;
//! - power: a mock 10 % slower under 3 % noise is named slower in at
//!   least 90 of 100;
//! - warm-up: `--warmup auto` ends a 10 s ramp within ±1 s, and a level
//!   shift is flagged at its second.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bakeoff_core::mock::{MockCatalog, MockDriver, MockOpener};
use bakeoff_core::plan::{Overrides, Plan, RawPreset};
use bakeoff_core::result::{Environment, ExperimentResult};
use bakeoff_core::runner::{run_experiment, ExperimentOptions, Quiet};
use bakeoff_core::summary::Headline;

/// Gets only, 4 clients on one thread, 1 ms a request (1.0–1.9 ms by the
/// script): about 2,700 requests a run, a simulated second.
const PRESET: &str = r#"
name = "statistics"
description = "the mock under injected run-to-run noise"
[workload]
records = 200
mix = "100:0"
duration = "1s"
warmup = "0"
clients = 4
threads = 1
"#;

fn driver() -> MockDriver {
    MockDriver {
        latency_ns: [1_000_000; bakeoff_core::workload::OP_KINDS],
        miss_every: 0,
        ..MockDriver::default()
    }
}

fn env() -> Environment {
    Environment {
        cpu_model: "mock".into(),
        cores: 2,
        memory_bytes: 1 << 30,
        kernel: "mock".into(),
        hostname: "mock".into(),
        bakeoff_version: "test".into(),
        seed: 0,
        command: "statistics test".into(),
    }
}

/// One experiment of `targets` on the mock, `repeats` interleaved rounds,
/// under `seed`.
fn experiment(
    opener: &MockOpener,
    targets: &[&str],
    repeats: u32,
    seed: u64,
    dir: &Path,
) -> ExperimentResult {
    experiment_with(
        opener,
        Overrides {
            targets: targets.iter().map(|t| t.to_string()).collect(),
            repeats: Some(repeats.to_string()),
            seed: Some(seed.to_string()),
            ..Overrides::default()
        },
        seed,
        dir,
    )
}

fn experiment_with(
    opener: &MockOpener,
    flags: Overrides,
    seed: u64,
    dir: &Path,
) -> ExperimentResult {
    let raw: RawPreset = toml::from_str(PRESET).unwrap();
    let plan = Plan::build(Some(("statistics.toml", raw)), &flags, &MockCatalog).unwrap();
    let opts = ExperimentOptions {
        out: dir.join(format!("{seed}.json")),
        stop: Arc::new(AtomicBool::new(false)),
        skip_unavailable: false,
    };
    run_experiment(&plan, opener, env(), &opts, &mut Quiet).unwrap()
}

fn noisy(cv: f64, scale_of: Vec<(String, f64)>) -> MockOpener {
    MockOpener {
        driver: driver(),
        noise_cv: cv,
        scale_of,
        ..MockOpener::default()
    }
}

/// The text report of `r`, as `bakeoff run` prints it.
fn text_report(r: &ExperimentResult) -> String {
    let mut text = Vec::new();
    bakeoff_report::Exporter::export(
        &bakeoff_report::TextExporter::default(),
        std::slice::from_ref(r),
        &mut text,
    )
    .unwrap();
    String::from_utf8(text).unwrap()
}

/// The verdict's lines for throughput and p99.
fn ranked_lines(r: &ExperimentResult) -> Vec<String> {
    bakeoff_report::verdict::verdict(r)
        .into_iter()
        .filter(|l| l.starts_with("throughput") || l.starts_with("p99 latency"))
        .collect()
}

#[test]
fn between_run_intervals_hold_the_true_median_about_95_times_in_100() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    // The truth: the noise's median factor is 1, so the median run is the
    // run without noise.
    let truth = experiment(&noisy(0.0, Vec::new()), &["mock"], 1, 1, dir.path());
    let figures = [Headline::Throughput, Headline::P50, Headline::P99];
    let true_value: Vec<f64> = figures
        .iter()
        .map(|f| f.of(&truth.runs[0]).unwrap())
        .collect();
    let mut held = [0u32; 3];
    let experiments = 200;
    for seed in 0..experiments {
        let r = experiment(&noisy(0.10, Vec::new()), &["mock"], 6, seed, dir.path());
        let s = &r.summaries[0];
        assert_eq!(s.repeats, 6);
        for (i, f) in figures.iter().enumerate() {
            let fs = s.figure(*f).unwrap();
            let interval = fs.interval.expect("six repeats give an interval");
            assert_eq!(
                interval.kind,
                bakeoff_core::stats::IntervalKind::BetweenRuns
            );
            held[i] += u32::from(interval.contains(true_value[i]));
        }
    }
    for (i, f) in figures.iter().enumerate() {
        let share = f64::from(held[i]) / experiments as f64;
        eprintln!("coverage of {}: {:.1} %", f.key(), share * 100.0);
        assert!(
            (0.93..=0.99).contains(&share),
            "{}: the interval held the truth in {:.1} % of {experiments} experiments",
            f.key(),
            share * 100.0
        );
    }
}

#[test]
fn two_identical_targets_are_a_tie_on_every_line() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let mut ties: std::collections::BTreeMap<String, u32> = Default::default();
    for seed in 0..100 {
        let r = experiment(
            &noisy(0.10, Vec::new()),
            &["a=mock", "b=mock"],
            6,
            seed,
            dir.path(),
        );
        let lines = ranked_lines(&r);
        assert_eq!(lines.len(), 2, "{lines:#?}");
        for l in lines {
            let figure = l.split(':').next().unwrap().to_string();
            *ties.entry(figure).or_default() += u32::from(l.contains(": tie: "));
        }
    }
    eprintln!("A/A ties of 100: {ties:?}");
    for (figure, n) in ties {
        assert!(n >= 93, "{figure}: a tie in only {n} of 100");
    }
}

/// How often of 100 a mock 10 % slower is named slower on throughput and
/// on p99, under run-to-run noise `cv`, with 6 repeats.
fn power(cv: f64) -> (u32, u32) {
    let dir = tempfile::tempdir().unwrap();
    let (mut throughput, mut p99) = (0, 0);
    for seed in 0..100 {
        let r = experiment(
            &noisy(cv, vec![("slow".into(), 1.1)]),
            &["fast=mock", "slow=mock"],
            6,
            seed,
            dir.path(),
        );
        for l in ranked_lines(&r) {
            let named = l.contains("fast leads") && l.contains("better than slow");
            if l.starts_with("throughput") {
                throughput += u32::from(named);
            } else {
                p99 += u32::from(named);
            }
        }
    }
    (throughput, p99)
}

#[test]
fn a_target_10_percent_slower_is_named_slower() {
    let _beside = crate::common::beside_others();
    let (throughput, p99) = power(0.03);
    eprintln!("power at 3 % noise: throughput {throughput}/100, p99 {p99}/100");
    assert!(throughput >= 90, "named slower in {throughput} of 100");
    assert!(p99 >= 90, "named slower on p99 in {p99} of 100");
    let (throughput10, p99_10) = power(0.10);
    eprintln!("power at 10 % noise: throughput {throughput10}/100, p99 {p99_10}/100");
    assert!(throughput10 < throughput, "more noise, less power");
}

/// `--precision`: rounds are added past the 6 asked until the bound is
/// met, and the report says so; a bound out of reach stops at
/// `--max-repeats`, saying it was not met and how wide it got.
#[test]
fn precision_adds_rounds_until_the_bound_is_met() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let flags = |precision: &str, max: &str| Overrides {
        targets: vec!["a=mock".into(), "b=mock".into()],
        repeats: Some("6".into()),
        precision: Some(precision.into()),
        max_repeats: Some(max.into()),
        ..Overrides::default()
    };
    let r = experiment_with(
        &noisy(0.10, Vec::new()),
        flags("throughput=6%", "40"),
        3,
        dir.path(),
    );
    let p = r.precision.as_ref().expect("a precision report");
    assert_eq!(p.stopped_by, "every bound met", "{p:?}");
    assert!(p.repeats > 6 && p.repeats <= 40, "{p:?}");
    assert!(
        p.bounds[0].met && p.bounds[0].reached.unwrap() <= 0.06,
        "{p:?}"
    );
    assert_eq!(r.rounds.len(), p.repeats as usize);
    for s in &r.summaries {
        assert_eq!(s.repeats, p.repeats, "{}", s.target);
        let f = s.figure(Headline::Throughput).unwrap();
        assert!(f.interval.unwrap().relative_half_width(f.median) <= 0.06);
    }
    let r = experiment_with(
        &noisy(0.10, Vec::new()),
        flags("throughput=0.1%,p99=50%", "8"),
        3,
        dir.path(),
    );
    let p = r.precision.as_ref().expect("a precision report");
    assert_eq!(p.repeats, 8);
    assert_eq!(p.stopped_by, "--max-repeats 8 reached");
    assert!(
        !p.bounds[0].met && p.bounds[0].reached.unwrap() > 0.001,
        "{p:?}"
    );
    assert!(p.bounds[1].met, "{p:?}");
    let text = text_report(&r);
    assert!(text.contains("throughput within 0.1 %: not met"), "{text}");
}

/// One mock run of `duration` with warm-up `warmup`, its latency shaped
/// by `shape`.
fn shaped_run(
    shape: bakeoff_core::mock::MockShape,
    warmup: &str,
    duration: &str,
    dir: &Path,
) -> ExperimentResult {
    let opener = MockOpener {
        driver: MockDriver { shape, ..driver() },
        ..MockOpener::default()
    };
    experiment_with(
        &opener,
        Overrides {
            targets: vec!["mock".into()],
            workload: [
                ("warmup".to_string(), warmup.to_string()),
                ("duration".to_string(), duration.to_string()),
            ]
            .into(),
            ..Overrides::default()
        },
        1,
        dir,
    )
}

/// `--warmup auto` on a mock whose latency falls from 3× to its level
/// over the first 10 s: the steady window is found starting within ±1 s
/// of the ramp's end, the warm-up ends once the window confirms it, and
/// the measured phase is steady; the same plan puts it at the same
/// second every time (simulated time waits on the collector). A fixed
/// 2 s warm-up measures the ramp, and is labelled as drifting.
#[test]
fn an_automatic_warmup_ends_where_a_10_second_ramp_does() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let ramp = bakeoff_core::mock::MockShape {
        ramp_s: 10.0,
        ramp_from: 3.0,
        ..Default::default()
    };
    let mut ends = Vec::new();
    for _ in 0..3 {
        let r = shaped_run(ramp, "auto", "20s", dir.path());
        let run = &r.runs[0];
        let from = run.warmup_steady_from_s.expect("a steady window found");
        assert!((9..=11).contains(&from), "steady from second {from}");
        let end = run.workload.warmup_s;
        assert!(
            end >= f64::from(from) + 5.0 && end <= f64::from(from) + 6.0,
            "warm-up ended at {end} s, steady from {from} s"
        );
        assert!(run.workload.warmup_auto);
        let warm = run.warmup.as_ref().expect("a warm-up phase");
        assert!((warm.duration_s - end).abs() < 1e-9, "{}", warm.duration_s);
        assert_eq!(
            bakeoff_core::summary::run_stability(run),
            bakeoff_core::stats::Stability::Steady
        );
        ends.push((from, end, run.measure.completed));
        let text = text_report(&r);
        let said = format!("warm-up found as each run went (at most 20 s; ended at {end} s)");
        assert!(text.contains(&said), "{said}\n{text}");
        eprintln!("a 10 s ramp: steady from second {from}, warm-up ended at {end} s");
    }
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "{ends:?}");
    let fixed = shaped_run(ramp, "2s", "8s", dir.path());
    let run = &fixed.runs[0];
    assert_eq!(run.warmup_steady_from_s, None);
    assert!(
        !bakeoff_core::summary::run_stability(run).is_steady(),
        "{:?}",
        bakeoff_core::summary::run_stability(run)
    );
}

/// A mock whose latency rises by half at the job's 8th second, after a
/// 2 s warm-up: the run is labelled a level shift at measured second 6,
/// and the summary says so beside its figures.
#[test]
fn a_level_shift_mid_run_is_flagged_at_its_second() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let shift = bakeoff_core::mock::MockShape {
        shift_at_s: Some(8.0),
        shift_to: 1.5,
        ..Default::default()
    };
    let r = shaped_run(shift, "2s", "12s", dir.path());
    match bakeoff_core::summary::run_stability(&r.runs[0]) {
        bakeoff_core::stats::Stability::LevelShift {
            at_s,
            before,
            after,
        } => {
            assert_eq!(at_s, 6);
            assert!(after < before * 0.8, "{before} → {after}");
        }
        other => panic!("{other:?}"),
    }
    let text = text_report(&r);
    assert!(text.contains("level shift at second 6"), "{text}");
}

/// The HTML report draws each bar's 95 % interval as whiskers (throughput,
/// p50, p99, p99.9 for each of two targets: 8 with 6 repeats; none with
/// 3, too few for one) and a band along each run's percentile spectrum.
#[test]
fn the_html_draws_intervals_as_whiskers_and_a_band() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let page = |repeats: u32| {
        let r = experiment(
            &noisy(0.05, Vec::new()),
            &["a=mock", "b=mock"],
            repeats,
            5,
            dir.path(),
        );
        let mut html = Vec::new();
        bakeoff_report::Exporter::export(
            &bakeoff_report::html::HtmlExporter,
            std::slice::from_ref(&r),
            &mut html,
        )
        .unwrap();
        String::from_utf8(html).unwrap()
    };
    let whisker = r#"stroke="black" stroke-width="1.2" fill="none"/>"#;
    let band = r#"fill-opacity="0.18" stroke="none"><title>"#;
    let six = page(6);
    assert_eq!(six.matches(whisker).count(), 8, "whiskers with 6 repeats");
    assert!(six.matches(band).count() >= 2, "a band per spectrum line");
    assert!(six.contains("Whiskers: its 95 % interval"));
    let three = page(3);
    assert_eq!(three.matches(whisker).count(), 0, "whiskers with 3 repeats");
}
