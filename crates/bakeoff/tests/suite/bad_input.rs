//! Bad input gets one clear message naming what is wrong, exit code 2, and
//! no panic.

use crate::common::*;

fn expect_usage_error(args: &[&str], needles: &[&str]) {
    let o = bakeoff(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: expected `{n}` in: {stderr}");
    }
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{stderr}"
    );
}

#[test]
fn flags_and_values() {
    let _beside = crate::common::beside_others();
    expect_usage_error(&["run", "--clientz", "3"], &["--clientz"]);
    expect_usage_error(
        &["run", "--clients", "0", "-t", "redis"],
        &["--clients", "at least 1"],
    );
    expect_usage_error(
        &["run", "--mix", "0:0", "-t", "redis"],
        &["--mix", "sums to 0"],
    );
    expect_usage_error(
        &["run", "--mix", "a:b", "-t", "redis"],
        &["--mix", "whole number"],
    );
    expect_usage_error(
        &["run", "--value-size", "10", "-t", "redis"],
        &["--value-size", "header"],
    );
    expect_usage_error(
        &["run", "--duration", "ten", "-t", "redis"],
        &["--duration", "10s"],
    );
    expect_usage_error(
        &["run", "--key-distribution", "pareto", "-t", "redis"],
        &["--key-distribution", "zipfian"],
    );
    expect_usage_error(
        &["run", "-t", "cassandra"],
        &["unknown target `cassandra`", "redis", "memcached"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--set", "redis.persistance=rdb"],
        &["servers.redis", "persistance", "persistence"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--set", "redis.persistence=sometimes"],
        &["persistence", "aof-everysec"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--set", "oops"],
        &["--set", "TARGET.KEY=VALUE"],
    );
    expect_usage_error(&["run", "-t", "redis://127.0.0.1"], &["no port"]);
    // Said as what they are (issue 33, class 10): no --html was given.
    expect_usage_error(&["run", "-t", "redis", "-o", "/"], &["-o / is a directory"]);
    expect_usage_error(&["run", "-t", "redis", "-o", ""], &["-o is empty"]);
    expect_usage_error(&["run", "-t", "", "--duration", "1s"], &["no targets"]);
    expect_usage_error(
        &["run", "-t", "redis", "--shard", "-1/2"],
        &["--shard", "-1/2"],
    );
    // Values beyond what fits, or negative: a bound and a message, never a
    // panic or an abort.
    for flag in ["--timeout", "--duration", "--warmup"] {
        expect_usage_error(
            &["run", "-t", "redis", flag, "99999999999999999999h"],
            &[flag, "longer than a year"],
        );
    }
    expect_usage_error(
        &["run", "-t", "redis", "--duration", "-1s"],
        &["--duration", "negative"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--clients", "10000000"],
        &["--clients", "100000"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--pipeline", "1000000"],
        &["--pipeline", "4096"],
    );
    // A URL part the target cannot use is refused, not ignored.
    expect_usage_error(
        &["run", "-t", "redis://127.0.0.1:6379/3"],
        &["does not take a database (`/3`)"],
    );
    expect_usage_error(
        &["run", "-t", "memcached://127.0.0.1:11211?tls=yes"],
        &["does not take the option `tls`"],
    );
}

/// Output paths, presets and settings that would lose or misreport a run
/// are refused before anything starts, each with the path or key named.
#[test]
fn what_would_lose_or_misreport_a_run_is_refused_up_front() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let d = dir.path();
    let json = d.join("r.json");
    let html = d.join("r.html");
    expect_usage_error(
        &["run", "-t", "redis", "-o", html.to_str().unwrap()],
        &["-o", "r.html", "is JSON", "r.json"],
    );
    expect_usage_error(
        &[
            "run",
            "-t",
            "redis",
            "-o",
            json.to_str().unwrap(),
            "--html",
            json.to_str().unwrap(),
        ],
        &["--html", "is the result file"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "-o", "/proc/r.json"],
        &["cannot write the result file /proc/r.json"],
    );
    let o = std::process::Command::new(bin())
        .args(["run", "-t", "redis", "-o", json.to_str().unwrap()])
        .env("TMPDIR", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/nonexistent") && stderr.contains("TMPDIR"),
        "{stderr}"
    );
    assert!(!json.exists(), "nothing was to start");
    // Presets: a device, an empty file, a name that leaves results/.
    expect_usage_error(&["run", "/dev/urandom"], &["/dev/urandom", "device"]);
    let p = d.join("p.toml");
    std::fs::write(&p, "# nothing\n").unwrap();
    expect_usage_error(&["run", p.to_str().unwrap()], &["p.toml", "is empty"]);
    std::fs::write(&p, "name = \"../../x\"\ntargets = [\"redis\"]\n").unwrap();
    expect_usage_error(&["run", p.to_str().unwrap()], &["../../x", "plain name"]);
    std::fs::write(&p, vec![b'#'; 2 << 20]).unwrap();
    expect_usage_error(&["run", p.to_str().unwrap()], &["larger than"]);
    // What bakeoff can only do to a server it starts.
    expect_usage_error(
        &[
            "run",
            "-t",
            "redis://127.0.0.1:6379",
            "--set",
            "redis.persistence=aof-always",
        ],
        &["--set redis.persistence", "did not start"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--set", "memcached.memory=64mb"],
        &["--set memcached.memory", "not among this run's targets"],
    );
    expect_usage_error(
        &[
            "run",
            "-t",
            "redis://127.0.0.1:6379",
            "--memory-cap",
            "64mb",
        ],
        &["memory cap", "-t redis"],
    );
    expect_usage_error(
        &["run", "-t", "redis", "--rate", "1e30"],
        &["--rate", "a nanosecond"],
    );
}

/// A run that measured nothing is not a clean run: exit 1, and the result
/// says why.
#[test]
fn a_run_that_measured_nothing_does_not_exit_0() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("nothing.json");
    expect_exit(
        &[
            "run",
            "-t",
            "redis",
            "--records",
            "10",
            "--duration",
            "1us",
            "--warmup",
            "0",
            "--quiet",
            "--no-html",
            "-o",
            out.to_str().unwrap(),
        ],
        1,
    );
    let r = read_json(&out);
    assert_eq!(r["runs"][0]["measure"]["completed"], 0);
    assert_eq!(r["runs"][0]["status"], "errors");
    assert!(
        r["runs"][0]["message"]
            .as_str()
            .unwrap()
            .contains("completed no operation"),
        "{}",
        r["runs"][0]["message"]
    );
}

/// Output to a reader that went away ends quietly (exit 0, no panic), as
/// with other Unix tools.
#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    let _beside = crate::common::beside_others();
    for args in [&["schema"][..], &["list"], &["presets"]] {
        let mut child = std::process::Command::new(bin())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before the process has written anything.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn broken_presets() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, "[workload]\nclient = 3\n").unwrap();
    expect_usage_error(&["run", p.to_str().unwrap()], &["bad.toml", "client"]);
    std::fs::write(&p, "[workload\n").unwrap();
    expect_usage_error(&["run", p.to_str().unwrap()], &["bad.toml"]);
    std::fs::write(&p, "targets = [\"redis\"]\n[workload]\nrecords = 0\n").unwrap();
    expect_usage_error(
        &["run", p.to_str().unwrap()],
        &["preset key workload.records"],
    );
    expect_usage_error(
        &["run", "/no/such/preset.toml"],
        &["cannot read preset /no/such/preset.toml"],
    );
}

/// What the unreachable-server tests rely on: a closed port refuses
/// connections and no server started meanwhile can take it.
/// The result-file reader trusts nothing (issue 33, class 3): `report`,
/// `compare` and `merge` of /dev/zero end at once with exit 2 and what is
/// wrong, instead of reading until memory runs out.
#[test]
fn result_readers_refuse_endless_and_binary_input() {
    let _beside = crate::common::beside_others();
    for args in [
        &["report", "/dev/zero"][..],
        &["compare", "/dev/zero", "/dev/zero"][..],
        &[
            "merge",
            "/dev/zero",
            "/dev/zero",
            "-o",
            "/tmp/never-written.json",
        ][..],
    ] {
        let started = std::time::Instant::now();
        expect_usage_error(args, &["/dev/zero", "not a result file"]);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
    // A histogram that does not decode is told, not passed over; a field
    // that does not match the schema is named by its path.
    let dir = tmp();
    let mock: serde_json::Value =
        serde_json::from_str(include_str!("../snapshots/mock.json")).unwrap();
    let mut broken = mock.clone();
    broken["runs"][0]["measure"]["all"]["hdr"] = "not base64!".into();
    let path = dir.path().join("broken.json");
    std::fs::write(&path, serde_json::to_vec(&broken).unwrap()).unwrap();
    let p = path.to_str().unwrap();
    for args in [&["report", p][..], &["compare", p, p][..]] {
        let o = bakeoff(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains("warning:") && stderr.contains("run 0, measure, all kinds"),
            "{args:?}: {stderr}"
        );
    }
    let mut wrong = mock;
    wrong["runs"][1]["measure"]["completed"] = "many".into();
    std::fs::write(&path, serde_json::to_vec(&wrong).unwrap()).unwrap();
    expect_usage_error(&["report", p], &["runs[1].measure.completed"]);
}

/// Output that cannot be written is bad input, found before anything
/// starts (issue 33, class 5): a full disk under `-o` is refused at once
/// with exit 2 (it passed the probe and failed after the runs); report
/// and merge exit 2 for an output they cannot write, as run does.
#[test]
fn outputs_that_cannot_be_written_are_refused_up_front() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let at = dir.path().join("full");
    std::fs::create_dir(&at).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
        .arg(&at)
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        let out = at.join("x.json");
        let stderr = expect_exit(
            &[
                "run",
                "-t",
                "redis",
                "--duration",
                "1s",
                "-o",
                out.to_str().unwrap(),
            ],
            2,
        );
        assert!(
            stderr.contains("No space left") && stderr.contains("-o"),
            "{stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(&at)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let _ = std::process::Command::new("umount").arg(&at).status();
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root and can mount a tmpfs"
        );
    }
    // A FIFO would wait for a reader for ever, and take one copy per run.
    let fifo = dir.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    expect_usage_error(
        &[
            "run",
            "-t",
            "redis",
            "--duration",
            "1s",
            "-o",
            fifo.to_str().unwrap(),
        ],
        &["is a pipe", "--print-result"],
    );
    let result = dir.path().join("r.json");
    std::fs::write(&result, include_str!("../snapshots/mock.json")).unwrap();
    let r = result.to_str().unwrap();
    expect_usage_error(
        &["report", r, "--html", "/proc/no/such/report.html"],
        &["cannot write the HTML report"],
    );
    // Two shards of one experiment, to merge.
    let shards: Vec<String> = (0..2)
        .map(|i| {
            let mut v: serde_json::Value =
                serde_json::from_str(include_str!("../snapshots/mock.json")).unwrap();
            v["shard"] = serde_json::json!({
                "index": i, "count": 2, "plan_hash": "h",
                "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:10Z"
            });
            let path = dir.path().join(format!("shard{i}.json"));
            std::fs::write(&path, v.to_string()).unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect();
    expect_usage_error(
        &[
            "merge",
            &shards[0],
            &shards[1],
            "-o",
            "/proc/no/such/merged.json",
        ],
        &["cannot write /proc/no/such/merged.json"],
    );
}

/// Two runs with the same -o: the second is refused while the first
/// runs, where both exited 0 and one result was lost (issue 33, class 5).
#[test]
fn a_second_run_to_the_same_output_is_refused() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("same.json");
    let out = out.to_str().unwrap();
    let mut first = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--records",
        "1000",
        "--duration",
        "3s",
        "--warmup",
        "0",
        "--quiet",
        "-o",
        out,
    ]);
    // The claim is taken before anything starts: once its redis-server
    // runs, the first has it.
    managed_redis(first.id());
    expect_usage_error(
        &["run", "-t", "redis", "--duration", "1s", "-o", out],
        &["another bakeoff is writing", "same.json"],
    );
    assert!(first.wait().unwrap().success());
    // Once it ended, the path is free again.
    assert!(read_json(std::path::Path::new(out))["runs"][0]["status"] == "ok");
}

#[test]
fn a_closed_port_refuses_and_cannot_be_taken() {
    let _beside = crate::common::beside_others();
    let (_closed, port) = closed_port();
    let e = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    let e = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
}

#[test]
fn unreachable_or_refusing_servers() {
    let _beside = crate::common::beside_others();
    // A port nobody listens on, held so that nothing else takes it.
    let (_closed, port) = closed_port();
    let url = format!("redis://127.0.0.1:{port}");
    expect_usage_error(
        &["run", "-t", &url, "--duration", "1s"],
        &[
            "redis",
            &format!("127.0.0.1:{port}"),
            "is the server running",
        ],
    );
    let url = format!("memcached://127.0.0.1:{port}");
    expect_usage_error(
        &["run", "-t", &url, "--duration", "1s"],
        &["memcached", "is the server running"],
    );
    // A refused connection is not a server speaking another protocol.
    let url = format!("mongodb://127.0.0.1:{port}");
    let stderr = expect_exit(&["run", "-t", &url, "--duration", "1s"], 2);
    assert!(
        stderr.contains("Connection refused") && !stderr.contains("not MongoDB's"),
        "{stderr}"
    );
    // A socket that is a regular file, or is not there, is named as such
    // before any connection is tried.
    for (socket, says) in [
        ("/etc/passwd", "is not a socket"),
        ("/nonexistent/m.sock", "no socket at"),
    ] {
        let url = format!("mariadb://127.0.0.1:3306?socket={socket}");
        expect_usage_error(&["run", "-t", &url, "--duration", "1s"], &[socket, says]);
    }
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(Some("s3cret-pw"));
    let wrong = format!("redis://:wrong-pw@{}", server.addr);
    let stderr = expect_exit(&["run", "-t", &wrong, "--duration", "1s"], 2);
    assert!(
        stderr.contains("refused the credentials") && stderr.contains("password"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-pw"), "password printed: {stderr}");
    let none = format!("redis://{}", server.addr);
    expect_usage_error(
        &["run", "-t", &none, "--duration", "1s"],
        &["NOAUTH", "redis://:PASSWORD@"],
    );
    // The right password works and never reaches the result file or output.
    let dir = tmp();
    let out = dir.path().join("pw.json");
    let right = format!("redis://:s3cret-pw@{}", server.addr);
    let o = bakeoff(&[
        "run",
        "-t",
        &right,
        "--records",
        "100",
        "--duration",
        "500ms",
        "--warmup",
        "0",
        "--clients",
        "2",
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
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(
        !file.contains("s3cret-pw"),
        "password stored in the result file"
    );
    assert!(file.contains(":***@"));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("s3cret-pw"));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("s3cret-pw"));
    // The query-string forms are credentials too: used, and never shown
    // on screen or stored in the JSON or the HTML.
    for form in ["password", "auth"] {
        let url = format!("redis://{}?{form}=s3cret-pw", server.addr);
        let o = bakeoff(&[
            "run",
            "-t",
            &url,
            "--records",
            "100",
            "--duration",
            "300ms",
            "--warmup",
            "0",
            "--clients",
            "2",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{form}: {stderr}");
        let html = std::fs::read_to_string(out.with_extension("html")).unwrap();
        for (what, text) in [
            ("result file", std::fs::read_to_string(&out).unwrap()),
            ("HTML report", html),
            ("stdout", String::from_utf8_lossy(&o.stdout).into_owned()),
            ("stderr", stderr.into_owned()),
        ] {
            assert!(
                !text.contains("s3cret-pw"),
                "{form}: password in the {what}"
            );
        }
    }
}

#[test]
fn missing_server_binary_names_the_package() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let o = std::process::Command::new(bin())
        .args(["run", "-t", "redis", "-t", "memcached", "--duration", "1s"])
        .env("PATH", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("redis-server") && stderr.contains("apt-get install redis-server"),
        "{stderr}"
    );
}

#[test]
fn default_run_skips_what_it_cannot_start_and_says_why() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let o = std::process::Command::new(bin())
        .args(["run", "--duration", "1s"])
        .env("PATH", dir.path())
        .env(
            "BAKEOFF_TOKYOCABINET_LIB",
            dir.path().join("libtokyocabinet.so.9"),
        )
        .env("BAKEOFF_LMDB_LIB", dir.path().join("liblmdb.so.0"))
        .env("BAKEOFF_ROCKSDB_LIB", dir.path().join("librocksdb.so.7.8"))
        .env("BAKEOFF_SQLITE_LIB", dir.path().join("libsqlite3.so.0"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    // PostgreSQL (and FerretDB over it) are found in their own
    // directories, not on PATH: when they run, the run goes on with them;
    // when nothing can start, it is a usage error.
    let ran = ["postgres", "mongodb"]
        .iter()
        .any(|t| !stderr.contains(&format!("skipped {t}")));
    assert_eq!(o.status.code(), Some(if ran { 0 } else { 2 }), "{stderr}");
    assert!(
        stderr.contains("skipped redis") && stderr.contains("apt-get install memcached"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skipped mariadb") && stderr.contains("apt-get install mariadb-server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skipped tokyo-hash")
            && stderr.contains("apt-get install libtokyocabinet9"),
        "{stderr}"
    );
}

#[test]
fn port_in_use_is_a_clear_error() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let setting = format!("redis.port={port}");
    expect_usage_error(
        &["run", "-t", "redis", "--set", &setting, "--duration", "1s"],
        &[&port, "in use"],
    );
}

#[test]
fn help_explains_units_and_defaults() {
    let _beside = crate::common::beside_others();
    let o = bakeoff(&["run", "--help"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    for needle in [
        "--clients",
        "[default: 50]",
        "--rate",
        "OPS/S",
        "--value-size",
        "BYTES",
        "--duration",
        "[default: 10s]",
        "--pipeline",
    ] {
        assert!(s.contains(needle), "help lacks {needle}:\n{s}");
    }
    let o = bakeoff(&["list"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("redis") && s.contains("memcached-binary") && s.contains("pipelining"),
        "{s}"
    );
}

#[test]
fn growth_and_batches_are_checked_before_anything_starts() {
    let _beside = crate::common::beside_others();
    let cases: [(&[&str], &str); 4] = [
        (&["--grow"], "add --sweep-records"),
        (
            &["--grow", "--sweep-records", "5000,1000"],
            "checkpoints must increase",
        ),
        (&["-t", "redis", "--batch", "10"], "cannot load in batches"),
        (&["--batch", "0"], "a batch of 0 records"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["run", "--duration", "1s"];
        all.extend_from_slice(args);
        let o = bakeoff(&all);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// Server settings and faults that would be ignored, or would hold every
/// write until a timeout, are refused before anything starts (issue 33,
/// class 6): Redis's WAIT for more replicas than the topology has, and a
/// power cut of memcached, which keeps nothing on disk.
#[test]
fn server_settings_and_faults_that_mean_nothing_are_refused() {
    let _beside = crate::common::beside_others();
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["-t", "redis", "--set", "redis.wait_replicas=1"],
            &["wait_replicas=1", "no replica"],
        ),
        (
            &[
                "-t",
                "redis",
                "--topology",
                "primary-replica",
                "--set",
                "redis.wait_replicas=5",
            ],
            &["wait_replicas=5", "1 replica"],
        ),
        (
            &["-t", "memcached", "--fault", "power-cut@1s"],
            &["power cut", "nothing on disk", "--fault kill"],
        ),
        // memcached never starts with these (issue 33, class 4): they were
        // a 0 ops/s run that exited 1.
        (
            &["-t", "memcached", "--set", "memcached.memory=1mb"],
            &["memory", "at least 2mb"],
        ),
        (
            &["-t", "memcached", "--set", "memcached.max_connections=1"],
            &["max_connections", "at least"],
        ),
        (
            &[
                "-t",
                "memcached",
                "--clients",
                "100",
                "--set",
                "memcached.max_connections=50",
            ],
            &["max_connections=50", "100 clients"],
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["run", "--duration", "2s"];
        all.extend_from_slice(args);
        expect_usage_error(&all, expected);
    }
}

/// `--fault` that cannot be carried out is refused before anything
/// starts, naming the flag.
#[test]
fn faults_that_cannot_happen_are_refused() {
    let _beside = crate::common::beside_others();
    let cases: [(&[&str], &str); 6] = [
        (
            &["-t", "redis", "--fault", "kill@20s"],
            "past the end of the run",
        ),
        (
            &["-t", "redis", "--fault", "explode@1s"],
            "unknown fault `explode`",
        ),
        (&["-t", "redis", "--fault", "kill"], "has no time"),
        (
            &["-t", "redis", "--fault", "kill@1s", "-n", "100"],
            "needs a timed run",
        ),
        (
            &["-t", "redis://127.0.0.1:1", "--fault", "kill@1s"],
            "needs a server bakeoff started",
        ),
        (
            &[
                "-t",
                "sqlite",
                "--fault",
                "restart@1s",
                "--record",
                "profile",
            ],
            "key-value records only",
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["run", "--duration", "5s", "--warmup", "0"];
        all.extend_from_slice(args);
        if args.contains(&"-n") {
            all.retain(|a| *a != "--duration" && *a != "5s");
        }
        let o = bakeoff(&all);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(
            stderr.contains("--fault"),
            "{args:?} does not name the flag: {stderr}"
        );
    }
}

#[test]
fn request_modes_a_target_cannot_make_are_refused() {
    let _beside = crate::common::beside_others();
    let stderr = expect_exit(&["run", "-t", "postgres", "--request", "phases"], 2);
    assert!(stderr.contains("cannot make `phases` requests"), "{stderr}");
    let stderr = expect_exit(&["run", "-t", "redis", "--request", "connect"], 2);
    assert!(
        stderr.contains("cannot make `connect` requests"),
        "{stderr}"
    );
    let stderr = expect_exit(&["run", "--request", "sometimes"], 2);
    assert!(stderr.contains("use op, connect or phases"), "{stderr}");
}

/// Every preset shipped checks out (plan only, nothing started).
#[test]
fn every_preset_plans() {
    let _beside = crate::common::beside_others();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let o = bakeoff(&["run", path.to_str().unwrap(), "--dry-run"]);
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(stdout.contains("run(s)"), "{stdout}");
            seen += 1;
        }
    }
    assert!(seen >= 12, "only {seen} presets found");
}

/// `run --dry-run` shows every parameter of every planned run and every
/// server setting (as set, by default, or left to the server); a misspelt
/// setting is answered with the right name.
#[test]
fn dry_run_shows_every_setting_and_a_typo_names_the_right_one() {
    let _beside = crate::common::beside_others();
    let o = bakeoff(&[
        "run",
        "-t",
        "redis,memcached",
        "--set",
        "redis.persistence=aof-always",
        "--value-size",
        "1k",
        "--key-distribution",
        "zipfian",
        "--dry-run",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for wanted in [
        "key_distribution=zipfian",
        "value_size=",
        "load=true",
        "pipeline=1",
        "redis: settings: persistence=aof-always (set)",
        "left to the target: maxmemory, maxmemory_policy, wait_replicas, cluster_replicas, port",
        "memcached: settings: memory=1gb threads=4 max_connections=4096",
    ] {
        assert!(stdout.contains(wanted), "no `{wanted}` in:\n{stdout}");
    }
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            "redis",
            "--set",
            "redis.maxmemroy=1gb",
            "--dry-run",
        ],
        2,
    );
    assert!(stderr.contains("did you mean `maxmemory`?"), "{stderr}");
}

/// More clients than the open-file limit allows: refused before any server
/// starts, with the limit, what is needed and how to raise it.
#[test]
fn a_crowd_beyond_the_open_file_limit_is_refused_up_front() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let out = dir.path().join("r.json");
    let started = std::time::Instant::now();
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -Sn 2000 && ulimit -Hn 2000 && exec '{}' run -t memcached --clients 5000 --duration 1s --warmup 0 -o '{}'",
            bin().display(),
            out.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("5000 client connections")
            && err.contains("may open 2000")
            && err.contains("ulimit -n 5256")
            && err.contains("--clients"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!out.exists(), "nothing ran, nothing was written");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// A listener on 127.0.0.1 that, for every connection, sends endless
/// pseudo-random bytes (`garbage`) or says nothing and holds it open.
fn hostile_server(garbage: bool) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                use std::io::Write;
                let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
                let mut block = vec![0u8; 4096];
                loop {
                    if garbage {
                        for b in block.iter_mut() {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            *b = x as u8;
                        }
                        if conn.write_all(&block).is_err() {
                            return;
                        }
                    } else {
                        std::thread::sleep(std::time::Duration::from_secs(60));
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A server that speaks garbage, or accepts and never answers, is an
/// unusable target: exit 2 with a message, within the deadlines (5 s a
/// wait), never a hang or a busy loop, for every network protocol.
#[test]
fn garbage_speaking_or_silent_servers_are_refused_in_time() {
    let _beside = crate::common::beside_others();
    let garbage = hostile_server(true);
    let silent = hostile_server(false);
    let mut runs = Vec::new();
    for scheme in [
        "redis",
        "memcached",
        "memcached-binary",
        "postgres",
        "mariadb",
        "mongodb",
    ] {
        for (what, port) in [("garbage", garbage), ("silent", silent)] {
            runs.push(std::thread::spawn(move || {
                let url = format!("{scheme}://127.0.0.1:{port}");
                let t = std::time::Instant::now();
                let mut child = std::process::Command::new(bin())
                    .args([
                        "run",
                        "-t",
                        &url,
                        "--duration",
                        "1s",
                        "--no-html",
                        "-o",
                        "/dev/null",
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let status = wait_within(&mut child, std::time::Duration::from_secs(40))
                    .unwrap_or_else(|| panic!("{what} {url}: bakeoff hung"));
                let mut stderr = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
                    .unwrap();
                (what, url, status.code(), t.elapsed(), stderr)
            }));
        }
    }
    for r in runs {
        let (what, url, code, took, stderr) = r.join().unwrap();
        assert_eq!(code, Some(2), "{what} {url}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && !stderr.contains("panicked"),
            "{what} {url}: {stderr}"
        );
        assert!(
            took < std::time::Duration::from_secs(20),
            "{what} {url} took {took:?}: {stderr}"
        );
    }
}

/// A server that stalls with many clients on it (SIGSTOP, as a paused VM
/// would): the lost connections are not opened again one after another,
/// each waiting out the timeout on the loop's thread (20 clients x 2 s,
/// and the run went on 40 s past its end); the run ends on time, its
/// timeouts counted, and Ctrl-C acts at once (issue 33, class 1).
#[test]
fn a_stalled_server_holds_neither_the_end_nor_ctrl_c() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _alone = alone();
    for interrupt in [false, true] {
        let server = redis(Some("pw"));
        let dir = tmp();
        let out = dir.path().join("stalled.json");
        let url = format!("redis://:pw@127.0.0.1:{}", server.addr.port());
        let mut child = bakeoff_spawn(&[
            "run",
            "-t",
            &url,
            "--records",
            "1000",
            "--clients",
            "20",
            "--duration",
            if interrupt { "60s" } else { "5s" },
            "--warmup",
            "0",
            "--timeout",
            "2s",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ]);
        // Stalled in the measured phase (its reads under way), however
        // long the load takes on a busy machine.
        wait_for_redis_calls(server.addr, Some("pw"), "get", 100);
        // SAFETY: stopping the server this test started, by its pid.
        unsafe { libc::kill(server.pid as i32, libc::SIGSTOP) };
        let stalled = std::time::Instant::now();
        if interrupt {
            // Its connections time out, and their new attempts meet the
            // stall too; then Ctrl-C.
            std::thread::sleep(std::time::Duration::from_secs(5));
            // SAFETY: interrupting the bakeoff this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        }
        let asked = std::time::Instant::now();
        let status = wait_within(&mut child, std::time::Duration::from_secs(60));
        let (since_stall, since_asked) = (stalled.elapsed(), asked.elapsed());
        // SAFETY: as above.
        unsafe { libc::kill(server.pid as i32, libc::SIGCONT) };
        let status = status.expect("bakeoff hung on a stalled server");
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        if interrupt {
            assert_eq!(status.code(), Some(130), "{stderr}");
            // The loop lets go within a second, and an interrupted run
            // asks the stalled server nothing more.
            assert!(
                since_asked < std::time::Duration::from_secs(2),
                "Ctrl-C took {since_asked:?}: {stderr}"
            );
        } else {
            assert_eq!(status.code(), Some(1), "{stderr}");
            assert!(
                since_stall < std::time::Duration::from_secs(15),
                "ended {since_stall:?} after the stall: {stderr}"
            );
            let r = read_json(&out);
            assert!(
                r["runs"][0]["measure"]["errors"]["timeout"]
                    .as_u64()
                    .unwrap_or(0)
                    > 0
            );
        }
        eprintln!(
            "{}: {:?} after the stall, {:?} after asking",
            if interrupt { "ctrl-c" } else { "end" },
            since_stall,
            since_asked
        );
    }
}

/// A server that dies under a counted run (a load, --ops) with several
/// clients: every client gives up once it has been gone for the request
/// timeout, and the run ends with its errors counted, however the
/// reconnections are spread over rounds.
#[test]
fn a_server_that_dies_under_a_counted_run_ends_it() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let dir = tmp();
    let out = dir.path().join("died.json");
    let url = format!("redis://127.0.0.1:{}", server.addr.port());
    let mut child = bakeoff_spawn(&[
        "run",
        "-t",
        &url,
        "--records",
        "1000",
        "--ops",
        "100000000",
        "--clients",
        "8",
        "--warmup",
        "0",
        "--timeout",
        "1s",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Killed once the counted operations are under way.
    wait_for_redis_calls(server.addr, None, "get", 100);
    // SAFETY: killing the server this test started, by its pid.
    unsafe { libc::kill(server.pid as i32, libc::SIGKILL) };
    let killed = std::time::Instant::now();
    let status = wait_within(&mut child, std::time::Duration::from_secs(30))
        .expect("bakeoff went on for ever after its server died");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        killed.elapsed() < std::time::Duration::from_secs(10),
        "ended {:?} after the server died: {stderr}",
        killed.elapsed()
    );
    let r = read_json(&out);
    assert_eq!(r["runs"][0]["status"], "errors", "{stderr}");
}

/// What cannot start exits 2 with the reason (issue 33, class 4): an
/// engine or server whose files do not fit in a nearly full TMPDIR fails
/// before its load, names where, and the experiment exits 2, not 1 as a
/// "0 ops/s" run.
#[test]
fn a_target_that_cannot_start_for_want_of_space_exits_2_naming_where() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let at = dir.path().join("nearly-full");
    std::fs::create_dir(&at).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&at)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        return;
    }
    // Room for the output's lock and a little more, not for a database.
    std::fs::write(at.join("fill"), vec![0u8; 52 * 1024]).unwrap();
    let out = dir.path().join("sq.json");
    let o = std::process::Command::new(bin())
        .args([
            "run",
            "-t",
            "sqlite",
            "--records",
            "1000",
            "--duration",
            "1s",
        ])
        .args(["--warmup", "0", "--quiet", "-o"])
        .arg(&out)
        .env("TMPDIR", &at)
        .output()
        .unwrap();
    let _ = std::process::Command::new("umount").arg(&at).status();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let run = &read_json(&out)["runs"][0];
    let message = run["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(at.to_str().unwrap()) && message.contains("full"),
        "{message}"
    );
}

/// Ctrl-C ends a run on a stalled server reached through a client library
/// (PostgreSQL's sessions) as soon as on one of bakeoff's own codecs: the
/// requests still out get a short grace, not the request timeout (issue
/// 33, class 1).
#[test]
fn ctrl_c_ends_a_session_run_on_a_stalled_server_within_2s() {
    if !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql") {
        return;
    }
    let _alone = alone();
    let dir = tmp();
    let out = dir.path().join("stalled-pg.json");
    let mut child = bakeoff_spawn(&[
        "run",
        "-t",
        "postgres",
        "--request",
        "connect",
        "--records",
        "1000",
        "--clients",
        "8",
        "--duration",
        "60s",
        "--warmup",
        "0",
        "--timeout",
        "30s",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let (postmaster, port) = first_child(child.id(), |pid, args| {
        args.first()?
            .ends_with("postgres")
            .then(|| (pid, port_of(args)))
    });
    // Stalled once the measured phase's connections come and go (a
    // session a request; the load keeps at most 8 open): a count of
    // transactions was not enough, the load's 1,000 records alone
    // reached it.
    wait_for_postgres_stat(port, "sessions", 100);
    // Every process of the server this test's bakeoff started: the
    // postmaster and its backends.
    let mut stopped = vec![postmaster];
    stopped.extend(
        children_with_cmdline(postmaster)
            .into_iter()
            .map(|(pid, _)| pid),
    );
    for pid in &stopped {
        // SAFETY: stopping the server the bakeoff this test started started.
        unsafe { libc::kill(*pid as i32, libc::SIGSTOP) };
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    // SAFETY: interrupting the bakeoff this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let asked = std::time::Instant::now();
    let status = wait_within(&mut child, std::time::Duration::from_secs(60));
    let since_asked = asked.elapsed();
    for pid in &stopped {
        // SAFETY: as above.
        unsafe { libc::kill(*pid as i32, libc::SIGCONT) };
    }
    let status = status.expect("bakeoff hung on a stalled server");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        since_asked < std::time::Duration::from_secs(2),
        "Ctrl-C took {since_asked:?}: {stderr}"
    );
    eprintln!("ctrl-c on a stalled postgres: {since_asked:?}");
}

/// A result folder that becomes read-only during the run loses nothing
/// (issue 33, class 5): the result goes to the temporary folder instead,
/// the table is printed, the message says where the file is, and the exit
/// is 1, not a lost run with no table.
#[test]
fn a_result_folder_made_read_only_mid_run_loses_nothing() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let dir = tmp();
    let folder = dir.path().join("results");
    std::fs::create_dir(&folder).unwrap();
    let bind = |args: &[&str]| {
        std::process::Command::new("mount")
            .args(args)
            .arg(&folder)
            .arg(&folder)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !bind(&["--bind"]) {
        return;
    }
    let out = folder.join("r.json");
    let child = bakeoff_spawn(&[
        "run",
        "-t",
        "redis",
        "--records",
        "1000",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Read-only once the run measures (after its claim on the folder),
    // with most of its 2 s still to go.
    let (_, addr) = managed_redis(child.id());
    wait_for_redis_calls(addr, None, "get", 1);
    let made_read_only = std::process::Command::new("mount")
        .args(["-o", "remount,ro,bind"])
        .arg(&folder)
        .status()
        .is_ok_and(|s| s.success());
    let o = child.wait_with_output().unwrap();
    let _ = std::process::Command::new("umount").arg(&folder).status();
    assert!(made_read_only);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("throughput"), "no table: {stdout}");
    let saved = stderr
        .split("the result is in ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("where is the result? {stderr}"));
    let r = read_json(std::path::Path::new(saved.trim_end_matches(';')));
    assert_eq!(r["runs"].as_array().unwrap().len(), 1);
    let _ = std::fs::remove_file(saved.trim_end_matches(';'));
}

/// The surface of trace replay, capture, requirements and provocations
/// (issue 52): every path to a rate, a moment or a size keeps its flag's
/// limits, and a flag that cannot apply, or that another would override,
/// is refused before anything starts.
#[test]
fn the_newest_surface_keeps_the_old_limits_and_drops_no_flag() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"t\": 0, \"op\": \"set\", \"key\": \"a\", \"size\": 100}\n{\"t\": 1, \"op\": \"get\", \"key\": \"a\"}\n",
    )
    .unwrap();
    let trace = trace.to_str().unwrap();
    fn dry<'a>(args: &[&'a str]) -> Vec<&'a str> {
        [args, &["--dry-run"]].concat()
    }
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // Class 4: the limits of --rate, a latency bound and --fault.
        (
            dry(&["run", "-t", "redis", "--require", "p99<=1ms@2000m/s"]),
            vec!["--require", "a request a nanosecond"],
        ),
        (
            dry(&["run", "-t", "redis", "--require", "memory<=0@10M"]),
            vec!["--require", "memory of 0 bytes bounds nothing"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--provoke",
                "bgsave@30s",
                "--duration",
                "2s",
                "--warmup",
                "1s",
            ]),
            vec!["--provoke", "past the end of the run"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--provoke",
                "bgsave@1s",
                "--ops",
                "1000",
            ]),
            vec!["--provoke", "give --duration"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--provoke",
                "bgsave@1s",
                "--find-peak",
            ]),
            vec!["--provoke", "--find-peak"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--provoke",
                "bgsave@1s",
                "--duration",
                "2s",
                "--warmup",
                "0s",
                "--topology",
                "shards:2",
            ]),
            vec![
                "--provoke bgsave@1s with --topology shards:2",
                "single server",
            ],
        ),
        // Class 5: flags that cannot apply, or that another overrides.
        (
            dry(&["run", "-t", "redis", "--replay", trace, "--rate", "100"]),
            vec!["--rate", "sets its own rate"],
        ),
        (
            dry(&["run", "-t", "redis", "--replay", trace, "--mix", "1:1"]),
            vec!["--mix", "sets its own operations"],
        ),
        (
            dry(&["run", "-t", "redis", "--replay", trace, "--duration", "5s"]),
            vec!["--duration", "sets its own length"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--replay",
                trace,
                "--value-size",
                "100",
            ]),
            vec!["--value-size", "sets its own value sizes"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--replay",
                trace,
                "--require",
                "p99<=5ms@1k/s",
            ]),
            vec!["--require", "its trace's own rate"],
        ),
        (
            dry(&["run", "-t", "redis", "--replay-speed", "10"]),
            vec!["--replay-speed", "give --replay FILE"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--set",
                "redis.persistence=none",
                "--require",
                "durable=power-cut",
            ]),
            vec!["redis", "none of its settings (with those given)"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--no-server-signals",
                "--sweep-server-signals",
                "on,off",
            ]),
            vec!["--sweep-server-signals", "--no-server-signals is given too"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis://127.0.0.1:1?password_env=A&password_env=B",
            ]),
            vec!["password_env", "given twice"],
        ),
        (
            dry(&["run", "-t", "memcached://:pw@127.0.0.1:1"]),
            vec!["memcached takes no password or user"],
        ),
        (
            vec!["capture", "redis://127.0.0.1:1", "-o", "t.csv"],
            vec!["-o t.csv", "name it .jsonl"],
        ),
        // Class 8: a link no request can cross in time, or over which
        // the load alone takes minutes.
        (
            dry(&["run", "-t", "redis", "--link", "rtt=4s", "--timeout", "2s"]),
            vec!["--link", "every request would fail", "raise --timeout"],
        ),
        (
            dry(&[
                "run",
                "-t",
                "redis",
                "--link",
                "rtt=1s",
                "--timeout",
                "5s",
                "--duration",
                "2s",
                "--records",
                "100000",
            ]),
            vec!["--link", "loading 100000 records", "--batch"],
        ),
        // Class 8: the engine host's bad input is bad input.
        (
            vec![
                "engine-host",
                "nosuch",
                "--port",
                "1",
                "--dir",
                "/nonexistent",
            ],
            vec!["no embedded engine named `nosuch`"],
        ),
        (
            vec![
                "engine-host",
                "redis",
                "--port",
                "1",
                "--dir",
                "/nonexistent",
            ],
            vec!["is a server, not an embedded engine"],
        ),
        (
            vec![
                "engine-host",
                "lmdb",
                "--port",
                "1",
                "--dir",
                "/nonexistent",
                "--settings",
                "[not toml",
            ],
            vec!["engine-host --settings"],
        ),
        // Class 8: a device that refuses every write is found up front.
        (
            vec!["run", "-t", "redis", "--duration", "1s", "-o", "/dev/full"],
            vec!["/dev/full", "No space left"],
        ),
    ];
    for (args, needles) in cases {
        expect_usage_error(&args, &needles);
    }
}

