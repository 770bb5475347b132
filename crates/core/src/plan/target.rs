//! Targets as the plan sees them: what each can do, where it lives, and
//! the parsing of `name` or `scheme://[user][:password@]host:port`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Environment, RequestMode, Workload};
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
    /// Query-string keys its URL takes besides the credentials, e.g.
    /// `dbname` (which the URL's path gives too); others are refused.
    #[serde(default)]
    pub url_options: Vec<String>,
    /// Whether its URL may carry a password or a user (memcached's takes
    /// neither).
    pub credentials: bool,
    /// Why it cannot scan, when `ops` lacks scans.
    #[serde(default)]
    pub no_scan: Option<String>,
    /// Background work it can be asked to start (`--provoke`).
    #[serde(default)]
    pub provokes: Vec<super::Work>,
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
    /// The settings, besides those `given`, under which managed target
    /// `name` promises acknowledged writes survive at least `class`, from
    /// its declaration (none when it does already); why not, when no
    /// setting of its does.
    fn durable_settings(
        &self,
        name: &str,
        class: crate::durability::DurableTo,
        _given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        Err(format!(
            "{name} declares nothing of what its settings keep through a {class}"
        ))
    }
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
    /// The name the user gave it (`-t cache-a=redis://…`), or the one
    /// bakeoff gave two URL targets of one kind (`redis@127.0.0.1:6380`):
    /// what runs and reports call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
}

impl TargetSpec {
    /// What runs and reports call it: `redis`, or
    /// `redis[persistence=aof-always]` for a variant.
    pub fn id(&self) -> String {
        if let Some(alias) = &self.alias {
            return alias.clone();
        }
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
            Endpoint::External { url, .. } => format!("{} ({url})", self.id()),
        }
    }

    /// `host:port` of an external endpoint's first node.
    pub fn address(&self) -> Option<String> {
        match &self.endpoint {
            Endpoint::Managed => None,
            Endpoint::External { host, port, .. } => Some(format!("{host}:{port}")),
        }
    }
}

