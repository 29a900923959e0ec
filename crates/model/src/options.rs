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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording's options (as the v2 fixture's header keeps them), with `edit` made.
    fn options(edit: impl FnOnce(&mut serde_json::Value)) -> RunOptions {
        let mut value = serde_json::json!({
            "capability": "noise", "cpus": [1], "duration": {"secs": 2, "nanos": 0},
            "workload": {"period": {"secs": 1, "nanos": 0}, "runtime": {"secs": 1, "nanos": 0},
                         "threshold": {"secs": 0, "nanos": 5000}, "stop_single": null,
                         "stop_total": null, "priority": "o:0", "max_samples": 65536},
            "housekeeping": null,
            "analysis": {"bucket_ns": 1000, "entries": 50, "keep_recent": 10},
            "hist": {"bucket_size": 1, "entries": 50, "with_zeros": false, "no_summary": false},
            "causes": 15,
        });
        edit(&mut value);
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_recordings_options_are_held_to_the_command_lines_bounds() {
        assert_eq!(options(|_| {}).check(), Ok(()));
        for (pointer, value, message) in [
            (
                "/analysis/bucket_ns",
                serde_json::json!(0),
                "bucket_ns must be 1 to",
            ),
            (
                "/analysis/entries",
                serde_json::json!(0),
                "entries must be 1 to 1000000",
            ),
            (
                "/analysis/entries",
                serde_json::json!(u32::MAX),
                "entries must be 1 to 1000000",
            ),
            (
                "/analysis/keep_recent",
                serde_json::json!(1u64 << 63),
                "keep_recent must be 0 to",
            ),
            (
                "/workload/max_samples",
                serde_json::json!(0),
                "max_samples must be 1 to",
            ),
            ("/hist/entries", serde_json::json!(0), "histogram needs"),
            ("/hist/bucket_size", serde_json::json!(0), "histogram needs"),
            (
                "/causes",
                serde_json::json!(1u64 << 40),
                "--causes must be 0 to",
            ),
            ("/cpus", serde_json::json!([]), "--cpus: no CPU"),
            (
                "/cpus",
                serde_json::json!([u32::MAX]),
                "is beyond Linux's CPU",
            ),
            (
                "/duration",
                serde_json::json!({"secs": 0, "nanos": 0}),
                "longer than zero",
            ),
            (
                "/duration",
                serde_json::json!({"secs": 1u64 << 40, "nanos": 0}),
                "at most a year",
            ),
            (
                "/workload/runtime",
                serde_json::json!({"secs": 0, "nanos": 1}),
                "at least 100 us",
            ),
            (
                "/workload/period",
                serde_json::json!({"secs": 60, "nanos": 0}),
                "at most 10 s",
            ),
            (
                "/workload/threshold",
                serde_json::json!({"secs": 0, "nanos": 0}),
                "threshold",
            ),
        ] {
            let bad = options(|v| *v.pointer_mut(pointer).unwrap() = value.clone());
            let err = bad.check().unwrap_err();
            assert!(err.contains(message), "{pointer}={value}: {err}");
            assert!(!err.contains('\n'));
        }
    }
}
