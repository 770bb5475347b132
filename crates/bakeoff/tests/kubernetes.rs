//! `bakeoff kubernetes`: manifests that pass `kubernetes-validate` (PyPI,
//! offline schemas) for a current Kubernetes, and refusals of runs that
//! shards cannot make.

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Command;

/// The Kubernetes version the manifests are validated against.
const KUBERNETES: &str = "1.34.0";

/// `kubernetes-validate`: on PATH, or installed from PyPI into a virtual
/// environment under the target directory (once).
fn kubernetes_validate() -> Option<PathBuf> {
    if let Ok(p) = which("kubernetes-validate") {
        return Some(p);
    }
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kubernetes-validate");
    let exe = venv.join("bin/kubernetes-validate");
    if exe.exists() {
        return Some(exe);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--timeout",
                "60",
                "kubernetes-validate",
            ])
            .status()
            .is_ok_and(|s| s.success());
    if made && exe.exists() {
        return Some(exe);
    }
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
        panic!(
            "kubernetes-validate could not be installed from PyPI into {}",
            venv.display()
        );
    }
    eprintln!("skipping: kubernetes-validate is not installed and could not be");
    None
}

fn which(program: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
        .ok_or(())
}

#[test]
fn the_manifests_of_a_sharded_run_are_valid_kubernetes() {
    let Some(validate) = kubernetes_validate() else {
        return;
    };
    let dir = tmp();
    let preset = dir.path().join("peak.toml");
    std::fs::write(
        &preset,
        "name = \"peak\"\ntargets = [\"redis://redis.bench:6379\"]\n[workload]\nclients = 64\nduration = \"60s\"\n",
    )
    .unwrap();
    let out = dir.path().join("job.yaml");
    expect_exit(
        &[
            "kubernetes",
            "--shards",
            "4",
            "--image",
            "registry.example/bakeoff:1",
            "--slack",
            "90s",
            "--namespace",
            "bench",
            "-o",
            out.to_str().unwrap(),
            "--",
            preset.to_str().unwrap(),
            "--mix",
            "90:10",
        ],
        0,
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let v = Command::new(&validate)
        .args(["--strict", "-k", KUBERNETES])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        v.status.success(),
        "kubernetes-validate: {}{}\n{text}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
    for want in [
        "kind: \"ConfigMap\"",
        "kind: \"Job\"",
        "completionMode: \"Indexed\"",
        "completions: 4\n",
        "parallelism: 4\n",
        "backoffLimit: 0\n",
        "restartPolicy: \"Never\"",
        "topologyKey: \"kubernetes.io/hostname\"",
        "namespace: \"bench\"",
        "name: \"BAKEOFF_SHARDS\"\n              value: \"4\"",
        "- \"/etc/bakeoff/preset.toml\"",
        "- \"--print-result\"",
        // The preset as a block, word for word.
        "  preset.toml: |\n    name = \"peak\"\n",
    ] {
        assert!(text.contains(want), "{want:?} is not in\n{text}");
    }
    // Requests equal limits.
    let requests = text
        .split("requests:")
        .nth(1)
        .unwrap()
        .split("limits:")
        .next()
        .unwrap();
    let limits = text
        .split("limits:")
        .nth(1)
        .unwrap()
        .split("volumeMounts:")
        .next()
        .unwrap();
    assert_eq!(requests.trim(), limits.trim());
    // The start is the slack ahead of now.
    let start = text
        .split("- \"--start-at\"\n")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .trim_start_matches("- \"")
        .trim_end_matches('"')
        .to_string();
    let at = humantime::parse_rfc3339(&start).unwrap();
    let ahead = at
        .duration_since(std::time::SystemTime::now())
        .unwrap()
        .as_secs();
    assert!((80..=90).contains(&ahead), "{ahead} s ahead");
}

#[test]
fn runs_shards_cannot_make_are_refused() {
    for (args, why) in [
        (vec!["--", "-t", "redis"], "one per shard"),
        (
            vec!["--", "-t", "redis://r:6379", "--clients", "2"],
            "cannot be split between 4 shards",
        ),
        (
            vec!["--", "-t", "redis://r:6379", "--shard", "1/4"],
            "sets itself",
        ),
        (
            vec!["--", "-t", "redis://r:6379", "--no-such-flag"],
            "--no-such-flag",
        ),
    ] {
        let mut all = vec!["kubernetes", "--shards", "4"];
        all.extend(args.iter().copied());
        let o = bakeoff(&all);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {stderr}");
        assert!(stderr.contains(why), "{all:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{all:?}: no manifests on a refusal");
    }
}
