//! `irqlens sim`'s results: per design, the interrupt-driven tasks' latency and
//! throughput, the periodic tasks' latency, and where the CPU time went.

use std::io::{self, Write};

use irqlens_model::sim::{LatencySummary, SimDocument, SimReport};

/// The tables, one row per design.
pub fn write_report(out: &mut dyn Write, report: &SimReport) -> io::Result<()> {
    writeln!(
        out,
        "sim: {} s simulated, seed {}; costs: {}",
        report.duration_s, report.seed, report.costs_origin
    )?;
    let width = report
        .designs
        .iter()
        .map(|d| d.design.to_string().len())
        .max()
        .unwrap_or(6)
        .max("design".len());
    let consumers = report.designs.iter().flat_map(|d| &d.consumers).count();
    if consumers > 0 {
        writeln!(
            out,
            "\nInterrupt-driven tasks: packet arrival to the task's start on it (µs)"
        )?;
        writeln!(
            out,
            "{:<width$}  {:<12} {:>8} {:>8} {:>8} {:>9} {:>10} {:>10} {:>9}",
            "design",
            "task",
            "median",
            "p99",
            "max",
            "mean",
            "delivered/s",
            "dropped",
            "switches/pkt"
        )?;
        for design in &report.designs {
            for consumer in &design.consumers {
                writeln!(
                    out,
                    "{:<width$}  {:<12} {} {:>9.1} {:>11.0} {:>10} {:>12.2}",
                    design.design.to_string(),
                    consumer.task,
                    quantiles(&consumer.latency),
                    consumer.latency.mean_us,
                    consumer.delivered_per_s,
                    consumer.dropped_ring + consumer.dropped_socket,
                    design.switches_per_arrival,
                )?;
            }
        }
    }
    if report.designs.iter().any(|d| !d.periodic.is_empty()) {
        writeln!(out, "\nPeriodic tasks: release to completion (µs)")?;
        writeln!(
            out,
            "{:<width$}  {:<12} {:>8} {:>8} {:>8} {:>16}",
            "design", "task", "median", "p99", "max", "wakeup p99 (µs)"
        )?;
        for design in &report.designs {
            for task in &design.periodic {
                writeln!(
                    out,
                    "{:<width$}  {:<12} {} {:>16.1}",
                    design.design.to_string(),
                    task.task,
                    quantiles(&task.response),
                    task.wakeup_latency.p99_us,
                )?;
            }
        }
    }
    writeln!(out, "\nCPU time (% of all CPUs)")?;
    writeln!(
        out,
        "{:<width$}  {:>7} {:>7} {:>10} {:>7} {:>9} {:>7}",
        "design", "hardirq", "softirq", "bh threads", "tasks", "switching", "idle"
    )?;
    for design in &report.designs {
        let cpu = &design.cpu;
        writeln!(
            out,
            "{:<width$}  {:>7.1} {:>7.1} {:>10.1} {:>7.1} {:>9.1} {:>7.1}",
            design.design.to_string(),
            cpu.hardirq * 100.0,
            cpu.softirq * 100.0,
            cpu.bh_threads * 100.0,
            cpu.tasks * 100.0,
            cpu.switching * 100.0,
            cpu.idle * 100.0,
        )?;
    }
    Ok(())
}

fn quantiles(latency: &LatencySummary) -> String {
    format!(
        "{:>8.1} {:>8.1} {:>8.1}",
        latency.p50_us, latency.p99_us, latency.max_us
    )
}

/// The report as JSON.
pub fn to_json(document: &SimDocument) -> serde_json::Value {
    serde_json::to_value(document).expect("a document of plain data")
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::sim::{ConsumerResult, CpuSplit, DesignResult};

    fn report() -> SimReport {
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
                consumers: vec![ConsumerResult {
                    task: "udp-server".into(),
                    latency,
                    delivered: 10,
                    delivered_per_s: 5.0,
                    offered: 12,
                    dropped_ring: 1,
                    dropped_socket: 1,
                    wakeups: 10,
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
    fn json_reads_back_with_the_envelope() {
        let document = SimDocument {
            tool: "irqlens".into(),
            version: "0".into(),
            command: "sim".into(),
            cpus: "0-1".parse().unwrap(),
            report: report(),
        };
        let json = to_json(&document);
        assert_eq!(json["command"], "sim");
        assert_eq!(json["seed"], 7, "the report's fields are at the top level");
        let back: SimDocument = serde_json::from_value(json).unwrap();
        assert_eq!(back, document);
    }
}
