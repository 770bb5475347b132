//! Open loop: latency counts from each request's intended start, so a stall
//! of the server shows in the response time of every request that fell due
//! during it (not only of the few in flight), while the service time (from
//! the actual send) does not; and the requested rate is kept.

mod common;
use bakeoff_core::result::decode_histogram;
use common::*;
use std::time::Duration;

#[test]
fn a_server_stall_shows_in_response_time_not_only_in_flight_requests() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let server = redis(None);
    let dir = tmp();
    let out = dir.path().join("open.json");
    let child = std::process::Command::new(bin())
        .args([
            "run",
            "-t",
            &format!("redis://{}", server.addr),
            "--records",
            "1000",
            "--mix",
            "100:0",
            "--rate",
            "2000",
            "--clients",
            "10",
            "--duration",
            "2s",
            "--warmup",
            "0",
            "--quiet",
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The load phase takes a moment; stall the server inside the measured 2 s.
    std::thread::sleep(Duration::from_millis(1200));
    // SAFETY: stopping and continuing the server this test started.
    unsafe { libc::kill(server.pid as i32, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(server.pid as i32, libc::SIGCONT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = read_json(&out);
    let get = &r["runs"][0]["measure"]["ops"]["get"];
    let completed = get["completed"].as_u64().unwrap();
    assert!(
        (3600..=4400).contains(&completed),
        "2000 ops/s for 2 s gave {completed} operations"
    );
    let response = decode_histogram(get["latency"]["hdr"].as_str().unwrap()).unwrap();
    let service = decode_histogram(get["service_time"]["hdr"].as_str().unwrap()).unwrap();
    let slow =
        |h: &hdrhistogram::Histogram<u64>| h.count_between(100_000_000, h.max().max(100_000_000));
    // About 0.3 s × 2000/s = 600 requests fell due during the stall.
    assert!(
        slow(&response) >= 250,
        "only {} responses over 100 ms",
        slow(&response)
    );
    // Only the requests already sent (at most one per client) waited on the wire.
    assert!(
        slow(&service) <= 40,
        "{} service times over 100 ms",
        slow(&service)
    );
    assert!(response.value_at_quantile(0.99) >= service.value_at_quantile(0.99));
}
