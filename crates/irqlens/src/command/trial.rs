//! `irqlens trial net`: each design at each offered rate on a test bed of its own, the
//! changes journaled in tune's journal and put back at exit (`irqlens tune --revert`
//! after a SIGKILL).

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{ShowArgs, TrialNetArgs};
use crate::driver::{Actions, Done, Measures, Needs, Run, STOP, Tool, interrupted};
use irqlens_analyze::trial::summarize;
use irqlens_collect::{system, trial as trial_run};
use irqlens_model::bounds::Check;
use irqlens_model::trial::TrialReport;

impl Tool for TrialNetArgs {
    const NAME: &'static str = "trial";

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn needs(&self) -> Needs {
        Needs::Root("trial makes network namespaces and changes thread priorities")
    }

    fn measures(&self) -> Option<Measures> {
        Some(Measures {
            cpus: self.options().ok()?.cpus(),
            alone: true,
        })
    }

    fn html(&self) -> Option<&Path> {
        self.page.html.as_deref()
    }

    fn files(&self) -> Vec<(&'static str, &Path)> {
        (self.record.as_deref().map(|path| ("--record", path)))
            .into_iter()
            .collect()
    }

    fn actions(&self) -> Actions {
        Actions {
            on_end: self.end.on_end.clone(),
            ..Actions::default()
        }
    }

    fn execute(self, run: &mut Run) -> Result<Done> {
        let options = self.options()?;
        let cyclic = self.cyclic()?;
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
            let of_rounds = if options.rounds > 1 {
                format!(" (round {round}/{})", options.rounds)
            } else {
                String::new()
            };
            run.say(format_args!(
                "trial {}/{total}: {design} at {rate}/s{of_rounds} ...",
                points.len() + 1
            ));
            let journal = run.journal()?;
            let Some(point) =
                trial_run::run_point(journal, design, rate, round, &options, &cyclic, &STOP)?
            else {
                break;
            };
            run.say(format_args!(
                "  {}",
                irqlens_present::trial::progress_line(&point)
            ));
            points.push(point);
        }
        let report = TrialReport {
            header: irqlens_model::run::Header::new(Self::NAME),
            load: "net".into(),
            kernel: system::kernel_release(),
            cpus: options.cpus(),
            designs: summarize(&points),
            options,
            // STOP is set only by the signal handler, with INTERRUPTED
            interrupted: interrupted(),
            points,
        };
        if let Some(path) = &self.record {
            irqlens_record::result::write(path, &report)?;
        }
        Ok(Done::new(report))
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
