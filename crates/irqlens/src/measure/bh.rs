//! `irqlens bh`: the INTSPECT method's run, live or replayed.

use std::io::Write;

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;
use irqlens_collect::bh::{self as bh_run, BhOutcome};
use irqlens_collect::system;
use irqlens_model::bh::BhOptions;
use irqlens_model::options::RunOptions;
use irqlens_model::run::RunInfo;
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::{Names, bh as show};
use irqlens_record::Reader;

use super::{Live, Measure, Outcome};
use crate::driver::STOP;
use irqlens_present::document::Document;

pub struct BhTool;

/// A bh run's result and how it is shown.
pub struct BhResult {
    options: BhOptions,
    outcome: BhOutcome,
    names: Names,
    /// The kernel release the run was measured on.
    kernel: String,
}

impl Measure for BhTool {
    const NAME: &'static str = "bh";
    type Options = BhOptions;
    type Result = BhResult;
    const COUNTING: &'static str = "bottom halves";

    fn recorded(options: &BhOptions) -> RunOptions {
        RunOptions::Bh(options.clone())
    }

    fn run(options: BhOptions, live: &mut Live<'_>) -> Result<BhResult> {
        let exporter = &mut *live.exporter;
        let progress = &mut *live.progress;
        let outcome = bh_run::run(&options, &STOP, live.tap, |stats, tick| {
            exporter.bh(stats, &tick.lost);
            progress(tick.elapsed, stats.samples())
        })?;
        let names = super::names(outcome.stats.thread_cgroups());
        Ok(BhResult {
            options,
            outcome,
            names,
            kernel: system::kernel_release(),
        })
    }

    fn replay(options: BhOptions, reader: &mut Reader) -> Result<BhResult> {
        let outcome = bh_run::replay(&options, reader)?;
        Ok(BhResult {
            options,
            outcome,
            names: super::recorded_names(reader.end()?),
            kernel: reader.header().system.kernel_release.clone(),
        })
    }
}

impl Document for BhResult {
    fn json(&self) -> serde_json::Value {
        let BhOutcome { stats, info } = &self.outcome;
        let tables = show::to_json(stats, info, &self.options, &self.names);
        super::measurement_json(&BhTool::recorded(&self.options), &self.kernel, info, tables)
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let BhOutcome { stats, info } = &self.outcome;
        let losses = info.losses();
        match &self.options.hist {
            Some(hist) => show::write_histogram(out, stats, hist, &losses)?,
            None => {
                show::write_table(out, stats, &self.names, &losses)?;
                show::write_causes(out, stats, &self.names, self.options.causes, &losses)?;
                show::write_worst(out, stats, &self.names)?;
            }
        }
        Ok(())
    }

    fn write_about(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let BhOutcome { stats, info } = &self.outcome;
        show::write_run_info(out, stats, info, &self.options)?;
        Ok(())
    }

    fn data_only(&self) -> bool {
        super::data_only(self.options.hist.as_ref())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        let BhOutcome { stats, info } = &self.outcome;
        page.bh(heading, stats, info, &self.names);
    }

    fn page(&self) -> Option<Page> {
        Some(super::page::<BhTool>(self))
    }
}

impl Outcome for BhResult {
    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.outcome.stats, &self.names)
    }

    fn run_info(&mut self) -> &mut dyn RunInfo {
        &mut self.outcome.info
    }

    fn costs(&self) -> Vec<irqlens_model::sim::MeasuredCost> {
        irqlens_analyze::sim::calibrate::bh_costs(&self.outcome.stats)
    }

    fn check_figures(&self) -> Vec<irqlens_model::check::Figure> {
        irqlens_analyze::check::measured::bh_figures(&self.outcome.stats)
    }

    fn causes(&self) -> Option<Vec<irqlens_model::tune::CpuCause>> {
        let symbols = |address| self.names.symbols.name(address);
        Some(irqlens_analyze::advise::bh_causes(
            &self.outcome.stats,
            &self.options.cpus,
            &self.names.irqs,
            &symbols,
        ))
    }

    fn kernel(&self) -> &str {
        &self.kernel
    }
}
