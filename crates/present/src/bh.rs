//! `irqlens bh` output: the thesis's latency table, delay causes, slowest samples,
//! histograms with IRQ and OOB columns, and JSON.

use std::collections::HashSet;
use std::io::{self, Write};

use irqlens_model::tables::{
    BhCause, BhHistogram, BhMechanism, BhOptionsTable, BhSample, BhSeries, BhSourceSeries, BhTables,
};

use super::compare::{Figure, TOP_FIGURES, irq_line_key, quantile_figures};
use super::table::{Column, TextTable};
use super::{
    Names, THREAD_CAUSE_WIDTH, clock_time, opt_us, percent, us2, write_hist_table, write_legend,
};
use irqlens_analyze::bh::{BhStats, CauseStats, DelayCause, Mechanism, Sample, Series, Source};
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_model::bh::{BhOptions, BhRunInfo};
use irqlens_model::hist::HistOptions;

/// Sources shown per mechanism before the rest are summed up in one line.
pub(super) const SOURCES_SHOWN: usize = 12;

impl Names {
    pub(crate) fn source(&self, source: &Source) -> String {
        source.label(&|address| self.symbols.name(address))
    }

    pub(crate) fn cause(&self, cause: &DelayCause) -> String {
        cause.label(&self.irqs, &|address| self.symbols.name(address))
    }

    /// `cause`, a thread's followed by its workload where it fits `width`.
    pub(crate) fn cause_cell(&self, cause: &DelayCause, width: usize) -> String {
        self.with_workload(self.cause(cause), cause.thread().map(|t| t.cgroup), width)
    }
}

/// Columns of the thesis's latency table, in the text and the HTML report alike.
pub(crate) const LATENCY_COLUMNS: [Column; 12] = [
    Column::left("MECHANISM", 10),
    Column::left("SOURCE", 26),
    Column::right("COUNT", 7),
    Column::right("IRQ", 6),
    Column::right("MIN", 7),
    Column::right("Q0.05", 7),
    Column::right("Q0.50", 7),
    Column::right("Q0.95", 7),
    Column::right("MAX", 8),
    Column::right("MAX_IRQ", 8),
    Column::right("RUN_Q50", 7),
    Column::right("RUN_MAX", 8),
];

/// A series' row in the order of `LATENCY_COLUMNS`.
pub(crate) fn latency_cells(mechanism: String, source: String, s: &Series) -> [String; 12] {
    [
        mechanism,
        source,
        s.count.to_string(),
        s.irq.to_string(),
        opt_us(s.min_ns()),
        opt_us(s.quantile_ns(0.05)),
        opt_us(s.quantile_ns(0.50)),
        opt_us(s.quantile_ns(0.95)),
        opt_us(s.max_ns()),
        us2(s.max_irq_ns),
        opt_us(s.runtime_quantile_ns(0.5)),
        opt_us(s.runtime_max_ns()),
    ]
}

/// Columns of a mechanism's delay causes, in the text and the HTML report alike.
pub(crate) const CAUSE_COLUMNS: [Column; 5] = [
    Column::left("CAUSE", 44),
    Column::right("SAMPLES", 8),
    Column::right("SHARE", 7),
    Column::right("Q0.50", 8),
    Column::right("MAX", 8),
];

/// A delay cause's row in the order of `CAUSE_COLUMNS`; its share is of `samples`.
pub(crate) fn cause_cells(
    cause: &DelayCause,
    stats: &CauseStats,
    samples: u64,
    names: &Names,
) -> [String; 5] {
    [
        names.cause_cell(cause, THREAD_CAUSE_WIDTH),
        stats.samples.to_string(),
        format!("{:.1}%", percent(stats.samples, samples)),
        us2(stats.median_ns()),
        us2(stats.max_ns()),
    ]
}

/// Sources of one mechanism, most samples first.
pub(crate) fn sources_of(stats: &BhStats, mechanism: Mechanism) -> Vec<(&Source, &Series)> {
    let mut sources: Vec<_> = stats
        .sources
        .iter()
        .filter(|((m, _), _)| *m == mechanism)
        .map(|((_, source), series)| (source, series))
        .collect();
    sources.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    sources
}

