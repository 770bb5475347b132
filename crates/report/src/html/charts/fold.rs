//! What a chart draws is capped, whatever the file holds: a run with a
//! hundred thousand stretches of background work, or a day of seconds,
//! would make a page no browser opens. Beyond the caps, neighbouring
//! bands are folded into one and each line keeps the highest point of
//! each run of points (a spike stays visible), and the title says so.

use super::{Band, Line, LineChart, RightAxis};

/// Most shaded bands a chart draws.
pub const MAX_BANDS: usize = 200;

/// Most points a line draws (a chart is 600 px wide).
pub const MAX_LINE_POINTS: usize = 2_000;

impl LineChart {
    /// The chart as drawn: its bands and lines within the caps, and its
    /// title saying what was folded; `None` when nothing needed to be.
    pub(super) fn capped(
        &self,
        right: Option<&RightAxis>,
    ) -> Option<(LineChart, Option<RightAxis>)> {
        let lines_over = self
            .lines
            .iter()
            .chain(right.into_iter().flat_map(|r| r.lines.iter()))
            .any(|l| l.points.len() > MAX_LINE_POINTS);
        if self.bands.len() <= MAX_BANDS && !lines_over {
            return None;
        }
        let mut said = Vec::new();
        let mut chart = self.clone();
        if chart.bands.len() > MAX_BANDS {
            let n = chart.bands.len();
            chart.bands = fold_bands(&chart.bands);
            said.push(format!("{n} bands folded into {}", chart.bands.len()));
        }
        let mut right = right.cloned();
        let mut thinned = 0;
        for l in chart
            .lines
            .iter_mut()
            .chain(right.iter_mut().flat_map(|r| r.lines.iter_mut()))
        {
            if l.points.len() > MAX_LINE_POINTS {
                thinned = thinned.max(l.points.len());
                thin(l);
            }
        }
        if thinned > 0 {
            said.push(format!(
                "{thinned} points a line drawn as {MAX_LINE_POINTS} at most, the highest of each stretch"
            ));
        }
        chart.title = format!("{} ({})", chart.title, said.join("; "));
        Some((chart, right))
    }
}

/// Bands in time order, each run of neighbours folded into one that
/// spans them, with a hover that says how many it holds.
fn fold_bands(bands: &[Band]) -> Vec<Band> {
    let mut sorted = bands.to_vec();
    sorted.sort_by(|a, b| a.from.total_cmp(&b.from));
    let per = sorted.len().div_ceil(MAX_BANDS);
    sorted
        .chunks(per)
        .map(|group| {
            let first = &group[0];
            let last = &group[group.len() - 1];
            let to = group.iter().map(|b| b.to).fold(f64::MIN, f64::max);
            let label = group
                .iter()
                .map(|b| b.label.as_str())
                .find(|l| !l.is_empty())
                .unwrap_or_default()
                .to_string();
            let what = |b: &Band| {
                if b.hover.is_empty() {
                    b.label.clone()
                } else {
                    b.hover.clone()
                }
            };
            Band {
                from: first.from,
                to,
                label,
                hover: if group.len() == 1 {
                    what(first)
                } else {
                    format!(
                        "{} stretches folded into one, from {} to {}",
                        group.len(),
                        what(first),
                        what(last)
                    )
                },
            }
        })
        .collect()
}

/// The line's points in stretches of equal count, each drawn as its
/// highest point (ranges dropped: they are per point).
fn thin(line: &mut Line) {
    let per = line.points.len().div_ceil(MAX_LINE_POINTS);
    line.points = line
        .points
        .chunks(per)
        .filter_map(|c| c.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)))
        .collect();
    line.ranges.clear();
    line.markers = false;
}

#[cfg(test)]
mod tests {
    use super::super::{Axis, XAxis};
    use super::*;

    /// A file with a hundred thousand bands and a day of points draws
    /// within the caps, says what it folded, and keeps the spike.
    #[test]
    fn a_chart_draws_within_its_caps_and_says_what_it_folded() {
        let bands: Vec<Band> = (0..100_000)
            .map(|i| Band {
                from: i as f64,
                to: i as f64 + 0.5,
                label: "bgsave".into(),
                hover: format!("bgsave {i}"),
            })
            .collect();
        let mut points: Vec<(f64, f64)> = (0..86_400).map(|i| (i as f64, 1.0)).collect();
        points[40_000].1 = 99.0;
        let chart = LineChart {
            title: "busy".into(),
            x: XAxis::Numeric(Axis::linear("s", bakeoff_core::units::ticks::count)),
            y: Axis::linear("ops/s", bakeoff_core::units::ticks::count),
            lines: vec![Line {
                name: "throughput".into(),
                points,
                ..Line::default()
            }],
            bands,
        };
        let svg = chart.to_svg();
        assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
        assert!(
            svg.contains("100000 bands folded into 200"),
            "{}",
            &svg[..400]
        );
        assert!(svg.contains("86400 points a line drawn as 2000 at most"));
        let (capped, _) = chart.capped(None).unwrap();
        assert_eq!(capped.bands.len(), 200);
        assert!(capped.lines[0].points.len() <= MAX_LINE_POINTS);
        assert!(capped.lines[0].points.iter().any(|p| p.1 == 99.0));
        assert!(capped.bands[0].hover.contains("500 stretches folded"));
    }
}
