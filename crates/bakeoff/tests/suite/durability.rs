//! The durability check against real servers: the checker itself can
//! fail (writes deleted behind its back are lost, a reply swallowed by a
//! relay makes a recovered write), and under a crash the settings that
//! promise durability keep every acknowledged write while those that do
//! not are reported as losing them, as the engine's class.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::common::*;

/// Record id of writer `w`'s write number `seq` (see
/// `bakeoff_core::durability::WriteId::record`).
fn key_of(writer: u64, seq: u64) -> String {
    format!("bk:{:012}", 900_000_000_000 + writer * 100_000_000 + seq)
}

/// Runs a durability check with `args` added; returns the exit code, the
/// standard error and the result file.
fn check(args: &[&str]) -> (Option<i32>, String, serde_json::Value) {
    let dir = tmp();
    let out = dir.path().join("d.json");
    let mut all = vec![
        "run",
        "--durability",
        "--records",
        "200",
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = bakeoff(&all);
    let mut stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = if out.exists() {
        read_json(&out)
    } else {
        serde_json::Value::Null
    };
    // What a failed assertion on the exit code needs to say why.
    stderr.push_str(&String::from_utf8_lossy(&o.stdout));
    for run in r["runs"].as_array().into_iter().flatten() {
        stderr.push_str(&format!(
            "\nrun {}: status {}, message {}, fault {}",
            run["target"], run["status"], run["message"], run["fault"]
        ));
    }
    (o.status.code(), stderr, r)
}

/// Checks a power-cut run of `target` came back, acknowledged writes and
/// has the FUSE layer's exact fsync count; returns that count per write.
fn cut_and_back(target: &str, run: &serde_json::Value) -> f64 {
    assert_eq!(run["fault"]["kind"], "power-cut", "{target}");
    assert!(
        run["fault"]["error"].is_null(),
        "{target}: {}",
        run["fault"]
    );
    assert!(count(run, "acknowledged") > 100, "{target}: {run}");
    run["disk"]["fsyncs_per_write"]
        .as_f64()
        .unwrap_or_else(|| panic!("{target}: no exact fsync count: {}", run["disk"]))
}

fn count(run: &serde_json::Value, what: &str) -> u64 {
    run["durability"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no durability.{what} in {run}"))
}

/// Acknowledged writes deleted behind bakeoff's back before the read-back
/// are counted as lost, each one: the check does not trust the log.
#[test]
fn acknowledged_writes_deleted_behind_its_back_are_lost() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let addr = server.addr;
    let deleter = std::thread::spawn(move || {
        let keys: Vec<String> = (0..20).map(|s| key_of(0, s)).collect();
        // Deleted once all 20 are written, waited for (the run writes them
        // early in its 3 s, later on a busy machine).
        let exists = format!("EXISTS {}\r\n", keys.join(" "));
        wait_for("writer 0's first 20 writes", || {
            call(addr, exists.as_bytes(), |b| b.ends_with(b"\r\n")).trim() == ":20"
        });
        call(
            addr,
            format!("DEL {}\r\n", keys.join(" ")).as_bytes(),
            |b| b.ends_with(b"\r\n"),
        )
    });
    let url = format!("redis://{addr}");
    let (code, stderr, r) = check(&["-t", &url, "--clients", "2", "--duration", "3s"]);
    let deleted = deleter.join().unwrap();
    assert_eq!(deleted.trim(), ":20", "the 20 writes were there to delete");
    assert_eq!(code, Some(0), "{stderr}");
    let run = &r["runs"][0];
    assert!(count(run, "acknowledged") > 1000, "{run}");
    assert_eq!(count(run, "lost"), 20, "{}", run["durability"]);
    // Later writes of the same writer survived: every loss is a hole.
    assert_eq!(count(run, "holes"), 20);
    assert_eq!(
        count(run, "ok"),
        count(run, "acknowledged") - 20,
        "{}",
        run["durability"]
    );
    assert!(
        run["message"].as_str().unwrap_or("").contains("lost 20"),
        "{}",
        run["message"]
    );
}

/// A memcached too small for the writes evicts some: those are not
/// acknowledged writes lost to a fault, and the check says so with the
/// server's own eviction count (it said "lost 275226 … holes").
#[test]
fn writes_a_full_memcached_evicted_are_told_apart_from_losses() {
    let _beside = crate::common::beside_others();
    if !require("memcached", "memcached") {
        return;
    }
    let (code, stderr, r) = check(&[
        "-t",
        "memcached",
        "--set",
        "memcached.memory=2mb",
        "--value-size",
        "20000",
        "--clients",
        "2",
        "--duration",
        "2s",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = &r["runs"][0];
    let (lost, evicted) = (count(run, "lost"), count(run, "evicted"));
    assert!(lost > 0, "{}", run["durability"]);
    assert!(evicted >= lost, "{}", run["durability"]);
    let message = run["message"].as_str().unwrap_or("");
    assert!(
        message.contains(&format!("the server evicted {evicted}")),
        "{message}"
    );
}

/// Ctrl-C in the middle of a durability run with no fault: the writes it
/// made are read back (the read-back has a grace of its own rather than
/// the run's stop flag), nothing acknowledged counts as lost, and the run
/// says it was interrupted (before, every write the stopped read-back did
/// not reach was counted lost, and the run was "ok").
#[test]
fn an_interrupted_durability_run_loses_nothing() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("int.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--durability",
        "--records",
        "200",
        "--warmup",
        "0",
        "--clients",
        "2",
        "--duration",
        "30s",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let pid = child.id();
    // Interrupted once more than 1,000 writes of its measured phase were
    // made (200 of the load, 1,500 after): counted at the server, not
    // guessed from a fixed wait, which a busy machine outran.
    let (_, addr) = managed_redis(pid);
    wait_for_redis_calls(addr, None, "set", 1700);
    // SAFETY: signalling the bakeoff process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "interrupted", "{run}");
    assert!(count(run, "acknowledged") > 1000, "{}", run["durability"]);
    assert_eq!(count(run, "lost"), 0, "{}", run["durability"]);
    // A few seconds of writes read back well within the grace.
    assert_eq!(count(run, "unread"), 0, "{}", run["durability"]);
    assert_eq!(
        count(run, "ok"),
        count(run, "acknowledged"),
        "{}",
        run["durability"]
    );
    assert!(
        run["message"]
            .as_str()
            .unwrap_or("")
            .contains("stopped by a signal"),
        "{}",
        run["message"]
    );
}

/// A relay between bakeoff and redis that, once, passes a write on and
/// then drops the connection instead of the reply: the write was made,
/// bakeoff was not told, and the read-back finds it (recovered).
#[test]
fn a_write_whose_reply_was_swallowed_is_recovered() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let relay = Relay::start(server.addr, 1000);
    let url = format!("redis://{}", relay.addr);
    let (code, stderr, r) = check(&["-t", &url, "--clients", "1", "--duration", "3s"]);
    // The cut is an error of the run (a reset), reported as such.
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("1 recovered"), "{stderr}");
    let run = &r["runs"][0];
    assert_eq!(run["measure"]["errors"]["reset"], 1, "{}", run["measure"]);
    assert!(relay.swallowed.load(Ordering::SeqCst), "the relay cut");
    assert_eq!(count(run, "lost"), 0, "{}", run["durability"]);
    assert_eq!(count(run, "recovered"), 1, "{}", run["durability"]);
    assert_eq!(count(run, "not_written"), 0, "{}", run["durability"]);
}

/// A TCP relay to `upstream`; the first connection to carry `after`
/// replies has its next reply dropped and is closed on both sides.
///
/// Counted in replies, not time: only the measuring client's connection
/// carries that many during the run (the load writes 200 records, the
/// server-signal poller asks once per 100 ms), so the cut lands on it
/// however long bakeoff takes to start on a loaded machine. A cut by the
/// clock once fell on the poller while the load still ran.
struct Relay {
    addr: SocketAddr,
    swallowed: Arc<AtomicBool>,
}

impl Relay {
    fn start(upstream: SocketAddr, after: u64) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let swallowed = Arc::new(AtomicBool::new(false));
        let flag = swallowed.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(upstream).unwrap();
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pump(c2, s2, None));
                let cut = Some((after, flag.clone()));
                std::thread::spawn(move || pump(server, client, cut));
            }
        });
        Relay { addr, swallowed }
    }
}

