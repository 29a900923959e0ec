//! Helpers of the integration tests: the runner of the irqlens binary (shared with the
//! benches, in irqlens-test-support), injected noise, and reading a document's causes.

pub use irqlens_test_support::runner::*;
#[allow(unused_imports)]
pub use irqlens_test_support::spinner::Spinner;

/// A file's content, trimmed (the test fails if it cannot be read).
pub fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .to_owned()
}

/// The median of `values` and their spread (largest less smallest).
pub fn median_and_spread(values: &[f64]) -> (f64, f64) {
    let (lowest, highest) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    (irqlens_analyze::median(values).unwrap(), highest - lowest)
}

/// One figure (`key`) of the points of a `sim --against` document for `design` at
/// `rate`, one per round.
pub fn compared_rounds(
    compared: &serde_json::Value,
    design: &str,
    rate: u64,
    key: &str,
) -> Vec<f64> {
    compared["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["design"] == design && p["offered_pps"] == rate)
        .map(|p| p[key].as_f64().unwrap())
        .collect()
}

/// The path of a test fixture: `relative` under tests/fixtures.
pub fn fixture(relative: &str) -> String {
    format!("{}/tests/fixtures/{relative}", env!("CARGO_MANIFEST_DIR"))
}

/// Calibrates the simulation from the committed recordings (a wakeup recording, and
/// trial/calibration.json, the trial the test bed is fitted on) into the temp file `name`;
/// returns its path and its content.
pub fn calibration_from_fixtures(name: &str) -> (String, serde_json::Value) {
    let path = temp_path(name).to_str().unwrap().to_owned();
    irqlens_ok(&[
        "sim",
        "--calibrate",
        &fixture("v1/wakeup-hist.jsonl.gz"),
        &fixture("trial/calibration.json"),
        "-o",
        &path,
    ]);
    let content = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let document = serde_json::from_slice(&content).unwrap_or_else(|e| panic!("{path}: {e}"));
    (path, document)
}

/// A file removed when dropped, however the test ends.
pub struct TempFile(pub std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Waits until `done`, failing the test after `limit`.
pub fn wait_until(what: &str, limit: std::time::Duration, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The row of the causes table whose label starts with `prefix`.
pub fn cause<'a>(doc: &'a serde_json::Value, prefix: &str) -> Option<&'a serde_json::Value> {
    doc["causes"]
        .as_array()?
        .iter()
        .find(|c| c["cause"].as_str().is_some_and(|s| s.starts_with(prefix)))
}

/// The binary the runner finds from the test's own path is the one cargo built for
/// these tests.
/// Writes a value to a file for the test's run, and the value found back when dropped.
pub struct Setting {
    path: String,
    found: String,
}

impl Setting {
    pub fn set(path: &str, value: &str) -> Setting {
        let found = read(path);
        std::fs::write(path, value).unwrap_or_else(|e| panic!("writing {value} to {path}: {e}"));
        Setting {
            path: path.into(),
            found,
        }
    }
}

impl Drop for Setting {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.found);
    }
}

#[test]
fn the_runner_runs_the_binary_cargo_built() {
    assert_eq!(
        binary().canonicalize().unwrap(),
        std::path::Path::new(env!("CARGO_BIN_EXE_irqlens"))
            .canonicalize()
            .unwrap()
    );
}
