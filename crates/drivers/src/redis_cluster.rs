//! Redis Cluster (`--topology cluster:N`), managed: N redis-servers
//! started with `cluster-enabled yes`, made one cluster of N masters the
//! way `redis-cli --cluster create` does it (each node given its equal
//! range of the 16384 hash slots with `CLUSTER ADDSLOTSRANGE` and a config
//! epoch of its own, then introduced to the first with `CLUSTER MEET`),
//! and waited for until every node says `cluster_state:ok` and knows all
//! the others. The commands are sent directly rather than through
//! redis-cli, which refuses fewer than three masters.

use std::time::{Duration, Instant};

use bakeoff_core::error::TargetError;
use bakeoff_core::slots::SlotMap;

use crate::admin::{parse_info, resp_call, RespReply};
use crate::redis::RedisTarget;

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
fn call(node: &RedisTarget, words: &[&[u8]], what: &str) -> Result<RespReply, TargetError> {
    let addr = node.addr();
    let mut s = node
        .admin()
        .map_err(|e| TargetError::Server(format!("redis cluster node {addr}: {e}")))?;
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

/// Makes one cluster of `nodes`, started with [`ARGS`] and empty: node `i`
/// serves [`SlotMap::even_range`]`(i, n)`.
pub(crate) fn form(nodes: &[RedisTarget]) -> Result<(), TargetError> {
    let n = nodes.len();
    for (i, node) in nodes.iter().enumerate() {
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
                && get("cluster_known_nodes") == Some(n.to_string().as_str())
                && get("cluster_slots_ok") == Some("16384");
            if !ok {
                waiting = Some((node.addr(), info));
                break;
            }
        }
        let Some((addr, info)) = waiting else {
            return Ok(());
        };
        if start.elapsed() > FORM_TIMEOUT {
            return Err(TargetError::Server(format!(
                "the redis cluster of {n} nodes did not form within {} s: node {addr} says {}",
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
