//! `irqlens tune` as text: each remedy's rounds before and after and its verdict; what
//! `--dry-run` would write; what `--revert` puts back; why a remedy asked for cannot be
//! tried.

use std::io::{self, Write};
use std::time::Duration;

use irqlens_analyze::tune::{Unpicked, WAKEUP_UNIT, medians};
use irqlens_model::tune::{
    DescribedChange, DroppedChange, TunePlan, TuneReport, TuneRevert, TuneRound, Verdict,
};

use crate::advise::blocker_text;

/// The report as text: how remedies are judged, then per remedy its rounds in µs, the
/// medians, the change and the verdict, and the medians of the other figures.
pub fn write_text(out: &mut dyn Write, report: &TuneReport) -> io::Result<()> {
    writeln!(
        out,
        "tune: CPUs {}, {} rounds of {} before and after each remedy; kept when every \
         after round is below every before round (chance {:.3} if it does nothing) and the \
         medians differ by more than the before rounds' spread (or the after median is below \
         half the lowest before round)",
        report.cpus,
        report.rounds,
        humantime::format_duration(Duration::from_nanos(report.duration_ns)),
        report.separation_chance
    )?;
    let us = |ns: f64| ns / 1e3;
    for trial in &report.remedies {
        writeln!(out)?;
        writeln!(
            out,
            "{}  ({}: {} -> {})",
            trial.spec, trial.knob_description, trial.change.from, trial.change.to
        )?;
        for with in &trial.together_with {
            let change = &with.change;
            writeln!(
                out,
                "  and {}: {} -> {}",
                with.knob_description, change.from, change.to
            )?;
        }
        let unit = if trial.unit == WAKEUP_UNIT {
            "µs"
        } else {
            "µs per s"
        };
        writeln!(out, "  {} ({unit})", trial.figure)?;
        writeln!(out, "  {:<8} {:>10} {:>10}", "round", "before", "after")?;
        for (i, (b, a)) in trial.before.iter().zip(&trial.after).enumerate() {
            writeln!(
                out,
                "  {:<8} {:>10.1} {:>10.1}",
                i + 1,
                us(b.judged),
                us(a.judged)
            )?;
        }
        let change = trial
            .change_percent
            .map_or("-".into(), |p| format!("{p:+.1}%"));
        writeln!(
            out,
            "  {:<8} {:>10.1} {:>10.1} {:>9}  {}",
            "median",
            us(trial.before_median),
            us(trial.after_median),
            change,
            verdict_words(trial.verdict, trial.left_in_place)
        )?;
        let names = trial
            .before
            .first()
            .map(|r| r.figures.keys().cloned().collect::<Vec<_>>());
        for name in names.unwrap_or_default() {
            let pick = |r: &TuneRound| r.figures[&name];
            let shown = name.trim_end_matches("_per_s").trim_end_matches("_ns");
            writeln!(
                out,
                "  {shown:<10} {:>8.1} {:>10.1} {unit} (medians)",
                us(medians(&trial.before, pick)),
                us(medians(&trial.after, pick))
            )?;
        }
    }
    Ok(())
}

fn verdict_words(verdict: Verdict, left_in_place: bool) -> &'static str {
    match (verdict, left_in_place) {
        (Verdict::Kept, true) => "kept (left in place)",
        (Verdict::Kept, false) => "kept (put back at exit)",
        (Verdict::NoEffect, _) => "reverted (no effect)",
    }
}

/// `--dry-run`: what each change would write, and how it would be measured.
pub fn write_plan(out: &mut dyn Write, plan: &TunePlan) -> io::Result<()> {
    for DescribedChange {
        change,
        knob_description,
    } in &plan.changes
    {
        writeln!(
            out,
            "would write {} to {knob_description} (now {}), measure {} round(s) before and \
             after on CPUs {}, and put back {}",
            change.to, change.from, plan.rounds, plan.cpus, change.from
        )?;
    }
    Ok(())
}

/// A change put back: the knob, the value it gets back and the one it had.
fn undone(described: &DescribedChange) -> String {
    let change = &described.change;
    format!(
        "{} to {} (was {})",
        described.knob_description, change.from, change.to
    )
}

