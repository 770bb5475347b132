//! PostgreSQL and MariaDB, started by bakeoff: the load leaves exactly the
//! records, reads verify, settings are applied and recorded, and nothing is
//! left behind; an unreachable URL is a clear error.

mod common;
use common::*;

/// Runs a managed SQL target with `settings`; checks the load, the reads,
/// Little's law and the cleanup; returns the target's record.
fn managed_run(
    target: &str,
    program: &str,
    dirs: &[&str],
    settings: &[&str],
) -> Option<serde_json::Value> {
    if bakeoff_servers::find_program(program, dirs).is_none() {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "{program} missing under CI"
        );
        eprintln!("skipping: {program} not installed");
        return None;
    }
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
        "1s",
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
    assert!(
        run["measure"]["ops"]["get"]["completed"].as_u64().unwrap() > 100,
        "{target}"
    );
    assert!(
        run["measure"]["errors"].as_object().unwrap().is_empty(),
        "{target}: {}",
        run["measure"]["errors"]
    );
    let ratio = run["checks"]["littles_law_ratio"].as_f64().unwrap();
    assert!(
        (ratio - 1.0).abs() < 0.05,
        "{target}: Little's law ratio {ratio}"
    );
    let t = r["targets"][0].clone();
    let cmd = t["settings"]["command_line"].as_str().unwrap().to_string();
    let data = cmd
        .split(" -D ")
        .nth(1)
        .or_else(|| cmd.split("--datadir=").nth(1))
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        !std::path::Path::new(data).exists(),
        "{target}: {data} left behind"
    );
    Some(t)
}

#[test]
fn managed_postgres_loads_verifies_and_cleans_up() {
    let Some(t) = managed_run(
        "postgres",
        "postgres",
        &["/usr/lib/postgresql/*/bin"],
        &[
            "postgres.shared_buffers=64mb",
            "postgres.synchronous_commit=off",
        ],
    ) else {
        return;
    };
    assert!(
        t["version"].as_str().unwrap().starts_with("PostgreSQL "),
        "{t}"
    );
    assert_eq!(t["settings"]["shared_buffers"], "64MB");
    assert_eq!(t["settings"]["synchronous_commit"], "off");
}

#[test]
fn managed_mariadb_loads_verifies_and_cleans_up() {
    let Some(t) = managed_run(
        "mariadb",
        "mariadbd",
        &["/usr/sbin"],
        &[
            "mariadb.innodb_buffer_pool_size=64mb",
            "mariadb.innodb_flush_log_at_trx_commit=2",
        ],
    ) else {
        return;
    };
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

#[test]
fn unreachable_postgres_url_is_a_clear_error() {
    let port = bakeoff_servers::free_port().unwrap();
    let o = bakeoff(&[
        "run",
        "-t",
        &format!("postgres://bakeoff:secret@127.0.0.1:{port}"),
        "--duration",
        "1s",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot connect to postgres") && stderr.contains(&port.to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains("secret"), "{stderr}");
}

#[test]
fn unreachable_mariadb_url_is_a_clear_error() {
    let port = bakeoff_servers::free_port().unwrap();
    let o = bakeoff(&[
        "run",
        "-t",
        &format!("mariadb://root:secret@127.0.0.1:{port}"),
        "--duration",
        "1s",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot connect to mariadb") && stderr.contains(&port.to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains("secret"), "{stderr}");
}
