//! Throughput and latency per target: the bars every report opens its
//! charts with, and each kind of operation side by side.

use std::collections::BTreeMap;

use bakeoff_core::result::RunResult;
use bakeoff_core::summary::{summarise_runs, Headline};
use bakeoff_core::units::ticks;
use bakeoff_core::workload::OpKind;

use super::Plot;
use crate::html::charts::{Axis, BarChart, BarGroup, Scale};
use crate::model::Section;
use crate::view::{at_point, point_label, Group, Spread, View};

/// What the overview's bars and whiskers are.
pub const OVERVIEW_NOTE: &str = "Bars: the median of each target's repeats. Whiskers: its 95 % interval, between runs with 6 repeats or more (would a rerun agree), within the run for one (per-second windows for throughput, order statistics of the operations for percentiles: a rerun may differ more); none for 2 to 5 repeats, too few for one.";

/// Throughput and latency per target, when the runs have at most 12
/// points (beyond, the sweep charts say it better).
pub fn overview(view: &View) -> Option<Section> {
    if view.runs.is_empty() || view.points().len() > 12 {
        return None;
    }
    let mut plot = Plot::new(view);
    plot.overview();
    Some(
        Section::new(
            "overview",
            "Throughput and latency per target",
            plot.finish(),
        )
        .noted(OVERVIEW_NOTE),
    )
}

impl Plot<'_, '_> {
    /// Throughput bars and latency-percentile bars per series, one category
    /// per point: the median of the repeats, with its 95 % interval as
    /// whiskers (between runs with 6 repeats or more, within the run for
    /// one; none for 2 to 5).
    fn overview(&mut self) {
        let groups = self.view.groups();
        let points = self.view.points();
        let cats: Vec<String> = points.iter().map(point_label).collect();
        let series = self.view.series.clone();
        let summary_of = |g: &Group| summarise_runs(&series[g.series], &g.point, &g.runs);
        let tp: Vec<BarGroup> = (0..self.view.series.len())
            .map(|s| {
                let bars: Vec<_> = points
                    .iter()
                    .map(|p| {
                        groups
                            .iter()
                            .find(|g| g.series == s && &g.point == p)
                            .map_or((None, None), |g| {
                                bar_of(&summary_of(g), Headline::Throughput)
                            })
                    })
                    .collect();
                BarGroup {
                    name: self.view.series[s].clone(),
                    style: s,
                    values: bars.iter().map(|b| b.0).collect(),
                    ranges: bars.iter().map(|b| b.1).collect(),
                }
            })
            .collect();
        let scale = Scale::fitting(
            tp.iter().flat_map(|g| g.values.iter().flatten().copied()),
            50.0,
        );
        self.bars(BarChart {
            title: "Throughput (higher is better)".into(),
            // Without a sweep, one category with no name: no axis title.
            x_title: if cats.iter().all(String::is_empty) {
                String::new()
            } else {
                "point".into()
            },
            categories: cats.clone(),
            y: Axis::linear("throughput (ops/s)", ticks::count).with_scale(scale),
            groups: tp,
        });
        // Percentiles: one chart, categories = percentile, bars = series; a
        // sweep gets one chart per point.
        for p in &points {
            let mut gs = Vec::new();
            for s in 0..self.view.series.len() {
                let Some(g) = groups.iter().find(|g| g.series == s && &g.point == p) else {
                    continue;
                };
                let summary = summary_of(g);
                let bars: Vec<_> = [Headline::P50, Headline::P99, Headline::P999]
                    .into_iter()
                    .map(|h| bar_of(&summary, h))
                    .collect();
                gs.push(BarGroup {
                    name: self.view.series[s].clone(),
                    style: s,
                    values: bars.iter().map(|b| b.0).collect(),
                    ranges: bars.iter().map(|b| b.1).collect(),
                });
            }
            let scale = Scale::fitting(
                gs.iter().flat_map(|g| g.values.iter().flatten().copied()),
                20.0,
            );
            self.bars(BarChart {
                title: format!("Latency percentiles (lower is better){}", at_point(p)),
                categories: vec!["p50".into(), "p99".into(), "p99.9".into()],
                x_title: "percentile".into(),
                y: Axis::linear("latency", ticks::ns).with_scale(scale),
                groups: gs,
            });
            self.kinds_side_by_side(p, &groups);
        }
        self.flush();
    }

    /// A point that mixes several kinds of operation (YCSB's workloads, a
    /// replayed trace): each kind's throughput and p99 side by side, a bar
    /// per series (the median over repeats).
    fn kinds_side_by_side(&mut self, p: &BTreeMap<String, String>, groups: &[Group]) {
        let mine: Vec<&Group> = groups.iter().filter(|g| &g.point == p).collect();
        let kinds: Vec<&str> = OpKind::ALL
            .iter()
            .map(|k| k.name())
            .filter(|k| {
                mine.iter()
                    .flat_map(|g| &g.runs)
                    .any(|r| r.measure.ops.get(*k).is_some_and(|o| o.completed > 0))
            })
            .collect();
        if kinds.len() < 2 {
            return;
        }
        type PickK = fn(&RunResult, &str) -> Option<f64>;
        let figures: [(&str, PickK, Axis); 2] = [
            (
                "Throughput of each kind of operation (higher is better)",
                |r, k| {
                    let o = r.measure.ops.get(k)?;
                    (r.measure.duration_s > 0.0).then(|| o.completed as f64 / r.measure.duration_s)
                },
                Axis::linear("throughput (ops/s)", ticks::count),
            ),
            (
                "p99 latency of each kind of operation (lower is better)",
                |r, k| r.measure.ops.get(k).map(|o| o.latency.p99_ns as f64),
                Axis::linear("p99 latency", ticks::ns),
            ),
        ];
        for (title, pick, axis) in figures {
            let gs: Vec<BarGroup> = mine
                .iter()
                .map(|g| {
                    let sps: Vec<Option<Spread>> = kinds
                        .iter()
                        .map(|k| Spread::of(g.runs.iter().filter_map(|r| pick(r, k))))
                        .collect();
                    BarGroup {
                        name: self.view.series[g.series].clone(),
                        style: g.series,
                        values: sps.iter().map(|x| x.map(|x| x.median)).collect(),
                        ranges: sps
                            .iter()
                            .map(|x| x.filter(|x| x.n > 1).map(|x| (x.min, x.max)))
                            .collect(),
                    }
                })
                .collect();
            let scale = Scale::fitting(
                gs.iter().flat_map(|g| g.values.iter().flatten().copied()),
                20.0,
            );
            self.bars(BarChart {
                title: format!("{title}{}", at_point(p)),
                categories: kinds.iter().map(|k| k.to_string()).collect(),
                x_title: "operation".into(),
                y: axis.with_scale(scale),
                groups: gs,
            });
        }
    }
}

/// The bar of `figure` in `summary`: the median over the repeats, and its
/// 95 % interval as whiskers where there is one.
fn bar_of(
    summary: &bakeoff_core::summary::PointSummary,
    figure: Headline,
) -> (Option<f64>, Option<(f64, f64)>) {
    summary.figure(figure).map_or((None, None), |f| {
        (Some(f.median), f.interval.map(|i| (i.low, i.high)))
    })
}
