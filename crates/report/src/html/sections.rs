//! A section of the document on the page: its heading and note, then its
//! blocks as they stand, charts drawn, long tables folded.

use std::fmt::Write as _;

use super::charts::esc;
use super::page::Page;
use crate::model::{Block, Chart, Section, Table};

/// A table longer than this is folded under a line that says what it
/// holds: the page stays short enough to read, the rows one click away.
const FOLD_ROWS: usize = 12;

/// The sections that answer: the page opens with them.
const ANSWER: [&str; 3] = ["fit", "verdict", "summary"];

impl Page<'_> {
    /// `section`: a `<section>` under its anchor.
    pub(super) fn section(&mut self, section: &Section) {
        let class = if ANSWER.contains(&section.id) {
            r#" class="answer""#
        } else {
            ""
        };
        let _ = write!(
            self.html,
            r#"<section id="{}"{class}><h2>{}</h2>"#,
            section.id,
            esc(&section.title)
        );
        if let Some(note) = &section.note {
            let _ = write!(self.html, r#"<p class="note">{}</p>"#, esc(note));
        }
        self.blocks(&section.blocks, section.id == "verdict");
        self.html.push_str("</section>");
    }

    /// A section's blocks, as the document has them.
    fn blocks(&mut self, blocks: &[Block], verdict: bool) {
        for block in blocks {
            match block {
                Block::Bullets(lines) => {
                    let class = if verdict { r#" class="verdict""# } else { "" };
                    let _ = write!(self.html, "<ul{class}>");
                    for l in lines {
                        let _ = write!(self.html, "<li>{}</li>", esc(l));
                    }
                    self.html.push_str("</ul>");
                }
                Block::Paragraph { strong, text } => {
                    let lead = strong
                        .as_ref()
                        .map(|s| format!("<strong>{}</strong> ", esc(s)))
                        .unwrap_or_default();
                    let _ = write!(self.html, "<p>{lead}{}</p>", esc(text));
                }
                Block::Caption(c) => {
                    let _ = write!(self.html, "<p>{}:</p>", esc(c));
                }
                Block::Heading(h) => {
                    let _ = write!(self.html, "<h3>{}</h3>", esc(h));
                }
                Block::Table(t) => self.folded_table(t),
                Block::Charts(charts) => self.charts(charts),
                Block::Folded {
                    summary,
                    open,
                    blocks,
                } => {
                    let _ = write!(
                        self.html,
                        "<details{}><summary>{}</summary>",
                        if *open { " open" } else { "" },
                        esc(summary)
                    );
                    self.blocks(blocks, false);
                    self.html.push_str("</details>");
                }
            }
        }
    }

    /// Charts side by side.
    fn charts(&mut self, charts: &[Chart]) {
        self.html.push_str(r#"<div class="charts">"#);
        for chart in charts {
            self.charts += 1;
            let svg = match chart {
                Chart::Line(c) => c.to_svg(),
                Chart::TwoAxes(c, right) => c.to_svg_with_right(right),
                Chart::Bars(c) => c.to_svg(&format!("c{}", self.charts)),
            };
            let _ = write!(self.html, "<figure>{svg}</figure>");
        }
        self.html.push_str("</div>");
    }

    /// A table, folded when it is long.
    fn folded_table(&mut self, t: &Table) {
        if t.rows.len() <= FOLD_ROWS {
            return self.table(t);
        }
        let _ = write!(
            self.html,
            "<details><summary>{} rows: {}</summary>",
            t.rows.len(),
            esc(&t.head.join(", "))
        );
        self.table(t);
        self.html.push_str("</details>");
    }

    /// A table; a cell whose column has a chart links to it (`t.charts`),
    /// a point column every row leaves blank is dropped.
    fn table(&mut self, t: &Table) {
        let (mut head, mut rows, mut left) = (t.head.clone(), t.rows.clone(), t.left);
        if t.charts.is_empty() {
            crate::view::drop_blank_point(&mut head, &mut rows, &mut left);
        }
        let chart = |i: usize| t.charts.get(i).copied().flatten();
        let cell = |i: usize, text: &str| match chart(i) {
            Some(anchor) => format!(r##"<a href="#{anchor}">{}</a>"##, esc(text)),
            None => esc(text),
        };
        let class = |i: usize| if i < left { r#" class="l""# } else { "" };
        self.html.push_str("<table><tr>");
        for (i, h) in head.iter().enumerate() {
            let _ = write!(self.html, "<th{}>{}</th>", class(i), cell(i, h));
        }
        self.html.push_str("</tr>");
        for r in &rows {
            self.html.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let _ = write!(self.html, "<td{}>{}</td>", class(i), cell(i, c));
            }
            self.html.push_str("</tr>");
        }
        self.html.push_str("</table>");
    }
}
