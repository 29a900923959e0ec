//! `irqlens wakeup` against cyclictest (rt-tests) on the same CPUs, period and priority,
//! run one after the other, and the cost irqlens's probes add to the latency it
//! measures: the same timer threads untraced (`--no-trace`, the total only, as
//! cyclictest measures it) and traced. Run as root after `cargo build --release`:
//! `cargo bench --bench wakeup` (IRQLENS_BENCH_SECONDS=N shortens each run from 10 s).
//! It prints figures and asserts nothing about timing: the machine is noisy, so the
//! ratios within this one run are what compare.

use std::process::Command;

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use common::{median, run_seconds};
use irqlens_test_support::runner::{require_root, run_json};

const DEFAULT_SECONDS: u64 = 10;
const CPUS: &str = "0-1";
const PERIOD_US: u32 = 1000;
const PRIORITY: u32 = 95;
/// Untraced and traced runs alternate this many times: the machine drifts between runs,
/// so the probe cost is the median of each round's difference.
const ROUNDS: usize = 3;

/// min / avg / max of one CPU's latency, in µs.
#[derive(Clone, Copy, Debug)]
struct Latency {
    cpu: u32,
    count: u64,
    min: f64,
    avg: f64,
    max: f64,
}

fn main() -> Result<()> {
    require_root("the wakeup bench loads BPF programs and runs SCHED_FIFO threads")?;
    let seconds = run_seconds(DEFAULT_SECONDS)?;
    println!(
        "wakeup latency: CPUs {CPUS}, period {PERIOD_US} us, SCHED_FIFO {PRIORITY}, {seconds} s per run, one run after the other (us)\n"
    );
    let cyclictest = cyclictest(seconds)?;
    let duration = seconds.to_string();
    let (period, priority) = (PERIOD_US.to_string(), format!("f:{PRIORITY}"));
    let irqlens_args = |traced: bool| {
        let mut args = vec![
            "wakeup", "-c", CPUS, "-d", &duration, "-p", &period, "-P", &priority, "-q",
        ];
        if !traced {
            args.push("--no-trace");
        }
        args
    };
    let mean = |rows: &[Latency], f: fn(&Latency) -> f64| {
        rows.iter().map(f).sum::<f64>() / rows.len().max(1) as f64
    };
    let mut added_avg = Vec::new();
    let mut added_min = Vec::new();
    let mut last_round = None;
    for _ in 0..ROUNDS {
        let untraced = totals(&run_json(&irqlens_args(false))?)?;
        let traced_doc = run_json(&irqlens_args(true))?;
        let traced = totals(&traced_doc)?;
        added_avg.push(mean(&traced, |l| l.avg) - mean(&untraced, |l| l.avg));
        added_min.push(mean(&traced, |l| l.min) - mean(&untraced, |l| l.min));
        last_round = Some((untraced, traced, traced_doc));
    }
    let (untraced, traced, traced_doc) = last_round.context("no round ran")?;

    println!(
        "{:<26} {:>3} {:>8} {:>8} {:>8} {:>9}",
        "TOOL", "CPU", "COUNT", "MIN", "AVG", "MAX"
    );
    for (tool, rows) in [
        ("cyclictest", &cyclictest),
        ("irqlens wakeup --no-trace", &untraced),
        ("irqlens wakeup (traced)", &traced),
    ] {
        for row in rows {
            println!(
                "{tool:<26} {:>3} {:>8} {:>8.2} {:>8.2} {:>9.2}",
                row.cpu, row.count, row.min, row.avg, row.max
            );
        }
    }
    let (cyc, plain, probed) = (
        mean(&cyclictest, |l| l.avg),
        mean(&untraced, |l| l.avg),
        mean(&traced, |l| l.avg),
    );
    println!("(the table: the last of {ROUNDS} rounds of untraced then traced runs)");
    println!();
    println!("avg, irqlens untraced / cyclictest: {:.2}", plain / cyc);
    println!("avg traced / untraced (last round) {:.2}", probed / plain);
    let listed = |values: &[f64]| {
        values
            .iter()
            .map(|v| format!("{v:+.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "probe cost per activation, traced - untraced, each round: avg {} us (median {:+.2}), min {} us (median {:+.2}); target: avg <= +1.5 us",
        listed(&added_avg),
        median(added_avg.clone()),
        listed(&added_min),
        median(added_min.clone())
    );
    let run = &traced_doc["run"];
    println!(
        "traced run: {} checkpoints ({:.1} per activation), {} lost",
        run["tracking"]["events"],
        run["tracking"]["events"].as_f64().unwrap_or(0.0)
            / traced.iter().map(|l| l.count).sum::<u64>().max(1) as f64,
        run["lost_events"]
    );
    println!();
    println!("decomposition of the traced run (avg us per CPU):");
    for cpu in traced_doc["per_cpu"].as_array().context("cpus")? {
        let parts: Vec<String> = ["irq", "handler", "sched", "return", "total"]
            .iter()
            .map(|c| {
                let avg = cpu["components"][c]["avg_ns"].as_f64().unwrap_or(f64::NAN);
                format!("{c} {:.2}", avg / 1_000.0)
            })
            .collect();
        println!("  CPU {}: {}", cpu["cpu"], parts.join(", "));
    }
    println!("top causes of the traced run:");
    for cause in traced_doc["causes"]
        .as_array()
        .context("causes")?
        .iter()
        .take(6)
    {
        println!(
            "  {:<52} {:>6.1}%",
            cause["cause"].as_str().unwrap_or("?"),
            cause["share_percent"].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}

/// One cyclictest thread per CPU (-S: -t -a -n), the same period and priority, memory
/// locked; its closing per-thread lines are parsed.
fn cyclictest(seconds: u64) -> Result<Vec<Latency>> {
    let output = Command::new("cyclictest")
        .args([
            "-S",
            "-m",
            "-q",
            "-p",
            &PRIORITY.to_string(),
            "-i",
            &PERIOD_US.to_string(),
        ])
        .args(["-D", &seconds.to_string()])
        .output()
        .context("running cyclictest (rt-tests, installed by scripts/setup)")?;
    if !output.status.success() {
        bail!(
            "cyclictest failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<Latency> = text.lines().filter_map(parse_cyclictest_line).collect();
    if rows.is_empty() {
        bail!("no thread lines in cyclictest's output: {text}");
    }
    Ok(rows)
}

/// `T: 0 ( 1234) P:95 I:1000 C:  10000 Min:      3 Act:    5 Avg:    4 Max:      30`;
/// with -S, thread N runs on CPU N.
fn parse_cyclictest_line(line: &str) -> Option<Latency> {
    let field = |name: &str| -> Option<f64> {
        let rest = line.split(name).nth(1)?;
        rest.split_whitespace().next()?.parse().ok()
    };
    let thread = field("T:")?;
    Some(Latency {
        cpu: thread as u32,
        count: field("C:")? as u64,
        min: field("Min:")?,
        avg: field("Avg:")?,
        max: field("Max:")?,
    })
}

/// Per CPU, the total latency of an irqlens wakeup document.
fn totals(doc: &Value) -> Result<Vec<Latency>> {
    doc["per_cpu"]
        .as_array()
        .context("irqlens printed no CPUs")?
        .iter()
        .map(|cpu| {
            let total = &cpu["components"]["total"];
            let us = |key: &str| total[key].as_f64().map(|ns| ns / 1_000.0);
            Ok(Latency {
                cpu: cpu["cpu"].as_u64().context("cpu")? as u32,
                count: total["count"].as_u64().context("count")?,
                min: us("min_ns").context("min")?,
                avg: us("avg_ns").context("avg")?,
                max: us("max_ns").context("max")?,
            })
        })
        .collect()
}
