//! One stretch of an accounting run and what was accounted in it.

use std::collections::HashMap;

use irqlens_model::account::ThreadInfo;

use super::Ledger;
use super::compensate::Compensator;
use crate::loss::Losses;

/// One stretch of the run and what was accounted in it.
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
}

impl Period {
    /// What the checkpoints lost in the period may have cut short.
    pub fn losses(&self) -> Losses {
        Losses::checkpoints(self.lost_events)
    }

    /// Adds a later period's accounting (the kernel's bill is read for the whole run).
    pub fn absorb(&mut self, later: Period) {
        self.ledger.absorb(later.ledger);
        self.lost_events += later.lost_events;
        if let (Some(mine), Some(theirs)) = (self.compensator.as_mut(), later.compensator) {
            mine.absorb(theirs);
        }
    }
}
