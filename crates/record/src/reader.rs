//! Reads a recording back, line by line, refusing what is not one: another file, a
//! newer version, a corrupt or truncated one.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Result, anyhow, bail};
use flate2::read::MultiGzDecoder;

use super::{End, FORMAT, Header, Line, VERSION};
use irqlens_model::system::Capability;

/// A longer line is not irqlens's (the longest are the header's /proc snapshots: a few
/// MiB on a machine of 1024 CPUs). It bounds what one line costs to parse: a JSON value
/// takes up to 16 times its text (`[0,0,...]`), so 256 MiB at most.
pub const MAX_LINE: u64 = 16 << 20;

/// The whole of a JSON file (a sim model, a calibration, a trial's `--json` document),
/// refused past [`MAX_LINE`] bytes, as a recording's line is.
pub fn read_document(path: &Path) -> Result<Vec<u8>> {
    let file = File::open(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_LINE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_LINE {
        bail!("{}: longer than {MAX_LINE} bytes", path.display());
    }
    Ok(bytes)
}

/// A recording being read: its header at once, then its inputs in order, then its end.
pub struct Reader {
    lines: Lines,
    header: Header,
    end: Option<End>,
}

/// What a file given as a recording holds, told by its first line: a measurement's
/// recording, or a document (a result recording such as `trial --record` writes, or a
/// command's `--json` output).
pub enum Opened {
    /// A measurement's recording, its header read.
    Recording(Box<Reader>),
    /// A whole JSON document, and what errors call its file.
    Document(String, serde_json::Value),
}

/// The path that names standard input (`irqlens report -`).
pub const STDIN: &str = "-";

/// Opens `path` to read it once, front to back: `-` is standard input. A pipe, a FIFO
/// or standard input reads as well as a file, since nothing seeks or opens it again.
fn open_path(path: &Path) -> Result<(String, Box<dyn Read>)> {
    if path.as_os_str() == STDIN {
        return Ok(("standard input".into(), Box::new(io::stdin())));
    }
    let file = File::open(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok((path.display().to_string(), Box::new(file)))
}

/// Whether `start` begins gzip's magic bytes.
fn is_gzip(start: &[u8]) -> bool {
    start.starts_with(&[0x1f, 0x8b])
}

impl Opened {
    /// Opens what `path` holds, reading it once (see [`Opened`]): a recording gzip'd as
    /// `--record` writes it, or gunzipped to plain JSON lines.
    pub fn open(path: &Path) -> Result<Opened> {
        let (name, input) = open_path(path)?;
        Self::from_reader(&name, input)
    }

    /// Reads what `input` holds up to its first line (its header, or a whole document);
    /// `name` is used in errors.
    pub fn from_reader(name: &str, input: impl Read + 'static) -> Result<Opened> {
        // the first two bytes, however few a pipe gives at a time, then the rest
        let mut input = input;
        let mut start = Vec::with_capacity(2);
        (&mut input)
            .take(2)
            .read_to_end(&mut start)
            .map_err(|e| anyhow!("{name}: {e}"))?;
        let gzip = is_gzip(&start);
        let input = BufReader::new(io::Cursor::new(start).chain(input));
        let input: Box<dyn BufRead> = if gzip {
            Box::new(BufReader::new(MultiGzDecoder::new(input)))
        } else {
            Box::new(input)
        };
        let mut lines = Lines {
            name: name.to_owned(),
            input,
            line: 0,
        };
        let Some(first) = lines.read()? else {
            bail!("{name}: empty, not an irqlens recording");
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&first) else {
            if !is_json_text(first.as_bytes()) {
                return Err(lines.not_ours());
            }
            // a document on several lines (`--json` output is pretty-printed)
            return lines.rest_of_document(first);
        };
        if value.get("type").is_none() && value.get("tool").is_some() {
            return Ok(Opened::Document(name.to_owned(), value));
        }
        let header = lines.parse_header(value)?;
        Ok(Opened::Recording(Box::new(Reader {
            lines,
            header,
            end: None,
        })))
    }

    /// The measurement's recording; a document is refused, saying what it is and what
    /// reads it.
    pub fn recording(self) -> Result<Reader> {
        match self {
            Opened::Recording(reader) => Ok(*reader),
            Opened::Document(name, document) => Err(not_a_recording(&name, &document)),
        }
    }
}

/// The error for a document given where a measurement's recording goes.
pub fn not_a_recording(name: &str, document: &serde_json::Value) -> anyhow::Error {
    if document["command"] == "trial" {
        return anyhow!(
            "{name}: a trial's results (its recording or --json), not a measurement's \
             recording: `irqlens report FILE` shows them; `irqlens sim --calibrate` and `sim \
             --against` read them"
        );
    }
    anyhow!(
        "{name}: a JSON document, not an irqlens recording (recordings are the files \
         --record writes; --json output cannot be read back)"
    )
}

impl Reader {
    /// Opens the recording at `path` (`-`: standard input) and reads its header.
    pub fn open(path: &Path) -> Result<Self> {
        Opened::open(path)?.recording()
    }

    /// Reads the header of the recording in `input`; `name` is used in errors.
    pub fn from_reader(name: &str, input: impl Read + 'static) -> Result<Self> {
        Opened::from_reader(name, input)?.recording()
    }

    /// What errors call it (its path).
    pub fn name(&self) -> &str {
        &self.lines.name
    }

    /// Its header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next input line, `None` after the last (the end line has been read).
    pub fn next_input(&mut self) -> Result<Option<Line>> {
        if self.end.is_some() {
            return Ok(None);
        }
        let lines = &mut self.lines;
        let Some(text) = lines.read()? else {
            bail!(
                "{}: truncated after line {}: no end line (was the run killed?)",
                lines.name,
                lines.line
            );
        };
        match serde_json::from_str(&text).map_err(|e| lines.error(e))? {
            Line::Header(_) => Err(lines.error("a second header")),
            Line::End(end) => {
                lines.check_end(&end)?;
                self.end = Some(*end);
                Ok(None)
            }
            input => Ok(Some(input)),
        }
    }

    /// The end line, once every input has been read.
    pub fn end(&self) -> Result<&End> {
        self.end
            .as_ref()
            .ok_or_else(|| anyhow!("{}: the inputs were not all read", self.name()))
    }

    /// Reads through the end, for a caller that has no use for the inputs.
    pub fn skip_inputs(&mut self) -> Result<&End> {
        while self.next_input()?.is_some() {}
        self.end()
    }

    /// An error about the line just read.
    pub fn error(&self, message: impl std::fmt::Display) -> anyhow::Error {
        self.lines.error(message)
    }

    /// The error for an input that has no place in this recording's capability.
    pub fn unexpected(&self, line: &Line) -> anyhow::Error {
        self.error(format!(
            "a '{}' line has no place in a {} recording",
            line.kind_name(),
            self.header.capability.name()
        ))
    }

    /// The run's information, from the end line.
    pub fn info<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        T::deserialize(&self.end()?.info)
            .map_err(|e| anyhow!("{}: the end line's run info: {e}", self.name()))
    }
}

/// Whether `start`, the first bytes of a file, is plain JSON text (not gzip, whose magic
/// bytes cannot begin text): a `--json` document given where a recording goes.
pub fn is_json_text(start: &[u8]) -> bool {
    matches!(
        start.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    )
}

/// The file's lines, counted.
struct Lines {
    name: String,
    input: Box<dyn BufRead>,
    line: u64,
}

impl Lines {
    fn error(&self, message: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}, line {}: {message}", self.name, self.line)
    }

    fn not_ours(&self) -> anyhow::Error {
        anyhow!("{}: not an irqlens recording", self.name)
    }

    /// A JSON document that began with `first` line, read whole (bounded as a line is).
    fn rest_of_document(&mut self, first: String) -> Result<Opened> {
        let mut bytes = first.into_bytes();
        bytes.push(b'\n');
        let left = MAX_LINE.saturating_sub(bytes.len() as u64);
        (&mut self.input)
            .take(left + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.read_error(e))?;
        if bytes.len() as u64 > MAX_LINE {
            return Err(self.error(format!("a JSON document longer than {MAX_LINE} bytes")));
        }
        serde_json::from_slice(&bytes)
            .map(|document| Opened::Document(self.name.clone(), document))
            .map_err(|_| self.not_ours())
    }

    fn parse_header(&self, value: serde_json::Value) -> Result<Header> {
        let not_ours = || self.not_ours();
        // format and version first: a newer version's header may not parse as ours
        if value.get("type").and_then(|t| t.as_str()) != Some("header")
            || value.get("format").and_then(|f| f.as_str()) != Some(FORMAT)
        {
            return Err(not_ours());
        }
        let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
        if version > VERSION as u64 {
            bail!(
                "{}: recording format version {version} is newer than this irqlens reads ({VERSION}): use a newer irqlens",
                self.name
            );
        }
        if let Some(capability) = value.get("capability").and_then(|c| c.as_str()) {
            if serde_json::from_value::<Capability>(capability.into()).is_err() {
                bail!(
                    "{}: a recording of `{capability}`, which this irqlens does not know (it \
                     reads noise, bh, wakeup and account recordings)",
                    self.name
                );
            }
        }
        match serde_json::from_value(value) {
            Ok(Line::Header(header)) => Ok(*header),
            Ok(_) => Err(not_ours()),
            Err(e) => Err(self.error(format!("bad header: {e}"))),
        }
    }

    /// The end line must count the inputs before it and be the last.
    fn check_end(&mut self, end: &End) -> Result<()> {
        let inputs = self.line - 2;
        if end.inputs != inputs {
            return Err(self.error(format!(
                "the end line counts {} inputs but {inputs} came before it",
                end.inputs
            )));
        }
        if self.read()?.is_some_and(|text| !text.trim().is_empty()) {
            return Err(self.error("data after the end line"));
        }
        Ok(())
    }

    /// One line without its newline; `None` at the end of the file.
    fn read(&mut self) -> Result<Option<String>> {
        let mut bytes = Vec::new();
        let read = (&mut self.input)
            .take(MAX_LINE)
            .read_until(b'\n', &mut bytes)
            .map_err(|e| self.read_error(e))?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        } else if read as u64 == MAX_LINE {
            return Err(self.error(format!("longer than {MAX_LINE} bytes")));
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| self.error("not UTF-8"))
    }

    fn read_error(&self, err: io::Error) -> anyhow::Error {
        let what = match err.kind() {
            io::ErrorKind::UnexpectedEof => "truncated",
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => "corrupt",
            _ => "unreadable",
        };
        if self.line == 0 {
            return anyhow!("{}: not an irqlens recording ({what}: {err})", self.name);
        }
        anyhow!("{}: {what} after line {} ({err})", self.name, self.line)
    }
}
