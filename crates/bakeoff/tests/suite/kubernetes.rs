//! `bakeoff kubernetes`: manifests that pass `kubernetes-validate` (PyPI,
//! offline schemas) for a current Kubernetes, and refusals of runs that
//! shards cannot make.

use crate::common::*;

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
    let made = installed_once(&venv, |venv| {
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(venv)
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
                .is_ok_and(|s| s.success())
    });
    if made {
        return Some(venv.join("bin/kubernetes-validate"));
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

/// Makes `venv` with `install` once for all the suite's tests: two tests
/// asking at once wait for one install (two pips writing one environment
/// left a validator that failed), and an install is whole only once its
/// mark is written (one cut short is made again).
fn installed_once(venv: &std::path::Path, install: impl FnOnce(&std::path::Path) -> bool) -> bool {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let whole = venv.join(".installed-whole");
    if whole.exists() {
        return true;
    }
    let _ = std::fs::remove_dir_all(venv);
    install(venv) && std::fs::write(&whole, "").is_ok()
}

#[test]
fn tests_asking_at_once_for_the_validator_share_one_whole_install() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let venv = dir.path().join("venv");
    let installs = std::sync::atomic::AtomicUsize::new(0);
    let asked = std::sync::atomic::AtomicUsize::new(0);
    // The fake install writes its program only once all three have asked,
    // as pip writes it at the end; whoever finds the program before it is
    // whole fails.
    let install = |venv: &std::path::Path| {
        let n = installs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        if n == 0 {
            wait_for("all three asks", || {
                asked.load(std::sync::atomic::Ordering::SeqCst) == 3
            });
        }
        std::fs::write(venv.join("bin/tool"), "whole").unwrap();
        true
    };
    std::thread::scope(|s| {
        let asks: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    assert!(installed_once(&venv, install));
                    std::fs::read_to_string(venv.join("bin/tool")).unwrap()
                })
            })
            .collect();
        for ask in asks {
            assert_eq!(ask.join().unwrap(), "whole");
        }
    });
    assert_eq!(installs.load(std::sync::atomic::Ordering::SeqCst), 1);
    // One cut short (no mark) is made again.
    std::fs::remove_file(venv.join(".installed-whole")).unwrap();
    assert!(installed_once(&venv, install));
    assert_eq!(installs.load(std::sync::atomic::Ordering::SeqCst), 2);
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
    let _beside = crate::common::beside_others();
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
    let _beside = crate::common::beside_others();
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

/// The manifests' documents (after each `---` line), and each one's kind.
fn documents(yaml: &str) -> Vec<(String, String)> {
    yaml.split("---\n")
        .skip(1)
        .map(|d| {
            let kind = d
                .lines()
                .find_map(|l| l.strip_prefix("kind: "))
                .unwrap_or("")
                .trim_matches('"')
                .to_string();
            (kind, d.to_string())
        })
        .collect()
}

/// The Job's container arguments, unquoted.
fn job_args(yaml: &str) -> Vec<String> {
    let after = yaml
        .split("          args:\n")
        .nth(1)
        .expect("the Job has args");
    after
        .lines()
        .map_while(|l| l.strip_prefix("            - "))
        .map(|a| serde_json::from_str::<String>(a).expect("a JSON string"))
        .collect()
}

