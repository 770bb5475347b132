//! The runner and every report format (text, JSON, Markdown, CSV, HTML in
//! headless Chromium, compare) under the deterministic scripted
//! mock driver with a fixed seed: snapshot tests, histogram merging, and
//! the result file against its JSON Schema.
//!
//! Snapshots live in tests/snapshots; after an intended change, regenerate
//! them with `UPDATE_SNAPSHOTS=1 cargo test -p bakeoff --test suite mock_snapshots`
//! and review the diff.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bakeoff_core::mock::{MockCatalog, MockDriver, MockOpener};
use bakeoff_core::plan::{Overrides, Plan, RawPreset};
use bakeoff_core::result::{decode_histogram, Environment, ExperimentResult};
use bakeoff_core::runner::{run_experiment, ExperimentOptions, Quiet};
use bakeoff_core::workload::OpKind;
use bakeoff_report::csv::CsvExporter;
use bakeoff_report::markdown::MarkdownExporter;
use bakeoff_report::{Exporter, JsonExporter, TextExporter};

fn fixed_env() -> Environment {
    Environment {
        cpu_model: "snapshot CPU".into(),
        cores: 2,
        memory_bytes: 1 << 30,
        kernel: "snapshot".into(),
        hostname: "snapshot".into(),
        bakeoff_version: "snapshot".into(),
        seed: 7,
        command: "bakeoff run (snapshot)".into(),
    }
}

fn run_mock(preset: &str, out: &Path) -> ExperimentResult {
    run_mock_with(&MockOpener::default(), preset, out)
}

fn run_mock_with(opener: &MockOpener, preset: &str, out: &Path) -> ExperimentResult {
    let mut r = run_mock_flags(opener, preset, &Overrides::default(), out);
    r.started_at = "2026-01-01T00:00:00Z".into();
    for run in &mut r.runs {
        run.started_at = Some("2026-01-01T00:00:01Z".into());
        run.ended_at = Some("2026-01-01T00:00:04Z".into());
    }
    r
}

/// Runs `preset` with `flags` on the mock, as it comes (times and all).
fn run_mock_flags(
    opener: &MockOpener,
    preset: &str,
    flags: &Overrides,
    out: &Path,
) -> ExperimentResult {
    let raw: RawPreset = toml::from_str(preset).unwrap();
    let plan = Plan::build(Some(("mock.toml", raw)), flags, &MockCatalog).unwrap();
    let opts = ExperimentOptions {
        out: out.to_path_buf(),
        stop: Arc::new(AtomicBool::new(false)),
        skip_unavailable: false,
    };
    run_experiment(&plan, opener, fixed_env(), &opts, &mut Quiet).unwrap()
}

fn check_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var("UPDATE_SNAPSHOTS").is_ok() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "snapshot {} missing; create it with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert!(expected == actual, "snapshot {name} differs; if intended, regenerate with UPDATE_SNAPSHOTS=1.\n--- expected\n{expected}\n--- actual\n{actual}");
}

const PRESET: &str = r#"
name = "mock-sweep"
description = "scripted mock, two client counts, two repeats"
targets = ["mock"]
seed = 7
repeats = 2
[workload]
records = 1000
mix = "80:10:5:5"
duration = "2s"
warmup = "1s"
clients = 2
threads = 2
[sweep]
clients = [1, 4]
"#;

