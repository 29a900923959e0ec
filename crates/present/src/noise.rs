//! `irqlens noise` output: rtla osnoise's summary and histogram, the top causes table,
//! the stop-condition dump, and the JSON document.

use std::collections::HashMap;
use std::io::{self, Write};

use super::compare::{Figure, TOP_FIGURES, irq_line_key, quantile_figures};
use super::table::{Column, Form, TextTable};
use super::{Names, clock_time, percent, us1};
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_analyze::noise::{
    Breakdown, Cause, CauseStats, CpuSummary, NoiseAnalysis, StopReport, WorkloadCauses,
};
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::Record;
use irqlens_model::noise::{NoiseOptions, NoiseRunInfo};
use irqlens_model::tables::{
    CpuHistogram, NoiseCause, NoiseCpu, NoiseOptionsTable, NoiseTables, NoiseWorkload,
    NoiseWorkloads,
};
use irqlens_model::workload::{CgroupNames, WorkloadBy};

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
    // centred over rtla's 118 columns, or over the terminal if narrower
    let width = super::text_width().map_or(118, |width| width.min(118));
    writeln!(out, "{:^width$}", "Operating System Noise")?;
    writeln!(out, "duration: {} | time is in us", clock_time(elapsed_ns))?;
    let mut table = TextTable::new("", &SUMMARY_COLUMNS).headings();
    for s in analysis.summaries() {
        table.row(&summary_cells(s, losses, Form::Text));
    }
    table.write(out)?;
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
    let mut table = TextTable::new("", &BREAKDOWN_COLUMNS).headings();
    for (summary, parts) in analysis.breakdowns() {
        table.row(&breakdown_cells(summary, &parts));
    }
    table.write(out)
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
    names: &Names,
) -> [String; 6] {
    [
        cause_label(cause, names),
        cause.class_name().into(),
        stats.count.to_string(),
        us1(stats.total_ns),
        us1(stats.max_ns),
        format!("{:.2}%", percent(stats.total_ns, noise_ns)),
    ]
}

/// A cause's name in the tables: a thread's followed by its workload's short name when
/// it fits the column.
fn cause_label(cause: &Cause, names: &Names) -> String {
    let label = cause.label(&names.irqs);
    match *cause {
        Cause::Thread { cgroup, .. } => {
            names.with_workload(label, Some(cgroup), CAUSE_COLUMNS[0].width)
        }
        _ => label,
    }
}

/// Columns of the thread causes per workload (`--by`), in the text and the HTML report.
pub(crate) const WORKLOAD_COLUMNS: [Column; 6] = [
    Column::left("Workload", 40),
    Column::right("Threads", 7),
    Column::right("Count", 9),
    Column::right("Total", 12),
    Column::right("Max", 10),
    Column::right("% Noise", 8),
];

/// One workload's row in the order of `WORKLOAD_COLUMNS`; its share is of `noise_ns`.
pub(crate) fn workload_cells(row: &WorkloadCauses, noise_ns: u64) -> [String; 6] {
    [
        row.short.clone(),
        row.threads.to_string(),
        row.stats.count.to_string(),
        us1(row.stats.total_ns),
        us1(row.stats.max_ns),
        format!("{:.2}%", percent(row.stats.total_ns, noise_ns)),
    ]
}

/// `--by`: the thread causes of the whole run per workload, largest first.
pub fn write_workloads(
    out: &mut dyn Write,
    analysis: &NoiseAnalysis,
    cgroups: &CgroupNames,
    by: WorkloadBy,
) -> io::Result<()> {
    let rows = analysis.workload_causes(cgroups, by);
    let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
    writeln!(out)?;
    writeln!(
        out,
        "Thread noise per {} (interference-free time in us)",
        by.name()
    )?;
    let mut table = TextTable::new("", &WORKLOAD_COLUMNS).headings();
    for row in &rows {
        table.row(&workload_cells(row, noise_ns));
    }
    if rows.is_empty() {
        table.note("(no thread noise above the threshold)");
    }
    table.write(out)
}

