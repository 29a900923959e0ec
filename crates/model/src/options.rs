//! A run's resolved options as one value: what a recording keeps so that `irqlens
//! report` replays it with the options it was made with, without its command line.

use serde::{Deserialize, Serialize};

use crate::account::AccountOptions;
use crate::bh::BhOptions;
use crate::bounds::{Check, Checked};
use crate::noise::NoiseOptions;
use crate::system::Capability;
use crate::units::CpuList;
use crate::wakeup::WakeupOptions;

/// The options of one capability's run, tagged with the capability.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "capability", rename_all = "lowercase")]
pub enum RunOptions {
    /// `irqlens noise`.
    Noise(NoiseOptions),
    /// `irqlens bh`.
    Bh(BhOptions),
    /// `irqlens wakeup`.
    Wakeup(WakeupOptions),
    /// `irqlens account`.
    Account(AccountOptions),
}

impl RunOptions {
    /// Which capability they are for.
    pub fn capability(&self) -> Capability {
        match self {
            RunOptions::Noise(_) => Capability::Noise,
            RunOptions::Bh(_) => Capability::Bh,
            RunOptions::Wakeup(_) => Capability::Wakeup,
            RunOptions::Account(_) => Capability::Account,
        }
    }

    /// How long the run lasts, if it has an end.
    pub fn duration(&self) -> Option<std::time::Duration> {
        match self {
            RunOptions::Noise(o) => o.duration,
            RunOptions::Bh(o) => o.duration,
            RunOptions::Wakeup(o) => o.duration,
            RunOptions::Account(o) => o.duration,
        }
    }

    /// The CPUs the run measured.
    pub fn cpus(&self) -> &CpuList {
        match self {
            RunOptions::Noise(o) => &o.cpus,
            RunOptions::Bh(o) => &o.cpus,
            RunOptions::Wakeup(o) => &o.cpus,
            RunOptions::Account(o) => &o.cpus,
        }
    }
}

/// What a recording's header says is checked as the command line is.
impl Check for RunOptions {
    fn check(&self) -> Checked {
        match self {
            RunOptions::Noise(o) => o.check(),
            RunOptions::Bh(o) => o.check(),
            RunOptions::Wakeup(o) => o.check(),
            RunOptions::Account(o) => o.check(),
        }
    }
}