#[test]
fn text_and_json_output_are_stable() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let r = run_mock(PRESET, &dir.path().join("m.json"));
    assert_eq!(r.runs.len(), 4);
    let mut text = Vec::new();
    TextExporter {
        details: true,
        width: None,
    }
    .export(std::slice::from_ref(&r), &mut text)
    .unwrap();
    check_snapshot("mock.txt", &String::from_utf8(text).unwrap());
    let mut json = Vec::new();
    JsonExporter
        .export(std::slice::from_ref(&r), &mut json)
        .unwrap();
    check_snapshot("mock.json", &String::from_utf8(json).unwrap());
    let mut md = Vec::new();
    MarkdownExporter
        .export(std::slice::from_ref(&r), &mut md)
        .unwrap();
    let md = String::from_utf8(md).unwrap();
    check_snapshot("mock.md", &md);
    let mut csv = Vec::new();
    CsvExporter
        .export(std::slice::from_ref(&r), &mut csv)
        .unwrap();
    let csv = String::from_utf8(csv).unwrap();
    check_snapshot("mock.csv", &csv);
    // The text formats carry the result's own numbers: every run's
    // throughput is in the CSV, one row per run and operation kind.
    for run in &r.runs {
        let tp = run.measure.throughput_per_s;
        assert!(
            csv.contains(&format!(",{tp:.3},")) || csv.contains(&format!(",{tp:.0},")),
            "{tp} not in the CSV"
        );
    }
    let rows: usize = r.runs.iter().map(|x| 1 + x.measure.ops.len()).sum();
    assert_eq!(csv.lines().count(), 1 + rows);
    assert!(md.contains("### clients (connections)"), "{md}");
    // Deterministic: the same plan gives the same numbers again.
    let again = run_mock(PRESET, &dir.path().join("m2.json"));
    assert_eq!(
        serde_json::to_value(&again.runs).unwrap(),
        serde_json::to_value(&r.runs).unwrap()
    );
}

#[test]
fn result_file_on_disk_matches_the_schema_and_reads_back() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    run_mock(PRESET, &path);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/result.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).expect("schema compiles");
    if let Err(errors) = compiled.validate(&v) {
        let msgs: Vec<String> = errors
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        panic!("result does not match schema: {msgs:?}");
    }
    // A broken file is refused against the same schema.
    let mut broken = v.clone();
    broken["runs"][0]["measure"]["completed"] = serde_json::json!("many");
    assert!(compiled.validate(&broken).is_err());
    let back = ExperimentResult::read(&path).unwrap();
    assert_eq!(back.runs.len(), 4);
    assert_eq!(
        back.status,
        bakeoff_core::result::ExperimentStatus::Complete
    );
}

#[test]
fn committed_schema_is_the_generated_one() {
    let _beside = crate::common::beside_others();
    let committed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/result.schema.json"),
    )
    .unwrap();
    let generated =
        serde_json::to_string_pretty(&bakeoff_core::result::json_schema()).unwrap() + "\n";
    assert!(
        committed == generated,
        "schema/result.schema.json is stale: run `cargo run -- schema > schema/result.schema.json`"
    );
}

#[test]
fn other_schema_versions_are_refused_clearly() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(&path, r#"{"schema_version": 0, "runs": []}"#).unwrap();
    let e = ExperimentResult::read(&path).unwrap_err().to_string();
    assert!(
        e.contains("schema version 0") && e.contains("reads version 1"),
        "{e}"
    );
    std::fs::write(&path, r#"{"hello": 1}"#).unwrap();
    assert!(ExperimentResult::read(&path)
        .unwrap_err()
        .to_string()
        .contains("not a bakeoff result file"));
}

/// Histograms merged from two result files equal the histogram of the
/// combined run: the mock's latencies repeat every 20 operations, so a run
/// of 2 × 1000 reads records exactly the values of two runs of 1000.
#[test]
fn histograms_from_two_files_merge_exactly() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let preset = |ops: u32| {
        format!("targets = [\"mock\"]\n[workload]\nrecords = 100\nmix = \"100:0\"\nops = {ops}\nwarmup = \"0\"\nclients = 1\nload = false\n")
    };
    run_mock(&preset(1000), &dir.path().join("a.json"));
    run_mock(&preset(1000), &dir.path().join("b.json"));
    run_mock(&preset(2000), &dir.path().join("ab.json"));
    let hist = |f: &str| {
        let r = ExperimentResult::read(&dir.path().join(f)).unwrap();
        decode_histogram(&r.runs[0].measure.ops["get"].latency.hdr).unwrap()
    };
    let mut merged = hist("a.json");
    merged.add(hist("b.json")).unwrap();
    let combined = hist("ab.json");
    assert_eq!(merged.len(), 2000);
    assert_eq!(merged, combined);
    for q in [0.5, 0.99, 0.999, 1.0] {
        assert_eq!(merged.value_at_quantile(q), combined.value_at_quantile(q));
    }
    // Averaging the two files' percentiles is not the same thing in general;
    // the merge must go through the histograms.
    assert_eq!(merged.mean(), combined.mean());
}

