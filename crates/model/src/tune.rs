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
    /// `/sys/class/net/DEVICE/napi_defer_hard_irqs`: how many empty NAPI polls in a row,
    /// each `gro_flush_timeout` apart, keep the device's IRQ masked (Linux 5.10).
    NapiDeferHardIrqs {
        /// The network namespace the device lives in; none: irqlens's own.
        netns: Option<String>,
        /// The device.
        device: String,
    },
    /// `/sys/class/net/DEVICE/gro_flush_timeout`: ns; with `napi_defer_hard_irqs`, the
    /// timer that polls the device's NAPI instead of its IRQ.
    GroFlushTimeout {
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
    /// `CGROUP/cpu.rt_runtime_us` of a cgroup v1 cpu controller (RT group scheduling):
    /// the µs of each period the group's real-time tasks may run, -1 for no limit. The
    /// root group's bounds kernel.sched_rt_runtime_us from below, and a group's cannot
    /// exceed the sysctl's.
    RtGroupRuntime {
        /// The cgroup's directory (`/sys/fs/cgroup/cpu` for the root group).
        cgroup: String,
    },
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
    /// A network namespace irqlens makes for its own test bed (`irqlens trial`, `irqlens
    /// bh -t net`), by its `ip netns` name: `present` or `absent`. Journaled before it is made, so that
    /// `irqlens tune --revert` removes it after a SIGKILL (with its devices and their
    /// NAPI threads).
    Netns {
        /// The `ip netns` name.
        name: String,
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

impl Change {
    /// Whether writing it would change nothing.
    pub fn is_no_op(&self) -> bool {
        self.from == self.to
    }
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

/// The execution context of a cause `advise` is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CauseClass {
    /// A hardirq: a device line or a per-CPU vector.
    Irq,
    /// A softirq vector.
    Softirq,
    /// A thread.
    Thread,
    /// NMIs.
    Nmi,
    /// Time no interference in the guest accounts for: the hardware or the hypervisor.
    Hw,
    /// The CPU idle when its timer interrupt was due: the exit from idle (C-states).
    Idle,
    /// Anything else (entry/exit paths, the scheduler, untraced time): no knob names it.
    Other,
}

/// Where a cause comes from, as precisely as the measurement knows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CauseSource {
    /// A device IRQ line (a numbered row of /proc/interrupts).
    IrqLine {
        /// The line.
        irq: u32,
        /// Its name, as /proc/interrupts gives it (may be empty).
        name: String,
    },
    /// A per-CPU vector (`local_timer`, `reschedule`, `call_function`, ...).
    Vector {
        /// Its name.
        name: String,
        /// The vector's number.
        vector: u32,
    },
    /// A softirq vector, by /proc/softirqs's name (`NET_RX`, `TIMER`, ...).
    Softirq {
        /// The name.
        name: String,
    },
    /// A thread.
    Thread {
        /// Its id, when the measurement knows it (wakeup names threads by comm only).
        tid: Option<u32>,
        /// Its name.
        comm: String,
    },
    /// A wakeup that found its CPU idle, with the PM QoS latency target the run held on
    /// /dev/cpu_dma_latency meanwhile (`None`: it held none), which says whether holding
    /// one would have changed anything.
    IdleExit {
        /// The target held, µs.
        held_dma_latency_us: Option<u32>,
    },
    /// Nothing more precise than the class.
    None,
}

/// One cause of noise or latency on one measured CPU: what `advise` works from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuCause {
    /// The CPU it took time from.
    pub cpu: u32,
    /// The capability whose measurement named it.
    pub capability: crate::system::Capability,
    /// The cause as the capability's tables label it.
    pub label: String,
    /// Its execution context.
    pub class: CauseClass,
    /// What it is.
    pub source: CauseSource,
    /// The time it took on that CPU, ns.
    pub time_ns: u64,
    /// Its share of that CPU's noise or latency, percent.
    pub share_percent: f64,
}

/// Whether an IRQ line's affinity can be changed from user space, as far as can be told
/// without trying a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IrqMovable {
    /// Nothing says it cannot be moved.
    Yes,
    /// Looks like a queue of a multi-queue device whose affinity the kernel manages (a
    /// heuristic: a queue name and a single effective CPU; only a write would tell).
    LikelyManaged,
    /// A per-CPU vector (LOC, RES, CAL, TLB, ...): not a line, no affinity.
    PerCpuVector,
    /// `/proc/irq/N/smp_affinity_list` is missing or not writable by anyone.
    NoAffinityFile,
}

