//! Redis Cluster (`--topology cluster:N`), managed: N redis-servers
//! started with `cluster-enabled yes`, made one cluster of N masters the
//! way `redis-cli --cluster create` does it (each node given its equal
//! range of the 16384 hash slots with `CLUSTER ADDSLOTSRANGE` and a config
//! epoch of its own, then introduced to the first with `CLUSTER MEET`),
//! and waited for until every node says `cluster_state:ok` and knows all
//! the others. Replicas (`servers.redis.cluster_replicas`) are introduced
//! the same way and follow their master with `CLUSTER REPLICATE`, replica
//! `j` of master `i` being node `masters + i * per_master + j`. The
//! commands are sent directly rather than through redis-cli, which refuses
//! fewer than three masters.

use std::time::{Duration, Instant};

use bakeoff_core::error::TargetError;
use bakeoff_core::slots::SlotMap;

use bakeoff_core::driver::Stream;

use crate::admin::{parse_info, resp_call, RespReply};

/// A node of the cluster being formed, as forming it needs one (a
/// managed Redis target): its address, an admin connection straight to
/// it, and its `INFO` sections.
pub(crate) trait ClusterNode {
    /// Where the node listens.
    fn addr(&self) -> std::net::SocketAddr;
    /// A connection for admin calls, straight to the node.
    fn admin(&self) -> std::io::Result<Stream>;
    /// One `INFO` section, as key-value pairs.
    fn info(&self, section: &str) -> std::io::Result<Vec<(String, String)>>;
}

/// What each node is started with, on top of the usual arguments. The
/// node's cluster state lives in its own directory; a node is failed
/// after 5 s unanswered, as redis.conf suggests.
pub(crate) const ARGS: &[&str] = &[
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "5000",
];

/// How long the nodes may take to agree, from the last `MEET`.
const FORM_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends one command to `node`; an error reply is an error, naming `what`.
fn call(node: &impl ClusterNode, words: &[&[u8]], what: &str) -> Result<RespReply, TargetError> {
    let addr = node.addr();
    let mut s = node
        .admin()
        .map_err(TargetError::during(format!("redis cluster node {addr}")))?;
    match resp_call(&mut s, words) {
        Ok(RespReply::Error(e)) => Err(TargetError::Server(format!(
            "redis cluster node {addr} refused {what}: {e}"
        ))),
        Ok(r) => Ok(r),
        Err(e) => Err(TargetError::Server(format!(
            "redis cluster node {addr} did not answer {what}: {e}"
        ))),
    }
}

/// The node id a node gives itself (`CLUSTER MYID`).
fn my_id(node: &impl ClusterNode) -> Result<String, TargetError> {
    match call(node, &[b"CLUSTER", b"MYID"], "CLUSTER MYID")? {
        RespReply::Bulk(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        RespReply::Simple(s) => Ok(s),
        other => Err(TargetError::Server(format!(
            "redis cluster node {} answered CLUSTER MYID with {other:?}",
            node.addr()
        ))),
    }
}

/// Makes one cluster of `nodes`, started with [`ARGS`] and empty: the
/// first `masters` are masters, master `i` serving
/// [`SlotMap::even_range`]`(i, masters)`; the rest are their replicas, in
/// turn.
pub(crate) fn form(nodes: &[impl ClusterNode], masters: usize) -> Result<(), TargetError> {
    let n = masters;
    for (i, node) in nodes[..masters].iter().enumerate() {
        let (first, end) = SlotMap::even_range(i, n);
        let (a, b) = (first.to_string(), (end - 1).to_string());
        call(
            node,
            &[b"CLUSTER", b"ADDSLOTSRANGE", a.as_bytes(), b.as_bytes()],
            "CLUSTER ADDSLOTSRANGE",
        )?;
        // Distinct epochs, so that no node has to win a collision first.
        let epoch = (i + 1).to_string();
        call(
            node,
            &[b"CLUSTER", b"SET-CONFIG-EPOCH", epoch.as_bytes()],
            "CLUSTER SET-CONFIG-EPOCH",
        )?;
    }
    for node in &nodes[1..] {
        let (ip, port) = (node.addr().ip().to_string(), node.addr().port().to_string());
        call(
            &nodes[0],
            &[b"CLUSTER", b"MEET", ip.as_bytes(), port.as_bytes()],
            "CLUSTER MEET",
        )?;
    }
    let per_master = ((nodes.len() - masters) / masters.max(1)).max(1);
    if nodes.len() > masters {
        let ids = nodes[..masters]
            .iter()
            .map(my_id)
            .collect::<Result<Vec<_>, _>>()?;
        for (k, replica) in nodes[masters..].iter().enumerate() {
            replicate(replica, &ids[k / per_master])?;
        }
    }
    let start = Instant::now();
    loop {
        let mut waiting = None;
        for node in nodes {
            let info = match call(node, &[b"CLUSTER", b"INFO"], "CLUSTER INFO")? {
                RespReply::Bulk(b) => parse_info(&String::from_utf8_lossy(&b)),
                other => {
                    return Err(TargetError::Server(format!(
                        "redis cluster node {} answered CLUSTER INFO with {other:?}",
                        node.addr()
                    )))
                }
            };
            let get = |k: &str| {
                info.iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.as_str())
            };
            let ok = get("cluster_state") == Some("ok")
                && get("cluster_known_nodes") == Some(nodes.len().to_string().as_str())
                && get("cluster_slots_ok") == Some("16384");
            if !ok {
                waiting = Some((node.addr(), info));
                break;
            }
        }
        if waiting.is_none() {
            // Replicas: each has finished its first sync with its master.
            for node in &nodes[masters..] {
                let info = node.info("replication").unwrap_or_default();
                if !info
                    .iter()
                    .any(|(k, v)| k == "master_link_status" && v == "up")
                {
                    waiting = Some((node.addr(), info));
                    break;
                }
            }
        }
        let Some((addr, info)) = waiting else {
            return Ok(());
        };
        if start.elapsed() > FORM_TIMEOUT {
            return Err(TargetError::Server(format!(
                "the redis cluster of {n} masters and {} replicas did not form within {} s: node {addr} says {}",
                nodes.len() - n,
                FORM_TIMEOUT.as_secs(),
                info.iter()
                    .filter(|(k, _)| k.starts_with("cluster_state")
                        || k.starts_with("cluster_known")
                        || k.starts_with("cluster_slots"))
                    .map(|(k, v)| format!("{k}:{v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Makes `replica` a replica of the master with id `master`, once it knows
/// that master (gossip brings it the ids after `MEET`).
fn replicate(replica: &impl ClusterNode, master: &str) -> Result<(), TargetError> {
    let start = Instant::now();
    loop {
        match call(
            replica,
            &[b"CLUSTER", b"REPLICATE", master.as_bytes()],
            "CLUSTER REPLICATE",
        ) {
            Ok(_) => return Ok(()),
            // "Unknown node": the gossip has not reached it yet.
            Err(e) if start.elapsed() < FORM_TIMEOUT => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}
