//! `irqlens sim [MODEL]`: the designs of a model simulated on the same arrivals;
//! `--calibrate REC...`: the costs from recordings; `--against TRIAL`: a recorded trial
//! next to the simulation of its test bed.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

use super::trial::Recorded;
use crate::cli::{ShowArgs, SimArgs};
use crate::driver::{Done, Run, STOP, Tool, interrupted};
use crate::measure::replay_from;
use irqlens_analyze::sim::calibrate::{DATAGRAM_TRUESIZE, compare_trial, costs_from, trial_costs};
use irqlens_analyze::sim::simulate_until;
use irqlens_collect::system;
use irqlens_model::bounds::Check;
use irqlens_model::run::Header;
use irqlens_model::sim::{Calibration, Costs, SimConfig, SimDocument, TrialComparison};
use irqlens_present::document::{JsonFile, WrittenTo};

/// What `--calibrate` assumes when net.core.rmem_default cannot be read (its default).
const RMEM_DEFAULT: u32 = 212_992;

impl Tool for SimArgs {
    const NAME: &'static str = "sim";

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn html(&self) -> Option<&Path> {
        self.page.html.as_deref()
    }

    fn files(&self) -> Vec<(&'static str, &Path)> {
        (self.output.as_deref().map(|path| ("-o", path)))
            .into_iter()
            .collect()
    }

    fn execute(self, _run: &mut Run) -> Result<Done> {
        if !self.calibrate.is_empty() {
            return calibrate(&self);
        }
        if let Some(trial) = &self.against {
            return against(&self, trial);
        }
        if self.example {
            return Ok(Done::new(JsonFile(SimConfig::example())));
        }
        let mut config = match &self.model {
            Some(path) => read_json::<SimConfig>(path, "a sim model")?,
            None => SimConfig::example(),
        };
        if let Some(path) = &self.costs {
            let calibration = read_calibration(path)?;
            config.costs = calibration.costs;
            config.limits = calibration.limits;
        }
        if !self.designs.is_empty() {
            config.designs = self.designs.clone();
        }
        if let Some(seed) = self.seed {
            config.seed = seed;
        }
        if let Some(duration) = self.duration {
            config.duration_s = duration.as_secs_f64();
        }
        let report = simulate_until(&config, &STOP).map_err(|e| anyhow!(e))?;
        let (done, asked) = (report.designs.len(), config.designs.len());
        let document = Done::new(SimDocument {
            header: Header::new(Self::NAME),
            cpus: (0..config.cpus).collect(),
            report,
        });
        if !interrupted() {
            return Ok(document);
        }
        if done == 0 {
            bail!("interrupted before the first of {asked} designs was simulated to its end");
        }
        Ok(document.note(format!(
            "sim interrupted: {done} of {asked} designs simulated to the end"
        )))
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let bytes = irqlens_record::read_document(path)?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not {what}", path.display()))
}

fn read_calibration(path: &Path) -> Result<Calibration> {
    let calibration: Calibration =
        read_json(path, "a calibration (irqlens sim --calibrate writes one)")?;
    calibration
        .check()
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(calibration)
}

/// `--calibrate REC...`: each recording's costs, the best per cost, the machine's
/// limits, and per trial design its per-datagram costs; written as JSON.
fn calibrate(args: &SimArgs) -> Result<Done> {
    let mut measured = Vec::new();
    let mut trials = Vec::new();
    for path in &args.calibrate {
        let file = path.display().to_string();
        let (reader, outcome) = match super::trial::open(path)? {
            Recorded::Trial(_, trial) => {
                trials.push((file, *trial));
                continue;
            }
            Recorded::Measurement(reader) => replay_from(*reader)?,
        };
        let found = outcome.costs();
        if found.is_empty() {
            let capability = reader.header().capability.name();
            bail!(
                "{file}: this recording of {capability} measures none of the simulation's \
                 costs: calibrate from wakeup (timer mode), bh or account recordings with \
                 NET_RX, or trial recordings"
            );
        }
        measured.extend(
            found
                .into_iter()
                .map(|cost| irqlens_model::sim::MeasuredCost {
                    from: file.clone(),
                    ..cost
                }),
        );
    }
    let costs = costs_from(&measured, &Costs::default());
    let mut calibration = Calibration {
        header: Header::new("sim-calibration"),
        measured,
        costs,
        limits: system::sim_limits(),
        trial: Vec::new(),
    };
    let socket_queue = system::socket_receive_buffer().unwrap_or(RMEM_DEFAULT) / DATAGRAM_TRUESIZE;
    for (file, trial) in &trials {
        let found = trial_costs(
            &trial.options,
            &trial.points,
            &calibration,
            socket_queue,
            file,
        )
        .map_err(|e| anyhow!("{file}: {e}"))?;
        if let Some(twice) = found
            .iter()
            .find(|new| calibration.trial.iter().any(|old| old.design == new.design))
        {
            bail!(
                "{file}: design {} is in another trial recording too: calibrate from one",
                twice.design
            );
        }
        if found.is_empty() {
            bail!(
                "{file}: no design of this trial echoed 95% at any rate: nothing to fit the \
                 costs on (record one with lower --rates)"
            );
        }
        calibration.trial.extend(found);
    }
    let Some(path) = &args.output else {
        return Ok(Done::new(JsonFile(calibration)));
    };
    let text = serde_json::to_string_pretty(&calibration)? + "\n";
    irqlens_record::output::create(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Done::new(WrittenTo).note(format!(
        "wrote {} ({} measured costs, {} trial designs); costs: {}",
        path.display(),
        calibration.measured.len(),
        calibration.trial.len(),
        calibration.costs.origin
    )))
}

/// `--against TRIAL --costs CAL`: every point of the trial simulated on its test bed.
fn against(args: &SimArgs, path: &Path) -> Result<Done> {
    let costs = args.costs.as_deref().expect("clap requires --costs");
    let calibration = read_calibration(costs)?;
    let trial = match super::trial::open(path)? {
        Recorded::Trial(_, trial) => *trial,
        Recorded::Measurement(reader) => bail!(
            "{}: a recording of {}, not a trial recording (irqlens trial net --record FILE, \
             or its --json)",
            reader.name(),
            reader.header().capability.name()
        ),
    };
    let seconds = args.duration.map_or(1.0, |d| d.as_secs_f64());
    let (points, designs) = compare_trial(
        &trial.options,
        &trial.points,
        &calibration,
        seconds,
        args.seed.unwrap_or(1),
    )
    .map_err(|e| anyhow!(e))?;
    let comparison = TrialComparison {
        header: Header::new(SimArgs::NAME),
        against: path.display().to_string(),
        costs_origin: calibration.costs.origin,
        seconds_per_point: seconds,
        points,
        designs,
    };
    Ok(Done::new(comparison))
}