/// Splits a user's name off a target: `cache-a=redis://…` gives
/// `(Some("cache-a"), "redis://…")`. A name is letters, digits, `-`, `_`
/// and `.`, starting with a letter; `redis[persistence=aof]` and a URL's
/// query are not names.
pub fn split_alias(text: &str) -> (Option<&str>, &str) {
    match text.split_once('=') {
        Some((name, rest))
            if name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
        {
            (Some(name), rest)
        }
        _ => (None, text),
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

/// Checks that the servers one URL names (shards of one target, keys
/// spread over them by the client) can run workload `w`: scans and
/// records of several fields need one server, as on a topology of several.
pub(super) fn check_nodes_of_url(spec: &TargetSpec, w: &Workload) -> Result<(), String> {
    let Endpoint::External { more, .. } = &spec.endpoint else {
        return Ok(());
    };
    let nodes = 1 + more.len();
    if nodes == 1 {
        return Ok(());
    }
    if w.mix.has(OpKind::Scan) {
        return Err(format!(
            "scans cannot run on the {nodes} servers of {}: a scan reads records in key order, and its records are spread over several servers; name a single server",
            spec.label()
        ));
    }
    if w.fields > 1 {
        return Err(format!(
            "records of {} fields do not go with several servers (each node's request counts do not yet tell an update's read from its write), as {} names; leave out --fields or name a single server",
            w.fields,
            spec.label()
        ));
    }
    Ok(())
}

/// Checks that target `name` can run workload `w` (one point of the plan).
pub(super) fn check_capabilities(
    name: &str,
    caps: &Capabilities,
    w: &Workload,
) -> Result<(), String> {
    for k in w.mix.kinds() {
        if !caps.ops.contains(&k) {
            let why = match (k, &caps.no_scan) {
                (OpKind::Scan, Some(why)) => format!(" ({why})"),
                _ => String::new(),
            };
            return Err(format!(
                "target {name} cannot do `{}`{why}; remove it from the mix",
                k.name()
            ));
        }
    }
    if w.mix.has(OpKind::Scan) {
        if w.topology.nodes() > 1 {
            let why = match w.topology {
                super::Topology::PrimaryReplica => "bakeoff does not send scans to a replica",
                _ => "a scan reads records in key order, and its records are spread over several servers",
            };
            return Err(format!(
                "scans cannot run on {} of {name}: {why}; use a single server",
                w.topology
            ));
        }
        if w.fault.is_some() && !caps.network {
            return Err(format!(
                "scans on {name} cannot run with a fault: the engine is then served from a child process over RESP, which has no scan; leave out the fault or the scans"
            ));
        }
    }
    if let Some(p) = w.provoke {
        if !caps.provokes.contains(&p.work) {
            let can = match caps.provokes.as_slice() {
                [] => "none".to_string(),
                list => list.iter().map(|w| w.name()).collect::<Vec<_>>().join(", "),
            };
            return Err(format!(
                "target {name} cannot be asked for `{}` (--provoke); what it can be asked for: {can}",
                p.work.name()
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

/// The query-string key of a target URL that names the environment
/// variable its password is read from, instead of the URL holding it:
/// `redis://host:6379?password_env=REDIS_PASSWORD`. The password then stays
/// out of the command line, the process list and a Kubernetes Job's
/// arguments (`bakeoff kubernetes` writes its URLs so). The variable's
/// value is the password as it is, not `%XX`-encoded.
pub const PASSWORD_ENV_KEY: &str = "password_env";

/// Parses `redis`, `redis://[user][:password@]host:port[?k=v]`; a
/// `password_env=NAME` in the query reads the password from variable NAME
/// of `env`.
pub fn parse_target(
    text: &str,
    catalog: &dyn TargetCatalog,
    env: &Environment,
) -> Result<TargetSpec, String> {
    let (alias, text) = split_alias(text);
    let mut spec = parse_unnamed(text, catalog, env)?;
    spec.alias = alias.map(str::to_string);
    Ok(spec)
}

/// A target bakeoff starts, named without a URL (`redis`,
/// `redis[appendfsync=always]`).
fn parse_managed(text: &str, catalog: &dyn TargetCatalog) -> Result<TargetSpec, String> {
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
    Ok(TargetSpec {
        name: name.to_string(),
        endpoint: Endpoint::Managed,
        password: None,
        user: None,
        variant,
        alias: None,
    })
}

/// [`parse_target`] of a target without a user's name.
fn parse_unnamed(
    text: &str,
    catalog: &dyn TargetCatalog,
    env: &Environment,
) -> Result<TargetSpec, String> {
    let Some((scheme, rest)) = text.split_once("://") else {
        return parse_managed(text, catalog);
    };
    let name = catalog.target_for_scheme(scheme).ok_or_else(|| {
        format!(
            "unknown URL scheme `{scheme}://`; known targets: {} (see `bakeoff list`)",
            catalog.names().join(", ")
        )
    })?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (auth, hostpath) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    let (mut user, mut password) = match auth {
        None => (None, None),
        Some(a) => match a.split_once(':') {
            Some((u, p)) => (
                (!u.is_empty()).then(|| percent_decode(u)),
                Some(percent_decode(p)),
            ),
            None => (Some(percent_decode(a)), None),
        },
    };
    let (hostport, path) = hostpath.split_once('/').unwrap_or((hostpath, ""));
    let mut options = BTreeMap::new();
    let mut password_var = None;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        if !is_secret_key(k) && k != PASSWORD_ENV_KEY {
            check_escapes(v, text)?;
            if v.is_empty() && !USER_KEYS.contains(&k) {
                return Err(format!(
                    "`{k}=` names nothing in `{}`; give it a value or leave it out",
                    redact(text)
                ));
            }
        }
        let v = percent_decode(v);
        if k == PASSWORD_ENV_KEY {
            if password_var.is_some() {
                return Err(format!(
                    "`{PASSWORD_ENV_KEY}` is given twice in `{}`; name one variable",
                    redact(text)
                ));
            }
            password_var = Some(v);
        } else if is_secret_key(k) {
            password = Some(v);
        } else if USER_KEYS.contains(&k) {
            user = Some(v);
        } else {
            options.insert(k.to_string(), v);
        }
    }
    if let Some(var) = password_var {
        password = Some(password_from_env(text, &var, password.is_some(), env)?);
    }
    if (password.is_some() || user.is_some())
        && catalog.capabilities(&name).is_some_and(|c| !c.credentials)
    {
        return Err(format!(
            "URL `{}`: {name} takes no password or user; leave them out",
            redact(text)
        ));
    }
    let path = path.trim_end_matches('/');
    check_escapes(path, text)?;
    if !path.is_empty() {
        options
            .entry("dbname".to_string())
            .or_insert_with(|| percent_decode(path));
    }
    check_options(&options, catalog, &name, path, text, scheme)?;
    let mut nodes = server_nodes(hostport, text, scheme)?;
    let (host, port) = nodes.remove(0);
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
        alias: None,
    })
}

/// The servers of a URL's `host:port[,host:port…]`, each host checked
/// and percent-decoded (`text`, the URL, and `scheme` for the messages).
fn server_nodes(hostport: &str, text: &str, scheme: &str) -> Result<Vec<(String, u16)>, String> {
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
        if port == 0 {
            return Err(format!(
                "port 0 in `{}` is no server's port; write the port it listens on, e.g. {scheme}://127.0.0.1:6379",
                redact(text)
            ));
        }
        check_escapes(host, text)?;
        // Percent-decoded: a PostgreSQL socket directory is written
        // `%2Frun%2Fpostgresql`, as libpq takes it.
        let host = server_host(&percent_decode(host))
            .map_err(|why| format!("URL `{}`: {why}", redact(text)))?;
        nodes.push((host, port));
    }
    Ok(nodes)
}

/// Refuses a URL option target `name` does not take, saying what its URL
/// takes (`path` is the URL's `/database`; `text`, the URL, and `scheme`
/// for the message).
fn check_options(
    options: &BTreeMap<String, String>,
    catalog: &dyn TargetCatalog,
    name: &str,
    path: &str,
    text: &str,
    scheme: &str,
) -> Result<(), String> {
    let caps = catalog.capabilities(name);
    let accepted = caps.map(|c| c.url_options).unwrap_or_default();
    for key in options.keys() {
        if !accepted.contains(key) {
            let what = if key == "dbname" && !path.is_empty() {
                format!("a database (`/{path}`)")
            } else {
                format!("the option `{key}`")
            };
            let takes = if accepted.is_empty() {
                "only host:port and the credentials".to_string()
            } else {
                format!("the credentials and {}", accepted.join(", "))
            };
            return Err(format!(
                "URL `{}`: {name} does not take {what}; its URL takes {takes} ({scheme}://[user[:password]@]host:port[?password=…])",
                redact(text)
            ));
        }
    }
    Ok(())
}

/// The host a URL names, as it is connected to: a host name, an IP
/// address (IPv6 in brackets, which are dropped), or a socket directory
/// (an absolute path).
fn server_host(host: &str) -> Result<String, String> {
    if host.is_empty() {
        return Err("it has no host".into());
    }
    if host.starts_with('/') {
        return Ok(host.to_string());
    }
    if let Some(inner) = host.strip_prefix('[') {
        return match inner.strip_suffix(']').map(str::parse::<std::net::Ipv6Addr>) {
            Some(Ok(_)) => Ok(inner[..inner.len() - 1].to_string()),
            _ => Err(format!(
                "`{host}` is not an IPv6 address; an IPv6 address goes in brackets before the port, e.g. [::1]:6379"
            )),
        };
    }
    if host.contains(']') {
        return Err(format!(
            "`{host}`: an IPv6 address goes in brackets before the port, e.g. [::1]:6379"
        ));
    }
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(host.to_string());
    }
    // Host names: dot-separated labels of letters, digits, `-` and `_`
    // (container and service names use it), none empty or starting or
    // ending with `-`.
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if host.len() <= 253 && host.trim_end_matches('.').split('.').all(label_ok) {
        Ok(host.to_string())
    } else {
        Err(format!(
            "`{host}` is not a host name or an IP address (a name is letters, digits, `-` and `_` in dot-separated parts; an IPv6 address goes in brackets, e.g. [::1]:6379)"
        ))
    }
}

/// Refuses a `%` in `part` of URL `url` that does not begin a two-digit
/// hex escape (`%2F`): it would be taken as it stands, and name a socket
/// or database that is not there.
fn check_escapes(part: &str, url: &str) -> Result<(), String> {
    let b = part.as_bytes();
    for (i, _) in part.match_indices('%') {
        let hex = |j: usize| b.get(j).is_some_and(|c| c.is_ascii_hexdigit());
        if !(hex(i + 1) && hex(i + 2)) {
            let bad: String = part[i..].chars().take(3).collect();
            return Err(format!(
                "`{bad}` in `{}` is not a percent-escape (`%` and two hex digits, e.g. %2F for /); write a literal % as %25",
                redact(url)
            ));
        }
    }
    Ok(())
}

/// The password a URL's `password_env=VAR` reads from `env`; refused when
/// the URL gives a password too (`written`), when VAR is no name, or when
/// it is not set.
fn password_from_env(
    text: &str,
    var: &str,
    written: bool,
    env: &Environment,
) -> Result<String, String> {
    let url = redact(text);
    if written {
        return Err(format!(
            "URL `{url}` gives a password and {PASSWORD_ENV_KEY}={var}; give one of them"
        ));
    }
    if var.is_empty() {
        return Err(format!(
            "URL `{url}`: {PASSWORD_ENV_KEY}= names no variable; write e.g. ?{PASSWORD_ENV_KEY}=REDIS_PASSWORD"
        ));
    }
    match env.get(var) {
        Some(p) if !p.is_empty() => Ok(p),
        Some(_) => Err(format!(
            "URL `{url}` reads its password from the environment variable {var}, which is empty; set it to the password"
        )),
        None => Err(format!(
            "URL `{url}` reads its password from the environment variable {var}, which is not set; set it to the password, or write the password in the URL"
        )),
    }
}

/// Where a target URL's password comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlPassword {
    /// Written in the URL (`%XX` decoded).
    Written(String),
    /// Read from this environment variable (`password_env=NAME`).
    FromEnv(String),
}

/// `url` with its password taken out and read from environment variable
/// `var` instead (`…?password_env=VAR`), and the password it had; `None`
/// when it has none, or is not a URL. Every form is taken out — the
/// `:password` after the user, each secret query key (`?password=`,
/// `?auth=`, …) and a `password_env` of its own — and the password
/// returned is the one [`parse_target`] would use (the last written).
pub fn password_to_env(url: &str, var: &str) -> Option<(String, UrlPassword)> {
    let (scheme, rest) = url.split_once("://")?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut password = None;
    let mut out = format!("{scheme}://");
    match rest.rsplit_once('@') {
        Some((auth, hostpath)) => {
            match auth.split_once(':') {
                Some((user, written)) => {
                    password = Some(UrlPassword::Written(percent_decode(written)));
                    if !user.is_empty() {
                        out.push_str(user);
                        out.push('@');
                    }
                }
                None => {
                    out.push_str(auth);
                    out.push('@');
                }
            }
            out.push_str(hostpath);
        }
        None => out.push_str(rest),
    }
    let mut kept = Vec::new();
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        if k == PASSWORD_ENV_KEY {
            password = Some(UrlPassword::FromEnv(percent_decode(v)));
        } else if is_secret_key(k) {
            password = Some(UrlPassword::Written(percent_decode(v)));
        } else {
            kept.push(kv.to_string());
        }
    }
    let password = password?;
    kept.push(format!("{PASSWORD_ENV_KEY}={var}"));
    out.push('?');
    out.push_str(&kept.join("&"));
    Some((out, password))
}

