//! Targets as the plan sees them: what each can do, where it lives, and
//! the parsing of `name` or `scheme://[user][:password@]host:port`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{RequestMode, Workload};
use crate::error::TargetError;
use crate::workload::OpKind;

/// What a target can do, as the plan needs to know it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capabilities {
    /// Operation kinds supported, by name.
    pub ops: Vec<OpKind>,
    /// Whether requests can be pipelined on one connection.
    pub pipelining: bool,
    /// Whether bakeoff can start this target itself.
    pub managed: bool,
    /// URL scheme for external endpoints, if any.
    pub url_scheme: Option<String>,
    /// Whether the load can insert many records per request.
    pub batch_load: bool,
    /// Request modes besides `op`.
    pub requests: Vec<RequestMode>,
    /// Whether bakeoff can kill and restart it (`--fault`), when it
    /// started it.
    #[serde(default)]
    pub faults: bool,
    /// Whether it is spoken to over the network (a server, not an engine
    /// in bakeoff's process), so that a link can sit in between (`--link`).
    #[serde(default)]
    pub network: bool,
    /// Topologies besides `single` it can have (`shards`, …; see
    /// [`super::Topology::kind`]).
    #[serde(default)]
    pub topologies: Vec<String>,
}

/// The targets bakeoff knows, as the plan sees them (implemented by the
/// driver registry, so that core stays free of driver code).
pub trait TargetCatalog {
    /// Capabilities of target `name`, or `None` if unknown.
    fn capabilities(&self, name: &str) -> Option<Capabilities>;
    /// Names of every known target.
    fn names(&self) -> Vec<String>;
    /// Target name for URL scheme `scheme`.
    fn target_for_scheme(&self, scheme: &str) -> Option<String>;
    /// Checks a managed server's settings table (`[servers.NAME]`).
    fn check_settings(&self, name: &str, settings: &toml::Table) -> Result<(), TargetError>;
    /// Targets of the default comparison.
    fn default_targets(&self) -> Vec<String>;
}

/// Where a target lives.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Endpoint {
    /// bakeoff starts and stops the server (or opens the engine) itself.
    Managed,
    /// A server someone else runs.
    External {
        /// The URL with any password replaced by `***`.
        url: String,
        /// Host name or address.
        host: String,
        /// TCP port.
        port: u16,
        /// Options from the URL's query string.
        options: BTreeMap<String, String>,
        /// More nodes of the same kind after the first, from a URL that
        /// names several (`memcached://h1:p1,h2:p2`): shards of one target,
        /// keys spread over them by the client.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        more: Vec<(String, u16)>,
    },
}

/// One target of the plan.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetSpec {
    /// Driver name, e.g. `redis`.
    pub name: String,
    /// Managed or external.
    pub endpoint: Endpoint,
    /// Password for an external endpoint: never serialised, never printed.
    #[serde(skip)]
    pub password: Option<String>,
    /// User name for an external endpoint, if the URL gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Server settings of this variant of a managed target, over its
    /// `[servers.NAME]` table: `redis[persistence=aof-always]` sets
    /// `persistence`. The same server under several settings is several
    /// targets of one experiment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variant: BTreeMap<String, String>,
}

impl TargetSpec {
    /// What runs and reports call it: `redis`, or
    /// `redis[persistence=aof-always]` for a variant.
    pub fn id(&self) -> String {
        if self.variant.is_empty() {
            return self.name.clone();
        }
        let settings: Vec<String> = self
            .variant
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}[{}]", self.name, settings.join(","))
    }

    /// `redis`, `redis[persistence=aof-always]` or
    /// `redis (redis://127.0.0.1:6379)`.
    pub fn label(&self) -> String {
        match &self.endpoint {
            Endpoint::Managed => self.id(),
            Endpoint::External { url, .. } => format!("{} ({url})", self.name),
        }
    }
}

