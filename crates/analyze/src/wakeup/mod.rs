//! Interrupt-to-task wakeup latency (Lee & Park; Chubb & Song): for every wakeup of a
//! watched task by an interrupt, when the interrupt came, when its handler ran, when the
//! task was woken and switched in, and what its CPU ran in between.
//!
//! - `timeline` keeps, per CPU, what ran when (threads, hardirqs, softirqs, hrtimer
//!   callbacks, NMIs).
//! - `tracker` follows each wakeup back to the interrupt that started it (through
//!   softirq raises and the threads that run bottom halves) and forward to the task's
//!   switch-in, and cuts the wait into causes.
//! - `stats` aggregates the samples per CPU and per cause.

pub mod stats;
pub mod tracker;

use std::collections::HashMap;
use std::fmt;

use irqlens_model::wakeup::WakeupRunInfo;
use irqlens_model::workload::{CgroupId, NamedThread};
use serde::Serialize;

use irqlens_model::kernel::{Comm, hardirq_label, softirq_name};

pub use stats::{CauseStats, CpuStats, Stop, WakeupStats};
pub use tracker::{Targets, Tracker};

/// The interrupt a wakeup chain began with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A hardirq (device line or local vector).
    Irq {
        /// What raised it (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// A softirq raised from thread context (loopback and veth receive, bh enable), with
    /// no hardirq behind it.
    Softirq(u16),
}

impl Origin {
    /// `hardirq irq 11 virtio0`, `softirq NET_RX raised by a thread`.
    pub fn label(&self, irq_names: &HashMap<u32, String>) -> String {
        match *self {
            Origin::Irq { source, id } => hardirq_label(source, id, irq_names),
            Origin::Softirq(vector) => {
                format!("softirq {} raised by a thread", softirq_name(vector.into()))
            }
        }
    }
}

/// What a slice of a wakeup's latency was spent on. The slices of one sample add up
/// to its total latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// Timer mode, before the timer interrupt arrived, the CPU busy: interrupts disabled,
    /// the hardware or the hypervisor.
    IrqDelay,
    /// As IrqDelay, the CPU idle: the exit from idle (on a VM, the vCPU being run again).
    IdleExit,
    /// The interrupt that started the chain, outside the handler that woke the task:
    /// its entry, other work it did first, its exit.
    Origin {
        /// What raised it (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// The hrtimer callback that woke the task (this function).
    Handler(u64),
    /// Another hrtimer callback (this function) ran first.
    Timer(u64),
    /// Another hardirq.
    Irq {
        /// What raised it (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// An NMI.
    Nmi,
    /// A softirq (this vector).
    Softirq(u16),
    /// A thread of the chain: an IRQ thread, ksoftirqd or a kworker between the
    /// interrupt and the task (the extra context switch of Lee & Park §3).
    Interposed(NamedThread),
    /// A thread that ran before the task although it was not running when the task was
    /// woken (higher priority, or first in line).
    Thread(NamedThread),
    /// The thread that was running when the task was woken kept the CPU (no preemption
    /// point yet, or equal or higher priority).
    Blocking(NamedThread),
    /// The scheduler: from the wakeup of an idle CPU to the switch, the switch itself.
    Scheduler,
    /// Timer mode: from the switch-in back to user space (the rest of the syscall).
    Return,
    /// Part of the window was not traced (history overrun, an untraced CPU).
    Untraced,
    /// Causes with little time, folded together to bound memory (`stats::CAUSES`).
    Other,
}

/// How the label of an interposed thread starts (its name follows): `advise` tells a
/// thread on the wakeup's path from one in its way by it.
pub const INTERPOSED_LABEL: &str = "interposed thread ";

impl Cause {
    /// The thread it names, if it names one.
    pub fn thread(&self) -> Option<NamedThread> {
        match *self {
            Cause::Interposed(thread) | Cause::Thread(thread) | Cause::Blocking(thread) => {
                Some(thread)
            }
            _ => None,
        }
    }

    /// `symbols` names a kernel function address.
    pub fn label(
        &self,
        irq_names: &HashMap<u32, String>,
        symbols: &dyn Fn(u64) -> String,
    ) -> String {
        match *self {
            Cause::IrqDelay => "timer IRQ delay (IRQs off, hardware, hypervisor)".into(),
            Cause::IdleExit => "timer IRQ delay, CPU idle (exit from idle)".into(),
            Cause::Origin { source, id } => {
                format!("the waking {}", hardirq_label(source, id, irq_names))
            }
            Cause::Handler(function) => format!("handler {}", symbols(function)),
            Cause::Timer(function) => format!("hrtimer {} ran first", symbols(function)),
            Cause::Irq { source, id } => hardirq_label(source, id, irq_names),
            Cause::Nmi => "nmi".into(),
            Cause::Softirq(vector) => format!("softirq {}", softirq_name(vector.into())),
            Cause::Interposed(thread) => format!("{INTERPOSED_LABEL}{}", thread.comm),
            Cause::Thread(thread) => format!("thread {} ran first", thread.comm),
            Cause::Blocking(thread) => format!("thread {} kept the CPU", thread.comm),
            Cause::Scheduler => "scheduler (wakeup to switch)".into(),
            Cause::Return => "switch-in to user space".into(),
            Cause::Untraced => "window not fully traced".into(),
            Cause::Other => "other causes (smaller ones, folded)".into(),
        }
    }
}

/// The parts of a wakeup's latency, as rtla timerlat and cyclictest users know them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// Timer mode: expected expiry to the hrtimer handler's start (timerlat's IRQ latency).
    Irq,
    /// Timer mode: the hrtimer handler, start to end.
    Handler,
    /// Task mode: the interrupt's entry to the task's wakeup.
    Wakeup,
    /// Wakeup to switch-in: the scheduling latency.
    Sched,
    /// Timer mode: switch-in to back in user space.
    Return,
    /// Timer mode: expected expiry to user space (cyclictest's latency); task mode:
    /// interrupt entry to switch-in.
    Total,
}

