//! Axes: ticks (round numbers, powers of ten, thinned so labels never
//! overlap), the y axes on either side, the x axis's title and the frame.

use std::fmt::Write;

use super::*;

/// Nice linear ticks covering [lo, hi]; returns (ticks, lo', hi').
pub(super) fn linear_ticks(lo: f64, hi: f64, max_ticks: usize) -> (Vec<f64>, f64, f64) {
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
pub(super) fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64, f64) {
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
pub(super) fn thin(count: usize, slot_px: f64, widest_chars: usize) -> usize {
    let need = widest_chars as f64 * CHAR_W + 16.0;
    if slot_px <= 0.0 {
        return 1;
    }
    ((need / slot_px).ceil() as usize).max(1).min(count.max(1))
}

pub(super) fn truncate(label: &str, max_chars: usize) -> String {
    if label.chars().count() <= max_chars || max_chars < 2 {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(max_chars - 1).collect();
        s.push('…');
        s
    }
}

/// Value range of an axis from data (positive only on a log axis).
pub(super) fn data_range(values: impl Iterator<Item = f64>, axis: &Axis) -> Option<(f64, f64)> {
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
pub(super) fn y_mapper(
    axis: &Axis,
    values: impl Iterator<Item = f64>,
) -> Option<(Mapper, Vec<f64>)> {
    let (lo, hi) = data_range(values, axis)?;
    let (ticks, lo, hi) = ticks_for(axis, lo, hi, 6);
    Some((Mapper::new(axis.scale, lo, hi, TOP + PLOT_H, TOP), ticks))
}

pub(super) fn ticks_for(axis: &Axis, lo: f64, hi: f64, max_ticks: usize) -> (Vec<f64>, f64, f64) {
    match axis.scale {
        Scale::Linear => linear_ticks(lo, hi, max_ticks),
        Scale::Log => log_ticks(lo, hi),
    }
}

/// Draws y grid lines, tick labels and the y title.
pub(super) fn y_axis(svg: &mut String, axis: &Axis, ym: &Mapper, ticks: &[f64], right: f64) {
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
pub(super) fn right_ticks(svg: &mut String, axis: &Axis, ym: &Mapper, ticks: &[f64], right: f64) {
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

pub(super) fn x_title(svg: &mut String, title: &str, right: f64) {
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{}</text>"#,
        LEFT + (WIDTH - LEFT - right) / 2.0,
        TOP + PLOT_H + 38.0,
        esc(title)
    );
}

pub(super) fn frame(svg: &mut String, right: f64) {
    let _ = write!(
        svg,
        r#"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{PLOT_H}" class="frame"/>"#,
        WIDTH - LEFT - right
    );
}

/// The ticks of a numeric x axis: a grid line at each, a label at every
/// `step`th, a label at the edge anchored inside the chart.
pub(super) fn numeric_ticks(
    svg: &mut String,
    ax: &Axis,
    ticks: &[f64],
    m: &Mapper,
    (x0, x1): (f64, f64),
) {
    let widest = ticks
        .iter()
        .map(|t| (ax.format)(*t).chars().count())
        .max()
        .unwrap_or(1);
    let step = thin(ticks.len(), (x1 - x0) / ticks.len().max(1) as f64, widest);
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
}

/// Ordered categories at equal steps along the x axis, their labels
/// truncated (whole on hover) and thinned.
pub(super) fn category_x(
    svg: &mut String,
    title: &str,
    labels: &[String],
    (x0, x1): (f64, f64),
    right: f64,
) -> Mapper {
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
    x_title(svg, title, right);
    m
}

/// Shaded stretches of the x axis: neighbouring bands differ in shade;
/// background work (a band with more to say) in a colour of its own, its
/// labels stepped down so that close ones do not overwrite each other,
/// what it did on hover.
pub(super) fn bands(svg: &mut String, bands: &[Band], m: &Mapper) {
    let mut labelled = 0;
    for (bi, b) in bands.iter().enumerate() {
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
}
