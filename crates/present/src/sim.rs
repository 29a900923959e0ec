//! `irqlens sim`'s results: per design, the interrupt-driven tasks' latency and
//! throughput, the periodic tasks' latency, and where the CPU time went; and `--against`:
//! a recorded trial next to its simulation.

use std::io::{self, Write};

use irqlens_model::sim::{LatencySummary, SimReport, TrialComparison};

use super::table::{Column, TextTable};

/// Interrupt-driven tasks: packet arrival to the task's start on it.
pub(crate) const CONSUMER_COLUMNS: [Column; 9] = [
    Column::left("design", 6),
    Column::left("task", 12).gap(2),
    Column::right("median", 8),
    Column::right("p99", 8),
    Column::right("max", 8),
    Column::right("mean", 9),
    Column::right("delivered/s", 11),
    Column::right("dropped", 10),
    Column::right("switches/pkt", 12),
];

/// Periodic tasks: release to completion.
pub(crate) const PERIODIC_COLUMNS: [Column; 6] = [
    Column::left("design", 6),
    Column::left("task", 12).gap(2),
    Column::right("median", 8),
    Column::right("p99", 8),
    Column::right("max", 8),
    Column::right("wakeup p99 (µs)", 16),
];

/// Where the CPU time went, % of all CPUs.
pub(crate) const CPU_COLUMNS: [Column; 7] = [
    Column::left("design", 6),
    Column::right("hardirq", 7).gap(2),
    Column::right("softirq", 7),
    Column::right("bh threads", 10),
    Column::right("tasks", 7),
    Column::right("switching", 9),
    Column::right("idle", 7),
];

/// Interrupts and NAPI polls per packet, busy polling and each CPU's busy share: what
/// today's NAPI mechanisms trade.
pub(crate) const NAPI_COLUMNS: [Column; 6] = [
    Column::left("design", 6),
    Column::right("hardirqs/pkt", 12).gap(2),
    Column::right("timer irqs/pkt", 14),
    Column::right("polls/pkt", 9),
    Column::right("busy poll %", 11),
    Column::left("busy % per CPU", 14).gap(2),
];

/// A row per design, when a design uses today's NAPI mechanisms (none otherwise: the
/// other tables say what the other designs trade).
pub(crate) fn napi_rows(report: &SimReport) -> Vec<[String; 6]> {
    if !report.designs.iter().any(|d| d.design.napi_mechanisms()) {
        return Vec::new();
    }
    report
        .designs
        .iter()
        .map(|design| {
            let busy = design
                .busy_by_cpu
                .iter()
                .enumerate()
                .map(|(cpu, busy)| format!("{cpu}:{:.1}", busy * 100.0))
                .collect::<Vec<_>>()
                .join(" ");
            [
                design.design.to_string(),
                format!("{:.3}", design.interrupts_per_arrival),
                format!(
                    "{:.3}",
                    design.timer_interrupts as f64 / design.arrivals.max(1) as f64
                ),
                format!("{:.3}", design.napi_schedules_per_arrival),
                one(design.busy_poll * 100.0),
                busy,
            ]
        })
        .collect()
}

fn one(value: f64) -> String {
    format!("{value:.1}")
}

/// A row per design and interrupt-driven task (µs).
pub(crate) fn consumer_rows(report: &SimReport) -> Vec<[String; 9]> {
    report
        .designs
        .iter()
        .flat_map(|design| {
            design.consumers.iter().map(move |consumer| {
                let [p50, p99, max] = quantiles(&consumer.latency);
                [
                    design.design.to_string(),
                    consumer.task.clone(),
                    p50,
                    p99,
                    max,
                    one(consumer.latency.mean_us),
                    format!("{:.0}", consumer.delivered_per_s),
                    (consumer.dropped_ring + consumer.dropped_socket).to_string(),
                    format!("{:.2}", design.switches_per_arrival),
                ]
            })
        })
        .collect()
}

/// A row per design and periodic task (µs).
pub(crate) fn periodic_rows(report: &SimReport) -> Vec<[String; 6]> {
    report
        .designs
        .iter()
        .flat_map(|design| {
            design.periodic.iter().map(move |task| {
                let [p50, p99, max] = quantiles(&task.response);
                [
                    design.design.to_string(),
                    task.task.clone(),
                    p50,
                    p99,
                    max,
                    one(task.wakeup_latency.p99_us),
                ]
            })
        })
        .collect()
}

