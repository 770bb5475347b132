//! PostgreSQL, MariaDB and MongoDB (mongod, or FerretDB where Debian has
//! none), started by bakeoff: the load leaves exactly the
//! records, reads verify, operation counts equal the servers' own statement
//! counters, settings are applied and recorded, and nothing is left behind;
//! searches return the same rows on every SQL and table engine; an
//! unreachable URL or a wrong password is a clear error; a killed server is
//! counted as errors with the result still written.

use crate::common::*;

/// Runs a managed target with `settings`; checks the load, the reads, the
/// server's counters, Little's law and the cleanup; returns the target's
/// record.
fn managed_run(target: &str, settings: &[&str]) -> serde_json::Value {
    // FerretDB on SQLite serves 40-270 ops/s here (the low end under a
    // parallel build); the SQL servers, thousands.
    let duration = if target == "mongodb" { "3s" } else { "1s" };
    let dir = tmp();
    let out = dir.path().join("sql.json");
    let mut args = vec![
        "run",
        "-t",
        target,
        "--records",
        "2000",
        "--mix",
        "70:20:5:5",
        "--clients",
        "4",
        "--duration",
        duration,
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ];
    for s in settings {
        args.push("--set");
        args.push(s);
    }
    let o = bakeoff(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{target}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["checks"]["records_after_load"], 2000, "{target}");
    let gets = run["measure"]["ops"]["get"]["completed"].as_u64().unwrap();
    assert!(gets > 20, "{target}: {gets} reads");
    assert!(
        run["measure"]["errors"].as_object().unwrap().is_empty(),
        "{target}: {}",
        run["measure"]["errors"]
    );
    // Conservation: every request sent equals the server's own count.
    let counters = run["checks"]["counters"].as_array().unwrap();
    // Reads, writes and (when any was sent: 5 % of a slow server's few
    // hundred requests may be none) deletes; a check with nothing on
    // either side is left out.
    let deletes = run["measure"]["ops"]["delete"]["sent"]
        .as_u64()
        .unwrap_or(0);
    let expected = if deletes > 0 { 3 } else { 2 };
    assert!(counters.len() >= expected, "{target}: {counters:?}");
    for c in counters {
        assert_eq!(c["bakeoff"], c["target"], "{target}: {c}");
    }
    let ratio = run["checks"]["littles_law_ratio"].as_f64().unwrap();
    // Never above 1 by more than 8 %: that would count time no request was
    // out. Below 1 by up to 8 % plus the client thread's busy share (at
    // most 10 % more): the
    // client library's own work between a reply and the next request (a
    // tokio runtime shared by the 4 connections) is a gap the clients leave,
    // and on 2 shared cores it grows (0.914 seen in CI with the thread's
    // share unknown, 0.94 under a parallel build).
    let busy = run["client"]["thread_busy_percent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_f64().unwrap() / 100.0)
        .fold(0.0, f64::max);
    assert!(
        ratio < 1.08 && ratio > 0.92 - busy.min(0.1),
        "{target}: Little's law ratio {ratio} with the client thread busy {busy:.2}"
    );
    let t = r["targets"][0].clone();
    let cmd = t["settings"]["command_line"].as_str().unwrap().to_string();
    let data = cmd
        .split(" -D ")
        .nth(1)
        .or_else(|| cmd.split("--datadir=").nth(1))
        .or_else(|| cmd.split("--state-dir=").nth(1))
        .or_else(|| cmd.split("--dbpath ").nth(1))
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        !std::path::Path::new(data).exists(),
        "{target}: {data} left behind"
    );
    t
}

#[test]
fn managed_postgres_loads_verifies_and_cleans_up() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql") {
        return;
    }
    let t = managed_run(
        "postgres",
        &[
            "postgres.shared_buffers=64mb",
            "postgres.synchronous_commit=off",
        ],
    );
    assert!(
        t["version"].as_str().unwrap().starts_with("PostgreSQL "),
        "{t}"
    );
    assert_eq!(t["settings"]["shared_buffers"], "64MB");
    assert_eq!(t["settings"]["synchronous_commit"], "off");
}

