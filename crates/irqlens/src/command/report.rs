//! `irqlens report FILE...`: recordings re-analyzed offline, shown as the live run
//! showed them.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::{ReportArgs, ShowArgs};
use crate::driver::{Done, Run, Tool};
use crate::measure::{Outcome, recorded_names, replay};
use irqlens_model::run::RecordingSummary;
use irqlens_present::document::{RecordedTrial, Section, Sections};
use irqlens_present::perfetto;
use irqlens_record::Reader;

impl Tool for ReportArgs {
    const NAME: &'static str = "report";
    const STOPS_AT_SIGNAL: bool = false;

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn html(&self) -> Option<&Path> {
        self.page.html.as_deref()
    }

    fn execute(self, _run: &mut Run) -> Result<Done> {
        if let Some(trace) = &self.perfetto {
            let [recording] = self.files.as_slice() else {
                bail!(
                    "--perfetto {} takes one recording, not {}",
                    trace.display(),
                    self.files.len()
                );
            };
            if irqlens_record::result::read(recording)?.is_some() {
                bail!(
                    "{}: a trial's recording has no timeline for --perfetto",
                    recording.display()
                );
            }
            // the functions' names are in the end line, the trace is written as it is read
            let symbols = recorded_names(Reader::open(recording)?.skip_inputs()?).symbols;
            perfetto::convert(recording, trace, symbols)?;
        }
        if let Some(trial) = recorded_trial(&self.files)? {
            return Ok(Done::new(trial));
        }
        let sections = self
            .files
            .iter()
            .map(|path| {
                let (reader, outcome) = replay(path)?;
                Ok(section(&reader, outcome))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Done::new(Sections(sections)))
    }
}

/// The trial a result recording (`trial net --record`) holds, if the one file given is
/// one; a result recording among others is refused (it has no place in their report).
fn recorded_trial(files: &[std::path::PathBuf]) -> Result<Option<RecordedTrial>> {
    let mut found = None;
    for path in files {
        let Some(report) = super::trial::read_recording(path)? else {
            continue;
        };
        if files.len() > 1 {
            bail!(
                "{}: a trial's recording is reported alone, not with other recordings",
                path.display()
            );
        }
        let file = path.display().to_string();
        found = Some(RecordedTrial { file, report });
    }
    Ok(found)
}

/// A replayed recording as `report` and `compare` show it: under a line telling which
/// run it was (file, command line, when, where), with where it comes from in its JSON.
pub fn section(reader: &Reader, outcome: Box<dyn Outcome>) -> Section {
    let header = reader.header();
    let system = &header.system;
    Section {
        heading: format!(
            "{}: {} | {} on {} ({}, kernel {})",
            reader.name(),
            header.argv.join(" "),
            header.started_at,
            system.hostname,
            system.cpu_model,
            system.kernel_release,
        ),
        recording: RecordingSummary {
            file: reader.name().to_owned(),
            format_version: header.version,
            argv: header.argv.clone(),
            started_at: header.started_at.clone(),
            irqlens_version: header.irqlens_version.clone(),
            hostname: system.hostname.clone(),
            cpu_model: system.cpu_model.clone(),
            clocksource: system.clocksource.clone(),
        },
        kernel: system.kernel_release.clone(),
        document: outcome,
    }
}
