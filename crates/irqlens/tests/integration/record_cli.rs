//! Recordings, without root: files that are not recordings get one clear error.

use std::io::Write;

use crate::common::*;

#[test]
fn report_of_a_missing_file_names_it() {
    assert_fails_with(
        &["report", "/nonexistent/run.jsonl.gz"],
        "/nonexistent/run.jsonl.gz",
    );
}

#[test]
fn report_of_another_file_says_it_is_not_a_recording() {
    let path = temp_path("cli.txt");
    std::fs::write(&path, "not a recording\n").unwrap();
    assert_fails_with(
        &["report", path.to_str().unwrap()],
        "not an irqlens recording",
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn report_of_a_newer_format_says_so() {
    let path = temp_path("cli.jsonl.gz");
    let mut out = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    writeln!(
        out,
        r#"{{"type":"header","format":"irqlens-recording","version":99}}"#
    )
    .unwrap();
    out.finish().unwrap();
    assert_fails_with(&["report", path.to_str().unwrap()], "version 99 is newer");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn record_to_an_unwritable_path_fails_before_measuring() {
    assert_fails_with(
        &[
            "noise",
            "-c",
            "0",
            "-d",
            "1",
            "--record",
            "/nonexistent/dir/run.jsonl.gz",
        ],
        "--record /nonexistent/dir/run.jsonl.gz",
    );
}

#[test]
fn report_blocked_reading_a_fifo_ends_at_ctrl_c() {
    use std::os::unix::process::ExitStatusExt;
    let fifo = temp_path("report.fifo");
    let _ = std::fs::remove_file(&fifo);
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // no writer ever opens the FIFO: report blocks in its open or its read
    let report = start(&["report", fifo.to_str().unwrap()]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let output = signal_and_expect_end(report, libc::SIGINT, std::time::Duration::from_secs(20));
    std::fs::remove_file(&fifo).unwrap();
    assert_eq!(output.status.signal(), Some(libc::SIGINT), "{output:?}");
}

#[test]
fn an_output_file_that_is_a_symbolic_link_is_refused_and_its_target_kept() {
    let target = temp_path("precious");
    let link = temp_path("planted.html");
    let _ = std::fs::remove_file(&link);
    std::fs::write(&target, "precious").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let recording = fixture("v1/noise-top.jsonl.gz");
    assert_fails_with(
        &["report", &recording, "--html", link.to_str().unwrap()],
        "is a symbolic link",
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    std::fs::remove_file(&link).unwrap();
    std::fs::remove_file(&target).unwrap();
}

#[test]
fn an_html_report_is_written_for_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let page = temp_path("private.html");
    let _ = std::fs::remove_file(&page);
    let recording = fixture("v1/noise-top.jsonl.gz");
    irqlens_ok(&["report", &recording, "--html", page.to_str().unwrap()]);
    let mode = std::fs::metadata(&page).unwrap().permissions().mode();
    std::fs::remove_file(&page).unwrap();
    assert_eq!(mode & 0o777, 0o600);
}

/// irqlens `args` with `input` on its standard input.
fn irqlens_with_input(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = std::process::Command::new(binary())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // written while irqlens reads: a pipe holds less than a recording
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// A report's text without its heading line, which names the file.
fn without_heading(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout);
    assert!(text.starts_with("# "), "{text}");
    text.lines().skip(1).collect::<Vec<_>>().join("\n")
}

#[test]
fn report_reads_a_recording_from_a_pipe_gzipped_or_not() {
    let recording = fixture("v2/noise-hist.jsonl.gz");
    let expected = without_heading(&irqlens_ok(&["report", &recording]).stdout);
    let gzipped = std::fs::read(&recording).unwrap();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(gzipped.as_slice()),
        &mut plain,
    )
    .unwrap();
    for input in [&gzipped, &plain] {
        for name in ["-", "/dev/stdin"] {
            let output = irqlens_with_input(&["report", name], input);
            assert!(output.status.success(), "report {name}: {output:?}");
            assert_eq!(without_heading(&output.stdout), expected, "report {name}");
        }
    }
    let plain_file = temp_path("gunzipped.jsonl");
    std::fs::write(&plain_file, &plain).unwrap();
    let output = irqlens_ok(&["report", plain_file.to_str().unwrap()]);
    std::fs::remove_file(&plain_file).unwrap();
    assert_eq!(without_heading(&output.stdout), expected);
}

#[test]
fn a_trials_recording_given_for_a_measurement_says_what_it_is_and_what_reads_it() {
    let trial: serde_json::Value =
        serde_json::from_str(&read(&fixture("trial/ladder.json"))).unwrap();
    let path = temp_path("trial.jsonl.gz");
    irqlens_record::result::write(&path, &trial).unwrap();
    let path = path.to_str().unwrap();
    let noise = fixture("v2/noise-hist.jsonl.gz");
    for args in [vec!["advise", path], vec!["compare", path, &noise]] {
        assert_fails_with(&args, "a trial's");
        let stderr = String::from_utf8(irqlens(&args).stderr).unwrap();
        assert!(stderr.contains("irqlens report FILE"), "{stderr}");
        assert!(stderr.contains("sim --calibrate"), "{stderr}");
    }
    // and report reads it, from a file or a pipe
    irqlens_ok(&["report", path]);
    let output = irqlens_with_input(&["report", "-"], &std::fs::read(path).unwrap());
    assert!(output.status.success(), "{output:?}");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn an_output_that_cannot_be_written_fails_before_the_run_naming_its_option() {
    let recording = fixture("v2/noise-hist.jsonl.gz");
    // /dev/full opens but refuses every write; /proc/version opens for writing as root
    for unwritable in ["/dev/full", "/proc/version"] {
        for option in ["--html", "--perfetto"] {
            assert_fails_with(
                &["report", &recording, option, unwritable],
                &format!("{option} {unwritable}: "),
            );
        }
    }
}

#[test]
fn a_name_with_terminal_escapes_is_printed_harmless() {
    let recording = fixture("v1/account.jsonl.gz");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::read(&recording).unwrap().as_slice()),
        &mut plain,
    )
    .unwrap();
    // a thread that named itself to clear the screen and retitle the terminal
    let hostile = String::from_utf8(plain)
        .unwrap()
        .replace("kworker/1:1-eve", r"\u001b[2J\u001b]0;x\u0007");
    assert!(
        hostile.contains(r"\u001b[2J"),
        "the fixture names kworker/1:1-events"
    );
    let output = irqlens_with_input(&["report", "-"], hostile.as_bytes());
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("?[2J?]0;x?"), "the name, shown: {text}");
    assert!(
        !output.stdout.iter().any(|&b| b == 0x1b || b == 0x07),
        "a control character reached the terminal: {text}"
    );
    // JSON keeps the name, escaped
    let output = irqlens_with_input(&["report", "-", "--json"], hostile.as_bytes());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(doc.to_string().contains(r"\u001b[2J"), "{doc}");
}
