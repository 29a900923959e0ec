//! `irqlens agent`: its configuration (a TOML file, read into [`AgentConfig`]; every key
//! bounded by [`Check`]), what a reload changes ([`AgentConfig::changes`]), and the
//! document it ends with ([`AgentReport`]).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::bounds::{Check, Checked, check_cpus, within};
use crate::units::CpuList;
use crate::workload::WorkloadBy;

/// The configuration read when `--config` names none (a missing one means the defaults).
pub const DEFAULT_CONFIG_PATH: &str = "/etc/irqlens/agent.toml";
/// Where the agent serves unless told otherwise: every address, Prometheus's port for it.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:9464";
/// The largest configuration file read: a real one is a few hundred bytes, and a file
/// past it (a log named by mistake, /dev/zero) is refused before it is read whole.
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024;
/// The longest `listen` value: an IPv6 address with its port is under 50 characters.
pub const MAX_LISTEN_LEN: usize = 128;
/// An active run's shortest `every`: a run a minute at most.
pub const MIN_EVERY: Duration = Duration::from_secs(60);
/// An active run's longest `every`: one a day at least, or it is not monitoring.
pub const MAX_EVERY: Duration = Duration::from_secs(24 * 3600);
/// An active run's longest `duration`.
pub const MAX_ACTIVE_DURATION: Duration = Duration::from_secs(600);

/// The agent's configuration: the file's keys, each with its default when left out.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Where the endpoint listens: `IP:PORT`, `[IPv6]:PORT`, or a port alone (loopback).
    pub listen: String,
    /// The CPUs traced (`"0-3,8"`); none: every online CPU.
    #[serde(deserialize_with = "optional_cpus")]
    pub cpus: Option<CpuList>,
    /// How much the agent logs on stderr.
    pub log_level: LogLevel,
    /// Interference time (NMIs, hardirqs, softirqs) per CPU and cause, continuously:
    /// the noise probe without its measurement threads.
    pub noise_passive: PassiveConfig,
    /// Bottom-half latency and its causes, continuously.
    pub bh: PassiveConfig,
    /// Charged and served interrupt time per process and workload, continuously.
    pub account: AccountConfig,
    /// Short noise runs (measurement threads on the CPUs named: they take the CPU).
    pub noise: ActiveConfig,
    /// Short wakeup runs (timer threads on the CPUs named: they take the CPU).
    pub wakeup: ActiveConfig,
}

/// A passive capability's section.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PassiveConfig {
    /// Whether it runs.
    pub enabled: bool,
}

/// `[account]`: whether it runs, and how its workloads are named.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccountConfig {
    /// Whether it runs.
    pub enabled: bool,
    /// The level its `workload` label names (as account's `--by`).
    pub by: WorkloadBy,
    /// Whether socket deliveries are followed to their readers (`AccountOptions::sockets`).
    pub sockets: bool,
}

/// An active run's section: `duration` every `every` on `cpus`, off unless enabled.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActiveConfig {
    /// Whether it runs.
    pub enabled: bool,
    /// How often a run starts (`"10m"`, or seconds).
    #[serde(deserialize_with = "duration")]
    pub every: Duration,
    /// How long each run lasts (`"10s"`, or seconds).
    #[serde(deserialize_with = "duration")]
    pub duration: Duration,
    /// The CPUs it measures; none: the agent's.
    #[serde(deserialize_with = "optional_cpus")]
    pub cpus: Option<CpuList>,
}

/// The levels of the agent's log lines, as `RUST_LOG` names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Failures only.
    Error,
    /// Failures and what it could not honour.
    Warn,
    /// One line per event: start, attach, reload, failure, stop.
    #[default]
    Info,
    /// And what each capability does.
    Debug,
    /// Everything.
    Trace,
}

const LOG_LEVELS: [(LogLevel, &str); 6] = [
    (LogLevel::Off, "off"),
    (LogLevel::Error, "error"),
    (LogLevel::Warn, "warn"),
    (LogLevel::Info, "info"),
    (LogLevel::Debug, "debug"),
    (LogLevel::Trace, "trace"),
];

impl LogLevel {
    /// Its name.
    pub fn name(self) -> &'static str {
        LOG_LEVELS
            .iter()
            .find(|(level, _)| *level == self)
            .map_or("info", |(_, name)| name)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LogLevel {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        LOG_LEVELS
            .iter()
            .find(|(_, name)| name.eq_ignore_ascii_case(text))
            .map(|(level, _)| *level)
            .ok_or_else(|| {
                format!("'{text}' is not a log level (off, error, warn, info, debug, trace)")
            })
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            listen: DEFAULT_LISTEN.into(),
            cpus: None,
            log_level: LogLevel::default(),
            noise_passive: PassiveConfig::default(),
            bh: PassiveConfig::default(),
            account: AccountConfig::default(),
            noise: ActiveConfig::default(),
            wakeup: ActiveConfig::default(),
        }
    }
}

impl Default for PassiveConfig {
    fn default() -> Self {
        PassiveConfig { enabled: true }
    }
}

impl Default for AccountConfig {
    fn default() -> Self {
        AccountConfig {
            enabled: true,
            by: WorkloadBy::Pod,
            // the hackbench bound: every local socket read would run a program
            sockets: false,
        }
    }
}

impl Default for ActiveConfig {
    fn default() -> Self {
        ActiveConfig {
            enabled: false,
            every: Duration::from_secs(600),
            duration: Duration::from_secs(10),
            cpus: None,
        }
    }
}

