//! The sections built from synthetic analyses: the plots each one must have, unique ids
//! across sections, escaping, and the data behind the lines.

use irqlens_model::workload::NamedThread;
use std::collections::{BTreeMap, HashMap};

use super::*;
use crate::plot;
use irqlens_analyze::account::{ACCOUNTS, Ledger, Source as AccountSource, ThreadAccount};
use irqlens_analyze::bh::{Delay, DelayCause, Mechanism, Sample as BhSample, Source as BhSource};
use irqlens_model::account::ThreadInfo;
use irqlens_model::bh::{MatchCounts, Selection, StatsConfig as BhConfig};
use irqlens_model::kernel::{Comm, KernelSymbols};
use irqlens_model::noise::{AnalysisConfig, NoiseClass, PeriodReport, Record, Sample};
use irqlens_model::run::RunCommon;
use irqlens_model::sim::PeriodicResult;
use irqlens_model::stimulus::LoadScenario;
use irqlens_model::trial::{Design, DesignSummary, TrialPoint};
use irqlens_model::wakeup::{Report, StatsConfig as WakeupConfig, TrackCounts};
use irqlens_model::workload::{CgroupId, CgroupNames, WorkloadBy};
use irqlens_test_support::svg::{self, bar_labels, legend_fills};

/// An IRQ line name that would break the page if it went in unescaped.
const EVIL: &str = "<script>alert('x')</script>";

fn irq_names() -> HashMap<u32, String> {
    HashMap::from([(11, EVIL.to_string())])
}

pub(crate) fn names() -> Names {
    Names {
        symbols: KernelSymbols::default(),
        irqs: irq_names(),
        ..Names::default()
    }
}

/// Two CPUs over three periods; CPU 1's samples each hold one IRQ 11 record.
fn noise_analysis() -> NoiseAnalysis {
    let config = AnalysisConfig {
        bucket_ns: 1_000,
        entries: 100,
        keep_recent: 0,
    };
    let mut analysis = NoiseAnalysis::new(config, [0, 1]);
    for period in 0..3u64 {
        for cpu in [0, 1] {
            let seq = period + 1;
            let duration_ns = 6_000 + 10_000 * period + 1_000 * cpu as u64;
            if cpu == 1 {
                analysis.add_records([Record {
                    cpu,
                    class: NoiseClass::Irq,
                    source: 0,
                    id: 11,
                    comm: Comm::default(),
                    start_ns: seq * 1_000,
                    duration_ns: duration_ns - 500,
                    seq,
                    cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
                }]);
            }
            let seq_after = if cpu == 1 { seq } else { 0 };
            analysis.add_period(&PeriodReport {
                cpu,
                runtime_ns: 1_000_000,
                noise_ns: duration_ns,
                max_single_ns: duration_ns,
                samples: vec![Sample {
                    cpu,
                    start_ns: seq * 1_000,
                    duration_ns,
                    seq_before: seq_after.saturating_sub(1),
                    seq_after,
                }],
                last_seq: seq_after,
                ..Default::default()
            });
        }
    }
    analysis
}

pub(crate) fn noise_info() -> NoiseRunInfo {
    NoiseRunInfo {
        common: RunCommon {
            elapsed_ns: 3_000_000_000,
            programs: 24,
            skipped_tracepoints: vec![],
            events: 3,
            lost_events: 0,
            lost_by_cpu: Default::default(),
            interrupted: false,
        },
        clock: "tsc".into(),
        collector_cpus: None,
    }
}

pub(crate) fn bh_stats() -> BhStats {
    let mut stats = BhStats::new(BhConfig {
        bucket_ns: 1_000,
        entries: 64,
        selection: Selection::All,
        worst: 2,
    });
    for (index, latency_us) in [2u64, 3, 3, 40].into_iter().enumerate() {
        stats.add(BhSample {
            mechanism: Mechanism::Softirq,
            source: BhSource::Vector(1),
            request_cpu: 0,
            cpu: 0,
            request_ns: index as u64 * 100_000,
            latency_ns: latency_us * 1_000,
            runtime_ns: 1_000,
            requester: 0,
            executor: 0,
            woke_watched: false,
            woke: Default::default(),
            delay: Delay {
                raised_in_ns: 0,
                causes: vec![DelayCause::Thread(NamedThread::named("<hog>"))],
                ..Default::default()
            },
        });
    }
    stats
}

pub(crate) fn bh_info() -> BhRunInfo {
    BhRunInfo {
        common: RunCommon {
            elapsed_ns: 1_000_000_000,
            programs: 30,
            skipped_tracepoints: vec!["irq:tasklet_entry".into()],
            events: 10,
            lost_events: 0,
            lost_by_cpu: Default::default(),
            interrupted: true,
        },
        matching: MatchCounts::default(),
        pending_softirqs: 0,
        pending_works: 0,
        kernel_softirq_runs: BTreeMap::new(),
        load: LoadScenario::Zero,
        load_tasks: 0,
        trigger: None,
        not_observable: Vec::new(),
    }
}

/// The `<svg class="plot" data-plot=KIND ...>` elements of a page.
fn plots<'a>(html: &'a str, kind: &str) -> Vec<&'a str> {
    let opening = format!("<svg class=\"plot\" data-plot=\"{kind}\"");
    html.match_indices(&opening)
        .map(|(at, _)| {
            let end = html[at..].find("</svg>").expect("a closed svg") + at;
            &html[at..end]
        })
        .collect()
}

