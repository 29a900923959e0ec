//! Bad input: one clear line on stderr, a non-zero exit, nothing loaded. No root needed
//! (every check happens before irqlens touches the kernel).

use crate::common::assert_fails_with;

#[test]
fn cpu_out_of_range() {
    assert_fails_with(
        &["noise", "-c", "4095", "-d", "1"],
        "CPU 4095 is offline or does not exist",
    );
}

#[test]
fn malformed_cpu_list() {
    assert_fails_with(&["noise", "-c", "0-", "-d", "1"], "is not a CPU list");
    assert_fails_with(&["noise", "-c", "3-1", "-d", "1"], "runs backwards");
}

#[test]
fn malformed_duration() {
    assert_fails_with(&["noise", "-d", "10x"], "is not a duration");
}

#[test]
fn malformed_times_and_priorities() {
    assert_fails_with(
        &["noise", "-T", "5 parsecs", "-d", "1"],
        "unknown time unit",
    );
    assert_fails_with(
        &["noise", "-P", "f:0", "-d", "1"],
        "real-time priorities go from 1 to 99",
    );
    assert_fails_with(
        &["noise", "-r", "2s", "-p", "1s", "-d", "1"],
        "must not exceed period",
    );
}

#[test]
fn hist_takes_its_own_options() {
    assert_fails_with(&["noise", "hist", "-E", "0", "-d", "1"], "histogram needs");
}

/// `-b` takes units as every µs option does; negative values are refused as such (not as
/// an unknown flag), 20-digit ones as too large.
#[test]
fn option_values_sign_size_and_units() {
    assert_fails_with(
        &["noise", "hist", "-b", "-3", "-d", "1"],
        "'-3' must be positive",
    );
    assert_fails_with(
        &["noise", "hist", "-b", "1500ns", "-d", "1"],
        "not a whole number of µs",
    );
    assert_fails_with(&["noise", "-s", "-3", "-d", "1"], "'-3' must be positive");
    assert_fails_with(&["noise", "-S", "-2ms", "-d", "1"], "must be positive");
    assert_fails_with(&["noise", "-d", "-3"], "'-3' must be positive");
    assert_fails_with(
        &["noise", "hist", "-E", "-1", "-d", "1"],
        "must be positive",
    );
    for args in [
        &["noise", "hist", "-b", "99999999999999999999"][..],
        &["noise", "-s", "99999999999999999999"],
        &["noise", "-T", "99999999999999999999"],
        &["noise", "hist", "-E", "99999999999999999999"],
    ] {
        assert_fails_with(args, "'99999999999999999999' is too large");
    }
}

#[test]
fn housekeeping_on_a_measured_cpu_is_warned_about_once() {
    // the --record path fails the run before anything is loaded, after the options
    let args = [
        "noise",
        "-H",
        "0",
        "-c",
        "0",
        "-d",
        "1",
        "--record",
        "/nonexistent/x.gz",
    ];
    let output = crate::common::irqlens(&args);
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("-H 0 includes measured CPUs (0)"),
        "{stderr}"
    );
    // a -H apart from the measured CPUs is not warned about
    let apart = [
        "noise",
        "-H",
        "0",
        "-c",
        "1",
        "-d",
        "1",
        "--record",
        "/nonexistent/x.gz",
    ];
    let stderr = String::from_utf8(crate::common::irqlens(&apart).stderr).unwrap();
    assert!(!stderr.contains("warning"), "{stderr}");
}
