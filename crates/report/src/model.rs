//! The report's document model: sections of blocks (bullets, paragraphs,
//! captions, tables, charts) that [`crate::document`] builds and every
//! renderer (HTML, Markdown, the terminal) draws. It imports no builder, so
//! builders and renderers alike stand on it.

use crate::html::charts::{BarChart, LineChart, RightAxis};

/// A table as rows of cells, its head row first.
pub type Rows = Vec<Vec<String>>;

/// A table: head row, rows, and how many leading columns are text.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column headings.
    pub head: Vec<String>,
    /// Its rows.
    pub rows: Vec<Vec<String>>,
    /// How many of its columns are text (left-aligned).
    pub left: usize,
    /// Per column, the anchor of the chart its figures come from, where
    /// one does (the HTML report links each cell to it); empty for none.
    pub charts: Vec<Option<&'static str>>,
}

impl Table {
    /// A table of `rows` under `head`, its first `left` columns text.
    pub(crate) fn new(head: &[&str], rows: Vec<Vec<String>>, left: usize) -> Self {
        Table {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows,
            left,
            charts: Vec::new(),
        }
    }
}

/// One piece of a section.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A list of findings.
    Bullets(Vec<String>),
    /// A paragraph; `strong` opens it in bold ("Client-bound:").
    Paragraph {
        /// Its bold lead, if any.
        strong: Option<String>,
        /// The text.
        text: String,
    },
    /// What the table after it shows ("throughput at clients=8").
    Caption(String),
    /// A table.
    Table(Table),
    /// A heading within the section (a sweep axis, a target).
    Heading(String),
    /// Charts drawn side by side.
    Charts(Vec<Chart>),
    /// Blocks folded away under a one-line summary (a point's per-second
    /// charts), open or not at first.
    Folded {
        /// What the folded part holds, in a line.
        summary: String,
        /// Whether it is open when the page opens.
        open: bool,
        /// Its content.
        blocks: Vec<Block>,
    },
}

/// One chart of a section, as data: what it draws, not how.
#[derive(Clone)]
pub enum Chart {
    /// A line chart.
    Line(LineChart),
    /// A line chart with more lines measured on an axis on the right.
    TwoAxes(LineChart, RightAxis),
    /// A grouped bar chart.
    Bars(BarChart),
}

impl Chart {
    /// Its title.
    pub fn title(&self) -> &str {
        match self {
            Chart::Line(c) | Chart::TwoAxes(c, _) => &c.title,
            Chart::Bars(c) => &c.title,
        }
    }
}

// A chart's axes carry their tick formatters, functions that neither print
// nor compare: a chart is told from another by its kind and title.
impl std::fmt::Debug for Chart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chart({:?})", self.title())
    }
}

impl PartialEq for Chart {
    fn eq(&self, other: &Chart) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.title() == other.title()
    }
}

/// One section of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Its anchor in the HTML report.
    pub id: &'static str,
    /// Its heading.
    pub title: String,
    /// What it shows, under the heading.
    pub note: Option<String>,
    /// Its content.
    pub blocks: Vec<Block>,
}

impl Section {
    /// A section of `blocks` under `title`, at anchor `id`.
    pub fn new(id: &'static str, title: impl Into<String>, blocks: Vec<Block>) -> Self {
        Section {
            id,
            title: title.into(),
            note: None,
            blocks,
        }
    }

    /// This section with `note` under its heading.
    pub fn noted(mut self, note: &str) -> Self {
        self.note = Some(note.to_string());
        self
    }
}
