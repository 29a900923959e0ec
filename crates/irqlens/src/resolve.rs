//! Resolution: the command line's arguments checked against each other and the machine,
//! and turned into the model's options, which are all a run (or a recording's replay)
//! goes by.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Parser;

use irqlens_collect::{steer, system, wakeup};
use irqlens_model::account::AccountOptions;
use irqlens_model::bh::{BhOptions, Selection, StatsConfig, TriggerOptions};
use irqlens_model::bounds::Check;
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::{self, AnalysisConfig, NoiseOptions, WorkloadConfig};
use irqlens_model::options::RunOptions;
use irqlens_model::trial::{Design, NAPI_NICE_BELOW_CONSUMER, TrialOptions};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::{
    DmaLatency, StatsConfig as WakeupStatsConfig, TimerOptions, WakeupMode, WakeupOptions, Watched,
};

use crate::cli::{
    AccountArgs, BhArgs, BhCommand, BhMode, Cli, Command, HistFlags, NoiseArgs, NoiseCommand,
    NoiseMode, OutputArgs, SteerArgs, TrialNetArgs, WakeupArgs, WakeupCommand, WakeupModeCommand,
};
use crate::measure::Measurement;
use crate::measure::account::AccountTool;
use crate::measure::bh::BhTool;
use crate::measure::noise::NoiseTool;
use crate::measure::wakeup::WakeupTool;

impl OutputArgs {
    /// rtla's `-a` saves the trace of the run to a fixed file: `--auto` records the run
    /// to `file` in the current directory, unless `--record` names another.
    pub fn record_by_default(&mut self, auto: Option<Duration>, file: &str) {
        if auto.is_some() && self.record.is_none() {
            self.record = Some(file.into());
            self.default_record = true;
        }
    }
}