/// A target's password — in the URL after the user, in its query, or in a
/// preset file's target — is in the manifests only inside a Secret; the
/// Job hands it to each pod by environment, and the pod's run, given that
/// environment, reads it back (issue 33, class 8).
#[test]
fn a_target_password_is_only_in_the_secret() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let preset = dir.path().join("guarded.toml");
    std::fs::write(
        &preset,
        "name = \"guarded\"\ntargets = [\"redis://:pr3set-pw@redis.bench:6379\"]\n[workload]\nclients = 4\nduration = \"30s\"\n",
    )
    .unwrap();
    let out = dir.path().join("job.yaml");
    expect_exit(
        &[
            "kubernetes",
            "--shards",
            "2",
            "--name",
            "guarded",
            "-o",
            out.to_str().unwrap(),
            "--",
            preset.to_str().unwrap(),
            "-t",
            "redis://:s3cret-pw@redis.bench:6379",
            "--target=postgres://u:pg%40pw@pg.bench:5432/shop",
            "--target",
            "redis://redis2.bench:6379?auth=q-pw",
        ],
        0,
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let docs = documents(&text);
    let secrets: Vec<&String> = docs
        .iter()
        .filter(|(k, _)| k == "Secret")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(secrets.len(), 1, "one Secret in\n{text}");
    for pw in ["s3cret-pw", "pg@pw", "q-pw", "pr3set-pw"] {
        assert!(
            secrets[0].contains(pw),
            "{pw} is not in the Secret:\n{text}"
        );
    }
    for (kind, doc) in &docs {
        if kind != "Secret" {
            for pw in ["s3cret", "pg@pw", "pg%40pw", "q-pw", "pr3set"] {
                assert!(!doc.contains(pw), "{pw} in clear in the {kind}:\n{doc}");
            }
        }
    }
    let header = text.split("---\n").next().unwrap();
    assert!(!header.contains("pw"), "{header}");
    assert!(secrets[0].contains("stringData:"), "{}", secrets[0]);
    assert!(
        secrets[0].contains("name: \"guarded-passwords\""),
        "{}",
        secrets[0]
    );
    // The Job reads each password from the Secret, by name.
    let job = &docs.iter().find(|(k, _)| k == "Job").unwrap().1;
    assert_eq!(job.matches("secretKeyRef:").count(), 4, "{job}");
    assert!(
        job.contains("name: \"BAKEOFF_PASSWORD_1\"\n              valueFrom:\n                secretKeyRef:\n                  name: \"guarded-passwords\"\n                  key: \"BAKEOFF_PASSWORD_1\""),
        "{job}"
    );
    // The preset in the ConfigMap reads its password the same way.
    let config = &docs.iter().find(|(k, _)| k == "ConfigMap").unwrap().1;
    assert!(
        config.contains("redis://redis.bench:6379?password_env=BAKEOFF_PASSWORD_"),
        "{config}"
    );
    // The pod's run: its arguments, given the Secret's variables (and the
    // Indexed Job's), plan the same targets; without them it is refused.
    let mut args = job_args(&text);
    assert!(
        args.iter()
            .any(|a| a.starts_with("redis://redis.bench:6379?password_env=BAKEOFF_PASSWORD_")),
        "{args:?}"
    );
    let preset_in_pod = dir.path().join("pod-preset.toml");
    let preset_text = config
        .split("preset.toml: |\n")
        .nth(1)
        .unwrap()
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&preset_in_pod, preset_text).unwrap();
    args[1] = preset_in_pod.to_str().unwrap().to_string();
    args.push("--dry-run".into());
    let env: Vec<(String, String)> = secrets[0]
        .split("stringData:\n")
        .nth(1)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .map(|(k, v)| (k.to_string(), serde_json::from_str::<String>(v).unwrap()))
        .collect();
    assert_eq!(env.len(), 4, "{env:?}");
    let pod = |with_secret: bool| {
        let mut c = Command::new(bin());
        c.args(&args)
            .env("JOB_COMPLETION_INDEX", "1")
            .env("BAKEOFF_SHARDS", "2");
        if with_secret {
            c.envs(env.iter().map(|(k, v)| (k, v)));
        }
        c.output().unwrap()
    };
    let o = pod(true);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        // Two Redis URLs: each named by its address.
        stdout.contains(
            "redis@redis.bench:6379 (redis://redis.bench:6379?password_env=BAKEOFF_PASSWORD_"
        ),
        "{stdout}"
    );
    let o = pod(false);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("BAKEOFF_PASSWORD_") && stderr.contains("not set"),
        "{stderr}"
    );
    if let Some(validate) = kubernetes_validate() {
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
    }
}

