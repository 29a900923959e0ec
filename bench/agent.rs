//! What `irqlens agent` costs (issue 31), with its default configuration (bh and account
//! on every CPU): its CPU time over an idle minute as a share of one CPU, hackbench's
//! slowdown with the agent running against plain runs interleaved with them (and, as the
//! control, the same with an agent whose capabilities are all off; and what the agent and
//! its programs take of the CPUs during one, an upper bound of that slowdown), and its
//! resident memory every 10 s through a storm (hackbench in a loop and a UDP flood over
//! loopback). Run as root after `cargo build --release`: `cargo bench --bench agent`. It
//! prints figures and asserts nothing about timing.
//!
//! - IRQLENS_BENCH_SECONDS=N: the storm's length (60 s by default; 3600 for the hour of
//!   the closing note).
//! - IRQLENS_BENCH_QUICK=1: a few seconds per step, to check that the bench works.

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, ensure};

use common::storm::{HACKBENCH_GROUPS, hackbench, hackbench_loop, udp_flood};
use common::{
    Background, hackbench_loops_for, median, process_cpu_ns, process_program_run_ns, quick_mode,
    rss_series, run_seconds,
};
use irqlens_probe::RunTimeStats;
use irqlens_test_support::runner::{self, free_port, require_root, temp_path};

/// The agent may take this long to load and attach its programs.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
/// After attaching, until measuring (its first ticks, its server's first snapshot); after
/// stopping, until the next run (the kernel freeing its programs and maps).
const SETTLE: Duration = Duration::from_secs(2);

struct Plan {
    idle: Duration,
    hackbench_run: Duration,
    rounds: usize,
    storm_seconds: u64,
    rss_every: Duration,
}

impl Plan {
    fn new() -> Result<Plan> {
        Ok(if quick_mode() {
            Plan {
                idle: Duration::from_secs(5),
                hackbench_run: Duration::from_millis(500),
                rounds: 2,
                storm_seconds: run_seconds(10)?,
                rss_every: Duration::from_secs(2),
            }
        } else {
            Plan {
                idle: Duration::from_secs(60),
                hackbench_run: Duration::from_secs(1),
                // a pair's ratio spreads by about 5% on this VM: the median of 16 is
                // good to about 2%; even, so that either order leads as often
                rounds: 16,
                storm_seconds: run_seconds(60)?,
                rss_every: Duration::from_secs(10),
            }
        })
    }
}

/// Every capability off: the agent's process, threads and endpoint, attaching nothing.
const BARE: &str = "[noise_passive]\nenabled = false\n[bh]\nenabled = false\n\
                    [account]\nenabled = false\n";

/// The agent with a configuration on loopback, a free port.
struct Agent {
    config: std::path::PathBuf,
    port: u16,
    /// Whether it attaches programs (its readiness), or only serves its endpoint.
    attaches: bool,
}

impl Agent {
    /// The default configuration but for its address.
    fn new() -> Result<Agent> {
        Agent::with("agent-bench.toml", "", true)
    }

    /// The control: what starting and running an agent costs without any capability.
    fn bare() -> Result<Agent> {
        Agent::with("agent-bench-bare.toml", BARE, false)
    }

    fn with(name: &str, sections: &str, attaches: bool) -> Result<Agent> {
        let (config, port) = (temp_path(name), free_port());
        std::fs::write(
            &config,
            format!("listen = \"127.0.0.1:{port}\"\n{sections}"),
        )
        .context("writing the agent's configuration")?;
        Ok(Agent {
            config,
            port,
            attaches,
        })
    }

    /// Starts it and returns once its programs are attached (or, with none, its endpoint
    /// is up) and it settled.
    fn start(&self) -> Result<Background> {
        let args = ["agent", "-q", "--config", path_text(&self.config)?]
            .map(String::from)
            .to_vec();
        let mut agent = Background::start(runner::binary(), &args)?;
        if self.attaches {
            agent.wait_until_attached(ATTACH_TIMEOUT)?;
        } else {
            let port = self.port;
            agent.wait_until("listening", ATTACH_TIMEOUT, || {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            })?;
        }
        std::thread::sleep(SETTLE);
        Ok(agent)
    }

