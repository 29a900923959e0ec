//! `irqlens report FILE...`: recordings re-analyzed offline, shown as the live run
//! showed them.

use std::io::Write;

use anyhow::{Result, bail};

use super::{Outcome, print_json, recorded_names, replay};
use crate::cli::ReportArgs;
use irqlens_model::run::RecordingSummary;
use irqlens_model::trial::TrialReport;
use irqlens_present::html::Page;
use irqlens_present::perfetto;
use irqlens_record::Reader;

pub fn run(args: &ReportArgs) -> Result<()> {
    if let Some(trace) = &args.perfetto {
        let [recording] = args.files.as_slice() else {
            bail!(
                "--perfetto {} takes one recording, not {}",
                trace.display(),
                args.files.len()
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
    if let Some(trial) = trial_result(args)? {
        return report_trial(args, &trial);
    }
    let replayed = args
        .files
        .iter()
        .map(|path| replay(path))
        .collect::<Result<Vec<_>>>()?;
    // the file first: stdout may be a reader that stops early
    if let Some(path) = &args.html {
        // the kernels the recordings were made on, not this machine's
        let mut kernels: Vec<&str> = replayed
            .iter()
            .map(|(reader, _)| reader.header().system.kernel_release.as_str())
            .collect();
        kernels.sort_unstable();
        kernels.dedup();
        let mut page = Page::new("irqlens report", &kernels.join(", "));
        for (reader, outcome) in &replayed {
            outcome.html(&mut page, &heading(reader));
        }
        super::write_html(&page, path)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let documents = replayed
            .iter()
            .map(|(reader, outcome)| document(reader, outcome.as_ref()))
            .collect();
        return print_json(&mut out, &serde_json::Value::Array(documents));
    }
    for (index, (reader, outcome)) in replayed.iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        writeln!(out, "# {}", heading(reader))?;
        outcome.write_text(&mut out)?;
    }
    Ok(())
}

/// The trial a result recording (`trial net --record`) holds, if the one file given is
/// one; a result recording among others is refused (it has no place in their report).
fn trial_result(args: &ReportArgs) -> Result<Option<(String, TrialReport)>> {
    let mut found = None;
    for path in &args.files {
        let Some(trial) = super::trial::read_recording(path)? else {
            continue;
        };
        if args.files.len() > 1 {
            bail!(
                "{}: a trial's recording is reported alone, not with other recordings",
                path.display()
            );
        }
        found = Some((path.display().to_string(), trial));
    }
    Ok(found)
}

/// A trial's recording shown as the run showed it.
fn report_trial(args: &ReportArgs, (file, trial): &(String, TrialReport)) -> Result<()> {
    if let Some(path) = &args.html {
        super::trial::write_html(trial, &format!("{file}: irqlens trial net"), path)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        return print_json(&mut out, &serde_json::to_value(trial)?);
    }
    writeln!(out, "# {file}: irqlens trial net, kernel {}", trial.kernel)?;
    Ok(irqlens_present::trial::write_text(&mut out, trial)?)
}

/// One line telling which run this was: file, command line, when, where.
pub fn heading(reader: &Reader) -> String {
    let header = reader.header();
    format!(
        "{}: {} | {} on {} ({}, kernel {})",
        reader.name(),
        header.argv.join(" "),
        header.started_at,
        header.system.hostname,
        header.system.cpu_model,
        header.system.kernel_release,
    )
}

/// A recording's `--json` document: the live run's, with where it comes from.
pub fn document(reader: &Reader, outcome: &dyn Outcome) -> serde_json::Value {
    let header = reader.header();
    let recording = RecordingSummary {
        file: reader.name().to_owned(),
        format_version: header.version,
        argv: header.argv.clone(),
        started_at: header.started_at.clone(),
        irqlens_version: header.irqlens_version.clone(),
        hostname: header.system.hostname.clone(),
        cpu_model: header.system.cpu_model.clone(),
        clocksource: header.system.clocksource.clone(),
    };
    let mut document = outcome.json();
    document["recording"] = serde_json::to_value(recording).expect("plain data");
    document
}
