//! `bakeoff kubernetes`: the manifests that run one experiment as N
//! shards on N nodes of a Kubernetes cluster, started together. A
//! ConfigMap holds the preset file (when the run names one); an Indexed
//! Job runs one pod per shard, never retried (a rerun shard would measure
//! another window), one per node, with requests equal to limits. Each pod
//! prints its result file into its log after a marker line, which `bakeoff
//! merge` finds; an `emptyDir` at /results holds the file too. The
//! targets' passwords are in a Secret alone: each URL the pods get reads
//! its password from a variable the Job fills from the Secret.
//!
//! Every flag is checked before anything is written, and a name the user
//! gives is used as given or refused, never changed.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use clap::Parser;
use serde_json::{json, Value};

use crate::cli::{KubernetesArgs, RunArgs};
use crate::error::AppError;
use bakeoff_core::plan::target::password_to_env;
use bakeoff_core::plan::{redact, split_target_list, RawPreset, Shard, UrlPassword};

/// Where the preset file is mounted in the pod.
const PRESET_DIR: &str = "/etc/bakeoff";
/// Where a pod writes its result file.
const RESULTS_DIR: &str = "/results";
/// The variables that hand each pod the targets' passwords from the
/// Secret: `BAKEOFF_PASSWORD_1`, `_2`, … in the order the URLs come; each
/// URL names its own (`?password_env=BAKEOFF_PASSWORD_1`).
pub const PASSWORD_VAR_PREFIX: &str = "BAKEOFF_PASSWORD_";
/// The longest Job name: an Indexed Job's pods are named and host-named
/// `NAME-INDEX` (and more), which Kubernetes holds to 63 characters.
const MAX_NAME: usize = 50;
/// The longest namespace (a DNS-1123 label).
const MAX_NAMESPACE: usize = 63;
/// The shortest `--slack`: below it no pod is scheduled, pulls the image,
/// connects and loads in time, and every shard refuses to start late.
const MIN_SLACK: Duration = Duration::from_secs(5);
/// What a DNS-1123 label is, for the messages that refuse one.
const LABEL_RULE: &str = "a DNS-1123 label: lowercase letters, digits and `-`, starting and ending with a letter or digit";

/// `bakeoff run`'s flags on their own, to check the run's arguments.
#[derive(Parser)]
#[command(name = "bakeoff run", no_binary_name = true)]
struct RunOnly {
    #[command(flatten)]
    run: RunArgs,
}

/// The manifests of a run, and what the user is told beside them.
#[derive(Debug)]
pub struct Manifests {
    /// The manifests, as YAML.
    pub yaml: String,
    /// Notes for standard error: a default name changed to be a
    /// Kubernetes name.
    pub notes: Vec<String>,
}

/// The manifests of `args`' run, starting the slack after `now`; every
/// flag is checked first.
pub fn manifests(args: &KubernetesArgs, now: SystemTime) -> Result<Manifests, AppError> {
    let (shard, slack) = checked_flags(args)?;
    let run = run_of(args)?;
    let start = humantime::format_rfc3339_seconds(now + slack).to_string();
    // The plan every shard runs, checked here as shard 0 would check it.
    let mut checked = run.clone();
    checked.shard = Some(shard.to_string());
    checked.start_at = Some(start.clone());
    let plan = crate::planning::plan(&checked)?;
    let mut notes = Vec::new();
    let name = job_name(args, &plan.name, &mut notes);
    let (command, passwords, preset_text) = pod_command(args, &run, &start)?;
    let docs = documents(args, &name, command, &passwords, preset_text);
    let mut out = format!(
        "# bakeoff {}: experiment {} as {} shards, starting together at {start}.\n#   kubectl apply -f THIS_FILE\n#   kubectl wait --for=condition=complete job/{name} --timeout=1h\n#   for p in $(kubectl get pods -l bakeoff/run={name} -o name); do kubectl logs $p > ${{p#pod/}}.log; done\n#   bakeoff merge {name}-*.log -o merged.json\n",
        env!("CARGO_PKG_VERSION"),
        plan.name,
        args.shards,
    );
    if !passwords.vars.is_empty() {
        let _ = writeln!(
            out,
            "# The Secret {} holds the targets' passwords in clear: keep this file as you keep them.",
            secret_name(&name)
        );
    }
    for d in &docs {
        out.push_str("---\n");
        yaml(d, 0, &mut out);
    }
    Ok(Manifests { yaml: out, notes })
}

