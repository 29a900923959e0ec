//! rtla's options where irqlens does the same (`-a`, `--warm-up`, `--on-threshold`,
//! `--on-end`, hist `--no-header`/`--no-index`): bad values are one clear line, a
//! non-zero exit, nothing loaded. No root needed.

use crate::common::{assert_fails_with, irqlens};

#[test]
fn bad_actions_are_refused_before_the_run() {
    for command in ["noise", "wakeup"] {
        assert_fails_with(
            &[command, "-d", "1", "--on-threshold", "reboot"],
            "unknown action",
        );
        assert_fails_with(
            &[command, "-d", "1", "--on-threshold", "signal,num=2"],
            "expected signal,num=N,pid=P",
        );
        assert_fails_with(
            &[command, "-d", "1", "--on-end", "shell,command="],
            "expected shell,command=CMD",
        );
        assert_fails_with(&[command, "-d", "1", "--on-threshold", "trace"], "--record");
    }
    assert_fails_with(
        &["bh", "-d", "1", "--on-end", "signal,num=99,pid=1"],
        "num is a signal number",
    );
}

#[test]
fn bad_auto_and_warm_up_values() {
    assert_fails_with(&["noise", "-a", "-3", "-d", "1"], "'-3' must be positive");
    assert_fails_with(&["wakeup", "-a", "1x", "-d", "1"], "unknown time unit");
    assert_fails_with(&["noise", "--warm-up", "0", "-d", "1"], "longer than zero");
    assert_fails_with(
        &["wakeup", "--warm-up", "3x", "-d", "1"],
        "is not a duration",
    );
    assert_fails_with(
        &["bh", "--warm-up", "-1", "-d", "1"],
        "'-1' must be positive",
    );
}

/// Options rtla has only in some tools are only where irqlens does them.
#[test]
fn stop_options_are_where_a_stop_exists() {
    for (command, option) in [
        ("bh", "--on-threshold"),
        ("account", "-a"),
        ("account", "--warm-up"),
    ] {
        let output = irqlens(&[command, option, "1", "-d", "1"]);
        assert_eq!(output.status.code(), Some(2), "clap's usage error");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("unexpected argument"), "{stderr}");
    }
}

#[test]
fn hist_takes_no_header_and_no_index() {
    for command in ["noise", "wakeup", "bh"] {
        let output = irqlens(&[command, "hist", "--help"]);
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(
            help.contains("--no-header") && help.contains("--no-index"),
            "{command} hist: {help}"
        );
    }
}
