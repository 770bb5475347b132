//! Redis Cluster (`--topology cluster:N`): bakeoff makes the cluster,
//! routes each key to its slot's master, and follows the cluster when
//! slots move under it, losing and miscounting nothing.

use crate::common::*;

use std::process::Command;
use std::time::{Duration, Instant};

/// `redis-cli -p port args…`, its output; the call must succeed.
fn cli(port: u16, args: &[&str]) -> String {
    let o = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .expect("redis-cli runs");
    // redis-cli --cluster prints a line a slot: the end says what failed.
    let tail = String::from_utf8_lossy(&o.stdout[o.stdout.len().saturating_sub(600)..]);
    assert!(
        o.status.success(),
        "redis-cli {args:?}: {}; …{tail} {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Without a migration, every key goes straight to its slot's master:
/// no redirection, and each node's own counters equal what was sent there.
#[test]
fn a_cluster_serves_each_key_at_its_slots_master() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--topology",
        "cluster:3",
        "--records",
        "5000",
        "--duration",
        "1s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    let settings = &r["targets"][0]["settings"];
    assert_eq!(settings["topology"], "cluster:3");
    assert!(settings["sharding"].as_str().unwrap().contains("16384"));
    let nodes = run["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    for n in nodes {
        assert!(n["sent"].as_u64().unwrap() > 1000, "{n}");
    }
    assert_eq!(run["redirections"]["moved"], 0, "{}", run["redirections"]);
    assert_eq!(run["redirections"]["ask"], 0, "{}", run["redirections"]);
    assert_eq!(run["checks"]["records_after_load"], 5000);
    // Each node's CPU and memory are sampled apart, and add up to the sums.
    let samples = run["resources"].as_array().unwrap();
    assert!(!samples.is_empty());
    for x in samples {
        let nodes = x["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 3, "{x}");
        let rss: u64 = nodes.iter().map(|n| n["rss_bytes"].as_u64().unwrap()).sum();
        assert_eq!(rss, x["rss_bytes"].as_u64().unwrap(), "{x}");
        assert!(nodes
            .iter()
            .all(|n| n["rss_bytes"].as_u64().unwrap() > 1 << 20));
    }
    let checks = run["checks"]["counters"].as_array().unwrap();
    assert!(checks.len() >= 3 * 2, "{checks:?}");
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}

/// With a replica per master (`redis.cluster_replicas=1`), the cluster
/// forms only once every replica has synced with its master; the load
/// goes to the masters alone, whose counters equal what was sent, and the
/// records are counted once, on the masters; all four servers are sampled.
#[test]
fn a_cluster_with_replicas_loads_only_its_masters() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--set",
        "redis.cluster_replicas=1",
        "--topology",
        "cluster:2",
        "--records",
        "3000",
        "--duration",
        "1s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert!(r["targets"][0]["settings"]["cluster_replicas"]
        .as_str()
        .unwrap()
        .starts_with('2'));
    let nodes = run["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4);
    assert!(nodes[0]["sent"].as_u64().unwrap() > 1000);
    assert!(nodes[1]["sent"].as_u64().unwrap() > 1000);
    assert_eq!(nodes[2]["sent"], 0);
    assert_eq!(nodes[3]["sent"], 0);
    assert_eq!(run["checks"]["records_after_load"], 3000);
    let checks = run["checks"]["counters"].as_array().unwrap();
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
    assert!(checks
        .iter()
        .any(|c| c["what"].as_str().unwrap().starts_with("node 1")));
    let samples = run["resources"].as_array().unwrap();
    assert!(samples
        .iter()
        .all(|x| x["nodes"].as_array().unwrap().len() == 4));
}

/// `redis-cli --cluster reshard` moves 500 of the first master's slots to
/// another while the run writes and reads (well within its 12 s, even on a
/// busy machine, where 1800 slots once outlasted an 8 s run): the client is redirected
/// (MOVED, and ASK while a slot is half moved) and counts it, no request
/// fails, no key goes missing, and each node's own GET and SET counts equal
/// what bakeoff says it sent there (a redirected request counts where it
/// was served).
#[test]
fn slots_moving_during_a_run_lose_nothing_and_are_counted() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") || !require("redis-cli", "redis-tools") {
        return;
    }
    let port = free_port();
    let dir = tmp();
    let out = dir.path().join("result.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--set",
        &format!("redis.port={port}"),
        "--topology",
        "cluster:3",
        "--records",
        "20000",
        "--mix",
        "50:50",
        "--clients",
        "8",
        "--pipeline",
        "4",
        "--duration",
        "12s",
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Wait for the cluster to form, then for the load to end (the first
    // master's keys reach their share).
    let deadline = Instant::now() + Duration::from_secs(60);
    let nodes = loop {
        assert!(Instant::now() < deadline, "the cluster did not form");
        std::thread::sleep(Duration::from_millis(200));
        let Ok(o) = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "CLUSTER", "NODES"])
            .output()
        else {
            continue;
        };
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if text.lines().filter(|l| l.contains("master")).count() == 3 {
            break text;
        }
    };
    loop {
        assert!(Instant::now() < deadline, "the load did not end");
        let n: u64 = cli(port, &["DBSIZE"]).trim().parse().unwrap_or(0);
        if n >= 6000 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Resharded once the measured phase's reads reach this master.
    let master = format!("127.0.0.1:{port}").parse().unwrap();
    wait_for_redis_calls(master, None, "get", 100);
    // `<id> <ip:port@cport> <flags> …`: the first master is `myself`.
    let ids: Vec<(&str, bool)> = nodes
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[2].contains("myself"))
        })
        .collect();
    let from = ids.iter().find(|(_, me)| *me).unwrap().0;
    let to = ids.iter().find(|(_, me)| !*me).unwrap().0;
    cli(
        port,
        &[
            "--cluster",
            "reshard",
            &format!("127.0.0.1:{port}"),
            "--cluster-from",
            from,
            "--cluster-to",
            to,
            "--cluster-slots",
            "500",
            "--cluster-yes",
            "--cluster-pipeline",
            "5",
        ],
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    let m = &run["measure"];
    assert_eq!(m["errors"], serde_json::json!({}), "{}", m["errors"]);
    assert_eq!(m["misses"], 0, "a key went missing");
    assert!(m["completed"].as_u64().unwrap() > 10_000);
    let redirections = &run["redirections"];
    assert!(
        redirections["moved"].as_u64().unwrap() > 0,
        "{redirections}"
    );
    // The first master redirected; the others had nothing to redirect.
    let nodes = run["nodes"].as_array().unwrap();
    assert!(nodes[0]["redirected"]["moved"].as_u64().unwrap() > 0);
    let checks = run["checks"]["counters"].as_array().unwrap();
    assert!(checks
        .iter()
        .any(|c| c["what"].as_str().unwrap().starts_with("node 0")));
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}
