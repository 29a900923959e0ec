//! A wakeup run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::RunCommon;

use crate::hist::HistOptions;
use crate::sched::Priority;
use crate::units::CpuList;

/// How the wakeup statistics are gathered.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct StatsConfig {
    /// Histogram bucket size, ns.
    pub bucket_ns: u64,
    /// Number of histogram buckets.
    pub entries: usize,
    /// Worst samples kept whole.
    pub worst: usize,
    /// Stop at the first sample whose total latency reaches this, ns.
    pub stop_total_ns: Option<u64>,
    /// Stop at the first sample whose timer IRQ latency reaches this, ns.
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
    /// Whether it is timer mode.
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

/// Timer mode's measurement threads.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct TimerOptions {
    /// The timer's period.
    pub period: Duration,
    /// The threads' scheduling policy and priority.
    pub priority: Priority,
    /// Trace nothing: measure the total only, as cyclictest does (and the probes' cost
    /// can be told by comparing).
    pub trace: bool,
}

/// What `irqlens wakeup` measures, and how.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WakeupOptions {
    /// CPUs traced (timer mode: one thread on each).
    pub cpus: CpuList,
    /// How long to run; `None`: until Ctrl-C or a stop limit.
    pub duration: Option<Duration>,
    /// How long the run goes before it measures (`--warm-up`): what happens meanwhile
    /// is discarded, and `duration` counts from its end.
    #[serde(default)]
    pub warm_up: Option<Duration>,
    /// What is woken.
    pub mode: WakeupMode,
    /// How the results are summarized.
    pub stats: StatsConfig,
    /// `wakeup hist`: the histogram layout; `None` for `wakeup top`.
    pub hist: Option<HistOptions>,
    /// Rows in the causes table.
    pub causes: usize,
}

/// How a wakeup run went, besides its statistics.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct WakeupRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    /// Whether the probe ran (not with --no-trace).
    pub traced: bool,
    /// What the tracker could and could not make samples of.
    pub tracking: TrackCounts,
    /// Timer mode: the measurement threads.
    pub threads: Vec<TimerThread>,
    /// Timer mode: the periods they missed (woken a whole period late or more).
    pub missed_periods: u64,
}

/// A timer-mode measurement thread.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TimerThread {
    /// The CPU it is pinned to.
    pub cpu: u32,
    /// Its thread id.
    pub tid: u32,
}

/// What could not be made a sample, so the user knows what the tables leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
pub struct TrackCounts {
    /// Checkpoints the tracker read.
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
    /// The thread.
    pub tid: u32,
    /// Its CPU.
    pub cpu: u32,
    /// The timer's expiry, CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    /// When the thread read the clock after waking, CLOCK_MONOTONIC ns.
    pub user_ns: u64,
}

impl Report {
    /// The latency the thread saw (expiry to its clock read), ns.
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
