//! The HTML report: one self-contained page (inline CSS, inline SVG, no script, nothing
//! fetched) with a section per recording. Each section shows the run information, the
//! key numbers of the text tables, and the plots users of osnoise and INTSPECT expect:
//! histograms on a log count axis, CDFs, top-causes bars and the noise timeline.
//!
//! Every plot is an `<svg class="plot" data-plot="KIND">` with a `<title>` and an id
//! unique in the page (`s<N>-<KIND>-<M>`), so several sections can share a page.

use std::collections::HashMap;
use std::io::{self, Write};

use super::account::{self, View};
use super::bh::{
    CAUSE_COLUMNS as BH_CAUSE_COLUMNS, LATENCY_COLUMNS, cause_cells as bh_cause_cells,
    latency_cells,
};
use super::noise::{
    BREAKDOWN_COLUMNS, BREAKDOWN_HEADING, BREAKDOWN_NOTE, CAUSE_COLUMNS, SUMMARY_COLUMNS,
    breakdown_cells, cause_cells, summary_cells,
};
use super::plot::{Axis, BarChart, Kind, Line, Scale, XyChart, escape};
use super::table::{Form, headings};
use super::wakeup;
use super::{Names, clock_time, micros, percent, us1};
use irqlens_analyze::account::Period;
use irqlens_analyze::account::report::{Row, top, totals};
use irqlens_analyze::bh::BhStats;
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_analyze::noise::NoiseAnalysis;
use irqlens_analyze::wakeup::{Component, WakeupStats};
use irqlens_model::account::AccountRunInfo;
use irqlens_model::bh::BhRunInfo;
use irqlens_model::noise::NoiseRunInfo;
use irqlens_model::wakeup::WakeupRunInfo;

/// Lines drawn in one chart: more CPUs than this would hide each other.
const MAX_LINES: usize = 8;
/// Bars in a causes chart (the table beside it has the same rows).
const MAX_BARS: usize = 15;

