//! What each section of the report draws: the charts, built once from the
//! experiments as blocks of the document ([`crate::document`]), beside
//! the tables. Nothing here writes markup: the HTML report draws the
//! charts ([`crate::html`]), Markdown lists their titles.

use crate::html::charts::{BarChart, LineChart, RightAxis};
use crate::model::{Block, Chart};
use crate::view::View;

mod counts;
mod overview;
mod searches;
mod server_time;
mod spectrum;
mod sweeps;
mod timelines;
mod topology;

pub use counts::{error_charts, step_charts};
pub use overview::overview;
pub use searches::search_charts;
pub use server_time::distribution_charts;
pub use spectrum::{spectrum, traces};
pub use sweeps::sweep_charts;
pub use timelines::timelines;
pub use topology::replication_charts;

/// Collects a section's blocks: charts side by side until a heading, a
/// note or a folded part comes between them.
pub struct Plot<'v, 'a> {
    /// The runs, grouped into series and points.
    pub view: &'v View<'a>,
    blocks: Vec<Block>,
    row: Vec<Chart>,
}

impl<'v, 'a> Plot<'v, 'a> {
    /// An empty collection over `view`.
    pub fn new(view: &'v View<'a>) -> Self {
        Plot {
            view,
            blocks: Vec::new(),
            row: Vec::new(),
        }
    }

    /// Adds a line chart to the current row.
    pub fn line(&mut self, chart: LineChart) {
        self.row.push(Chart::Line(chart));
    }

    /// Adds a line chart with a second y axis on the right.
    pub fn two_axes(&mut self, chart: LineChart, right: RightAxis) {
        self.row.push(Chart::TwoAxes(chart, right));
    }

    /// Adds a bar chart to the current row.
    pub fn bars(&mut self, chart: BarChart) {
        self.row.push(Chart::Bars(chart));
    }

    /// Ends the current row of charts.
    pub fn flush(&mut self) {
        if !self.row.is_empty() {
            self.blocks
                .push(Block::Charts(std::mem::take(&mut self.row)));
        }
    }

    /// A sub-heading, after the charts so far.
    pub fn heading(&mut self, text: impl Into<String>) {
        self.push(Block::Heading(text.into()));
    }

    /// A note, after the charts so far.
    pub fn note(&mut self, text: impl Into<String>) {
        self.push(Block::Paragraph {
            strong: None,
            text: text.into(),
        });
    }

    /// Any block, after the charts so far.
    pub fn push(&mut self, block: Block) {
        self.flush();
        self.blocks.push(block);
    }

    /// Whether nothing was drawn or said.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && self.row.is_empty()
    }

    /// The blocks, the last row of charts included.
    pub fn finish(mut self) -> Vec<Block> {
        self.flush();
        self.blocks
    }
}
