//! The targets the user named (or the candidates of a requirement),
//! parsed, told apart and checked against this machine.

use std::collections::BTreeMap;

use super::given::Origin;
use crate::error::PlanError;
use crate::plan::params::param;
use crate::plan::{
    target, Capabilities, Endpoint, LeftOut, Overrides, Point, RawPreset, ReadFrom, Requirement,
    TargetCatalog, TargetSpec, Topology, Workload,
};

/// The targets that can meet `requirements`, each with the settings that
/// make it keep writes as required, and the others with why not.
pub(super) fn candidates(
    targets: Vec<TargetSpec>,
    requirements: &[Requirement],
    servers: &BTreeMap<String, toml::Table>,
    catalog: &dyn TargetCatalog,
) -> Result<(Vec<TargetSpec>, Vec<LeftOut>), PlanError> {
    if requirements.is_empty() {
        return Ok((targets, Vec::new()));
    }
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    'each: for mut spec in targets {
        let caps = catalog
            .capabilities(&spec.name)
            .expect("the targets were checked");
        for r in requirements {
            let why = match *r {
                Requirement::Reach { in_process } if in_process == caps.network => Some(format!(
                    "it is reached {}, and `{r}` is required",
                    if caps.network {
                        "over the network"
                    } else {
                        "in the application's process"
                    }
                )),
                Requirement::Durable { class } => match &spec.endpoint {
                    Endpoint::External { .. } => Some(format!(
                        "bakeoff did not start it, so its settings are its own and declare nothing; name -t {} to let bakeoff start one with settings that keep writes through a {class}",
                        spec.name
                    )),
                    Endpoint::Managed => match catalog.durable_settings(
                        &spec.name,
                        class,
                        // What `--set` or the preset gave counts as given
                        // too: a setting that keeps writes otherwise is
                        // never overridden in silence.
                        &servers
                            .get(&spec.name)
                            .into_iter()
                            .flatten()
                            .map(|(k, v)| {
                                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                                (k.clone(), v)
                            })
                            .chain(spec.variant.clone())
                            .collect(),
                    ) {
                        Ok(extra) => {
                            spec.variant.extend(extra);
                            None
                        }
                        Err(why) => Some(why),
                    },
                },
                _ => None,
            };
            if let Some(why) = why {
                left_out.push(LeftOut {
                    target: spec.label(),
                    why,
                });
                continue 'each;
            }
        }
        kept.push(spec);
    }
    if kept.is_empty() {
        let why: Vec<String> = left_out
            .iter()
            .map(|l| format!("{}: {}", l.target, l.why))
            .collect();
        return Err(Origin::other("--require", "require", true).err(format!(
            "no target can meet these requirements: {}",
            why.join("; ")
        )));
    }
    Ok((kept, left_out))
}

/// The CPUs bakeoff may use on this machine.
pub(in crate::plan) fn machine_cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as u64
}

/// The values of a `server_cpus` axis this machine can give: a preset's
/// values beyond its CPUs are left out, with a note, while one is left
/// (a preset written for two CPUs runs its first point on one); a flag's
/// are the user's own, and refused.
pub(super) fn cpus_this_machine_has(
    values: Vec<serde_json::Value>,
    origin: &Origin,
    notes: &mut Vec<String>,
) -> Result<Vec<serde_json::Value>, PlanError> {
    let here = machine_cpus();
    let fits = |v: &serde_json::Value| v.as_u64().is_none_or(|n| n <= here);
    let (fit, beyond): (Vec<_>, Vec<_>) = values.into_iter().partition(|v| fits(v));
    if beyond.is_empty() {
        return Ok(fit);
    }
    let listed = beyond
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if origin.from_flag || fit.is_empty() {
        return Err(origin.err(format!(
            "this machine lets bakeoff use {here} CPU(s); {listed} cannot be given: give at most {here}"
        )));
    }
    notes.push(format!(
        "This machine lets bakeoff use {here} CPU(s): the point(s) server_cpus = {listed} are left out."
    ));
    Ok(fit)
}

