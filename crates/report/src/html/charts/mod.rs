//! Charts as self-contained inline SVG: line charts (numeric or ordered
//! category axes, linear or log scales, shaded bands, min–max whiskers) and
//! grouped bar charts.
//!
//! Text is left to the browser (no fonts to ship), every series differs in
//! colour *and* in dash pattern, marker or hatching so a greyscale print
//! still tells them apart, and tick labels are thinned so they never
//! overlap. Every mark carries a `<title>` with its exact value, shown on
//! hover.

use std::fmt::Write;

mod axes;
mod bars;
mod fold;
mod legend;
mod line;
mod series;

/// Width of every chart, px: two fit side by side in a 1280 px window.
pub const WIDTH: f64 = 600.0;
const PLOT_H: f64 = 240.0;
const LEFT: f64 = 86.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 50.0;
/// Estimated width of one character of the 12 px labels, px.
const CHAR_W: f64 = 6.8;
/// Estimated width of one character of the 13 px bold title, px.
const TITLE_CHAR_W: f64 = 7.8;

/// Okabe–Ito colours (safe for colour-blind readers), ordered so that
/// neighbours differ in lightness too.
const COLOURS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#000000", "#D55E00", "#56B4E9", "#999933",
];
const DASHES: [&str; 6] = ["", "7 4", "2 3", "10 3 2 3", "4 2", "1 5"];

/// How values map to positions on an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps for equal differences.
    Linear,
    /// Equal steps for equal ratios (powers of ten).
    Log,
}

impl Scale {
    /// Log when positive values span more than `ratio` (e.g. 50×), else linear.
    pub fn fitting(values: impl IntoIterator<Item = f64>, ratio: f64) -> Scale {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for v in values.into_iter().filter(|v| *v > 0.0 && v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if hi > 0.0 && lo.is_finite() && hi / lo > ratio {
            Scale::Log
        } else {
            Scale::Linear
        }
    }
}

/// Formats a tick value for an axis.
pub type TickFormat = fn(f64) -> String;

/// A numeric axis.
#[derive(Clone)]
pub struct Axis {
    /// Title with unit, e.g. `throughput (ops/s)`.
    pub title: String,
    /// Linear or log.
    pub scale: Scale,
    /// Tick label format.
    pub format: TickFormat,
    /// Start the linear axis at zero (throughputs, sizes).
    pub from_zero: bool,
}

impl Axis {
    /// A linear axis from zero.
    pub fn linear(title: impl Into<String>, format: TickFormat) -> Axis {
        Axis {
            title: title.into(),
            scale: Scale::Linear,
            format,
            from_zero: true,
        }
    }

    /// This axis with `scale`.
    pub fn with_scale(mut self, scale: Scale) -> Axis {
        self.scale = scale;
        self
    }
}

/// The x axis of a line chart.
#[derive(Clone)]
pub enum XAxis {
    /// Numbers.
    Numeric(Axis),
    /// Ordered categories at equal steps (x values are their indexes).
    Categories {
        /// Title.
        title: String,
        /// Category labels in order.
        labels: Vec<String>,
    },
}

/// One line of a line chart.
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// Legend entry.
    pub name: String,
    /// Points (x, y); non-finite values (or non-positive ones on a log axis)
    /// break the line.
    pub points: Vec<(f64, f64)>,
    /// Optional (low, high) per point, drawn as whiskers (e.g. min–max of repeats).
    pub ranges: Vec<Option<(f64, f64)>>,
    /// Index into the palette; the same series keeps the same look in every chart.
    pub style: usize,
    /// Draw markers at the points (off for dense per-second lines).
    pub markers: bool,
    /// Draw `ranges` as a shaded band along the line (an interval at every
    /// point, as on the percentile spectrum) rather than as whiskers.
    pub band: bool,
}

/// A shaded stretch of the x axis, e.g. the warm-up.
#[derive(Clone, Debug)]
pub struct Band {
    /// From x.
    pub from: f64,
    /// To x.
    pub to: f64,
    /// Label written at its top.
    pub label: String,
    /// Shown on hover: what it was (empty: the label alone).
    pub hover: String,
}

/// A line chart.
#[derive(Clone)]
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X axis.
    pub x: XAxis,
    /// Y axis.
    pub y: Axis,
    /// The lines.
    pub lines: Vec<Line>,
    /// Shaded stretches.
    pub bands: Vec<Band>,
}

/// A grouped bar chart: for each category, one bar per group.
#[derive(Clone)]
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Category labels along the x axis.
    pub categories: Vec<String>,
    /// X axis title.
    pub x_title: String,
    /// Y axis.
    pub y: Axis,
    /// Groups: legend name, palette index, one value per category (None = no bar).
    pub groups: Vec<BarGroup>,
}

