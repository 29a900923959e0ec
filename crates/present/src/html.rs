//! The HTML report: one self-contained page (inline CSS, inline SVG, no script, nothing
//! fetched) with a section per recording. Each section shows the run information, the
//! key numbers of the text tables, and the plots users of osnoise and INTSPECT expect:
//! histograms on a log count axis, CDFs and exceedance (1 - CDF on a log axis), top-causes
//! bars coloured by class, wakeup's worst samples stacked by component, and the noise
//! timeline as the share of the CPU available over the run.
//!
//! Every plot is an `<svg class="plot" data-plot="KIND">` with a `<title>` and an id
//! unique in the page (`s<N>-<KIND>-<M>`), so several sections can share a page.

use std::borrow::Cow;
use std::io::{self, Write};
use std::iter;

use super::account::{self, View};
use super::bh::{
    CAUSE_COLUMNS as BH_CAUSE_COLUMNS, LATENCY_COLUMNS, cause_cells as bh_cause_cells,
    latency_cells,
};
use super::noise::{
    BREAKDOWN_COLUMNS, BREAKDOWN_HEADING, BREAKDOWN_NOTE, CAUSE_COLUMNS, SUMMARY_COLUMNS,
    WORKLOAD_COLUMNS, breakdown_cells, cause_cells, summary_cells, workload_cells,
};
use super::plot::{Axis, Bar, BarChart, Kind, Line, Scale, XyChart, escape, micro_sign};
use super::table::{Form, headings};
use super::wakeup;
use super::{Names, clock_time, micros, percent, us1};
use irqlens_analyze::account::report::{Row, idle_by, top, totals};
use irqlens_analyze::account::{BySource, Period, Source as AccountSource};
use irqlens_analyze::bh::{BhStats, DelayCause};
use irqlens_analyze::first_seen;
use irqlens_analyze::histogram::{Histogram, LOG_BUCKETS_PER_DECADE, log_bucket_range};
use irqlens_analyze::loss::{Losses, RunLosses};
use irqlens_analyze::noise::{NoiseAnalysis, TimelinePoint};
use irqlens_analyze::trial::rung_medians;
use irqlens_analyze::wakeup::{
    Cause as WakeupCause, Component, Sample as WakeupSample, WakeupStats,
};
use irqlens_model::account::AccountRunInfo;
use irqlens_model::bh::BhRunInfo;
use irqlens_model::noise::NoiseRunInfo;
use irqlens_model::sim::{LatencySummary, PeriodicResult, SimReport};
use irqlens_model::trial::TrialReport;
use irqlens_model::wakeup::WakeupRunInfo;
use irqlens_model::workload::WorkloadBy;

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
    fn table<Row: AsRef<[String]>>(&mut self, headers: &[&str], rows: &[Row]) {
        let mut html = String::from("<table>\n");
        if !headers.is_empty() {
            html += "<tr>";
            for header in headers {
                // the terminal's column names say "us" (scripts read them)
                html += &format!("<th>{}</th>", escape(&micro_sign(header)));
            }
            html += "</tr>\n";
        }
        for row in rows {
            html += "<tr>";
            for cell in row.as_ref() {
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

    /// A causes chart and below it the table of the same causes: each row a bar's class
    /// and value, and the cells, the first naming the bar. At most `MAX_BARS` rows.
    fn ranked(
        &mut self,
        title: String,
        value_label: &str,
        headers: &[&str],
        rows: impl IntoIterator<Item = (&'static str, f64, Vec<String>)>,
    ) {
        let (bars, rows): (Vec<Bar>, Vec<Vec<String>>) = rows
            .into_iter()
            .take(MAX_BARS)
            .map(|(class, value, cells)| (Bar::single(cells[0].clone(), class, value), cells))
            .unzip();
        self.bars(&BarChart {
            kind: Kind::Causes,
            title,
            value_label: value_label.into(),
            bars,
        });
        self.table(headers, &rows);
    }

    fn bars(&mut self, chart: &BarChart) {
        if chart.bars.is_empty() {
            return self.note(&format!("{}: none", chart.title));
        }
        let id = self.next_plot_id(chart.kind);
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

/// Where log-spaced bucket `index` of `histogram` starts and ends, µs: the first,
/// from 0, starts at the smallest value instead (a log axis cannot show 0).
fn log_bucket_span(histogram: &Histogram, index: usize) -> (f64, f64) {
    let range = log_bucket_range(index);
    let start = match index {
        0 => histogram.min_ns.unwrap_or(1).max(1) as f64,
        _ => range.start,
    };
    (start / 1e3, range.end / 1e3)
}

/// The counts of a histogram's log-spaced buckets as steps (µs), from the first
/// non-empty bucket to the last, rising from and falling back to 0: every value, the
/// largest too, is in a bucket.
pub fn histogram_steps(name: String, histogram: &Histogram) -> Line {
    let counts = &histogram.log_buckets;
    let (Some(first), Some(last)) = (
        counts.iter().position(|&count| count > 0),
        counts.iter().rposition(|&count| count > 0),
    ) else {
        return Line::new(name, Vec::new());
    };
    let start = log_bucket_span(histogram, first).0;
    let end = log_bucket_span(histogram, last).1;
    let steps = (first..=last).flat_map(|index| {
        let (start, end) = log_bucket_span(histogram, index);
        let count = counts[index] as f64;
        [(start, count), (end, count)]
    });
    let points = std::iter::once((start, 0.0))
        .chain(steps)
        .chain([(end, 0.0)])
        .collect();
    Line::new(name, points)
}

/// The cumulative fraction at the end of every non-empty log-spaced bucket (µs), from
/// 0 at the smallest value to 1 at the largest: its polyline crosses each quantile in
/// the bucket that holds it.
pub fn cdf_line(name: String, histogram: &Histogram) -> Line {
    let mut points = Vec::new();
    if let Some(min_ns) = histogram.min_ns {
        points.push((micros(min_ns.max(1)), 0.0));
    }
    points.extend(
        histogram
            .log_cumulative()
            .map(|(end_ns, fraction)| (end_ns / 1e3, fraction)),
    );
    Line::new(name, points)
}

/// The exceedance of a CDF line of `count` samples: the fraction of samples above each
/// x, 1 - CDF. Where that is 0 (the CDF's last point, at the largest sample) a log axis
/// cannot show it: that point is the largest sample, one of `count`, so it is drawn at
/// 1/count and the tail ends where it does.
pub fn exceedance_line(cdf: &Line, count: u64) -> Line {
    let last_sample = 1.0 / count.max(1) as f64;
    let points = cdf
        .points
        .iter()
        .map(|&(x, fraction)| (x, 1.0 - fraction))
        // a fraction summed in floating point can miss 1 by an ulp
        .map(|(x, above)| (x, if above > 1e-12 { above } else { last_sample }))
        .collect();
    Line {
        points,
        ..cdf.clone()
    }
}

/// At most `MAX_LINES` lines, those reaching farthest (by `reach`) first; says what was
/// left out.
fn farthest<T>(mut lines: Vec<T>, reach: fn(&T) -> f64, section: &mut Section) -> Vec<T> {
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

/// One distribution of a plot's lines.
struct Series<'a> {
    name: String,
    /// Colours it as in every chart (a wakeup component); `None`: by its place.
    class: Option<&'static str>,
    histogram: Cow<'a, Histogram>,
}

impl<'a> Series<'a> {
    fn new(name: String, histogram: &'a Histogram) -> Self {
        Series {
            name,
            class: None,
            histogram: Cow::Borrowed(histogram),
        }
    }

    fn line(&self, make: fn(String, &Histogram) -> Line) -> Line {
        Line {
            class: self.class.map(str::to_owned),
            ..make(self.name.clone(), &self.histogram)
        }
    }
}

/// The histogram (log count axis), the CDF and the exceedance (1 - CDF on a log axis,
/// where the tail shows) of the same named distributions; the value axes log when they
/// span decades.
fn distribution_plots(section: &mut Section, what: &str, series: Vec<Series<'_>>) {
    let series: Vec<Series<'_>> = series
        .into_iter()
        .filter(|s| s.histogram.count > 0)
        .collect();
    if series.is_empty() {
        return section.note(&format!("{what}: no samples"));
    }
    let steps = series.iter().map(|s| s.line(histogram_steps)).collect();
    let lines = farthest(steps, max_x, section);
    let max_count = lines.iter().map(max_y).fold(1.0, f64::max);
    section.chart(&XyChart {
        kind: Kind::Histogram,
        title: format!("{what}: histogram"),
        // log-spaced buckets are as wide as each other there, from the shortest sample
        // to the longest
        x: Axis::new(format!("{what} (µs)"), Scale::Log),
        // below 1, so that a bucket of one sample stands off the empty ones
        y: Axis::new(
            format!("samples per bucket ({LOG_BUCKETS_PER_DECADE} a decade)"),
            Scale::Log,
        )
        .with_bounds(0.5..decade_above(max_count)),
        lines,
    });
    tail_plots(section, what, &series);
}

/// The CDF and the exceedance (1 - CDF on a log axis, where the tail shows) of the same
/// non-empty named distributions; the value axis log when they span decades.
fn tail_plots(section: &mut Section, what: &str, series: &[Series<'_>]) {
    let cdfs = series
        .iter()
        .map(|s| (s.line(cdf_line), s.histogram.count))
        .collect();
    let (cdfs, counts): (Vec<Line>, Vec<u64>) =
        farthest(cdfs, |l| max_x(&l.0), section).into_iter().unzip();
    let min = series.iter().filter_map(|s| s.histogram.min_ns).min();
    let max = series.iter().map(|s| s.histogram.max_ns).max();
    let scale = Scale::for_span(
        min.map_or(0.0, |ns| ns.max(1) as f64),
        max.unwrap_or(0) as f64,
    );
    let exceedances: Vec<Line> = cdfs
        .iter()
        .zip(counts)
        .map(|(cdf, count)| exceedance_line(cdf, count))
        .collect();
    section.chart(&XyChart {
        kind: Kind::Cdf,
        title: format!("{what}: cumulative distribution"),
        x: Axis::new(format!("{what} (µs)"), scale),
        y: Axis::new("fraction of samples", Scale::Linear).with_bounds(0.0..1.0),
        lines: cdfs,
    });
    let smallest = exceedances
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1.0, f64::min);
    section.chart(&XyChart {
        kind: Kind::Exceedance,
        title: format!("{what}: exceedance (the tail)"),
        x: Axis::new(format!("{what} (µs)"), scale),
        // a hair under the decade, so that its tick is drawn
        y: Axis::new("fraction of samples above", Scale::Log)
            .with_bounds(10f64.powf(smallest.log10().floor()).min(0.1) * 0.999..1.0),
        lines: exceedances,
    });
}

/// The simulated CDFs of one latency (µs), a line per design (`(design, latency)`) on
/// one plot; no plot when no design has samples. The axis is log when the values span
/// decades, else it runs from a little below the smallest to a little above the
/// largest, so that latencies far from 0 are not squeezed into a corner.
fn sim_cdf<'a>(
    section: &mut Section,
    title: String,
    samples: &str,
    latencies: impl Iterator<Item = (String, &'a LatencySummary)>,
) {
    let lines: Vec<Line> = latencies
        .filter(|(_, latency)| latency.count > 0)
        .map(|(design, latency)| {
            Line::new(design, latency.cdf.iter().map(|p| (p[0], p[1])).collect())
        })
        .collect();
    let values = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (Some(low), Some(high)) = (values().reduce(f64::min), values().reduce(f64::max)) else {
        return;
    };
    let x = match Scale::for_span(low, high) {
        Scale::Log => Axis::new("latency (µs)", Scale::Log),
        Scale::Linear => {
            let margin = (high - low).max(high * 0.01) * 0.05;
            Axis::new("latency (µs)", Scale::Linear)
                .with_bounds((low - margin).max(0.0)..high + margin)
        }
    };
    section.chart(&XyChart {
        kind: Kind::Cdf,
        title,
        x,
        y: Axis::new(format!("fraction of {samples}"), Scale::Linear).with_bounds(0.0..1.0),
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

    /// `irqlens noise`: summary per CPU, duration histogram, CDF and exceedance per CPU,
    /// the top causes, and the share available of each period over the run.
    pub fn noise(
        &mut self,
        heading: &str,
        analysis: &NoiseAnalysis,
        info: &NoiseRunInfo,
        names: &Names,
        by: Option<WorkloadBy>,
    ) {
        let section = self.section(heading);
        noise_run_info(section, analysis, info);
        section.h3("Per CPU (time in µs)");
        let losses = info.losses();
        let rows: Vec<_> = analysis
            .summaries()
            .map(|s| summary_cells(s, &losses, Form::Html))
            .collect();
        section.table(&headings(&SUMMARY_COLUMNS), &rows);
        section.legend(&losses, "rows");
        section.h3(&micro_sign(BREAKDOWN_HEADING));
        section.note(&BREAKDOWN_NOTE.join(" "));
        let rows: Vec<_> = analysis
            .breakdowns()
            .map(|(summary, parts)| breakdown_cells(summary, &parts))
            .collect();
        section.table(&headings(&BREAKDOWN_COLUMNS), &rows);
        section.h3("Noise samples");
        let histograms = analysis
            .histograms()
            .map(|(cpu, h)| Series::new(format!("CPU {cpu}"), h))
            .collect();
        distribution_plots(section, "noise sample duration", histograms);

        section.h3("Top causes of noise");
        let causes = analysis.top_causes();
        let noise_ns: u64 = analysis.summaries().map(|s| s.noise_ns).sum();
        section.ranked(
            "Top causes of noise (interference-free time)".into(),
            "total (µs)",
            &headings(&CAUSE_COLUMNS),
            causes.iter().map(|(cause, s)| {
                let cells = cause_cells(cause, s, noise_ns, names).to_vec();
                (cause.class_name(), micros(s.total_ns), cells)
            }),
        );
        if causes.len() > MAX_BARS {
            section.note(&format!("{} more causes", causes.len() - MAX_BARS));
        }
        if let Some(by) = by {
            section.h3(&format!("Thread noise per {} (time in µs)", by.name()));
            let rows: Vec<_> = analysis
                .workload_causes(&names.cgroups, by)
                .iter()
                .map(|row| workload_cells(row, noise_ns))
                .collect();
            section.table(&headings(&WORKLOAD_COLUMNS), &rows);
        }
        noise_timeline(section, analysis);
    }

    /// `irqlens bh`: the latency table per mechanism, histogram, CDF and exceedance per
    /// mechanism (and per source of a mechanism with several), and what delayed each
    /// mechanism.
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

        section.h3("Latency from request to invocation (µs)");
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
            .map(|(mechanism, m)| {
                Series::new(mechanism.name().to_owned(), &m.series.latency.histogram)
            })
            .collect();
        distribution_plots(section, "bottom-half latency", histograms);

        for mechanism in stats.mechanisms.keys() {
            let sources: Vec<Series<'_>> = super::bh::sources_of(stats, *mechanism)
                .into_iter()
                .filter(|(_, series)| series.latency.histogram.count > 0)
                .map(|(source, series)| {
                    Series::new(names.source(source), &series.latency.histogram)
                })
                .collect();
            // with one source its line is the mechanism's, above
            if sources.len() > 1 {
                section.h3(&format!("Latency of {mechanism} per source"));
                tail_plots(section, &format!("{mechanism} latency"), &sources);
            }
        }

        for (mechanism, m) in &stats.mechanisms {
            section.h3(&format!("Delay causes: {mechanism}{mark}"));
            section.ranked(
                format!("What delayed {mechanism} ({} samples)", m.series.count),
                "samples it delayed",
                &headings(&BH_CAUSE_COLUMNS),
                m.ranked_causes().into_iter().map(|(cause, c)| {
                    let cells = bh_cause_cells(cause, c, m.series.count, names).to_vec();
                    (bh_class(cause), c.samples as f64, cells)
                }),
            );
        }
    }

    /// `irqlens wakeup`: components per CPU, total latency histogram, CDF and exceedance
    /// per CPU, the same per component, where the latency went, and the worst samples
    /// stacked by component.
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

        section.h3("Latency components per CPU (µs)");
        let losses = info.losses();
        let rows: Vec<_> = stats
            .cpus
            .iter()
            .flat_map(|(&cpu, cpu_stats)| wakeup::cpu_rows(cpu, cpu_stats, info, Form::Html))
            .collect();
        section.table(&headings(&wakeup::SUMMARY_COLUMNS), &rows);
        section.legend(&losses, "rows");
        section.h3("Total latency per CPU");
        let histograms = stats
            .cpus
            .iter()
            .filter_map(|(cpu, s)| {
                let total = s.series(Component::Total)?;
                Some(Series::new(format!("CPU {cpu}"), &total.histogram))
            })
            .collect();
        distribution_plots(section, "wakeup latency", histograms);
        wakeup_components(section, stats);

        section.h3("Where the latency went");
        section.ranked(
            format!(
                "Where the latency went{} ({} samples)",
                losses.mark(),
                stats.samples()
            ),
            "total (µs)",
            &headings(&wakeup::CAUSE_COLUMNS),
            stats.ranked_causes().into_iter().map(|(cause, s)| {
                let cells = wakeup::cause_cells(&cause, &s, stats.latency_ns, names).to_vec();
                (wakeup_class(&cause), micros(s.total_ns), cells)
            }),
        );
        worst_wakeups(section, stats, names);
    }

    /// `irqlens trial`: the slides' two plots (echoed against offered rate, the cyclic
    /// task's largest latency against offered rate, a line per design), then each
    /// design's table.
    pub fn trial(&mut self, heading: &str, report: &TrialReport) {
        let section = self.section(heading);
        let o = &report.options;
        section.facts(&[
            (
                "bed",
                format!(
                    "echo server on CPU {} (nice {}), load from CPU {}, cyclic task {} every {} µs",
                    o.receiving_cpu,
                    o.consumer_nice,
                    o.sending_cpu,
                    o.cyclic_priority,
                    super::us(o.cyclic_period_ns)
                ),
            ),
            ("per point", clock_time(o.duration_ns)),
            ("interrupted", report.interrupted.to_string()),
        ]);
        let line = |value: &dyn Fn(&irqlens_model::trial::TrialPoint) -> Option<f64>| {
            report
                .designs
                .iter()
                .map(|summary| {
                    // a rate's rounds: their median
                    let ladder: Vec<_> = report
                        .points_of(summary.design)
                        .into_iter()
                        .filter(|p| value(p).is_some())
                        .collect();
                    let medians =
                        rung_medians(&ladder, |p| p.offered_pps, |p| value(p).unwrap_or_default());
                    let points = medians
                        .into_iter()
                        .map(|(offered, median)| (offered as f64, median))
                        .collect();
                    Line::new(summary.design.to_string(), points).marked()
                })
                .collect::<Vec<_>>()
        };
        let mut rungs: Vec<f64> = report.points.iter().map(|p| p.offered_pps as f64).collect();
        rungs.sort_by(f64::total_cmp);
        rungs.dedup();
        // one scale for both rates, so that echoed = offered is the diagonal
        let rates = Scale::for_ladder(rungs.iter().copied());
        let x = || Axis::new("offered (datagrams/s)", rates);
        let mut echoed = line(&|p| Some(p.echoed_pps));
        echoed.push(Line::reference(
            "echoed = offered",
            rungs.iter().map(|&rate| (rate, rate)).collect(),
        ));
        section.chart(&XyChart {
            kind: Kind::Ladder,
            title: "Echoed against offered rate".into(),
            x: x(),
            y: Axis::new("echoed (datagrams/s)", rates),
            lines: echoed,
        });
        section.chart(&XyChart {
            kind: Kind::Ladder,
            title: "The cyclic task's largest latency against offered rate".into(),
            x: x(),
            y: Axis::new("cyclic max (µs)", Scale::Linear),
            lines: line(&|p| Some(micros(p.cyclic.as_ref()?.max_ns))),
        });
        for summary in &report.designs {
            section.h3(&super::trial::describe(summary.design, report));
            let rows: Vec<_> = report
                .points_of(summary.design)
                .into_iter()
                .map(super::trial::cells)
                .collect();
            section.table(&headings(&super::trial::POINT_COLUMNS), &rows);
        }
    }

    /// `irqlens sim`: per interrupt-driven task, every design's latency CDF on one plot
    /// (as Lee & Park's Fig. 13); per periodic task, every design's CDF of its response
    /// (release to completion) and of its wakeup latency (release to start); then the
    /// tables the terminal shows.
    pub fn sim(&mut self, heading: &str, report: &SimReport) {
        use super::sim::{
            CONSUMER_COLUMNS, CONSUMER_TITLE, CPU_COLUMNS, CPU_TITLE, NAPI_COLUMNS, NAPI_TITLE,
            PERIODIC_COLUMNS, PERIODIC_TITLE, consumer_rows, cpu_rows, napi_rows, periodic_rows,
        };
        let section = self.section(heading);
        section.facts(&[
            (
                "simulated",
                format!("{} s, seed {}", report.duration_s, report.seed),
            ),
            ("costs", report.costs_origin.clone()),
        ]);
        let consumers = report.designs.iter().flat_map(|d| &d.consumers);
        for task in first_seen(consumers.map(|c| c.task.as_str())) {
            let latencies = report.designs.iter().filter_map(|design| {
                let consumer = design.consumers.iter().find(|c| c.task == task)?;
                Some((design.design.to_string(), &consumer.latency))
            });
            sim_cdf(
                section,
                format!("{task}: packet arrival to its start on it, every design"),
                "packets",
                latencies,
            );
        }
        let periodic = report.designs.iter().flat_map(|d| &d.periodic);
        for task in first_seen(periodic.map(|p| p.task.as_str())) {
            let of_task = |latency: fn(&PeriodicResult) -> &LatencySummary| {
                report.designs.iter().filter_map(move |design| {
                    let result = design.periodic.iter().find(|p| p.task == task)?;
                    Some((design.design.to_string(), latency(result)))
                })
            };
            sim_cdf(
                section,
                format!("periodic task {task}: release to completion, every design"),
                "activations",
                of_task(|p| &p.response),
            );
            sim_cdf(
                section,
                format!("periodic task {task}: release to start (wakeup latency), every design"),
                "activations",
                of_task(|p| &p.wakeup_latency),
            );
        }
        section.h3(CONSUMER_TITLE);
        section.table(&headings(&CONSUMER_COLUMNS), &consumer_rows(report));
        let periodic = periodic_rows(report);
        if !periodic.is_empty() {
            section.h3(PERIODIC_TITLE);
            section.table(&headings(&PERIODIC_COLUMNS), &periodic);
        }
        section.h3(CPU_TITLE);
        section.table(&headings(&CPU_COLUMNS), &cpu_rows(report));
        let napi = napi_rows(report);
        if !napi.is_empty() {
            section.h3(NAPI_TITLE);
            section.table(&headings(&NAPI_COLUMNS), &napi);
        }
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
                    "{} µs: hardirq {}, softirq {}, NMI {}; {} on idle CPUs",
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
                    "a process {} µs ({:.1} %), orphan {} µs ({:.1} %); irqlens's own work {} µs ({:.1} %)",
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
            ("rule", super::account::rule(view.sockets)),
        ];
        facts.extend(view.filter_note().map(|note| ("cgroups", note)));
        facts.extend(common_facts(
            &info.common.skipped_tracepoints,
            info.common.interrupted,
        ));
        section.facts(&facts);

        section.h3(&format!("Interrupt time per {} (µs)", view.per()));
        let compensate = whole.compensator.is_some();
        let columns = account::columns(view, compensate);
        let folded = table.folded_sum();
        let mut rows: Vec<Vec<String>> = table
            .rows
            .iter()
            .take(view.top)
            .chain(&folded)
            .chain(&table.irqlens)
            .map(|row| account::cells(row, compensate, Form::Html))
            .collect();
        // as in the text: blank past SERVED, which is all they have; in no cgroup
        if view.within.is_empty() {
            rows.extend(
                account::unattributed_cells(&t, Form::Html)
                    .map(|cells| cells.into_iter().chain(iter::repeat(String::new())))
                    .map(|cells| cells.take(columns.len()).collect()),
            );
        }
        // the kernel's bill comes from /proc, the rest from the checkpoints
        let losses = info.losses();
        let marked: Vec<String> = columns.iter().map(|c| c.marked_heading(&losses)).collect();
        let marked: Vec<&str> = marked.iter().map(String::as_str).collect();
        section.table(&marked, &rows);
        section.legend(&losses, "columns");
        if table.rows.len() > view.top {
            section.note(&format!("{} more", table.rows.len() - view.top));
        }
        if let Some(row) = &folded {
            section.note(&account::folded_note(row));
        }
        if let Some(by) = view.by {
            let workloads = view.workloads(&table);
            section.h3(&format!("Interrupt time per {} (µs)", by.name()));
            let columns = account::workload_columns(compensate);
            let marked: Vec<String> = columns.iter().map(|c| c.marked_heading(&losses)).collect();
            let marked: Vec<&str> = marked.iter().map(String::as_str).collect();
            let rows: Vec<Vec<String>> = workloads
                .iter()
                .take(view.top)
                .map(|row| account::workload_cells(row, compensate, Form::Html))
                .collect();
            section.table(&marked, &rows);
            section.note(&account::workload_heading(by, view));
            if workloads.len() > view.top {
                section.note(&format!("{} more", workloads.len() - view.top));
            }
        }
        // the interrupt time of no process ranks with theirs, as the table shows it:
        // [idle] as charged, [orphan] as served
        let n = view.top.min(MAX_BARS);
        let ranking = |title: &str,
                       value: fn(&Row) -> u64,
                       by: fn(&Row) -> &BySource,
                       (name, ns, by_source): (&str, u64, &BySource)| {
            let rows = top(&table.rows, n, value).into_iter().map(|row| {
                let label = format!("{}:{}", row.figures.comm, row.figures.id);
                (value(row), account_bar(label, value(row), by(row)))
            });
            let unattributed = (ns > 0).then(|| (ns, account_bar(name.into(), ns, by_source)));
            let mut bars: Vec<(u64, Bar)> = rows.chain(unattributed).collect();
            bars.sort_by_key(|(ns, _)| std::cmp::Reverse(*ns));
            BarChart {
                kind: Kind::Causes,
                title: title.to_owned(),
                value_label: "interrupt time (µs)".into(),
                bars: bars.into_iter().take(n).map(|(_, bar)| bar).collect(),
            }
        };
        section.h3("Top victims and causers");
        section.bars(&ranking(
            "Top victims (interrupt time charged to them)",
            |r| r.figures.amounts.charged_ns,
            |r| &r.charged_by,
            (account::IDLE, t.idle_ns, &idle_by(&whole.ledger)),
        ));
        section.bars(&ranking(
            "Top causers (interrupt time served to them)",
            |r| r.figures.amounts.served_ns,
            |r| &r.served_by,
            (account::ORPHAN, t.orphan_ns, &whole.ledger.orphan),
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
            // a live run's page is titled as its one section is headed: once is enough
            if s.heading != self.title {
                writeln!(out, "<h2>{}</h2>", escape(&s.heading))?;
            }
            out.write_all(s.body.as_bytes())?;
            writeln!(out, "</section>")?;
        }
        writeln!(
            out,
            "<p class=\"note\">irqlens {} on Linux {}; times in µs unless said otherwise.</p>",
            irqlens_model::run::VERSION,
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
                "{} on CPU {}: {} µs sample",
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

/// An account row's bar, labelled `label`: its `total_ns` stacked by the class of
/// interrupt (irq, softirq, nmi) from `by_source`, or one bar when those do not add up
/// to it.
fn account_bar(label: String, total_ns: u64, by_source: &BySource) -> Bar {
    let mut parts: Vec<(String, f64)> = Vec::new();
    for (source, ns) in by_source {
        let class = match source {
            AccountSource::Hardirq { .. } => "irq",
            AccountSource::Softirq { .. } => "softirq",
            AccountSource::Nmi => "nmi",
        };
        match parts.iter_mut().find(|(c, _)| c == class) {
            Some(part) => part.1 += micros(*ns),
            None => parts.push((class.to_owned(), micros(*ns))),
        }
    }
    if by_source.values().sum::<u64>() != total_ns {
        return Bar::single(label, "interrupt", micros(total_ns));
    }
    Bar { label, parts }
}

/// The class a bottom half's delay cause is coloured by.
fn bh_class(cause: &DelayCause) -> &'static str {
    match cause {
        DelayCause::Undelayed => "undelayed",
        DelayCause::Irq { .. } | DelayCause::RaisedIn { .. } => "irq",
        DelayCause::Nmi => "nmi",
        DelayCause::SoftirqFirst(_) => "softirq",
        DelayCause::Ksoftirqd | DelayCause::Thread(_) | DelayCause::Busy(_) => "thread",
        DelayCause::Idle => "idle",
        DelayCause::WorkerWakeup => "scheduler",
        DelayCause::WorkFirst(_) | DelayCause::HeldBack => "work",
        DelayCause::Untraced => "untraced",
        DelayCause::Other => "other",
    }
}

/// The class a wakeup's cause is coloured by.
fn wakeup_class(cause: &WakeupCause) -> &'static str {
    match cause {
        WakeupCause::IrqDelay => "hw",
        WakeupCause::IdleExit => "idle",
        WakeupCause::Origin { .. } | WakeupCause::Irq { .. } => "irq",
        // the handler that woke the task is the handler component, in its colour
        WakeupCause::Handler(_) => Component::Handler.name(),
        WakeupCause::Timer(_) => "timer",
        WakeupCause::Nmi => "nmi",
        WakeupCause::Softirq(_) => "softirq",
        WakeupCause::Interposed(_) | WakeupCause::Thread(_) | WakeupCause::Blocking(_) => "thread",
        WakeupCause::Scheduler => "scheduler",
        WakeupCause::Return => "return",
        WakeupCause::Untraced => "untraced",
        WakeupCause::Other => "other",
    }
}

/// The parts of a wakeup's latency (all CPUs together): histogram, CDF and exceedance
/// with a line per component, each in its colour.
fn wakeup_components(section: &mut Section, stats: &WakeupStats) {
    let mut series: Vec<Series<'_>> = Vec::new();
    for component in Component::ALL {
        if component == Component::Total {
            continue;
        }
        let mut histograms = stats
            .cpus
            .values()
            .filter_map(|cpu| Some(&cpu.series(component)?.histogram));
        let Some(first) = histograms.next() else {
            continue;
        };
        let mut merged = first.clone();
        histograms.for_each(|h| merged.merge(h));
        series.push(Series {
            name: format!("{component} ({})", component.describe()),
            class: Some(component.name()),
            histogram: Cow::Owned(merged),
        });
    }
    if series.is_empty() {
        return;
    }
    section.h3("Latency components (all CPUs)");
    distribution_plots(section, "latency component", series);
}

/// A sample's latency cut at its checkpoints into consecutive parts that add up to its
/// total, as (component, ns): timer mode irq (expiry to handler), handler (to the
/// wakeup), sched (to the switch-in), return (to user space); task mode wakeup (the
/// interrupt to the wakeup) and sched.
pub fn wakeup_parts(sample: &WakeupSample) -> Vec<(Component, u64)> {
    // where each part starts; it ends where the next one starts, the last at the end
    let mut starts = match sample.timer {
        Some(timer) => vec![
            (Component::Irq, timer.expected_ns),
            (Component::Handler, timer.handler_ns),
        ],
        None => vec![(Component::Wakeup, sample.origin_ns)],
    };
    starts.push((Component::Sched, sample.wakeup_ns));
    if sample.user_ns.is_some() {
        starts.push((Component::Return, sample.switch_in_ns));
    }
    let ends = starts.iter().skip(1).map(|s| s.1).chain([sample.end_ns()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&(component, start), end)| (component, end.saturating_sub(start)))
        .collect()
}

/// The worst samples, a bar each, stacked by the parts of their latency. Bars are
/// labelled by what tells them apart, first: rank, when (CLOCK_MONOTONIC, as in the
/// recording) and CPU, then the task and the interrupt only where those differ; what
/// all share is said once, in the title.
fn worst_wakeups(section: &mut Section, stats: &WakeupStats, names: &Names) {
    let Some(first) = stats.worst.first() else {
        return;
    };
    section.h3("Worst samples");
    section.note(
        "Each bar one sample, cut at its checkpoints: irq the timer's expiry to its handler, handler \
         to the wakeup (the rest of the handler overlaps sched), sched to the switch-in, return to \
         user space; task mode: wakeup the interrupt to the wakeup. The parts add up to the total. \
         Each is labelled with its start, s of CLOCK_MONOTONIC as in the recording.",
    );
    let comm = |sample: &WakeupSample| sample.comm.to_string();
    let origin = |sample: &WakeupSample| sample.origin.label(&names.irqs);
    let shared = |field: &dyn Fn(&WakeupSample) -> String| {
        let value = field(first);
        stats
            .worst
            .iter()
            .all(|s| field(s) == value)
            .then_some(value)
    };
    let (shared_comm, shared_origin) = (shared(&comm), shared(&origin));
    let mut title = format!("The {} worst samples", stats.worst.len());
    if let Some(comm) = &shared_comm {
        title += &format!(" of {comm}");
    }
    if let Some(origin) = &shared_origin {
        title += &format!(", woken from {origin}");
    }
    let bars = stats
        .worst
        .iter()
        .enumerate()
        .map(|(rank, sample)| {
            let mut label = format!(
                "{}. {} s CPU {}",
                rank + 1,
                super::noise::seconds(sample.start_ns()),
                sample.cpu
            );
            if shared_comm.is_none() {
                label += &format!(" {}", comm(sample));
            }
            if shared_origin.is_none() {
                label += &format!(" from {}", origin(sample));
            }
            Bar {
                label,
                parts: wakeup_parts(sample)
                    .into_iter()
                    .map(|(component, ns)| (component.name().to_owned(), micros(ns)))
                    .collect(),
            }
        })
        .collect();
    section.bars(&BarChart {
        kind: Kind::Worst,
        title,
        value_label: "latency (µs)".into(),
        bars,
    });
}

/// Where each point of a timeline lies on the run, s: (start, end) of its runtime
/// windows end to end, so a point's length is the time it covers.
fn timeline_spans(points: &[TimelinePoint]) -> Vec<(f64, f64)> {
    let mut at_ns = 0;
    points
        .iter()
        .map(|p| {
            let start = at_ns;
            at_ns += p.runtime_ns;
            (start as f64 / 1e9, at_ns as f64 / 1e9)
        })
        .collect()
}

/// A timeline as steps: each point's `value` held over its span.
fn timeline_steps(points: &[TimelinePoint], value: fn(&TimelinePoint) -> f64) -> Vec<(f64, f64)> {
    timeline_spans(points)
        .into_iter()
        .zip(points)
        .flat_map(|((start, end), p)| [(start, value(p)), (end, value(p))])
        .collect()
}

/// The share of a point's runtime its CPU was free of noise, %: the same whether the
/// point covers a whole period or the piece the end of the run left.
pub fn available_percent(point: &TimelinePoint) -> f64 {
    if point.runtime_ns == 0 {
        return 100.0;
    }
    100.0 * (1.0 - point.noise_ns as f64 / point.runtime_ns as f64).max(0.0)
}

/// A lower bound for a % axis that shows the dips of `lowest`: 0, or close under it
/// when all is near 100.
fn percent_floor(lowest: f64) -> f64 {
    let missing = (100.0 - lowest).max(1e-3);
    (100.0 - 2.0 * 10f64.powf(missing.log10().ceil())).max(0.0)
}

/// The share of the CPU available per period and the longest sample per period, a
/// line per CPU over the run's seconds; a last period cut short by the end of the run
/// is as short on the time axis, and said.
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
            "a long run: each step is several periods (their share available, their longest sample)",
        );
    }
    for (cpu, points) in &timelines {
        if let Some(cut) = partial_last(points) {
            section.note(&format!(
                "CPU {cpu}: the last period ran {:.2} s of {:.2} s (the run ended): its step is as short, and faded",
                cut.0 / 1e9,
                cut.1 / 1e9
            ));
        }
    }
    let per_cpu = |value: fn(&TimelinePoint) -> f64| -> Vec<Line> {
        timelines
            .iter()
            .map(|(cpu, points)| timeline_line(*cpu, points, value))
            .collect()
    };
    let seconds = || Axis::new("run time (s, runtime windows end to end)", Scale::Linear);
    let available = farthest(per_cpu(available_percent), |l| -min_y(l), section);
    let lowest = available.iter().map(min_y).fold(100.0, f64::min);
    section.chart(&XyChart {
        kind: Kind::Timeline,
        title: "CPU available to the workload per period".into(),
        x: seconds(),
        y: Axis::new("available (%)", Scale::Linear).with_bounds(percent_floor(lowest)..100.0),
        lines: available,
    });
    let longest = farthest(per_cpu(|p| micros(p.max_single_ns)), max_y, section);
    section.chart(&XyChart {
        kind: Kind::Timeline,
        title: "Longest noise sample per period".into(),
        x: seconds(),
        y: Axis::new("max single (µs)", Scale::Linear),
        lines: longest,
    });
}

/// A CPU's timeline of `value` as steps over the run's seconds, the step of a last
/// period cut short by the end of the run (and the rise or fall to it) faded.
pub fn timeline_line(cpu: u32, points: &[TimelinePoint], value: fn(&TimelinePoint) -> f64) -> Line {
    let steps = timeline_steps(points, value);
    let faded_from = partial_last(points).map(|_| steps.len().saturating_sub(3));
    Line {
        faded_from,
        ..Line::new(format!("CPU {cpu}"), steps)
    }
}

/// (runtime, full runtime) of a CPU's last point when it is shorter than the others'
/// (the run ended in it), in ns.
fn partial_last(points: &[TimelinePoint]) -> Option<(f64, f64)> {
    let (last, before) = points.split_last()?;
    let full = before
        .iter()
        .map(|p| p.runtime_ns as f64 / p.periods as f64)
        .fold(0.0, f64::max);
    let runtime = last.runtime_ns as f64;
    (runtime < 0.95 * full * last.periods as f64).then_some((runtime, full * last.periods as f64))
}

fn min_y(line: &Line) -> f64 {
    line.points
        .iter()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
pub(super) mod tests;
