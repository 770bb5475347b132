//! The figures against each sweep axis, one line (or bar) per series.

use std::collections::BTreeMap;

use bakeoff_core::result::RunResult;
use bakeoff_core::units::ticks;

use super::Plot;
use crate::document::Block;
use crate::html::charts::{Axis, BarChart, BarGroup, Line, LineChart, Scale, XAxis};
use crate::view::{fmt_seconds, point_label, point_without, Figure, Group, Spread, View};

/// The charts of the sweep axes, each under its heading.
pub fn sweep_charts(view: &View) -> Vec<Block> {
    let mut plot = Plot::new(view);
    plot.sweeps();
    plot.finish()
}

impl Plot<'_, '_> {
    /// For each sweep axis and each combination of the other axes: the
    /// figures against the axis, one line (or bar) per series.
    fn sweeps(&mut self) {
        let groups = self.view.groups();
        let axes = self.view.axes.clone();
        for axis in axes {
            let ordered = axis.is_ordered();
            let title = axis.title();
            let (name, labels, numbers) = (axis.name, axis.labels, axis.numbers);
            let mut fixed: Vec<BTreeMap<String, String>> = Vec::new();
            for g in &groups {
                let f = point_without(&g.point, &name);
                if !fixed.contains(&f) {
                    fixed.push(f);
                }
            }
            self.heading(title.clone());
                        let has_load = groups
                .iter()
                .any(|g| g.runs.iter().any(|r| r.load.is_some()));
            for f in &fixed {
                let suffix = if f.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", point_label(f))
                };
                type Pick = fn(&RunResult) -> Option<f64>;
                let mut figs: Vec<(&str, Pick, Axis)> = vec![
                    (
                        "Throughput",
                        (|r: &RunResult| Some(Figure::Throughput.of(r))),
                        Axis::linear("throughput (ops/s)", ticks::count),
                    ),
                    (
                        "Mean latency",
                        (|r: &RunResult| Some(Figure::Mean.of(r))),
                        Axis::linear("mean latency", ticks::ns),
                    ),
                    (
                        "p99 latency",
                        (|r: &RunResult| Some(Figure::P99.of(r))),
                        Axis::linear("p99 latency", ticks::ns),
                    ),
                ];
                if has_load && name == "records" {
                    figs.push((
                        "Load rate",
                        (|r: &RunResult| r.load.as_ref().map(|l| l.records_written_per_s())),
                        Axis::linear("records written (rec/s)", ticks::count),
                    ));
                }
                let faulted = groups
                    .iter()
                    .any(|g| g.runs.iter().any(|r| r.fault.is_some()));
                if faulted {
                    figs.push((
                        "Time to serve again after the fault",
                        (|r: &RunResult| r.fault.as_ref().and_then(|f| f.back_after_s)),
                        Axis::linear("until its port answered", fmt_seconds),
                    ));
                    figs.push((
                        "Time to 90 % throughput after the fault",
                        (|r: &RunResult| r.fault.as_ref().and_then(|f| f.recovered_after_s)),
                        Axis::linear("until throughput was back", fmt_seconds),
                    ));
                }
                for (what, get, axis) in figs {
                    let chart_title = format!("{what} vs {name}{suffix}");
                    let series_groups: Vec<(usize, Vec<(usize, Spread)>)> =
                        (0..self.view.series.len())
                            .map(|s| {
                                let pts = labels
                                    .iter()
                                    .enumerate()
                                    .filter_map(|(i, l)| {
                                        let mut want = f.clone();
                                        want.insert(name.clone(), l.clone());
                                        let g: &Group = groups
                                            .iter()
                                            .find(|g| g.series == s && g.point == want)?;
                                        Spread::of(g.runs.iter().filter_map(|r| get(r)))
                                            .map(|sp| (i, sp))
                                    })
                                    .collect();
                                (s, pts)
                            })
                            .filter(|(_, p): &(usize, Vec<(usize, Spread)>)| !p.is_empty())
                            .collect();
                    let all_values = series_groups
                        .iter()
                        .flat_map(|(_, p)| p.iter().map(|x| x.1.median));
                    let yscale = Scale::fitting(
                        all_values,
                        if what == "Throughput" || what == "Load rate" {
                            50.0
                        } else {
                            20.0
                        },
                    );
                    let axis = axis.with_scale(yscale);
                    if ordered {
                        let x = match &numbers {
                            Some(nums) => XAxis::Numeric(
                                Axis::linear(
                                    title.clone(),
                                    if name == "value_size" || name == "memory_cap" {
                                        ticks::bytes
                                    } else {
                                        ticks::count
                                    },
                                )
                                .with_scale(Scale::fitting(nums.iter().copied(), 20.0)),
                            ),
                            None => XAxis::Categories {
                                title: title.clone(),
                                labels: labels.clone(),
                            },
                        };
                        let lines = series_groups
                            .iter()
                            .map(|(s, pts)| Line {
                                name: self.view.series[*s].clone(),
                                points: pts
                                    .iter()
                                    .map(|(i, sp)| {
                                        (
                                            numbers.as_ref().map(|n| n[*i]).unwrap_or(*i as f64),
                                            sp.median,
                                        )
                                    })
                                    .collect(),
                                ranges: pts
                                    .iter()
                                    .map(|(_, sp)| (sp.n > 1).then_some((sp.min, sp.max)))
                                    .collect(),
                                style: *s,
                                markers: true,
                                band: false,
                            })
                            .collect();
                        self.line(LineChart {
                            title: chart_title,
                            x,
                            y: axis,
                            lines,
                            bands: vec![],
                        });
                    } else {
                        let groups_b = series_groups
                            .iter()
                            .map(|(s, pts)| BarGroup {
                                name: self.view.series[*s].clone(),
                                style: *s,
                                values: (0..labels.len())
                                    .map(|i| pts.iter().find(|p| p.0 == i).map(|p| p.1.median))
                                    .collect(),
                                ranges: (0..labels.len())
                                    .map(|i| {
                                        pts.iter()
                                            .find(|p| p.0 == i && p.1.n > 1)
                                            .map(|p| (p.1.min, p.1.max))
                                    })
                                    .collect(),
                            })
                            .collect();
                        self.bars(BarChart {
                            title: chart_title,
                            categories: labels.clone(),
                            x_title: title.clone(),
                            y: axis,
                            groups: groups_b,
                        });
                    }
                }
            }
            self.flush();
        }
    }
}
