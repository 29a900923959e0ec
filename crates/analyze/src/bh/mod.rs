//! Bottom-half latency (INTSPECT thesis): requests matched to invocations (`matcher`), and
//! the thesis's statistics over the matched samples (`stats`).
//!
//! A sample is one bottom half: when it was requested (softirq raise, the TASKLET/HI
//! raise that queued a tasklet, work queued, an IRQ thread woken), when it began to run,
//! how long it ran, and what ran on its CPU in between (the delay causes).

pub mod matcher;
pub mod stats;

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

use irqlens_model::kernel::{Comm, hardirq_label, softirq_name};
pub use irqlens_model::tables::BhWindow;
use irqlens_model::workload::NamedThread;

pub use irqlens_model::event::{Event, EventKind};
pub use matcher::Matcher;
pub use stats::{BhStats, CauseStats, Series};

/// The four ways Linux defers interrupt work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// A softirq: raise to handler entry.
    Softirq,
    /// A tasklet: the TASKLET/HI raise that queued it to its entry.
    Tasklet,
    /// A work item: queued to execution start.
    Workqueue,
    /// A threaded IRQ handler: the thread's wakeup to its switch-in.
    IrqThread,
}

impl Mechanism {
    /// Every mechanism, in the tables' order.
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Softirq,
        Mechanism::Tasklet,
        Mechanism::Workqueue,
        Mechanism::IrqThread,
    ];

    /// `softirq`, `tasklet`, `workqueue`, `irq_thread`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Softirq => "softirq",
            Mechanism::Tasklet => "tasklet",
            Mechanism::Workqueue => "workqueue",
            Mechanism::IrqThread => "irq_thread",
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a sample belongs to within its mechanism: the softirq vector, the tasklet's or
/// work item's function (a kernel address, named by the caller's symbol table), or the
/// IRQ thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// A softirq vector.
    Vector(u16),
    /// A tasklet's or work item's function.
    Function(u64),
    /// An IRQ thread's name.
    Thread(Comm),
}

impl Source {
    /// `NET_RX`, the function's name (`symbols` names an address), the thread's name.
    pub fn label(&self, symbols: &dyn Fn(u64) -> String) -> String {
        match *self {
            Source::Vector(vector) => softirq_name(vector.into()),
            Source::Function(address) => symbols(address),
            Source::Thread(comm) => comm.to_string(),
        }
    }
}

/// Something that ran between a request and its invocation and so delayed it (INTSPECT
/// thesis §5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DelayCause {
    /// Nothing traced ran in between.
    Undelayed,
    /// A hardirq ran.
    Irq {
        /// What raised it (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// The hardirq in which it was requested ran on after the request: a softirq raised
    /// by a handler runs at the handler's exit at the earliest.
    RaisedIn {
        /// What raised the hardirq (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// An NMI ran.
    Nmi,
    /// Another softirq vector was served first.
    SoftirqFirst(u16),
    /// The softirq was deferred to ksoftirqd instead of running at IRQ exit.
    Ksoftirqd,
    /// Another thread (of this name and cgroup) ran on the CPU before the bottom half did.
    Thread(NamedThread),
    /// The thread that ran it had to wait until this one, running when the request
    /// came, was preempted.
    Busy(NamedThread),
    /// The CPU that ran it was idle when the request came: it had to wake up first
    /// (on a VM, the hypervisor has to run the virtual CPU again).
    Idle,
    /// The kworker that ran the item had to be woken first (the scheduler's wakeup path).
    WorkerWakeup,
    /// Another work item (this function) ran on the CPU first.
    WorkFirst(u64),
    /// The workqueue's max_active held the item back until another one finished.
    HeldBack,
    /// Part of the window was not traced (an untraced CPU, or history overrun).
    Untraced,
    /// Causes seen in few samples, folded together to bound memory (`stats::CAUSES`).
    Other,
}

impl DelayCause {
    /// The thread it names, if it names one.
    pub fn thread(&self) -> Option<NamedThread> {
        match *self {
            DelayCause::Thread(thread) | DelayCause::Busy(thread) => Some(thread),
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
            DelayCause::Undelayed => "undelayed".into(),
            DelayCause::Irq { source, id } => hardirq_label(source, id, irq_names),
            DelayCause::RaisedIn { source, id } => {
                format!("raised in {}", hardirq_label(source, id, irq_names))
            }
            DelayCause::Nmi => "nmi".into(),
            DelayCause::SoftirqFirst(vector) => {
                format!("softirq {} first", softirq_name(vector.into()))
            }
            DelayCause::Ksoftirqd => "deferred to ksoftirqd".into(),
            DelayCause::Thread(thread) => format!("thread {} ran first", thread.comm),
            DelayCause::Busy(thread) => format!("thread {} was running", thread.comm),
            DelayCause::Idle => "CPU was idle (wakeup from idle)".into(),
            DelayCause::WorkerWakeup => "worker wakeup".into(),
            DelayCause::HeldBack => "held back by max_active".into(),
            DelayCause::WorkFirst(function) => format!("work {} ran first", symbols(function)),
            DelayCause::Untraced => "window not fully traced".into(),
            DelayCause::Other => "other causes (rarer ones, folded)".into(),
        }
    }
}

/// What ran on the executing CPU between request and invocation, and what delayed it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delay {
    /// What ran, as the `--json` document shows it.
    pub window: BhWindow,
    /// The time the hardirq it was requested in ran on after the request, ns.
    pub raised_in_ns: u64,
    /// What delayed it, in the order it happened.
    pub causes: Vec<DelayCause>,
}

