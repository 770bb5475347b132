//! Tables of runs on more than one server or over a link: requests per
//! node of a sharded target with their balance, and what the link relay
//! cost. Shared by the text, Markdown and HTML reports.

use bakeoff_core::plan::Topology;
use bakeoff_core::result::{ExperimentResult, RunResult};
use bakeoff_core::units::{fmt_bytes, fmt_rate};

/// Heading of the per-node table.
pub const NODES_HEAD: [&str; 6] = [
    "target",
    "point",
    "throughput",
    "requests per node (share)",
    "balance (busiest / mean)",
    "redirected (MOVED / ASK)",
];

/// The per-node row of `run`, if it ran on shards or a cluster (a
/// primary and a replica share by role, not by balance: the replication
/// table has them).
pub fn nodes_row(run: &RunResult) -> Option<Vec<String>> {
    if !matches!(
        run.workload.topology,
        Topology::Shards(_) | Topology::Cluster(_)
    ) {
        return None;
    }
    let balance = run.node_balance()?;
    let total: u64 = run.nodes.iter().map(|n| n.sent).sum::<u64>().max(1);
    let shares = run
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{} {} ({:.1} %)",
                n.node,
                n.sent,
                100.0 * n.sent as f64 / total as f64
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(vec![
        run.target.clone(),
        crate::run_point_label(run),
        fmt_rate(run.measure.throughput_per_s),
        shares,
        format!("{balance:.2}"),
        run.redirections
            .map(|r| format!("{} / {}", r.moved, r.ask))
            .unwrap_or_else(|| "-".into()),
    ])
}

/// The per-node table of `r` (head first), if some run was sharded.
pub fn nodes_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![NODES_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(nodes_row));
    (rows.len() > 1).then_some(rows)
}

/// Heading of the link table.
pub const LINK_HEAD: [&str; 7] = [
    "target",
    "point",
    "link",
    "throughput",
    "relay busy",
    "relay's own round trip (taken off)",
    "mean lateness",
];

/// The link row of `run`, if it ran over a link.
pub fn link_row(run: &RunResult) -> Option<Vec<String>> {
    let (link, usage) = (run.workload.link?, run.client.link.as_ref()?);
    Some(vec![
        run.target.clone(),
        crate::run_point_label(run),
        link.to_string(),
        fmt_rate(run.measure.throughput_per_s),
        format!(
            "{:.0} %{}",
            usage.relay_busy_percent,
            if usage.relay_bound { " (!)" } else { "" }
        ),
        format!("{:.1} µs", usage.relay_overhead_us),
        format!("{:.1} µs", usage.mean_late_us),
    ])
}

/// The link table of `r` (head first), if some run had a link.
pub fn link_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![LINK_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(link_row));
    (rows.len() > 1).then_some(rows)
}

/// Heading of the replication table.
pub const REPLICATION_HEAD: [&str; 9] = [
    "target",
    "point",
    "reads from",
    "writes",
    "reads",
    "stale reads",
    "lag, max",
    "caught up after",
    "records: primary / replica",
];

/// The replication row of `run`, if it ran on a primary and a replica.
pub fn replication_row(run: &RunResult) -> Option<Vec<String>> {
    let stale = run.measure.stale_reads?;
    let rate = |kinds: &[&str]| fmt_rate(rate_of(run, kinds));
    let reads: u64 = run.measure.ops.get("get").map_or(0, |o| o.completed);
    let lag = run
        .resources
        .iter()
        .filter_map(|s| s.replication_lag_bytes)
        .max();
    let replica = run.checks.replica.as_ref();
    let count = |v: Option<u64>| v.map_or("?".into(), |n| n.to_string());
    Some(vec![
        run.target.clone(),
        crate::run_point_label(run),
        run.workload.read_from.name().to_string(),
        rate(WRITE_KINDS),
        rate(&["get"]),
        format!(
            "{stale} ({:.3} %)",
            100.0 * stale as f64 / reads.max(1) as f64
        ),
        lag.map_or("-".into(), |b| fmt_bytes(b as f64)),
        match replica.and_then(|r| r.caught_up_after_s) {
            Some(s) => format!("{:.0} ms", s * 1e3),
            None => "not within 10 s".into(),
        },
        format!(
            "{} / {}",
            count(replica.and_then(|r| r.primary_records)),
            count(replica.and_then(|r| r.replica_records))
        ),
    ])
}

