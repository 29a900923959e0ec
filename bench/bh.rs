//! The INTSPECT thesis's bottom-half experiment (Table 5.4 and §5.6) on this
//! machine: latency from request to invocation of a softirq, a tasklet and a work item,
//! under no load, one spinning task and 256 of them. Run as root after
//! `cargo build --release`: `cargo bench --bench bh` (IRQLENS_BENCH_SECONDS=N shortens
//! each of the nine runs from 10 s). It prints figures and asserts nothing about timing.
//!
//! Each mechanism comes from the active trigger of `irqlens bh` that causes it; the kernel
//! paths are not all the thesis's:
//! - Softirq, `-t block`: a 4 KiB O_DIRECT read; the disk's completion IRQ raises BLOCK,
//!   whose softirq completes the I/O and wakes the reader. As in the thesis, the softirq
//!   is requested by an interrupt handler. Row: mechanism "softirq".
//! - Tasklet, `-t tasklet`: a KDSETLED ioctl on /dev/tty0 schedules the VT keyboard
//!   tasklet (kbd_bh) from process context, so TASKLET is raised outside an interrupt
//!   and runs in ksoftirqd or at the next IRQ exit; in the thesis the ISR requested it.
//!   Row: mechanism "tasklet" (the run also has a "softirq" row, for TASKLET itself).
//! - Workqueue, `-t workqueue`: a byte written to a pty master queues flush_to_ldisc on
//!   the unbound system workqueue, from process context; it may run on any CPU.
//!   Row: mechanism "workqueue".
//!
//! Absolute times differ across machines (the thesis measured bare x86 hardware, this
//! runs wherever it is started, often a VM), so the ratios of medians are what compare.

use std::fs;

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, ensure};
use serde_json::Value;

use common::run_seconds;
use irqlens_test_support::runner::{require_root, run_json};

const DEFAULT_SECONDS: u64 = 10;
const RATE_HZ: u32 = 50;

/// §5.6's scenarios, as `irqlens bh -l` names them ("many" is 256 tasks).
const LOADS: [&str; 3] = ["zero", "one", "many"];

/// One mechanism of the table: its label, the trigger that causes it, and the row of
/// irqlens's "mechanisms" array that holds it.
struct Mechanism {
    label: &'static str,
    trigger: &'static str,
    row: &'static str,
}

const MECHANISMS: [Mechanism; 3] = [
    Mechanism {
        label: "Softirq",
        trigger: "block",
        row: "softirq",
    },
    Mechanism {
        label: "Tasklet",
        trigger: "tasklet",
        row: "tasklet",
    },
    Mechanism {
        label: "Workqueue",
        trigger: "workqueue",
        row: "workqueue",
    },
];

/// Table 5.4 of the thesis (x86), in the order of `MECHANISMS`: min, Q0.05, Q0.50,
/// Q0.95, max, max_IRQ, µs.
const THESIS_X86: [[f64; 6]; 3] = [
    [1.08, 2.08, 2.19, 2.99, 9.88, 9.88],
    [1.10, 2.18, 2.36, 3.08, 9.07, 9.07],
    [3.22, 6.72, 7.28, 8.22, 18.68, 29.45],
];
const THESIS_Q50: usize = 2;

/// One mechanism's row as irqlens reports it, in ns. The quantiles and max are over the
/// samples no interrupt landed in, so all are None when every sample had one.
struct Row {
    count: u64,
    irq: u64,
    min: Option<u64>,
    q05: Option<u64>,
    q50: Option<u64>,
    q95: Option<u64>,
    max: Option<u64>,
    max_irq: Option<u64>,
}

impl Row {
    fn from_json(row: &Value) -> Row {
        let ns = |field: &str| row[field].as_u64();
        Row {
            count: ns("count").unwrap_or(0),
            irq: ns("irq").unwrap_or(0),
            min: ns("min_ns"),
            q05: ns("q05_ns"),
            q50: ns("q50_ns"),
            q95: ns("q95_ns"),
            max: ns("max_ns"),
            max_irq: ns("max_irq_ns"),
        }
    }
}

/// What one irqlens run gave: the mechanism's row (None if the run had none) and what
/// a reader needs to judge its coverage.
struct Run {
    row: Option<Row>,
    /// The row's sources (function or softirq) and their samples, most first: what
    /// besides the stimulus's own bottom half the row holds.
    sources: Vec<(String, u64)>,
    requests: u64,
    selected: u64,
    others: u64,
    lost_events: u64,
    elapsed_s: f64,
}