/// One bottom half, requested and run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// How it was deferred.
    pub mechanism: Mechanism,
    /// What it belongs to within the mechanism.
    pub source: Source,
    /// The CPU it was requested on.
    pub request_cpu: u32,
    /// The CPU it ran on.
    pub cpu: u32,
    /// When it was requested, CLOCK_MONOTONIC ns.
    pub request_ns: u64,
    /// Request to invocation (handler entry), ns.
    pub latency_ns: u64,
    /// Entry to exit, with nested hardirq (and for threads, softirq) time taken out.
    pub runtime_ns: u64,
    /// The thread current when it was requested.
    pub requester: u32,
    /// The thread that ran it.
    pub executor: u32,
    /// It woke the watched thread (irqlens's stimulus) while running.
    pub woke_watched: bool,
    /// The other threads it woke while running, as far as the probe recorded their
    /// wakeups.
    pub woke: Woke,
    /// What ran between request and invocation.
    pub delay: Delay,
}

impl Sample {
    /// An interrupt landed between request and invocation: the thesis's IRQ column.
    pub fn irq_in_window(&self) -> bool {
        self.delay.window.irqs > 0
    }

    /// The latency split among its delay causes: the hardirqs and NMIs share the time
    /// they ran in the window, the softirqs served first theirs, the work items run first
    /// theirs; what is left of the latency goes to the causes that ran nothing timed (a
    /// thread that held the CPU, idle, ksoftirqd, ...), evenly. A group with no cause
    /// gets nothing: an undelayed sample's latency is the kernel's own path.
    pub fn delay_by_cause(&self) -> Vec<(DelayCause, u64)> {
        let delay = &self.delay;
        let timed = |cause: &DelayCause| match cause {
            DelayCause::Irq { .. } | DelayCause::Nmi => Some(delay.window.irq_ns),
            DelayCause::SoftirqFirst(_) => Some(delay.window.softirq_ns),
            DelayCause::WorkFirst(_) => Some(delay.window.work_ns),
            DelayCause::RaisedIn { .. } => Some(delay.raised_in_ns),
            _ => None,
        };
        let untimed_ns = self.latency_ns.saturating_sub(
            delay.window.irq_ns
                + delay.window.softirq_ns
                + delay.window.work_ns
                + delay.raised_in_ns,
        );
        let causes = delay
            .causes
            .iter()
            .filter(|cause| **cause != DelayCause::Undelayed);
        // the causes sharing each group's time
        let group = |cause: &DelayCause| match cause {
            DelayCause::Irq { .. } | DelayCause::Nmi => 0,
            DelayCause::SoftirqFirst(_) => 1,
            DelayCause::WorkFirst(_) => 2,
            DelayCause::RaisedIn { .. } => 3,
            _ => 4,
        };
        let mut members = [0u64; 5];
        for cause in causes.clone() {
            members[group(cause)] += 1;
        }
        causes
            .map(|cause| {
                let ns = timed(cause).unwrap_or(untimed_ns);
                (*cause, ns / members[group(cause)])
            })
            .collect()
    }
}

/// Threads a bottom half woke kept per sample; the others are only counted.
pub const WOKE_KEPT: usize = 4;

/// The threads one bottom half woke: whom it worked for (Zhang & West's beneficiaries).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Woke {
    /// The first `WOKE_KEPT`, in order, with their thread ids.
    pub threads: Vec<(u32, NamedThread)>,
    /// How many wakeups it made in all (a thread woken twice counts twice).
    pub count: u32,
}

impl Woke {
    /// `pid` (`thread`) was woken.
    pub fn add(&mut self, pid: u32, thread: NamedThread) {
        if self.threads.len() < WOKE_KEPT {
            self.threads.push((pid, thread));
        }
        self.count += 1;
    }
}
