//! `irqlens account` output: the accounting table, the victims and causers, JSON.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use irqlens_model::tables::{
    AccountAmounts, AccountFolded, AccountPeriod, AccountRow, AccountTables, AccountWorkload,
};
use irqlens_model::workload::WorkloadBy;

use super::compare::Figure;
use super::table::{Column, Form, TextTable};
use super::{clock_time, percent, us, write_legend};
use irqlens_analyze::account::Period;
use irqlens_analyze::account::fold::{ACCOUNTS, GRACE_NS};
use irqlens_analyze::account::report::{
    FOLDED, Row, Table, Totals, idle_by, relative_error, table, top, totals,
};
use irqlens_analyze::account::workloads::{WorkloadRow, keep_within, name_cgroups, workloads};
use irqlens_analyze::account::{BySource, Source};
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_model::account::{AccountOptions, AccountRunInfo};
use irqlens_model::kernel::{irq_label, softirq_name};

/// The attribution rule, as users should read it next to the numbers; `sockets`: whether
/// socket deliveries were followed to their readers (`AccountOptions::sockets`).
pub fn rule(sockets: bool) -> String {
    let units = if sockets {
        "the socket deliveries (to the socket's last reader) and wakeups it made"
    } else {
        "the wakeups it made (socket deliveries not followed: a delivery serves the reader it wakes)"
    };
    format!(
        "charged = hardirq, softirq and NMI time that ran while the task was current; \
served = each hardirq/softirq run split evenly among {units}, a hardirq with none handing its time to the softirq it raised; \
irqlens's own work (runs whose units are all its threads, a wakeup IPI the CPU leaves for its thread) \
is charged to [irqlens], not to the task it interrupted; \
corrected = kernel - charged + served, with irqlens's own work also taken out of the kernel time of the task it interrupted; \
error = (kernel - corrected) / corrected"
    )
}

/// How a period is shown.
pub struct View<'a> {
    /// A row per thread; otherwise per process.
    pub by_thread: bool,
    /// Rows shown (and compared), the largest first.
    pub top: usize,
    /// IRQ line names, from /proc/interrupts.
    pub irq_names: &'a HashMap<u32, String>,
    /// A table per workload too (`--by`).
    pub by: Option<WorkloadBy>,
    /// `--cgroup`: only the rows of the tasks in these cgroup paths and below.
    pub within: &'a [String],
    /// Socket deliveries were followed to their readers (`--no-sockets` not given).
    pub sockets: bool,
}

impl View<'_> {
    /// The accounting table of `period`, a row per thread or process, each with its
    /// cgroup's path; with `--cgroup`, the rows in those cgroups only.
    pub fn table(&self, period: &Period) -> Table {
        let mut table = table(
            &period.ledger,
            &period.threads,
            period.compensator.as_ref(),
            self.by_thread,
        );
        name_cgroups(&mut table, &period.cgroups);
        keep_within(&mut table, self.within);
        table
    }

    /// `table`'s rows per workload, with `--by`; none without.
    pub fn workloads(&self, table: &Table) -> Vec<WorkloadRow> {
        self.by.map_or_else(Vec::new, |by| workloads(table, by))
    }

    /// What `--cgroup` kept, for the text: `rows: only tasks in /a, /b and below (...)`.
    pub fn filter_note(&self) -> Option<String> {
        (!self.within.is_empty()).then(|| {
            format!(
                "rows: only the tasks in cgroup {} and below (the totals count all the traced CPUs)",
                self.within.join(", ")
            )
        })
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

    fn sources_json(&self, by_source: &BySource) -> BTreeMap<String, u64> {
        by_source
            .iter()
            .map(|(&source, &ns)| (self.label(source), ns))
            .collect()
    }
}

pub(super) fn signed_percent(error: Option<f64>) -> String {
    error.map_or("-".into(), |e| format!("{:+.2}%", 100.0 * e))
}

/// At most 16 characters: kworkers' names in /proc carry their workqueue.
fn short(comm: &str) -> String {
    comm.chars().take(16).collect()
}

