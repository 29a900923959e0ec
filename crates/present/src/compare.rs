//! `compare`: the key numbers of two runs of one measurement side by side, and how
//! they moved.

use std::collections::HashMap;
use std::io::{self, Write};

use irqlens_model::run::{Comparison, Header};
use irqlens_model::tables::ComparedFigure;
use serde::Serialize;
use serde_json::Value;

use super::table::{Column, TextTable};

/// One number a measurement is judged by: a quantile of a CPU's noise, a cause's time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// What it belongs to: `cpu 1`, `cause irq 11 virtio0`, `softirq NET_RX`.
    pub group: String,
    /// Which number of the group: `q99`, `charged`, `max`.
    pub name: String,
    /// The number, in `unit`.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
}

pub use irqlens_model::tables::Unit;

impl Figure {
    /// A time, ns.
    pub fn ns(group: &str, name: &str, ns: u64) -> Self {
        Figure::new(group, name, ns as f64, Unit::Ns)
    }

    /// A count.
    pub fn count(group: &str, name: &str, count: u64) -> Self {
        Figure::new(group, name, count as f64, Unit::Count)
    }

    /// A percentage.
    pub fn percent(group: &str, name: &str, percent: f64) -> Self {
        Figure::new(group, name, percent, Unit::Percent)
    }

    fn new(group: &str, name: &str, value: f64, unit: Unit) -> Self {
        Figure {
            group: group.into(),
            name: name.into(),
            value,
            unit,
        }
    }
}

/// Causes and sources compared, at most (the largest of each run).
pub const TOP_FIGURES: usize = 10;

/// The quantiles `compare` shows of a distribution, from `quantile_ns`.
pub fn quantile_figures(group: &str, quantile_ns: impl Fn(f64) -> Option<u64>) -> Vec<Figure> {
    [("q50", 0.5), ("q90", 0.9), ("q99", 0.99), ("q99.9", 0.999)]
        .into_iter()
        .filter_map(|(name, q)| Some(Figure::ns(group, name, quantile_ns(q)?)))
        .collect()
}

/// How `compare` names a device IRQ line: by its name (`irq virtio0-input.0`), which stays
/// when the line's number changes from boot to boot, unless another line has the same
/// name; by its number without one (`irq 11`).
pub fn irq_line_key(id: u32, irq_names: &HashMap<u32, String>) -> String {
    match irq_names.get(&id).filter(|name| !name.is_empty()) {
        Some(name) if irq_names.values().filter(|other| *other == name).count() == 1 => {
            format!("irq {name}")
        }
        Some(name) => format!("irq {id} {name}"),
        None => format!("irq {id}"),
    }
}

/// A figure of either run, or both: matched by group and name.
pub struct Row<'a> {
    /// The figure's group.
    pub group: &'a str,
    /// The figure's name.
    pub name: &'a str,
    /// Its unit.
    pub unit: Unit,
    /// Run A's value; `None` if A lacks the figure.
    pub a: Option<f64>,
    /// Run B's value; `None` if B lacks the figure.
    pub b: Option<f64>,
}

impl Row<'_> {
    /// B - A, if both have it.
    pub fn delta(&self) -> Option<f64> {
        Some(self.b? - self.a?)
    }

    /// The change relative to A, in percent; none from zero.
    pub fn change_percent(&self) -> Option<f64> {
        let (a, b) = (self.a?, self.b?);
        (a != 0.0).then(|| 100.0 * (b - a) / a)
    }
}

/// A's figures in their order, then those only B has.
pub fn rows<'a>(a: &'a [Figure], b: &'a [Figure]) -> Vec<Row<'a>> {
    let find = |figures: &'a [Figure], f: &Figure| {
        figures
            .iter()
            .find(|g| g.group == f.group && g.name == f.name)
            .map(|g| g.value)
    };
    let only_b = b.iter().filter(|f| find(a, f).is_none());
    a.iter()
        .chain(only_b)
        .map(|f| Row {
            group: &f.group,
            name: &f.name,
            unit: f.unit,
            a: find(a, f),
            b: find(b, f),
        })
        .collect()
}

