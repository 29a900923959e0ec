//! `irqlens check`'s outputs: one screen of 80 columns, a line per check (and the cause
//! and remedy under a check that warned or failed), and JUnit XML for CI systems.

use std::io::{self, Write};
use std::time::Duration;

use irqlens_model::check::{Check, CheckReport, Kind, Metric, ProfileReport, Status};
use irqlens_model::units::CpuList;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// Width of the check id column (the longest id, `softlockup-watchdog`).
const ID_WIDTH: usize = 19;
/// Where the found column starts: the status and the id before it.
const FOUND_AT: usize = 4 + 2 + ID_WIDTH + 1;

/// The screen: a line about the run, a line per check, and the verdict; 80 columns.
pub fn write_text(out: &mut dyn Write, report: &CheckReport) -> io::Result<()> {
    let about = format!(
        "irqlens check: {} profile, CPUs {} ({})",
        report.profile.name(),
        report.cpus,
        report.cpus_from
    );
    for line in textwrap::wrap(&about, SCREEN) {
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    // the found column as wide as its widest entry, so that expected starts after it
    let found_width = (report.checks.iter())
        .map(|check| check.found.chars().count())
        .max()
        .unwrap_or(0)
        .max("FOUND".len());
    writeln!(
        out,
        "{:<4}  {:<ID_WIDTH$} {:<found_width$} EXPECTED",
        "", "CHECK", "FOUND"
    )?;
    for check in &report.checks {
        write_check(out, &printable(check), found_width, &report.cpus)?;
    }
    writeln!(out)?;
    writeln!(out, "{}", verdict_line(report))?;
    if report.interrupted {
        writeln!(
            out,
            "interrupted: the checks after the interruption were skipped"
        )?;
    }
    Ok(())
}

/// `check` with every control character of its texts shown as `?`: thread and device
/// names come from the machine, and one named with terminal escapes must not rewrite
/// the screen (erase the FAIL line above it).
fn printable(check: &Check) -> Check {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect()
    };
    Check {
        id: clean(&check.id),
        found: clean(&check.found),
        expected: clean(&check.expected),
        cause: check.cause.as_deref().map(clean),
        remedies: check.remedies.iter().map(|r| clean(r)).collect(),
        advice: check.advice.as_deref().map(clean),
        ..check.clone()
    }
}

/// A check's line, its expected value on a line of its own if it would not fit, then
/// the cause and remedies of a warning or a failure.
fn write_check(
    out: &mut dyn Write,
    check: &Check,
    found_width: usize,
    cpus: &CpuList,
) -> io::Result<()> {
    let (status, id, found) = (check.status.label(), &check.id, &check.found);
    let fits = FOUND_AT + found_width + 1 + check.expected.chars().count() <= SCREEN;
    if fits {
        writeln!(
            out,
            "{status:<4}  {id:<ID_WIDTH$} {found:<found_width$} {}",
            check.expected
        )?;
    } else {
        writeln!(out, "{status:<4}  {id:<ID_WIDTH$} {found}")?;
        for line in fitted(&format!("expected: {}", check.expected), 2) {
            writeln!(out, "{DETAIL_INDENT}{line}")?;
        }
    }
    if matches!(check.status, Status::Warn | Status::Fail) {
        for line in details(check, cpus) {
            writeln!(out, "{DETAIL_INDENT}{line}")?;
        }
    }
    Ok(())
}

/// Where a check's cause and remedy lines start, under its id.
const DETAIL_INDENT: &str = "      ";
/// The screen's width: every line fits it.
const SCREEN: usize = 80;
/// The remedy ids a line names before it counts the rest (`--json` has them all).
const REMEDY_IDS: usize = 3;

/// A warning's or failure's cause and remedies, at most two lines each, fitted to the
/// screen (the JSON document has them whole).
fn details(check: &Check, cpus: &CpuList) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(cause) = &check.cause {
        lines.extend(fitted(&format!("cause: {cause}"), 2));
    }
    if !check.remedies.is_empty() {
        let shown = check.remedies.iter().take(REMEDY_IDS);
        let mut ids = shown.cloned().collect::<Vec<_>>().join(", ");
        let more = check.remedies.len().saturating_sub(REMEDY_IDS);
        if more > 0 {
            ids += &format!(" and {more} more");
        }
        lines.extend(fitted(&format!("remedy: {} {ids}", tune_apply(cpus)), 2));
    }
    if let Some(advice) = &check.advice {
        lines.extend(fitted(&format!("remedy: {advice}"), 2));
    }
    lines
}

