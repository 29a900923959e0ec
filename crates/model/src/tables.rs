//! The tables of each measurement's `--json` document (noise, bh, wakeup, account) and
//! of `compare`'s: filled by present from the analysis, described by the published schema.
//! Times are in ns (`*_ns`), shares in percent (`*_percent`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

pub use crate::hist::Histogram;
use crate::kernel::Comm;
use crate::noise::{Record, Sample};
use crate::sched::Priority;
use crate::stimulus::LoadScenario;
use crate::units::CpuList;
use crate::workload::{TaskCgroup, Workload, WorkloadBy};

/// What a run lost, and which of the document's tables it may have cut short.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Lost {
    /// Events the probe could not keep.
    pub events: u64,
    /// What those events are (records, checkpoints).
    pub what: String,
    /// Losses per CPU, when the probe counts them per CPU.
    pub by_cpu: Option<BTreeMap<u32, u64>>,
    /// Anything was lost.
    pub affected: bool,
    /// The keys of the document whose figures may be short (none when nothing was lost).
    pub marked: Vec<String>,
    /// The line the text tables print under a marked table.
    pub legend: Option<String>,
}

/// The tables of `irqlens noise --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseTables {
    /// The measurement threads' settings.
    pub options: NoiseOptionsTable,
    /// What the run lost.
    pub lost: Lost,
    /// Per CPU: rtla osnoise's summary, the noise's parts and its causes.
    pub per_cpu: Vec<NoiseCpu>,
    /// The causes of all CPUs, the largest first.
    pub causes: Vec<NoiseCause>,
    /// `--by`: the thread causes per workload.
    pub workloads: Option<NoiseWorkloads>,
    /// `noise hist`: per CPU, the samples' histogram.
    pub histograms: Vec<CpuHistogram>,
    /// The sample that hit a stop limit (-s/-S), if one did.
    pub stop: Option<NoiseStop>,
}

/// The measurement threads' settings, as `noise --json` shows them.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseOptionsTable {
    /// CPUs measured.
    pub cpus: CpuList,
    /// A runtime window starts every this long, ns.
    pub period_ns: u64,
    /// How long the threads read the clock in each period, ns.
    pub runtime_ns: u64,
    /// The smallest gap that is a noise sample, ns.
    pub threshold_ns: u64,
    /// The threads' scheduling (`o:NICE`, `f:PRIO`, ...).
    #[schemars(with = "String")]
    pub priority: Priority,
    /// -s: stop at a single sample longer than this, ns.
    pub stop_ns: Option<u64>,
    /// -S: stop when a window's noise passes this, ns.
    pub stop_total_ns: Option<u64>,
    /// CPUs for the collector thread (-H); none: the CPUs not measured.
    pub house_keeping: Option<CpuList>,
}

/// One CPU's noise: its summary, the parts of its noise and its causes.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseCpu {
    /// rtla osnoise's columns and a few more.
    #[serde(flatten)]
    pub summary: CpuSummary,
    /// rtla's % CPU Aval: the share of the runtime that was not noise.
    pub cpu_available_percent: f64,
    /// The noise's parts; they add up to `noise_ns`.
    pub breakdown: NoiseBreakdown,
    /// This CPU's causes, the largest first.
    pub causes: Vec<NoiseCause>,
}