/// A row per design (% of all CPUs).
pub(crate) fn cpu_rows(report: &SimReport) -> Vec<[String; 7]> {
    report
        .designs
        .iter()
        .map(|design| {
            let cpu = &design.cpu;
            [
                design.design.to_string(),
                one(cpu.hardirq * 100.0),
                one(cpu.softirq * 100.0),
                one(cpu.bh_threads * 100.0),
                one(cpu.tasks * 100.0),
                one(cpu.switching * 100.0),
                one(cpu.idle * 100.0),
            ]
        })
        .collect()
}

fn quantiles(latency: &LatencySummary) -> [String; 3] {
    [latency.p50_us, latency.p99_us, latency.max_us].map(one)
}

fn write_table<const N: usize>(
    out: &mut dyn Write,
    title: &str,
    columns: &[Column; N],
    rows: &[[String; N]],
) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{title}")?;
    let mut table = TextTable::new("", columns).headings();
    for row in rows {
        table.row(row);
    }
    table.write(out)
}

/// The tables, one row per design.
pub fn write_report(out: &mut dyn Write, report: &SimReport) -> io::Result<()> {
    writeln!(
        out,
        "sim: {} s simulated, seed {}; costs: {}",
        report.duration_s, report.seed, report.costs_origin
    )?;
    write_table(
        out,
        CONSUMER_TITLE,
        &CONSUMER_COLUMNS,
        &consumer_rows(report),
    )?;
    write_table(
        out,
        PERIODIC_TITLE,
        &PERIODIC_COLUMNS,
        &periodic_rows(report),
    )?;
    write_table(out, CPU_TITLE, &CPU_COLUMNS, &cpu_rows(report))?;
    write_table(out, NAPI_TITLE, &NAPI_COLUMNS, &napi_rows(report))
}

/// The tables' titles, the same in the HTML report.
pub(crate) const CONSUMER_TITLE: &str =
    "Interrupt-driven tasks: packet arrival to the task's start on it (µs)";
pub(crate) const PERIODIC_TITLE: &str = "Periodic tasks: release to completion (µs)";
pub(crate) const CPU_TITLE: &str = "CPU time (% of all CPUs)";
pub(crate) const NAPI_TITLE: &str =
    "Interrupts and NAPI polls per packet (a busy poller's polls not counted), busy polling";

/// `--against`: per point, trial's measurement next to the simulation.
const COMPARED_COLUMNS: [Column; 7] = [
    Column::left("design", 14),
    Column::right("OFFERED", 8).gap(2),
    Column::right("SENT/s", 8),
    Column::right("ECHOED/s", 9).gap(2),
    Column::right("sim", 9),
    Column::right("ECHO p50", 9).gap(2),
    Column::right("sim", 9),
];

/// `--against`: per design, the knee, the peak and the median latency's error.
const COMPARED_DESIGN_COLUMNS: [Column; 8] = [
    Column::left("design", 14),
    Column::left("simulated as", 14).gap(2),
    Column::right("FOLLOWS TO", 10).gap(2),
    Column::right("sim", 9),
    Column::right("PEAK/s", 9).gap(2),
    Column::right("sim", 9),
    Column::right("error", 6),
    Column::right("p50 error", 9).gap(2),
];

/// `--against`: per point, the NAPI figures trial measured next to the simulation's.
const COMPARED_NAPI_COLUMNS: [Column; 12] = [
    Column::left("design", 14),
    Column::right("OFFERED", 8).gap(2),
    Column::right("NET_RX/dg", 9).gap(2),
    Column::right("sim", NOT_SIMULATED.len()),
    Column::right("snd", 5).gap(2),
    Column::right("sim", NOT_SIMULATED.len()),
    Column::right("BUSY", 4).gap(2),
    Column::right("sim", 4),
    Column::right("SRV", 4).gap(2),
    Column::right("sim", 4),
    Column::right("BPOLL/dg", 8).gap(2),
    Column::right("sim", NOT_SIMULATED.len()),
];

/// What a simulated figure the model does not produce reads.
const NOT_SIMULATED: &str = "not simulated";

/// The NAPI figures' table title.
const COMPARED_NAPI_TITLE: &str = "Per point: NET_RX softirq runs per datagram sent on the \
     receiving CPU and on the sending CPU (snd), the receiving CPU's busy share (BUSY) and the \
     echo server's (SRV), veth packets busy polls took per datagram (BPOLL/dg); measured, then \
     simulated (the model is the receiving CPU alone, its polls take datagrams, not veth's \
     packets, and a threaded design's polls are its thread's)";

fn rate(pps: Option<u64>) -> String {
    pps.map_or("none".into(), |r| r.to_string())
}