impl HistFlags {
    /// The layout, checked.
    pub fn options(&self) -> Result<HistOptions> {
        checked(HistOptions {
            bucket_size: self.bucket_size,
            entries: self.entries,
            with_zeros: self.with_zeros,
            no_summary: self.no_summary,
            no_header: self.no_header,
            no_index: self.no_index,
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
        checked(BhOptions {
            cpus,
            duration: self.duration,
            warm_up: self.warm_up,
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

/// `options` if they pass their type's check, the one every reader of options calls.
fn checked<T: Check>(options: T) -> Result<T> {
    options.check().map_err(|e| anyhow!(e))?;
    Ok(options)
}

impl WakeupArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self, hist: Option<HistOptions>) -> Result<WakeupOptions> {
        let options = self.options_on(hist, system::select_cpus(self.cpus.as_ref())?)?;
        if let WakeupMode::Task(watched) = &options.mode {
            wakeup::check_watched(watched)?;
            irqlens_collect::cgroup::check_paths(&options.cgroups)?;
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
                if self.aligned.is_some() {
                    bail!("--aligned is for timer mode: task mode has no timer threads");
                }
                WakeupMode::Task(watched)
            }
            None if !self.cgroups.is_empty() => {
                bail!(
                    "--cgroup is for task mode (--pid/--comm): timer mode measures its own threads"
                )
            }
            None => WakeupMode::Timer(TimerOptions {
                period: self.period,
                priority: self.priority,
                trace: !self.no_trace,
                aligned_ns: self.aligned.map(|offset| offset.as_nanos() as u64),
            }),
        };
        // timer mode holds it at 0 unless told otherwise, as cyclictest; task mode measures
        // the machine as it is
        let default_dma_latency = match mode {
            WakeupMode::Timer(_) => DmaLatency::Micros(irqlens_model::wakeup::TIMER_DMA_LATENCY_US),
            WakeupMode::Task(_) => DmaLatency::Untouched,
        };
        let dma_latency_us = match self.dma_latency.unwrap_or(default_dma_latency) {
            DmaLatency::Micros(us) => Some(us),
            DmaLatency::Untouched => None,
        };
        let nanos = |d: Option<Duration>| d.map(|d| d.as_nanos() as u64);
        checked(WakeupOptions {
            cpus,
            duration: self.duration,
            warm_up: self.warm_up,
            mode,
            stats: WakeupStatsConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                worst: self.worst,
                // -a sets both stops, as rtla timerlat's sets -T and -i
                stop_total_ns: nanos(self.stop.or(self.auto)),
                stop_irq_ns: nanos(self.irq_stop.or(self.auto)),
            },
            hist,
            causes: self.causes,
            dma_latency_us,
            cgroups: self.cgroups.clone(),
        })
    }
}

impl NoiseArgs {
    /// Checks the options against each other and the machine; warns (once, as rtla
    /// does) when -H puts the collector on a measured CPU, where its time is noise.
    pub fn options(&self, hist: Option<HistOptions>) -> Result<NoiseOptions> {
        let options = self.options_on(hist, system::select_cpus(self.cpus.as_ref())?)?;
        if let Some(housekeeping) = &options.housekeeping {
            let shared = housekeeping.shared_with(&options.cpus);
            if !shared.is_empty() {
                eprintln!(
                    "irqlens: warning: -H {housekeeping} includes measured CPUs ({shared}): the \
                     collector may run there, and its time shows as noise (thread irqlens)"
                );
            }
        }
        Ok(options)
    }

    /// The options of a run on `cpus` (checked against the machine, or recorded).
    pub fn options_on(&self, hist: Option<HistOptions>, cpus: CpuList) -> Result<NoiseOptions> {
        let layout = hist.unwrap_or_default();
        // -a is rtla's -s US -T 1: an explicit -s or -T still wins
        let threshold = self.threshold.unwrap_or(match self.auto {
            Some(_) => noise::AUTO_THRESHOLD,
            None => noise::DEFAULT_THRESHOLD,
        });
        checked(NoiseOptions {
            cpus,
            duration: self.duration,
            warm_up: self.warm_up,
            workload: WorkloadConfig {
                period: self.period,
                runtime: self.runtime,
                threshold,
                stop_single: self.stop_single.or(self.auto),
                stop_total: self.stop_total,
                priority: self.priority,
                max_samples: noise::SAMPLES_PER_WINDOW,
            },
            housekeeping: self.housekeeping.clone(),
            analysis: AnalysisConfig {
                bucket_ns: layout.bucket_ns(),
                entries: layout.entries,
                keep_recent: noise::STOP_CONTEXT_RECORDS,
            },
            hist,
            causes: self.causes,
            by: self.by,
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
        checked(AccountOptions {
            cpus,
            duration: self.duration,
            interval: self.interval,
            compensate: self.compensate,
            threads: self.threads,
            top: self.top,
            by: self.by,
            cgroups: self.cgroups.clone(),
            sockets: !self.no_sockets,
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

impl NoiseCommand {
    /// `irqlens noise` as the driver runs it.
    pub fn resolve(self) -> Result<Measurement<NoiseTool>> {
        let (mut args, hist) = self.split()?;
        args.output
            .record_by_default(args.auto, "irqlens-noise.jsonl.gz");
        Ok(Measurement {
            options: args.options(hist)?,
            on_threshold: args.stop_actions.on_threshold,
            output: args.output,
        })
    }
}

impl BhCommand {
    /// `irqlens bh` as the driver runs it.
    pub fn resolve(self) -> Result<Measurement<BhTool>> {
        let (args, hist) = self.split()?;
        Ok(Measurement {
            options: args.options(hist)?,
            on_threshold: Vec::new(),
            output: args.output,
        })
    }
}

impl WakeupCommand {
    /// `irqlens wakeup` as the driver runs it.
    pub fn resolve(self) -> Result<Measurement<WakeupTool>> {
        let (mut args, hist) = self.split()?;
        args.output
            .record_by_default(args.auto, "irqlens-wakeup.jsonl.gz");
        Ok(Measurement {
            options: args.options(hist)?,
            on_threshold: args.stop_actions.on_threshold,
            output: args.output,
        })
    }
}

impl SteerArgs {
    /// `irqlens steer` as the driver runs it: its devices checked against the machine
    /// before anything is loaded.
    pub fn resolve(self) -> Result<SteerArgs> {
        steer::check_devices(&self.devices)?;
        Ok(self)
    }
}

impl AccountArgs {
    /// `irqlens account` as the driver runs it.
    pub fn resolve(self) -> Result<Measurement<AccountTool>> {
        Ok(Measurement {
            options: self.options()?,
            on_threshold: Vec::new(),
            output: self.output,
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

/// The default ladder, datagrams/s: from what CPU 1 of a 2-CPU VM echoes whole to well
/// past what it can carry (see the README's figures).
const DEFAULT_RATES: [u64; 7] = [20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_000_000];

impl TrialNetArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self) -> Result<TrialOptions> {
        let cpus: CpuList = [self.sending_cpu, self.receiving_cpu].into_iter().collect();
        system::select_cpus(Some(&cpus))?;
        if self.sending_cpu == self.receiving_cpu {
            bail!(
                "--sending-cpu and --receiving-cpu must differ: the load would share the CPU it measures"
            );
        }
        let mut rates = if self.rates.is_empty() {
            DEFAULT_RATES.to_vec()
        } else {
            self.rates.clone()
        };
        rates.sort_unstable();
        rates.dedup();
        let mut designs: Vec<Design> = Vec::new();
        for design in &self.designs {
            if !designs.contains(design) {
                designs.push(*design);
            }
        }
        checked(TrialOptions {
            receiving_cpu: self.receiving_cpu,
            sending_cpu: self.sending_cpu,
            rates,
            designs,
            rounds: self.rounds,
            duration_ns: self.duration.as_nanos() as u64,
            warm_up_ns: self.warm_up.as_nanos() as u64,
            payload_bytes: self.payload.into(),
            consumer_nice: self.consumer_nice,
            napi_nice: self
                .napi_nice
                .unwrap_or((self.consumer_nice + NAPI_NICE_BELOW_CONSUMER).min(19)),
            napi_fifo_priority: self.napi_priority,
            cyclic_priority: self.priority,
            cyclic_period_ns: self.period.as_nanos() as u64,
            budget_packets: self.budget,
            budget_usecs: self.budget_usecs,
        })
    }

    /// The cyclic task: irqlens wakeup's timer thread on the receiving CPU, its defaults
    /// otherwise (the point's end stops it).
    pub fn cyclic(&self) -> Result<WakeupOptions> {
        checked(WakeupOptions {
            // no warm-up of its own: the point's starts once it measures; a margin: the
            // point stops it when its window closes
            duration: Some(self.warm_up + self.duration + Duration::from_secs(30)),
            mode: WakeupMode::Timer(TimerOptions {
                period: self.period,
                priority: self.priority,
                ..TimerOptions::default()
            }),
            ..WakeupOptions::timer(CpuList::single(self.receiving_cpu))
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
        Command::Report(_)
        | Command::Compare(_)
        | Command::Advise(_)
        | Command::Check(_)
        | Command::Tune(_)
        | Command::Steer(_)
        | Command::Trial(_)
        | Command::Sim(_)
        | Command::Agent(_) => {
            bail!("not a measurement's recording")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(args: &[&str]) -> RunOptions {
        let argv: Vec<String> = std::iter::once("irqlens")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        recorded_options(&argv, CpuList::single(0)).unwrap()
    }

    fn noise(args: &[&str]) -> NoiseOptions {
        match resolved(args) {
            RunOptions::Noise(options) => options,
            other => panic!("{other:?}"),
        }
    }

    fn wakeup_stops(args: &[&str]) -> (Option<u64>, Option<u64>) {
        match resolved(args) {
            RunOptions::Wakeup(o) => (o.stats.stop_total_ns, o.stats.stop_irq_ns),
            other => panic!("{other:?}"),
        }
    }

    /// The options a command line with no option resolves to are the model's defaults,
    /// which tune and advise run with: the two cannot drift apart.
    #[test]
    fn no_option_resolves_to_the_models_defaults() {
        let cpus = CpuList::single(0);
        assert_eq!(
            resolved(&["noise"]),
            RunOptions::Noise(NoiseOptions::defaults(cpus.clone()))
        );
        assert_eq!(
            resolved(&["bh"]),
            RunOptions::Bh(BhOptions::defaults(cpus.clone()))
        );
        assert_eq!(
            resolved(&["wakeup"]),
            RunOptions::Wakeup(WakeupOptions::timer(cpus.clone()))
        );
        assert_eq!(
            resolved(&["account"]),
            RunOptions::Account(AccountOptions::defaults(cpus))
        );
        for hist in [&["noise", "hist"], &["bh", "hist"], &["wakeup", "hist"]] {
            let layout = match resolved(hist) {
                RunOptions::Noise(o) => o.hist,
                RunOptions::Bh(o) => o.hist,
                RunOptions::Wakeup(o) => o.hist,
                RunOptions::Account(_) => None,
            };
            assert_eq!(layout, Some(HistOptions::default()), "{hist:?}");
        }
    }

    #[test]
    fn noise_auto_is_rtlas_stop_single_and_threshold_1() {
        let us = Duration::from_micros;
        let plain = noise(&["noise"]).workload;
        assert_eq!((plain.threshold, plain.stop_single), (us(5), None));
        let auto = noise(&["noise", "-a", "7"]).workload;
        assert_eq!((auto.threshold, auto.stop_single), (us(1), Some(us(7))));
        assert_eq!(auto.stop_total, None);
        // explicit options win, wherever they are
        let both = noise(&["noise", "-T", "3", "-a", "7", "-s", "9"]).workload;
        assert_eq!((both.threshold, both.stop_single), (us(3), Some(us(9))));
    }

    #[test]
    fn wakeup_auto_sets_the_total_and_irq_stops() {
        assert_eq!(wakeup_stops(&["wakeup"]), (None, None));
        assert_eq!(
            wakeup_stops(&["wakeup", "-a", "7"]),
            (Some(7_000), Some(7_000))
        );
        assert_eq!(
            wakeup_stops(&["wakeup", "-a", "7", "-i", "2"]),
            (Some(7_000), Some(2_000))
        );
    }

    #[test]
    fn warm_up_goes_into_the_options() {
        assert_eq!(noise(&["noise"]).warm_up, None);
        assert_eq!(
            noise(&["noise", "--warm-up", "1m"]).warm_up,
            Some(Duration::from_secs(60))
        );
        match resolved(&["wakeup", "hist", "--warm-up", "3"]) {
            RunOptions::Wakeup(o) => assert_eq!(o.warm_up, Some(Duration::from_secs(3))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn auto_records_to_its_default_file_unless_record_says_where() {
        let output = |args: &[&str]| {
            let cli =
                Cli::try_parse_from(["irqlens", "noise"].iter().chain(args).copied()).unwrap();
            let Some(Command::Noise(command)) = cli.command else {
                unreachable!()
            };
            let (mut args, _) = command.split().unwrap();
            args.output.record_by_default(args.auto, "default.jsonl.gz");
            (args.output.record, args.output.default_record)
        };
        assert_eq!(output(&[]), (None, false));
        assert_eq!(
            output(&["-a", "5"]),
            (Some("default.jsonl.gz".into()), true)
        );
        assert_eq!(
            output(&["-a", "5", "--record", "mine.jsonl.gz"]),
            (Some("mine.jsonl.gz".into()), false)
        );
    }
}
