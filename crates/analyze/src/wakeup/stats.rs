//! What the wakeup samples add up to: per CPU and component, min/avg/max, quantiles and
//! a histogram; per cause, how often and how long; the worst samples whole; and the
//! sample that hit a stop threshold.
//!
//! Memory does not grow with the samples: a distribution per CPU and component, at most
//! `CAUSES` causes, `INTERPOSED` interposed thread names and `THREADS` woken threads
//! (the rest folded), a count per origin (IRQ lines and vectors) and per number of
//! context switches (at most the timeline's history of switches), and the `worst`
//! samples.

use std::collections::BTreeMap;

use super::{Cause, Component, Origin, Sample};
use crate::bounded::{Foldable, TopMap};
use crate::histogram::Distribution;
use crate::keep_worst;
use irqlens_model::kernel::Comm;
use irqlens_model::wakeup::{Report, StatsConfig};
use irqlens_model::workload::CgroupId;

/// The latency of one CPU's tasks.
#[derive(Clone, Debug)]
pub struct CpuStats {
    /// Every activation (timer mode: as the threads reported them) or wakeup.
    pub activations: u64,
    /// Those decomposed from the trace.
    pub samples: u64,
    /// A distribution per component.
    pub components: BTreeMap<Component, Distribution>,
    /// Time per cause of this CPU's samples (at most `CAUSES`, the rest folded).
    pub causes: TopMap<Cause, CauseStats>,
}

impl Default for CpuStats {
    fn default() -> Self {
        CpuStats {
            activations: 0,
            samples: 0,
            components: BTreeMap::new(),
            causes: TopMap::new(CAUSES),
        }
    }
}

impl CpuStats {
    /// This CPU's causes by time spent, largest first, the folded ones as one.
    pub fn ranked_causes(&self) -> Vec<(Cause, CauseStats)> {
        ranked(&self.causes)
    }

    /// The distribution of `component`, if any sample had it.
    pub fn series(&self, component: Component) -> Option<&Distribution> {
        self.components.get(&component)
    }

    fn record(&mut self, config: &StatsConfig, component: Component, value: u64) {
        self.components
            .entry(component)
            .or_insert_with(|| Distribution::new(config.bucket_ns, config.entries))
            .add(value);
    }
}

/// Causes kept: causes name threads (any comm a system runs), so past this many the half
/// with the least time is folded into `Cause::Other`.
pub const CAUSES: usize = 256;
/// Interposed thread names kept (kworkers come and go under new names), the rest folded.
pub const INTERPOSED: usize = 64;
/// Woken threads kept (task mode follows every thread of a process or name), the rest
/// folded.
pub const THREADS: usize = 256;

/// One cause over all samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CauseStats {
    /// Samples it took time in.
    pub samples: u64,
    /// Its time over all of them, ns.
    pub total_ns: u64,
    /// Its largest time in one sample, ns.
    pub max_ns: u64,
}

impl Foldable for CauseStats {
    fn weight(&self) -> u64 {
        self.total_ns
    }

    fn fold(&mut self, other: Self) {
        self.samples += other.samples;
        self.total_ns += other.total_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

/// The samples of one woken thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ThreadStats {
    /// Its name.
    pub comm: Comm,
    /// Its cgroup v2 id.
    pub cgroup: CgroupId,
    /// Its samples.
    pub samples: u64,
    /// Its largest latency, ns.
    pub max_ns: u64,
}

impl Foldable for ThreadStats {
    fn weight(&self) -> u64 {
        self.samples
    }

    fn fold(&mut self, other: Self) {
        self.samples += other.samples;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

/// `causes` by time spent, largest first, the folded ones as one.
fn ranked(causes: &TopMap<Cause, CauseStats>) -> Vec<(Cause, CauseStats)> {
    let other = causes.other().map(|stats| (&Cause::Other, stats));
    let mut ranked: Vec<(Cause, CauseStats)> =
        causes.iter().chain(other).map(|(c, s)| (*c, *s)).collect();
    ranked.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
    ranked
}

/// The sample (or, untraced, the report) a stop threshold caught.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// A decomposed sample.
    Sample(Box<Sample>),
    /// Timer mode: an activation no traced wakeup explained.
    Untraced(Report),
}

/// The statistics of a wakeup run.
#[derive(Clone, Debug)]
pub struct WakeupStats {
    /// How they are gathered.
    pub config: StatsConfig,
    /// Per CPU the task ran on.
    pub cpus: BTreeMap<u32, CpuStats>,
    /// Time per cause, over all samples (at most `CAUSES`, the rest folded).
    pub causes: TopMap<Cause, CauseStats>,
    /// Samples per origin.
    pub origins: BTreeMap<Origin, u64>,
    /// Samples by the number of context switches from the interrupt to the task.
    pub switches: BTreeMap<u32, u64>,
    /// Samples per interposed thread name (at most `INTERPOSED`, the rest folded).
    pub interposed: TopMap<Comm, u64>,
    /// Samples per woken thread (task mode watches several).
    pub threads: TopMap<u32, ThreadStats>,
    /// Sum of the decomposed samples' totals: what cause shares are shares of.
    pub latency_ns: u64,
    /// Worst first.
    pub worst: Vec<Sample>,
    /// What hit a stop threshold, if anything did.
    pub stop: Option<Stop>,
}

impl WakeupStats {
    /// No samples yet.
    pub fn new(config: StatsConfig) -> Self {
        WakeupStats {
            config,
            cpus: BTreeMap::new(),
            causes: TopMap::new(CAUSES),
            origins: BTreeMap::new(),
            switches: BTreeMap::new(),
            interposed: TopMap::new(INTERPOSED),
            threads: TopMap::new(THREADS),
            latency_ns: 0,
            worst: Vec::new(),
            stop: None,
        }
    }