fn share(fraction: f64) -> String {
    format!("{:+.0}%", fraction * 100.0)
}

/// `--against`'s tables: measured (capitals) and simulated (`sim`) side by side.
pub fn write_comparison(out: &mut dyn Write, comparison: &TrialComparison) -> io::Result<()> {
    writeln!(
        out,
        "sim against {}: {} s simulated per point; costs: {}",
        comparison.against, comparison.seconds_per_point, comparison.costs_origin
    )?;
    writeln!(
        out,
        "\nPer point: echoed/s and median echo latency (µs), measured and simulated"
    )?;
    let mut table = TextTable::new("", &COMPARED_COLUMNS).headings();
    let latency = |us: Option<f64>| us.map_or("-".into(), |us| format!("{us:.0}"));
    for p in &comparison.points {
        table.row(&[
            p.design.to_string(),
            p.offered_pps.to_string(),
            format!("{:.0}", p.sent_pps),
            format!("{:.0}", p.measured_echoed_pps),
            format!("{:.0}", p.simulated_echoed_pps),
            latency(p.measured_p50_us),
            latency(p.simulated_p50_us),
        ]);
    }
    table.write(out)?;
    write_compared_napi(out, comparison)?;
    writeln!(
        out,
        "\nPer design: where the echo stops following (95% echoed), the peak echo rate, \
         and the median latency's error where both follow"
    )?;
    let mut table = TextTable::new("", &COMPARED_DESIGN_COLUMNS).headings();
    for d in &comparison.designs {
        table.row(&[
            d.design.to_string(),
            d.simulated_as.to_string(),
            rate(d.measured_follows_up_to_pps),
            rate(d.simulated_follows_up_to_pps),
            format!("{:.0}", d.measured_peak_pps),
            format!("{:.0}", d.simulated_peak_pps),
            d.peak_error.map_or("-".into(), share),
            d.median_latency_error
                .map_or("-".into(), |e| format!("{:.0}%", e * 100.0)),
        ]);
    }
    table.write(out)
}

