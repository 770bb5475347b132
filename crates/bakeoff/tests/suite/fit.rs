//! Which one fits (`--require`), against the real servers and engines:
//! durability chosen from the targets' declarations, a candidate that
//! cannot keep writes left out with its reason, a bound none meets said
//! with each margin.

use crate::common::*;

/// `durable=power-cut` over redis, memcached and lmdb: memcached is out
/// (memory only whatever its settings), redis runs with
/// persistence=aof-always and lmdb with sync=full (both fsync each
/// write); at a low rate both meet a loose p99 bound, and one fits best.
#[test]
fn a_power_cut_requirement_leaves_memcached_out_and_picks_durable_settings() {
    if !require("redis-server", "redis-server") || !require("memcached", "memcached") {
        return;
    }
    let _g = beside_others();
    let dir = tmp();
    let out = dir.path().join("fit.json");
    expect_exit(
        &[
            "run",
            "-t",
            "redis,memcached,lmdb",
            "--require",
            "durable=power-cut",
            "--require",
            "p99<=50ms@500/s",
            "--records",
            "2000",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    let left = r["plan"]["left_out"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["target"], "memcached");
    assert!(
        left[0]["why"].as_str().unwrap().contains("in memory only"),
        "{left:?}"
    );
    let targets: Vec<&str> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        ["redis[persistence=aof-always]", "lmdb[sync=full]"],
        "{targets:?}"
    );
    for run in r["runs"].as_array().unwrap() {
        assert_eq!(run["workload"]["rate"], 500.0, "an open loop at the rate");
    }
    let report = bakeoff(&["report", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    let first = text.lines().nth(1).unwrap_or("");
    assert_eq!(first, "which one fits:", "{text}");
    assert!(text.contains(" fits best: "), "{text}");
    assert!(
        text.contains("memcached is out: it keeps writes in memory only whatever its settings"),
        "{text}"
    );
}

/// A p99 bound no target can meet: none meets, each with how far it is.
#[test]
fn a_bound_none_can_meet_says_none_meets_with_each_margin() {
    if !require("redis-server", "redis-server") || !require("memcached", "memcached") {
        return;
    }
    let _g = beside_others();
    let dir = tmp();
    let out = dir.path().join("none.json");
    expect_exit(
        &[
            "run",
            "-t",
            "redis,memcached",
            "--require",
            "p99<=1us@1000/s",
            "--records",
            "2000",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let report = bakeoff(&["report", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("none meets every requirement:"), "{text}");
    for t in ["redis", "memcached"] {
        assert!(
            text.lines().any(
                |l| l.starts_with(&format!("    {t}: p99 <= 1.0 µs at 1000/s: p99 "))
                    && l.ends_with(" over")
            ),
            "{t}: {text}"
        );
    }
}

/// Requirements nobody can meet before anything runs, and a malformed
/// one, are refused with what to write.
#[test]
fn requirements_no_target_can_meet_are_refused_before_anything_starts() {
    let _beside = crate::common::beside_others();
    let err = expect_exit(&["run", "-t", "memcached", "--require", "durable=crash"], 2);
    assert!(
        err.contains("no target can meet these requirements")
            && err.contains("memcached: it keeps writes in memory only"),
        "{err}"
    );
    let err = expect_exit(&["run", "-t", "redis", "--require", "fast"], 2);
    assert!(err.contains("p99<=2ms@20k/s"), "{err}");
    let err = expect_exit(&["run", "-t", "redis", "--require", "reach=in-process"], 2);
    assert!(err.contains("reached over the network"), "{err}");
}