pub(crate) fn render(page: &Page) -> String {
    let mut out = Vec::new();
    page.write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn ids(html: &str) -> Vec<&str> {
    html.match_indices(" id=\"")
        .map(|(at, found)| {
            let rest = &html[at + found.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

/// Where log-spaced bucket of `value_ns` starts and ends, µs.
fn bucket_of(value_ns: u64) -> (f64, f64) {
    let range = log_bucket_range(irqlens_analyze::histogram::log_bucket(value_ns));
    (range.start / 1e3, range.end / 1e3)
}

#[test]
fn histogram_steps_follow_the_log_buckets_from_the_first_used_to_the_last() {
    // all in the first µs of a linear histogram: three log-spaced buckets
    let mut h = Histogram::new(1_000, 10);
    for ns in [400, 480, 490] {
        h.add(ns);
    }
    let line = histogram_steps("CPU 0".into(), &h);
    let (first, second) = (bucket_of(400), bucket_of(480));
    assert_eq!(first.1, second.0, "two buckets side by side");
    assert_eq!(
        line.points,
        vec![
            (first.0, 0.0),
            (first.0, 1.0),
            (first.1, 1.0),
            (second.0, 2.0),
            (second.1, 2.0),
            (second.1, 0.0),
        ]
    );
}

#[test]
fn histogram_steps_reach_the_largest_sample_past_the_linear_buckets() {
    let mut h = Histogram::new(1_000, 4);
    for ns in [1_500, 3_000_000] {
        h.add(ns);
    }
    assert_eq!(h.overflow, 1);
    let line = histogram_steps("CPU 0".into(), &h);
    let last = bucket_of(3_000_000);
    // the sample of 3 ms is a step of 1 in its bucket, the buckets between are empty
    let n = line.points.len();
    assert_eq!(
        line.points[n - 3..],
        [(last.0, 1.0), (last.1, 1.0), (last.1, 0.0)]
    );
    assert!(last.0 <= 3_000.0 && 3_000.0 < last.1);
    let counted: f64 = line.points[1..n - 1].iter().step_by(2).map(|p| p.1).sum();
    assert_eq!(counted, 2.0);
}

#[test]
fn cdf_reaches_one_at_the_maximum_even_past_the_linear_buckets() {
    let mut h = Histogram::new(1_000, 4);
    for ns in [1_600, 1_700, 3_200, 9_000] {
        h.add(ns);
    }
    let line = cdf_line("CPU 0".into(), &h);
    // from the smallest value, 1.6 µs, to the end of each sample's bucket, the last
    // at the largest
    let expected = vec![
        (1.6, 0.0),
        (bucket_of(1_700).1, 0.5),
        (bucket_of(3_200).1, 0.75),
        (9.0, 1.0),
    ];
    assert_eq!(bucket_of(1_600), bucket_of(1_700));
    assert_eq!(line.points, expected);
}

#[test]
fn exceedance_is_one_minus_the_cdf_down_to_the_largest_sample() {
    let mut h = Histogram::new(1_000, 4);
    for ns in [1_600, 1_700, 3_200, 9_000] {
        h.add(ns);
    }
    let line = exceedance_line(&cdf_line("CPU 0".into(), &h), h.count);
    // past the largest sample nothing is above: it is drawn at its own 1/4
    assert_eq!(
        line.points,
        vec![
            (1.6, 1.0),
            (bucket_of(1_700).1, 0.5),
            (bucket_of(3_200).1, 0.25),
            (9.0, 0.25)
        ]
    );
    assert_eq!(line.name, "CPU 0");
}

#[test]
fn exceedance_plot_has_a_log_axis_of_fractions() {
    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &bh_stats(), &bh_info(), &names());
    let html = render(&page);
    let exceedance = plots(&html, "exceedance");
    assert_eq!(exceedance.len(), 1);
    // 4 samples: down to 1/4, on decades 0.1 and 1
    for tick in ["0.1", "1"] {
        assert!(
            exceedance[0].contains(&format!(">\n{tick}\n</text>")),
            "no {tick} tick"
        );
    }
    assert!(exceedance[0].contains("fraction of samples above"));
    assert!(exceedance[0].contains("softirq"));
}

/// One CPU over three periods of 1 s of runtime, the last cut to 0.2 s by the end of
/// the run: 100 ms, 200 ms and 10 ms of noise.
fn partial_run() -> NoiseAnalysis {
    let config = AnalysisConfig {
        bucket_ns: 1_000,
        entries: 100,
        keep_recent: 0,
    };
    let mut analysis = NoiseAnalysis::new(config, [0]);
    for (runtime_ns, noise_ns) in [
        (1_000_000_000, 100_000_000),
        (1_000_000_000, 200_000_000),
        (200_000_000, 10_000_000),
    ] {
        analysis.add_period(&PeriodReport {
            cpu: 0,
            runtime_ns,
            noise_ns,
            max_single_ns: noise_ns,
            samples: vec![Sample {
                cpu: 0,
                start_ns: 0,
                duration_ns: noise_ns,
                seq_before: 0,
                seq_after: 0,
            }],
            ..Default::default()
        });
    }
    analysis
}

#[test]
fn timeline_is_the_share_available_over_run_seconds() {
    let analysis = partial_run();
    let (cpu, points) = analysis.timelines().next().unwrap();
    let line = timeline_line(cpu, points, available_percent);
    // 90 %, 80 %, then 95 % over the 0.2 s the last period ran: a short step
    let expected = [
        (0.0, 90.0),
        (1.0, 90.0),
        (1.0, 80.0),
        (2.0, 80.0),
        (2.0, 95.0),
        (2.2, 95.0),
    ];
    assert_eq!(line.points.len(), expected.len());
    for ((x, y), (ex, ey)) in line.points.iter().zip(expected) {
        assert!(
            (x - ex).abs() < 1e-9 && (y - ey).abs() < 1e-9,
            "{:?}",
            line.points
        );
    }
    // the cut period and the rise to it are faded: no improvement to read there
    assert_eq!(line.faded_from, Some(3));

    let mut page = Page::new("noise", "6.18.0-test");
    page.noise("noise", &analysis, &noise_info(), &names(), None);
    let html = render(&page);
    assert!(
        html.contains("the last period ran 0.20 s of 1.00 s"),
        "{html}"
    );
    let timelines = plots(&html, "timeline");
    assert!(timelines[0].contains("available (%)"));
    // the CPU's line in two parts: as measured, and faded
    let drawn: Vec<&str> = timelines[0]
        .lines()
        .filter(|l| l.contains("stroke-width=\"2\"") && l.contains("points="))
        .collect();
    assert!(
        drawn.iter().any(|l| l.contains("opacity=\"0.35\"")),
        "{drawn:?}"
    );
    assert!(
        drawn.iter().any(|l| l.contains("opacity=\"1\"")),
        "{drawn:?}"
    );
}

#[test]
fn whole_periods_are_not_faded() {
    let analysis = noise_analysis();
    let (cpu, points) = analysis.timelines().next().unwrap();
    assert_eq!(
        timeline_line(cpu, points, available_percent).faded_from,
        None
    );
}

#[test]
fn noise_section_has_every_plot_and_the_causes() {
    let mut page = Page::new("run <1>", "6.18.0-test");
    page.noise("noise", &noise_analysis(), &noise_info(), &names(), None);
    let html = render(&page);

    let histograms = plots(&html, "histogram");
    assert_eq!(histograms.len(), 1);
    assert!(histograms[0].contains("CPU 0") && histograms[0].contains("CPU 1"));
    assert!(histograms[0].contains("<polyline"));
    assert_eq!(plots(&html, "cdf").len(), 1);
    assert_eq!(plots(&html, "exceedance").len(), 1);
    let causes = plots(&html, "causes");
    assert_eq!(causes.len(), 1);
    // IRQ 11 and the 500 ns around it on CPU 1, hardware noise on CPU 0: all bars
    assert!(causes[0].contains("irq 11 &lt;script&gt;"), "{}", causes[0]);
    assert!(causes[0].contains("irq entry/exit"));
    assert!(causes[0].contains("hw noise"));
    assert_eq!(
        causes[0].matches("<rect").count(),
        7,
        "background, three bars and the legend's three classes"
    );
    for class in ["irq", "entry_exit", "hw"] {
        assert!(
            causes[0].contains(&format!(">\n{class}\n</text>")),
            "no {class} legend"
        );
    }
    let timelines = plots(&html, "timeline");
    assert_eq!(timelines.len(), 2);
    assert!(timelines.iter().all(|svg| svg.contains("<polyline")));
    // the per-CPU table: CPU 1's noise over its 3 periods is 7+17+27 µs
    assert!(html.contains("<td class=\"n\">51.0</td>"), "{html}");
    // where it went, to the ns: 49.5 µs of IRQ 11 and 3 x 500 ns of entry/exit
    let breakdown = [
        "1", "51.000", "49.500", "1.500", "0.000", "0.000", "0.000", "0.000",
    ]
    .map(|cell| format!("<td class=\"n\">{cell}</td>"))
    .concat();
    assert!(html.contains(&format!("<tr>{breakdown}</tr>")), "{html}");
    assert!(html.contains("<title>run &lt;1&gt;</title>"));
    assert!(!html.contains(EVIL), "unescaped text in the page");
}

#[test]
fn sections_share_a_page_with_unique_ids() {
    let mut page = Page::new("two recordings", "6.18.0-test");
    page.noise("A.rec", &noise_analysis(), &noise_info(), &names(), None);
    page.noise("B.rec", &noise_analysis(), &noise_info(), &names(), None);
    page.bh("C.rec", &bh_stats(), &bh_info(), &names());
    let html = render(&page);
    let ids = ids(&html);
    let unique: std::collections::HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "{ids:?}");
    assert!(ids.contains(&"s1-histogram-1") && ids.contains(&"s2-histogram-1"));
    assert!(ids.iter().any(|id| id.starts_with("s3-causes")));
    assert!(html.contains("<a href=\"#s3\">C.rec</a>"));
    for reference in ["src=\"http", "href=\"http", "url("] {
        assert!(
            !html.contains(reference),
            "nothing may be fetched: {reference}"
        );
    }
    assert!(!html.contains("<script"));
}

#[test]
fn bh_section_plots_each_mechanism_and_its_delay_causes() {
    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &bh_stats(), &bh_info(), &names());
    let html = render(&page);
    let histogram = plots(&html, "histogram");
    assert_eq!(histogram.len(), 1);
    assert!(histogram[0].contains("softirq"));
    assert_eq!(plots(&html, "cdf").len(), 1);
    let causes = plots(&html, "causes");
    assert_eq!(causes.len(), 1);
    assert!(causes[0].contains("thread &lt;hog&gt; ran first"));
    assert!(html.contains("irq:tasklet_entry"));
    assert!(html.contains("interrupted"));
    assert!(html.contains("<td>TIMER</td>"), "{html}");
}

/// Untraced wakeups of (CPU, total µs), counted in `entries` buckets of 1 µs.
fn untraced_wakeups(entries: usize, totals: &[(u32, u64)]) -> WakeupStats {
    let mut stats = WakeupStats::new(WakeupConfig {
        bucket_ns: 1_000,
        entries,
        ..Default::default()
    });
    for &(cpu, total_us) in totals {
        stats.add_total_only(&Report {
            tid: 100 + cpu,
            cpu,
            expected_ns: 1_000_000,
            user_ns: 1_000_000 + total_us * 1_000,
        });
    }
    stats
}

#[test]
fn wakeup_section_plots_total_latency_per_cpu() {
    let stats = untraced_wakeups(2_000, &[(0, 5), (0, 7), (1, 9), (1, 1_500)]);
    let info = wakeup_info(false);
    let mut page = Page::new("wakeup", "6.18.0-test");
    page.wakeup("wakeup", &stats, &info, &names());
    let html = render(&page);
    assert_eq!(plots(&html, "histogram").len(), 1);
    let cdf = plots(&html, "cdf");
    assert_eq!(cdf.len(), 1);
    assert!(cdf[0].contains("CPU 1"));
    // 5 µs to 1500 µs: a log axis with decade ticks
    assert!(cdf[0].contains(">\n1000\n</text>"), "{}", cdf[0]);
    // untraced: nothing to say where the latency went, and no empty chart
    assert!(plots(&html, "causes").is_empty());
    assert!(html.contains("none"));
}

const TIMER: AccountSource = AccountSource::Hardirq { source: 1, id: 236 };
const NET_RX: AccountSource = AccountSource::Softirq { vector: 3 };

/// spinner (pid 10) charged 300 µs of the timer's hardirq and 500 µs of NET_RX, which
/// served <recv> (pid 20).
fn account_ledger() -> Ledger {
    let mut ledger = Ledger::default();
    ledger.threads.insert(
        10,
        ThreadAccount {
            charged: BTreeMap::from([(TIMER, 300_000), (NET_RX, 500_000)]),
            ..Default::default()
        },
    );
    ledger.threads.insert(
        20,
        ThreadAccount {
            served: BTreeMap::from([(NET_RX, 500_000)]),
            units: 5,
            ..Default::default()
        },
    );
    ledger
}

/// The page of a one-second account run of `ledger`'s spinner (in a cgroup of no known
/// layout) and <recv> (in a unit), with a table per workload `by`.
fn account_page(ledger: Ledger, by: Option<WorkloadBy>) -> String {
    let thread = |tgid: u32, comm: &str| ThreadInfo {
        tgid,
        comm: comm.into(),
        runtime_ns: Some(10_000_000),
        cgroup: Some(CgroupId(tgid.into())),
    };
    let mut cgroups = CgroupNames::default();
    cgroups.insert(CgroupId(10), "/irqlens-test-noisy".into());
    cgroups.insert(CgroupId(20), "/system.slice/recv.service".into());
    let whole = Period {
        start_ns: 0,
        elapsed_ns: 1_000_000_000,
        ledger,
        compensator: None,
        threads: HashMap::from([(10, thread(10, "spinner")), (20, thread(20, "<recv>"))]),
        lost_events: 0,
        cgroups,
    };
    let info = AccountRunInfo {
        common: RunCommon {
            elapsed_ns: 1_000_000_000,
            events: 100,
            programs: 12,
            ..Default::default()
        },
        hz: None,
    };
    let names = irq_names();
    let view = View {
        by_thread: false,
        top: 10,
        irq_names: &names,
        by,
        within: &[],
        sockets: true,
    };
    let mut page = Page::new("account", "6.18.0-test");
    page.account("account", &whole, &info, &view);
    render(&page)
}

/// The `fill="#RRGGBB"` of `class`.
fn fill(class: &str) -> String {
    let c = plot::class_color(class);
    format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)
}

#[test]
fn account_section_has_the_folded_row_and_says_what_it_is() {
    let ledger = super::account::with_folded(account_ledger(), ACCOUNTS as u32);
    let folded = ledger.folded.threads();
    let html = account_page(ledger, Some(WorkloadBy::Cgroup));
    assert!(html.contains("<td>[folded]</td>"), "{html}");
    assert!(html.contains(&format!("[folded]: {folded} thread accounts folded")));
}

#[test]
fn account_section_has_a_workload_table_only_when_asked() {
    assert!(!account_page(account_ledger(), None).contains("Interrupt time per unit"));
    let html = account_page(account_ledger(), Some(WorkloadBy::Unit));
    let at = html
        .find("Interrupt time per unit (µs)")
        .expect("the workload table");
    let table = &html[at..];
    // the spinner's cgroup is no unit: its path; the receiver's unit served the 500 µs
    // the spinner's cgroup was charged
    let noisy = table.find("/irqlens-test-noisy").expect("the noisy cgroup");
    let unit = table.find("recv.service").expect("the receiver's unit");
    assert!(noisy < unit, "the largest first");
    let row = &table[unit..table[unit..].find("</tr>").unwrap() + unit];
    assert!(
        row.contains("<td>unit</td>") && row.contains(">500.0</td>"),
        "{row}"
    );
}

#[test]
fn account_section_ranks_victims_and_causers() {
    let html = account_page(account_ledger(), None);
    let bars = plots(&html, "causes");
    assert_eq!(bars.len(), 2);
    assert!(bars[0].contains("Top victims") && bars[0].contains("spinner:10"));
    assert!(bars[1].contains("Top causers") && bars[1].contains("&lt;recv&gt;:20"));
    assert!(!html.contains("<recv>"));
    assert!(html.contains("<td class=\"n\">800.0</td>"), "{html}");
    // the victim's 800 µs stacked: 300 of the timer's hardirq, 500 of NET_RX
    for class in ["irq", "softirq"] {
        assert!(
            bars[0].contains(&format!(">\n{class}\n</text>")),
            "no {class} legend"
        );
        assert!(bars[0].contains(&fill(class)), "no {class} part");
    }
    assert!(bars[0].contains(">\n800\n</text>"));
    assert!(bars[1].contains(">\n500\n</text>") && bars[1].contains(&fill("softirq")));
    assert!(!bars[1].contains(&fill("irq")));
    // nothing was orphan or idle: the rows say 0, no bar stands for nothing
    assert!(html.contains("<td>[orphan]</td>") && html.contains("<td>[idle]</td>"));
    assert!(!bars[0].contains("[idle]") && !bars[1].contains("[orphan]"));
}

#[test]
fn account_section_shows_orphan_and_idle_time_as_the_text_table_does() {
    let mut ledger = account_ledger();
    // 2.4 ms served no process, the most of all; 600 µs hit an idle CPU
    ledger.orphan = BTreeMap::from([(TIMER, 2_000_000), (NET_RX, 400_000)]);
    ledger.threads.insert(
        irqlens_analyze::account::IDLE,
        ThreadAccount {
            charged: BTreeMap::from([(TIMER, 600_000)]),
            ..Default::default()
        },
    );
    let html = account_page(ledger, None);
    // the text's rows: [orphan] in SERVED, [idle] in CHARGED, the rest blank
    let row = |cells: [&str; 5]| {
        let cells: String = cells
            .iter()
            .map(|cell| match *cell {
                "[orphan]" | "[idle]" => format!("<td>{cell}</td>"),
                _ => format!("<td class=\"n\">{cell}</td>"),
            })
            .collect();
        format!("<tr>{cells}{}</tr>", "<td></td>".repeat(3))
    };
    assert!(
        html.contains(&row(["-", "[orphan]", "-", "-", "2400.0"])),
        "{html}"
    );
    assert!(
        html.contains(&row(["-", "[idle]", "-", "600.0", "-"])),
        "{html}"
    );
    let bars = plots(&html, "causes");
    // ranked with the processes: [idle] a victim after spinner's 800 µs, [orphan] the
    // first causer, before <recv>'s 500 µs
    assert_eq!(bar_labels(bars[0]), ["spinner:10", "[idle]"]);
    assert_eq!(bar_labels(bars[1]), ["[orphan]", "&lt;recv&gt;:20"]);
    assert!(bars[0].contains(">\n600\n</text>"));
    assert!(bars[1].contains(">\n2400\n</text>"));
    // stacked by class as the others: the orphan's hardirq and softirq time
    let (top, _) = svg::plot_area(bars[1]);
    let parts: Vec<String> = svg::rects(bars[1])
        .into_iter()
        .filter(|r| r.1 >= top)
        .map(|r| format!("fill=\"{}\"", r.4))
        .collect();
    assert_eq!(parts, [fill("irq"), fill("softirq"), fill("softirq")]);
}

/// A timer-mode wakeup on `cpu`: the timer expired at 1 ms, its handler ran `irq` µs
/// later and woke the task `handler` µs into it, which was switched in `sched` µs later
/// and back in user space `back` µs after that.
pub(crate) fn timer_wakeup(
    cpu: u32,
    irq: u64,
    handler: u64,
    sched: u64,
    back: u64,
) -> WakeupSample {
    let expected_ns = 1_000_000;
    let handler_ns = expected_ns + irq * 1_000;
    let wakeup_ns = handler_ns + handler * 1_000;
    let switch_in_ns = wakeup_ns + sched * 1_000;
    WakeupSample {
        tid: 100 + cpu,
        comm: Comm::new("cyclic<test>"),
        cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        cpu,
        waker_cpu: cpu,
        origin: irqlens_analyze::wakeup::Origin::Irq { source: 0, id: 11 },
        origin_ns: handler_ns,
        timer: Some(irqlens_analyze::wakeup::TimerPart {
            hrtimer: 1,
            expected_ns,
            handler_ns,
            // the handler goes on after the wakeup
            handler_end_ns: Some(wakeup_ns + 500),
        }),
        wakeup_ns,
        switch_in_ns,
        user_ns: Some(switch_in_ns + back * 1_000),
        interposed: vec![],
        switches: 1,
        causes: vec![],
    }
}

#[test]
fn wakeup_parts_are_consecutive_and_add_up_to_the_total() {
    let sample = timer_wakeup(0, 30, 2, 60, 8);
    let parts = wakeup_parts(&sample);
    assert_eq!(
        parts,
        vec![
            (Component::Irq, 30_000),
            (Component::Handler, 2_000),
            (Component::Sched, 60_000),
            (Component::Return, 8_000),
        ]
    );
    let sum: u64 = parts.iter().map(|p| p.1).sum();
    assert_eq!(sum, sample.total_ns());
    // task mode: the interrupt to the wakeup, then the scheduler
    let task = WakeupSample {
        timer: None,
        user_ns: None,
        origin_ns: 500_000,
        ..sample
    };
    let parts = wakeup_parts(&task);
    assert_eq!(parts[0].0, Component::Wakeup);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), task.total_ns());
}

