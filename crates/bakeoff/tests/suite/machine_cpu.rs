//! The machine's CPUs are read for every target (issue 50): against a
//! Redis given by URL on this machine, the result's machine figure is what
//! /proc/stat says over the same seconds, not bakeoff's own share of the
//! machine; and a busy client on a machine full with the server's work too
//! is not called client-bound.

use crate::common::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// /proc/stat's first line: (busy, all) ticks, busy being all but idle
/// and iowait.
fn ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let t: Vec<u64> = stat
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|t| t.parse().unwrap())
        .collect();
    let all: u64 = t.iter().sum();
    (all - t[3] - t[4], all)
}

/// The machine's CPUs busy between the readings nearest `from` and `to`,
/// percent.
fn busy_between(readings: &[(SystemTime, (u64, u64))], from: SystemTime, to: SystemTime) -> f64 {
    let nearest = |at: SystemTime| {
        readings
            .iter()
            .min_by_key(|(t, _)| t.duration_since(at).unwrap_or_else(|e| e.duration()))
            .unwrap()
            .1
    };
    let (a, b) = (nearest(from), nearest(to));
    (b.0 - a.0) as f64 / (b.1 - a.1) as f64 * 100.0
}

#[test]
fn a_url_targets_machine_cpu_is_what_proc_stat_says() {
    if !require("redis-server", "redis-server") {
        return;
    }
    // Alone: the figures compared are the whole machine's either way, but
    // a test beside this one would come and go within the window.
    let _g = alone();
    let server = redis(None);
    // /proc/stat every 100 ms, with the time of each reading, while
    // bakeoff runs.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut readings = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                readings.push((SystemTime::now(), ticks()));
                std::thread::sleep(Duration::from_millis(100));
            }
            readings.push((SystemTime::now(), ticks()));
            readings
        })
    };
    // Many clients on one thread: bakeoff near a core, redis-server near
    // another, as in the default comparison.
    let r = run_ok(&[
        "run",
        "-t",
        &format!("redis://{}", server.addr),
        "--records",
        "2000",
        "--clients",
        "32",
        "--duration",
        "4s",
        "--warmup",
        "1s",
    ]);
    stop.store(true, Ordering::Relaxed);
    let readings = sampler.join().unwrap();
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{run}");
    let time = |key: &str| humantime::parse_rfc3339(run[key].as_str().unwrap()).unwrap();
    // The measure job starts at `started_at` with its warm-up; the
    // measured phase runs from the warm-up's end to `ended_at`.
    let warmup = Duration::from_secs_f64(run["workload"]["warmup_s"].as_f64().unwrap());
    let (from, to) = (time("started_at") + warmup, time("ended_at"));
    let proc_stat = busy_between(&readings, from, to);

    // The run's own per-second samples of the machine, over the measured
    // phase (the timeline's first measured second on, as the bottleneck
    // reads them).
    let measured_from = run["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "measure")
        .unwrap()["t_s"]
        .as_f64()
        .unwrap();
    let samples: Vec<f64> = run["machine_cpu"]
        .as_array()
        .unwrap_or_else(|| panic!("no machine_cpu series for a URL target: {run}"))
        .iter()
        .filter(|s| s["t_s"].as_f64().unwrap() > measured_from + 0.5)
        .map(|s| s["busy_percent"].as_f64().unwrap())
        .collect();
    assert!(samples.len() >= 2, "{samples:?}");
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    assert!(
        (mean - proc_stat).abs() <= 10.0,
        "the run's machine samples {samples:?} (mean {mean:.0} %), /proc/stat over the measured phase {proc_stat:.0} %"
    );
    // The figure the bottleneck's evidence gives.
    let evidence: Vec<String> = run["bottleneck"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    let figure: f64 = evidence
        .iter()
        .find_map(|e| e.strip_prefix("the machine's CPUs "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no machine figure in {evidence:?}"))
        .parse()
        .unwrap();
    assert!(
        (figure - proc_stat).abs() <= 10.0,
        "the evidence says the machine's CPUs were {figure} % used, /proc/stat {proc_stat:.0} %: {evidence:?}"
    );

    // A busy client on a machine full with others' work is the machine's
    // limit, and nothing calls the run client-bound.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let client_cpu: f64 = run["client"]["thread_busy_percent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_f64().unwrap())
        .sum();
    if run["client"]["client_bound"] == true && figure >= 90.0 && client_cpu < 0.8 * cores * 100.0 {
        let bottleneck = &run["bottleneck"];
        assert_eq!(bottleneck["kind"], "machine-cpu", "{bottleneck}");
        assert!(
            bottleneck["line"]
                .as_str()
                .unwrap()
                .contains("shared by bakeoff and other processes"),
            "{bottleneck}"
        );
        let warnings = r["warnings"].to_string();
        assert!(!warnings.contains("client-bound"), "{warnings}");
    } else {
        eprintln!(
            "not judged here: client bound {}, machine {figure} %, bakeoff {client_cpu:.0} % of a core on {cores} CPUs",
            run["client"]["client_bound"]
        );
    }
}
