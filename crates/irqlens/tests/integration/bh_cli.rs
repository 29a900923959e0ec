//! `irqlens bh` bad input: one clear line on stderr, a non-zero exit, nothing loaded. No
//! root needed (every check happens before irqlens touches the kernel).

use crate::common::assert_fails_with;

#[test]
fn unknown_trigger() {
    assert_fails_with(
        &["bh", "-t", "disk", "-d", "1"],
        "expected one of timer, net, workqueue, tasklet, block",
    );
}

#[test]
fn rate_needs_a_trigger_and_a_sane_value() {
    assert_fails_with(&["bh", "--rate", "100", "-d", "1"], "--trigger");
    assert_fails_with(
        &["bh", "-t", "timer", "--rate", "0", "-d", "1"],
        "--rate must be 1 to 10000",
    );
}

#[test]
fn unknown_load() {
    assert_fails_with(
        &["bh", "-l", "lots", "-d", "1"],
        "expected zero, one, many or many:N",
    );
    assert_fails_with(
        &["bh", "-l", "many:0", "-d", "1"],
        "N must be a number from 1 to 4096",
    );
}

#[test]
fn offline_cpu() {
    assert_fails_with(
        &["bh", "-c", "4095", "-d", "1"],
        "CPU 4095 is offline or does not exist",
    );
}

#[test]
fn hist_options() {
    assert_fails_with(&["bh", "hist", "-b", "0", "-d", "1"], "histogram needs");
}
