//! The accounting table: the ledger next to the kernel's own bill, per process or thread.

use std::collections::{BTreeMap, HashMap};

use super::compensate::Compensator;
use super::{BySource, IDLE, Ledger, Source, ThreadAccount, add_into, total};
use irqlens_model::account::ThreadInfo;
use irqlens_model::tables::AccountFigures;
use irqlens_model::workload::CgroupId;

/// What the kernel accounted to each thread between two readings of
/// `system::thread_runtimes`: threads born in between count from zero, threads gone by
/// the second reading are left out.
pub fn runtimes_between(
    before: &HashMap<u32, ThreadInfo>,
    after: &HashMap<u32, ThreadInfo>,
) -> HashMap<u32, ThreadInfo> {
    after
        .iter()
        .map(|(&tid, info)| {
            let start = before
                .get(&tid)
                .filter(|old| old.tgid == info.tgid)
                .and_then(|old| old.runtime_ns)
                .unwrap_or(0);
            let runtime_ns = info.runtime_ns.map(|end| end.saturating_sub(start));
            (
                tid,
                ThreadInfo {
                    runtime_ns,
                    ..info.clone()
                },
            )
        })
        .collect()
}

/// One process (or thread) of the table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Its figures, as the `--json` document shows them.
    pub figures: AccountFigures,
    /// `charged_ns` per interrupt source.
    pub charged_by: BySource,
    /// `served_ns` per interrupt source.
    pub served_by: BySource,
    /// The interrupt time the kernel billed it: what ran while it was current.
    pub(super) billed_ns: u64,
    /// What the compensation added to its kernel time (with --compensate).
    pub(super) adjusted_ns: Option<i64>,
    /// A sum of rows (a workload's): the time served to those without a kernel bill (gone
    /// by the end reading), which the corrected time leaves out as it leaves out their
    /// bill.
    unbilled_served_ns: u64,
    /// Its cgroup, if the checkpoints or /proc named one (a process's: its leader's,
    /// else that of the first of its threads named).
    pub cgroup: Option<CgroupId>,
    /// The thread accounts folded into it, if it stands for those of a cgroup (to bound
    /// memory: see [`super::fold`]); none for a process's or a thread's own row.
    pub folded_threads: u64,
}