/// One group of bars (one per category).
#[derive(Clone, Debug, Default)]
pub struct BarGroup {
    /// Legend entry.
    pub name: String,
    /// Palette index.
    pub style: usize,
    /// Bar heights, one per category.
    pub values: Vec<Option<f64>>,
    /// Optional whiskers (low, high) per category.
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn colour(style: usize) -> &'static str {
    COLOURS[style % COLOURS.len()]
}

fn dash(style: usize) -> &'static str {
    DASHES[style % DASHES.len()]
}

/// Maps data values to pixels along one axis.
struct Mapper {
    scale: Scale,
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl Mapper {
    fn new(scale: Scale, lo: f64, hi: f64, p0: f64, p1: f64) -> Mapper {
        let (lo, hi) = match scale {
            Scale::Log => (lo.log10(), hi.log10()),
            Scale::Linear => (lo, hi),
        };
        Mapper {
            scale,
            lo,
            hi,
            p0,
            p1,
        }
    }

    /// The lowest value on the axis (in data units).
    fn lo_value(&self) -> f64 {
        match self.scale {
            Scale::Log => 10f64.powf(self.lo),
            Scale::Linear => self.lo,
        }
    }

    fn px(&self, v: f64) -> Option<f64> {
        let t = match self.scale {
            Scale::Log if v <= 0.0 => return None,
            Scale::Log => v.log10(),
            Scale::Linear => v,
        };
        if !t.is_finite() {
            return None;
        }
        let span = if self.hi > self.lo {
            self.hi - self.lo
        } else {
            1.0
        };
        Some(self.p0 + (t - self.lo) / span * (self.p1 - self.p0))
    }
}

/// Closes a chart that has no values with a note saying so.
fn no_data(mut svg: String) -> String {
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="tick">no data</text></svg>"#,
        LEFT,
        TOP + 20.0
    );
    svg
}

fn open_svg(svg: &mut String, height: f64, title: &str) {
    // The title is cut to the chart's width (whole on hover): text past
    // the edge would be hidden, and widen the page for the browser.
    let room = ((WIDTH - LEFT - 8.0) / TITLE_CHAR_W) as usize;
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-label="{t}"><rect width="100%" height="100%" fill="white"/><text x="{:.1}" y="20" class="title">{}<title>{t}</title></text>"#,
        LEFT,
        esc(&axes::truncate(title, room)),
        t = esc(title)
    );
}

/// Lines drawn against an axis of their own on the right of a line chart
/// (memory beside latency on one timeline).
#[derive(Clone)]
pub struct RightAxis {
    /// The right-hand y axis.
    pub axis: Axis,
    /// The lines measured on it.
    pub lines: Vec<Line>,
}

#[cfg(test)]
mod tests {
    use super::axes::*;
    use super::*;

    fn plain(v: f64) -> String {
        format!("{v}")
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let (t, lo, hi) = linear_ticks(0.0, 87.0, 6);
        assert_eq!(lo, 0.0);
        assert!(hi >= 87.0);
        assert!(t.len() <= 7, "{t:?}");
        assert!(t.windows(2).all(|w| w[1] > w[0]));
        assert_eq!(t[1], 20.0);
    }

    #[test]
    fn log_ticks_are_powers_of_ten() {
        let (t, lo, hi) = log_ticks(3.0, 40000.0);
        assert_eq!(lo, 1.0);
        assert_eq!(hi, 100000.0);
        assert_eq!(t, vec![1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0]);
    }

    #[test]
    fn scale_turns_log_past_the_ratio() {
        assert_eq!(Scale::fitting([1.0, 10.0], 50.0), Scale::Linear);
        assert_eq!(Scale::fitting([1.0, 1000.0], 50.0), Scale::Log);
        assert_eq!(Scale::fitting([0.0, 10.0], 50.0), Scale::Linear);
    }

    #[test]
    fn crowded_labels_are_thinned() {
        assert_eq!(thin(10, 100.0, 5), 1);
        assert!(thin(40, 12.0, 6) >= 4);
    }

    #[test]
    fn charts_escape_text_and_draw_marks() {
        let chart = LineChart {
            title: "a < b".into(),
            x: XAxis::Numeric(Axis::linear("x (s)", plain)),
            y: Axis::linear("y (ops/s)", plain),
            lines: vec![Line {
                name: "redis & co".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
                markers: true,
                ..Line::default()
            }],
            bands: vec![],
        };
        let svg = chart.to_svg();
        assert!(svg.contains("a &lt; b") && svg.contains("redis &amp; co"));
        assert!(svg.contains("<path d=\"M"));
        let bars = BarChart {
            title: "t".into(),
            categories: vec!["x".into()],
            x_title: "k".into(),
            y: Axis::linear("v", plain),
            groups: vec![BarGroup {
                name: "g".into(),
                values: vec![Some(3.0)],
                ..BarGroup::default()
            }],
        };
        assert!(bars.to_svg("c1").contains("url(#c1-h0)"));
        let empty = BarChart {
            groups: vec![],
            ..bars
        };
        assert!(empty.to_svg("c2").contains("no data"));
    }
}
