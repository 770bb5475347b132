//! Replication on the SQL servers (`--topology primary-replica`):
//! PostgreSQL's streaming replica made with pg_basebackup and MariaDB's
//! GTID replica, each started by bakeoff; reads at the replica checked
//! against the writes acknowledged before them (stale reads), the lag
//! sampled, every node's statement counters checked against what the
//! client sent it, and the replica holding every record after the run.

use crate::common::*;

const PG_DIRS: &[&str] = &["/usr/lib/postgresql/*/bin"];

fn have_postgres() -> bool {
    require_in("postgres", PG_DIRS, "postgresql")
}

fn have_mariadb() -> bool {
    require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
}

/// What every replication run must show: it ran, its reads were checked,
/// the lag was sampled, each node's counters equal what was sent to it
/// (reads to the replica, writes to the primary), and after the run the
/// replica caught up and holds every record the primary holds.
fn assert_replicated(r: &serde_json::Value, records: u64) {
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert!(run["measure"]["stale_reads"].is_u64(), "{}", run["measure"]);
    let replica = &run["checks"]["replica"];
    assert!(replica["caught_up_after_s"].is_f64(), "{replica}");
    assert!(replica["caught_up_after_load_s"].is_f64(), "{replica}");
    assert_eq!(replica["primary_records"], records, "{replica}");
    assert_eq!(replica["replica_records"], records, "{replica}");
    let lags = run["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["replication_lag_bytes"].is_u64())
        .count();
    assert!(
        lags >= 2,
        "the lag is sampled each second: {}",
        run["resources"]
    );
    let checks = run["checks"]["counters"].as_array().unwrap();
    for who in ["primary 0", "replica 1"] {
        assert!(
            checks
                .iter()
                .any(|c| c["what"].as_str().unwrap().starts_with(who)),
            "no check of the {who}: {checks:?}"
        );
    }
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
    let nodes = run["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert!(
        nodes.iter().all(|n| n["sent"].as_u64().unwrap() > 0),
        "{nodes:?}"
    );
}

fn replicated_run(target: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "-t",
        target,
        "--topology",
        "primary-replica",
        "--read-from",
        "replica",
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
    ];
    args.extend(extra);
    run_ok(&args)
}