/// One run per load and mechanism; an Err keeps the message of a run that failed.
type Results = Vec<Vec<Result<Run, String>>>;

fn main() -> Result<()> {
    require_root("the bh bench runs irqlens, which loads BPF programs")?;
    let seconds = run_seconds(DEFAULT_SECONDS)?;
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    println!(
        "irqlens bh bench: kernel {}, all online CPUs measured (irqlens's default), \
         {seconds} s per run, {RATE_HZ} requests/s",
        kernel.trim()
    );
    println!(
        "latency from request to invocation, us; count: samples; IRQ: samples with an \
         interrupt in their window, left out of min..max; max_IRQ: over all samples\n"
    );

    let mut results: Results = Vec::new();
    for (i, load) in LOADS.iter().enumerate() {
        let runs: Vec<_> = MECHANISMS
            .iter()
            .map(|m| measure(m, load, seconds).map_err(|e| format!("{e:#}")))
            .collect();
        results.push(runs);
        print_load_table(i + 1, load, &results[i]);
        print_ratios(&results[i]);
        println!();
    }
    print_summary(&results);
    print_coverage(&results);

    let failed = results.iter().flatten().filter(|r| r.is_err()).count();
    ensure!(
        failed == 0,
        "{failed} of the irqlens runs failed (see above)"
    );
    Ok(())
}

/// Runs irqlens with `mechanism`'s trigger under `load` and picks the mechanism's row.
fn measure(mechanism: &Mechanism, load: &str, seconds: u64) -> Result<Run> {
    let (seconds, rate) = (seconds.to_string(), RATE_HZ.to_string());
    let args = [
        "bh",
        "-d",
        &seconds,
        "-t",
        mechanism.trigger,
        "--rate",
        &rate,
        "-l",
        load,
        "-q",
    ];
    let doc = run_json(&args)?;
    let row = doc["mechanisms"]
        .as_array()
        .context("irqlens's JSON has no mechanisms array")?
        .iter()
        .find(|row| row["mechanism"] == mechanism.row)
        .map(Row::from_json);
    let run = &doc["run"];
    Ok(Run {
        row,
        sources: sources_of(&doc, mechanism.row),
        requests: run["trigger"]["requests"].as_u64().unwrap_or(0),
        selected: doc["samples"].as_u64().unwrap_or(0),
        others: doc["others"].as_u64().unwrap_or(0),
        lost_events: run["lost_events"].as_u64().unwrap_or(0),
        elapsed_s: run["elapsed_ns"].as_f64().unwrap_or(f64::NAN) / 1e9,
    })
}

fn sources_of(doc: &Value, mechanism: &str) -> Vec<(String, u64)> {
    let mut sources: Vec<(String, u64)> = doc["series"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|series| series["mechanism"] == mechanism)
        .map(|series| {
            let name = series["source"].as_str().unwrap_or("?").to_string();
            (name, series["count"].as_u64().unwrap_or(0))
        })
        .collect();
    sources.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    sources
}

// ---------------------------------------------------------------------------------------
// Output

/// ns as µs with two decimals, as the thesis's tables; "-" when there is no value.
fn us(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |ns| format!("{:.2}", ns as f64 / 1000.0))
}

fn ratio(part: Option<u64>, whole: Option<u64>) -> String {
    match (part, whole) {
        (Some(p), Some(w)) if w > 0 => format!("{:.2}", p as f64 / w as f64),
        _ => "-".into(),
    }
}

/// The mechanism's row of a run, if the run succeeded and had one.
fn row_of(run: &Result<Run, String>) -> Option<&Row> {
    run.as_ref().ok()?.row.as_ref()
}

fn print_header() {
    println!(
        "   {:<10} {:>6} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8}",
        "", "count", "IRQ", "min", "Q0.05", "Q0.50", "Q0.95", "max", "max_IRQ"
    );
}

