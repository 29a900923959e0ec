//! `irqlens steer` on Zhang & West's second case, the figures the root test checks but over
//! several rounds: a FIFO 80 receiver on CPU 1 of a datagram every 10 ms, a FIFO 50 hog on
//! CPU 1 (30 ms busy of every 50 ms), the flow's threaded NAPI thread pinned to CPU 1 at
//! SCHED_OTHER. Each round measures the receive delays without steer and with it (the
//! order alternates, so a drift of the machine weighs on both) and prints their quantiles;
//! the summary is the median over rounds of each quantile and their ratio. Run as root
//! after `cargo build --release`: `cargo bench --bench steer` (IRQLENS_BENCH_SECONDS=N per
//! run, from 3; IRQLENS_BENCH_ROUNDS=N, from 4). Asserts nothing about timing.

use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "common.rs"]
mod common;

use anyhow::{Result, bail};

use common::{Background, median, run_rounds, run_seconds};
use irqlens_model::sched::Priority;
use irqlens_test_support::runner::{binary, require_root};
use irqlens_test_support::spinner::Spinner;
use irqlens_test_support::stamped::{quantile_us, stamped_delays};
use irqlens_test_support::udp_flow::UdpFlow;

const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 1.0];

/// The receive delays of one run, with steer running or not (µs at QUANTILES).
fn run(namespace: &str, seconds: u64, steered: bool) -> Result<[f64; 4]> {
    let steer = if steered {
        let args = ["steer", "--hold", "1s"].map(String::from);
        let mut steer = Background::start(binary(), &args)?;
        steer.wait_until_attached(Duration::from_secs(20))?;
        // as the root test: steer traces for a moment before the flow starts (the first
        // datagrams otherwise come before its first raise and set the maximum)
        std::thread::sleep(Duration::from_secs(1));
        Some(steer)
    } else {
        None
    };
    let mut delays = stamped_delays(namespace, seconds);
    if let Some(steer) = steer {
        let finished = steer.stop()?;
        if !finished.status.success() {
            bail!(
                "irqlens steer failed: {}: {}",
                finished.status,
                finished.stderr.trim()
            );
        }
    }
    Ok(QUANTILES.map(|q| quantile_us(&mut delays, q)))
}

fn main() -> Result<()> {
    require_root("steer changes thread priorities and loads BPF programs")?;
    let seconds = run_seconds(3)?;
    let rounds = run_rounds(4)?;
    let flow = UdpFlow::start(1, 1);
    flow.clear_rps();
    let napi = flow.threaded_napi();
    let pinned = Command::new("taskset")
        .args(["-pc", "1", &napi.to_string()])
        .stdout(Stdio::null())
        .status()?;
    if !pinned.success() {
        bail!("pinning the NAPI thread {napi} to CPU 1");
    }
    let hog = Spinner::start_aligned(
        "il-hog",
        1,
        Duration::from_millis(50),
        Duration::from_millis(30),
        Priority::Fifo(50),
    );
    println!("receive delay of a FIFO 80 receiver behind a FIFO 50 hog, µs: p50 p90 p99 max");
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for steered in if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        } {
            let figures = run(flow.namespace(), seconds, steered)?;
            println!(
                "round {}  {:<8} {:>8.0} {:>8.0} {:>8.0} {:>8.0}",
                round + 1,
                if steered { "steer" } else { "no steer" },
                figures[0],
                figures[1],
                figures[2],
                figures[3]
            );
            if steered { &mut with } else { &mut without }.push(figures);
        }
    }
    hog.stop();
    println!("median over {rounds} rounds (no steer / steer = ratio):");
    for (i, q) in QUANTILES.iter().enumerate() {
        let (a, b) = (
            median(without.iter().map(|f| f[i]).collect()),
            median(with.iter().map(|f| f[i]).collect()),
        );
        println!("  q{q:<5} {a:>8.0} / {b:>8.0} = {:.1}x", a / b);
    }
    Ok(())
}