    /// Runs `measure` while the agent runs (its pid given), then stops it and lets the
    /// kernel free its programs and maps (which it does after the process ends), so that
    /// what runs next is not charged for them.
    fn during<T>(&self, measure: impl FnOnce(u32) -> Result<T>) -> Result<T> {
        let agent = self.start()?;
        let result = measure(agent.pid())?;
        let finished = agent.stop()?;
        std::thread::sleep(SETTLE);
        ensure!(
            finished.status.success(),
            "the agent ended with {}: {}",
            finished.status,
            finished.stderr.trim()
        );
        Ok(result)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.config);
    }
}

fn path_text(path: &Path) -> Result<&str> {
    path.to_str().context("a temp path that is not UTF-8")
}

fn main() -> Result<()> {
    require_root("the agent bench loads BPF programs")?;
    let plan = Plan::new()?;
    let agent = Agent::new()?;
    idle_cpu(&agent, &plan)?;
    let loops = hackbench_loops_for(plan.hackbench_run)?;
    hackbench_slowdown(&agent, &Agent::bare()?, &plan, loops)?;
    direct_cost(&agent, &plan, loops)?;
    storm_memory(&agent, &plan, loops)?;
    Ok(())
}

/// 1. The agent's CPU time while the machine idles, as a share of one CPU.
fn idle_cpu(agent: &Agent, plan: &Plan) -> Result<()> {
    println!(
        "1. Idle: the agent's CPU time (its process CPU clock) over {} s once attached, \
         as % of one CPU (target <= 1%)",
        plan.idle.as_secs()
    );
    let share = agent.during(|pid| {
        let before = process_cpu_ns(pid)?;
        let started = Instant::now();
        std::thread::sleep(plan.idle);
        let used = process_cpu_ns(pid)?.saturating_sub(before);
        Ok(100.0 * used as f64 / started.elapsed().as_nanos() as f64)
    })?;
    println!("   {share:.3}% of one CPU\n");
    Ok(())
}

/// Step 2, hackbench with the agent running, against a plain run next to each; the same
/// with the bare agent in the same rounds, as the control (its ratio is what the pairing
/// and an agent process without programs give).
fn hackbench_slowdown(agent: &Agent, bare: &Agent, plan: &Plan, loops: u32) -> Result<()> {
    println!(
        "2. Slowdown: hackbench -l {loops} -g {HACKBENCH_GROUPS} (its Time, s) with the agent \
         running, against a plain run next to it: {} rounds of a pair, the plain run first in \
         every other one (so a drift of the machine cancels out); in the same rounds, the same \
         pair with the agent's capabilities all off (the control)\n   \
         RATIO: median of the pairs' ratios (target <= 1.03x)",
        plan.rounds
    );
    let (mut full, mut control) = (Pairs::default(), Pairs::default());
    for round in 0..plan.rounds {
        let plain_first = round % 2 == 0;
        full.add(pair(agent, loops, plain_first)?);
        control.add(pair(bare, loops, plain_first)?);
    }
    full.print("with the agent");
    control.print("with the bare agent (the control)");
    Ok(())
}

/// One plain hackbench run and one with `agent` running, in that order if `plain_first`:
/// (plain, with) seconds.
fn pair(agent: &Agent, loops: u32, plain_first: bool) -> Result<(f64, f64)> {
    let with_agent = || agent.during(|_| hackbench(loops));
    Ok(if plain_first {
        let plain = hackbench(loops)?;
        (plain, with_agent()?)
    } else {
        let with = with_agent()?;
        (hackbench(loops)?, with)
    })
}

/// Pairs of (plain, with) hackbench times.
#[derive(Default)]
struct Pairs(Vec<(f64, f64)>);

impl Pairs {
    fn add(&mut self, pair: (f64, f64)) {
        self.0.push(pair);
    }