/// The name of the Secret that holds Job `name`'s passwords.
fn secret_name(name: &str) -> String {
    format!("{name}-passwords")
}

/// Checks `args`' own flags; the shard of the plan's check and the slack.
fn checked_flags(args: &KubernetesArgs) -> Result<(Shard, Duration), AppError> {
    let usage = |m: String| AppError::Usage(m);
    let shard = Shard::new(0, args.shards).map_err(|m| usage(format!("flag --shards: {m}")))?;
    let slack = check_slack(&args.slack).map_err(usage)?;
    check_cpu(&args.cpu).map_err(usage)?;
    check_memory(&args.memory).map_err(usage)?;
    check_image(&args.image).map_err(usage)?;
    if let Some(ns) = &args.namespace {
        check_label("--namespace", "a namespace", ns, MAX_NAMESPACE).map_err(usage)?;
    }
    if let Some(n) = &args.name {
        check_label("--name", "a Job name", n, MAX_NAME).map_err(usage)?;
    }
    Ok((shard, slack))
}

/// The run's arguments (after `--`), refusing those each pod gets from
/// bakeoff kubernetes.
fn run_of(args: &KubernetesArgs) -> Result<RunArgs, AppError> {
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
    Ok(run)
}

/// The Job's name: as given (checked already), or made from the
/// experiment's name, with a note when it had to change.
fn job_name(args: &KubernetesArgs, plan_name: &str, notes: &mut Vec<String>) -> String {
    match &args.name {
        Some(n) => n.clone(),
        None => {
            let wanted = format!("bakeoff-{plan_name}");
            let name = dns_label(&wanted, MAX_NAME).unwrap_or_else(|| "bakeoff".into());
            if name != wanted {
                notes.push(format!(
                    "the Job is named `{name}`: `{wanted}`, made from the experiment's name, is not a Kubernetes name ({LABEL_RULE}, at most {MAX_NAME} characters); give --name to choose another"
                ));
            }
            name
        }
    }
}

/// What each pod runs: `run`, the preset (from the ConfigMap when it is a
/// file, whose text comes back), the run's arguments with every target's
/// password moved into the Secret's variables (which come back), and
/// what bakeoff kubernetes sets for each pod.
fn pod_command(
    args: &KubernetesArgs,
    run: &RunArgs,
    start: &str,
) -> Result<(Vec<String>, Passwords, Option<String>), AppError> {
    let usage = |m: String| AppError::Usage(m);
    // A preset file goes into the ConfigMap; a built-in one is in the
    // binary.
    let mut passwords = Passwords::default();
    let mut preset_text = None;
    let mut command: Vec<String> = vec!["run".into()];
    if let Some(p) = &run.preset {
        if Path::new(p).is_file() {
            let text = std::fs::read_to_string(p)
                .map_err(|e| usage(format!("cannot read the preset {p}: {e}")))?;
            preset_text = Some(passwords.take_from_preset(p, text)?);
            command.push(format!("{PRESET_DIR}/preset.toml"));
        } else {
            command.push(p.clone());
        }
    }
    let preset_given = run.preset.as_deref();
    let mut moved_targets = Vec::new();
    for value in &run.targets {
        let moved = passwords.take_list(value)?;
        if moved != *value {
            moved_targets.push((value.clone(), moved));
        }
    }
    command.extend(
        args.run
            .iter()
            .filter(|a| Some(a.as_str()) != preset_given)
            .map(|a| with_targets_moved(a, &moved_targets)),
    );
    // What was not moved (a target in a form the matching above does not
    // know) is refused rather than left in the Job in clear.
    if let Some(a) = command.iter().find(|a| redact(a) != **a) {
        return Err(usage(format!(
            "the run's argument `{}` holds a password that bakeoff kubernetes cannot move into the Secret; give each target as `-t URL` or `--target=URL`",
            redact(a)
        )));
    }
    command.extend(
        [
            "--start-at",
            start,
            "-o",
            &format!("{RESULTS_DIR}/result.json"),
            "--no-html",
            "--quiet",
            "--print-result",
        ]
        .map(String::from),
    );

    Ok((command, passwords, preset_text))
}

