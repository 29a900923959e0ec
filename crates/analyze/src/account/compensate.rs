//! The compensation algorithm of Zhang & West §3.1, run over the recorded stream: the
//! kernel-side fix Zhang & West proposed, to compare with exact per-event attribution.
//!
//! At each clock tick on a CPU, the current process P_i was charged the whole tick,
//! including the m(t) interrupts handled in it. Each process P_k keeps x_k, its count
//! of unaccounted interrupts: +1 for each interrupt handled on its behalf anywhere, and
//! -m(t) at each tick it is charged. Whenever |x_i| >= N(t), the number of interrupts
//! that take one tick, P_i's system time moves by one tick (down when it was
//! over-charged). N(t) is an EWMA (gamma 0.3) of the tick length over the measured cost
//! of one interrupt.
//!
//! Memory: a count per CPU, x_k per thread touched lately (`THREADS`: a thread not
//! served nor charged a tick while half as many others were is forgotten, counted in
//! `forgotten`), and the adjustments of the threads the ledger keeps an account of (those
//! of a thread folded go with its account: see [`super::fold`]).

use std::collections::HashMap;

use super::THREADS;
use crate::bounded::AgedMap;

/// The EWMA weight of the newest N(t), as in Zhang & West's implementation (§4).
pub const GAMMA: f64 = 0.3;

#[derive(Clone, Debug, Default)]
struct TickCounts {
    /// m(t): interrupts handled on this CPU since its last tick.
    interrupts: u64,
    /// Their measured time.
    ns: u64,
}

/// The compensation algorithm's state: N(t), each thread's x_k, and the system time it
/// moved.
#[derive(Clone, Debug)]
pub struct Compensator {
    tick_ns: u64,
    /// The EWMA of N(t); `None` until an interrupt has been measured.
    per_tick: Option<f64>,
    cpus: HashMap<u32, TickCounts>,
    /// x_k by thread.
    unaccounted: AgedMap<u32, i64>,
    /// System time moved, in ticks, by thread.
    adjusted: HashMap<u32, i64>,
}

impl Compensator {
    /// A start with clock ticks `tick_ns` long (1/HZ).
    pub fn new(tick_ns: u64) -> Self {
        Compensator {
            tick_ns: tick_ns.max(1),
            per_tick: None,
            cpus: HashMap::new(),
            unaccounted: AgedMap::new(THREADS),
            adjusted: HashMap::new(),
        }
    }

    /// The length of a clock tick, ns.
    pub fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// Interrupts handled on `cpu`, one per unit served (none: one for no process),
    /// that took `ns` in all.
    pub fn interrupts(&mut self, cpu: u32, units: &[u32], ns: u64) {
        let counts = self.cpus.entry(cpu).or_default();
        counts.interrupts += units.len().max(1) as u64;
        counts.ns += ns;
        for &thread in units.iter().filter(|&&t| t != super::IDLE) {
            *self.unaccounted.get_or_default(thread) += 1;
        }
    }

    /// A clock tick on `cpu`, charged by the kernel to `current`.
    pub fn tick(&mut self, cpu: u32, current: u32) {
        let counts = self.cpus.remove(&cpu).unwrap_or_default();
        if counts.interrupts > 0 && counts.ns > 0 {
            let measured = self.tick_ns as f64 * counts.interrupts as f64 / counts.ns as f64;
            self.per_tick = Some(match self.per_tick {
                Some(average) => (1.0 - GAMMA) * average + GAMMA * measured,
                None => measured,
            });
        }
        // an idle CPU's tick is charged to no process
        if current == super::IDLE {
            return;
        }
        let n = self.interrupts_per_tick();
        let x = self.unaccounted.get_or_default(current);
        *x -= counts.interrupts as i64;
        let Some(n) = n else {
            return;
        };
        // a tick per N(t) interrupts owed, either way (division truncates toward zero)
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let ticks = *x / n;
        if ticks != 0 {
            *x -= ticks * n;
            *self.adjusted.entry(current).or_default() += ticks;
        }
    }

    /// x_k: interrupts handled for the thread and not yet settled (negative: it was
    /// charged for more than it was served).
    pub fn unaccounted(&self, thread: u32) -> i64 {
        self.unaccounted.get(&thread).copied().unwrap_or(0)
    }

    /// Threads whose x_k was forgotten, not touched for long (gone, most likely).
    pub fn forgotten(&self) -> u64 {
        self.unaccounted.evicted()
    }

    /// N(t) now, rounded to the nearest integer as Zhang & West do (§3.1, footnote 2).
    pub fn interrupts_per_tick(&self) -> Option<u64> {
        self.per_tick.map(|n| (n.round() as u64).max(1))
    }

    /// How much the algorithm moved the thread's system time (negative: given back).
    pub fn adjusted_ns(&self, thread: u32) -> i64 {
        self.adjusted.get(&thread).copied().unwrap_or(0) * self.tick_ns as i64
    }

    /// Takes out the thread's adjustment, ns (its account is folded).
    pub fn take_adjusted_ns(&mut self, thread: u32) -> i64 {
        self.adjusted.remove(&thread).unwrap_or(0) * self.tick_ns as i64
    }

    /// Threads with an adjustment.
    pub fn adjusted_threads(&self) -> usize {
        self.adjusted.len()
    }

    /// Keeps the adjustments of the threads `keep` says yes to.
    pub fn keep_adjusted(&mut self, keep: impl Fn(u32) -> bool) {
        self.adjusted.retain(|&thread, _| keep(thread));
    }

    /// Adds a later period's adjustments, and takes its N(t).
    pub fn absorb(&mut self, later: Compensator) {
        for (thread, ticks) in later.adjusted {
            *self.adjusted.entry(thread).or_default() += ticks;
        }
        self.per_tick = later.per_tick;
    }

    /// The adjustments so far and N(t), handed out; the counters (x_k) carry on here.
    pub fn take_adjustments(&mut self) -> Compensator {
        let mut period = Compensator::new(self.tick_ns);
        period.per_tick = self.per_tick;
        std::mem::swap(&mut period.adjusted, &mut self.adjusted);
        period
    }
}