/// A CPU's summary line: rtla osnoise's columns and a few more.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct CpuSummary {
    /// The measured CPU.
    pub cpu: u32,
    /// Runtime windows measured.
    pub periods: u64,
    /// Their total length, ns.
    pub runtime_ns: u64,
    /// Total noise, ns.
    pub noise_ns: u64,
    /// Largest total noise of one period.
    pub max_noise_ns: u64,
    /// Longest single sample, ns.
    pub max_single_ns: u64,
    /// Noise samples kept.
    pub samples: u64,
    /// Noise samples that did not fit the sample buffer.
    pub dropped_samples: u64,
    /// Samples in which no interference happened.
    pub hw: u64,
    /// Interferences that began while sampling, per class (from the probe's counters).
    pub nmi: u64,
    /// Hardirqs, likewise.
    pub irq: u64,
    /// Softirqs, likewise.
    pub softirq: u64,
    /// Threads, likewise.
    pub thread: u64,
    /// Interferences inside samples whose record never arrived: lost (the run's
    /// `lost_events`), or never emitted because the kernel reported no end (`unended`).
    pub unexplained: u64,
    /// Interferences begun while sampling whose end the kernel never reported (a context
    /// switch that did not reach the tracepoint, a context entered again before it
    /// ended): the probe has no record to emit for them, so one inside a sample leaves it
    /// unexplained (one between samples, shorter than the threshold, leaves nothing).
    pub unended: u64,
    /// Record time beyond what was left of its sample (the records' clock runs a little
    /// apart from the samples'): not charged, shown so the clipping is visible.
    pub clipped_ns: u64,
}

impl CpuSummary {
    /// rtla's % CPU Aval: the share of the runtime that was not noise.
    pub fn cpu_available_percent(&self) -> f64 {
        if self.runtime_ns == 0 {
            return 100.0;
        }
        100.0 * self.runtime_ns.saturating_sub(self.noise_ns) as f64 / self.runtime_ns as f64
    }
}

/// The parts of a CPU's noise; `total_ns` is its noise exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NoiseBreakdown {
    /// Interference-free time of the traced interferences (the causes).
    pub causes_ns: u64,
    /// Sample time around the traced interferences (`Cause::EntryExit`).
    pub entry_exit_ns: u64,
    /// Samples without interference.
    pub hw_ns: u64,
    /// Untraced time of samples with a record missing (`Cause::NoRecord`).
    pub no_record_ns: u64,
    /// Samples that did not fit the sample buffer.
    pub dropped_ns: u64,
}

impl NoiseBreakdown {
    /// The CPU's noise: the sum of the parts.
    pub fn total_ns(&self) -> u64 {
        self.causes_ns + self.entry_exit_ns + self.hw_ns + self.no_record_ns + self.dropped_ns
    }
}

/// The noise charged to one cause.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseCause {
    /// What it is, by name.
    pub cause: String,
    /// Its class: irq, softirq, thread, nmi, hardware, entry_exit, ...
    pub class: String,
    /// IRQ line or vector, softirq number or pid; none for the others.
    pub id: Option<u32>,
    /// Occurrences.
    pub count: u64,
    /// Their time, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// Its share of the noise.
    pub noise_percent: f64,
    /// A thread's cgroup (none for the other classes, and for threads of recordings
    /// older than the field).
    pub cgroup: Option<TaskCgroup>,
}

/// `noise --by`: the thread causes per workload.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseWorkloads {
    /// What a workload is: cgroup, pod, container or unit.
    pub by: WorkloadBy,
    /// The workloads, the largest first; their times add up to the thread rows' times.
    pub rows: Vec<NoiseWorkload>,
}

/// The thread noise of one workload.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseWorkload {
    /// Its name: `pod <uid>`, `<runtime> <container id>`, a systemd unit, a cgroup path,
    /// or `[unknown]` (its cgroup not named).
    pub workload: String,
    /// The thread causes in it.
    pub threads: u64,
    /// Their interferences.
    pub count: u64,
    /// Their time, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    /// Its share of the noise.
    pub noise_percent: f64,
}

/// One CPU's histogram.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CpuHistogram {
    /// The CPU.
    pub cpu: u32,
    /// Its samples.
    pub histogram: Histogram,
}

/// The sample that hit a stop condition, what was inside it and what came just before.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NoiseStop {
    /// Which limit it passed.
    pub reason: String,
    /// The sample.
    pub sample: Sample,
    /// The records inside it.
    pub causes: Vec<Record>,
    /// The records just before it, oldest first.
    pub before: Vec<Record>,
}

