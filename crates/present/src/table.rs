//! The columns of the tables shown both in the terminal and in the HTML report: each
//! table lists its columns once (`[Column; N]` with a cells function of the same `N`),
//! and the text and HTML writers both go through that list.

use std::io::{self, Write};

use irqlens_analyze::loss::Losses;

/// Where a cell is shown. Most cells read the same in both; a few are cut to fit the
/// terminal (rtla's whole µs, short names) and keep their detail in the HTML report.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Text,
    Html,
}

impl Form {
    /// ns as µs: whole in the text (as rtla prints them), one decimal in HTML.
    pub(crate) fn us(self, ns: u64) -> String {
        match self {
            Form::Text => super::us(ns).to_string(),
            Form::Html => super::us1(ns),
        }
    }

    /// As `us`, or "-" for no value.
    pub(crate) fn opt_us(self, ns: Option<u64>) -> String {
        ns.map_or("-".into(), |ns| self.us(ns))
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Align {
    Left,
    Right,
}

/// One column: its heading (the same in the text and the HTML report), its place in
/// the text table, and whether losses can cut its figures short.
#[derive(Clone, Copy)]
pub(crate) struct Column {
    pub heading: &'static str,
    /// Text only: the cell is padded to `width` characters, `gap` spaces after the
    /// column before it.
    pub width: usize,
    pub align: Align,
    pub gap: usize,
    /// Its heading carries the loss mark (tables whose columns are marked, not rows).
    pub lossy: bool,
}

impl Column {
    pub(crate) const fn left(heading: &'static str, width: usize) -> Self {
        Column {
            heading,
            width,
            align: Align::Left,
            gap: 1,
            lossy: false,
        }
    }

    pub(crate) const fn right(heading: &'static str, width: usize) -> Self {
        Column {
            align: Align::Right,
            ..Column::left(heading, width)
        }
    }

    /// `gap` spaces before it in the text, instead of one.
    pub(crate) const fn gap(self, gap: usize) -> Self {
        Column { gap, ..self }
    }

    pub(crate) const fn lossy(self) -> Self {
        Column {
            lossy: true,
            ..self
        }
    }

    /// The heading, with the loss mark if losses can cut the column short.
    pub(crate) fn marked_heading(&self, losses: &Losses) -> String {
        format!("{}{}", self.heading, losses.mark_if(self.lossy))
    }
}

/// The headings of `columns` as the HTML report shows them: plain.
pub(crate) fn headings(columns: &[Column]) -> Vec<&'static str> {
    columns.iter().map(|column| column.heading).collect()
}

/// One line of a text table: `lead`, then each cell in its column; fewer cells than
/// columns leave the last columns out.
pub(crate) fn write_line(
    out: &mut dyn Write,
    lead: &str,
    columns: &[Column],
    cells: &[impl AsRef<str>],
) -> io::Result<()> {
    write!(out, "{lead}")?;
    for (index, (column, cell)) in columns.iter().zip(cells).enumerate() {
        let gap = if index == 0 { 0 } else { column.gap };
        let (cell, width) = (cell.as_ref(), column.width);
        match column.align {
            Align::Left => write!(out, "{:gap$}{cell:<width$}", "")?,
            Align::Right => write!(out, "{:gap$}{cell:>width$}", "")?,
        }
    }
    writeln!(out)
}

/// The heading line of a text table whose rows are marked, not its columns.
pub(crate) fn write_headings(
    out: &mut dyn Write,
    lead: &str,
    columns: &[Column],
) -> io::Result<()> {
    write_line(out, lead, columns, &headings(columns))
}
