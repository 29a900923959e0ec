//! irqlens check without root: its profiles, and the command lines it refuses (exit 1)
//! before anything is read or measured.

use crate::common::*;

#[test]
fn a_profile_shows_its_thresholds_with_the_options_over_them() {
    let output = irqlens_ok(&[
        "check",
        "--profile",
        "hpc",
        "--show-profile",
        "--max-noise",
        "7",
    ]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("profile hpc: "), "{text}");
    assert!(text.contains("--max-noise 7 µs"), "{text}");
    assert!(text.contains("--min-available 99.5%"), "{text}");
    assert!(!text.contains("max-latency"), "{text}");
    let profile = irqlens_json(&["check", "--profile", "network", "--show-profile"]);
    assert_eq!(profile["profile"], "network");
    assert_eq!(
        profile["measured"],
        serde_json::json!(["max-noise", "max-bh"])
    );
    assert_eq!(profile["thresholds"]["max_bh_us"], 100.0);
}

#[test]
fn bad_command_lines_are_refused_in_one_line_with_status_1() {
    for (args, message) in [
        (
            &["check", "--skip", "no-such-check"][..],
            "--skip no-such-check: no such check",
        ),
        (&["check", "--profile", "gaming"], "no profile \"gaming\""),
        (
            &["check", "--min-available", "101"],
            "not a percentage from 0 to 100",
        ),
        (&["check", "-c", "4095"], "4095"),
    ] {
        let output = irqlens(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