/// The accounting of one period (or the whole run): totals, table, rankings; the
/// columns `losses` may have cut short are marked.
pub fn write_period(
    out: &mut dyn Write,
    period: &Period,
    options: &AccountOptions,
    view: &View,
    losses: &Losses,
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
    if let Some(note) = view.filter_note() {
        writeln!(out, "{note}")?;
    }
    writeln!(out)?;
    let compensate = period.compensator.is_some();
    write_table(out, &table, &totals, view, compensate, losses)?;
    writeln!(out)?;
    if let Some(by) = view.by {
        write_workloads(out, &view.workloads(&table), by, view, compensate, losses)?;
        writeln!(out)?;
    }
    write_ranking(
        out,
        "Top victims (interrupt time charged to them)",
        &table.rows,
        |r| (r.figures.amounts.charged_ns, &r.charged_by),
        view,
    )?;
    write_ranking(
        out,
        "Top causers (interrupt time served to them)",
        &table.rows,
        |r| (r.figures.amounts.served_ns, &r.served_by),
        view,
    )?;
    if totals.orphan_ns > 0 {
        writeln!(
            out,
            "Orphan (served no known process): {}",
            view.sources(&period.ledger.orphan, 5)
        )?;
    }
    if let Some(irqlens) = table
        .irqlens
        .as_ref()
        .filter(|row| row.figures.amounts.charged_ns > 0)
    {
        writeln!(
            out,
            "[irqlens] (its own work, and what ran while it was current): {}",
            view.sources(&irqlens.charged_by, 5)
        )?;
    }
    if let Some(c) = &period.compensator {
        writeln!(
            out,
            "Compensation (Zhang & West §3.1): tick {} us (HZ {} measured), N(t) = {} interrupts per tick (EWMA, gamma 0.3)",
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
        "served a process {} us ({:.1} %), orphan {} us ({:.1} %); irqlens's own work {} us ({:.1} %)",
        us(t.served_ns),
        percent(t.served_ns, all),
        us(t.orphan_ns),
        percent(t.orphan_ns, all),
        us(t.irqlens_ns),
        percent(t.irqlens_ns, all)
    )
}

/// The columns of the table, in the text and the HTML report alike: the row's id
/// ("PID" or "TID") and command, then its figures; losses can cut short all but the
/// kernel's own bill. The compensation columns only with --compensate.
pub(crate) fn columns(view: &View, compensate: bool) -> Vec<Column> {
    let columns = [
        Column::right(view.id_heading(), 8),
        Column::left("COMMAND", 16),
        Column::right("KERNEL(us)", 11),
        Column::right("CHARGED(us)", 12).lossy(),
        Column::right("SERVED(us)", 11).lossy(),
        Column::right("CORRECTED(us)", 14).lossy(),
        Column::right("ERROR", 9).lossy(),
        Column::right("UNITS", 8).lossy(),
    ];
    columns
        .into_iter()
        .chain(compensation_columns(compensate))
        .collect()
}

/// The compensation's columns, with --compensate only.
fn compensation_columns(compensate: bool) -> impl Iterator<Item = Column> {
    let columns = [
        Column::right("COMPENS(us)", 13).lossy(),
        Column::right("C-ERROR", 9).lossy(),
    ];
    columns.into_iter().filter(move |_| compensate)
}

/// The compensation's cells, in the order of `compensation_columns`.
fn compensation_cells(amounts: &AccountAmounts, form: Form) -> [String; 2] {
    [
        form.opt_us(amounts.compensated_ns),
        signed_percent(amounts.compensated_error),
    ]
}

/// A row's cells in the order of `columns`; the command cut to fit in the text. The
/// folded row has no id.
pub(crate) fn cells(row: &Row, compensate: bool, form: Form) -> Vec<String> {
    let id = match row.is_folded() {
        true => "-".to_owned(),
        false => row.figures.id.to_string(),
    };
    let mut cells = vec![
        id,
        match form {
            Form::Text => short(&row.figures.comm),
            Form::Html => row.figures.comm.clone(),
        },
        form.opt_us(row.figures.amounts.kernel_ns),
        form.us(row.figures.amounts.charged_ns),
        form.us(row.figures.amounts.served_ns),
        form.opt_us(row.figures.amounts.corrected_ns),
        signed_percent(row.figures.amounts.error),
        row.figures.amounts.units.to_string(),
    ];
    if compensate {
        cells.extend(compensation_cells(&row.figures.amounts, form));
    }
    cells
}

/// The rows of interrupt time no process stands for, after the processes' (in the text
/// and the HTML table alike): `[orphan]` served no known process (a SERVED figure),
/// `[idle]` interrupted an idle CPU (a CHARGED one). Their cells up to SERVED; the
/// rest of `columns` has nothing to say of them.
pub(crate) fn unattributed_cells(totals: &Totals, form: Form) -> [[String; 5]; 2] {
    let none = || "-".to_owned();
    [
        [
            none(),
            ORPHAN.into(),
            none(),
            none(),
            form.us(totals.orphan_ns),
        ],
        [none(), IDLE.into(), none(), form.us(totals.idle_ns), none()],
    ]
}

/// The name of the interrupt time served to no known process.
pub(crate) const ORPHAN: &str = "[orphan]";
/// The name of the interrupt time that interrupted an idle CPU.
pub(crate) const IDLE: &str = "[idle]";

fn write_table(
    out: &mut dyn Write,
    table: &Table,
    totals: &Totals,
    view: &View,
    compensate: bool,
    losses: &Losses,
) -> io::Result<()> {
    let columns = columns(view, compensate);
    let headings: Vec<String> = columns.iter().map(|c| c.marked_heading(losses)).collect();
    let mut text = TextTable::new("", &columns);
    text.row(&headings);
    for row in table.rows.iter().take(view.top) {
        text.row(&cells(row, compensate, Form::Text));
    }
    if table.rows.len() > view.top {
        text.note(format!(
            "{:>8} ({} more; --top N shows more)",
            "",
            table.rows.len() - view.top
        ));
    }
    let folded = table.folded_sum();
    for row in folded.iter().chain(&table.irqlens) {
        text.row(&cells(row, compensate, Form::Text));
    }
    // the time of no task is in no cgroup
    if view.within.is_empty() {
        for cells in unattributed_cells(totals, Form::Text) {
            text.row(&cells);
        }
    }
    text.write(out)?;
    if let Some(row) = &folded {
        writeln!(out, "{}", folded_note(row))?;
    }
    write_legend(out, losses, "columns")
}

/// What the folded row stands for, under the table.
pub(crate) fn folded_note(folded: &Row) -> String {
    format!(
        "{FOLDED}: {} thread accounts folded to keep memory bounded (the threads with no interrupt time for {} s first, then the lightest; at most {ACCOUNTS} kept)",
        folded.folded_threads,
        GRACE_NS / 1_000_000_000
    )
}

/// The columns of the workload table, in the text and the HTML report alike: the two
/// views side by side first (the interrupted one, as the kernel, PSI and perf kwork see
/// it, then what was done for the workload), then the kernel's bill and its correction.
pub(crate) fn workload_columns(compensate: bool) -> Vec<Column> {
    let columns = [
        Column::left("WORKLOAD", 24),
        Column::left("KIND", 9),
        Column::right("CHARGED(us)", 12).lossy(),
        Column::right("SERVED(us)", 11).lossy(),
        Column::right("KERNEL(us)", 11),
        Column::right("CORRECTED(us)", 14).lossy(),
        Column::right("ERROR", 9).lossy(),
    ];
    let units = Column::right("UNITS", 8).lossy();
    columns
        .into_iter()
        .chain(compensation_columns(compensate))
        .chain([units])
        .collect()
}

/// A workload's cells in the order of `workload_columns`.
pub(crate) fn workload_cells(row: &WorkloadRow, compensate: bool, form: Form) -> Vec<String> {
    let amounts = &row.sums.figures.amounts;
    let kind = row
        .workload
        .as_ref()
        .map_or("-", |workload| workload.kind());
    // the page has room for the whole key: the full pod UID and container id
    let name = match form {
        Form::Text => row.name.clone(),
        Form::Html => row.key.clone(),
    };
    let mut cells = vec![
        name,
        kind.to_owned(),
        form.us(amounts.charged_ns),
        form.us(amounts.served_ns),
        form.opt_us(amounts.kernel_ns),
        form.opt_us(amounts.corrected_ns),
        signed_percent(amounts.error),
    ];
    if compensate {
        cells.extend(compensation_cells(amounts, form));
    }
    cells.push(amounts.units.to_string());
    cells
}

/// The heading of the workload table.
pub(crate) fn workload_heading(by: WorkloadBy, view: &View) -> String {
    format!(
        "Per {}: its {} rows added up (CHARGED as the kernel bills them, SERVED what was done for them)",
        by.name(),
        view.per()
    )
}

fn write_workloads(
    out: &mut dyn Write,
    rows: &[WorkloadRow],
    by: WorkloadBy,
    view: &View,
    compensate: bool,
    losses: &Losses,
) -> io::Result<()> {
    writeln!(out, "{}:", workload_heading(by, view))?;
    let columns = workload_columns(compensate);
    let headings: Vec<String> = columns.iter().map(|c| c.marked_heading(losses)).collect();
    let mut text = TextTable::new("", &columns);
    text.row(&headings);
    for row in rows.iter().take(view.top) {
        text.row(&workload_cells(row, compensate, Form::Text));
    }
    if rows.len() > view.top {
        text.note(format!(
            "({} more; --top N shows more)",
            rows.len() - view.top
        ));
    }
    text.write(out)?;
    write_legend(out, losses, "columns")
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
            short(&row.figures.comm),
            row.figures.id,
            us(ns),
            view.sources(by_source, 4)
        )?;
    }
    Ok(())
}

