//! Python's reference implementations (jsonschema, prometheus_client, pandas, DuckDB,
//! installed by scripts/setup) as the judges of what irqlens writes.

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
