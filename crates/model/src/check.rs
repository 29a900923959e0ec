//! `irqlens check`: whether a machine is ready for a real-time, network or HPC workload on
//! some CPUs. Each check of its configuration or of a short measurement passes, warns,
//! fails or is skipped, with what it found, the cause when it failed, and the remedy id
//! `irqlens tune --apply` takes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::Header;
use crate::tune::{MachineState, ThreadPolicy};
use crate::units::CpuList;

/// What a check concluded.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// As the workload needs it.
    Pass,
    /// Cannot apply here (no isolated CPUs, no cpuidle driver, a virtual machine): says
    /// why, and is no failure.
    Skip,
    /// Works against the workload, but is common and not wrong by itself (the kernel's
    /// defaults): the run still passes.
    Warn,
    /// Against the workload: the run fails (exit status 2).
    Fail,
}

impl Status {
    /// As the screen and JUnit show it: `PASS`, `SKIP`, `WARN`, `FAIL`.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Skip => "SKIP",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// Whether a check reads the configuration or measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Read from the machine's settings: instant, changes nothing.
    Configuration,
    /// A short run of one of irqlens's capabilities against a threshold.
    Measured,
}

/// One check's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Check {
    /// A short stable id (`irq-affinity`, `rt-throttling`, `noise`): what `--skip` and the
    /// JUnit test case take.
    pub id: String,
    /// Configuration or measured.
    pub kind: Kind,
    /// What was concluded.
    pub status: Status,
    /// What was found, in one line (`sched_rt_runtime_us 500000 of 1000000`, `CPU 1: max
    /// noise 84 µs`).
    pub found: String,
    /// What passes, in one line (`-1, or the kernel's 950000`, `at most 20 µs`).
    pub expected: String,
    /// What caused a warning or a failure (`IRQ 36 virtio1-req.0, 71% of the noise`).
    pub cause: Option<String>,
    /// The remedies' ids (`irq-36-affinity`): what `irqlens tune --apply ID` takes.
    pub remedies: Vec<String>,
    /// A remedy that no `tune --apply` can make (a boot parameter, a setting to write
    /// by hand), in words.
    pub advice: Option<String>,
}

impl Check {
    /// A check `id` of `kind` that concluded `status` on `found`, against `expected`.
    pub fn new(
        id: &str,
        kind: Kind,
        status: Status,
        found: impl Into<String>,
        expected: impl Into<String>,
    ) -> Check {
        Check {
            id: id.to_owned(),
            kind,
            status,
            found: found.into(),
            expected: expected.into(),
            cause: None,
            remedies: Vec::new(),
            advice: None,
        }
    }

    /// With the cause of its warning or failure.
    pub fn caused_by(mut self, cause: impl Into<String>) -> Check {
        self.cause = Some(cause.into());
        self
    }

    /// With remedies `tune --apply` takes.
    pub fn remedied_by(mut self, remedies: impl IntoIterator<Item = String>) -> Check {
        self.remedies.extend(remedies);
        self
    }

    /// With a remedy in words.
    pub fn advised(mut self, advice: impl Into<String>) -> Check {
        self.advice = Some(advice.into());
        self
    }
}

/// The workload a machine is checked for: the checks that apply and their thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Periodic real-time tasks (cyclictest's case): short noise and wakeup latency.
    Realtime,
    /// Packet processing (NFV, DPDK next to the kernel's stack): bottom-half latency and
    /// where receive work runs.
    Network,
    /// Bulk-synchronous computing: the CPU time left to the application.
    Hpc,
}

/// The limits of the measured checks, µs or percent; `None`: that check is not run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Thresholds {
    /// Noise: the longest single noise sample, µs.
    pub max_noise_us: Option<f64>,
    /// Noise: the least share of the CPU left to the workload, percent.
    pub min_available_percent: Option<f64>,
    /// Wakeup (timer mode, cyclictest's settings): the largest latency, µs.
    pub max_latency_us: Option<f64>,
    /// Bottom halves: the largest raise-to-run latency, µs.
    pub max_bh_us: Option<f64>,
}

impl Thresholds {
    /// `self`, with every limit `other` sets.
    pub fn overridden_by(&self, other: &Thresholds) -> Thresholds {
        Thresholds {
            max_noise_us: other.max_noise_us.or(self.max_noise_us),
            min_available_percent: other.min_available_percent.or(self.min_available_percent),
            max_latency_us: other.max_latency_us.or(self.max_latency_us),
            max_bh_us: other.max_bh_us.or(self.max_bh_us),
        }
    }
}

/// What `irqlens check --json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckReport {
    /// Which tool and version; the command is always "check".
    #[serde(flatten)]
    pub header: Header,
    /// The workload checked for.
    pub profile: Profile,
    /// The CPUs checked.
    pub cpus: CpuList,
    /// Why those CPUs (`isolated`, `nohz_full`, `-c`, `every online CPU`).
    pub cpus_from: String,
    /// The limits the measured checks used.
    pub thresholds: Thresholds,
    /// How long each measured check ran, ns.
    pub duration_ns: u64,
    /// Every check, configuration first.
    pub checks: Vec<Check>,
    /// The run was stopped (Ctrl-C, SIGTERM) before every measured check ran.
    pub interrupted: bool,
}

impl CheckReport {
    /// The worst status of any check; `Pass` without checks.
    pub fn verdict(&self) -> Status {
        let worst = self.checks.iter().map(|check| check.status);
        worst
            .filter(|s| *s != Status::Skip)
            .max()
            .unwrap_or(Status::Pass)
    }

    /// How many checks concluded `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }
}

/// What the configuration checks read of the machine: advise's reading (IRQ lines with
/// their affinities, RPS/XPS masks, sysctls, the workqueue cpumask, irqbalance, the boot
/// line, ksoftirqd, the checked CPUs' idle states) and the rest of what isolating CPUs
/// involves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Configuration {
    /// What `advise` reads, with the idle states of the checked CPUs.
    pub machine: MachineState,
    /// `/sys/devices/system/cpu/isolated`: the CPUs isolcpus= took out of the scheduler's
    /// domains.
    pub isolated: CpuList,
    /// `/sys/devices/system/cpu/nohz_full`; none: the kernel has no such file (no
    /// CONFIG_NO_HZ_FULL), empty: it has and none is.
    pub nohz_full: Option<CpuList>,
    /// The mode `/sys/kernel/mm/transparent_hugepage/enabled` selects (`always`,
    /// `madvise`, `never`), if the kernel has THP.
    pub transparent_hugepage: Option<String>,
    /// `/sys/devices/system/clocksource/clocksource0/current_clocksource`.
    pub clocksource: Option<String>,
    /// The CPUs irqbalance is told to leave alone, and where that was read; none: not set
    /// anywhere (irqbalance then bans the isolated and nohz_full CPUs by itself).
    pub irqbalance_banned: Option<BannedCpus>,
    /// The NAPI threads (`napi/*`) and IRQ threads (`irq/*`) with their policies and
    /// affinities.
    pub bottom_half_threads: Vec<ThreadPolicy>,
    /// The root group's `cpu.rt_runtime_us` of a cgroup v1 cpu controller, and its path:
    /// with RT group scheduling it, not the sysctl, throttles the tasks of the root group
    /// (and the sysctl cannot go below it).
    #[serde(default)]
    pub rt_group_runtime: Option<(String, i64)>,
}

/// The CPUs irqbalance bans, as configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BannedCpus {
    /// The CPUs.
    pub cpus: CpuList,
    /// Where they were read (`irqbalance's environment`, `/etc/default/irqbalance`).
    pub from: String,
}
