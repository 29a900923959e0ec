//! `irqlens steer`: bottom-half threads kept at the priority of the processes they serve
//! until the duration ends or Ctrl-C/SIGTERM; every thread put back at exit.

use std::io::Write;

use anyhow::Result;

use crate::cli::{ShowArgs, SteerArgs};
use crate::driver::{Actions, Done, Needs, Run, STOP, Tool};
use irqlens_collect::{steer, system};
use irqlens_model::run::Header;
use irqlens_model::steer::{SteerOptions, SteerReport};
use irqlens_present::steer as show;
use irqlens_present::terminal::Printable;

impl Tool for SteerArgs {
    const NAME: &'static str = "steer";

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    fn needs(&self) -> Needs {
        Needs::Tracing
    }

    fn changes_machine(&self) -> bool {
        !self.dry_run
    }

    fn actions(&self) -> Actions {
        Actions {
            on_end: self.end.on_end.clone(),
            ..Actions::default()
        }
    }

    fn execute(self, run: &mut Run) -> Result<Done> {
        let options = SteerOptions {
            devices: self.devices,
            duration: self.duration,
            hold: self.hold,
            dry_run: self.dry_run,
            no_ksoftirqd: self.no_ksoftirqd,
        };
        // the changes go to stdout as they are made, unless it is the JSON document's
        let log = !self.show.json;
        if log {
            let until = options.duration.map_or("Ctrl-C".into(), |d| {
                humantime::format_duration(d).to_string()
            });
            run.say(format_args!(
                "steering bottom-half threads to the priority of the processes they serve \
                 (hold {}) until {until}",
                humantime::format_duration(options.hold)
            ));
        }
        let journal = if options.dry_run {
            None
        } else {
            Some(run.journal()?)
        };
        let outcome = steer::run_in(&options, &STOP, journal, |change| {
            if log {
                let mut out = Printable(std::io::stdout().lock());
                let _ = show::write_change(&mut out, change).and_then(|()| out.flush());
            }
        })?;
        Ok(Done::new(SteerReport {
            header: Header::new(Self::NAME),
            kernel: system::kernel_release(),
            cpus: outcome.cpus,
            run: outcome.run,
            changes: outcome.changes,
            threads: outcome.threads,
        }))
    }
}
