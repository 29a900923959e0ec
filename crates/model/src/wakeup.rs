//! A wakeup run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::RunCommon;

use crate::hist::HistOptions;
use crate::sched::Priority;
use crate::units::CpuList;

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct StatsConfig {
    pub bucket_ns: u64,
    pub entries: usize,
    /// Worst samples kept whole.
    pub worst: usize,
    /// Stop at the first sample whose total (or timer IRQ latency) reaches this.
    pub stop_total_ns: Option<u64>,
    pub stop_irq_ns: Option<u64>,
}

/// What is woken.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum WakeupMode {
    /// One irqlens thread per CPU, sleeping on an absolute timer (cyclictest, timerlat).
    Timer(TimerOptions),
    /// An existing process or thread name.
    Task(Watched),
}

impl WakeupMode {
    pub fn is_timer(&self) -> bool {
        matches!(self, WakeupMode::Timer(_))
    }

    /// Whether the probe runs: always in task mode, unless --no-trace in timer mode.
    pub fn traced(&self) -> bool {
        match self {
            WakeupMode::Timer(timer) => timer.trace,
            WakeupMode::Task(_) => true,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct TimerOptions {
    pub period: Duration,
    pub priority: Priority,
    /// Trace nothing: measure the total only, as cyclictest does (and the probes' cost
    /// can be told by comparing).
    pub trace: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WakeupOptions {
    pub cpus: CpuList,
    pub duration: Option<Duration>,
    pub mode: WakeupMode,
    pub stats: StatsConfig,
    /// `wakeup hist`: the histogram layout; `None` for `wakeup top`.
    pub hist: Option<HistOptions>,
    /// Rows in the causes table.
    pub causes: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct WakeupRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    pub traced: bool,
    pub tracking: TrackCounts,
    /// Timer mode: the measurement threads, and the periods they missed (woken a whole
    /// period late or more).
    pub threads: Vec<TimerThread>,
    pub missed_periods: u64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TimerThread {
    pub cpu: u32,
    pub tid: u32,
}

/// What could not be made a sample, so the user knows what the tables leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
pub struct TrackCounts {
    pub events: u64,
    /// Wakeups of a target by a thread rather than an interrupt (a futex, a pipe).
    pub thread_wakeups: u64,
    /// Wakeups of a target that had not gone to sleep yet: no switch was needed.
    pub woken_running: u64,
    /// Woken again before it ran: the earlier wakeup was superseded.
    pub rewoken: u64,
    /// Timer mode: activations the thread reported but no traced wakeup matched (their
    /// total is known, not its parts).
    pub undecomposed: u64,
    /// Timer mode: traced wakeups the thread never reported (the run ended first, or the
    /// wakeup was not its timer's).
    pub unreported: u64,
    /// Samples whose window was not fully traced.
    pub incomplete: u64,
    /// Wakeups of a target done on a CPU that is not traced (task mode with -c).
    pub untraced_wakeups: u64,
    /// Wakeups of a target whose switch-in never came (a lost switch, or the thread
    /// exited): forgotten after 32768 to 65536 later wakeups, to bound memory.
    #[serde(default)]
    pub forgotten_wakeups: u64,
}

/// One activation as a timer-mode thread saw it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Report {
    pub tid: u32,
    pub cpu: u32,
    pub expected_ns: u64,
    pub user_ns: u64,
}

impl Report {
    pub fn total_ns(&self) -> u64 {
        self.user_ns.saturating_sub(self.expected_ns)
    }
}

/// Whose wakeups (and armed hrtimers) are always checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Watched {
    /// Every thread of this process.
    Process(u32),
    /// Every thread with this name (at most 15 bytes, as the kernel keeps it).
    Name(String),
}

impl std::fmt::Display for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Watched::Process(pid) => write!(f, "pid {pid}"),
            Watched::Name(name) => write!(f, "comm {name}"),
        }
    }
}