/// The lines after the tables: the rule, what the columns count, how the run went.
pub fn write_run_info(out: &mut dyn Write, info: &AccountRunInfo, view: &View) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Rule: {}", rule(view.sockets))?;
    writeln!(
        out,
        "KERNEL is the task's sum_exec_runtime (schedstat) over the run, on all CPUs; CHARGED and SERVED count the traced CPUs only"
    )?;
    writeln!(
        out,
        "duration {} | {} programs, {} checkpoints, {} lost",
        clock_time(info.common.elapsed_ns),
        info.common.programs,
        info.common.events,
        info.common.lost_events,
    )?;
    super::write_skipped_tracepoints(out, &info.common.skipped_tracepoints)?;
    if info.common.interrupted {
        writeln!(out, "Interrupted: the results cover the run until then")?;
    }
    Ok(())
}

/// A row as JSON, with its sources by name.
fn row_json(row: &Row, view: &View) -> AccountRow {
    AccountRow {
        figures: row.figures.clone(),
        charged_by: view.sources_json(&row.charged_by),
        served_by: view.sources_json(&row.served_by),
    }
}

/// A workload as JSON, with its sources by name.
fn workload_json(row: &WorkloadRow, view: &View) -> AccountWorkload {
    AccountWorkload {
        key: row.key.clone(),
        path: row.path.clone(),
        workload: row.workload.clone(),
        tasks: row.tasks,
        folded_threads: row.sums.folded_threads,
        amounts: row.sums.figures.amounts.clone(),
        charged_by: view.sources_json(&row.sums.charged_by),
        served_by: view.sources_json(&row.sums.served_by),
    }
}

