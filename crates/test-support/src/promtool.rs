//! Prometheus's own linter, `promtool check metrics` (scripts/setup installs it), as the
//! judge of what a scrape in the classic text format gets.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `promtool check metrics` on `exposition`: `Ok` when it finds nothing to say, its
/// exit status and every problem it reports otherwise (a parse error, a lint finding).
pub fn check_metrics(exposition: &str) -> Result<(), String> {
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/setup installs it)");
    // promtool may stop reading at a parse error: what it says then is the answer
    let _ = promtool
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes());
    let output = promtool.wait_with_output().unwrap();
    let said = [&output.stdout, &output.stderr]
        .map(|bytes| String::from_utf8_lossy(bytes).trim().to_owned())
        .join("\n");
    match (output.status.success(), said.trim().is_empty()) {
        (true, true) => Ok(()),
        _ => Err(format!(
            "promtool check metrics ({}): {said}",
            output.status
        )),
    }
}
