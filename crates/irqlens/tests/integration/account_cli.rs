//! `irqlens account` bad input: one clear line on stderr, a non-zero exit, nothing loaded.
//! No root needed (every check happens before irqlens touches the kernel).

use crate::common::assert_fails_with;

#[test]
fn interval_must_fit_the_run() {
    assert_fails_with(
        &["account", "-d", "2", "-i", "5"],
        "--interval is longer than --duration",
    );
    assert_fails_with(&["account", "-i", "0", "-d", "1"], "-i");
}

#[test]
fn bad_cpus_and_top() {
    assert_fails_with(&["account", "-c", "4096", "-d", "1"], "4096");
    assert_fails_with(&["account", "-c", "x", "-d", "1"], "-c");
    assert_fails_with(
        &["account", "--top", "0", "-d", "1"],
        "--top must be at least 1",
    );
}
