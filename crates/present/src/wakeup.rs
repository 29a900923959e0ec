//! `irqlens wakeup` output: the per-CPU summary of each latency component, where the
//! latency went (causes), the wakeup chains, the CDF, the worst samples whole, the
//! histogram, and JSON.

use std::io::{self, Write};

use irqlens_model::tables::{
    FoldedThreads, Quantile, UntracedStop, WakeupCause, WakeupComponent, WakeupCpu, WakeupOrigin,
    WakeupSample, WakeupSampleCause, WakeupStop, WakeupTables, WakeupThread,
};

use super::compare::{Figure, TOP_FIGURES, irq_line_key, quantile_figures};
use super::table::{Column, Form, TextTable};
use super::{
    Names, THREAD_CAUSE_WIDTH, clock_time, opt_us, percent, us2, write_hist_table, write_legend,
};
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_analyze::wakeup::{
    Cause, CauseStats, Component, CpuStats, Sample, Stop, WakeupStats, from_checkpoints,
};
use irqlens_model::hist::HistOptions;
use irqlens_model::wakeup::{WakeupMode, WakeupOptions, WakeupRunInfo};

/// Quantiles of the CDF table.
const CDF_QUANTILES: [f64; 6] = [0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
/// Woken threads and interposed threads named in the chains, the most frequent first.
const CHAIN_THREADS: usize = 10;

impl Names {
    pub(crate) fn wakeup_cause(&self, cause: &Cause) -> String {
        cause.label(&self.irqs, &|address| self.symbols.name(address))
    }

    /// `wakeup_cause`, a thread's followed by its workload where it fits `width`.
    pub(crate) fn wakeup_cause_cell(&self, cause: &Cause, width: usize) -> String {
        self.with_workload(
            self.wakeup_cause(cause),
            cause.thread().map(|t| t.cgroup),
            width,
        )
    }
}

/// What was measured, in one line.
pub fn describe_mode(options: &WakeupOptions) -> String {
    match &options.mode {
        WakeupMode::Timer(timer) => format!(
            "timer threads on CPUs {}, period {} us, priority {}{}",
            options.cpus,
            timer.period.as_micros(),
            timer.priority,
            if timer.trace {
                ""
            } else {
                ", untraced (total only)"
            }
        ),
        WakeupMode::Task(watched) => format!("task {watched}, traced on CPUs {}", options.cpus),
    }
}

/// Columns of the per-CPU summary, in the text and the HTML report alike.
pub(crate) const SUMMARY_COLUMNS: [Column; 8] = [
    Column::right("CPU", 3),
    Column::right("COUNT", 9),
    Column::right("TRACED", 9),
    Column::left("COMPONENT (us)", 34).gap(2),
    Column::right("MIN", 9),
    Column::right("AVG", 9),
    Column::right("MAX", 9),
    Column::right("Q0.99", 9),
];

/// Per CPU, a row per latency component: count, min, avg, max and Q0.99 (µs); the
/// components checkpoints were lost from are marked.
pub fn write_summary(
    out: &mut dyn Write,
    stats: &WakeupStats,
    options: &WakeupOptions,
    info: &WakeupRunInfo,
) -> io::Result<()> {
    writeln!(
        out,
        "irqlens wakeup: {} ({})",
        describe_mode(options),
        clock_time(info.common.elapsed_ns)
    )?;
    let mut table = TextTable::new("", &SUMMARY_COLUMNS).headings();
    for (cpu, stats) in &stats.cpus {
        for cells in cpu_rows(*cpu, stats, info, Form::Text) {
            table.row(&cells);
        }
    }
    table.write(out)?;
    write_legend(out, &info.losses(), "rows")
}

/// The mark of a component's figures on `cpu`, if losses may have cut them short.
pub(super) fn component_mark(info: &WakeupRunInfo, cpu: u32, component: Component) -> &'static str {
    if from_checkpoints(info, component) {
        info.losses().mark_cpu(cpu)
    } else {
        ""
    }
}

