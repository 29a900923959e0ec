//! A noise run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{
    Check, Checked, MAX_KEEP_RECENT, MAX_SAMPLES_PER_WINDOW, check_buckets, check_cpus,
    check_optional_time, check_rows, within,
};
use crate::run::RunCommon;

use crate::hist::HistOptions;
use crate::kernel::Comm;
use crate::sched::Priority;
use crate::units::CpuList;
use crate::workload::{CgroupId, WorkloadBy};

/// Execution context of an interference; the order is the BPF side's `enum noise_class`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum NoiseClass {
    /// Another thread ran.
    Thread,
    /// A softirq ran.
    Softirq,
    /// A hardirq ran (device line or local vector).
    Irq,
    /// An NMI ran.
    Nmi,
}

impl NoiseClass {
    /// Every class, in the BPF side's order.
    pub const ALL: [NoiseClass; 4] = [
        NoiseClass::Thread,
        NoiseClass::Softirq,
        NoiseClass::Irq,
        NoiseClass::Nmi,
    ];

    /// The class of a raw `enum noise_class`; `None` if this build does not know it.
    pub fn from_raw(raw: u16) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }

    /// `thread`, `softirq`, `irq`, `nmi`.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Record {
    /// The measured CPU it ran on.
    pub cpu: u32,
    /// Its execution context.
    pub class: NoiseClass,
    /// Irq class: what raised it (`enum irq_source`, see
    /// [`IRQ_SOURCE_NAMES`](crate::kernel::IRQ_SOURCE_NAMES)); 0 otherwise.
    pub source: u16,
    /// IRQ line or vector, softirq vector, or thread id, by class.
    pub id: u32,
    /// Thread class: the thread's name; empty otherwise.
    #[schemars(with = "String")]
    pub comm: Comm,
    /// CLOCK_MONOTONIC ns at its entry.
    pub start_ns: u64,
    /// Interference-free duration (nested contexts subtracted), ns.
    pub duration_ns: u64,
    /// The value of the CPU's interference counter its entry produced.
    pub seq: u64,
    /// Thread class: the thread's cgroup v2 id; unknown otherwise (and in recordings
    /// older than the field).
    #[serde(default, skip_serializing_if = "is_unknown_cgroup")]
    pub cgroup: CgroupId,
}

fn is_unknown_cgroup(id: &CgroupId) -> bool {
    !id.is_known()
}

/// A gap above the threshold between two clock reads of a measurement thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    /// The measured CPU.
    pub cpu: u32,
    /// The clock read before the gap, as CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// The gap, ns.
    pub duration_ns: u64,
    /// Interference counter read with the clock before the gap.
    pub seq_before: u64,
    /// Interference counter read with the clock after the gap.
    pub seq_after: u64,
}

impl Sample {
    /// Interferences that began inside the gap; 0 is hardware noise.
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
    /// The measured CPU.
    pub cpu: u32,
    /// Length of the window (noise included), ns.
    pub runtime_ns: u64,
    /// Sum of its samples (dropped ones included), ns.
    pub noise_ns: u64,
    /// Its longest sample, ns.
    pub max_single_ns: u64,
    /// Its samples, in order.
    pub samples: Vec<Sample>,
    /// Samples that did not fit in the preallocated buffer (still counted in noise_ns).
    pub dropped_samples: u64,
    /// Counter value at the last clock read: every record up to it has been emitted.
    pub last_seq: u64,
    /// Set if this window hit a stop limit.
    pub stop: Option<StopHit>,
}

/// How the noise analysis summarizes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisConfig {
    /// Histogram bucket size, ns.
    pub bucket_ns: u64,
    /// Number of histogram buckets.
    pub entries: usize,
    /// Records kept per CPU to show what came before a stop sample.
    pub keep_recent: usize,
}

/// What `irqlens noise` measures, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseOptions {
    /// CPUs measured, one measurement thread each.
    pub cpus: CpuList,
    /// How long to run; `None`: until Ctrl-C or a stop limit.
    pub duration: Option<Duration>,
    /// How long the run goes before it measures (`--warm-up`): what happens meanwhile
    /// is discarded, and `duration` counts from its end.
    #[serde(default)]
    pub warm_up: Option<Duration>,
    /// The measurement threads' settings.
    pub workload: WorkloadConfig,
    /// CPUs for irqlens's collector thread (-H); `None`: the CPUs not measured.
    pub housekeeping: Option<CpuList>,
    /// How the results are summarized.
    pub analysis: AnalysisConfig,
    /// `noise hist`: the histogram layout; `None` for `noise top`.
    pub hist: Option<HistOptions>,
    /// Rows of the top causes table.
    pub causes: usize,
    /// Also the thread causes per workload (`--by`).
    #[serde(default)]
    pub by: Option<WorkloadBy>,
}

/// What a run leaves besides the analysis: how it went and what irqlens itself cost.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, JsonSchema)]
pub struct NoiseRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    /// The clock the measurement threads read.
    pub clock: String,
    /// CPUs the collector thread ran on; `None` if it had to share the measured ones.
    pub collector_cpus: Option<CpuList>,
}

