//! `irqlens noise` output: rtla osnoise's summary and histogram, the top causes table,
//! the stop-condition dump, and the JSON document.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{Value, json};

use super::compare::{Figure, TOP_FIGURES, quantile_figures};
use super::{clock_time, percent, us, us1};
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_analyze::noise::{Breakdown, Cause, CauseStats, CpuSummary, NoiseAnalysis, StopReport};
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::Record;
use irqlens_model::noise::{NoiseOptions, NoiseRunInfo};

/// Per-CPU summary with rtla osnoise top's columns (time in µs).
/// CPUs whose records `losses` touched are marked.
pub fn write_summary(
    out: &mut dyn Write,
    analysis: &NoiseAnalysis,
    elapsed_ns: u64,
    losses: &Losses,
) -> io::Result<()> {
    writeln!(out, "{:^118}", "Operating System Noise")?;
    writeln!(out, "duration: {} | time is in us", clock_time(elapsed_ns))?;
    writeln!(
        out,
        "{:>3} {:<7} {:>12} {:>12} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "CPU",
        "Period",
        "Runtime",
        "Noise",
        "% CPU Aval",
        "Max Noise",
        "Max Single",
        "HW",
        "NMI",
        "IRQ",
        "Softirq",
        "Thread"
    )?;
    for s in analysis.summaries() {
        writeln!(
            out,
            "{:>3} #{:<6} {:>12} {:>12} {:>11.5} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9}",
            format!("{}{}", s.cpu, losses.mark_cpu(s.cpu)),
            s.periods,
            us(s.runtime_ns),
            us(s.noise_ns),
            s.cpu_available_percent(),
            us(s.max_noise_ns),
            us(s.max_single_ns),
            s.hw,
            s.nmi,
            s.irq,
            s.softirq,
            s.thread
        )?;
    }
    super::write_legend(out, losses, "rows")
}

/// Columns of the per-CPU breakdown, in the text and the HTML report alike.
pub(crate) const BREAKDOWN_COLUMNS: [&str; 8] = [
    "CPU",
    "Noise",
    "Causes",
    "Entry/exit",
    "HW",
    "No record",
    "Dropped",
    "Clipped",
];

pub(crate) const BREAKDOWN_HEADING: &str = "Where the noise went (us)";
/// How to read the breakdown table, under its heading (a line each in the text).
pub(crate) const BREAKDOWN_NOTE: [&str; 3] = [
    "Causes + Entry/exit + HW + No record + Dropped = Noise, to the ns.",
    "Entry/exit: the rest of samples around their traced interferences; No record: the rest of samples in which an interference left no record.",
    "Clipped: record time beyond what was left of its sample (records and samples use two clocks), not counted.",
];

/// One CPU's breakdown row, in µs to the ns so the sum can be checked by hand.
pub(crate) fn breakdown_cells(summary: &CpuSummary, parts: &Breakdown) -> [String; 8] {
    [
        summary.cpu.to_string(),
        us3(summary.noise_ns),
        us3(parts.causes_ns),
        us3(parts.entry_exit_ns),
        us3(parts.hw_ns),
        us3(parts.no_record_ns),
        us3(parts.dropped_ns),
        us3(summary.clipped_ns),
    ]
}

/// ns as µs with all three decimals: exact.
fn us3(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

/// Per CPU, its noise split into the parts that add up to it.
pub fn write_breakdown(out: &mut dyn Write, analysis: &NoiseAnalysis) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{BREAKDOWN_HEADING}")?;
    BREAKDOWN_NOTE
        .iter()
        .try_for_each(|line| writeln!(out, "{line}"))?;
    let [cpu, rest @ ..] = BREAKDOWN_COLUMNS;
    write!(out, "{cpu:>3}")?;
    rest.iter()
        .try_for_each(|column| write!(out, " {column:>14}"))?;
    writeln!(out)?;
    for (summary, parts) in analysis.breakdowns() {
        let [cpu, rest @ ..] = breakdown_cells(summary, &parts);
        write!(out, "{cpu:>3}")?;
        rest.iter()
            .try_for_each(|cell| write!(out, " {cell:>14}"))?;
        writeln!(out)?;
    }
    Ok(())
}