/// The tables of `irqlens bh --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhTables {
    /// What was measured, and how.
    pub options: BhOptionsTable,
    /// What the run lost.
    pub lost: Lost,
    /// Samples counted.
    pub samples: u64,
    /// Samples of the sources folded away to bound memory.
    pub others: u64,
    /// Per mechanism: its latency, delay causes, worst samples and histogram.
    pub mechanisms: Vec<BhMechanism>,
    /// Per mechanism and source: its latency.
    pub series: Vec<BhSourceSeries>,
    /// What this kernel did not let irqlens see.
    pub not_observable: Vec<String>,
}

/// What `bh` measured, and how.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhOptionsTable {
    /// CPUs traced.
    pub cpus: CpuList,
    /// How long the run was asked to go, ns; none: until Ctrl-C.
    pub duration_ns: Option<u64>,
    /// Active mode's stimulus; none: passive mode.
    pub trigger: Option<crate::bh::TriggerOptions>,
    /// Spinning tasks run during the measurement.
    pub load: LoadScenario,
    /// Histogram bucket size, ns.
    pub bucket_ns: u64,
    /// Histogram buckets.
    pub entries: usize,
}

/// A latency series of bottom halves.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhSeries {
    /// Samples.
    pub count: u64,
    /// Samples with an interrupt between request and invocation.
    pub irq: u64,
    /// Smallest latency, ns.
    pub min_ns: Option<u64>,
    /// 5th percentile, ns.
    pub q05_ns: Option<u64>,
    /// Median, ns.
    pub q50_ns: Option<u64>,
    /// 95th percentile, ns.
    pub q95_ns: Option<u64>,
    /// Largest latency, ns.
    pub max_ns: Option<u64>,
    /// Largest latency of the samples with an interrupt, ns.
    pub max_irq_ns: u64,
    /// Median runtime, ns.
    pub runtime_q50_ns: Option<u64>,
    /// Largest runtime, ns.
    pub runtime_max_ns: Option<u64>,
}

/// One mechanism's bottom halves.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhMechanism {
    /// softirq, tasklet, workqueue or irq_thread.
    pub mechanism: String,
    /// Its latency.
    #[serde(flatten)]
    pub series: BhSeries,
    /// What delayed it, the most frequent first.
    pub causes: Vec<BhCause>,
    /// Its worst samples.
    pub worst: Vec<BhSample>,
    /// Its latency histogram (the thesis's columns).
    pub histogram: BhHistogram,
}

/// One mechanism's and source's bottom halves.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhSourceSeries {
    /// softirq, tasklet, workqueue or irq_thread.
    pub mechanism: String,
    /// What it belongs to within the mechanism, by name.
    pub source: String,
    /// Its latency.
    #[serde(flatten)]
    pub series: BhSeries,
}

/// A delay cause of one mechanism.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhCause {
    /// What delayed it, by name.
    pub cause: String,
    /// Samples it delayed.
    pub samples: u64,
    /// Their share of the mechanism's samples.
    pub share_percent: f64,
    /// The median delay it caused, ns.
    pub q50_ns: u64,
    /// The largest, ns.
    pub max_ns: u64,
    /// A thread cause's cgroup (none for the others, and in recordings older than the
    /// field).
    pub cgroup: Option<TaskCgroup>,
}

