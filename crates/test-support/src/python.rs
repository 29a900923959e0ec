//! Python's reference implementations (jsonschema, prometheus_client, pandas, DuckDB,
//! installed by scripts/setup) as the judges of what irqlens writes, and the snippets the
//! docs give for them.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs the Python `script` with `args`, `input` on its stdin; its stdout, or its stderr
/// when it fails (a reference parser rejecting the input).
pub fn run_script(script: &str, args: &[&str], input: &[u8]) -> Result<Vec<u8>, String> {
    let mut python = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (scripts/setup installs it with the reference packages)");
    python.stdin.take().unwrap().write_all(input).unwrap();
    let output = python.wait_with_output().unwrap();
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// The pandas snippet of docs/output.md ("Read without irqlens, with pandas"), with
/// `recording` for the file it reads.
pub fn documented_pandas_snippet(recording: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/output.md");
    let docs = std::fs::read_to_string(path).expect("docs/output.md");
    let (_, after) =
        (docs.split_once("with pandas")).expect("docs/output.md reads recordings with pandas");
    let (_, block) = after
        .split_once("```python\n")
        .expect("a Python block after it");
    let (snippet, _) = block.split_once("```").expect("the block's end");
    assert!(
        snippet.contains("\"quiet.jsonl.gz\""),
        "the snippet names no recording:\n{snippet}"
    );
    snippet.replace("\"quiet.jsonl.gz\"", &format!("{recording:?}"))
}

/// The definitions of docs/output.md's pandas snippet, what a reader copies to read any
/// recording: all before its first use, `read_recording(path)`.
pub fn documented_pandas_reader() -> String {
    let snippet = documented_pandas_snippet("");
    let (definitions, _) = snippet
        .split_once("\ndf = read_recording(")
        .expect("the snippet reads its recording with read_recording");
    definitions.to_owned()
}
