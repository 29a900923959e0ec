//! The tap on a run's inputs: every line the analysis consumes is also handed to the
//! sinks the user asked for (a recording, a Perfetto trace), in the same order.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow};

use super::{End, KernelFunction, Line, Reader};
use crate::system::{self, KernelSymbols};

/// Where a run's lines go besides the analysis.
pub trait Sink {
    /// What to call it in an error (`--record run.jsonl.gz`).
    fn name(&self) -> String;
    fn put(&mut self, line: &Line) -> std::io::Result<()>;
    /// After the last input: the run's end, then flush and close.
    fn finish(self: Box<Self>, end: &End) -> Result<()>;
}

/// The sinks of one run; with none, `put` does nothing.
#[derive(Default)]
pub struct Tap {
    sinks: Vec<Box<dyn Sink>>,
    inputs: u64,
    /// Kernel function addresses the events refer to, named at the end.
    functions: BTreeSet<u64>,
    /// The first write error: the run goes on, the error is reported at the end.
    error: Option<anyhow::Error>,
}

impl Tap {
    pub fn add(&mut self, sink: Box<dyn Sink>) {
        self.sinks.push(sink);
    }

    pub fn is_on(&self) -> bool {
        !self.sinks.is_empty()
    }

    pub fn put(&mut self, line: Line) {
        if self.sinks.is_empty() || self.error.is_some() {
            return;
        }
        self.inputs += 1;
        if let Line::Event(event) = &line
            && event.func != 0
        {
            self.functions.insert(event.func);
        }
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
        let symbols = KernelSymbols::load();
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
        };
        self.sinks
            .into_iter()
            .try_for_each(|sink| sink.finish(&end))
    }
}

/// Hands a recording's inputs, then its end, to `sink` (made with its header).
pub fn pump(reader: &mut Reader, mut sink: Box<dyn Sink>) -> Result<()> {
    while let Some(line) = reader.next_input()? {
        sink.put(&line)
            .map_err(|err| anyhow!("{}: {err}", sink.name()))?;
    }
    sink.finish(reader.end()?)
}
