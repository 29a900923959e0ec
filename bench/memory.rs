//! Whether irqlens's memory stays flat in an event storm: each capability runs under
//! `hackbench -l 2000 -g 4` in a loop and a UDP flood on loopback, and the bench prints
//! the irqlens process's resident memory (VmRSS) every 5 s, after the warm-up (a quarter
//! of the run) and at the end, and its growth in between. Run as root after
//! `cargo build --release`: `cargo bench --bench memory` (IRQLENS_BENCH_SECONDS=N per
//! run, 60 by default; a long storm is what shows a slow growth). It prints figures and
//! asserts nothing.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, bail};

use common::run_seconds;
use irqlens_test_support::runner::{self, require_root};

const DEFAULT_SECONDS: u64 = 60;
const SAMPLE_EVERY: Duration = Duration::from_secs(5);

const CASES: [&[&str]; 6] = [
    &["noise"],
    &["bh"],
    &["wakeup"],
    &["wakeup", "--comm", "hackbench"],
    &["account", "--compensate"],
    &["account", "--interval", "1s", "--json"],
];

/// hackbench in a loop and a UDP flood on loopback, until dropped.
struct Storm {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
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
        ];
        Ok(Storm { stop, threads })
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

fn main() -> Result<()> {
    require_root("the memory bench traces the kernel")?;
    let seconds = run_seconds(DEFAULT_SECONDS)?;
    println!("VmRSS (MiB) every 5 s of {seconds} s runs under hackbench and a UDP flood");
    println!(
        "{:<40} {:>9} {:>9} {:>9}  samples",
        "run", "warm", "end", "growth"
    );
    let _storm = Storm::start()?;
    // let the storm reach its pace
    std::thread::sleep(Duration::from_secs(2));
    for args in CASES {
        let samples = resident_over_run(runner::binary(), args, seconds)?;
        let (Some(&end), warm) = (samples.last(), samples.get(samples.len() / 4)) else {
            bail!("irqlens {} ended before its first sample", args.join(" "));
        };
        let warm = warm.copied().unwrap_or(end);
        let all: Vec<String> = samples.iter().map(|&k| format!("{:.1}", mib(k))).collect();
        println!(
            "{:<40} {:>9.1} {:>9.1} {:>+9.1}  {}",
            args.join(" "),
            mib(warm),
            mib(end),
            mib(end) - mib(warm),
            all.join(" ")
        );
    }
    Ok(())
}