/// The causes of noise over the whole run, by total interference-free time.
pub fn write_causes(
    out: &mut dyn Write,
    analysis: &NoiseAnalysis,
    names: &Names,
    limit: usize,
) -> io::Result<()> {
    let causes = analysis.top_causes();
    let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
    writeln!(out)?;
    writeln!(
        out,
        "Top causes of noise (interference-free time in us; samples above the threshold only)"
    )?;
    let mut table = TextTable::new("", &CAUSE_COLUMNS).headings();
    for (cause, stats) in causes.iter().take(limit) {
        table.row(&cause_cells(cause, stats, noise_ns, names));
    }
    if causes.len() > limit {
        table.note(format!(
            "... {} more (--causes N shows more)",
            causes.len() - limit
        ));
    }
    if causes.is_empty() {
        table.note("(no noise sample above the threshold)");
    }
    table.write(out)
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
    let unended: u64 = analysis.summaries().map(|s| s.unended).sum();
    let dropped: u64 = analysis.summaries().map(|s| s.dropped_samples).sum();
    if unexplained > 0 {
        writeln!(
            out,
            "irqlens: {unexplained} interferences inside samples had no record (lost or never emitted by the probe; the rest of their samples is the No record row)"
        )?;
    }
    if unended > 0 {
        writeln!(
            out,
            "irqlens: the kernel reported no end for {unended} interferences begun while sampling (a context switch that missed its tracepoint, a context entered again before it ended): the probe had no record to emit for them"
        )?;
    }
    if dropped > 0 {
        writeln!(
            out,
            "irqlens: {dropped} samples did not fit the sample buffer (their time is the Dropped row)"
        )?;
    }
    super::write_skipped_tracepoints(out, &info.common.skipped_tracepoints)?;
    super::write_cut_short(out, &info.common)
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

/// ns as s to the ns: a CLOCK_MONOTONIC time, as the recording has it.
pub(crate) fn seconds(ns: u64) -> String {
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

/// The tables of the `--json` document; times are in ns (`*_ns`).
pub fn to_json(
    analysis: &NoiseAnalysis,
    info: &NoiseRunInfo,
    options: &NoiseOptions,
    names: &Names,
) -> NoiseTables {
    let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
    let per_cpu = analysis
        .breakdowns()
        .map(|(s, parts)| NoiseCpu {
            summary: s.clone(),
            cpu_available_percent: s.cpu_available_percent(),
            breakdown: parts,
            causes: causes_json(&analysis.cpu_causes(s.cpu), s.noise_ns, names),
        })
        .collect();
    let w = &options.workload;
    NoiseTables {
        options: NoiseOptionsTable {
            cpus: options.cpus.clone(),
            period_ns: w.period.as_nanos() as u64,
            runtime_ns: w.runtime.as_nanos() as u64,
            threshold_ns: w.threshold.as_nanos() as u64,
            priority: w.priority,
            stop_ns: w.stop_single.map(|d| d.as_nanos() as u64),
            stop_total_ns: w.stop_total.map(|d| d.as_nanos() as u64),
            house_keeping: options.housekeeping.clone(),
        },
        lost: info.losses().table(&["per_cpu", "causes"]),
        per_cpu,
        causes: causes_json(&analysis.top_causes(), noise_ns, names),
        workloads: options.by.map(|by| NoiseWorkloads {
            by,
            rows: analysis
                .workload_causes(&names.cgroups, by)
                .into_iter()
                .map(|row| NoiseWorkload {
                    workload: row.workload,
                    threads: row.threads,
                    count: row.stats.count,
                    total_ns: row.stats.total_ns,
                    max_ns: row.stats.max_ns,
                    noise_percent: percent(row.stats.total_ns, noise_ns),
                })
                .collect(),
        }),
        histograms: analysis
            .histograms()
            .map(|(cpu, h)| CpuHistogram {
                cpu,
                histogram: h.clone(),
            })
            .collect(),
        stop: analysis.stop_report().cloned(),
    }
}

fn causes_json(causes: &[(Cause, CauseStats)], noise_ns: u64, names: &Names) -> Vec<NoiseCause> {
    causes
        .iter()
        .map(|(cause, stats)| NoiseCause {
            cause: cause.label(&names.irqs),
            class: cause.class_name().into(),
            id: cause_id(cause),
            count: stats.count,
            total_ns: stats.total_ns,
            max_ns: stats.max_ns,
            noise_percent: percent(stats.total_ns, noise_ns),
            cgroup: match *cause {
                Cause::Thread { cgroup, .. } => names.task_cgroup(cgroup),
                _ => None,
            },
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

/// The numbers `compare` sets side by side: per CPU, then per cause. Quantiles come from
/// the hdrhistogram kept with each CPU's histogram (to 0.1%, whatever the histogram's
/// range); causes are keyed by what stays the same from run to run (`compare_key`).
pub fn figures(analysis: &NoiseAnalysis, irq_names: &HashMap<u32, String>) -> Vec<Figure> {
    let mut figures = Vec::new();
    for (summary, (cpu, distribution)) in analysis.summaries().zip(analysis.distributions()) {
        let group = format!("cpu {cpu}");
        figures.extend([
            Figure::ns(&group, "noise", summary.noise_ns),
            Figure::percent(&group, "available", summary.cpu_available_percent()),
            Figure::count(&group, "samples", summary.samples),
            Figure::count(&group, "hw samples", summary.hw),
        ]);
        figures.extend(quantile_figures(&group, |q| distribution.quantile_ns(q)));
        figures.push(Figure::ns(&group, "max single", summary.max_single_ns));
    }
    for (key, stats) in stable_causes(&analysis.top_causes(), irq_names)
        .iter()
        .take(TOP_FIGURES)
    {
        let group = format!("cause {key}");
        figures.extend([
            Figure::ns(&group, "total", stats.total_ns),
            Figure::count(&group, "count", stats.count),
            Figure::ns(&group, "max", stats.max_ns),
        ]);
    }
    figures
}

/// What names a cause from one run to the next: a thread by its comm (not its pid, which
/// changes), an IRQ line by its name (`irq_line_key`), a softirq by its vector, the rest
/// by their label.
pub fn compare_key(cause: &Cause, irq_names: &HashMap<u32, String>) -> String {
    match cause {
        Cause::Thread { comm, .. } => format!("thread {comm}"),
        Cause::Irq { source: 0, id } => irq_line_key(*id, irq_names),
        _ => cause.label(irq_names),
    }
}

/// Ranked causes merged by `compare_key` (threads of one comm add up), the largest first.
fn stable_causes(
    ranked: &[(Cause, CauseStats)],
    irq_names: &HashMap<u32, String>,
) -> Vec<(String, CauseStats)> {
    let mut merged: Vec<(String, CauseStats)> = Vec::new();
    for (cause, stats) in ranked {
        let key = compare_key(cause, irq_names);
        match merged.iter_mut().find(|(k, _)| *k == key) {
            Some((_, sum)) => {
                sum.count += stats.count;
                sum.total_ns += stats.total_ns;
                sum.max_ns = sum.max_ns.max(stats.max_ns);
            }
            None => merged.push((key, *stats)),
        }
    }
    // stable: without merges, the order of `ranked`
    merged.sort_by_key(|(_, stats)| std::cmp::Reverse(stats.total_ns));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Row, rows};
    use irqlens_model::kernel::Comm;
    use irqlens_model::noise::{AnalysisConfig, NoiseClass, PeriodReport, Record, Sample};

    /// rtla's default linear range: 256 buckets of 1 µs.
    const CONFIG: AnalysisConfig = AnalysisConfig {
        bucket_ns: 1_000,
        entries: 256,
        keep_recent: 0,
    };

    /// A run on CPU 0 whose samples are 1..=count µs times `scale`, each one a thread
    /// `comm` of `pid` (a new pid per 100 samples, as forks would give) or IRQ line 11.
    fn run(count: u64, scale: u64, comm: &str, first_pid: u32) -> NoiseAnalysis {
        let mut analysis = NoiseAnalysis::new(CONFIG, [0]);
        let mut samples = Vec::new();
        let mut records = Vec::new();
        for i in 1..=count {
            let duration_ns = i * scale * 1_000;
            let (class, id, comm) = match i % 2 {
                0 => (
                    NoiseClass::Thread,
                    first_pid + (i / 100) as u32,
                    Comm::new(comm),
                ),
                _ => (NoiseClass::Irq, 11, Comm::default()),
            };
            records.push(Record {
                cpu: 0,
                class,
                source: 0,
                id,
                comm,
                start_ns: i * 100_000_000,
                duration_ns,
                seq: i,
                cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
            });
            samples.push(Sample {
                cpu: 0,
                start_ns: i * 100_000_000,
                duration_ns,
                seq_before: i - 1,
                seq_after: i,
            });
        }
        analysis.add_records(records);
        analysis.add_period(&PeriodReport {
            cpu: 0,
            runtime_ns: 1_000_000_000,
            noise_ns: samples.iter().map(|s| s.duration_ns).sum(),
            max_single_ns: count * scale * 1_000,
            samples,
            last_seq: count,
            ..Default::default()
        });
        analysis
    }

    fn row<'a>(rows: &'a [Row<'a>], group: &str, name: &str) -> &'a Row<'a> {
        rows.iter()
            .find(|r| r.group == group && r.name == name)
            .unwrap_or_else(|| panic!("no {group} / {name}"))
    }

    fn near(value: Option<f64>, expected_ns: f64) {
        let value = value.expect("a value");
        // hdrhistogram's 3 significant digits: within 0.1%
        assert!(
            (value - expected_ns).abs() <= expected_ns / 1_000.0,
            "{value} is not {expected_ns} to 0.1%"
        );
    }

    #[test]
    fn compare_quantiles_beyond_the_linear_range_are_the_true_ones() {
        let names = HashMap::new();
        // A: 1..=10000 µs; B: 2..=20000 µs; the linear range ends at 256 µs
        let a = figures(&run(10_000, 1, "spinner", 100), &names);
        let b = figures(&run(10_000, 2, "spinner", 500), &names);
        let rows = rows(&a, &b);
        let q = |name| row(&rows, "cpu 0", name);
        near(q("q50").a, 5_000_000.0);
        near(q("q90").a, 9_000_000.0);
        near(q("q99").a, 9_900_000.0);
        near(q("q99.9").a, 9_990_000.0);
        near(q("q99").b, 19_800_000.0);
        near(q("q99.9").b, 19_980_000.0);
        // not the max, as the linear histogram's quantiles gave
        assert!(q("q99.9").a < Some(10_000_000.0));
        assert_eq!(row(&rows, "cpu 0", "max single").a, Some(10_000_000.0));
    }

    #[test]
    fn compare_causes_match_across_pids() {
        let names = HashMap::from([(11, "virtio0-input.0".to_string())]);
        let a = figures(&run(1_000, 1, "spinner", 100), &names);
        let b = figures(&run(1_000, 1, "spinner", 9_000), &names);
        let rows = rows(&a, &b);
        // the threads of one comm add up: 500 samples over 11 pids, one row in each run
        let thread = row(&rows, "cause thread spinner", "count");
        assert_eq!((thread.a, thread.b), (Some(500.0), Some(500.0)));
        let total = row(&rows, "cause thread spinner", "total");
        assert_eq!(total.a, Some(total_ns(500, 2) as f64));
        assert_eq!(total.delta(), Some(0.0));
        // the IRQ line by its name
        let irq = row(&rows, "cause irq virtio0-input.0", "count");
        assert_eq!((irq.a, irq.b), (Some(500.0), Some(500.0)));
        // nothing only one run has
        assert!(rows.iter().all(|r| r.a.is_some() && r.b.is_some()), "{a:?}");
    }

    /// 1..=count times step µs, in ns.
    fn total_ns(count: u64, step: u64) -> u64 {
        (1..=count).map(|i| i * step * 1_000).sum()
    }
}

#[cfg(test)]
mod workload_tests {
    use super::*;
    use irqlens_model::kernel::Comm;
    use irqlens_model::noise::{AnalysisConfig, NoiseClass, PeriodReport, Record, Sample};
    use irqlens_model::workload::{CgroupId, Workload};

    use crate::workload_fixture::{POD_UID as UID, names};

    /// Thread `pid` named `comm` in cgroup `cgroup`, one sample of `us` µs each.
    fn threads(threads: &[(u32, &str, u64, u64)]) -> NoiseAnalysis {
        let config = AnalysisConfig {
            bucket_ns: 1_000,
            entries: 100,
            keep_recent: 0,
        };
        let mut analysis = NoiseAnalysis::new(config, [0]);
        let mut samples = Vec::new();
        for (seq, &(pid, comm, cgroup, us)) in (1..).zip(threads) {
            analysis.add_records([Record {
                cpu: 0,
                class: NoiseClass::Thread,
                source: 0,
                id: pid,
                comm: Comm::new(comm),
                start_ns: seq * 1_000_000,
                duration_ns: us * 1_000,
                seq,
                cgroup: CgroupId(cgroup),
            }]);
            samples.push(Sample {
                cpu: 0,
                start_ns: seq * 1_000_000,
                duration_ns: us * 1_000,
                seq_before: seq - 1,
                seq_after: seq,
            });
        }
        analysis.add_period(&PeriodReport {
            cpu: 0,
            runtime_ns: 1_000_000_000,
            noise_ns: samples.iter().map(|s| s.duration_ns).sum(),
            last_seq: samples.len() as u64,
            samples,
            ..Default::default()
        });
        analysis
    }

    #[test]
    fn thread_causes_carry_their_cgroup_and_the_by_table_groups_them() {
        let analysis = threads(&[
            (40, "spin", 7, 30),
            (41, "spin", 7, 20),
            (42, "sshd", 9, 10),
            (43, "old", 0, 5),
        ]);
        let names = names();
        let mut options = NoiseOptions::defaults("0".parse().unwrap());
        options.by = Some(WorkloadBy::Pod);
        let tables = to_json(
            &analysis,
            &crate::html::tests::noise_info(),
            &options,
            &names,
        );
        let spin = tables.causes.iter().find(|c| c.id == Some(40)).unwrap();
        let cgroup = spin.cgroup.as_ref().unwrap();
        assert_eq!(cgroup.id, CgroupId(7));
        assert!(cgroup.path.as_ref().unwrap().ends_with(".scope"));
        match cgroup.workload.as_ref().unwrap() {
            Workload::Pod { uid, container, .. } => {
                assert_eq!(uid, UID);
                assert!(container.as_ref().unwrap().id.starts_with("3f4e5a6b7c8d"));
            }
            other => panic!("{other:?}"),
        }
        let old = tables.causes.iter().find(|c| c.id == Some(43)).unwrap();
        assert_eq!(old.cgroup, None);
        let rows = &tables.workloads.as_ref().unwrap().rows;
        let pod = format!("pod {UID}");
        let row = |key: &str| rows.iter().find(|r| r.workload == key).unwrap();
        assert_eq!((row(&pod).threads, row(&pod).total_ns), (2, 50_000));
        assert_eq!(row("/system.slice/sshd.service").total_ns, 10_000);
        assert_eq!(
            row(irqlens_analyze::noise::UNNAMED_WORKLOAD).total_ns,
            5_000
        );
        // text: a short workload name where it fits, the per-pod table shortened
        let mut text = Vec::new();
        write_causes(&mut text, &analysis, &names, 10).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("sshd:42 sshd.service"), "{text}");
        // a pod's container alone when the pod does not fit too
        assert!(text.contains("spin:40 containerd 3f4e5a6b7c8d"), "{text}");
        let mut by = Vec::new();
        write_workloads(&mut by, &analysis, &names.cgroups, WorkloadBy::Pod).unwrap();
        let by = String::from_utf8(by).unwrap();
        assert!(by.contains("Thread noise per pod"), "{by}");
        assert!(by.contains("pod 1b2c3d4e…"), "{by}");
        assert!(
            text.lines()
                .chain(by.lines())
                .all(|l| l.chars().count() <= 100)
        );
        // without --by, no table
        options.by = None;
        let tables = to_json(
            &analysis,
            &crate::html::tests::noise_info(),
            &options,
            &names,
        );
        assert!(tables.workloads.is_none());
    }
}
