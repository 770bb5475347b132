//! The server's time beside the client's: two histograms on one axis.

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::{fmt_ns, ticks};

use super::Plot;
use crate::html::charts::{Axis, BarChart, BarGroup};
use crate::model::Block;
use crate::view::View;

/// The charts of the section "time inside the server, distributed".
pub fn distribution_charts(view: &View, r: &ExperimentResult) -> Vec<Block> {
    let mut plot = Plot::new(view);
    plot.distribution(r);
    plot.finish()
}

impl Plot<'_, '_> {
    /// One chart per command whose server keeps a distribution: the
    /// server's calls and the client's operations per bucket, as shares.
    fn distribution(&mut self, r: &ExperimentResult) {
        {
            for run in &r.runs {
                for c in run.server_time.iter().flat_map(|t| &t.commands) {
                    if c.histogram.is_empty() {
                        continue;
                    }
                    let total = |pick: fn(&bakeoff_core::result::TimeBucket) -> u64| {
                        c.histogram.iter().map(pick).sum::<u64>().max(1) as f64
                    };
                    let (server, client) = (total(|b| b.server), total(|b| b.client));
                    let groups = vec![
                        BarGroup {
                            name: "inside the server".into(),
                            style: 0,
                            values: c
                                .histogram
                                .iter()
                                .map(|b| Some(b.server as f64 / server * 100.0))
                                .collect(),
                            ranges: Vec::new(),
                        },
                        BarGroup {
                            name: "at the client".into(),
                            style: 1,
                            values: c
                                .histogram
                                .iter()
                                .map(|b| Some(b.client as f64 / client * 100.0))
                                .collect(),
                            ranges: Vec::new(),
                        },
                    ];
                    self.bars(BarChart {
                        title: format!(
                            "{} {}: time inside the server and at the client",
                            run.target, c.command
                        ),
                        categories: c
                            .histogram
                            .iter()
                            .map(|b| format!("≤ {}", fmt_ns(b.le_us as f64 * 1e3)))
                            .collect(),
                        x_title: "time, power-of-two buckets".into(),
                        y: Axis::linear("share of calls", ticks::share),
                        groups,
                    });
                }
            }
        }
        self.flush();
    }
}
