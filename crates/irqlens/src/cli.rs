//! Command line: rtla's option names where irqlens does the same thing.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use irqlens_model::sched::Priority;
use irqlens_model::sim::Design;
use irqlens_model::stimulus::{LoadScenario, TriggerKind};
use irqlens_model::units::CpuList;
use irqlens_model::workload::WorkloadBy;
use irqlens_model::{account, bh, hist, noise, wakeup};

use crate::parse::{
    Action, parse_action, parse_bucket_size, parse_cgroup_path, parse_count, parse_micros,
    parse_percent, parse_run_duration, parse_workload_by,
};

/// The command line as irqlens parses it, documents it (`--help`, man pages) and completes
/// it: clap's, with what derive cannot say once for every subcommand.
pub fn command() -> clap::Command {
    let command = accept_negative_values(Cli::command());
    command.mut_subcommands(|subcommand| with_examples(subcommand, ""))
}

/// Shows `subcommand`'s examples after its options in `--help` (its man page has them in
/// EXAMPLES); `parent` is the words before it (`trial` for `trial net`).
fn with_examples(subcommand: clap::Command, parent: &str) -> clap::Command {
    let name = format!("{parent} {}", subcommand.get_name());
    let name = name.trim_start().to_owned();
    let subcommand = subcommand.mut_subcommands(|nested| with_examples(nested, &name));
    match crate::examples::help_text(&name) {
        Some(text) => subcommand.after_help(text),
        None => subcommand,
    }
}

/// Parses the process's arguments.
pub fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// A value that starts with '-' (`--causes -1`, `--hold -1s`) is taken as the option's
/// value, for the option to refuse it with a message about the value, not as an unknown
/// option. Durations take any text after a hyphen (`-1s`), other values negative numbers;
/// a duration that may be left out (`-A`) does not, or it would take the next option.
fn accept_negative_values(command: clap::Command) -> clap::Command {
    command
        .allow_negative_numbers(true)
        .mut_args(|arg| {
            let duration = arg
                .get_value_names()
                .is_some_and(|names| names.iter().any(|n| n == "TIME" || n == "US"));
            let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
            if duration && !optional {
                arg.allow_hyphen_values(true)
            } else {
                arg
            }
        })
        .mut_subcommands(accept_negative_values)
}