/// Requests that are slow next to the run (a write of 150–300 ms in a 1 s
/// phase, as FerretDB's locked SQLite gives) leave the clients' last
/// requests ending far apart, and the warm-up's last ones ending inside the
/// measured window. The mock leaves no gap between requests, so Little's
/// law over the measured window must hold exactly; a ratio taken over the
/// phase's length including the drain read 0.92 here (and in CI).
#[test]
fn littles_law_ignores_the_drain_of_slow_requests() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let mut opener = MockOpener::default();
    opener.driver.latency_ns[OpKind::Get as usize] = 5_000_000;
    opener.driver.latency_ns[OpKind::Set as usize] = 150_000_000;
    let preset = "targets = [\"mock\"]\nseed = 3\n[workload]\nrecords = 100\nmix = \"70:30\"\nduration = \"1s\"\nwarmup = \"500ms\"\nclients = 4\nthreads = 2\nload = false\n";
    let r = run_mock_with(&opener, preset, &dir.path().join("slow.json"));
    let run = &r.runs[0];
    // The drain is there: the phase outlasts its nominal second.
    assert!(
        run.measure.duration_s > 1.05,
        "{} s: no drain to test",
        run.measure.duration_s
    );
    let ratio = run.checks.littles_law_ratio.unwrap();
    assert!((ratio - 1.0).abs() < 0.002, "Little's law ratio {ratio}");
}

#[test]
fn flags_and_scalar_overrides_reach_the_runner() {
    let _beside = crate::common::beside_others();
    let raw: RawPreset = toml::from_str(PRESET).unwrap();
    let mut flags = Overrides::default();
    flags.workload.insert("pipeline".into(), "3".into());
    let plan = Plan::build(Some(("mock.toml", raw)), &flags, &MockCatalog).unwrap();
    assert!(plan.points().iter().all(|p| p.workload.pipeline == 3));
}

#[test]
fn writing_to_a_device_does_not_replace_it() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let r = run_mock(
        "targets = [\"mock\"]\n[workload]\nops = 10\nwarmup = \"0\"\nload = false\n",
        &dir.path().join("x.json"),
    );
    r.write_atomic(Path::new("/dev/null")).unwrap();
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(!meta.is_file(), "/dev/null was replaced by a regular file");
}

/// A tmpfs of `kib` KiB mounted on a new folder of `dir`, unmounted when
/// dropped; `None` where this user cannot mount (not root).
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, kib: u32) -> Option<SmallDisk> {
        let at = dir.join("small");
        std::fs::create_dir(&at).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&at)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root and can mount a tmpfs"
            );
            eprintln!("skipping: cannot mount a tmpfs here");
            return None;
        }
        Some(SmallDisk(at))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A result that does not fit where it is written fails with the disk's
/// error and leaves no `.json.tmp` behind; an output that is a FIFO no one
/// reads is refused at once instead of blocking for ever (issue 33,
/// classes 5 and 1).
#[test]
fn a_failed_write_leaves_nothing_and_a_fifo_without_reader_is_refused() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let r = run_mock(
        "targets = [\"mock\"]\n[workload]\nops = 10\nwarmup = \"0\"\nload = false\n",
        &dir.path().join("x.json"),
    );
    if let Some(disk) = SmallDisk::mount(dir.path(), 64) {
        // Filled to the last block, as a full disk is.
        let filler = disk.0.join("filler");
        let _ = std::fs::write(&filler, vec![0u8; 128 * 1024]);
        let out = disk.0.join("r.json");
        let e = r.write_atomic(&out).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        std::fs::remove_file(&filler).unwrap();
        let left: Vec<_> = std::fs::read_dir(&disk.0)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
    let fifo = dir.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let e = r.write_atomic(&fifo).unwrap_err();
    assert!(e.to_string().contains("no one reads"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

/// Chromium from Debian's package; under CI its absence fails the test.
fn chromium() -> Option<&'static str> {
    for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(c).exists() {
            return Some(c);
        }
    }
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
        panic!("chromium is not installed; CI must install the Debian package chromium (scripts/test.sh)");
    }
    eprintln!("skipping: chromium is not installed (apt-get install chromium)");
    None
}