#[test]
fn wakeup_section_plots_each_component_and_the_worst_samples_stacked() {
    let mut stats = WakeupStats::new(WakeupConfig {
        bucket_ns: 1_000,
        entries: 2_000,
        worst: 2,
        ..Default::default()
    });
    for (cpu, irq, sched) in [(0, 3, 5), (0, 4, 7), (1, 30, 60), (1, 2, 900)] {
        stats.add(timer_wakeup(cpu, irq, 1, sched, 2));
    }
    let info = wakeup_info(true);
    let mut page = Page::new("wakeup", "6.18.0-test");
    page.wakeup("wakeup", &stats, &info, &names());
    let html = render(&page);
    // the total per CPU, then the components over all CPUs
    let histograms = plots(&html, "histogram");
    assert_eq!(histograms.len(), 2);
    for component in ["irq", "handler", "sched", "return"] {
        let legend = format!(">\n{component} (");
        assert!(histograms[1].contains(&legend), "no {component} line");
        assert!(plots(&html, "exceedance")[1].contains(&legend));
    }
    assert!(!histograms[1].contains(">\ntotal ("));
    // the sched line has the colour sched has in every chart
    let sched = plot::class_color("sched");
    let sched = format!("#{:02X}{:02X}{:02X}\"", sched.0, sched.1, sched.2);
    assert!(
        histograms[1].contains(&format!("stroke=\"{sched}")),
        "{}",
        histograms[1]
    );

    let worst = plots(&html, "worst");
    assert_eq!(worst.len(), 1);
    // the two worst, 2 + 1 + 900 + 2 and 30 + 1 + 60 + 2 µs, largest first
    assert_eq!(
        bar_labels(worst[0]),
        ["1. 0.001000000 s CPU 1", "2. 0.001000000 s CPU 1"]
    );
    assert!(worst[0].contains(">\n905\n</text>") && worst[0].contains(">\n93\n</text>"));
    assert!(worst[0].contains(&format!("fill=\"{sched}")));
    assert!(!html.contains("cyclic<test>"));
}

