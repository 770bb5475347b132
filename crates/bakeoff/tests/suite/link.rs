//! A link with a round-trip time (`--link`): the relay adds the round trip
//! asked for, no more, no less, and says what it cost.

use crate::common::*;

/// At one client and pipeline 1, every request crosses the link once each
/// way: the median with a 1 ms link less the median over loopback is 1 ms
/// ± 15 %, taken as the median of three interleaved rounds' differences.
///
/// The link is 1 ms, not a LAN's 150 µs, because the loopback median on
/// these virtual machines is not one figure: a Redis PING's median round
/// trip was seen at 8 µs and at 63 µs minutes apart, as the client and the
/// server share a CPU or wake each other across two, and a relay's
/// forwarding changes which. ± 15 % of 150 µs is less than that swing.
/// Three rounds, not one run: a full-suite run once saw the loopback
/// median at 377 µs for a whole run (the machine, not the relay) and the
/// linked one at 1,070 µs, a difference of 693 µs.
#[test]
fn a_1ms_link_adds_1ms_to_the_median() {
    let _beside = crate::common::beside_others();
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
        "2s",
        "--warmup",
        "1s",
        "--repeats",
        "3",
        "--sweep-link",
        "none;rtt=1ms",
    ]);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let linked = |run: &serde_json::Value| !run["workload"]["link"].is_null();
    let p50s = |with_link: bool| -> Vec<f64> {
        let mut of: Vec<(u64, f64)> = runs
            .iter()
            .filter(|run| linked(run) == with_link)
            .map(|run| {
                (
                    run["repeat"].as_u64().unwrap(),
                    run["measure"]["all"]["p50_ns"].as_f64().unwrap(),
                )
            })
            .collect();
        of.sort_by_key(|(repeat, _)| *repeat);
        of.into_iter().map(|(_, p50)| p50).collect()
    };
    let (loopback, with_link) = (p50s(false), p50s(true));
    assert_eq!((loopback.len(), with_link.len()), (3, 3));
    let mut added: Vec<f64> = loopback
        .iter()
        .zip(&with_link)
        .map(|(l, w)| w - l)
        .collect();
    added.sort_by(f64::total_cmp);
    let linked_run = runs.iter().find(|run| linked(run)).unwrap();
    assert_eq!(linked_run["workload"]["link"]["rtt_ns"], 1_000_000);
    assert!(
        (850_000.0..=1_150_000.0).contains(&added[1]),
        "the link added a median {} ns to the median (rounds' loopback {loopback:?} → linked {with_link:?}); relay: {}",
        added[1],
        linked_run["client"]["link"]
    );
    // The loopback runs have no relay; the linked ones say what it cost.
    let loopback_run = runs.iter().find(|run| !linked(run)).unwrap();
    assert_eq!(loopback_run["point"]["link"], "none");
    assert!(loopback_run["client"]["link"].is_null());
    let usage = &linked_run["client"]["link"];
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
    let _beside = crate::common::beside_others();
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
