//! What `irqlens agent` costs (issue 31), with its default configuration (bh and account
//! on every CPU): its CPU time over an idle minute as a share of one CPU, hackbench's
//! slowdown with the agent running against plain runs interleaved with them, and its
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
    Background, hackbench_loops_for, median, process_cpu_seconds, quick_mode, rss_series,
    run_seconds,
};
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

/// The agent with its default configuration but for its address (loopback, a free port).
struct Agent {
    config: std::path::PathBuf,
}

impl Agent {
    fn new() -> Result<Agent> {
        let config = temp_path("agent-bench.toml");
        std::fs::write(&config, format!("listen = \"127.0.0.1:{}\"\n", free_port()))
            .context("writing the agent's configuration")?;
        Ok(Agent { config })
    }

    /// Starts it and returns once its programs are attached and it settled.
    fn start(&self) -> Result<Background> {
        let args = ["agent", "-q", "--config", path_text(&self.config)?]
            .map(String::from)
            .to_vec();
        let mut agent = Background::start(runner::binary(), &args)?;
        agent.wait_until_attached(ATTACH_TIMEOUT)?;
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
    hackbench_slowdown(&agent, &plan, loops)?;
    storm_memory(&agent, &plan, loops)?;
    Ok(())
}

/// 1. The agent's CPU time while the machine idles, as a share of one CPU.
fn idle_cpu(agent: &Agent, plan: &Plan) -> Result<()> {
    println!(
        "1. Idle: the agent's CPU time (/proc/PID/stat, all threads) over {} s once attached, \
         as % of one CPU (target <= 1%)",
        plan.idle.as_secs()
    );
    let share = agent.during(|pid| {
        let before = process_cpu_seconds(pid).context("the agent's CPU time")?;
        let started = Instant::now();
        std::thread::sleep(plan.idle);
        let used = process_cpu_seconds(pid).context("the agent's CPU time")? - before;
        Ok(100.0 * used / started.elapsed().as_secs_f64())
    })?;
    println!("   {share:.3}% of one CPU\n");
    Ok(())
}

/// 2. hackbench with the agent running, against a plain run next to each.
fn hackbench_slowdown(agent: &Agent, plan: &Plan, loops: u32) -> Result<()> {
    println!(
        "2. Slowdown: hackbench -l {loops} -g {HACKBENCH_GROUPS} (its Time, s) with the agent \
         running, against a plain run next to it: {} rounds of a pair, the plain run first in \
         every other one (so a drift of the machine cancels out)\n   \
         RATIO: median of the pairs' ratios (target <= 1.03x)",
        plan.rounds
    );
    let mut ratios = Vec::new();
    let (mut plains, mut withs) = (Vec::new(), Vec::new());
    for round in 0..plan.rounds {
        let with_agent = || agent.during(|_| hackbench(loops));
        let (plain, with) = if round % 2 == 0 {
            let plain = hackbench(loops)?;
            (plain, with_agent()?)
        } else {
            let with = with_agent()?;
            (hackbench(loops)?, with)
        };
        ratios.push(with / plain);
        plains.push(plain);
        withs.push(with);
    }
    let (low, high) = ratios
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), r| (l.min(*r), h.max(*r)));
    println!(
        "   plain {:.3} s, with the agent {:.3} s (medians): {:.3}x ({low:.3}..{high:.3})\n",
        median(plains),
        median(withs),
        median(ratios.clone())
    );
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
