//! A wakeup run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{
    Check, Checked, check_buckets, check_cpus, check_optional_time, check_rows, within,
};
use crate::run::RunCommon;

use crate::hist::HistOptions;
use crate::sched::Priority;
use crate::units::CpuList;

/// How the wakeup statistics are gathered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimerOptions {
    /// The timer's period.
    pub period: Duration,
    /// The threads' scheduling policy and priority.
    pub priority: Priority,
    /// Trace nothing: measure the total only, as cyclictest does (and the probes' cost
    /// can be told by comparing).
    pub trace: bool,
    /// `-A`: the threads' first expiries aligned on one start, each this much (ns) after
    /// the previous thread's (0: all at once), as cyclictest's and rtla timerlat's -A;
    /// `None`: each thread starts one period after it is ready, at a phase of its own.
    #[serde(default)]
    pub aligned_ns: Option<u64>,
}

/// What `--dma-latency` asks of /dev/cpu_dma_latency, the CPUs' PM QoS latency target
/// (how deep an idle state they may enter): as cyclictest and rtla timerlat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaLatency {
    /// Left as the machine has it (`off`).
    Untouched,
    /// Held at this many µs while the run goes (0: no idle state with an exit latency).
    Micros(u32),
}

impl std::str::FromStr for DmaLatency {
    type Err = String;

    /// `off` (or `none`), or µs with an optional unit: `0`, `10`, `10us`, `1ms`.
    fn from_str(text: &str) -> Result<Self, String> {
        if matches!(text.trim(), "off" | "none") {
            return Ok(DmaLatency::Untouched);
        }
        let latency = crate::units::parse_micros(text)?;
        if latency.subsec_nanos() % 1_000 != 0 {
            return Err(format!("'{}' is not a whole number of µs", text.trim()));
        }
        // the kernel takes an s32 of µs
        u32::try_from(latency.as_micros())
            .ok()
            .filter(|&us| us <= i32::MAX as u32)
            .map(DmaLatency::Micros)
            .ok_or_else(|| format!("'{}' is too large for a PM QoS target", text.trim()))
    }
}

/// What `irqlens wakeup` measures, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The PM QoS latency target (/dev/cpu_dma_latency) held during the run, µs; `None`:
    /// left as it was.
    #[serde(default)]
    pub dma_latency_us: Option<u32>,
    /// Task mode: only the watched tasks in these cgroup v2 paths and their descendants
    /// (`--cgroup`); empty: every watched task.
    #[serde(default)]
    pub cgroups: Vec<String>,
}

/// The timer threads' period unless told otherwise (`-p`), as `--help` shows it (µs).
pub const DEFAULT_PERIOD_TEXT: &str = "1000";
/// [`DEFAULT_PERIOD_TEXT`]: cyclictest's.
pub const DEFAULT_PERIOD: Duration = Duration::from_micros(1000);
/// The timer threads' scheduling unless told otherwise (`-P`): rtla timerlat's.
pub const DEFAULT_PRIORITY: Priority = Priority::Fifo(95);
/// Rows in the causes table unless told otherwise (`--causes`).
pub const DEFAULT_CAUSES: usize = 10;
/// Slowest samples shown whole unless told otherwise (`--worst`).
pub const DEFAULT_WORST: usize = 3;
/// The PM QoS latency target timer mode holds unless told otherwise (`--dma-latency`),
/// µs: no idle state with an exit latency, as cyclictest.
pub const TIMER_DMA_LATENCY_US: u32 = 0;

impl Default for TimerOptions {
    /// Timer threads as `irqlens wakeup` runs them with no option: traced, each at a
    /// phase of its own.
    fn default() -> Self {
        TimerOptions {
            period: DEFAULT_PERIOD,
            priority: DEFAULT_PRIORITY,
            trace: true,
            aligned_ns: None,
        }
    }
}

impl WakeupOptions {
    /// `irqlens wakeup -c CPUS` with no other option: timer mode, until Ctrl-C, `wakeup
    /// top`.
    pub fn timer(cpus: CpuList) -> WakeupOptions {
        let layout = HistOptions::default();
        WakeupOptions {
            cpus,
            duration: None,
            warm_up: None,
            mode: WakeupMode::Timer(TimerOptions::default()),
            stats: StatsConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                worst: DEFAULT_WORST,
                stop_total_ns: None,
                stop_irq_ns: None,
            },
            hist: None,
            causes: DEFAULT_CAUSES,
            dma_latency_us: Some(TIMER_DMA_LATENCY_US),
            cgroups: Vec::new(),
        }
    }
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
    /// What the run changed on the machine while it went (and undid after).
    #[serde(flatten)]
    pub held: HeldSettings,
}