/// Splits `redis[persistence=aof-always,port=7000]` into the name and its
/// settings.
fn split_variant(text: &str) -> Result<(&str, BTreeMap<String, String>), String> {
    let Some((name, rest)) = text.split_once('[') else {
        return Ok((text, BTreeMap::new()));
    };
    let usage = format!("write NAME[KEY=VALUE,...], e.g. {name}[port=7000]");
    let inner = rest
        .strip_suffix(']')
        .ok_or_else(|| format!("`{text}` has no closing `]`; {usage}"))?;
    let mut settings = BTreeMap::new();
    for pair in inner.split(',') {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` in `{text}` is not KEY=VALUE; {usage}"))?;
        settings.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok((name, settings))
}

/// Checks that target `name` can run workload `w` (one point of the plan).
pub(super) fn check_capabilities(
    name: &str,
    caps: &Capabilities,
    w: &Workload,
) -> Result<(), String> {
    for k in w.mix.kinds() {
        if !caps.ops.contains(&k) {
            return Err(format!(
                "target {name} cannot do `{}`; remove it from the mix",
                k.name()
            ));
        }
    }
    if w.pipeline > 1 && !caps.pipelining {
        return Err(format!(
            "target {name} does not support pipelining; use --pipeline 1"
        ));
    }
    if w.request != RequestMode::Op && !caps.requests.contains(&w.request) {
        return Err(format!(
            "target {name} cannot make `{}` requests; use --request op{}",
            w.request.name(),
            if w.request == RequestMode::Phases {
                " (phased requests are MariaDB's)"
            } else {
                " (a connection per request is for the SQL and document stores)"
            }
        ));
    }
    if let Some(f) = &w.fault {
        if !caps.faults {
            return Err(format!(
                "--fault {f}: target {name} cannot be killed and restarted by bakeoff; faults are for the servers it starts"
            ));
        }
    }
    if w.batch > 1 && !caps.batch_load {
        return Err(format!(
            "target {name} cannot load in batches; use --batch 1 (batches are for the SQL and document stores)"
        ));
    }
    Ok(())
}

/// Parses `redis`, `redis://[user][:password@]host:port[?k=v]`.
pub(super) fn parse_target(text: &str, catalog: &dyn TargetCatalog) -> Result<TargetSpec, String> {
    let Some((scheme, rest)) = text.split_once("://") else {
        let (name, variant) = split_variant(text)?;
        let caps = catalog.capabilities(name).ok_or_else(|| {
            format!(
                "unknown target `{name}`; known targets: {} (see `bakeoff list`)",
                catalog.names().join(", ")
            )
        })?;
        if !caps.managed {
            return Err(format!(
                "target {name} cannot be started by bakeoff; give its URL instead"
            ));
        }
        return Ok(TargetSpec {
            name: name.to_string(),
            endpoint: Endpoint::Managed,
            password: None,
            user: None,
            variant,
        });
    };
    let name = catalog.target_for_scheme(scheme).ok_or_else(|| {
        format!(
            "unknown URL scheme `{scheme}://`; known targets: {} (see `bakeoff list`)",
            catalog.names().join(", ")
        )
    })?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let rest = rest.trim_end_matches('/');
    let (auth, hostport) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    let (user, password) = match auth {
        None => (None, None),
        Some(a) => match a.split_once(':') {
            Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
            None => (Some(a.to_string()), None),
        },
    };
    let hostport = hostport.split('/').next().unwrap_or(hostport);
    let mut nodes = Vec::new();
    for hostport in hostport.split(',') {
        let (host, port) = hostport.rsplit_once(':').ok_or_else(|| {
            format!(
                "URL `{}` has no port; write e.g. {scheme}://127.0.0.1:6379",
                redact(text)
            )
        })?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{port}` in `{}` is not a port number", redact(text)))?;
        if host.is_empty() {
            return Err(format!("URL `{}` has no host", redact(text)));
        }
        nodes.push((host.to_string(), port));
    }
    let (host, port) = nodes.remove(0);
    let mut options = BTreeMap::new();
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        options.insert(k.to_string(), v.to_string());
    }
    Ok(TargetSpec {
        name,
        endpoint: Endpoint::External {
            url: redact(text),
            host,
            port,
            options,
            more: nodes,
        },
        password,
        user,
        variant: BTreeMap::new(),
    })
}

/// Replaces the password of a URL with `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}