/// Each of `bakeoff kubernetes`'s own flags is checked before anything is
/// written: a bad value exits 2 with one message naming the flag, the
/// value, what is accepted and an example, and no manifests (issue 33,
/// class 8).
#[test]
fn bad_flags_are_refused_before_anything_is_written() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let out = dir.path().join("job.yaml");
    for (flag, value, wants) in [
        (
            "--cpu",
            "0",
            &["flag --cpu", "`0`", "500m", "more than 0"][..],
        ),
        ("--cpu", "two", &["flag --cpu", "`two`", "e.g. --cpu"][..]),
        ("--cpu", "1.0005", &["flag --cpu", "`1.0005`", "1m"][..]),
        ("--cpu", "-1", &["flag --cpu", "`-1`", "more than 0"][..]),
        (
            "--memory",
            "2GB",
            &["flag --memory", "`2GB`", "2Gi", "e.g. --memory"][..],
        ),
        (
            "--memory",
            "0",
            &["flag --memory", "`0`", "more than 0"][..],
        ),
        (
            "--memory",
            "512m",
            &["flag --memory", "`512m`", "512Mi"][..],
        ),
        ("--image", "", &["flag --image", "``", "e.g. --image"][..]),
        (
            "--image",
            "my image:1",
            &["flag --image", "`my image:1`", "space"][..],
        ),
        (
            "--namespace",
            "Bench_1",
            &["flag --namespace", "`Bench_1`", "DNS-1123", "bench-1"][..],
        ),
        (
            "--slack",
            "0",
            &["flag --slack", "`0`", "scheduled", "e.g. --slack 2m"][..],
        ),
        ("--slack", "2s", &["flag --slack", "`2s`", "5s"][..]),
        (
            "--name",
            "Peak_Run",
            &["flag --name", "`Peak_Run`", "DNS-1123", "--name peak-run"][..],
        ),
        (
            "--name",
            "-peak",
            &["flag --name", "`-peak`", "--name peak"][..],
        ),
    ] {
        let given = format!("{flag}={value}");
        let args = [
            "kubernetes",
            "--shards",
            "2",
            given.as_str(),
            "-o",
            out.to_str().unwrap(),
            "--",
            "-t",
            "redis://r:6379",
            "--duration",
            "10s",
        ];
        let o = bakeoff(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        for want in wants {
            assert!(
                stderr.contains(want),
                "{args:?}: {want:?} is not in {stderr}"
            );
        }
        assert_eq!(stderr.trim().lines().count(), 1, "one message: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}: no manifests on a refusal");
        assert!(!out.exists(), "{args:?}: nothing written");
    }
    // Accepted forms.
    for (flag, value) in [
        ("--cpu", "500m"),
        ("--cpu", "1.5"),
        ("--cpu", ".25"),
        ("--memory", "512Mi"),
        ("--memory", "1G"),
        ("--memory", "1.5Gi"),
        ("--memory", "2147483648"),
        ("--memory", "128e6"),
        ("--namespace", "bench-1"),
        ("--slack", "5s"),
        ("--name", "peak-run-2"),
    ] {
        let given = format!("{flag}={value}");
        let o = bakeoff(&[
            "kubernetes",
            "--shards",
            "2",
            &given,
            "--",
            "-t",
            "redis://r:6379",
            "--duration",
            "10s",
        ]);
        assert!(
            o.status.success(),
            "{given}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The default name, made from the experiment's, is made a Kubernetes
/// name and says so when it had to change; a given name is used as it is.
#[test]
fn a_changed_default_name_is_said() {
    let _beside = crate::common::beside_others();
    let dir = tmp();
    let preset = dir.path().join("p.toml");
    std::fs::write(
        &preset,
        "name = \"Peak_Run\"\ntargets = [\"redis://redis.bench:6379\"]\n[workload]\nclients = 4\nduration = \"30s\"\n",
    )
    .unwrap();
    let o = bakeoff(&[
        "kubernetes",
        "--shards",
        "2",
        "--",
        preset.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("name: \"bakeoff-peak-run\""), "{stdout}");
    assert!(
        stderr.contains("`bakeoff-peak-run`")
            && stderr.contains("`bakeoff-Peak_Run`")
            && stderr.contains("--name"),
        "{stderr}"
    );
    let o = bakeoff(&[
        "kubernetes",
        "--shards",
        "2",
        "--name",
        "peak-run",
        "--",
        preset.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("name: \"peak-run\""));
}
