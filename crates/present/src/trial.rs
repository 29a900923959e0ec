//! `irqlens trial net`: one table per design, a row per offered rate (echo throughput and
//! latency, the cyclic task's latency and top cause, the receiving CPU's time), then a
//! line per design saying where its echo stopped following the offered rate, and (with
//! rounds) each design against the first, rate by rate.

use std::io::{self, Write};

use irqlens_analyze::trial::{echo_share, per_datagram, receiving_busy_share};
use irqlens_model::design::{BottomHalves, Design};
use irqlens_model::trial::{
    Compared, Comparison, Difference, Spread, TrialPoint, TrialReport, defer_knobs, echo_busy_poll,
};

use super::table::{Column, Form, TextTable};

/// Columns of a design's ladder (rtla's style: whole µs, percentages of the CPU).
pub(crate) const POINT_COLUMNS: [Column; 22] = [
    Column::right("OFFERED", 8),
    Column::right("SENT/s", 8),
    Column::right("ECHOED/s", 8),
    Column::right("LOSS", 6),
    Column::right("ECHO p50", 8).gap(2),
    Column::right("p99", 6),
    Column::right("max", 6),
    Column::right("CYC avg", 7).gap(2),
    Column::right("q99", 6),
    Column::right("max", 6),
    Column::right("USR", 4).gap(2),
    Column::right("SYS", 4),
    Column::right("SIRQ", 4),
    Column::right("NAPI", 4),
    Column::right("IRQ", 4),
    Column::right("IDLE", 4),
    Column::right("BUSY", 4),
    Column::right("SRV", 4),
    Column::right("NET_RX/dg", 9).gap(2),
    Column::right("snd", 5),
    Column::right("BPOLL/dg", 8),
    Column::left("CYC TOP CAUSE", 13).gap(2),
];

fn percent(value: f64) -> String {
    format!("{value:.0}%")
}

/// A point's cells, as both the text table and the HTML report show them.
pub(crate) fn cells(point: &TrialPoint) -> [String; POINT_COLUMNS.len()] {
    let us = |ns| Form::Text.opt_us(ns);
    let echo = point.echo_latency.as_ref();
    let cyclic = point.cyclic.as_ref();
    let cause = cyclic
        .and_then(|c| {
            Some(format!(
                "{} {:.0}%",
                c.top_cause.as_ref()?,
                c.top_cause_percent?
            ))
        })
        .unwrap_or_else(|| "-".into());
    let cpu = &point.cpu;
    let napi = point.napi.as_ref();
    let per_datagram = |count: Option<u64>| {
        count
            .and_then(|count| per_datagram(count, point.sent))
            .map_or_else(|| "-".into(), |n| format!("{n:.2}"))
    };
    [
        point.offered_pps.to_string(),
        format!("{:.0}", point.sent_pps),
        format!("{:.0}", point.echoed_pps),
        format!("{:.1}%", point.loss_percent),
        us(echo.map(|e| e.p50_ns)),
        us(echo.map(|e| e.p99_ns)),
        us(echo.map(|e| e.max_ns)),
        us(cyclic.map(|c| c.avg_ns)),
        us(cyclic.map(|c| c.p99_ns)),
        us(cyclic.map(|c| c.max_ns)),
        percent(cpu.user_percent),
        percent(cpu.system_percent),
        percent(cpu.softirq_percent),
        percent(cpu.napi_thread_percent),
        percent(cpu.irq_percent),
        percent(cpu.idle_percent),
        percent(100.0 * receiving_busy_share(point)),
        echo_share(point).map_or_else(|| "-".into(), |share| percent(100.0 * share)),
        per_datagram(napi.map(|n| n.receiving_net_rx)),
        per_datagram(napi.map(|n| n.sending_net_rx)),
        per_datagram(napi.and_then(|n| n.busy_polled)),
        cause,
    ]
}

