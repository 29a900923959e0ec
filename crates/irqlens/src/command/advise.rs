//! `irqlens advise [REC...]` or `irqlens advise -c LIST -d TIME`: the causes a measurement
//! named on each CPU, with the machine's state, turned into remedies.

use anyhow::{Result, bail};

use super::noise::NoiseTool;
use super::{Outcome, print_json, replay, run_live};
use crate::cli::AdviseArgs;
use irqlens_analyze::advise::advise;
use irqlens_collect::machine;
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
        let (result, closed) = run_live::<NoiseTool>(args.measure.options(None)?, output)?;
        closed?;
        result.causes().unwrap_or_default()
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
                "{}: a recording of {capability}: advise reads the causes of noise and wakeup recordings",
                path.display()
            );
        };
        causes.extend(found);
    }
    Ok(causes)
}