/// One bottom half, requested and run, with what delayed it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhSample {
    /// What it belongs to, by name.
    pub source: String,
    /// The CPU it ran on.
    pub cpu: u32,
    /// The CPU it was requested on.
    pub request_cpu: u32,
    /// When it was requested, CLOCK_MONOTONIC ns.
    pub request_ns: u64,
    /// Request to invocation, ns.
    pub latency_ns: u64,
    /// Its runtime, nested interrupts taken out, ns.
    pub runtime_ns: u64,
    /// The thread current when it was requested.
    pub requester: u32,
    /// The thread that ran it.
    pub executor: u32,
    /// What ran on its CPU before it.
    #[serde(flatten)]
    pub window: BhWindow,
    /// What delayed it, in order, by name.
    pub causes: Vec<String>,
    /// The threads it woke (the first few; `woken` counts them all), as far as the probe
    /// recorded their wakeups.
    pub woke: Vec<ThreadWithCgroup>,
    /// How many wakeups it made (a thread woken twice counts twice).
    pub woken: u32,
}

/// What ran on the executing CPU between a bottom half's request and its invocation:
/// what the analysis counts, and what a sample of the document shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BhWindow {
    /// Hardirqs (and NMIs) that began in the window, but for the wakeup's IPI.
    pub irqs: u32,
    /// A work item's or IRQ thread's executor was woken from another CPU, and the IPI
    /// that brought it the wakeup landed in the window: the handoff itself, not an
    /// interruption. Its time, ns (in `irq_ns` too).
    pub wakeup_ipi_ns: Option<u64>,
    /// Their time (and the wakeup IPI's), ns.
    pub irq_ns: u64,
    /// Softirqs served in the window before this one.
    #[serde(rename = "softirqs_first")]
    pub softirqs: u32,
    /// Their time, ns.
    #[serde(rename = "softirqs_first_ns")]
    pub softirq_ns: u64,
    /// Work items run on the CPU in the window before this one.
    #[serde(rename = "works_first")]
    pub works: u32,
    /// Their time, ns.
    #[serde(rename = "works_first_ns")]
    pub work_ns: u64,
    /// Context switches on the CPU in the window.
    pub switches: u32,
    /// Run by ksoftirqd rather than at IRQ exit or bh enable.
    pub ksoftirqd: bool,
    /// Work items held back by max_active: activated this long after the request, ns.
    pub activated_after_ns: Option<u64>,
    /// Work items and IRQ threads: the executing thread was woken this long after the
    /// request, ns (none: it was already awake).
    pub woken_after_ns: Option<u64>,
    /// Likewise, switched in (none: it was already running).
    pub switched_in_after_ns: Option<u64>,
    /// Every window event was seen.
    pub complete: bool,
}

/// A mechanism's latency histogram, as the thesis prints it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BhHistogram {
    /// Bucket size, ns.
    pub bucket_ns: u64,
    /// Count per bucket.
    pub buckets: Vec<u64>,
    /// Samples with an interrupt in their window.
    pub irq: u64,
    /// Samples beyond the last bucket.
    pub oob: u64,
}

/// The tables of `irqlens wakeup --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupTables {
    /// What was watched, in words.
    pub mode: String,
    /// Per CPU, the latency of each component.
    pub per_cpu: Vec<WakeupCpu>,
    /// Where the latency went, the largest first.
    pub causes: Vec<WakeupCause>,
    /// Samples per interrupt the chain began with.
    pub origins: Vec<WakeupOrigin>,
    /// Samples by context switches from the interrupt to the task.
    pub context_switches: BTreeMap<u32, u64>,
    /// Samples per interposed thread name.
    pub interposed: BTreeMap<String, u64>,
    /// Samples of the interposed threads folded away to bound memory.
    pub interposed_folded: u64,
    /// Samples per woken thread.
    pub threads: Vec<WakeupThread>,
    /// The woken threads folded away to bound memory.
    pub threads_folded: Option<FoldedThreads>,
    /// The worst samples.
    pub worst: Vec<WakeupSample>,
    /// What hit the stop limit, if something did.
    pub stop: Option<WakeupStop>,
    /// What the run lost.
    pub lost: Lost,
}

/// One CPU's wakeups.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupCpu {
    /// The CPU.
    pub cpu: u32,
    /// Timer activations.
    pub activations: u64,
    /// Samples decomposed.
    pub samples: u64,
    /// Per component (by name), its latency.
    pub components: BTreeMap<String, WakeupComponent>,
}