/// Tables 5.1-5.4: per mechanism, then per source; every row marked if checkpoints
/// were lost.
pub fn write_table(
    out: &mut dyn Write,
    stats: &BhStats,
    names: &Names,
    losses: &Losses,
) -> io::Result<()> {
    let mark = losses.mark();
    writeln!(
        out,
        "# Latency from request to invocation, us. min..max over samples with no interrupt in between; IRQ: samples with one; max_IRQ: over all. run: entry to exit, nested IRQs excluded."
    )?;
    let mut table = TextTable::new("", &LATENCY_COLUMNS).headings();
    if stats.mechanisms.is_empty() {
        table.note("(no samples)");
    }
    for (mechanism, m) in &stats.mechanisms {
        let all = latency_cells(format!("{mechanism}{mark}"), "(all)".into(), &m.series);
        table.row(&all);
        let sources = sources_of(stats, *mechanism);
        for (source, series) in sources.iter().take(SOURCES_SHOWN) {
            let source = format!("{}{mark}", names.source(source));
            table.row(&latency_cells(String::new(), source, series));
        }
        if sources.len() > SOURCES_SHOWN {
            let rest: u64 = sources[SOURCES_SHOWN..].iter().map(|(_, s)| s.count).sum();
            table.note(format!(
                "{:<10} ({} more sources, {rest} samples)",
                "",
                sources.len() - SOURCES_SHOWN
            ));
        }
    }
    table.write(out)?;
    write_legend(out, losses, "rows")
}

/// What ran between request and invocation (INTSPECT thesis §5.4), per mechanism.
pub fn write_causes(
    out: &mut dyn Write,
    stats: &BhStats,
    names: &Names,
    rows: usize,
    losses: &Losses,
) -> io::Result<()> {
    for (mechanism, m) in &stats.mechanisms {
        writeln!(out)?;
        writeln!(
            out,
            "Delay causes: {mechanism}{} ({} samples; a sample can have several)",
            losses.mark(),
            m.series.count
        )?;
        let mut table = TextTable::new("  ", &CAUSE_COLUMNS).headings();
        for (cause, c) in m.ranked_causes().into_iter().take(rows) {
            table.row(&cause_cells(cause, c, m.series.count, names));
        }
        table.write(out)?;
    }
    Ok(())
}

fn describe(sample: &Sample, names: &Names) -> String {
    let d = &sample.delay;
    let mut parts = vec![format!(
        "{} us, ran {} us",
        us2(sample.latency_ns),
        us2(sample.runtime_ns)
    )];
    if d.raised_in_ns > 0 {
        parts.push(format!("its hardirq ran on {} us", us2(d.raised_in_ns)));
    }
    let w = &d.window;
    let wakeup_ipi_ns = w.wakeup_ipi_ns.unwrap_or(0);
    for (count, what, ns) in [
        (w.irqs, "hardirqs", w.irq_ns.saturating_sub(wakeup_ipi_ns)),
        (w.softirqs, "softirqs first", w.softirq_ns),
        (w.works, "work items first", w.work_ns),
    ] {
        if count > 0 {
            parts.push(format!("{count} {what} {} us", us2(ns)));
        }
    }
    if let Some(ns) = w.wakeup_ipi_ns {
        parts.push(format!(
            "its executor's wakeup came as an IPI {} us",
            us2(ns)
        ));
    }
    if w.switches > 0 {
        parts.push(format!("{} context switches", w.switches));
    }
    if let Some(activated) = w.activated_after_ns {
        parts.push(format!("activated at +{} us", us2(activated)));
    }
    if let Some(woken) = w.woken_after_ns {
        parts.push(format!("thread woken at +{} us", us2(woken)));
    }
    if let Some(switched) = w.switched_in_after_ns {
        parts.push(format!("switched in at +{} us", us2(switched)));
    }
    let causes: Vec<String> = d
        .causes
        .iter()
        .map(|c| names.cause_cell(c, usize::MAX))
        .collect();
    format!(
        "{} on CPU {} (requested on CPU {} by pid {}, run by pid {}): {}; causes: {}{}",
        names.source(&sample.source),
        sample.cpu,
        sample.request_cpu,
        sample.requester,
        sample.executor,
        parts.join(", "),
        causes.join(", "),
        woke(sample, names)
    )
}