/// An undelayed NET_RX softirq of `latency_ns` on CPU 0.
fn net_rx(latency_ns: u64) -> BhSample {
    BhSample {
        mechanism: Mechanism::Softirq,
        source: BhSource::Vector(3),
        request_cpu: 0,
        cpu: 0,
        request_ns: 1_000_000,
        latency_ns,
        runtime_ns: 1_000,
        requester: 0,
        executor: 0,
        woke_watched: false,
        woke: Default::default(),
        delay: Delay::default(),
    }
}

#[test]
fn bh_section_has_a_cdf_and_exceedance_per_source_of_a_mechanism() {
    let mut stats = bh_stats();
    // a second source of softirq (NET_RX) beside TIMER's four samples
    for latency_us in [5, 80] {
        stats.add(net_rx(latency_us * 1_000));
    }
    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &bh_stats(), &bh_info(), &names());
    let one_source = render(&page);
    assert_eq!(
        plots(&one_source, "cdf").len(),
        1,
        "one source: the mechanism's line only"
    );
    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &stats, &bh_info(), &names());
    let html = render(&page);
    assert!(html.contains("Latency of softirq per source"));
    let (cdfs, exceedances) = (plots(&html, "cdf"), plots(&html, "exceedance"));
    assert_eq!((cdfs.len(), exceedances.len()), (2, 2));
    for plot in [cdfs[1], exceedances[1]] {
        assert!(
            plot.contains(">\nTIMER\n</text>") && plot.contains(">\nNET_RX\n</text>"),
            "{plot}"
        );
    }
}