/// `text` wrapped to the screen under the indent, in at most `most` lines, the last cut
/// with an ellipsis if it goes on.
fn fitted(text: &str, most: usize) -> Vec<String> {
    let width = SCREEN - DETAIL_INDENT.len();
    // ids and names break at spaces only
    let options = textwrap::Options::new(width)
        .subsequent_indent("  ")
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut lines: Vec<String> = textwrap::wrap(text, options)
        .into_iter()
        .map(|line| line.into_owned())
        .collect();
    if lines.len() > most {
        lines.truncate(most);
        let last = lines.last_mut().expect("at least one line");
        let room = width.saturating_sub(1);
        if last.chars().count() > room {
            *last = last.chars().take(room).collect();
        }
        last.push('…');
    }
    lines
}

/// `PASS: 14 checks, 3 warned, 2 skipped` or `FAIL: 2 of 19 checks failed, ...`.
pub fn verdict_line(report: &CheckReport) -> String {
    let (failed, warned, skipped) = (
        report.count(Status::Fail),
        report.count(Status::Warn),
        report.count(Status::Skip),
    );
    let total = report.checks.len();
    let mut line = match report.verdict() {
        Status::Fail => format!("FAIL: {failed} of {total} checks failed"),
        _ => format!("PASS: {total} checks"),
    };
    if warned > 0 {
        line += &format!(", {warned} warned");
    }
    if skipped > 0 {
        line += &format!(", {skipped} skipped");
    }
    line
}

fn profile_name(report: &CheckReport) -> &'static str {
    report.profile.name()
}

/// `--show-profile`: what the profile checks for, its measured checks with their
/// thresholds and duration, and its configuration checks.
pub fn write_profile(out: &mut dyn Write, report: &ProfileReport) -> io::Result<()> {
    let about = format!("profile {}: {}", report.profile.name(), report.about);
    for line in textwrap::wrap(&about, SCREEN) {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "measured, {} each:",
        humantime::format_duration(Duration::from_nanos(report.duration_ns))
    )?;
    let measured = Metric::ALL
        .into_iter()
        .filter(|metric| report.measured.iter().any(|id| id == metric.id()));
    for metric in measured {
        if let Some(limit) = metric.threshold(&report.thresholds) {
            let unit = if metric.larger_is_worse() {
                " µs"
            } else {
                "%"
            };
            writeln!(
                out,
                "  {:<ID_WIDTH$} --{} {limit}{unit}",
                metric.id(),
                metric.id()
            )?;
        }
    }
    writeln!(out, "configuration:")?;
    for id in &report.configuration {
        writeln!(out, "  {id}")?;
    }
    Ok(())
}

/// The report as JUnit XML: one test suite, one test case per check (class name
/// `configuration` or `measured`). A warning passes with its finding in system-out, as
/// JUnit has no warning; a skipped check is skipped, with why.
pub fn junit(report: &CheckReport) -> String {
    let name = format!(
        "irqlens check {} CPUs {}",
        profile_name(report),
        report.cpus
    );
    let mut suite = TestSuite::new(name.clone());
    for check in &report.checks {
        let summary = summary(check, &report.cpus);
        let mut status = match check.status {
            Status::Pass | Status::Warn => TestCaseStatus::success(),
            Status::Skip => TestCaseStatus::skipped(),
            Status::Fail => TestCaseStatus::non_success(NonSuccessKind::Failure),
        };
        if matches!(check.status, Status::Skip | Status::Fail) {
            status.set_message(summary.clone());
        }
        let mut case = TestCase::new(check.id.clone(), status);
        case.set_classname(match check.kind {
            Kind::Configuration => "configuration",
            Kind::Measured => "measured",
        });
        if check.kind == Kind::Measured {
            case.set_time(Duration::from_nanos(report.duration_ns));
        }
        case.set_system_out(format!("{}: {summary}", check.status.label()));
        suite.add_test_case(case);
    }
    let mut junit = Report::new(name);
    junit.add_test_suite(suite);
    junit
        .to_string()
        .expect("JUnit of plain strings serializes")
}

/// The command that applies a remedy id: ids are of the CPUs checked.
fn tune_apply(cpus: &CpuList) -> String {
    format!("irqlens tune -c {cpus} --apply")
}