/// No password reaches any output from any command: each error path
/// that holds a URL is tried with a planted password, and its whole
/// output searched for it.
#[test]
fn no_error_path_prints_a_password() {
    let _beside = crate::common::beside_others();
    let planted = "PLANTED-pw-52";
    let (_closed, port) = closed_port();
    let urls = [
        format!("redis://:{planted}@127.0.0.1:{port}"),
        format!("redis://u:{planted}@127.0.0.1:notaport"),
        format!("memcached://:{planted}@127.0.0.1:{port}"),
        format!("postgres://u:{planted}@127.0.0.1:{port}/db?nosuch=1"),
        format!("redis://127.0.0.1:{port}?password={planted}&password_env=X"),
        format!("nosuch://:{planted}@127.0.0.1:{port}"),
    ];
    for url in &urls {
        for args in [
            vec![
                "capture",
                url.as_str(),
                "--duration",
                "1s",
                "-o",
                "/nonexistent/t.jsonl",
            ],
            vec!["capture", url.as_str(), "--duration", "1s"],
            vec!["run", "-t", url.as_str(), "--duration", "1s", "--dry-run"],
            vec![
                "run",
                "-t",
                url.as_str(),
                "--duration",
                "1s",
                "--records",
                "10",
            ],
        ] {
            let o = bakeoff(&args);
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            // A dry run of a good URL succeeds; the rest cannot.
            if !args.contains(&"--dry-run") {
                assert_ne!(o.status.code(), Some(0), "{args:?}: {all}");
            }
            assert!(
                !all.contains(planted),
                "{args:?} printed the password: {all}"
            );
            assert!(!all.contains("panicked"), "{args:?}: {all}");
        }
    }
}

