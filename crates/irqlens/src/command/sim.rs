//! `irqlens sim [MODEL]`: the designs of a model simulated on the same arrivals.

use std::fs;

use anyhow::{Context, Result, anyhow};

use super::print_json;
use crate::cli::SimArgs;
use irqlens_analyze::sim::simulate;
use irqlens_model::sim::{SimConfig, SimDocument};
use irqlens_present::sim as show;

pub fn run(args: &SimArgs) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if args.example {
        return print_json(&mut out, &serde_json::to_value(SimConfig::example())?);
    }
    let mut config = match &args.model {
        Some(path) => {
            let text = fs::read_to_string(path)
                .with_context(|| format!("cannot read the model {}", path.display()))?;
            serde_json::from_str::<SimConfig>(&text)
                .with_context(|| format!("{} is not a sim model", path.display()))?
        }
        None => SimConfig::example(),
    };
    if !args.designs.is_empty() {
        config.designs = args.designs.clone();
    }
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    if let Some(duration) = args.duration {
        config.duration_s = duration.as_secs_f64();
    }
    let report = simulate(&config).map_err(|e| anyhow!(e))?;
    if args.json {
        let document = SimDocument {
            tool: irqlens_model::run::TOOL.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: "sim".into(),
            cpus: (0..config.cpus).collect(),
            report,
        };
        print_json(&mut out, &show::to_json(&document))
    } else {
        Ok(show::write_report(&mut out, &report)?)
    }
}
