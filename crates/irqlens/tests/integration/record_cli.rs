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
