//! `irqlens report FILE...`: recordings re-analyzed offline, shown as the live run
//! showed them.

use std::path::Path;

use anyhow::{Result, bail};

use super::trial::{Recorded, open};
use crate::cli::{ReportArgs, ShowArgs};
use crate::driver::{Done, Run, Tool};
use crate::measure::{Outcome, recorded_names, replay_from};
use irqlens_model::run::RecordingSummary;
use irqlens_present::document::{RecordedTrial, Section, Sections};
use irqlens_present::perfetto;
use irqlens_record::{Opened, Reader};

impl Tool for ReportArgs {
    const NAME: &'static str = "report";
    const STOPS_AT_SIGNAL: bool = false;

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn html(&self) -> Option<&Path> {
        self.page.html.as_deref()
    }

    fn files(&self) -> Vec<(&'static str, &Path)> {
        (self.perfetto.as_deref().map(|path| ("--perfetto", path)))
            .into_iter()
            .collect()
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
            convert(recording, trace)?;
        }
        let mut sections = Vec::new();
        for path in &self.files {
            match open(path)? {
                Recorded::Trial(file, report) if self.files.len() == 1 => {
                    return Ok(Done::new(RecordedTrial {
                        file,
                        report: *report,
                    }));
                }
                Recorded::Trial(file, _) => bail!(
                    "{file}: a trial's recording is reported alone, not with other recordings"
                ),
                Recorded::Measurement(reader) => {
                    let (reader, outcome) = replay_from(*reader)?;
                    sections.push(section(&reader, outcome));
                }
            }
        }
        Ok(Done::new(Sections(sections)))
    }
}

/// `--perfetto TRACE`: the recording converted, read twice (the functions' names are in
/// its end line, and the trace is written as it is read).
fn convert(recording: &Path, trace: &Path) -> Result<()> {
    if !std::fs::metadata(recording).is_ok_and(|found| found.is_file()) {
        bail!(
            "--perfetto reads {} twice: name a file, not standard input or a pipe (save \
             the recording to a file first)",
            recording.display()
        );
    }
    let symbols = match Opened::open(recording)? {
        Opened::Document(name, document) if document["command"] == "trial" => {
            bail!("{name}: a trial's recording has no timeline for --perfetto")
        }
        opened => recorded_names(opened.recording()?.skip_inputs()?).symbols,
    };
    perfetto::convert(recording, trace, symbols)
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
