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

/// Width of every chart, px (two fit side by side on a laptop screen).
pub const WIDTH: f64 = 620.0;
const PLOT_H: f64 = 240.0;
const LEFT: f64 = 86.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 50.0;
/// Estimated width of one character of the 12 px labels, px.
const CHAR_W: f64 = 6.8;

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

/// Nice linear ticks covering [lo, hi]; returns (ticks, lo', hi').
fn linear_ticks(lo: f64, hi: f64, max_ticks: usize) -> (Vec<f64>, f64, f64) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else if hi == 0.0 {
        // All zero: one step, not fractions of nothing.
        return (vec![0.0, 1.0], 0.0, 1.0);
    } else {
        (lo - hi.abs() * 0.5, hi + hi.abs() * 0.5)
    };
    let raw = (hi - lo) / max_ticks.max(2) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| (hi - lo) / s <= max_ticks as f64)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let last = (hi / step).ceil() * step;
    let mut ticks = Vec::new();
    let mut t = first;
    while t <= last + step * 1e-9 {
        ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    (ticks, first, last)
}

/// Log ticks at powers of ten (with 2 and 5 when the span is short).
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64, f64) {
    let lo_e = lo.log10().floor();
    let hi_e = hi.log10().ceil().max(lo_e + 1.0);
    let decades = (hi_e - lo_e) as i32;
    let mut ticks = Vec::new();
    for e in lo_e as i32..=hi_e as i32 {
        let base = 10f64.powi(e);
        ticks.push(base);
        if decades <= 2 && e < hi_e as i32 {
            ticks.push(2.0 * base);
            ticks.push(5.0 * base);
        }
    }
    (ticks, 10f64.powf(lo_e), 10f64.powf(hi_e))
}

/// Keeps every n-th label so that none overlaps its neighbour.
fn thin(count: usize, slot_px: f64, widest_chars: usize) -> usize {
    let need = widest_chars as f64 * CHAR_W + 16.0;
    if slot_px <= 0.0 {
        return 1;
    }
    ((need / slot_px).ceil() as usize).max(1).min(count.max(1))
}

fn truncate(label: &str, max_chars: usize) -> String {
    if label.chars().count() <= max_chars || max_chars < 2 {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(max_chars - 1).collect();
        s.push('…');
        s
    }
}

