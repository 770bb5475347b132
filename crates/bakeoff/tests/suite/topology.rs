//! Targets of more than one server (`--topology`): shards of memcached and
//! Redis, keys spread by ketama as libmemcached does, each node's own
//! counters checked against what the client sent it.

use crate::common::*;
use bakeoff_core::ketama::Ketama;
use bakeoff_core::keys::key_of;

/// Each of `records` ids is written once, in order, into empty shards:
/// every node's SET count is the number of ids ketama (checked against
/// libmemcached by the unit test's fixtures) puts on it, the client's
/// count for each node equals the node's own counter, and the nodes add
/// up to the total.
fn shards_take_the_keys_ketama_gives_them(target: &str, program: &str) {
    if !require(program, program) {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("shards.json");
    let records = 6000u64;
    expect_exit(
        &[
            "run",
            "-t",
            target,
            "--topology",
            "shards:3",
            "--no-load",
            "--records",
            &records.to_string(),
            "--ops",
            &records.to_string(),
            "--key-distribution",
            "sequential",
            "--mix",
            "0:100",
            "--clients",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    let nodes = run["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    let names: Vec<(String, u16)> = nodes
        .iter()
        .map(|n| {
            let (h, p) = n["node"].as_str().unwrap().rsplit_once(':').unwrap();
            (h.to_string(), p.parse().unwrap())
        })
        .collect();
    let ring = Ketama::new(&names);
    let mut want = [0u64; 3];
    for id in 0..records {
        want[ring.node_of(&key_of(id))] += 1;
    }
    let sent: Vec<u64> = nodes.iter().map(|n| n["sent"].as_u64().unwrap()).collect();
    assert_eq!(sent, want, "requests per node against ketama's placement");
    assert_eq!(sent.iter().sum::<u64>(), records);
    // Every node's own counter, and the sum, equal the client's counts.
    let checks = run["checks"]["counters"].as_array().unwrap();
    for (i, want) in want.iter().enumerate() {
        let c = checks
            .iter()
            .find(|c| {
                c["what"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("node {i} "))
            })
            .unwrap_or_else(|| panic!("no check for node {i}: {checks:?}"));
        assert_eq!(c["bakeoff"], *want, "{c}");
        assert_eq!(c["target"], c["bakeoff"], "{c}");
    }
    let total = checks
        .iter()
        .find(|c| !c["what"].as_str().unwrap().starts_with("node "))
        .unwrap();
    assert_eq!(total["target"], records, "{total}");
    // The result says how keys were spread; the report's evidence
    // shows the balance, and its first screen says where to find it.
    let settings = &r["targets"][0]["settings"];
    assert_eq!(settings["topology"], "shards:3");
    assert!(settings["sharding"].as_str().unwrap().contains("ketama"));
    let report = bakeoff(&["report", out.to_str().unwrap(), "--details"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("requests per node"), "{text}");
    let report = bakeoff(&["report", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(!text.contains("requests per node ("), "{text}");
    assert!(text.contains("more with --details: each run, "), "{text}");
}

#[test]
fn memcached_shards_take_the_keys_ketama_gives_them() {
    let _beside = crate::common::beside_others();
    shards_take_the_keys_ketama_gives_them("memcached", "memcached");
}

#[test]
fn redis_shards_take_the_keys_ketama_gives_them() {
    let _beside = crate::common::beside_others();
    shards_take_the_keys_ketama_gives_them("redis", "redis-server");
}

/// Shards under a mixed, pipelined, multi-threaded load: nothing is lost
/// or miscounted, per node or in all, and every read is verified.
#[test]
fn a_pipelined_mixed_load_on_shards_is_counted_per_node() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--topology",
        "shards:4",
        "--records",
        "5000",
        "--mix",
        "70:20:5:5",
        "--clients",
        "8",
        "--threads",
        "2",
        "--pipeline",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    let errors = run["measure"]["errors"].as_object().unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let checks = run["checks"]["counters"].as_array().unwrap();
    assert!(checks.len() >= 4 * 3, "{checks:?}");
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
    let sent: u64 = run["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["sent"].as_u64().unwrap())
        .sum();
    let total: u64 = checks
        .iter()
        .filter(|c| !c["what"].as_str().unwrap().starts_with("node "))
        .map(|c| c["bakeoff"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, total, "per-node counts add up to the total");
}

/// A topology a target cannot have, no nodes, or a URL: exit 2 naming the
/// flag and the targets that can.
#[test]
fn impossible_topologies_are_refused_naming_the_targets_that_can() {
    let _beside = crate::common::beside_others();
    let refused = |args: &[&str], wanted: &[&str]| {
        let mut all = vec!["run", "--dry-run"];
        all.extend_from_slice(args);
        let o = bakeoff(&all);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for w in wanted {
            assert!(err.contains(w), "{args:?}: `{w}` not in: {err}");
        }
    };
    refused(
        &["-t", "postgres", "--topology", "shards:4"],
        &["--topology", "redis", "memcached"],
    );
    refused(
        &["-t", "lmdb", "--topology", "shards:2"],
        &["--topology", "redis"],
    );
    refused(
        &["-t", "redis", "--topology", "shards:0"],
        &["--topology", "at least 1"],
    );
    refused(
        &["-t", "redis", "--topology", "ring:3"],
        &["--topology", "shards:N"],
    );
    refused(
        &["-t", "memcached", "--topology", "primary-replica"],
        &["--topology", "memcached"],
    );
    refused(
        &["-t", "redis://127.0.0.1:1", "--topology", "shards:2"],
        &["--topology", "-t redis"],
    );
    refused(
        &[
            "-t",
            "redis",
            "--topology",
            "shards:2",
            "--fault",
            "kill@1s",
        ],
        &["--fault", "--topology"],
    );
    refused(
        &["-t", "memcached", "--topology", "cluster:3"],
        &["--topology", "targets that can: redis"],
    );
    refused(
        &["-t", "redis", "--topology", "cluster:0"],
        &["--topology", "at least 1"],
    );
}

/// A replication run reading from a replica that is paused (SIGSTOP) for a
/// second: reads served when it resumes, before it has applied what the
/// primary acknowledged meanwhile, are counted stale; the lag shows; and
/// after the run the replica catches up and holds every record.
#[test]
fn a_paused_replica_serves_stale_reads_and_then_catches_up() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("replica.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--topology",
        "primary-replica",
        "--read-from",
        "replica",
        "--records",
        "2000",
        // Mostly writes, many in flight: while the replica is paused the
        // clients go on writing to the primary until their pipelines are
        // full of reads waiting for the replica.
        "--mix",
        "20:80",
        "--clients",
        "16",
        "--pipeline",
        "16",
        "--duration",
        "4s",
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // redis-server retitles itself `/usr/bin/redis-server 127.0.0.1:PORT`:
    // the replica is the child whose INFO says so.
    let (replica, addr) = first_child(child.id(), |pid, args| {
        let title = args.first()?;
        let port = title[title.find("127.0.0.1:")?..].strip_prefix("127.0.0.1:")?;
        let addr = format!("127.0.0.1:{}", port.split_whitespace().next()?)
            .parse()
            .ok()?;
        let info = call(addr, b"INFO replication\r\n", |b| b.ends_with(b"\r\n\r\n"));
        info.contains("role:slave").then_some((pid, addr))
    });
    // Paused once the measured phase reads from it (the load writes to
    // the primary only).
    wait_for_redis_calls(addr, None, "get", 100);
    // SAFETY: pausing and resuming the replica this test's bakeoff started.
    unsafe { libc::kill(replica as i32, libc::SIGSTOP) };
    std::thread::sleep(std::time::Duration::from_millis(1000));
    unsafe { libc::kill(replica as i32, libc::SIGCONT) };
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
    let stale = run["measure"]["stale_reads"].as_u64().unwrap();
    assert!(stale > 0, "no stale read counted after the replica's pause");
    let replica = &run["checks"]["replica"];
    assert!(replica["caught_up_after_s"].is_f64(), "{replica}");
    assert_eq!(
        replica["replica_records"], replica["primary_records"],
        "{replica}"
    );
    assert_eq!(replica["replica_records"], 2000, "{replica}");
    let lags: Vec<u64> = run["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["replication_lag_bytes"].as_u64())
        .collect();
    assert!(lags.len() >= 3, "the lag is sampled each second: {lags:?}");
    // Reads went to the replica, writes to the primary: each node's
    // counter equals what was sent to it.
    let checks = run["checks"]["counters"].as_array().unwrap();
    assert!(checks
        .iter()
        .any(|c| c["what"].as_str().unwrap().starts_with("replica 1")));
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}

/// With WAIT after every write (synchronous replication), a read sent
/// after a write's acknowledgement finds it at the replica: no stale read.
#[test]
fn with_wait_after_each_write_a_replica_serves_no_stale_read() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--topology",
        "primary-replica",
        "--read-from",
        "replica",
        "--set",
        "redis.wait_replicas=1",
        "--records",
        "2000",
        "--mix",
        "50:50",
        "--clients",
        "4",
        "--duration",
        "2s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["stale_reads"], 0);
    assert!(run["measure"]["ops"]["set"]["completed"].as_u64().unwrap() > 100);
    let requests = r["targets"][0]["requests"]["set"].as_str().unwrap();
    assert!(requests.contains("WAIT 1"), "{requests}");
}

/// Shards someone else runs: one URL naming several hosts is one sharded
/// target; each server's own count (read here, from outside) equals what
/// the result says was sent to it.
#[test]
fn a_url_with_several_hosts_is_a_sharded_target() {
    let _beside = crate::common::beside_others();
    if !require("memcached", "memcached") {
        return;
    }
    let (a, b) = (memcached(), memcached());
    let dir = tmp();
    let out = dir.path().join("external.json");
    let url = format!("memcached://{},{}", a.addr, b.addr);
    let o = bakeoff(&[
        "run",
        "-t",
        &format!("{url},redis"),
        "--records",
        "3000",
        "--mix",
        "50:50",
        "--clients",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--quiet",
        "--dry-run",
    ]);
    // The comma between the hosts belongs to the URL; the one before
    // `redis` separates targets.
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(plan.contains("2 target(s)"), "{plan}");
    expect_exit(
        &[
            "run",
            "-t",
            &url,
            "--records",
            "3000",
            "--mix",
            "50:50",
            "--clients",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    let nodes = run["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for (server, node) in [&a, &b].iter().zip(nodes) {
        assert_eq!(node["node"], server.addr.to_string());
        let own = memcached_stat(server.addr, "cmd_get") + memcached_stat(server.addr, "cmd_set");
        assert_eq!(node["sent"].as_u64().unwrap(), own, "{node}");
    }
    // A target that cannot be sharded refuses several hosts.
    let o = bakeoff(&[
        "run",
        "-t",
        "postgres://u:p@127.0.0.1:1,127.0.0.1:2",
        "--dry-run",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("several hosts") && !err.contains(":p@"),
        "{err}"
    );
}

/// A fixed port is the first node's: the other shards take free ones
/// rather than fail on the port the first already holds.
#[test]
fn a_fixed_port_goes_to_the_first_shard() {
    let _beside = crate::common::beside_others();
    for (target, program) in [("memcached", "memcached"), ("redis", "redis-server")] {
        if !require(program, program) {
            continue;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = run_ok(&[
            "run",
            "-t",
            target,
            "--set",
            &format!("{target}.port={port}"),
            "--topology",
            "shards:2",
            "--records",
            "1000",
            "--duration",
            "1s",
            "--warmup",
            "0",
        ]);
        let nodes = r["runs"][0]["nodes"].as_array().unwrap();
        assert_eq!(nodes[0]["node"], format!("127.0.0.1:{port}"), "{target}");
        assert_ne!(nodes[1]["node"], nodes[0]["node"], "{target}");
    }
}