#[test]
fn managed_mariadb_loads_verifies_and_cleans_up() {
    let _beside = crate::common::beside_others();
    if !require_in("mariadbd", &["/usr/sbin"], "mariadb-server") {
        return;
    }
    let t = managed_run(
        "mariadb",
        &[
            "mariadb.innodb_buffer_pool_size=64mb",
            "mariadb.innodb_flush_log_at_trx_commit=2",
        ],
    );
    assert!(
        t["version"].as_str().unwrap().starts_with("MariaDB 10."),
        "{t}"
    );
    assert_eq!(
        t["settings"]["innodb_buffer_pool_size"],
        (64u64 << 20).to_string()
    );
    assert_eq!(t["settings"]["innodb_flush_log_at_trx_commit"], "2");
}

/// A URL whose port nobody listens on, for each server target reached
/// through a client library: exit 2 with a message that names the target
/// and the port, and never the password.
#[test]
fn an_unreachable_url_is_a_clear_error_without_its_password() {
    let _beside = crate::common::beside_others();
    let (_closed, port) = closed_port();
    for (scheme, user) in [
        ("postgres", "bakeoff"),
        ("mariadb", "root"),
        ("mongodb", "bakeoff"),
    ] {
        let stderr = expect_exit(
            &[
                "run",
                "-t",
                &format!("{scheme}://{user}:secret@127.0.0.1:{port}"),
                "--duration",
                "1s",
            ],
            2,
        );
        assert!(
            stderr.contains(&format!("cannot connect to {scheme}"))
                && stderr.contains(&port.to_string()),
            "{scheme}: {stderr}"
        );
        assert!(!stderr.contains("secret"), "{scheme}: {stderr}");
    }
}

const PG_DIRS: &[&str] = &["/usr/lib/postgresql/*/bin"];

#[test]
fn wrong_postgres_password_is_a_clear_error_and_the_right_one_works() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql") {
        return;
    }
    let server = bakeoff_drivers::postgres::start(None, Some("right-horse")).unwrap();
    let url = |pw: &str| format!("postgres://bakeoff:{pw}@127.0.0.1:{}", server.addr.port());
    let stderr = expect_exit(&["run", "-t", &url("wrong-horse"), "--duration", "1s"], 2);
    assert!(stderr.contains("refused the credentials"), "{stderr}");
    assert!(!stderr.contains("wrong-horse"), "{stderr}");

    let dir = tmp();
    let out = dir.path().join("pw.json");
    expect_exit(
        &[
            "run",
            "-t",
            &url("right-horse"),
            "--records",
            "500",
            "--ops",
            "500",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        !text.contains("right-horse"),
        "password stored in the result"
    );
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["runs"][0]["checks"]["records_after_load"], 500);
    assert_eq!(r["targets"][0]["mode"], "external");
}

/// A PostgreSQL reached over its Unix domain socket, the URL's host its
/// directory percent-encoded (as libpq takes it). The socket is linked
/// under a port nothing listens on, so TCP could not have served the run.
#[test]
fn postgres_over_its_unix_socket_runs_as_over_tcp() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql") {
        return;
    }
    let server = bakeoff_drivers::postgres::start(None, None).unwrap();
    let (_held, port) = closed_port();
    let sockets = tmp();
    let socket = |dir: &std::path::Path, port: u16| dir.join(format!(".s.PGSQL.{port}"));
    std::os::unix::fs::symlink(
        socket(server.dir(), server.addr.port()),
        socket(sockets.path(), port),
    )
    .unwrap();
    let host = sockets.path().to_str().unwrap().replace('/', "%2F");
    runs_over_its_socket(&format!("postgres://bakeoff@{host}:{port}/postgres"));
}

