//! Command line: rtla's option names where irqlens does the same thing.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::{Args, Parser, Subcommand};

use irqlens_collect::{system, wakeup};
use irqlens_model::account::AccountOptions;
use irqlens_model::bh::{BhOptions, Selection, StatsConfig, TriggerOptions};
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::{AnalysisConfig, NoiseOptions, WorkloadConfig};
use irqlens_model::options::RunOptions;
use irqlens_model::sched::Priority;
use irqlens_model::stimulus::{LoadScenario, TriggerKind};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::{
    StatsConfig as WakeupStatsConfig, TimerOptions, WakeupMode, WakeupOptions, Watched,
};

use crate::parse::{parse_micros, parse_run_duration};

#[derive(Debug, Parser)]
#[command(
    name = "irqlens",
    version,
    about = "Measures what interrupts cost a Linux system, and explains why"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// OS noise per CPU and its causes: IRQ lines, softirqs, threads, hardware (osnoise method)
    Noise(Box<NoiseCommand>),
    /// Bottom-half latency: softirqs, tasklets, work items, IRQ threads, and what delayed them (INTSPECT method)
    Bh(Box<BhCommand>),
    /// Interrupt-to-task wakeup latency, decomposed: timer IRQ, handler, scheduling, return to user, and what ran in between (timerlat/cyclictest threads, or any process)
    Wakeup(Box<WakeupCommand>),
    /// Interrupt time per process: charged to the thread it interrupted, served to the one it worked for, and the kernel's bill corrected (Zhang & West)
    Account(Box<AccountArgs>),
    /// Re-analyze recordings (--record) offline: the same tables as the live run
    Report(ReportArgs),
    /// The same measurement recorded on two setups, side by side: quantiles and causes
    Compare(CompareArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Recordings made with --record
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Print the results as JSON (an array, one document per recording)
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report with plots to FILE, a section per recording
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the recording's timeline to FILE as a Chrome JSON trace (one
    /// recording only), for ui.perfetto.dev or chrome://tracing
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline recording
    #[arg(value_name = "A")]
    pub baseline: PathBuf,
    /// The recording compared with it (same capability)
    #[arg(value_name = "B")]
    pub other: PathBuf,
    /// Print the comparison as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct NoiseCommand {
    #[command(subcommand)]
    pub mode: Option<NoiseMode>,
    #[command(flatten)]
    pub args: NoiseArgs,
}

#[derive(Debug, Subcommand)]
pub enum NoiseMode {
    /// Per-CPU summary, refreshed each second, and the top causes of the run (default)
    Top(NoiseArgs),
    /// Per-CPU histogram of noise sample durations
    Hist(HistArgs),
}

#[derive(Clone, Debug, Args)]
pub struct NoiseArgs {
    /// CPUs to measure, as a list like 0-3,8 [default: all online CPUs]
    #[arg(short, long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// How long to run: 10 (s), 10s, 5m, 1h [default: until Ctrl-C]
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,
    /// Period of the measurement threads (µs, or with a unit: 500ms)
    #[arg(short, long, value_name = "US", default_value = "1s", value_parser = parse_micros)]
    pub period: Duration,
    /// Time the measurement threads read the clock in each period (µs, or with a unit)
    #[arg(short, long, value_name = "US", default_value = "1s", value_parser = parse_micros)]
    pub runtime: Duration,
    /// Smallest gap between two clock reads that counts as noise (µs, or with a unit)
    #[arg(short = 'T', long, value_name = "US", default_value = "5", value_parser = parse_micros)]
    pub threshold: Duration,
    /// Scheduling of the measurement threads: o:NICE, f:PRIO, r:PRIO, d:RUNTIME:PERIOD
    #[arg(short = 'P', long, value_name = "PRIO", default_value = "o:0")]
    pub priority: Priority,
    /// Stop when a single noise sample is longer than this (µs), and show its causes
    #[arg(short = 's', long = "stop", value_name = "US", value_parser = parse_micros)]
    pub stop_single: Option<Duration>,
    /// Stop when the noise of one period adds up to more than this (µs)
    #[arg(short = 'S', long = "stop-total", value_name = "US", value_parser = parse_micros)]
    pub stop_total: Option<Duration>,
    /// CPUs for irqlens's own collector thread [default: the CPUs not measured]
    #[arg(short = 'H', long = "house-keeping", value_name = "LIST")]
    pub housekeeping: Option<CpuList>,
    /// Number of rows in the top causes table
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub causes: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Clone, Debug, Args)]
pub struct HistArgs {
    #[command(flatten)]
    pub noise: NoiseArgs,
    #[command(flatten)]
    pub hist: HistFlags,
}