/// Value range of an axis from data (positive only on a log axis).
fn data_range(values: impl Iterator<Item = f64>, axis: &Axis) -> Option<(f64, f64)> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in values.filter(|v| v.is_finite()) {
        if axis.scale == Scale::Log && v <= 0.0 {
            continue;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    if axis.scale == Scale::Linear && axis.from_zero {
        lo = lo.min(0.0);
    }
    Some((lo, hi))
}

/// The y mapping and ticks for `values`; `None` when there is nothing to draw.
fn y_mapper(axis: &Axis, values: impl Iterator<Item = f64>) -> Option<(Mapper, Vec<f64>)> {
    let (lo, hi) = data_range(values, axis)?;
    let (ticks, lo, hi) = ticks_for(axis, lo, hi, 6);
    Some((Mapper::new(axis.scale, lo, hi, TOP + PLOT_H, TOP), ticks))
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

fn ticks_for(axis: &Axis, lo: f64, hi: f64, max_ticks: usize) -> (Vec<f64>, f64, f64) {
    match axis.scale {
        Scale::Linear => linear_ticks(lo, hi, max_ticks),
        Scale::Log => log_ticks(lo, hi),
    }
}

/// The legend below the plot: entries flow into rows; returns its height.
fn legend(svg: &mut String, entries: &[(String, usize)], top: f64, bars: bool, id: &str) -> f64 {
    if entries.is_empty() {
        return 0.0;
    }
    let mut x = LEFT;
    let mut y = top + 14.0;
    for (name, style) in entries {
        let w = 34.0 + name.chars().count() as f64 * CHAR_W + 14.0;
        if x + w > WIDTH - RIGHT && x > LEFT {
            x = LEFT;
            y += 18.0;
        }
        if bars {
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="24" height="11" fill="url(#{id}-h{style})" stroke="{}"/>"#,
                x,
                y - 9.0,
                colour(*style)
            );
        } else {
            let _ = write!(
                svg,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2.5" stroke-dasharray="{}"/>"#,
                x,
                y - 4.0,
                x + 24.0,
                y - 4.0,
                colour(*style),
                dash(*style)
            );
            marker(svg, *style, x + 12.0, y - 4.0, "");
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" class="legend">{}</text>"#,
            x + 30.0,
            y,
            esc(name)
        );
        x += w;
    }
    y - top + 8.0
}

/// Measures the legend's height without drawing it.
fn legend_height(entries: &[(String, usize)]) -> f64 {
    let mut scratch = String::new();
    legend(&mut scratch, entries, 0.0, false, "x")
}

fn marker(svg: &mut String, style: usize, x: f64, y: f64, title: &str) {
    let c = colour(style);
    let t = if title.is_empty() {
        String::new()
    } else {
        format!("<title>{}</title>", esc(title))
    };
    let _ = match (style / COLOURS.len() + style) % 4 {
        0 => write!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{c}">{t}</circle>"#
        ),
        1 => write!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="white" stroke="{c}" stroke-width="2">{t}</rect>"#,
            x - 3.5,
            y - 3.5
        ),
        2 => write!(
            svg,
            r#"<path d="M{:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}Z" fill="{c}">{t}</path>"#,
            x,
            y - 4.5,
            x + 4.5,
            y + 3.5,
            x - 4.5,
            y + 3.5
        ),
        _ => write!(
            svg,
            r#"<path d="M{:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}Z" fill="white" stroke="{c}" stroke-width="2">{t}</path>"#,
            x,
            y - 4.5,
            x + 4.5,
            y,
            x,
            y + 4.5,
            x - 4.5,
            y
        ),
    };
}

fn open_svg(svg: &mut String, height: f64, title: &str) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-label="{t}"><rect width="100%" height="100%" fill="white"/><text x="{:.1}" y="20" class="title">{t}</text>"#,
        LEFT,
        t = esc(title)
    );
}

/// Draws y grid lines, tick labels and the y title.
fn y_axis(svg: &mut String, axis: &Axis, ym: &Mapper, ticks: &[f64], right: f64) {
    let step = thin(ticks.len(), PLOT_H / ticks.len().max(1) as f64, 1);
    for (i, t) in ticks.iter().enumerate() {
        let Some(y) = ym.px(*t) else { continue };
        let _ = write!(
            svg,
            r#"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" class="grid"/>"#,
            WIDTH - right
        );
        if i % step == 0 {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                y + 4.0,
                esc(&(axis.format)(*t))
            );
        }
    }
    let _ = write!(
        svg,
        r#"<text transform="translate(14,{:.1}) rotate(-90)" class="axis" text-anchor="middle">{}</text>"#,
        TOP + PLOT_H / 2.0,
        esc(&format!(
            "{}{}",
            axis.title,
            if axis.scale == Scale::Log {
                ", log"
            } else {
                ""
            }
        ))
    );
}

/// Tick labels and the title of a y axis on the right (no grid lines: the
/// left axis draws those).
fn right_ticks(svg: &mut String, axis: &Axis, ym: &Mapper, ticks: &[f64], right: f64) {
    let x = WIDTH - right;
    let step = thin(ticks.len(), PLOT_H / ticks.len().max(1) as f64, 1);
    for (i, t) in ticks.iter().enumerate() {
        let Some(y) = ym.px(*t) else { continue };
        let _ = write!(
            svg,
            r#"<line x1="{x:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" class="frame"/>"#,
            x + 4.0
        );
        if i % step == 0 {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="start">{}</text>"#,
                x + 6.0,
                y + 4.0,
                esc(&(axis.format)(*t))
            );
        }
    }
    let _ = write!(
        svg,
        r#"<text transform="translate({:.1},{:.1}) rotate(90)" class="axis" text-anchor="middle">{}</text>"#,
        WIDTH - 14.0,
        TOP + PLOT_H / 2.0,
        esc(&axis.title)
    );
}

