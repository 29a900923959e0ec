//! `irqlens trial net`: each design at each offered rate on a test bed of its own, the
//! changes journaled in tune's journal and put back at exit (`irqlens tune --revert`
//! after a SIGKILL).

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{ShowArgs, TrialNetArgs};
use crate::driver::{Actions, Done, Measures, Needs, Run, STOP, Tool, interrupted};
use irqlens_analyze::trial::{compare, summarize};
use irqlens_collect::{system, trial as trial_run};
use irqlens_model::bounds::Check;
use irqlens_model::trial::TrialReport;
use irqlens_record::{Opened, Reader};
use serde::Deserialize;

impl Tool for TrialNetArgs {
    const NAME: &'static str = "trial";

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn validate(&self) -> Result<()> {
        self.options().map(drop)
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

    fn changes_machine(&self) -> bool {
        true
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
            comparisons: compare(&points),
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

/// What a file given to `report` or `sim` holds.
pub(super) enum Recorded {
    /// A trial's recording (`trial net --record`) or its `--json` document, and its name.
    Trial(String, Box<TrialReport>),
    /// A measurement's recording, its header read.
    Measurement(Box<Reader>),
}

/// Opens `path` (`-`: standard input), read once: a trial, or a measurement's recording;
/// any other document is refused, saying what it is.
pub(super) fn open(path: &Path) -> Result<Recorded> {
    match Opened::open(path)? {
        Opened::Recording(reader) => Ok(Recorded::Measurement(reader)),
        Opened::Document(name, document) => match trial_in(&name, &document)? {
            Some(trial) => Ok(Recorded::Trial(name, Box::new(trial))),
            None => Err(irqlens_record::not_a_recording(&name, &document)),
        },
    }
}

/// The trial `document` (read from `name`) is, if it is one.
fn trial_in(name: &str, document: &serde_json::Value) -> Result<Option<TrialReport>> {
    if document["tool"] != irqlens_model::run::TOOL || document["command"] != "trial" {
        return Ok(None);
    }
    let trial = TrialReport::deserialize(document)
        .with_context(|| format!("{name}: not a trial this irqlens reads"))?;
    // a file can say anything: held to the bounds the command line's options are
    trial.check().map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(Some(trial))
}
