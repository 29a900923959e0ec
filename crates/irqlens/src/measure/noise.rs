//! `irqlens noise`: the osnoise method's run, live or replayed.

use std::io::{self, Write};

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;
use irqlens_collect::cgroup::CgroupNamer;
use irqlens_collect::noise::{self as noise_run, NoiseOutcome};
use irqlens_collect::system;
use irqlens_model::noise::NoiseOptions;
use irqlens_model::options::RunOptions;
use irqlens_model::run::RunInfo;
use irqlens_model::workload::WorkloadBy;
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::terminal::Printable;
use irqlens_present::{self, Names, noise as show};
use irqlens_record::Reader;

use super::{Live, Measure, Outcome};
use crate::cli::OutputArgs;
use crate::driver::STOP;
use irqlens_present::document::Document;

pub struct NoiseTool;

/// A noise run's result and how it is shown.
pub struct NoiseResult {
    options: NoiseOptions,
    outcome: NoiseOutcome,
    names: Names,
    /// The kernel release the run was measured on.
    kernel: String,
}

/// Whether the run redraws its summary in place each second, as rtla's top does.
fn live_table(options: &NoiseOptions, output: &OutputArgs) -> bool {
    !output.show.quiet
        && !output.show.json
        && options.hist.is_none()
        && irqlens_present::live_terminal()
}

impl Measure for NoiseTool {
    const NAME: &'static str = "noise";
    type Options = NoiseOptions;
    type Result = NoiseResult;
    const COUNTING: &'static str = "noise samples";

    fn recorded(options: &NoiseOptions) -> RunOptions {
        RunOptions::Noise(options.clone())
    }

    /// Without a live table, a long run still shows it is alive (on a terminal only).
    fn shows_progress(options: &NoiseOptions, output: &OutputArgs) -> bool {
        !live_table(options, output) && !output.show.quiet && irqlens_present::progress_terminal()
    }

    fn run(options: NoiseOptions, live: &mut Live<'_>) -> Result<NoiseResult> {
        let redraw = live_table(&options, live.output);
        let exporter = &mut *live.exporter;
        let progress = &mut *live.progress;
        let mut cgroups = CgroupNamer::default();
        let by = options.by.unwrap_or(WorkloadBy::Pod);
        let outcome = noise_run::run(&options, &STOP, live.tap, |analysis, tick| {
            let thread_cgroups = || cgroups.name(analysis.thread_cgroups()).clone();
            exporter.noise(analysis, &tick.lost, thread_cgroups, by);
            if redraw {
                let mut out = io::stdout().lock();
                // home and clear are irqlens's own; the table's names may not move the cursor
                let _ = write!(out, "\x1b[H\x1b[2J");
                let _ = show::write_summary(
                    &mut Printable(&mut out),
                    analysis,
                    tick.elapsed.as_nanos() as u64,
                    &tick.lost,
                );
                let _ = out.flush();
            } else {
                progress(tick.elapsed, analysis.summaries().map(|s| s.samples).sum());
            }
        })?;
        if redraw {
            write!(io::stdout(), "\x1b[H\x1b[2J")?;
        }
        // the cgroups are named at the end: a walk of the hierarchy per tick would cost
        // the measured CPUs
        let names = super::names(outcome.analysis.thread_cgroups());
        Ok(NoiseResult {
            options,
            outcome,
            names,
            kernel: system::kernel_release(),
        })
    }

    fn replay(options: NoiseOptions, reader: &mut Reader) -> Result<NoiseResult> {
        let outcome = noise_run::replay(&options, reader)?;
        Ok(NoiseResult {
            options,
            outcome,
            names: super::recorded_names(reader.end()?),
            kernel: reader.header().system.kernel_release.clone(),
        })
    }
}

impl Document for NoiseResult {
    fn json(&self) -> serde_json::Value {
        let NoiseOutcome { analysis, info } = &self.outcome;
        let tables = show::to_json(analysis, info, &self.options, &self.names);
        super::measurement_json(
            &NoiseTool::recorded(&self.options),
            &self.kernel,
            info,
            tables,
        )
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let NoiseOutcome { analysis, info } = &self.outcome;
        match &self.options.hist {
            Some(hist) => show::write_histogram(out, analysis, hist)?,
            None => {
                show::write_summary(out, analysis, info.common.elapsed_ns, &info.losses())?;
                show::write_breakdown(out, analysis)?;
                show::write_causes(out, analysis, &self.names, self.options.causes)?;
                if let Some(by) = self.options.by {
                    show::write_workloads(out, analysis, &self.names.cgroups, by)?;
                }
            }
        }
        Ok(())
    }

    fn write_about(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let NoiseOutcome { analysis, info } = &self.outcome;
        if let Some(stop) = analysis.stop_report() {
            show::write_stop(out, stop, &self.names.irqs)?;
        }
        show::write_run_info(out, analysis, info)?;
        Ok(())
    }

    fn data_only(&self) -> bool {
        super::data_only(self.options.hist.as_ref())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        let NoiseOutcome { analysis, info } = &self.outcome;
        page.noise(heading, analysis, info, &self.names, self.options.by);
    }

    fn threshold_hit(&self) -> bool {
        self.outcome.analysis.stop_report().is_some()
    }

    fn page(&self) -> Option<Page> {
        Some(super::page::<NoiseTool>(self))
    }
}

impl Outcome for NoiseResult {
    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.outcome.analysis, &self.names.irqs)
    }

    fn run_info(&mut self) -> &mut dyn RunInfo {
        &mut self.outcome.info
    }

    fn check_figures(&self) -> Vec<irqlens_model::check::Figure> {
        irqlens_analyze::check::measured::noise_figures(&self.outcome.analysis)
    }

    fn causes(&self) -> Option<Vec<irqlens_model::tune::CpuCause>> {
        Some(irqlens_analyze::advise::noise_causes(
            &self.outcome.analysis,
            &self.names.irqs,
        ))
    }

    fn kernel(&self) -> &str {
        &self.kernel
    }
}