/// The report as text.
pub fn write_text(out: &mut dyn Write, report: &TrialReport) -> io::Result<()> {
    let o = &report.options;
    writeln!(
        out,
        "trial net: echo server on CPU {} (SCHED_OTHER nice {}), load from CPU {}, cyclic task \
         {} every {} us on CPU {}; {} s per point after {} s of warm-up{}; times in us, CPU \
         split, BUSY (out of idle) and the echo server's share (SRV) of CPU {}; per datagram sent: NET_RX softirqs on CPU {} \
         and on the sending CPU (snd), veth packets busy polls took (BPOLL)",
        o.receiving_cpu,
        o.consumer_nice,
        o.sending_cpu,
        o.cyclic_priority,
        super::us(o.cyclic_period_ns),
        o.receiving_cpu,
        o.duration_ns as f64 / 1e9,
        o.warm_up_ns as f64 / 1e9,
        rounds(o.rounds),
        o.receiving_cpu,
        o.receiving_cpu,
    )?;
    for summary in &report.designs {
        writeln!(out)?;
        writeln!(out, "{}", describe(summary.design, report))?;
        let mut table = TextTable::new("  ", &POINT_COLUMNS).headings();
        for point in report.points_of(summary.design) {
            table.row(&cells(point));
        }
        table.write(out)?;
    }
    if !report.designs.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Where the echo stops following the offered rate (95% echoed{}):",
            if o.rounds > 1 {
                " in half of the rounds; each round's own in brackets"
            } else {
                ""
            }
        )?;
    }
    for s in &report.designs {
        let knee = |pps: Option<u64>| pps.map_or("-".to_string(), |pps| pps.to_string());
        let mut follows = s
            .follows_up_to_pps
            .map_or("at no rate".into(), |pps| format!("up to {pps}/s"));
        if s.follows_up_to_by_round_pps.len() > 1 {
            let by_round: Vec<String> = s
                .follows_up_to_by_round_pps
                .iter()
                .map(|&pps| knee(pps))
                .collect();
            follows += &format!(" [{}]", by_round.join(", "));
        }
        let cyclic = s
            .cyclic_max_ns
            .map_or("-".into(), |ns| format!("{} us", super::us(ns)));
        writeln!(
            out,
            "  {:<22} follows {follows}; peak {:.0}/s echoed at {}/s offered; {:.0}/s at the \
             highest; cyclic max {cyclic}",
            s.design.to_string(),
            s.peak_echoed_pps,
            s.peak_at_offered_pps,
            s.echoed_at_highest_pps,
        )?;
    }
    write_comparisons(out, report)?;
    if report.interrupted {
        writeln!(
            out,
            "(interrupted: the points after the last shown were not run)"
        )?;
    }
    Ok(())
}

/// Columns of the designs against the first: a figure's median [lowest-highest round],
/// then how it stands against the first design's.
const COMPARISON_COLUMNS: [Column; 8] = [
    Column::right("OFFERED", 8),
    Column::left("DESIGN", 22).gap(2),
    Column::right("ECHOED/s", 22).gap(2),
    Column::left("", 6),
    Column::right("ECHO p50", 18).gap(2),
    Column::left("", 6),
    Column::right("CYC max", 18).gap(2),
    Column::left("", 6),
];

/// Each design against the trial's first, rate by rate: the verdict that holds from run
/// to run, a difference within the rounds' own spread told as none.
fn write_comparisons(out: &mut dyn Write, report: &TrialReport) -> io::Result<()> {
    let Some(first) = report.comparisons.first() else {
        if report.options.rounds == 1 && report.designs.len() > 1 {
            writeln!(
                out,
                "(one round: no verdict between the designs; --rounds 3 measures how much the \
                 machine's own noise moves each figure)"
            )?;
        }
        return Ok(());
    };
    writeln!(out)?;
    writeln!(
        out,
        "Against {}, rate by rate: the median of up to {} rounds [lowest-highest], times in us; \
         higher or lower only beyond either design's own rounds, else none:",
        first.baseline, report.options.rounds
    )?;
    let mut table = TextTable::new("  ", &COMPARISON_COLUMNS).headings();
    let mut rate = None;
    for comparison in &report.comparisons {
        if rate != Some(comparison.offered_pps) {
            rate = Some(comparison.offered_pps);
            table.row(&baseline_cells(comparison));
        }
        table.row(&comparison_cells(comparison));
    }
    table.write(out)
}

