//! `irqlens advise`: per CPU, the remedies ranked by the time of their cause, what cannot
//! be changed and why, then what works against the remedies.

use std::io::{self, Write};

use irqlens_model::tune::{AdviceReport, Blocker};

use super::table::{Column, TextTable};

/// Columns of the remedies that can be applied.
const REMEDY_COLUMNS: [Column; 7] = [
    Column::left("ID", 16),
    Column::left("CAUSE", 16),
    Column::right("TIME us", 8),
    Column::right("SHARE", 6),
    Column::left("NOW -> PROPOSED", 15).gap(2),
    Column::left("COMMAND", 20).gap(2),
    Column::left("REMEDY", 20).gap(2),
];

/// Columns of the causes whose knob cannot be turned from here.
const BLOCKED_COLUMNS: [Column; 5] = [
    Column::left("ID", 16),
    Column::left("CAUSE", 16),
    Column::right("TIME us", 8),
    Column::right("SHARE", 6),
    Column::left("WHY NOT, AND WHAT INSTEAD", 20).gap(2),
];

/// A blocker in words.
pub fn blocker_text(blocker: &Blocker) -> String {
    match blocker {
        Blocker::ManagedIrq => {
            "managed IRQ: the kernel refuses its affinity (EIO before 6.12, EPERM after)".into()
        }
        Blocker::PerCpuVector => "per-CPU vector: delivered where it is raised".into(),
        Blocker::PinnedThread => "per-CPU kernel thread: bound to its CPU".into(),
        Blocker::BootParameter { line } => {
            format!("boot parameter: add `{line}` to the kernel command line (needs a reboot)")
        }
        Blocker::Hypervisor => "hypervisor: nothing in the guest changes it".into(),
        Blocker::Other { why } => why.clone(),
    }
}

/// The advice as text: per CPU the remedies, then what cannot be changed (the `limit`
/// largest of each), then the conflicts.
pub fn write_text(out: &mut dyn Write, report: &AdviceReport, limit: usize) -> io::Result<()> {
    let mut cpus: Vec<u32> = report.advice.iter().map(|a| a.cpu).collect();
    cpus.dedup();
    if cpus.is_empty() {
        writeln!(out, "No cause with a remedy was measured.")?;
    }
    for cpu in cpus {
        let advice = || report.advice.iter().filter(move |a| a.cpu == cpu);
        writeln!(
            out,
            "CPU {cpu}: remedies, ranked by the time their cause took (irqlens tune --apply ID)"
        )?;
        let mut table = TextTable::new("  ", &REMEDY_COLUMNS).headings();
        let changes = || advice().filter(|a| a.change.is_some());
        for a in changes().take(limit) {
            let change = a.change.as_ref().expect("filtered");
            table.row(&[
                a.id.clone(),
                a.cause.clone(),
                super::us(a.time_ns).to_string(),
                format!("{:.1}%", a.share_percent),
                format!("{} -> {}", shown(&change.from), change.to),
                a.command.clone().unwrap_or_default(),
                a.remedy.clone(),
            ]);
        }
        more(&mut table, changes().count(), limit);
        if advice().all(|a| a.change.is_none()) {
            table.note("  (none)");
        }
        table.write(out)?;
        if advice().any(|a| a.blocker.is_some()) {
            writeln!(out, "CPU {cpu}: cannot be changed from here")?;
            let mut table = TextTable::new("  ", &BLOCKED_COLUMNS).headings();
            let blocked = || advice().filter_map(|a| Some((a, a.blocker.as_ref()?)));
            for (a, blocker) in blocked().take(limit) {
                table.row(&[
                    a.id.clone(),
                    a.cause.clone(),
                    super::us(a.time_ns).to_string(),
                    format!("{:.1}%", a.share_percent),
                    format!("{}; {}", blocker_text(blocker), a.remedy),
                ]);
            }
            more(&mut table, blocked().count(), limit);
            table.write(out)?;
        }
        writeln!(out)?;
    }
    if !report.conflicts.is_empty() {
        writeln!(out, "Conflicts: what works against the remedies")?;
        for conflict in &report.conflicts {
            writeln!(out, "  - {}", conflict.what)?;
            writeln!(out, "    {}", conflict.remedy)?;
        }
    }
    Ok(())
}