/// What headless Chromium saw of a page: the DOM after scripts ran, the
/// console messages, and the network requests the page itself made.
struct BrowserVisit {
    dom: String,
    console: Vec<String>,
    page_requests: Vec<String>,
}

fn visit(chromium: &str, page: &Path, work: &Path, screenshot: Option<&Path>) -> BrowserVisit {
    let profile = tempfile::tempdir().unwrap();
    let netlog = work.join("netlog.json");
    // The flags keep Chromium's own background traffic quiet, and no host
    // name resolves, so nothing can leave the machine either way.
    let mut cmd = std::process::Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--log-net-log={}", netlog.display()));
    match screenshot {
        Some(png) => {
            cmd.arg("--hide-scrollbars")
                .arg("--window-size=1340,6000")
                .arg(format!("--screenshot={}", png.display()));
        }
        None => {
            // A laptop's window: the page's script measures its layout.
            cmd.arg("--window-size=1280,800").arg("--dump-dom");
        }
    }
    let out = cmd
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium failed: {:?}", out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(|l| l.to_string())
        .collect();
    // URL requests made on behalf of the page carry its file:// origin in
    // their network isolation key; Chromium's own (update checks) do not.
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap()).unwrap();
    let page_requests = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let p = &e["params"];
            let key = p["network_isolation_key"].as_str()?;
            let url = p["url"].as_str()?;
            (key.contains("file://") && !url.starts_with("file:") && !url.starts_with("data:"))
                .then(|| url.to_string())
        })
        .collect();
    BrowserVisit {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
        page_requests,
    }
}

/// The HTML report opens offline in headless Chromium: every chart
/// rendered, no request left the page, nothing was logged; a screenshot is
/// kept under the test's output folder. A page that logs and fetches is
/// caught by the same checks, so they can fail.
#[test]
fn html_report_renders_offline_in_chromium() {
    let _beside = crate::common::beside_others();
    let Some(chromium) = chromium() else { return };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_report");
    std::fs::create_dir_all(&out).unwrap();
    let result = out.join("mock.json");
    run_mock(PRESET, &result);
    let page = out.join("report.html");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["report", result.to_str().unwrap(), "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));

    let v = visit(chromium, &page, &out, None);
    let charts: usize = v
        .dom
        .split("data-charts=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("the page's script ran and counted its charts");
    // Throughput, 2 percentile sets, 3 sweep charts, 2 spectra, and the
    // per-second charts of 2 points.
    assert!(charts >= 10, "only {charts} charts");
    assert_eq!(v.dom.matches("data-rendered=\"yes\"").count(), charts);
    assert!(!v.dom.contains("data-rendered=\"no\""));
    assert!(v.console.is_empty(), "console: {:?}", v.console);
    assert!(
        v.page_requests.is_empty(),
        "requests: {:?}",
        v.page_requests
    );

    let png = out.join("report.png");
    let _ = std::fs::remove_file(&png);
    visit(chromium, &page, &out, Some(&png));
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 20_000,
        "screenshot {} is {size} bytes",
        png.display()
    );
    eprintln!("screenshot: {}", png.display());

    // The checks themselves can fail.
    let bad = out.join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom'); fetch('http://127.0.0.1:9/x').catch(function(){});</script></body></html>",
    )
    .unwrap();
    let b = visit(chromium, &bad, &out, None);
    assert!(!b.console.is_empty(), "a console error went unseen");
    assert!(!b.page_requests.is_empty(), "a page request went unseen");
}