/// Query-string keys that name the user.
const USER_KEYS: &[&str] = &["user", "username"];

/// Whether a query-string key carries a secret: the forms clients accept
/// for a password (`password`, `pass`, `auth`, …) or a token.
fn is_secret_key(key: &str) -> bool {
    const SECRET_KEYS: &[&str] = &[
        "password",
        "pass",
        "passwd",
        "pwd",
        "auth",
        "requirepass",
        "secret",
        "token",
        "apikey",
        "api_key",
        "sslpassword",
    ];
    SECRET_KEYS.iter().any(|s| s.eq_ignore_ascii_case(key))
}

/// Decodes `%XX` escapes (a password with `@` or `:` in it is written
/// `%40`, `%3A`); anything else is kept as written.
fn percent_decode(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Replaces every secret in a URL with `***`: the password after the
/// user (`user:password@`, `:password@`) and the value of every secret
/// query key (`?password=`, `?auth=`, …). Text that is not a URL comes back
/// unchanged.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let mut out = format!("{scheme}://");
    match rest.rsplit_once('@') {
        Some((auth, host)) => {
            match auth.split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:***")),
                None => out.push_str(auth),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(rest),
    }
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if is_secret_key(k) => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `redis` takes no URL options; `postgres` takes `dbname`.
    struct Cat;
    impl TargetCatalog for Cat {
        fn capabilities(&self, name: &str) -> Option<Capabilities> {
            ["redis", "postgres"].contains(&name).then(|| Capabilities {
                ops: Vec::new(),
                pipelining: false,
                managed: true,
                url_scheme: Some(name.into()),
                batch_load: false,
                requests: Vec::new(),
                faults: false,
                network: true,
                topologies: Vec::new(),
                url_options: if name == "postgres" {
                    vec!["dbname".into()]
                } else {
                    Vec::new()
                },
                credentials: true,
                no_scan: None,
                provokes: Vec::new(),
            })
        }
        fn names(&self) -> Vec<String> {
            vec!["redis".into(), "postgres".into()]
        }
        fn target_for_scheme(&self, s: &str) -> Option<String> {
            self.capabilities(s).map(|_| s.to_string())
        }
        fn check_settings(&self, _: &str, _: &toml::Table) -> Result<(), TargetError> {
            Ok(())
        }
        fn default_targets(&self) -> Vec<String> {
            Vec::new()
        }
    }

    /// No environment variables.
    fn none() -> Environment {
        Environment::default()
    }

    fn external(spec: &TargetSpec) -> (&str, &str, u16, &BTreeMap<String, String>) {
        match &spec.endpoint {
            Endpoint::External {
                url,
                host,
                port,
                options,
                ..
            } => (url, host, *port, options),
            Endpoint::Managed => panic!("not external"),
        }
    }

    /// A URL whose host, port or option cannot name a server is refused
    /// when it is read, saying what is wrong (they ended in "cannot
    /// resolve" or "connection refused").
    #[test]
    fn hosts_ports_and_options_that_name_no_server_are_refused() {
        for (url, says) in [
            ("redis://127.0.0.1:0", "port 0"),
            ("redis://bad_host!:6379", "not a host name"),
            ("redis://[::1:6379", "IPv6 address goes in brackets"),
            ("redis://a..b:6379", "not a host name"),
            ("redis://-a:6379", "not a host name"),
            ("postgres://127.0.0.1:5432/db%zz", "`%zz`"),
            (
                "postgres://127.0.0.1:5432?dbname=",
                "`dbname=` names nothing",
            ),
        ] {
            let e = parse_target(url, &Cat, &none()).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
        for (url, host) in [
            ("redis://[::1]:6379", "::1"),
            ("redis://redis_1.bench-a.svc:6379", "redis_1.bench-a.svc"),
            ("postgres://%2Frun%2Fpostgresql:5432", "/run/postgresql"),
            ("redis://10.0.0.7:6379", "10.0.0.7"),
        ] {
            let spec = parse_target(url, &Cat, &none()).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(external(&spec).1, host, "{url}");
        }
    }

    /// Every form a password takes in a URL is taken as the password and
    /// never kept in what is shown or stored.
    #[test]
    fn every_credential_form_is_taken_and_redacted() {
        for (url, user) in [
            ("redis://:SECRET@127.0.0.1:6379", None),
            ("redis://bob:SECRET@127.0.0.1:6379", Some("bob")),
            ("redis://127.0.0.1:6379?password=SECRET", None),
            ("redis://127.0.0.1:6379?auth=SECRET", None),
            ("redis://127.0.0.1:6379?user=bob&pass=SECRET", Some("bob")),
            ("redis://127.0.0.1:6379/?Password=SECRET", None),
            ("redis://:SEC%40RET@127.0.0.1:6379", None),
        ] {
            let spec = parse_target(url, &Cat, &none()).unwrap();
            let want = if url.contains("%40") {
                "SEC@RET"
            } else {
                "SECRET"
            };
            assert_eq!(spec.password.as_deref(), Some(want), "{url}");
            assert_eq!(spec.user.as_deref(), user, "{url}");
            let (shown, host, port, _) = external(&spec);
            assert!(!shown.contains("SEC"), "{url} shown as {shown}");
            assert!(!redact(url).contains("SEC"), "{url}");
            assert_eq!((host, port), ("127.0.0.1", 6379));
            let json = serde_json::to_string(&spec).unwrap();
            assert!(!json.contains("SEC"), "{json}");
        }
        // Not a URL, or no secret: unchanged.
        assert_eq!(redact("--clients"), "--clients");
        assert_eq!(redact("redis://h:1?x=1"), "redis://h:1?x=1");
    }

    /// A database in the path is PostgreSQL's `dbname`; a target whose URL
    /// takes no database or option refuses it rather than ignoring it.
    #[test]
    fn a_path_or_an_option_is_used_or_refused() {
        let spec = parse_target("postgres://u:p@127.0.0.1:5432/shop", &Cat, &none()).unwrap();
        assert_eq!(
            external(&spec).3.get("dbname").map(String::as_str),
            Some("shop")
        );
        let spec = parse_target("postgres://127.0.0.1:5432?dbname=x", &Cat, &none()).unwrap();
        assert_eq!(
            external(&spec).3.get("dbname").map(String::as_str),
            Some("x")
        );
        let e = parse_target("redis://127.0.0.1:6379/2", &Cat, &none()).unwrap_err();
        assert!(e.contains("does not take a database (`/2`)"), "{e}");
        let e = parse_target(
            "redis://127.0.0.1:6379?tls=1&password=SECRET",
            &Cat,
            &none(),
        )
        .unwrap_err();
        assert!(e.contains("`tls`") && !e.contains("SECRET"), "{e}");
    }

    /// A URL's `password_env=NAME` reads the password from variable NAME,
    /// each URL its own; an unset variable, a URL that gives a password
    /// too, or no name is refused (issue 33, class 8).
    #[test]
    fn a_password_is_read_from_the_variable_the_url_names() {
        let env = Environment::of(|k| match k {
            "PW_A" => Some("s3:cr@t".to_string()),
            "PW_B" => Some("other".to_string()),
            "PW_EMPTY" => Some(String::new()),
            _ => None,
        });
        let spec = parse_target("redis://127.0.0.1:6379?password_env=PW_A", &Cat, &env).unwrap();
        assert_eq!(spec.password.as_deref(), Some("s3:cr@t"));
        let (shown, _, _, options) = external(&spec);
        assert!(options.is_empty(), "{options:?}");
        assert_eq!(shown, "redis://127.0.0.1:6379?password_env=PW_A");
        let spec = parse_target(
            "postgres://u@127.0.0.1:5432/shop?password_env=PW_B",
            &Cat,
            &env,
        )
        .unwrap();
        assert_eq!(spec.password.as_deref(), Some("other"));
        assert_eq!(spec.user.as_deref(), Some("u"));
        assert_eq!(
            external(&spec).3.get("dbname").map(String::as_str),
            Some("shop")
        );
        for (url, why) in [
            (
                "redis://127.0.0.1:6379?password_env=PW_C",
                "PW_C, which is not set",
            ),
            (
                "redis://127.0.0.1:6379?password_env=PW_EMPTY",
                "PW_EMPTY, which is empty",
            ),
            (
                "redis://:pw@127.0.0.1:6379?password_env=PW_A",
                "give one of them",
            ),
            ("redis://127.0.0.1:6379?password_env=", "names no variable"),
        ] {
            let e = parse_target(url, &Cat, &env).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
        let e =
            parse_target("redis://127.0.0.1:6379?password_env=PW_A", &Cat, &none()).unwrap_err();
        assert!(e.contains("PW_A, which is not set"), "{e}");
    }

    /// Every form of password a URL holds moves into an environment
    /// variable, leaving nothing secret in the URL, and the URL then reads
    /// back the same target with the same password (what `bakeoff
    /// kubernetes` does for each pod).
    #[test]
    fn a_password_moves_into_the_environment_and_back() {
        for (url, want) in [
            (
                "redis://:SECRET@127.0.0.1:6379",
                "redis://127.0.0.1:6379?password_env=V",
            ),
            (
                "redis://bob:SECRET@127.0.0.1:6379",
                "redis://bob@127.0.0.1:6379?password_env=V",
            ),
            (
                "redis://127.0.0.1:6379?password=SECRET",
                "redis://127.0.0.1:6379?password_env=V",
            ),
            (
                "redis://127.0.0.1:6379?user=bob&auth=SECRET",
                "redis://127.0.0.1:6379?user=bob&password_env=V",
            ),
            (
                "postgres://u:SEC%40RET@127.0.0.1:5432/shop",
                "postgres://u@127.0.0.1:5432/shop?password_env=V",
            ),
            (
                "redis://:SECRET@[::1]:6379",
                "redis://[::1]:6379?password_env=V",
            ),
        ] {
            let (moved, password) = password_to_env(url, "V").unwrap();
            assert_eq!(moved, want, "{url}");
            assert_eq!(redact(&moved), moved, "{url}: nothing secret is left");
            let UrlPassword::Written(password) = password else {
                panic!("{url}: written in the URL");
            };
            let before = parse_target(url, &Cat, &none()).unwrap();
            assert_eq!(before.password.as_deref(), Some(password.as_str()), "{url}");
            let env = Environment::of(move |k| (k == "V").then(|| password.clone()));
            let after = parse_target(&moved, &Cat, &env).unwrap();
            assert_eq!(after.password, before.password, "{url}");
            assert_eq!(after.user, before.user, "{url}");
            let (b, a) = (external(&before), external(&after));
            assert_eq!((a.1, a.2, a.3), (b.1, b.2, b.3), "{url}");
        }
        assert_eq!(
            password_to_env("redis://h:1?password_env=MINE", "V"),
            Some((
                "redis://h:1?password_env=V".to_string(),
                UrlPassword::FromEnv("MINE".into())
            ))
        );
        assert_eq!(password_to_env("redis://bob@h:1", "V"), None);
        assert_eq!(password_to_env("redis", "V"), None);
        assert_eq!(password_to_env("--clients", "V"), None);
    }

    /// An IPv6 literal in brackets is the address connected to.
    #[test]
    fn ipv6_literals_resolve() {
        let spec = parse_target("redis://[::1]:6379", &Cat, &none()).unwrap();
        assert_eq!(external(&spec).1, "::1");
        let spec = parse_target("redis://:pw@[::1]:6379", &Cat, &none()).unwrap();
        assert_eq!((external(&spec).1, external(&spec).2), ("::1", 6379));
    }
}
