//! The runner and the text/JSON output under the deterministic scripted
//! mock driver with a fixed seed: snapshot tests, histogram merging, and
//! the result file against its JSON Schema.
//!
//! Snapshots live in tests/snapshots; after an intended change, regenerate
//! them with `UPDATE_SNAPSHOTS=1 cargo test -p bakeoff --test mock_snapshots`
//! and review the diff.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bakeoff_core::mock::MockOpener;
use bakeoff_core::plan::{Capabilities, Overrides, Plan, RawPreset, Scalar, TargetCatalog};
use bakeoff_core::result::{decode_histogram, Environment, ExperimentResult};
use bakeoff_core::runner::{run_experiment, ExperimentOptions, Quiet};
use bakeoff_core::workload::OpKind;
use bakeoff_report::{Exporter, JsonExporter, TextExporter};

struct MockCatalog;
impl TargetCatalog for MockCatalog {
    fn capabilities(&self, name: &str) -> Option<Capabilities> {
        (name == "mock").then(|| Capabilities {
            ops: OpKind::ALL.to_vec(),
            pipelining: true,
            managed: true,
            url_scheme: None,
            batch_load: false,
            requests: Vec::new(),
        })
    }
    fn names(&self) -> Vec<String> {
        vec!["mock".into()]
    }
    fn target_for_scheme(&self, _: &str) -> Option<String> {
        None
    }
    fn check_settings(&self, _: &str, _: &toml::Table) -> Result<(), String> {
        Ok(())
    }
    fn default_targets(&self) -> Vec<String> {
        vec!["mock".into()]
    }
}

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
    let raw: RawPreset = toml::from_str(preset).unwrap();
    let plan = Plan::build(
        Some(("mock.toml", raw)),
        &Overrides::default(),
        &MockCatalog,
    )
    .unwrap();
    let opts = ExperimentOptions {
        out: out.to_path_buf(),
        stop: Arc::new(AtomicBool::new(false)),
        skip_unavailable: false,
    };
    let mut r = run_experiment(
        &plan,
        &MockOpener::default(),
        fixed_env(),
        &opts,
        &mut Quiet,
    )
    .unwrap();
    r.started_at = "2026-01-01T00:00:00Z".into();
    r
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
    let dir = tempfile::tempdir().unwrap();
    let r = run_mock(PRESET, &dir.path().join("m.json"));
    assert_eq!(r.runs.len(), 4);
    let mut text = Vec::new();
    TextExporter
        .export(std::slice::from_ref(&r), &mut text)
        .unwrap();
    check_snapshot("mock.txt", &String::from_utf8(text).unwrap());
    let mut json = Vec::new();
    JsonExporter
        .export(std::slice::from_ref(&r), &mut json)
        .unwrap();
    check_snapshot("mock.json", &String::from_utf8(json).unwrap());
    // Deterministic: the same plan gives the same numbers again.
    let again = run_mock(PRESET, &dir.path().join("m2.json"));
    assert_eq!(
        serde_json::to_value(&again.runs).unwrap(),
        serde_json::to_value(&r.runs).unwrap()
    );
}

#[test]
fn result_file_on_disk_matches_the_schema_and_reads_back() {
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
    assert_eq!(back.status, "complete");
}

#[test]
fn committed_schema_is_the_generated_one() {
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(&path, r#"{"schema_version": 0, "runs": []}"#).unwrap();
    let e = ExperimentResult::read(&path).unwrap_err();
    assert!(
        e.contains("schema version 0") && e.contains("reads version 1"),
        "{e}"
    );
    std::fs::write(&path, r#"{"hello": 1}"#).unwrap();
    assert!(ExperimentResult::read(&path)
        .unwrap_err()
        .contains("not a bakeoff result file"));
}

/// Histograms merged from two result files equal the histogram of the
/// combined run: the mock's latencies repeat every 20 operations, so a run
/// of 2 × 1000 reads records exactly the values of two runs of 1000.
#[test]
fn histograms_from_two_files_merge_exactly() {
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

#[test]
fn flags_and_scalar_overrides_reach_the_runner() {
    let raw: RawPreset = toml::from_str(PRESET).unwrap();
    let mut flags = Overrides::default();
    flags.workload.pipeline = Some(Scalar::Str("3".into()));
    let plan = Plan::build(Some(("mock.toml", raw)), &flags, &MockCatalog).unwrap();
    assert!(plan.points().iter().all(|p| p.workload.pipeline == 3));
}

#[test]
fn writing_to_a_device_does_not_replace_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_mock(
        "targets = [\"mock\"]\n[workload]\nops = 10\nwarmup = \"0\"\nload = false\n",
        &dir.path().join("x.json"),
    );
    r.write_atomic(Path::new("/dev/null")).unwrap();
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(!meta.is_file(), "/dev/null was replaced by a regular file");
}
