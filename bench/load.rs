//! What irqlens costs a busy system (issue #14): hackbench's slowdown with each capability
//! tracing all CPUs in the background, a storm (hackbench in a loop and a UDP flood over
//! loopback) with each capability's lost events, irq_work interrupts and memory, and the
//! checkpoint probe's cost per traced event. Run as root after `cargo build --release`:
//! `cargo bench --bench load`. It prints figures and ratios against plain runs measured
//! in the same run, interleaved with the traced ones, and asserts nothing about timing.
//!
//! - IRQLENS_BEFORE=/path/to/irqlens also measures that binary, the same way and
//!   interleaved with target/release/irqlens, so before and after come out of one run.
//! - IRQLENS_BENCH_SECONDS=N: each storm's length (120 s by default).
//! - IRQLENS_BENCH_QUICK=1: a few seconds per step, to check that the bench works.
//! - IRQLENS_BENCH_ONLY=slowdown,storm,events: run only these sections.
//! - IRQLENS_BENCH_CAPABILITIES=account,bh: measure only these capabilities (and the
//!   bpftrace reference), to keep a before/after of one change short.
//!
//! With bpftrace installed, it is measured too as a reference: it counts the tracepoints
//! `account` traces in per-CPU maps (no events to user space). It needs tracefs, which
//! the bench mounts for the while if it is not mounted.

use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, ensure};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::Watched;
use irqlens_probe::checkpoint::{CheckpointProbe, Checkpoints};
use irqlens_probe::{ProgramRuns, RunTimeStats};
use serde_json::Value;

use common::storm::{HACKBENCH_GROUPS, hackbench, hackbench_loop, irq_work_interrupts, udp_flood};
use common::{
    Background, before_binary, hackbench_loops_for, interleaved_min, median, ping_pong, quick_mode,
    rss_series, run_seconds,
};
use irqlens_test_support::runner::{self, require_root};

/// A tracer may take this long to load and attach (bpftrace compiles its script first).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
/// After attaching, until measuring: the tracer enables its programs and starts up.
const SETTLE: Duration = Duration::from_millis(300);

const TRACEFS: &str = "/sys/kernel/tracing";

/// Tracepoints `account` traces (checkpoint.bpf.c without tasklets and work items), for
/// bpftrace to count. irq_work's vector is left out: the kernel refuses perf events on it.
const BPFTRACE_SCRIPT: &str = "\
tracepoint:irq:irq_handler_entry, tracepoint:irq:irq_handler_exit,
tracepoint:irq:softirq_raise, tracepoint:irq:softirq_entry, tracepoint:irq:softirq_exit,
tracepoint:irq_vectors:local_timer_entry, tracepoint:irq_vectors:local_timer_exit,
tracepoint:irq_vectors:reschedule_entry, tracepoint:irq_vectors:reschedule_exit,
tracepoint:irq_vectors:call_function_entry, tracepoint:irq_vectors:call_function_exit,
tracepoint:irq_vectors:call_function_single_entry,
tracepoint:irq_vectors:call_function_single_exit,
tracepoint:nmi:nmi_handler, tracepoint:sched:sched_switch, tracepoint:sched:sched_waking,
tracepoint:timer:hrtimer_start, tracepoint:timer:hrtimer_expire_entry,
tracepoint:timer:hrtimer_expire_exit, tracepoint:sock:sock_recv_length,
tracepoint:sock:sk_data_ready
{ @[probe] = count(); }";

/// The per-event cost's probes watch this process: none has this id, so the ping-pong
/// threads are a foreign workload, as hackbench is to a capability (which watches its
/// own threads).
const UNWATCHED_PID: u32 = u32::MAX;

/// How long each step takes: the full bench, or quick mode's check that it works.
struct Plan {
    /// hackbench's own time for one run of the slowdown, and of the storm's loop, untraced.
    slowdown_run: Duration,
    storm_run: Duration,
    slowdown_rounds: usize,
    storm_seconds: u64,
    rss_every: Duration,
    ping_pong_rounds: usize,
    round_trips: u64,
}

