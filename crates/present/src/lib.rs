//! Present: terminal tables, JSON, and the HTML report.

#![warn(missing_docs)]

pub mod account;
pub mod advise;
pub mod bh;
pub mod check;
pub mod compare;
pub mod document;
pub mod html;
pub mod noise;
pub mod perfetto;
pub mod plot;
pub mod prometheus;
pub mod sim;
pub mod steer;
mod table;
pub mod terminal;
pub mod trial;
pub mod tune;
pub mod wakeup;

use std::collections::HashMap;
use std::io::{self, IsTerminal, Write};
use std::sync::OnceLock;
use std::time::Duration;

use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::loss::Losses;
use irqlens_analyze::workload::{innermost_name, short_name, task_cgroup, workload_of};
use irqlens_model::hist::HistOptions;
use irqlens_model::kernel::KernelSymbols;
use irqlens_model::run::RunCommon;
use irqlens_model::tables::ThreadWithCgroup;
use irqlens_model::workload::{CgroupId, CgroupNames, NamedThread, TaskCgroup, Workload};

/// How kernel numbers and addresses are named.
#[derive(Default)]
pub struct Names {
    /// Kernel function names (tasklets, work items, timers).
    pub symbols: KernelSymbols,
    /// IRQ line names, from /proc/interrupts.
    pub irqs: HashMap<u32, String>,
    /// The paths of the cgroups the tasks shown ran in.
    pub cgroups: CgroupNames,
}

/// How wide a thread cause's cell may grow for its workload's name to follow (a table
/// widens the column to it): room for a container's short name after the longest label
/// with a full comm (`interposed thread `, `... kept the CPU`), not for its pod's too.
pub(crate) const THREAD_CAUSE_WIDTH: usize = 64;

impl Names {
    /// What the cgroup `cgroup` names, if the run named it and it is not the root (every
    /// kernel thread's cgroup: naming it tells nothing).
    pub(crate) fn workload(&self, cgroup: CgroupId) -> Option<Workload> {
        let path = self.cgroups.path(cgroup).filter(|path| *path != "/")?;
        Some(workload_of(path))
    }

    /// `label` (a thread's, in cgroup `cgroup`) followed by its workload's short name, or
    /// by its innermost name when only that fits `width` characters; `label` alone when
    /// neither fits, or there is no cgroup or it names no workload (`workload`).
    pub(crate) fn with_workload(
        &self,
        label: String,
        cgroup: Option<CgroupId>,
        width: usize,
    ) -> String {
        let Some(workload) = cgroup.and_then(|cgroup| self.workload(cgroup)) else {
            return label;
        };
        [short_name(&workload), innermost_name(&workload)]
            .into_iter()
            .map(|name| format!("{label} {name}"))
            .find(|cell| cell.chars().count() <= width)
            .unwrap_or(label)
    }

    /// Cgroup `cgroup` as documents show it (none if unknown).
    pub(crate) fn task_cgroup(&self, cgroup: CgroupId) -> Option<TaskCgroup> {
        task_cgroup(cgroup, &self.cgroups)
    }

    /// `thread` as documents name it.
    pub(crate) fn thread_json(&self, tid: Option<u32>, thread: NamedThread) -> ThreadWithCgroup {
        ThreadWithCgroup {
            tid,
            comm: thread.comm,
            cgroup: self.task_cgroup(thread.cgroup),
        }
    }
}

/// ns as whole µs, as rtla prints them.
pub fn us(ns: u64) -> u64 {
    ns / 1_000
}

/// `part` of `whole` in percent; 0 of nothing.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// ns as fractional µs, keeping the ns digits: plots and traces.
pub fn micros(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

/// ns as µs with two decimals, as the thesis's tables.
pub fn us2(ns: u64) -> String {
    format!("{:.2}", micros(ns))
}

/// As `us2`, or "-" for no value.
pub fn opt_us(ns: Option<u64>) -> String {
    ns.map_or("-".into(), us2)
}

/// ns as µs with one decimal.
pub fn us1(ns: u64) -> String {
    format!("{:.1}", micros(ns))
}

/// `h:mm:ss` of a run's length, as rtla's duration line.
pub fn clock_time(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Whether a live view may redraw the terminal.
pub fn live_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// The width the text fits into: `COLUMNS` if set (as `ls` and `git` read it, so that a
/// test or a script can ask for a width without a terminal), else the terminal's when
/// stdout is one. `None` (files and pipes) keeps every line as wide as its content.
pub(crate) fn text_width() -> Option<usize> {
    static WIDTH: OnceLock<Option<usize>> = OnceLock::new();
    *WIDTH.get_or_init(|| {
        let forced = std::env::var("COLUMNS").ok();
        forced
            .and_then(|columns| columns.trim().parse().ok())
            .filter(|&columns: &usize| columns > 0)
            .or_else(|| {
                let stdout = std::io::stdout();
                terminal_size::terminal_size_of(&stdout).map(|(width, _)| usize::from(width.0))
            })
    })
}

/// A command's text fitted into the text's width: a line too wide (prose, a heading, a
/// table whose figures alone are too wide) is wrapped between words, its next lines
/// indented two spaces more than it; everything as it is when no width is set.
pub fn write_fitted(out: &mut dyn Write, text: &str) -> io::Result<()> {
    write_within(out, text, text_width())
}

fn write_within(out: &mut dyn Write, text: &str, width: Option<usize>) -> io::Result<()> {
    let Some(width) = width else {
        return out.write_all(text.as_bytes());
    };
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            write!(out, "{body}{newline}")?;
            continue;
        }
        let indent = &body[..body.len() - body.trim_start().len()];
        let rest = format!("{indent}  ");
        // breaks at spaces only: a kernel release or a path reads whole
        let options = textwrap::Options::new(width)
            .initial_indent(indent)
            .subsequent_indent(&rest)
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        let wrapped = textwrap::wrap(body.trim_start(), options).join("\n");
        write!(out, "{wrapped}{newline}")?;
    }
    Ok(())
}