/// `; woke ` and the threads the sample woke with their workloads, if it woke any.
fn woke(sample: &Sample, names: &Names) -> String {
    let woke = &sample.woke;
    if woke.count == 0 {
        return String::new();
    }
    let mut threads: Vec<String> = woke
        .threads
        .iter()
        .map(|(pid, t)| {
            names.with_workload(format!("{} {pid}", t.comm), Some(t.cgroup), usize::MAX)
        })
        .collect();
    let more = woke.count as usize - woke.threads.len();
    if more > 0 {
        threads.push(format!("{more} more"));
    }
    format!("; woke {}", threads.join(", "))
}

/// The slowest samples of each mechanism, decomposed.
pub fn write_worst(out: &mut dyn Write, stats: &BhStats, names: &Names) -> io::Result<()> {
    for (mechanism, m) in stats.mechanisms.iter().filter(|(_, m)| !m.worst.is_empty()) {
        writeln!(out)?;
        writeln!(out, "Slowest {mechanism} samples:")?;
        for sample in &m.worst {
            writeln!(out, "  {}", describe(sample, names))?;
        }
    }
    Ok(())
}

/// Figures 5.3-5.11 as text: a column per mechanism, the IRQ and OOB rows.
pub fn write_histogram(
    out: &mut dyn Write,
    stats: &BhStats,
    options: &HistOptions,
    losses: &Losses,
) -> io::Result<()> {
    let columns: Vec<(String, &Histogram)> = stats
        .mechanisms
        .iter()
        .map(|(mechanism, m)| {
            (
                format!("{mechanism}{}", losses.mark()),
                &m.series.latency.histogram,
            )
        })
        .collect();
    let irq: Vec<u64> = stats.mechanisms.values().map(|m| m.series.irq).collect();
    write_hist_table(
        out,
        "irqlens bh histogram: request to invocation latency (IRQ: an interrupt landed in between; OOB: beyond the last bucket)",
        &columns,
        &[("IRQ:", irq)],
        "OOB:",
        options,
    )?;
    if options.no_header {
        // the marks it explains are in the column names, left out
        return Ok(());
    }
    write_legend(out, losses, "columns")
}

/// The lines after the tables: what the run traced, what it could not match or observe,
/// what it lost.
pub fn write_run_info(
    out: &mut dyn Write,
    stats: &BhStats,
    info: &BhRunInfo,
    options: &BhOptions,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "duration {} | CPUs {} | load {} ({} spinning tasks) | {} programs, {} events, {} lost{}",
        clock_time(info.common.elapsed_ns),
        options.cpus,
        info.load,
        info.load_tasks,
        info.common.programs,
        info.common.events,
        info.common.lost_events,
        if info.common.interrupted {
            " | interrupted"
        } else {
            ""
        }
    )?;
    if let Some(t) = &info.trigger {
        writeln!(
            out,
            "trigger {} at {} Hz from CPU {} (tid {}): {} requests, {} samples measured, {} other bottom halves left out",
            t.kind,
            t.rate_hz,
            t.cpu,
            t.tid,
            t.requests,
            stats.samples(),
            stats.others
        )?;
        writeln!(out, "  path: {}", t.kernel_path)?;
    }
    let m = &info.matching;
    writeln!(
        out,
        "matching: {} re-raises merged into the pending raise; invocations with no request seen: {} softirq, {} tasklet, {} work (requested before tracing, or served twice); {} work items cancelled, {} never started and {} never ended (forgotten to bound memory); {} windows not fully traced; pending at the end: {} softirqs, {} work items",
        m.reraises,
        m.unmatched_softirqs,
        m.unmatched_tasklets,
        m.unmatched_works,
        m.cancelled_works,
        m.stale_works,
        m.unended_works,
        m.incomplete_windows,
        info.pending_softirqs,
        info.pending_works
    )?;
    let kernel: Vec<String> = info
        .kernel_softirq_runs
        .iter()
        .filter(|(_, runs)| **runs > 0)
        .map(|(vector, runs)| format!("{vector} {runs}"))
        .collect();
    writeln!(
        out,
        "softirq runs /proc/softirqs counted on these CPUs while tracing: {}",
        if kernel.is_empty() {
            "none".into()
        } else {
            kernel.join(", ")
        }
    )?;
    if info.common.lost_events > 0 {
        writeln!(
            out,
            "warning: {} events were lost (record area full): some samples are missing or unmatched",
            info.common.lost_events
        )?;
    }
    for line in &info.not_observable {
        writeln!(out, "not observable here: {line}")?;
    }
    super::write_skipped_tracepoints(out, &info.common.skipped_tracepoints)?;
    super::write_cut_short(out, &info.common)
}

