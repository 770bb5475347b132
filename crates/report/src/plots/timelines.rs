//! Second by second: throughput and p99 of every target on one chart,
//! each target's background work on a chart of its own, the server's
//! resources, memory under a cap and each node of several.

use bakeoff_core::result::{Phase, ResourceSample, RunResult, TimelinePoint};
use bakeoff_core::units::ticks;

use super::Plot;
use crate::html::charts::{Axis, Band, Line, LineChart, RightAxis, Scale, XAxis};
use crate::model::{Block, Section};
use crate::view::{fmt_seconds, measure_start, point_label, View};

/// What the per-second charts show.
pub const TIMELINE_NOTE: &str = "Each point's first repeat; time 0 is the start of the measured phase; the shaded stretches before it are the load and the warm-up, excluded from every other number; a fault (`--fault`) is shaded from its moment until the server held its port again. A last second the measured phase ended partway through is left out: it holds only part of a second's work. An engine's background work is shaded on a chart of its own target, what it did on hover. Server resources are those of the managed server (its processes summed; memory as the proportional set size, a page its processes share counted once), or of bakeoff itself for an in-process engine.";

/// The per-second charts, one folded part per point (the first open; all
/// open for four points or fewer).
pub fn timelines(view: &View) -> Option<Section> {
    if view.runs.is_empty() {
        return None;
    }
    let points = view.points();
    let many = points.len() > 4;
    let blocks = points
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            let runs: Vec<(usize, &RunResult)> = view
                .runs
                .iter()
                .filter(|r| &r.run.point == p && r.run.repeat == 0)
                .map(|r| (r.series, r.run))
                .collect();
            let mut plot = Plot::new(view);
            plot.point_timeline(&runs);
            Block::Folded {
                summary: match point_label(p) {
                    label if label.is_empty() => "every run".to_string(),
                    label => format!("point {label}"),
                },
                open: !(many && pi > 0),
                blocks: plot.finish(),
            }
        })
        .collect();
    Some(Section::new("timeline", "Second by second", blocks).noted(TIMELINE_NOTE))
}

/// The x axis of every per-second chart.
fn time_axis() -> XAxis {
    XAxis::Numeric(Axis {
        title: "time from the start of measurement (s)".into(),
        scale: Scale::Linear,
        format: ticks::seconds,
        from_zero: false,
    })
}

/// A figure of the server's resources drawn second by second, shown when
/// some run has it.
struct ResourceFigure {
    title: &'static str,
    pick: fn(&ResourceSample) -> Option<f64>,
    axis: Axis,
    shown: fn(&ResourceSample) -> bool,
}

impl ResourceFigure {
    fn new(
        title: &'static str,
        pick: fn(&ResourceSample) -> Option<f64>,
        axis: Axis,
    ) -> ResourceFigure {
        ResourceFigure {
            title,
            pick,
            axis,
            shown: |_| true,
        }
    }

    fn when(mut self, shown: fn(&ResourceSample) -> bool) -> ResourceFigure {
        self.shown = shown;
        self
    }
}