/// A number the page's script wrote on `<body>` (`data-NAME="N"`).
fn body_number(dom: &str, name: &str) -> f64 {
    dom.split(&format!("data-{name}=\""))
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the page's script wrote no data-{name}"))
}

/// The default comparison's HTML report opens with the answer: in a
/// 1280 × 800 window the verdict begins within the first screen, nothing
/// is wider than the window, the charts come before the tables of
/// detail, the 66-row table of runs is folded, and each warning is said
/// once.
#[test]
fn the_html_report_opens_with_the_answer() {
    let _beside = crate::common::beside_others();
    let Some(chromium) = chromium() else { return };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_answer");
    std::fs::create_dir_all(&out).unwrap();
    let mut r = bakeoff_report::fixtures::default_shaped();
    let warnings = [
        "the first warning of this test",
        "the second warning of this test",
    ];
    r.warnings = warnings.iter().map(|w| w.to_string()).collect();
    r.runs[0].client.client_bound = true;
    let result = out.join("default.json");
    r.write_atomic(&result).unwrap();
    let page = out.join("default.html");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(["report", result.to_str().unwrap(), "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for w in warnings {
        assert_eq!(html.matches(w).count(), 1, "{w}");
    }
    // The one run flagged client-bound is said so once, if at all (a run
    // whose machine was full is the machine's, not the client's).
    assert!(html.matches("Client-bound:").count() <= 1);
    let at = |id: &str| {
        html.find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no section {id}"))
    };
    assert!(at("verdict") < at("summary"));
    assert!(at("summary") < at("overview"));
    assert!(at("overview") < at("timeline"));
    assert!(at("timeline") < at("bottleneck"));
    assert!(
        html.contains("<details><summary>66 rows"),
        "the runs' table is not folded"
    );

    let v = visit(chromium, &page, &out, None);
    let top = body_number(&v.dom, "answer-top");
    assert!(top < 800.0, "the answer begins {top} px down");
    let widest = body_number(&v.dom, "widest");
    assert!(widest <= 1280.0, "an element reaches {widest} px");
    let page_width = body_number(&v.dom, "page-width");
    assert!(page_width <= 1280.0, "the page is {page_width} px wide");
    assert!(v.console.is_empty(), "console: {:?}", v.console);
}

/// `bakeoff compare`: the same experiment twice is a tie on every figure;
/// a copy with throughput doubled is beyond noise (4 repeats a side, the
/// fewest a test can call); a file without a shared target and point is
/// refused with exit 2.
#[test]
fn compare_tells_changes_from_noise() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let r = run_mock(&PRESET.replace("repeats = 2", "repeats = 4"), &a);
    let mut faster = r.clone();
    for run in &mut faster.runs {
        // Repeats that differ a little, all well above A's.
        run.measure.throughput_per_s *= 2.0 + 0.01 * run.repeat as f64;
    }
    let b = dir.path().join("b.json");
    faster.write_atomic(&b).unwrap();
    let bin = env!("CARGO_BIN_EXE_bakeoff");
    let same = std::process::Command::new(bin)
        .args(["compare", a.to_str().unwrap(), a.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(same.status.success(), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("mock") && l.contains("beyond noise")),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.contains("~ tie")).count(),
        10,
        "{text}"
    );
    let diff = std::process::Command::new(bin)
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&diff.stdout);
    let tp: Vec<&str> = text.lines().filter(|l| l.contains("throughput")).collect();
    assert_eq!(tp.len(), 2, "{text}");
    assert!(
        tp.iter()
            .all(|l| l.contains("beyond noise") && l.contains("better")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains(" p99 ") && l.contains("~ tie")),
        "{text}"
    );

    let mut other = r.clone();
    for run in &mut other.runs {
        run.target = "other".into();
    }
    let c = dir.path().join("c.json");
    other.write_atomic(&c).unwrap();
    let none = std::process::Command::new(bin)
        .args(["compare", a.to_str().unwrap(), c.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no target and point in common"));

    // The comparison is an exporter like the others: of two experiments
    // it writes what the command prints; of one it refuses.
    use bakeoff_report::Exporter as _;
    let exporter = bakeoff_report::compare::CompareExporter { markdown: false };
    let mut written = Vec::new();
    let read = |p: &Path| ExperimentResult::read(p).unwrap();
    exporter
        .export(&[read(&a), read(&b)], &mut written)
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&written), text);
    let e = exporter.export(&[r], &mut Vec::new()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
}

