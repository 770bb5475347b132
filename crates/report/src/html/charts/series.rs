//! A line chart's series: each line's path, its whiskers or shaded
//! band, its markers.

use std::fmt::Write;

use super::legend::marker;
use super::*;

/// Draws line `l` through its points (breaking it where a point cannot be
/// placed).
/// `l`'s ranges as a shaded band: one polygon per stretch of points that
/// all have a range (high edge forth, low edge back).
pub(super) fn band(svg: &mut String, l: &Line, xm: &Mapper, ym: &Mapper) {
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

pub(super) fn path(svg: &mut String, l: &Line, xm: &Mapper, ym: &Mapper) {
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

/// One line: its band or whiskers first, so the line draws over them,
/// then the line, then its markers, each titled by `title(x, y)`.
pub(super) fn series(
    svg: &mut String,
    l: &Line,
    (xm, ym): (&Mapper, &Mapper),
    title: &dyn Fn(f64, f64) -> String,
) {
    let c = colour(l.style);
    if l.band {
        band(svg, l, xm, ym);
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
    path(svg, l, xm, ym);
    if l.markers {
        for (x, y) in &l.points {
            if let (Some(px), Some(py)) = (xm.px(*x), ym.px(*y)) {
                marker(svg, l.style, px, py, &title(*x, *y));
            }
        }
    }
}
