//! Latency at every percentile, and of each traced operation in time
//! order.

use bakeoff_core::units::ticks;

use super::Plot;
use crate::html::charts::{Axis, Line, LineChart, Scale, XAxis};
use crate::model::Section;
use crate::view::{at_point, percentile_spectrum, point_label, View};

/// What the spectrum shows.
pub const SPECTRUM_NOTE: &str = "Response time at each percentile of the measured phase (first repeat); the x axis counts nines, so the tail gets the room it needs. Shaded: each percentile's 95 % interval within the run (order statistics of its operations; it ends where too few operations lie beyond the percentile to give one). A rerun may differ more.";

/// What the trace's charts show.
pub const TRACE_NOTE: &str = "The response time of single measured operations in the order they finished (all clients together), as the seeds drew them: every operation while the trace's bound (`--trace`) held them all, else every Nth, evenly over the run. The mean in the title is that of the operations drawn.";

/// The latency percentile spectrum, per point.
pub fn spectrum(view: &View) -> Option<Section> {
    if view.runs.is_empty() {
        return None;
    }
    let mut plot = Plot::new(view);
    plot.spectrum();
    Some(
        Section::new("spectrum", "Latency percentile spectrum", plot.finish()).noted(SPECTRUM_NOTE),
    )
}

/// The latency of each traced operation, when some run kept a trace.
pub fn traces(view: &View) -> Option<Section> {
    let mut plot = Plot::new(view);
    plot.traces();
    (!plot.is_empty()).then(|| {
        Section::new("trace", "Latency of each operation", plot.finish()).noted(TRACE_NOTE)
    })
}

impl Plot<'_, '_> {
    /// Latency at every percentile, per point, one line per series.
    fn spectrum(&mut self) {
        for p in self.view.points() {
            let lines: Vec<Line> = self
                .view
                .runs
                .iter()
                .filter(|r| r.run.point == p && r.run.repeat == 0)
                .map(|r| {
                    let spectrum = percentile_spectrum(r.run);
                    Line {
                        name: self.view.series[r.series].clone(),
                        points: spectrum
                            .iter()
                            .map(|s| (-(1.0 - s.percentile / 100.0).log10(), s.latency_ns))
                            .collect(),
                        ranges: spectrum.iter().map(|s| s.interval).collect(),
                        band: true,
                        style: r.series,
                        ..Line::default()
                    }
                })
                .collect();
            let scale = Scale::fitting(
                lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
                20.0,
            );
            self.line(LineChart {
                title: format!("Latency by percentile{}", at_point(&p)),
                x: XAxis::Numeric(Axis {
                    title: "percentile".into(),
                    scale: Scale::Linear,
                    format: ticks::nines,
                    from_zero: false,
                }),
                y: Axis::linear("latency", ticks::ns).with_scale(scale),
                lines,
                bands: vec![],
            });
        }
        self.flush();
    }

    /// Per-second charts for each point (first repeat), warm-up shaded.
    /// The latency of each traced operation in time order, one line per
    /// target, the means in the title (the charts of 000-set and 000-get).
    fn traces(&mut self) {
        let points = self.view.points();
        let mut charts = Vec::new();
        for p in &points {
            let runs: Vec<(usize, &bakeoff_core::trace::LatencyTrace)> = self
                .view
                .runs
                .iter()
                .filter(|r| &r.run.point == p && r.run.repeat == 0)
                .filter_map(|r| r.run.trace.as_ref().map(|t| (r.series, t)))
                .filter(|(_, t)| !t.latency_us.is_empty())
                .collect();
            if !runs.is_empty() {
                charts.push((p, runs));
            }
        }
        for (p, runs) in charts {
            let means = runs
                .iter()
                .map(|(s, t)| format!("{} {}", self.view.series[*s], ticks::ns(t.mean_us() * 1e3)))
                .collect::<Vec<_>>()
                .join(", ");
            let lines: Vec<Line> = runs
                .iter()
                .map(|(s, t)| {
                    let step = t.operations as f64 / t.latency_us.len() as f64;
                    Line {
                        name: self.view.series[*s].clone(),
                        points: t
                            .latency_us
                            .iter()
                            .enumerate()
                            .map(|(i, us)| ((i as f64 * step).round(), us * 1e3))
                            .collect(),
                        ranges: Vec::new(),
                        style: *s,
                        markers: false,
                        band: false,
                    }
                })
                .collect();
            let scale = Scale::fitting(
                lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
                50.0,
            );
            self.line(LineChart {
                title: match point_label(p) {
                    label if label.is_empty() => format!("mean: {means}"),
                    label => format!("{label} — mean: {means}"),
                },
                x: XAxis::Numeric(Axis::linear("operation, in time order", ticks::count)),
                y: Axis::linear("response time", ticks::ns).with_scale(scale),
                lines,
                bands: Vec::new(),
            });
        }
        self.flush();
    }
}
