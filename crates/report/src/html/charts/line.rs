//! The line chart: its legend, its x axis (numbers or ordered
//! categories, the shaded bands), its y axes, then each series.

use super::axes::*;
use super::legend::*;
use super::series::*;
use super::*;

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
        if let Some((chart, right)) = self.capped(right_axis) {
            return chart.render_within_caps(right.as_ref());
        }
        self.render_within_caps(right_axis)
    }

    fn render_within_caps(&self, right_axis: Option<&RightAxis>) -> String {
        let right = if right_axis.is_some() { LEFT } else { RIGHT };
        let entries = self.legend_entries(right_axis);
        let height = TOP + PLOT_H + BOTTOM + legend_height(&entries);
        let mut svg = String::new();
        open_svg(&mut svg, height, &self.title);
        let Some((ym, yticks)) = y_mapper(&self.y, self.y_values()) else {
            return no_data(svg);
        };
        let span = (LEFT + 10.0, WIDTH - right - 10.0);
        let xm = match &self.x {
            XAxis::Numeric(ax) => self.numeric_x(&mut svg, ax, right_axis, span, right),
            XAxis::Categories { title, labels } => category_x(&mut svg, title, labels, span, right),
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
            series(&mut svg, l, (&xm, &ym), &|x, y| {
                format!("{}: {} → {}", l.name, xfmt(x), (self.y.format)(y))
            });
        }
        legend(&mut svg, &entries, TOP + PLOT_H + BOTTOM, false, "");
        svg.push_str("</svg>");
        svg
    }

    /// The legend's entries: each named line, then the right axis's.
    fn legend_entries(&self, right_axis: Option<&RightAxis>) -> Vec<(String, usize)> {
        self.lines
            .iter()
            .filter(|l| !l.name.is_empty())
            .map(|l| (l.name.clone(), l.style))
            .chain(right_axis.iter().flat_map(|r| {
                r.lines
                    .iter()
                    .filter(|l| !l.name.is_empty())
                    .map(|l| (format!("{} (right axis)", l.name), l.style))
            }))
            .collect()
    }

    /// Every value the left y axis must hold: the points and their ranges.
    fn y_values(&self) -> impl Iterator<Item = f64> + '_ {
        self.lines.iter().flat_map(|l| {
            l.points.iter().map(|p| p.1).chain(
                l.ranges
                    .iter()
                    .flatten()
                    .flat_map(|(a, b)| [*a, *b].into_iter()),
            )
        })
    }

    /// A numeric x axis over every point and band: the bands, the grid,
    /// the ticks (thinned) and the title.
    fn numeric_x(
        &self,
        svg: &mut String,
        ax: &Axis,
        right_axis: Option<&RightAxis>,
        (x0, x1): (f64, f64),
        right: f64,
    ) -> Mapper {
        let xs: Vec<f64> = self
            .lines
            .iter()
            .chain(right_axis.iter().flat_map(|r| r.lines.iter()))
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(self.bands.iter().flat_map(|b| [b.from, b.to]))
            .collect();
        let (lo, hi) = data_range(xs.into_iter(), ax).unwrap_or((0.0, 1.0));
        let (ticks, lo2, hi2) = match ax.scale {
            Scale::Log => log_ticks(lo, hi),
            Scale::Linear => linear_ticks(lo, hi, 8),
        };
        let m = Mapper::new(ax.scale, lo2, hi2, x0, x1);
        bands(svg, &self.bands, &m);
        numeric_ticks(svg, ax, &ticks, &m, (x0, x1));
        x_title(
            svg,
            &format!(
                "{}{}",
                ax.title,
                if ax.scale == Scale::Log { ", log" } else { "" }
            ),
            right,
        );
        m
    }
}
