//! The machine as an axis (`--sweep-server-cpus`): a managed server held
//! to 1, then 2, of the machine's CPUs, against the real servers.

use crate::common::*;
use serde_json::Value;

/// MariaDB's threads use the second CPU, Redis's one thread cannot: the
/// seed's two server generations, on one machine. The CPU each server
/// used says why; the throughput ratios are loose, as these machines are
/// noisy (in CI, Redis held to one CPU shared it with other tests: 1.34 ×
/// on two).
#[test]
fn mariadb_grows_with_its_cpus_and_redis_does_not() {
    if !require("redis-server", "redis-server") || !require("mariadbd", "mariadb-server") {
        return;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipping: one CPU here, nothing to compare");
        return;
    }
    // Alone: other work on the machine takes the CPUs being compared.
    let _g = alone();
    let r = run_ok(&[
        "run",
        "-t",
        "redis,mariadb",
        "--records",
        "5000",
        "--mix",
        "95:0:5:0",
        "--clients",
        "16",
        "--threads",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "500ms",
        "--sweep-server-cpus",
        "1,2",
    ]);
    let runs = r["runs"].as_array().unwrap();
    let run = |t: &str, cpus: &str| -> &Value {
        runs.iter()
            .find(|r| r["target"] == t && r["point"]["server_cpus"] == cpus)
            .unwrap_or_else(|| panic!("no {t} at {cpus}"))
    };
    let ops = |r: &Value| r["measure"]["throughput_per_s"].as_f64().unwrap();
    // The median over the run's seconds of `field` in the samples of
    // `series`.
    let median = |r: &Value, series: &str, field: &str| {
        let mut c: Vec<f64> = r[series]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s[field].as_f64().unwrap())
            .collect();
        c.sort_by(f64::total_cmp);
        c.get(c.len() / 2).copied().unwrap_or(0.0)
    };
    // The server's CPU, % of one core.
    let cpu = |r: &Value| median(r, "resources", "cpu_percent");
    // The machine's CPUs busy, % of all.
    let machine = |r: &Value| median(r, "machine_cpu", "busy_percent");
    let (maria1, maria2) = (run("mariadb", "1"), run("mariadb", "2"));
    let (redis1, redis2) = (run("redis", "1"), run("redis", "2"));
    assert!(
        cpu(maria1) <= 110.0,
        "mariadb held to one CPU used {} %",
        cpu(maria1)
    );
    // On two CPUs MariaDB's threads are not held to one: they use the
    // second, or the machine had none left to give them (work beside the
    // suite: a build took the second core in a CI run, and MariaDB used
    // 96 % with it).
    let full = machine(maria2) >= 90.0;
    assert!(
        cpu(maria2) > 110.0 || full,
        "mariadb on two CPUs used {} % with the machine {} % busy",
        cpu(maria2),
        machine(maria2)
    );
    if cpu(maria2) > 110.0 {
        // With the second CPU it serves more. Loosely: on a 2-core
        // machine that CPU is shared with the client's two threads, and
        // what MariaDB gains with it moves with the machine (1.12 × to
        // 1.73 × seen here).
        let grew = ops(maria2) / ops(maria1);
        assert!(grew > 1.05, "mariadb: {} then {}", ops(maria1), ops(maria2));
    }
    // Redis's one thread cannot use a second CPU.
    assert!(
        cpu(redis2) <= 110.0,
        "redis on two CPUs used {} %",
        cpu(redis2)
    );
    // What it gains is what it lost sharing its one CPU with the rest of
    // the machine (bakeoff's own threads run on that CPU too): its
    // throughput grows with the CPU time it got, not past it. A clean-clone
    // CI run saw 95.8k then 147.9k ops/s, past the 1.5 x this test once
    // held it to, with nothing else running.
    let gained = ops(redis2) / ops(redis1);
    let cpu_gained = cpu(redis2) / cpu(redis1).max(1.0);
    assert!(
        gained < 1.25 * cpu_gained.max(1.0),
        "redis: {} ops/s at {} % of a CPU, then {} at {} %",
        ops(redis1),
        cpu(redis1),
        ops(redis2),
        cpu(redis2)
    );
}