impl Plan {
    fn new() -> Result<Plan> {
        Ok(if quick_mode() {
            Plan {
                slowdown_run: Duration::from_millis(500),
                storm_run: Duration::from_millis(500),
                slowdown_rounds: 2,
                storm_seconds: run_seconds(10)?,
                rss_every: Duration::from_secs(2),
                ping_pong_rounds: 3,
                round_trips: 10_000,
            }
        } else {
            Plan {
                slowdown_run: Duration::from_secs(2),
                storm_run: Duration::from_secs(1),
                slowdown_rounds: 5,
                storm_seconds: run_seconds(120)?,
                rss_every: Duration::from_secs(10),
                ping_pong_rounds: 21,
                // each round trip emits about four 64-byte checkpoints (account); 10 000 of
                // them stay well below the quarter of the 16 MiB ring buffer where the probe
                // starts forcing wakeups (which would add irq_work interrupts)
                round_trips: 10_000,
            }
        })
    }
}

/// An irqlens capability as the bench runs it (all CPUs, default options).
struct Capability {
    name: &'static str,
}

const CAPABILITIES: [Capability; 4] = [
    Capability { name: "noise" },
    Capability { name: "bh" },
    Capability { name: "wakeup" },
    Capability { name: "account" },
];

/// Where `--json` puts the events seen and lost: every capability's `run` has `events`
/// and `lost_events`; an irqlens from before the common run part (IRQLENS_BEFORE) had
/// noise's `records`/`lost_records` and wakeup's `tracking/events` instead.
const SEEN: [&str; 3] = ["/run/events", "/run/records", "/run/tracking/events"];
const LOST: [&str; 2] = ["/run/lost_events", "/run/lost_records"];

/// What runs in the background during a measurement: a capability of one irqlens binary,
/// or bpftrace.
struct Tracer {
    tool: String,
    /// "current", "before", or "-" for bpftrace.
    binary: &'static str,
    program: PathBuf,
    args: Vec<String>,
    capability: Option<&'static Capability>,
}

impl Tracer {
    /// Starts it and returns once its programs are attached.
    fn start(&self) -> Result<Background> {
        let mut background = Background::start(&self.program, &self.args)?;
        background.wait_until_attached(ATTACH_TIMEOUT)?;
        std::thread::sleep(SETTLE);
        Ok(background)
    }

    /// Runs `measure` while the tracer runs, then stops it (SIGINT) and returns what it
    /// printed on stdout with `measure`'s result.
    fn during<T>(&self, measure: impl FnOnce(&Background) -> Result<T>) -> Result<(T, String)> {
        let background = self.start()?;
        let result = measure(&background)?;
        let finished = background.stop()?;
        ensure!(
            finished.status.success(),
            "{} ended with {}: {}",
            self.tool,
            finished.status,
            finished.stderr.trim()
        );
        Ok((result, finished.stdout))
    }

    /// Events seen and lost, from the capability's `--json` (None for bpftrace).
    fn events(&self, stdout: &str) -> Result<Option<EventCounts>> {
        if self.capability.is_none() {
            return Ok(None);
        }
        let doc: Value = serde_json::from_str(stdout)
            .with_context(|| format!("parsing the JSON of {}", self.tool))?;
        let count = |pointers: &[&str]| {
            pointers
                .iter()
                .find_map(|pointer| doc.pointer(pointer).and_then(Value::as_u64))
                .with_context(|| format!("{} printed none of {pointers:?}", self.tool))
        };
        Ok(Some(EventCounts {
            seen: count(&SEEN)?,
            lost: count(&LOST)?,
        }))
    }
}

#[derive(Clone, Copy)]
struct EventCounts {
    seen: u64,
    lost: u64,
}