/// The resource figures `runs` have, in the order they are drawn.
fn resource_figures(runs: &[(usize, &RunResult)]) -> Vec<ResourceFigure> {
    let capped = |s: &ResourceSample| s.cgroup_memory_bytes.is_some();
    let mut all = vec![
        ResourceFigure::new(
            "Server CPU",
            |s| Some(s.cpu_percent),
            Axis::linear("CPU (% of one core)", ticks::percent),
        ),
        ResourceFigure::new(
            "Memory in the capped cgroup (RSS + page cache)",
            |s| s.cgroup_memory_bytes.map(|b| b as f64),
            Axis::linear("memory charged", ticks::bytes),
        )
        .when(capped),
        ResourceFigure::new(
            "Page cache in the capped cgroup",
            |s| s.cgroup_cache_bytes.map(|b| b as f64),
            Axis::linear("page cache", ticks::bytes),
        )
        .when(capped),
        ResourceFigure::new(
            "Server memory (proportional set size)",
            |s| Some(s.memory_bytes() as f64),
            Axis::linear("memory", ticks::bytes),
        ),
        ResourceFigure::new(
            "Disk reads (the server's processes)",
            |s| Some(s.read_bytes_per_s),
            Axis::linear("read from storage (bytes/s)", ticks::bytes_per_s),
        ),
        ResourceFigure::new(
            "What the disk under the data wrote (its own count, every process's)",
            |s| s.device_write_bytes_per_s,
            Axis::linear("written by the device (bytes/s)", ticks::bytes_per_s),
        )
        .when(|s| s.device_write_bytes_per_s.is_some()),
        ResourceFigure::new(
            "Pages the server's processes dirtied (not what the disk wrote)",
            |s| Some(s.write_bytes_per_s),
            Axis::linear("pages dirtied (bytes/s)", ticks::bytes_per_s),
        ),
        ResourceFigure::new(
            "Server write calls",
            |s| s.write_calls_per_s,
            Axis::linear("write system calls per second", ticks::count),
        )
        .when(|s| s.write_calls_per_s.is_some()),
        ResourceFigure::new(
            "fsync calls of the server's processes",
            |s| s.fsyncs_per_s,
            Axis::linear("fsync + fdatasync per second", ticks::count),
        )
        .when(|s| s.fsyncs_per_s.is_some()),
        ResourceFigure::new(
            "Replication lag (bytes of the stream the replica has still to apply)",
            |s| s.replication_lag_bytes.map(|b| b as f64),
            Axis::linear("lag", ticks::bytes),
        )
        .when(|s| s.replication_lag_bytes.is_some()),
        ResourceFigure::new(
            "Data size (the server's data directory)",
            |s| Some(s.disk_bytes as f64),
            Axis::linear("bytes on disk", ticks::bytes),
        )
        .when(|s| s.disk_bytes > 0),
        ResourceFigure::new(
            "Connections the server holds",
            |s| s.connections.map(|c| c as f64),
            Axis::linear("established TCP connections", ticks::count),
        )
        .when(|s| s.connections.is_some()),
    ];
    all.retain(|f| {
        runs.iter()
            .any(|(_, r)| r.resources.iter().any(|s| (f.shown)(s)))
    });
    all
}

/// The seconds of `r`'s timeline drawn: all but a measured second the
/// measured phase ended partway through (the last interval the workers
/// hand in, which holds only part of a second's work, or the replies
/// still in flight after the end).
pub(crate) fn whole_seconds(r: &RunResult) -> impl Iterator<Item = &TimelinePoint> {
    let end = r
        .timeline
        .iter()
        .find(|t| t.phase == Phase::Measure)
        .map(|t| t.t_s as f64 + r.measure.duration_s);
    r.timeline.iter().filter(move |t| {
        !(t.phase == Phase::Measure && end.is_some_and(|e| t.t_s as f64 + 1.0 > e + 0.02))
    })
}

/// `r`'s whole seconds of `pick`, each drawn at its middle, time 0 the
/// start of the measured phase.
fn second_points(r: &RunResult, pick: fn(&TimelinePoint) -> f64) -> Vec<(f64, f64)> {
    let start = measure_start(r);
    whole_seconds(r)
        .map(|t| (t.t_s as f64 - start + 0.5, pick(t)))
        .collect()
}

impl Plot<'_, '_> {
    /// Every chart of one point's runs.
    fn point_timeline(&mut self, runs: &[(usize, &RunResult)]) {
        let bands = phase_bands(runs);
        self.per_second(runs, &bands);
        self.background_work(runs, &bands);
        self.resources(runs, &bands);
        if runs
            .iter()
            .any(|(_, r)| r.resources.iter().any(|s| s.cgroup_memory_bytes.is_some()))
        {
            self.latency_and_memory(runs, &bands);
        }
        self.node_charts(runs, &bands);
    }

