//! Counted things drawn: the steps of a request, failed operations by
//! kind.

use bakeoff_core::result::RunResult;
use bakeoff_core::units::ticks;

use super::Plot;
use crate::html::charts::{Axis, BarChart, BarGroup};
use crate::model::Block;
use crate::view::{point_label, View};

/// The mean time of each step of a request, when requests have steps.
pub fn step_charts(view: &View) -> Vec<Block> {
    let mut plot = Plot::new(view);
    plot.steps();
    plot.finish()
}

/// Failed operations by kind, all runs, when any failed.
pub fn error_charts(view: &View) -> Vec<Block> {
    let mut plot = Plot::new(view);
    plot.errors();
    plot.finish()
}

impl Plot<'_, '_> {
    /// Phased requests: mean time of each step, per series.
    fn steps(&mut self) {
        let with_steps: Vec<(usize, &RunResult)> = self
            .view
            .runs
            .iter()
            .filter(|r| !r.run.measure.steps.is_empty() && r.run.repeat == 0)
            .map(|r| (r.series, r.run))
            .collect();
        if with_steps.is_empty() {
            return;
        }
        let mut names: Vec<String> = Vec::new();
        for (_, r) in &with_steps {
            for s in &r.measure.steps {
                if !names.contains(&s.name) {
                    names.push(s.name.clone());
                }
            }
        }
        let groups: Vec<BarGroup> = with_steps
            .iter()
            .map(|(s, r)| BarGroup {
                name: format!("{} {}", self.view.series[*s], point_label(&r.point))
                    .trim_end()
                    .to_string(),
                style: *s,
                values: names
                    .iter()
                    .map(|n| {
                        r.measure
                            .steps
                            .iter()
                            .find(|x| &x.name == n)
                            .map(|x| x.latency.mean_ns)
                    })
                    .collect(),
                ranges: vec![],
            })
            .collect();
        self.bars(BarChart {
            title: "Mean time of each step of a request".into(),
            categories: names.clone(),
            x_title: "step".into(),
            y: Axis::linear("mean time", ticks::ns),
            groups,
        });
        self.flush();
    }

    fn errors(&mut self) {
        let mut kinds: Vec<String> = Vec::new();
        for r in &self.view.runs {
            for k in r.run.measure.errors.keys() {
                if !kinds.contains(k) {
                    kinds.push(k.clone());
                }
            }
        }
        if kinds.is_empty() {
            return;
        }
        let mut totals: Vec<BarGroup> = Vec::new();
        for s in 0..self.view.series.len() {
            let values = kinds
                .iter()
                .map(|k| {
                    let n: u64 = self
                        .view
                        .runs
                        .iter()
                        .filter(|r| r.series == s)
                        .map(|r| r.run.measure.errors.get(k).copied().unwrap_or(0))
                        .sum();
                    (n > 0).then_some(n as f64)
                })
                .collect();
            totals.push(BarGroup {
                name: self.view.series[s].clone(),
                style: s,
                values,
                ranges: vec![],
            });
        }
        self.bars(BarChart {
            title: "Failed operations by kind, all runs".into(),
            categories: kinds.clone(),
            x_title: "error kind".into(),
            y: Axis::linear("operations", ticks::count),
            groups: totals,
        });
        self.flush();
    }
}
