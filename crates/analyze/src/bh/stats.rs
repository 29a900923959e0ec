//! The INTSPECT thesis's statistics (§5.3): per series, min, Q0.05, Q0.50, Q0.95 and max
//! over the samples no interrupt landed in, max_IRQ over all of them, and a histogram
//! whose IRQ column holds the others and whose OOB column holds what lies beyond it.
//!
//! Memory does not grow with the samples: per series a linear histogram and quantile
//! recorders (`histogram`), one series per mechanism (quantiles to 0.1%) and per source
//! (to 1%, a seventh of the memory: softirq vectors, the kernel's tasklet and work
//! functions, IRQ threads, as many as the kernel's code has), at most `CAUSES` delay
//! causes per mechanism, and the `worst` slowest samples; per CPU (`CpuBh`), the time each
//! source ran there and the part of the latency each delay cause stands for (at most
//! `CAUSES` causes).

use std::collections::BTreeMap;

use hdrhistogram::Histogram as Quantiles;

use super::{DelayCause, Mechanism, Sample, Source};
use crate::bounded::{Foldable, TopMap};
use crate::histogram::{Distribution, coarse_quantiles, record};
use irqlens_model::bh::{Selection, StatsConfig};
use irqlens_model::workload::CgroupId;

/// Delay causes kept per mechanism: causes name threads (any comm a system runs), so past
/// this many the rarer half is folded into `DelayCause::Other`.
pub const CAUSES: usize = 64;

/// Whether `selection` takes `sample` into the statistics.
fn takes(selection: Selection, sample: &Sample) -> bool {
    match selection {
        Selection::All => true,
        Selection::RaisedBy(tid) => sample.requester == tid,
        Selection::Woke(_) => sample.woke_watched,
    }
}

/// One latency series.
#[derive(Clone, Debug)]
pub struct Series {
    /// All samples, with and without an interrupt in their window.
    pub count: u64,
    /// Samples with an interrupt in their window: the IRQ column.
    pub irq: u64,
    /// Latency of the samples with no interrupt in their window.
    pub latency: Distribution,
    /// max_IRQ: the largest latency of all samples, ns.
    pub max_irq_ns: u64,
    runtime: Quantiles<u64>,
    runtime_max_ns: u64,
}

impl Series {
    /// A mechanism's series: latency quantiles to 0.1%.
    fn new(config: &StatsConfig) -> Self {
        Self::with_latency(Distribution::new(config.bucket_ns, config.entries))
    }

    /// A source's: to 1%.
    fn coarse(config: &StatsConfig) -> Self {
        Self::with_latency(Distribution::coarse(config.bucket_ns, config.entries))
    }

    fn with_latency(latency: Distribution) -> Self {
        Series {
            count: 0,
            irq: 0,
            latency,
            max_irq_ns: 0,
            runtime: coarse_quantiles(),
            runtime_max_ns: 0,
        }
    }

    fn add(&mut self, sample: &Sample) {
        self.count += 1;
        self.max_irq_ns = self.max_irq_ns.max(sample.latency_ns);
        record(&mut self.runtime, sample.runtime_ns);
        self.runtime_max_ns = self.runtime_max_ns.max(sample.runtime_ns);
        if sample.irq_in_window() {
            self.irq += 1;
        } else {
            self.latency.add(sample.latency_ns);
        }
    }

    /// Latency quantile `q` (0..=1) of the samples no interrupt landed in: within 0.1%
    /// for a mechanism, 1% for a source, and never outside the exact min..max.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        self.latency.quantile_ns(q)
    }

    /// The smallest latency of the samples no interrupt landed in; exact, as the linear
    /// histogram keeps it.
    pub fn min_ns(&self) -> Option<u64> {
        self.latency.min_ns()
    }

    /// The largest, likewise.
    pub fn max_ns(&self) -> Option<u64> {
        self.latency.max_ns()
    }

    /// Runtime quantile `q` (0..=1) of all samples, to 1%.
    pub fn runtime_quantile_ns(&self, q: f64) -> Option<u64> {
        (!self.runtime.is_empty())
            .then(|| self.runtime.value_at_quantile(q).min(self.runtime_max_ns))
    }

    /// The longest runtime of all samples, ns.
    pub fn runtime_max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.runtime_max_ns)
    }
}

/// Samples a delay cause was seen in, and their latency (to 1%).
#[derive(Clone, Debug)]
pub struct CauseStats {
    /// Samples it was seen in.
    pub samples: u64,
    latency: Quantiles<u64>,
    max_ns: u64,
}

impl Default for CauseStats {
    fn default() -> Self {
        CauseStats {
            samples: 0,
            latency: coarse_quantiles(),
            max_ns: 0,
        }
    }
}

