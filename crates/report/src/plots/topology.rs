//! Replication drawn: rates alone and with a replica, stale reads.

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::ticks;

use super::Plot;
use crate::html::charts::{Axis, BarChart, BarGroup};
use crate::model::Block;
use crate::view::View;

/// The charts of the section "replication".
pub fn replication_charts(view: &View, r: &ExperimentResult) -> Vec<Block> {
    let runs: Vec<&bakeoff_core::result::RunResult> = r.runs.iter().collect();
    let mut plot = Plot::new(view);
    plot.replication(&runs);
    plot.finish()
}

impl Plot<'_, '_> {
    /// Replication drawn: write and read rates alone against with a
    /// replica, for each target and point; the stale-read rate of each
    /// replicated run. (Lag over time is among the resource charts.)
    fn replication(&mut self, runs: &[&bakeoff_core::result::RunResult]) {
        use crate::topology::{replication_rates, stale_read_rates};
        let rates = replication_rates(runs);
        let categories: Vec<String> = rates.iter().map(|r| r.label.clone()).collect();
        type Pick = fn(&crate::topology::ReplicationRates) -> [Option<f64>; 2];
        let picks: [(&str, Pick); 2] = [("Write rate", |r| r.writes), ("Read rate", |r| r.reads)];
        for (what, pick) in picks {
            let groups: Vec<BarGroup> = ["single server", "with a replica"]
                .iter()
                .enumerate()
                .map(|(side, name)| BarGroup {
                    name: name.to_string(),
                    style: side,
                    values: rates.iter().map(|r| pick(r)[side]).collect(),
                    ranges: Vec::new(),
                })
                .collect();
            if groups[1].values.iter().all(|v| v.is_none_or(|v| v == 0.0)) {
                continue;
            }
            self.bars(BarChart {
                title: format!("{what}, single server and with a replica (higher is better)"),
                categories: categories.clone(),
                x_title: "target and point".into(),
                y: Axis::linear("operations per second", ticks::count),
                groups,
            });
        }
        let stale = stale_read_rates(runs);
        if !stale.is_empty() {
            self.bars(BarChart {
                title: "Stale reads at the replica, % of reads (lower is better)".into(),
                categories: stale.iter().map(|(l, _)| l.clone()).collect(),
                x_title: "target and point".into(),
                y: Axis::linear("stale reads", ticks::share),
                groups: vec![BarGroup {
                    name: "stale reads".into(),
                    style: 0,
                    values: stale.iter().map(|(_, v)| Some(*v)).collect(),
                    ranges: Vec::new(),
                }],
            });
        }
        self.flush();
    }
}
