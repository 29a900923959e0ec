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
