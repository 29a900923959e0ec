//! The machine a run ran on, and what was measured.

use serde::{Deserialize, Serialize};

use crate::units::CpuList;

/// What was measured: the subcommand that made the recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Noise,
    Bh,
    Wakeup,
    Account,
}

impl Capability {
    pub fn name(self) -> &'static str {
        match self {
            Capability::Noise => "noise",
            Capability::Bh => "bh",
            Capability::Wakeup => "wakeup",
            Capability::Account => "account",
        }
    }
}

/// The machine when the run started.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SystemSnapshot {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    /// The kernel's .config (from /proc/config.gz or /boot), if the machine has it.
    pub kernel_config: Option<String>,
    pub boot_cmdline: String,
    pub cpu_model: String,
    pub online_cpus: CpuList,
    pub clocksource: String,
    pub interrupts: String,
    pub softirqs: String,
}
