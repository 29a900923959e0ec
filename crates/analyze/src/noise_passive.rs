//! Passive noise: the interference each CPU serves (NMIs, hardirqs, softirqs), summed per
//! CPU and cause from the noise probe's records, with no measurement thread on the CPU.
//!
//! Without a measurement thread there is nothing for a thread to interfere with: another
//! thread's time is the CPU's own work, so threads are not interference here (the probe
//! does not trace them in this mode, and a thread record is left out). Each record counts
//! its interference-free time, as in a noise run: a softirq that an IRQ interrupted is
//! charged without the IRQ's time, which is the IRQ's.

use std::collections::BTreeMap;

use irqlens_model::noise::{NoiseClass, Record};

use crate::noise::{Cause, CauseStats};

/// Causes kept per CPU; those past it are summed as [`PassiveCause::Other`]. A CPU sees
/// its own IRQ lines, the local vectors and ten softirqs: a few dozen at most, unless a
/// device spreads hundreds of queues over it.
pub const MAX_CAUSES_PER_CPU: usize = 64;

/// Whom a CPU's interference is charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PassiveCause {
    /// An NMI, a hardirq (line or vector) or a softirq vector.
    Cause(Cause),
    /// The causes of a CPU past its first [`MAX_CAUSES_PER_CPU`].
    Other,
}

/// The interference of each CPU watched, per cause, since the start.
#[derive(Clone, Debug, Default)]
pub struct PassiveNoise {
    cpus: BTreeMap<u32, BTreeMap<PassiveCause, CauseStats>>,
}

impl PassiveNoise {
    /// Nothing seen yet on `cpus` (each has its series from the start, at zero).
    pub fn new(cpus: impl IntoIterator<Item = u32>) -> Self {
        PassiveNoise {
            cpus: cpus.into_iter().map(|cpu| (cpu, BTreeMap::new())).collect(),
        }
    }

    /// Adds records in any order; those of CPUs not watched, and threads, are left out.
    pub fn add_records(&mut self, records: impl IntoIterator<Item = Record>) {
        for record in records {
            if record.class == NoiseClass::Thread {
                continue;
            }
            let Some(causes) = self.cpus.get_mut(&record.cpu) else {
                continue;
            };
            let cause = PassiveCause::Cause(Cause::of(&record));
            // a cause seen before keeps its row; a new one past the bound is Other's
            let key = match causes.contains_key(&cause) || causes.len() < MAX_CAUSES_PER_CPU {
                true => cause,
                false => PassiveCause::Other,
            };
            causes.entry(key).or_default().add(record.duration_ns);
        }
    }

    /// Each CPU watched, with its causes so far.
    pub fn cpus(&self) -> impl Iterator<Item = (u32, &BTreeMap<PassiveCause, CauseStats>)> {
        self.cpus.iter().map(|(cpu, causes)| (*cpu, causes))
    }

    /// A CPU's interference per class (`nmi`, `irq`, `softirq`, and `other`), ns.
    pub fn class_totals(&self, cpu: u32) -> BTreeMap<&'static str, u64> {
        let mut totals = BTreeMap::new();
        for (cause, stats) in self.cpus.get(&cpu).into_iter().flatten() {
            *totals.entry(cause.class_name()).or_default() += stats.total_ns;
        }
        totals
    }
}

impl PassiveCause {
    /// Its class as the noise report names it (`nmi`, `irq`, `softirq`), or `other`.
    pub fn class_name(&self) -> &'static str {
        match self {
            PassiveCause::Cause(cause) => cause.class_name(),
            PassiveCause::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_test_support::stream::interference as record;

    fn stats(noise: &PassiveNoise, cpu: u32, cause: PassiveCause) -> Option<CauseStats> {
        let (_, causes) = noise.cpus().find(|(c, _)| *c == cpu)?;
        causes.get(&cause).copied()
    }

    #[test]
    fn interference_is_summed_per_cpu_and_cause() {
        let mut noise = PassiveNoise::new([0, 1]);
        noise.add_records([
            record(0, NoiseClass::Irq, 11, 3_000),
            record(0, NoiseClass::Irq, 11, 5_000),
            record(0, NoiseClass::Softirq, 3, 7_000),
            record(1, NoiseClass::Irq, 11, 2_000),
            record(1, NoiseClass::Nmi, 0, 1_000),
        ]);
        let irq11 = PassiveCause::Cause(Cause::Irq { source: 0, id: 11 });
        let on_0 = stats(&noise, 0, irq11).unwrap();
        assert_eq!((on_0.count, on_0.total_ns, on_0.max_ns), (2, 8_000, 5_000));
        let net_rx = stats(&noise, 0, PassiveCause::Cause(Cause::Softirq(3))).unwrap();
        assert_eq!((net_rx.count, net_rx.total_ns), (1, 7_000));
        assert_eq!(stats(&noise, 1, irq11).unwrap().total_ns, 2_000);
        let totals = noise.class_totals(1);
        assert_eq!(totals, BTreeMap::from([("irq", 2_000), ("nmi", 1_000)]));
    }

    #[test]
    fn threads_and_cpus_not_watched_are_left_out() {
        let mut noise = PassiveNoise::new([0]);
        noise.add_records([
            record(0, NoiseClass::Thread, 42, 9_000),
            record(5, NoiseClass::Irq, 11, 9_000),
        ]);
        let (cpus, causes): (Vec<u32>, Vec<usize>) = noise
            .cpus()
            .map(|(cpu, causes)| (cpu, causes.len()))
            .unzip();
        // the watched CPU has its (empty) row from the start; CPU 5 has none
        assert_eq!((cpus, causes), (vec![0], vec![0]));
    }

    #[test]
    fn causes_past_the_bound_are_summed_as_other_and_known_ones_keep_their_rows() {
        let mut noise = PassiveNoise::new([0]);
        let lines = MAX_CAUSES_PER_CPU as u32 + 10;
        noise.add_records((0..lines).map(|line| record(0, NoiseClass::Irq, line, 100)));
        // the first line again, after the bound was reached: still its own row
        noise.add_records([record(0, NoiseClass::Irq, 0, 100)]);
        let (_, causes) = noise.cpus().next().unwrap();
        assert_eq!(causes.len(), MAX_CAUSES_PER_CPU + 1);
        let other = causes[&PassiveCause::Other];
        assert_eq!((other.count, other.total_ns), (10, 1_000));
        let first = PassiveCause::Cause(Cause::Irq { source: 0, id: 0 });
        assert_eq!(causes[&first].count, 2);
        // every ns is charged once
        let total: u64 = noise.class_totals(0).values().sum();
        assert_eq!(total, (lines as u64 + 1) * 100);
    }
}
