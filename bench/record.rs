//! What `--record` costs and how big recordings grow: each capability runs with and
//! without a recording, alternately, and the bench prints the file's size (per input
//! line, per second and extrapolated to an hour), the irqlens process's CPU time with
//! the recording against without (same run, so the noisy machine affects both alike),
//! the measured CPU's result both ways (the recording is written by the collector, on
//! another CPU), and how fast `report` replays it. Run as root after
//! `cargo build --release`: `cargo bench --bench record` (IRQLENS_BENCH_SECONDS=N, 10
//! by default). It prints figures and asserts nothing about timing.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result};
use serde_json::Value;

use common::run_seconds;
use irqlens_test_support::runner::run_json;

const DEFAULT_SECONDS: u64 = 10;
const ROUNDS: usize = 2;

/// A capability's run, and the figure of its result that shows the measured CPU.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    figure: fn(&Value) -> f64,
}

const CASES: [Case; 3] = [
    Case {
        name: "noise -c 1",
        args: &["noise", "-c", "1"],
        figure: |doc| {
            doc["per_cpu"][0]["cpu_available_percent"]
                .as_f64()
                .unwrap_or(0.0)
        },
    },
    Case {
        name: "bh -c 1 (passive)",
        args: &["bh", "-c", "1"],
        figure: |doc| doc["run"]["events"].as_f64().unwrap_or(0.0),
    },
    Case {
        name: "account -c 0-1",
        args: &["account", "-c", "0-1"],
        figure: |doc| doc["run"]["events"].as_f64().unwrap_or(0.0),
    },
];

/// One run: its JSON result and the CPU time (user + system) the irqlens process took.
fn run(args: &[&str]) -> Result<(Value, f64)> {
    let before = children_cpu_seconds();
    let doc = run_json(args)?;
    Ok((doc, children_cpu_seconds() - before))
}

fn children_cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers: all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a live rusage for the kernel to fill.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Input lines of a recording (from its end line, read without irqlens's reader).
fn inputs(path: &Path) -> Result<u64> {
    let text = Command::new("zcat").arg(path).output()?.stdout;
    let last = String::from_utf8(text)?
        .lines()
        .last()
        .map(str::to_owned)
        .context("an empty recording")?;
    let end: Value = serde_json::from_str(&last)?;
    end["inputs"].as_u64().context("no end line")
}

fn main() -> Result<()> {
    let seconds = run_seconds(DEFAULT_SECONDS)?.to_string();
    let path = std::env::temp_dir().join("irqlens-bench-record.jsonl.gz");
    let path_text = path.to_str().unwrap();
    println!("--record: {seconds} s per run, {ROUNDS} rounds of (without, with)\n");
    println!(
        "{:<20} {:>10} {:>11} {:>9} {:>11} {:>10} {:>12} {:>12} {:>14}",
        "RUN",
        "INPUTS/S",
        "BYTES/LINE",
        "KB/S",
        "MB/HOUR",
        "CPU RATIO",
        "FIGURE W/O",
        "FIGURE WITH",
        "REPLAY LINES/S"
    );
    for case in &CASES {
        let mut plain: Vec<&str> = case.args.to_vec();
        plain.extend(["-d", &seconds, "-q"]);
        let mut recorded = plain.clone();
        recorded.extend(["--record", path_text]);
        let (mut cpu_plain, mut cpu_recorded) = (0.0, 0.0);
        let (mut figure_plain, mut figure_recorded) = (0.0, 0.0);
        let (mut bytes, mut lines, mut replay_seconds, mut elapsed_s) = (0u64, 0u64, 0.0, 0.0);
        for _ in 0..ROUNDS {
            let (doc, cpu) = run(&plain)?;
            cpu_plain += cpu;
            figure_plain += (case.figure)(&doc) / ROUNDS as f64;
            let (doc, cpu) = run(&recorded)?;
            cpu_recorded += cpu;
            figure_recorded += (case.figure)(&doc) / ROUNDS as f64;
            elapsed_s += doc["run"]["elapsed_ns"].as_f64().unwrap_or(0.0) / 1e9;
            bytes += std::fs::metadata(&path)?.len();
            lines += inputs(&path)?;
            let started = Instant::now();
            run(&["report", path_text])?;
            replay_seconds += started.elapsed().as_secs_f64();
        }
        let per_second = bytes as f64 / elapsed_s;
        println!(
            "{:<20} {:>10.0} {:>11.1} {:>9.1} {:>11.1} {:>10.2} {:>12.3} {:>12.3} {:>14.0}",
            case.name,
            lines as f64 / elapsed_s,
            bytes as f64 / lines.max(1) as f64,
            per_second / 1e3,
            per_second * 3600.0 / 1e6,
            cpu_recorded / cpu_plain,
            figure_plain,
            figure_recorded,
            lines as f64 / replay_seconds,
        );
    }
    std::fs::remove_file(&path).ok();
    println!(
        "\nBYTES/LINE includes the header (kernel config, /proc snapshots: tens of KB).\n\
         CPU RATIO: the irqlens process's CPU time with --record over without.\n\
         FIGURE: noise: % of CPU 1 available; bh, account: checkpoints traced."
    );
    Ok(())
}
