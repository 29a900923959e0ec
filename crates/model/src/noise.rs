//! A noise run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::RunCommon;

use crate::hist::HistOptions;
use crate::kernel::Comm;
use crate::sched::Priority;
use crate::units::CpuList;

/// Execution context of an interference; the order is the BPF side's `enum noise_class`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseClass {
    Thread,
    Softirq,
    Irq,
    Nmi,
}

impl NoiseClass {
    pub const ALL: [NoiseClass; 4] = [
        NoiseClass::Thread,
        NoiseClass::Softirq,
        NoiseClass::Irq,
        NoiseClass::Nmi,
    ];

    pub fn from_raw(raw: u16) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            NoiseClass::Thread => "thread",
            NoiseClass::Softirq => "softirq",
            NoiseClass::Irq => "irq",
            NoiseClass::Nmi => "nmi",
        }
    }
}

/// One interference seen by the probe, with its interference-free duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub cpu: u32,
    pub class: NoiseClass,
    pub source: u16,
    pub id: u32,
    pub comm: Comm,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub seq: u64,
}

/// A gap above the threshold between two clock reads of a measurement thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub cpu: u32,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Interference counter read with the clock before and after the gap.
    pub seq_before: u64,
    pub seq_after: u64,
}

impl Sample {
    pub fn interferences(&self) -> u64 {
        self.seq_after.wrapping_sub(self.seq_before)
    }
}

/// Why a measurement thread stopped the run (-s/-S).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopHit {
    /// `samples[index]` is longer than the single-sample limit.
    Single(usize),
    /// The period's total noise passed the limit; the last sample tipped it.
    Total,
}

/// What a measurement thread hands over after each runtime window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PeriodReport {
    pub cpu: u32,
    pub runtime_ns: u64,
    pub noise_ns: u64,
    pub max_single_ns: u64,
    pub samples: Vec<Sample>,
    /// Samples that did not fit in the preallocated buffer (still counted in noise_ns).
    pub dropped_samples: u64,
    /// Counter value at the last clock read: every record up to it has been emitted.
    pub last_seq: u64,
    pub stop: Option<StopHit>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct AnalysisConfig {
    pub bucket_ns: u64,
    pub entries: usize,
    /// Records kept per CPU to show what came before a stop sample.
    pub keep_recent: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NoiseOptions {
    pub cpus: CpuList,
    pub duration: Option<Duration>,
    pub workload: WorkloadConfig,
    pub housekeeping: Option<CpuList>,
    pub analysis: AnalysisConfig,
    /// `noise hist`: the histogram layout; `None` for `noise top`.
    pub hist: Option<HistOptions>,
    /// Rows of the top causes table.
    pub causes: usize,
}

/// What a run leaves besides the analysis: how it went and what irqlens itself cost.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, JsonSchema)]
pub struct NoiseRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    pub clock: String,
    /// CPUs the collector thread ran on; `None` if it had to share the measured ones.
    pub collector_cpus: Option<CpuList>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadConfig {
    pub period: Duration,
    pub runtime: Duration,
    pub threshold: Duration,
    pub stop_single: Option<Duration>,
    pub stop_total: Option<Duration>,
    pub priority: Priority,
    /// Room for samples in one runtime window, allocated before it starts.
    pub max_samples: usize,
}
