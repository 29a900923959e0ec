//! `irqlens account` output: the accounting table, the victims and causers, JSON.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{Value, json};

use super::compare::Figure;
use super::{clock_time, percent, us};
use crate::analyze::account::report::{Row, Totals, rows, top, totals};
use crate::analyze::account::{BySource, Source, total};
use crate::analyze::kernel::{irq_label, softirq_name};
use crate::collect::account::{AccountOptions, AccountRunInfo, Period};

/// The attribution rule, as users should read it next to the numbers.
pub const RULE: &str = "charged = hardirq, softirq and NMI time that ran while the task was current; \
served = each hardirq/softirq run split evenly among the socket deliveries (to the socket's last reader) \
and wakeups it made, a hardirq with none handing its time to the softirq it raised; \
corrected = kernel - charged + served; error = (kernel - corrected) / corrected";

/// How a period is shown.
pub struct View<'a> {
    pub by_thread: bool,
    pub top: usize,
    pub irq_names: &'a HashMap<u32, String>,
}

impl View<'_> {
    /// The accounting table of `period`, a row per thread or process.
    pub fn table(&self, period: &Period) -> Vec<Row> {
        rows(
            &period.ledger,
            &period.threads,
            period.compensator.as_ref(),
            self.by_thread,
        )
    }

    /// What a row is: "thread" or "process".
    pub fn per(&self) -> &'static str {
        if self.by_thread { "thread" } else { "process" }
    }

    /// The heading of a row's id: "TID" or "PID".
    pub fn id_heading(&self) -> &'static str {
        if self.by_thread { "TID" } else { "PID" }
    }

    fn label(&self, source: Source) -> String {
        match source {
            Source::Hardirq { source, id } => irq_label(source, id, self.irq_names),
            Source::Softirq { vector } => softirq_name(vector.into()),
            Source::Nmi => "NMI".into(),
        }
    }

    /// `NET_RX 380123, call_function_single:251 2011` (µs), largest first.
    fn sources(&self, by_source: &BySource, n: usize) -> String {
        let mut ranked: Vec<(&Source, &u64)> = by_source.iter().collect();
        ranked.sort_by_key(|(_, ns)| std::cmp::Reverse(**ns));
        ranked
            .iter()
            .take(n)
            .map(|(source, ns)| format!("{} {}", self.label(**source), us(**ns)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn sources_json(&self, by_source: &BySource) -> Value {
        by_source
            .iter()
            .map(|(&source, &ns)| (self.label(source), json!(ns)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

pub(super) fn signed_percent(error: Option<f64>) -> String {
    error.map_or("-".into(), |e| format!("{:+.2}%", 100.0 * e))
}

/// At most 16 characters: kworkers' names in /proc carry their workqueue.
fn short(comm: &str) -> String {
    comm.chars().take(16).collect()
}

fn opt(value: Option<u64>) -> String {
    value.map_or("-".into(), |ns| us(ns).to_string())
}

/// The accounting of one period (or the whole run): totals, table, rankings.
pub fn write_period(
    out: &mut dyn Write,
    period: &Period,
    options: &AccountOptions,
    view: &View,
) -> io::Result<()> {
    let table = view.table(period);
    let totals = totals(&period.ledger);
    writeln!(
        out,
        "irqlens account: {} to {} on CPUs {} (per {})",
        clock_time(period.start_ns),
        clock_time(period.start_ns + period.elapsed_ns),
        options.cpus,
        view.per()
    )?;
    write_totals(out, &totals)?;
    writeln!(out)?;
    write_table(out, &table, &totals, view, options.compensate)?;
    writeln!(out)?;
    write_ranking(
        out,
        "Top victims (interrupt time charged to them)",
        &table,
        |r| (r.charged_ns, &r.charged_by),
        view,
    )?;
    write_ranking(
        out,
        "Top causers (interrupt time served to them)",
        &table,
        |r| (r.served_ns, &r.served_by),
        view,
    )?;
    if totals.orphan_ns > 0 {
        writeln!(
            out,
            "Orphan (served no known process): {}",
            view.sources(&period.ledger.orphan, 5)
        )?;
    }
    if let Some(folded) = period.ledger.threads.other() {
        writeln!(
            out,
            "Folded (to bound memory): {} threads with the least interrupt time, charged {} us, served {} us",
            period.ledger.threads.folded(),
            us(total(&folded.charged)),
            us(total(&folded.served))
        )?;
    }
    if let Some(c) = &period.compensator {
        writeln!(
            out,
            "Compensation (seed 004 §3.1): tick {} us (HZ {} measured), N(t) = {} interrupts per tick (EWMA, gamma 0.3)",
            us(c.tick_ns()),
            1_000_000_000 / c.tick_ns(),
            c.interrupts_per_tick()
                .map_or("not measured".into(), |n| n.to_string())
        )?;
    }
    Ok(())
}

fn write_totals(out: &mut dyn Write, t: &Totals) -> io::Result<()> {
    let all = t.interrupt_ns();
    writeln!(
        out,
        "interrupt time {} us: hardirq {}, softirq {}, NMI {}; {} on idle CPUs",
        us(all),
        us(t.hardirq_ns),
        us(t.softirq_ns),
        us(t.nmi_ns),
        us(t.idle_ns)
    )?;
    writeln!(
        out,
        "served a process {} us ({:.1} %), orphan {} us ({:.1} %)",
        us(t.served_ns),
        percent(t.served_ns, all),
        us(t.orphan_ns),
        percent(t.orphan_ns, all)
    )
}

fn write_table(
    out: &mut dyn Write,
    table: &[Row],
    totals: &Totals,
    view: &View,
    compensate: bool,
) -> io::Result<()> {
    write!(
        out,
        "{:>8} {:<16} {:>11} {:>11} {:>11} {:>13} {:>9} {:>8}",
        view.id_heading(),
        "COMMAND",
        "KERNEL(us)",
        "CHARGED(us)",
        "SERVED(us)",
        "CORRECTED(us)",
        "ERROR",
        "UNITS"
    )?;
    if compensate {
        write!(out, " {:>12} {:>9}", "COMPENS(us)", "C-ERROR")?;
    }
    writeln!(out)?;
    for row in table.iter().take(view.top) {
        write!(
            out,
            "{:>8} {:<16} {:>11} {:>11} {:>11} {:>13} {:>9} {:>8}",
            row.id,
            short(&row.comm),
            opt(row.kernel_ns),
            us(row.charged_ns),
            us(row.served_ns),
            opt(row.corrected_ns),
            signed_percent(row.error),
            row.units
        )?;
        if compensate {
            write!(
                out,
                " {:>12} {:>9}",
                opt(row.compensated_ns),
                signed_percent(row.compensated_error)
            )?;
        }
        writeln!(out)?;
    }
    if table.len() > view.top {
        writeln!(
            out,
            "{:>8} ({} more; --top N shows more)",
            "",
            table.len() - view.top
        )?;
    }
    writeln!(
        out,
        "{:>8} {:<16} {:>11} {:>11} {:>11}",
        "-",
        "[orphan]",
        "-",
        "-",
        us(totals.orphan_ns)
    )?;
    writeln!(
        out,
        "{:>8} {:<16} {:>11} {:>11} {:>11}",
        "-",
        "[idle]",
        "-",
        us(totals.idle_ns),
        "-"
    )
}

/// The top rows of `table` by the part of their interrupt time `part` picks, with its
/// sources.
fn write_ranking(
    out: &mut dyn Write,
    title: &str,
    table: &[Row],
    part: impl Fn(&Row) -> (u64, &BySource),
    view: &View,
) -> io::Result<()> {
    let ranked = top(table, view.top, |r| part(r).0);
    if ranked.is_empty() {
        return Ok(());
    }
    writeln!(out, "{title}:")?;
    for row in ranked {
        let (ns, by_source) = part(row);
        writeln!(
            out,
            "  {:<16} {:>8} {:>10} us: {}",
            short(&row.comm),
            row.id,
            us(ns),
            view.sources(by_source, 4)
        )?;
    }
    Ok(())
}

pub fn write_run_info(out: &mut dyn Write, info: &AccountRunInfo) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Rule: {RULE}")?;
    writeln!(
        out,
        "KERNEL is the task's sum_exec_runtime (schedstat) over the run, on all CPUs; CHARGED and SERVED count the traced CPUs only"
    )?;
    writeln!(
        out,
        "duration {} | {} programs, {} checkpoints, {} lost",
        clock_time(info.elapsed_ns),
        info.programs,
        info.events,
        info.lost_events,
    )?;
    super::write_skipped_tracepoints(out, &info.skipped_tracepoints)?;
    if info.interrupted {
        writeln!(out, "Interrupted: the results cover the run until then")?;
    }
    Ok(())
}

/// One period as JSON (ns throughout).
pub fn period_json(period: &Period, view: &View) -> Value {
    let rows: Vec<Value> = view
        .table(period)
        .iter()
        .map(|row| {
            let mut value = serde_json::to_value(row).expect("rows serialize");
            value["charged_by"] = view.sources_json(&row.charged_by);
            value["served_by"] = view.sources_json(&row.served_by);
            value
        })
        .collect();
    json!({
        "start_ns": period.start_ns,
        "elapsed_ns": period.elapsed_ns,
        "totals": totals(&period.ledger),
        "orphan_by": view.sources_json(&period.ledger.orphan),
        "idle_by": view.sources_json(&period.ledger.idle),
        "rows": rows,
        // thread accounts folded into one to bound memory (the lightest ones)
        "folded": period.ledger.threads.other().map(|folded| json!({
            "threads": period.ledger.threads.folded(),
            "charged_ns": total(&folded.charged),
            "served_ns": total(&folded.served),
            "units": folded.units,
        })),
        "interrupts_per_tick": period.compensator.as_ref().and_then(|c| c.interrupts_per_tick()),
    })
}

pub fn to_json(
    whole: &Period,
    periods: &[Value],
    info: &AccountRunInfo,
    options: &AccountOptions,
    view: &View,
) -> Value {
    json!({
        "cpus": options.cpus.to_string(),
        "per": view.per(),
        "rule": RULE,
        "compensate": options.compensate,
        "run": info,
        "total": period_json(whole, view),
        "periods": periods,
    })
}

/// The numbers `compare` sets side by side: per process (or thread) with interrupt
/// time, the largest first.
pub fn figures(whole: &Period, view: &View) -> Vec<Figure> {
    let table = view.table(whole);
    let mut figures = Vec::new();
    for row in top(&table, view.top, |row| row.charged_ns + row.served_ns) {
        let group = format!("{} {}", row.comm, row.id);
        figures.push(Figure::ns(&group, "charged", row.charged_ns));
        figures.push(Figure::ns(&group, "served", row.served_ns));
        if let Some(error) = row.error {
            figures.push(Figure::percent(&group, "kernel error", 100.0 * error));
        }
    }
    let totals = totals(&whole.ledger);
    figures.push(Figure::ns("total", "interrupt time", totals.interrupt_ns()));
    figures
}