/// Several result files make one report, their runs told apart.
#[test]
fn several_files_make_one_report() {
    let _beside = crate::common::beside_others();
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let mut r = run_mock(PRESET, &a);
    r.environment.hostname = "other-host".into();
    let b = dir.path().join("b.json");
    r.write_atomic(&b).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args([
            "report",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--markdown",
        ])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        md.contains("| mock · snapshot |") && md.contains("| mock · other-host |"),
        "{md}"
    );
}

/// The scripted mock with a server that works on 8 requests at once: its
/// capacity is 8 over the mean latency of a GET (50 µs × 1.0–1.9, 72.5 µs
/// on average), about 110k ops/s.
fn mock_of_known_capacity() -> (MockOpener, f64) {
    let driver = MockDriver {
        servers: 8,
        miss_every: 0,
        ..MockDriver::default()
    };
    let capacity = 8.0 / 72.5e-6;
    (
        MockOpener {
            driver,
            ..MockOpener::default()
        },
        capacity,
    )
}

#[test]
fn find_peak_doubles_the_clients_until_the_mock_saturates() {
    let _beside = crate::common::beside_others();
    let (opener, capacity) = mock_of_known_capacity();
    let dir = tempfile::tempdir().unwrap();
    let r = run_mock_with(
        &opener,
        r#"
name = "peak"
description = "the peak of a mock that serves 8 at once"
targets = ["mock"]
[workload]
records = 1000
mix = "100:0"
duration = "1s"
warmup = "0"
find_peak = true
"#,
        &dir.path().join("r.json"),
    );
    let clients: Vec<u32> = r.runs.iter().map(|run| run.workload.clients).collect();
    // Rising to 8, then flat twice: 16 and 32.
    assert_eq!(clients, [1, 2, 4, 8, 16, 32]);
    assert_eq!(r.searches.len(), 1);
    let s = &r.searches[0];
    assert_eq!(s.kind, "peak");
    assert_eq!(s.runs, (0..6).collect::<Vec<u32>>());
    assert!(matches!(s.clients, Some(8 | 16)), "{s:?}");
    let peak = s.throughput_per_s.unwrap();
    assert!(
        (peak / capacity - 1.0).abs() < 0.05,
        "peak {peak} against {capacity}"
    );
    assert_eq!(
        r.runs[3].point.get("clients").map(String::as_str),
        Some("8")
    );
}

#[test]
fn find_capacity_bisects_to_the_highest_rate_under_the_bound() {
    let _beside = crate::common::beside_others();
    let (opener, capacity) = mock_of_known_capacity();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = run_mock_with(
        &opener,
        r#"
name = "capacity"
description = "the capacity of a mock that serves 8 at once"
targets = ["mock"]
[workload]
records = 1000
mix = "100:0"
clients = 32
duration = "1s"
warmup = "0"
find_capacity = "p99<=250us"
"#,
        &out,
    );
    // The closed-loop probe, then 6 open-loop steps.
    assert_eq!(r.runs.len(), 7);
    assert_eq!(r.runs[0].workload.rate, None);
    assert!(r.runs[1..].iter().all(|run| run.workload.rate.is_some()));
    let s = &r.searches[0];
    let ceiling = s.ceiling_per_s.unwrap();
    assert!(
        (ceiling / capacity - 1.0).abs() < 0.05,
        "{ceiling} against {capacity}"
    );
    let found = s.rate_per_s.unwrap();
    assert!(
        found > 0.8 * capacity && found <= 1.02 * capacity,
        "capacity {found} against {capacity}: {s:?}"
    );
    assert!(s.latency_ns.unwrap() <= 250_000);
    // Every step above the capacity found failed the bound or its rate.
    for run in &r.runs[1..] {
        if run.workload.rate.unwrap() > found {
            let short = run.measure.throughput_per_s < 0.95 * run.workload.rate.unwrap();
            assert!(short || run.measure.all.p99_ns > 250_000, "{}", run.index);
        }
    }
    // The report draws it, and the result file reads back.
    let html = dir.path().join("r.html");
    bakeoff_report::html::HtmlExporter
        .export(
            std::slice::from_ref(&r),
            &mut std::fs::File::create(&html).unwrap(),
        )
        .unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("latency against the offered load"),
        "no capacity chart"
    );
    let back: ExperimentResult =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(back.searches.len(), 1);
}

