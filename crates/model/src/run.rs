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
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "cpu_keyed"
    )]
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

/// A map keyed by CPU number, read back from JSON's text keys: flattened into each
/// capability's run information, serde hands the keys over as the text they were.
fn cpu_keyed<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<u32, u64>, D::Error> {
    BTreeMap::<String, u64>::deserialize(deserializer)?
        .into_iter()
        .map(|(cpu, count)| {
            cpu.parse()
                .map(|cpu| (cpu, count))
                .map_err(|_| serde::de::Error::custom(format!("CPU '{cpu}' is not a number")))
        })
        .collect()
}

/// The name of the tool in every JSON document.
pub const TOOL: &str = "irqlens";

/// The irqlens version every JSON document names: the workspace's, which every crate
/// shares.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What begins every JSON document irqlens prints: which tool, which version, which
/// command. Flattened into each document; `C` is what names the command (a capability
/// for measurements).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Header<C = String> {
    /// Always "irqlens".
    pub tool: String,
    /// The irqlens version that printed it.
    pub version: String,
    /// The command that printed it.
    pub command: C,
}

impl<C> Header<C> {
    /// The header of `command`'s document, printed by this irqlens.
    pub fn new(command: impl Into<C>) -> Self {
        Header {
            tool: TOOL.into(),
            version: VERSION.into(),
            command: command.into(),
        }
    }
}

/// The JSON document of one measurement (`--json` of noise, bh, wakeup, account, and each
/// recording `report --json` replays): the same envelope for every capability, the
/// capability's own tables after it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(rename = "Measurement_{R}")]
pub struct Measurement<R, T> {
    /// Which tool, version, and what was measured.
    #[serde(flatten)]
    pub header: Header<Capability>,
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
    pub tables: T,
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
    /// Which tool and version; the command is always "compare".
    #[serde(flatten)]
    pub header: Header,
    /// The baseline recording's measurement.
    pub baseline: A,
    /// The measurement compared with it.
    pub other: B,
    /// The figures side by side: each with A's value, B's and the change.
    pub figures: Vec<crate::tables::ComparedFigure>,
}

/// Any capability's measurement document.
// only its schema is used: never built, so its size does not matter
#[allow(clippy::large_enum_variant)]
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum AnyMeasurement {
    /// `irqlens noise --json`.
    Noise(Measurement<crate::noise::NoiseRunInfo, crate::tables::NoiseTables>),
    /// `irqlens bh --json`.
    Bh(Measurement<crate::bh::BhRunInfo, crate::tables::BhTables>),
    /// `irqlens wakeup --json`.
    Wakeup(Measurement<crate::wakeup::WakeupRunInfo, crate::tables::WakeupTables>),
    /// `irqlens account --json`.
    Account(Measurement<crate::account::AccountRunInfo, crate::tables::AccountTables>),
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
    /// `irqlens advise --json`.
    Advise(crate::tune::AdviceReport),
    /// `irqlens check --json`.
    Check(crate::check::CheckReport),
    /// `irqlens check --show-profile --json`.
    CheckProfile(crate::check::ProfileReport),
    /// `irqlens tune --json`.
    Tune(crate::tune::TuneReport),
    /// `irqlens tune --dry-run --json`.
    TunePlan(crate::tune::TunePlan),
    /// `irqlens tune --revert --json`.
    TuneRevert(crate::tune::TuneRevert),
    /// `irqlens steer --json`.
    Steer(crate::steer::SteerReport),
    /// `irqlens agent --json`, when it stops.
    Agent(crate::agent::AgentReport),
    /// `irqlens trial net --json`.
    Trial(crate::trial::TrialReport),
    /// `irqlens sim --json`.
    Sim(crate::sim::SimDocument),
    /// `irqlens sim --against TRIAL --json`.
    SimAgainstTrial(crate::sim::TrialComparison),
    /// The calibration `irqlens sim --calibrate` writes.
    SimCalibration(crate::sim::Calibration),
}

/// The JSON Schema of every document irqlens prints (docs/irqlens.schema.json): the
/// model's types, plus what their derive cannot say: which run information goes with
/// which `command`, and that every run counts its `events`.
pub fn json_schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Document)).expect("a schema");
    schema["$id"] = "https://irqlens.dev/irqlens.schema.json".into();
    let definitions = schema["$defs"].as_object_mut().expect("definitions");
    for (run, command) in [
        ("NoiseRunInfo", Capability::Noise),
        ("BhRunInfo", Capability::Bh),
        ("WakeupRunInfo", Capability::Wakeup),
        ("AccountRunInfo", Capability::Account),
    ] {
        let measurement = &mut definitions[&format!("Measurement_{run}")];
        measurement["properties"]["command"] = serde_json::json!({
            "description": "What was measured.",
            "const": command.name(),
        });
        // read with a default from format 1 recordings, always written
        let required = definitions[run]["required"]
            .as_array_mut()
            .expect("required");
        required.insert(1, "events".into());
    }
    for (definition, command) in [
        ("TuneReport", "tune"),
        ("TunePlan", "tune"),
        ("TuneRevert", "tune"),
        ("SteerReport", "steer"),
        ("AgentReport", "agent"),
        ("TrialReport", "trial"),
        ("SimDocument", "sim"),
    ] {
        definitions[definition]["properties"]["command"] = serde_json::json!({
            "description": format!("Always \"{command}\"."),
            "const": command,
        });
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every capability's run information reads back what it wrote, the per-CPU losses
    /// and the version 1 names of noise's counts included.
    #[test]
    fn run_information_reads_back_with_its_per_cpu_losses() {
        let common = RunCommon {
            elapsed_ns: 7,
            events: 5,
            lost_events: 3,
            lost_by_cpu: BTreeMap::from([(1, 3)]),
            programs: 2,
            skipped_tracepoints: vec!["irq_work_entry".into()],
            interrupted: true,
        };
        let info = crate::noise::NoiseRunInfo {
            common: common.clone(),
            clock: "tsc".into(),
            collector_cpus: None,
        };
        let text = serde_json::to_string(&info).unwrap();
        assert!(text.contains(r#""lost_by_cpu":{"1":3}"#), "{text}");
        let back: crate::noise::NoiseRunInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(back.common, common);
        let version_1 = r#"{"elapsed_ns":7,"clock":"tsc","collector_cpus":null,"programs":2,
            "skipped_tracepoints":[],"records":5,"lost_records":3,"lost_by_cpu":{"1":3},
            "interrupted":false}"#;
        let old: crate::noise::NoiseRunInfo = serde_json::from_str(version_1).unwrap();
        assert_eq!((old.common.events, old.common.lost_events), (5, 3));
        assert_eq!(old.common.lost_by_cpu, BTreeMap::from([(1, 3)]));
    }

    /// The published schema is the model's: regenerate it with
    /// `IRQLENS_UPDATE_SCHEMA=1 cargo test -p irqlens-model`.
    #[test]
    fn the_published_schema_is_the_models() {
        let text = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
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