/// One row of /proc/interrupts with the line's affinity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IrqState {
    /// The row's key: an IRQ number, or a vector's short name (`LOC`, `RES`, ...).
    pub key: String,
    /// The IRQ number for a numbered row.
    pub irq: Option<u32>,
    /// The row's description (the device and handler names).
    pub name: String,
    /// `/proc/irq/N/smp_affinity_list`, as read.
    pub affinity: Option<String>,
    /// `/proc/irq/N/effective_affinity_list`, as read.
    pub effective_affinity: Option<String>,
    /// The count per online CPU, in /proc/interrupts's column order.
    pub counts: Vec<(u32, u64)>,
    /// Whether the affinity can be changed.
    pub movable: IrqMovable,
}

impl IrqState {
    /// The names of the line's handlers (`virtio1-req.0`): the description without the
    /// chip and the hardware IRQ before them (`PCI-MSIX-0000:00:02.0 1-edge`); the whole
    /// description if it has no more than those.
    pub fn handlers(&self) -> String {
        let words: Vec<&str> = self.name.split_whitespace().collect();
        match words.get(2..) {
            Some(names) if !names.is_empty() => names.join(" "),
            _ => self.name.clone(),
        }
    }
}

/// A queue's steering mask: a receive queue's RPS mask (`rx-N/rps_cpus`) or a transmit
/// queue's XPS mask (`tx-N/xps_cpus`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpsQueue {
    /// The network namespace (`ip netns` name); none: irqlens's own.
    pub netns: Option<String>,
    /// The device.
    pub device: String,
    /// The queue (`rx-N` for RPS, `tx-N` for XPS).
    pub queue: u32,
    /// The mask as read (a hex mask, words separated by commas).
    pub mask: String,
    /// The CPUs it includes.
    pub cpus: CpuList,
}

/// A network device's NAPI mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetDevice {
    /// The network namespace; none: irqlens's own.
    pub netns: Option<String>,
    /// The device.
    pub device: String,
    /// `/sys/class/net/DEV/threaded` (0 or 1), if the kernel has it.
    pub threaded: Option<String>,
}

/// A kernel thread's scheduling policy, as `ps -o cls,rtprio,ni` would show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadPolicy {
    /// Its id.
    pub tid: u32,
    /// Its name.
    pub comm: String,
    /// `o:NICE`, `f:PRIO` or `r:PRIO`, as Knob::ThreadPriority writes it.
    pub policy: String,
    /// The CPUs it may run on, as a list.
    pub affinity: Option<String>,
}

/// An idle state (C-state) of a CPU, from /sys/devices/system/cpu/cpuN/cpuidle/stateK.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IdleState {
    /// The CPU.
    pub cpu: u32,
    /// K of `stateK`.
    pub index: u32,
    /// `name` (`POLL`, `C1`, `C6`, ...).
    pub name: String,
    /// `latency`: its exit latency, µs.
    pub latency_us: u32,
    /// `disable` is 1: the CPU does not enter it.
    pub disabled: bool,
}

/// The state of the machine `advise` reads: the settings each remedy would change and
/// what works against them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MachineState {
    /// The online CPUs.
    pub online_cpus: CpuList,
    /// The rows of /proc/interrupts.
    pub irqs: Vec<IrqState>,
    /// The RPS mask of every receive queue.
    pub rps: Vec<RpsQueue>,
    /// The XPS mask of every transmit queue that has one (multi-queue devices).
    #[serde(default)]
    pub xps: Vec<RpsQueue>,
    /// Every network device's NAPI mode.
    pub net_devices: Vec<NetDevice>,
    /// The sysctls the remedies read (`net.core.netdev_budget`, ...), as read.
    pub sysctls: std::collections::BTreeMap<String, String>,
    /// `/sys/devices/virtual/workqueue/cpumask`, as read.
    pub workqueue_cpumask: Option<String>,
    /// The CPUs it includes.
    pub workqueue_cpus: Option<CpuList>,
    /// `/dev/cpu_dma_latency`'s current value, µs (2000000000: no request).
    pub dma_latency_us: Option<u32>,
    /// Whether a process named irqbalance runs.
    pub irqbalance_running: bool,
    /// The kernel's command line.
    pub cmdline: String,
    /// The ksoftirqd threads' policies.
    pub ksoftirqd: Vec<ThreadPolicy>,
    /// Threads named by the causes (by tid, or by name for the causes that know only
    /// the name: every thread of that name now) with their policy and affinity, read so
    /// `advise` can tell who pinned them and what they run at.
    pub threads: Vec<ThreadPolicy>,
    /// The idle states of the measured CPUs, where the kernel shows them (none on many
    /// virtual machines).
    #[serde(default)]
    pub idle_states: Vec<IdleState>,
}

