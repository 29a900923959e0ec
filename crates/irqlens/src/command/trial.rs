//! `irqlens trial net`: each design at each offered rate on a test bed of its own, the
//! changes journaled in tune's journal and put back at exit (`irqlens tune --revert`
//! after a SIGKILL).

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{STOP, interrupted};
use crate::cli::TrialNetArgs;
use irqlens_analyze::trial::summarize;
use irqlens_collect::journal::{JOURNAL_PATH, Journal, SystemKnobs};
use irqlens_collect::{system, trial as trial_run};
use irqlens_model::bounds::Check;
use irqlens_model::trial::{TrialPoint, TrialReport};
use irqlens_present::html::Page;

pub fn run(args: &TrialNetArgs) -> Result<()> {
    let options = args.options()?;
    let cyclic = args.cyclic()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "irqlens trial needs root: it makes network namespaces and changes thread priorities"
        );
    }
    system::check_can_trace()?;
    // the files are written at the end: a path that cannot be is refused before anything
    // is built
    for (option, path) in [("--html", &args.html), ("--record", &args.record)] {
        if let Some(path) = path {
            irqlens_record::output::create(path)
                .with_context(|| format!("{option} {}", path.display()))?;
        }
    }
    let progress = !args.quiet;
    let mut session = Session(Some(Journal::begin(Path::new(JOURNAL_PATH), "trial")?));
    let mut points = Vec::new();
    let total = options.rounds as usize * options.designs.len() * options.rates.len();
    // round after round of the whole ladder: a slow stretch of the machine (the
    // hypervisor's steal, another load) falls on different points in each
    let ladder = (1..=options.rounds).flat_map(|round| {
        let rates = &options.rates;
        (options.designs.iter())
            .flat_map(move |&design| rates.iter().map(move |&rate| (round, design, rate)))
    });
    for (round, design, rate) in ladder {
        if interrupted() {
            break;
        }
        if progress {
            let of_rounds = if options.rounds > 1 {
                format!(" (round {round}/{})", options.rounds)
            } else {
                String::new()
            };
            eprintln!(
                "irqlens: trial {}/{total}: {design} at {rate}/s{of_rounds} ...",
                points.len() + 1
            );
        }
        let journal = session.0.as_mut().expect("a live session");
        let Some(point) =
            trial_run::run_point(journal, design, rate, round, &options, &cyclic, &STOP)?
        else {
            break;
        };
        if progress {
            eprintln!("irqlens:   {}", summary_line(&point));
        }
        points.push(point);
    }
    let failed = session.finish();
    let report = TrialReport {
        header: irqlens_model::run::Header::new("trial"),
        load: "net".into(),
        kernel: system::kernel_release(),
        cpus: options.cpus(),
        designs: summarize(&points),
        options,
        // STOP is set only by the signal handler, with INTERRUPTED
        interrupted: interrupted(),
        points,
    };
    if let Some(path) = &args.record {
        irqlens_record::result::write(path, &report)?;
    }
    if let Some(path) = &args.html {
        write_html(&report, "irqlens trial net", path)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        super::print_json(&mut out, &serde_json::to_value(&report)?)?;
    } else {
        irqlens_present::trial::write_text(&mut out, &report)?;
    }
    if failed > 0 {
        bail!("{failed} change(s) could not be put back: run `irqlens tune --revert`");
    }
    Ok(())
}

/// The trial's HTML page, under `heading`.
pub fn write_html(report: &TrialReport, heading: &str, path: &Path) -> Result<()> {
    let mut page = Page::new("irqlens trial net", &report.kernel);
    page.trial(heading, report);
    super::write_html(&page, path)
}

/// A point's progress line.
fn summary_line(point: &TrialPoint) -> String {
    let cyclic = point.cyclic.as_ref().map_or("-".into(), |c| {
        format!("{} us", irqlens_present::us(c.max_ns))
    });
    format!(
        "sent {:.0}/s, echoed {:.0}/s ({:.1}% lost), cyclic max {cyclic}",
        point.sent_pps, point.echoed_pps, point.loss_percent
    )
}

/// The journal, whose changes are put back when the trial ends, however it ends.
struct Session(Option<Journal>);

impl Session {
    /// Puts everything back; returns how many changes could not be.
    fn finish(&mut self) -> usize {
        self.0
            .take()
            .map_or(0, |journal| journal.close(&SystemKnobs))
    }
}

impl Drop for Session {
    /// An error or a panic between two points still puts everything back.
    fn drop(&mut self) {
        self.finish();
    }
}

/// The trial a result recording (`trial net --record`) holds; `None` for any other file.
pub(super) fn read_recording(path: &Path) -> Result<Option<TrialReport>> {
    irqlens_record::result::read(path)?.map_or(Ok(None), |document| trial_in(path, document))
}

/// A trial's recording or its `--json` document; `None` for anything else.
pub(super) fn read_recording_or_document(path: &Path) -> Result<Option<TrialReport>> {
    if let Some(trial) = read_recording(path)? {
        return Ok(Some(trial));
    }
    // a measurement's recording is gzip, not JSON text
    let document = irqlens_record::read_document(path)
        .ok()
        .filter(|bytes| irqlens_record::is_json_text(bytes))
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    document.map_or(Ok(None), |document| trial_in(path, document))
}

/// The trial `document` (read from `path`) is, if it is one.
fn trial_in(path: &Path, document: serde_json::Value) -> Result<Option<TrialReport>> {
    if document["tool"] != irqlens_model::run::TOOL || document["command"] != "trial" {
        return Ok(None);
    }
    let trial: TrialReport = serde_json::from_value(document)
        .with_context(|| format!("{}: not a trial this irqlens reads", path.display()))?;
    // a file can say anything: held to the bounds the command line's options are
    trial
        .check()
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(Some(trial))
}
