//! YCSB's operations on real targets (issue 34): scans checked record by
//! record on an engine, inserts read only once acknowledged, and a
//! read-modify-write's two requests counted as the server counts them.

use crate::common::*;

/// The measured phase's figures of `kind` in run `run`.
fn kind<'r>(run: &'r serde_json::Value, kind: &str) -> &'r serde_json::Value {
    &run["measure"]["ops"][kind]
}

fn count(v: &serde_json::Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or(0)
}

/// YCSB E on LMDB: every scan's records are checked (in key order from
/// the start key, as written, as many as are stored up to the length),
/// their number counted; a scan reads 50.5 records on average (lengths
/// uniform in 1..=100).
#[test]
fn scans_are_checked_record_by_record_and_counted() {
    let _g = beside_others();
    let r = run_ok(&["run", "ycsb-e", "--scale", "quick", "-t", "lmdb"]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["errors"], serde_json::json!({}), "errors");
    let scan = kind(run, "scan");
    let (scans, rows) = (count(scan, "completed"), count(scan, "rows"));
    assert!(scans > 1000, "{scan}");
    let per_scan = rows as f64 / scans as f64;
    assert!(
        (40.0..61.0).contains(&per_scan),
        "{per_scan} records per scan"
    );
    assert!(count(kind(run, "insert"), "completed") > 0, "{run}");
}

/// On Redis through bakeoff's own network loop, on one server and on two
/// shards: reads of the newest records (`latest`) never ask for an insert
/// still on the wire (no miss), and the servers' GET and SET counts equal
/// bakeoff's, in all and node by node — a read-modify-write is a GET and
/// then a SET.
#[test]
fn inserts_are_read_once_acknowledged_and_read_modify_writes_are_two_requests() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    for topology in ["single", "shards:2"] {
        let r = run_ok(&[
            "run",
            "-t",
            "redis",
            "--topology",
            topology,
            "--mix",
            "get=40,insert=10,rmw=50",
            "--key-distribution",
            "latest",
            "--records",
            "2000",
            "--clients",
            "8",
            "--pipeline",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "0",
        ]);
        let run = &r["runs"][0];
        assert_eq!(run["status"], "ok", "{topology}: {}", run["message"]);
        assert_eq!(
            run["measure"]["errors"],
            serde_json::json!({}),
            "{topology}"
        );
        assert_eq!(count(kind(run, "get"), "misses"), 0, "{topology}");
        assert_eq!(
            count(kind(run, "read-modify-write"), "misses"),
            0,
            "{topology}"
        );
        let (inserts, rmws) = (
            count(kind(run, "insert"), "completed"),
            count(kind(run, "read-modify-write"), "completed"),
        );
        assert!(inserts > 0 && rmws > 0, "{topology}");
        let checks = run["checks"]["counters"].as_array().unwrap();
        let sums: Vec<&serde_json::Value> = checks
            .iter()
            .filter(|c| !c["what"].as_str().unwrap().starts_with("node"))
            .collect();
        assert!(sums.len() >= 2, "{topology}: {checks:?}");
        if topology != "single" {
            assert!(
                checks.len() >= sums.len() + 4,
                "{topology}: per node too: {checks:?}"
            );
        }
        for c in checks {
            assert_eq!(c["bakeoff"], c["target"], "{topology}: {c}");
        }
        // The load's 2000 SETs, one per insert and one per read-modify-write.
        let sets = sums
            .iter()
            .find(|c| c["what"].as_str().unwrap().starts_with("SET calls"))
            .unwrap()["target"]
            .as_u64()
            .unwrap();
        assert_eq!(sets, 2000 + inserts + rmws, "{topology}");
    }
}

