//! A test run again in a process of its own: for what a process measures of itself (its
//! resident memory), which the other tests of its binary, running alongside on other
//! threads, would add to.

use std::process::Command;

/// Set in the process `rerun_alone` starts.
const ALONE_VAR: &str = "IRQLENS_TEST_ALONE";

/// Whether this process is one `rerun_alone` started.
pub fn is_alone() -> bool {
    std::env::var_os(ALONE_VAR).is_some()
}

/// Runs the test `name` (its path in the binary, e.g. `module::tests::name`) of the
/// running test binary in a process of its own, and fails with that run's output if it
/// fails.
pub fn rerun_alone(name: &str) {
    let output = Command::new(std::env::current_exe().expect("the running test binary"))
        .args([
            "--exact",
            name,
            "--include-ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ALONE_VAR, "1")
        .output()
        .expect("running the test alone");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && printed.contains("1 passed"),
        "{name}, run alone: {printed}"
    );
    eprintln!("{printed}");
}
