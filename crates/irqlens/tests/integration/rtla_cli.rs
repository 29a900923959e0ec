//! rtla's options where irqlens does the same (`-a`, `--warm-up`, `--on-threshold`,
//! `--on-end`, hist `--no-header`/`--no-index`): bad values are one clear line, a
//! non-zero exit, nothing loaded. No root needed.

use crate::common::{assert_fails_with, fixture, irqlens, irqlens_ok, temp_path};

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
        assert_eq!(output.status.code(), Some(1), "a usage error");
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

/// Every usage error exits 1 with one line, whatever part of the command line is wrong:
/// 2 means a stop threshold was hit, and a script that gates on it must not read a typo
/// as a latency spike. Values that start with '-' are refused for their value.
#[test]
fn usage_errors_exit_1_with_one_line() {
    let bad: &[(&[&str], &str)] = &[
        (&["noise", "-c", "a"], "'a' is not a CPU list"),
        (&["noise", "-d", "0"], "longer than zero"),
        (&["noise", "-T", "-1"], "'-1' must be positive"),
        (&["noise", "--causes", "-1"], "'-1' for '--causes"),
        (&["noise", "--bogus"], "unexpected argument '--bogus'"),
        (&["bh", "-d"], "a value is required"),
        (&["wakeup", "-c", "0-"], "not a CPU list"),
        (&["tune", "--rounds", "1"], "'1' for '--rounds"),
        (&["steer", "--hold", "-1s"], "'-1s' must be positive"),
        (
            &["trial", "net", "--consumer-nice", "-40"],
            "'-40' for '--consumer-nice",
        ),
        (&["sim", "--seed", "x"], "'x' for '--seed"),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["--generate", "nothing"], "'nothing' for '--generate"),
    ];
    for (args, expected) in bad {
        let output = irqlens(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "irqlens {args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "irqlens {args:?}: expected '{expected}' in {stderr}"
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "irqlens {args:?}: {stderr}"
        );
        assert!(
            stderr.starts_with("irqlens: "),
            "irqlens {args:?}: {stderr}"
        );
    }
    // asked-for help and version are no error; irqlens alone shows the help and fails
    for args in [
        &["--help"][..],
        &["--version"],
        &["noise", "--help"],
        &["trial", "net", "-h"],
    ] {
        assert_eq!(irqlens(args).status.code(), Some(0), "irqlens {args:?}");
    }
    let alone = irqlens(&[]);
    assert_eq!(alone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("Usage:"));
}

/// `--help` shows the subcommand's examples after its options.
#[test]
fn help_ends_with_examples() {
    let output = irqlens(&["noise", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("Examples:\n  irqlens noise"), "{help}");
}

/// A hist recording's header asking for `--no-header --no-index`, as a run with those
/// flags records it: in its options (format 2) or its command line (format 1).
fn headerless(recording: &str) -> Vec<u8> {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(recording).unwrap()),
        &mut text,
    )
    .unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(first).unwrap();
    let hist = header
        .get_mut("options")
        .map(|options| &mut options["hist"]);
    match hist.and_then(serde_json::Value::as_object_mut) {
        Some(hist) => {
            hist.insert("no_header".into(), true.into());
            hist.insert("no_index".into(), true.into());
        }
        None => {
            let argv = header["argv"].as_array_mut().unwrap();
            argv.extend(["--no-header".into(), "--no-index".into()]);
        }
    }
    let mut gzipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzipped, format!("{header}\n{rest}").as_bytes()).unwrap();
    gzipped.finish().unwrap()
}

#[test]
fn hist_without_header_and_index_prints_only_the_counts_on_stdout() {
    for recording in ["v2/noise-hist", "v1/bh-hist", "v1/wakeup-hist"] {
        let path = temp_path(&format!(
            "headerless-{}.jsonl.gz",
            recording.replace('/', "-")
        ));
        std::fs::write(
            &path,
            headerless(&fixture(&format!("{recording}.jsonl.gz"))),
        )
        .unwrap();
        let output = irqlens_ok(&["report", path.to_str().unwrap()]);
        std::fs::remove_file(&path).unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(!stdout.trim().is_empty(), "{recording}: no counts");
        for line in stdout.lines() {
            assert!(
                !line.is_empty()
                    && line
                        .split_whitespace()
                        .all(|cell| cell.parse::<u64>().is_ok()),
                "{recording}: not a line of counts on stdout: {line:?}\n{stdout}"
            );
        }
        // what the run traced and lost is still said, on stderr
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains("lost"), "{recording}: {stderr}");
    }
}