/// Copies `from` to `to`; with `cut`, the first chunk read after `after`
/// chunks on this connection (once among all pumps sharing the flag) is
/// dropped and both sockets are shut.
fn pump(mut from: TcpStream, mut to: TcpStream, cut: Option<(u64, Arc<AtomicBool>)>) {
    let mut buf = [0u8; 65536];
    let mut carried = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some((after, flag)) = &cut {
            if carried >= *after && !flag.swap(true, Ordering::SeqCst) {
                let _ = to.shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
                return;
            }
        }
        carried += 1;
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

/// Under a crash at several moments: redis with the AOF fsynced at every
/// write keeps every acknowledged write; without persistence, and
/// memcached, lose them, and that is the engine's class (status ok, exit
/// 0), not a bakeoff error.
#[test]
fn a_crash_loses_nothing_with_aof_always_and_everything_without_persistence() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") || !require("memcached", "memcached") {
        return;
    }
    let (code, stderr, r) = check(&[
        "-t",
        "redis[persistence=aof-always]",
        "-t",
        "redis[persistence=none]",
        "-t",
        "memcached",
        "--clients",
        "2",
        "--duration",
        "3s",
        "--fault",
        "kill@1s..2s",
        "--repeats",
        "2",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let mut moments = Vec::new();
    for run in runs {
        let target = run["target"].as_str().unwrap();
        assert_eq!(run["status"], "ok", "{target}: {}", run["message"]);
        assert_eq!(run["fault"]["kind"], "kill", "{target}");
        assert!(count(run, "acknowledged") > 100, "{target}: {run}");
        moments.push(run["fault"]["at_s"].as_f64().unwrap());
        if target == "redis[persistence=aof-always]" {
            assert_eq!(count(run, "lost"), 0, "{target}: {}", run["durability"]);
            assert_eq!(count(run, "corrupt"), 0);
        } else {
            assert!(count(run, "lost") > 100, "{target}: {}", run["durability"]);
            assert!(run["durability"]["loss_window_ns"].as_u64().unwrap() > 500_000_000);
        }
    }
    moments.dedup();
    assert!(moments.len() > 1, "the fault moments differ: {moments:?}");
    // The setting as the server reports it, next to the class measured.
    let always = r["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "redis[persistence=aof-always]")
        .expect("the variant's record");
    assert_eq!(always["settings"]["appendfsync"], "always", "{always}");
    assert_eq!(always["settings"]["appendonly"], "yes", "{always}");
}

/// PostgreSQL with synchronous_commit=on and MariaDB with
/// innodb_flush_log_at_trx_commit=1 keep every acknowledged write through
/// a crash of the whole process group.
#[test]
fn sql_servers_that_commit_durably_lose_nothing_under_a_crash() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql")
        || !require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
    {
        return;
    }
    let (code, stderr, r) = check(&[
        "-t",
        "postgres[synchronous_commit=on]",
        "-t",
        "mariadb[innodb_flush_log_at_trx_commit=1]",
        "--clients",
        "4",
        "--duration",
        "3s",
        "--fault",
        "kill@1s..2s",
        "--repeats",
        "2",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        let target = run["target"].as_str().unwrap();
        assert_eq!(run["fault"]["kind"], "kill", "{target}");
        assert!(
            run["fault"]["error"].is_null(),
            "{target}: {}",
            run["fault"]
        );
        assert!(count(run, "acknowledged") > 100, "{target}: {run}");
        assert_eq!(count(run, "lost"), 0, "{target}: {}", run["durability"]);
        assert_eq!(count(run, "holes"), 0, "{target}");
    }
}

/// Bad input to the check is refused before anything starts, naming what
/// is wrong.
#[test]
fn bad_durability_input_is_refused_with_exit_2() {
    let _beside = crate::common::beside_others();
    for (args, expect) in [
        (
            vec!["run", "-t", "redis", "--durability", "--clients", "1001"],
            "flag --durability",
        ),
        (
            vec!["run", "-t", "redis[persistence=bogus]", "--dry-run"],
            "redis[persistence=bogus]",
        ),
        (
            vec!["run", "-t", "redis[persistence", "--dry-run"],
            "no closing `]`",
        ),
        (
            vec!["run", "-t", "mariadb[sync_binlog=1]", "--dry-run"],
            "add binlog = true",
        ),
        (
            vec![
                "run",
                "-t",
                "redis://127.0.0.1:1",
                "--fault",
                "power-cut@1s",
                "--dry-run",
            ],
            "needs a server bakeoff started",
        ),
        (
            vec![
                "run",
                "-t",
                "lmdb",
                "--set",
                "lmdb.dir=/tmp/bakeoff-test-named-dir",
                "--fault",
                "power-cut@1s",
            ],
            "remove `dir`",
        ),
        (
            vec![
                "run",
                "-t",
                "redis",
                "--fault",
                "kill@30s",
                "--duration",
                "5s",
            ],
            "past the end of the run",
        ),
    ] {
        let o = bakeoff(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

/// A power cut (the data directory on bakeoff's FUSE layer, unsynced bytes
/// dropped) tells the settings apart where a crash cannot: Redis with the
/// AOF fsynced at every write, PostgreSQL with synchronous_commit=on and
/// MariaDB with innodb_flush_log_at_trx_commit=1 keep every acknowledged
/// write; Redis with appendfsync no loses what it wrote since it started.
/// The layer's exact counts say why: fsyncs per write, or none.
#[test]
fn a_power_cut_loses_exactly_what_was_not_fsynced() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server")
        || !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql")
        || !require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
    {
        return;
    }
    let (code, stderr, r) = check(&[
        "-t",
        "redis[persistence=aof-always]",
        "-t",
        "redis[persistence=aof-no]",
        "-t",
        "postgres[synchronous_commit=on]",
        "-t",
        "mariadb[innodb_flush_log_at_trx_commit=1,binlog=true,sync_binlog=1]",
        "--clients",
        "4",
        "--duration",
        "3s",
        "--fault",
        "power-cut@1s..2s",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    // The binary log on, fsynced at every commit, as the server says.
    let maria = r["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"].as_str().unwrap().starts_with("mariadb"))
        .unwrap();
    assert_eq!(maria["settings"]["log_bin"], "1", "{maria}");
    assert_eq!(maria["settings"]["sync_binlog"], "1", "{maria}");
    for run in r["runs"].as_array().unwrap() {
        let target = run["target"].as_str().unwrap();
        let fsyncs = cut_and_back(target, run);
        if target == "redis[persistence=aof-no]" {
            assert!(count(run, "lost") > 100, "{target}: {}", run["durability"]);
            assert!(
                run["durability"]["loss_window_ns"].as_u64().unwrap() > 500_000_000,
                "{target}: {}",
                run["durability"]
            );
            assert_eq!(fsyncs, 0.0, "{target}");
        } else {
            assert_eq!(count(run, "lost"), 0, "{target}: {}", run["durability"]);
            assert!(fsyncs > 0.05, "{target}: {}", run["disk"]);
        }
    }
    // This run's directories (named in its servers' command lines): none
    // is still a mount point. Other tests of this file mount theirs at the
    // same time, so the check is of this run's own.
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let mut dirs = Vec::new();
    for t in r["targets"].as_array().unwrap() {
        let line = t["settings"]["command_line"].as_str().unwrap_or("");
        for word in line.split([' ', '=']) {
            if let Some(i) = word.find("/bakeoff-") {
                let end = word[i + 1..].find('/').map_or(word.len(), |j| i + 1 + j);
                dirs.push(word[..end].to_string());
            }
        }
    }
    assert!(!dirs.is_empty(), "no directory in the command lines");
    for d in &dirs {
        assert!(
            !mounts
                .lines()
                .any(|m| m.contains("bakeoff-lazyfs") && m.contains(d.as_str())),
            "the mount on {d} outlived the run"
        );
    }
}

/// Embedded engines run in a child process of their own for a fault, so
/// that the cut kills the engine and not bakeoff: the settings that sync
/// each write keep every acknowledged write under a power cut (LMDB full
/// sync, RocksDB sync, SQLite synchronous=full, Tokyo Cabinet sync), and
/// LMDB without sync loses what it wrote since it opened; the FUSE layer's
/// fsync count per write says why.
#[test]
fn embedded_engines_that_sync_each_write_lose_nothing_under_a_power_cut() {
    let _beside = crate::common::beside_others();
    if !require("tchmgr", "tokyocabinet-bin") {
        return;
    }
    let (code, stderr, r) = check(&[
        "-t",
        "lmdb[sync=full]",
        "-t",
        "lmdb[sync=nosync]",
        "-t",
        "rocksdb[sync=true]",
        "-t",
        "sqlite[synchronous=full]",
        "-t",
        "tokyo-hash[sync=true]",
        "--clients",
        "2",
        "--duration",
        "3s",
        "--fault",
        "power-cut@1s..2s",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let targets = r["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 5, "{stderr}");
    for t in targets {
        assert!(t["mode"].as_str().unwrap().contains("child process"), "{t}");
    }
    for run in r["runs"].as_array().unwrap() {
        let target = run["target"].as_str().unwrap();
        let fsyncs = cut_and_back(target, run);
        assert_eq!(count(run, "corrupt"), 0, "{target}: {}", run["durability"]);
        if target == "lmdb[sync=nosync]" {
            assert!(count(run, "lost") > 100, "{target}: {}", run["durability"]);
            assert_eq!(fsyncs, 0.0, "{target}");
        } else {
            assert_eq!(count(run, "lost"), 0, "{target}: {}", run["durability"]);
            assert!(fsyncs >= 0.5, "{target}: {}", run["disk"]);
        }
    }
    let leftover = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("bakeoff-engine-host-")
        })
        .count();
    assert_eq!(leftover, 0, "an engine host's directory outlived the run");
}
