//! `irqlens steer`: a line per change as it is made, then per bottom-half thread what it
//! served and what it was given, and irqlens's own cost.

use std::io::{self, Write};

use irqlens_model::steer::{SteerChange, SteerReport};

use super::table::{Column, TextTable};

const THREAD_COLUMNS: [Column; 6] = [
    Column::left("THREAD", 16),
    Column::left("ORIGINAL", 8),
    Column::left("LAST", 6),
    Column::right("DELIVERIES", 10),
    Column::right("CHANGES", 7),
    Column::left("SERVED (DELIVERIES)", 20).gap(2),
];

/// One change, as the log line printed when it is made.
pub fn write_change(out: &mut dyn Write, change: &SteerChange) -> io::Result<()> {
    let dry = if change.made { "" } else { " (dry run)" };
    writeln!(
        out,
        "{:>10.3}s  {}:{}  {} -> {}  {}{dry}",
        change.at_ns as f64 / 1e9,
        change.comm,
        change.tid,
        change.from,
        change.to,
        change.why
    )
}

/// The summary at the end of the run.
pub fn write_summary(out: &mut dyn Write, report: &SteerReport) -> io::Result<()> {
    let run = &report.run;
    writeln!(out)?;
    let mut table = TextTable::new("", &THREAD_COLUMNS).headings();
    for thread in &report.threads {
        let served: Vec<String> = thread
            .served
            .iter()
            .map(|p| format!("{}:{} {} ({})", p.comm, p.tid, p.scheduling, p.deliveries))
            .collect();
        table.row(&[
            format!("{}:{}", thread.comm, thread.tid),
            thread.original.clone(),
            thread.last.clone(),
            thread.deliveries.to_string(),
            thread.changes.to_string(),
            served.join(", "),
        ]);
    }
    if report.threads.is_empty() {
        table.note(
            "(no bottom-half thread queued data to a socket: is NAPI threaded? \
             echo 1 > /sys/class/net/DEV/threaded)",
        );
    }
    table.write(out)?;
    let put_back = if run.dry_run {
        "dry run: nothing changed"
    } else {
        "every thread put back"
    };
    writeln!(
        out,
        "steer: {:.1}s, {} change(s), {put_back}; {} data-ready events ({:.0}/s, {} lost), \
         irqlens used {:.2}% of a CPU; {} deliveries from softirq context (nothing to steer)",
        run.elapsed_ns as f64 / 1e9,
        report.changes.len(),
        run.events,
        run.events_per_s,
        run.lost_events,
        run.cpu_percent,
        run.unsteerable_deliveries
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::steer::{ServedProcess, SteerRun, SteeredThread};

    fn report() -> SteerReport {
        let change = SteerChange {
            at_ns: 1_250_000_000,
            tid: 812,
            comm: "napi/veth1-8193".into(),
            from: "o:0".into(),
            to: "f:80".into(),
            why: "serves rx:900 at f:80".into(),
            made: true,
        };
        SteerReport {
            header: irqlens_model::run::Header::new("steer"),
            kernel: "6.18".into(),
            cpus: "0-1".parse().unwrap(),
            run: SteerRun {
                events: 2000,
                lost_events: 0,
                elapsed_ns: 2_000_000_000,
                interrupted: false,
                hold_ns: 500_000_000,
                dry_run: false,
                events_per_s: 1000.0,
                cpu_percent: 0.4,
                unsteerable_deliveries: 3,
            },
            changes: vec![change],
            threads: vec![SteeredThread {
                tid: 812,
                comm: "napi/veth1-8193".into(),
                original: "o:0".into(),
                last: "f:80".into(),
                deliveries: 1997,
                changes: 1,
                served: vec![ServedProcess {
                    tid: 900,
                    comm: "rx".into(),
                    scheduling: "f:80".into(),
                    deliveries: 1997,
                }],
            }],
        }
    }

    #[test]
    fn a_change_is_one_line_with_its_reason() {
        let report = report();
        let mut out = Vec::new();
        write_change(&mut out, &report.changes[0]).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(
            line,
            "     1.250s  napi/veth1-8193:812  o:0 -> f:80  serves rx:900 at f:80\n"
        );
    }

    #[test]
    fn the_summary_shows_each_thread_and_the_cost() {
        let mut out = Vec::new();
        write_summary(&mut out, &report()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("napi/veth1-8193:812"), "{text}");
        assert!(text.contains("rx:900 f:80 (1997)"), "{text}");
        assert!(
            text.contains(
                "1 change(s), every thread put back; 2000 data-ready events (1000/s, 0 lost)"
            ),
            "{text}"
        );
        assert!(text.contains("0.40% of a CPU; 3 deliveries"), "{text}");
    }
}
