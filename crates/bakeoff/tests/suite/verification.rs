//! Values changed behind bakeoff's back are verification failures, never
//! successes.

use crate::common::*;

fn load(url: &str, dir: &std::path::Path) {
    let out = dir.join("load.json");
    expect_exit(
        &[
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
        ],
        0,
    );
}

fn read_all(url: &str, dir: &std::path::Path) -> (i32, serde_json::Value) {
    read_with(url, dir, "100:0")
}

/// 2000 operations of `mix` on the 200 records, no load.
fn read_with(url: &str, dir: &std::path::Path, mix: &str) -> (i32, serde_json::Value) {
    let out = dir.join("read.json");
    let o = bakeoff(&[
        "run",
        "-t",
        url,
        "--records",
        "200",
        "--no-load",
        "--mix",
        mix,
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
    let _beside = crate::common::beside_others();
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
    // A read-modify-write's read is checked too: a wrong record fails the
    // operation, and no write follows it (the server's SETs are those of
    // the operations whose read verified).
    let sets = redis_calls(server.addr, "set");
    let (code, r) = read_with(&url, dir.path(), "rmw=1");
    assert_eq!(code, 1);
    let m = &r["runs"][0]["measure"];
    let failures = m["errors"]["verification"].as_u64().unwrap();
    let ok = m["ops"]["read-modify-write"]["completed"].as_u64().unwrap();
    assert_eq!(failures + ok, 2000);
    assert!(
        failures > 800 && failures < 1250,
        "{failures} of 2000 read-modify-writes failed verification"
    );
    assert_eq!(redis_calls(server.addr, "set") - sets, ok);
}

#[test]
fn tampered_memcached_values_are_counted_as_verification_failures() {
    let _beside = crate::common::beside_others();
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

/// What the server holds for `key` (memcached's text protocol), raw bytes.
fn memcached_get(addr: std::net::SocketAddr, key: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.write_all(format!("get {key}\r\n").as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"END\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "memcached closed the connection");
        got.extend_from_slice(&buf[..n]);
    }
    let line_end = got.windows(2).position(|w| w == b"\r\n").unwrap();
    let head = String::from_utf8_lossy(&got[..line_end]).to_string();
    let len: usize = head.rsplit(' ').next().unwrap().parse().unwrap();
    got[line_end + 2..line_end + 2 + len].to_vec()
}

/// 001-serialization-compression: values the client encodes and
/// compresses reach the server as such (bakeoff's header, then a zlib
/// stream of PHP's serialisation of 50 integers), every read of them is
/// decompressed and checked, a run that expects another encoding counts
/// them as verification failures, and the client's cost is measured.
#[test]
fn client_encoded_values_are_stored_encoded_and_verified() {
    let _beside = crate::common::beside_others();
    if !require("memcached", "memcached") {
        return;
    }
    let server = memcached();
    let url = format!("memcached://{}", server.addr);
    let dir = tmp();
    let run = |extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        let mut args = vec![
            "run",
            "-t",
            &url,
            "--records",
            "300",
            "--ops",
            "1500",
            "--warmup",
            "0",
            "--clients",
            "2",
            "--quiet",
            "-o",
        ];
        let out_s = out.to_str().unwrap().to_string();
        args.push(&out_s);
        args.extend_from_slice(extra);
        let o = bakeoff(&args);
        (o.status.code(), read_json(&out))
    };
    let (code, r) = run(
        &[
            "--encoding",
            "php-serialize",
            "--compression",
            "zlib",
            "--mix",
            "50:50",
        ],
        "zlib.json",
    );
    let m = &r["runs"][0]["measure"];
    assert_eq!(code, Some(0), "{}", r["runs"][0]["message"]);
    assert_eq!(m["completed"], 1500);
    assert!(
        m["errors"].as_object().unwrap().is_empty(),
        "{}",
        m["errors"]
    );
    let e = &r["runs"][0]["client"]["encoding"];
    assert_eq!(e["encoding"], "php-serialize");
    assert_eq!(e["compression"], "zlib");
    assert_eq!(e["encoded_bytes"], 697.0);
    let stored = e["stored_bytes"].as_f64().unwrap();
    assert!(stored > 100.0 && stored < 697.0, "{e}");
    assert!(e["encode_ns"].as_f64().unwrap() > 0.0 && e["decode_ns"].as_f64().unwrap() > 0.0);

    // What the server holds: the 24-byte header, then zlib (0x78) of the
    // serialised array.
    let value = memcached_get(server.addr, &key(7));
    assert_eq!(&value[..2], b"BK");
    assert_eq!(value[24], 0x78, "a zlib stream follows the header");
    let mut plain = Vec::new();
    bakeoff_core::encoding::decompress(
        bakeoff_core::encoding::Compression::Zlib,
        &value[24..],
        &mut plain,
    )
    .unwrap();
    let text = String::from_utf8(plain).unwrap();
    assert!(
        text.starts_with("a:50:{i:0;i:") && text.ends_with(";}"),
        "{text}"
    );
    assert_eq!(text.matches(";i:").count(), 50 + 49, "{text}");

    // Read as if they were joined strings: none verifies.
    let (code, r) = run(
        &["--encoding", "joined", "--no-load", "--mix", "100:0"],
        "joined.json",
    );
    assert_eq!(code, Some(1));
    let m = &r["runs"][0]["measure"];
    assert_eq!(m["errors"]["verification"], 1500, "{}", m["errors"]);
}
