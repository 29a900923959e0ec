//! `irqlens noise`: live, or replayed from a recording.

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;

use super::{Outcome, STOP, close_tap, open_tap, with_progress};
use crate::cli::{NoiseArgs, NoiseCommand, NoiseMode};
use irqlens_analyze::loss::Losses;
use irqlens_collect::noise::{self as noise_run, NoiseOutcome};
use irqlens_collect::system;
use irqlens_model::hist::HistOptions;
use irqlens_model::noise::NoiseOptions;
use irqlens_model::system::Capability;
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::prometheus::Exporter;
use irqlens_present::{self, noise as show};
use irqlens_record::Reader;

/// A noise run's result and how it was asked to be shown.
pub struct NoiseResult {
    /// The kernel release the run was measured on.
    kernel: String,
    args: NoiseArgs,
    hist: Option<HistOptions>,
    options: NoiseOptions,
    outcome: NoiseOutcome,
    irq_names: HashMap<u32, String>,
}

/// The arguments and, in `hist` mode, the checked histogram layout.
fn split(command: NoiseCommand) -> Result<(NoiseArgs, Option<HistOptions>)> {
    Ok(match command.mode {
        None => (command.args, None),
        Some(NoiseMode::Top(args)) => (args, None),
        Some(NoiseMode::Hist(hist)) => (hist.noise, Some(hist.hist.options()?)),
    })
}

pub fn measure(command: NoiseCommand) -> Result<()> {
    let (args, hist) = split(command)?;
    let options = args.options(&hist.unwrap_or_default())?;
    let mut tap = open_tap(&args.output, Capability::Noise, &options.cpus, None)?;
    let live = !args.output.quiet
        && !args.output.json
        && hist.is_none()
        && irqlens_present::live_terminal();
    // without a live table, a long run still shows it is alive (on a terminal only)
    let progress = !live && !args.output.quiet && irqlens_present::progress_terminal();
    let mut exporter = Exporter::start(args.output.prometheus_address()?, super::names())?;

    let mut outcome = with_progress(progress, options.duration, "noise samples", |report| {
        noise_run::run(&options, &STOP, &mut tap, |analysis, elapsed| {
            exporter.noise(analysis);
            if live {
                let mut out = io::stdout().lock();
                // redraw in place, as rtla's top does
                let _ = write!(out, "\x1b[H\x1b[2J");
                let _ = show::write_summary(
                    &mut out,
                    analysis,
                    elapsed.as_nanos() as u64,
                    &Losses::records(0),
                );
                let _ = out.flush();
            } else if progress {
                report(elapsed, analysis.summaries().map(|s| s.samples).sum());
            }
        })
    })?;
    drop(exporter);
    outcome.info.interrupted = super::interrupted();
    let recorded = close_tap(tap, &outcome.info);
    if live {
        write!(io::stdout(), "\x1b[H\x1b[2J")?;
    }
    let result = NoiseResult {
        kernel: system::kernel_release(),
        args,
        hist,
        options,
        outcome,
        irq_names: system::irq_line_names(),
    };
    super::print(&result, &result.args.output, "irqlens noise")?;
    recorded
}

pub fn replay(command: NoiseCommand, reader: &mut Reader) -> Result<NoiseResult> {
    let (args, hist) = split(command)?;
    let options = args.options_on(&hist.unwrap_or_default(), reader.header().cpus.clone())?;
    let outcome = noise_run::replay(&options, reader)?;
    Ok(NoiseResult {
        kernel: reader.header().system.kernel_release.clone(),
        args,
        hist,
        options,
        outcome,
        irq_names: super::recorded_names(reader.end()?).irqs,
    })
}

impl Outcome for NoiseResult {
    fn json(&self) -> serde_json::Value {
        let NoiseOutcome { analysis, info } = &self.outcome;
        show::to_json(analysis, info, &self.options, &self.irq_names, &self.kernel)
    }

    fn write_text(&self, out: &mut dyn Write) -> Result<()> {
        let NoiseOutcome { analysis, info } = &self.outcome;
        match &self.hist {
            Some(hist) => show::write_histogram(out, analysis, hist)?,
            None => {
                show::write_summary(out, analysis, info.elapsed_ns, &info.losses())?;
                show::write_breakdown(out, analysis)?;
                show::write_causes(out, analysis, &self.irq_names, self.args.causes)?;
            }
        }
        if let Some(stop) = analysis.stop_report() {
            show::write_stop(out, stop, &self.irq_names)?;
        }
        show::write_run_info(out, analysis, info)?;
        Ok(())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        let NoiseOutcome { analysis, info } = &self.outcome;
        page.noise(heading, analysis, info, &self.irq_names);
    }

    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.outcome.analysis, &self.irq_names)
    }
}