/// A one-second wakeup run's information, traced or not.
pub(crate) fn wakeup_info(traced: bool) -> WakeupRunInfo {
    WakeupRunInfo {
        common: RunCommon {
            elapsed_ns: 1_000_000_000,
            ..Default::default()
        },
        traced,
        tracking: TrackCounts::default(),
        threads: vec![],
        missed_periods: 0,
        held: Default::default(),
    }
}

/// `sample` moved to start at `start_ns`, every checkpoint with it.
fn starting_at(sample: WakeupSample, start_ns: u64) -> WakeupSample {
    let shift = |ns: u64| ns - sample.start_ns() + start_ns;
    let timer = sample.timer.map(|t| irqlens_analyze::wakeup::TimerPart {
        expected_ns: shift(t.expected_ns),
        handler_ns: shift(t.handler_ns),
        handler_end_ns: t.handler_end_ns.map(shift),
        ..t
    });
    WakeupSample {
        origin_ns: shift(sample.origin_ns),
        wakeup_ns: shift(sample.wakeup_ns),
        switch_in_ns: shift(sample.switch_in_ns),
        user_ns: sample.user_ns.map(shift),
        timer,
        ..sample.clone()
    }
}

/// A traced wakeup run's section of `samples`, the three worst kept.
fn wakeup_page(samples: impl IntoIterator<Item = WakeupSample>) -> String {
    let mut stats = WakeupStats::new(WakeupConfig {
        bucket_ns: 1_000,
        entries: 2_000,
        worst: 3,
        ..Default::default()
    });
    for sample in samples {
        stats.add(sample);
    }
    let mut page = Page::new("wakeup", "6.18.0-test");
    page.wakeup("wakeup", &stats, &wakeup_info(true), &names());
    render(&page)
}