/// Table 5.4's layout for one load, then the thesis's rows under it.
fn print_load_table(number: usize, load: &str, runs: &[Result<Run, String>]) {
    println!("{number}. Load {load}");
    print_header();
    for (mechanism, run) in MECHANISMS.iter().zip(runs) {
        let label = mechanism.label;
        match (run, row_of(run)) {
            (Err(_), _) => println!("   {label:<10} run failed (see coverage)"),
            (Ok(_), None) => println!(
                "   {label:<10} no {} row in the {} run",
                mechanism.row, mechanism.trigger
            ),
            (Ok(_), Some(r)) => println!(
                "   {label:<10} {:>6} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8}",
                r.count,
                r.irq,
                us(r.min),
                us(r.q05),
                us(r.q50),
                us(r.q95),
                us(r.max),
                us(r.max_irq)
            ),
        }
    }
    println!("   thesis x86 (Table 5.4)");
    for (mechanism, values) in MECHANISMS.iter().zip(THESIS_X86) {
        let [min, q05, q50, q95, max, max_irq] = values;
        println!(
            "   {:<10} {:>6} {:>5} {min:>7.2} {q05:>7.2} {q50:>7.2} {q95:>7.2} {max:>7.2} {max_irq:>8.2}",
            mechanism.label, "-", "-"
        );
    }
}

/// Medians relative to the softirq's: comparable across machines, unlike the times.
fn print_ratios(runs: &[Result<Run, String>]) {
    let q50 = |i: usize| row_of(&runs[i]).and_then(|r| r.q50);
    let thesis = |i: usize| THESIS_X86[i][THESIS_Q50] / THESIS_X86[0][THESIS_Q50];
    println!(
        "   median ratio tasklet/softirq {}, workqueue/softirq {}   (thesis x86: {:.2}, {:.2})",
        ratio(q50(1), q50(0)),
        ratio(q50(2), q50(0)),
        thesis(1),
        thesis(2)
    );
}

/// As Tables 5.2 and 5.3: how each mechanism's median and max move with the load.
fn print_summary(results: &Results) {
    println!("{}. Median and max across loads, us", LOADS.len() + 1);
    // one column per load, under each of the two statistics
    let width = LOADS.len() * 8 - 1;
    let title = format!("   {:<10} {:^width$} | {:^width$}", "", "Q0.50", "max");
    println!("{}", title.trim_end());
    let loads = LOADS.map(|l| format!("{l:>7}")).join(" ");
    println!("   {:<10} {loads} | {loads}", "load");
    for (i, mechanism) in MECHANISMS.iter().enumerate() {
        let column = |value: fn(&Row) -> Option<u64>| {
            results
                .iter()
                .map(|runs| format!("{:>7}", us(row_of(&runs[i]).and_then(value))))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "   {:<10} {} | {}",
            mechanism.label,
            column(|r| r.q50),
            column(|r| r.max)
        );
    }
    println!();
}

/// Requests made against samples measured, so a reader sees what the tables cover.
fn print_coverage(results: &Results) {
    println!(
        "{}. Coverage: requests the trigger made, samples in the row, all samples of the \
         trigger (any mechanism), others left out, lost events, the row's sources",
        LOADS.len() + 2
    );
    println!(
        "   {:<5} {:<10} {:<9} {:>7} {:>9} {:>8} {:>8} {:>7} {:>7} {:>5}  sources",
        "load",
        "mechanism",
        "trigger",
        "seconds",
        "requests",
        "samples",
        "row/req",
        "all",
        "others",
        "lost"
    );
    for (load, runs) in LOADS.iter().zip(results) {
        for (mechanism, run) in MECHANISMS.iter().zip(runs) {
            let start = format!(
                "   {load:<5} {:<10} {:<9}",
                mechanism.label, mechanism.trigger
            );
            match run {
                Err(error) => println!("{start} FAILED: {error}"),
                Ok(run) => {
                    let samples = run.row.as_ref().map_or(0, |r| r.count);
                    let share = if run.requests == 0 {
                        "-".into()
                    } else {
                        format!("{:.0}%", samples as f64 * 100.0 / run.requests as f64)
                    };
                    let sources: Vec<String> = run
                        .sources
                        .iter()
                        .map(|(name, count)| format!("{name} {count}"))
                        .collect();
                    println!(
                        "{start} {:>7.2} {:>9} {samples:>8} {share:>8} {:>7} {:>7} {:>5}  {}",
                        run.elapsed_s,
                        run.requests,
                        run.selected,
                        run.others,
                        run.lost_events,
                        sources.join(", ")
                    );
                }
            }
        }
    }
}
