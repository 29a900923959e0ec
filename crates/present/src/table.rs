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

/// A text table sized to its content: each column is as wide as its declared width,
/// its heading and its widest cell; then, if a width limit is set (the terminal's) and
/// the table is wider, the widest left-aligned columns (names, causes) are cut back
/// toward their declared width, their cells ending in "…". Lines that are not rows
/// ("(3 more)") keep their place between the rows.
pub(crate) struct TextTable<'c> {
    lead: &'c str,
    columns: &'c [Column],
    lines: Vec<TableLine>,
}

enum TableLine {
    Cells(Vec<String>),
    Note(String),
}

impl<'c> TextTable<'c> {
    /// A table whose lines all start with `lead`.
    pub(crate) fn new(lead: &'c str, columns: &'c [Column]) -> Self {
        TextTable {
            lead,
            columns,
            lines: Vec::new(),
        }
    }

    /// The plain headings as a row.
    pub(crate) fn headings(mut self) -> Self {
        self.row(&headings(self.columns));
        self
    }

    /// A row of cells; fewer cells than columns leave the last columns out.
    pub(crate) fn row(&mut self, cells: &[impl AsRef<str>]) {
        let cells = cells.iter().map(|c| c.as_ref().to_owned()).collect();
        self.lines.push(TableLine::Cells(cells));
    }

    /// A line written as it is, between the rows.
    pub(crate) fn note(&mut self, line: impl Into<String>) {
        self.lines.push(TableLine::Note(line.into()));
    }

    /// The width of each column, and the gap before it, once fitted into `limit`
    /// characters, if any.
    fn widths(&self, limit: Option<usize>) -> (Vec<usize>, Vec<usize>) {
        let mut content: Vec<usize> = self.columns.iter().map(|c| c.heading.len()).collect();
        for line in &self.lines {
            if let TableLine::Cells(cells) = line {
                for (width, cell) in content.iter_mut().zip(cells) {
                    *width = (*width).max(cell.chars().count());
                }
            }
        }
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .zip(&content)
            .map(|(c, &w)| c.width.max(w))
            .collect();
        let mut gaps: Vec<usize> = self.columns.iter().map(|c| c.gap).collect();
        gaps[0] = 0;
        let Some(limit) = limit else {
            return (widths, gaps);
        };
        let mut total =
            self.lead.chars().count() + gaps.iter().sum::<usize>() + widths.iter().sum::<usize>();
        let heading = |i: usize| self.columns[i].heading.len();
        let left = |i: usize| matches!(self.columns[i].align, Align::Left);
        // each step gives up less than the one before: the names' (causes', commands')
        // length beyond their declared width, then padding no cell fills, then the wider
        // gaps, and last the names down to their heading; the figures are never cut
        shrink(&mut widths, &mut total, limit, |i| {
            left(i).then(|| self.columns[i].width.max(heading(i)))
        });
        shrink(&mut widths, &mut total, limit, |i| Some(content[i]));
        for gap in gaps.iter_mut().filter(|gap| **gap > 1) {
            let spare = (*gap - 1).min(total.saturating_sub(limit));
            *gap -= spare;
            total -= spare;
        }
        shrink(&mut widths, &mut total, limit, |i| {
            left(i).then(|| heading(i).max(SHORTEST_NAME))
        });
        (widths, gaps)
    }

    /// Writes the table, fitted into the terminal's width if the binary gave one.
    pub(crate) fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        self.write_within(out, super::text_width())
    }

    /// Writes the table, fitted into `limit` characters if given.
    fn write_within(&self, out: &mut dyn Write, limit: Option<usize>) -> io::Result<()> {
        let (widths, gaps) = self.widths(limit);
        for line in &self.lines {
            let cells = match line {
                TableLine::Note(text) => {
                    writeln!(out, "{text}")?;
                    continue;
                }
                TableLine::Cells(cells) => cells,
            };
            let mut text = self.lead.to_owned();
            for (((column, cell), &width), &gap) in
                self.columns.iter().zip(cells).zip(&widths).zip(&gaps)
            {
                let cell = fit(cell, width);
                text += &match column.align {
                    Align::Left => format!("{:gap$}{cell:<width$}", ""),
                    Align::Right => format!("{:gap$}{cell:>width$}", ""),
                };
            }
            // a left-aligned last column pads nothing after it
            writeln!(out, "{}", text.trim_end())?;
        }
        Ok(())
    }
}