#[test]
fn worst_wakeups_are_told_apart_by_what_differs_and_the_rest_is_said_once() {
    // one task woken by one interrupt: two of the worst on CPU 0, one on CPU 1
    let html = wakeup_page([
        starting_at(timer_wakeup(0, 3, 1, 90, 2), 7_000_000_000),
        starting_at(timer_wakeup(0, 3, 1, 80, 2), 5_250_000_000),
        starting_at(timer_wakeup(1, 3, 1, 70, 2), 6_000_000_000),
        starting_at(timer_wakeup(1, 3, 1, 5, 2), 8_000_000_000),
    ]);
    let worst = plots(&html, "worst");
    let labels = bar_labels(worst[0]);
    assert_eq!(
        labels,
        [
            "1. 7.000000000 s CPU 0",
            "2. 5.250000000 s CPU 0",
            "3. 6.000000000 s CPU 1"
        ]
    );
    // what they share, once, in the title
    assert!(worst[0].contains(
        "<title>The 3 worst samples of cyclic&lt;test&gt;, woken from hardirq irq 11 &lt;script&gt;"
    ));
    // different tasks and interrupts: each label says its own, after what tells it apart
    let other = WakeupSample {
        comm: Comm::new("other"),
        origin: irqlens_analyze::wakeup::Origin::Softirq(3),
        ..starting_at(timer_wakeup(1, 3, 1, 95, 2), 9_000_000_000)
    };
    let html = wakeup_page([
        starting_at(timer_wakeup(0, 3, 1, 90, 2), 7_000_000_000),
        other,
    ]);
    let worst = plots(&html, "worst");
    // (cut to the bar chart's width: what differs most comes first)
    let label = &bar_labels(worst[0])[0];
    assert!(
        label.starts_with("1. 9.000000000 s CPU 1 other from softirq"),
        "{label}"
    );
    assert!(worst[0].contains("<title>The 2 worst samples</title>"));
}

