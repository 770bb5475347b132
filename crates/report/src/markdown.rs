//! The report as Markdown, for pasting into an issue or a wiki page: the
//! report's document ([`crate::document`]) as it stands, every section
//! and table the HTML report has, without the charts.

use std::io::Write;

use bakeoff_core::result::ExperimentResult;

use crate::document::sections;
use crate::model::{Block, Section};
use crate::view::View;
use crate::Exporter;

/// The Markdown report.
pub struct MarkdownExporter;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Writes a Markdown table; the first `left` columns are left-aligned.
pub fn md_table(
    head: &[String],
    rows: &[Vec<String>],
    left: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (mut head, mut rows, mut left) = (head.to_vec(), rows.to_vec(), left);
    crate::view::drop_blank_point(&mut head, &mut rows, &mut left);
    writeln!(
        out,
        "| {} |",
        head.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | ")
    )?;
    writeln!(
        out,
        "|{}|",
        (0..head.len())
            .map(|i| if i < left { " --- " } else { " ---: " })
            .collect::<Vec<_>>()
            .join("|")
    )?;
    for r in &rows {
        writeln!(
            out,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        )?;
    }
    writeln!(out)
}

impl Exporter for MarkdownExporter {
    fn export(&self, results: &[ExperimentResult], out: &mut dyn Write) -> std::io::Result<()> {
        let refs: Vec<&ExperimentResult> = results.iter().collect();
        let view = View::new(&refs);
        let names: Vec<&str> = results.iter().map(|r| r.plan.name.as_str()).collect();
        writeln!(out, "# bakeoff report: {}\n", names.join(" vs "))?;
        for (i, r) in results.iter().enumerate() {
            let tag = &view.tags[i];
            writeln!(
                out,
                "{}**{}** — started {}, status {}, {} run(s); {} ({} cores, {}), kernel {}, bakeoff {}, seed {}.\n",
                if tag.is_empty() { String::new() } else { format!("{tag}: ") },
                r.plan.name,
                r.started_at,
                r.status,
                r.runs.len(),
                r.environment.hostname,
                r.environment.cores,
                r.environment.cpu_model,
                r.environment.kernel,
                r.environment.bakeoff_version,
                r.environment.seed
            )?;
            if !r.plan.description.is_empty() {
                writeln!(out, "> {}\n", r.plan.description.trim().replace('\n', " "))?;
            }
            for w in &r.warnings {
                writeln!(out, "**Warning:** {w}\n")?;
            }
        }
        for section in sections(&view, results) {
            render(&section, out)?;
        }
        Ok(())
    }
}

/// One section: its heading, its note, then each block.
fn render(section: &Section, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "## {}\n", section.title)?;
    if let Some(note) = &section.note {
        writeln!(out, "{note}\n")?;
    }
    blocks(&section.blocks, out)
}

/// Blocks as Markdown: a chart by its title (it is drawn in the HTML
/// report), a folded part under its summary in bold.
fn blocks(list: &[Block], out: &mut dyn Write) -> std::io::Result<()> {
    for block in list {
        match block {
            Block::Bullets(lines) => {
                for line in lines {
                    writeln!(out, "- {}", cell(line))?;
                }
                writeln!(out)?;
            }
            Block::Paragraph { strong, text } => match strong {
                Some(s) => writeln!(out, "**{s}** {text}\n")?,
                None => writeln!(out, "{text}\n")?,
            },
            Block::Caption(c) => writeln!(out, "{c}:\n")?,
            Block::Table(t) => md_table(&t.head, &t.rows, t.left, out)?,
            Block::Heading(h) => writeln!(out, "### {h}\n")?,
            Block::Charts(charts) => {
                for c in charts {
                    writeln!(out, "- chart (in the HTML report): {}", cell(c.title()))?;
                }
                writeln!(out)?;
            }
            Block::Folded {
                summary,
                blocks: inner,
                ..
            } => {
                writeln!(out, "**{summary}**\n")?;
                blocks(inner, out)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Markdown report opens with the verdict the terminal and the
    /// HTML report give: each of its lines, as a bullet, before the
    /// summary.
    #[test]
    fn markdown_opens_with_the_verdict() {
        let r = crate::verdict::tests::four_targets();
        let lines = crate::verdict::verdict(&r);
        assert!(!lines.is_empty());
        let mut out = Vec::new();
        MarkdownExporter
            .export(std::slice::from_ref(&r), &mut out)
            .unwrap();
        let md = String::from_utf8(out).unwrap();
        let (head, summary) = md.split_once("## Summary").expect("a summary");
        assert!(head.contains("## Verdict"), "{md}");
        for l in &lines {
            assert!(
                head.contains(&format!("- {}", cell(l))),
                "{l} not in\n{head}"
            );
        }
        assert!(!summary.contains("## Verdict"));
    }
}