impl MachineState {
    /// The boot parameter `name=` on the command line, if present (its value): the last
    /// one given, which is the one the kernel keeps, and never one after `--` (the
    /// kernel hands the words after it to init).
    pub fn boot_parameter(&self, name: &str) -> Option<&str> {
        (self.cmdline.split_whitespace())
            .take_while(|word| *word != "--")
            .filter_map(|word| {
                let (key, value) = word.split_once('=').unwrap_or((word, ""));
                (key == name).then_some(value)
            })
            .last()
    }

    /// The sysctl `name`, if read.
    pub fn sysctl(&self, name: &str) -> Option<&str> {
        self.sysctls.get(name).map(String::as_str)
    }
}

/// The longest thread name the kernel's tracepoints and task structs carry
/// (TASK_COMM_LEN 16, with its NUL).
pub const COMM_MAX: usize = 15;

/// Whether a thread name as a measurement recorded it is the thread now named `current`
/// in /proc: the same, or cut at `COMM_MAX` (kernel threads show their full name in /proc,
/// `napi/veth0-8193`, while tracepoints keep its first 15 bytes).
pub fn comm_matches(recorded: &str, current: &str) -> bool {
    recorded == current || recorded.len() == COMM_MAX && current.starts_with(recorded)
}

/// Whether a thread of this name is irqlens's own, as collect names them: its main thread
/// (`irqlens`), its measurement threads (`irqlens/CPU`), wakeup's timer threads
/// (`il-wakeup/CPU`), the load's spinners (`il-load/N`), bh's trigger threads (`il-timer`,
/// ...) and trial's flows (`trial-*`). Their noise is the measurement's own, never a
/// remedy's target.
pub fn is_irqlens_thread(comm: &str) -> bool {
    const PREFIXES: [&str; 4] = ["irqlens/", "il-wakeup/", "il-load/", "trial-"];
    const TRIGGERS: [&str; 5] = [
        "il-timer",
        "il-net",
        "il-workqueue",
        "il-tasklet",
        "il-block",
    ];
    comm == "irqlens"
        || PREFIXES.iter().any(|prefix| comm.starts_with(prefix))
        || TRIGGERS.contains(&comm)
}

/// What `irqlens advise --json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdviceReport {
    /// Which tool and version; the command is always "advise".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The remedies, per CPU, ranked by the time their cause took.
    pub advice: Vec<Advice>,
    /// What works against them.
    pub conflicts: Vec<Conflict>,
    /// The machine's state they were made from.
    pub machine: MachineState,
}

/// `cpus` as the hex mask `rps_cpus` and the workqueue cpumask take: 32-bit words,
/// most significant first, separated by commas (`3`, `1,00000000`).
pub fn cpu_mask_hex(cpus: &CpuList) -> String {
    let words = cpus.iter().last().map_or(1, |last| last as usize / 32 + 1);
    let mut mask = vec![0u32; words];
    for cpu in cpus.iter() {
        mask[cpu as usize / 32] |= 1 << (cpu % 32);
    }
    let mut text = format!("{:x}", mask[words - 1]);
    for word in mask[..words - 1].iter().rev() {
        text.push_str(&format!(",{word:08x}"));
    }
    text
}

/// The CPUs of a hex mask as `cpu_mask_hex` writes it and the kernel shows it; `None` if
/// it is not one.
pub fn parse_cpu_mask(text: &str) -> Option<CpuList> {
    let digits: String = text.trim().chars().filter(|&c| c != ',').collect();
    if digits.is_empty() {
        return None;
    }
    let mut cpus = Vec::new();
    for (position, digit) in digits.chars().rev().enumerate() {
        let value = digit.to_digit(16)?;
        for bit in 0..4 {
            if value & (1 << bit) != 0 {
                cpus.push(position as u32 * 4 + bit);
            }
        }
    }
    Some(cpus.into_iter().collect())
}