fn value(unit: Unit, value: Option<f64>) -> String {
    match (unit, value) {
        (_, None) => "-".into(),
        (Unit::Ns, Some(ns)) => format!("{:.2}", ns / 1_000.0),
        (Unit::Count, Some(count)) => format!("{count:.0}"),
        (Unit::Percent, Some(percent)) => format!("{percent:.3}"),
    }
}

fn signed(unit: Unit, delta: Option<f64>) -> String {
    match delta {
        Some(d) if d >= 0.0 => format!("+{}", value(unit, Some(d))),
        Some(d) => format!("-{}", value(unit, Some(-d))),
        None => "-".into(),
    }
}

fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Ns => "us",
        Unit::Count => "",
        Unit::Percent => "%",
    }
}

/// The columns of the side-by-side table.
const COLUMNS: [Column; 6] = [
    Column::left("GROUP", 28),
    Column::left("FIGURE", 24),
    Column::right("A", 13),
    Column::right("B", 13),
    Column::right("B-A", 13),
    Column::right("CHANGE", 9),
];

/// The side-by-side table; `a` and `b` name the runs.
pub fn write_table(
    out: &mut dyn Write,
    figures: &[ComparedFigure],
    a: &str,
    b: &str,
) -> io::Result<()> {
    writeln!(out, "A: {a}")?;
    writeln!(out, "B: {b}")?;
    writeln!(out, "times in us")?;
    let mut table = TextTable::new("", &COLUMNS).headings();
    let mut last_group = "";
    for figure in figures {
        let group = if figure.group == last_group {
            ""
        } else {
            &figure.group
        };
        last_group = &figure.group;
        let change = figure
            .change_percent
            .map_or("-".into(), |c| format!("{c:+.1}%"));
        let name = match unit_name(figure.unit) {
            "" => figure.figure.clone(),
            unit => format!("{} ({unit})", figure.figure),
        };
        table.row(&[
            group.to_owned(),
            name,
            value(figure.unit, figure.a),
            value(figure.unit, figure.b),
            signed(figure.unit, figure.delta),
            change,
        ]);
    }
    table.write(out)
}

/// The `--json` document: the two runs' documents and every row.
pub fn comparison(rows: &[Row], a: Value, b: Value) -> Comparison<Value, Value> {
    let figures = rows
        .iter()
        .map(|row| ComparedFigure {
            group: row.group.into(),
            figure: row.name.into(),
            unit: row.unit,
            a: row.a,
            b: row.b,
            delta: row.delta(),
            change_percent: row.change_percent(),
        })
        .collect();
    Comparison {
        header: Header::new("compare"),
        baseline: a,
        other: b,
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_by_group_and_name_and_keep_what_one_side_lacks() {
        let a = vec![
            Figure::ns("cpu 0", "max", 10_000),
            Figure::count("cause timer", "count", 4),
        ];
        let b = vec![
            Figure::count("cause net", "count", 2),
            Figure::ns("cpu 0", "max", 15_000),
        ];
        let rows = rows(&a, &b);
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].a, rows[0].b), (Some(10_000.0), Some(15_000.0)));
        assert_eq!(rows[0].delta(), Some(5_000.0));
        assert_eq!(rows[0].change_percent(), Some(50.0));
        assert_eq!((rows[1].a, rows[1].b), (Some(4.0), None));
        assert_eq!(rows[1].delta(), None);
        assert_eq!(
            (rows[2].group, rows[2].a, rows[2].b),
            ("cause net", None, Some(2.0))
        );
    }

    #[test]
    fn irq_lines_are_named_by_their_name_when_it_is_unique() {
        let names = HashMap::from([
            (11, "virtio0-input.0".to_string()),
            (12, "eth0".to_string()),
            (13, "eth0".to_string()),
        ]);
        assert_eq!(irq_line_key(11, &names), "irq virtio0-input.0");
        assert_eq!(irq_line_key(12, &names), "irq 12 eth0");
        assert_eq!(irq_line_key(14, &names), "irq 14");
    }

    #[test]
    fn no_change_in_percent_from_zero() {
        let a = [Figure::count("g", "n", 0)];
        let b = [Figure::count("g", "n", 3)];
        let rows = rows(&a, &b);
        assert_eq!(rows[0].change_percent(), None);
        let mut text = Vec::new();
        let figures = comparison(&rows, Value::Null, Value::Null).figures;
        write_table(&mut text, &figures, "a", "b").unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("+3"), "{text}");
    }
}
