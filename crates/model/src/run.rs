//! What every run reports of itself, whatever it measured: the common part of each
//! capability's run information, and the JSON document every command prints.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::system::Capability;
use crate::units::CpuList;

/// How long a run went, what its probe delivered and lost, how it ended: flattened into
/// each capability's run information.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunCommon {
    /// How long the run measured, ns.
    pub elapsed_ns: u64,
    /// What the probe delivered: records (noise) or checkpoints (bh, wakeup, account).
    #[serde(default, alias = "records")]
    pub events: u64,
    /// What the probe could not keep (its buffer was full).
    #[serde(alias = "lost_records")]
    pub lost_events: u64,
    /// Losses per CPU that lost some (the CPU whose buffer was full).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lost_by_cpu: BTreeMap<u32, u64>,
    /// BPF programs attached.
    pub programs: usize,
    /// Tracepoints this kernel lacks (their programs were not loaded).
    pub skipped_tracepoints: Vec<String>,
    /// Ended by Ctrl-C or SIGTERM.
    pub interrupted: bool,
}

/// What the driver does with any capability's run information: mark how the run ended,
/// and hand it to the recording's end.
pub trait RunInfo {
    /// Its common part.
    fn common_mut(&mut self) -> &mut RunCommon;
    /// The whole, as the `run` object of `--json`.
    fn to_json(&self) -> serde_json::Value;
}

macro_rules! run_info {
    ($($info:ty),*) => {$(
        impl RunInfo for $info {
            fn common_mut(&mut self) -> &mut RunCommon {
                &mut self.common
            }

            fn to_json(&self) -> serde_json::Value {
                serde_json::to_value(self).expect("run information is plain data")
            }
        }
    )*};
}

run_info!(
    crate::noise::NoiseRunInfo,
    crate::bh::BhRunInfo,
    crate::wakeup::WakeupRunInfo,
    crate::account::AccountRunInfo
);

/// The name of the tool in every JSON document.
pub const TOOL: &str = "irqlens";

/// The JSON document of one measurement (`--json` of noise, bh, wakeup, account, and each
/// recording `report --json` replays): the same envelope for every capability, the
/// capability's own tables after it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "Measurement_{R}")]
pub struct Measurement<R> {
    /// Always "irqlens".
    pub tool: String,
    /// The irqlens version that printed it.
    pub version: String,
    /// What was measured.
    pub command: Capability,
    /// The kernel release the run was measured on (the recording's, for `report`).
    pub kernel: String,
    /// The CPUs measured.
    pub cpus: CpuList,
    /// How the run went.
    pub run: R,
    /// Where the run comes from, when replayed from a recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recording: Option<RecordingSummary>,
    /// The capability's tables (times `*_ns`, shares `*_percent`).
    #[serde(flatten)]
    pub result: serde_json::Map<String, serde_json::Value>,
}

/// What a replayed measurement tells of its recording.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RecordingSummary {
    /// The recording's path, as given.
    pub file: String,
    /// Its format version.
    pub format_version: u32,
    /// The command line it was made with (provenance).
    pub argv: Vec<String>,
    /// When it began (RFC 3339, UTC).
    pub started_at: String,
    /// The irqlens version that made it.
    pub irqlens_version: String,
    /// The machine it was made on.
    pub hostname: String,
    /// That machine's CPU model.
    pub cpu_model: String,
    /// That machine's clock source.
    pub clocksource: String,
}

/// The JSON document of `irqlens compare A B`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "Comparison")]
pub struct Comparison<A, B> {
    /// Always "irqlens".
    pub tool: String,
    /// The irqlens version that printed it.
    pub version: String,
    /// Always "compare".
    pub command: String,
    /// The baseline recording's measurement.
    pub baseline: A,
    /// The measurement compared with it.
    pub other: B,
    /// The figures side by side: each with A's value, B's and the change.
    pub figures: Vec<serde_json::Value>,
}

/// Any capability's measurement document.
// only its schema is used: never built, so its size does not matter
#[allow(clippy::large_enum_variant)]
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum AnyMeasurement {
    /// `irqlens noise --json`.
    Noise(Measurement<crate::noise::NoiseRunInfo>),
    /// `irqlens bh --json`.
    Bh(Measurement<crate::bh::BhRunInfo>),
    /// `irqlens wakeup --json`.
    Wakeup(Measurement<crate::wakeup::WakeupRunInfo>),
    /// `irqlens account --json`.
    Account(Measurement<crate::account::AccountRunInfo>),
}

/// Every JSON document irqlens prints: what its published JSON Schema describes
/// (docs/irqlens.schema.json).
#[allow(clippy::large_enum_variant)]
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum Document {
    /// A live run's `--json`.
    Measurement(AnyMeasurement),
    /// `irqlens report --json`: one measurement per recording, each with `recording`.
    Report(Vec<AnyMeasurement>),
    /// `irqlens compare --json`.
    Compare(Comparison<AnyMeasurement, AnyMeasurement>),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published schema is the model's: regenerate it with
    /// `IRQLENS_UPDATE_SCHEMA=1 cargo test -p irqlens-model`.
    #[test]
    fn the_published_schema_is_the_models() {
        let mut schema = schemars::schema_for!(Document);
        schema.insert(
            "$id".into(),
            "https://irqlens.dev/irqlens.schema.json".into(),
        );
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/irqlens.schema.json"
        );
        if std::env::var_os("IRQLENS_UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        let published = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            published == text,
            "{path} is not the model's schema: run IRQLENS_UPDATE_SCHEMA=1 cargo test -p irqlens-model"
        );
    }
}