impl Row {
    fn new(id: u32, comm: String) -> Self {
        Row {
            figures: AccountFigures {
                id,
                comm,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Adds `other`'s interrupt time and kernel bill to this row's (`finish` works out
    /// the rest from the sums). The corrected time and the compensation sum only the rows
    /// with a kernel bill: a process gone by the end reading has none, and its billed and
    /// served time taken from the others' bill would skew theirs.
    pub(super) fn add(&mut self, other: &Row) {
        add_into(&mut self.charged_by, &other.charged_by);
        add_into(&mut self.served_by, &other.served_by);
        self.folded_threads += other.folded_threads;
        let (mine, theirs) = (&mut self.figures.amounts, &other.figures.amounts);
        mine.irqlens_ns += theirs.irqlens_ns;
        mine.units += theirs.units;
        let Some(kernel) = theirs.kernel_ns else {
            self.unbilled_served_ns += total(&other.served_by);
            return;
        };
        *mine.kernel_ns.get_or_insert(0) += kernel;
        self.billed_ns += other.billed_ns;
        if let Some(adjusted) = other.adjusted_ns {
            *self.adjusted_ns.get_or_insert(0) += adjusted;
        }
    }

    /// Whether it stands for folded thread accounts.
    pub fn is_folded(&self) -> bool {
        self.folded_threads > 0
    }

    /// Adds a thread's interrupt time: its own work and what it was served, the part of
    /// its charge that was irqlens's work moved to `moved_to_irqlens` unless the row is
    /// irqlens's.
    fn add_account(
        &mut self,
        account: &ThreadAccount,
        irqlens_row: bool,
        moved_to_irqlens: &mut BySource,
    ) {
        add_into(&mut self.charged_by, &account.charged);
        self.billed_ns += total(&account.charged);
        if !irqlens_row {
            add_into(moved_to_irqlens, &account.for_irqlens);
            take_from(&mut self.charged_by, &account.for_irqlens);
            self.figures.amounts.irqlens_ns += total(&account.for_irqlens);
        }
        add_into(&mut self.served_by, &account.served);
        self.figures.amounts.units += account.units;
    }

    /// Works out the sums, the corrected time and the errors from what was added.
    pub(super) fn finish(&mut self, adjusted_ns: Option<i64>) {
        self.adjusted_ns = adjusted_ns;
        let figures = &mut self.figures.amounts;
        figures.charged_ns = total(&self.charged_by);
        figures.served_ns = total(&self.served_by);
        let Some(kernel) = figures.kernel_ns else {
            return;
        };
        // the kernel's bill, not the charge: irqlens's own work is in the former
        let served = figures.served_ns - self.unbilled_served_ns;
        let corrected = (kernel + served).saturating_sub(self.billed_ns);
        figures.corrected_ns = Some(corrected);
        figures.error = relative_error(kernel, corrected);
        if let Some(adjusted) = adjusted_ns {
            let compensated = (kernel as i64 + adjusted).max(0) as u64;
            figures.compensated_ns = Some(compensated);
            figures.compensated_error = relative_error(compensated, corrected);
        }
    }
}

/// (t - t_o) / t_o; none for t_o = 0.
pub fn relative_error(t: u64, t_o: u64) -> Option<f64> {
    (t_o > 0).then(|| (t as f64 - t_o as f64) / t_o as f64)
}

pub use irqlens_model::tables::AccountTotals as Totals;

/// The totals of `ledger`, its folded accounts included.
pub fn totals(ledger: &Ledger) -> Totals {
    let mut totals = Totals {
        orphan_ns: total(&ledger.orphan),
        idle_ns: total(&idle_by(ledger)),
        ..Totals::default()
    };
    for account in ledger.accounts() {
        for (source, &ns) in &account.charged {
            match source {
                Source::Hardirq { .. } => totals.hardirq_ns += ns,
                Source::Softirq { .. } => totals.softirq_ns += ns,
                Source::Nmi => totals.nmi_ns += ns,
            }
        }
        totals.irqlens_ns += total(&account.for_irqlens);
        totals.served_ns += total(&account.served);
    }
    totals
}

/// The accounting table of a period.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Every process (or thread) that was charged or served, largest share of interrupt
    /// time first; irqlens is not among them.
    pub rows: Vec<Row>,
    /// `[irqlens]`: irqlens's threads, charged with its own work wherever it ran; none
    /// if the run does not say which process irqlens was.
    pub irqlens: Option<Row>,
    /// The thread accounts folded to bound memory, a row per cgroup (the unknown one's
    /// may come twice), with no kernel bill.
    pub folded: Vec<Row>,
}

impl Table {
    /// The folded rows added up, as the tables show them; none if nothing was folded.
    pub fn folded_sum(&self) -> Option<Row> {
        let mut sum = Row::new(0, FOLDED.into());
        self.folded.iter().for_each(|row| sum.add(row));
        sum.finish(None);
        sum.is_folded().then_some(sum)
    }
}

/// The name of the folded rows.
pub const FOLDED: &str = "[folded]";

/// The table of `ledger` with the kernel's bill from `threads`, a row per process (or
/// thread, `by_thread`).
pub fn table(
    ledger: &Ledger,
    threads: &HashMap<u32, ThreadInfo>,
    compensator: Option<&Compensator>,
    by_thread: bool,
) -> Table {
    let tgid = |tid: u32| -> u32 {
        threads
            .get(&tid)
            .map(|info| info.tgid)
            .or_else(|| ledger.seen.get(&tid).map(|seen| seen.tgid))
            .filter(|&tgid| tgid != 0)
            .unwrap_or(tid)
    };
    let irqlens = |tid: u32| ledger.irqlens.filter(|&pid| tgid(tid) == pid);
    // irqlens's threads are one row, whatever `by_thread` says
    let group =
        |tid: u32| -> u32 { irqlens(tid).unwrap_or(if by_thread { tid } else { tgid(tid) }) };
    let name = |tid: u32| -> String {
        threads
            .get(&tid)
            .map(|info| info.comm.clone())
            .or_else(|| ledger.seen.get(&tid).map(|seen| seen.comm.to_string()))
            .unwrap_or_else(|| "?".into())
    };
    let cgroup = |tid: u32| -> Option<CgroupId> {
        let read = threads.get(&tid).and_then(|info| info.cgroup);
        let seen = || ledger.seen.get(&tid).map(|seen| seen.cgroup);
        read.or_else(seen).filter(|id| id.is_known())
    };
    let mut rows: BTreeMap<u32, Row> = BTreeMap::new();
    if let Some(pid) = ledger.irqlens {
        rows.insert(pid, Row::new(pid, "[irqlens]".into()));
    }
    let mut adjusted: BTreeMap<u32, i64> = BTreeMap::new();
    let mut moved_to_irqlens = BySource::new();
    if let Some(idle) = ledger.threads.get(&IDLE) {
        add_into(&mut moved_to_irqlens, &idle.for_irqlens);
    }
    for (&tid, account) in ledger.threads.iter().filter(|(tid, _)| **tid != IDLE) {
        let id = group(tid);
        let row = rows.entry(id).or_insert_with(|| Row::new(id, name(id)));
        row.cgroup = row.cgroup.or_else(|| cgroup(id)).or_else(|| cgroup(tid));
        row.add_account(account, irqlens(tid).is_some(), &mut moved_to_irqlens);
        if let Some(compensator) = compensator {
            *adjusted.entry(id).or_default() += compensator.adjusted_ns(tid);
        }
    }
    let folded = ledger.folded.by_cgroup().map(|(cgroup, folded)| {
        let mut row = Row::new(0, FOLDED.into());
        row.cgroup = Some(cgroup).filter(|id| id.is_known());
        row.folded_threads = folded.threads;
        row.add_account(&folded.account, false, &mut moved_to_irqlens);
        row.finish(compensator.map(|_| folded.adjusted_ns));
        row
    });
    let folded: Vec<Row> = folded.collect();
    // the kernel's bill of a process is that of all its threads
    for (&tid, info) in threads {
        if let (Some(row), Some(runtime)) = (rows.get_mut(&group(tid)), info.runtime_ns) {
            *row.figures.amounts.kernel_ns.get_or_insert(0) += runtime;
        }
    }
    let mut rows: Vec<Row> = rows
        .into_values()
        .map(|mut row| {
            let id = row.figures.id;
            if ledger.irqlens == Some(id) {
                add_into(&mut row.charged_by, &moved_to_irqlens);
                row.figures.amounts.irqlens_ns = total(&moved_to_irqlens);
            }
            row.finish(compensator.map(|_| adjusted.get(&id).copied().unwrap_or(0)));
            row
        })
        .collect();
    let irqlens = ledger
        .irqlens
        .and_then(|pid| rows.iter().position(|row| row.figures.id == pid))
        .map(|at| rows.remove(at));
    rows.sort_by_key(|row| {
        std::cmp::Reverse(
            row.figures
                .amounts
                .charged_ns
                .max(row.figures.amounts.served_ns),
        )
    });
    Table {
        rows,
        irqlens,
        folded,
    }
}

/// Interrupt time on idle CPUs by source, irqlens's own work left out.
pub fn idle_by(ledger: &Ledger) -> BySource {
    let Some(idle) = ledger.threads.get(&IDLE) else {
        return BySource::new();
    };
    let mut by_source = idle.charged.clone();
    take_from(&mut by_source, &idle.for_irqlens);
    by_source
}

/// Takes `part` out of `from`, source by source.
fn take_from(from: &mut BySource, part: &BySource) {
    for (source, &ns) in part {
        if let Some(left) = from.get_mut(source) {
            *left = left.saturating_sub(ns);
            if *left == 0 {
                from.remove(source);
            }
        }
    }
}

/// The `n` rows ranked highest by `key`, leaving out zeros.
pub fn top(rows: &[Row], n: usize, key: impl Fn(&Row) -> u64) -> Vec<&Row> {
    let mut ranked: Vec<&Row> = rows.iter().filter(|row| key(row) > 0).collect();
    ranked.sort_by_key(|row| std::cmp::Reverse(key(row)));
    ranked.truncate(n);
    ranked
}
