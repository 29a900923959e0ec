//! `irqlens steer`: bottom-half threads (threaded NAPI's `napi/DEV-N`, IRQ threads,
//! ksoftirqd) kept at the scheduling priority of the processes they serve, as Zhang &
//! West §3.2 propose for bottom halves ("process-aware interrupt scheduling").

use std::time::Duration;

use serde::Serialize;

use crate::sched::Priority;
use crate::units::CpuList;

/// What `irqlens steer` runs with, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct SteerOptions {
    /// Only the NAPI threads of these devices (`napi/DEV-N`); empty: every bottom-half
    /// thread seen serving a socket.
    pub devices: Vec<String>,
    /// How long to run; none: until Ctrl-C/SIGTERM.
    pub duration: Option<Duration>,
    /// How long a served process counts as waiting on a thread after the last data the
    /// thread queued for it: a thread is lowered only once its highest waiter has been
    /// quiet this long (the hysteresis that keeps it from thrashing).
    pub hold: Duration,
    /// Log the changes, make none.
    pub dry_run: bool,
    /// Leave ksoftirqd alone (it serves every softirq of its CPU, not only the flow's).
    pub no_ksoftirqd: bool,
}

/// One change of a bottom-half thread's scheduling.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SteerChange {
    /// When, ns since the run began.
    pub at_ns: u64,
    /// The thread changed.
    pub tid: u32,
    /// Its name.
    pub comm: String,
    /// Its scheduling before (`o:NICE`, `f:PRIO`, `r:PRIO`).
    pub from: String,
    /// Its scheduling after.
    pub to: String,
    /// Why: the process it serves whose priority it takes, or that none waits any more.
    pub why: String,
    /// Made (false under `--dry-run`).
    pub made: bool,
}

/// What a bottom-half thread did during the run.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SteeredThread {
    /// The thread.
    pub tid: u32,
    /// Its name.
    pub comm: String,
    /// Its scheduling when first seen (what irqlens puts back).
    pub original: String,
    /// Its scheduling at the end of the run, before it is put back.
    pub last: String,
    /// Data queued to sockets by this thread.
    pub deliveries: u64,
    /// Changes made to it.
    pub changes: u64,
    /// Every process it served (tid, comm and scheduling when last seen).
    pub served: Vec<ServedProcess>,
}

/// A thread a bottom-half thread queued data for.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ServedProcess {
    /// The reading thread.
    pub tid: u32,
    /// Its name.
    pub comm: String,
    /// Its scheduling when last seen.
    pub scheduling: String,
    /// Data queued for it.
    pub deliveries: u64,
}

/// What `irqlens steer --json` prints.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SteerReport {
    /// Which tool and version; the command is always "steer".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The kernel release.
    pub kernel: String,
    /// The CPUs traced (all online ones).
    pub cpus: CpuList,
    /// The run.
    pub run: SteerRun,
    /// Every change, in order.
    pub changes: Vec<SteerChange>,
    /// The bottom-half threads seen serving sockets.
    pub threads: Vec<SteeredThread>,
}

/// The run's facts and irqlens's own cost.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SteerRun {
    /// Data-ready events taken from the probe.
    pub events: u64,
    /// Events lost (full record areas).
    pub lost_events: u64,
    /// How long it ran, ns.
    pub elapsed_ns: u64,
    /// Whether Ctrl-C/SIGTERM ended it.
    pub interrupted: bool,
    /// `--hold`, ns.
    pub hold_ns: u64,
    /// `--dry-run`.
    pub dry_run: bool,
    /// Data-ready events per second.
    pub events_per_s: f64,
    /// irqlens's own CPU time (user + system, all its threads) per second run, percent
    /// of one CPU.
    pub cpu_percent: f64,
    /// Data queued to sockets from softirq context of whatever thread was interrupted:
    /// no thread to steer (the device's NAPI is not threaded).
    pub unsteerable_deliveries: u64,
}

/// The scheduling a bottom-half thread takes from the processes it serves: the highest
/// among them. Real-time policies keep their priority (SCHED_DEADLINE counts as FIFO 99:
/// above every fixed priority); SCHED_OTHER waiters give SCHED_OTHER at the lowest nice
/// among them (the heaviest weight).
pub fn served_priority(waiters: impl IntoIterator<Item = Priority>) -> Option<Priority> {
    waiters.into_iter().map(as_thread_priority).max_by_key(rank)
}

fn as_thread_priority(priority: Priority) -> Priority {
    match priority {
        Priority::Deadline { .. } => Priority::Fifo(99),
        other => other,
    }
}

/// Orders priorities as the scheduler does: every real-time one above every SCHED_OTHER
/// one, higher rt priority first, lower nice first; FIFO above RR at the same priority.
pub fn rank(priority: &Priority) -> (u8, i64, u8) {
    match *priority {
        Priority::Other { nice } => (0, -(nice as i64), 0),
        Priority::RoundRobin(prio) => (1, prio as i64, 0),
        Priority::Fifo(prio) => (1, prio as i64, 1),
        Priority::Deadline { .. } => (2, 0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_waiter_gives_the_priority() {
        let other = |nice| Priority::Other { nice };
        assert_eq!(served_priority([]), None);
        assert_eq!(
            served_priority([other(5), other(-3), other(0)]),
            Some(other(-3))
        );
        assert_eq!(
            served_priority([other(-20), Priority::Fifo(1)]),
            Some(Priority::Fifo(1))
        );
        assert_eq!(
            served_priority([Priority::Fifo(80), Priority::RoundRobin(90)]),
            Some(Priority::RoundRobin(90))
        );
        assert_eq!(
            served_priority([Priority::RoundRobin(50), Priority::Fifo(50)]),
            Some(Priority::Fifo(50))
        );
        let deadline = Priority::Deadline {
            runtime: Duration::from_millis(1),
            period: Duration::from_millis(10),
        };
        assert_eq!(
            served_priority([Priority::Fifo(98), deadline]),
            Some(Priority::Fifo(99))
        );
    }
}
