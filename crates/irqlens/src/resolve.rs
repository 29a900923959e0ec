//! Resolution: the command line's arguments checked against each other and the machine,
//! and turned into the model's options, which are all a run (or a recording's replay)
//! goes by.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Parser;

use irqlens_collect::{system, wakeup};
use irqlens_model::account::AccountOptions;
use irqlens_model::bh::{BhOptions, Selection, StatsConfig, TriggerOptions};
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::{AnalysisConfig, NoiseOptions, WorkloadConfig};
use irqlens_model::options::RunOptions;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::{
    StatsConfig as WakeupStatsConfig, TimerOptions, WakeupMode, WakeupOptions, Watched,
};

use crate::cli::{
    AccountArgs, BhArgs, BhCommand, BhMode, Cli, Command, HistFlags, NoiseArgs, NoiseCommand,
    NoiseMode, WakeupArgs, WakeupCommand, WakeupModeCommand,
};

impl HistFlags {
    /// The layout, checked.
    pub fn options(&self) -> Result<HistOptions> {
        if self.bucket_size == 0 || self.entries == 0 || self.entries > 1_000_000 {
            bail!("histogram needs a bucket size above 0 and 1 to 1000000 entries");
        }
        Ok(HistOptions {
            bucket_size: self.bucket_size,
            entries: self.entries,
            with_zeros: self.with_zeros,
            no_summary: self.no_summary,
        })
    }
}

impl BhArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self, hist: Option<HistOptions>) -> Result<BhOptions> {
        self.options_on(hist, system::select_cpus(self.cpus.as_ref())?)
    }

    /// The options of a run on `cpus` (checked against the machine, or recorded).
    pub fn options_on(&self, hist: Option<HistOptions>, cpus: CpuList) -> Result<BhOptions> {
        let layout = hist.unwrap_or_default();
        if !(1..=10_000).contains(&self.rate) {
            bail!("--rate must be 1 to 10000 requests per second");
        }
        Ok(BhOptions {
            cpus,
            duration: self.duration,
            trigger: self.trigger.map(|kind| TriggerOptions {
                kind,
                rate_hz: self.rate,
            }),
            load: self.load,
            stats: StatsConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                selection: Selection::All,
                worst: self.worst,
            },
            hist,
            causes: self.causes,
        })
    }
}

impl WakeupArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self, hist: Option<HistOptions>) -> Result<WakeupOptions> {
        let options = self.options_on(hist, system::select_cpus(self.cpus.as_ref())?)?;
        if let WakeupMode::Task(watched) = &options.mode {
            wakeup::check_watched(watched)?;
        }
        Ok(options)
    }

    /// The options of a run on `cpus` (checked against the machine, or recorded).
    pub fn options_on(&self, hist: Option<HistOptions>, cpus: CpuList) -> Result<WakeupOptions> {
        let layout = hist.unwrap_or_default();
        let watched = match (self.pid, &self.comm) {
            (Some(pid), _) => Some(Watched::Process(pid)),
            (None, Some(name)) => Some(Watched::Name(name.clone())),
            (None, None) => None,
        };
        let mode = match watched {
            Some(watched) => {
                if self.no_trace {
                    bail!("--no-trace is for timer mode: task mode is all tracing");
                }
                WakeupMode::Task(watched)
            }
            None => {
                if self.period < Duration::from_micros(100) || self.period > Duration::from_secs(10)
                {
                    bail!("--period must be 100 us to 10 s");
                }
                WakeupMode::Timer(TimerOptions {
                    period: self.period,
                    priority: self.priority,
                    trace: !self.no_trace,
                })
            }
        };
        let nanos = |d: Option<Duration>| d.map(|d| d.as_nanos() as u64);
        Ok(WakeupOptions {
            cpus,
            duration: self.duration,
            mode,
            stats: WakeupStatsConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                worst: self.worst,
                stop_total_ns: nanos(self.stop),
                stop_irq_ns: nanos(self.irq_stop),
            },
            hist,
            causes: self.causes,
        })
    }
}

/// Samples one measurement thread can keep per runtime window.
const MAX_SAMPLES_PER_WINDOW: usize = 1 << 16;

const STOP_CONTEXT_RECORDS: usize = 10;