/// Whether progress may be shown on stderr.
pub fn progress_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// One self-overwriting progress line on stderr.
pub fn write_progress(elapsed: Duration, total: Option<Duration>, samples: u64, what: &str) {
    let total = total.map_or(String::new(), |t| {
        format!(" of {}", clock_time(t.as_nanos() as u64))
    });
    eprint!(
        "\r\x1b[Kirqlens: {}{total}, {samples} {what}",
        clock_time(elapsed.as_nanos() as u64)
    );
}

/// Clears the progress line on stderr.
pub fn clear_progress() {
    eprint!("\r\x1b[K");
}

/// The tracepoints this kernel lacks, whose programs were not loaded.
pub fn write_skipped_tracepoints(out: &mut dyn Write, skipped: &[String]) -> io::Result<()> {
    if skipped.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "tracepoints this kernel lacks (not traced): {}",
        skipped.join(", ")
    )
}

/// The line that ends the text of a run cut short by Ctrl-C/SIGTERM (`--json` says it in
/// `run.interrupted`); nothing for a run that ended by itself.
pub fn write_cut_short(out: &mut dyn Write, run: &RunCommon) -> io::Result<()> {
    if !run.interrupted {
        return Ok(());
    }
    writeln!(
        out,
        "irqlens: interrupted (Ctrl-C/SIGTERM) after {:.1} s: the results cover the time measured",
        Duration::from_nanos(run.elapsed_ns).as_secs_f64()
    )
}

/// The legend under a table whose `marked` ("rows", "columns") losses may have cut
/// short; nothing when nothing was lost.
pub fn write_legend(out: &mut dyn Write, losses: &Losses, marked: &str) -> io::Result<()> {
    match losses.legend(marked) {
        Some(legend) => writeln!(out, "{legend}"),
        None => Ok(()),
    }
}

/// rtla's hist layout: a row per bucket (µs), a column per histogram, then rows
/// `extra` (such as the IRQ column of `bh`), the overflow row and the summary. As rtla's,
/// `--no-header` leaves out the lines above the buckets and `--no-index` the first
/// column (bucket starts and row names).
pub fn write_hist_table(
    out: &mut dyn Write,
    title: &str,
    columns: &[(String, &Histogram)],
    extra: &[(&str, Vec<u64>)],
    overflow: &str,
    options: &HistOptions,
) -> io::Result<()> {
    // each row: its index (unless --no-index), then a right-aligned cell per column
    let row = |out: &mut dyn Write, index: &str, cells: &mut dyn Iterator<Item = String>| {
        let mut line = String::new();
        if !options.no_index {
            line = format!("{index:<5}");
        }
        for cell in cells {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&format!("{cell:>11}"));
        }
        writeln!(out, "{line}")
    };
    if !options.no_header {
        writeln!(out, "# {title}")?;
        writeln!(out, "# Time unit is microseconds (us)")?;
        row(
            out,
            "Index",
            &mut columns.iter().map(|(name, _)| name.clone()),
        )?;
    }
    let entries = columns.first().map_or(0, |(_, h)| h.buckets.len());
    for index in 0..entries {
        let counts: Vec<u64> = columns.iter().map(|(_, h)| h.buckets[index]).collect();
        if !options.with_zeros && counts.iter().all(|&c| c == 0) {
            continue;
        }
        let start = us(columns[0].1.bucket_start_ns(index)).to_string();
        row(out, &start, &mut counts.iter().map(u64::to_string))?;
    }
    for (name, values) in extra {
        row(out, name, &mut values.iter().map(u64::to_string))?;
    }
    let each = |value: &dyn Fn(&Histogram) -> String| -> Vec<String> {
        columns.iter().map(|(_, h)| value(h)).collect()
    };
    let mut rows = vec![(overflow, each(&|h| h.overflow.to_string()))];
    if !options.no_summary {
        rows.push(("count:", each(&|h| h.count.to_string())));
        rows.push((
            "min:",
            each(&|h| h.min_ns.map_or("-".into(), |v| us(v).to_string())),
        ));
        rows.push((
            "avg:",
            each(&|h| h.avg_ns().map_or("-".into(), |v| us(v).to_string())),
        ));
        rows.push(("max:", each(&|h| us(h.max_ns).to_string())));
    }
    for (name, values) in rows {
        row(out, name, &mut values.into_iter())?;
    }
    Ok(())
}

