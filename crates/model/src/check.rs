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

impl Profile {
    /// Every profile, as `--profile` takes them.
    pub const ALL: [Profile; 3] = [Profile::Realtime, Profile::Network, Profile::Hpc];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Realtime => "realtime",
            Profile::Network => "network",
            Profile::Hpc => "hpc",
        }
    }

    /// What it checks for, in a sentence.
    pub fn about(self) -> &'static str {
        match self {
            Profile::Realtime => {
                "periodic real-time tasks (cyclictest's case): every interruption is short, and \
                 a woken task runs soon"
            }
            Profile::Network => {
                "packet processing next to the kernel's stack: short interruptions, and bottom \
                 halves (NET_RX) that run soon after they are raised"
            }
            Profile::Hpc => {
                "bulk-synchronous computing: the CPUs' time is left to the application, and no \
                 single interruption stalls a step for long"
            }
        }
    }

    /// Its thresholds, each overridden by its option. They are the field's common
    /// acceptance levels: a tuned real-time machine keeps single noise samples to tens
    /// of µs and cyclictest's maximum under 50 µs; an HPC node loses well under 1% to
    /// the OS; a NET_RX softirq waiting 100 µs has a full ring at 10 Gb/s behind it.
    pub fn thresholds(self) -> Thresholds {
        match self {
            Profile::Realtime => Thresholds {
                max_noise_us: Some(20.0),
                min_available_percent: None,
                max_latency_us: Some(50.0),
                max_bh_us: None,
            },
            Profile::Network => Thresholds {
                max_noise_us: Some(50.0),
                min_available_percent: None,
                max_latency_us: None,
                max_bh_us: Some(100.0),
            },
            Profile::Hpc => Thresholds {
                max_noise_us: Some(100.0),
                min_available_percent: Some(99.5),
                max_latency_us: None,
                max_bh_us: None,
            },
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(name: &str) -> Result<Profile, String> {
        Profile::ALL
            .into_iter()
            .find(|profile| profile.name() == name)
            .ok_or_else(|| format!("no profile {name:?}: realtime, network or hpc"))
    }
}

/// What `irqlens check --show-profile` prints: a profile's checks and thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileReport {
    /// Which tool and version; the command is always "check".
    #[serde(flatten)]
    pub header: Header,
    /// The profile.
    pub profile: Profile,
    /// What it checks for.
    pub about: String,
    /// Its thresholds, with the options given.
    pub thresholds: Thresholds,
    /// How long each measured check runs, ns.
    pub duration_ns: u64,
    /// The ids of its configuration checks, in order.
    pub configuration: Vec<String>,
    /// The ids of its measured checks, in order.
    pub measured: Vec<String>,
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

/// What a measured check compares with its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// noise: the longest single noise sample of a CPU, µs.
    MaxNoise,
    /// noise: the share of a CPU left to the workload, percent.
    Available,
    /// wakeup: the largest wakeup latency on a CPU, µs.
    MaxLatency,
    /// bh: the largest raise-to-run latency of a bottom-half mechanism, µs.
    MaxBh,
}

impl Metric {
    /// Every metric, in the order the checks are shown.
    pub const ALL: [Metric; 4] = [
        Metric::MaxNoise,
        Metric::Available,
        Metric::MaxLatency,
        Metric::MaxBh,
    ];

    /// The check's id, the option that sets its threshold without its dashes.
    pub fn id(self) -> &'static str {
        match self {
            Metric::MaxNoise => "max-noise",
            Metric::Available => "min-available",
            Metric::MaxLatency => "max-latency",
            Metric::MaxBh => "max-bh",
        }
    }

    /// The capability that measures it.
    pub fn capability(self) -> crate::system::Capability {
        use crate::system::Capability;
        match self {
            Metric::MaxNoise | Metric::Available => Capability::Noise,
            Metric::MaxLatency => Capability::Wakeup,
            Metric::MaxBh => Capability::Bh,
        }
    }

    /// Its threshold in `thresholds`, if set.
    pub fn threshold(self, thresholds: &Thresholds) -> Option<f64> {
        match self {
            Metric::MaxNoise => thresholds.max_noise_us,
            Metric::Available => thresholds.min_available_percent,
            Metric::MaxLatency => thresholds.max_latency_us,
            Metric::MaxBh => thresholds.max_bh_us,
        }
    }

    /// Whether a larger value is worse (a latency) or better (the CPU left).
    pub fn larger_is_worse(self) -> bool {
        self != Metric::Available
    }
}

/// One value a measured check judges: a CPU's, or a bottom-half mechanism's.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// What it measures.
    pub metric: Metric,
    /// The CPU it is of; none for a figure of several (a bh mechanism).
    pub cpu: Option<u32>,
    /// What else it is of (`NET_RX`), shown before the value.
    pub of: Option<String>,
    /// The value, µs or percent (see [`Metric`]).
    pub value: f64,
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
    /// `/proc/irq/default_smp_affinity`: the CPUs a new IRQ line may start on, which
    /// irqaffinity= sets at boot and a write changes at run time (tuned does); none: not
    /// readable.
    #[serde(default)]
    pub default_irq_affinity: Option<CpuList>,
}

/// The CPUs irqbalance bans, as configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BannedCpus {
    /// The CPUs.
    pub cpus: CpuList,
    /// Where they were read (`irqbalance's environment`, `/etc/default/irqbalance`).
    pub from: String,
}
