//! A server that dies mid-run, and Ctrl-C: the run finishes, errors are
//! counted by kind, the result is written, the exit code says so.

use crate::common::*;
use std::time::Duration;

// The test that measures how fast the rate comes back after a restart
// runs alone: another test beside it, with its own server on the same two
// cores, can hold the rate under 90 % of what it was before the restart
// (one full run of the suite missed it; alone it passed three runs of
// three). The rest run side by side
// (`common::alone` and `common::beside_others`).

#[test]
fn killed_server_is_counted_and_the_result_is_written() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let dir = tmp();
    let out = dir.path().join("fault.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        &format!("redis://{}", server.addr),
        "--records",
        "1000",
        "--duration",
        "3s",
        "--warmup",
        "0",
        "--clients",
        "4",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Killed once more than 100 of the measured reads were served.
    wait_for_redis_calls(server.addr, None, "get", 200);
    // SAFETY: killing the server this test started, by its pid.
    unsafe { libc::kill(server.pid as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "errors");
    let m = &run["measure"];
    assert!(
        m["completed"].as_u64().unwrap() > 100,
        "operations before the kill were counted"
    );
    let errors = m["errors"].as_object().unwrap();
    let lost = errors.get("reset").and_then(|v| v.as_u64()).unwrap_or(0);
    let refused = errors.get("refused").and_then(|v| v.as_u64()).unwrap_or(0);
    assert!(
        lost > 0,
        "requests in flight at the kill count as reset: {errors:?}"
    );
    assert!(
        refused > 0,
        "reconnection attempts count as refused: {errors:?}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("errors by kind"), "{stdout}");
}

/// Ctrl-C, SIGTERM and SIGHUP each end a run the same way: the finished
/// runs are written, the server stops, its directory goes, and the exit
/// code is 128 + the signal.
#[test]
fn a_stop_signal_keeps_finished_runs_and_stops_managed_servers() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    for (signal, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        signal_keeps_finished_runs(signal, code);
    }
}

fn signal_keeps_finished_runs(signal: i32, code: i32) {
    let dir = tmp();
    let out = dir.path().join("int.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--records",
        "1000",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--sweep-clients",
        "1,2,3,4,5,6,7,8",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let pid = child.id();
    // Signalled once the first run of the sweep is in the result file
    // (written after each run), with seven still to go.
    wait_for("the sweep's first run on disk", || {
        std::fs::read_to_string(&out)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|r| r["runs"].as_array().is_some_and(|a| !a.is_empty()))
    });
    // SAFETY: signalling the bakeoff process this test started.
    unsafe { libc::kill(pid as i32, signal) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(code),
        "signal {signal}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&out);
    assert_eq!(r["status"], "interrupted");
    let runs = r["runs"].as_array().unwrap();
    assert!(
        !runs.is_empty() && runs.len() < 8,
        "{} runs kept",
        runs.len()
    );
    // The redis-server that bakeoff started is gone, and so is its directory.
    let redis = r["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "redis")
        .unwrap()
        .clone();
    let cmdline = redis["settings"]["command_line"].as_str().unwrap();
    let data_dir = cmdline
        .split("--dir ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let port = cmdline
        .split("--port ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        !std::path::Path::new(data_dir).exists(),
        "{data_dir} left behind"
    );
    assert!(
        !std::path::Path::new(&format!("{data_dir}.lock")).exists(),
        "{data_dir}.lock left behind"
    );
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "redis still listening on {port}"
    );
}

/// SIGKILL gives bakeoff no chance to clean up: what it started dies with
/// it all the same (here PostgreSQL's initdb, which runs as another user),
/// and the next run removes the directory it left.
#[test]
fn after_sigkill_nothing_runs_on_and_the_next_run_removes_the_directory() {
    let _beside = crate::common::beside_others();
    if !require_in("initdb", &["/usr/lib/postgresql/15/bin"], "postgresql")
        || !require("redis-server", "redis-server")
    {
        return;
    }
    let child = bakeoff_spawn(&["run", "-t", "postgres", "--quiet", "-o", "/dev/null"]);
    let pid = child.id();
    let (initdb, data) = first_child(pid, |p, args| {
        let i = args.iter().position(|a| a == "-D")?;
        (args[0].ends_with("initdb")).then(|| (p, args[i + 1].clone()))
    });
    let data_dir = std::path::Path::new(&data).parent().unwrap().to_path_buf();
    // SAFETY: killing the bakeoff process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let _ = child.wait_with_output();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while process_lives(initdb) {
        assert!(
            std::time::Instant::now() < deadline,
            "initdb ({initdb}) outlived bakeoff"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(data_dir.exists(), "the directory should still be there");
    let dir = tmp();
    let out = dir.path().join("next.json");
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            "redis",
            "--records",
            "10",
            "--duration",
            "100ms",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    assert!(!data_dir.exists(), "{} left behind", data_dir.display());
    assert!(
        stderr.contains(&format!("removed {}", data_dir.display())),
        "{stderr}"
    );
}

/// Whether process `pid` exists and is not a zombie.
fn process_lives(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Runs redis (started by bakeoff) for 7 s with `fault` at 2 s and the
/// given persistence, GET-heavy over 2000 loaded records; returns the exit
/// code and the run.
fn faulted_redis_run(fault: &str, persistence: &str) -> (Option<i32>, serde_json::Value) {
    faulted_run(&format!("redis[persistence={persistence}]"), fault)
}

/// Runs `target` for 7 s with `fault` at 2 s, GET-heavy over 2000 loaded
/// records; returns the exit code and the run. Seven seconds leave four
/// whole ones after the fault for the rate to come back to 90 % of what it
/// was (with two, a busy machine's ±40 % seconds missed it in CI).
fn faulted_run(target: &str, fault: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tmp();
    let out = dir.path().join("fault.json");
    let o = bakeoff(&[
        "run",
        "-t",
        target,
        "--records",
        "2000",
        "--mix",
        "90:10",
        "--duration",
        "7s",
        "--warmup",
        "0",
        "--clients",
        "4",
        "--fault",
        fault,
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = read_json(&out);
    (o.status.code(), r["runs"][0].clone())
}

/// Misses in the whole seconds after the fault.
fn misses_after(run: &serde_json::Value) -> u64 {
    let at = run["fault"]["at_s"].as_f64().unwrap();
    run["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["phase"] == "measure" && p["t_s"].as_f64().unwrap() >= at.ceil())
        .map(|p| p["misses"].as_u64().unwrap())
        .sum()
}

/// A clean restart mid-run: recorded with its moment, the time until the
/// server held its port again and the recovery; the run is still "ok"
/// (the errors around it are the measurement), and an AOF written on the
/// way down keeps every record.
#[test]
fn a_restart_mid_run_is_measured_and_aof_keeps_the_records() {
    let _alone = alone();
    if !require("redis-server", "redis-server") {
        return;
    }
    let (code, run) = faulted_redis_run("restart@2s", "aof-everysec");
    assert_eq!(code, Some(0), "{run}");
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    let f = &run["fault"];
    assert_eq!(f["kind"], "restart");
    // 2 s into the measure job, which follows 1 s of load on the timeline.
    let load_s = run["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["phase"] == "load")
        .count() as f64;
    let at = f["at_s"].as_f64().unwrap() - load_s;
    assert!((2.0..2.5).contains(&at), "injected at {at}");
    let back = f["back_after_s"].as_f64().unwrap();
    assert!(back > 0.0 && back < 10.0, "back after {back}");
    assert!(f["error"].is_null());
    // Recovery is the machine's to give: on these shared machines a rate
    // can fall by a third and stay down (run 2 of a CI chain: 120k GETs/s
    // before, 94k to 68k after, bakeoff's own CPU unchanged). What bakeoff
    // owes is a verdict that agrees with its own timeline: the first whole
    // second after the fault at 90 % of the slowest whole second before
    // it, or none where no such second came.
    let measured: Vec<(f64, f64)> = run["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["phase"] == "measure")
        .map(|p| (p["t_s"].as_f64().unwrap(), p["ops_per_s"].as_f64().unwrap()))
        .collect();
    let fault_at = f["at_s"].as_f64().unwrap();
    let slowest = measured
        .iter()
        .filter(|(t, _)| t + 1.0 <= fault_at)
        .map(|(_, ops)| *ops)
        .fold(f64::INFINITY, f64::min);
    let first_back = measured
        .iter()
        .filter(|(t, _)| *t >= fault_at.floor() + 1.0)
        .find(|(_, ops)| *ops >= 0.9 * slowest)
        .map(|(t, _)| t - fault_at);
    match (f["recovered_after_s"].as_f64(), first_back) {
        (Some(said), Some(seen)) => assert!((said - seen).abs() < 1e-6, "{said} against {seen}"),
        (None, None) => {}
        (said, seen) => panic!(
            "bakeoff says recovered after {said:?} s, its timeline {seen:?} s: {f}\ntimeline: {}",
            run["timeline"]
        ),
    }
    assert_eq!(misses_after(&run), 0, "records lost across a clean restart");
    // The server's counters restart from zero: not compared.
    assert!(run["checks"]["counters"].as_array().unwrap().is_empty());
}

/// An embedded engine under a fault runs in a child process: a clean
/// restart closes it (Tokyo Cabinet's B+tree writes the leaves it caches,
/// RocksDB its memtable to the log) and opens it again on its files, with
/// every loaded record there, the gap measured, and the host's own counts
/// of the first process not compared with the second's.
#[test]
fn an_embedded_engine_restarts_in_its_child_process_and_keeps_its_records() {
    let _beside = crate::common::beside_others();
    if !require("tchmgr", "tokyocabinet-bin") {
        return;
    }
    for target in ["tokyo-btree", "rocksdb"] {
        let (code, run) = faulted_run(target, "restart@2s");
        assert_eq!(code, Some(0), "{target}: {run}");
        assert_eq!(run["status"], "ok", "{target}: {}", run["message"]);
        let f = &run["fault"];
        assert_eq!(f["kind"], "restart", "{target}");
        assert!(f["error"].is_null(), "{target}: {f}");
        let back = f["back_after_s"].as_f64().unwrap();
        assert!(back > 0.0 && back < 10.0, "{target}: back after {back}");
        // Served again after it (back to its old rate or not: its cache
        // starts cold).
        let at = f["at_s"].as_f64().unwrap();
        let after: f64 = run["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["t_s"].as_f64().unwrap() >= at.ceil())
            .map(|p| p["ops_per_s"].as_f64().unwrap_or(0.0))
            .sum();
        assert!(after > 100.0, "{target}: {}", run["timeline"]);
        assert_eq!(
            misses_after(&run),
            0,
            "{target}: records lost across a clean restart: {}",
            run["timeline"]
        );
        assert!(run["checks"]["counters"].as_array().unwrap().is_empty());
    }
}

/// A crash (SIGKILL to the group) with no persistence empties the store;
/// with the AOF fsynced on every write, every record is back.
#[test]
fn a_kill_loses_everything_without_persistence_and_nothing_with_aof_always() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let (code, run) = faulted_redis_run("kill@2s", "none");
    assert_eq!(code, Some(0), "{run}");
    assert_eq!(run["fault"]["kind"], "kill");
    assert!(
        misses_after(&run) > 100,
        "a killed redis without persistence comes back empty: {}",
        run["timeline"]
    );
    let (code, run) = faulted_redis_run("kill@2s", "aof-always");
    assert_eq!(code, Some(0), "{run}");
    assert_eq!(
        misses_after(&run),
        0,
        "aof-always lost records: {}",
        run["timeline"]
    );
}

/// A server that cannot come back after its crash (its data directory
/// broken on purpose while it ran): one clear error naming the fault, exit
/// 1, and everything measured before it in the result file.
#[test]
fn a_server_that_cannot_restart_fails_the_run_and_keeps_what_was_measured() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("broken.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis[persistence=aof-always]",
        "--records",
        "1000",
        "--mix",
        "50:50",
        "--duration",
        "4s",
        "--warmup",
        "0",
        "--clients",
        "2",
        "--fault",
        "kill@2500ms",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Find the redis bakeoff started, and its data directory: redis
    // rewrites its command line, but works in the directory of --dir.
    let data_dir = first_child(child.id(), |pid, args| {
        args.first()?.contains("redis-server").then_some(())?;
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
        cwd.join("appendonlydir").exists().then_some(cwd)
    });
    // Redis reads its AOF manifest only when it starts: garbage written
    // once it serves (the load's first writes) stops the restart after the
    // kill, not the running server.
    let (_, addr) = managed_redis(child.id());
    wait_for_redis_calls(addr, None, "set", 1);
    let manifests: Vec<_> = std::fs::read_dir(data_dir.join("appendonlydir"))
        .expect("redis keeps its AOF in appendonlydir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".manifest"))
        .collect();
    assert_eq!(manifests.len(), 1, "one AOF manifest");
    std::fs::write(manifests[0].path(), b"this is not a manifest\n").unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stderr}\n{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "failed", "{run}");
    let message = run["message"].as_str().unwrap();
    assert!(
        message.contains("--fault kill") && message.contains("did not come back"),
        "{message}"
    );
    assert!(run["fault"]["error"].is_string(), "{}", run["fault"]);
    // What ran before the kill is on disk.
    assert!(run["load"]["completed"].as_u64().unwrap() >= 1000, "{run}");
    assert!(
        run["measure"]["completed"].as_u64().unwrap() > 100,
        "{}",
        run["measure"]
    );
    assert!(
        run["timeline"].as_array().unwrap().len() >= 3,
        "{}",
        run["timeline"]
    );
    // No redis left running from this run: none works in its data
    // directory (another test's redis-server, a child of this test
    // process too, works in a directory of its own).
    let outlived: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                // A removed directory reads `PATH (deleted)`.
                .is_ok_and(|cwd| {
                    cwd.to_string_lossy()
                        .starts_with(&*data_dir.to_string_lossy())
                })
        })
        .collect();
    assert!(
        outlived.is_empty(),
        "redis-server {outlived:?} outlived the run"
    );
}

/// A server bakeoff started that dies during the load: the run fails
/// saying how it died (a full disk kills Redis so), where it said "cannot
/// connect … are host and port right?" (issue 33, class 4).
#[test]
fn a_managed_server_that_dies_during_the_load_fails_the_run_saying_how() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("died-loading.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--records",
        "5000000",
        "--duration",
        "3s",
        "--warmup",
        "0",
        "--timeout",
        "1s",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Killed once its load is under way (5 million records take far
    // longer than that).
    let (server, addr) = managed_redis(child.id());
    wait_for_redis_calls(addr, None, "set", 1000);
    // SAFETY: killing the redis-server the bakeoff this test started
    // started, by its pid.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {stderr}");
    let run = &read_json(&out)["runs"][0];
    assert_eq!(run["status"], "failed", "{}", run["message"]);
    let message = run["message"].as_str().unwrap();
    assert!(
        message.contains("the server is no longer running")
            && message.contains(&format!(
                "redis-server (pid {server}) was killed by signal 9"
            )),
        "{message}"
    );
}

/// A server bakeoff started that dies on its own mid-run (here a SIGKILL
/// from outside; an engine that crashes on its recovered files, in
/// earnest) fails the run with how it died, not with the connection
/// errors that followed; exit 1, and the result file has the run.
#[test]
fn a_managed_server_that_dies_on_its_own_fails_the_run_saying_how() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("died.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--records",
        "1000",
        "--duration",
        "3s",
        "--warmup",
        "0",
        "--clients",
        "2",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Killed once more than 100 of the measured reads were served.
    let (server, addr) = managed_redis(child.id());
    wait_for_redis_calls(addr, None, "get", 200);
    // SAFETY: killing the redis-server the bakeoff this test started
    // started, by its pid.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {stderr}");
    let run = &read_json(&out)["runs"][0];
    assert_eq!(run["status"], "failed", "{}", run["message"]);
    let message = run["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "redis-server (pid {server}) was killed by signal 9"
        )),
        "{message}"
    );
    assert!(
        run["measure"]["completed"].as_u64().unwrap() > 100,
        "what was measured before is kept"
    );
}