/// One CPU's rows in the order of `SUMMARY_COLUMNS`, a row per component it has; the
/// CPU and its counts on the first.
pub(crate) fn cpu_rows(
    cpu: u32,
    stats: &CpuStats,
    info: &WakeupRunInfo,
    form: Form,
) -> Vec<[String; 8]> {
    let mut rows = Vec::new();
    for component in Component::ALL {
        let Some(series) = stats.series(component) else {
            continue;
        };
        let mark = component_mark(info, cpu, component);
        let (cpu, count, traced) = if rows.is_empty() {
            (
                cpu.to_string(),
                stats.activations.to_string(),
                stats.samples.to_string(),
            )
        } else {
            Default::default()
        };
        let name = format!("{component}{mark}");
        let component = match form {
            Form::Text => format!("{name:<8} {}", component.describe()),
            // the total is its own description: "total (total)" said nothing
            Form::Html if component == Component::Total => name,
            Form::Html => format!("{name} ({})", component.describe()),
        };
        rows.push([
            cpu,
            count,
            traced,
            component,
            opt_us(series.min_ns()),
            opt_us(series.avg_ns()),
            opt_us(series.max_ns()),
            opt_us(series.quantile_ns(0.99)),
        ]);
    }
    rows
}

/// Columns of where the latency went, in the text and the HTML report alike.
pub(crate) const CAUSE_COLUMNS: [Column; 5] = [
    Column::left("CAUSE", 52),
    Column::right("SAMPLES", 9),
    Column::right("SHARE", 7),
    Column::right("AVG", 9),
    Column::right("MAX", 9),
];

/// A cause's row in the order of `CAUSE_COLUMNS`; its share is of `latency_ns`.
pub(crate) fn cause_cells(
    cause: &Cause,
    stats: &CauseStats,
    latency_ns: u64,
    names: &Names,
) -> [String; 5] {
    [
        names.wakeup_cause_cell(cause, THREAD_CAUSE_WIDTH),
        stats.samples.to_string(),
        format!("{:.1}%", percent(stats.total_ns, latency_ns)),
        us2(stats.total_ns / stats.samples.max(1)),
        us2(stats.max_ns),
    ]
}

/// Where the latency went, over all decomposed samples, by time.
pub fn write_causes(
    out: &mut dyn Write,
    stats: &WakeupStats,
    names: &Names,
    rows: usize,
    losses: &Losses,
) -> io::Result<()> {
    let ranked = stats.ranked_causes();
    if ranked.is_empty() || rows == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "Where the latency went{} ({} samples, {} us in all):",
        losses.mark(),
        stats.samples(),
        us2(stats.latency_ns)
    )?;
    let mut table = TextTable::new("  ", &CAUSE_COLUMNS).headings();
    for (cause, cause_stats) in ranked.iter().take(rows) {
        table.row(&cause_cells(cause, cause_stats, stats.latency_ns, names));
    }
    if ranked.len() > rows {
        table.note(format!("  ... {} more (--causes N)", ranked.len() - rows));
    }
    table.write(out)
}