/// A measurement thread's settings (osnoise's parameters).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadConfig {
    /// A runtime window starts every this long.
    pub period: Duration,
    /// How long the thread reads the clock in each period.
    pub runtime: Duration,
    /// The smallest gap between two clock reads that is a noise sample.
    pub threshold: Duration,
    /// Stop the run at a single sample longer than this (-s).
    pub stop_single: Option<Duration>,
    /// Stop the run when a window's total noise passes this (-S).
    pub stop_total: Option<Duration>,
    /// The thread's scheduling policy and priority.
    pub priority: Priority,
    /// Room for samples in one runtime window, allocated before it starts.
    pub max_samples: usize,
}

/// `irqlens noise`'s period unless told otherwise (`-p`), as its `--help` shows it.
pub const DEFAULT_PERIOD_TEXT: &str = "1s";
/// [`DEFAULT_PERIOD_TEXT`]: rtla osnoise's.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(1);
/// The runtime per period unless told otherwise (`-r`), as `--help` shows it.
pub const DEFAULT_RUNTIME_TEXT: &str = "1s";
/// [`DEFAULT_RUNTIME_TEXT`]: the whole period, as rtla osnoise's.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(1);
/// osnoise's default threshold (`-T`).
pub const DEFAULT_THRESHOLD: Duration = Duration::from_micros(5);
/// The threshold of `-a` (rtla sets `-T 1`).
pub const AUTO_THRESHOLD: Duration = Duration::from_micros(1);
/// The measurement threads' scheduling unless told otherwise (`-P`).
pub const DEFAULT_PRIORITY: Priority = Priority::Other { nice: 0 };
/// Rows of the top causes table unless told otherwise (`--causes`).
pub const DEFAULT_CAUSES: usize = 15;
/// Samples one measurement thread can keep per runtime window.
pub const SAMPLES_PER_WINDOW: usize = 1 << 16;
/// Records kept per CPU to show what came before a stop sample.
pub const STOP_CONTEXT_RECORDS: usize = 10;

impl NoiseOptions {
    /// `irqlens noise -c CPUS` with no other option: until Ctrl-C, `noise top`.
    pub fn defaults(cpus: CpuList) -> NoiseOptions {
        let layout = HistOptions::default();
        NoiseOptions {
            cpus,
            duration: None,
            warm_up: None,
            workload: WorkloadConfig {
                period: DEFAULT_PERIOD,
                runtime: DEFAULT_RUNTIME,
                threshold: DEFAULT_THRESHOLD,
                stop_single: None,
                stop_total: None,
                priority: DEFAULT_PRIORITY,
                max_samples: SAMPLES_PER_WINDOW,
            },
            housekeeping: None,
            analysis: AnalysisConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                keep_recent: STOP_CONTEXT_RECORDS,
            },
            hist: None,
            causes: DEFAULT_CAUSES,
            by: None,
        }
    }
}

/// Runtime windows shorter than this leave the measurement thread no time to measure.
pub const MIN_RUNTIME: Duration = Duration::from_micros(100);
/// The longest period (rtla osnoise's).
pub const MAX_PERIOD: Duration = Duration::from_secs(10);

impl Check for NoiseOptions {
    /// Whether the options are ones `irqlens noise` takes (see [`crate::bounds`]).
    fn check(&self) -> Checked {
        check_cpus("--cpus", &self.cpus)?;
        if let Some(housekeeping) = &self.housekeeping {
            check_cpus("--house-keeping", housekeeping)?;
        }
        check_optional_time("--duration", self.duration, false)?;
        check_optional_time("--warm-up", self.warm_up, true)?;
        self.workload.check()?;
        self.analysis.check()?;
        self.hist.as_ref().map_or(Ok(()), HistOptions::check)?;
        check_rows("--causes", self.causes)
    }
}

impl Check for WorkloadConfig {
    /// Whether a measurement thread can run with this configuration.
    fn check(&self) -> Checked {
        if self.runtime > self.period {
            return Err(format!(
                "runtime ({} us) must not exceed period ({} us)",
                self.runtime.as_micros(),
                self.period.as_micros()
            ));
        }
        if self.runtime < MIN_RUNTIME {
            return Err("runtime must be at least 100 us".into());
        }
        if self.period > MAX_PERIOD {
            return Err("period must be at most 10 s".into());
        }
        if self.threshold.is_zero() || self.threshold >= self.runtime {
            return Err("threshold must be above 0 and below the runtime".into());
        }
        check_optional_time("--stop", self.stop_single, true)?;
        check_optional_time("--stop-total", self.stop_total, true)?;
        within("max_samples", self.max_samples, 1, MAX_SAMPLES_PER_WINDOW)
    }
}

impl Check for AnalysisConfig {
    /// Whether the analysis can keep what this asks for.
    fn check(&self) -> Checked {
        check_buckets(self.bucket_ns, self.entries)?;
        within("keep_recent", self.keep_recent, 0, MAX_KEEP_RECENT)
    }
}
