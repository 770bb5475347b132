//! `bakeoff kubernetes`: the manifests that run one experiment as N
//! shards on N nodes of a Kubernetes cluster, started together. A
//! ConfigMap holds the preset file (when the run names one); an Indexed
//! Job runs one pod per shard, never retried (a rerun shard would measure
//! another window), one per node, with requests equal to limits. Each pod
//! prints its result file into its log after a marker line, which `bakeoff
//! merge` finds; an `emptyDir` at /results holds the file too.

use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

use clap::Parser;
use serde_json::{json, Value};

use crate::cli::{KubernetesArgs, RunArgs};
use crate::error::AppError;
use bakeoff_core::plan::Shard;

/// Where the preset file is mounted in the pod.
const PRESET_DIR: &str = "/etc/bakeoff";
/// Where a pod writes its result file.
const RESULTS_DIR: &str = "/results";

/// `bakeoff run`'s flags on their own, to check the run's arguments.
#[derive(Parser)]
#[command(name = "bakeoff run", no_binary_name = true)]
struct RunOnly {
    #[command(flatten)]
    run: RunArgs,
}

/// The manifests, as YAML.
pub fn manifests(args: &KubernetesArgs, now: SystemTime) -> Result<String, AppError> {
    let usage = |m: String| AppError::Usage(m);
    let run = RunOnly::try_parse_from(&args.run)
        .map_err(|e| {
            usage(format!(
                "the run's arguments (after --): {}",
                e.to_string().trim()
            ))
        })?
        .run;
    for (given, flag) in [
        (run.shard.is_some(), "--shard"),
        (run.start_at.is_some(), "--start-at"),
        (run.out.is_some(), "-o"),
        (run.html.is_some(), "--html"),
        (run.dry_run, "--dry-run"),
    ] {
        if given {
            return Err(usage(format!(
                "the run's arguments give {flag}, which bakeoff kubernetes sets itself for each pod; leave it out"
            )));
        }
    }
    let shard = Shard::new(0, args.shards).map_err(|m| usage(format!("flag --shards: {m}")))?;
    let slack = bakeoff_core::units::parse_duration(&args.slack)
        .map_err(|m| usage(format!("flag --slack: {m}")))?;
    let start = humantime::format_rfc3339_seconds(now + slack).to_string();
    // The plan every shard runs, checked here as shard 0 would check it.
    let mut checked = run.clone();
    checked.shard = Some(shard.to_string());
    checked.start_at = Some(start.clone());
    let plan = crate::planning::plan(&checked)?;

    let name = match &args.name {
        Some(n) => dns_label(n).ok_or_else(|| {
            usage(format!(
                "flag --name: `{n}` is not a Kubernetes name; use lowercase letters, digits and `-`, at most 50"
            ))
        })?,
        None => dns_label(&format!("bakeoff-{}", plan.name)).unwrap_or_else(|| "bakeoff".into()),
    };
    // A preset file goes into the ConfigMap; a built-in one is in the
    // binary.
    let mut preset_text = None;
    let mut command: Vec<String> = vec!["run".into()];
    if let Some(p) = &run.preset {
        if Path::new(p).is_file() {
            let text = std::fs::read_to_string(p)
                .map_err(|e| usage(format!("cannot read the preset {p}: {e}")))?;
            preset_text = Some(text);
            command.push(format!("{PRESET_DIR}/preset.toml"));
        } else {
            command.push(p.clone());
        }
    }
    let preset_given = run.preset.as_deref();
    command.extend(
        args.run
            .iter()
            .filter(|a| Some(a.as_str()) != preset_given)
            .cloned(),
    );
    command.extend(
        [
            "--start-at",
            &start,
            "-o",
            &format!("{RESULTS_DIR}/result.json"),
            "--no-html",
            "--quiet",
            "--print-result",
        ]
        .map(String::from),
    );

    let namespace = args.namespace.as_ref().map(|n| json!(n));
    let meta = |name: &str| {
        let mut m = json!({ "name": name, "labels": { "app.kubernetes.io/name": "bakeoff", "bakeoff/run": &name_of_run(&args.name, &plan.name) } });
        if let Some(ns) = &namespace {
            m["namespace"] = ns.clone();
        }
        m
    };
    let run_label = name_of_run(&args.name, &plan.name);
    let resources = json!({ "cpu": &args.cpu, "memory": &args.memory });
    // /tmp too: an image made from scratch (scripts/image.sh) has none,
    // and bakeoff checks that it can write there.
    let mut volumes = vec![
        json!({ "name": "results", "emptyDir": {} }),
        json!({ "name": "tmp", "emptyDir": {} }),
    ];
    let mut mounts = vec![
        json!({ "name": "results", "mountPath": RESULTS_DIR }),
        json!({ "name": "tmp", "mountPath": "/tmp" }),
    ];
    let mut docs = Vec::new();
    if let Some(text) = preset_text {
        let config = format!("{name}-preset");
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(&config),
            "data": { "preset.toml": text },
        }));
        volumes.push(json!({ "name": "preset", "configMap": { "name": config } }));
        mounts.push(json!({ "name": "preset", "mountPath": PRESET_DIR, "readOnly": true }));
    }
    docs.push(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(&name),
        "spec": {
            "completionMode": "Indexed",
            "completions": args.shards,
            "parallelism": args.shards,
            // Never again: a rerun shard would measure another window.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "bakeoff", "bakeoff/run": run_label } },
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": { "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": { "matchLabels": { "bakeoff/run": run_label } },
                            "topologyKey": "kubernetes.io/hostname",
                        }],
                    }},
                    "containers": [{
                        "name": "bakeoff",
                        "image": &args.image,
                        "args": command,
                        "env": [{ "name": bakeoff_core::plan::shard::COUNT_ENV, "value": args.shards.to_string() }],
                        "resources": { "requests": resources.clone(), "limits": resources },
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    }));
    let mut out = format!(
        "# bakeoff {}: experiment {} as {} shards, starting together at {start}.\n#   kubectl apply -f THIS_FILE\n#   kubectl wait --for=condition=complete job/{name} --timeout=1h\n#   for p in $(kubectl get pods -l bakeoff/run={run_label} -o name); do kubectl logs $p > ${{p#pod/}}.log; done\n#   bakeoff merge {name}-*.log -o merged.json\n",
        env!("CARGO_PKG_VERSION"),
        plan.name,
        args.shards,
    );
    for d in &docs {
        out.push_str("---\n");
        yaml(d, 0, &mut out);
    }
    Ok(out)
}

