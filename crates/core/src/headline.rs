//! The figures a report can lead with, named as `--precision` and the
//! reports name them, and their summaries over repeats as a result file
//! keeps them. What the plan, the result file and the summaries all stand
//! on; reading a figure from a run and summarising runs are
//! [`crate::summary`]'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{self, Interval, Stability};

/// A figure a report leads with.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Headline {
    /// Successful operations per second in the measured phase.
    Throughput,
    /// Mean latency, ns.
    Mean,
    /// Median latency, ns.
    P50,
    /// 99th percentile latency, ns.
    P99,
    /// 99.9th percentile latency, ns.
    P999,
    /// bakeoff's CPU per successful operation, ns.
    ClientCpuPerOp,
    /// The server's CPU per successful operation, ns.
    ServerCpuPerOp,
    /// The server's memory per record held, bytes.
    MemoryPerRecord,
    /// Bytes the block device under the data wrote per write, by its own
    /// count, the idle rate taken off.
    DiskPerWrite,
}

impl Headline {
    /// Every headline figure, in table order.
    pub const ALL: [Headline; 9] = [
        Headline::Throughput,
        Headline::Mean,
        Headline::P50,
        Headline::P99,
        Headline::P999,
        Headline::ClientCpuPerOp,
        Headline::ServerCpuPerOp,
        Headline::MemoryPerRecord,
        Headline::DiskPerWrite,
    ];

    /// As named in reports and in `--precision` (`throughput`, `p99`, …).
    pub fn key(self) -> &'static str {
        match self {
            Headline::Throughput => "throughput",
            Headline::Mean => "mean",
            Headline::P50 => "p50",
            Headline::P99 => "p99",
            Headline::P999 => "p99.9",
            Headline::ClientCpuPerOp => "client-cpu",
            Headline::ServerCpuPerOp => "server-cpu",
            Headline::MemoryPerRecord => "memory",
            Headline::DiskPerWrite => "disk",
        }
    }

    /// The figure named `key` (see [`Headline::key`]).
    pub fn from_key(key: &str) -> Option<Headline> {
        Headline::ALL.into_iter().find(|h| h.key() == key)
    }

    /// Whether more is better.
    pub fn higher_is_better(self) -> bool {
        self == Headline::Throughput
    }

    /// Formats a value of this figure with its unit.
    pub fn format(self, v: f64) -> String {
        use crate::units::{fmt_bytes, fmt_ns, fmt_rate};
        match self {
            Headline::Throughput => fmt_rate(v),
            Headline::MemoryPerRecord | Headline::DiskPerWrite => fmt_bytes(v),
            _ => fmt_ns(v),
        }
    }
}

/// One headline figure of a target at a point, over its repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureSummary {
    /// Which figure.
    pub figure: Headline,
    /// The median over the repeats that measured it.
    pub median: f64,
    /// Each repeat's value, in the order they ran.
    pub values: Vec<f64>,
    /// The 95 % interval, where the repeats (6 or more) or the one run
    /// give one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

impl FigureSummary {
    /// `12.3k ops/s [11.9k–12.8k]`, or the median alone.
    pub fn text(&self) -> String {
        let f = self.figure;
        match &self.interval {
            Some(i) => format!(
                "{} [{}–{}]",
                f.format(self.median),
                f.format(i.low),
                f.format(i.high)
            ),
            None => f.format(self.median),
        }
    }
}

/// A target at a point: the median of its repeats, with intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointSummary {
    /// The target's name.
    pub target: String,
    /// The sweep values of the point.
    pub point: BTreeMap<String, String>,
    /// Repeats that measured (failed and interrupted runs left out).
    pub repeats: u32,
    /// The runs' indices in the result file.
    pub runs: Vec<u32>,
    /// The headline figures measured.
    pub figures: Vec<FigureSummary>,
    /// How steady each repeat's measured seconds were, in run order.
    pub stability: Vec<Stability>,
}

impl PointSummary {
    /// The summary of `figure`, where measured.
    pub fn figure(&self, figure: Headline) -> Option<&FigureSummary> {
        self.figures.iter().find(|f| f.figure == figure)
    }

    /// What the intervals stand for, in words, for a line under a table.
    pub fn interval_note(&self) -> String {
        match self.repeats as usize {
            n if n >= stats::REPEATS_FOR_INTERVAL => {
                format!("95 % intervals between runs: the median's over {n} repeats")
            }
            1 => format!(
                "95 % intervals within one run: a rerun may differ more; an interval between runs needs --repeats {}",
                stats::REPEATS_FOR_INTERVAL
            ),
            n => format!(
                "{n} repeats: no 95 % interval (a median's needs {})",
                stats::REPEATS_FOR_INTERVAL
            ),
        }
    }

    /// The runs that were not steady, as "repeat 2: level shift at …".
    pub fn unsteady(&self) -> Vec<String> {
        self.stability
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_steady())
            .map(|(i, s)| {
                if self.stability.len() > 1 {
                    format!("repeat {}: {}", i + 1, s.text())
                } else {
                    s.text()
                }
            })
            .collect()
    }
}