/// The targets: `--target` flags, else the preset's, else the catalog's
/// default comparison; each must be able to run every point.
pub(super) fn targets(
    raw: &RawPreset,
    flags: &Overrides,
    catalog: &dyn TargetCatalog,
    points_of: &dyn Fn(&str) -> Vec<Point>,
) -> Result<Vec<TargetSpec>, PlanError> {
    let (texts, origin) = target_texts(raw, flags, catalog);
    if texts.iter().all(|t| t.is_empty()) {
        return Err(origin.err("no targets; name at least one, e.g. --target redis"));
    }
    let mut targets = Vec::new();
    for text in texts.iter().filter(|t| !t.is_empty()) {
        let spec = target::parse_target(text, catalog, &flags.env).map_err(|m| origin.err(m))?;
        let caps = catalog
            .capabilities(&spec.name)
            .expect("parse_target checked the name");
        let points = points_of(&spec.name);
        let some_replica = points
            .iter()
            .any(|p| p.workload.topology == Topology::PrimaryReplica);
        for p in &points {
            check_target_at(&spec, &caps, p, some_replica, flags, catalog, &origin)?;
        }
        targets.push(spec);
    }
    tell_apart(&mut targets).map_err(|m| origin.err(m))?;
    Ok(targets)
}

/// The targets' texts as given, and where they came from: `--target`
/// flags (each perhaps a list), else the preset's, else the catalog's
/// default comparison.
fn target_texts(
    raw: &RawPreset,
    flags: &Overrides,
    catalog: &dyn TargetCatalog,
) -> (Vec<String>, Origin) {
    if !flags.targets.is_empty() {
        (
            flags
                .targets
                .iter()
                .flat_map(|t| split_target_list(t))
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>(),
            Origin::other("--target", "targets", true),
        )
    } else if let Some(t) = &raw.targets {
        (t.clone(), Origin::other("--target", "targets", false))
    } else {
        (
            catalog.default_targets(),
            Origin::other("--target", "targets", false),
        )
    }
}

/// Refuses target `spec` (able to do `caps`) at point `p` where the point
/// asks what it cannot do: operations, nodes, reads from a replica, a
/// topology, a link or a fault it cannot have. `some_replica`: whether
/// any point of the target has a replica.
fn check_target_at(
    spec: &TargetSpec,
    caps: &Capabilities,
    p: &Point,
    some_replica: bool,
    flags: &Overrides,
    catalog: &dyn TargetCatalog,
    origin: &Origin,
) -> Result<(), PlanError> {
    target::check_capabilities(&spec.name, caps, &p.workload).map_err(|m| origin.err(m))?;
    target::check_nodes_of_url(spec, &p.workload).map_err(|m| origin.err(m))?;
    let topology = p.workload.topology;
    // Reads from a replica where no point has one would read from
    // the primary without a word.
    if p.workload.read_from == ReadFrom::Replica && !some_replica {
        return Err(
            Origin::param(
                param("read_from").expect("declared"),
                flags.workload.contains_key("read_from"),
            ).err(format!(
                "reads from a replica need one: use --topology primary-replica (not {topology}), or sweep it with single as the baseline"
            )),
        );
    }
    // A single server serves the reads itself (the baseline of a
    // replication sweep); shards and clusters have no replica.
    if p.workload.read_from == ReadFrom::Replica
        && !matches!(topology, Topology::Single | Topology::PrimaryReplica)
    {
        return Err(Origin::param(
            param("read_from").expect("declared"),
            flags.workload.contains_key("read_from"),
        )
        .err(format!(
            "reads from a replica need one: use --topology primary-replica (not {topology})"
        )));
    }
    if topology != Topology::Single {
        check_topology(spec, caps, &p.workload, catalog, origin)?;
    }
    if let Endpoint::External { more, .. } = &spec.endpoint {
        if !more.is_empty() && !caps.topologies.iter().any(|t| t == "shards") {
            return Err(origin.err(format!(
                "{}: several hosts in one URL make shards, and target {} cannot be sharded; give one host (targets that can: those with --topology shards, see `bakeoff list`)",
                spec.label(),
                spec.name
            )));
        }
    }
    if let (Some(l), false) = (&p.workload.link, caps.network) {
        let can: Vec<String> = catalog
            .names()
            .into_iter()
            .filter(|n| catalog.capabilities(n).is_some_and(|c| c.network))
            .collect();
        return Err(origin.err(format!(
            "--link {l}: target {} runs inside bakeoff, with no network to delay; a link is for the servers: {}",
            spec.label(),
            can.join(", ")
        )));
    }
    if let (Some(l), Endpoint::External { host, options, .. }) = (&p.workload.link, &spec.endpoint)
    {
        // PostgreSQL's socket directory as the host, or MySQL's
        // `?socket=PATH`.
        let socket = options.get("socket").map(String::as_str);
        if let Some(path) = socket.or(host.starts_with('/').then_some(host.as_str())) {
            return Err(origin.err(format!(
                "--link {l}: a link relays TCP, and {} is reached by its Unix socket ({path}); give the server's host:port in the URL, without a socket, to run it over a link",
                spec.label()
            )));
        }
    }
    if let (Some(f), Endpoint::External { .. }) = (&p.workload.fault, &spec.endpoint) {
        return Err(origin.err(format!(
            "--fault {f} needs a server bakeoff started; {} runs elsewhere (name the target, e.g. -t {}, to have bakeoff start it)",
            spec.label(),
            spec.name
        )));
    }
    Ok(())
}

