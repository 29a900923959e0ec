//! What keeps a ledger's memory bounded however many threads a run sees: at most
//! `ACCOUNTS` thread accounts and `NAMES` thread names.
//!
//! A storm of short-lived processes makes a thread account for each one interrupted. When
//! a ledger holds more than `ACCOUNTS`, it folds accounts until half as many are left: the
//! accounts of threads that had no interrupt time for `GRACE_NS` first (exited, most
//! likely: their accounts cannot grow any more), then the lightest; of equals, the one
//! quiet for longer, then the larger thread id. The order depends on the checkpoints
//! only, so that a replay folds what the live run did. irqlens's threads and
//! the idle task are never folded. A thread folded and interrupted again starts a new
//! account, its earlier part staying folded.
//!
//! A folded account is added to the folded account of its cgroup, so that every
//! workload's sums and every total stay exact; past `FOLDED_CGROUPS` cgroups with folded
//! accounts, the lighter half of those goes to the unknown cgroup's. The compensation's
//! adjustment of a thread folded goes with it (the kept rows keep theirs whole).
//!
//! Names are needed for the accounts kept (their thread's and their process leader's)
//! and for the threads running now; past `NAMES`, the others are forgotten, to be learned
//! again from the thread's next switch or wakeup.

use std::cmp::Reverse;
use std::collections::HashSet;

use super::compensate::Compensator;
use super::{IDLE, Ledger, ThreadAccount, total};
use crate::bounded::{Foldable, TopMap};
use irqlens_model::workload::CgroupId;

/// Thread accounts a ledger keeps; past it, the quiet and the lightest are folded until
/// half as many are left. Each takes a few hundred bytes.
pub const ACCOUNTS: usize = 4096;
/// Thread names (process, comm, cgroup) a ledger keeps; past it, those of no account and
/// no running thread are forgotten.
pub const NAMES: usize = 4 * ACCOUNTS;
/// An account with no interrupt time for this long (ns of the checkpoints' clock) is
/// quiet: folded before any other.
pub const GRACE_NS: u64 = 30_000_000_000;
/// Cgroups with a folded account of their own; past it, the lighter half goes to the
/// unknown cgroup's.
pub const FOLDED_CGROUPS: usize = 256;

/// The accounts folded into one: their sums, how many, and the compensation's
/// adjustments of their threads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoldedAccount {
    /// The accounts added up.
    pub account: ThreadAccount,
    /// Thread accounts folded into it (a thread folded twice counts twice).
    pub threads: u64,
    /// What the compensation moved of their threads' kernel time, ns.
    pub adjusted_ns: i64,
}

impl FoldedAccount {
    fn add(&mut self, account: &ThreadAccount, threads: u64, adjusted_ns: i64) {
        self.account.add(account);
        self.threads += threads;
        self.adjusted_ns += adjusted_ns;
    }
}

impl Foldable for FoldedAccount {
    fn weight(&self) -> u64 {
        weight(&self.account)
    }

    fn fold(&mut self, other: Self) {
        self.add(&other.account, other.threads, other.adjusted_ns);
    }
}

/// The interrupt time an account stands for: what decides which accounts are kept.
fn weight(account: &ThreadAccount) -> u64 {
    total(&account.charged) + total(&account.served)
}

/// The folded accounts of a ledger, by cgroup (those past `FOLDED_CGROUPS`: the unknown
/// cgroup's).
#[derive(Clone, Debug)]
pub struct Folded(TopMap<CgroupId, FoldedAccount>);

impl Default for Folded {
    fn default() -> Self {
        Folded(TopMap::new(FOLDED_CGROUPS))
    }
}

impl Folded {
    /// Folds `account`, of a thread in `cgroup`, with its compensation adjustment.
    pub fn add(&mut self, cgroup: CgroupId, account: &ThreadAccount, adjusted_ns: i64) {
        self.0.entry(cgroup).add(account, 1, adjusted_ns);
    }

