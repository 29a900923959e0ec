//! Sinks: where a run's lines go besides the analysis (a recording, a Perfetto trace).

use anyhow::{Result, anyhow};

use super::{End, Line, Reader};

/// Where a run's lines go besides the analysis.
pub trait Sink {
    /// What to call it in an error (`--record run.jsonl.gz`).
    fn name(&self) -> String;
    /// Takes one line, in the order the analysis took them.
    fn put(&mut self, line: &Line) -> std::io::Result<()>;
    /// After the last input: the run's end, then flush and close.
    fn finish(self: Box<Self>, end: &End) -> Result<()>;
}

/// Hands a recording's inputs, then its end, to `sink` (made with its header).
pub fn pump(reader: &mut Reader, mut sink: Box<dyn Sink>) -> Result<()> {
    while let Some(line) = reader.next_input()? {
        sink.put(&line)
            .map_err(|err| anyhow!("{}: {err}", sink.name()))?;
    }
    sink.finish(reader.end()?)
}
