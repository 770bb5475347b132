//! The grouped bar chart.

use std::fmt::Write;

use super::axes::*;
use super::legend::*;
use super::*;

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
