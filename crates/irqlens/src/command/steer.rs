//! `irqlens steer`: bottom-half threads kept at the priority of the processes they serve
//! until the duration ends or Ctrl-C/SIGTERM; every thread put back at exit.

use std::io::Write;

use anyhow::Result;

use super::{STOP, print_json};
use crate::cli::SteerArgs;
use irqlens_collect::{steer, system};
use irqlens_model::steer::{SteerOptions, SteerReport};
use irqlens_present::steer as show;

pub fn run(args: &SteerArgs) -> Result<()> {
    let options = SteerOptions {
        devices: args.devices.clone(),
        duration: args.duration,
        hold: args.hold,
        dry_run: args.dry_run,
        no_ksoftirqd: args.no_ksoftirqd,
    };
    let json = args.json;
    if !json {
        let until = options.duration.map_or("Ctrl-C".into(), |d| {
            humantime::format_duration(d).to_string()
        });
        eprintln!(
            "irqlens: steering bottom-half threads to the priority of the processes they serve \
             (hold {}) until {until}",
            humantime::format_duration(options.hold)
        );
    }
    let outcome = steer::run(&options, &STOP, |change| {
        if !json {
            let mut out = std::io::stdout().lock();
            let _ = show::write_change(&mut out, change).and_then(|()| out.flush());
        }
    })?;
    let report = SteerReport {
        header: irqlens_model::run::Header::new("steer"),
        kernel: system::kernel_release(),
        cpus: outcome.cpus,
        run: outcome.run,
        changes: outcome.changes,
        threads: outcome.threads,
    };
    let mut out = std::io::stdout().lock();
    if json {
        print_json(&mut out, &show::to_json(&report))
    } else {
        Ok(show::write_summary(&mut out, &report)?)
    }
}