/// The latency of one component of the wakeups of one CPU.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupComponent {
    /// Samples.
    pub count: u64,
    /// Smallest, ns.
    pub min_ns: Option<u64>,
    /// Mean, ns.
    pub avg_ns: Option<u64>,
    /// Largest, ns.
    pub max_ns: Option<u64>,
    /// Selected quantiles.
    pub quantiles: Vec<Quantile>,
    /// The cumulative distribution: (bucket start ns, share at or below).
    pub cdf: Vec<(u64, f64)>,
    /// Its histogram.
    pub histogram: Histogram,
}

/// One quantile of a distribution.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Quantile {
    /// Which (0.5: the median).
    pub quantile: f64,
    /// Its value, ns.
    pub ns: Option<u64>,
}

/// Where wakeup latency went.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupCause {
    /// What, by name.
    pub cause: String,
    /// Samples it was in.
    pub samples: u64,
    /// Its time, ns.
    pub total_ns: u64,
    /// Its largest time in one sample, ns.
    pub max_ns: u64,
    /// Its share of all the latency.
    pub share_percent: f64,
    /// A thread cause's cgroup (none for the others, and in recordings older than the
    /// field).
    pub cgroup: Option<TaskCgroup>,
}

/// A thread a document names (a delay cause's, one a bottom half woke, one on a wakeup
/// chain), with its cgroup.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ThreadWithCgroup {
    /// Its thread id, where the document has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    /// Its name.
    #[schemars(with = "String")]
    pub comm: Comm,
    /// Its cgroup (none in recordings older than the field).
    pub cgroup: Option<TaskCgroup>,
}

/// Samples of one origin.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupOrigin {
    /// The interrupt the chain began with, by name.
    pub origin: String,
    /// Its samples.
    pub samples: u64,
}

/// Samples of one woken thread.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupThread {
    /// Its thread id.
    pub tid: u32,
    /// Its name.
    #[schemars(with = "String")]
    pub comm: Comm,
    /// Its samples.
    pub samples: u64,
    /// Its largest latency, ns.
    pub max_ns: u64,
    /// Its cgroup (none in recordings older than the field).
    pub cgroup: Option<TaskCgroup>,
}

/// The woken threads folded together.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FoldedThreads {
    /// How many.
    pub threads: u64,
    /// Their samples.
    pub samples: u64,
    /// Their largest latency, ns.
    pub max_ns: u64,
}

/// One wakeup, decomposed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupSample {
    /// Where the task ran.
    pub cpu: u32,
    /// Where the wakeup happened.
    pub waker_cpu: u32,
    /// The task's thread id.
    pub tid: u32,
    /// Its name.
    #[schemars(with = "String")]
    pub comm: Comm,
    /// Its cgroup (none in recordings older than the field).
    pub cgroup: Option<TaskCgroup>,
    /// The interrupt the chain began with, by name.
    pub origin: String,
    /// Threads between the interrupt and the task, in chain order.
    pub interposed: Vec<ThreadWithCgroup>,
    /// Context switches from the interrupt to the task.
    pub context_switches: u32,
    /// Per component (`NAME_ns`), its time.
    pub components: BTreeMap<String, u64>,
    /// Where the latency went, the largest first.
    pub causes: Vec<WakeupSampleCause>,
}

/// A share of one sample's latency.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WakeupSampleCause {
    /// What, by name.
    pub cause: String,
    /// Its time, ns.
    pub ns: u64,
    /// A thread cause's cgroup (none for the others).
    pub cgroup: Option<TaskCgroup>,
}

/// What hit the stop limit: a decomposed sample, or a timer thread's untraced latency.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WakeupStop {
    /// A decomposed sample.
    Sample(Box<WakeupSample>),
    /// An activation seen by the timer thread alone.
    Untraced(UntracedStop),
}