/// The label every pod of the run carries (anti-affinity selects on it).
fn name_of_run(name: &Option<String>, plan_name: &str) -> String {
    name.as_deref()
        .and_then(dns_label)
        .or_else(|| dns_label(&format!("bakeoff-{plan_name}")))
        .unwrap_or_else(|| "bakeoff".into())
}

/// `text` as a DNS-1123 label (lowercase letters, digits, `-`, not at the
/// ends), short enough for the Job's pods' names; `None` if nothing is
/// left.
fn dns_label(text: &str) -> Option<String> {
    let mapped: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let trimmed: String = mapped.trim_matches('-').chars().take(50).collect();
    let trimmed = trimmed.trim_end_matches('-').to_string();
    (!trimmed.is_empty()).then_some(trimmed)
}

/// Block-style YAML of `v` at `indent` spaces. Strings are written as JSON
/// strings (a YAML double-quoted scalar), or as a literal block when they
/// span lines.
fn yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) => {
            for (k, item) in map {
                let _ = write!(out, "{pad}{}:", key(k));
                nested(item, indent, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        let mut inner = String::new();
                        yaml(item, indent + 2, &mut inner);
                        let _ = write!(out, "{pad}- {}", &inner[indent + 2..]);
                    }
                    _ => {
                        let _ = write!(out, "{pad}-");
                        nested(item, indent, out);
                    }
                }
            }
        }
        scalar => {
            let _ = writeln!(out, "{pad}{}", inline(scalar, indent));
        }
    }
}

/// What follows `key:` (or `-`): a scalar on the line, or a block below.
fn nested(item: &Value, indent: usize, out: &mut String) {
    match item {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml(item, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml(item, indent + 2, out);
        }
        scalar => {
            let _ = writeln!(out, " {}", inline(scalar, indent));
        }
    }
}

fn inline(v: &Value, indent: usize) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        Value::String(s)
            if s.contains('\n')
                && !s.starts_with([' ', '\n'])
                && !s.ends_with("\n\n")
                && !s.contains('\r')
                && !s.contains('\t') =>
        {
            let chomp = if s.ends_with('\n') { "|" } else { "|-" };
            let pad = " ".repeat(indent + 2);
            let mut block = chomp.to_string();
            for line in s.trim_end_matches('\n').split('\n') {
                block.push('\n');
                if !line.is_empty() {
                    block.push_str(&pad);
                    block.push_str(line);
                }
            }
            block
        }
        other => other.to_string(),
    }
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if plain {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_nests_lists_of_maps_and_keeps_text_blocks() {
        let v = json!({
            "a": [{ "b": 1, "c": ["x", "y z"] }, "s"],
            "text": "line 1\n  line 2\n",
            "empty": {},
            "odd key": true,
        });
        let mut out = String::new();
        yaml(&v, 0, &mut out);
        assert_eq!(
            out,
            "a:\n  - b: 1\n    c:\n      - \"x\"\n      - \"y z\"\n  - \"s\"\ntext: |\n  line 1\n    line 2\nempty: {}\n\"odd key\": true\n"
        );
    }

    #[test]
    fn names_become_dns_labels() {
        assert_eq!(
            dns_label("bakeoff-004_Peak").as_deref(),
            Some("bakeoff-004-peak")
        );
        assert_eq!(dns_label("--"), None);
        assert_eq!(dns_label(&"x".repeat(80)).unwrap().len(), 50);
    }
}