    /// Throughput and p99 per second, every target on one chart each.
    fn per_second(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        type Pick = fn(&TimelinePoint) -> f64;
        let tl: [(&str, Pick, Axis); 2] = [
            (
                "Throughput per second",
                |t| t.ops_per_s as f64,
                Axis::linear("throughput (ops/s)", ticks::count),
            ),
            (
                "p99 latency per second",
                |t| t.p99_ns as f64,
                Axis::linear("p99 latency", ticks::ns),
            ),
        ];
        for (i, (title, pick, axis)) in tl.into_iter().enumerate() {
            let mut lines: Vec<Line> = runs
                .iter()
                .map(|(s, r)| Line {
                    name: self.view.series[*s].clone(),
                    points: second_points(r, pick),
                    style: *s,
                    markers: r.timeline.len() <= 30,
                    ..Line::default()
                })
                .collect();
            if i == 0 {
                // A replay's throughput beside the rate of the trace it
                // replays, at the replay's speed.
                lines.extend(trace_rate_line(runs, self.view.series.len()));
            }
            let scale = Scale::fitting(
                lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
                50.0,
            );
            self.line(LineChart {
                title: title.into(),
                x: time_axis(),
                y: axis.with_scale(scale),
                lines,
                bands: bands.to_vec(),
            });
        }
    }

    /// For each run whose engine did background work: its throughput and
    /// p99 per second on a chart of its own, the work shaded, what it did
    /// on hover.
    fn background_work(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        for (s, r) in runs {
            let work = background_bands(r);
            if work.is_empty() {
                continue;
            }
            let mut shaded = bands.to_vec();
            shaded.extend(work);
            let line = |name: &str, style: usize, pick: fn(&TimelinePoint) -> f64| Line {
                name: name.into(),
                points: second_points(r, pick),
                style,
                ..Line::default()
            };
            self.two_axes(
                LineChart {
                    title: format!("{}: its background work", self.view.series[*s]),
                    x: time_axis(),
                    y: Axis::linear("throughput (ops/s)", ticks::count),
                    lines: vec![line("throughput", 0, |t| t.ops_per_s as f64)],
                    bands: shaded,
                },
                RightAxis {
                    axis: Axis::linear("p99 latency", ticks::ns),
                    lines: vec![line("p99 latency", 1, |t| t.p99_ns as f64)],
                },
            );
        }
    }

    /// The server's resources second by second, a line per target.
    fn resources(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        if runs.iter().all(|(_, r)| r.resources.is_empty()) {
            return;
        }
        for f in resource_figures(runs) {
            let lines: Vec<Line> = runs
                .iter()
                .filter(|(_, r)| !r.resources.is_empty())
                .map(|(s, r)| Line {
                    name: self.view.series[*s].clone(),
                    points: r
                        .resources
                        .iter()
                        .filter_map(|x| (f.pick)(x).map(|v| (x.t_s - measure_start(r), v)))
                        .collect(),
                    style: *s,
                    markers: r.resources.len() <= 30,
                    ..Line::default()
                })
                .collect();
            self.line(LineChart {
                title: f.title.into(),
                x: time_axis(),
                y: f.axis,
                lines,
                bands: bands.to_vec(),
            });
        }
    }

    /// Under a memory cap (000-beyond-memory): each run's latency per
    /// second and the memory charged to its cgroup on one timeline, so the
    /// moment the data outgrows memory shows in both.
    fn latency_and_memory(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        for (s, r) in runs {
            let start = measure_start(r);
            let latency =
                |name: &str,
                 style: usize,
                 pick: fn(&bakeoff_core::result::TimelinePoint) -> u64| Line {
                    name: name.into(),
                    points: whole_seconds(r)
                        .map(|t| (t.t_s as f64 - start + 0.5, pick(t) as f64))
                        .collect(),
                    style,
                    markers: r.timeline.len() <= 30,
                    ..Line::default()
                };
            let memory = Line {
                name: "memory charged (RSS + page cache)".into(),
                points: r
                    .resources
                    .iter()
                    .filter_map(|x| Some((x.t_s - start, x.cgroup_memory_bytes? as f64)))
                    .collect(),
                style: 2,
                markers: false,
                ..Line::default()
            };
            if memory.points.is_empty() {
                continue;
            }
            let chart = LineChart {
                title: format!("Latency and memory over the run: {}", self.view.series[*s]),
                x: time_axis(),
                y: Axis::linear("latency per second", ticks::ns),
                lines: vec![
                    latency("p50 latency", 0, |t| t.p50_ns),
                    latency("p99 latency", 1, |t| t.p99_ns),
                ],
                bands: bands.to_vec(),
            };
            let right = RightAxis {
                axis: Axis::linear("memory", ticks::bytes),
                lines: vec![memory],
            };
            self.two_axes(chart, right);
        }
    }