#[test]
fn the_handler_has_one_colour_in_every_wakeup_chart_and_no_row_says_total_twice() {
    let handler_ns = 1_000;
    let with_causes = |sample: WakeupSample| WakeupSample {
        causes: vec![
            (WakeupCause::Handler(0xffff_1234), handler_ns),
            (WakeupCause::Timer(0xffff_5678), 500),
            (WakeupCause::Scheduler, sample.total_ns() - handler_ns - 500),
        ],
        ..sample
    };
    let html = wakeup_page([
        with_causes(timer_wakeup(0, 3, 1, 90, 2)),
        with_causes(timer_wakeup(1, 3, 1, 50, 2)),
    ]);
    let handler = plot::class_color("handler");
    let handler = format!("#{:02X}{:02X}{:02X}", handler.0, handler.1, handler.2);
    // the causes, the worst samples' parts and the components' lines alike
    for chart in [plots(&html, "causes")[0], plots(&html, "worst")[0]] {
        let legend = legend_fills(chart);
        assert!(
            legend.contains(&("handler".into(), handler.clone())),
            "{legend:?}"
        );
        // another hrtimer that ran first is a timer, not the handler
        assert!(
            legend
                .iter()
                .all(|(name, fill)| (name == "handler") == (*fill == handler))
        );
    }
    assert!(plots(&html, "histogram")[1].contains(&format!("stroke=\"{handler}\"")));
    assert!(!html.contains("total (total)"), "{html}");
    assert!(html.contains("<td>total</td>"));
}

/// A ladder of two designs over rates doubling from 20k to 320k/s: stock echoes up
/// to 100k/s, threaded-fifo up to 300k/s.
fn trial_ladder() -> TrialReport {
    let designs: [Design; 2] = ["stock", "threaded-fifo"].map(|d| d.parse().unwrap());
    let mut report = crate::trial::tests::report_of(designs[0]);
    let (point, summary) = (report.points[0].clone(), report.designs[0].clone());
    report.points = designs
        .iter()
        .zip([100e3, 300e3])
        .flat_map(|(&design, ceiling)| {
            [20_000u64, 40_000, 80_000, 160_000, 320_000].map(|rate| TrialPoint {
                design,
                offered_pps: rate,
                echoed_pps: (rate as f64).min(ceiling),
                ..point.clone()
            })
        })
        .collect();
    report.designs = designs
        .map(|design| DesignSummary {
            design,
            ..summary.clone()
        })
        .to_vec();
    report
}

#[test]
fn trial_ladder_is_log_with_markers_the_diagonal_and_the_legend_above() {
    let mut page = Page::new("trial", "6.18.0-test");
    page.trial("trial", &trial_ladder());
    let html = render(&page);
    let ladders = plots(&html, "ladder");
    assert_eq!(ladders.len(), 2);
    for chart in &ladders {
        // ticks at decades only, a decade as wide as the next: a log axis
        let (x_ticks, _) = svg::ticks(chart);
        let values: Vec<f64> = x_ticks.iter().map(|t| t.0).collect();
        assert_eq!(values, [1e4, 1e5, 1e6], "{chart}");
        let decade = x_ticks[1].1 - x_ticks[0].1;
        assert!((x_ticks[2].1 - x_ticks[1].1 - decade).abs() <= 1.0);
        assert_eq!(svg::circles(chart).len(), 10, "a marker per point");
        let (top, _) = svg::plot_area(chart);
        for text in svg::texts(chart) {
            if ["stock", "threaded-fifo"].contains(&text.text.as_str()) {
                assert!(text.y + 8.0 < top, "{text:?}: the plot from {top}");
            }
        }
    }
    // echoed against offered, both log: the grey diagonal is echoed = offered
    let (x_ticks, y_ticks) = svg::ticks(ladders[0]);
    let diagonal = svg::polylines(ladders[0])
        .into_iter()
        .find(|l| l.stroke == "#6E6E6E" && l.points.len() > 2)
        .expect("a reference line");
    for (px, py) in diagonal.points {
        let (offered, echoed) = (svg::log_value(&x_ticks, px), svg::log_value(&y_ticks, py));
        assert!(
            (echoed / offered - 1.0).abs() < 0.03,
            "{echoed} echoed at {offered}"
        );
    }
    assert!(ladders[0].contains(">\nechoed = offered\n</text>"));
    // the cyclic task's latency is no rate: no diagonal
    assert!(ladders[1].contains("cyclic max (µs)"));
    assert!(!ladders[1].contains("#6E6E6E"));
}

#[test]
fn sim_section_plots_each_designs_periodic_task() {
    let mut report = crate::sim::tests::report();
    let latency = |from_us: f64| LatencySummary {
        count: 4,
        cdf: (1..=4)
            .map(|i| [from_us + i as f64, i as f64 / 4.0])
            .collect(),
        ..Default::default()
    };
    let periodic = |response_us: f64| PeriodicResult {
        task: "control".into(),
        wakeup_latency: latency(2.0),
        response: latency(response_us),
    };
    report.designs[0].periodic = vec![periodic(100.0)];
    let mut stock = report.designs[0].clone();
    stock.design = "stock".parse().unwrap();
    stock.periodic = vec![periodic(110.0)];
    report.designs.push(stock);
    let mut page = Page::new("sim", "simulated");
    page.sim("sim", &report);
    let html = render(&page);
    let cdfs = plots(&html, "cdf");
    let titled = |title: &str| {
        cdfs.iter()
            .find(|chart| chart.contains(&format!("<title>periodic task control: {title}")))
            .unwrap_or_else(|| panic!("no {title} plot in {html}"))
    };
    for chart in [titled("release to completion"), titled("release to start")] {
        let lines = svg::polylines(chart);
        assert_eq!(lines.iter().filter(|l| l.points.len() == 4).count(), 2);
        assert!(chart.contains(">\nstock\n</text>"));
        assert!(chart.contains(">\nthreaded-fifo+ihm\n</text>"));
        assert!(chart.contains("latency (µs)"));
    }
    // 101 to 114 µs: the axis spans them, not 0 to them
    let (x_ticks, _) = svg::ticks(titled("release to completion"));
    assert!(x_ticks[0].0 >= 90.0, "{x_ticks:?}");
}

