//! Helpers of the integration tests: run the irqlens binary, inject known noise.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use std::time::{Duration, Instant};

pub const IRQLENS: &str = env!("CARGO_BIN_EXE_irqlens");

pub fn irqlens(args: &[&str]) -> Output {
    Command::new(IRQLENS)
        .args(args)
        .output()
        .expect("running irqlens")
}

/// Runs irqlens, failing with its stderr on a non-zero exit.
pub fn irqlens_ok(args: &[&str]) -> Output {
    let output = irqlens(args);
    assert!(
        output.status.success(),
        "irqlens {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A path in the temp directory for this test process's file `name`.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("irqlens-{}-{name}", std::process::id()))
}

/// Bad input: irqlens exits non-zero with one error line naming `expected`, and prints
/// nothing on stdout.
pub fn assert_fails_with(args: &[&str], expected: &str) {
    let output = irqlens(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "irqlens {args:?} should fail");
    assert!(
        stderr.contains(expected),
        "irqlens {args:?}: expected '{expected}' in: {stderr}"
    );
    assert_eq!(
        stderr
            .trim_end()
            .lines()
            .filter(|l| l.contains("error") || l.starts_with("irqlens:"))
            .count(),
        1,
        "one error line for {args:?}: {stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing on stdout for {args:?}");
}

/// Runs irqlens with --json and parses its document, failing on a non-zero exit.
pub fn irqlens_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let output = irqlens_ok(&all);
    assert_valid_document(&output.stdout);
    serde_json::from_slice(&output.stdout).expect("irqlens --json prints JSON")
}

pub fn assert_root() {
    assert_eq!(
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() },
        0,
        "this test loads BPF programs: run the suite as root"
    );
}

/// Runs irqlens with `args`, sends it `signal` once it has traced for 2.5 s, and returns
/// what it printed; it must have been tracing, must exit successfully and must leave no
/// program loaded.
pub fn interrupted_run(args: &[&str], signal: i32) -> String {
    let child = Command::new(IRQLENS)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting irqlens");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !loaded_irqlens_programs().is_empty(),
        "irqlens {args:?} should be tracing now"
    );
    // SAFETY: kill takes integers; the child is not waited for yet, so its pid cannot
    // name another process.
    unsafe { libc::kill(child.id() as i32, signal) };
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "irqlens {args:?}, signal {signal}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        programs_left_after_exit(),
        Vec::<String>::new(),
        "irqlens {args:?}, signal {signal}"
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Names of irqlens's BPF programs still loaded once the kernel has had up to 3 s to
/// free them (it releases a program asynchronously after its last file is closed).
pub fn programs_left_after_exit() -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = loaded_irqlens_programs();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Names of loaded BPF programs that are irqlens's.
pub fn loaded_irqlens_programs() -> Vec<String> {
    libbpf_rs::query::ProgInfoIter::default()
        .map(|info| info.name.to_string_lossy().into_owned())
        .filter(|name| name.starts_with("irqlens_"))
        .collect()
}

#[allow(unused_imports)]
pub use irqlens_test_support::spinner::Spinner;

/// The row of the causes table whose label starts with `prefix`.
pub fn cause<'a>(doc: &'a serde_json::Value, prefix: &str) -> Option<&'a serde_json::Value> {
    doc["causes"]
        .as_array()?
        .iter()
        .find(|c| c["cause"].as_str().is_some_and(|s| s.starts_with(prefix)))
}

/// The published JSON Schema of every document irqlens prints.
pub const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/irqlens.schema.json"
);

/// Checks `document` against the published schema, with the reference validator
/// (Python's jsonschema, installed by scripts/setup).
pub fn assert_valid_document(document: &[u8]) {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             schema = json.load(open(sys.argv[1]))\n\
             jsonschema.Draft202012Validator(schema).validate(json.load(sys.stdin))",
            SCHEMA,
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (scripts/setup installs it with jsonschema)");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), document).unwrap();
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the document does not follow {SCHEMA}: {}",
        stderr.lines().rev().take(12).collect::<Vec<_>>().join("\n")
    );
}