    fn print(&self, what: &str) {
        let ratios: Vec<f64> = self.0.iter().map(|(plain, with)| with / plain).collect();
        let (low, high) = ratios
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), r| (l.min(*r), h.max(*r)));
        println!(
            "   plain {:.3} s, {what} {:.3} s (medians): {:.3}x ({low:.3}..{high:.3})",
            median(self.0.iter().map(|(plain, _)| *plain).collect()),
            median(self.0.iter().map(|(_, with)| *with).collect()),
            median(ratios)
        );
    }
}

/// Step 2 again, by what the agent takes of the CPUs rather than by hackbench's time,
/// which swings more than the bound between runs: the agent's CPU time and its programs'
/// run time (the kernel's statistics on, which add two clock reads to every run, so this
/// is an upper bound) during one hackbench run, as a share of all CPUs over the run.
fn direct_cost(agent: &Agent, plan: &Plan, loops: u32) -> Result<()> {
    println!(
        "   Direct: the agent's CPU time (its process CPU clock) and its programs' BPF run time \
         during a hackbench process, as a share of the CPUs' time over it (kernel BPF \
         statistics on: an upper bound)"
    );
    let cpus = irqlens_collect::system::online_cpus()?.iter().count() as f64;
    let _stats = RunTimeStats::enable()?;
    for _ in 0..plan.rounds.min(3) {
        let (seconds, agent_ns, bpf_ns) = agent.during(|pid| {
            let (agent_before, bpf_before) = (process_cpu_ns(pid)?, process_program_run_ns(pid)?);
            // the whole hackbench process, its set-up and exit too, as the agent's times
            let started = Instant::now();
            hackbench(loops)?;
            let seconds = started.elapsed().as_secs_f64();
            Ok((
                seconds,
                process_cpu_ns(pid)?.saturating_sub(agent_before),
                process_program_run_ns(pid)?.saturating_sub(bpf_before),
            ))
        })?;
        let share = (agent_ns + bpf_ns) as f64 / (seconds * 1e9 * cpus);
        println!(
            "   hackbench {seconds:.3} s (the process): agent {:.1} ms, BPF {:.1} ms: {:.2}% of {cpus} CPUs \
             ({:.3}x if all of it delayed hackbench)",
            agent_ns as f64 / 1e6,
            bpf_ns as f64 / 1e6,
            100.0 * share,
            1.0 / (1.0 - share)
        );
    }
    println!();
    Ok(())
}

/// 3. The agent's resident memory through a storm.
fn storm_memory(agent: &Agent, plan: &Plan, loops: u32) -> Result<()> {
    println!(
        "3. Memory: the agent's VmRSS every {} s through a {} s storm (hackbench -l {loops} in a \
         loop, a UDP flood over loopback)",
        plan.rss_every.as_secs(),
        plan.storm_seconds
    );
    let series = agent.during(|pid| {
        let started = Instant::now();
        let deadline = started + Duration::from_secs(plan.storm_seconds);
        std::thread::scope(|scope| {
            let flood = scope.spawn(|| udp_flood(deadline));
            let runs = scope.spawn(|| hackbench_loop(loops, deadline));
            let series = rss_series(Some(pid), plan.rss_every, started, deadline);
            flood.join().expect("the flood panicked")?;
            runs.join().expect("hackbench's loop panicked")?;
            Ok(series)
        })
    })?;
    let text: Vec<String> = series
        .iter()
        .map(|kib| format!("{:.1}", *kib as f64 / 1024.0))
        .collect();
    println!("   MiB: {}", text.join(" "));
    if let (Some(first), Some(last), Some(most)) =
        (series.first(), series.last(), series.iter().max())
    {
        println!(
            "   first {:.1} MiB, last {:.1} MiB, largest {:.1} MiB",
            *first as f64 / 1024.0,
            *last as f64 / 1024.0,
            *most as f64 / 1024.0
        );
    }
    Ok(())
}
