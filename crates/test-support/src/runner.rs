//! Runs the irqlens binary for crates/irqlens's integration tests and benches, the same
//! way for both: its path, runs that fail with its stderr, its JSON document (checked
//! against the published schema for the tests), a run interrupted by a signal, the BPF
//! programs it leaves loaded, and the root check.
//!
//! The binary is the one cargo builds for the integration tests and benches of
//! crates/irqlens, next to the deps/ folder they run from: only they can use this module
//! (another crate's tests would find whatever irqlens an earlier build left there).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

/// `target/<profile>/irqlens`: cargo builds the binary there for the integration tests
/// and benches of crates/irqlens, which run from `target/<profile>/deps/` (a library is
/// not handed `CARGO_BIN_EXE_irqlens`). Panics if it is missing.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let exe = std::env::current_exe().expect("the path of the running test or bench");
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .unwrap_or_else(|| panic!("{} is not in target/<profile>/deps/", exe.display()));
        let binary = profile.join("irqlens");
        if !binary.is_file() {
            let flag = match profile.file_name().and_then(|name| name.to_str()) {
                Some("release") => " --release".to_owned(),
                Some("debug") => String::new(),
                Some(name) => format!(" --profile {name}"),
                None => String::new(),
            };
            panic!(
                "{} is missing: build it: cargo build{flag}",
                binary.display()
            );
        }
        binary
    })
}

/// Runs irqlens with `args` and returns what it printed, however it exited; its text
/// as wide as its content (files' and pipes' widths), whatever `COLUMNS` the shell exports.
pub fn irqlens(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .expect("running irqlens")
}

/// Runs irqlens, failing with its stderr on a non-zero exit.
fn succeeded(args: &[&str]) -> Result<Output> {
    let output = irqlens(args);
    ensure!(
        output.status.success(),
        "irqlens {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr).trim_end()
    );
    Ok(output)
}

/// Runs irqlens, panicking with its stderr on a non-zero exit.
pub fn irqlens_ok(args: &[&str]) -> Output {
    succeeded(args).unwrap_or_else(|error| panic!("{error}"))
}

/// `args` and `--json`.
fn with_json<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.push("--json");
    all
}

/// Runs irqlens with `args` and `--json` and parses its document, panicking on a
/// non-zero exit or a document that does not follow the schema (the tests' run).
pub fn irqlens_json(args: &[&str]) -> serde_json::Value {
    let output = irqlens_ok(&with_json(args));
    assert_valid_document(&output.stdout);
    serde_json::from_slice(&output.stdout).expect("irqlens --json prints JSON")
}

/// Runs irqlens with `args` and `--json` and parses its document; an error with its
/// stderr on a non-zero exit (the benches' run). Unlike [`irqlens_json`] it does not check
/// the schema: a bench times irqlens's runs and counts its children's CPU time.
pub fn run_json(args: &[&str]) -> Result<serde_json::Value> {
    let output = succeeded(&with_json(args))?;
    serde_json::from_slice(&output.stdout).context("parsing irqlens's JSON")
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

/// Asserts that irqlens `args` exited with rtla's status for a stop threshold hit (2).
pub fn assert_threshold_hit(args: &[&str], output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(2),
        "irqlens {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs irqlens `args`, which must hit a stop threshold well before their 20 s duration;
/// returns what it printed on stdout.
pub fn run_to_threshold(args: &[&str]) -> String {
    let started = std::time::Instant::now();
    let output = irqlens(args);
    assert_threshold_hit(args, &output);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "irqlens {args:?} did not stop early"
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Starts irqlens with `args` in the background, its stdout and stderr piped.
pub fn start(args: &[&str]) -> Child {
    Command::new(binary())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting irqlens")
}

/// Runs irqlens with `args`, sends it `signal` once it has traced for 2.5 s, and returns
/// what it printed; it must have been tracing, must exit successfully and must leave no
/// program loaded.
pub fn interrupted_run(args: &[&str], signal: i32) -> String {
    let child = start(args);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !loaded_irqlens_programs().is_empty(),
        "irqlens {args:?} should be tracing now"
    );
    let output = signal_and_wait(child, signal);
    assert_eq!(
        programs_left_after_exit(),
        Vec::<String>::new(),
        "irqlens {args:?}, signal {signal}"
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Sends `signal` to an irqlens started with [`start`] and waits for it, which must exit
/// successfully (Ctrl-C and SIGTERM end a run as its duration does). Returns its output.
pub fn signal_and_wait(child: Child, signal: i32) -> Output {
    // SAFETY: kill takes integers; the child is not waited for yet, so its pid cannot
    // name another process.
    unsafe { libc::kill(child.id() as i32, signal) };
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "signal {signal}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Sends `signal` to an irqlens started with [`start`] and returns its output once it
/// ended, however it ended; panics if it is still running `limit` after the signal (then
/// it is killed): a command that ignores the signal hangs, and that is what this catches.
pub fn signal_and_expect_end(mut child: Child, signal: i32, limit: Duration) -> Output {
    // SAFETY: kill takes integers; the child is not waited for yet, so its pid cannot
    // name another process.
    unsafe { libc::kill(child.id() as i32, signal) };
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("waiting for irqlens").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("irqlens was still running {limit:?} after signal {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("irqlens's output")
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

/// A TCP port nothing listens on now (the kernel's pick), for a run to serve on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on loopback")
        .port()
}

/// A path in the temp directory for this process's file `name`.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("irqlens-{}-{name}", std::process::id()))
}

/// Fails with `why` (what needs root) unless run as root.
pub fn require_root(why: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!("{why}: run it as root");
    }
    Ok(())
}

/// Panics unless run as root: for the tests that load BPF programs.
pub fn assert_root() {
    if let Err(error) = require_root("this test loads BPF programs") {
        panic!("{error}");
    }
}

/// The published JSON Schema of every document irqlens prints.
pub const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/irqlens.schema.json"
);

/// Checks `document` against the published schema, with the reference validator
/// (Python's jsonschema, installed by scripts/setup).
pub fn assert_valid_document(document: &[u8]) {
    let script = "import json, sys, jsonschema\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  jsonschema.Draft202012Validator(schema).validate(json.load(sys.stdin))";
    if let Err(stderr) = crate::python::run_script(script, &[SCHEMA], document) {
        panic!(
            "the document does not follow {SCHEMA}: {}",
            stderr.lines().rev().take(12).collect::<Vec<_>>().join("\n")
        );
    }
}