/// `--revert`: with `--kept`, the changes `--keep` left that were undone; the changes whose
/// target is gone, those put back, and those `--keep` left in place, which stay; or that
/// the journal held none.
pub fn write_revert(out: &mut dyn Write, revert: &TuneRevert) -> io::Result<()> {
    if !revert.undone_kept.is_empty() {
        writeln!(
            out,
            "undoing {} change(s) `irqlens tune --keep` left in place (--kept):",
            revert.undone_kept.len()
        )?;
        for change in &revert.undone_kept {
            writeln!(out, "  {}", undone(change))?;
        }
    }
    if revert.put_back.is_empty() && revert.dropped.is_empty() && revert.left_kept.is_empty() {
        writeln!(
            out,
            "nothing to put back ({} holds no change)",
            revert.journal
        )?;
    }
    for DroppedChange { change, why } in &revert.dropped {
        writeln!(
            out,
            "dropped {} from the journal: {why}, nothing to put back",
            change.knob_description
        )?;
    }
    for change in &revert.put_back {
        writeln!(out, "put back {}", undone(change))?;
    }
    for DescribedChange {
        change,
        knob_description,
    } in &revert.left_kept
    {
        writeln!(
            out,
            "left in place, kept by `irqlens tune --keep`: {knob_description} is {} (was {}); \
             `irqlens tune --revert --kept` puts it back",
            change.to, change.from
        )?;
    }
    Ok(())
}