/// Draws line `l` through its points (breaking it where a point cannot be
/// placed).
/// `l`'s ranges as a shaded band: one polygon per stretch of points that
/// all have a range (high edge forth, low edge back).
fn band(svg: &mut String, l: &Line, xm: &Mapper, ym: &Mapper) {
    let mut stretch: Vec<(f64, f64, f64)> = Vec::new();
    let mut flush = |stretch: &mut Vec<(f64, f64, f64)>| {
        if stretch.len() > 1 {
            let mut d = String::new();
            for (i, (x, _, hi)) in stretch.iter().enumerate() {
                let _ = write!(d, "{}{x:.1},{hi:.1}", if i == 0 { "M" } else { "L" });
            }
            for (x, lo, _) in stretch.iter().rev() {
                let _ = write!(d, "L{x:.1},{lo:.1}");
            }
            let _ = write!(
                svg,
                r#"<path d="{d}Z" fill="{}" fill-opacity="0.18" stroke="none"><title>{}: 95 % interval</title></path>"#,
                colour(l.style),
                esc(&l.name)
            );
        }
        stretch.clear();
    };
    for (i, p) in l.points.iter().enumerate() {
        let at = l
            .ranges
            .get(i)
            .copied()
            .flatten()
            .and_then(|(lo, hi)| Some((xm.px(p.0)?, ym.px(lo)?, ym.px(hi)?)));
        match at {
            Some(point) => stretch.push(point),
            None => flush(&mut stretch),
        }
    }
    flush(&mut stretch);
}

fn path(svg: &mut String, l: &Line, xm: &Mapper, ym: &Mapper) {
    let mut d = String::new();
    let mut pen_down = false;
    for (x, y) in &l.points {
        match (xm.px(*x), ym.px(*y)) {
            (Some(px), Some(py)) => {
                let _ = write!(d, "{}{px:.1},{py:.1}", if pen_down { "L" } else { "M" });
                pen_down = true;
            }
            _ => pen_down = false,
        }
    }
    if !d.is_empty() {
        let _ = write!(
            svg,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}" stroke-linejoin="round"><title>{}</title></path>"#,
            colour(l.style),
            dash(l.style),
            esc(&l.name)
        );
    }
}

fn x_title(svg: &mut String, title: &str, right: f64) {
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{}</text>"#,
        LEFT + (WIDTH - LEFT - right) / 2.0,
        TOP + PLOT_H + 38.0,
        esc(title)
    );
}

