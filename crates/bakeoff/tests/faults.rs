//! A server that dies mid-run, and Ctrl-C: the run finishes, errors are
//! counted by kind, the result is written, the exit code says so.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn killed_server_is_counted_and_the_result_is_written() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let dir = tmp();
    let out = dir.path().join("fault.json");
    let child = std::process::Command::new(bin())
        .args([
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
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
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

#[test]
fn ctrl_c_keeps_finished_runs_and_stops_managed_servers() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("int.json");
    let child = std::process::Command::new(bin())
        .args([
            "run",
            "-t",
            "redis",
            "--records",
            "1000",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--clients",
            "2",
            "--sweep-clients",
            "1,2,3,4,5,6,7,8",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(3500));
    // SAFETY: interrupting the bakeoff process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
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
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "redis still listening on {port}"
    );
}

/// Runs redis (started by bakeoff) for 5 s with `fault` at 2 s and the
/// given persistence, GET-heavy over 2000 loaded records; returns the exit
/// code and the run.
fn faulted_redis_run(fault: &str, persistence: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tmp();
    let out = dir.path().join("fault.json");
    let set = format!("redis.persistence={persistence}");
    let o = bakeoff(&[
        "run",
        "-t",
        "redis",
        "--set",
        &set,
        "--records",
        "2000",
        "--mix",
        "90:10",
        "--duration",
        "5s",
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
    assert!(f["recovered_after_s"].as_f64().is_some(), "{f}");
    assert_eq!(misses_after(&run), 0, "records lost across a clean restart");
    // The server's counters restart from zero: not compared.
    assert!(run["checks"]["counters"].as_array().unwrap().is_empty());
}

/// A crash (SIGKILL to the group) with no persistence empties the store;
/// with the AOF fsynced on every write, every record is back.
#[test]
fn a_kill_loses_everything_without_persistence_and_nothing_with_aof_always() {
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