fn series_json(s: &Series) -> BhSeries {
    BhSeries {
        count: s.count,
        irq: s.irq,
        min_ns: s.min_ns(),
        q05_ns: s.quantile_ns(0.05),
        q50_ns: s.quantile_ns(0.50),
        q95_ns: s.quantile_ns(0.95),
        max_ns: s.max_ns(),
        max_irq_ns: s.max_irq_ns,
        runtime_q50_ns: s.runtime_quantile_ns(0.5),
        runtime_max_ns: s.runtime_max_ns(),
    }
}

fn sample_json(sample: &Sample, names: &Names) -> BhSample {
    BhSample {
        source: names.source(&sample.source),
        cpu: sample.cpu,
        request_cpu: sample.request_cpu,
        request_ns: sample.request_ns,
        latency_ns: sample.latency_ns,
        runtime_ns: sample.runtime_ns,
        requester: sample.requester,
        executor: sample.executor,
        window: sample.delay.window,
        causes: sample.delay.causes.iter().map(|c| names.cause(c)).collect(),
        woke: sample
            .woke
            .threads
            .iter()
            .map(|&(pid, thread)| names.thread_json(Some(pid), thread))
            .collect(),
        woken: sample.woke.count,
    }
}

/// The tables of the `--json` document; times are in ns (`*_ns`).
pub fn to_json(stats: &BhStats, info: &BhRunInfo, options: &BhOptions, names: &Names) -> BhTables {
    let mechanisms = stats
        .mechanisms
        .iter()
        .map(|(mechanism, m)| BhMechanism {
            mechanism: mechanism.name().into(),
            series: series_json(&m.series),
            causes: m
                .ranked_causes()
                .into_iter()
                .map(|(cause, c)| BhCause {
                    cause: names.cause(cause),
                    samples: c.samples,
                    share_percent: percent(c.samples, m.series.count),
                    q50_ns: c.median_ns(),
                    max_ns: c.max_ns(),
                    cgroup: cause.thread().and_then(|t| names.task_cgroup(t.cgroup)),
                })
                .collect(),
            worst: m.worst.iter().map(|s| sample_json(s, names)).collect(),
            histogram: BhHistogram {
                bucket_ns: m.series.latency.histogram.bucket_ns,
                buckets: m.series.latency.histogram.buckets.clone(),
                irq: m.series.irq,
                oob: m.series.latency.histogram.overflow,
            },
        })
        .collect();
    let series = stats
        .sources
        .iter()
        .map(|((mechanism, source), s)| BhSourceSeries {
            mechanism: mechanism.name().into(),
            source: names.source(source),
            series: series_json(s),
        })
        .collect();
    BhTables {
        options: BhOptionsTable {
            cpus: options.cpus.clone(),
            duration_ns: options.duration.map(|d| d.as_nanos() as u64),
            trigger: options.trigger,
            load: options.load,
            bucket_ns: options.stats.bucket_ns,
            entries: options.stats.entries,
        },
        lost: info
            .losses()
            .table(&["mechanisms", "series", "samples", "others"]),
        samples: stats.samples(),
        others: stats.others,
        mechanisms,
        series,
        not_observable: info.not_observable.clone(),
    }
}

