//! Shards of one experiment on "many machines" (issue 18): three bakeoff
//! processes, each in a network namespace of its own (its own address and
//! network stack, as a host of its own would have), against one Redis,
//! started together with --start-at and merged with `bakeoff merge`.

use crate::common::*;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const SHARDS: u32 = 3;

/// The server's address, in this namespace: every shard reaches it by the
/// same URL, as pods reach a Service, so the shards run one plan.
const SERVER_IP: &str = "10.231.255.1";

/// Network namespaces this test made, each joined to this one by a veth
/// pair: shard `i` is 10.231.`i`.2, with its default route through
/// 10.231.`i`.1 to [`SERVER_IP`]. Dropping it deletes them (their end of
/// each pair goes with them, and the server's address with the first).
struct Hosts {
    /// Each namespace, and the name of its pair's end here.
    names: Vec<(String, String)>,
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        o.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

impl Hosts {
    fn make(count: u32) -> Hosts {
        let tag = format!("bk{}", std::process::id() % 100_000);
        let mut hosts = Hosts { names: Vec::new() };

        for i in 0..count {
            let ns = format!("{tag}s{i}");
            let (here, there) = (format!("{tag}h{i}"), format!("{tag}n{i}"));
            ip(&["netns", "add", &ns]);
            hosts.names.push((ns.clone(), here.clone()));
            ip(&["link", "add", &here, "type", "veth", "peer", "name", &there]);
            ip(&["link", "set", &there, "netns", &ns]);
            ip(&["addr", "add", &format!("10.231.{i}.1/24"), "dev", &here]);
            if i == 0 {
                // The server's address: local to this namespace, so the
                // others reach it through their own pairs too.
                ip(&["addr", "add", &format!("{SERVER_IP}/32"), "dev", &here]);
            }
            ip(&["link", "set", &here, "up"]);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("10.231.{i}.2/24"),
                "dev",
                &there,
            ]);
            ip(&["-n", &ns, "link", "set", &there, "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            ip(&[
                "-n",
                &ns,
                "route",
                "add",
                "default",
                "via",
                &format!("10.231.{i}.1"),
            ]);
        }
        hosts
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for (ns, here) in &self.names {
            // Deleting a pair's end here is at once; the namespace's own
            // teardown, which would take it too, is not.
            let _ = Command::new("ip").args(["link", "del", here]).status();
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn dbsize(addr: SocketAddr) -> u64 {
    let reply = call(addr, b"DBSIZE\r\n", |b| b.ends_with(b"\r\n"));
    reply.trim().trim_start_matches(':').parse().unwrap()
}

/// Where a namespace can be made (root, `ip` from iproute2).
fn namespaces_work() -> bool {
    if !require("ip", "iproute2") {
        return false;
    }
    let probe = format!("bkprobe{}", std::process::id() % 100_000);
    let made = Command::new("ip")
        .args(["netns", "add", &probe])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        let _ = Command::new("ip").args(["netns", "del", &probe]).status();
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
        panic!("network namespaces cannot be made here (ip netns add failed); the shard test needs root");
    }
    eprintln!("skipping: network namespaces cannot be made (not root?)");
    false
}

/// The exactness test of issue 18: three shards on three "hosts" load
/// their parts of the records and measure together; the merged operation
/// counts equal the server's own, the loaded records add up to the record
/// count exactly, and the merged histogram is the three added bucket for
/// bucket.
#[test]
fn three_shards_in_their_own_namespaces_merge_to_the_servers_counts() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") || !namespaces_work() {
        return;
    }
    let hosts = Hosts::make(SHARDS);
    let server = redis_on(None, &[SERVER_IP]);
    let port = server.addr.port();
    let local = server.addr;
    let (gets_before, sets_before) = (redis_calls(local, "get"), redis_calls(local, "set"));
    let dir = tmp();
    let start = SystemTime::now() + Duration::from_secs(8);
    let start = humantime::format_rfc3339_millis(start).to_string();
    let children: Vec<std::process::Child> = hosts
        .names
        .iter()
        .enumerate()
        .map(|(i, (ns, _))| {
            let out = dir.path().join(format!("shard-{i}.json"));
            Command::new("ip")
                .args(["netns", "exec", ns])
                .arg(bin())
                .args([
                    "run",
                    "-t",
                    &format!("redis://{SERVER_IP}:{port}"),
                    "--shard",
                    &format!("{i}/{SHARDS}"),
                    "--records",
                    "30000",
                    "--clients",
                    "6",
                    "--mix",
                    "90:10",
                    "--warmup",
                    "1s",
                    "--duration",
                    "2s",
                    "--start-at",
                    &start,
                    "--quiet",
                    "--no-html",
                    "-o",
                    out.to_str().unwrap(),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("bakeoff starts in its namespace")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(90);
    for (i, mut child) in children.into_iter().enumerate() {
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("shard {i} did not end within 90 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "shard {i}: {stderr}");
        // Loaded seconds before the start: each says what it waits for.
        assert!(
            stderr.contains("for the synchronised start at"),
            "shard {i}: {stderr}"
        );
    }
    let files: Vec<String> = (0..SHARDS)
        .map(|i| {
            dir.path()
                .join(format!("shard-{i}.json"))
                .display()
                .to_string()
        })
        .collect();
    let merged_path = dir.path().join("merged.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", merged_path.to_str().unwrap()]);
    expect_exit(&args, 0);
    let merged = read_json(&merged_path);
    let shards: Vec<serde_json::Value> = files.iter().map(|f| read_json(f.as_ref())).collect();

    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s["shard"]["index"], i as u64);
        assert_eq!(s["runs"][0]["workload"]["clients"], 2);
    }
    // The load: each shard its part, nothing twice, nothing left out.
    let loaded: Vec<u64> = shards
        .iter()
        .map(|s| s["runs"][0]["load"]["completed"].as_u64().unwrap())
        .collect();
    assert_eq!(loaded, [10_000, 10_000, 10_000]);
    assert_eq!(dbsize(local), 30_000);
    // The merged requests are what the server counted, all phases.
    let run = &merged["runs"][0];
    let sent = |phase: &str, kind: &str| run[phase]["ops"][kind]["sent"].as_u64().unwrap_or(0);
    let gets = sent("warmup", "get") + sent("measure", "get");
    let sets = sent("load", "set") + sent("warmup", "set") + sent("measure", "set");
    assert_eq!(redis_calls(local, "get") - gets_before, gets, "GET calls");
    assert_eq!(redis_calls(local, "set") - sets_before, sets, "SET calls");
    assert_eq!(run["workload"]["clients"], 6);
    // The merged histogram is the three added, bucket for bucket.
    let mut sum: Option<hdrhistogram::Histogram<u64>> = None;
    for s in &shards {
        let h = bakeoff_core::result::decode_histogram(
            s["runs"][0]["measure"]["all"]["hdr"].as_str().unwrap(),
        )
        .unwrap();
        match &mut sum {
            None => sum = Some(h),
            Some(t) => t.add(&h).unwrap(),
        }
    }
    let merged_h =
        bakeoff_core::result::decode_histogram(run["measure"]["all"]["hdr"].as_str().unwrap())
            .unwrap();
    assert_eq!(merged_h, sum.unwrap());
    // They started together: each within the tolerance of the time.
    for s in merged["shards"].as_array().unwrap() {
        let skew = s["start_skew_s"].as_f64().unwrap();
        assert!((0.0..0.25).contains(&skew), "start skew {skew} s: {s}");
        assert!(s["shard"]["clock_offset_ns"].as_i64().is_some(), "{s}");
    }
    drop(server);
    drop(hosts);
}

/// A shard that is ready after its start time refuses to run, exit 2, and
/// says why; so does a merge with a shard missing or given twice.
#[test]
fn a_late_shard_and_incomplete_merges_are_refused() {
    let _beside = crate::common::beside_others();
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let url = format!("redis://{}", server.addr);
    let dir = tmp();
    let past =
        humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(5)).to_string();
    let late = dir.path().join("late.json");
    let stderr = expect_exit(
        &[
            "run",
            "-t",
            &url,
            "--shard",
            "0/2",
            "--records",
            "100",
            "--duration",
            "1s",
            "--start-at",
            &past,
            "--quiet",
            "--no-html",
            "-o",
            late.to_str().unwrap(),
        ],
        2,
    );
    assert!(stderr.contains("after --start-at"), "{stderr}");
    assert!(stderr.contains("more than the tolerance"), "{stderr}");
    // Its file says it refused, and why, rather than "running".
    let r = read_json(&late);
    assert_eq!(r["status"], "refused", "{r}");
    assert!(r["runs"].as_array().unwrap().is_empty());
    assert!(
        r["warnings"][0]
            .as_str()
            .unwrap()
            .contains("after --start-at"),
        "{r}"
    );
    // Two shards of two, run one after the other (no start time), their
    // results taken from what they printed, as from a pod's log.
    let mut files = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(format!("s{i}.json"));
        let log = dir.path().join(format!("s{i}.log"));
        std::fs::write(&log, run_shard(&url, i, &out)).unwrap();
        files.push(log.display().to_string());
    }
    let merged = dir.path().join("m.json");
    let merge = |inputs: &[&str]| {
        let mut args = vec!["merge"];
        args.extend_from_slice(inputs);
        args.extend(["-o", merged.to_str().unwrap()]);
        bakeoff(&args)
    };
    let o = merge(&[&files[0]]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("shards [1] of 2 are missing"), "{stderr}");
    let o = merge(&[&files[0], &files[0]]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("shard 0 is given twice"), "{stderr}");
    let o = merge(&[&files[0], &files[1]]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&merged);
    assert_eq!(r["runs"][0]["workload"]["clients"], 4);
    assert!(r.get("shard").is_none(), "a merged file is no shard's");
    // An output that is one of the inputs is refused, the input untouched.
    let s0 = dir.path().join("s0.json");
    let before = std::fs::read(&s0).unwrap();
    let s1 = dir.path().join("s1.json");
    let o = bakeoff(&[
        "merge",
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
        "-o",
        s0.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("one of the shard files"), "{stderr}");
    assert_eq!(std::fs::read(&s0).unwrap(), before);
    // An ordinary result file, with the shards' table in its report's
    // details.
    let o = bakeoff(&["report", merged.to_str().unwrap(), "--details"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("shards (merged by bakeoff merge"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("1/2 ") && l.contains("s1.log")),
        "{text}"
    );
    assert!(merged.with_extension("html").exists());
    // Markdown has every table the text and HTML reports have.
    let o = bakeoff(&["report", merged.to_str().unwrap(), "--markdown"]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("## Shards\n"), "{md}");
    assert!(md.lines().any(|l| l.starts_with("| 1/2 |")), "{md}");
}

/// Runs shard `index` of 2 with --print-result; returns what it printed.
fn run_shard(url: &str, index: u32, out: &std::path::Path) -> Vec<u8> {
    let o = bakeoff(&[
        "run",
        "-t",
        url,
        "--shard",
        &format!("{index}/2"),
        "--records",
        "1000",
        "--clients",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--quiet",
        "--no-html",
        "--print-result",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}
