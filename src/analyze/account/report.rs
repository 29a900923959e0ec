//! The accounting table: the ledger next to the kernel's own bill, per process or thread.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::compensate::Compensator;
use super::{BySource, Ledger, Source, ThreadAccount, add_into, total};

/// What /proc told of a thread.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadInfo {
    pub tgid: u32,
    pub comm: String,
    /// CPU time the kernel accounted to it during the run (schedstat's sum_exec_runtime
    /// at the end minus at the start), if it lived through both readings.
    pub runtime_ns: Option<u64>,
}

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
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    /// Pid, or tid with --threads.
    pub id: u32,
    pub comm: String,
    /// t: what the kernel accounted (interrupts included: no IRQ_TIME_ACCOUNTING).
    pub kernel_ns: Option<u64>,
    pub charged_ns: u64,
    pub served_ns: u64,
    /// Deliveries and wakeups it was served.
    pub units: u64,
    /// t_o = t - charged + served.
    pub corrected_ns: Option<u64>,
    /// The kernel's accounting error (t - t_o) / t_o.
    pub error: Option<f64>,
    /// t after the compensation algorithm of §3.1 (with --compensate).
    pub compensated_ns: Option<u64>,
    /// Its error against t_o.
    pub compensated_error: Option<f64>,
    #[serde(skip)]
    pub charged_by: BySource,
    #[serde(skip)]
    pub served_by: BySource,
}

impl Row {
    fn new(id: u32, comm: String) -> Self {
        Row {
            id,
            comm,
            ..Default::default()
        }
    }

    fn finish(&mut self, adjusted_ns: Option<i64>) {
        self.charged_ns = total(&self.charged_by);
        self.served_ns = total(&self.served_by);
        let Some(kernel) = self.kernel_ns else {
            return;
        };
        let corrected = (kernel + self.served_ns).saturating_sub(self.charged_ns);
        self.corrected_ns = Some(corrected);
        self.error = relative_error(kernel, corrected);
        if let Some(adjusted) = adjusted_ns {
            let compensated = (kernel as i64 + adjusted).max(0) as u64;
            self.compensated_ns = Some(compensated);
            self.compensated_error = relative_error(compensated, corrected);
        }
    }
}

/// (t - t_o) / t_o; none for t_o = 0.
pub fn relative_error(t: u64, t_o: u64) -> Option<f64> {
    (t_o > 0).then(|| (t as f64 - t_o as f64) / t_o as f64)
}

/// Totals of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub hardirq_ns: u64,
    pub softirq_ns: u64,
    pub nmi_ns: u64,
    /// Interrupt time on idle CPUs (charged to no process).
    pub idle_ns: u64,
    pub served_ns: u64,
    pub orphan_ns: u64,
}

impl Totals {
    pub fn interrupt_ns(&self) -> u64 {
        self.hardirq_ns + self.softirq_ns + self.nmi_ns
    }
}

pub fn totals(ledger: &Ledger) -> Totals {
    let mut totals = Totals {
        orphan_ns: total(&ledger.orphan),
        ..Totals::default()
    };
    totals.idle_ns = total(&ledger.idle);
    let folded = ledger.threads.other();
    let charged = ledger.threads.values().chain(folded).map(|a| &a.charged);
    for (source, &ns) in charged.chain([&ledger.idle]).flatten() {
        match source {
            Source::Hardirq { .. } => totals.hardirq_ns += ns,
            Source::Softirq { .. } => totals.softirq_ns += ns,
            Source::Nmi => totals.nmi_ns += ns,
        }
    }
    let served = ledger
        .threads
        .values()
        .chain(folded)
        .map(|a| total(&a.served));
    totals.served_ns = served.sum();
    totals
}

/// Rows for every process (or thread, `by_thread`) that was charged or served,
/// largest share of interrupt time first.
pub fn rows(
    ledger: &Ledger,
    threads: &HashMap<u32, ThreadInfo>,
    compensator: Option<&Compensator>,
    by_thread: bool,
) -> Vec<Row> {
    let named = |tid: u32| ledger.threads.get(&tid).and_then(|account| account.name);
    let group = |tid: u32| -> u32 {
        if by_thread {
            return tid;
        }
        threads
            .get(&tid)
            .map(|info| info.tgid)
            .or_else(|| named(tid).map(|(tgid, _)| tgid))
            .filter(|&tgid| tgid != 0)
            .unwrap_or(tid)
    };
    // a process is named after its main thread, or else after the thread at hand
    let name = |id: u32, thread: &ThreadAccount| -> String {
        threads
            .get(&id)
            .map(|info| info.comm.clone())
            .or_else(|| named(id).or(thread.name).map(|(_, comm)| comm.to_string()))
            .unwrap_or_else(|| "?".into())
    };
    let mut rows: BTreeMap<u32, Row> = BTreeMap::new();
    let mut adjusted: BTreeMap<u32, i64> = BTreeMap::new();
    for (&tid, account) in ledger.threads.iter() {
        let id = group(tid);
        let row = rows
            .entry(id)
            .or_insert_with(|| Row::new(id, name(id, account)));
        add_into(&mut row.charged_by, &account.charged);
        add_into(&mut row.served_by, &account.served);
        row.units += account.units;
        if let Some(compensator) = compensator {
            *adjusted.entry(id).or_default() += compensator.adjusted_ns(tid);
        }
    }
    // the kernel's bill of a process is that of all its threads
    for (&tid, info) in threads {
        if let (Some(row), Some(runtime)) = (rows.get_mut(&group(tid)), info.runtime_ns) {
            *row.kernel_ns.get_or_insert(0) += runtime;
        }
    }
    let mut rows: Vec<Row> = rows
        .into_values()
        .map(|mut row| {
            row.finish(compensator.map(|_| adjusted.get(&row.id).copied().unwrap_or(0)));
            row
        })
        .collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.charged_ns.max(row.served_ns)));
    rows
}

/// The `n` rows ranked highest by `key`, leaving out zeros.
pub fn top(rows: &[Row], n: usize, key: impl Fn(&Row) -> u64) -> Vec<&Row> {
    let mut ranked: Vec<&Row> = rows.iter().filter(|row| key(row) > 0).collect();
    ranked.sort_by_key(|row| std::cmp::Reverse(key(row)));
    ranked.truncate(n);
    ranked
}