/// The folded row as JSON.
fn folded_json(row: &Row, view: &View) -> AccountFolded {
    AccountFolded {
        threads: row.folded_threads,
        amounts: row.figures.amounts.clone(),
        charged_by: view.sources_json(&row.charged_by),
        served_by: view.sources_json(&row.served_by),
    }
}

/// One period as JSON (ns throughout), with what `losses` may have cut short.
pub fn period_json(period: &Period, view: &View, losses: &Losses) -> AccountPeriod {
    let table = view.table(period);
    let workloads = view.workloads(&table);
    AccountPeriod {
        start_ns: period.start_ns,
        elapsed_ns: period.elapsed_ns,
        totals: totals(&period.ledger),
        orphan_by: view.sources_json(&period.ledger.orphan),
        idle_by: view.sources_json(&idle_by(&period.ledger)),
        rows: table.rows.iter().map(|row| row_json(row, view)).collect(),
        workloads: workloads
            .iter()
            .map(|row| workload_json(row, view))
            .collect(),
        irqlens: table.irqlens.as_ref().map(|row| row_json(row, view)),
        folded: table.folded_sum().map(|row| folded_json(&row, view)),
        interrupts_per_tick: period
            .compensator
            .as_ref()
            .and_then(|c| c.interrupts_per_tick()),
        lost: losses.table(&[
            "totals",
            "orphan_by",
            "idle_by",
            "rows",
            "workloads",
            "irqlens",
            "folded",
        ]),
    }
}