fn main() -> Result<()> {
    require_root("the load bench loads BPF programs and runs irqlens")?;
    let plan = Plan::new()?;
    let binaries = binaries_under_test()?;
    let online = irqlens_collect::system::online_cpus()?;
    println!(
        "irqlens load bench (issue #14){}: {} CPUs, binaries: {}",
        if quick_mode() { ", QUICK mode" } else { "" },
        online.len(),
        binaries
            .iter()
            .map(|(label, path)| format!("{label} {}", path.display()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut tracers = irqlens_tracers(&binaries);
    // kept to the end: tracefs is unmounted again when it goes, if the bench mounted it
    let tracefs = match bpftrace_reference() {
        Ok((tracer, tracefs)) => {
            tracers.push(tracer);
            Some(tracefs)
        }
        Err(why) => {
            println!("no bpftrace reference: {why:#}");
            None
        }
    };
    let slowdown_loops = hackbench_loops_for(plan.slowdown_run)?;
    let storm_loops = hackbench_loops_for(plan.storm_run)?;
    println!();

    if wanted("slowdown") {
        hackbench_slowdown(&tracers, &plan, slowdown_loops)?;
    }
    if wanted("storm") {
        storms(&tracers, &plan, storm_loops)?;
    }
    if wanted("events") {
        checkpoint_event_cost(&plan, &online)?;
    }
    drop(tracefs);
    Ok(())
}

/// Whether IRQLENS_BENCH_ONLY (a comma-separated list of `slowdown`, `storm`, `events`)
/// leaves this section in; all run when it is not set.
fn wanted(section: &str) -> bool {
    std::env::var("IRQLENS_BENCH_ONLY")
        .map_or(true, |only| only.split(',').any(|s| s.trim() == section))
}

/// The irqlens this build made (target/release/irqlens), and IRQLENS_BEFORE's binary if set.
fn binaries_under_test() -> Result<Vec<(&'static str, PathBuf)>> {
    let mut binaries = vec![("current", runner::binary().to_path_buf())];
    binaries.extend(before_binary()?.map(|before| ("before", before)));
    Ok(binaries)
}

/// Each capability with each binary, the binaries of one capability next to each other.
fn irqlens_tracers(binaries: &[(&'static str, PathBuf)]) -> Vec<Tracer> {
    let chosen = std::env::var("IRQLENS_BENCH_CAPABILITIES").ok();
    let wanted = |capability: &&Capability| {
        chosen
            .as_deref()
            .is_none_or(|list| list.split(',').any(|name| name.trim() == capability.name))
    };
    CAPABILITIES
        .iter()
        .filter(wanted)
        .flat_map(|capability| {
            binaries.iter().map(move |(label, path)| Tracer {
                tool: format!("irqlens {}", capability.name),
                binary: label,
                program: path.clone(),
                args: [capability.name, "-q", "--json"].map(String::from).to_vec(),
                capability: Some(capability),
            })
        })
        .collect()
}

/// bpftrace counting `account`'s tracepoints, with tracefs mounted while it lives.
fn bpftrace_reference() -> Result<(Tracer, Tracefs)> {
    let installed = Command::new("bpftrace")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    ensure!(
        installed,
        "bpftrace is not installed (scripts/setup installs it)"
    );
    let tracefs = Tracefs::mounted()?;
    let tracer = Tracer {
        tool: "bpftrace (account's tracepoints)".into(),
        binary: "-",
        program: "bpftrace".into(),
        args: vec!["-e".into(), BPFTRACE_SCRIPT.into()],
        capability: None,
    };
    Ok((tracer, tracefs))
}

/// tracefs at /sys/kernel/tracing, mounted by the bench if it was not (bpftrace finds
/// tracepoints there), and then unmounted when this is dropped.
struct Tracefs {
    mounted_here: bool,
}

impl Tracefs {
    fn mounted() -> Result<Tracefs> {
        if Path::new(TRACEFS).join("events").is_dir() {
            return Ok(Tracefs {
                mounted_here: false,
            });
        }
        let status = Command::new("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status()
            .context("running mount")?;
        ensure!(status.success(), "mounting tracefs at {TRACEFS} failed");
        println!("(mounted tracefs at {TRACEFS} for bpftrace; unmounted at the end)");
        Ok(Tracefs { mounted_here: true })
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if !self.mounted_here {
            return;
        }
        let unmounted = Command::new("umount")
            .arg(TRACEFS)
            .status()
            .is_ok_and(|status| status.success());
        if !unmounted {
            println!("could not unmount the tracefs the bench mounted at {TRACEFS}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// hackbench

// ---------------------------------------------------------------------------------------
// 1. hackbench slowdown

/// One traced hackbench run and the plain run just before it, seconds.
struct Pair {
    plain: f64,
    traced: f64,
}

fn hackbench_slowdown(tracers: &[Tracer], plan: &Plan, loops: u32) -> Result<()> {
    println!(
        "1. Slowdown: hackbench -l {loops} -g {HACKBENCH_GROUPS} (its Time, s) with each tracer on \
         all CPUs in the background,\n   against a plain run just before: {} rounds of (plain, \
         traced) per tracer, tracers in turn\n   RATIO: median of the pairs' traced/plain \
         (target <= 1.10x)",
        plan.slowdown_rounds
    );
    let mut pairs: Vec<Vec<Pair>> = tracers.iter().map(|_| Vec::new()).collect();
    for _ in 0..plan.slowdown_rounds {
        for (tracer, pairs) in tracers.iter().zip(&mut pairs) {
            let plain = hackbench(loops)?;
            let (traced, _) = tracer.during(|_| hackbench(loops))?;
            pairs.push(Pair { plain, traced });
        }
    }
    println!(
        "   {:<34} {:<8} {:>7} {:>7} {:>7} {:>15}",
        "TRACER", "BINARY", "PLAIN", "TRACED", "RATIO", "RATIO MIN..MAX"
    );
    for (tracer, pairs) in tracers.iter().zip(&pairs) {
        let ratios: Vec<f64> = pairs.iter().map(|p| p.traced / p.plain).collect();
        let (low, high) = ratios
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), r| (l.min(*r), h.max(*r)));
        println!(
            "   {:<34} {:<8} {:>7.3} {:>7.3} {:>6.2}x {:>7.2}..{:.2}",
            tracer.tool,
            tracer.binary,
            median(pairs.iter().map(|p| p.plain).collect()),
            median(pairs.iter().map(|p| p.traced).collect()),
            median(ratios),
            low,
            high
        );
    }
    println!(
        "   (noise's measurement threads spin on every CPU by design, at nice 0: its ratio \
         includes the CPU time they take from hackbench)\n"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// 2. The storm

/// What one storm did, and what the tracer running through it (if any) saw and used.
struct Storm {
    /// From the start to the end of the last hackbench run.
    seconds: f64,
    hackbench_runs: u64,
    irq_work_interrupts: u64,
    datagrams_received: u64,
    /// The tracer's VmRSS every `rss_every` from the start.
    rss_kib: Vec<u64>,
    events: Option<EventCounts>,
}

impl Storm {
    fn runs_per_second(&self) -> f64 {
        self.hackbench_runs as f64 / self.seconds
    }

    fn irq_work_per_second(&self) -> f64 {
        self.irq_work_interrupts as f64 / self.seconds
    }
}

fn storms(tracers: &[Tracer], plan: &Plan, loops: u32) -> Result<()> {
    println!(
        "2. Storm: hackbench -l {loops} -g {HACKBENCH_GROUPS} in a loop and a UDP flood over \
         127.0.0.1, {} s per tracer, plain storms first and last\n   RUNS/S: hackbench runs \
         completed; IWI/S: irq_work interrupts (/proc/interrupts, all CPUs); x: against the \
         plain storms' mean\n   targets: no events lost, IWI no more than plain, RSS flat",
        plan.storm_seconds
    );
    let plain_first = storm(None, plan, loops)?;
    let mut traced = Vec::new();
    for tracer in tracers {
        traced.push(storm(Some(tracer), plan, loops)?);
    }
    let plain_last = storm(None, plan, loops)?;

    let plain_runs = (plain_first.runs_per_second() + plain_last.runs_per_second()) / 2.0;
    let plain_iwi = (plain_first.irq_work_per_second() + plain_last.irq_work_per_second()) / 2.0;
    // a plain storm may raise no irq_work at all: then there is no ratio, only the count
    let times_plain = |value: f64, plain: f64| {
        if plain > 0.0 {
            format!("{:.2}x", value / plain)
        } else {
            "-".into()
        }
    };
    println!(
        "   {:<34} {:<8} {:>7} {:>6} {:>8} {:>7} {:>8} {:>11} {:>9} {:>7} {:>15}",
        "TRACER",
        "BINARY",
        "RUNS/S",
        "x",
        "IWI/S",
        "x",
        "UDP K/S",
        "EVENTS",
        "LOST",
        "LOST%",
        "RSS MB 0->END"
    );
    let rows = std::iter::once(("plain (first)", "-", &plain_first))
        .chain(
            tracers
                .iter()
                .zip(&traced)
                .map(|(tracer, storm)| (tracer.tool.as_str(), tracer.binary, storm)),
        )
        .chain(std::iter::once(("plain (last)", "-", &plain_last)));
    for (tool, binary, storm) in rows {
        let events = match storm.events {
            Some(EventCounts { seen, lost }) => format!(
                "{seen:>11} {lost:>9} {:>6.1}%",
                100.0 * lost as f64 / (seen + lost).max(1) as f64
            ),
            None => format!("{:>11} {:>9} {:>7}", "-", "-", "-"),
        };
        let rss = match (storm.rss_kib.first(), storm.rss_kib.last()) {
            (Some(first), Some(last)) => format!("{:.1}->{:.1}", mib(*first), mib(*last)),
            _ => "-".into(),
        };
        println!(
            "   {tool:<34} {binary:<8} {:>7.2} {:>6} {:>8.1} {:>7} {:>8.1} {events} {rss:>15}",
            storm.runs_per_second(),
            times_plain(storm.runs_per_second(), plain_runs),
            storm.irq_work_per_second(),
            times_plain(storm.irq_work_per_second(), plain_iwi),
            storm.datagrams_received as f64 / storm.seconds / 1e3
        );
    }
    println!(
        "   RSS of each tracer every {} s, MB:",
        plan.rss_every.as_secs()
    );
    for (tracer, storm) in tracers.iter().zip(&traced) {
        let series: Vec<String> = storm
            .rss_kib
            .iter()
            .map(|&k| format!("{:.1}", mib(k)))
            .collect();
        println!(
            "   {:<34} {:<8} {}",
            tracer.tool,
            tracer.binary,
            series.join(" ")
        );
    }
    println!();
    Ok(())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One storm of `plan.storm_seconds`, with `tracer` running through it if given.
fn storm(tracer: Option<&Tracer>, plan: &Plan, loops: u32) -> Result<Storm> {
    let run = |tracer_pid: Option<u32>| -> Result<Storm> {
        let irq_work_before = irq_work_interrupts()?;
        let started = Instant::now();
        let deadline = started + Duration::from_secs(plan.storm_seconds);
        let (hackbench_runs, datagrams_received, rss_kib) = std::thread::scope(|scope| {
            let hackbench = scope.spawn(|| hackbench_loop(loops, deadline));
            let flood = scope.spawn(|| udp_flood(deadline));
            let rss_kib = rss_series(tracer_pid, plan.rss_every, started, deadline);
            let runs = hackbench.join().expect("the hackbench loop panicked");
            let received = flood.join().expect("the UDP flood panicked");
            (runs, received, rss_kib)
        });
        Ok(Storm {
            seconds: started.elapsed().as_secs_f64(),
            hackbench_runs: hackbench_runs?,
            irq_work_interrupts: irq_work_interrupts()? - irq_work_before,
            datagrams_received: datagrams_received?,
            rss_kib,
            events: None,
        })
    };
    match tracer {
        None => run(None),
        Some(tracer) => {
            let (mut storm, stdout) = tracer.during(|background| run(Some(background.pid())))?;
            storm.events = tracer.events(&stdout)?;
            Ok(storm)
        }
    }
}

// ---------------------------------------------------------------------------------------
// 3. The checkpoint probe's cost per traced event

/// The checkpoint sets of the capabilities that load the checkpoint probe.
const CHECKPOINT_SETS: [(&str, Checkpoints); 3] = [
    ("bh", Checkpoints::BottomHalves),
    ("wakeup", Checkpoints::Timers),
    ("account", Checkpoints::Accounting { sockets: true }),
];

/// What one probed ping-pong round saw.
struct ProbedRound {
    ns_per_round_trip: f64,
    events: u64,
    lost_events: u64,
    load: Duration,
    /// Each program's runs, with run time statistics on.
    programs: Vec<ProgramRuns>,
}

fn checkpoint_event_cost(plan: &Plan, online: &CpuList) -> Result<()> {
    let cpu = online.iter().last().context("no online CPU")?;
    let round_trips = plan.round_trips;
    println!(
        "3. Cost per traced event of the checkpoint probe: pipe ping-pong on CPU {cpu} (traced \
         alone,\n   the ping-pong's threads unwatched), {round_trips} round trips, min of {} \
         interleaved rounds",
        plan.ping_pong_rounds
    );
    let mut kept: [Vec<ProbedRound>; 3] = Default::default();
    let [bh_rounds, wakeup_rounds, account_rounds] = &mut kept;
    let probed = |rounds: &mut Vec<ProbedRound>, checkpoints| -> Result<f64> {
        let round = probed_ping_pong(cpu, round_trips, checkpoints, false)?;
        let ns = round.ns_per_round_trip;
        rounds.push(round);
        Ok(ns)
    };
    let [baseline, bh, wakeup, account] = interleaved_min(
        plan.ping_pong_rounds,
        [
            &mut || ping_pong(cpu, round_trips, |_| {}),
            &mut || probed(bh_rounds, Checkpoints::BottomHalves),
            &mut || probed(wakeup_rounds, Checkpoints::Timers),
            &mut || probed(account_rounds, Checkpoints::Accounting { sockets: true }),
        ],
    )?;
    println!(
        "   {:<26} {:>9} {:>14} {:>8} {:>12}",
        "", "events/rt", "ns/round trip", "added", "added/event"
    );
    println!("   {:<26} {:>9} {baseline:>14.0}", "no probe", "");
    for ((name, checkpoints), (ns, rounds)) in CHECKPOINT_SETS
        .iter()
        .zip([bh, wakeup, account].into_iter().zip(&kept))
    {
        // the round with the fewest events: the one least disturbed, like the timing
        let events = rounds.iter().map(|r| r.events).min().unwrap_or(0);
        let per_round_trip = events as f64 / round_trips as f64;
        let added = ns - baseline;
        let lost: u64 = rounds.iter().map(|r| r.lost_events).sum();
        let load = rounds.iter().map(|r| r.load).min().unwrap_or_default();
        println!(
            "   {:<26} {per_round_trip:>9.2} {ns:>14.0} {added:>+8.0} {:>+9.0} ns   (lost {lost}, load + attach {} ms)",
            format!("{name} ({checkpoints:?})"),
            added / per_round_trip,
            load.as_millis()
        );
    }
    program_run_cost(plan, cpu)?;
    println!();
    Ok(())
}

/// The same ping-pong with the kernel's run time statistics on: what each program costs
/// per run, as the kernel times it (the statistics add two clock reads to every run, so
/// the rounds above, which time the events, run without).
fn program_run_cost(plan: &Plan, cpu: u32) -> Result<()> {
    let rounds = plan.ping_pong_rounds.div_ceil(3);
    println!(
        "   per program run (BPF run time statistics on): the round of least time per round \
         trip of {rounds}"
    );
    println!(
        "   {:<26} {:>9} {:>14} {:>8}",
        "", "runs/rt", "run ns/rt", "ns/run"
    );
    for (name, checkpoints) in CHECKPOINT_SETS {
        let mut best: Option<(f64, Vec<ProgramRuns>)> = None;
        for _ in 0..rounds {
            let runs = probed_ping_pong(cpu, plan.round_trips, checkpoints, true)?.programs;
            let ns: u64 = runs.iter().map(|r| r.run_time_ns).sum();
            let per_round_trip = ns as f64 / plan.round_trips as f64;
            if best
                .as_ref()
                .is_none_or(|(least, _)| per_round_trip < *least)
            {
                best = Some((per_round_trip, runs));
            }
        }
        let Some((_, runs)) = best else { continue };
        let row = |label: &str, runs: u64, ns: u64| {
            println!(
                "   {label:<26} {:>9.2} {:>14.0} {:>8.1}",
                runs as f64 / plan.round_trips as f64,
                ns as f64 / plan.round_trips as f64,
                ns as f64 / runs.max(1) as f64
            )
        };
        let total_runs = runs.iter().map(|r| r.runs).sum();
        row(name, total_runs, runs.iter().map(|r| r.run_time_ns).sum());
        for program in runs.iter().filter(|r| r.runs > 0) {
            row(
                &format!("  {}", program.name),
                program.runs,
                program.run_time_ns,
            );
        }
    }
    Ok(())
}

/// A ping-pong on `cpu` with the checkpoint probe tracing it (and nothing else) exactly
/// while timed; with `run_time_stats`, the kernel counts each program's runs and run time
/// meanwhile (the counts before the timed round trips are subtracted).
fn probed_ping_pong(
    cpu: u32,
    round_trips: u64,
    checkpoints: Checkpoints,
    run_time_stats: bool,
) -> Result<ProbedRound> {
    let started = Instant::now();
    let mut storage = MaybeUninit::uninit();
    let probe = CheckpointProbe::load(
        &mut storage,
        checkpoints,
        &CpuList::single(cpu),
        &Watched::Process(UNWATCHED_PID),
    )?;
    let load = started.elapsed();
    let _stats = run_time_stats.then(RunTimeStats::enable).transpose()?;
    let mut before = Ok(Vec::new());
    let ns_per_round_trip = ping_pong(cpu, round_trips, |timed| {
        if timed {
            if run_time_stats {
                before = probe.program_runs();
            }
            probe.enable()
        } else {
            probe.disable()
        }
    })?;
    let (before, mut programs) = (before?, Vec::new());
    if run_time_stats {
        for mut program in probe.program_runs()? {
            if let Some(earlier) = before.iter().find(|b| b.name == program.name) {
                program.runs -= earlier.runs;
                program.run_time_ns -= earlier.run_time_ns;
            }
            programs.push(program);
        }
    }
    let mut events = probe.events()?;
    Ok(ProbedRound {
        ns_per_round_trip,
        events: events.take().len() as u64,
        lost_events: events.lost(),
        load,
        programs,
    })
    // dropping the probe detaches it: the next round starts untraced
}
