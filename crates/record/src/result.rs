//! A recording of a command whose result is its data (`trial`: each point is measured
//! once on a test bed of its own, nothing is left to re-analyze): the command's JSON
//! document on one line, gzip-compressed. `irqlens report` shows it again as the run did;
//! [`Opened`](crate::Opened) reads it back.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use flate2::Compression;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_back_gzipped_or_not_and_is_not_a_measurements_recording() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("irqlens-result-{}.json.gz", std::process::id()));
        let document = serde_json::json!({"tool": "irqlens", "command": "trial", "points": [1, 2]});
        write(&path, &document).unwrap();
        let Ok(crate::Opened::Document(_, read)) = crate::Opened::open(&path) else {
            panic!("not read back as a document");
        };
        assert_eq!(read, document);
        let error = crate::Reader::open(&path).err().unwrap().to_string();
        assert!(error.contains("a trial's results"), "{error}");
        assert!(error.contains("irqlens report FILE"), "{error}");
        std::fs::write(&path, format!("{document}\n")).unwrap();
        assert!(matches!(
            crate::Opened::open(&path),
            Ok(crate::Opened::Document(_, read)) if read == document
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(
            crate::Opened::open(&path).is_err(),
            "a missing file is an error"
        );
    }
}
