//! Conservation: what bakeoff says it did equals what the server counted,
//! and the load phase leaves exactly `records` keys behind.

use crate::common::*;

fn run_against(url: &str, out: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    run_against_for("1s", url, out, extra)
}

/// [`run_against`] with a measured phase of `duration`.
fn run_against_for(
    duration: &str,
    url: &str,
    out: &std::path::Path,
    extra: &[&str],
) -> serde_json::Value {
    let mut args = vec![
        "run",
        "--target",
        url,
        "--records",
        "2000",
        "--mix",
        "70:20:5:5",
        "--clients",
        "8",
        "--pipeline",
        "4",
        "--duration",
        duration,
        "--warmup",
        "500ms",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = bakeoff(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    read_json(out)
}

fn sent(run: &serde_json::Value, phase: &str, op: &str) -> u64 {
    run[phase]["ops"][op]["sent"].as_u64().unwrap_or(0)
}

#[test]
fn redis_counts_equal_commandstats_and_dbsize() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let dir = tmp();
    let out = dir.path().join("r.json");
    let r = run_against(&format!("redis://{}", server.addr), &out, &[]);
    let run = &r["runs"][0];
    let gets = sent(run, "warmup", "get") + sent(run, "measure", "get");
    let sets = sent(run, "load", "set")
        + ["warmup", "measure"]
            .iter()
            .map(|p| sent(run, p, "set") + sent(run, p, "update"))
            .sum::<u64>();
    let dels = sent(run, "warmup", "delete") + sent(run, "measure", "delete");
    assert!(
        gets > 1000 && sets > 2000 && dels > 0,
        "{gets} {sets} {dels}"
    );
    assert_eq!(redis_calls(server.addr, "get"), gets);
    assert_eq!(redis_calls(server.addr, "set"), sets);
    assert_eq!(redis_calls(server.addr, "del"), dels);
    assert_eq!(run["checks"]["records_after_load"], 2000);
    // The server's own time per command over the measured phase alone,
    // read as the warm-up ends: its calls are the measured phase's
    // requests, give or take those made while the reading is taken (10 %
    // on a busy machine; the warm-up's, a third of all, and the load's
    // sets are left out).
    let times = run["server_time"]["commands"].as_array().unwrap();
    let time = |c: &str| times.iter().find(|t| t["command"] == c).unwrap();
    let near = |command: &str, measured: u64| {
        let calls = time(command)["calls"].as_u64().unwrap();
        assert!(
            calls.abs_diff(measured) * 100 <= measured * 10,
            "{command}: the server counted {calls}, the measured phase sent {measured}: {times:?}"
        );
    };
    assert!(sent(run, "warmup", "get") > 1000, "a warm-up to leave out");
    near("get", sent(run, "measure", "get"));
    near(
        "set",
        sent(run, "measure", "set") + sent(run, "measure", "update"),
    );
    let (server, client) = (
        time("get")["server_mean_us"].as_f64().unwrap(),
        time("get")["client_mean_us"].as_f64().unwrap(),
    );
    assert!(server > 0.0 && server < client, "{times:?}");
    assert!(times.iter().all(|t| t["command"] != "info"), "{times:?}");
    // Redis's own distribution of GET's time (LATENCY HISTOGRAM) beside
    // the client's, bucket by bucket: every operation of the measured
    // phase in one bucket, and the calls (near enough), most calls faster
    // than most operations.
    let buckets = time("get")["histogram"].as_array().unwrap();
    let total = |side: &str| -> u64 { buckets.iter().map(|b| b[side].as_u64().unwrap()).sum() };
    // (The histogram is read one round trip after the commandstats, at
    // the warm-up's end and again at the end, while 50 clients keep
    // calling: the calls between the two readings shift it. On a loaded
    // 2-core VM a clean-clone CI saw 222 of 97,946, 0.23 %; a warm-up
    // counted in, over 1,000 GETs, would be more than 1 %.)
    let calls = time("get")["calls"].as_u64().unwrap();
    assert!(
        total("server").abs_diff(calls) * 200 <= calls,
        "{} in the buckets, {calls} calls",
        total("server")
    );
    assert_eq!(
        total("client"),
        run["measure"]["ops"]["get"]["service_time"]["count"]
            .as_u64()
            .or(run["measure"]["ops"]["get"]["latency"]["count"].as_u64())
            .unwrap()
    );
    let median = |side: &str| {
        let mut seen = 0;
        buckets
            .iter()
            .find(|b| {
                seen += b[side].as_u64().unwrap();
                2 * seen >= total(side)
            })
            .map(|b| b["le_us"].as_u64().unwrap())
            .unwrap()
    };
    assert!(median("server") < median("client"), "{buckets:?}");
    // Every completed or failed op was sent, and nothing failed.
    assert_eq!(run["measure"]["errors"].as_object().unwrap().len(), 0);
    // Little's law holds for a closed loop: mean latency × throughput = in flight.
    let ratio = run["checks"]["littles_law_ratio"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() < 0.05, "Little's law ratio {ratio}");
}

#[test]
fn memcached_counts_equal_stats_and_curr_items() {
    let _beside = crate::common::beside_others();
    if !require("memcached", "memcached") {
        return;
    }
    for (scheme, target) in [
        ("memcached", "memcached"),
        ("memcached-binary", "memcached-binary"),
    ] {
        let server = memcached();
        let dir = tmp();
        let out = dir.path().join("m.json");
        let r = run_against(&format!("{scheme}://{}", server.addr), &out, &[]);
        let run = &r["runs"][0];
        assert_eq!(run["target"], target);
        let gets = sent(run, "warmup", "get") + sent(run, "measure", "get");
        let sets = sent(run, "load", "set")
            + ["warmup", "measure"]
                .iter()
                .map(|p| sent(run, p, "set") + sent(run, p, "update"))
                .sum::<u64>();
        let dels = sent(run, "warmup", "delete") + sent(run, "measure", "delete");
        assert!(gets > 1000 && sets > 2000 && dels > 0);
        assert_eq!(memcached_stat(server.addr, "cmd_get"), gets, "{target}");
        assert_eq!(memcached_stat(server.addr, "cmd_set"), sets, "{target}");
        assert_eq!(
            memcached_stat(server.addr, "delete_hits")
                + memcached_stat(server.addr, "delete_misses"),
            dels,
            "{target}"
        );
        assert_eq!(run["checks"]["records_after_load"], 2000, "{target}");
        // bakeoff's own check agrees.
        for c in run["checks"]["counters"].as_array().unwrap() {
            assert_eq!(c["bakeoff"], c["target"], "{c}");
        }
        // memcached keeps no time of its own per command: said, not blank.
        let time = &run["server_time"];
        assert_eq!(time["commands"], serde_json::json!([]), "{time}");
        assert!(
            time["source"]
                .as_str()
                .is_some_and(|s| s.contains("no time per command")),
            "{time}"
        );
    }
}

#[test]
fn managed_servers_are_started_recorded_and_cleaned_up() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") || !require("memcached", "memcached") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("managed.json");
    let o = bakeoff(&[
        "run",
        "-t",
        "redis,memcached",
        "--records",
        "1000",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--clients",
        "4",
        "--set",
        "redis.persistence=aof-everysec",
        "--set",
        "memcached.memory=64mb",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("ops/s") && stdout.contains("µs"),
        "{stdout}"
    );
    let r = read_json(&out);
    assert_eq!(r["status"], "complete");
    let targets = r["targets"].as_array().unwrap();
    let redis = targets.iter().find(|t| t["name"] == "redis").unwrap();
    assert!(redis["version"].as_str().unwrap().starts_with("Redis "));
    assert_eq!(redis["settings"]["aof_enabled"], "1");
    let mc = targets.iter().find(|t| t["name"] == "memcached").unwrap();
    assert_eq!(mc["settings"]["limit_maxbytes"], (64u64 << 20).to_string());
    for run in r["runs"].as_array().unwrap() {
        for c in run["checks"]["counters"].as_array().unwrap() {
            assert_eq!(c["bakeoff"], c["target"], "{c}");
        }
        assert!(
            !run["resources"].as_array().unwrap().is_empty(),
            "server resources sampled"
        );
        assert!(run["resources"][0]["rss_bytes"].as_u64().unwrap() > 0);
    }
    // The servers are gone, and so are their directories.
    let cmdline = redis["settings"]["command_line"].as_str().unwrap();
    let data_dir = cmdline
        .split("--dir ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        !std::path::Path::new(data_dir).exists(),
        "{data_dir} left behind"
    );
    let port = cmdline
        .split("--port ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "redis still listening on {port}"
    );
}

/// A crowd: 10000 connections held against memcached at once for 10 s,
/// with no error, every one counted by the server each second; and
/// `--ops-per-client` gives each client exactly its count.
#[test]
fn ten_thousand_connections_are_held_and_counted_by_the_server() {
    let _beside = crate::common::beside_others();
    if !require("memcached", "memcached") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "memcached",
        "--set",
        "memcached.max_connections=12000",
        "--records",
        "10000",
        "--clients",
        "10000",
        "--threads",
        "2",
        "--rate",
        "20000",
        "--duration",
        "10s",
        "--warmup",
        "1s",
        "--timeout",
        "10s",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert!(
        run["measure"]["errors"].as_object().unwrap().is_empty(),
        "{}",
        run["measure"]["errors"]
    );
    assert!(run["measure"]["completed"].as_u64().unwrap() > 100_000);
    // The server held every connection in the measured seconds.
    let held = run["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["connections"].as_u64())
        .max()
        .unwrap();
    assert!(held >= 10_000, "the server held at most {held} connections");

    let r = run_ok(&[
        "run",
        "-t",
        "memcached",
        "--records",
        "1000",
        "--clients",
        "300",
        "--threads",
        "2",
        "--ops-per-client",
        "100",
        "--mix",
        "0:100",
        "--warmup",
        "0",
    ]);
    let m = &r["runs"][0]["measure"];
    assert_eq!(m["ops"]["set"]["sent"].as_u64(), Some(300 * 100));
    assert_eq!(m["completed"].as_u64(), Some(300 * 100));
}

/// Writes a full Redis refuses (OOM under `noeviction`) are requests it
/// received: its `rejected_calls`, not its `calls`, count them, and the
/// counts still agree. What it said is kept with the errors and printed.
#[test]
fn writes_redis_refuses_are_counted_and_what_it_said_is_kept() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("oom.json");
    let o = bakeoff(&[
        "run",
        "-t",
        "redis",
        "--set",
        "redis.maxmemory=2mb",
        "--set",
        "redis.maxmemory_policy=noeviction",
        "--records",
        "30000",
        "--value-size",
        "200",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "-o",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let r = read_json(&out);
    let run = &r["runs"][0];
    let said = run["load"]["error_texts"]["server_error"]
        .as_str()
        .unwrap_or_else(|| panic!("no text kept: {run}"));
    assert!(said.starts_with("OOM command not allowed"), "{said}");
    assert!(
        stdout.contains("server_error") && stdout.contains("(first: \"OOM command not allowed"),
        "{stdout}"
    );
    let counters = run["checks"]["counters"].as_array().unwrap();
    assert!(!counters.is_empty());
    for c in counters {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}

/// PostgreSQL's own time per statement (pg_stat_statements) over the
/// measured phase alone, beside the client's: its calls are the measured
/// phase's requests, the executor's mean a part of the client's round
/// trip, and the commits' WAL write and flush (pg_stat_wal, timed on the
/// server bakeoff starts) a row of its own.
#[test]
fn postgres_time_inside_the_server_is_the_measured_phases() {
    if !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql") {
        return;
    }
    let _g = beside_others();
    let dir = tmp();
    let out = dir.path().join("p.json");
    // Four seconds, not one: the reading as the warm-up ends opens a
    // connection (a backend forked) and queries, and the statements of that
    // time count before the phase. Beside the suite's other tests it took
    // about 220 ms here, 22 % of a one-second phase.
    let r = run_against_for("4s", "postgres", &out, &[]);
    let run = &r["runs"][0];
    let times = run["server_time"]["commands"].as_array().unwrap();
    let time = |c: &str| {
        times
            .iter()
            .find(|t| t["command"] == c)
            .unwrap_or_else(|| panic!("no {c}: {times:?}"))
    };
    let reads = time("SELECT by key");
    let calls = reads["calls"].as_u64().unwrap();
    let measured = sent(run, "measure", "get");
    let warmup = sent(run, "warmup", "get");
    // The warm-up's reads are left out: the server's count is nearer the
    // measured phase's than the two phases' together. (Not a fixed
    // floor on the warm-up's reads: a clean-clone CI on a loaded machine
    // saw 500 ms of warm-up send 500 or fewer.)
    assert!(warmup > 0, "a warm-up to leave out: {run}");
    assert!(
        calls.abs_diff(measured) < calls.abs_diff(measured + warmup),
        "the server counted {calls} reads: nearer both phases' {} than the measured phase's {measured}",
        measured + warmup
    );
    assert!(
        calls.abs_diff(measured) * 100 <= measured * 10,
        "the server counted {calls} reads, the measured phase sent {measured}"
    );
    let (server, client) = (
        reads["server_mean_us"].as_f64().unwrap(),
        reads["client_mean_us"].as_f64().unwrap(),
    );
    assert!(server > 0.0 && server < client, "{times:?}");
    let wal = time("commit: WAL write and flush (pg_stat_wal), per write");
    assert!(wal["server_mean_us"].as_f64().unwrap() > 0.0, "{wal}");
    assert!(
        r["runs"][0]["server_time"]["source"]
            .as_str()
            .unwrap()
            .contains("pg_stat_statements"),
        "{}",
        run["server_time"]
    );
}

/// MariaDB with performance_schema on (`mariadb[performance_schema=true]`):
/// its time in prepared statements over the measured phase, every execute
/// in one row (binary-protocol executes carry no digest) beside every
/// operation's client time; without it, the report says how to turn it on.
#[test]
fn mariadb_time_inside_the_server_with_performance_schema() {
    if !require("mariadbd", "mariadb-server") {
        return;
    }
    let _g = beside_others();
    let r = run_ok(&[
        "run",
        "-t",
        "mariadb,mariadb[performance_schema=true]",
        "--records",
        "2000",
        // Three seconds, not one: the reading as the warm-up ends takes a
        // connection and a query, and the executes of that time count
        // before the phase. Beside the suite's other tests (30k ops/s here)
        // it took about 130 ms, 13 % of a one-second phase.
        "--duration",
        "3s",
        "--warmup",
        "500ms",
    ]);
    let runs = r["runs"].as_array().unwrap();
    let off = &runs[0]["server_time"];
    assert!(
        off["source"]
            .as_str()
            .unwrap()
            .contains("mariadb[performance_schema=true]"),
        "{off}"
    );
    let on = &runs[1];
    let times = on["server_time"]["commands"].as_array().unwrap();
    assert_eq!(times.len(), 1, "{times:?}");
    let calls = times[0]["calls"].as_u64().unwrap();
    let measured: u64 = ["get", "set"].iter().map(|k| sent(on, "measure", k)).sum();
    assert!(
        calls.abs_diff(measured) * 100 <= measured * 10,
        "the server counted {calls} executes, the measured phase sent {measured}"
    );
    let (server, client) = (
        times[0]["server_mean_us"].as_f64().unwrap(),
        times[0]["client_mean_us"].as_f64().unwrap(),
    );
    assert!(server > 0.0 && server < client, "{times:?}");
}
