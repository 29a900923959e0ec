//! `irqlens wakeup`: interrupt-to-task wakeup latency, live or replayed.

use std::io::Write;

use anyhow::Result;
use irqlens_analyze::loss::RunLosses;
use irqlens_collect::wakeup::{self as wakeup_run, WakeupOutcome};
use irqlens_collect::{Tick, system};
use irqlens_model::options::RunOptions;
use irqlens_model::run::RunInfo;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_present::compare::Figure;
use irqlens_present::html::Page;
use irqlens_present::{Names, wakeup as show};
use irqlens_record::Reader;

use super::{Live, Measure, Outcome};
use crate::driver::{Needs, STOP};
use irqlens_present::document::Document;

pub struct WakeupTool;

/// A wakeup run's result and how it is shown.
pub struct WakeupResult {
    /// The kernel release the run was measured on.
    kernel: String,
    options: WakeupOptions,
    outcome: WakeupOutcome,
    names: Names,
}

impl Measure for WakeupTool {
    const NAME: &'static str = "wakeup";
    type Options = WakeupOptions;
    type Result = WakeupResult;
    const COUNTING: &'static str = "wakeups";

    fn recorded(options: &WakeupOptions) -> RunOptions {
        RunOptions::Wakeup(options.clone())
    }

    /// Timer mode with --no-trace loads no BPF: it measures with its own threads alone.
    fn needs(options: &WakeupOptions) -> Needs {
        if options.mode.traced() {
            Needs::Tracing
        } else {
            Needs::Nothing
        }
    }

    fn run(options: WakeupOptions, live: &mut Live<'_>) -> Result<WakeupResult> {
        let exporter = &mut *live.exporter;
        let progress = &mut *live.progress;
        let outcome = wakeup_run::run(
            &options,
            &STOP,
            live.tap,
            |stats, tick: Tick| {
                exporter.wakeup(stats, &tick.lost);
                progress(tick.elapsed, stats.activations())
            },
            |warning| eprintln!("irqlens: warning: {warning}"),
        )?;
        let names = super::names(outcome.stats.thread_cgroups());
        Ok(WakeupResult {
            kernel: system::kernel_release(),
            options,
            outcome,
            names,
        })
    }

    fn replay(options: WakeupOptions, reader: &mut Reader) -> Result<WakeupResult> {
        let outcome = wakeup_run::replay(&options, reader)?;
        Ok(WakeupResult {
            kernel: reader.header().system.kernel_release.clone(),
            options,
            outcome,
            names: super::recorded_names(reader.end()?),
        })
    }
}

impl Document for WakeupResult {
    fn json(&self) -> serde_json::Value {
        let WakeupOutcome { stats, info } = &self.outcome;
        let tables = show::to_json(stats, info, &self.options, &self.names);
        super::measurement_json(
            &WakeupTool::recorded(&self.options),
            &self.kernel,
            info,
            tables,
        )
    }

    fn write_text(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let WakeupOutcome { stats, info } = &self.outcome;
        let names = &self.names;
        match &self.options.hist {
            Some(hist) => show::write_histogram(out, stats, hist, info)?,
            None => {
                let losses = info.losses();
                show::write_summary(out, stats, &self.options, info)?;
                show::write_causes(out, stats, names, self.options.causes, &losses)?;
                show::write_chains(out, stats, names, &losses)?;
                show::write_cdf(out, stats)?;
                show::write_worst(out, stats, names)?;
            }
        }
        Ok(())
    }

    fn write_about(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let WakeupOutcome { stats, info } = &self.outcome;
        if let Some(stop) = &stats.stop {
            show::write_stop(out, stop, &self.names)?;
        }
        show::write_run_info(out, info)?;
        Ok(())
    }

    fn data_only(&self) -> bool {
        super::data_only(self.options.hist.as_ref())
    }

    fn html(&self, page: &mut Page, heading: &str) {
        let WakeupOutcome { stats, info } = &self.outcome;
        page.wakeup(heading, stats, info, &self.names);
    }

    fn threshold_hit(&self) -> bool {
        self.outcome.stats.stop.is_some()
    }

    fn page(&self) -> Option<Page> {
        Some(super::page::<WakeupTool>(self))
    }
}

impl Outcome for WakeupResult {
    fn figures(&self) -> Vec<Figure> {
        show::figures(&self.outcome.stats, &self.names)
    }

    fn run_info(&mut self) -> &mut dyn RunInfo {
        &mut self.outcome.info
    }

    fn costs(&self) -> Vec<irqlens_model::sim::MeasuredCost> {
        irqlens_analyze::sim::calibrate::wakeup_costs(&self.outcome.stats)
    }

    fn check_figures(&self) -> Vec<irqlens_model::check::Figure> {
        irqlens_analyze::check::measured::wakeup_figures(&self.outcome.stats)
    }

    fn causes(&self) -> Option<Vec<irqlens_model::tune::CpuCause>> {
        let symbols = |address| self.names.symbols.name(address);
        Some(irqlens_analyze::advise::wakeup_causes(
            &self.outcome.stats,
            self.outcome.info.held.dma_latency_us,
            &self.names.irqs,
            &symbols,
        ))
    }

    fn kernel(&self) -> &str {
        &self.kernel
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use irqlens_model::units::CpuList;
    use irqlens_model::wakeup::{WakeupMode, WakeupOptions};

    use crate::cli::{Cli, Command};

    /// The options `irqlens wakeup ARGS` resolves to on CPU 0.
    fn resolved(args: &[&str]) -> WakeupOptions {
        let argv = ["irqlens", "wakeup"].iter().chain(args);
        let Some(Command::Wakeup(command)) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not wakeup");
        };
        let (args, hist) = command.split().unwrap();
        args.options_on(hist, CpuList::single(0)).unwrap()
    }

    fn aligned_ns(options: &WakeupOptions) -> Option<u64> {
        match &options.mode {
            WakeupMode::Timer(timer) => timer.aligned_ns,
            WakeupMode::Task(_) => panic!("task mode"),
        }
    }

    #[test]
    fn thread_threshold_has_rtla_s_name_and_the_older_one() {
        for args in [["-T", "5"], ["--thread", "5"], ["-s", "5"], ["--stop", "5"]] {
            assert_eq!(resolved(&args).stats.stop_total_ns, Some(5_000), "{args:?}");
        }
        assert_eq!(resolved(&["--irq", "7"]).stats.stop_irq_ns, Some(7_000));
    }

    #[test]
    fn timer_mode_holds_the_dma_latency_at_0_unless_told() {
        assert_eq!(resolved(&[]).dma_latency_us, Some(0));
        assert_eq!(
            resolved(&["--dma-latency", "10us"]).dma_latency_us,
            Some(10)
        );
        assert_eq!(resolved(&["--dma-latency", "off"]).dma_latency_us, None);
        // task mode measures the machine as it is
        assert_eq!(resolved(&["--pid", "1"]).dma_latency_us, None);
        assert_eq!(
            resolved(&["--pid", "1", "--dma-latency", "0"]).dma_latency_us,
            Some(0)
        );
    }

    #[test]
    fn aligned_is_off_unless_asked_and_0_alone() {
        assert_eq!(aligned_ns(&resolved(&[])), None);
        assert_eq!(aligned_ns(&resolved(&["-A"])), Some(0));
        assert_eq!(aligned_ns(&resolved(&["-A", "-d", "1"])), Some(0));
        assert_eq!(aligned_ns(&resolved(&["--aligned", "100"])), Some(100_000));
        assert_eq!(aligned_ns(&resolved(&["-A", "250us"])), Some(250_000));
    }
}