/// Operations of `kinds` completed in `run`'s measured phase, per second.
fn rate_of(run: &RunResult, kinds: &[&str]) -> f64 {
    let n: u64 = kinds
        .iter()
        .filter_map(|k| run.measure.ops.get(*k))
        .map(|o| o.completed)
        .sum();
    n as f64 / run.measure.duration_s.max(1e-9)
}

/// The operations that write (go to a primary).
pub const WRITE_KINDS: &[&str] = &["set", "update", "delete"];

/// The write and read rates of one target at one point (its topology left
/// out), alone and with a replica: means over repeats, in ops/s.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicationRates {
    /// The target and the point, topology left out.
    pub label: String,
    /// Writes per second: on a single server, with a replica.
    pub writes: [Option<f64>; 2],
    /// Reads per second: on a single server, with a replica.
    pub reads: [Option<f64>; 2],
}

/// The rates of every target and point of which some run had a replica,
/// for a chart that puts single and replicated side by side.
pub fn replication_rates(runs: &[&RunResult]) -> Vec<ReplicationRates> {
    // Per label, for single and replicated: sums of writes and reads per
    // second, and the runs summed.
    type Sums = [(f64, f64, u32); 2];
    let mut acc: Vec<(String, Sums)> = Vec::new();
    for run in runs {
        let side = match run.workload.topology {
            Topology::Single => 0,
            Topology::PrimaryReplica => 1,
            _ => continue,
        };
        let point: Vec<String> = run
            .point
            .iter()
            .filter(|(k, _)| k.as_str() != "topology")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let label = format!("{} {}", run.target, point.join(" "))
            .trim()
            .to_string();
        let i = match acc.iter().position(|(l, _)| *l == label) {
            Some(i) => i,
            None => {
                acc.push((label, [(0.0, 0.0, 0); 2]));
                acc.len() - 1
            }
        };
        let slot = &mut acc[i].1[side];
        slot.0 += rate_of(run, WRITE_KINDS);
        slot.1 += rate_of(run, &["get"]);
        slot.2 += 1;
    }
    acc.into_iter()
        .filter(|(_, sides)| sides[1].2 > 0)
        .map(|(label, sides)| {
            let mean = |f: fn(&(f64, f64, u32)) -> f64| {
                sides.map(|s| (s.2 > 0).then(|| f(&s) / s.2 as f64))
            };
            ReplicationRates {
                label,
                writes: mean(|s| s.0),
                reads: mean(|s| s.1),
            }
        })
        .collect()
}

/// The stale-read rate of each run with a replica: (target and point,
/// stale reads in % of reads).
pub fn stale_read_rates(runs: &[&RunResult]) -> Vec<(String, f64)> {
    runs.iter()
        .filter_map(|run| {
            let stale = run.measure.stale_reads?;
            let reads = run.measure.ops.get("get").map_or(0, |o| o.completed);
            (run.workload.topology == Topology::PrimaryReplica).then(|| {
                (
                    format!("{} {}", run.target, crate::run_point_label(run)),
                    100.0 * stale as f64 / reads.max(1) as f64,
                )
            })
        })
        .collect()
}

/// The replication table of `r` (head first), if some run was replicated.
pub fn replication_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    let mut rows = vec![REPLICATION_HEAD.iter().map(|s| s.to_string()).collect()];
    rows.extend(r.runs.iter().filter_map(replication_row));
    (rows.len() > 1).then_some(rows)
}

/// What the replication table shows, for the reports' notes.
pub const REPLICATION_NOTE: &str = "Writes go to the primary, reads to the node named. A stale read found an older version of its record than one whose write was acknowledged before the read was sent (each record has one writer, so its versions are ordered). The lag is the replication stream the replica has still to apply, in bytes (Redis: the primary's offset less the replica's; PostgreSQL: WAL from pg_current_wal_lsn() to the replica's replay_lsn; MariaDB: binary log from SHOW MASTER STATUS to the replica's executed position), sampled each second; after the run bakeoff waits for it to reach 0 and counts the records on both.";

/// What the per-node table shows, for the reports' notes.
pub const NODES_NOTE: &str = "Requests the client sent each node (load, warm-up and measured phase), keys spread by ketama consistent hashing (shards) or by hash slot (a Redis Cluster); the balance is the busiest node's count over the mean (1.00 is even). Each node's own counters are checked against its count. In a cluster, a request a node redirected (MOVED: the slot is elsewhere now; ASK: the key already moved with its slot) went again to the node named, and counts there.";

