//! One stretch of an accounting run and what was accounted in it.

use std::collections::{BTreeSet, HashMap};

use irqlens_model::account::ThreadInfo;
use irqlens_model::workload::{CgroupId, CgroupNames};

use super::Ledger;
use super::compensate::Compensator;
use crate::loss::Losses;

/// One stretch of the run and what was accounted in it.
#[derive(Clone)]
pub struct Period {
    /// Since the start of the run.
    pub start_ns: u64,
    /// Its length, ns.
    pub elapsed_ns: u64,
    /// What was attributed in it.
    pub ledger: Ledger,
    /// The compensation algorithm's adjustments in it, and N(t) at its end.
    pub compensator: Option<Compensator>,
    /// What the kernel accounted to each thread in the period.
    pub threads: HashMap<u32, ThreadInfo>,
    /// Checkpoints the probe lost in the period.
    pub lost_events: u64,
    /// The paths of the cgroups its tasks were in, as far as known (a live run reads
    /// them at the period's end, a replay from the recording's end line).
    pub cgroups: CgroupNames,
}

impl Period {
    /// What the checkpoints lost in the period may have cut short.
    pub fn losses(&self) -> Losses {
        Losses::checkpoints(self.lost_events)
    }

    /// The cgroups its tasks were in: as the checkpoints named them, and as /proc did.
    pub fn cgroup_ids(&self) -> impl Iterator<Item = CgroupId> + '_ {
        let read = self.threads.values().filter_map(|info| info.cgroup);
        let read = read.filter(|id| id.is_known());
        self.ledger.cgroup_ids().chain(read)
    }

    /// Names the cgroups its tasks were in with `path_of` (those it knows a path of).
    pub fn name_cgroups(&mut self, mut path_of: impl FnMut(CgroupId) -> Option<String>) {
        let ids: BTreeSet<CgroupId> = self.cgroup_ids().collect();
        for id in ids {
            if let Some(path) = path_of(id) {
                self.cgroups.insert(id, path);
            }
        }
    }

    /// Adds a later period's accounting (the kernel's bill is read for the whole run).
    pub fn absorb(&mut self, later: Period) {
        if let (Some(mine), Some(theirs)) = (self.compensator.as_mut(), later.compensator) {
            mine.absorb(theirs);
        }
        // the accounts the whole run folds take their adjustments along
        self.ledger
            .absorb_with(later.ledger, self.compensator.as_mut());
        self.lost_events += later.lost_events;
        self.cgroups.paths.extend(later.cgroups.paths);
        // the names of the cgroups its accounts are in, no more: a run of any length (the
        // agent's) would keep every cgroup that ever ran
        let named: BTreeSet<CgroupId> = self.cgroup_ids().collect();
        self.cgroups.paths.retain(|id, _| named.contains(id));
    }
}