/// The tables of the `--json` document: the whole run, its periods and the run info.
pub fn to_json(
    whole: &Period,
    periods: &[AccountPeriod],
    info: &AccountRunInfo,
    options: &AccountOptions,
    view: &View,
) -> AccountTables {
    AccountTables {
        per: view.per().into(),
        rule: rule(options.sockets),
        sockets: options.sockets,
        compensate: options.compensate,
        by: options.by,
        cgroups: options.cgroups.clone(),
        lost: info.losses().table(&["total", "periods"]),
        total: period_json(whole, view, &info.losses()),
        periods: periods.to_vec(),
    }
}

/// The numbers `compare` sets side by side: per process (or thread) name with interrupt
/// time, the largest first. Rows are keyed by their comm, not their pid or tid (which
/// change from run to run): the rows of one comm add up, and their kernel error is that
/// of their summed times.
pub fn figures(whole: &Period, view: &View) -> Vec<Figure> {
    let table = view.table(whole);
    let mut merged = merge_by_comm(&table.rows);
    merged.retain(|m| m.charged_ns + m.served_ns > 0);
    // stable: rows of equal time keep the table's order
    merged.sort_by_key(|m| std::cmp::Reverse(m.charged_ns + m.served_ns));
    merged.truncate(view.top);
    merged.extend(merge_by_comm(table.irqlens.as_slice()));
    let mut figures = Vec::new();
    for m in merged {
        let group = m.comm;
        figures.push(Figure::ns(group, "charged", m.charged_ns));
        figures.push(Figure::ns(group, "served", m.served_ns));
        let error = m.kernel.and_then(|(t, t_o)| relative_error(t, t_o));
        if let Some(error) = error {
            figures.push(Figure::percent(group, "kernel error", 100.0 * error));
        }
    }
    let totals = totals(&whole.ledger);
    figures.push(Figure::ns("total", "interrupt time", totals.interrupt_ns()));
    figures
}

/// The rows of one comm, added up.
struct ByComm<'a> {
    comm: &'a str,
    charged_ns: u64,
    served_ns: u64,
    /// Summed t and t_o, when every row has both.
    kernel: Option<(u64, u64)>,
}

/// Rows merged by comm, in the order each comm first comes.
fn merge_by_comm(rows: &[Row]) -> Vec<ByComm<'_>> {
    let mut merged: Vec<ByComm> = Vec::new();
    for row in rows {
        let kernel = row
            .figures
            .amounts
            .kernel_ns
            .zip(row.figures.amounts.corrected_ns);
        match merged.iter_mut().find(|m| m.comm == row.figures.comm) {
            Some(m) => {
                m.charged_ns += row.figures.amounts.charged_ns;
                m.served_ns += row.figures.amounts.served_ns;
                m.kernel = m.kernel.zip(kernel).map(|(a, b)| (a.0 + b.0, a.1 + b.1));
            }
            None => merged.push(ByComm {
                comm: &row.figures.comm,
                charged_ns: row.figures.amounts.charged_ns,
                served_ns: row.figures.amounts.served_ns,
                kernel,
            }),
        }
    }
    merged
}