/// A timer thread's activation over the limit, untraced.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct UntracedStop {
    /// Its CPU.
    pub cpu: u32,
    /// The thread.
    pub tid: u32,
    /// Its latency, ns.
    pub total_ns: u64,
}

/// The tables of `irqlens account --json`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AccountTables {
    /// A row per "process" or "thread".
    pub per: String,
    /// The attribution rule.
    pub rule: String,
    /// Socket deliveries were followed to their readers (not `--no-sockets`): with them,
    /// a delivery is a unit of its own for the socket's last reader.
    pub sockets: bool,
    /// The compensation algorithm ran (--compensate).
    pub compensate: bool,
    /// What the `workloads` rows group by (`--by`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<WorkloadBy>,
    /// `--cgroup`: the rows are only the tasks in these cgroup v2 paths and below (the
    /// totals still count all the traced CPUs); empty: every task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<String>,
    /// What the run lost.
    pub lost: Lost,
    /// The whole run.
    pub total: AccountPeriod,
    /// Each --interval period.
    pub periods: Vec<AccountPeriod>,
}

/// The accounting of one period (or the whole run).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AccountPeriod {
    /// Its start, ns after the run's.
    pub start_ns: u64,
    /// Its length, ns.
    pub elapsed_ns: u64,
    /// Its totals.
    pub totals: AccountTotals,
    /// Interrupt time done for no thread, per source.
    pub orphan_by: BTreeMap<String, u64>,
    /// Interrupt time on idle CPUs, per source.
    pub idle_by: BTreeMap<String, u64>,
    /// A row per process (or thread); with `--cgroup`, only those in the cgroups given.
    pub rows: Vec<AccountRow>,
    /// A row per workload (`--by`), the rows added up; empty without `--by`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<AccountWorkload>,
    /// irqlens's own work.
    pub irqlens: Option<AccountRow>,
    /// The thread accounts folded to keep memory bounded (past 4096 threads: those with
    /// no interrupt time for 30 s first, then the lightest), added up; none if none was.
    /// `rows` leave them out, `workloads` and `totals` count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<AccountFolded>,
    /// The compensation's interrupts per tick (--compensate).
    pub interrupts_per_tick: Option<u64>,
    /// What the run lost.
    pub lost: Lost,
}

/// Totals of the run (or of a period).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AccountTotals {
    /// Hardirq time charged to threads (the idle task included).
    pub hardirq_ns: u64,
    /// Softirq time charged likewise.
    pub softirq_ns: u64,
    /// NMI time charged likewise.
    pub nmi_ns: u64,
    /// Interrupt time on idle CPUs (charged to no process), irqlens's own work left out.
    pub idle_ns: u64,
    /// Interrupt time of irqlens's own work, wherever it ran (charged to `[irqlens]`).
    pub irqlens_ns: u64,
    /// Interrupt time done on some thread's behalf.
    pub served_ns: u64,
    /// Interrupt time done for no thread.
    pub orphan_ns: u64,
}

impl AccountTotals {
    /// All interrupt time: hardirqs, softirqs and NMIs.
    pub fn interrupt_ns(&self) -> u64 {
        self.hardirq_ns + self.softirq_ns + self.nmi_ns
    }
}

/// One process (or thread) of the accounting table.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AccountRow {
    /// Its figures.
    #[serde(flatten)]
    pub figures: AccountFigures,
    /// `charged_ns` per interrupt source.
    pub charged_by: BTreeMap<String, u64>,
    /// `served_ns` per interrupt source.
    pub served_by: BTreeMap<String, u64>,
}

/// The figures of one process (or thread): what the analysis works out for a row, and
/// what the document shows of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct AccountFigures {
    /// Pid, or tid with --threads.
    pub id: u32,
    /// Its name.
    pub comm: String,
    /// Its cgroup v2 path, if known (the process's, or with --threads the thread's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Its figures.
    #[serde(flatten)]
    pub amounts: AccountAmounts,
}