const STYLE: &str = "\
body{font-family:sans-serif;margin:1.5em auto;max-width:70em;padding:0 1em;color:#222}\
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
h3{font-size:1.05em;margin-top:1.5em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.9em;display:block;overflow-x:auto}\
th,td{border:1px solid #ddd;padding:.2em .5em}th{background:#f3f3f3;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
svg.plot{display:block;max-width:100%;height:auto;margin:1em 0}\
p.note{color:#555;font-size:.9em}";

/// One HTML document of several sections, each of any capability.
pub struct Page {
    title: String,
    /// The kernel release(s) the runs shown were measured on.
    kernel: String,
    sections: Vec<Section>,
}

struct Section {
    id: String,
    heading: String,
    body: String,
    plots: usize,
}

impl Section {
    fn h3(&mut self, text: &str) {
        self.body += &format!("<h3>{}</h3>\n", escape(text));
    }

    fn note(&mut self, text: &str) {
        self.body += &format!("<p class=\"note\">{}</p>\n", escape(text));
    }

    /// The legend under a table whose `marked` rows or columns losses may have cut short.
    fn legend(&mut self, losses: &Losses, marked: &str) {
        if let Some(legend) = losses.legend(marked) {
            self.body += &format!("<p class=\"note lost\">{}</p>\n", escape(&legend));
        }
    }

    /// A two-column table of what the run was and what it could not see.
    fn facts(&mut self, facts: &[(&str, String)]) {
        let rows: Vec<Vec<String>> = facts
            .iter()
            .map(|(name, value)| vec![name.to_string(), value.clone()])
            .collect();
        self.table(&[], &rows);
    }

    /// Numbers right-aligned, as in the terminal tables.
    fn table(&mut self, headers: &[&str], rows: &[Vec<String>]) {
        let mut html = String::from("<table>\n");
        if !headers.is_empty() {
            html += "<tr>";
            for header in headers {
                html += &format!("<th>{}</th>", escape(header));
            }
            html += "</tr>\n";
        }
        for row in rows {
            html += "<tr>";
            for cell in row {
                let class = if looks_numeric(cell) {
                    " class=\"n\""
                } else {
                    ""
                };
                html += &format!("<td{class}>{}</td>", escape(cell));
            }
            html += "</tr>\n";
        }
        html += "</table>\n";
        self.body += &html;
    }

    fn next_plot_id(&mut self, kind: Kind) -> String {
        self.plots += 1;
        format!("{}-{}-{}", self.id, kind.name(), self.plots)
    }

    fn chart(&mut self, chart: &XyChart) {
        let id = self.next_plot_id(chart.kind);
        self.svg(chart.to_svg(&id));
    }

    /// A causes chart and below it the table of the same causes: each row a bar's value
    /// and the cells, the first naming the bar. At most `MAX_BARS` rows.
    fn ranked(
        &mut self,
        title: String,
        value_label: &str,
        headers: &[&str],
        rows: impl IntoIterator<Item = (f64, Vec<String>)>,
    ) {
        let (values, rows): (Vec<f64>, Vec<Vec<String>>) = rows.into_iter().take(MAX_BARS).unzip();
        self.bars(&BarChart {
            title,
            value_label: value_label.into(),
            bars: rows
                .iter()
                .map(|cells| cells[0].clone())
                .zip(values)
                .collect(),
        });
        self.table(headers, &rows);
    }

    fn bars(&mut self, chart: &BarChart) {
        if chart.bars.is_empty() {
            return self.note(&format!("{}: none", chart.title));
        }
        let id = self.next_plot_id(Kind::Causes);
        self.svg(chart.to_svg(&id));
    }

    fn svg(&mut self, svg: anyhow::Result<String>) {
        match svg {
            Ok(svg) => self.body += &format!("{svg}\n"),
            // a plot that cannot be drawn must not cost the rest of the report
            Err(err) => self.note(&format!("plot not drawn: {err:#}")),
        }
    }
}

fn looks_numeric(cell: &str) -> bool {
    let number = cell.trim_end_matches('%').trim_start_matches(['+', '#']);
    cell == "-" || number.parse::<f64>().is_ok()
}

/// The counts of a histogram as steps over its buckets (µs), up to the last non-empty
/// bucket; log axes show empty buckets on their lower end.
pub fn histogram_steps(name: String, histogram: &Histogram) -> Line {
    let used = histogram
        .buckets
        .iter()
        .rposition(|&count| count > 0)
        .map_or(0, |last| last + 1);
    let points = (0..used)
        .flat_map(|index| {
            let count = histogram.buckets[index] as f64;
            [
                (micros(histogram.bucket_start_ns(index)), count),
                (micros(histogram.bucket_start_ns(index + 1)), count),
            ]
        })
        .collect();
    Line { name, points }
}

/// The cumulative fraction at the end of every non-empty bucket (µs), from 0 at the
/// first bucket's start; values beyond the last bucket reach 1 at the maximum.
pub fn cdf_line(name: String, histogram: &Histogram) -> Line {
    let mut points = Vec::new();
    if let Some(first) = histogram.buckets.iter().position(|&count| count > 0) {
        points.push((micros(histogram.bucket_start_ns(first).max(1)), 0.0));
    }
    points.extend(
        histogram
            .cumulative()
            .map(|(end_ns, fraction)| (micros(end_ns), fraction)),
    );
    if histogram.overflow > 0 {
        points.push((micros(histogram.max_ns), 1.0));
    }
    Line { name, points }
}

/// At most `MAX_LINES` lines, those reaching farthest (by `reach`) first; says what was
/// left out.
fn farthest(mut lines: Vec<Line>, reach: fn(&Line) -> f64, section: &mut Section) -> Vec<Line> {
    if lines.len() > MAX_LINES {
        section.note(&format!(
            "{} of {} lines shown: those reaching farthest",
            MAX_LINES,
            lines.len()
        ));
        lines.sort_by(|a, b| reach(b).total_cmp(&reach(a)));
        lines.truncate(MAX_LINES);
    }
    lines
}

fn max_x(line: &Line) -> f64 {
    line.points.iter().map(|p| p.0).fold(0.0, f64::max)
}

/// The power of ten above `value`, at least 10.
fn decade_above(value: f64) -> f64 {
    10f64.powf(value.log10().floor() + 1.0).max(10.0)
}

fn max_y(line: &Line) -> f64 {
    line.points.iter().map(|p| p.1).fold(0.0, f64::max)
}

/// The histogram (log count axis) and the CDF (log µs axis when it spans decades) of
/// the same named histograms.
fn distribution_plots(section: &mut Section, what: &str, histograms: Vec<(String, &Histogram)>) {
    let histograms: Vec<(String, &Histogram)> = histograms
        .into_iter()
        .filter(|(_, h)| h.count > 0)
        .collect();
    if histograms.is_empty() {
        return section.note(&format!("{what}: no samples"));
    }
    let steps = histograms
        .iter()
        .map(|(name, h)| histogram_steps(name.clone(), h))
        .collect();
    let lines = farthest(steps, max_x, section);
    let max_count = lines.iter().map(max_y).fold(1.0, f64::max);
    section.chart(&XyChart {
        kind: Kind::Histogram,
        title: format!("{what}: histogram"),
        x: Axis::new(format!("{what} (us)"), Scale::Linear),
        // below 1, so that a bucket of one sample stands off the empty ones
        y: Axis::new("samples", Scale::Log).with_bounds(0.5..decade_above(max_count)),
        lines,
    });
    let overflow: u64 = histograms.iter().map(|(_, h)| h.overflow).sum();
    if overflow > 0 {
        section.note(&format!(
            "{overflow} samples beyond the last bucket are not in the histogram (the CDF has them)"
        ));
    }
    let cdfs = histograms
        .iter()
        .map(|(name, h)| cdf_line(name.clone(), h))
        .collect();
    let lines = farthest(cdfs, max_x, section);
    let min = histograms.iter().filter_map(|(_, h)| h.min_ns).min();
    let max = histograms.iter().map(|(_, h)| h.max_ns).max();
    let scale = Scale::for_span(
        min.map_or(0.0, |ns| ns.max(1) as f64),
        max.unwrap_or(0) as f64,
    );
    section.chart(&XyChart {
        kind: Kind::Cdf,
        title: format!("{what}: cumulative distribution"),
        x: Axis::new(format!("{what} (us)"), scale),
        y: Axis::new("fraction of samples", Scale::Linear).with_bounds(0.0..1.0),
        lines,
    });
}

impl Page {
    /// An empty page with `title`, about a run on `kernel`.
    pub fn new(title: &str, kernel: &str) -> Self {
        Page {
            title: title.to_owned(),
            kernel: kernel.to_owned(),
            sections: Vec::new(),
        }
    }

    fn section(&mut self, heading: &str) -> &mut Section {
        let id = format!("s{}", self.sections.len() + 1);
        self.sections.push(Section {
            id,
            heading: heading.to_owned(),
            body: String::new(),
            plots: 0,
        });
        self.sections.last_mut().expect("just pushed")
    }

    /// `irqlens noise`: summary per CPU, duration histogram and CDF per CPU, the top
    /// causes, and the noise of each period over the run.
    pub fn noise(
        &mut self,
        heading: &str,
        analysis: &NoiseAnalysis,
        info: &NoiseRunInfo,
        irq_names: &HashMap<u32, String>,
    ) {
        let section = self.section(heading);
        noise_run_info(section, analysis, info);
        section.h3("Per CPU (time in us)");
        let losses = info.losses();
        let rows: Vec<Vec<String>> = analysis
            .summaries()
            .map(|s| summary_cells(s, &losses, Form::Html).to_vec())
            .collect();
        section.table(&headings(&SUMMARY_COLUMNS), &rows);
        section.legend(&losses, "rows");
        section.h3(BREAKDOWN_HEADING);
        section.note(&BREAKDOWN_NOTE.join(" "));
        let rows: Vec<Vec<String>> = analysis
            .breakdowns()
            .map(|(summary, parts)| breakdown_cells(summary, &parts).to_vec())
            .collect();
        section.table(&headings(&BREAKDOWN_COLUMNS), &rows);
        section.h3("Noise samples");
        let histograms = analysis
            .histograms()
            .map(|(cpu, h)| (format!("CPU {cpu}"), h))
            .collect();
        distribution_plots(section, "noise sample duration", histograms);

        section.h3("Top causes of noise");
        let causes = analysis.top_causes();
        let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
        section.ranked(
            "Top causes of noise (interference-free time)".into(),
            "total (us)",
            &headings(&CAUSE_COLUMNS),
            causes.iter().map(|(cause, s)| {
                let cells = cause_cells(cause, s, noise_ns, irq_names).to_vec();
                (micros(s.total_ns), cells)
            }),
        );
        if causes.len() > MAX_BARS {
            section.note(&format!("{} more causes", causes.len() - MAX_BARS));
        }
        noise_timeline(section, analysis);
    }

    /// `irqlens bh`: the latency table per mechanism, histogram and CDF per mechanism,
    /// and what delayed each mechanism.
    pub fn bh(&mut self, heading: &str, stats: &BhStats, info: &BhRunInfo, names: &Names) {
        let section = self.section(heading);
        let mut facts = vec![
            ("duration", clock_time(info.common.elapsed_ns)),
            (
                "load",
                format!("{} ({} spinning tasks)", info.load, info.load_tasks),
            ),
            (
                "BPF",
                format!(
                    "{} programs, {} events, {} lost",
                    info.common.programs, info.common.events, info.common.lost_events
                ),
            ),
            ("samples", stats.samples().to_string()),
        ];
        if let Some(t) = &info.trigger {
            facts.push((
                "trigger",
                format!(
                    "{} at {} Hz from CPU {}: {} requests, {} other bottom halves left out",
                    t.kind, t.rate_hz, t.cpu, t.requests, stats.others
                ),
            ));
        }
        facts.extend(common_facts(
            &info.common.skipped_tracepoints,
            info.common.interrupted,
        ));
        section.facts(&facts);

        section.h3("Latency from request to invocation (us)");
        section.note("MIN..MAX over samples with no interrupt in between; IRQ: samples with one; MAX_IRQ: over all; RUN: entry to exit.");
        let losses = info.losses();
        let mark = losses.mark();
        let mut rows = Vec::new();
        for (mechanism, m) in &stats.mechanisms {
            let all = latency_cells(format!("{mechanism}{mark}"), "(all)".into(), &m.series);
            rows.push(all.to_vec());
            for (source, series) in super::bh::sources_of(stats, *mechanism)
                .iter()
                .take(super::bh::SOURCES_SHOWN)
            {
                let source = format!("{}{mark}", names.source(source));
                rows.push(latency_cells(String::new(), source, series).to_vec());
            }
        }
        section.table(&headings(&LATENCY_COLUMNS), &rows);
        section.legend(&losses, "rows");
        section.h3("Latency per mechanism (samples with no interrupt in between)");
        let histograms = stats
            .mechanisms
            .iter()
            .map(|(mechanism, m)| (mechanism.name().to_owned(), &m.series.latency.histogram))
            .collect();
        distribution_plots(section, "bottom-half latency", histograms);

        for (mechanism, m) in &stats.mechanisms {
            section.h3(&format!("Delay causes: {mechanism}{mark}"));
            section.ranked(
                format!("What delayed {mechanism} ({} samples)", m.series.count),
                "samples it delayed",
                &headings(&BH_CAUSE_COLUMNS),
                m.ranked_causes().into_iter().map(|(cause, c)| {
                    let cells = bh_cause_cells(cause, c, m.series.count, names).to_vec();
                    (c.samples as f64, cells)
                }),
            );
        }
    }

    /// `irqlens wakeup`: components per CPU, total latency histogram and CDF per CPU,
    /// and where the latency went.
    pub fn wakeup(
        &mut self,
        heading: &str,
        stats: &WakeupStats,
        info: &WakeupRunInfo,
        names: &Names,
    ) {
        let section = self.section(heading);
        let mut facts = vec![
            ("duration", clock_time(info.common.elapsed_ns)),
            (
                "activations",
                format!(
                    "{} ({} decomposed from the trace)",
                    stats.activations(),
                    stats.samples()
                ),
            ),
        ];
        if info.traced {
            facts.push((
                "BPF",
                format!(
                    "{} programs, {} checkpoints, {} lost",
                    info.common.programs, info.tracking.events, info.common.lost_events
                ),
            ));
        }
        if !info.threads.is_empty() {
            facts.push(("periods missed", info.missed_periods.to_string()));
        }
        facts.extend(common_facts(
            &info.common.skipped_tracepoints,
            info.common.interrupted,
        ));
        section.facts(&facts);

        section.h3("Latency components per CPU (us)");
        let losses = info.losses();
        let rows: Vec<Vec<String>> = stats
            .cpus
            .iter()
            .flat_map(|(&cpu, cpu_stats)| wakeup::cpu_rows(cpu, cpu_stats, info, Form::Html))
            .map(|cells| cells.to_vec())
            .collect();
        section.table(&headings(&wakeup::SUMMARY_COLUMNS), &rows);
        section.legend(&losses, "rows");
        section.h3("Total latency per CPU");
        let histograms = stats
            .cpus
            .iter()
            .filter_map(|(cpu, s)| {
                Some((format!("CPU {cpu}"), &s.series(Component::Total)?.histogram))
            })
            .collect();
        distribution_plots(section, "wakeup latency", histograms);

        section.h3("Where the latency went");
        section.ranked(
            format!(
                "Where the latency went{} ({} samples)",
                losses.mark(),
                stats.samples()
            ),
            "total (us)",
            &headings(&wakeup::CAUSE_COLUMNS),
            stats.ranked_causes().into_iter().map(|(cause, s)| {
                let cells = wakeup::cause_cells(&cause, &s, stats.latency_ns, names).to_vec();
                (micros(s.total_ns), cells)
            }),
        );
    }

    /// `irqlens account`: the totals, the table, and the top victims and causers.
    pub fn account(&mut self, heading: &str, whole: &Period, info: &AccountRunInfo, view: &View) {
        let section = self.section(heading);
        let table = view.table(whole);
        let t = totals(&whole.ledger);
        let all = t.interrupt_ns();
        let mut facts = vec![
            ("duration", clock_time(info.common.elapsed_ns)),
            (
                "interrupt time",
                format!(
                    "{} us: hardirq {}, softirq {}, NMI {}; {} on idle CPUs",
                    us1(all),
                    us1(t.hardirq_ns),
                    us1(t.softirq_ns),
                    us1(t.nmi_ns),
                    us1(t.idle_ns)
                ),
            ),
            (
                "served",
                format!(
                    "a process {} us ({:.1} %), orphan {} us ({:.1} %); irqlens's own work {} us ({:.1} %)",
                    us1(t.served_ns),
                    percent(t.served_ns, all),
                    us1(t.orphan_ns),
                    percent(t.orphan_ns, all),
                    us1(t.irqlens_ns),
                    percent(t.irqlens_ns, all)
                ),
            ),
            (
                "BPF",
                format!(
                    "{} programs, {} checkpoints, {} lost",
                    info.common.programs, info.common.events, info.common.lost_events
                ),
            ),
            ("rule", super::account::RULE.to_owned()),
        ];
        facts.extend(common_facts(
            &info.common.skipped_tracepoints,
            info.common.interrupted,
        ));
        section.facts(&facts);

        section.h3(&format!("Interrupt time per {} (us)", view.per()));
        let compensate = whole.compensator.is_some();
        let rows: Vec<Vec<String>> = table
            .rows
            .iter()
            .take(view.top)
            .chain(&table.irqlens)
            .map(|row| account::cells(row, compensate, Form::Html))
            .collect();
        // the kernel's bill comes from /proc, the rest from the checkpoints
        let losses = info.losses();
        let columns = account::columns(view, compensate);
        let marked: Vec<String> = columns.iter().map(|c| c.marked_heading(&losses)).collect();
        let marked: Vec<&str> = marked.iter().map(String::as_str).collect();
        section.table(&marked, &rows);
        section.legend(&losses, "columns");
        if table.rows.len() > view.top {
            section.note(&format!("{} more", table.rows.len() - view.top));
        }
        let ranking = |title: &str, value: fn(&Row) -> u64| BarChart {
            title: title.to_owned(),
            value_label: "interrupt time (us)".into(),
            bars: top(&table.rows, view.top.min(MAX_BARS), value)
                .iter()
                .map(|row| (format!("{}:{}", row.comm, row.id), micros(value(row))))
                .collect(),
        };
        section.h3("Top victims and causers");
        section.bars(&ranking(
            "Top victims (interrupt time charged to them)",
            |r| r.charged_ns,
        ));
        section.bars(&ranking(
            "Top causers (interrupt time served to them)",
            |r| r.served_ns,
        ));
    }

    /// The whole document.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "<!DOCTYPE html>")?;
        writeln!(out, "<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
        writeln!(
            out,
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        )?;
        writeln!(out, "<title>{}</title>", escape(&self.title))?;
        writeln!(out, "<style>{STYLE}</style></head><body>")?;
        writeln!(out, "<h1>{}</h1>", escape(&self.title))?;
        if self.sections.len() > 1 {
            writeln!(out, "<ul>")?;
            for s in &self.sections {
                writeln!(
                    out,
                    "<li><a href=\"#{}\">{}</a></li>",
                    s.id,
                    escape(&s.heading)
                )?;
            }
            writeln!(out, "</ul>")?;
        }
        for s in &self.sections {
            writeln!(out, "<section id=\"{}\">", s.id)?;
            writeln!(out, "<h2>{}</h2>", escape(&s.heading))?;
            out.write_all(s.body.as_bytes())?;
            writeln!(out, "</section>")?;
        }
        writeln!(
            out,
            "<p class=\"note\">irqlens {} on Linux {}; times in µs unless said otherwise.</p>",
            env!("CARGO_PKG_VERSION"),
            escape(&self.kernel)
        )?;
        writeln!(out, "</body></html>")
    }
}

fn common_facts(skipped_tracepoints: &[String], interrupted: bool) -> Vec<(&'static str, String)> {
    let mut facts = Vec::new();
    if !skipped_tracepoints.is_empty() {
        facts.push((
            "tracepoints this kernel lacks (not traced)",
            skipped_tracepoints.join(", "),
        ));
    }
    if interrupted {
        facts.push((
            "interrupted",
            "yes: the results cover the run until then".into(),
        ));
    }
    facts
}

fn noise_run_info(section: &mut Section, analysis: &NoiseAnalysis, info: &NoiseRunInfo) {
    let unexplained: u64 = analysis.summaries().map(|s| s.unexplained).sum();
    let dropped: u64 = analysis.summaries().map(|s| s.dropped_samples).sum();
    let mut facts = vec![
        ("duration", clock_time(info.common.elapsed_ns)),
        ("clock", info.clock.to_owned()),
        (
            "BPF",
            format!(
                "{} programs, {} records, {} lost",
                info.common.programs, info.common.events, info.common.lost_events
            ),
        ),
        (
            "collector",
            info.collector_cpus.as_ref().map_or(
                "shares the measured CPUs (its time shows as thread noise of irqlens)".into(),
                |cpus| format!("on CPUs {cpus}"),
            ),
        ),
        ("interferences with no record", unexplained.to_string()),
        ("samples not fitting the buffer", dropped.to_string()),
    ];
    if let Some(stop) = analysis.stop_report() {
        facts.push((
            "stopped",
            format!(
                "{} on CPU {}: {} us sample",
                stop.reason,
                stop.sample.cpu,
                us1(stop.sample.duration_ns)
            ),
        ));
    }
    facts.extend(common_facts(
        &info.common.skipped_tracepoints,
        info.common.interrupted,
    ));
    section.facts(&facts);
}

/// Noise per period and the longest sample per period, a line per CPU.
fn noise_timeline(section: &mut Section, analysis: &NoiseAnalysis) {
    section.h3("Noise over the run");
    let timelines: Vec<_> = analysis
        .timelines()
        .filter(|(_, points)| !points.is_empty())
        .collect();
    if timelines.is_empty() {
        return section.note("no period completed");
    }
    if timelines
        .iter()
        .any(|(_, points)| points.iter().any(|p| p.periods > 1))
    {
        section.note(
            "a long run: each point is several periods (their average noise, their longest sample)",
        );
    }
    let per_cpu = |value: fn(&irqlens_analyze::noise::TimelinePoint) -> f64| -> Vec<Line> {
        timelines
            .iter()
            .map(|(cpu, points)| Line {
                name: format!("CPU {cpu}"),
                points: points
                    .iter()
                    .map(|p| (p.first_period as f64, value(p)))
                    .collect(),
            })
            .collect()
    };
    for (title, y_label, value) in [
        (
            "Noise per period",
            "noise (us)",
            (|p| p.noise_ns as f64 / p.periods as f64 / 1_000.0)
                as fn(&irqlens_analyze::noise::TimelinePoint) -> f64,
        ),
        ("Longest noise sample per period", "max single (us)", |p| {
            micros(p.max_single_ns)
        }),
    ] {
        let lines = farthest(per_cpu(value), max_y, section);
        section.chart(&XyChart {
            kind: Kind::Timeline,
            title: title.into(),
            x: Axis::new("period", Scale::Linear),
            y: Axis::new(y_label, Scale::Linear),
            lines,
        });
    }
}

#[cfg(test)]
pub(super) mod tests;