/// `ledger` with `threads` more accounts of 1 µs of NET_RX each (pids from 100 000 on, in
/// cgroup 1), as many as make it fold its lightest: for the tests of the folded row.
#[cfg(test)]
pub(crate) fn with_folded(
    ledger: irqlens_analyze::account::Ledger,
    threads: u32,
) -> irqlens_analyze::account::Ledger {
    use irqlens_analyze::account::{Ledger, ThreadAccount};
    use irqlens_model::workload::CgroupId;
    let mut crowd = Ledger::default();
    for tid in 100_000..100_000 + threads {
        let charged = BySource::from([(Source::Softirq { vector: 3 }, 1_000)]);
        let account = ThreadAccount {
            charged,
            ..Default::default()
        };
        crowd.threads.insert(tid, account);
        let comm = irqlens_model::kernel::Comm::new("short");
        let seen = irqlens_analyze::account::Seen {
            tgid: tid,
            comm,
            cgroup: CgroupId(1),
        };
        crowd.seen.insert(tid, seen);
    }
    let mut whole = ledger;
    whole.absorb(crowd);
    whole
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::compare::rows;
    use irqlens_analyze::account::{Ledger, ThreadAccount};
    use irqlens_model::account::ThreadInfo;

    #[test]
    fn the_rule_says_whether_deliveries_were_followed() {
        assert!(rule(true).contains("the socket deliveries (to the socket's last reader)"));
        let unfollowed = rule(false);
        assert!(!unfollowed.contains("last reader"), "{unfollowed}");
        assert!(unfollowed.contains("not followed"), "{unfollowed}");
    }

    /// A run in which processes `pids` named `dd` were each charged 100 µs of NET_RX,
    /// and `cargo` (pid 1000) 50 µs.
    fn run(pids: &[u32]) -> Period {
        let net = Source::Softirq { vector: 3 };
        let mut ledger = Ledger::default();
        let mut threads = HashMap::new();
        for (&pid, ns) in pids.iter().map(|p| (p, 100_000)).chain([(&1000, 50_000)]) {
            let charged = BTreeMap::from([(net, ns)]);
            ledger.threads.insert(
                pid,
                ThreadAccount {
                    charged,
                    ..Default::default()
                },
            );
            let comm = if pid == 1000 { "cargo" } else { "dd" };
            let info = ThreadInfo {
                tgid: pid,
                comm: comm.into(),
                runtime_ns: None,
                cgroup: None,
            };
            threads.insert(pid, info);
        }
        Period {
            start_ns: 0,
            elapsed_ns: 1_000_000_000,
            ledger,
            compensator: None,
            threads,
            lost_events: 0,
            cgroups: Default::default(),
        }
    }

    #[test]
    fn the_text_has_the_workload_table_and_says_which_filter_applied() {
        let mut period = run(&[10, 11]);
        // the dd processes in one unit, cargo in another cgroup
        for (pid, info) in &mut period.threads {
            info.cgroup = Some(irqlens_model::workload::CgroupId(
                u64::from(*pid == 1000) + 1,
            ));
        }
        period.cgroups.insert(
            irqlens_model::workload::CgroupId(1),
            "/system.slice/dd.service".into(),
        );
        period
            .cgroups
            .insert(irqlens_model::workload::CgroupId(2), "/build".into());
        let names = HashMap::new();
        let options = AccountOptions::defaults(irqlens_model::units::CpuList::single(0));
        let text = |by: Option<WorkloadBy>, within: &[String]| {
            let view = View {
                by_thread: false,
                top: 10,
                irq_names: &names,
                by,
                within,
                sockets: true,
            };
            let mut out = Vec::new();
            write_period(&mut out, &period, &options, &view, &Losses::checkpoints(0)).unwrap();
            String::from_utf8(out).unwrap()
        };
        let plain = text(None, &[]);
        assert!(
            !plain.contains("Per unit") && plain.contains("[orphan]"),
            "{plain}"
        );
        let by_unit = text(Some(WorkloadBy::Unit), &[]);
        let at = by_unit.find("Per unit:").expect("the workload table");
        let unit = by_unit[at..]
            .lines()
            .find(|l| l.starts_with("dd.service"))
            .unwrap();
        // the two dd processes' 100 µs each, charged
        assert_eq!(
            unit.split_whitespace().collect::<Vec<_>>()[..4],
            ["dd.service", "unit", "200", "0"],
            "{by_unit}"
        );
        let filtered = text(Some(WorkloadBy::Unit), &["/build".into()]);
        assert!(
            filtered.contains("rows: only the tasks in cgroup /build and below"),
            "{filtered}"
        );
        assert!(!filtered.contains("dd.service") && !filtered.contains("[orphan]"));
        assert!(filtered.contains("cargo"), "{filtered}");
    }

    #[test]
    fn compare_rows_match_by_comm_across_pids() {
        let names = HashMap::new();
        let view = View {
            by_thread: false,
            top: 10,
            irq_names: &names,
            by: None,
            within: &[],
            sockets: true,
        };
        let a = figures(&run(&[10, 11, 12]), &view);
        let b = figures(&run(&[500, 501]), &view);
        let rows = rows(&a, &b);
        let charged = |group: &str| {
            let row = rows
                .iter()
                .find(|r| r.group == group && r.name == "charged")
                .unwrap_or_else(|| panic!("no {group} in {a:?}"));
            (row.a, row.b)
        };
        // the processes of one name add up, whatever their pids
        assert_eq!(charged("dd"), (Some(300_000.0), Some(200_000.0)));
        assert_eq!(charged("cargo"), (Some(50_000.0), Some(50_000.0)));
        assert!(rows.iter().all(|r| r.a.is_some() && r.b.is_some()));
    }

    #[test]
    fn the_folded_row_is_in_the_text_and_the_json_and_adds_up_with_the_rows() {
        let mut period = run(&[10, 11]);
        period.ledger = with_folded(period.ledger, ACCOUNTS as u32);
        let folded = period.ledger.folded.threads();
        assert!(folded > 0);
        let names = HashMap::new();
        let options = AccountOptions::defaults(irqlens_model::units::CpuList::single(0));
        let view = View {
            by_thread: false,
            top: 10,
            irq_names: &names,
            by: Some(WorkloadBy::Cgroup),
            within: &[],
            sockets: true,
        };
        let mut out = Vec::new();
        write_period(&mut out, &period, &options, &view, &Losses::checkpoints(0)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row = text
            .lines()
            .find(|line| line.trim_start().starts_with("- "))
            .unwrap_or_else(|| panic!("no folded row in {text}"));
        // its id and kernel bill blank, then CHARGED
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells[..4],
            ["-", FOLDED, "-", &(folded).to_string()],
            "{text}"
        );
        assert!(text.contains(&format!("{FOLDED}: {folded} thread accounts folded")));
        let json = period_json(&period, &view, &Losses::checkpoints(0));
        let folded_json = json.folded.expect("folded in the JSON");
        assert_eq!(folded_json.threads, folded);
        let rows: u64 = json.rows.iter().map(|r| r.figures.amounts.charged_ns).sum();
        assert_eq!(
            rows + folded_json.amounts.charged_ns,
            json.totals.interrupt_ns()
        );
        // the workloads count the folded accounts too
        let workloads: u64 = json.workloads.iter().map(|w| w.amounts.charged_ns).sum();
        assert_eq!(workloads, json.totals.interrupt_ns());
        assert_eq!(
            json.workloads.iter().map(|w| w.folded_threads).sum::<u64>(),
            folded
        );
    }
}
