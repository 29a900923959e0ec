//! A bottom-half run's options and run information.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{Check, Checked, check_buckets, check_cpus, check_optional_time, check_rows};
use crate::run::RunCommon;

use crate::hist::HistOptions;
use crate::stimulus::{LoadScenario, TriggerKind};
use crate::units::CpuList;

/// Which samples a run is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selection {
    /// Every bottom half (passive mode).
    All,
    /// Those requested by this thread (a stimulus that queues work or raises directly).
    RaisedBy(u32),
    /// Those that woke this thread (a stimulus waiting for its timer or I/O).
    Woke(u32),
}

/// How the bottom-half statistics are gathered.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatsConfig {
    /// Histogram bucket size, ns.
    pub bucket_ns: u64,
    /// Number of histogram buckets; later samples go to the OOB column.
    pub entries: usize,
    /// Which samples count.
    pub selection: Selection,
    /// Worst samples kept per mechanism, with their delay causes.
    pub worst: usize,
}

/// What `irqlens bh` measures, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BhOptions {
    /// CPUs whose bottom halves are traced.
    pub cpus: CpuList,
    /// How long to run; `None`: until Ctrl-C.
    pub duration: Option<Duration>,
    /// How long the load runs before tracing starts (`--warm-up`); `duration` counts
    /// from its end.
    #[serde(default)]
    pub warm_up: Option<Duration>,
    /// The stimulus of active mode; `None`: passive mode.
    pub trigger: Option<TriggerOptions>,
    /// Spinning tasks run during the measurement.
    pub load: LoadScenario,
    /// Its selection is set by the run: all samples, or the stimulus's.
    pub stats: StatsConfig,
    /// `bh hist`: the histogram layout; `None` for `bh top`.
    pub hist: Option<HistOptions>,
    /// Rows per mechanism in the delay causes table.
    pub causes: usize,
}

/// Active mode: the bottom half irqlens causes, and how often.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TriggerOptions {
    /// The stimulus.
    pub kind: TriggerKind,
    /// Requests per second.
    pub rate_hz: u32,
}

/// What the stimulus of an active run did.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TriggerReport {
    /// The stimulus.
    pub kind: TriggerKind,
    /// Requests per second asked for.
    pub rate_hz: u32,
    /// The CPU its thread was pinned to.
    pub cpu: u32,
    /// Its thread id.
    pub tid: u32,
    /// Requests the stimulus made.
    pub requests: u64,
    /// The kernel path a request takes, and which samples are the stimulus's.
    pub kernel_path: String,
}

/// How a bottom-half run went, besides its statistics.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct BhRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    /// What the matcher could and could not match.
    pub matching: MatchCounts,
    /// Softirq raises not yet served when the run ended.
    pub pending_softirqs: u64,
    /// Work items queued and not yet started when the run ended.
    pub pending_works: u64,
    /// Softirq runs the kernel counted (/proc/softirqs) on the traced CPUs while tracing
    /// was on, per vector: what the softirq samples can be checked against.
    pub kernel_softirq_runs: BTreeMap<String, u64>,
    /// The load scenario.
    pub load: LoadScenario,
    /// Spinning tasks it ran.
    pub load_tasks: u32,
    /// Active mode: what the stimulus did.
    pub trigger: Option<TriggerReport>,
    /// What the kernel the run measured keeps irqlens from observing, a line each (none
    /// in format 1 recordings, which did not keep it).
    #[serde(default)]
    pub not_observable: Vec<String>,
}

/// What the matcher could not match, so the user knows what the tables leave out.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, JsonSchema,
)]
pub struct MatchCounts {
    /// Checkpoints the matcher read.
    pub events: u64,
    /// Raises of an already pending softirq (merged into the first).
    pub reraises: u64,
    /// Invocations with no request seen (requested before tracing began, or a re-raise
    /// the kernel served twice).
    pub unmatched_softirqs: u64,
    /// Tasklet runs with no TASKLET/HI raise seen before their softirq began.
    pub unmatched_tasklets: u64,
    /// Work items begun with no queueing seen.
    pub unmatched_works: u64,
    /// Work queued again before it ran: the earlier request was cancelled.
    pub cancelled_works: u64,
    /// Work queued and never started while 32768 (QUEUED_WORKS / 2) to 65536 later
    /// items were queued: forgotten, to bound memory.
    pub stale_works: u64,
    /// Work items begun whose end never came (lost by the ring): forgotten likewise
    /// after 2048 to 4096 later starts.
    #[serde(default)]
    pub unended_works: u64,
    /// Samples whose window was not fully traced.
    pub incomplete_windows: u64,
}

/// The trigger's rate unless told otherwise (`--rate`), requests per second.
pub const DEFAULT_RATE_HZ: u32 = 50;
/// The spinning tasks unless told otherwise (`--load`).
pub const DEFAULT_LOAD: LoadScenario = LoadScenario::Zero;
/// Rows per mechanism in the delay causes table unless told otherwise (`--causes`).
pub const DEFAULT_CAUSES: usize = 8;
/// Slowest samples shown per mechanism unless told otherwise (`--worst`).
pub const DEFAULT_WORST: usize = 3;

impl BhOptions {
    /// `irqlens bh -c CPUS` with no other option: passive mode, until Ctrl-C, `bh top`.
    pub fn defaults(cpus: CpuList) -> BhOptions {
        let layout = HistOptions::default();
        BhOptions {
            cpus,
            duration: None,
            warm_up: None,
            trigger: None,
            load: DEFAULT_LOAD,
            stats: StatsConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                selection: Selection::All,
                worst: DEFAULT_WORST,
            },
            hist: None,
            causes: DEFAULT_CAUSES,
        }
    }
}

/// The fastest trigger (`--rate`), requests per second.
pub const MAX_TRIGGER_RATE: u32 = 10_000;

impl Check for BhOptions {
    /// Whether the options are ones `irqlens bh` takes (see [`crate::bounds`]).
    fn check(&self) -> Checked {
        check_cpus("--cpus", &self.cpus)?;
        check_optional_time("--duration", self.duration, false)?;
        check_optional_time("--warm-up", self.warm_up, true)?;
        if let Some(trigger) = &self.trigger
            && !(1..=MAX_TRIGGER_RATE).contains(&trigger.rate_hz)
        {
            return Err(format!(
                "--rate must be 1 to {MAX_TRIGGER_RATE} requests per second"
            ));
        }
        check_buckets(self.stats.bucket_ns, self.stats.entries)?;
        check_rows("--worst", self.stats.worst)?;
        self.hist.as_ref().map_or(Ok(()), HistOptions::check)?;
        check_rows("--causes", self.causes)
    }
}