    /// Each cgroup's folded account (`CgroupId::UNKNOWN` for the unknown cgroup's and
    /// for those folded past `FOLDED_CGROUPS`; it may come twice).
    pub fn by_cgroup(&self) -> impl Iterator<Item = (CgroupId, &FoldedAccount)> {
        let kept = self.0.iter().map(|(&cgroup, folded)| (cgroup, folded));
        kept.chain(self.0.other().map(|folded| (CgroupId::UNKNOWN, folded)))
    }

    /// Thread accounts folded, all cgroups.
    pub fn threads(&self) -> u64 {
        self.by_cgroup().map(|(_, folded)| folded.threads).sum()
    }

    /// Whether no account was folded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty() && self.0.other().is_none()
    }

    /// Adds a later ledger's folded accounts.
    pub fn absorb(&mut self, later: Folded) {
        self.0.absorb(later.0);
    }
}

impl Ledger {
    /// Whether it (and `compensator`, its compensation) keeps more than its bounds.
    pub(super) fn over_bounds(&self, compensator: Option<&Compensator>) -> bool {
        let adjusted = compensator.map_or(0, Compensator::adjusted_threads);
        self.threads.len() > ACCOUNTS || self.seen.len() > NAMES || adjusted > 2 * ACCOUNTS
    }

    /// Folds accounts if more than `ACCOUNTS` are kept (see the module's doc), with the
    /// compensation's adjustments of their threads; forgets the adjustments of threads
    /// with no account past `2 * ACCOUNTS` adjustments (they show in no row), and the names
    /// no longer needed (but those of the threads `running`) past `NAMES`.
    pub(super) fn fold_excess(
        &mut self,
        mut compensator: Option<&mut Compensator>,
        running: &[u32],
    ) {
        if self.threads.len() > ACCOUNTS {
            self.fold_accounts(compensator.as_deref_mut());
        }
        if let Some(compensator) = compensator.filter(|c| c.adjusted_threads() > 2 * ACCOUNTS) {
            compensator.keep_adjusted(|tid| self.threads.contains_key(&tid));
        }
        if self.seen.len() > NAMES {
            self.forget_names(running);
        }
    }

    fn fold_accounts(&mut self, mut compensator: Option<&mut Compensator>) {
        let quiet_before = self.now_ns.saturating_sub(GRACE_NS);
        let mut order: Vec<(bool, u64, u64, Reverse<u32>)> = self
            .threads
            .iter()
            .filter(|&(&tid, _)| tid != IDLE && !self.is_irqlens(tid))
            .map(|(&tid, account)| {
                let live = account.last_ns > quiet_before;
                (live, weight(account), account.last_ns, Reverse(tid))
            })
            .collect();
        // quiet first, then the lightest; of equals, the one quiet for longer (the
        // account just made, which brought the fold, stays)
        order.sort_unstable();
        let excess = self.threads.len() - ACCOUNTS / 2;
        for (.., Reverse(tid)) in order.into_iter().take(excess) {
            let Some(account) = self.threads.remove(&tid) else {
                continue;
            };
            let adjusted = compensator.as_mut().map_or(0, |c| c.take_adjusted_ns(tid));
            self.folded.add(self.cgroup_of(tid), &account, adjusted);
        }
    }

    /// The cgroup a thread's account folds into: the thread's, else its process's.
    fn cgroup_of(&self, tid: u32) -> CgroupId {
        let seen = self.seen.get(&tid);
        let leader = seen.and_then(|seen| self.seen.get(&seen.tgid));
        [seen, leader]
            .into_iter()
            .flatten()
            .map(|seen| seen.cgroup)
            .find(|id| id.is_known())
            .unwrap_or(CgroupId::UNKNOWN)
    }

    /// Forgets the names of threads that are not `running`, not irqlens's and have no
    /// account kept, nor a thread with one in their process.
    fn forget_names(&mut self, running: &[u32]) {
        let mut needed: HashSet<u32> = running.iter().copied().collect();
        for &tid in self.threads.keys() {
            needed.insert(tid);
            needed.extend(self.seen.get(&tid).map(|seen| seen.tgid));
        }
        let irqlens = self.irqlens;
        self.seen
            .retain(|tid, seen| needed.contains(tid) || irqlens == Some(seen.tgid));
    }
}

#[cfg(test)]
mod tests;
