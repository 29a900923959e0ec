//! Remedies: the settings of the machine a cause points at (`irqlens advise`), and the
//! changes `irqlens tune` makes to them, journaled before they are made and put back.

use serde::{Deserialize, Serialize};

use crate::units::CpuList;

/// A setting of the machine irqlens can read, change and put back.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(tag = "knob", rename_all = "snake_case")]
pub enum Knob {
    /// `/proc/irq/IRQ/smp_affinity_list`: the CPUs an IRQ line may be delivered to.
    IrqAffinity {
        /// The IRQ line.
        irq: u32,
    },
    /// `/sys/class/net/DEVICE/queues/rx-QUEUE/rps_cpus`: the CPUs receive packet
    /// steering sends a queue's NET_RX work to (a hex mask).
    RpsCpus {
        /// The network namespace the device lives in (`ip netns` name); none: irqlens's own.
        netns: Option<String>,
        /// The device.
        device: String,
        /// The receive queue.
        queue: u32,
    },
    /// `/sys/class/net/DEVICE/queues/tx-QUEUE/xps_cpus`: the CPUs whose sends use a queue.
    XpsCpus {
        /// The network namespace the device lives in; none: irqlens's own.
        netns: Option<String>,
        /// The device.
        device: String,
        /// The transmit queue.
        queue: u32,
    },
    /// `/sys/class/net/DEVICE/threaded`: NAPI polled by kernel threads instead of NET_RX.
    NapiThreaded {
        /// The network namespace the device lives in; none: irqlens's own.
        netns: Option<String>,
        /// The device.
        device: String,
    },
    /// A sysctl under /proc/sys, by its dotted name (`net.core.netdev_budget`,
    /// `kernel.sched_rt_runtime_us`, `kernel.timer_migration`, ...).
    Sysctl {
        /// The dotted name.
        name: String,
    },
    /// `/sys/devices/virtual/workqueue/cpumask`: where unbound work items may run.
    WorkqueueCpumask,
    /// A thread's CPU affinity (sched_setaffinity), as a CPU list.
    ThreadAffinity {
        /// The thread.
        tid: u32,
        /// Its name when advised, so a reused tid is not mistaken for it.
        comm: String,
    },
    /// A thread's scheduling policy and priority, as `o:NICE`, `f:PRIO`, `r:PRIO`.
    ThreadPriority {
        /// The thread.
        tid: u32,
        /// Its name when advised.
        comm: String,
    },
    /// `/dev/cpu_dma_latency`: held only while irqlens runs (the kernel drops the request
    /// with the file), so `tune` can measure it but not keep it.
    DmaLatency,
}

/// One change of a knob: its value before (as read, to be written back) and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    /// What is changed.
    #[serde(flatten)]
    pub knob: Knob,
    /// The value read before the change, in the knob's own text form.
    pub from: String,
    /// The value written.
    pub to: String,
}

/// Why a cause's knob cannot be turned from here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "blocker", rename_all = "snake_case")]
pub enum Blocker {
    /// The kernel manages the IRQ's affinity (multi-queue devices): writes fail.
    ManagedIrq,
    /// A per-CPU vector (local timer, IPIs): it is delivered where it is raised.
    PerCpuVector,
    /// The thread was pinned by its owner; moving it may break it.
    PinnedThread,
    /// Only a boot parameter changes it: the line to add, and a reboot.
    BootParameter {
        /// What to add to the kernel's command line (`isolcpus=...`, `nohz_full=...`).
        line: String,
    },
    /// Time the hypervisor took: nothing in the guest changes it.
    Hypervisor,
    /// Anything else, said in words.
    Other {
        /// Why.
        why: String,
    },
}

/// What irqlens advises for one cause on one CPU, ranked by the time the cause took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Advice {
    /// A short stable id (`irq-24-affinity`, `rps-veth0-rx0`): what `tune --apply` takes.
    pub id: String,
    /// The CPU the cause took time from.
    pub cpu: u32,
    /// The cause, as the capability's tables name it.
    pub cause: String,
    /// The capability whose measurement named the cause.
    pub capability: crate::system::Capability,
    /// The time the cause took on that CPU, ns.
    pub time_ns: u64,
    /// Its share of that CPU's noise or latency, percent.
    pub share_percent: f64,
    /// The remedy in words.
    pub remedy: String,
    /// The change `tune` would make, if one can be made.
    pub change: Option<Change>,
    /// The command a person would type for the same change.
    pub command: Option<String>,
    /// Why it cannot be changed, if it cannot.
    pub blocker: Option<Blocker>,
}

/// Something on the machine that works against a remedy (irqbalance moving IRQs back, an
/// RPS mask sending softirq work to the measured CPUs, RT throttling, ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conflict {
    /// What it is.
    pub what: String,
    /// What to do about it.
    pub remedy: String,
    /// The CPUs it concerns, if some.
    pub cpus: Option<CpuList>,
}

/// The JSON document of `irqlens tune`.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TuneReport {
    /// Always "irqlens".
    pub tool: String,
    /// The irqlens version that printed it.
    pub version: String,
    /// Always "tune".
    pub command: String,
    /// The kernel release tuned.
    pub kernel: String,
    /// The CPUs measured.
    pub cpus: CpuList,
    /// Before/after pairs per remedy.
    pub rounds: u32,
    /// The length of each before and each after measurement, ns.
    pub duration_ns: u64,
    /// What was measured: `noise` or `wakeup`.
    pub metric: String,
    /// The chance that a remedy that changes nothing separates its rounds completely
    /// (every after below every before): 1/C(2N,N) for N rounds.
    pub separation_chance: f64,
    /// The journal's path.
    pub journal: String,
    /// Whether Ctrl-C/SIGTERM cut the tuning short (the remedies after it were not tried).
    pub interrupted: bool,
    /// The remedies tried, in order.
    pub remedies: Vec<Trial>,
}

/// One remedy tried by `tune`.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Trial {
    /// The change as `--change` spells it.
    pub spec: String,
    /// The knob in words (its file, or the thread).
    pub knob_description: String,
    /// The change.
    pub change: Change,
    /// What the verdict is judged on, in words.
    pub figure: String,
    /// Its unit: `ns of noise per s` (noise) or `ns` (wakeup latency).
    pub unit: String,
    /// The rounds without the change.
    pub before: Vec<TuneRound>,
    /// The rounds with it.
    pub after: Vec<TuneRound>,
    /// The median of the before rounds' judged figure.
    pub before_median: f64,
    /// The median of the after rounds' judged figure.
    pub after_median: f64,
    /// after / before - 1, percent; none when before is 0.
    pub change_percent: Option<f64>,
    /// Kept or put back.
    pub verdict: Verdict,
    /// Whether it was left in place at exit (`--keep`).
    pub left_in_place: bool,
}

/// One measurement of a `tune` round.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TuneRound {
    /// The figure the verdict is judged on, in the trial's unit.
    pub judged: f64,
    /// The other figures shown: noise: `total_ns_per_s`, `irq_ns_per_s`,
    /// `softirq_ns_per_s` (summed over the CPUs, per s measured, with their entry/exit);
    /// wakeup: `p99_total_ns`, `max_total_ns`, `p99_irq_ns` (the worst CPU's).
    pub figures: std::collections::BTreeMap<String, f64>,
}

/// Whether a remedy helped by more than the run-to-run spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every after round below every before round, and the medians apart by more than
    /// the before rounds' spread.
    Kept,
    /// Otherwise: put back.
    NoEffect,
}
