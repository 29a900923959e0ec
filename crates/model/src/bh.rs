//! A bottom-half run's options and run information.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct StatsConfig {
    pub bucket_ns: u64,
    pub entries: usize,
    pub selection: Selection,
    /// Worst samples kept per mechanism, with their delay causes.
    pub worst: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BhOptions {
    pub cpus: CpuList,
    pub duration: Option<Duration>,
    pub trigger: Option<TriggerOptions>,
    pub load: LoadScenario,
    /// Its selection is set by the run: all samples, or the stimulus's.
    pub stats: StatsConfig,
    /// `bh hist`: the histogram layout; `None` for `bh top`.
    pub hist: Option<HistOptions>,
    /// Rows per mechanism in the delay causes table.
    pub causes: usize,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct TriggerOptions {
    pub kind: TriggerKind,
    pub rate_hz: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TriggerReport {
    pub kind: TriggerKind,
    pub rate_hz: u32,
    pub cpu: u32,
    pub tid: u32,
    /// Requests the stimulus made.
    pub requests: u64,
    pub kernel_path: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct BhRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    pub matching: MatchCounts,
    /// Requests not yet served when the run ended.
    pub pending_softirqs: u64,
    pub pending_works: u64,
    /// Softirq runs the kernel counted (/proc/softirqs) on the traced CPUs while tracing
    /// was on, per vector: what the softirq samples can be checked against.
    pub kernel_softirq_runs: BTreeMap<String, u64>,
    pub load: LoadScenario,
    pub load_tasks: u32,
    pub trigger: Option<TriggerReport>,
}

/// What the matcher could not match, so the user knows what the tables leave out.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, JsonSchema,
)]
pub struct MatchCounts {
    pub events: u64,
    /// Raises of an already pending softirq (merged into the first).
    pub reraises: u64,
    /// Invocations with no request seen (requested before tracing began, or a re-raise
    /// the kernel served twice).
    pub unmatched_softirqs: u64,
    pub unmatched_tasklets: u64,
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
