//! `irqlens advise [REC...]` or `irqlens advise -c LIST -d TIME`: the causes a measurement
//! named on each CPU, with the machine's state, turned into remedies.

use anyhow::{Result, bail};

use std::path::PathBuf;

use crate::cli::{AdviseArgs, OutputArgs, ShowArgs};
use crate::driver::{Done, Measures, Needs, Run, Tool, interrupted};
use crate::measure::noise::NoiseTool;
use crate::measure::wakeup::WakeupTool;
use crate::measure::{Measure, Outcome, replay, run_for_figures};
use irqlens_analyze::advise::advise;
use irqlens_collect::machine;
use irqlens_model::noise::NoiseOptions;
use irqlens_model::run::Header;
use irqlens_model::tune::{AdviceReport, CpuCause};
use irqlens_model::wakeup::WakeupOptions;
use irqlens_present::document::Advised;

impl Tool for AdviseArgs {
    const NAME: &'static str = "advise";

    fn show(&self) -> &ShowArgs {
        &self.measure.output.show
    }

    /// Recordings are read; without any, noise and wakeup measure first.
    fn needs(&self) -> Needs {
        if self.files.is_empty() {
            Needs::Tracing
        } else {
            Needs::Nothing
        }
    }

    /// `-c LIST`: noise and wakeup measure them first.
    fn measures(&self) -> Option<Measures> {
        let cpus = self
            .measure
            .cpus
            .clone()
            .filter(|_| self.files.is_empty())?;
        Some(Measures { cpus, alone: false })
    }

    fn execute(self, _run: &mut Run) -> Result<Done> {
        let output = &self.measure.output;
        if output.page.html.is_some() {
            bail!("advise writes no HTML report: measure with `irqlens noise --html` instead");
        }
        let causes = if self.files.is_empty() {
            if self.measure.cpus.is_none() {
                bail!(
                    "advise needs recordings (REC...) or the CPUs to measure first (-c LIST -d TIME)"
                );
            }
            if self.measure.duration.is_none() {
                bail!(
                    "advise -c LIST needs -d TIME: it measures noise, then wakeup, that long each"
                );
            }
            if output.record.is_some()
                || output.perfetto.is_some()
                || output.prometheus.is_some()
                || self.measure.auto.is_some()
                || !output.end.on_end.is_empty()
            {
                bail!(
                    "advise -c runs two measurements: record, serve or act on them with \
                     `irqlens noise` and `irqlens wakeup` (then `irqlens advise REC...`)"
                );
            }
            measure_causes(self.measure.options(None)?, output)?
        } else {
            if self.measure.cpus.is_some() || self.measure.duration.is_some() {
                bail!("advise takes recordings or -c/-d to measure, not both");
            }
            recorded_causes(&self.files)?
        };
        Ok(Done::new(Advised {
            report: report(&causes, &self.netns)?,
            rows: self.measure.causes,
        }))
    }
}

/// Measures the CPUs of `noise` with it, then with wakeup in timer mode (its defaults) on
/// the same CPUs for as long, and returns the causes both runs named; says on stderr which
/// runs, unless `output` is quiet. Ctrl-C or SIGTERM during the noise run leaves wakeup out.
pub fn measure_causes(noise: NoiseOptions, output: &OutputArgs) -> Result<Vec<CpuCause>> {
    let Some(duration) = noise.duration else {
        bail!("advise measures for a duration (-d TIME)");
    };
    let wakeup = WakeupOptions {
        duration: Some(duration),
        ..WakeupOptions::timer(noise.cpus.clone())
    };
    let say = |what: &str| {
        if !output.show.quiet {
            eprintln!(
                "irqlens: measuring {what} on CPUs {} for {duration:?}",
                wakeup.cpus
            );
        }
    };
    say("noise");
    let mut causes = causes_of::<NoiseTool>(noise, output)?;
    if interrupted() {
        if !output.show.quiet {
            eprintln!("irqlens: interrupted: wakeup was not measured");
        }
        return Ok(causes);
    }
    say("wakeup (timer mode)");
    causes.extend(causes_of::<WakeupTool>(wakeup, output)?);
    Ok(causes)
}

/// The causes a live run of `T` names.
fn causes_of<M: Measure>(options: M::Options, output: &OutputArgs) -> Result<Vec<CpuCause>> {
    let result = run_for_figures::<M>(options, output)?;
    Ok(result.causes().unwrap_or_default())
}

/// The remedies for `causes` and what works against them, from the machine's state (the
/// threads the causes name, their CPUs' idle states, and the devices of irqlens's and `netns`'s namespaces).
pub fn report(causes: &[CpuCause], netns: &[String]) -> Result<AdviceReport> {
    let machine = machine::read(causes, netns)?;
    let (advice, conflicts) = advise(causes, &machine);
    Ok(AdviceReport {
        header: Header::new(AdviseArgs::NAME),
        advice,
        conflicts,
        machine,
    })
}

/// The causes of every recording; a recording whose capability names none per CPU is an
/// error, not an empty advice.
fn recorded_causes(files: &[PathBuf]) -> Result<Vec<CpuCause>> {
    let mut causes = Vec::new();
    for path in files {
        let (reader, outcome) = replay(path)?;
        let Some(found) = outcome.causes() else {
            let capability = reader.header().capability.name();
            bail!(
                "{}: a recording of {capability}, which names no causes per CPU: advise reads \
                 noise, bh, wakeup and account recordings",
                path.display()
            );
        };
        causes.extend(found);
    }
    Ok(causes)
}
