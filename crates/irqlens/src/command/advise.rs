//! `irqlens advise [REC...]` or `irqlens advise -c LIST -d TIME`: the causes a measurement
//! named on each CPU, with the machine's state, turned into remedies.

use std::sync::atomic::Ordering;

use anyhow::{Result, bail};

use super::noise::NoiseTool;
use super::wakeup::WakeupTool;
use super::{Outcome, STOP, Tool, interrupted, print_json, replay, run_live};
use crate::cli::{AdviseArgs, OutputArgs};
use irqlens_analyze::advise::advise;
use irqlens_collect::machine;
use irqlens_model::noise::NoiseOptions;
use irqlens_model::tune::{AdviceReport, CpuCause};
use irqlens_present::advise as show;

pub fn run(args: &AdviseArgs) -> Result<()> {
    let output = &args.measure.output;
    if output.html.is_some() {
        bail!("advise writes no HTML report: measure with `irqlens noise --html` instead");
    }
    let causes = if args.files.is_empty() {
        if args.measure.cpus.is_none() {
            bail!(
                "advise needs recordings (REC...) or the CPUs to measure first (-c LIST -d TIME)"
            );
        }
        if args.measure.duration.is_none() {
            bail!("advise -c LIST needs -d TIME: it measures noise, then wakeup, that long each");
        }
        if output.record.is_some()
            || output.perfetto.is_some()
            || output.prometheus.is_some()
            || args.measure.auto.is_some()
        {
            bail!(
                "advise -c runs two measurements: record or serve them with `irqlens noise` and \
                 `irqlens wakeup` (then `irqlens advise REC...`)"
            );
        }
        measure_causes(args.measure.options(None)?, output)?
    } else {
        if args.measure.cpus.is_some() || args.measure.duration.is_some() {
            bail!("advise takes recordings or -c/-d to measure, not both");
        }
        recorded_causes(args)?
    };
    let report = report(&causes, &args.netns)?;
    let mut out = std::io::stdout().lock();
    if output.json {
        print_json(&mut out, &show::to_json(&report))
    } else {
        Ok(show::write_text(&mut out, &report, args.measure.causes)?)
    }
}

/// Measures the CPUs of `noise` with it, then with wakeup in timer mode (its defaults) on
/// the same CPUs for as long, and returns the causes both runs named; says on stderr which
/// runs, unless `output` is quiet. Ctrl-C or SIGTERM during the noise run leaves wakeup out.
pub fn measure_causes(noise: NoiseOptions, output: &OutputArgs) -> Result<Vec<CpuCause>> {
    let Some(duration) = noise.duration else {
        bail!("advise measures for a duration (-d TIME)");
    };
    let wakeup = super::tune::wakeup_options(&noise.cpus, duration)?;
    let say = |what: &str| {
        if !output.quiet {
            eprintln!(
                "irqlens: measuring {what} on CPUs {} for {duration:?}",
                wakeup.cpus
            );
        }
    };
    say("noise");
    let mut causes = causes_of::<NoiseTool>(noise, output)?;
    if interrupted() {
        if !output.quiet {
            eprintln!("irqlens: interrupted: wakeup was not measured");
        }
        return Ok(causes);
    }
    // the noise run ended by setting STOP: the wakeup run starts with it clear
    STOP.store(false, Ordering::Relaxed);
    say("wakeup (timer mode)");
    causes.extend(causes_of::<WakeupTool>(wakeup, output)?);
    Ok(causes)
}

/// The causes a live run of `T` names.
fn causes_of<T: Tool>(options: T::Options, output: &OutputArgs) -> Result<Vec<CpuCause>> {
    let (result, closed) = run_live::<T>(options, output)?;
    closed?;
    Ok(result.causes().unwrap_or_default())
}

/// The remedies for `causes` and what works against them, from the machine's state (the
/// threads the causes name, their CPUs' idle states, and the devices of irqlens's and `netns`'s namespaces).
pub fn report(causes: &[CpuCause], netns: &[String]) -> Result<AdviceReport> {
    let machine = machine::read(causes, netns)?;
    let (advice, conflicts) = advise(causes, &machine);
    Ok(AdviceReport {
        advice,
        conflicts,
        machine,
    })
}

/// The causes of every recording; a recording whose capability names none per CPU is an
/// error, not an empty advice.
fn recorded_causes(args: &AdviseArgs) -> Result<Vec<CpuCause>> {
    let mut causes = Vec::new();
    for path in &args.files {
        let (_, outcome) = replay(path)?;
        let Some(found) = outcome.causes() else {
            let document = outcome.json();
            let capability = document["command"].as_str().unwrap_or("unknown");
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
