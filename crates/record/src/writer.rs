//! Writes a recording: gzip'd JSON Lines, the header first.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::write::GzEncoder;

use super::output;
use super::sink::Sink;
use super::{End, Header, Line};

/// A sink that writes a recording file.
pub struct Recorder {
    path: PathBuf,
    out: GzEncoder<BufWriter<File>>,
}

impl Recorder {
    /// Creates `path` and writes the header, so a path that cannot be written fails
    /// before anything is measured.
    pub fn create(path: &Path, header: Header) -> Result<Self> {
        let file = output::create(path).with_context(|| format!("--record {}", path.display()))?;
        // the fast level: a busy run writes from the collector thread as it goes
        let out = GzEncoder::new(BufWriter::new(file), Compression::fast());
        let mut recorder = Recorder {
            path: path.to_owned(),
            out,
        };
        recorder
            .put(&Line::Header(Box::new(header)))
            .with_context(|| recorder.name())?;
        Ok(recorder)
    }
}

impl Sink for Recorder {
    fn name(&self) -> String {
        format!("--record {}", self.path.display())
    }

    fn put(&mut self, line: &Line) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")
    }

    fn finish(mut self: Box<Self>, end: &End) -> Result<()> {
        let name = self.name();
        self.put(&Line::End(Box::new(end.clone())))
            .and_then(|()| self.out.try_finish())
            .and_then(|()| self.out.get_mut().flush())
            .with_context(|| name)
    }
}