/// The interrupt time of a process, a thread or a workload, next to the kernel's bill.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct AccountAmounts {
    /// t: what the kernel accounted (interrupts included: no IRQ_TIME_ACCOUNTING).
    pub kernel_ns: Option<u64>,
    /// Interrupt time charged to it: what ran while it was current, less irqlens's own
    /// work (`[irqlens]`: plus its own work wherever it ran).
    pub charged_ns: u64,
    /// Interrupt time done on its behalf, wherever it ran.
    pub served_ns: u64,
    /// Interrupt time irqlens's own work took from it, charged to `[irqlens]` instead
    /// (`[irqlens]`: what its own work took from the others).
    pub irqlens_ns: u64,
    /// Deliveries and wakeups it was served.
    pub units: u64,
    /// t_o = t - billed + served.
    pub corrected_ns: Option<u64>,
    /// The kernel's accounting error (t - t_o) / t_o.
    pub error: Option<f64>,
    /// t after the compensation algorithm of Zhang & West §3.1 (with --compensate).
    pub compensated_ns: Option<u64>,
    /// Its error against t_o.
    pub compensated_error: Option<f64>,
}

fn u64_is_zero(n: &u64) -> bool {
    *n == 0
}

/// Thread accounts folded into one to keep memory bounded: their sums.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AccountFolded {
    /// Thread accounts folded (a thread folded, interrupted again and folded again counts
    /// twice).
    pub threads: u64,
    /// Their figures added up: no kernel bill (`kernel_ns`, `corrected_ns` and the errors
    /// are null).
    #[serde(flatten)]
    pub amounts: AccountAmounts,
    /// `charged_ns` per interrupt source.
    pub charged_by: BTreeMap<String, u64>,
    /// `served_ns` per interrupt source.
    pub served_by: BTreeMap<String, u64>,
}

/// One workload of the accounting (`--by`): the process (or thread) rows whose cgroups
/// name it, added up, and the kernel's error recomputed from the sums.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AccountWorkload {
    /// What groups its rows at the `--by` level: the cgroup path, `pod <uid>`,
    /// `<runtime> <container id>`, a unit's name; `[unknown]` for tasks whose cgroup is
    /// not known.
    pub key: String,
    /// The cgroup v2 path its tasks have in common (a pod's slice, a container's scope);
    /// none for the unknown.
    pub path: Option<String>,
    /// What its path names (pod UID and QoS, container id, unit), at the `--by` level;
    /// none for the unknown.
    pub workload: Option<Workload>,
    /// How many process (or thread) rows it adds up.
    pub tasks: usize,
    /// Thread accounts folded to keep memory bounded that it adds up too (not in `tasks`).
    #[serde(default, skip_serializing_if = "u64_is_zero")]
    pub folded_threads: u64,
    /// The sums of its rows' figures; the error and the compensated error recomputed.
    #[serde(flatten)]
    pub amounts: AccountAmounts,
    /// `charged_ns` per interrupt source.
    pub charged_by: BTreeMap<String, u64>,
    /// `served_ns` per interrupt source.
    pub served_by: BTreeMap<String, u64>,
}

/// The unit of a compared figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A time in ns (shown in µs).
    Ns,
    /// A count.
    Count,
    /// A percentage.
    Percent,
}

/// One figure of `compare`, side by side.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ComparedFigure {
    /// Its group (a CPU, a mechanism, a process).
    pub group: String,
    /// Its name.
    pub figure: String,
    /// Its unit.
    pub unit: Unit,
    /// The baseline's value; none if it lacks the figure.
    pub a: Option<f64>,
    /// The other's value; none if it lacks the figure.
    pub b: Option<f64>,
    /// B - A.
    pub delta: Option<f64>,
    /// The change relative to A; none from zero.
    pub change_percent: Option<f64>,
}