/// `--key-naming ycsb` names records as YCSB does (`user` and the decimal
/// of YCSB's hash of the id: record 0 is `user6284781860667377211`), on
/// the server itself; scans through the Redis index then come back in the
/// hashes' order, each record checked against the key it came with, and
/// the server's counts equal bakeoff's.
#[test]
fn ycsb_key_naming_names_records_as_ycsb_does() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    let server = redis(None);
    let url = format!("redis://{}", server.addr);
    let r = run_ok(&[
        "run",
        "-t",
        &url,
        "--key-naming",
        "ycsb",
        "--mix",
        "get=50,scan=40,insert=10",
        "--records",
        "500",
        "--clients",
        "4",
        "--duration",
        "0.5s",
        "--warmup",
        "0",
    ]);
    let run = &r["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["errors"], serde_json::json!({}), "errors");
    assert_eq!(count(kind(run, "get"), "misses"), 0, "{run}");
    let scan = kind(run, "scan");
    assert!(count(scan, "rows") > count(scan, "completed"), "{scan}");
    for c in run["checks"]["counters"].as_array().unwrap() {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
    let exists = |key: &str| {
        let req = format!("*2\r\n$6\r\nEXISTS\r\n${}\r\n{key}\r\n", key.len());
        call(server.addr, req.as_bytes(), |b| b.ends_with(b"\r\n"))
    };
    assert_eq!(exists("user6284781860667377211"), ":1\r\n", "record 0");
    assert_eq!(exists("bk:000000000000"), ":0\r\n", "bakeoff's name");
}

/// Runs `--fields FIELDS --value-size 1000` on the target at `url` with
/// `more`, into `out`; exit 0, or 1 when operations failed. Returns the
/// result file.
fn run_fields(url: &str, out: &std::path::Path, fields: &str, more: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "-q",
        "-o",
        out.to_str().unwrap(),
        "-t",
        url,
        "--fields",
        fields,
        "--value-size",
        "1000",
        "--records",
        "500",
        "--clients",
        "2",
        "--duration",
        "0.3s",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(more);
    let code = bakeoff(&args).status.code();
    assert!(matches!(code, Some(0 | 1)), "exit {code:?}");
    read_json(out)
}

/// How many of `records` have fields written at different versions (one
/// field at a time, not the whole record), `fields_of` giving a record's
/// ten 100-byte fields laid end to end.
fn records_of_mixed_versions(records: u64, fields_of: impl Fn(u64) -> Vec<u8>) -> usize {
    (0..records)
        .filter(|&id| {
            let versions: std::collections::BTreeSet<u32> = fields_of(id)
                .chunks(100)
                .map(|f| u32::from_le_bytes(f[12..16].try_into().unwrap()) & 0xFF_FFFF)
                .collect();
            versions.len() > 1
        })
        .count()
}

/// Reads, updates and read-modify-writes of records of ten fields on
/// `url`: no error, the server's counts equal bakeoff's, the record of
/// what was sent says `said` of an update, and some of 50 records have
/// fields written at different versions, `fields_of` giving a record's
/// fields (one field at a time, not the whole record).
fn one_field_at_a_time(
    url: &str,
    out: &std::path::Path,
    said: &str,
    fields_of: impl Fn(u64) -> Vec<u8>,
) {
    let result = run_fields(url, out, "10", &["--mix", "get=50,update=25,rmw=25"]);
    let run = &result["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["errors"], serde_json::json!({}));
    assert!(count(kind(run, "read-modify-write"), "completed") > 0);
    assert_counts_equal(run);
    let update = result["targets"][0]["requests"]["update"]
        .as_str()
        .unwrap_or_default();
    assert!(update.contains(said), "{update}");
    let mixed = records_of_mixed_versions(50, fields_of);
    assert!(
        mixed > 0,
        "no record of 50 has fields of different versions"
    );
}

/// `--fields 10` on Redis: each record a hash of ten 100-byte fields,
/// read whole (`HMGET`), each field verified on its own, an update
/// writing one (`HSET` of one field); the server's HMGETs and HSETs equal
/// bakeoff's. The same records read as twenty fields fail verification,
/// read by read (a field's header says its length and place).
#[test]
fn redis_keeps_records_of_fields_as_hashes() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    let server = redis(None);
    let url = format!("redis://{}", server.addr);
    let dir = tmp();
    let out = dir.path().join("result.json");
    one_field_at_a_time(&url, &out, "HSET <key> field<j>", |id| {
        (0..10)
            .flat_map(|f| {
                let args = [
                    b"HGET".to_vec(),
                    format!("bk:{id:012}").into_bytes(),
                    format!("field{f}").into_bytes(),
                ];
                redis_bulk(server.addr, &args)
            })
            .collect()
    });
    let misread = &run_fields(&url, &out, "20", &["--no-load", "--mix", "get=1"])["runs"][0];
    let gets = count(kind(misread, "get"), "sent");
    let wrong = misread["measure"]["errors"]["verification"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        gets > 0 && wrong == gets,
        "{gets} gets, {wrong} failed verification: {misread}"
    );
}

/// `--fields 10` on memcached, which keeps a record as one value: an
/// update reads the record, replaces one field and writes it back (a
/// read-merge-write, said in the record of what was sent); the server's
/// gets hold the updates' reads and its sets their writes.
#[test]
fn a_store_of_whole_values_updates_one_field_by_read_merge_write() {
    if !require("memcached", "memcached") {
        return;
    }
    let _g = beside_others();
    let server = memcached();
    let url = format!("memcached://{}", server.addr);
    let dir = tmp();
    let out = dir.path().join("result.json");
    one_field_at_a_time(&url, &out, "read-merge-write", |id| {
        memcached_value(server.addr, &format!("bk:{id:012}"))
    });
}

/// Sends `req` to `addr` and returns the one value of the reply: the
/// bytes after its first line, as many as `len_of` reads there.
fn one_value(addr: std::net::SocketAddr, req: &[u8], len_of: impl Fn(&str) -> usize) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(req).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else {
            continue;
        };
        let len = len_of(&String::from_utf8_lossy(&buf[..eol]));
        if buf.len() >= eol + 2 + len + 2 {
            return buf[eol + 2..eol + 2 + len].to_vec();
        }
    }
}