#[derive(Debug, Parser)]
#[command(
    name = "irqlens",
    version,
    about = "Measures what interrupts cost a Linux system, and explains why",
    args_conflicts_with_subcommands = true,
    arg_required_else_help = true
)]
pub struct Cli {
    /// Print the man page or a shell completion script generated from this command line,
    /// and exit (as ripgrep's --generate)
    #[arg(long, value_name = "KIND")]
    pub generate: Option<Generate>,
    /// Where --generate man-pages writes the pages
    #[arg(long, value_name = "DIR", requires = "generate")]
    pub man_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Generate {
    /// The man page irqlens(1), roff
    Man,
    /// Every man page, irqlens(1) and one per subcommand (irqlens-noise(1), ...), written
    /// into --man-dir
    ManPages,
    /// Bash completions
    CompleteBash,
    /// Zsh completions
    CompleteZsh,
    /// Fish completions
    CompleteFish,
    /// Elvish completions
    CompleteElvish,
    /// PowerShell completions
    CompletePowershell,
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
    /// For each cause measured on a CPU, the knob that takes it off (or why none can), and
    /// what on the machine works against it: from recordings (noise, bh, wakeup, account), or
    /// measured first with noise and wakeup
    Advise(Box<AdviseArgs>),
    /// Whether CPUs are ready for a real-time, network or HPC workload: the machine's
    /// settings and short measurements, each PASS, WARN, FAIL or SKIP with its cause and
    /// remedy (exit status 2 when a check fails)
    Check(Box<CheckArgs>),
    /// Apply remedies one at a time, measure before and after, keep what helped, put the rest back
    Tune(Box<TuneArgs>),
    /// Keep each bottom-half thread (threaded NAPI, IRQ threads, ksoftirqd) at the priority
    /// of the processes it serves, as they come and go (Zhang & West's process-aware bottom halves)
    Steer(SteerArgs),
    /// Bottom-half designs side by side under a load, on a private test bed: throughput,
    /// latency, a cyclic real-time task's latency and the CPU's time per offered rate
    Trial(Box<TrialCommand>),
    /// What other interrupt-handling designs would do to a workload: a discrete-event
    /// simulation of hardirqs, softirqs, NAPI, bottom-half threads and the scheduler
    /// (stock, threaded, niced, IHM/DIS of Lee & Park, process-aware of Zhang & West)
    Sim(SimArgs),
    /// A long-running Prometheus exporter with a bounded cost: bottom-half latency and
    /// interrupt time per process and workload, continuously, configured by a file
    /// (SIGHUP reloads it, SIGTERM stops it)
    Agent(AgentArgs),
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The configuration, TOML (see docs/agent.md) [default: /etc/irqlens/agent.toml, the
    /// defaults if it is missing]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve OpenMetrics at http://ADDR/metrics: a port (on 127.0.0.1), or IP:PORT such
    /// as 0.0.0.0:9464 or [::]:9464 [default: the configuration's listen, 0.0.0.0:9464]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// CPUs traced, as a list like 0-3,8 [default: the configuration's cpus, all online
    /// CPUs]
    #[arg(short, long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// The level account's workload label names: cgroup, pod, container or unit
    /// [default: the configuration's, pod]
    #[arg(long, value_name = "KIND", value_parser = parse_workload_by)]
    pub by: Option<WorkloadBy>,
    /// Leave bottom halves out, whatever the configuration says
    #[arg(long)]
    pub no_bh: bool,
    /// Leave interrupt accounting out, whatever the configuration says
    #[arg(long)]
    pub no_account: bool,
    /// How much it logs on stderr: off, error, warn, info, debug, trace [default: the
    /// configuration's, info]
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<irqlens_model::agent::LogLevel>,
    #[command(flatten)]
    pub show: ShowArgs,
}

#[derive(Debug, Args)]
pub struct TrialCommand {
    #[command(subcommand)]
    pub load: TrialLoad,
}

/// What a trial puts the designs under.
#[derive(Debug, Subcommand)]
pub enum TrialLoad {
    /// A UDP echo flood over a veth pair between two private network namespaces
    /// (Chubb & Song's test bench): the receive work, the echo server and a cyclic
    /// FIFO task share the receiving CPU
    Net(TrialNetArgs),
}

#[derive(Debug, Args)]
pub struct TrialNetArgs {
    /// Offered rates, datagrams/s: 20000,50k,1M [default: 20k,40k,80k,160k,320k,640k,1M]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_rate)]
    pub rates: Vec<u64>,
    /// Designs, in the order measured: stock, threaded-fifo or threaded-niced, each with
    /// an optional +budget[=N] (--budget's count, or N); threaded-fifo+process-aware
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "stock,threaded-fifo,threaded-niced,stock+budget"
    )]
    pub designs: Vec<Design>,
    /// How long each point is measured (3, 3s, 500ms)
    #[arg(short, long, value_name = "TIME", default_value = "3", value_parser = parse_run_duration)]
    pub duration: Duration,
    /// Measure the whole ladder N times, one round after the other (1 to 20): each rate's
    /// figures are then the medians of its rounds, a rate follows when half of its rounds
    /// did, each round's own knee shows how far the machine's noise moves it, and each
    /// design is judged against the first only beyond its rounds' spread
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: u32,
    /// How long each point runs before it is measured
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = parse_run_duration)]
    pub warm_up: Duration,
    /// The receiving CPU: its bottom half, the echo server and the cyclic task
    #[arg(long, value_name = "CPU", default_value_t = 1)]
    pub receiving_cpu: u32,
    /// The CPU of the load generator and of the collector of the echoes
    #[arg(long, value_name = "CPU", default_value_t = 0)]
    pub sending_cpu: u32,
    /// The echo server's nice (SCHED_OTHER), from which threaded-niced's NAPI thread nice
    /// follows (see --napi-nice); below 0 so that the machine's other work takes little
    /// of the receiving CPU (the trial weighs the bottom half against its consumer, not
    /// against the rest)
    #[arg(long, value_name = "NICE", default_value_t = -10, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub consumer_nice: i32,
    /// threaded-niced's NAPI thread nice [default: the consumer's + 5, as the slides: at
    /// equal nice its polls, which nothing preempts, still take most of the CPU]
    #[arg(long, value_name = "NICE", value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub napi_nice: Option<i32>,
    /// threaded-fifo's NAPI thread priority (SCHED_FIFO, as PREEMPT_RT's IRQ threads)
    #[arg(long, value_name = "PRIO", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub napi_priority: u32,
    /// The cyclic task's scheduling (irqlens wakeup's timer thread): f:PRIO, r:PRIO, o:NICE
    #[arg(short = 'P', long, value_name = "PRIO", default_value = "f:95")]
    pub priority: Priority,
    /// The cyclic task's period (µs, or with a unit), as the slides' cyclictest
    #[arg(short, long, value_name = "US", default_value = "500", value_parser = parse_micros)]
    pub period: Duration,
    /// net.core.netdev_budget in the +budget designs without a count of their own
    /// (datagrams per NET_RX round; the slides capped the batch at 32)
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub budget: u32,
    /// net.core.netdev_budget_usecs in the +budget designs [default: left as it is; the
    /// kernel takes no less than 2 jiffies, 8000 at HZ=250]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..))]
    pub budget_usecs: Option<u32>,
    /// UDP payload, bytes (16 to 1400: a sequence number and a send time, then zeros)
    #[arg(long, value_name = "BYTES", default_value_t = 64, value_parser = clap::value_parser!(u16).range(16..=1400))]
    pub payload: u16,
    #[command(flatten)]
    pub show: ShowArgs,
    #[command(flatten)]
    pub page: HtmlArgs,
    #[command(flatten)]
    pub end: EndArgs,
    /// Also keep the whole result in FILE (gzip-compressed JSON): `irqlens report FILE`
    /// shows it again, as text, --json or --html
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
}

