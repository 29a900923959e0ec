//! `irqlens noise` output: rtla osnoise's summary and histogram, the top causes table,
//! the stop-condition dump, and the JSON document.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{Value, json};

use super::compare::{Figure, TOP_FIGURES, quantile_figures};
use super::table::{Column, Form, write_headings, write_line};
use super::{clock_time, percent, us1};
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_analyze::noise::{Breakdown, Cause, CauseStats, CpuSummary, NoiseAnalysis, StopReport};
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::Record;
use irqlens_model::noise::{NoiseOptions, NoiseRunInfo};

/// Columns of the per-CPU summary, rtla osnoise top's (time in µs), in the text and the
/// HTML report alike.
pub(crate) const SUMMARY_COLUMNS: [Column; 12] = [
    Column::right("CPU", 3),
    Column::left("Period", 7),
    Column::right("Runtime", 12),
    Column::right("Noise", 12),
    Column::right("% CPU Aval", 11),
    Column::right("Max Noise", 11),
    Column::right("Max Single", 11),
    Column::right("HW", 9),
    Column::right("NMI", 9),
    Column::right("IRQ", 9),
    Column::right("Softirq", 9),
    Column::right("Thread", 9),
];

/// One CPU's summary row in the order of `SUMMARY_COLUMNS`, the CPU marked if `losses`
/// touched its records.
pub(crate) fn summary_cells(s: &CpuSummary, losses: &Losses, form: Form) -> [String; 12] {
    [
        format!("{}{}", s.cpu, losses.mark_cpu(s.cpu)),
        match form {
            Form::Text => format!("#{}", s.periods),
            Form::Html => s.periods.to_string(),
        },
        form.us(s.runtime_ns),
        form.us(s.noise_ns),
        format!("{:.5}", s.cpu_available_percent()),
        form.us(s.max_noise_ns),
        form.us(s.max_single_ns),
        s.hw.to_string(),
        s.nmi.to_string(),
        s.irq.to_string(),
        s.softirq.to_string(),
        s.thread.to_string(),
    ]
}

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
    write_headings(out, "", &SUMMARY_COLUMNS)?;
    for s in analysis.summaries() {
        write_line(
            out,
            "",
            &SUMMARY_COLUMNS,
            &summary_cells(s, losses, Form::Text),
        )?;
    }
    super::write_legend(out, losses, "rows")
}

/// Columns of the per-CPU breakdown, in the text and the HTML report alike.
pub(crate) const BREAKDOWN_COLUMNS: [Column; 8] = [
    Column::right("CPU", 3),
    Column::right("Noise", 14),
    Column::right("Causes", 14),
    Column::right("Entry/exit", 14),
    Column::right("HW", 14),
    Column::right("No record", 14),
    Column::right("Dropped", 14),
    Column::right("Clipped", 14),
];

pub(crate) const BREAKDOWN_HEADING: &str = "Where the noise went (us)";
/// How to read the breakdown table, under its heading (a line each in the text).
pub(crate) const BREAKDOWN_NOTE: [&str; 3] = [
    "Causes + Entry/exit + HW + No record + Dropped = Noise, to the ns.",
    "Entry/exit: the rest of samples around their traced interferences; No record: the rest of samples in which an interference left no record.",
    "Clipped: record time beyond what was left of its sample (records and samples use two clocks), not counted.",
];

/// One CPU's breakdown row in the order of `BREAKDOWN_COLUMNS`, in µs to the ns so the
/// sum can be checked by hand.
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
    write_headings(out, "", &BREAKDOWN_COLUMNS)?;
    for (summary, parts) in analysis.breakdowns() {
        write_line(
            out,
            "",
            &BREAKDOWN_COLUMNS,
            &breakdown_cells(summary, &parts),
        )?;
    }
    Ok(())
}

/// Columns of the top causes, in the text and the HTML report alike.
pub(crate) const CAUSE_COLUMNS: [Column; 6] = [
    Column::left("Cause", 40),
    Column::left("Class", 10),
    Column::right("Count", 9),
    Column::right("Total", 12),
    Column::right("Max", 10),
    Column::right("% Noise", 8),
];

/// One cause's row in the order of `CAUSE_COLUMNS`; its share is of `noise_ns`.
pub(crate) fn cause_cells(
    cause: &Cause,
    stats: &CauseStats,
    noise_ns: u64,
    irq_names: &HashMap<u32, String>,
) -> [String; 6] {
    [
        cause.label(irq_names),
        cause.class_name().into(),
        stats.count.to_string(),
        us1(stats.total_ns),
        us1(stats.max_ns),
        format!("{:.2}%", percent(stats.total_ns, noise_ns)),
    ]
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
    write_headings(out, "", &CAUSE_COLUMNS)?;
    for (cause, stats) in causes.iter().take(limit) {
        let cells = cause_cells(cause, stats, noise_ns, irq_names);
        write_line(out, "", &CAUSE_COLUMNS, &cells)?;
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