    /// CPU, memory and disk writes of each node, for runs on several
    /// servers: one line per run and node, named by its role and address.
    fn node_charts(&mut self, runs: &[(usize, &RunResult)], bands: &[Band]) {
        let runs: Vec<&(usize, &RunResult)> = runs
            .iter()
            .filter(|(_, r)| r.resources.iter().any(|x| !x.nodes.is_empty()))
            .collect();
        if runs.is_empty() {
            return;
        }
        type PickN = fn(&bakeoff_core::result::NodeResourceSample) -> f64;
        let charts: [(&str, PickN, Axis); 3] = [
            (
                "Server CPU of each node",
                |n| n.cpu_percent,
                Axis::linear("CPU (% of one core)", ticks::percent),
            ),
            (
                "Server memory (proportional set size) of each node",
                |n| n.memory_bytes() as f64,
                Axis::linear("memory", ticks::bytes),
            ),
            (
                "Pages dirtied by each node",
                |n| n.write_bytes_per_s,
                Axis::linear("pages dirtied (bytes/s)", ticks::bytes_per_s),
            ),
        ];
        for (title, pick, axis) in charts {
            let mut lines = Vec::new();
            for (s, r) in &runs {
                let n = r.resources.iter().map(|x| x.nodes.len()).max().unwrap_or(0);
                for i in 0..n {
                    lines.push(Line {
                        name: format!("{} · {}", self.view.series[*s], node_name(r, i)),
                        points: r
                            .resources
                            .iter()
                            .filter_map(|x| {
                                x.nodes.get(i).map(|v| (x.t_s - measure_start(r), pick(v)))
                            })
                            .collect(),
                        style: *s * n + i,
                        markers: r.resources.len() <= 30,
                        ..Line::default()
                    });
                }
            }
            self.line(LineChart {
                title: title.into(),
                x: time_axis(),
                y: axis,
                lines,
                bands: bands.to_vec(),
            });
        }
    }
}

/// Node `i` of `r` as a chart names it: its role in a replication pair,
/// and its address.
fn node_name(r: &RunResult, i: usize) -> String {
    let addr = r
        .nodes
        .get(i)
        .map(|n| n.node.clone())
        .unwrap_or_else(|| format!("node {i}"));
    match (r.workload.topology, i) {
        (bakeoff_core::plan::Topology::PrimaryReplica, 0) => format!("primary {addr}"),
        (bakeoff_core::plan::Topology::PrimaryReplica, _) => format!("replica {addr}"),
        _ => addr,
    }
}

/// Shaded stretches before 0: the warm-up, and before it the load (the
/// longest of the runs').
fn phase_bands(runs: &[(usize, &RunResult)]) -> Vec<Band> {
    let mut bands = Vec::new();
    let load_from = runs
        .iter()
        .filter_map(|(_, r)| {
            let first = r
                .timeline
                .iter()
                .find(|t| t.phase == bakeoff_core::result::Phase::Load)?;
            Some(first.t_s as f64 - measure_start(r))
        })
        .fold(0.0, f64::min);
    let warm = runs
        .iter()
        .map(|(_, r)| r.workload.warmup_s)
        .fold(0.0, f64::max);
    if load_from < -warm {
        bands.push(Band {
            from: load_from,
            to: -warm,
            label: "load".into(),
            hover: String::new(),
        });
    }
    if warm > 0.0 {
        bands.push(Band {
            from: -warm,
            to: 0.0,
            label: "warm-up".into(),
            hover: String::new(),
        });
    }
    // A fault: from the moment it struck until the server held its port
    // again (the whole rest of the chart if it never did).
    for (_, r) in runs {
        let Some(f) = &r.fault else { continue };
        let from = f.at_s - measure_start(r);
        let to = match f.back_after_s {
            Some(back) => from + back.max(0.05),
            None => r
                .timeline
                .last()
                .map_or(from, |t| t.t_s as f64 + 1.0 - measure_start(r)),
        };
        let label = match f.back_after_s {
            Some(back) => format!("{} (back in {})", f.kind.name(), fmt_seconds(back)),
            None => format!("{} (not back)", f.kind.name()),
        };
        if !bands.iter().any(|b| b.from == from && b.label == label) {
            bands.push(Band {
                from,
                to,
                label,
                hover: String::new(),
            });
        }
    }
    bands
}

