//! The report's tables that some experiments have (durability, disk,
//! encoding, searches, nodes, replication, link, shards, server time),
//! declared once: their heading, what they show, their rows and the
//! charts some draw. The terminal renders every one of them in this order
//! behind `--details`; the document ([`crate::document`]) holds them for
//! Markdown and HTML.

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::fmt_ns;

use crate::model::Block;
use crate::view::View;
use crate::{background, durability, encoding, plots, search, topology};

pub use crate::model::Rows;

/// One table of the report.
pub struct TableSection {
    /// Its anchor in the HTML report.
    pub id: &'static str,
    /// Its heading in Markdown and HTML.
    pub title: &'static str,
    /// Its heading on the terminal: the title, and what it shows in brief.
    pub text_heading: &'static str,
    /// What it shows, under the heading in Markdown and HTML.
    pub note: &'static str,
    /// How many of its columns are text (left-aligned).
    pub left: usize,
    /// Its rows for one experiment.
    pub rows: fn(&ExperimentResult) -> Option<Rows>,
    /// What it draws above its table, where it draws anything.
    pub charts: Option<fn(&View, &ExperimentResult) -> Vec<Block>>,
}

/// Every table some experiments have, in the report's order.
pub const TABLE_SECTIONS: &[TableSection] = &[
    TableSection {
        id: "bottleneck",
        title: "What limited each run",
        text_heading: "what limited each run:",
        note: BOTTLENECK_NOTE,
        left: 3,
        rows: bottleneck_rows,
        charts: None,
    },
    TableSection {
        id: "durability",
        title: "Durability",
        text_heading: "durability (every write logged as acknowledged or not, read back after the run):",
        note: "Every write of the durability check was logged by the client as acknowledged, failed or indeterminate, and read back after the run: lost writes were acknowledged yet are absent; recovered ones were not acknowledged yet are present; a hole is a lost write before a surviving later one of the same writer. The class is what was measured with each setting.",
        left: 3,
        rows: durability::durability_rows,
        charts: None,
    },
    TableSection {
        id: "disk",
        title: "Disk per write",
        text_heading: "disk per write (the block device under the data: warm-up, measured phase, and a flush of what they left in the page cache):",
        note: "What the block device under the data directory wrote per write (set, update, delete) over the warm-up and the measured phase and the write-back of what they left of the target's files in the page cache (a store that writes without fsync owes the disk those pages all the same), by its own counters (/sys/block/DEV/stat: journal and metadata included), less what it wrote while the target sat idle just before (the column 'idle time taken off'); amplification is that over the bytes each write asked to store. fsyncs are counted by the filesystem's own tracepoint for the server's processes (exactly by the power-cut layer where the data is on it). Pages dirtied are what the server's processes' own counters say (write_bytes of /proc/PID/io), not what the disk wrote.",
        left: 2,
        rows: durability::disk_rows,
        charts: None,
    },
    TableSection {
        id: "encoding",
        title: "Client-side encoding",
        text_heading: "client-side encoding (encode and decode timed apart, on the run's values):",
        note: encoding::ENCODING_NOTE,
        left: 2,
        rows: encoding::encoding_rows,
        charts: None,
    },
    TableSection {
        id: "searches",
        title: "Peak and capacity",
        text_heading: "searches (peak: clients doubled until throughput stopped rising; capacity: the highest open-loop rate that held the bound):",
        note: search::SEARCH_NOTE,
        left: 3,
        rows: search::search_rows,
        charts: Some(plots::search_charts),
    },
    TableSection {
        id: "nodes",
        title: "Requests per node",
        text_heading: "requests per node (sharded targets):",
        note: topology::NODES_NOTE,
        left: 2,
        rows: topology::nodes_rows,
        charts: None,
    },
    TableSection {
        id: "replication",
        title: "Replication",
        text_heading: "replication (writes to the primary):",
        note: topology::REPLICATION_NOTE,
        left: 3,
        rows: topology::replication_rows,
        charts: Some(plots::replication_charts),
    },
    TableSection {
        id: "link",
        title: "Link",
        text_heading: "link (bakeoff's relay between clients and servers):",
        note: topology::LINK_NOTE,
        left: 3,
        rows: topology::link_rows,
        charts: None,
    },
    TableSection {
        id: "shards",
        title: "Shards",
        text_heading: "shards (merged by bakeoff merge; rate reached / asked, start after --start-at, clock against the server's):",
        note: topology::SHARDS_NOTE,
        left: 2,
        rows: topology::shards_rows,
        charts: None,
    },
    TableSection {
        id: "server-time",
        title: "Time inside the server",
        text_heading: "time inside the server (the server's own count per command, beside the client's round trip):",
        note: SERVER_TIME_NOTE,
        left: 3,
        rows: server_time_rows,
        charts: None,
    },
    TableSection {
        id: "server-time-distribution",
        title: "Time inside the server, distributed",
        text_heading: "time inside the server, distributed (the server's calls and the client's operations per time bucket, side by side):",
        note: SERVER_DISTRIBUTION_NOTE,
        left: 4,
        rows: server_distribution_rows,
        charts: Some(plots::distribution_charts),
    },
    TableSection {
        id: "background",
        title: "Background work",
        text_heading: "background work (what each engine did besides serving, as it tells):",
        note: background::BACKGROUND_NOTE,
        left: 3,
        rows: background::background_rows,
        charts: None,
    },
    TableSection {
        id: "background-tail",
        title: "The tail inside background work",
        text_heading: "the tail inside background work (p99 of the measured seconds with work, beside those without):",
        note: background::TAIL_NOTE,
        left: 2,
        rows: background::tail_rows,
        charts: None,
    },
];

