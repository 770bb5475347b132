//! Peak and capacity searches drawn: each target's peak, throughput
//! against clients, latency against the offered load with the bound.

use std::collections::BTreeMap;

use bakeoff_core::result::ExperimentResult;
use bakeoff_core::units::ticks;

use super::Plot;
use crate::html::charts::{Axis, BarChart, BarGroup, Line, LineChart, Scale, XAxis};
use crate::model::Block;
use crate::view::View;

/// The charts of the section "peak and capacity" for `r`.
pub fn search_charts(view: &View, r: &ExperimentResult) -> Vec<Block> {
    let mut plot = Plot::new(view);
    plot.searches(r);
    plot.finish()
}

/// Per (kind, point): each series, its steps drawn and the step found.
type SearchCharts = BTreeMap<(String, String), Vec<(usize, Vec<(f64, f64)>, Option<(f64, f64)>)>>;

impl Plot<'_, '_> {
    /// Peak and capacity searches: per
    /// point throughput against clients with each peak marked, and the
    /// percentile against the offered load with the bound, every target on
    /// one chart.
    fn searches(&mut self, only: &ExperimentResult) {
        let (charts, bounds) = self.search_steps(only);
        self.peak_bars(&charts);
        self.search_lines(charts, &bounds);
        self.flush();
    }

    /// Each search of `only` drawn: per (kind, point), each series' steps
    /// and the step it found; and each capacity search's bound.
    fn search_steps(
        &self,
        only: &ExperimentResult,
    ) -> (SearchCharts, BTreeMap<(String, String), f64>) {
        use crate::search::*;
        let sources = self.view.sources.clone();
        let mut charts = SearchCharts::new();
        let mut bounds: BTreeMap<(String, String), f64> = BTreeMap::new();
        for (si, r) in sources.iter().enumerate() {
            if !std::ptr::eq(*r, only) {
                continue;
            }
            for s in &r.searches {
                let Some(series) = s
                    .runs
                    .first()
                    .and_then(|i| {
                        self.view
                            .runs
                            .iter()
                            .find(|rr| rr.source == si && rr.run.index == *i)
                    })
                    .map(|rr| rr.series)
                else {
                    continue;
                };
                let key = (s.kind.clone(), crate::view::point_label(&s.point));
                let (points, mark) = if s.kind == "capacity" {
                    let b = s.bound.map(|b| b.max_ns as f64).unwrap_or(0.0);
                    bounds.insert(key.clone(), b);
                    let mark = s.rate_per_s.zip(s.latency_ns.map(|l| l as f64));
                    (latency_against_load(r, s), mark)
                } else {
                    let mark = s.clients.map(f64::from).zip(s.throughput_per_s);
                    (throughput_against_clients(r, s), mark)
                };
                charts.entry(key).or_default().push((series, points, mark));
            }
        }
        (charts, bounds)
    }

    /// The seed's bars: each target's peak at each point.
    fn peak_bars(&mut self, charts: &SearchCharts) {
        let peak_points: Vec<String> = charts
            .keys()
            .filter(|(k, _)| k == "peak")
            .map(|(_, p)| p.clone())
            .collect();
        if !peak_points.is_empty() {
            let mut groups: BTreeMap<usize, Vec<Option<f64>>> = BTreeMap::new();
            for (pi, p) in peak_points.iter().enumerate() {
                for (series, _, mark) in &charts[&("peak".to_string(), p.clone())] {
                    let g = groups
                        .entry(*series)
                        .or_insert_with(|| vec![None; peak_points.len()]);
                    g[pi] = mark.map(|m| m.1);
                }
            }
            self.bars(BarChart {
                title: "Peak throughput (higher is better)".into(),
                categories: peak_points.clone(),
                x_title: "point".into(),
                y: Axis::linear("operations per second", ticks::count),
                groups: groups
                    .into_iter()
                    .map(|(series, values)| BarGroup {
                        name: self.view.series[series].clone(),
                        style: series,
                        values,
                        ranges: Vec::new(),
                    })
                    .collect(),
            });
        }
    }

    /// One chart per kind and point, a line per series, the step found
    /// marked; a capacity search's bound as a line of its own.
    fn search_lines(&mut self, charts: SearchCharts, bounds: &BTreeMap<(String, String), f64>) {
        for ((kind, point), lines) in charts {
            let mut all: Vec<Line> = Vec::new();
            for (series, points, mark) in &lines {
                let name = &self.view.series[*series];
                all.push(Line {
                    name: name.clone(),
                    points: points.clone(),
                    ranges: Vec::new(),
                    style: *series,
                    markers: true,
                    band: false,
                });
                if let Some(m) = mark {
                    all.push(Line {
                        name: format!(
                            "{name}: {}",
                            if kind == "capacity" {
                                "capacity"
                            } else {
                                "peak"
                            }
                        ),
                        points: vec![*m],
                        ranges: vec![Some((m.1 * 0.9, m.1 * 1.1))],
                        style: *series,
                        markers: true,
                        band: false,
                    });
                }
            }
            if kind == "capacity" {
                let b = bounds
                    .get(&(kind.clone(), point.clone()))
                    .copied()
                    .unwrap_or(0.0);
                let xs = all.iter().flat_map(|l| l.points.iter().map(|p| p.0));
                let hi = xs.fold(0.0f64, f64::max);
                all.push(Line {
                    name: format!("bound {}", ticks::ns(b)),
                    points: vec![(0.0, b), (hi, b)],
                    ranges: Vec::new(),
                    style: 7,
                    markers: false,
                    band: false,
                });
                let scale =
                    Scale::fitting(all.iter().flat_map(|l| l.points.iter().map(|p| p.1)), 50.0);
                self.line(LineChart {
                    title: format!(
                        "{point}: latency against the offered load (the bound's percentile)"
                    ),
                    x: XAxis::Numeric(Axis::linear("offered load (ops/s)", ticks::count)),
                    y: Axis::linear("response time", ticks::ns).with_scale(scale),
                    lines: all,
                    bands: Vec::new(),
                });
            } else {
                self.line(LineChart {
                    title: format!("{point}: throughput against clients, the peak marked"),
                    x: XAxis::Numeric(Axis::linear("clients", ticks::count).with_scale(Scale::Log)),
                    y: Axis::linear("operations per second", ticks::count),
                    lines: all,
                    bands: Vec::new(),
                });
            }
        }
    }
}