/// The background work of `r`'s engine, each stretch a band (a mark as wide as
/// a twentieth of a second), named at the first of its kind,
/// what it did on hover.
fn background_bands(r: &RunResult) -> Vec<Band> {
    let Some(work) = &r.background else {
        return Vec::new();
    };
    let mut named: Vec<&str> = Vec::new();
    work.bands
        .iter()
        .map(|b| {
            let from = b.from_s - measure_start(r);
            let label = if named.contains(&b.what.as_str()) {
                String::new()
            } else {
                named.push(&b.what);
                b.what.clone()
            };
            Band {
                from,
                to: from + (b.to_s - b.from_s).max(0.05),
                label,
                hover: format!(
                    "{}: {} at {} for {}: {}",
                    r.target,
                    b.what,
                    fmt_seconds(from),
                    fmt_seconds(b.to_s - b.from_s),
                    b.detail
                ),
            }
        })
        .collect()
}

/// The rate a replayed trace asks for second by second, at the replay's
/// speed (the first replay of the point's runs; they share the trace),
/// drawn in the style after the runs'.
fn trace_rate_line(runs: &[(usize, &RunResult)], style: usize) -> Option<Line> {
    let (trace, speed) = runs
        .iter()
        .find_map(|(_, r)| r.replay.as_ref().map(|t| (t, r.workload.replay_speed)))?;
    // A long trace counts its rate in buckets of several seconds.
    let bucket = trace.bucket_s.max(1) as f64;
    Some(Line {
        name: format!("the trace's own rate (×{speed})"),
        points: trace
            .per_second
            .iter()
            .enumerate()
            .map(|(i, &n)| ((i as f64 + 0.5) * bucket / speed, n as f64 / bucket * speed))
            .collect(),
        style,
        markers: trace.per_second.len() <= 30,
        ..Line::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bakeoff_core::plan::FaultKind;
    use bakeoff_core::result::FaultRecord;

    /// A faulted run's timeline charts mark the fault, from its moment to
    /// the server's return, beside the load and warm-up bands.
    #[test]
    fn a_fault_is_a_band_on_the_timeline() {
        let mut run = crate::fixtures::mock_result().runs[0].clone();
        let start = measure_start(&run);
        assert!(phase_bands(&[(0, &run)])
            .iter()
            .all(|b| !b.label.starts_with("kill")));
        run.fault = Some(FaultRecord {
            kind: FaultKind::Kill,
            at_s: start + 1.5,
            back_after_s: Some(0.25),
            recovered_after_s: Some(1.0),
            error: None,
        });
        let bands = phase_bands(&[(0, &run)]);
        let kill = bands
            .iter()
            .find(|b| b.label == "kill (back in 0.25 s)")
            .unwrap_or_else(|| panic!("{bands:?}"));
        assert_eq!((kill.from, kill.to), (1.5, 1.75));
        run.fault.as_mut().unwrap().back_after_s = None;
        let bands = phase_bands(&[(0, &run)]);
        assert!(
            bands.iter().any(|b| b.label == "kill (not back)"),
            "{bands:?}"
        );
    }

    /// A measured phase of 2.5 s leaves its third second half full: the
    /// charts leave it out rather than draw a fall that did not happen.
    #[test]
    fn a_partial_last_second_is_not_drawn() {
        let mut run = crate::fixtures::mock_result().runs[0].clone();
        let start = measure_start(&run);
        let measured = |r: &RunResult| {
            whole_seconds(r)
                .filter(|t| t.phase == Phase::Measure)
                .count()
        };
        let all = run
            .timeline
            .iter()
            .filter(|t| t.phase == Phase::Measure)
            .count();
        run.measure.duration_s = (all as f64 - 0.5).max(0.5);
        assert_eq!(measured(&run), all - 1, "start {start}");
        run.measure.duration_s = all as f64;
        assert_eq!(measured(&run), all);
    }
}
