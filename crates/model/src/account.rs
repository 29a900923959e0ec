//! An accounting run's inputs, options and run information.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{Check, Checked, check_cpus, check_optional_time, check_rows, check_time};
use crate::run::RunCommon;

use crate::units::CpuList;
use crate::workload::{CgroupId, WorkloadBy};

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
    /// Its cgroup v2 id, if /proc named a cgroup irqlens could find (recordings older than
    /// the field have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupId>,
}

/// What `irqlens account` measures, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Also a table per workload (`--by`): charged and served per cgroup, pod, container
    /// or unit.
    #[serde(default)]
    pub by: Option<WorkloadBy>,
    /// Only the tasks in these cgroup v2 paths and their descendants (`--cgroup`); empty:
    /// every task.
    #[serde(default)]
    pub cgroups: Vec<String>,
    /// Also follow socket deliveries to their readers (`sk_data_ready` and
    /// `sock_recv_length`, which run for every socket read and delivery on the machine):
    /// without them, a delivery serves its reader only through the wakeup it causes, and
    /// the work for a reader that never slept is orphan time. On but in the agent's
    /// cheaper setting (`[account] sockets`).
    #[serde(default = "follow_sockets")]
    pub sockets: bool,
}

/// Recordings made before `AccountOptions::sockets` followed the sockets.
fn follow_sockets() -> bool {
    true
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

/// Rows in the table and the rankings unless told otherwise (`--top`).
pub const DEFAULT_TOP: usize = 10;

impl AccountOptions {
    /// `irqlens account -c CPUS` with no other option: per process, until Ctrl-C.
    pub fn defaults(cpus: CpuList) -> AccountOptions {
        AccountOptions {
            cpus,
            duration: None,
            interval: None,
            compensate: false,
            threads: false,
            top: DEFAULT_TOP,
            by: None,
            cgroups: Vec::new(),
            sockets: true,
        }
    }
}

/// The shortest periodic report (`--interval`).
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

impl Check for AccountOptions {
    /// Whether the options are ones `irqlens account` takes (see [`crate::bounds`]).
    fn check(&self) -> Checked {
        check_cpus("--cpus", &self.cpus)?;
        check_optional_time("--duration", self.duration, false)?;
        if let Some(interval) = self.interval {
            if interval < MIN_INTERVAL {
                return Err("--interval must be at least 100 ms".into());
            }
            check_time("--interval", interval, false)?;
            if self.duration.is_some_and(|d| interval > d) {
                return Err(
                    "--interval is longer than --duration: there would be no periodic report"
                        .into(),
                );
            }
        }
        if self.top == 0 {
            return Err("--top must be at least 1".into());
        }
        check_rows("--top", self.top)
    }
}
