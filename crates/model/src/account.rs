//! An accounting run's inputs, options and run information.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::CpuList;

/// What /proc told of a thread.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadInfo {
    /// Its process (thread group) id.
    pub tgid: u32,
    /// Its name (comm).
    pub comm: String,
    /// CPU time the kernel accounted to it during the run (schedstat's sum_exec_runtime
    /// at the end minus at the start), if it lived through both readings.
    pub runtime_ns: Option<u64>,
}

/// What `irqlens account` measures, and how.
#[derive(Clone, Debug)]
pub struct AccountOptions {
    /// CPUs whose interrupts and threads are traced.
    pub cpus: CpuList,
    /// How long to run; `None`: until Ctrl-C.
    pub duration: Option<Duration>,
    /// A report every this long, besides the one of the whole run.
    pub interval: Option<Duration>,
    /// Also run the compensation algorithm of Zhang & West §3.1.
    pub compensate: bool,
}

/// How an accounting run went, besides its analysis.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccountRunInfo {
    /// Time traced, ns.
    pub elapsed_ns: u64,
    /// BPF programs loaded and attached.
    pub programs: usize,
    /// Tracepoints this kernel lacks, whose programs were not loaded.
    pub skipped_tracepoints: Vec<String>,
    /// Checkpoints analyzed.
    pub events: u64,
    /// Checkpoints lost because a CPU's record area was full.
    pub lost_events: u64,
    /// Per CPU that lost some (the CPU whose area was full).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lost_by_cpu: BTreeMap<u32, u64>,
    /// The tick rate the compensation settled on (measured).
    pub hz: Option<u32>,
    /// Ended by Ctrl-C or SIGTERM.
    pub interrupted: bool,
}