/// A change, with its knob in words (its file, or the thread it acts on).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DescribedChange {
    /// The change.
    #[serde(flatten)]
    pub change: Change,
    /// Its knob in words: `/proc/irq/24/smp_affinity_list`, `priority of napi/veth1:812`.
    pub knob_description: String,
}

/// A journaled change whose target is gone (a thread that exited, a device or a namespace
/// deleted): dropped, as there is nothing to put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DroppedChange {
    /// The change.
    #[serde(flatten)]
    pub change: DescribedChange,
    /// Why it is gone.
    pub why: String,
}

/// The JSON document of `irqlens tune --dry-run`: what would be tried, and how.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TunePlan {
    /// Which tool and version; the command is always "tune".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The CPUs that would be measured before and after each change.
    pub cpus: CpuList,
    /// Before/after rounds per change.
    pub rounds: u32,
    /// The changes, in the order they would be tried.
    pub changes: Vec<DescribedChange>,
}

/// The JSON document of `irqlens tune --revert`: what the journal held and what became of
/// it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TuneRevert {
    /// Which tool and version; the command is always "tune".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The journal read.
    pub journal: String,
    /// With `--kept`: the changes `tune --keep` had left in place, undone now.
    pub undone_kept: Vec<DescribedChange>,
    /// The changes put back, last made first.
    pub put_back: Vec<DescribedChange>,
    /// The changes whose target is gone.
    pub dropped: Vec<DroppedChange>,
    /// The changes `tune --keep` left in place, which stay (without `--kept`).
    pub left_kept: Vec<DescribedChange>,
}

/// The JSON document of `irqlens tune`.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct TuneReport {
    /// Which tool and version; the command is always "tune".
    #[serde(flatten)]
    pub header: crate::run::Header,
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
    /// The changes made with it, after it, and put back before it: a remedy of several
    /// knobs (RT throttling off under RT group scheduling: the sysctl, then the root
    /// group's runtime); empty for most.
    pub together_with: Vec<DescribedChange>,
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

/// Whether a remedy helped beyond the run-to-run spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every after round below every before round, and the medians apart by more than
    /// the before rounds' spread (or the after median below half the lowest before
    /// round).
    Kept,
    /// Otherwise: put back.
    NoEffect,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip_across_words() {
        for list in ["", "0", "0-1", "3,31", "32", "0,33-35,64"] {
            let cpus: CpuList = if list.is_empty() {
                CpuList::default()
            } else {
                list.parse().unwrap()
            };
            assert_eq!(parse_cpu_mask(&cpu_mask_hex(&cpus)), Some(cpus), "{list}");
        }
        assert_eq!(cpu_mask_hex(&"0-1".parse().unwrap()), "3");
        assert_eq!(cpu_mask_hex(&"32".parse().unwrap()), "1,00000000");
        assert_eq!(
            parse_cpu_mask("00000000,00000006"),
            Some("1-2".parse().unwrap())
        );
        assert_eq!(parse_cpu_mask("xyz"), None);
    }

    #[test]
    fn a_recorded_name_cut_at_15_bytes_matches_the_full_one() {
        assert!(comm_matches("spin", "spin"));
        assert!(comm_matches("napi/ila9357b-3", "napi/ila9357b-320"));
        assert!(!comm_matches("napi/ila9357b-", "napi/ila9357b-320"));
        assert!(!comm_matches("spin", "spinner"));
        assert!(!comm_matches("napi/ila9357b-320", "napi/ila9357b-3"));
    }

    #[test]
    fn boot_parameters_are_found_by_name() {
        let machine = MachineState {
            cmdline: "ro quiet nohz_full=1-3 isolcpus".into(),
            ..Default::default()
        };
        assert_eq!(machine.boot_parameter("nohz_full"), Some("1-3"));
        assert_eq!(machine.boot_parameter("isolcpus"), Some(""));
        assert_eq!(machine.boot_parameter("rcu_nocbs"), None);
        // the last one counts, and init's words after `--` are not the kernel's
        let machine = MachineState {
            cmdline: "isolcpus=1 isolcpus=managed_irq,2-3 -- --init-arg nohz_full=1".into(),
            ..Default::default()
        };
        assert_eq!(machine.boot_parameter("isolcpus"), Some("managed_irq,2-3"));
        assert_eq!(machine.boot_parameter("nohz_full"), None);
    }
}
