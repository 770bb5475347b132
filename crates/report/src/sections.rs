//! The report's tables that some experiments have (durability, disk,
//! encoding, searches, nodes, replication, link, shards, server time),
//! declared once: their heading, what they show and their rows. The text
//! and Markdown exporters render every one of them in this order, and the
//! HTML report takes each heading and note from here (drawing charts
//! beside some).

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::fmt_ns;

use crate::{durability, encoding, search, topology};

/// A table (head row first), or `None` when the experiment has none.
pub type Rows = Vec<Vec<String>>;

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
}

/// Every table some experiments have, in the report's order.
pub const TABLE_SECTIONS: &[TableSection] = &[
    TableSection {
        id: "durability",
        title: "Durability",
        text_heading: "durability (every write logged as acknowledged or not, read back after the run):",
        note: "Every write of the durability check was logged by the client as acknowledged, failed or indeterminate, and read back after the run: lost writes were acknowledged yet are absent; recovered ones were not acknowledged yet are present; a hole is a lost write before a surviving later one of the same writer. The class is what was measured with each setting.",
        left: 3,
        rows: durability::durability_rows,
    },
    TableSection {
        id: "disk",
        title: "Disk per write",
        text_heading: "disk per write (the server's processes, warm-up and measured phase):",
        note: "What the server's processes sent to storage per write (set, update, delete) over the warm-up and the measured phase, from /proc/PID/io; fsyncs are counted exactly where the data directory is on bakeoff's power-cut layer.",
        left: 2,
        rows: durability::disk_rows,
    },
    TableSection {
        id: "encoding",
        title: "Client-side encoding",
        text_heading: "client-side encoding (encode and decode timed apart, on the run's values):",
        note: encoding::ENCODING_NOTE,
        left: 2,
        rows: encoding::encoding_rows,
    },
    TableSection {
        id: "searches",
        title: "Peak and capacity",
        text_heading: "searches (peak: clients doubled until throughput stopped rising; capacity: the highest open-loop rate that held the bound):",
        note: search::SEARCH_NOTE,
        left: 3,
        rows: search::search_rows,
    },
    TableSection {
        id: "nodes",
        title: "Requests per node",
        text_heading: "requests per node (sharded targets):",
        note: topology::NODES_NOTE,
        left: 2,
        rows: topology::nodes_rows,
    },
    TableSection {
        id: "replication",
        title: "Replication",
        text_heading: "replication (writes to the primary):",
        note: topology::REPLICATION_NOTE,
        left: 3,
        rows: topology::replication_rows,
    },
    TableSection {
        id: "link",
        title: "Link",
        text_heading: "link (bakeoff's relay between clients and servers):",
        note: topology::LINK_NOTE,
        left: 3,
        rows: topology::link_rows,
    },
    TableSection {
        id: "shards",
        title: "Shards",
        text_heading: "shards (merged by bakeoff merge; rate reached / asked, start after --start-at, clock against the server's):",
        note: topology::SHARDS_NOTE,
        left: 2,
        rows: topology::shards_rows,
    },
    TableSection {
        id: "server-time",
        title: "Time inside the server",
        text_heading: "time inside the server (the server's own count per command, beside the client's round trip):",
        note: SERVER_TIME_NOTE,
        left: 3,
        rows: server_time_rows,
    },
];

/// The note of the server-time table.
pub const SERVER_TIME_NOTE: &str = "The server's own time per command over the measure job (warm-up and measured phase; Redis: INFO commandstats, usec over calls) beside the client's mean service time, send to reply, of the operations the command serves, measured phase. The rest of the round trip is the network, the kernels and the client: a server that spends a small share of it is not what sets the pace.";

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
        "server share",
    ]
    .map(String::from)
    .to_vec()];
    for run in &r.runs {
        for c in run.server_time.iter().flat_map(|t| &t.commands) {
            rows.push(vec![
                run.index.to_string(),
                match crate::view::point_label(&run.point) {
                    p if p.is_empty() => run.target.clone(),
                    p => format!("{} {p}", run.target),
                },
                c.command.clone(),
                c.calls.to_string(),
                fmt_ns(c.server_mean_us * 1e3),
                c.client_mean_us
                    .map(|m| fmt_ns(m * 1e3))
                    .unwrap_or_else(|| "-".into()),
                c.client_mean_us
                    .filter(|&m| m > 0.0)
                    .map(|m| format!("{:.1} %", c.server_mean_us / m * 100.0))
                    .unwrap_or_else(|| "-".into()),
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