/// The Secret (when there are passwords), the ConfigMap (when the preset
/// is a file) and the Job, in that order.
fn documents(
    args: &KubernetesArgs,
    name: &str,
    command: Vec<String>,
    passwords: &Passwords,
    preset_text: Option<String>,
) -> Vec<Value> {
    let namespace = args.namespace.as_ref().map(|n| json!(n));
    let meta = |object: &str| {
        let mut m = json!({ "name": object, "labels": { "app.kubernetes.io/name": "bakeoff", "bakeoff/run": &name } });
        if let Some(ns) = &namespace {
            m["namespace"] = ns.clone();
        }
        m
    };
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
    let mut env = vec![
        json!({ "name": bakeoff_core::plan::shard::COUNT_ENV, "value": args.shards.to_string() }),
    ];
    let mut docs = Vec::new();
    let secret = secret_name(name);
    if !passwords.vars.is_empty() {
        let data: serde_json::Map<String, Value> = passwords
            .vars
            .iter()
            .map(|(var, password)| (var.clone(), json!(password)))
            .collect();
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta(&secret),
            "type": "Opaque",
            "stringData": data,
        }));
        for (var, _) in &passwords.vars {
            env.push(json!({
                "name": var,
                "valueFrom": { "secretKeyRef": { "name": &secret, "key": var } },
            }));
        }
    }
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
        "metadata": meta(name),
        "spec": {
            "completionMode": "Indexed",
            "completions": args.shards,
            "parallelism": args.shards,
            // Never again: a rerun shard would measure another window.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": { "app.kubernetes.io/name": "bakeoff", "bakeoff/run": &name } },
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": { "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": { "matchLabels": { "bakeoff/run": &name } },
                            "topologyKey": "kubernetes.io/hostname",
                        }],
                    }},
                    "containers": [{
                        "name": "bakeoff",
                        "image": &args.image,
                        "args": command,
                        "env": env,
                        "resources": { "requests": resources.clone(), "limits": resources },
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    }));
    docs
}

/// The targets' passwords, taken out of their URLs: each URL the pods get
/// reads its password from a variable of its own, which the Job fills
/// from the Secret.
#[derive(Default)]
struct Passwords {
    /// Variable → password, in the order the URLs came.
    vars: Vec<(String, String)>,
    /// Each URL with a password, as given → as the pods get it.
    moved: Vec<(String, String)>,
}

impl Passwords {
    /// `url` reading its password from a variable (the same variable for
    /// the same URL); `url` as it is when it has no password.
    fn take(&mut self, url: &str) -> Result<String, AppError> {
        if let Some((_, moved)) = self.moved.iter().find(|(given, _)| given == url) {
            return Ok(moved.clone());
        }
        let var = format!("{PASSWORD_VAR_PREFIX}{}", self.vars.len() + 1);
        let Some((moved, password)) = password_to_env(url, &var) else {
            return Ok(url.to_string());
        };
        let password = match password {
            UrlPassword::Written(p) => p,
            // Read here, where the user set it, for the Secret.
            UrlPassword::FromEnv(mine) => std::env::var(&mine)
                .ok()
                .filter(|p| !p.is_empty())
                .ok_or_else(|| {
                    AppError::Usage(format!(
                        "URL `{}` reads its password from the environment variable {mine}, which is not set here; bakeoff kubernetes puts the password into the Secret, so set {mine}",
                        redact(url)
                    ))
                })?,
        };
        self.vars.push((var, password));
        self.moved.push((url.to_string(), moved.clone()));
        Ok(moved)
    }

