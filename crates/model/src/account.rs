//! An accounting run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::RunCommon;

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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AccountOptions {
    /// CPUs whose interrupts and threads are traced.
    pub cpus: CpuList,
    /// How long to run; `None`: until Ctrl-C.
    pub duration: Option<Duration>,
    /// A report every this long, besides the one of the whole run.
    pub interval: Option<Duration>,
    /// Also run the compensation algorithm of Zhang & West §3.1.
    pub compensate: bool,
    /// One row per thread instead of per process.
    pub threads: bool,
    /// Rows in the table and in the victim and causer rankings.
    pub top: usize,
}

/// How an accounting run went, besides its analysis.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AccountRunInfo {
    /// What every run reports.
    #[serde(flatten)]
    pub common: RunCommon,
    /// The tick rate the compensation settled on (measured).
    pub hz: Option<u32>,
}