impl Check for AgentConfig {
    fn check(&self) -> Checked {
        if self.listen.trim().is_empty() || self.listen.len() > MAX_LISTEN_LEN {
            return Err(format!(
                "listen must be an address of 1 to {MAX_LISTEN_LEN} characters (such as {DEFAULT_LISTEN})"
            ));
        }
        if let Some(cpus) = &self.cpus {
            check_cpus("cpus", cpus)?;
        }
        self.noise.check_as("noise")?;
        self.wakeup.check_as("wakeup")
    }
}

impl ActiveConfig {
    /// The section `[name]`'s bounds, each error naming its key.
    fn check_as(&self, name: &str) -> Checked {
        let seconds = |d: Duration| d.as_secs();
        within(
            &format!("[{name}] every (s)"),
            seconds(self.every),
            seconds(MIN_EVERY),
            seconds(MAX_EVERY),
        )?;
        within(
            &format!("[{name}] duration (s)"),
            seconds(self.duration),
            1,
            seconds(MAX_ACTIVE_DURATION),
        )?;
        // passive most of the time: an active run takes its CPUs while it lasts
        if self.duration * 2 > self.every {
            return Err(format!(
                "[{name}] duration ({} s) must be at most half of every ({} s): an active run takes its CPUs",
                seconds(self.duration),
                seconds(self.every)
            ));
        }
        if let Some(cpus) = &self.cpus {
            check_cpus(&format!("[{name}] cpus"), cpus)?;
        }
        Ok(())
    }
}

/// What a reload changes, capability by capability.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The capabilities to stop, or to start again with their new settings.
    pub restart: Vec<&'static str>,
    /// Keys that take effect only when the agent starts again.
    pub at_restart: Vec<&'static str>,
    /// The log level changes.
    pub log_level: bool,
}

impl Changes {
    /// Whether the reload changes nothing.
    pub fn is_empty(&self) -> bool {
        self.restart.is_empty() && self.at_restart.is_empty() && !self.log_level
    }
}

impl AgentConfig {
    /// What going from `self` to `new` changes: a capability whose section or CPUs
    /// changed starts again (stops, if now disabled); the listening address stays until
    /// the agent restarts (the endpoint stays up through a reload).
    pub fn changes(&self, new: &AgentConfig) -> Changes {
        let cpus = self.cpus != new.cpus;
        let mut restart = Vec::new();
        if cpus || self.noise_passive != new.noise_passive {
            restart.push("noise_passive");
        }
        if cpus || self.bh != new.bh {
            restart.push("bh");
        }
        if cpus || self.account != new.account {
            restart.push("account");
        }
        for (name, old, new) in [
            ("noise", &self.noise, &new.noise),
            ("wakeup", &self.wakeup, &new.wakeup),
        ] {
            // an active run without CPUs of its own measures the agent's
            if old != new || (cpus && new.cpus.is_none()) {
                restart.push(name);
            }
        }
        // noise's runs label their workloads as account does
        if self.account.by != new.account.by && new.noise.enabled && !restart.contains(&"noise") {
            restart.push("noise");
        }
        Changes {
            restart,
            at_restart: (self.listen != new.listen)
                .then_some("listen")
                .into_iter()
                .collect(),
            log_level: self.log_level != new.log_level,
        }
    }
}

/// A CPU list as the command line takes it: `"0-3,8"` (or a single number), or `"all"`,
/// the kernel's word for every CPU, as the default is.
fn optional_cpus<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<CpuList>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Cpus {
        Number(u32),
        Text(String),
    }
    use serde::de::Error;
    match Cpus::deserialize(deserializer)
        .map_err(|_| D::Error::custom("expected a CPU list such as \"0-3,8\""))?
    {
        Cpus::Number(cpu) => Ok(Some(CpuList::single(cpu))),
        Cpus::Text(text) if text.trim() == "all" => Ok(None),
        Cpus::Text(text) => text.parse().map(Some).map_err(D::Error::custom),
    }
}

/// A duration: whole seconds, or a string with a unit (`"30s"`, `"10m"`, `"1h"`, `"1d"`).
fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Time {
        Seconds(u64),
        Text(String),
    }
    use serde::de::Error;
    match Time::deserialize(deserializer).map_err(|_| {
        D::Error::custom("expected a duration: seconds, or text such as \"30s\", \"10m\", \"1h\"")
    })? {
        Time::Seconds(seconds) => Ok(Duration::from_secs(seconds)),
        Time::Text(text) => parse_duration(&text).map_err(D::Error::custom),
    }
}

/// `"30s"`, `"10m"`, `"1h"`, `"1d"`, `"45"` (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_seconds = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 24 * 3600,
        _ => {
            return Err(format!(
                "'{text}' is not a duration (examples: 30s, 10m, 1h)"
            ));
        }
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (examples: 30s, 10m, 1h)"))?;
    number
        .checked_mul(unit_seconds)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// What `irqlens agent --json` prints when it stops.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AgentReport {
    /// Which tool and version; the command is always "agent".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The kernel release.
    pub kernel: String,
    /// Where it served its metrics.
    pub listen: String,
    /// How long it ran, ns.
    pub elapsed_ns: u64,
    /// Configurations read again (SIGHUP), the refused ones included.
    pub config_reloads: u64,
    /// The reloads refused (a bad file): the configuration before them stayed.
    pub refused_reloads: u64,
    /// Each capability it ran.
    pub capabilities: Vec<CapabilitySummary>,
}

/// How one capability of the agent went.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CapabilitySummary {
    /// `noise_passive`, `bh`, `account`, `noise`, `wakeup`.
    pub name: String,
    /// Times it was started (at the start, after a failure, after a reload).
    pub starts: u64,
    /// Times it failed.
    pub failures: u64,
    /// Whether it was running when the agent stopped.
    pub running_at_end: bool,
}

#[cfg(test)]
mod tests;
