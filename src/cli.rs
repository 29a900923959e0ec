//! Command line: rtla's option names where irqlens does the same thing.

use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};

use crate::analyze::noise::AnalysisConfig;
use crate::collect::noise::NoiseOptions;
use crate::collect::sched::Priority;
use crate::collect::workload::WorkloadConfig;
use crate::system;
use crate::units::{CpuList, parse_micros, parse_run_duration};

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
    Noise(NoiseCommand),
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
    /// Print the whole result as one JSON document (and nothing else on stdout)
    #[arg(long)]
    pub json: bool,
    /// No live table; only the final summary
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Clone, Debug, Args)]
pub struct HistArgs {
    #[command(flatten)]
    pub noise: NoiseArgs,
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

/// Samples one measurement thread can keep per runtime window.
const MAX_SAMPLES_PER_WINDOW: usize = 1 << 16;
const STOP_CONTEXT_RECORDS: usize = 10;

impl NoiseArgs {
    /// Checks the options against each other and the machine.
    pub fn options(&self, bucket_ns: u64, entries: usize) -> Result<NoiseOptions> {
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
        if bucket_ns == 0 || entries == 0 || entries > 1_000_000 {
            bail!("histogram needs a bucket size above 0 and 1 to 1000000 entries");
        }
        let cpus = system::select_cpus(self.cpus.as_ref())?;
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
                bucket_ns,
                entries,
                keep_recent: STOP_CONTEXT_RECORDS,
            },
        })
    }
}
