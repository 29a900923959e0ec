//! `irqlens wakeup`: live, or replayed from a recording.

use std::io::Write;

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;

use super::{Outcome, STOP, close_tap, open_tap, with_progress};
use crate::cli::{WakeupArgs, WakeupCommand, WakeupModeCommand};
use irqlens_collect::wakeup::{self as wakeup_run, WakeupOutcome};
use irqlens_model::hist::HistOptions;
use irqlens_model::system::Capability;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::prometheus::Exporter;
use irqlens_present::{Names, wakeup as show};
use irqlens_record::Reader;

/// A wakeup run's result and how it was asked to be shown.
pub struct WakeupResult {
    args: WakeupArgs,
    hist: Option<HistOptions>,
    options: WakeupOptions,
    outcome: WakeupOutcome,
    names: Names,
}

/// The arguments and, in `hist` mode, the checked histogram layout.
fn split(command: WakeupCommand) -> Result<(WakeupArgs, Option<HistOptions>)> {
    Ok(match command.mode {
        None => (command.args, None),
        Some(WakeupModeCommand::Top(args)) => (args, None),
        Some(WakeupModeCommand::Hist(hist)) => (hist.wakeup, Some(hist.hist.options()?)),
    })
}

pub fn measure(command: WakeupCommand) -> Result<()> {
    let (args, hist) = split(command)?;
    let options = args.options(&hist.unwrap_or_default())?;
    let mut exporter = Exporter::start(args.output.prometheus_address()?, super::names())?;
    let mut tap = open_tap(&args.output, Capability::Wakeup, &options.cpus, None)?;
    let mut outcome = with_progress(
        args.output.progress(),
        options.duration,
        "wakeups",
        |show| {
            wakeup_run::run(&options, &STOP, &mut tap, |stats, elapsed| {
                exporter.wakeup(stats);
                show(elapsed, stats.activations())
            })
        },
    )?;
    drop(exporter);
    outcome.info.interrupted = super::interrupted();
    let recorded = close_tap(tap, &outcome.info);
    let result = WakeupResult {
        args,
        hist,
        options,
        outcome,
        names: super::names(),
    };
    super::print(&result, &result.args.output, "irqlens wakeup")?;
    recorded
}

pub fn replay(command: WakeupCommand, reader: &mut Reader) -> Result<WakeupResult> {
    let (args, hist) = split(command)?;
    let options = args.options_on(&hist.unwrap_or_default(), reader.header().cpus.clone())?;
    let outcome = wakeup_run::replay(&options, reader)?;
    Ok(WakeupResult {
        args,
        hist,
        options,
        outcome,
        names: super::recorded_names(reader.end()?),
    })
}

impl Outcome for WakeupResult {
    fn json(&self) -> serde_json::Value {
        let WakeupOutcome { stats, info } = &self.outcome;
        show::to_json(stats, info, &self.options, &self.names)
    }

    fn write_text(&self, out: &mut dyn Write) -> Result<()> {
        let WakeupOutcome { stats, info } = &self.outcome;
        let names = &self.names;
        match &self.hist {
            Some(hist) => show::write_histogram(out, stats, hist, info)?,
            None => {
                let losses = info.losses();
                show::write_summary(out, stats, &self.options, info)?;
                show::write_causes(out, stats, names, self.args.causes, &losses)?;
                show::write_chains(out, stats, names, &losses)?;
                show::write_cdf(out, stats)?;
                show::write_worst(out, stats, names)?;
            }
        }
        if let Some(stop) = &stats.stop {
            show::write_stop(out, stop, names)?;
        }
        show::write_run_info(out, info)?;
        Ok(())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        let WakeupOutcome { stats, info } = &self.outcome;
        page.wakeup(heading, stats, info, &self.names);
    }

    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.outcome.stats, &self.names)
    }
}
