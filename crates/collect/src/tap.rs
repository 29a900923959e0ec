//! The tap on a run's inputs: every line the analysis consumes is also handed to the
//! sinks the user asked for (a recording, a Perfetto trace), in the same order.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow};
use irqlens_model::event::EventData;
use irqlens_model::options::RunOptions;
use irqlens_model::workload::{CgroupId, CgroupNames};
use irqlens_record::{End, Header, KernelFunction, Line, Sink};

use crate::cgroup::MOST_CGROUPS;
use crate::system;

/// The sinks of one run; with none, `put` does nothing.
#[derive(Default)]
pub struct Tap {
    sinks: Vec<Box<dyn Sink>>,
    inputs: u64,
    /// Kernel function addresses the events refer to, named at the end.
    functions: BTreeSet<u64>,
    /// Cgroup ids the inputs carry, named at the end (at most MOST_CGROUPS: a machine
    /// that makes cgroups without end does not grow it).
    cgroups: BTreeSet<CgroupId>,
    /// The first write error: the run goes on, the error is reported at the end.
    error: Option<anyhow::Error>,
}

impl Tap {
    /// Adds a sink; it gets every line from now on.
    pub fn add(&mut self, sink: Box<dyn Sink>) {
        self.sinks.push(sink);
    }

    /// Whether any sink listens.
    pub fn is_on(&self) -> bool {
        !self.sinks.is_empty()
    }

    /// Hands `line` to every sink; after a write error, to none.
    pub fn put(&mut self, line: Line) {
        if self.sinks.is_empty() || self.error.is_some() {
            return;
        }
        self.inputs += 1;
        if let Line::Event(event) = &line
            && let Some(function) = function_of(&event.what)
        {
            self.functions.insert(function);
        }
        self.learn_cgroups(&line);
        for sink in &mut self.sinks {
            if let Err(err) = sink.put(&line) {
                self.error = Some(anyhow!("{}: {err}", sink.name()));
                return;
            }
        }
    }

    /// Ends every sink with the run's `info` (its `--json` run object).
    pub fn finish(self, info: serde_json::Value) -> Result<()> {
        if let Some(err) = self.error {
            return Err(err);
        }
        if self.sinks.is_empty() {
            return Ok(());
        }
        let symbols = system::kernel_symbols();
        let cgroups = self.cgroup_names();
        let end = End {
            finished_at: system::now_rfc3339(),
            inputs: self.inputs,
            info,
            interrupts: system::read_proc("interrupts"),
            softirqs: system::read_proc("softirqs"),
            kernel_functions: self
                .functions
                .iter()
                .map(|&address| KernelFunction {
                    address,
                    name: symbols.name(address),
                })
                .collect(),
            cgroups,
        };
        self.sinks
            .into_iter()
            .try_for_each(|sink| sink.finish(&end))
    }
}

impl Tap {
    fn learn_cgroups(&mut self, line: &Line) {
        let mut learn = |id: CgroupId| {
            if id.is_known() && self.cgroups.len() < MOST_CGROUPS {
                self.cgroups.insert(id);
            }
        };
        match line {
            Line::Event(event) => event.what.cgroup().into_iter().for_each(learn),
            Line::NoiseRecord(record) => learn(record.cgroup),
            Line::Mark { threads, .. } => threads
                .iter()
                .filter_map(|reading| reading.info.cgroup)
                .for_each(learn),
            _ => {}
        }
    }

    /// The paths of the cgroups the inputs named, read now: a cgroup removed during the
    /// run has none (the machine's v2 hierarchy not found: none at all). At most
    /// `CGROUP_NAMES_BYTES` of paths, so that the end line stays readable (a reader takes
    /// lines up to `irqlens_record::MAX_LINE`); the ids past it stay unnamed.
    fn cgroup_names(&self) -> CgroupNames {
        let mut names = crate::cgroup::names_now(self.cgroups.iter().copied());
        let mut bytes = 0;
        names.paths.retain(|_, path| {
            bytes += path.len() + CGROUP_NAME_OVERHEAD;
            bytes <= CGROUP_NAMES_BYTES
        });
        names
    }
}

/// The most bytes of cgroup paths an end line names: a quarter of the longest line a
/// reader takes, the rest left to /proc/interrupts, /proc/softirqs and the functions.
const CGROUP_NAMES_BYTES: usize = irqlens_record::MAX_LINE as usize / 4;
/// What a name costs besides its path in the end line: its id as a key, quotes, colon and
/// comma.
const CGROUP_NAME_OVERHEAD: usize = 26;

/// The kernel function a checkpoint names: a tasklet's, a work item's, an hrtimer
/// callback.
fn function_of(what: &EventData) -> Option<u64> {
    let function = match *what {
        EventData::TaskletEntry { func, .. }
        | EventData::TaskletExit { func, .. }
        | EventData::WorkQueue { func, .. }
        | EventData::WorkActivate { func, .. }
        | EventData::WorkStart { func, .. } => func,
        EventData::TimerExpire { function, .. } => function,
        _ => return None,
    };
    (function != 0).then_some(function)
}

/// The header of a recording (or trace) of a run with `options`, begun now on this
/// machine.
pub fn recording_header(options: &RunOptions) -> Header {
    let load = match options {
        RunOptions::Bh(bh) => Some(bh.load),
        _ => None,
    };
    Header {
        format: irqlens_record::FORMAT.into(),
        version: irqlens_record::VERSION,
        capability: options.capability(),
        argv: std::env::args().collect(),
        options: Some(options.clone()),
        irqlens_version: irqlens_model::run::VERSION.into(),
        started_at: system::now_rfc3339(),
        cpus: options.cpus().clone(),
        load,
        pid: Some(std::process::id()),
        system: system::snapshot(),
    }
}
