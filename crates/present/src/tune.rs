//! `irqlens tune` as text: each remedy's rounds before and after and its verdict; what
//! `--dry-run` would write; what `--revert` puts back; why a remedy asked for cannot be
//! tried.

use std::fmt::Display;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use irqlens_analyze::tune::{Unpicked, WAKEUP_UNIT, medians};
use irqlens_model::tune::{Change, Knob, TuneReport, TuneRound, Verdict};
use irqlens_model::units::CpuList;

use crate::advise::blocker_text;

/// A knob in words (its file, or the thread it acts on), as the collector names it.
pub type Describe<'a> = &'a dyn Fn(&Knob) -> String;

/// The report as text: how remedies are judged, then per remedy its rounds in µs, the
/// medians, the change and the verdict, and the medians of the other figures.
pub fn write_text(out: &mut dyn Write, report: &TuneReport) -> io::Result<()> {
    writeln!(
        out,
        "tune: CPUs {}, {} rounds of {} before and after each remedy; kept when every \
         after round is below every before round (chance {:.3} if it does nothing) and the \
         medians differ by more than the before rounds' spread",
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

/// `--dry-run`: what each change would write, and how it would be measured on `cpus`.
pub fn write_dry_run(
    out: &mut dyn Write,
    changes: &[Change],
    rounds: u32,
    cpus: &CpuList,
    describe: Describe,
) -> io::Result<()> {
    for change in changes {
        writeln!(
            out,
            "would write {} to {} (now {}), measure {rounds} round(s) before and after on CPUs {cpus}, and put back {}",
            change.to,
            describe(&change.knob),
            change.from,
            change.from
        )?;
    }
    Ok(())
}

/// A change put back: the knob, the value it gets back and the one it had.
fn undone(change: &Change, describe: Describe) -> String {
    format!(
        "{} to {} (was {})",
        describe(&change.knob),
        change.from,
        change.to
    )
}

/// `--revert --kept`: the changes `--keep` left in place that are about to be undone.
pub fn write_undoing_kept(
    out: &mut dyn Write,
    to_undo: &[Change],
    describe: Describe,
) -> io::Result<()> {
    if to_undo.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "undoing {} change(s) `irqlens tune --keep` left in place (--kept):",
        to_undo.len()
    )?;
    for change in to_undo {
        writeln!(out, "  {}", undone(change, describe))?;
    }
    Ok(())
}

/// `--revert`: the changes whose target is gone (`dropped`), those put back, and those
/// `--keep` left in place (`kept`), which stay; or that the journal held none.
pub fn write_reverted(
    out: &mut dyn Write,
    journal: &Path,
    put_back: &[Change],
    dropped: &[impl Display],
    kept: &[Change],
    describe: Describe,
) -> io::Result<()> {
    if put_back.is_empty() && dropped.is_empty() && kept.is_empty() {
        writeln!(
            out,
            "nothing to put back ({} holds no change)",
            journal.display()
        )?;
    }
    for vanished in dropped {
        writeln!(out, "{vanished}")?;
    }
    for change in put_back {
        writeln!(out, "put back {}", undone(change, describe))?;
    }
    for change in kept {
        writeln!(
            out,
            "left in place, kept by `irqlens tune --keep`: {} is {} (was {});              `irqlens tune --revert --kept` puts it back",
            describe(&change.knob),
            change.to,
            change.from
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
            format!("--apply {id}: no such remedy for these CPUs (see irqlens advise)")
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
    use irqlens_model::tune::Trial;
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
tune: CPUs 1, 2 rounds of 1s 500ms before and after each remedy; kept when every after round is below every before round (chance 0.167 if it does nothing) and the medians differ by more than the before rounds' spread

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

    fn described(knob: &Knob) -> String {
        format!(
            "<{}>",
            serde_json::to_value(knob).unwrap()["knob"]
                .as_str()
                .unwrap()
        )
    }

    fn sysctl(from: &str, to: &str) -> Change {
        Change {
            knob: Knob::Sysctl {
                name: "kernel.timer_migration".into(),
            },
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn a_dry_run_says_what_it_would_write_and_put_back() {
        let mut out = Vec::new();
        let cpus = "1-2".parse().unwrap();
        write_dry_run(&mut out, &[sysctl("1", "0")], 4, &cpus, &described).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "would write 0 to <sysctl> (now 1), measure 4 round(s) before and after on CPUs \
             1-2, and put back 1\n"
        );
    }

    #[test]
    fn revert_lists_what_it_undid_and_what_stays() {
        let mut out = Vec::new();
        write_undoing_kept(&mut out, &[], &described).unwrap();
        let journal = Path::new("/run/irqlens/tune.journal");
        write_reverted(&mut out, journal, &[], &[] as &[String], &[], &described).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "nothing to put back (/run/irqlens/tune.journal holds no change)\n"
        );
        let mut out = Vec::new();
        write_undoing_kept(&mut out, &[sysctl("1", "0")], &described).unwrap();
        write_reverted(
            &mut out,
            journal,
            &[sysctl("1", "0")],
            &["dropped a thread"],
            &[sysctl("0", "1")],
            &described,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..4],
            [
                "undoing 1 change(s) `irqlens tune --keep` left in place (--kept):",
                "  <sysctl> to 1 (was 0)",
                "dropped a thread",
                "put back <sysctl> to 1 (was 0)",
            ]
        );
        assert!(
            lines[4].starts_with(
                "left in place, kept by `irqlens tune --keep`: <sysctl> is 1 (was 0);"
            ),
            "{text}"
        );
        assert_eq!(lines.len(), 5);
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
