//! HandlerSocket (MariaDB's plugin) against a real mariadbd: the managed
//! target loads, reads back binary values through the protocol's escaping,
//! counts equal the server's own handler counters, the secret stays out of
//! every output; by URL, a wrong secret and a server that speaks something
//! else are clear errors.

use crate::common::*;

const SBIN: &[&str] = &["/usr/sbin"];

fn have_mariadb() -> bool {
    require_in("mariadbd", SBIN, "mariadb-server")
}

#[test]
fn managed_handlersocket_loads_verifies_counts_and_keeps_its_secret() {
    let _beside = crate::common::beside_others();
    if !have_mariadb() {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("hs.json");
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            "handlersocket",
            "--records",
            "2000",
            "--mix",
            "70:10:10:10",
            "--clients",
            "4",
            "--pipeline",
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
    assert_eq!(run["checks"]["records_after_load"], 2000);
    // Every value read passed the check against what was written: binary
    // headers hold bytes the protocol escapes on the wire.
    let ops = &run["measure"]["ops"];
    let gets = ops["get"]["completed"].as_u64().unwrap();
    let get_misses = ops["get"]["misses"].as_u64().unwrap_or(0);
    assert!(gets - get_misses > 200, "{gets} reads, {get_misses} misses");
    assert!(
        run["measure"]["errors"].as_object().unwrap().is_empty(),
        "{}",
        run["measure"]["errors"]
    );
    assert!(run["load"]["errors"].as_object().unwrap().is_empty());
    // Conservation: index lookups, row updates and row inserts equal
    // MariaDB's own Handler_read_key, Handler_update and Handler_write.
    let counters = run["checks"]["counters"].as_array().unwrap();
    assert_eq!(counters.len(), 3, "{counters:?}");
    for c in counters {
        assert!(c["bakeoff"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
    let ratio = run["checks"]["littles_law_ratio"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() < 0.08, "Little's law ratio {ratio}");
    // A set writes whether its key exists (an update) or not (the insert
    // that follows an update that found no row, after a delete). Before,
    // a set was a bare insert, declined for every loaded key.
    let sets = &ops["set"];
    let (set_misses, set_done) = (
        sets["misses"].as_u64().unwrap_or(0),
        sets["completed"].as_u64().unwrap(),
    );
    assert!(set_done > 100, "{sets}");
    assert_eq!(set_misses, 0, "{sets}");
    let warned = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("stored nothing"));
    assert!(!warned, "{}", r["warnings"]);
    // Pipelined on the byte loop like Redis.
    let backend = run["client"]["io_backend"].as_str().unwrap();
    assert!(
        backend.starts_with("io_uring") || backend.starts_with("epoll"),
        "{backend}"
    );
    let t = &r["targets"][0];
    assert!(
        t["version"].as_str().unwrap().contains("HandlerSocket"),
        "{t}"
    );
    let cmd = t["settings"]["command_line"].as_str().unwrap();
    assert!(
        cmd.contains("--handlersocket_plain_secret_wr=*** "),
        "{cmd}"
    );
    // The secret appears nowhere: not in the result, not on screen.
    let text = std::fs::read_to_string(&out).unwrap();
    for line in text.lines().filter(|l| l.contains("plain_secret")) {
        assert!(
            !line.contains("secret_wr=0") && !line.contains("secret_wr=a"),
            "{line}"
        );
    }
    assert!(!stderr.contains("plain_secret"), "{stderr}");
    // The server's folder is gone.
    let data = cmd
        .split("--datadir=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(!std::path::Path::new(data).exists(), "{data} left behind");
}

#[test]
fn handlersocket_by_url_needs_the_right_secret_and_never_shows_it() {
    let _beside = crate::common::beside_others();
    if !have_mariadb() {
        return;
    }
    let (server, addr) = bakeoff_drivers::handlersocket::start(None, "s3cretHS").unwrap();
    let dir = tmp();
    let out = dir.path().join("url.json");
    let wrong = format!("handlersocket://:nope@{addr}");
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            &wrong,
            "--records",
            "100",
            "--duration",
            "1s",
            "--quiet",
        ],
        2,
    );
    assert!(stderr.contains("refused the secret"), "{stderr}");
    assert!(!stderr.contains("nope"), "the secret was printed: {stderr}");

    let right = format!("handlersocket://:s3cretHS@{addr}");
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            &right,
            "--records",
            "500",
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
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        !text.contains("s3cretHS"),
        "the secret reached the result file"
    );
    assert!(!stderr.contains("s3cretHS"), "{stderr}");
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(r["targets"][0]["mode"], "external");
    assert!(run["measure"]["ops"]["get"]["completed"].as_u64().unwrap() > 50);
    assert!(run["measure"]["errors"].as_object().unwrap().is_empty());
    drop(server);
}

#[test]
fn a_server_that_does_not_speak_handlersocket_is_a_clear_error() {
    let _beside = crate::common::beside_others();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Answers every connection with an HTTP error, then closes it.
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(2) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            &format!("handlersocket://{addr}"),
            "--records",
            "10",
            "--duration",
            "1s",
            "--quiet",
        ],
        2,
    );
    assert!(stderr.contains("does not speak HandlerSocket"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one message: {stderr}");
    drop(server);
}