    /// A `--target` value (one target or a comma-separated list) with its
    /// passwords taken out.
    fn take_list(&mut self, value: &str) -> Result<String, AppError> {
        let given = split_target_list(value);
        let parts = given
            .iter()
            .map(|t| self.take(t))
            .collect::<Result<Vec<_>, _>>()?;
        let moved = parts.join(",");
        // The pods split the list again: it must come apart the same way.
        if split_target_list(&moved) != parts {
            return Err(AppError::Usage(format!(
                "the targets `{}` cannot be given to the pods without their passwords as one list; give each with its own -t",
                redact(value)
            )));
        }
        Ok(moved)
    }

    /// The preset file's `text` (at `path`) with the passwords of its
    /// targets taken out, for the ConfigMap. A target written so that its
    /// string cannot be replaced (escapes, or the URL elsewhere in the
    /// file) is refused rather than put into the ConfigMap in clear.
    fn take_from_preset(&mut self, path: &str, text: String) -> Result<String, AppError> {
        let raw = RawPreset::parse(&text, path)?;
        let mut out = text;
        let mut want = Vec::new();
        for url in raw.targets.iter().flatten() {
            let moved = self.take(url)?;
            if moved != *url {
                for quote in ['"', '\''] {
                    out = out.replace(
                        &format!("{quote}{url}{quote}"),
                        &format!("{quote}{moved}{quote}"),
                    );
                }
            }
            want.push((url, moved));
        }
        let rewritten = RawPreset::parse(&out, path)?;
        let got = rewritten.targets.unwrap_or_default();
        for (i, (url, moved)) in want.iter().enumerate() {
            if got.get(i) != Some(moved) || (moved != *url && out.contains(url.as_str())) {
                return Err(AppError::Usage(format!(
                    "the preset file {path} gives the target `{}` in a form bakeoff kubernetes cannot rewrite to keep its password out of the ConfigMap; write it as a plain string once, or leave it out and give it after -- with -t",
                    redact(url)
                )));
            }
        }
        Ok(out)
    }
}

/// `arg` with each target value in `moved` (given → with its passwords
/// taken out) replaced, where `arg` is that value: on its own (after
/// `-t`/`--target`) or glued to the flag (`--target=URL`, `-tURL`).
fn with_targets_moved(arg: &str, moved: &[(String, String)]) -> String {
    for (given, to) in moved {
        for flag in ["", "--target=", "-t=", "-t"] {
            if arg.strip_prefix(flag) == Some(given.as_str()) {
                return format!("{flag}{to}");
            }
        }
    }
    arg.to_string()
}

/// Checks `--slack`: a duration of [`MIN_SLACK`] or more.
fn check_slack(text: &str) -> Result<Duration, String> {
    let slack =
        bakeoff_core::units::parse_duration(text).map_err(|m| format!("flag --slack: {m}"))?;
    if slack < MIN_SLACK {
        return Err(format!(
            "flag --slack: `{text}` leaves the pods no time to be scheduled, pull the image, connect and load before they start together; give {}s or more, e.g. --slack 2m (the default)",
            MIN_SLACK.as_secs()
        ));
    }
    Ok(slack)
}

/// A plain decimal number (`2`, `1.5`, `.25`), and how many decimals it
/// has; `None` for anything else.
fn decimal(text: &str) -> Option<(f64, usize)> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return None;
    }
    Some((text.parse().ok()?, fraction.len()))
}

