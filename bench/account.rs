//! Zhang & West's Figure 6 (b) (§5) on this machine: the accounting error (t - t_o) / t_o
//! of a CPU-bound SCHED_FIFO process while another process receives UDP at three rates,
//! its receive processing steered (RPS) onto the CPU-bound process's CPU. t is what the
//! kernel bills (schedstat), irqlens's corrected t, and the compensation algorithm's.
//! t_o, the truth, comes from the CPU-bound thread itself: the wall time it spun minus
//! the gaps between its clock reads (interrupts, the hypervisor), as in osnoise.
//! Run as root after `cargo build --release`: `cargo bench --bench account`
//! (IRQLENS_BENCH_SECONDS=N shortens each run from 5 s). It prints figures and asserts
//! nothing about them.

#[path = "common.rs"]
mod common;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

use common::run_seconds;
use irqlens_test_support::runner::{require_root, run_json};
use irqlens_test_support::spinner::Spinner;
use irqlens_test_support::udp_flow::UdpFlow;

const DEFAULT_SECONDS: u64 = 5;
const RATES: [u32; 4] = [0, 2_000, 10_000, 40_000];
const SPINNER: &str = "acct-spinner";
const SPINNER_CPU: u32 = 1;
const RECEIVER_CPU: u32 = 0;

struct Figures {
    rate: u32,
    units: u64,
    /// Kernel, irqlens's corrected, compensated, truth (ns).
    kernel: u64,
    corrected: u64,
    compensated: u64,
    truth: u64,
    charged: u64,
    stolen: u64,
}

fn main() -> Result<()> {
    require_root(
        "the account bench loads BPF programs, makes a network namespace and runs SCHED_FIFO threads",
    )?;
    let seconds = run_seconds(DEFAULT_SECONDS)?;
    println!(
        "accounting error of a SCHED_FIFO spinner on CPU {SPINNER_CPU} while a receiver on CPU {RECEIVER_CPU} gets UDP (RPS to CPU {SPINNER_CPU}), {seconds} s per rate\n"
    );
    let mut flow = UdpFlow::start(SPINNER_CPU, RECEIVER_CPU);
    let forever = Duration::from_secs(3600);
    let spinner = Spinner::start(SPINNER, SPINNER_CPU, forever, forever);
    std::thread::sleep(Duration::from_millis(200));
    let mut figures = Vec::new();
    for rate in RATES {
        if rate > 0 {
            flow.send(rate);
        }
        std::thread::sleep(Duration::from_millis(300));
        let stolen_before = spinner.stolen_ns();
        let started = Instant::now();
        let doc = run_json(&[
            "account",
            "-c",
            &SPINNER_CPU.to_string(),
            "-d",
            &seconds.to_string(),
            "--threads",
            "--compensate",
            "-q",
        ])?;
        let wall = started.elapsed().as_nanos() as u64;
        let stolen = spinner.stolen_ns() - stolen_before;
        flow.stop_sending();
        figures.push(figures_of(&doc, rate, wall, stolen, flow.receiver_pid())?);
    }
    drop(spinner);
    drop(flow);
    print_table(&figures);
    Ok(())
}

/// The spinner's row, with the truth scaled to irqlens's window: the spinner's share of
/// the CPU over the child's whole life (a little longer than the traced window).
fn figures_of(doc: &Value, rate: u32, wall: u64, stolen: u64, receiver: u32) -> Result<Figures> {
    let rows = doc["total"]["rows"].as_array().context("rows")?;
    let spinner = rows
        .iter()
        .find(|r| r["comm"] == SPINNER)
        .context("the spinner has no row: it was charged nothing")?;
    let units = rows
        .iter()
        .find(|r| r["id"].as_u64() == Some(receiver.into()))
        .map_or(0, |r| r["units"].as_u64().unwrap_or(0));
    let field = |name: &str| spinner[name].as_u64().with_context(|| name.to_string());
    let elapsed = doc["run"]["elapsed_ns"].as_u64().context("elapsed_ns")?;
    let share = 1.0 - stolen as f64 / wall as f64;
    Ok(Figures {
        rate,
        units,
        kernel: field("kernel_ns")?,
        corrected: field("corrected_ns")?,
        compensated: field("compensated_ns")?,
        truth: (elapsed as f64 * share) as u64,
        charged: field("charged_ns")?,
        stolen: (elapsed as f64 * stolen as f64 / wall as f64) as u64,
    })
}

fn print_table(figures: &[Figures]) {
    let ms = |ns: u64| format!("{:.1}", ns as f64 / 1e6);
    let error =
        |t: u64, truth: u64| format!("{:+.2}%", 100.0 * (t as f64 - truth as f64) / truth as f64);
    println!(
        "{:>7} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
        "PKT/S",
        "RECEIVED",
        "STOLEN(ms)",
        "CHARGED",
        "t_o(ms)",
        "KERNEL",
        "IRQLENS",
        "COMPENS",
        "E_KERNEL",
        "E_IRQLENS",
        "E_COMPENS"
    );
    for f in figures {
        println!(
            "{:>7} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
            f.rate,
            f.units,
            ms(f.stolen),
            ms(f.charged),
            ms(f.truth),
            ms(f.kernel),
            ms(f.corrected),
            ms(f.compensated),
            error(f.kernel, f.truth),
            error(f.corrected, f.truth),
            error(f.compensated, f.truth)
        );
    }
    println!(
        "\nt_o: the spinner's own count (traced window x its share of the CPU by its clock); STOLEN: gaps between its clock reads (interrupts and the hypervisor); CHARGED: irqlens's interrupt time charged to it; KERNEL: schedstat; IRQLENS: kernel - charged + served; COMPENS: the §3.1 algorithm; E_*: (t - t_o) / t_o"
    );
}
