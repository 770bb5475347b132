//! A link with a round-trip time (`--link`): the relay adds the round trip
//! asked for, no more, no less, and says what it cost.

mod common;
use common::*;

/// At one client and pipeline 1, every request crosses the link once each
/// way: the median with a 150 µs link less the median over loopback, in
/// one run, is 150 µs ± 15 %.
#[test]
fn a_150us_link_adds_150us_to_the_median() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--records",
        "10000",
        "--mix",
        "100:0",
        "--clients",
        "1",
        "--pipeline",
        "1",
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--sweep-link",
        "none;rtt=150us",
    ]);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let p50 = |i: usize| runs[i]["measure"]["all"]["p50_ns"].as_f64().unwrap();
    let (loopback, linked) = (p50(0), p50(1));
    assert_eq!(runs[0]["point"]["link"], "none");
    assert_eq!(runs[1]["workload"]["link"]["rtt_ns"], 150_000);
    let added = linked - loopback;
    assert!(
        (127_500.0..=172_500.0).contains(&added),
        "the link added {added} ns to the median ({loopback} → {linked})"
    );
    // The loopback run has no relay; the linked one says what it cost.
    assert!(runs[0]["client"]["link"].is_null());
    let usage = &runs[1]["client"]["link"];
    assert_eq!(usage["relay_bound"], false, "{usage}");
    assert!(usage["chunks"].as_u64().unwrap() > 1000, "{usage}");
    assert!(
        usage["relay_busy_percent"].as_f64().unwrap() > 0.0,
        "{usage}"
    );
}

/// A link sits on a network; an engine in bakeoff's process has none.
#[test]
fn a_link_on_an_embedded_engine_is_refused_naming_the_targets_that_can() {
    let o = bakeoff(&["run", "-t", "lmdb", "--link", "rtt=150us", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--link"), "{err}");
    assert!(err.contains("redis") && err.contains("postgres"), "{err}");
    assert!(
        !err.contains("lmdb,"),
        "lmdb is not among those that can: {err}"
    );
    for bad in ["rtt", "rtt=fast", "delay=1ms", "rtt=1ms,bandwidth=0"] {
        let o = bakeoff(&["run", "-t", "redis", "--link", bad, "--dry-run"]);
        assert_eq!(o.status.code(), Some(2), "--link {bad}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--link"),
            "--link {bad}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