#[cfg(test)]
mod loss_tests;

/// Names of a run with workloads, for the tests of every tool's output.
#[cfg(test)]
pub(crate) mod workload_fixture {
    use super::Names;
    use irqlens_model::workload::CgroupId;

    /// The pod's UID.
    pub const POD_UID: &str = "1b2c3d4e-5f60-4718-89ab-cdef01234567";
    /// A container of the pod (`CONTAINER` below).
    pub const CONTAINER: CgroupId = CgroupId(7);
    /// A systemd service.
    pub const SERVICE: CgroupId = CgroupId(9);
    /// The root cgroup, every kernel thread's.
    pub const ROOT: CgroupId = CgroupId(1);

    /// `CONTAINER` in a best-effort pod (systemd driver), `SERVICE` as sshd.service, and
    /// the root.
    pub fn names() -> Names {
        let mut names = Names::default();
        let pod = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice",
            POD_UID.replace('-', "_")
        );
        let id = "3f4e5a6b7c8d".to_owned() + &"0".repeat(52);
        let cgroups = &mut names.cgroups;
        cgroups.insert(CONTAINER, format!("{pod}/cri-containerd-{id}.scope"));
        cgroups.insert(SERVICE, "/system.slice/sshd.service".into());
        cgroups.insert(ROOT, "/".into());
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interrupted_line_says_how_long_was_measured() {
        let mut run = RunCommon {
            elapsed_ns: 2_340_000_000,
            ..RunCommon::default()
        };
        let line = |run: &RunCommon| {
            let mut out = Vec::new();
            write_cut_short(&mut out, run).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(&run), "");
        run.interrupted = true;
        assert_eq!(
            line(&run).trim_end(),
            "irqlens: interrupted (Ctrl-C/SIGTERM) after 2.3 s: the results cover the time measured"
        );
    }

    fn hist_table(options: HistOptions) -> String {
        let mut histogram = Histogram::new(1_000, 4);
        for value in [500, 1_500, 1_700, 9_000] {
            histogram.add(value);
        }
        let columns = [("CPU-000".to_string(), &histogram)];
        let mut out = Vec::new();
        write_hist_table(&mut out, "title", &columns, &[], "over:", &options).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_hist_table_has_rtlas_header_and_index_column() {
        let lines: Vec<String> = hist_table(HistOptions::default())
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(lines[0], "# title");
        assert_eq!(lines[1], "# Time unit is microseconds (us)");
        assert_eq!(lines[2], "Index     CPU-000");
        assert_eq!(lines[3], "0               1");
        assert_eq!(lines[4], "1               2");
        assert_eq!(lines[5], "over:           1");
        assert_eq!(lines[6], "count:           4");
        assert_eq!(lines.len(), 10);
    }

    #[test]
    fn no_header_leaves_out_the_lines_above_the_buckets() {
        let text = hist_table(HistOptions {
            no_header: true,
            ..HistOptions::default()
        });
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("0               1"));
        assert!(!text.contains('#') && !text.contains("Index"), "{text}");
        assert!(text.contains("over:") && text.contains("max:"), "{text}");
    }

    #[test]
    fn no_index_leaves_out_the_first_column_everywhere() {
        let text = hist_table(HistOptions {
            no_index: true,
            no_summary: true,
            ..HistOptions::default()
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "# title",
                "# Time unit is microseconds (us)",
                "    CPU-000",
                "          1",
                "          2",
                "          1",
            ]
        );
        let bare = hist_table(HistOptions {
            no_index: true,
            no_header: true,
            ..HistOptions::default()
        });
        // only counts remain: the buckets, over, count, min, avg, max
        let cells: Vec<&str> = bare.split_whitespace().collect();
        assert_eq!(cells, ["1", "2", "1", "4", "0", "3", "9"]);
    }

    fn fitted(text: &str, width: Option<usize>) -> String {
        let mut out = Vec::new();
        write_within(&mut out, text, width).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn long_lines_wrap_between_words_and_short_ones_stay() {
        let text = "short\n  a paragraph of prose about µs that is far too long\nlast line 6.18.44-fc-v669";
        assert_eq!(fitted(text, None), text);
        assert_eq!(
            fitted(text, Some(20)),
            "short\n  a paragraph of\n    prose about µs\n    that is far too\n    long\nlast line\n  6.18.44-fc-v669"
        );
        let wrapped = fitted(text, Some(12));
        assert!(
            wrapped.lines().all(|line| line.chars().count() <= 12),
            "{wrapped}"
        );
    }

    #[test]
    fn formats() {
        assert_eq!(us(1_999), 1);
        assert_eq!(us1(1_950), "1.9");
        assert_eq!(us1(1_960), "2.0");
        assert_eq!(clock_time(3_725_000_000_000), "1:02:05");
    }
}
