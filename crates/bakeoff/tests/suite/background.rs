//! The engines' background work on the run's timeline, against the real
//! servers and libraries: a checkpoint and a bgsave asked for mid-run
//! (`--provoke`) are bands at their time, a RocksDB write run shows its
//! compactions and flushes, an engine with no background work says so.

use crate::common::*;
use serde_json::Value;

/// The run's background bands of kind `what`.
fn bands<'a>(run: &'a Value, what: &str) -> Vec<&'a Value> {
    run["background"]["bands"]
        .as_array()
        .unwrap_or_else(|| panic!("no background work: {}", run["background"]))
        .iter()
        .filter(|b| b["what"] == what)
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

/// A `CHECKPOINT` asked for 1.5 s into the measure job is a band of the
/// server's own log, starting when it was asked, with what it wrote; the
/// tail of the seconds it overlaps is set beside the others'.
#[test]
fn a_checkpoint_asked_mid_run_is_a_band_at_its_time() {
    if !require_in("postgres", &["/usr/lib/postgresql/*/bin"], "postgresql") {
        return;
    }
    let _g = beside_others();
    let r = run_ok(&[
        "run",
        "-t",
        "postgres",
        "--records",
        "20000",
        "--value-size",
        "1kb",
        "--mix",
        "50:50",
        "--duration",
        "3s",
        "--warmup",
        "500ms",
        "--provoke",
        "checkpoint@1500ms",
    ]);
    let run = &r["runs"][0];
    let asked = bands(run, "asked: checkpoint");
    assert_eq!(asked.len(), 1, "{}", run["background"]);
    let at = f(&asked[0]["from_s"]);
    let checkpoint = bands(run, "checkpoint")
        .into_iter()
        .find(|b| f(&b["from_s"]) >= at - 0.05)
        .unwrap_or_else(|| panic!("no checkpoint after {at}: {}", run["background"]));
    assert_eq!(checkpoint["exact"], true, "from the log: {checkpoint}");
    assert!(
        f(&checkpoint["from_s"]) <= at + 1.0 && f(&checkpoint["to_s"]) >= f(&checkpoint["from_s"]),
        "asked at {at}: {checkpoint}"
    );
    assert!(
        checkpoint["detail"].as_str().unwrap().contains("buffers"),
        "{checkpoint}"
    );
    let inside = &run["background"]["inside"];
    assert!(inside["seconds"].as_u64().unwrap() >= 1, "{inside}");
    assert!(
        run["background"]["source"]
            .as_str()
            .unwrap()
            .contains("log"),
        "{}",
        run["background"]
    );
}

/// A `BGSAVE` asked for mid-run: the fork that stopped Redis's main
/// thread is a mark, the save a band (or a mark, if it was over between
/// two looks 100 ms apart).
#[test]
fn a_bgsave_asked_mid_run_shows_its_fork_and_the_save() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--records",
        "50000",
        "--value-size",
        "1kb",
        "--mix",
        "50:50",
        "--duration",
        "2s",
        "--warmup",
        "0",
        "--provoke",
        "bgsave@1s",
    ]);
    let run = &r["runs"][0];
    let at = f(&bands(run, "asked: bgsave")[0]["from_s"]);
    let fork = bands(run, "fork");
    assert!(
        fork.iter()
            .any(|b| f(&b["from_s"]) >= at && b["detail"].as_str().unwrap().contains("µs to fork")),
        "{}",
        run["background"]
    );
    let save = bands(run, "bgsave");
    assert!(
        save.iter().any(|b| f(&b["from_s"]) >= at - 0.01),
        "{}",
        run["background"]
    );
}

/// Writes of 4 KB into a RocksDB of 4 MB memtables: its flushes and
/// compactions are bands; SQLite's WAL checkpoints are marks; LMDB, with
/// no background threads, says so.
#[test]
fn a_write_run_shows_rocksdbs_compactions_and_sqlites_checkpoints_and_lmdb_says_it_has_none() {
    let _g = beside_others();
    let r = run_ok(&[
        "run",
        "-t",
        "rocksdb,lmdb,sqlite",
        "--records",
        "20000",
        "--value-size",
        "4kb",
        "--mix",
        "0:100",
        "--duration",
        "3s",
        "--warmup",
        "0",
        "--set",
        "rocksdb.write_buffer=4mb",
    ]);
    let runs = r["runs"].as_array().unwrap();
    let run = |t: &str| runs.iter().find(|r| r["target"] == t).unwrap();
    let rocks = run("rocksdb");
    assert!(
        !bands(rocks, "compaction").is_empty(),
        "{}",
        rocks["background"]
    );
    assert!(!bands(rocks, "flush").is_empty(), "{}", rocks["background"]);
    assert_eq!(rocks["background"]["every_ms"], 100);
    let sqlite = run("sqlite");
    let checkpoints = bands(sqlite, "WAL checkpoint");
    assert!(
        checkpoints
            .iter()
            .any(|b| b["detail"].as_str().unwrap().contains("pages")),
        "{}",
        sqlite["background"]
    );
    let lmdb = &run("lmdb")["background"];
    assert!(
        lmdb["source"].as_str().unwrap().starts_with("none: LMDB"),
        "{lmdb}"
    );
    assert_eq!(lmdb["bands"].as_array().map_or(0, Vec::len), 0);
}

/// Work a target cannot be asked for is refused before anything starts,
/// with what it can be asked for.
#[test]
fn work_a_target_cannot_do_is_refused_with_what_it_can() {
    let _beside = crate::common::beside_others();
    let err = expect_exit(
        &[
            "run",
            "-t",
            "memcached",
            "--provoke",
            "checkpoint@1s",
            "--duration",
            "1s",
        ],
        2,
    );
    assert!(
        err.contains("memcached cannot be asked for `checkpoint`") && err.contains("none"),
        "{err}"
    );
    let err = expect_exit(&["run", "-t", "redis", "--provoke", "vacuum@1s"], 2);
    assert!(err.contains("bgsave, aof-rewrite, checkpoint"), "{err}");
}

/// `--sweep-server-signals on,off`: the run with them reads the server's
/// time and background work, the run without reads neither (what looking
/// costs is measured that way).
#[test]
fn server_signals_are_read_only_when_on() {
    if !require("redis-server", "redis-server") {
        return;
    }
    let _g = beside_others();
    let r = run_ok(&[
        "run",
        "-t",
        "redis",
        "--records",
        "2000",
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--sweep-server-signals",
        "on,off",
    ]);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let (on, off) = (&runs[0], &runs[1]);
    assert_eq!(on["point"]["server_signals"], "on", "{}", on["point"]);
    assert!(on["server_time"]["commands"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
    assert_eq!(on["background"]["every_ms"], 100);
    assert!(
        off["server_time"].is_null() && off["background"].is_null(),
        "{off}"
    );
}