/// The baseline's row at a comparison's rate.
fn baseline_cells(c: &Comparison) -> [String; COMPARISON_COLUMNS.len()] {
    let figure = |compared: Option<&Compared>, unit: fn(f64) -> String| {
        compared.map_or("-".into(), |compared| spread(compared.baseline, unit))
    };
    [
        c.offered_pps.to_string(),
        c.baseline.to_string(),
        figure(Some(&c.echoed_pps), rate),
        String::new(),
        figure(c.echo_p50_ns.as_ref(), micros),
        String::new(),
        figure(c.cyclic_max_ns.as_ref(), micros),
        String::new(),
    ]
}

/// A design's row against the baseline.
fn comparison_cells(c: &Comparison) -> [String; COMPARISON_COLUMNS.len()] {
    let figure = |compared: Option<&Compared>, unit: fn(f64) -> String| match compared {
        Some(compared) => [spread(compared.design, unit), verdict(compared.difference)],
        None => ["-".into(), String::new()],
    };
    let [echoed, echoed_verdict] = figure(Some(&c.echoed_pps), rate);
    let [p50, p50_verdict] = figure(c.echo_p50_ns.as_ref(), micros);
    let [cyclic, cyclic_verdict] = figure(c.cyclic_max_ns.as_ref(), micros);
    [
        String::new(),
        c.design.to_string(),
        echoed,
        echoed_verdict,
        p50,
        p50_verdict,
        cyclic,
        cyclic_verdict,
    ]
}

fn spread(spread: Spread, unit: fn(f64) -> String) -> String {
    format!(
        "{} [{}-{}]",
        unit(spread.median),
        unit(spread.low),
        unit(spread.high)
    )
}

fn rate(pps: f64) -> String {
    format!("{pps:.0}")
}

fn micros(ns: f64) -> String {
    format!("{:.0}", ns / 1e3)
}

fn verdict(difference: Difference) -> String {
    match difference {
        Difference::Higher => "higher",
        Difference::Lower => "lower",
        Difference::Within => "none",
    }
    .into()
}

/// ", N rounds" past the first.
fn rounds(rounds: u32) -> String {
    if rounds > 1 {
        format!(", {rounds} rounds")
    } else {
        String::new()
    }
}

/// A design in words, as measured.
pub(crate) fn describe(design: Design, report: &TrialReport) -> String {
    let o = &report.options;
    let bottom_half = match (design.bottom_halves, design.process_aware) {
        (BottomHalves::ThreadedFifo, true) => format!(
            "threaded NAPI started at SCHED_FIFO {}, steered to the priority of the process it \
             serves (irqlens steer)",
            o.napi_fifo_priority
        ),
        (BottomHalves::Stock, _) => {
            "NAPI in softirq, NET_RX steered to the receiving CPU by RPS".to_string()
        }
        (BottomHalves::ThreadedFifo, _) => {
            format!("threaded NAPI at SCHED_FIFO {}", o.napi_fifo_priority)
        }
        (BottomHalves::ThreadedNiced, _) => {
            format!("threaded NAPI at SCHED_OTHER nice {}", o.napi_nice)
        }
    };
    let budget = match (o.budget_of(&design), o.budget_usecs) {
        (None, _) => String::new(),
        (Some(packets), None) => format!(", netdev_budget {packets}"),
        (Some(packets), Some(usecs)) => {
            format!(", netdev_budget {packets} and netdev_budget_usecs {usecs}")
        }
    };
    let defer = defer_knobs(&design).map_or(String::new(), |(hard_irqs, timeout_ns)| {
        format!(
            ", napi_defer_hard_irqs {hard_irqs} and gro_flush_timeout {} us on the receiving veth",
            timeout_ns / 1_000
        )
    });
    let busy_poll = echo_busy_poll(&design).map_or(String::new(), |poll| {
        let prefer = if poll.prefer {
            ", preferred (SO_PREFER_BUSY_POLL)"
        } else {
            ""
        };
        if poll.spins {
            format!(", the echo server spins on non-blocking receives (full busy poll){prefer}")
        } else {
            format!(
                ", the echo server busy polls {} us before it sleeps (SO_BUSY_POLL){prefer}",
                poll.usecs
            )
        }
    });
    format!("{design}: {bottom_half}{budget}{defer}{busy_poll}")
}