/// A check in one line: what was found against what passes, the cause and the remedies.
fn summary(check: &Check, cpus: &CpuList) -> String {
    let mut line = format!("{} (expected {})", check.found, check.expected);
    if let Some(cause) = &check.cause {
        line += &format!("; cause: {cause}");
    }
    for remedy in &check.remedies {
        line += &format!("; remedy: {} {remedy}", tune_apply(cpus));
    }
    if let Some(advice) = &check.advice {
        line += &format!("; remedy: {advice}");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::check::{Profile, Thresholds};
    use irqlens_model::run::Header;

    fn report(checks: Vec<Check>) -> CheckReport {
        CheckReport {
            header: Header::new("check"),
            profile: Profile::Realtime,
            cpus: "1".parse().unwrap(),
            cpus_from: "-c".into(),
            thresholds: Thresholds::default(),
            duration_ns: 2_000_000_000,
            checks,
            interrupted: false,
        }
    }

    fn checks() -> Vec<Check> {
        vec![
            Check::new(
                "rt-throttling",
                Kind::Configuration,
                Status::Warn,
                "950000 of 1000000 µs",
                "-1, or at least 95% of the period of the RT bandwidth",
            )
            .caused_by("a FIFO spinner is stopped 50 ms a second"),
            Check::new(
                "c-states",
                Kind::Configuration,
                Status::Skip,
                "no cpuidle driver",
                "-",
            ),
            Check::new(
                "max-noise",
                Kind::Measured,
                Status::Fail,
                "CPU 1: 84.0 µs",
                "at most 20.0 µs",
            )
            .caused_by("IRQ 36 virtio1-req.0, 71% of the noise")
            .remedied_by(["irq-36-affinity".to_owned()]),
            Check::new(
                "max-latency",
                Kind::Measured,
                Status::Pass,
                "CPU 1: 9.0 µs",
                "at most 50.0 µs",
            ),
        ]
    }

    #[test]
    fn the_screen_has_a_line_per_check_with_the_cause_and_remedy_of_a_failure() {
        let mut out = Vec::new();
        write_text(&mut out, &report(checks())).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("irqlens check: realtime profile, CPUs 1"));
        assert!(
            lines.iter().any(|l| l.starts_with("FAIL  max-noise ")),
            "{text}"
        );
        assert!(text.contains("      cause: IRQ 36 virtio1-req.0, 71% of the noise\n"));
        assert!(text.contains("      remedy: irqlens tune -c 1 --apply irq-36-affinity\n"));
        // what does not fit after the found column goes on its own line
        assert!(
            text.contains(
                "\n      expected: -1, or at least 95% of the period of the RT bandwidth\n"
            ),
            "{text}"
        );
        // a passed or skipped check is one line
        assert!(!text.contains("cause: no cpuidle"));
        assert_eq!(
            lines.last().unwrap(),
            &"FAIL: 1 of 4 checks failed, 1 warned, 1 skipped"
        );
        for line in &lines {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }

    #[test]
    fn a_long_cause_and_many_remedies_fit_the_screen_in_two_lines_each() {
        let ids = (1..=9).map(|irq| format!("irq-{irq}-affinity"));
        let check = Check::new(
            "irq-affinity",
            Kind::Configuration,
            Status::Warn,
            "9 lines",
            "-",
        )
        .caused_by("IRQ 36 virtio1-req.0 (delivered to 1); ".repeat(20))
        .remedied_by(ids);
        let lines = details(&check, &"1".parse().unwrap());
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[1].ends_with('…'), "{lines:#?}");
        assert!(lines[2].starts_with("remedy: irqlens tune -c 1 --apply irq-1-affinity, "));
        assert!(lines[3].ends_with(" and 6 more"), "{lines:#?}");
        for line in &lines {
            assert!(
                DETAIL_INDENT.len() + line.chars().count() <= SCREEN,
                "{line}"
            );
        }
    }

    #[test]
    fn names_with_terminal_escapes_are_shown_without_them() {
        let hostile = Check::new(
            "max-noise",
            Kind::Measured,
            Status::Fail,
            "CPU 1: 9.0 µs",
            "-",
        )
        .caused_by("ev\u{1}\u{1b}[1A\u{1b}[2Kil:42, 90% of the noise");
        let mut out = Vec::new();
        write_text(&mut out, &report(vec![hostile])).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("cause: ev??[1A?[2Kil:42"), "{text}");
    }

    #[test]
    fn warnings_and_skips_pass() {
        let mut passing = checks();
        passing.remove(2);
        let report = report(passing);
        assert_eq!(report.verdict(), Status::Warn);
        assert_eq!(verdict_line(&report), "PASS: 3 checks, 1 warned, 1 skipped");
    }

    #[test]
    fn junit_has_one_case_per_check_with_failures_and_skips_marked() {
        let xml = junit(&report(checks()));
        assert!(xml.starts_with("<?xml"), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 4, "{xml}");
        assert_eq!(xml.matches("<failure").count(), 1, "{xml}");
        assert_eq!(xml.matches("<skipped").count(), 1, "{xml}");
        assert!(
            xml.contains(r#"tests="4""#) && xml.contains(r#"failures="1""#),
            "{xml}"
        );
        assert!(xml.contains("irq-36-affinity"), "{xml}");
        assert!(xml.contains(r#"classname="measured""#), "{xml}");
    }
}