/// Checks `--cpu`: cores (`2`, `1.5`) or whole millicores (`500m`), more
/// than 0, in steps of 1m (Kubernetes gives no finer share).
fn check_cpu(text: &str) -> Result<(), String> {
    let accepted = "give cores (`2`, `1.5`) or millicores (`500m`), more than 0, e.g. --cpu 2";
    let millicores = match text.strip_suffix('m') {
        Some(m) => decimal(m).filter(|(_, places)| *places == 0).map(|(v, _)| v),
        None => match decimal(text) {
            Some((_, places)) if places > 3 => {
                return Err(format!(
                    "flag --cpu: `{text}` is finer than 1m (a thousandth of a core), the smallest share Kubernetes gives; {accepted}"
                ))
            }
            other => other.map(|(v, _)| v * 1000.0),
        },
    };
    match millicores {
        Some(m) if m > 0.0 => Ok(()),
        Some(_) => Err(format!("flag --cpu: `{text}` is no CPU at all; {accepted}")),
        None if text.starts_with('-') => {
            Err(format!("flag --cpu: `{text}` is negative; {accepted}"))
        }
        None => Err(format!(
            "flag --cpu: `{text}` is not a CPU quantity; {accepted}"
        )),
    }
}

/// Checks `--memory`: a Kubernetes quantity of bytes (`2Gi`, `512Mi`,
/// `1G`, `128e6`, plain bytes), more than 0.
fn check_memory(text: &str) -> Result<(), String> {
    let accepted = "give bytes, plain or with a suffix Ki, Mi, Gi, Ti (powers of 2) or k, M, G, T (powers of 10), more than 0, e.g. --memory 2Gi";
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let known = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "k" | "M" | "G" | "T" | "P" | "E"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .is_some_and(|exp| !exp.is_empty() && exp.bytes().all(|b| b.is_ascii_digit()));
    match decimal(number) {
        Some((v, _)) if known && v > 0.0 => Ok(()),
        Some(_) if known => Err(format!(
            "flag --memory: `{text}` is no memory at all; {accepted}"
        )),
        _ if text.starts_with('-') => {
            Err(format!("flag --memory: `{text}` is negative; {accepted}"))
        }
        _ => {
            // `2GB`, `2gb`, `512m`: the usual slips, and what they meant.
            let unit = suffix.trim_end_matches(['B', 'b']).trim_end_matches('i');
            let meant = match unit.to_ascii_lowercase().as_str() {
                u @ ("k" | "m" | "g" | "t") if !number.is_empty() => {
                    format!(" (`{number}{}i`?)", u.to_ascii_uppercase())
                }
                _ => String::new(),
            };
            Err(format!(
                "flag --memory: `{text}` is not a Kubernetes quantity{meant}; {accepted}"
            ))
        }
    }
}

/// Checks `--image`: an image reference, not empty, without blanks.
fn check_image(text: &str) -> Result<(), String> {
    let example = "e.g. --image registry.example/bakeoff:0.1.0";
    if text.trim().is_empty() {
        return Err(format!(
            "flag --image: `{text}` is no image; give the reference of an image with bakeoff in it, {example}"
        ));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "flag --image: `{text}` has a space or control character in it, which no image reference has; {example}"
        ));
    }
    Ok(())
}

/// Checks that `flag`'s `text` (`what` it names) is a DNS-1123 label of
/// at most `max` characters, suggesting one made from it when it is not.
fn check_label(flag: &str, what: &str, text: &str, max: usize) -> Result<(), String> {
    if is_dns_label(text, max) {
        return Ok(());
    }
    let example = dns_label(text, max).unwrap_or_else(|| "bakeoff-run".into());
    Err(format!(
        "flag {flag}: `{text}` is not {what}: it must be {LABEL_RULE}, at most {max} characters; e.g. {flag} {example}"
    ))
}

/// Whether `text` is a DNS-1123 label of at most `max` characters.
fn is_dns_label(text: &str, max: usize) -> bool {
    let inner = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !text.is_empty()
        && text.len() <= max
        && text.chars().all(|c| inner(c) || c == '-')
        && text.starts_with(inner)
        && text.ends_with(inner)
}