/// The fewest characters a name is cut to, however narrow the terminal: "irq 36 …".
const SHORTEST_NAME: usize = 8;

/// Takes one character at a time off the widest column above its `floor` (`None`: it
/// gives none) until `total` fits into `limit` or none can give more.
fn shrink(
    widths: &mut [usize],
    total: &mut usize,
    limit: usize,
    floor: impl Fn(usize) -> Option<usize>,
) {
    while *total > limit {
        let widest = (0..widths.len())
            .filter(|&i| floor(i).is_some_and(|floor| widths[i] > floor))
            .max_by_key(|&i| widths[i]);
        let Some(widest) = widest else { return };
        widths[widest] -= 1;
        *total -= 1;
    }
}

/// `cell` cut to `width` characters, the last one "…" if it was cut.
fn fit(cell: &str, width: usize) -> String {
    if cell.chars().count() <= width {
        return cell.to_owned();
    }
    let kept: String = cell.chars().take(width.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: [Column; 3] = [
        Column::left("NAME", 6),
        Column::right("COUNT", 5),
        Column::right("MAX", 4),
    ];

    fn written(table: &TextTable, limit: Option<usize>) -> Vec<String> {
        let mut out = Vec::new();
        table.write_within(&mut out, limit).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn content_that_fits_keeps_the_declared_widths() {
        let mut table = TextTable::new("  ", &COLUMNS).headings();
        table.row(&["irq", "12", "3"]);
        assert_eq!(
            written(&table, None),
            ["  NAME   COUNT  MAX", "  irq       12    3"]
        );
    }

    #[test]
    fn a_long_cell_widens_its_column_and_every_row_stays_aligned() {
        let mut table = TextTable::new("", &COLUMNS).headings();
        table.row(&["a much longer name", "1", "2"]);
        table.note("(1 more)");
        table.row(&["x", "123456", "2"]);
        let lines = written(&table, None);
        assert_eq!(lines[2], "(1 more)");
        let ends: Vec<usize> = [0, 1, 3].iter().map(|&i| lines[i].len()).collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{lines:#?}");
        assert!(lines[1].starts_with("a much longer name "), "{lines:#?}");
    }

    #[test]
    fn a_narrow_terminal_cuts_the_names_not_the_figures() {
        let mut table = TextTable::new("", &COLUMNS).headings();
        table.row(&["a much longer name", "1", "2"]);
        let lines = written(&table, Some(20));
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:#?}");
        assert!(
            lines[1].contains('…') && lines[1].ends_with("  1    2"),
            "{lines:#?}"
        );
        // names never below the declared width (6) while padding can go, figures never
        // cut: a terminal too narrow for the figures wraps
        let lines = written(&table, Some(5));
        assert_eq!(lines[1], "a muc…     1   2");
    }

    #[test]
    fn tables_of_figures_give_up_padding_then_gaps_then_name_length() {
        let columns = [
            Column::left("NAME", 10),
            Column::right("A", 8).gap(3),
            Column::right("B", 8).gap(3),
        ];
        let mut table = TextTable::new("", &columns).headings();
        table.row(&["a rather long name", "12", "3456"]);
        assert_eq!(
            written(&table, None)[1],
            "a rather long name         12       3456"
        );
        // the name down to its declared width, then the figures' padding
        assert_eq!(written(&table, Some(24))[1], "a rather…      12   3456");
        // then the gaps, then the name toward its shortest
        assert_eq!(written(&table, Some(18))[1], "a rather…  12 3456");
        assert_eq!(written(&table, Some(1))[1], "a rathe… 12 3456");
    }
}