/// The bulk string Redis at `addr` answers `args` with (binary-safe).
fn redis_bulk(addr: std::net::SocketAddr, args: &[Vec<u8>]) -> Vec<u8> {
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        req.extend_from_slice(a);
        req.extend_from_slice(b"\r\n");
    }
    one_value(addr, &req, |head| head[1..].parse().unwrap())
}

/// The value memcached at `addr` holds under `key` (text `get`).
fn memcached_value(addr: std::net::SocketAddr, key: &str) -> Vec<u8> {
    let req = format!("get {key}\r\n");
    one_value(addr, req.as_bytes(), |head| {
        head.rsplit(' ').next().unwrap().parse().unwrap()
    })
}

/// `--fields 10` on SQLite: table usertable of a column per field, read
/// whole, an update writing one column (`UPDATE … SET field<j>`), scans
/// putting each row's columns in order; the database, kept in a directory
/// of the test's, holds rows whose fields were written at different
/// versions (read with Python's sqlite3).
#[test]
fn sqlite_keeps_records_of_fields_as_columns() {
    let _g = beside_others();
    let dir = tmp();
    let db = dir.path().join("db");
    let target = format!("sqlite[dir={}]", db.display());
    let out = dir.path().join("result.json");
    let result = run_fields(
        &target,
        &out,
        "10",
        &["--mix", "get=40,update=30,rmw=20,scan=10"],
    );
    let run = &result["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["errors"], serde_json::json!({}));
    assert!(count(kind(run, "scan"), "rows") > 0, "{run}");
    let update = result["targets"][0]["requests"]["update"]
        .as_str()
        .unwrap_or_default();
    assert!(
        update.starts_with("UPDATE usertable SET field<j>"),
        "{update}"
    );
    let script = "import sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1])\n\
        cols = ', '.join(f'field{i}' for i in range(10))\n\
        n = 0\n\
        for row in c.execute(f'SELECT {cols} FROM usertable LIMIT 50'):\n\
        \x20   n += len({int.from_bytes(f[12:16], 'little') & 0xFFFFFF for f in row}) > 1\n\
        print(n)\n";
    let o = std::process::Command::new("python3")
        .args(["-c", script, db.join("bakeoff.sqlite").to_str().unwrap()])
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    let mixed: u32 = text.trim().parse().unwrap_or_else(|_| {
        panic!(
            "python3 said {text}, {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    assert!(mixed > 0, "no row of 50 has fields of different versions");
}

/// `--fields 10` on MongoDB (or FerretDB): a document of fields `field0`
/// …, read whole, an update `$set` of one field; the server's finds and
/// writes equal bakeoff's (an update one write, no read before it).
#[test]
fn mongodb_keeps_records_of_fields_as_document_fields() {
    if !mongodb_installed() {
        return;
    }
    let _g = beside_others();
    let dir = tmp();
    let out = dir.path().join("result.json");
    let result = run_fields("mongodb", &out, "10", &["--mix", "get=50,update=25,rmw=25"]);
    let run = &result["runs"][0];
    assert_eq!(run["status"], "ok", "{}", run["message"]);
    assert_eq!(run["measure"]["errors"], serde_json::json!({}));
    assert!(count(kind(run, "update"), "completed") > 0, "{run}");
    assert_counts_equal(run);
    let update = result["targets"][0]["requests"]["update"]
        .as_str()
        .unwrap_or_default();
    assert!(update.contains("$set: {field<j>"), "{update}");
}

/// The run's counter checks: there are some, and each of the server's
/// counts equals bakeoff's.
fn assert_counts_equal(run: &serde_json::Value) {
    let checks = run["checks"]["counters"].as_array().unwrap();
    assert!(!checks.is_empty(), "{run}");
    for c in checks {
        assert_eq!(c["bakeoff"], c["target"], "{c}");
    }
}

/// Each of the first 50 records (by key) as `lines` gives them: one line
/// per row, the key then each field in hexadecimal, split by `sep`; the
/// fields laid end to end.
fn rows_of_hex_fields(lines: &str, sep: char) -> std::collections::HashMap<String, Vec<u8>> {
    let hex = |h: &str| {
        (0..h.len() / 2)
            .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
            .collect::<Vec<u8>>()
    };
    lines
        .lines()
        .filter_map(|line| {
            let mut cols = line.split(sep);
            let key = cols.next()?.to_string();
            Some((key, cols.flat_map(hex).collect()))
        })
        .collect()
}

/// What `cmd` prints, which must succeed.
fn output_of(cmd: &mut std::process::Command) -> String {
    let o = cmd.output().expect("the client runs");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every field as SQL selects it, `each` writing field `f`'s column.
fn each_field(each: impl Fn(usize) -> String) -> String {
    (0..10).map(each).collect::<Vec<_>>().join(", ")
}

/// `--fields 10` on PostgreSQL: table usertable of a column per field,
/// read whole, an update the one-column `UPDATE` of its field (no read
/// before it); pg_stat_statements' calls equal bakeoff's requests; rows
/// read back with psql hold fields written at different versions.
#[test]
fn postgres_keeps_records_of_fields_as_columns() {
    if !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql") {
        return;
    }
    let _g = beside_others();
    let server = bakeoff_drivers::postgres::start(None, None).unwrap();
    let port = server.addr.port().to_string();
    let url = format!("postgres://bakeoff@127.0.0.1:{port}");
    let dir = tmp();
    let out = dir.path().join("result.json");
    let sql = format!(
        "SELECT k, {} FROM usertable ORDER BY k LIMIT 50",
        each_field(|f| format!("encode(field{f}, 'hex')"))
    );
    let rows = std::cell::OnceCell::new();
    one_field_at_a_time(
        &url,
        &out,
        "UPDATE usertable SET field<j> = $2 WHERE k = $1",
        |id| {
            let rows = rows.get_or_init(|| {
                let text = output_of(
                    std::process::Command::new("psql")
                        .args(["-h", "127.0.0.1", "-p", &port, "-U", "bakeoff"])
                        .args(["-d", "postgres", "-At", "-F", "|", "-c", &sql]),
                );
                rows_of_hex_fields(&text, '|')
            });
            rows[&format!("bk:{id:012}")].clone()
        },
    );
}

/// `--fields 10` on MariaDB: the same, its `Com_insert` and `Com_update`
/// together equal to bakeoff's writes, each field's `UPDATE` a statement
/// of its own whose id follows the one before.
#[test]
fn mariadb_keeps_records_of_fields_as_columns() {
    if !require_in("mariadbd", &["/usr/sbin"], "mariadb-server") {
        return;
    }
    let _g = beside_others();
    let (server, _) = bakeoff_drivers::mariadb::start_with_kv(None).unwrap();
    let url = format!("mariadb://root@{}", server.addr);
    let dir = tmp();
    let out = dir.path().join("result.json");
    let sql = format!(
        "SELECT k, {} FROM bakeoff.usertable ORDER BY k LIMIT 50",
        each_field(|f| format!("hex(field{f})"))
    );
    let socket = server.dir().join("mariadb.sock");
    let rows = std::cell::OnceCell::new();
    one_field_at_a_time(
        &url,
        &out,
        "UPDATE usertable SET field<j> = ? WHERE k = ?",
        |id| {
            let rows = rows.get_or_init(|| {
                let text = output_of(
                    std::process::Command::new("mariadb")
                        .arg(format!("--socket={}", socket.display()))
                        .args(["-uroot", "-N", "-B", "-e", &sql]),
                );
                rows_of_hex_fields(&text, '\t')
            });
            rows[&format!("bk:{id:012}")].clone()
        },
    );
}