/// Why the remedies asked for (`--apply ID`, `--all`) cannot be tried, in one line.
pub fn unpicked_text(unpicked: &Unpicked) -> String {
    match unpicked {
        Unpicked::NoneChangeable => {
            "--all: none of the causes found can be changed from here (see irqlens advise)".into()
        }
        Unpicked::NoSuchRemedy(id) => {
            format!(
                "--apply {id}: no such remedy for these CPUs (see irqlens advise and irqlens check)"
            )
        }
        Unpicked::NotChangeable { id, cause, blocker } => {
            let why = blocker
                .as_ref()
                .map_or_else(String::new, |b| format!(": {}", blocker_text(b)));
            format!("--apply {id}: {cause} cannot be changed from here{why}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::run::Header;
    use irqlens_model::tune::{Change, Knob, Trial};
    use std::collections::BTreeMap;

    fn round(judged: f64, figures: &[(&str, f64)]) -> TuneRound {
        TuneRound {
            judged,
            figures: figures
                .iter()
                .map(|(name, value)| (name.to_string(), *value))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    fn trial(unit: &str, verdict: Verdict, left_in_place: bool, percent: Option<f64>) -> Trial {
        let figures = |total: f64| [("total_ns_per_s", total), ("irq_ns_per_s", total / 4.0)];
        Trial {
            spec: "irq:24=0".into(),
            knob_description: "/proc/irq/24/smp_affinity_list".into(),
            change: Change {
                knob: Knob::IrqAffinity { irq: 24 },
                from: "0-1".into(),
                to: "0".into(),
            },
            together_with: Vec::new(),
            figure: "IRQ 24 noise on CPUs 1".into(),
            unit: unit.into(),
            before: vec![
                round(12_345.0, &figures(50_000.0)),
                round(11_000.0, &figures(48_000.0)),
            ],
            after: vec![
                round(1_000.0, &figures(30_000.0)),
                round(900.5, &figures(31_000.0)),
            ],
            before_median: 11_672.5,
            after_median: 950.25,
            change_percent: percent,
            verdict,
            left_in_place,
        }
    }

    fn report(remedies: Vec<Trial>) -> TuneReport {
        TuneReport {
            header: irqlens_model::run::Header::new("tune"),
            kernel: "6.18.0".into(),
            cpus: "1".parse().unwrap(),
            rounds: 2,
            duration_ns: 1_500_000_000,
            metric: "noise".into(),
            separation_chance: 1.0 / 6.0,
            journal: "/run/irqlens/tune.journal".into(),
            interrupted: false,
            remedies,
        }
    }

    fn text(report: &TuneReport) -> String {
        let mut out = Vec::new();
        write_text(&mut out, report).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_remedy_shows_its_rounds_medians_and_verdict() {
        let text = text(&report(vec![
            trial("ns of noise per s", Verdict::Kept, true, Some(-91.9)),
            trial(WAKEUP_UNIT, Verdict::Kept, false, None),
            trial(WAKEUP_UNIT, Verdict::NoEffect, false, Some(2.0)),
        ]));
        let expected = "\
tune: CPUs 1, 2 rounds of 1s 500ms before and after each remedy; kept when every after round is below every before round (chance 0.167 if it does nothing) and the medians differ by more than the before rounds' spread (or the after median is below half the lowest before round)

irq:24=0  (/proc/irq/24/smp_affinity_list: 0-1 -> 0)
  IRQ 24 noise on CPUs 1 (µs per s)
  round        before      after
  1              12.3        1.0
  2              11.0        0.9
  median         11.7        1.0    -91.9%  kept (left in place)
  irq            12.2        7.6 µs per s (medians)
  total          49.0       30.5 µs per s (medians)

irq:24=0  (/proc/irq/24/smp_affinity_list: 0-1 -> 0)
  IRQ 24 noise on CPUs 1 (µs)
  round        before      after
  1              12.3        1.0
  2              11.0        0.9
  median         11.7        1.0         -  kept (put back at exit)
  irq            12.2        7.6 µs (medians)
  total          49.0       30.5 µs (medians)

irq:24=0  (/proc/irq/24/smp_affinity_list: 0-1 -> 0)
  IRQ 24 noise on CPUs 1 (µs)
  round        before      after
  1              12.3        1.0
  2              11.0        0.9
  median         11.7        1.0     +2.0%  reverted (no effect)
  irq            12.2        7.6 µs (medians)
  total          49.0       30.5 µs (medians)
";
        assert_eq!(text, expected);
    }

    #[test]
    fn no_remedy_tried_leaves_the_header_alone() {
        assert_eq!(text(&report(Vec::new())).lines().count(), 1);
    }

    fn sysctl(from: &str, to: &str) -> DescribedChange {
        DescribedChange {
            change: Change {
                knob: Knob::Sysctl {
                    name: "kernel.timer_migration".into(),
                },
                from: from.into(),
                to: to.into(),
            },
            knob_description: "<sysctl>".into(),
        }
    }

    fn revert(edit: impl FnOnce(&mut TuneRevert)) -> String {
        let mut revert = TuneRevert {
            header: Header::new("tune"),
            journal: "/run/irqlens/tune.journal".into(),
            undone_kept: Vec::new(),
            put_back: Vec::new(),
            dropped: Vec::new(),
            left_kept: Vec::new(),
        };
        edit(&mut revert);
        let mut out = Vec::new();
        write_revert(&mut out, &revert).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_dry_run_says_what_it_would_write_and_put_back() {
        let mut out = Vec::new();
        let plan = TunePlan {
            header: Header::new("tune"),
            cpus: "1-2".parse().unwrap(),
            rounds: 4,
            changes: vec![sysctl("1", "0")],
        };
        write_plan(&mut out, &plan).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "would write 0 to <sysctl> (now 1), measure 4 round(s) before and after on CPUs \
             1-2, and put back 1\n"
        );
    }

    #[test]
    fn revert_lists_what_it_undid_and_what_stays() {
        assert_eq!(
            revert(|_| {}),
            "nothing to put back (/run/irqlens/tune.journal holds no change)\n"
        );
        let text = revert(|revert| {
            revert.undone_kept = vec![sysctl("1", "0")];
            revert.put_back = vec![sysctl("1", "0")];
            revert.dropped = vec![DroppedChange {
                change: sysctl("1", "0"),
                why: "its thread exited".into(),
            }];
            revert.left_kept = vec![sysctl("0", "1")];
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "undoing 1 change(s) `irqlens tune --keep` left in place (--kept):",
                "  <sysctl> to 1 (was 0)",
                "dropped <sysctl> from the journal: its thread exited, nothing to put back",
                "put back <sysctl> to 1 (was 0)",
                "left in place, kept by `irqlens tune --keep`: <sysctl> is 1 (was 0); \
                 `irqlens tune --revert --kept` puts it back",
            ]
        );
    }

    #[test]
    fn unpicked_remedies_say_why() {
        assert_eq!(
            unpicked_text(&Unpicked::NotChangeable {
                id: "timer".into(),
                cause: "cause of timer".into(),
                blocker: Some(irqlens_model::tune::Blocker::PerCpuVector),
            }),
            "--apply timer: cause of timer cannot be changed from here: per-CPU vector: \
             delivered where it is raised"
        );
        let text = unpicked_text(&Unpicked::NotChangeable {
            id: "x".into(),
            cause: "y".into(),
            blocker: None,
        });
        assert_eq!(text, "--apply x: y cannot be changed from here");
        assert!(unpicked_text(&Unpicked::NoSuchRemedy("nope".into())).contains("no such remedy"));
        assert!(unpicked_text(&Unpicked::NoneChangeable).contains("none of the causes"));
    }
}
