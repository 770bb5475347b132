//! PostgreSQL, started by bakeoff (initdb + postgres as the postgres user):
//! the load leaves exactly the records, reads verify, settings are applied
//! and recorded, and nothing is left behind.

mod common;
use common::*;

#[test]
fn managed_postgres_loads_verifies_and_cleans_up() {
    if bakeoff_servers::find_program("postgres", &["/usr/lib/postgresql/*/bin"]).is_none() {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "postgres missing under CI (apt-get install postgresql)"
        );
        eprintln!("skipping: postgres not installed");
        return;
    }
    let dir = tmp();
    let out = dir.path().join("pg.json");
    let o = bakeoff(&[
        "run",
        "-t",
        "postgres",
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
        "--set",
        "postgres.shared_buffers=64mb",
        "--set",
        "postgres.synchronous_commit=off",
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
    let r = read_json(&out);
    let run = &r["runs"][0];
    assert_eq!(run["checks"]["records_after_load"], 2000);
    assert!(run["measure"]["ops"]["get"]["completed"].as_u64().unwrap() > 100);
    assert!(
        run["measure"]["errors"].as_object().unwrap().is_empty(),
        "{}",
        run["measure"]["errors"]
    );
    let ratio = run["checks"]["littles_law_ratio"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() < 0.05, "Little's law ratio {ratio}");
    let t = &r["targets"][0];
    assert!(
        t["version"].as_str().unwrap().starts_with("PostgreSQL "),
        "{t}"
    );
    assert_eq!(t["settings"]["shared_buffers"], "64MB");
    assert_eq!(t["settings"]["synchronous_commit"], "off");
    let cmd = t["settings"]["command_line"].as_str().unwrap();
    let data = cmd.split("-D ").nth(1).unwrap().split(' ').next().unwrap();
    assert!(!std::path::Path::new(data).exists(), "{data} left behind");
    let port = cmd.split("-p ").nth(1).unwrap().split(' ').next().unwrap();
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "postgres still listening"
    );
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
