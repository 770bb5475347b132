//! A link with a round-trip time (`--link`): the relay adds the round trip
//! asked for, no more, no less, and says what it cost.

mod common;
use common::*;

/// At one client and pipeline 1, every request crosses the link once each
/// way: the median with a 1 ms link less the median over loopback, in one
/// run, is 1 ms ± 15 %.
///
/// The link is 1 ms, not a LAN's 150 µs, because the loopback median on
/// these virtual machines is not one figure: a Redis PING's median round
/// trip was seen at 8 µs and at 63 µs minutes apart, as the client and the
/// server share a CPU or wake each other across two, and a relay's
/// forwarding changes which. ± 15 % of 150 µs is less than that swing.
#[test]
fn a_1ms_link_adds_1ms_to_the_median() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--records",
        "1000",
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
        "none;rtt=1ms",
    ]);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let p50 = |i: usize| runs[i]["measure"]["all"]["p50_ns"].as_f64().unwrap();
    let (loopback, linked) = (p50(0), p50(1));
    assert_eq!(runs[0]["point"]["link"], "none");
    assert_eq!(runs[1]["workload"]["link"]["rtt_ns"], 1_000_000);
    let added = linked - loopback;
    assert!(
        (850_000.0..=1_150_000.0).contains(&added),
        "the link added {added} ns to the median ({loopback} → {linked}); relay: {}",
        runs[1]["client"]["link"]
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