/// What a run changed on the machine for its duration, as cyclictest does: each is
/// undone when the run ends, however it ends (the kernel drops both with the process).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HeldSettings {
    /// The PM QoS latency target irqlens held on /dev/cpu_dma_latency, µs; null when
    /// it did not touch it (`--dma-latency off`, task mode, or the file could not be
    /// written: a warning then said why).
    #[serde(default)]
    pub dma_latency_us: Option<u32>,
    /// Whether the process's memory was locked (mlockall), so no page fault delays a
    /// timer thread.
    #[serde(default)]
    pub memory_locked: bool,
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

/// The timer's period bounds (`--period`).
pub const MIN_PERIOD: Duration = Duration::from_micros(100);
/// See [`MIN_PERIOD`].
pub const MAX_PERIOD: Duration = Duration::from_secs(10);

impl Check for WakeupOptions {
    /// Whether the options are ones `irqlens wakeup` takes (see [`crate::bounds`]).
    fn check(&self) -> Checked {
        check_cpus("--cpus", &self.cpus)?;
        check_optional_time("--duration", self.duration, false)?;
        check_optional_time("--warm-up", self.warm_up, true)?;
        if let WakeupMode::Timer(timer) = &self.mode {
            if timer.period < MIN_PERIOD || timer.period > MAX_PERIOD {
                return Err("--period must be 100 us to 10 s".into());
            }
            if timer
                .aligned_ns
                .is_some_and(|offset| u128::from(offset) > timer.period.as_nanos())
            {
                return Err("--aligned must not exceed the period".into());
            }
        }
        if let Some(us) = self.dma_latency_us {
            within("--dma-latency", us, 0, i32::MAX as u32)?;
        }
        let stats = &self.stats;
        check_buckets(stats.bucket_ns, stats.entries)?;
        check_rows("--worst", stats.worst)?;
        for (what, stop) in [
            ("--thread", stats.stop_total_ns),
            ("--irq", stats.stop_irq_ns),
        ] {
            check_optional_time(what, stop.map(Duration::from_nanos), true)?;
        }
        self.hist.as_ref().map_or(Ok(()), HistOptions::check)?;
        check_rows("--causes", self.causes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_latency_reads_micros_or_off() {
        let parse = |text: &str| text.parse::<DmaLatency>();
        assert_eq!(parse("0"), Ok(DmaLatency::Micros(0)));
        assert_eq!(parse("10"), Ok(DmaLatency::Micros(10)));
        assert_eq!(parse("10us"), Ok(DmaLatency::Micros(10)));
        assert_eq!(parse("2ms"), Ok(DmaLatency::Micros(2_000)));
        assert_eq!(parse("off"), Ok(DmaLatency::Untouched));
        assert_eq!(parse("none"), Ok(DmaLatency::Untouched));
        assert!(parse("1500ns").unwrap_err().contains("whole number of µs"));
        assert!(parse("-1").unwrap_err().contains("must be positive"));
        assert!(parse("3000s").unwrap_err().contains("too large"));
        assert!(parse("soon").is_err());
    }

    #[test]
    fn older_run_information_reads_without_held_settings() {
        let info: WakeupRunInfo = serde_json::from_value(serde_json::json!({
            "elapsed_ns": 1, "lost_events": 0, "programs": 0, "skipped_tracepoints": [],
            "interrupted": false, "traced": false, "tracking": TrackCounts::default(),
            "threads": [], "missed_periods": 0,
        }))
        .unwrap();
        assert_eq!(info.held, HeldSettings::default());
        let held = HeldSettings {
            dma_latency_us: Some(0),
            memory_locked: true,
        };
        let json = serde_json::to_value(WakeupRunInfo {
            held: held.clone(),
            ..info
        })
        .unwrap();
        assert_eq!(json["dma_latency_us"], 0);
        assert_eq!(json["memory_locked"], true);
        let back: WakeupRunInfo = serde_json::from_value(json).unwrap();
        assert_eq!(back.held, held);
    }
}