impl NoiseArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self, hist: Option<HistOptions>) -> Result<NoiseOptions> {
        self.options_on(hist, system::select_cpus(self.cpus.as_ref())?)
    }

    /// The options of a run on `cpus` (checked against the machine, or recorded).
    pub fn options_on(&self, hist: Option<HistOptions>, cpus: CpuList) -> Result<NoiseOptions> {
        let layout = hist.unwrap_or_default();
        if self.runtime > self.period {
            bail!(
                "runtime ({} us) must not exceed period ({} us)",
                self.runtime.as_micros(),
                self.period.as_micros()
            );
        }
        if self.runtime < Duration::from_micros(100) {
            bail!("runtime must be at least 100 us");
        }
        if self.threshold.is_zero() || self.threshold >= self.runtime {
            bail!("threshold must be above 0 and below the runtime");
        }
        Ok(NoiseOptions {
            cpus,
            duration: self.duration,
            workload: WorkloadConfig {
                period: self.period,
                runtime: self.runtime,
                threshold: self.threshold,
                stop_single: self.stop_single,
                stop_total: self.stop_total,
                priority: self.priority,
                max_samples: MAX_SAMPLES_PER_WINDOW,
            },
            housekeeping: self.housekeeping.clone(),
            analysis: AnalysisConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                keep_recent: STOP_CONTEXT_RECORDS,
            },
            hist,
            causes: self.causes,
        })
    }
}

impl AccountArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self) -> Result<AccountOptions> {
        self.options_on(system::select_cpus(self.cpus.as_ref())?)
    }

    /// The options of a run on `cpus` (checked against the machine, or recorded).
    pub fn options_on(&self, cpus: CpuList) -> Result<AccountOptions> {
        if let Some(interval) = self.interval {
            if interval < Duration::from_millis(100) {
                bail!("--interval must be at least 100 ms");
            }
            if self.duration.is_some_and(|d| interval > d) {
                bail!("--interval is longer than --duration: there would be no periodic report");
            }
        }
        if self.top == 0 {
            bail!("--top must be at least 1");
        }
        Ok(AccountOptions {
            cpus,
            duration: self.duration,
            interval: self.interval,
            compensate: self.compensate,
            threads: self.threads,
            top: self.top,
        })
    }
}

impl NoiseCommand {
    /// The arguments and, in `hist` mode, the checked histogram layout.
    pub fn split(self) -> Result<(NoiseArgs, Option<HistOptions>)> {
        Ok(match self.mode {
            None => (self.args, None),
            Some(NoiseMode::Top(args)) => (args, None),
            Some(NoiseMode::Hist(hist)) => (hist.noise, Some(hist.hist.options()?)),
        })
    }
}

impl BhCommand {
    /// The arguments and, in `hist` mode, the checked histogram layout.
    pub fn split(self) -> Result<(BhArgs, Option<HistOptions>)> {
        Ok(match self.mode {
            None => (self.args, None),
            Some(BhMode::Top(args)) => (args, None),
            Some(BhMode::Hist(hist)) => (hist.bh, Some(hist.hist.options()?)),
        })
    }
}

impl WakeupCommand {
    /// The arguments and, in `hist` mode, the checked histogram layout.
    pub fn split(self) -> Result<(WakeupArgs, Option<HistOptions>)> {
        Ok(match self.mode {
            None => (self.args, None),
            Some(WakeupModeCommand::Top(args)) => (args, None),
            Some(WakeupModeCommand::Hist(hist)) => (hist.wakeup, Some(hist.hist.options()?)),
        })
    }
}

/// The options of a version 1 recording, which kept only its command line: resolved as
/// the run resolved them, on the CPUs it recorded. (Version 2 recordings keep the
/// options themselves, so renaming an option never breaks them.)
pub fn recorded_options(argv: &[String], cpus: CpuList) -> Result<RunOptions> {
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_owned();
        anyhow!("its command line does not parse: {first}")
    })?;
    let Some(command) = cli.command else {
        bail!("not a measurement's recording");
    };
    Ok(match command {
        Command::Noise(command) => {
            let (args, hist) = command.split()?;
            RunOptions::Noise(args.options_on(hist, cpus)?)
        }
        Command::Bh(command) => {
            let (args, hist) = command.split()?;
            RunOptions::Bh(args.options_on(hist, cpus)?)
        }
        Command::Wakeup(command) => {
            let (args, hist) = command.split()?;
            RunOptions::Wakeup(args.options_on(hist, cpus)?)
        }
        Command::Account(args) => RunOptions::Account(args.options_on(cpus)?),
        Command::Report(_) | Command::Compare(_) => bail!("not a measurement's recording"),
    })
}