/// A point's progress line.
pub fn progress_line(point: &TrialPoint) -> String {
    let cyclic = point
        .cyclic
        .as_ref()
        .map_or("-".into(), |c| format!("{} us", crate::us(c.max_ns)));
    format!(
        "sent {:.0}/s, echoed {:.0}/s ({:.1}% lost), cyclic max {cyclic}",
        point.sent_pps, point.echoed_pps, point.loss_percent
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use irqlens_model::sched::Priority;
    use irqlens_model::trial::{
        CpuSplit, CyclicLatency, DesignSummary, EchoLatency, NapiFigures, TrialOptions,
    };

    use super::*;

    /// A report of one point of `design` at 50k/s.
    pub(crate) fn report_of(design: Design) -> TrialReport {
        let options = TrialOptions {
            receiving_cpu: 1,
            sending_cpu: 0,
            rates: vec![50_000],
            designs: vec![design],
            rounds: 1,
            duration_ns: 3_000_000_000,
            warm_up_ns: 500_000_000,
            payload_bytes: 64,
            consumer_nice: 0,
            napi_nice: 0,
            napi_fifo_priority: 50,
            cyclic_priority: Priority::Fifo(95),
            cyclic_period_ns: 500_000,
            budget_packets: 32,
            budget_usecs: None,
        };
        let point = TrialPoint {
            design,
            offered_pps: 50_000,
            round: 1,
            sent: 150_000,
            sent_pps: 50_000.0,
            echoed: 3_000,
            echoed_pps: 1_000.0,
            loss_percent: 98.0,
            echo_latency: Some(EchoLatency {
                count: 3_000,
                p50_ns: 1_500_000,
                p99_ns: 9_000_000,
                max_ns: 12_345_678,
            }),
            cyclic: Some(CyclicLatency {
                activations: 6_000,
                avg_ns: 20_000,
                p99_ns: 120_000,
                max_ns: 950_000,
                top_cause: Some("thread napi/t1r-8".into()),
                top_cause_percent: Some(61.0),
            }),
            cpu: CpuSplit {
                napi_thread_percent: 93.0,
                user_percent: 4.0,
                ..Default::default()
            },
            napi_scheduling: vec!["f:50".into()],
            runtimes: None,
            napi: Some(NapiFigures {
                receiving_net_rx: 75_000,
                sending_net_rx: 300_000,
                busy_polled: None,
                ..NapiFigures::default()
            }),
        };
        TrialReport {
            header: irqlens_model::run::Header::new("trial"),
            load: "net".into(),
            kernel: "6.18".into(),
            cpus: options.cpus(),
            options,
            interrupted: false,
            points: vec![point],
            designs: vec![DesignSummary {
                design,
                follows_up_to_pps: None,
                follows_up_to_by_round_pps: vec![None],
                peak_echoed_pps: 1_000.0,
                peak_at_offered_pps: 50_000,
                echoed_at_highest_pps: 1_000.0,
                cyclic_max_ns: Some(950_000),
            }],
            comparisons: Vec::new(),
        }
    }

    #[test]
    fn designs_are_judged_against_the_first_only_beyond_their_rounds() {
        let mut report = report_of("stock".parse().unwrap());
        report.options.rounds = 3;
        let spread = |median, low, high| Spread { median, low, high };
        let compared = |design, baseline, difference| Compared {
            design,
            baseline,
            difference,
        };
        report.comparisons = vec![Comparison {
            offered_pps: 1_000_000,
            design: "threaded-fifo".parse().unwrap(),
            baseline: "stock".parse().unwrap(),
            echoed_pps: compared(
                spread(11_100.0, 10_300.0, 17_200.0),
                spread(40_000.0, 39_000.0, 41_000.0),
                Difference::Lower,
            ),
            echo_p50_ns: None,
            cyclic_max_ns: Some(compared(
                spread(2_400_000.0, 1_000_000.0, 4_000_000.0),
                spread(3_000_000.0, 2_000_000.0, 5_000_000.0),
                Difference::Within,
            )),
        }];
        let mut text = Vec::new();
        write_text(&mut text, &report).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("Against stock, rate by rate: the median of up to 3 rounds"),
            "{text}"
        );
        let row = |start: &str| -> Vec<String> {
            let line = text.lines().find(|l| l.trim_start().starts_with(start));
            let line = line.unwrap_or_else(|| panic!("a row of {start}: {text}"));
            line.split_whitespace().map(str::to_owned).collect()
        };
        assert_eq!(
            row("1000000"),
            [
                "1000000",
                "stock",
                "40000",
                "[39000-41000]",
                "-",
                "3000",
                "[2000-5000]"
            ]
        );
        assert_eq!(
            row("threaded-fifo "),
            [
                "threaded-fifo",
                "11100",
                "[10300-17200]",
                "lower",
                "-",
                "2400",
                "[1000-4000]",
                "none"
            ]
        );
    }

    #[test]
    fn one_round_says_why_it_gives_no_verdict() {
        let mut report = report_of("stock".parse().unwrap());
        report.designs.push(report.designs[0].clone());
        let mut text = Vec::new();
        write_text(&mut text, &report).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("one round: no verdict between the designs"),
            "{text}"
        );
    }

    #[test]
    fn a_design_gets_its_table_and_its_summary_line() {
        let report = report_of("threaded-fifo".parse().unwrap());
        let mut text = Vec::new();
        write_text(&mut text, &report).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("threaded-fifo: threaded NAPI at SCHED_FIFO 50"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("50000"))
            .expect("a row");
        for cell in [
            "1000",
            "98.0%",
            "1500",
            "12345",
            "950",
            "93%",
            // 150000 sent: NET_RX per datagram on each CPU; no busy poll counted
            "   -       0.50  2.00        -",
            "thread napi/t1r-8 61%",
        ] {
            assert!(row.contains(cell), "{cell} in {row}");
        }
        assert!(
            text.contains("follows at no rate; peak 1000/s echoed at 50000/s"),
            "{text}"
        );
    }

    #[test]
    fn each_design_is_described_as_its_bed_is_built() {
        for (design, budget, described) in [
            ("stock", 32, "stock: NAPI in softirq, NET_RX steered"),
            (
                "stock+budget",
                16,
                "stock+budget: NAPI in softirq, NET_RX steered to the receiving CPU by RPS, netdev_budget 16",
            ),
            (
                "threaded-niced+budget=8",
                16,
                "threaded-niced+budget=8: threaded NAPI at SCHED_OTHER nice 0, netdev_budget 8",
            ),
            (
                "threaded-fifo+process-aware",
                32,
                "threaded-fifo+process-aware: threaded NAPI started at SCHED_FIFO 50, steered",
            ),
            (
                "stock+defer=100:20+busy-poll=50",
                32,
                "stock+defer=100:20+busy-poll=50: NAPI in softirq, NET_RX steered to the \
                 receiving CPU by RPS, napi_defer_hard_irqs 100 and gro_flush_timeout 20 us on \
                 the receiving veth, the echo server busy polls 50 us before it sleeps \
                 (SO_BUSY_POLL), preferred (SO_PREFER_BUSY_POLL)",
            ),
            (
                "stock+busy-poll=always",
                32,
                "stock+busy-poll=always: NAPI in softirq, NET_RX steered to the receiving CPU by \
                 RPS, the echo server spins on non-blocking receives (full busy poll)",
            ),
        ] {
            let mut report = report_of(design.parse().unwrap());
            report.options.budget_packets = budget;
            let text = describe(report.designs[0].design, &report);
            assert!(text.starts_with(described), "{text}");
        }
    }
}