/// A MariaDB reached over its Unix domain socket (`?socket=PATH`, as MySQL
/// clients take it), the URL's port one nothing listens on.
#[test]
fn mariadb_over_its_unix_socket_runs_as_over_tcp() {
    let _beside = crate::common::beside_others();
    if !require_in("mariadbd", &["/usr/sbin"], "mariadb-server") {
        return;
    }
    let (server, _) = bakeoff_drivers::mariadb::start_with_kv(None).unwrap();
    let (_held, port) = closed_port();
    let socket = server.dir().join("mariadb.sock");
    runs_over_its_socket(&format!(
        "mariadb://root@127.0.0.1:{port}?socket={}",
        socket.display()
    ));
}

/// Runs `url`, a server reached by its socket: the load, verified reads,
/// pipelining and the server's counters as over TCP; a link, which relays
/// TCP, is refused with the reason.
fn runs_over_its_socket(url: &str) {
    let r = run_ok(&[
        "run",
        "-t",
        url,
        "--records",
        "2000",
        "--mix",
        "50:50",
        "--clients",
        "4",
        "--pipeline",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["checks"]["records_after_load"], 2000, "{url}");
    let m = &run["measure"];
    assert!(
        m["errors"].as_object().unwrap().is_empty(),
        "{url}: {}",
        m["errors"]
    );
    assert!(m["ops"]["get"]["completed"].as_u64().unwrap() > 100, "{m}");
    let counters = run["checks"]["counters"].as_array().unwrap();
    assert!(
        counters.iter().any(|c| c["target"].as_u64().unwrap() > 0),
        "{url}: {counters:?}"
    );
    for c in counters {
        assert_eq!(c["bakeoff"], c["target"], "{url}: {c}");
    }

    let stderr = expect_exit(
        &["run", "-t", url, "--link", "rtt=1ms", "--duration", "1s"],
        2,
    );
    assert!(stderr.contains("a link relays TCP"), "{stderr}");
}

/// The summed proportional set size (`Pss` of smaps_rollup) of every
/// process under `root` whose command starts with `postgres`, bytes.
fn postgres_pss_under(root: u32) -> u64 {
    let mut total = 0;
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for (child, args) in children_with_cmdline(pid) {
            next.push(child);
            if args.first().is_some_and(|a| a.contains("postgres")) {
                let rollup = std::fs::read_to_string(format!("/proc/{child}/smaps_rollup"))
                    .unwrap_or_default();
                total += rollup
                    .lines()
                    .find_map(|l| l.strip_prefix("Pss:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024;
            }
        }
    }
    total
}

/// A PostgreSQL serving 50 connections is one server, not 51: its memory
/// is its processes' proportional set sizes added up (each backend maps
/// the same shared buffers), within 1.5 × what the test reads beside it.
/// Before, the summed resident sets were reported: 14 × as much.
#[test]
fn postgres_memory_counts_shared_pages_once() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("pss.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "postgres",
        "--records",
        "2000",
        "--clients",
        "50",
        "--duration",
        "4s",
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let pid = child.id();
    // The largest sum seen while the 50 backends serve.
    let mut child = child;
    let mut seen = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        seen = seen.max(postgres_pss_under(pid));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&out);
    let run = &r["runs"][0];
    let reported = run["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pss_bytes"].as_u64().expect("pss_bytes recorded"))
        .max()
        .unwrap();
    let rss = run["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rss_bytes"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(seen > 0, "the test saw no postgres process");
    assert!(
        reported as f64 <= 1.5 * seen as f64,
        "reported {reported} B against {seen} B sampled beside it (resident sets summed: {rss} B)"
    );
    assert!(
        rss > reported,
        "summed resident sets ({rss} B) should exceed the proportional sizes ({reported} B)"
    );
}

/// Loads 1,000 records into the server at `url` in a run of its own
/// (its result in `dir`), so that a later run can fault it within its
/// measured phase however long a busy machine takes to load.
fn load_in_a_run_of_its_own(url: &str, dir: &tempfile::TempDir) {
    let loaded = dir.path().join("loaded.json");
    expect_exit(
        &[
            "run",
            "-t",
            url,
            "--records",
            "1000",
            "--ops",
            "1",
            "--quiet",
            "-o",
            loaded.to_str().unwrap(),
        ],
        0,
    );
}

#[test]
fn killed_postgres_is_counted_and_the_result_is_written() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql") {
        return;
    }
    let server = bakeoff_drivers::postgres::start(None, None).unwrap();
    let dir = tmp();
    let out = dir.path().join("killed.json");
    let url = format!("postgres://bakeoff@127.0.0.1:{}", server.addr.port());
    // Load first, in a run of its own: the kill below must land in the
    // measured phase, however long a busy machine takes to load.
    load_in_a_run_of_its_own(&url, &dir);
    let child = std::process::Command::new(bin())
        .args([
            "run",
            "-t",
            &url,
            "--no-load",
            "--records",
            "1000",
            "--clients",
            "4",
            "--duration",
            "6s",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed once more than 100 of its reads were served (each one a
    // transaction of its own), however long a busy machine takes to begin.
    wait_for_postgres_commits(server.addr.port(), 200);
    // SAFETY: killing the server this test started, by its pid.
    unsafe { libc::kill(server.pid as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let r = read_json(&out);
    let m = &r["runs"][0]["measure"];
    assert!(
        m["ops"]["get"]["completed"].as_u64().unwrap() > 100,
        "operations before the kill were counted: {m}"
    );
    let errors: u64 = m["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(errors > 0, "the kill shows as errors: {}", m["errors"]);
    assert!(
        m["errors"]["reset"].as_u64().unwrap_or(0) + m["errors"]["refused"].as_u64().unwrap_or(0)
            > 0,
        "a lost connection is a reset, a failed reconnection a refusal: {}",
        m["errors"]
    );
    assert_eq!(r["runs"][0]["status"], "errors");
}

/// A server that stops answering mid-run (SIGSTOP, as a stuck disk or a
/// paused VM would) never hangs bakeoff: each request waiting on it fails
/// as a timeout after --timeout, the run ends on time with the timeouts
/// counted, and exits 1.
#[test]
fn a_stalled_postgres_ends_in_timeouts_not_a_hang() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql") {
        return;
    }
    let server = bakeoff_drivers::postgres::start(None, None).unwrap();
    let dir = tmp();
    let out = dir.path().join("stalled.json");
    let url = format!("postgres://bakeoff@127.0.0.1:{}", server.addr.port());
    // Loaded first, in a run of its own: the stall below must land in the
    // measured phase, however long a busy machine takes to load.
    load_in_a_run_of_its_own(&url, &dir);
    let child = std::process::Command::new(bin())
        .args([
            "run",
            "-t",
            &url,
            "--no-load",
            "--records",
            "1000",
            "--clients",
            "4",
            "--duration",
            "4s",
            "--warmup",
            "0",
            "--timeout",
            "1s",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stalled once the measured phase serves (its reads committed).
    wait_for_postgres_commits(server.addr.port(), 200);
    let stopped: Vec<u32> = std::iter::once(server.pid)
        .chain(bakeoff_servers::descendants_of(server.pid))
        .collect();
    for p in &stopped {
        // SAFETY: stopping the server this test started and its
        // backends, by pid.
        unsafe { libc::kill(*p as i32, libc::SIGSTOP) };
    }
    let stalled_at = std::time::Instant::now();
    let mut child = child;
    let status = wait_within(&mut child, std::time::Duration::from_secs(40));
    let waited = stalled_at.elapsed();
    for p in &stopped {
        // SAFETY: as above.
        unsafe { libc::kill(*p as i32, libc::SIGCONT) };
    }
    let status = status.expect("bakeoff hung on a stalled server");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    // The rest of the 4 s phase, a timeout, then the counters' own
    // deadline (5 s) and the verdict.
    assert!(
        waited < std::time::Duration::from_secs(15),
        "ended {waited:?} after the stall"
    );
    let r = read_json(&out);
    let m = &r["runs"][0]["measure"];
    assert!(
        m["errors"]["timeout"].as_u64().unwrap_or(0) > 0,
        "the stall shows as timeouts: {}",
        m["errors"]
    );
    assert_eq!(r["runs"][0]["status"], "errors");
}

/// 000-search on every table engine: the same searches return the same rows
/// on PostgreSQL, MariaDB and SQLite (the reference), indexes on and off,
/// and each search is counted by the server.
#[test]
fn searches_return_the_same_rows_on_sql_servers() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql")
        || !require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
    {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("search.json");
    expect_exit(
        &[
            "run",
            "-t",
            "sqlite,postgres,mariadb",
            "--record",
            "profile",
            "--records",
            "4000",
            "--ops",
            "40",
            "--clients",
            "2",
            "--warmup",
            "0",
            "--sweep-search",
            "name,sex,location",
            "--sweep-indexes",
            "on,off",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 18);
    let mut by_search = std::collections::BTreeMap::<String, Vec<(String, u64)>>::new();
    for run in runs {
        let search = &run["measure"]["ops"]["search"];
        assert_eq!(search["completed"], 40, "{}", run["target"]);
        by_search
            .entry(run["point"]["search"].as_str().unwrap().to_string())
            .or_default()
            .push((
                format!("{} {}", run["target"], run["point"]["indexes"]),
                search["rows"].as_u64().unwrap(),
            ));
        if run["target"] != "sqlite" {
            let checks = run["checks"]["counters"].as_array().unwrap();
            assert!(!checks.is_empty(), "{}", run["target"]);
            for c in checks {
                assert_eq!(c["bakeoff"], c["target"], "{}: {c}", run["target"]);
            }
        }
    }
    for (search, rows) in &by_search {
        assert!(
            rows.iter().all(|r| r.1 == rows[0].1),
            "{search}: rows differ between targets or indexes: {rows:?}"
        );
        assert!(rows[0].1 > 0, "{search}: no rows at all");
    }
}

#[test]
fn managed_mongodb_loads_verifies_counts_and_cleans_up() {
    let _beside = crate::common::beside_others();
    if !mongodb_installed() {
        return;
    }
    let t = managed_run("mongodb", &[]);
    let version = t["version"].as_str().unwrap();
    assert!(
        version.starts_with("MongoDB ") || version.starts_with("FerretDB "),
        "{t}"
    );
    assert!(t["settings"]["wire_version"].is_string(), "{t}");
    // A find by `_id` is an index lookup, not a scan of the collection
    // (FerretDB 1.24 on PostgreSQL pushes `_jsonb->'_id' @> value` down,
    // which its own btree index cannot serve; 44 finds/s at 100,000
    // documents before bakeoff indexed it for that).
    let plan = t["settings"]["find_by_id_plan"].as_str().unwrap_or("");
    assert!(
        plan.contains("Index") || plan.contains("IDHACK") || plan.contains("IXSCAN"),
        "a find by _id scans: {plan:?} in {t}"
    );
}

#[test]
fn mongodb_by_url_works_against_a_wire_compatible_server() {
    let _beside = crate::common::beside_others();
    if !mongodb_installed() {
        return;
    }
    let started = bakeoff_drivers::mongodb::start(None).unwrap();
    let dir = tmp();
    let out = dir.path().join("mongo.json");
    expect_exit(
        &[
            "run",
            "-t",
            &format!("mongodb://127.0.0.1:{}", started.server.addr.port()),
            "--records",
            "300",
            "--ops",
            "300",
            "--clients",
            "2",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    assert_eq!(r["targets"][0]["mode"], "external");
    assert_eq!(r["runs"][0]["checks"]["records_after_load"], 300);
    if let Some(addr) = started.metrics {
        // The load inserts (an upsert is a scan of the whole collection
        // on FerretDB, which made loading quadratic); measured writes
        // stay upserts.
        let c = bakeoff_drivers::mongodb::ferretdb_counters(addr).unwrap();
        let ops = &r["runs"][0]["measure"]["ops"];
        let sets: u64 = ["set", "update"]
            .iter()
            .map(|k| ops[k]["sent"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(c.get("insert").copied(), Some(300), "{c:?}");
        assert_eq!(c.get("update").copied().unwrap_or(0), sets, "{c:?}");
    }
    assert!(
        r["runs"][0]["measure"]["errors"]
            .as_object()
            .unwrap()
            .is_empty(),
        "{}",
        r["runs"][0]["measure"]["errors"]
    );
    assert!(
        r["runs"][0]["measure"]["ops"]["get"]["completed"]
            .as_u64()
            .unwrap()
            > 100
    );
}

/// Where the machine has no mongod, asking for one says so and what to do.
#[test]
fn missing_mongod_is_explained() {
    let _beside = crate::common::beside_others();
    if bakeoff_servers::find_program("mongod", &[]).is_some() {
        return;
    }
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            "mongodb",
            "--set",
            "mongodb.server=mongod",
            "--duration",
            "1s",
        ],
        2,
    );
    assert!(
        stderr.contains("Debian 12 packages no `mongod`")
            && stderr.contains("scripts/install-ferretdb.sh"),
        "{stderr}"
    );
}

/// 000-search on MongoDB: the same rows as SQLite's for each search, with
/// and without indexes.
#[test]
fn mongodb_searches_return_the_same_rows_as_sqlite() {
    let _beside = crate::common::beside_others();
    if !mongodb_installed() {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("search.json");
    expect_exit(
        &[
            "run",
            "-t",
            "sqlite,mongodb",
            "--record",
            "profile",
            "--records",
            "1500",
            "--ops",
            "10",
            "--clients",
            "2",
            "--warmup",
            "0",
            "--sweep-search",
            "name,sex,location",
            "--sweep-indexes",
            "on,off",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for pair in runs.chunks(2) {
        let rows = |run: &serde_json::Value| run["measure"]["ops"]["search"]["rows"].as_u64();
        assert_eq!(pair[0]["target"], "sqlite");
        assert_eq!(
            rows(&pair[0]),
            rows(&pair[1]),
            "{}: rows differ",
            pair[1]["point"]
        );
        assert!(rows(&pair[0]).unwrap() > 0, "{}", pair[0]["point"]);
    }
}

/// 002-growth: each server stays up across the checkpoints, each checkpoint
/// loads only the records added since the last (in batches), and counts
/// still equal the server's.
#[test]
fn growth_checkpoints_load_in_batches_on_one_server() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql")
        || !require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
    {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("grow.json");
    expect_exit(
        &[
            "run",
            "-t",
            "postgres,mariadb",
            "--grow",
            "--sweep-records",
            "1000,3000",
            "--batch",
            "50",
            "--mix",
            "95:0:5:0",
            "--clients",
            "2",
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
    let runs = r["runs"].as_array().unwrap();
    // A target's checkpoints run back to back.
    let order: Vec<(&str, &str)> = runs
        .iter()
        .map(|run| {
            (
                run["target"].as_str().unwrap(),
                run["point"]["records"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("postgres", "1000"),
            ("postgres", "3000"),
            ("mariadb", "1000"),
            ("mariadb", "3000")
        ]
    );
    for run in runs {
        let records = run["workload"]["records"].as_u64().unwrap();
        let from = run["workload"]["load_from"].as_u64().unwrap();
        assert_eq!(from, if records == 3000 { 1000 } else { 0 });
        assert_eq!(
            run["checks"]["records_after_load"], records,
            "{}",
            run["target"]
        );
        let set = &run["load"]["ops"]["set"];
        // Batches of 50: one request per batch, the records as its rows.
        assert_eq!(set["rows"].as_u64().unwrap(), records - from, "{set}");
        assert_eq!(
            set["completed"].as_u64().unwrap(),
            (records - from) / 50,
            "{set}"
        );
        for c in run["checks"]["counters"].as_array().unwrap() {
            assert_eq!(c["bakeoff"], c["target"], "{}: {c}", run["target"]);
        }
    }
}

/// The SQL servers' wire codecs pipeline operations (`--pipeline`) and
/// load in batches (`--batch`), a client's last batch shorter: every
/// record loaded once, every read verified, counts equal the server's.
#[test]
fn sql_operations_pipeline_and_load_in_uneven_batches() {
    let _beside = crate::common::beside_others();
    if !require_in("postgres", PG_DIRS, "postgresql")
        || !require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
    {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("pipe.json");
    expect_exit(
        &[
            "run",
            "-t",
            "postgres,mariadb",
            "--records",
            "2000",
            "--batch",
            "64",
            "--pipeline",
            "8",
            "--mix",
            "70:20:5:5",
            "--clients",
            "3",
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
    for run in r["runs"].as_array().unwrap() {
        let target = &run["target"];
        assert_eq!(run["checks"]["records_after_load"], 2000, "{target}");
        // 667, 667 and 666 records: 11 batches each, the last shorter.
        let set = &run["load"]["ops"]["set"];
        assert_eq!(set["rows"].as_u64().unwrap(), 2000, "{target}: {set}");
        assert_eq!(set["completed"].as_u64().unwrap(), 33, "{target}: {set}");
        let m = &run["measure"];
        assert!(
            m["errors"].as_object().unwrap().is_empty(),
            "{target}: {}",
            m["errors"]
        );
        assert!(
            m["ops"]["get"]["completed"].as_u64().unwrap() > 100,
            "{target}"
        );
        let counters = run["checks"]["counters"].as_array().unwrap();
        assert!(counters.len() >= 2, "{target}: {counters:?}");
        for c in counters {
            assert_eq!(c["bakeoff"], c["target"], "{target}: {c}");
        }
        assert_eq!(run["workload"]["pipeline"], 8, "{target}");
    }
}

/// 000-mysql-phases: each request's named steps are timed apart, every step
/// of every request is counted, and the steps add up to the request.
#[test]
fn phased_requests_time_each_step_and_add_up() {
    let _beside = crate::common::beside_others();
    if !require_in("mariadbd", &["/usr/sbin"], "mariadb-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("phases.json");
    expect_exit(
        &[
            "run",
            "-t",
            "mariadb",
            "--request",
            "phases",
            "--records",
            "500",
            "--clients",
            "2",
            "--ops",
            "200",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    let m = &r["runs"][0]["measure"];
    let request = &m["ops"]["update"];
    assert_eq!(request["completed"], 200);
    let steps = m["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "connect",
            "select_db",
            "set_charset",
            "update",
            "select",
            "insert",
            "close"
        ]
    );
    let mut sum = 0.0;
    for s in steps {
        assert_eq!(s["latency"]["count"], 200, "{s}");
        sum += s["latency"]["mean_ns"].as_f64().unwrap();
    }
    let whole = request["latency"]["mean_ns"].as_f64().unwrap();
    assert!(
        sum <= whole * 1.001 && sum > whole * 0.8,
        "steps {sum} ns vs request {whole} ns"
    );
    // 10 rows selected and one inserted per request, at least.
    assert!(request["rows"].as_u64().unwrap() >= 200 * 11, "{request}");
    for c in r["runs"][0]["checks"]["counters"].as_array().unwrap() {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}

/// 000-mysql-conns: a connection per request; the server's own counts
/// agree, and connections it turns away are counted as refusals.
#[test]
fn a_connection_per_request_is_counted_and_refusals_are_errors() {
    let _beside = crate::common::beside_others();
    if !require_in("mariadbd", &["/usr/sbin"], "mariadb-server")
        || !require_in("postgres", PG_DIRS, "postgresql")
    {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("conns.json");
    expect_exit(
        &[
            "run",
            "-t",
            "mariadb,postgres",
            "--request",
            "connect",
            "--records",
            "500",
            "--mix",
            "90:0:10:0",
            "--clients",
            "8",
            "--ops",
            "400",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        0,
    );
    let r = read_json(&out);
    for run in r["runs"].as_array().unwrap() {
        let checks = run["checks"]["counters"].as_array().unwrap();
        assert!(!checks.is_empty(), "{}", run["target"]);
        for c in checks {
            assert_eq!(c["bakeoff"], c["target"], "{}: {c}", run["target"]);
        }
    }

    // More clients than the server takes connections.
    let out = dir.path().join("refused.json");
    expect_exit(
        &[
            "run",
            "-t",
            "mariadb",
            "--set",
            "mariadb.max_connections=4",
            "--request",
            "connect",
            "--records",
            "300",
            "--mix",
            "100:0",
            "--clients",
            "200",
            "--ops",
            "2000",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ],
        1,
    );
    let r = read_json(&out);
    // The load is done by a few clients, each on one connection, so none
    // is refused; the measured crowd of short connections is.
    let load = &r["runs"][0]["load"];
    assert_eq!(load["errors"], serde_json::json!({}), "{load}");
    assert_eq!(r["runs"][0]["checks"]["records_after_load"], 300);
    let m = &r["runs"][0]["measure"];
    assert!(
        m["errors"]["refused"].as_u64().unwrap_or(0) > 0,
        "too many connections counted as refusals: {}",
        m["errors"]
    );
    assert!(m["ops"]["get"]["completed"].as_u64().unwrap() > 0, "{m}");
    // A refused connection carried no request: the server's statement
    // count still equals bakeoff's.
    for c in r["runs"][0]["checks"]["counters"].as_array().unwrap() {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}

/// A synchronised start (`--start-at`) reads MariaDB's clock (`NOW(6)`) and
/// MongoDB's (`hello`'s `localTime`), as it does Redis's and PostgreSQL's:
/// the run records this machine's clock minus the server's, which on one
/// machine is within the round trip and the server's resolution.
#[test]
fn a_synchronised_start_reads_the_clocks_of_mariadb_and_mongodb() {
    let _beside = crate::common::beside_others();
    if !require_in("mariadbd", &["/usr/sbin"], "mariadb-server") {
        return;
    }
    let (maria, _) = bakeoff_drivers::mariadb::start_with_kv(None).unwrap();
    let mut urls = vec![format!("mariadb://root@127.0.0.1:{}", maria.addr.port())];
    let mongo = mongodb_installed().then(|| bakeoff_drivers::mongodb::start(None).unwrap());
    if let Some(m) = &mongo {
        urls.push(format!("mongodb://127.0.0.1:{}", m.server.addr.port()));
    }
    for url in &urls {
        let start = std::time::SystemTime::now() + std::time::Duration::from_secs(4);
        let start = humantime::format_rfc3339_millis(start).to_string();
        let r = run_ok(&[
            "run",
            "-t",
            url,
            "--records",
            "200",
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--start-at",
            &start,
        ]);
        let run = &r["runs"][0];
        let offset = run["clock_offset_ns"]
            .as_i64()
            .unwrap_or_else(|| panic!("{url}: no clock offset recorded: {run}"));
        // MongoDB's clock has milliseconds; both are on this machine.
        assert!(offset.abs() < 50_000_000, "{url}: offset {offset} ns");
    }
}