/// How every measuring command prints its result.
#[derive(Clone, Debug, Args)]
pub struct OutputArgs {
    /// Print the whole result as one JSON document (and nothing else on stdout)
    #[arg(long)]
    pub json: bool,
    /// Record the run's raw inputs and the system's description to FILE (gzip'd JSON
    /// Lines), for `irqlens report` and `compare`, or pandas and DuckDB
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Write the run's timeline (samples, interrupts, softirqs, threads) to FILE as a
    /// Chrome JSON trace, for ui.perfetto.dev or chrome://tracing
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// No live table or progress line; only the final results
    #[arg(short, long)]
    pub quiet: bool,
    /// Serve OpenMetrics for Prometheus at http://ADDR/metrics while the run goes on: a port (on 127.0.0.1), or IP:PORT such as 0.0.0.0:9464 or [::]:9464
    #[arg(long, value_name = "ADDR")]
    pub prometheus: Option<String>,
    /// Also write a self-contained HTML report with plots to FILE (opens offline)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl OutputArgs {
    /// Whether a progress line may go to stderr meanwhile.
    pub fn progress(&self) -> bool {
        !self.quiet && !self.json && irqlens_present::progress_terminal()
    }

    /// Where `--prometheus` listens, if given.
    pub fn prometheus_address(&self) -> Result<Option<SocketAddr>> {
        self.prometheus
            .as_deref()
            .map(parse_listen_address)
            .transpose()
    }
}

/// A port alone listens on loopback: metrics reach the network only when the user names
/// an address to listen on.
pub fn parse_listen_address(value: &str) -> Result<SocketAddr> {
    let invalid = |why: &str| anyhow!("--prometheus '{value}': {why}");
    let address = if value.bytes().all(|b| b.is_ascii_digit()) {
        let port = value
            .parse()
            .map_err(|_| invalid("a port goes from 1 to 65535"))?;
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    } else {
        value.parse().map_err(|_| {
            invalid("expected PORT, IP:PORT or [IPv6]:PORT, such as 9464 or 0.0.0.0:9464")
        })?
    };
    if address.port() == 0 {
        return Err(invalid("a port goes from 1 to 65535"));
    }
    Ok(address)
}

/// The histogram layout every `hist` mode prints (rtla's options).
#[derive(Clone, Copy, Debug, Args)]
pub struct HistFlags {
    /// Histogram bucket size (µs)
    #[arg(short, long, value_name = "US", default_value_t = 1)]
    pub bucket_size: u64,
    /// Number of histogram buckets
    #[arg(short = 'E', long, value_name = "N", default_value_t = 256)]
    pub entries: usize,
    /// Print buckets with no entries too
    #[arg(long)]
    pub with_zeros: bool,
    /// Leave out the count/min/avg/max lines
    #[arg(long)]
    pub no_summary: bool,
}

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

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BhCommand {
    #[command(subcommand)]
    pub mode: Option<BhMode>,
    #[command(flatten)]
    pub args: BhArgs,
}

#[derive(Debug, Subcommand)]
pub enum BhMode {
    /// The latency table per mechanism and source, and the delay causes (default)
    Top(BhArgs),
    /// Latency histogram per mechanism, with IRQ and OOB columns
    Hist(BhHistArgs),
}

