//! A captured trace replayed on real targets (issue 34): the shipped
//! synthetic traces, one per format, on Redis and LMDB, every operation
//! sent at its time and verified; and a live Redis's traffic captured
//! through MONITOR, then replayed.

use crate::common::*;

use std::path::PathBuf;

fn trace(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/traces")
        .join(name);
    p.to_string_lossy().into_owned()
}

/// Both formats on Redis and LMDB: every replayable operation is sent and
/// completes without error (the reads' values verified), what has no
/// equivalent is counted as skipped, and the run's rate is the trace's
/// at the speed asked for.
#[test]
fn shipped_traces_replay_on_redis_and_lmdb_at_their_own_rate_and_faster() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    for (file, ops, skipped) in [
        ("synthetic-twitter.csv", 2050, Some(("incr", 51))),
        ("synthetic.jsonl", 500, None),
    ] {
        let r = run_ok(&[
            "run",
            "-t",
            "redis,lmdb",
            "--replay",
            &trace(file),
            "--sweep-replay-speed",
            "1,10",
            "--clients",
            "4",
        ]);
        let runs = r["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4, "{file}: two targets at two speeds");
        for run in runs {
            let what = format!(
                "{file} {} speed {}",
                run["target"], run["workload"]["replay_speed"]
            );
            assert_eq!(run["status"], "ok", "{what}: {}", run["message"]);
            let m = &run["measure"];
            assert_eq!(m["completed"], ops, "{what}");
            assert_eq!(m["errors"], serde_json::json!({}), "{what}");
            let replay = &run["replay"];
            assert_eq!(replay["ops"], ops, "{what}");
            if let Some((name, n)) = skipped {
                assert_eq!(replay["skipped"][name], n, "{what}: {replay}");
            }
            // The rate asked is the trace's mean rate times the speed.
            let span = replay["span_s"].as_f64().unwrap();
            let speed = run["workload"]["replay_speed"].as_f64().unwrap();
            let rate = run["workload"]["rate"].as_f64().unwrap();
            let expected = ops as f64 / span * speed;
            assert!(
                (rate - expected).abs() < 1e-6 * expected,
                "{what}: {rate} vs {expected}"
            );
            // The replay took about the trace's span over the speed.
            let took = m["duration_s"].as_f64().unwrap();
            assert!(
                took > 0.8 * span / speed && took < span / speed + 1.0,
                "{what}: measured {took} s for a span of {span} s"
            );
        }
    }
}

/// `bakeoff capture` records what a Redis serves into bakeoff's JSONL
/// (keys hashed), says which commands it skipped, and the trace replays.
#[test]
fn a_captured_redis_trace_replays() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    let server = redis(None);
    let dir = tmp();
    let out = dir.path().join("captured.jsonl");
    let url = format!("redis://{}", server.addr);
    let capture = bakeoff_spawn(&[
        "capture",
        &url,
        "--duration",
        "3s",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Traffic once MONITOR is in place (the server counts the call).
    wait_for_redis_calls(server.addr, None, "monitor", 1);
    for i in 0..20 {
        let set = format!("*3\r\n$3\r\nSET\r\n$9\r\nsecret:{i:02}\r\n$5\r\nhello\r\n");
        call(server.addr, set.as_bytes(), |b| b.ends_with(b"\r\n"));
        let get = format!("*2\r\n$3\r\nGET\r\n$9\r\nsecret:{i:02}\r\n");
        call(server.addr, get.as_bytes(), |b| b.ends_with(b"hello\r\n"));
    }
    call(server.addr, b"*1\r\n$4\r\nPING\r\n", |b| {
        b.ends_with(b"\r\n")
    });
    let o = capture.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("40 operations written"), "{stderr}");
    assert!(stderr.contains("1 ping"), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 40, "{text}");
    assert!(!text.contains("secret"), "keys are hashed: {text}");
    let r = run_ok(&["run", "-t", "lmdb", "--replay", out.to_str().unwrap()]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["completed"], 40, "{}", run["replay"]);
    assert_eq!(run["measure"]["errors"], serde_json::json!({}));
    assert_eq!(run["replay"]["records"], 20, "{}", run["replay"]);
}