/// Refuses target `spec` (able to do `caps`) in a topology other than a
/// single server, where it cannot have it, where `w` also asks for a
/// fault or background work (those strike one server), or where the
/// target is a URL (bakeoff starts the nodes itself).
fn check_topology(
    spec: &TargetSpec,
    caps: &Capabilities,
    w: &Workload,
    catalog: &dyn TargetCatalog,
    origin: &Origin,
) -> Result<(), PlanError> {
    let topology = w.topology;
    if !caps.topologies.iter().any(|t| t == topology.kind()) {
        let can: Vec<String> = catalog
            .names()
            .into_iter()
            .filter(|n| {
                catalog
                    .capabilities(n)
                    .is_some_and(|c| c.topologies.iter().any(|t| t == topology.kind()))
            })
            .collect();
        return Err(origin.err(format!(
            "--topology {topology}: target {} cannot have it; {}",
            spec.label(),
            if can.is_empty() {
                "no target bakeoff knows can yet".to_string()
            } else {
                format!("targets that can: {}", can.join(", "))
            }
        )));
    }
    if let Some(f) = &w.fault {
        return Err(origin.err(format!(
            "--fault {f} with --topology {topology}: faults strike a single server; drop one of them"
        )));
    }
    if let Some(w) = &w.provoke {
        return Err(origin.err(format!(
            "--provoke {w} with --topology {topology}: background work is asked of a single server; drop one of them"
        )));
    }
    if !matches!(spec.endpoint, Endpoint::Managed) {
        return Err(origin.err(format!(
            "--topology {topology}: bakeoff starts the nodes itself; name the target (e.g. -t {}) rather than a URL",
            spec.name
        )));
    }
    Ok(())
}

/// Names targets that would share a name apart: two URLs of one kind by
/// their address (`redis@127.0.0.1:6380`), the same managed target given
/// twice by its turn (`redis#2`); a name the user gave twice is refused.
fn tell_apart(targets: &mut [TargetSpec]) -> Result<(), String> {
    for i in 0..targets.len() {
        let id = targets[i].id();
        let same: Vec<usize> = (0..targets.len())
            .filter(|&j| targets[j].id() == id)
            .collect();
        if same.len() < 2 {
            continue;
        }
        if targets[i].alias.is_some() {
            return Err(format!(
                "two targets are called `{id}`; give each its own name (-t NAME=TARGET)"
            ));
        }
        let addresses: Vec<Option<String>> = same.iter().map(|&j| targets[j].address()).collect();
        let distinct = addresses.iter().all(Option::is_some)
            && addresses
                .iter()
                .enumerate()
                .all(|(a, x)| addresses[a + 1..].iter().all(|y| y != x));
        for (turn, &j) in same.iter().enumerate() {
            targets[j].alias = Some(match (&addresses[turn], distinct) {
                (Some(address), true) => format!("{}@{address}", targets[j].name),
                _ => format!("{id}#{}", turn + 1),
            });
        }
    }
    Ok(())
}

/// Splits `-t a,b[k=v,k2=v2],c` at the commas between targets, not at
/// those between a variant's settings, nor at those between the hosts of
/// one URL (`memcached://h1:11211,h2:11211`: a `host:port` after a URL is
/// another node of it, the last one followed by the URL's query, if any).
pub fn split_target_list(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in split_outside_brackets(text) {
        // The last node carries the URL's query, if it has one.
        let node = part.split_once('?').map_or(part, |(node, _)| node);
        let node_of_previous = !part.contains("://")
            && node.rsplit_once(':').is_some_and(|(h, p)| {
                !h.is_empty() && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
            });
        match out.last_mut() {
            Some(prev) if node_of_previous && prev.contains("://") => {
                prev.push(',');
                prev.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// Splits at the commas outside `[...]`.
fn split_outside_brackets(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}