/// The causes of noise over the whole run, by total interference-free time.
pub fn write_causes(
    out: &mut dyn Write,
    analysis: &NoiseAnalysis,
    irq_names: &HashMap<u32, String>,
    limit: usize,
) -> io::Result<()> {
    let causes = analysis.top_causes();
    let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
    writeln!(out)?;
    writeln!(
        out,
        "Top causes of noise (interference-free time in us; samples above the threshold only)"
    )?;
    writeln!(
        out,
        "{:<40} {:<10} {:>9} {:>12} {:>10} {:>8}",
        "Cause", "Class", "Count", "Total", "Max", "% Noise"
    )?;
    for (cause, stats) in causes.iter().take(limit) {
        writeln!(
            out,
            "{:<40} {:<10} {:>9} {:>12} {:>10} {:>7.2}%",
            cause.label(irq_names),
            cause.class_name(),
            stats.count,
            us1(stats.total_ns),
            us1(stats.max_ns),
            percent(stats.total_ns, noise_ns)
        )?;
    }
    if causes.len() > limit {
        writeln!(
            out,
            "... {} more (--causes N shows more)",
            causes.len() - limit
        )?;
    }
    if causes.is_empty() {
        writeln!(out, "(no noise sample above the threshold)")?;
    }
    Ok(())
}

/// What irqlens cost and could not see, so nothing is hidden.
pub fn write_run_info(
    out: &mut dyn Write,
    analysis: &NoiseAnalysis,
    info: &NoiseRunInfo,
) -> io::Result<()> {
    writeln!(out)?;
    let collector = match &info.collector_cpus {
        Some(cpus) => format!("collector on CPUs {cpus}"),
        None => {
            "collector shares the measured CPUs (its time shows above as thread noise of irqlens)"
                .into()
        }
    };
    writeln!(
        out,
        "irqlens: clock {}, {} BPF programs, {} records, {} lost; {collector}",
        info.clock, info.common.programs, info.common.events, info.common.lost_events
    )?;
    let unexplained: u64 = analysis.summaries().map(|s| s.unexplained).sum();
    let dropped: u64 = analysis.summaries().map(|s| s.dropped_samples).sum();
    if unexplained > 0 {
        writeln!(
            out,
            "irqlens: {unexplained} interferences inside samples had no record (lost or never emitted by the probe; the rest of their samples is the No record row)"
        )?;
    }
    if dropped > 0 {
        writeln!(
            out,
            "irqlens: {dropped} samples did not fit the sample buffer (their time is the Dropped row)"
        )?;
    }
    super::write_skipped_tracepoints(out, &info.common.skipped_tracepoints)?;
    Ok(())
}

/// The sample that hit -s/-S, every cause inside it and the records just before it.
pub fn write_stop(
    out: &mut dyn Write,
    stop: &StopReport,
    irq_names: &HashMap<u32, String>,
) -> io::Result<()> {
    let s = &stop.sample;
    writeln!(out)?;
    writeln!(out, "Stopped: {} on CPU {}", stop.reason, s.cpu)?;
    writeln!(
        out,
        "  sample at {} s: {} us of noise, {} interferences",
        seconds(s.start_ns),
        us1(s.duration_ns),
        s.interferences()
    )?;
    let traced: u64 = stop.causes.iter().map(|r| r.duration_ns).sum();
    writeln!(
        out,
        "  traced inside: {} us; not traced: {} us (hardware/hypervisor, entry and exit costs)",
        us1(traced),
        us1(s.duration_ns.saturating_sub(traced))
    )?;
    for record in &stop.causes {
        write_record(out, "  inside:", record, s.start_ns, irq_names)?;
    }
    for record in &stop.before {
        write_record(out, "  before:", record, s.start_ns, irq_names)?;
    }
    Ok(())
}

fn write_record(
    out: &mut dyn Write,
    what: &str,
    record: &Record,
    sample_start_ns: u64,
    irq_names: &HashMap<u32, String>,
) -> io::Result<()> {
    let offset = record.start_ns as i64 - sample_start_ns as i64;
    writeln!(
        out,
        "{what} {:<8} {:<36} start {:>+10.1} us  duration {:>9} us",
        Cause::of(record).class_name(),
        Cause::of(record).label(irq_names),
        offset as f64 / 1_000.0,
        us1(record.duration_ns)
    )
}

fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// rtla osnoise hist's layout: one column per CPU, an overflow row, then the summary.
pub fn write_histogram(
    out: &mut dyn Write,
    analysis: &NoiseAnalysis,
    options: &HistOptions,
) -> io::Result<()> {
    let columns: Vec<(String, &Histogram)> = analysis
        .histograms()
        .map(|(cpu, h)| (format!("CPU-{cpu:03}"), h))
        .collect();
    super::write_hist_table(
        out,
        "irqlens noise histogram",
        &columns,
        &[],
        "over:",
        options,
    )
}

/// The tables as JSON, for the document's envelope; times are in ns (`*_ns`).
pub fn to_json(
    analysis: &NoiseAnalysis,
    info: &NoiseRunInfo,
    options: &NoiseOptions,
    irq_names: &HashMap<u32, String>,
) -> Value {
    let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
    let cpus: Vec<Value> = analysis
        .breakdowns()
        .map(|(s, parts)| {
            let mut value = serde_json::to_value(s).unwrap_or_default();
            value["cpu_available_percent"] = json!(s.cpu_available_percent());
            value["breakdown"] = json!(parts);
            value["causes"] = causes_json(&analysis.cpu_causes(s.cpu), s.noise_ns, irq_names);
            value
        })
        .collect();
    let causes = causes_json(&analysis.top_causes(), noise_ns, irq_names);
    let histograms: Vec<Value> = analysis
        .histograms()
        .map(|(cpu, h)| json!({"cpu": cpu, "histogram": h}))
        .collect();
    let w = &options.workload;
    json!({
        "options": {
            "cpus": options.cpus,
            "period_ns": w.period.as_nanos() as u64,
            "runtime_ns": w.runtime.as_nanos() as u64,
            "threshold_ns": w.threshold.as_nanos() as u64,
            "priority": w.priority,
            "stop_ns": w.stop_single.map(|d| d.as_nanos() as u64),
            "stop_total_ns": w.stop_total.map(|d| d.as_nanos() as u64),
            "house_keeping": options.housekeeping,
        },
        "lost": info.losses().json(&["per_cpu", "causes"]),
        "per_cpu": cpus,
        "causes": causes,
        "histograms": histograms,
        "stop": analysis.stop_report(),
    })
}

fn causes_json(
    causes: &[(Cause, CauseStats)],
    noise_ns: u64,
    irq_names: &HashMap<u32, String>,
) -> Value {
    causes
        .iter()
        .map(|(cause, stats)| {
            json!({
                "cause": cause.label(irq_names),
                "class": cause.class_name(),
                "id": cause_id(cause),
                "count": stats.count,
                "total_ns": stats.total_ns,
                "max_ns": stats.max_ns,
                "noise_percent": percent(stats.total_ns, noise_ns),
            })
        })
        .collect()
}

/// The number behind a cause: IRQ line or vector, softirq number, pid.
fn cause_id(cause: &Cause) -> Option<u32> {
    match *cause {
        Cause::Irq { id, .. } | Cause::Softirq(id) | Cause::Thread { pid: id, .. } => Some(id),
        Cause::Hardware | Cause::Nmi | Cause::EntryExit(_) | Cause::NoRecord | Cause::Dropped => {
            None
        }
    }
}

/// The numbers `compare` sets side by side: per CPU, then per cause.
pub fn figures(analysis: &NoiseAnalysis, irq_names: &HashMap<u32, String>) -> Vec<Figure> {
    let mut figures = Vec::new();
    for (summary, (cpu, histogram)) in analysis.summaries().zip(analysis.histograms()) {
        let group = format!("cpu {cpu}");
        figures.extend([
            Figure::ns(&group, "noise", summary.noise_ns),
            Figure::percent(&group, "available", summary.cpu_available_percent()),
            Figure::count(&group, "samples", summary.samples),
            Figure::count(&group, "hw samples", summary.hw),
        ]);
        figures.extend(quantile_figures(&group, |q| histogram.quantile_ns(q)));
        figures.push(Figure::ns(&group, "max single", summary.max_single_ns));
    }
    for (cause, stats) in analysis.top_causes().iter().take(TOP_FIGURES) {
        let group = format!("cause {}", cause.label(irq_names));
        figures.extend([
            Figure::ns(&group, "total", stats.total_ns),
            Figure::count(&group, "count", stats.count),
            Figure::ns(&group, "max", stats.max_ns),
        ]);
    }
    figures
}