/// The interrupts that woke the tasks, the context switches it took, the threads between.
pub fn write_chains(
    out: &mut dyn Write,
    stats: &WakeupStats,
    names: &Names,
    losses: &Losses,
) -> io::Result<()> {
    let samples = stats.samples();
    if samples == 0 {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Wakeup chains{}:", losses.mark())?;
    for (origin, count) in &stats.origins {
        writeln!(
            out,
            "  woken from {:<44} {count:>9} {:>6.1}%",
            origin.label(&names.irqs),
            percent(*count, samples)
        )?;
    }
    let switches: Vec<String> = stats
        .switches
        .iter()
        .map(|(n, count)| format!("{n}: {count} ({:.1}%)", percent(*count, samples)))
        .collect();
    writeln!(
        out,
        "  context switches from the interrupt to the task: {}",
        switches.join(", ")
    )?;
    let in_workloads = stats
        .threads
        .values()
        .any(|t| names.workload(t.cgroup).is_some());
    if stats.threads.len() + stats.threads.folded() as usize > 1 || in_workloads {
        let mut threads: Vec<_> = stats.threads.iter().collect();
        threads.sort_by_key(|(tid, t)| (std::cmp::Reverse(t.samples), **tid));
        let mut named: Vec<String> = threads
            .iter()
            .take(CHAIN_THREADS)
            .map(|(tid, t)| {
                let thread =
                    names.with_workload(format!("{} {tid}", t.comm), Some(t.cgroup), usize::MAX);
                format!("{thread} ({}, max {} us)", t.samples, us2(t.max_ns))
            })
            .collect();
        let rest = threads.len().saturating_sub(CHAIN_THREADS) as u64 + stats.threads.folded();
        if rest > 0 {
            let samples: u64 = threads
                .iter()
                .skip(CHAIN_THREADS)
                .map(|(_, t)| t.samples)
                .sum();
            let samples = samples + stats.threads.other().map_or(0, |t| t.samples);
            named.push(format!("{rest} more ({samples})"));
        }
        writeln!(out, "  woken threads: {}", named.join(", "))?;
    }
    if !stats.interposed.is_empty() {
        let mut threads: Vec<_> = stats.interposed.iter().collect();
        threads.sort_by_key(|(comm, count)| (std::cmp::Reverse(**count), **comm));
        let mut named: Vec<String> = threads
            .iter()
            .take(CHAIN_THREADS)
            .map(|(comm, count)| format!("{comm} ({count})"))
            .collect();
        let rest: u64 = threads
            .iter()
            .skip(CHAIN_THREADS)
            .map(|(_, count)| **count)
            .sum();
        let rest = rest + stats.interposed.other().copied().unwrap_or(0);
        if rest > 0 {
            named.push(format!("others ({rest})"));
        }
        writeln!(out, "  interposed threads: {}", named.join(", "))?;
    }
    Ok(())
}

/// Total latency quantiles per CPU: the CDF in numbers.
pub fn write_cdf(out: &mut dyn Write, stats: &WakeupStats) -> io::Result<()> {
    let totals: Vec<(u32, _)> = stats
        .cpus
        .iter()
        .filter_map(|(cpu, s)| Some((*cpu, s.series(Component::Total)?)))
        .collect();
    if totals.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    write!(out, "Total latency CDF (us):\n  {:<9}", "QUANTILE")?;
    for (cpu, _) in &totals {
        write!(out, " {:>9}", format!("CPU {cpu}"))?;
    }
    writeln!(out)?;
    for q in CDF_QUANTILES {
        let label = if q == 1.0 {
            "max".to_string()
        } else {
            q.to_string()
        };
        write!(out, "  {label:<9}")?;
        for (_, series) in &totals {
            write!(out, " {:>9}", opt_us(series.quantile_ns(q)))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The worst samples, each cut into its components and causes.
pub fn write_worst(out: &mut dyn Write, stats: &WakeupStats, names: &Names) -> io::Result<()> {
    if stats.worst.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "Worst samples:")?;
    for (rank, sample) in stats.worst.iter().enumerate() {
        write_sample(out, &format!("{}.", rank + 1), sample, names)?;
    }
    Ok(())
}

/// The sample that hit -s/--stop or -i/--irq-stop.
pub fn write_stop(out: &mut dyn Write, stop: &Stop, names: &Names) -> io::Result<()> {
    writeln!(out)?;
    match stop {
        Stop::Sample(sample) => write_sample(out, "Stopped by", sample, names),
        Stop::Untraced(report) => writeln!(
            out,
            "Stopped by: CPU {} tid {}, total {} us (untraced: no decomposition)",
            report.cpu,
            report.tid,
            us2(report.total_ns())
        ),
    }
}

fn write_sample(out: &mut dyn Write, lead: &str, sample: &Sample, names: &Names) -> io::Result<()> {
    let total = sample.total_ns();
    writeln!(
        out,
        "{lead} CPU {} {}: total {} us, woken from {} on CPU {}, {} context switch(es){}",
        sample.cpu,
        names.with_workload(
            format!("{} (tid {})", sample.comm, sample.tid),
            Some(sample.cgroup),
            usize::MAX
        ),
        us2(total),
        sample.origin.label(&names.irqs),
        sample.waker_cpu,
        sample.switches,
        interposed(sample, names),
    )?;
    let parts: Vec<String> = Component::ALL
        .iter()
        .filter(|c| **c != Component::Total)
        .filter_map(|c| Some(format!("{} {}", c.name(), us2(sample.component(*c)?))))
        .collect();
    writeln!(out, "    {}", parts.join(", "))?;
    for (cause, ns) in &sample.causes {
        writeln!(
            out,
            "      {:<52} {:>9} us {:>6.1}%",
            names.wakeup_cause_cell(cause, THREAD_CAUSE_WIDTH),
            us2(*ns),
            percent(*ns, total)
        )?;
    }
    Ok(())
}

fn interposed(sample: &Sample, names: &Names) -> String {
    if sample.interposed.is_empty() {
        return String::new();
    }
    let threads: Vec<String> = sample
        .interposed
        .iter()
        .map(|t| names.with_workload(t.comm.to_string(), Some(t.cgroup), usize::MAX))
        .collect();
    format!(", through {}", threads.join(" -> "))
}

/// rtla timerlat hist's layout: per CPU, the IRQ (or interrupt-to-wakeup) column and
/// the total column.
pub fn write_histogram(
    out: &mut dyn Write,
    stats: &WakeupStats,
    options: &HistOptions,
    info: &WakeupRunInfo,
) -> io::Result<()> {
    let mut columns: Vec<(String, &Histogram)> = Vec::new();
    for (&cpu, cpu_stats) in &stats.cpus {
        for (component, label) in [
            (Component::Irq, "IRQ"),
            (Component::Wakeup, "WAK"),
            (Component::Total, "TOT"),
        ] {
            if let Some(series) = cpu_stats.series(component) {
                let mark = component_mark(info, cpu, component);
                columns.push((format!("{label}-{cpu:03}{mark}"), &series.histogram));
            }
        }
    }
    write_hist_table(
        out,
        "irqlens wakeup histogram (IRQ: timer expiry to handler; WAK: interrupt to wakeup; TOT: total)",
        &columns,
        &[],
        "over:",
        options,
    )?;
    if options.no_header {
        // the marks it explains are in the column names, left out
        return Ok(());
    }
    write_legend(out, &info.losses(), "columns")
}

/// The lines after the tables: what the run traced, what it could not make samples of,
/// what it lost.
pub fn write_run_info(out: &mut dyn Write, info: &WakeupRunInfo) -> io::Result<()> {
    writeln!(out)?;
    if info.traced {
        writeln!(
            out,
            "Traced with {} BPF programs: {} checkpoints, {} lost",
            info.common.programs, info.tracking.events, info.common.lost_events
        )?;
    }
    super::write_skipped_tracepoints(out, &info.common.skipped_tracepoints)?;
    if !info.threads.is_empty() {
        let threads: Vec<String> = info
            .threads
            .iter()
            .map(|t| format!("CPU {} tid {}", t.cpu, t.tid))
            .collect();
        writeln!(
            out,
            "Timer threads: {}; periods missed (woken a period late or more): {}",
            threads.join(", "),
            info.missed_periods
        )?;
    }
    let t = &info.tracking;
    if info.traced {
        writeln!(
            out,
            "Not decomposed: {} activations (no traced wakeup matched), {} traced wakeups never reported, {} windows not fully traced",
            t.undecomposed, t.unreported, t.incomplete
        )?;
        writeln!(
            out,
            "Wakeups by a thread (not an interrupt): {}; of a task still running: {}; superseded: {}; done on an untraced CPU: {}; never switched in (forgotten to bound memory): {}",
            t.thread_wakeups, t.woken_running, t.rewoken, t.untraced_wakeups, t.forgotten_wakeups
        )?;
    }
    if info.common.interrupted {
        writeln!(out, "Interrupted: the results cover the run until then")?;
    }
    Ok(())
}

/// The tables of the `--json` document; times are in ns (`*_ns`).
pub fn to_json(
    stats: &WakeupStats,
    info: &WakeupRunInfo,
    options: &WakeupOptions,
    names: &Names,
) -> WakeupTables {
    let per_cpu = stats
        .cpus
        .iter()
        .map(|(&cpu, s)| WakeupCpu {
            cpu,
            activations: s.activations,
            samples: s.samples,
            components: s
                .components
                .iter()
                .map(|(component, series)| {
                    let component_table = WakeupComponent {
                        count: series.count(),
                        min_ns: series.min_ns(),
                        avg_ns: series.avg_ns(),
                        max_ns: series.max_ns(),
                        quantiles: CDF_QUANTILES
                            .iter()
                            .map(|&quantile| Quantile {
                                quantile,
                                ns: series.quantile_ns(quantile),
                            })
                            .collect(),
                        cdf: series.histogram.cumulative().collect(),
                        histogram: series.histogram.clone(),
                    };
                    (component.name().to_owned(), component_table)
                })
                .collect(),
        })
        .collect();
    let causes = stats
        .ranked_causes()
        .iter()
        .map(|(cause, s)| WakeupCause {
            cause: names.wakeup_cause(cause),
            samples: s.samples,
            total_ns: s.total_ns,
            max_ns: s.max_ns,
            share_percent: percent(s.total_ns, stats.latency_ns),
            cgroup: cause.thread().and_then(|t| names.task_cgroup(t.cgroup)),
        })
        .collect();
    let origins = stats
        .origins
        .iter()
        .map(|(origin, &samples)| WakeupOrigin {
            origin: origin.label(&names.irqs),
            samples,
        })
        .collect();
    let stop = stats.stop.as_ref().map(|stop| match stop {
        Stop::Sample(sample) => WakeupStop::Sample(Box::new(sample_json(sample, names))),
        Stop::Untraced(report) => WakeupStop::Untraced(UntracedStop {
            cpu: report.cpu,
            tid: report.tid,
            total_ns: report.total_ns(),
        }),
    });
    WakeupTables {
        mode: describe_mode(options),
        per_cpu,
        causes,
        origins,
        context_switches: stats.switches.clone(),
        interposed: stats
            .interposed
            .iter()
            .map(|(c, n)| (c.to_string(), *n))
            .collect(),
        // samples of the interposed threads and woken threads folded to bound memory
        interposed_folded: stats.interposed.other().copied().unwrap_or(0),
        threads: stats
            .threads
            .iter()
            .map(|(&tid, t)| WakeupThread {
                tid,
                comm: t.comm,
                samples: t.samples,
                max_ns: t.max_ns,
                cgroup: names.task_cgroup(t.cgroup),
            })
            .collect(),
        threads_folded: stats.threads.other().map(|t| FoldedThreads {
            threads: stats.threads.folded(),
            samples: t.samples,
            max_ns: t.max_ns,
        }),
        worst: stats.worst.iter().map(|s| sample_json(s, names)).collect(),
        stop,
        lost: info.losses().table(&[
            "per_cpu",
            "causes",
            "origins",
            "context_switches",
            "interposed",
            "threads",
            "worst",
        ]),
    }
}

fn sample_json(sample: &Sample, names: &Names) -> WakeupSample {
    WakeupSample {
        cpu: sample.cpu,
        waker_cpu: sample.waker_cpu,
        tid: sample.tid,
        comm: sample.comm,
        cgroup: names.task_cgroup(sample.cgroup),
        origin: sample.origin.label(&names.irqs),
        interposed: sample
            .interposed
            .iter()
            .map(|&thread| names.thread_json(None, thread))
            .collect(),
        context_switches: sample.switches,
        components: Component::ALL
            .iter()
            .filter_map(|c| Some((format!("{}_ns", c.name()), sample.component(*c)?)))
            .collect(),
        causes: sample
            .causes
            .iter()
            .map(|(cause, ns)| WakeupSampleCause {
                cause: names.wakeup_cause(cause),
                ns: *ns,
                cgroup: cause.thread().and_then(|t| names.task_cgroup(t.cgroup)),
            })
            .collect(),
    }
}

/// The numbers `compare` sets side by side: per CPU, the total latency; then the
/// causes.
pub fn figures(stats: &WakeupStats, names: &Names) -> Vec<Figure> {
    let mut figures = Vec::new();
    for (cpu, cpu_stats) in &stats.cpus {
        let group = format!("cpu {cpu}");
        figures.push(Figure::count(&group, "activations", cpu_stats.activations));
        if let Some(total) = cpu_stats.series(Component::Total) {
            figures.extend(quantile_figures(&group, |q| total.quantile_ns(q)));
            figures.extend(total.max_ns().map(|max| Figure::ns(&group, "max", max)));
        }
    }
    // a thread by its name, as noise's: a pod's ids change from run to run; of one name in
    // several cgroups, the one with the most time (ranked first) stands
    let mut labels = std::collections::HashSet::new();
    for (cause, cause_stats) in stats.ranked_causes().iter().take(TOP_FIGURES) {
        let label = match *cause {
            Cause::Origin { source: 0, id } => {
                format!("the waking hardirq {}", irq_line_key(id, &names.irqs))
            }
            Cause::Irq { source: 0, id } => format!("hardirq {}", irq_line_key(id, &names.irqs)),
            _ => names.wakeup_cause(cause),
        };
        if !labels.insert(label.clone()) {
            continue;
        }
        let group = format!("cause {label}");
        figures.push(Figure::ns(&group, "total", cause_stats.total_ns));
        figures.push(Figure::count(&group, "samples", cause_stats.samples));
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::{timer_wakeup, wakeup_info};
    use crate::workload_fixture::{CONTAINER, ROOT, SERVICE, names};
    use irqlens_analyze::loss::Losses;
    use irqlens_model::kernel::Comm;
    use irqlens_model::wakeup::StatsConfig;
    use irqlens_model::workload::NamedThread;

    #[test]
    fn the_task_its_chain_and_the_threads_in_its_way_name_their_workloads() {
        let mut stats = WakeupStats::new(StatsConfig {
            bucket_ns: 1_000,
            entries: 2_000,
            worst: 1,
            ..StatsConfig::default()
        });
        let ksoftirqd = NamedThread::new(Comm::new("ksoftirqd/0"), ROOT);
        let sshd = NamedThread::new(Comm::new("sshd"), SERVICE);
        let mut sample = timer_wakeup(0, 3, 1, 60, 2);
        sample.cgroup = CONTAINER;
        sample.interposed = vec![ksoftirqd];
        let total = sample.total_ns();
        sample.causes = vec![
            (Cause::Blocking(sshd), total - 1_000),
            (Cause::Interposed(ksoftirqd), 1_000),
        ];
        stats.add(sample);
        let names = names();
        let mut text = Vec::new();
        write_causes(&mut text, &stats, &names, 10, &Losses::checkpoints(0)).unwrap();
        write_chains(&mut text, &stats, &names, &Losses::checkpoints(0)).unwrap();
        write_worst(&mut text, &stats, &names).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("thread sshd kept the CPU sshd.service"),
            "{text}"
        );
        // the one woken thread is listed for its workload
        assert!(
            text.contains(
                "woken threads: cyclic<test> 100 pod 1b2c3d4e…/containerd 3f4e5a6b7c8d (1,"
            ),
            "{text}"
        );
        assert!(
            text.contains("cyclic<test> (tid 100) pod 1b2c3d4e…/containerd 3f4e5a6b7c8d: total"),
            "{text}"
        );
        assert!(
            text.contains("context switch(es), through ksoftirqd/0\n"),
            "{text}"
        );

        let options = WakeupOptions::timer("0".parse().unwrap());
        let tables = to_json(&stats, &wakeup_info(true), &options, &names);
        let blocking = tables.causes.iter().find(|c| c.cause.contains("sshd"));
        assert_eq!(blocking.unwrap().cgroup.as_ref().unwrap().id, SERVICE);
        let worst = &tables.worst[0];
        assert_eq!(worst.cgroup.as_ref().unwrap().id, CONTAINER);
        assert_eq!(worst.interposed[0].cgroup.as_ref().unwrap().id, ROOT);
        assert_eq!(worst.causes[0].cgroup.as_ref().unwrap().id, SERVICE);
        assert_eq!(worst.causes[1].cgroup.as_ref().unwrap().id, ROOT);
    }
}
