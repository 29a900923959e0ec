//! Whether irqlens's memory stays flat in an event storm: each capability runs under
//! `hackbench -l 2000 -g 4` in a loop, a UDP flood on loopback and a churn of short-lived
//! processes (`true` started one after the other: account's ledger sees each of them),
//! and the bench prints the irqlens process's resident memory (VmRSS) every 5 s, after
//! the warm-up (a quarter of the run) and at the end, its growth in between, and how many
//! processes came and went in the run. Run as root after `cargo build --release`:
//! `cargo bench --bench memory`. It prints figures and asserts nothing.
//!
//! - IRQLENS_BENCH_SECONDS=N: each run's length (60 s by default; a long storm is what
//!   shows a slow growth).
//! - IRQLENS_BENCH_ONLY=account,bh: only the runs of these capabilities (or of these
//!   cases: `IRQLENS_BENCH_ONLY="account --compensate"`).
//! - IRQLENS_BEFORE=/path/to/irqlens also runs that binary, each case right before the
//!   current one, so before and after come out of one storm.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, bail};

use common::{before_binary, run_seconds};
use irqlens_test_support::runner::{self, require_root};

const DEFAULT_SECONDS: u64 = 60;
const SAMPLE_EVERY: Duration = Duration::from_secs(5);
const ONLY_VAR: &str = "IRQLENS_BENCH_ONLY";

const CASES: [&[&str]; 6] = [
    &["noise"],
    &["bh"],
    &["wakeup"],
    &["wakeup", "--comm", "hackbench"],
    &["account", "--compensate"],
    &["account", "--interval", "1s", "--json"],
];

/// hackbench in a loop, a UDP flood on loopback and short-lived processes one after the
/// other, until dropped.
struct Storm {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Short-lived processes started so far.
    churned: Arc<AtomicU64>,
}

impl Storm {
    fn start() -> Result<Storm> {
        let status = Command::new("hackbench")
            .args(["-l", "1", "-g", "1"])
            .stdout(Stdio::null())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            bail!("hackbench (rt-tests) is needed: scripts/setup installs it");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let receiver = UdpSocket::bind("127.0.0.1:0")?;
        receiver.set_read_timeout(Some(Duration::from_millis(100)))?;
        let to = receiver.local_addr()?;
        let until_stopped = |stop: &Arc<AtomicBool>, mut work: Box<dyn FnMut() + Send>| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    work();
                }
            })
        };
        let mut buffer = [0u8; 2048];
        let sender = UdpSocket::bind("127.0.0.1:0")?;
        let churned = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&churned);
        let threads = vec![
            until_stopped(&stop, Box::new(move || drop(receiver.recv(&mut buffer)))),
            until_stopped(&stop, Box::new(move || drop(sender.send_to(&[0; 64], to)))),
            // a round at a time: the last one ends by itself when the storm stops
            until_stopped(
                &stop,
                Box::new(|| {
                    let _ = Command::new("hackbench")
                        .args(["-l", "2000", "-g", "4"])
                        .stdout(Stdio::null())
                        .status();
                }),
            ),
            // each one a new pid, gone in a millisecond
            until_stopped(
                &stop,
                Box::new(move || {
                    if Command::new("true").status().is_ok() {
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                }),
            ),
        ];
        Ok(Storm {
            stop,
            threads,
            churned,
        })
    }
}

impl Drop for Storm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Storm {
    fn churned(&self) -> u64 {
        self.churned.load(Ordering::Relaxed)
    }
}

/// VmRSS of `pid` in KiB, while it lives.
fn resident_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs irqlens `args` for `seconds` and samples its VmRSS (KiB) every 5 s.
fn resident_over_run(binary: &Path, args: &[&str], seconds: u64) -> Result<Vec<u64>> {
    let duration = seconds.to_string();
    let mut child = Command::new(binary)
        .args(args)
        .args(["-d", &duration, "-q"])
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| format!("running {}", binary.display()))?;
    let started = Instant::now();
    let mut samples = Vec::new();
    while child.try_wait()?.is_none() {
        std::thread::sleep(SAMPLE_EVERY);
        // the last sample, when the run is over, would be the output's, not the run's
        if started.elapsed() < Duration::from_secs(seconds) {
            samples.extend(resident_kib(child.id()));
        }
    }
    if !child.wait()?.success() {
        bail!("irqlens {} failed", args.join(" "));
    }
    Ok(samples)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Whether IRQLENS_BENCH_ONLY (a comma-separated list of capabilities or whole cases,
/// `account --compensate`) leaves this case in; all run when it is not set.
fn wanted(args: &[&str]) -> bool {
    let case = args.join(" ");
    std::env::var(ONLY_VAR).map_or(true, |only| {
        only.split(',')
            .any(|s| s.trim() == args[0] || s.trim() == case)
    })
}

/// IRQLENS_BEFORE's binary (first) if set, and the irqlens this build made.
fn binaries_under_test() -> Result<Vec<(&'static str, PathBuf)>> {
    let mut binaries: Vec<_> = before_binary()?
        .map(|b| ("before", b))
        .into_iter()
        .collect();
    binaries.push(("current", runner::binary().to_path_buf()));
    Ok(binaries)
}

fn main() -> Result<()> {
    require_root("the memory bench traces the kernel")?;
    let seconds = run_seconds(DEFAULT_SECONDS)?;
    let binaries = binaries_under_test()?;
    println!(
        "VmRSS (MiB) every 5 s of {seconds} s runs under hackbench, a UDP flood and short-lived processes"
    );
    println!(
        "{:<48} {:>9} {:>9} {:>9} {:>9}  samples",
        "run", "warm", "end", "growth", "processes"
    );
    let storm = Storm::start()?;
    // let the storm reach its pace
    std::thread::sleep(Duration::from_secs(2));
    for args in CASES.into_iter().filter(|args| wanted(args)) {
        for (label, binary) in &binaries {
            let churned = storm.churned();
            let samples = resident_over_run(binary, args, seconds)?;
            let churned = storm.churned() - churned;
            let (Some(&end), warm) = (samples.last(), samples.get(samples.len() / 4)) else {
                bail!("irqlens {} ended before its first sample", args.join(" "));
            };
            let warm = warm.copied().unwrap_or(end);
            let all: Vec<String> = samples.iter().map(|&k| format!("{:.1}", mib(k))).collect();
            let run = format!("{} ({label})", args.join(" "));
            println!(
                "{run:<48} {:>9.1} {:>9.1} {:>+9.1} {churned:>9}  {}",
                mib(warm),
                mib(end),
                mib(end) - mib(warm),
                all.join(" ")
            );
        }
    }
    Ok(())
}