/// What the link table shows, for the reports' notes.
pub const LINK_NOTE: &str = "The link is a relay bakeoff runs on loopback, holding every byte half the round trip each way; its own round trip, measured when it started, is taken off the hold so the round trip it adds is the link's. (!) marks a relay busier than 90 %: it, not the link, may have set the pace.";

/// Heading of the shards table of a merged file.
pub const SHARDS_HEAD: [&str; 7] = [
    "shard",
    "file",
    "reached",
    "asked",
    "start skew",
    "clock offset",
    "client-bound",
];

/// What the shards table says.
pub const SHARDS_NOTE: &str = "A merged file (bakeoff merge): each shard's rate reached against the open-loop rate it was asked for (its first run; closed loop: —), how long after the planned start (--start-at) it started, its clock against the server's, and whether bakeoff itself limited it. Histograms were added bucket by bucket; throughput is the shards' rates summed over the window they shared.";

/// The shards table of a merged file (head first), if it is one.
pub fn shards_rows(r: &ExperimentResult) -> Option<Vec<Vec<String>>> {
    if r.shards.is_empty() {
        return None;
    }
    let mut rows = vec![SHARDS_HEAD.iter().map(|s| s.to_string()).collect()];
    for s in &r.shards {
        let signed_ns = |ns: f64| {
            let sign = if ns < 0.0 { "-" } else { "+" };
            format!("{sign}{}", bakeoff_core::units::fmt_ns(ns.abs()))
        };
        rows.push(vec![
            format!("{}/{}", s.shard.index, s.shard.count),
            s.file.clone(),
            s.reached_per_s.first().map_or("—".into(), |r| fmt_rate(*r)),
            s.asked_per_s
                .first()
                .copied()
                .flatten()
                .map_or("—".into(), fmt_rate),
            s.start_skew_s.map_or("—".into(), |k| signed_ns(k * 1e9)),
            s.shard
                .clock_offset_ns
                .map_or("—".into(), |o| signed_ns(o as f64)),
            if s.client_bound { "yes" } else { "no" }.into(),
        ]);
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_core::result::NodeOps;

    #[test]
    fn a_sharded_run_gets_a_row_with_its_balance() {
        let r: ExperimentResult =
            serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json")).unwrap();
        assert!(
            nodes_rows(&r).is_none(),
            "a single server has no node table"
        );
        let mut run = r.runs[0].clone();
        run.workload.topology = Topology::Shards(2);
        run.nodes = vec![
            NodeOps {
                node: "127.0.0.1:1".into(),
                sent: 300,
                redirected: None,
            },
            NodeOps {
                node: "127.0.0.1:2".into(),
                sent: 100,
                redirected: None,
            },
        ];
        let row = nodes_row(&run).unwrap();
        assert_eq!(row[4], "1.50");
        assert!(row[3].contains("127.0.0.1:1 300 (75.0 %)"), "{row:?}");
        assert_eq!(row[5], "-");
        // A cluster's row says how often it redirected.
        run.workload.topology = Topology::Cluster(2);
        run.redirections = Some(bakeoff_core::result::Redirections { moved: 7, ask: 2 });
        let row = nodes_row(&run).unwrap();
        assert_eq!(row[5], "7 / 2");
    }

    #[test]
    fn rates_pair_each_target_and_point_alone_with_its_replicated_run() {
        let r: ExperimentResult =
            serde_json::from_str(include_str!("../../bakeoff/tests/snapshots/mock.json")).unwrap();
        let mut single = r.runs[0].clone();
        single.target = "pg".into();
        single.point = [("topology".to_string(), "single".to_string())].into();
        let mut pair = single.clone();
        pair.workload.topology = Topology::PrimaryReplica;
        pair.point = [("topology".to_string(), "primary-replica".to_string())].into();
        pair.measure.stale_reads = Some(0);
        // A target with no replicated run is left out.
        let mut other = single.clone();
        other.target = "alone".into();
        let (s, p) = (rate_of(&single, &["get"]), rate_of(&pair, &["get"]));
        let rates = replication_rates(&[&single, &other, &pair]);
        assert_eq!(rates.len(), 1, "{rates:?}");
        assert_eq!(rates[0].label, "pg");
        assert_eq!(rates[0].reads, [Some(s), Some(p)]);
        assert_eq!(
            stale_read_rates(&[&single, &pair]),
            vec![("pg topology=primary-replica".into(), 0.0)]
        );
    }
}