fn more(table: &mut TextTable<'_>, count: usize, limit: usize) {
    if count > limit {
        table.note(format!(
            "  ... {} more (--causes N shows more)",
            count - limit
        ));
    }
}

fn shown(value: &str) -> &str {
    if value.is_empty() { "?" } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::system::Capability;
    use irqlens_model::tune::{Advice, Change, Conflict, Knob, MachineState};

    fn advice(cpu: u32, id: &str, time_ns: u64, blocker: Option<Blocker>) -> Advice {
        Advice {
            id: id.into(),
            cpu,
            cause: format!("cause of {id}"),
            capability: Capability::Noise,
            time_ns,
            share_percent: 12.34,
            remedy: format!("remedy of {id}"),
            change: blocker.is_none().then(|| Change {
                knob: Knob::IrqAffinity { irq: 24 },
                from: "0-3".into(),
                to: "0,2-3".into(),
            }),
            command: blocker
                .is_none()
                .then(|| "echo 0,2-3 > /proc/irq/24/smp_affinity_list".into()),
            blocker,
        }
    }

    fn report() -> AdviceReport {
        AdviceReport {
            header: irqlens_model::run::Header::new("advise"),
            advice: vec![
                advice(1, "irq-24-affinity", 5_000_000, None),
                advice(
                    1,
                    "vector-local_timer",
                    3_000_000,
                    Some(Blocker::PerCpuVector),
                ),
                advice(2, "hypervisor", 1_000, Some(Blocker::Hypervisor)),
            ],
            conflicts: vec![Conflict {
                what: "irqbalance runs".into(),
                remedy: "stop it".into(),
                cpus: None,
            }],
            machine: MachineState::default(),
        }
    }

    #[test]
    fn the_text_ranks_remedies_per_cpu_then_blockers_then_conflicts() {
        let mut out = Vec::new();
        write_text(&mut out, &report(), 10).unwrap();
        let text = String::from_utf8(out).unwrap();
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing in\n{text}"))
        };
        assert!(at("CPU 1: remedies") < at("irq-24-affinity"));
        assert!(at("irq-24-affinity") < at("CPU 1: cannot be changed"));
        assert!(at("CPU 1: cannot be changed") < at("vector-local_timer"));
        assert!(at("vector-local_timer") < at("CPU 2: remedies"));
        assert!(at("CPU 2: remedies") < at("hypervisor: nothing in the guest"));
        assert!(at("hypervisor: nothing") < at("Conflicts"));
        let row = text
            .lines()
            .find(|l| l.contains("irq-24-affinity"))
            .unwrap();
        for cell in [
            "5000",
            "12.3%",
            "0-3 -> 0,2-3",
            "echo 0,2-3 > /proc/irq/24/smp_affinity_list",
        ] {
            assert!(row.contains(cell), "{cell} missing in {row}");
        }
        assert!(text.contains("  (none)"), "{text}");
        let mut out = Vec::new();
        let mut crowded = report();
        crowded
            .advice
            .insert(1, advice(1, "irq-25-affinity", 4_000_000, None));
        write_text(&mut out, &crowded, 1).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("irq-25-affinity"), "{text}");
        assert!(text.contains("... 1 more"), "{text}");
    }

    #[test]
    fn no_advice_says_so() {
        let mut out = Vec::new();
        let empty = AdviceReport {
            header: irqlens_model::run::Header::new("advise"),
            advice: Vec::new(),
            conflicts: Vec::new(),
            machine: MachineState::default(),
        };
        write_text(&mut out, &empty, 10).unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("No cause"));
    }

    #[test]
    fn the_json_is_the_models() {
        let json = crate::document::to_json(&report());
        assert_eq!(json["advice"][0]["id"], "irq-24-affinity");
        assert_eq!(json["advice"][0]["change"]["knob"], "irq_affinity");
        assert_eq!(json["advice"][1]["blocker"]["blocker"], "per_cpu_vector");
        assert_eq!(json["conflicts"][0]["what"], "irqbalance runs");
        let back: AdviceReport = serde_json::from_value(json).unwrap();
        assert_eq!(back, report());
    }
}
