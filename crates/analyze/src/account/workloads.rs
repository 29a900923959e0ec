//! Account's rows per workload (`--by`): the process (or thread) rows of the table added
//! up by the workload their cgroup names, so that a pod's or a unit's interrupt time is
//! seen as the kernel bills it (charged) next to what was done for it (served), and the
//! kernel's error is worked out from the sums. Also `--cgroup`, which keeps the rows of
//! the tasks in some cgroups only.
//!
//! A row's cgroup is its process's (its leader's, else that of the first of its threads
//! the checkpoints named; with `--threads`, the thread's): a process whose threads sit in
//! different cgroups (v2's threaded mode, rare) counts in one of them. `[irqlens]` is no
//! workload's: its row is irqlens's own work, wherever it ran.

use std::collections::BTreeMap;

use super::report::{Row, Table};
use crate::workload::{is_within, short_name, workload_at, workload_key};
use irqlens_model::workload::{CgroupNames, Workload, WorkloadBy};

/// The key and name of the rows whose cgroup is not known (an old recording, a task gone
/// before its cgroup could be read, a cgroup removed before the end of the period).
pub const UNKNOWN: &str = crate::workload::UNNAMED;

/// One workload: its process (or thread) rows added up.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadRow {
    /// What groups its rows (see `workload_key`), `[unknown]` for unknown cgroups.
    pub key: String,
    /// Its name in tables: the path (`--by cgroup`) or the workload's short name.
    pub name: String,
    /// The cgroup path its rows have in common; none for the unknown.
    pub path: Option<String>,
    /// What its path names at the `--by` level; none for the unknown.
    pub workload: Option<Workload>,
    /// How many process (or thread) rows it adds up, the folded ones left out.
    pub tasks: usize,
    /// The sums of its rows, folded ones included (its `figures.id` and `comm` say
    /// nothing; `folded_threads` counts the thread accounts folded into it).
    pub sums: Row,
}

/// Names each row's cgroup path from `names` (a cgroup not among them stays unnamed).
pub fn name_cgroups(table: &mut Table, names: &CgroupNames) {
    let rows = table.rows.iter_mut().chain(&mut table.folded);
    for row in rows.chain(table.irqlens.as_mut()) {
        row.figures.cgroup = row.cgroup.and_then(|id| names.path(id)).map(str::to_owned);
    }
}

/// Keeps the rows of the tasks in the cgroup paths `within` or below them (`[irqlens]`
/// too); rows of an unknown cgroup go. Nothing goes if `within` is empty.
pub fn keep_within(table: &mut Table, within: &[String]) {
    if within.is_empty() {
        return;
    }
    let inside = |row: &Row| {
        row.figures
            .cgroup
            .as_deref()
            .is_some_and(|path| within.iter().any(|ancestor| is_within(path, ancestor)))
    };
    table.rows.retain(inside);
    table.folded.retain(inside);
    table.irqlens = table.irqlens.take().filter(inside);
}

/// The rows of `table` (named by `name_cgroups`) added up per workload at the level `by`,
/// its folded rows too, the largest share of interrupt time first, as the table's rows
/// are.
pub fn workloads(table: &Table, by: WorkloadBy) -> Vec<WorkloadRow> {
    let mut groups: BTreeMap<String, WorkloadRow> = BTreeMap::new();
    for row in table.rows.iter().chain(&table.folded) {
        let path = row.figures.cgroup.as_deref();
        let key = path.map_or_else(|| UNKNOWN.to_owned(), |path| workload_key(path, by));
        let group = groups
            .entry(key.clone())
            .or_insert_with(|| new_workload(key, path, by));
        group.path = group
            .path
            .take()
            .zip(path)
            .map(|(mine, theirs)| common_ancestor(&mine, theirs).to_owned());
        group.tasks += usize::from(!row.is_folded());
        group.sums.add(row);
    }
    let mut rows: Vec<WorkloadRow> = groups
        .into_values()
        .map(|mut group| {
            let adjusted = group.sums.adjusted_ns;
            group.sums.finish(adjusted);
            group
        })
        .collect();
    let share = |row: &WorkloadRow| {
        let amounts = &row.sums.figures.amounts;
        amounts.charged_ns.max(amounts.served_ns)
    };
    rows.sort_by_key(|row| std::cmp::Reverse(share(row)));
    rows
}

fn new_workload(key: String, path: Option<&str>, by: WorkloadBy) -> WorkloadRow {
    let workload = path.map(|path| workload_at(path, by));
    let name = match (path, &workload) {
        (Some(path), _) if by == WorkloadBy::Cgroup => path.to_owned(),
        (_, Some(workload)) => short_name(workload),
        _ => UNKNOWN.to_owned(),
    };
    WorkloadRow {
        key,
        name,
        path: path.map(str::to_owned),
        workload,
        tasks: 0,
        sums: Row::default(),
    }
}

/// The deepest cgroup both paths are in (level by level: `/a/b` and `/a/bc` have `/a`).
fn common_ancestor<'a>(one: &'a str, other: &str) -> &'a str {
    let mut end = 0;
    for (at, _) in one.match_indices('/').chain([(one.len(), "")]) {
        if is_within(other, &one[..at]) && at > 0 {
            end = at;
        } else if at > 0 {
            break;
        }
    }
    if end == 0 { "/" } else { &one[..end] }
}

#[cfg(test)]
mod tests;