impl Foldable for CauseStats {
    fn weight(&self) -> u64 {
        self.samples
    }

    fn fold(&mut self, other: Self) {
        self.samples += other.samples;
        self.max_ns = self.max_ns.max(other.max_ns);
        // both record with auto-resize: adding cannot fail
        let _ = self.latency.add(&other.latency);
    }
}

impl CauseStats {
    /// The median latency of those samples, ns.
    pub fn median_ns(&self) -> u64 {
        self.latency.value_at_quantile(0.5).min(self.max_ns)
    }

    /// The largest latency of those samples, ns.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
}

/// The statistics of one mechanism.
#[derive(Clone, Debug)]
pub struct MechanismStats {
    /// Its latency series.
    pub series: Series,
    /// At most `CAUSES`; the folded ones are `DelayCause::Other`.
    pub causes: TopMap<DelayCause, CauseStats>,
    /// The slowest samples, slowest first.
    pub worst: Vec<Sample>,
}

impl MechanismStats {
    /// The delay causes, those seen in the most samples first (ties in cause order), the
    /// folded ones as one.
    pub fn ranked_causes(&self) -> Vec<(&DelayCause, &CauseStats)> {
        let other = self.causes.other().map(|stats| (&DelayCause::Other, stats));
        let mut ranked: Vec<_> = self.causes.iter().chain(other).collect();
        ranked.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0)));
        ranked
    }
}

/// The bottom halves one CPU ran: what they took from it, and what held them up there.
#[derive(Clone, Debug)]
pub struct CpuBh {
    /// Per mechanism and source: samples run on the CPU and their runtime, ns.
    pub runs: BTreeMap<(Mechanism, Source), Runs>,
    /// The latency of the samples run on the CPU, ns.
    pub latency_ns: u64,
    /// Per delay cause, the part of that latency it stands for (`Sample::delay_by_cause`),
    /// ns; at most `CAUSES`, the rarer ones folded into `other`.
    pub delays: TopMap<DelayCause, u64>,
}

impl Default for CpuBh {
    fn default() -> Self {
        CpuBh {
            runs: BTreeMap::new(),
            latency_ns: 0,
            delays: TopMap::new(CAUSES),
        }
    }
}

impl CpuBh {
    fn add(&mut self, sample: &Sample) {
        let runs = self
            .runs
            .entry((sample.mechanism, sample.source))
            .or_default();
        runs.count += 1;
        runs.runtime_ns += sample.runtime_ns;
        self.latency_ns += sample.latency_ns;
        for (cause, ns) in sample.delay_by_cause() {
            *self.delays.entry(cause) += ns;
        }
    }

    /// The delay causes and their time, largest first (ties in cause order), the folded
    /// ones as `DelayCause::Other`.
    pub fn ranked_delays(&self) -> Vec<(DelayCause, u64)> {
        let other = self.delays.other().map(|&ns| (DelayCause::Other, ns));
        let mut ranked: Vec<_> = self
            .delays
            .iter()
            .map(|(c, &ns)| (*c, ns))
            .chain(other)
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// How often a source ran on a CPU, and how long.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Runs {
    /// Samples.
    pub count: u64,
    /// Their runtime, ns.
    pub runtime_ns: u64,
}

/// The statistics of a bottom-half run, per mechanism, per source and per CPU.
#[derive(Clone, Debug)]
pub struct BhStats {
    /// How they are gathered.
    pub config: StatsConfig,
    /// Per mechanism.
    pub mechanisms: BTreeMap<Mechanism, MechanismStats>,
    /// Per source within a mechanism (quantiles to 1%).
    pub sources: BTreeMap<(Mechanism, Source), Series>,
    /// Per CPU that ran them.
    pub cpus: BTreeMap<u32, CpuBh>,
    /// Samples the selection left out (other requesters in active mode).
    pub others: u64,
}

impl BhStats {
    /// No samples yet.
    pub fn new(config: StatsConfig) -> Self {
        BhStats {
            config,
            mechanisms: BTreeMap::new(),
            sources: BTreeMap::new(),
            cpus: BTreeMap::new(),
            others: 0,
        }
    }