fn frame(svg: &mut String, right: f64) {
    let _ = write!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{PLOT_H}" class="frame"/>"#,
        WIDTH - LEFT - right
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

impl LineChart {
    /// Renders the chart; an empty chart says "no data" instead of drawing axes.
    pub fn to_svg(&self) -> String {
        self.render(None)
    }

    /// Renders the chart with more lines measured on a y axis of their own,
    /// on the right.
    pub fn to_svg_with_right(&self, right_axis: &RightAxis) -> String {
        self.render(Some(right_axis))
    }

    fn render(&self, right_axis: Option<&RightAxis>) -> String {
        let right = if right_axis.is_some() { LEFT } else { RIGHT };
        let entries: Vec<(String, usize)> = self
            .lines
            .iter()
            .filter(|l| !l.name.is_empty())
            .map(|l| (l.name.clone(), l.style))
            .chain(right_axis.iter().flat_map(|r| {
                r.lines
                    .iter()
                    .filter(|l| !l.name.is_empty())
                    .map(|l| (format!("{} (right axis)", l.name), l.style))
            }))
            .collect();
        let leg_h = legend_height(&entries);
        let height = TOP + PLOT_H + BOTTOM + leg_h;
        let mut svg = String::new();
        open_svg(&mut svg, height, &self.title);
        let ys = self
            .lines
            .iter()
            .flat_map(|l| {
                l.points.iter().map(|p| p.1).chain(
                    l.ranges
                        .iter()
                        .flatten()
                        .flat_map(|(a, b)| [*a, *b].into_iter()),
                )
            })
            .collect::<Vec<_>>();
        let Some((ym, yticks)) = y_mapper(&self.y, ys.into_iter()) else {
            return no_data(svg);
        };
        let x0 = LEFT + 10.0;
        let x1 = WIDTH - right - 10.0;
        let xm = match &self.x {
            XAxis::Numeric(ax) => {
                let xs = self
                    .lines
                    .iter()
                    .chain(right_axis.iter().flat_map(|r| r.lines.iter()))
                    .flat_map(|l| l.points.iter().map(|p| p.0));
                let xs: Vec<f64> = xs
                    .chain(self.bands.iter().flat_map(|b| [b.from, b.to]))
                    .collect();
                let (lo, hi) = data_range(xs.into_iter(), ax).unwrap_or((0.0, 1.0));
                let (ticks, lo2, hi2) = match ax.scale {
                    Scale::Log => log_ticks(lo, hi),
                    Scale::Linear => {
                        let (t, a, b) = linear_ticks(lo, hi, 8);
                        (t, a, b)
                    }
                };
                let m = Mapper::new(ax.scale, lo2, hi2, x0, x1);
                let widest = ticks
                    .iter()
                    .map(|t| (ax.format)(*t).chars().count())
                    .max()
                    .unwrap_or(1);
                let step = thin(ticks.len(), (x1 - x0) / ticks.len().max(1) as f64, widest);
                let mut labelled = 0;
                for (bi, b) in self.bands.iter().enumerate() {
                    if let (Some(a), Some(z)) = (m.px(b.from), m.px(b.to)) {
                        // Neighbouring bands differ in shade; background
                        // work (a band with more to say) in a colour of
                        // its own, its labels stepped down so that close
                        // ones do not overwrite each other.
                        let work = !b.hover.is_empty();
                        let row = if work && !b.label.is_empty() {
                            labelled += 1;
                            labelled % 4
                        } else {
                            0
                        };
                        let _ = write!(
                            svg,
                            r#"<rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{PLOT_H}" class="band{}" fill-opacity="{}"><title>{}</title></rect><text x="{:.1}" y="{:.1}" class="band-label">{}</text>"#,
                            (z - a).max(1.0),
                            if work { " work" } else { "" },
                            if work { 0.18 } else { [0.06, 0.13][bi % 2] },
                            esc(if work { &b.hover } else { &b.label }),
                            a + 4.0,
                            TOP + 13.0 + 12.0 * row as f64,
                            esc(&b.label)
                        );
                    }
                }
                for (i, t) in ticks.iter().enumerate() {
                    let Some(x) = m.px(*t) else { continue };
                    let _ = write!(
                        svg,
                        r#"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}" class="grid"/>"#,
                        TOP + PLOT_H
                    );
                    if i % step == 0 {
                        let label = (ax.format)(*t);
                        // A label at the edge is anchored inside the chart.
                        let half = label.chars().count() as f64 * CHAR_W / 2.0;
                        let anchor = if x + half > WIDTH - 2.0 {
                            "end"
                        } else if x - half < 2.0 {
                            "start"
                        } else {
                            "middle"
                        };
                        let _ = write!(
                            svg,
                            r#"<text x="{x:.1}" y="{:.1}" class="tick" text-anchor="{anchor}">{}</text>"#,
                            TOP + PLOT_H + 16.0,
                            esc(&label)
                        );
                    }
                }
                x_title(
                    &mut svg,
                    &format!(
                        "{}{}",
                        ax.title,
                        if ax.scale == Scale::Log { ", log" } else { "" }
                    ),
                    right,
                );
                m
            }
            XAxis::Categories { title, labels } => {
                let n = labels.len().max(1);
                let m = Mapper::new(Scale::Linear, 0.0, (n - 1).max(1) as f64, x0, x1);
                let slot = (x1 - x0) / n as f64;
                let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(1);
                let step = thin(n, slot.max((x1 - x0) / n as f64), widest.min(18));
                for (i, l) in labels.iter().enumerate() {
                    let x = m.px(i as f64).unwrap_or(x0);
                    let _ = write!(
                        svg,
                        r#"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}" class="grid"/>"#,
                        TOP + PLOT_H
                    );
                    if i % step == 0 {
                        let _ = write!(
                            svg,
                            r#"<text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}<title>{}</title></text>"#,
                            TOP + PLOT_H + 16.0,
                            esc(&truncate(l, 18)),
                            esc(l)
                        );
                    }
                }
                x_title(&mut svg, title, right);
                m
            }
        };
        y_axis(&mut svg, &self.y, &ym, &yticks, right);
        frame(&mut svg, right);
        if let Some(r) = right_axis {
            if let Some((ym2, ticks2)) = y_mapper(
                &r.axis,
                r.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
            ) {
                right_ticks(&mut svg, &r.axis, &ym2, &ticks2, right);
                for l in &r.lines {
                    path(&mut svg, l, &xm, &ym2);
                }
            }
        }
        let xfmt = |x: f64| match &self.x {
            XAxis::Numeric(ax) => (ax.format)(x),
            XAxis::Categories { labels, .. } => labels.get(x as usize).cloned().unwrap_or_default(),
        };
        for l in &self.lines {
            let c = colour(l.style);
            if l.band {
                band(&mut svg, l, &xm, &ym);
            }
            // Whiskers first, so the line draws over them.
            for (i, r) in l.ranges.iter().enumerate().filter(|_| !l.band) {
                let (Some((a, b)), Some(p)) = (r, l.points.get(i)) else {
                    continue;
                };
                if let (Some(x), Some(ya), Some(yb)) = (xm.px(p.0), ym.px(*a), ym.px(*b)) {
                    let _ = write!(
                        svg,
                        r#"<path d="M{:.1},{ya:.1}H{:.1}M{x:.1},{ya:.1}V{yb:.1}M{:.1},{yb:.1}H{:.1}" stroke="{c}" stroke-width="1.2" fill="none"/>"#,
                        x - 4.0,
                        x + 4.0,
                        x - 4.0,
                        x + 4.0
                    );
                }
            }
            path(&mut svg, l, &xm, &ym);
            if l.markers {
                for (x, y) in &l.points {
                    if let (Some(px), Some(py)) = (xm.px(*x), ym.px(*y)) {
                        let t = format!("{}: {} → {}", l.name, xfmt(*x), (self.y.format)(*y));
                        marker(&mut svg, l.style, px, py, &t);
                    }
                }
            }
        }
        legend(&mut svg, &entries, TOP + PLOT_H + BOTTOM, false, "");
        svg.push_str("</svg>");
        svg
    }
}

impl BarChart {
    /// Renders the chart; an empty chart says "no data".
    pub fn to_svg(&self, id: &str) -> String {
        let entries: Vec<(String, usize)> = self
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.style))
            .collect();
        let leg_h = legend_height(&entries);
        let height = TOP + PLOT_H + BOTTOM + leg_h;
        let mut svg = String::new();
        open_svg(&mut svg, height, &self.title);
        // Hatching per group: colour plus a pattern of its own, for greyscale.
        svg.push_str("<defs>");
        for g in &self.groups {
            let c = colour(g.style);
            let angle = [45, -45, 0, 90, 30, -60][g.style % 6];
            let gap = [5, 7, 4, 6, 8, 5][g.style % 6];
            let _ = write!(
                svg,
                r#"<pattern id="{id}-h{s}" width="{gap}" height="{gap}" patternUnits="userSpaceOnUse" patternTransform="rotate({angle})"><rect width="{gap}" height="{gap}" fill="{c}" fill-opacity="0.55"/><line x1="0" y1="0" x2="0" y2="{gap}" stroke="{c}" stroke-width="{w}"/></pattern>"#,
                s = g.style,
                w = 1 + g.style % 3
            );
        }
        svg.push_str("</defs>");
        let vals = self.groups.iter().flat_map(|g| {
            g.values.iter().flatten().copied().chain(
                g.ranges
                    .iter()
                    .flatten()
                    .flat_map(|(a, b)| [*a, *b].into_iter()),
            )
        });
        let Some((ym, yticks)) = y_mapper(&self.y, vals) else {
            return no_data(svg);
        };
        let ylo = ym.lo_value();
        y_axis(&mut svg, &self.y, &ym, &yticks, RIGHT);
        let n = self.categories.len().max(1);
        let slot = (WIDTH - LEFT - RIGHT) / n as f64;
        let groups = self.groups.len().max(1);
        let bar_w = ((slot * 0.8) / groups as f64).min(60.0);
        let base = match self.y.scale {
            Scale::Log => TOP + PLOT_H,
            Scale::Linear => ym.px(0.0f64.max(ylo)).unwrap_or(TOP + PLOT_H),
        };
        let max_chars = ((slot - 4.0) / CHAR_W).floor().max(3.0) as usize;
        for (ci, cat) in self.categories.iter().enumerate() {
            let cx = LEFT + slot * (ci as f64 + 0.5);
            let _ = write!(
                svg,
                r#"<text x="{cx:.1}" y="{:.1}" class="tick" text-anchor="middle">{}<title>{}</title></text>"#,
                TOP + PLOT_H + 16.0,
                esc(&truncate(cat, max_chars)),
                esc(cat)
            );
            let start = cx - bar_w * groups as f64 / 2.0;
            for (gi, g) in self.groups.iter().enumerate() {
                let x = start + bar_w * gi as f64;
                if let Some(Some(v)) = g.values.get(ci) {
                    if let Some(y) = ym.px(*v) {
                        let (top, h) = if y < base {
                            (y, base - y)
                        } else {
                            (base, y - base)
                        };
                        let _ = write!(
                            svg,
                            r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="url(#{id}-h{s})" stroke="{c}" stroke-width="1.2"><title>{}</title></rect>"#,
                            x + 1.0,
                            (bar_w - 2.0).max(1.0),
                            h.max(0.5),
                            esc(&format!("{} · {}: {}", g.name, cat, (self.y.format)(*v))),
                            s = g.style,
                            c = colour(g.style)
                        );
                    }
                }
                if let Some(Some((a, b))) = g.ranges.get(ci) {
                    if let (Some(ya), Some(yb)) = (ym.px(*a), ym.px(*b)) {
                        let mx = x + bar_w / 2.0;
                        let _ = write!(
                            svg,
                            r#"<path d="M{:.1},{ya:.1}H{:.1}M{mx:.1},{ya:.1}V{yb:.1}M{:.1},{yb:.1}H{:.1}" stroke="black" stroke-width="1.2" fill="none"/>"#,
                            mx - 3.0,
                            mx + 3.0,
                            mx - 3.0,
                            mx + 3.0
                        );
                    }
                }
            }
        }
        x_title(&mut svg, &self.x_title, RIGHT);
        frame(&mut svg, RIGHT);
        legend(&mut svg, &entries, TOP + PLOT_H + BOTTOM, true, id);
        svg.push_str("</svg>");
        svg
    }
}

#[cfg(test)]
mod tests {
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
