//! The page: its header (what ran, where, the warnings once each), then
//! the document's sections in order.

use std::fmt::Write as _;

use bakeoff_core::result::ExperimentResult;

use super::charts::esc;
use crate::document;
use crate::view::View;

/// Builds the page's body.
pub(super) struct Page<'a> {
    pub(super) view: View<'a>,
    pub(super) html: String,
    /// Charts drawn so far, which numbers each one's id.
    pub(super) charts: usize,
}

impl<'a> Page<'a> {
    /// The body of the report of `results`.
    pub(super) fn render(refs: &[&'a ExperimentResult], results: &[ExperimentResult]) -> String {
        let mut page = Page {
            view: View::new(refs),
            html: String::new(),
            charts: 0,
        };
        page.header();
        for section in document::sections(&page.view, results) {
            page.section(&section);
        }
        page.html
    }

    /// The title, each experiment's line (what, when, status, how many
    /// runs, the machine) and description, and every warning once.
    fn header(&mut self) {
        let names: Vec<String> = self
            .view
            .sources
            .iter()
            .map(|r| r.plan.name.clone())
            .collect();
        let _ = write!(
            self.html,
            "<h1>bakeoff report: {}</h1>",
            esc(&names.join(" vs "))
        );
        let mut warned: Vec<String> = Vec::new();
        for (i, r) in self.view.sources.iter().enumerate() {
            let tag = match self.view.tags[i].as_str() {
                "" => String::new(),
                tag => format!("<b>{}</b>: ", esc(tag)),
            };
            let _ = write!(
                self.html,
                r#"<p class="note">{tag}{} — started {}, status <b>{}</b>, {} run(s) on {} ({} cores, {}).</p>"#,
                esc(&r.plan.name),
                esc(&r.started_at),
                esc(r.status.as_str()),
                r.runs.len(),
                esc(&r.environment.hostname),
                r.environment.cores,
                esc(&r.environment.cpu_model)
            );
            if !r.plan.description.is_empty() {
                let _ = write!(self.html, "<p>{}</p>", esc(r.plan.description.trim()));
            }
            for w in &r.warnings {
                let text = match self.view.tags[i].as_str() {
                    "" => w.clone(),
                    tag => format!("{tag}: {w}"),
                };
                if !warned.contains(&text) {
                    let _ = write!(self.html, r#"<div class="warn">{}</div>"#, esc(&text));
                    warned.push(text);
                }
            }
        }
    }
}