    /// Takes a sample, if the selection does.
    pub fn add(&mut self, sample: Sample) {
        if !takes(self.config.selection, &sample) {
            self.others += 1;
            return;
        }
        let config = self.config;
        self.sources
            .entry((sample.mechanism, sample.source))
            .or_insert_with(|| Series::coarse(&config))
            .add(&sample);
        self.cpus.entry(sample.cpu).or_default().add(&sample);
        let mechanism = self
            .mechanisms
            .entry(sample.mechanism)
            .or_insert_with(|| MechanismStats {
                series: Series::new(&config),
                causes: TopMap::new(CAUSES),
                worst: Vec::new(),
            });
        mechanism.series.add(&sample);
        for cause in &sample.delay.causes {
            let stats = mechanism.causes.entry(*cause);
            stats.samples += 1;
            stats.max_ns = stats.max_ns.max(sample.latency_ns);
            record(&mut stats.latency, sample.latency_ns);
        }
        crate::keep_worst(&mut mechanism.worst, sample, config.worst, |s| s.latency_ns);
    }

    /// Samples taken, all mechanisms together.
    pub fn samples(&self) -> u64 {
        self.mechanisms.values().map(|m| m.series.count).sum()
    }

    /// The cgroups of the threads it names (delay causes, and the threads the slowest
    /// samples woke), to be named by their paths; repeats included.
    pub fn thread_cgroups(&self) -> impl Iterator<Item = CgroupId> + '_ {
        self.mechanisms.values().flat_map(|m| {
            let causes = m.causes.keys().filter_map(DelayCause::thread);
            let worst = m.worst.iter().flat_map(|sample| {
                let causes = sample.delay.causes.iter().filter_map(DelayCause::thread);
                causes.chain(sample.woke.threads.iter().map(|&(_, thread)| thread))
            });
            causes
                .chain(worst)
                .map(|thread| thread.cgroup)
                .filter(|cgroup| cgroup.is_known())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bh::{BhWindow, Delay};
    use irqlens_model::workload::NamedThread;

    fn sample(latency_ns: u64, irqs: u32) -> Sample {
        Sample {
            mechanism: Mechanism::Softirq,
            source: Source::Vector(1),
            request_cpu: 0,
            cpu: 0,
            request_ns: 0,
            latency_ns,
            runtime_ns: latency_ns / 2,
            requester: 7,
            executor: 0,
            woke_watched: false,
            woke: Default::default(),
            delay: Delay {
                window: BhWindow {
                    irqs,
                    ..BhWindow::default()
                },
                raised_in_ns: 0,
                causes: vec![if irqs > 0 {
                    DelayCause::Irq { source: 1, id: 236 }
                } else {
                    DelayCause::Undelayed
                }],
            },
        }
    }

    fn config(selection: Selection) -> StatsConfig {
        StatsConfig {
            bucket_ns: 1_000,
            entries: 10,
            selection,
            worst: 3,
        }
    }

    #[test]
    fn quantiles_exclude_irq_samples_and_max_irq_includes_them() {
        let mut stats = BhStats::new(config(Selection::All));
        // 1..=100 µs without interrupts, one 50 ms sample with one
        for us in 1..=100 {
            stats.add(sample(us * 1_000, 0));
        }
        stats.add(sample(50_000_000, 1));
        let series = &stats.mechanisms[&Mechanism::Softirq].series;
        assert_eq!((series.count, series.irq), (101, 1));
        assert_eq!(series.min_ns(), Some(1_000));
        let near = |got: Option<u64>, want: u64| {
            let got = got.unwrap();
            assert!(got.abs_diff(want) <= want / 500, "{got} vs {want}");
        };
        near(series.quantile_ns(0.05), 5_000);
        near(series.quantile_ns(0.50), 50_000);
        near(series.quantile_ns(0.95), 95_000);
        near(series.max_ns(), 100_000);
        assert_eq!(series.max_irq_ns, 50_000_000);
        // the histogram: 10 buckets of 1 µs, samples from 1 µs up; the rest is OOB
        assert_eq!(
            series.latency.histogram.buckets,
            vec![0, 1, 1, 1, 1, 1, 1, 1, 1, 1]
        );
        assert_eq!(series.latency.histogram.overflow, 91);
        assert_eq!(series.latency.histogram.count + series.irq, series.count);
    }

    #[test]
    fn causes_count_samples_and_worst_keeps_the_slowest() {
        let mut stats = BhStats::new(config(Selection::All));
        for (latency, irqs) in [(5_000, 0), (9_000, 1), (2_000, 0), (7_000, 1), (1_000, 0)] {
            stats.add(sample(latency, irqs));
        }
        let softirq = &stats.mechanisms[&Mechanism::Softirq];
        let irq = &softirq.causes[&DelayCause::Irq { source: 1, id: 236 }];
        assert_eq!(irq.samples, 2);
        assert_eq!(irq.max_ns(), 9_000);
        assert_eq!(softirq.causes[&DelayCause::Undelayed].samples, 3);
        let worst: Vec<u64> = softirq.worst.iter().map(|s| s.latency_ns).collect();
        assert_eq!(worst, vec![9_000, 7_000, 5_000]);
    }

    #[test]
    fn causes_named_after_a_hundred_thousand_threads_stay_bounded() {
        let mut stats = BhStats::new(config(Selection::All));
        for n in 0..100_000u32 {
            // each sample delayed by a thread of its own, and by the tick
            let mut delayed = sample(u64::from(n % 1_000) * 1_000, 1);
            let thread = DelayCause::Thread(NamedThread::named(&format!("worker-{n}")));
            delayed.delay.causes.push(thread);
            stats.add(delayed);
        }
        let softirq = &stats.mechanisms[&Mechanism::Softirq];
        assert!(softirq.causes.len() <= CAUSES);
        let ranked = softirq.ranked_causes();
        assert_eq!(ranked[0].0, &DelayCause::Irq { source: 1, id: 236 });
        assert_eq!(ranked[0].1.samples, 100_000);
        let (_, folded) = ranked
            .iter()
            .find(|(cause, _)| **cause == DelayCause::Other)
            .expect("the rare causes, folded");
        let kept_threads = softirq.causes.len() as u64 - 1;
        assert_eq!(folded.samples + kept_threads, 100_000);
        assert_eq!(folded.max_ns(), 999_000);
    }

    #[test]
    fn latency_is_split_among_the_delay_causes_by_what_they_ran() {
        let mut delayed = sample(10_000, 2);
        delayed.delay.window.irq_ns = 3_000;
        delayed.delay.window.softirq_ns = 2_000;
        delayed.delay.causes = vec![
            DelayCause::Irq { source: 0, id: 41 },
            DelayCause::Irq { source: 1, id: 236 },
            DelayCause::SoftirqFirst(7),
            DelayCause::Ksoftirqd,
            DelayCause::Busy(NamedThread::named("spin")),
        ];
        assert_eq!(
            delayed.delay_by_cause(),
            vec![
                (DelayCause::Irq { source: 0, id: 41 }, 1_500),
                (DelayCause::Irq { source: 1, id: 236 }, 1_500),
                (DelayCause::SoftirqFirst(7), 2_000),
                // what the timed causes did not run: 10 - 3 - 2 µs, shared by two
                (DelayCause::Ksoftirqd, 2_500),
                (DelayCause::Busy(NamedThread::named("spin")), 2_500),
            ]
        );
        // an undelayed sample's latency is nobody's
        assert!(sample(4_000, 0).delay_by_cause().is_empty());
    }

    #[test]
    fn each_cpu_keeps_its_runs_and_delays() {
        let mut stats = BhStats::new(config(Selection::All));
        let mut on = |cpu, source, runtime_ns, irq_ns| {
            let mut s = sample(6_000, u32::from(irq_ns > 0));
            (s.cpu, s.source, s.runtime_ns, s.delay.window.irq_ns) =
                (cpu, source, runtime_ns, irq_ns);
            stats.add(s);
        };
        on(1, Source::Vector(3), 40_000, 2_000);
        on(1, Source::Vector(3), 60_000, 4_000);
        on(1, Source::Vector(1), 5_000, 0);
        on(0, Source::Vector(3), 7_000, 0);
        let cpu1 = &stats.cpus[&1];
        let net_rx = cpu1.runs[&(Mechanism::Softirq, Source::Vector(3))];
        assert_eq!((net_rx.count, net_rx.runtime_ns), (2, 100_000));
        assert_eq!(cpu1.runs[&(Mechanism::Softirq, Source::Vector(1))].count, 1);
        assert_eq!(cpu1.latency_ns, 18_000);
        assert_eq!(
            cpu1.ranked_delays(),
            vec![(DelayCause::Irq { source: 1, id: 236 }, 6_000)]
        );
        let cpu0 = &stats.cpus[&0];
        assert_eq!(cpu0.runs.len(), 1);
        assert!(cpu0.ranked_delays().is_empty());
    }

    #[test]
    fn selection_keeps_only_the_stimulus_samples() {
        let mut stats = BhStats::new(config(Selection::RaisedBy(7)));
        stats.add(sample(1_000, 0));
        let mut other = sample(2_000, 0);
        other.requester = 8;
        stats.add(other);
        let mut woke = sample(3_000, 0);
        woke.woke_watched = true;
        let mut by_wake = BhStats::new(config(Selection::Woke(99)));
        by_wake.add(woke);
        by_wake.add(sample(4_000, 0));
        assert_eq!((stats.samples(), stats.others), (1, 1));
        assert_eq!((by_wake.samples(), by_wake.others), (1, 1));
        assert_eq!(
            by_wake.mechanisms[&Mechanism::Softirq].series.max_ns(),
            Some(3_000)
        );
    }
}
