//! The machine a run ran on, and what was measured.

use serde::{Deserialize, Serialize};

use crate::units::CpuList;

/// What was measured: the subcommand that made the recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// `irqlens noise`.
    Noise,
    /// `irqlens bh`.
    Bh,
    /// `irqlens wakeup`.
    Wakeup,
    /// `irqlens account`.
    Account,
}

impl Capability {
    /// The subcommand's name.
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
    /// The host's name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// The kernel's .config (from /proc/config.gz or /boot), if the machine has it.
    pub kernel_config: Option<String>,
    /// /proc/cmdline.
    pub boot_cmdline: String,
    /// The CPU's model name (/proc/cpuinfo).
    pub cpu_model: String,
    /// CPUs online.
    pub online_cpus: CpuList,
    /// The current clocksource (/sys/devices/system/clocksource).
    pub clocksource: String,
    /// The text of /proc/interrupts.
    pub interrupts: String,
    /// The text of /proc/softirqs.
    pub softirqs: String,
}