/// `--against`'s NAPI figures, if the trial recorded them.
fn write_compared_napi(out: &mut dyn Write, comparison: &TrialComparison) -> io::Result<()> {
    let rows: Vec<[String; 12]> = comparison
        .points
        .iter()
        .filter_map(|p| Some((p, p.napi?)))
        .map(|(p, napi)| {
            let count = |n: f64| format!("{n:.2}");
            let simulated = |n: Option<f64>| n.map_or_else(|| NOT_SIMULATED.into(), count);
            let percent = |share: f64| format!("{:.0}%", share * 100.0);
            [
                p.design.to_string(),
                p.offered_pps.to_string(),
                count(napi.measured_net_rx_per_datagram),
                simulated(napi.simulated_net_rx_per_datagram),
                count(napi.measured_sending_net_rx_per_datagram),
                NOT_SIMULATED.into(),
                percent(napi.measured_busy),
                percent(napi.simulated_busy),
                napi.measured_echo_share.map_or("-".into(), percent),
                percent(napi.simulated_echo_share),
                napi.measured_busy_polled_per_datagram
                    .map_or("-".into(), count),
                NOT_SIMULATED.into(),
            ]
        })
        .collect();
    write_table(out, COMPARED_NAPI_TITLE, &COMPARED_NAPI_COLUMNS, &rows)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use irqlens_model::sim::{ConsumerResult, CpuSplit, DesignResult, SimDocument};

    pub(crate) fn report() -> SimReport {
        let latency = LatencySummary {
            count: 10,
            mean_us: 21.5,
            p50_us: 20.0,
            p99_us: 41.0,
            max_us: 57.25,
            ..LatencySummary::default()
        };
        SimReport {
            duration_s: 2.0,
            seed: 7,
            costs_origin: "default, not calibrated".into(),
            designs: vec![DesignResult {
                design: "threaded-fifo+ihm".parse().unwrap(),
                interrupts: 10,
                arrivals: 10,
                context_switches: 20,
                switches_per_arrival: 2.0,
                switches_per_interrupt: 2.0,
                timer_interrupts: 0,
                napi_schedules: 10,
                interrupts_per_arrival: 1.0,
                napi_schedules_per_arrival: 1.0,
                busy_by_cpu: vec![0.1],
                busy_poll: 0.0,
                consumers: vec![ConsumerResult {
                    task: "udp-server".into(),
                    latency,
                    delivered: 10,
                    delivered_per_s: 5.0,
                    offered: 12,
                    dropped_ring: 1,
                    dropped_socket: 1,
                    wakeups: 10,
                    cpu_share: 0.1,
                }],
                periodic: vec![],
                cpu: CpuSplit {
                    idle: 0.9,
                    tasks: 0.1,
                    ..CpuSplit::default()
                },
            }],
        }
    }

    #[test]
    fn the_napi_table_shows_only_when_a_design_uses_todays_napi_mechanisms() {
        let mut report = report();
        assert!(napi_rows(&report).is_empty());
        report.designs[0].design = "stock+defer=100:20".parse().unwrap();
        report.designs[0].timer_interrupts = 5;
        report.designs[0].busy_by_cpu = vec![0.25, 0.5];
        let rows = napi_rows(&report);
        assert_eq!(
            rows[0],
            [
                "stock+defer=100:20",
                "1.000",
                "0.500",
                "1.000",
                "0.0",
                "0:25.0 1:50.0"
            ]
        );
        let mut text = Vec::new();
        write_report(&mut text, &report).unwrap();
        assert!(String::from_utf8(text).unwrap().contains(NAPI_TITLE));
    }

    #[test]
    fn the_tables_show_each_design_and_its_figures() {
        let mut text = Vec::new();
        write_report(&mut text, &report()).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("seed 7; costs: default, not calibrated"),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.starts_with("threaded-fifo+ihm") && l.contains("udp-server"))
            .unwrap();
        for figure in ["20.0", "41.0", "57.2", "21.5", "5", "2.00"] {
            assert!(row.contains(figure), "{figure} in {row}");
        }
        assert!(!text.contains("Periodic tasks"));
        assert!(text.contains("90.0"));
    }

    #[test]
    fn against_shows_the_napi_figures_and_says_which_are_not_simulated() {
        use irqlens_model::sim::{ComparedNapi, ComparedPoint, TrialComparison};
        let point = |design: &str, simulated_net_rx| ComparedPoint {
            design: design.parse().unwrap(),
            offered_pps: 5_000,
            round: 1,
            sent_pps: 5_000.0,
            measured_echoed_pps: 5_000.0,
            simulated_echoed_pps: 5_000.0,
            measured_p50_us: Some(40.0),
            simulated_p50_us: Some(38.0),
            napi: Some(ComparedNapi {
                measured_net_rx_per_datagram: 1.93,
                simulated_net_rx_per_datagram: simulated_net_rx,
                measured_sending_net_rx_per_datagram: 6.7,
                measured_busy: 0.12,
                simulated_busy: 0.1,
                measured_echo_share: Some(0.04),
                simulated_echo_share: 0.03,
                measured_busy_polled_per_datagram: Some(0.0),
            }),
        };
        let mut comparison = TrialComparison {
            header: irqlens_model::run::Header::new("sim"),
            against: "t.json".into(),
            costs_origin: "calibrated".into(),
            seconds_per_point: 1.0,
            points: vec![
                point("stock+defer=100:20", Some(0.25)),
                point("threaded-niced", None),
            ],
            designs: vec![],
        };
        let text = |comparison: &TrialComparison| {
            let mut out = Vec::new();
            write_comparison(&mut out, comparison).unwrap();
            String::from_utf8(out).unwrap()
        };
        let shown = text(&comparison);
        let row = |design: &str| {
            shown
                .lines()
                .rfind(|l| l.starts_with(design))
                .unwrap()
                .to_string()
        };
        let deferred = row("stock+defer=100:20");
        for figure in ["1.93", "0.25", "6.70", "12%", "10%", "4%", "3%"] {
            assert!(deferred.contains(figure), "{figure} in {deferred}");
        }
        // the sending CPU and veth's packets are not in the model: said, not zero
        assert_eq!(deferred.matches(NOT_SIMULATED).count(), 2, "{deferred}");
        assert_eq!(row("threaded-niced").matches(NOT_SIMULATED).count(), 3);
        // a recording without the figures has no such table
        for p in &mut comparison.points {
            p.napi = None;
        }
        assert!(!text(&comparison).contains("NET_RX/dg"));
    }

    #[test]
    fn json_reads_back_with_the_envelope() {
        let document = SimDocument {
            header: irqlens_model::run::Header::new("sim"),
            cpus: "0-1".parse().unwrap(),
            report: report(),
        };
        let json = crate::document::to_json(&document);
        assert_eq!(json["command"], "sim");
        assert_eq!(json["seed"], 7, "the report's fields are at the top level");
        let back: SimDocument = serde_json::from_value(json).unwrap();
        assert_eq!(back, document);
    }
}