    /// Takes a decomposed sample.
    pub fn add(&mut self, sample: Sample) {
        let config = self.config;
        let cpu = self.cpus.entry(sample.cpu).or_default();
        cpu.activations += 1;
        cpu.samples += 1;
        for component in Component::ALL {
            if let Some(value) = sample.component(component) {
                cpu.record(&config, component, value);
            }
        }
        for &(cause, ns) in &sample.causes {
            for stats in [self.causes.entry(cause), cpu.causes.entry(cause)] {
                stats.samples += 1;
                stats.total_ns += ns;
                stats.max_ns = stats.max_ns.max(ns);
            }
        }
        *self.origins.entry(sample.origin).or_default() += 1;
        *self.switches.entry(sample.switches).or_default() += 1;
        for thread in &sample.interposed {
            *self.interposed.entry(thread.comm) += 1;
        }
        let thread = self.threads.entry(sample.tid);
        thread.comm = sample.comm;
        thread.cgroup = sample.cgroup;
        thread.samples += 1;
        thread.max_ns = thread.max_ns.max(sample.total_ns());
        self.latency_ns += sample.total_ns();
        if self.stop.is_none()
            && self.hits_stop(
                sample.component(Component::Total),
                sample.component(Component::Irq),
            )
        {
            self.stop = Some(Stop::Sample(Box::new(sample.clone())));
        }
        keep_worst(&mut self.worst, sample, self.config.worst, Sample::total_ns);
    }

    /// Timer mode: an activation no traced wakeup explained; only its total is known.
    pub fn add_total_only(&mut self, report: &Report) {
        let config = self.config;
        let cpu = self.cpus.entry(report.cpu).or_default();
        cpu.activations += 1;
        cpu.record(&config, Component::Total, report.total_ns());
        if self.stop.is_none() && self.hits_stop(Some(report.total_ns()), None) {
            self.stop = Some(Stop::Untraced(*report));
        }
    }

    /// Activations (or wakeups), all CPUs together.
    pub fn activations(&self) -> u64 {
        self.cpus.values().map(|c| c.activations).sum()
    }

    /// Decomposed samples, all CPUs together.
    pub fn samples(&self) -> u64 {
        self.cpus.values().map(|c| c.samples).sum()
    }

    /// Causes by time spent, largest first, the folded ones as one.
    pub fn ranked_causes(&self) -> Vec<(Cause, CauseStats)> {
        ranked(&self.causes)
    }

    /// The cgroups of the threads it names (woken threads, thread causes, and the
    /// threads of the samples it keeps), to be named by their paths; repeats included.
    pub fn thread_cgroups(&self) -> impl Iterator<Item = CgroupId> + '_ {
        let stopped = match &self.stop {
            Some(Stop::Sample(sample)) => Some(sample.as_ref()),
            _ => None,
        };
        let samples = self.worst.iter().chain(stopped).flat_map(|sample| {
            let causes = sample.causes.iter().filter_map(|(cause, _)| cause.thread());
            let chain = sample
                .interposed
                .iter()
                .copied()
                .chain(causes)
                .map(|t| t.cgroup);
            std::iter::once(sample.cgroup).chain(chain)
        });
        let causes = self.causes.keys().filter_map(Cause::thread);
        self.threads
            .values()
            .map(|thread| thread.cgroup)
            .chain(causes.map(|thread| thread.cgroup))
            .chain(samples)
            .filter(|cgroup| cgroup.is_known())
    }

    /// Whether a total or timer IRQ latency (None: not known) reaches its stop threshold.
    fn hits_stop(&self, total: Option<u64>, irq: Option<u64>) -> bool {
        let over = |limit: Option<u64>, value: Option<u64>| {
            limit
                .zip(value)
                .is_some_and(|(limit, value)| value >= limit)
        };
        over(self.config.stop_total_ns, total) || over(self.config.stop_irq_ns, irq)
    }
}
