//! The columns of the tables shown both in the terminal and in the HTML report: each
//! table lists its columns once (`[Column; N]` with a cells function of the same `N`),
//! and the text and HTML writers both go through that list.

use std::io::{self, Write};

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
}

#[derive(Clone, Copy)]
pub(crate) enum Align {
    Left,
    Right,
}

/// One column: its heading (the same in the text and the HTML report) and its place in
/// the text table.
#[derive(Clone, Copy)]
pub(crate) struct Column {
    pub heading: &'static str,
    /// Text only: the cell is padded to `width` characters, `gap` spaces after the
    /// column before it.
    pub width: usize,
    pub align: Align,
    pub gap: usize,
}

impl Column {
    pub(crate) const fn left(heading: &'static str, width: usize) -> Self {
        Column {
            heading,
            width,
            align: Align::Left,
            gap: 1,
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