/// `50000`, `50k`, `1.5M` datagrams/s.
fn parse_rate(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, scale) = match text.strip_suffix(['k', 'K']) {
        Some(number) => (number, 1e3),
        None => match text.strip_suffix('M') {
            Some(number) => (number, 1e6),
            None => (text, 1.0),
        },
    };
    let rate = number
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(|r| (r * scale).round())
        .filter(|r| (1.0..=10e6).contains(r))
        .ok_or_else(|| {
            format!("'{text}' is not a rate from 1 to 10M datagrams/s (such as 50000 or 50k)")
        })?;
    Ok(rate as u64)
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// The model as JSON (CPUs, interrupt sources, tasks, costs, designs; see --example);
    /// default: the built-in example
    #[arg(value_name = "MODEL")]
    pub model: Option<PathBuf>,
    /// Print the built-in example model as JSON, a start for one's own, and exit
    #[arg(long, conflicts_with_all = ["model", "costs", "html", "json"])]
    pub example: bool,
    /// Simulate this design instead of the model's; repeat for more: stock, threaded-fifo
    /// or threaded-niced, with +budget[=N], +ihm, +ihm-dis, +process-aware
    #[arg(long = "design", value_name = "DESIGN")]
    pub designs: Vec<Design>,
    /// The seed of every random choice instead of the model's (same seed, same results)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Simulated time instead of the model's (10s, 500ms)
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,
    /// The costs (and the machine's limits) from this calibration file instead of the
    /// model's (written by --calibrate)
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// Derive the costs from these recordings of wakeup, bh, account or trial (--record)
    /// and write them as a calibration file (to -o FILE, or standard output)
    #[arg(long, value_name = "REC", num_args = 1.., conflicts_with_all = ["model", "example", "designs", "costs", "against", "html", "json", "seed", "duration"])]
    pub calibrate: Vec<PathBuf>,
    /// Where --calibrate writes the calibration
    #[arg(short, long, value_name = "FILE", requires = "calibrate")]
    pub output: Option<PathBuf>,
    /// Simulate the test bed, designs and rates of this trial recording (--record, or its
    /// --json) and set the simulation next to what trial measured; needs --costs with
    /// the trial's designs calibrated. -d is then the time simulated per point (1 s)
    #[arg(long, value_name = "TRIAL", requires = "costs", conflicts_with_all = ["model", "example", "designs", "html"])]
    pub against: Option<PathBuf>,
    #[command(flatten)]
    pub show: ShowArgs,
    #[command(flatten)]
    pub page: HtmlArgs,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Recordings of noise, bh, wakeup or account runs to advise from (made with
    /// --record); without any, the CPUs given with -c are measured first: with noise,
    /// then with wakeup (timer mode), for -d TIME each
    #[arg(value_name = "REC")]
    pub files: Vec<PathBuf>,
    /// Also read the RPS and XPS masks and NAPI modes of the devices in these network namespaces
    /// (`ip netns` names); repeat for more
    #[arg(long, value_name = "NAME")]
    pub netns: Vec<String>,
    /// The noise measurement run first when no recording is given (the wakeup one after
    /// it has wakeup's defaults, on the same CPUs for as long)
    #[command(flatten)]
    pub measure: NoiseArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// CPUs to check, as a list like 1-3,8 [default: the isolated CPUs, else the nohz_full
    /// ones, else every online CPU but the first]
    #[arg(short, long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// How long each measured check runs (10, 10s, 1m)
    #[arg(short, long, value_name = "TIME", default_value = "10", value_parser = parse_run_duration)]
    pub duration: Duration,
    /// The workload checked for, which sets the checks and thresholds: realtime, network
    /// or hpc (see --show-profile)
    #[arg(long, value_name = "NAME", default_value = "realtime")]
    pub profile: irqlens_model::check::Profile,
    /// Print the profile's checks and thresholds (with the options given), and check nothing
    #[arg(long)]
    pub show_profile: bool,
    /// Fail when a single noise sample is longer than this (µs, or with a unit)
    #[arg(long, value_name = "US", value_parser = parse_micros)]
    pub max_noise: Option<Duration>,
    /// Fail when less than this share of a CPU is left to the workload (percent)
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub min_available: Option<f64>,
    /// Fail when a wakeup (timer mode, cyclictest's settings) takes longer than this (µs)
    #[arg(long, value_name = "US", value_parser = parse_micros)]
    pub max_latency: Option<Duration>,
    /// Fail when a bottom half waits longer than this to run (µs)
    #[arg(long, value_name = "US", value_parser = parse_micros)]
    pub max_bh: Option<Duration>,
    /// Leave out these checks (ids as shown: irq-affinity, max-latency); repeat or list
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Also write the checks as JUnit XML to FILE (a test case per check), for CI systems
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    #[command(flatten)]
    pub show: ShowArgs,
    #[command(flatten)]
    pub end: EndArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Recordings made with --record
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    // --json prints an array, one document per recording; --html a section per recording
    #[command(flatten)]
    pub show: ShowArgs,
    #[command(flatten)]
    pub page: HtmlArgs,
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
    #[command(flatten)]
    pub show: ShowArgs,
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
    /// Let the measurement threads run this long before measuring (10, 10s, 1m): their
    /// samples meanwhile are discarded, and --duration counts from its end (as rtla's)
    #[arg(long, value_name = "TIME", value_parser = parse_run_duration)]
    pub warm_up: Option<Duration>,
    /// Period of the measurement threads (µs, or with a unit: 500ms)
    #[arg(short, long, value_name = "US", default_value = noise::DEFAULT_PERIOD_TEXT, value_parser = parse_micros)]
    pub period: Duration,
    /// Time the measurement threads read the clock in each period (µs, or with a unit)
    #[arg(short, long, value_name = "US", default_value = noise::DEFAULT_RUNTIME_TEXT, value_parser = parse_micros)]
    pub runtime: Duration,
    /// Smallest gap between two clock reads that counts as noise (µs, or with a unit)
    /// [default: 5; 1 with --auto]
    #[arg(short = 'T', long, value_name = "US", value_parser = parse_micros)]
    pub threshold: Option<Duration>,
    /// Scheduling of the measurement threads: o:NICE, f:PRIO, r:PRIO, d:RUNTIME:PERIOD
    #[arg(short = 'P', long, value_name = "PRIO", default_value_t = noise::DEFAULT_PRIORITY)]
    pub priority: Priority,
    /// Stop when a single noise sample is longer than this (µs), and show its causes; the
    /// run then exits with status 2 (as rtla's)
    #[arg(short = 's', long = "stop", value_name = "US", value_parser = parse_micros)]
    pub stop_single: Option<Duration>,
    /// Stop when the noise of one period adds up to more than this (µs); the run then
    /// exits with status 2 (as rtla's)
    #[arg(short = 'S', long = "stop-total", value_name = "US", value_parser = parse_micros)]
    pub stop_total: Option<Duration>,
    /// rtla's automatic mode: -s US -T 1, and the run recorded (to irqlens-noise.jsonl.gz
    /// in the current directory, unless --record says where)
    #[arg(short = 'a', long, value_name = "US", value_parser = parse_micros)]
    pub auto: Option<Duration>,
    #[command(flatten)]
    pub stop_actions: StopActions,
    /// CPUs for irqlens's own collector thread [default: the CPUs not measured]
    #[arg(short = 'H', long = "house-keeping", value_name = "LIST")]
    pub housekeeping: Option<CpuList>,
    /// Number of rows in the top causes table
    #[arg(long, value_name = "N", default_value_t = noise::DEFAULT_CAUSES)]
    pub causes: usize,
    /// Also the thread causes per workload: cgroup, pod, container or unit
    #[arg(long, value_name = "KIND", value_parser = parse_workload_by)]
    pub by: Option<WorkloadBy>,
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

/// How every command shows its result: the driver's options.
#[derive(Clone, Debug, Default, Args)]
pub struct ShowArgs {
    /// Print the whole result as one JSON document (and nothing else on stdout)
    #[arg(long)]
    pub json: bool,
    /// No live table or progress lines on stderr; only the result
    #[arg(short, long)]
    pub quiet: bool,
}

/// The HTML report of a command that draws one.
#[derive(Clone, Debug, Default, Args)]
pub struct HtmlArgs {
    /// Also write a self-contained HTML report with plots and the tables to FILE (opens
    /// offline)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// What a live command does when it ends (rtla's --on-end).
#[derive(Clone, Debug, Default, Args)]
pub struct EndArgs {
    /// At the end of the run, whatever ended it: shell,command=CMD (run with sh -c) or
    /// signal,num=N,pid=P (P a pid or parent); repeat for more, run in order until one
    /// fails (as rtla's)
    #[arg(long, value_name = "ACTION", value_parser = parse_action)]
    pub on_end: Vec<Action>,
}

/// How every measuring command records and shows its result.
#[derive(Clone, Debug, Default, Args)]
pub struct OutputArgs {
    #[command(flatten)]
    pub show: ShowArgs,
    /// Record the run's raw inputs and the system's description to FILE (gzip'd JSON
    /// Lines), for `irqlens report` and `compare`, or pandas and DuckDB
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Write the run's timeline (samples, interrupts, softirqs, threads) to FILE as a
    /// Chrome JSON trace, for ui.perfetto.dev or chrome://tracing
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
    /// Serve OpenMetrics for Prometheus at http://ADDR/metrics while the run goes on: a port (on 127.0.0.1), or IP:PORT such as 0.0.0.0:9464 or [::]:9464 (anyone who reaches it reads the metrics: CPUs' noise, IRQ and thread names)
    #[arg(long, value_name = "ADDR")]
    pub prometheus: Option<String>,
    #[command(flatten)]
    pub page: HtmlArgs,
    #[command(flatten)]
    pub end: EndArgs,
    /// Set when --auto chose the recording's file, which the run then names at its end.
    #[arg(skip)]
    pub default_record: bool,
}

/// What a run does when its stop threshold is hit (rtla's --on-threshold).
#[derive(Clone, Debug, Default, Args)]
pub struct StopActions {
    /// When a stop threshold ends the run, after its results: shell,command=CMD (run with
    /// sh -c) or signal,num=N,pid=P (P a pid or parent); repeat for more, run in order
    /// until one fails (as rtla's)
    #[arg(long, value_name = "ACTION", value_parser = parse_action)]
    pub on_threshold: Vec<Action>,
}

impl OutputArgs {
    /// Whether a progress line may go to stderr meanwhile.
    pub fn progress(&self) -> bool {
        !self.show.quiet && !self.show.json && irqlens_present::progress_terminal()
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
    parse_listen_address_of("--prometheus", value)
}

/// [`parse_listen_address`] of a value given as `option` (its error names it).
pub fn parse_listen_address_of(option: &str, value: &str) -> Result<SocketAddr> {
    let invalid = |why: &str| anyhow!("{option} '{value}': {why}");
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
    /// Histogram bucket size (µs, or with a unit: 2us, 1ms)
    #[arg(short, long, value_name = "US", default_value_t = hist::DEFAULT_BUCKET_SIZE, value_parser = parse_bucket_size)]
    pub bucket_size: u64,
    /// Number of histogram buckets
    #[arg(short = 'E', long, value_name = "N", default_value_t = hist::DEFAULT_ENTRIES, value_parser = parse_count)]
    pub entries: usize,
    /// Print buckets with no entries too
    #[arg(long)]
    pub with_zeros: bool,
    /// Leave out the count/min/avg/max lines
    #[arg(long)]
    pub no_summary: bool,
    /// Leave out the header lines (title, time unit, column names)
    #[arg(long)]
    pub no_header: bool,
    /// Leave out the index column (bucket starts and row names), as rtla's
    #[arg(long)]
    pub no_index: bool,
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
    /// Let the --load run this long before tracing (10, 10s, 1m): the trigger starts at its
    /// end, and --duration counts from there (as rtla's)
    #[arg(long, value_name = "TIME", value_parser = parse_run_duration)]
    pub warm_up: Option<Duration>,
    /// Cause bottom halves at a fixed rate and measure only those: timer, net, workqueue, tasklet, block
    #[arg(short, long, value_name = "KIND")]
    pub trigger: Option<TriggerKind>,
    /// Requests per second of --trigger
    #[arg(long, value_name = "HZ", default_value_t = bh::DEFAULT_RATE_HZ, requires = "trigger")]
    pub rate: u32,
    /// Spinning tasks irqlens runs on the measured CPUs meanwhile: zero, one, many (256), many:N
    #[arg(short, long, value_name = "SCENARIO", default_value_t = bh::DEFAULT_LOAD)]
    pub load: LoadScenario,
    /// Rows per mechanism in the delay causes table
    #[arg(long, value_name = "N", default_value_t = bh::DEFAULT_CAUSES)]
    pub causes: usize,
    /// Slowest samples shown per mechanism, with what delayed them
    #[arg(long, value_name = "N", default_value_t = bh::DEFAULT_WORST)]
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
    /// Let the timer threads (or the watched task) run this long before measuring (10, 10s,
    /// 1m): the wakeups meanwhile are discarded, and --duration counts from its end (as
    /// rtla's)
    #[arg(long, value_name = "TIME", value_parser = parse_run_duration)]
    pub warm_up: Option<Duration>,
    /// Timer period of the timer threads (µs, or with a unit: 10ms)
    #[arg(short, long, value_name = "US", default_value = wakeup::DEFAULT_PERIOD_TEXT, value_parser = parse_micros)]
    pub period: Duration,
    /// Scheduling of the timer threads: o:NICE, f:PRIO, r:PRIO, d:RUNTIME:PERIOD
    #[arg(short = 'P', long, value_name = "PRIO", default_value_t = wakeup::DEFAULT_PRIORITY)]
    pub priority: Priority,
    /// Task mode: measure the wakeups of this process's threads instead of timer threads
    #[arg(long, value_name = "PID", conflicts_with = "comm")]
    pub pid: Option<u32>,
    /// Task mode: measure the wakeups of threads with this name (as in /proc/PID/comm)
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Stop when a sample's total latency (expiry to the thread's clock read) reaches this
    /// (µs), and show its decomposition; the run then exits with status 2 (rtla's -T).
    /// -s/--stop is the older name: rtla's -s is a stack-trace threshold, which irqlens
    /// does not have
    #[arg(short = 'T', long = "thread", visible_short_alias = 's', visible_alias = "stop", value_name = "US", value_parser = parse_micros)]
    pub stop: Option<Duration>,
    /// Stop when a timer IRQ latency (expiry to handler) reaches this (µs); the run then
    /// exits with status 2 (rtla's -i/--irq)
    #[arg(short, long = "irq-stop", visible_alias = "irq", value_name = "US", value_parser = parse_micros)]
    pub irq_stop: Option<Duration>,
    /// Hold the CPUs' PM QoS latency target (/dev/cpu_dma_latency) at this (µs) while the
    /// run goes, or `off` to leave it; the kernel drops the request when irqlens exits
    /// [default: 0 in timer mode, as cyclictest (rtla timerlat sets it only when given);
    /// off in task mode]
    #[arg(long, value_name = "US")]
    pub dma_latency: Option<irqlens_model::wakeup::DmaLatency>,
    /// Timer mode: align the threads' expiries, each US after the previous thread's (-A
    /// alone: 0, all at once), as cyclictest's and rtla timerlat's -A; unlike theirs, on
    /// whole periods of CLOCK_MONOTONIC, so anything else on that grid wakes with them
    /// [default: each thread one period after it starts, at a phase of its own]
    #[arg(short = 'A', long, value_name = "US", num_args = 0..=1, default_missing_value = "0", value_parser = parse_micros)]
    pub aligned: Option<Duration>,
    /// Timer mode: trace nothing and measure the total only, as cyclictest does
    #[arg(long)]
    pub no_trace: bool,
    /// Task mode: only the watched tasks in this cgroup v2 path and below, as /proc/PID/cgroup shows it (repeatable)
    #[arg(long = "cgroup", value_name = "PATH", value_parser = parse_cgroup_path)]
    pub cgroups: Vec<String>,
    /// Rows in the causes table
    #[arg(long, value_name = "N", default_value_t = wakeup::DEFAULT_CAUSES)]
    pub causes: usize,
    /// Slowest samples shown whole, with their decomposition
    #[arg(long, value_name = "N", default_value_t = wakeup::DEFAULT_WORST)]
    pub worst: usize,
    /// rtla's automatic mode: the total and IRQ stops (-T, -i) at US, and the run recorded
    /// (to irqlens-wakeup.jsonl.gz in the current directory, unless --record says where)
    #[arg(short = 'a', long, value_name = "US", value_parser = parse_micros)]
    pub auto: Option<Duration>,
    #[command(flatten)]
    pub stop_actions: StopActions,
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
    #[arg(long, value_name = "N", default_value_t = account::DEFAULT_TOP)]
    pub top: usize,
    /// Also a table per workload: cgroup, pod, container or unit (charged, served, and the kernel's error per workload)
    #[arg(long, value_name = "KIND", value_parser = parse_workload_by)]
    pub by: Option<WorkloadBy>,
    /// Only the tasks in this cgroup v2 path and below, as /proc/PID/cgroup shows it (repeatable)
    #[arg(long = "cgroup", value_name = "PATH", value_parser = parse_cgroup_path)]
    pub cgroups: Vec<String>,
    /// Do not follow socket deliveries to their readers (cheaper on a host busy with local
    /// sockets): a delivery then serves only the reader it wakes
    #[arg(long)]
    pub no_sockets: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// CPUs measured before and after each remedy, as a list like 1-3
    #[arg(short, long, value_name = "LIST", required_unless_present = "revert")]
    pub cpus: Option<CpuList>,
    /// How long each before and each after measurement runs (10, 10s, 1m)
    #[arg(short, long, value_name = "TIME", default_value = "5", value_parser = parse_run_duration)]
    pub duration: Duration,
    /// Before/after pairs per remedy (2 to 20)
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=20))]
    pub rounds: u32,
    /// The remedies to try, by the ids `irqlens advise` or `irqlens check` shows
    #[arg(
        long,
        value_name = "ID,...",
        value_delimiter = ',',
        conflicts_with = "all"
    )]
    pub apply: Vec<String>,
    /// Try every remedy `irqlens advise` finds for the CPUs
    #[arg(long)]
    pub all: bool,
    /// Expert: try this change of a knob instead of an advised one: irq:N=LIST,
    /// rps:[NETNS/]DEV/rx-N=MASK, xps:[NETNS/]DEV/tx-N=MASK, threaded:[NETNS/]DEV=0|1,
    /// sysctl:NAME=VALUE, workqueue-cpumask=MASK, rt-runtime:CGROUP=US,
    /// affinity:TID=LIST, priority:TID=PRIO; repeat for more
    #[arg(long, value_name = "KNOB=VALUE")]
    pub change: Vec<String>,
    /// Print what would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the remedies that helped in place at exit (the journal keeps them for --revert)
    #[arg(long)]
    pub keep: bool,
    /// Put back every change a tune, trial, steer or bh that ended left in the journal
    /// (after a crash or SIGKILL), list those --keep left in place, and exit
    #[arg(long, conflicts_with_all = ["cpus", "apply", "all", "change", "dry_run", "keep"])]
    pub revert: bool,
    /// With --revert: put back the changes --keep left in place too
    #[arg(long)]
    pub kept: bool,
    /// What the verdict is judged on
    #[arg(long, value_enum, default_value_t = TuneMetric::Noise)]
    pub metric: TuneMetric,
    #[command(flatten)]
    pub show: ShowArgs,
    #[command(flatten)]
    pub end: EndArgs,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    /// Only the NAPI threads (napi/DEV-N) and IRQ threads of these devices; repeat for more
    #[arg(long = "dev", value_name = "DEV")]
    pub devices: Vec<String>,
    /// How long to steer (10, 10s, 1m); default: until Ctrl-C/SIGTERM
    #[arg(short, long, value_name = "TIME", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,
    /// How long a served process keeps its thread's priority after the last data for it:
    /// a thread is lowered only after its highest waiter was quiet this long (the
    /// hysteresis that keeps it from thrashing; 500ms, 2s)
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = parse_run_duration)]
    pub hold: Duration,
    /// Log what would change, and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Leave ksoftirqd alone (it runs every deferred softirq of its CPU, not only the flow's)
    #[arg(long)]
    pub no_ksoftirqd: bool,
    #[command(flatten)]
    pub show: ShowArgs,
    #[command(flatten)]
    pub end: EndArgs,
}

/// What `tune` measures before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TuneMetric {
    /// OS noise on the CPUs (irqlens noise)
    Noise,
    /// Wakeup latency on the CPUs (irqlens wakeup)
    Wakeup,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_take_k_and_m() {
        assert_eq!(parse_rate("50000"), Ok(50_000));
        assert_eq!(parse_rate("50k"), Ok(50_000));
        assert_eq!(parse_rate("1.5M"), Ok(1_500_000));
        for bad in ["", "0", "-5", "k", "20M", "nan", "1e400"] {
            let err = parse_rate(bad).unwrap_err();
            assert!(err.contains("is not a rate"), "{bad}: {err}");
        }
    }

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
