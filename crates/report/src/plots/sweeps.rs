//! The figures against each sweep axis, one line (or bar) per series.

use std::collections::BTreeMap;

use bakeoff_core::result::RunResult;
use bakeoff_core::units::ticks;

use super::Plot;
use crate::html::charts::{Axis, BarChart, BarGroup, Line, LineChart, Scale, XAxis};
use crate::model::Block;
use crate::view::{fmt_seconds, point_label, point_without, AxisView, Figure, Group, Spread, View};

/// The charts of the sweep axes, each under its heading.
pub fn sweep_charts(view: &View) -> Vec<Block> {
    let mut plot = Plot::new(view);
    plot.sweeps();
    plot.finish()
}

/// How a figure is read from a run.
type Pick = fn(&RunResult) -> Option<f64>;

/// One figure drawn against an axis: its name, how it is read, its y axis.
type SweepFigure = (&'static str, Pick, Axis);

/// The figures drawn against `axis`: throughput and latency always; the
/// load rate against records, when runs loaded; the times back after a
/// fault, when runs had one.
fn sweep_figures(axis: &str, groups: &[Group]) -> Vec<SweepFigure> {
    let mut figs: Vec<SweepFigure> = vec![
        (
            "Throughput",
            |r| Some(Figure::Throughput.of(r)),
            Axis::linear("throughput (ops/s)", ticks::count),
        ),
        (
            "Mean latency",
            |r| Some(Figure::Mean.of(r)),
            Axis::linear("mean latency", ticks::ns),
        ),
        (
            "p99 latency",
            |r| Some(Figure::P99.of(r)),
            Axis::linear("p99 latency", ticks::ns),
        ),
    ];
    let any = |has: fn(&RunResult) -> bool| groups.iter().any(|g| g.runs.iter().any(|r| has(r)));
    if axis == "records" && any(|r| r.load.is_some()) {
        figs.push((
            "Load rate",
            |r| r.load.as_ref().map(|l| l.records_written_per_s()),
            Axis::linear("records written (rec/s)", ticks::count),
        ));
    }
    if any(|r| r.fault.is_some()) {
        figs.push((
            "Time to serve again after the fault",
            |r| r.fault.as_ref().and_then(|f| f.back_after_s),
            Axis::linear("until its port answered", fmt_seconds),
        ));
        figs.push((
            "Time to 90 % throughput after the fault",
            |r| r.fault.as_ref().and_then(|f| f.recovered_after_s),
            Axis::linear("until throughput was back", fmt_seconds),
        ));
    }
    figs
}

/// The points of one series along the axis: the label's index and the
/// spread of the repeats there.
type SeriesPoints = (usize, Vec<(usize, Spread)>);

impl Plot<'_, '_> {
    /// For each sweep axis and each combination of the other axes: the
    /// figures against the axis, one line (or bar) per series.
    fn sweeps(&mut self) {
        let groups = self.view.groups();
        for axis in self.view.axes.clone() {
            let mut fixed: Vec<BTreeMap<String, String>> = Vec::new();
            for g in &groups {
                let f = point_without(&g.point, &axis.name);
                if !fixed.contains(&f) {
                    fixed.push(f);
                }
            }
            self.heading(axis.title());
            for f in &fixed {
                for figure in sweep_figures(&axis.name, &groups) {
                    let series = self.series_along(&axis, f, &groups, figure.1);
                    self.sweep_chart(&axis, f, figure, &series);
                }
            }
            self.flush();
        }
    }

    /// Each series' points of `pick` along `axis`, the other axes at `f`.
    fn series_along(
        &self,
        axis: &AxisView,
        f: &BTreeMap<String, String>,
        groups: &[Group],
        pick: Pick,
    ) -> Vec<SeriesPoints> {
        (0..self.view.series.len())
            .map(|s| {
                let pts = axis
                    .labels
                    .iter()
                    .enumerate()
                    .filter_map(|(i, l)| {
                        let mut want = f.clone();
                        want.insert(axis.name.clone(), l.clone());
                        let g = groups.iter().find(|g| g.series == s && g.point == want)?;
                        Spread::of(g.runs.iter().filter_map(|r| pick(r))).map(|sp| (i, sp))
                    })
                    .collect();
                (s, pts)
            })
            .filter(|(_, p): &SeriesPoints| !p.is_empty())
            .collect()
    }

    /// One figure against `axis`: lines along an ordered axis, bars
    /// across one that is not.
    fn sweep_chart(
        &mut self,
        axis: &AxisView,
        f: &BTreeMap<String, String>,
        (what, _, y): SweepFigure,
        series: &[SeriesPoints],
    ) {
        let suffix = if f.is_empty() {
            String::new()
        } else {
            format!(" ({})", point_label(f))
        };
        let title = format!("{what} vs {}{suffix}", axis.name);
        let medians = series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|x| x.1.median));
        let ratio = if what == "Throughput" || what == "Load rate" {
            50.0
        } else {
            20.0
        };
        let y = y.with_scale(Scale::fitting(medians, ratio));
        if axis.is_ordered() {
            self.sweep_lines(axis, title, y, series);
        } else {
            self.sweep_bars(axis, title, y, series);
        }
    }

    /// Lines along an ordered axis, numeric where its labels are numbers.
    fn sweep_lines(&mut self, axis: &AxisView, title: String, y: Axis, series: &[SeriesPoints]) {
        let x = match &axis.numbers {
            Some(nums) => XAxis::Numeric(
                Axis::linear(
                    axis.title(),
                    if axis.name == "value_size" || axis.name == "memory_cap" {
                        ticks::bytes
                    } else {
                        ticks::count
                    },
                )
                .with_scale(Scale::fitting(nums.iter().copied(), 20.0)),
            ),
            None => XAxis::Categories {
                title: axis.title(),
                labels: axis.labels.clone(),
            },
        };
        let lines = series
            .iter()
            .map(|(s, pts)| Line {
                name: self.view.series[*s].clone(),
                points: pts
                    .iter()
                    .map(|(i, sp)| {
                        let at = axis.numbers.as_ref().map(|n| n[*i]).unwrap_or(*i as f64);
                        (at, sp.median)
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
            title,
            x,
            y,
            lines,
            bands: vec![],
        });
    }

    /// Bars across an axis whose labels have no order.
    fn sweep_bars(&mut self, axis: &AxisView, title: String, y: Axis, series: &[SeriesPoints]) {
        let n = axis.labels.len();
        let groups = series
            .iter()
            .map(|(s, pts)| BarGroup {
                name: self.view.series[*s].clone(),
                style: *s,
                values: (0..n)
                    .map(|i| pts.iter().find(|p| p.0 == i).map(|p| p.1.median))
                    .collect(),
                ranges: (0..n)
                    .map(|i| {
                        pts.iter()
                            .find(|p| p.0 == i && p.1.n > 1)
                            .map(|p| (p.1.min, p.1.max))
                    })
                    .collect(),
            })
            .collect();
        self.bars(BarChart {
            title,
            categories: axis.labels.clone(),
            x_title: axis.title(),
            y,
            groups,
        });
    }
}