/// `text` made a DNS-1123 label of at most `max` characters: lowercased,
/// anything else `-`, cut; `None` if nothing is left.
fn dns_label(text: &str, max: usize) -> Option<String> {
    let mapped: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let trimmed: String = mapped.trim_matches('-').chars().take(max).collect();
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
            dns_label("bakeoff-004_Peak", MAX_NAME).as_deref(),
            Some("bakeoff-004-peak")
        );
        assert_eq!(dns_label("--", MAX_NAME), None);
        assert_eq!(dns_label(&"x".repeat(80), MAX_NAME).unwrap().len(), 50);
        for good in ["a", "bakeoff-004-peak", "0x", &"x".repeat(50)] {
            assert!(is_dns_label(good, MAX_NAME), "{good}");
        }
        for bad in ["", "A", "a_b", "-a", "a-", "a.b", "ä", &"x".repeat(51)] {
            assert!(!is_dns_label(bad, MAX_NAME), "{bad}");
        }
    }

    /// Each target value loses its passwords to variables, one per URL (the
    /// same URL, the same variable), in a list too, and only an argument
    /// that is the value itself is replaced.
    #[test]
    fn passwords_leave_the_target_arguments() {
        let mut p = Passwords::default();
        let list = "redis://:a@h:1,memcached://:b@h1:1,h2:2";
        let moved = p.take_list(list).unwrap();
        assert_eq!(
            moved,
            "redis://h:1?password_env=BAKEOFF_PASSWORD_1,memcached://h1:1,h2:2?password_env=BAKEOFF_PASSWORD_2"
        );
        assert_eq!(
            p.take("redis://:a@h:1").unwrap(),
            "redis://h:1?password_env=BAKEOFF_PASSWORD_1"
        );
        assert_eq!(p.take("redis://h:1").unwrap(), "redis://h:1");
        assert_eq!(
            p.vars,
            [
                ("BAKEOFF_PASSWORD_1".to_string(), "a".to_string()),
                ("BAKEOFF_PASSWORD_2".to_string(), "b".to_string())
            ]
        );
        let moves = [(
            "redis://:pw@h:1".to_string(),
            "redis://h:1?password_env=V".to_string(),
        )];
        for (arg, want) in [
            ("redis://:pw@h:1", "redis://h:1?password_env=V"),
            (
                "--target=redis://:pw@h:1",
                "--target=redis://h:1?password_env=V",
            ),
            ("-tredis://:pw@h:1", "-tredis://h:1?password_env=V"),
            ("redis://:pw@h:10", "redis://:pw@h:10"),
            ("--clients", "--clients"),
        ] {
            assert_eq!(with_targets_moved(arg, &moves), want, "{arg}");
        }
    }

    /// Kubernetes quantities as `--cpu` and `--memory` take them; all else
    /// is refused, naming the flag and the value.
    #[test]
    fn quantities_are_kubernetes_quantities() {
        for good in ["2", "1.5", ".25", "0.001", "500m", "1m", "16"] {
            assert_eq!(check_cpu(good), Ok(()), "{good}");
        }
        for bad in [
            "", "0", "0m", "0.0", "-1", "two", "1.0005", "1.5m", "2 ", "2c", "1e3", ".",
        ] {
            let e = check_cpu(bad).unwrap_err();
            assert!(e.starts_with(&format!("flag --cpu: `{bad}`")), "{e}");
        }
        for good in [
            "2Gi",
            "512Mi",
            "1G",
            "1.5Gi",
            "2147483648",
            "128e6",
            "1k",
            "64Ki",
        ] {
            assert_eq!(check_memory(good), Ok(()), "{good}");
        }
        for (bad, meant) in [
            ("2GB", "`2Gi`?"),
            ("512m", "`512Mi`?"),
            ("1gib", "`1Gi`?"),
            ("1K", "`1Ki`?"),
            ("0", "no memory"),
            ("0Gi", "no memory"),
            ("-1Gi", "negative"),
            ("", "not a Kubernetes quantity"),
            ("Gi", "not a Kubernetes quantity"),
            ("2e", "not a Kubernetes quantity"),
            ("lots", "not a Kubernetes quantity"),
        ] {
            let e = check_memory(bad).unwrap_err();
            assert!(
                e.starts_with(&format!("flag --memory: `{bad}`")) && e.contains(meant),
                "{bad}: {e}"
            );
        }
    }
}