/// The note of the bottleneck table.
pub const BOTTLENECK_NOTE: &str = "Named from what the run measured over its measured phase: bakeoff's threads (client-bound above 90 % busy, unless the machine's CPUs were full with the server's work too), the server's busiest thread (85 % of a core: a server held by one thread, Redis's), the machine's CPUs (every process's work, read from /proc/stat whatever the target, above 85 % of the cores), the block device under the data directory (requests in flight 85 % of the time, or 40 % with no CPU near full: every process's requests on that device), the link's relay; the engine's own background work where it held writes back (RocksDB's write stops and delays, a fifth of the measured phase or more); a run that reached the rate it was held to has none. Locks are not judged yet: a run limited by them says none of these.";

/// The bottleneck of each run and its evidence.
pub fn bottleneck_rows(r: &ExperimentResult) -> Option<Rows> {
    let mut rows = vec![["run", "target", "bottleneck", "evidence"]
        .map(String::from)
        .to_vec()];
    for run in &r.runs {
        let Some(b) = &run.bottleneck else {
            continue;
        };
        let target = crate::view::run_label(run);
        rows.push(vec![
            run.index.to_string(),
            target,
            b.line.clone(),
            b.evidence.join("; "),
        ]);
    }
    (rows.len() > 1).then_some(rows)
}

/// The note of the server's distributions.
pub const SERVER_DISTRIBUTION_NOTE: &str = "Where the server keeps a distribution of its own time per command (Redis: LATENCY HISTOGRAM, power-of-two µs buckets, read as the warm-up ends and after the measure job and subtracted bucket by bucket), its calls per bucket beside the client's service times of the operations the command serves, in the same buckets. Two distributions side by side: the difference of two percentiles is not a percentile of anything.";

/// The server's and the client's distributions per command, bucket by
/// bucket, for the runs whose server keeps them.
pub fn server_distribution_rows(r: &ExperimentResult) -> Option<Rows> {
    let mut rows = vec![[
        "run",
        "target",
        "command",
        "up to",
        "server calls",
        "server share",
        "client operations",
        "client share",
    ]
    .map(String::from)
    .to_vec()];
    let share = |n: u64, of: u64| {
        if of == 0 {
            "-".to_string()
        } else {
            format!("{:.1} %", n as f64 / of as f64 * 100.0)
        }
    };
    for run in &r.runs {
        for c in run.server_time.iter().flat_map(|t| &t.commands) {
            let server: u64 = c.histogram.iter().map(|b| b.server).sum();
            let client: u64 = c.histogram.iter().map(|b| b.client).sum();
            for b in &c.histogram {
                rows.push(vec![
                    run.index.to_string(),
                    run.target.clone(),
                    c.command.clone(),
                    fmt_ns(b.le_us as f64 * 1e3),
                    b.server.to_string(),
                    share(b.server, server),
                    b.client.to_string(),
                    share(b.client, client),
                ]);
            }
        }
    }
    (rows.len() > 1).then_some(rows)
}

/// The note of the server-time table.
pub const SERVER_TIME_NOTE: &str = "The server's own time per command over the measured phase (read as the warm-up ends and after the measure job; Redis: INFO commandstats, usec over calls; PostgreSQL: pg_stat_statements' execution time, which leaves out the commit's WAL write and flush, shown apart from pg_stat_wal where bakeoff started the server) beside the client's mean service time, send to reply, of the operations the command serves, measured phase. The rest of the round trip is the network, the kernels and the client: a server that spends a small share of it is not what sets the pace.";

/// The server's time per command, for the runs whose server times its
/// commands.
pub fn server_time_rows(r: &ExperimentResult) -> Option<Rows> {
    let mut rows = vec![[
        "run",
        "target",
        "command",
        "calls",
        "server mean",
        "client mean",
        "network, queueing and client",
        "server share",
    ]
    .map(String::from)
    .to_vec()];
    for run in &r.runs {
        let target = crate::view::run_label(run);
        let Some(time) = &run.server_time else {
            continue;
        };
        if time.commands.is_empty() {
            // Said rather than left blank.
            let mut row = vec![run.index.to_string(), target.clone()];
            row.push(format!("none: {}", time.source));
            row.extend(["-"; 5].map(String::from));
            rows.push(row);
        }
        for c in &time.commands {
            let client = c.client_mean_us.filter(|&m| m > 0.0);
            rows.push(vec![
                run.index.to_string(),
                target.clone(),
                c.command.clone(),
                c.calls.to_string(),
                fmt_ns(c.server_mean_us * 1e3),
                client.map_or_else(|| "-".into(), |m| fmt_ns(m * 1e3)),
                // A part of the operations' time in the server leaves the
                // rest to the commands' rows.
                client.filter(|_| !c.apart).map_or_else(
                    || "-".into(),
                    |m| fmt_ns((m - c.server_mean_us).max(0.0) * 1e3),
                ),
                client.map_or_else(
                    || "-".into(),
                    |m| format!("{:.1} %", c.server_mean_us / m * 100.0),
                ),
            ]);
        }
    }
    (rows.len() > 1).then_some(rows)
}

/// The section declared under `id`.
///
/// # Panics
/// When no section has that id: a caller names one of [`TABLE_SECTIONS`].
pub fn section(id: &str) -> &'static TableSection {
    TABLE_SECTIONS
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no report section {id}"))
}