/// Three shards of the scripted mock, merged, against one process doing
/// the same work: 3000 gets, by 3 clients in one process or one client in
/// each shard. The mock's latency cycles through ten values over a client's
/// operations, so both do each value equally often, and the merged
/// histogram must be the one process's, bucket for bucket; the counts add
/// up and the load's parts cover the records once.
#[test]
fn three_merged_shards_of_the_mock_equal_one_process() {
    let _beside = crate::common::beside_others();
    let preset = "targets = [\"mock\"]\nseed = 5\n[workload]\nrecords = 999\nmix = \"100:0\"\nops = 3000\nwarmup = \"0\"\nclients = 3\n";
    let run = |shard: Option<(u32, u32)>, out: &Path| {
        let flags = Overrides {
            shard: shard.map(|(i, n)| bakeoff_core::plan::Shard::new(i, n).unwrap()),
            ..Overrides::default()
        };
        run_mock_flags(&MockOpener::default(), preset, &flags, out)
    };
    let dir = tempfile::tempdir().unwrap();
    let one = run(None, &dir.path().join("one.json"));
    let shards: Vec<(String, ExperimentResult)> = (0..3)
        .map(|i| {
            let name = format!("shard-{i}.json");
            let r = run(Some((i, 3)), &dir.path().join(&name));
            (name, r)
        })
        .collect();
    for (i, (_, r)) in shards.iter().enumerate() {
        let s = r.shard.as_ref().expect("a shard's file says so");
        assert_eq!((s.index, s.count), (i as u32, 3));
        assert_eq!(r.runs[0].workload.clients, 1);
    }
    let hashes: Vec<&str> = shards
        .iter()
        .map(|(_, r)| r.shard.as_ref().unwrap().plan_hash.as_str())
        .collect();
    assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
    let merged = bakeoff_core::merge::merge_results(&shards).unwrap();
    let (m, o) = (&merged.runs[0], &one.runs[0]);
    assert_eq!(m.measure.completed, 3000);
    assert_eq!(m.measure.all.hdr, o.measure.all.hdr, "bucket for bucket");
    assert_eq!(
        (
            m.measure.all.p50_ns,
            m.measure.all.p99_ns,
            m.measure.all.max_ns
        ),
        (
            o.measure.all.p50_ns,
            o.measure.all.p99_ns,
            o.measure.all.max_ns
        )
    );
    assert_eq!(m.workload.clients, 3);
    // The load: 333 records each, 999 in all, in consecutive parts.
    let loaded: Vec<u64> = shards
        .iter()
        .map(|(_, r)| r.runs[0].load.as_ref().unwrap().completed)
        .collect();
    assert_eq!(loaded, [333, 333, 333]);
    assert_eq!(m.load.as_ref().unwrap().completed, 999);
    assert_eq!(merged.shards.len(), 3);
    // A file of another plan is refused.
    let mut other = shards.clone();
    other[2].1.shard.as_mut().unwrap().plan_hash = "0".repeat(16);
    let e = bakeoff_core::merge::merge_results(&other).unwrap_err();
    assert!(e.to_string().contains("plan hashes differ"), "{e}");
}
