//! The legend under a chart, and the marks that tell series apart.

use std::fmt::Write;

use super::*;

/// The legend below the plot: entries flow into rows; returns its height.
pub(super) fn legend(
    svg: &mut String,
    entries: &[(String, usize)],
    top: f64,
    bars: bool,
    id: &str,
) -> f64 {
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
pub(super) fn legend_height(entries: &[(String, usize)]) -> f64 {
    let mut scratch = String::new();
    legend(&mut scratch, entries, 0.0, false, "x")
}

pub(super) fn marker(svg: &mut String, style: usize, x: f64, y: f64, title: &str) {
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
