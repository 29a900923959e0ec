//! `irqlens bh`: live, or replayed from a recording.

use std::io::Write;

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;
use irqlens_collect::system;

use super::{Outcome, STOP, close_tap, open_tap, with_progress};
use crate::cli::{BhArgs, BhCommand, BhMode};
use irqlens_collect::bh::{self as bh_run, BhOutcome};
use irqlens_model::bh::BhOptions;
use irqlens_model::hist::HistOptions;
use irqlens_model::system::Capability;
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::prometheus::Exporter;
use irqlens_present::{Names, bh as show};
use irqlens_probe;
use irqlens_record::Reader;

/// A bh run's result and how it was asked to be shown.
pub struct BhResult {
    /// The kernel release the run was measured on.
    kernel: String,
    args: BhArgs,
    hist: Option<HistOptions>,
    options: BhOptions,
    outcome: BhOutcome,
    names: Names,
    not_observable: Vec<String>,
}

/// The arguments and, in `hist` mode, the checked histogram layout.
fn split(command: BhCommand) -> Result<(BhArgs, Option<HistOptions>)> {
    Ok(match command.mode {
        None => (command.args, None),
        Some(BhMode::Top(args)) => (args, None),
        Some(BhMode::Hist(hist)) => (hist.bh, Some(hist.hist.options()?)),
    })
}

pub fn measure(command: BhCommand) -> Result<()> {
    let (args, hist) = split(command)?;
    let options = args.options(&hist.unwrap_or_default())?;
    let mut exporter = Exporter::start(args.output.prometheus_address()?, super::names())?;
    let mut tap = open_tap(
        &args.output,
        Capability::Bh,
        &options.cpus,
        Some(options.load),
    )?;
    let mut outcome = with_progress(
        args.output.progress(),
        options.duration,
        "bottom halves",
        |show| {
            bh_run::run(&options, &STOP, &mut tap, |stats, elapsed| {
                exporter.bh(stats);
                show(elapsed, stats.samples())
            })
        },
    )?;
    drop(exporter);
    outcome.info.interrupted = super::interrupted();
    let recorded = close_tap(tap, &outcome.info);
    let result = BhResult {
        kernel: system::kernel_release(),
        args,
        hist,
        options,
        outcome,
        names: super::names(),
        not_observable: irqlens_probe::checkpoint::not_observable(),
    };
    super::print(&result, &result.args.output, "irqlens bh")?;
    recorded
}

pub fn replay(command: BhCommand, reader: &mut Reader) -> Result<BhResult> {
    let (args, hist) = split(command)?;
    let options = args.options_on(&hist.unwrap_or_default(), reader.header().cpus.clone())?;
    let outcome = bh_run::replay(&options, reader)?;
    Ok(BhResult {
        kernel: reader.header().system.kernel_release.clone(),
        args,
        hist,
        options,
        outcome,
        names: super::recorded_names(reader.end()?),
        // what this irqlens cannot observe on any kernel
        not_observable: irqlens_probe::checkpoint::not_observable(),
    })
}

impl Outcome for BhResult {
    fn json(&self) -> serde_json::Value {
        let BhOutcome { stats, info } = &self.outcome;
        show::to_json(
            stats,
            info,
            &self.options,
            &self.names,
            &self.not_observable,
            &self.kernel,
        )
    }

    fn write_text(&self, out: &mut dyn Write) -> Result<()> {
        let BhOutcome { stats, info } = &self.outcome;
        let losses = info.losses();
        match &self.hist {
            Some(hist) => show::write_histogram(out, stats, hist, &losses)?,
            None => {
                show::write_table(out, stats, &self.names, &losses)?;
                show::write_causes(out, stats, &self.names, self.args.causes, &losses)?;
                show::write_worst(out, stats, &self.names)?;
            }
        }
        show::write_run_info(out, stats, info, &self.options, &self.not_observable)?;
        Ok(())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        let BhOutcome { stats, info } = &self.outcome;
        page.bh(heading, stats, info, &self.names);
    }

    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.outcome.stats, &self.names)
    }
}