/// The numbers `compare` sets side by side: per mechanism, its busiest sources, and
/// its delay causes.
pub fn figures(stats: &BhStats, names: &Names) -> Vec<Figure> {
    let mut figures = Vec::new();
    for (mechanism, mechanism_stats) in &stats.mechanisms {
        figures.extend(series_figures(mechanism.name(), &mechanism_stats.series));
        for (source, series) in sources_of(stats, *mechanism).into_iter().take(TOP_FIGURES) {
            let group = format!("{} {}", mechanism.name(), names.source(source));
            figures.extend(series_figures(&group, series));
        }
        // a thread by its name, as noise's: a pod's ids change from run to run; of one
        // name in several cgroups, the one with the most samples (ranked first) stands
        let mut labels = HashSet::new();
        for (cause, cause_stats) in mechanism_stats.ranked_causes() {
            let label = match *cause {
                DelayCause::Irq { source: 0, id } => {
                    format!("hardirq {}", irq_line_key(id, &names.irqs))
                }
                _ => names.cause(cause),
            };
            if !labels.insert(label.clone()) {
                continue;
            }
            let group = format!("{} delayed by {label}", mechanism.name());
            figures.push(Figure::count(&group, "samples", cause_stats.samples));
            figures.push(Figure::ns(&group, "q50", cause_stats.median_ns()));
        }
    }
    figures
}

fn series_figures(group: &str, series: &Series) -> Vec<Figure> {
    let mut figures = vec![Figure::count(group, "count", series.count)];
    figures.extend(quantile_figures(group, |q| series.quantile_ns(q)));
    figures.extend(series.max_ns().map(|max| Figure::ns(group, "max", max)));
    figures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::{bh_info, bh_stats};
    use crate::workload_fixture::{CONTAINER, ROOT, SERVICE, names};
    use irqlens_analyze::bh::{Delay, Woke};
    use irqlens_analyze::loss::Losses;
    use irqlens_model::kernel::Comm;
    use irqlens_model::workload::{NamedThread, Workload};

    #[test]
    fn thread_causes_and_woken_threads_name_their_workloads() {
        let mut stats = bh_stats();
        let (spin, sshd) = (
            NamedThread::new(Comm::new("spin"), CONTAINER),
            NamedThread::new(Comm::new("sshd"), SERVICE),
        );
        let mut woke = Woke::default();
        woke.add(300, spin);
        woke.add(301, NamedThread::new(Comm::new("kworker/0:1"), ROOT));
        stats.add(Sample {
            mechanism: Mechanism::Softirq,
            source: Source::Vector(3),
            request_cpu: 0,
            cpu: 0,
            request_ns: 0,
            latency_ns: 900_000,
            runtime_ns: 1_000,
            requester: 0,
            executor: 0,
            woke_watched: false,
            woke,
            delay: Delay {
                causes: vec![DelayCause::Thread(spin), DelayCause::Busy(sshd)],
                ..Delay::default()
            },
        });
        let names = names();
        let mut text = Vec::new();
        write_causes(&mut text, &stats, &names, 10, &Losses::checkpoints(0)).unwrap();
        write_worst(&mut text, &stats, &names).unwrap();
        let text = String::from_utf8(text).unwrap();
        // a short comm leaves room for the pod too
        assert!(
            text.contains("thread spin ran first pod 1b2c3d4e…/containerd 3f4e5a6b7c8d "),
            "{text}"
        );
        assert!(
            text.contains("thread sshd was running sshd.service"),
            "{text}"
        );
        // a sample's line has room for the pod, and names whom it woke; a kernel
        // thread's root cgroup is not named
        assert!(
            text.contains(
                "; woke spin 300 pod 1b2c3d4e…/containerd 3f4e5a6b7c8d, kworker/0:1 301\n"
            ),
            "{text}"
        );

        let options = BhOptions::defaults("0".parse().unwrap());
        let tables = to_json(&stats, &bh_info(), &options, &names);
        let softirq = &tables.mechanisms[0];
        let spin_cause = softirq
            .causes
            .iter()
            .find(|c| c.cause == "thread spin ran first");
        let cgroup = spin_cause.unwrap().cgroup.as_ref().unwrap();
        assert_eq!(cgroup.id, CONTAINER);
        assert!(matches!(cgroup.workload, Some(Workload::Pod { .. })));
        let undelayed = softirq.causes.iter().find(|c| c.cause.contains("<hog>"));
        assert_eq!(
            undelayed.unwrap().cgroup,
            None,
            "a cgroup the run did not see"
        );
        let worst = &softirq.worst[0];
        assert_eq!(worst.woken, 2);
        assert_eq!(worst.woke[0].tid, Some(300));
        assert_eq!(worst.woke[0].cgroup.as_ref().unwrap().id, CONTAINER);
    }
}