/// Where `line` first reaches `fraction`, between the points either side of it.
fn crossing(line: &Line, fraction: f64) -> f64 {
    let pair = line
        .points
        .windows(2)
        .find(|pair| pair[1].1 >= fraction)
        .expect("the line reaches the fraction");
    let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
    x0 + (x1 - x0) * (fraction - y0) / (y1 - y0)
}

#[test]
fn the_cdf_drawn_crosses_each_quantile_of_the_table_within_its_bucket() {
    // NET_RX-like latencies: most near 0.3 µs, a tail to 40 µs
    let mut latencies = irqlens_analyze::histogram::Distribution::new(1_000, 256);
    let mut state = 12_345u64;
    for _ in 0..2_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let uniform = (state >> 11) as f64 / (1u64 << 53) as f64;
        latencies.add((200.0 * (uniform * 5.3).exp()) as u64);
    }
    let line = cdf_line("NET_RX".into(), &latencies.histogram);
    for q in [0.05, 0.5, 0.95] {
        let exact = latencies.quantile_ns(q).unwrap() as f64 / 1e3;
        let drawn = crossing(&line, q);
        let (start, end) = bucket_of(latencies.quantile_ns(q).unwrap());
        let width = end - start;
        assert!(
            (drawn - exact).abs() <= width,
            "Q{q}: the table says {exact} µs, the CDF {drawn} µs"
        );
    }
}

#[test]
fn sub_microsecond_latencies_fill_several_buckets_of_the_histogram() {
    let mut stats = bh_stats();
    for latency_ns in [210, 260, 330, 410, 480, 520, 610, 790] {
        stats.add(net_rx(latency_ns));
    }
    let net_rx = &stats.mechanisms[&Mechanism::Softirq]
        .series
        .latency
        .histogram;
    let line = histogram_steps("softirq".into(), net_rx);
    let below_1us: Vec<f64> = line
        .points
        .iter()
        .filter(|p| p.0 < 1.0 && p.1 > 0.0)
        .map(|p| p.0)
        .collect();
    assert!(below_1us.len() >= 2 * 6, "{:?}", line.points);
    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &stats, &bh_info(), &names());
    let html = render(&page);
    // on a log axis that shows the decade below 1 µs
    let histogram = plots(&html, "histogram")[0];
    assert!(histogram.contains(">\n0.1\n</text>"), "{histogram}");
}

#[test]
fn samples_past_the_linear_buckets_are_in_the_histogram_and_need_no_footnote() {
    // rtla's default 256 buckets of 1 µs, and a sample of 3 ms
    let stats = untraced_wakeups(256, &[(0, 5), (0, 7), (1, 9), (1, 3_000)]);
    let mut page = Page::new("wakeup", "6.18.0-test");
    page.wakeup("wakeup", &stats, &wakeup_info(false), &names());
    let html = render(&page);
    assert!(!html.contains("beyond the last bucket"), "{html}");
    // the log axis runs to the decade above the 3 ms sample
    let histogram = plots(&html, "histogram")[0];
    assert!(histogram.contains(">\n10000\n</text>"), "{histogram}");
}

#[test]
fn a_page_of_one_section_headed_as_the_page_shows_its_title_once() {
    let mut page = Page::new("irqlens bh", "6.18.0-test");
    page.bh("irqlens bh", &bh_stats(), &bh_info(), &names());
    let html = render(&page);
    let body = &html[html.find("<body>").unwrap()..];
    assert_eq!(body.matches("irqlens bh").count(), 1, "{body}");
    // a recording's heading is not the page's title: it stays
    let mut page = Page::new("irqlens report", "6.18.0-test");
    page.bh("bh.jsonl.gz: irqlens bh", &bh_stats(), &bh_info(), &names());
    let html = render(&page);
    assert!(html.contains("<h1>irqlens report</h1>"));
    assert!(html.contains("<h2>bh.jsonl.gz: irqlens bh</h2>"));
}

#[test]
fn the_page_and_its_charts_spell_the_unit_with_the_micro_sign() {
    let mut page = Page::new("irqlens report", "6.18.0-test");
    page.noise("noise", &noise_analysis(), &noise_info(), &names(), None);
    page.bh("bh", &bh_stats(), &bh_info(), &names());
    let mut stats = WakeupStats::new(WakeupConfig {
        bucket_ns: 1_000,
        entries: 2_000,
        worst: 2,
        ..Default::default()
    });
    for (cpu, irq, sched) in [(0, 3, 5), (1, 30, 60)] {
        stats.add(timer_wakeup(cpu, irq, 1, sched, 2));
    }
    page.wakeup("wakeup", &stats, &wakeup_info(true), &names());
    let html = render(&page);
    // no "us" standing alone as a word, in text or charts
    assert_eq!(plot::micro_sign(&html), html);
    for said in [
        "(µs)</th>",
        "(time in µs)",
        "noise sample duration (µs)",
        "latency (µs)",
    ] {
        assert!(html.contains(said), "no {said}");
    }
    assert!(html.contains("<meta charset=\"utf-8\">"));
}