/// A Redis holding an earlier run's plain values, where a run of several
/// fields keeps hashes (and the other way round), is named before the
/// load with the way out, rather than failing every write with WRONGTYPE
/// and measuring on.
#[test]
fn a_server_holding_records_of_another_form_is_named_before_the_load() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let dir = tmp();
    let url = format!("redis://127.0.0.1:{}", server.addr.port());
    let fields_out = dir.path().join("fields.json");
    let common = ["--records", "20", "--ops", "100", "--warmup", "0s"];
    let plain = [&["run", "-t", url.as_str()][..], &common].concat();
    run_ok(&plain);
    let fields = [
        &[
            "run",
            "-t",
            url.as_str(),
            "--fields",
            "4",
            "--value-size",
            "400",
            "-o",
            fields_out.to_str().unwrap(),
        ][..],
        &common,
    ]
    .concat();
    expect_usage_error(
        &fields,
        &[
            &format!("the server at 127.0.0.1:{}", server.addr.port()),
            "already holds keys of another type",
            "an earlier run's plain values",
            "flush it",
        ],
    );
    assert!(!fields_out.exists());
}

/// A managed server stopped (SIGSTOP) in the measured phase: the run is
/// named as stalled and ends within its request timeout of its end, the
/// measured part on disk. Each look and count asked of it afterwards
/// waited out a timeout of its own: memcached's run ended 20 s after
/// its end.
#[test]
fn a_managed_server_stopped_mid_run_is_named_stalled_at_its_end() {
    if !require("memcached", "memcached") {
        return;
    }
    let _alone = alone();
    let dir = tmp();
    let out = dir.path().join("stalled.json");
    let mut child = bakeoff_spawn(&[
        "run",
        "-t",
        "memcached",
        "--records",
        "1000",
        "--duration",
        "4s",
        "--warmup",
        "0",
        "--timeout",
        "2s",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    let (pid, port) = first_child(child.id(), |pid, cmd| {
        let at = cmd.iter().position(|a| a == "-p")?;
        (cmd[0].ends_with("memcached")).then(|| (pid, cmd[at + 1].parse::<u16>().ok()))
    });
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", port.unwrap()).parse().unwrap();
    // The measured phase has begun once the server counts gets (the load
    // only sets).
    // The server may not listen yet: not listening is no gets.
    let gets = || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .ok()?;
        s.write_all(b"stats\r\n").ok()?;
        let mut text = Vec::new();
        let mut chunk = [0u8; 4096];
        while !text.ends_with(b"END\r\n") {
            let n = s.read(&mut chunk).ok().filter(|&n| n > 0)?;
            text.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8_lossy(&text)
            .lines()
            .find_map(|l| l.strip_prefix("STAT cmd_get "))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let measuring = std::time::Instant::now();
    while gets().unwrap_or(0) == 0 {
        assert!(
            measuring.elapsed() < std::time::Duration::from_secs(60),
            "no gets"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let run_ends = std::time::Instant::now() + std::time::Duration::from_secs(4);
    // Stopped once the measured phase is well under way: a thousand gets
    // past the first seen, not a fixed wait.
    let first = gets().unwrap_or(0);
    while gets().unwrap_or(0) < first + 1000 {
        assert!(
            measuring.elapsed() < std::time::Duration::from_secs(60),
            "no more gets"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: stopping the server the bakeoff this test started started.
    unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
    let status = wait_within(&mut child, std::time::Duration::from_secs(120));
    let ended = std::time::Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    let status = status.expect("bakeoff hung on a stopped server");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let late = ended.saturating_duration_since(run_ends);
    // Its request timeout (2 s), and a second for the server's stop.
    assert!(
        late < std::time::Duration::from_secs(3),
        "ended {late:?} after the run's end: {stderr}"
    );
    let r = read_json(&out);
    let message = r["runs"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the server stalled") && message.contains("is stopped"),
        "{message}"
    );
    assert!(r["runs"][0]["measure"]["completed"].as_u64().unwrap_or(0) > 0);
}

/// `capture` against a server that sends garbage, never answers, or
/// closes at once: exit 2 naming the server as unusable, as `run` does,
/// never "0 operations written".
#[test]
fn capture_names_a_server_that_does_not_answer_monitor() {
    let _beside = crate::common::beside_others();
    let closing = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                drop(conn);
            }
        });
        port
    };
    let dir = tmp();
    // A close after MONITOR arrived is a reset; before, an end of file.
    for (what, port, says) in [
        ("garbage", hostile_server(true), &["answered `"][..]),
        (
            "silent",
            hostile_server(false),
            &["did not answer within 2 s"],
        ),
        ("closing", closing, &["closed the connection", "reset"]),
    ] {
        let out = dir.path().join(format!("{what}.jsonl"));
        let url = format!("redis://127.0.0.1:{port}");
        let mut child = std::process::Command::new(bin())
            .args([
                "capture",
                &url,
                "--duration",
                "30s",
                "-o",
                out.to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_within(&mut child, std::time::Duration::from_secs(25))
            .unwrap_or_else(|| panic!("{what}: capture waited out its duration"));
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("the server at 127.0.0.1:{port}"))
                && says.iter().any(|s| stderr.contains(s)),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains("operations written"), "{what}: {stderr}");
    }
}