/// MariaDB's replica applies the binary log on one thread and trails a
/// load of 30000 rows by seconds: the run waits for it before the warm-up,
/// so that no read at the replica misses a loaded record (before the wait,
/// 14139 of 65959 reads missed).
#[test]
fn reads_at_a_mariadb_replica_start_after_it_has_the_loaded_records() {
    let _beside = crate::common::beside_others();
    if !have_mariadb() {
        return;
    }
    let r = run_ok(&[
        "run",
        "-t",
        "mariadb",
        "--topology",
        "primary-replica",
        "--read-from",
        "replica",
        "--records",
        "30k",
        "--mix",
        "100:0",
        "--clients",
        "4",
        "--duration",
        "2s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert!(run["measure"]["completed"].as_u64().unwrap() > 0);
    assert_eq!(run["measure"]["misses"], 0, "{}", run["measure"]);
    assert!(
        run["checks"]["replica"]["caught_up_after_load_s"].is_f64(),
        "{}",
        run["checks"]["replica"]
    );
}

#[test]
fn a_postgres_streaming_replica_serves_reads_and_holds_every_record() {
    let _beside = crate::common::beside_others();
    if !have_postgres() {
        return;
    }
    let r = replicated_run("postgres", &[]);
    assert_replicated(&r, 2000);
    let settings = &r["targets"][0]["settings"];
    assert_eq!(settings["topology"], "primary-replica");
    assert_eq!(settings["synchronous_standby_names"], "", "{settings}");
}

/// remote_apply: a commit returns once the replica has applied it, so a
/// read sent after the acknowledgement finds it there.
#[test]
fn with_remote_apply_a_postgres_replica_serves_no_stale_read() {
    let _beside = crate::common::beside_others();
    if !have_postgres() {
        return;
    }
    let r = replicated_run(
        "postgres[synchronous_replica=true,synchronous_commit=remote_apply]",
        &[],
    );
    assert_replicated(&r, 2000);
    let settings = &r["targets"][0]["settings"];
    assert_eq!(settings["synchronous_standby_names"], "*", "{settings}");
    assert_eq!(settings["synchronous_commit"], "remote_apply", "{settings}");
    assert_eq!(r["runs"][0]["measure"]["stale_reads"], 0);
}

#[test]
fn a_mariadb_gtid_replica_serves_reads_and_holds_every_record() {
    let _beside = crate::common::beside_others();
    if !have_mariadb() {
        return;
    }
    let r = replicated_run("mariadb", &[]);
    assert_replicated(&r, 2000);
    let settings = &r["targets"][0]["settings"];
    assert_eq!(settings["log_bin"], "1", "{settings}");
    assert_eq!(settings["rpl_semi_sync_master_enabled"], "0", "{settings}");
}

/// Semi-synchronous replication is in force on the primary (read back
/// from it); it waits for the replica to receive a commit, not to apply
/// it, so stale reads are not ruled out and not asserted.
#[test]
fn mariadb_semisync_is_read_back_from_the_primary() {
    let _beside = crate::common::beside_others();
    if !have_mariadb() {
        return;
    }
    let r = replicated_run("mariadb[semisync=true]", &[]);
    assert_replicated(&r, 2000);
    let settings = &r["targets"][0]["settings"];
    assert_eq!(settings["rpl_semi_sync_master_enabled"], "1", "{settings}");
}

/// Runs `target` with reads at its replica while the replica's processes
/// (the one `is_replica` picks among bakeoff's children, and its own
/// children) are stopped for a second: reads served after they resume,
/// before the replica has applied what the primary acknowledged meanwhile,
/// are counted stale; afterwards the replica catches up.
fn a_paused_replica_serves_stale_reads(target: &str, is_replica: impl Fn(&[String]) -> bool) {
    let dir = tmp();
    let out = dir.path().join("replica.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        target,
        "--topology",
        "primary-replica",
        "--read-from",
        "replica",
        "--records",
        "2000",
        "--mix",
        "20:80",
        "--clients",
        "16",
        "--duration",
        "5s",
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let (replica, port) = first_child(child.id(), |pid, args| {
        is_replica(args).then(|| (pid, port_of(args)))
    });
    // The measured phase begins when its 16 clients connect to the
    // replica (the load writes to the primary only): waited for, however
    // long the set-up and the load take on a busy machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while connections_to(port) < 16 {
        assert!(
            std::time::Instant::now() < deadline,
            "the clients never connected to the replica at port {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pids: Vec<u32> = std::iter::once(replica)
        .chain(children_with_cmdline(replica).into_iter().map(|(p, _)| p))
        .collect();
    for &p in &pids {
        // SAFETY: pausing processes of the replica this test's bakeoff started.
        unsafe { libc::kill(p as i32, libc::SIGSTOP) };
    }
    std::thread::sleep(std::time::Duration::from_millis(1000));
    for &p in &pids {
        // SAFETY: as above, resuming them.
        unsafe { libc::kill(p as i32, libc::SIGCONT) };
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&out);
    assert_replicated(&r, 2000);
    let stale = r["runs"][0]["measure"]["stale_reads"].as_u64().unwrap();
    assert!(stale > 0, "no stale read counted after the replica's pause");
}

#[test]
fn a_paused_postgres_replica_serves_stale_reads_and_then_catches_up() {
    let _beside = crate::common::beside_others();
    if !have_postgres() {
        return;
    }
    // The replica's postmaster is the one started with its status interval.
    a_paused_replica_serves_stale_reads("postgres", |args| {
        args.first().is_some_and(|a| a.ends_with("postgres"))
            && args.iter().any(|a| a == "wal_receiver_status_interval=1s")
    });
}

#[test]
fn a_paused_mariadb_replica_serves_stale_reads_and_then_catches_up() {
    let _beside = crate::common::beside_others();
    if !have_mariadb() {
        return;
    }
    a_paused_replica_serves_stale_reads("mariadb", |args| {
        args.iter().any(|a| a == "--server-id=2")
    });
}
