//! A recording of a command whose result is its data (`trial`: each point is measured
//! once on a test bed of its own, nothing is left to re-analyze): the command's JSON
//! document on one line, gzip-compressed. `irqlens report` shows it again as the run did.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use serde::Serialize;

/// Writes `document` to `path`.
pub fn write(path: &Path, document: &impl Serialize) -> Result<()> {
    let file =
        crate::output::create(path).with_context(|| format!("--record {}", path.display()))?;
    let mut encoder = GzEncoder::new(file, Compression::default());
    serde_json::to_writer(&mut encoder, document)?;
    encoder.write_all(b"\n")?;
    encoder
        .finish()
        .and_then(|file| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// The document in `path` if it is a result recording (a gzip-compressed irqlens
/// document with its `command`); `None` for anything else, a measurement's recording
/// (its first line is a header) included.
pub fn read(path: &Path) -> Result<Option<serde_json::Value>> {
    let file = File::open(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut line = String::new();
    // one line, bounded as a recording's: a gzip bomb inflates no further
    if BufReader::new(MultiGzDecoder::new(file))
        .take(crate::MAX_LINE)
        .read_line(&mut line)
        .is_err()
    {
        return Ok(None);
    }
    let Ok(document) = serde_json::from_str::<serde_json::Value>(&line) else {
        return Ok(None);
    };
    let is_result = document["tool"] == "irqlens" && document["command"].is_string();
    Ok(is_result.then_some(document))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_back_and_a_recording_is_not_one() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("irqlens-result-{}.json.gz", std::process::id()));
        let document = serde_json::json!({"tool": "irqlens", "command": "trial", "points": [1, 2]});
        write(&path, &document).unwrap();
        assert_eq!(read(&path).unwrap(), Some(document));
        // a recording's first line is its header: no `tool`
        let header = serde_json::json!({"format": "irqlens-recording", "version": 2});
        write(&path, &header).unwrap();
        assert_eq!(read(&path).unwrap(), None);
        std::fs::write(&path, b"not gzip").unwrap();
        assert_eq!(read(&path).unwrap(), None);
        std::fs::remove_file(&path).unwrap();
        assert!(read(&path).is_err(), "a missing file is an error");
    }
}