#[derive(Clone, Debug, Args)]
pub struct BhArgs {
    /// CPUs whose bottom halves are measured, as a list like 0-3,8 [default: all online CPUs]
    #[arg(short, long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// How long to run: 10 (s), 10s, 5m, 1h [default: until Ctrl-C]
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,
    /// Cause bottom halves at a fixed rate and measure only those: timer, net, workqueue, tasklet, block
    #[arg(short, long, value_name = "KIND")]
    pub trigger: Option<TriggerKind>,
    /// Requests per second of --trigger
    #[arg(long, value_name = "HZ", default_value_t = 50, requires = "trigger")]
    pub rate: u32,
    /// Spinning tasks irqlens runs on the measured CPUs meanwhile: zero, one, many (256), many:N
    #[arg(short, long, value_name = "SCENARIO", default_value = "zero")]
    pub load: LoadScenario,
    /// Rows per mechanism in the delay causes table
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub causes: usize,
    /// Slowest samples shown per mechanism, with what delayed them
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub worst: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Clone, Debug, Args)]
pub struct BhHistArgs {
    #[command(flatten)]
    pub bh: BhArgs,
    #[command(flatten)]
    pub hist: HistFlags,
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

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WakeupCommand {
    #[command(subcommand)]
    pub mode: Option<WakeupModeCommand>,
    #[command(flatten)]
    pub args: WakeupArgs,
}

#[derive(Debug, Subcommand)]
pub enum WakeupModeCommand {
    /// Per-CPU summary of each latency component, the causes, the worst samples and the CDF (default)
    Top(WakeupArgs),
    /// Per-CPU histogram of the IRQ and total latency
    Hist(WakeupHistArgs),
}

#[derive(Clone, Debug, Args)]
pub struct WakeupArgs {
    /// Timer mode: CPUs that get a timer thread; task mode: CPUs traced. A list like 0-3,8 [default: all online CPUs]
    #[arg(short, long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// How long to run: 10 (s), 10s, 5m, 1h [default: until Ctrl-C]
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,
    /// Timer period of the timer threads (µs, or with a unit: 10ms)
    #[arg(short, long, value_name = "US", default_value = "1000", value_parser = parse_micros)]
    pub period: Duration,
    /// Scheduling of the timer threads: o:NICE, f:PRIO, r:PRIO, d:RUNTIME:PERIOD
    #[arg(short = 'P', long, value_name = "PRIO", default_value = "f:95")]
    pub priority: Priority,
    /// Task mode: measure the wakeups of this process's threads instead of timer threads
    #[arg(long, value_name = "PID", conflicts_with = "comm")]
    pub pid: Option<u32>,
    /// Task mode: measure the wakeups of threads with this name (as in /proc/PID/comm)
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Stop when a sample's total latency reaches this (µs), and show its decomposition
    #[arg(short, long, value_name = "US", value_parser = parse_micros)]
    pub stop: Option<Duration>,
    /// Stop when a timer IRQ latency (expiry to handler) reaches this (µs)
    #[arg(short, long = "irq-stop", value_name = "US", value_parser = parse_micros)]
    pub irq_stop: Option<Duration>,
    /// Timer mode: trace nothing and measure the total only, as cyclictest does
    #[arg(long)]
    pub no_trace: bool,
    /// Rows in the causes table
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub causes: usize,
    /// Slowest samples shown whole, with their decomposition
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub worst: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Clone, Debug, Args)]
pub struct WakeupHistArgs {
    #[command(flatten)]
    pub wakeup: WakeupArgs,
    #[command(flatten)]
    pub hist: HistFlags,
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

#[derive(Clone, Debug, Args)]
pub struct AccountArgs {
    /// CPUs traced. A list like 0-3,8 [default: all online CPUs]
    #[arg(short, long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// How long to run: 10 (s), 10s, 5m, 1h [default: until Ctrl-C]
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,
    /// A report every this long (10, 10s, 1m), then one for the whole run
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub interval: Option<Duration>,
    /// One row per thread instead of per process
    #[arg(long)]
    pub threads: bool,
    /// Also run the compensation algorithm of Zhang & West (per-tick settlement of unaccounted interrupts) and show it next to the exact attribution
    #[arg(long)]
    pub compensate: bool,
    /// Rows in the table and in the victim and causer rankings
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub output: OutputArgs,
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
        if self.output.prometheus.is_some() {
            bail!("--prometheus is for noise, bh and wakeup: account has no endpoint yet");
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
    Ok(match cli.command {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_listens_on_loopback() {
        let address = parse_listen_address("9464").unwrap();
        assert_eq!(address, "127.0.0.1:9464".parse().unwrap());
    }

    #[test]
    fn a_named_address_is_kept() {
        for named in ["0.0.0.0:9464", "[::]:9464", "192.0.2.7:80", "[::1]:9100"] {
            assert_eq!(
                parse_listen_address(named).unwrap(),
                named.parse::<SocketAddr>().unwrap()
            );
        }
    }

    #[test]
    fn garbage_is_rejected_with_the_value() {
        for bad in [
            "",
            "x",
            "70000",
            "0",
            "localhost:9464",
            "0.0.0.0",
            "1.2.3.4:0",
            ":9464",
        ] {
            let err = parse_listen_address(bad).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("--prometheus '{bad}': ")),
                "{bad}: {err}"
            );
        }
    }
}