impl Component {
    /// Every component, in the tables' order.
    pub const ALL: [Component; 6] = [
        Component::Irq,
        Component::Handler,
        Component::Wakeup,
        Component::Sched,
        Component::Return,
        Component::Total,
    ];

    /// Its column and JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Component::Irq => "irq",
            Component::Handler => "handler",
            Component::Wakeup => "wakeup",
            Component::Sched => "sched",
            Component::Return => "return",
            Component::Total => "total",
        }
    }

    /// What it spans, for legends.
    pub fn describe(self) -> &'static str {
        match self {
            Component::Irq => "timer expiry -> handler start",
            Component::Handler => "handler start -> end",
            Component::Wakeup => "interrupt -> wakeup",
            Component::Sched => "wakeup -> switch-in",
            Component::Return => "switch-in -> user space",
            Component::Total => "total",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Timer mode: the hrtimer the task slept on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerPart {
    /// The hrtimer's address.
    pub hrtimer: u64,
    /// Its expiry as armed, CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    /// When its callback began, CLOCK_MONOTONIC ns.
    pub handler_ns: u64,
    /// When its callback ended, if seen.
    pub handler_end_ns: Option<u64>,
}

/// One wakeup of a watched task by an interrupt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The task's thread id.
    pub tid: u32,
    /// Its name.
    pub comm: Comm,
    /// Its cgroup v2 id (unknown if the probe did not read it).
    pub cgroup: CgroupId,
    /// Where the task ran.
    pub cpu: u32,
    /// Where the wakeup happened.
    pub waker_cpu: u32,
    /// The interrupt the chain began with.
    pub origin: Origin,
    /// The origin's entry (or, for a softirq raised by a thread, its raise).
    pub origin_ns: u64,
    /// Timer mode: the hrtimer the task slept on.
    pub timer: Option<TimerPart>,
    /// When the task was woken, CLOCK_MONOTONIC ns.
    pub wakeup_ns: u64,
    /// When the task was switched in, CLOCK_MONOTONIC ns.
    pub switch_in_ns: u64,
    /// Timer mode: when the task read the clock back in user space.
    pub user_ns: Option<u64>,
    /// Threads between the interrupt and the task, in chain order.
    pub interposed: Vec<NamedThread>,
    /// Context switches on the task's CPU from the interrupt to the task (1: direct).
    pub switches: u32,
    /// Where the latency went, largest first; adds up to `total_ns`.
    pub causes: Vec<(Cause, u64)>,
}

impl Sample {
    /// Where the latency starts: the timer's expiry, or the origin's entry.
    pub fn start_ns(&self) -> u64 {
        self.timer.map_or(self.origin_ns, |t| t.expected_ns)
    }

    /// Where it ends: back in user space (timer mode), or the switch-in.
    pub fn end_ns(&self) -> u64 {
        self.user_ns.unwrap_or(self.switch_in_ns)
    }

    /// The latency, ns.
    pub fn total_ns(&self) -> u64 {
        self.end_ns().saturating_sub(self.start_ns())
    }

    /// One part of the latency, ns; `None` if the mode has no such part (or its end was
    /// not seen).
    pub fn component(&self, component: Component) -> Option<u64> {
        match component {
            Component::Irq => self
                .timer
                .map(|t| t.handler_ns.saturating_sub(t.expected_ns)),
            Component::Handler => self
                .timer
                .and_then(|t| Some(t.handler_end_ns?.saturating_sub(t.handler_ns))),
            Component::Wakeup => self
                .timer
                .is_none()
                .then(|| self.wakeup_ns.saturating_sub(self.origin_ns)),
            Component::Sched => Some(self.switch_in_ns.saturating_sub(self.wakeup_ns)),
            Component::Return => self.user_ns.map(|u| u.saturating_sub(self.switch_in_ns)),
            Component::Total => Some(self.total_ns()),
        }
    }
}

/// Whether a component's figures come from the checkpoints, which losses can cut short:
/// all but the total of timer mode (it has timer threads), which the threads report
/// themselves.
pub fn from_checkpoints(info: &WakeupRunInfo, component: Component) -> bool {
    component != Component::Total || info.threads.is_empty()
}

#[cfg(test)]
mod tests;
