//! Values changed behind bakeoff's back are verification failures, never
//! successes.

mod common;
use common::*;

fn load(url: &str, dir: &std::path::Path) {
    let out = dir.join("load.json");
    let o = bakeoff(&[
        "run",
        "-t",
        url,
        "--records",
        "200",
        "--ops",
        "1",
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
}

fn read_all(url: &str, dir: &std::path::Path) -> (i32, serde_json::Value) {
    let out = dir.join("read.json");
    let o = bakeoff(&[
        "run",
        "-t",
        url,
        "--records",
        "200",
        "--no-load",
        "--mix",
        "100:0",
        "--ops",
        "2000",
        "--warmup",
        "0",
        "--clients",
        "4",
        "--quiet",
        "-o",
        out.to_str().unwrap(),
    ]);
    (o.status.code().unwrap(), read_json(&out))
}

fn key(i: u64) -> String {
    format!("bk:{i:012}")
}

#[test]
fn tampered_redis_values_are_counted_as_verification_failures() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let url = format!("redis://{}", server.addr);
    let dir = tmp();
    load(&url, dir.path());
    // Untouched, every read verifies.
    let (code, r) = read_all(&url, dir.path());
    assert_eq!(code, 0);
    assert_eq!(r["runs"][0]["measure"]["completed"], 2000);
    // Keys 0..100: garbage; 100: the value of key 101 (right format, wrong key).
    let mut req = Vec::new();
    for i in 0..100 {
        let k = key(i);
        req.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n$12\r\nnot-bakeoff!\r\n",
                k.len()
            )
            .as_bytes(),
        );
    }
    req.extend_from_slice(
        format!(
            "*3\r\n$4\r\nCOPY\r\n$15\r\n{}\r\n$15\r\n{}\r\n",
            key(101),
            key(100)
        )
        .as_bytes(),
    );
    req.extend_from_slice(b"*2\r\n$3\r\nDEL\r\n$15\r\n");
    req.extend_from_slice(format!("{}\r\n", key(100)).as_bytes());
    req.extend_from_slice(
        format!(
            "*3\r\n$4\r\nCOPY\r\n$15\r\n{}\r\n$15\r\n{}\r\n",
            key(101),
            key(100)
        )
        .as_bytes(),
    );
    let replies = call(server.addr, &req, |b| {
        b.iter().filter(|&&c| c == b'\n').count() >= 103
    });
    assert!(!replies.contains('-'), "{replies}");
    let (code, r) = read_all(&url, dir.path());
    assert_eq!(code, 1, "errors make the exit code non-zero");
    let m = &r["runs"][0]["measure"];
    let failures = m["errors"]["verification"].as_u64().unwrap();
    let ok = m["completed"].as_u64().unwrap();
    assert_eq!(failures + ok, 2000);
    // 101 of 200 keys are wrong: about half the reads fail.
    assert!(
        failures > 800 && failures < 1250,
        "{failures} of 2000 reads failed verification"
    );
}

#[test]
fn tampered_memcached_values_are_counted_as_verification_failures() {
    if !require("memcached", "memcached") {
        return;
    }
    let server = memcached();
    for scheme in ["memcached", "memcached-binary"] {
        let url = format!("{scheme}://{}", server.addr);
        let dir = tmp();
        load(&url, dir.path());
        let mut req = Vec::new();
        for i in 0..200 {
            req.extend_from_slice(format!("set {} 0 0 30\r\n{:030}\r\n", key(i), i).as_bytes());
        }
        let replies = call(server.addr, &req, |b| {
            b.windows(8).filter(|w| w == b"STORED\r\n").count() >= 200
        });
        assert_eq!(replies.matches("STORED").count(), 200);
        let (code, r) = read_all(&url, dir.path());
        assert_eq!(code, 1);
        let m = &r["runs"][0]["measure"];
        assert_eq!(
            m["errors"]["verification"], 2000,
            "{scheme}: every read sees a value bakeoff did not write"
        );
        assert_eq!(m["completed"], 0, "{scheme}");
    }
}
