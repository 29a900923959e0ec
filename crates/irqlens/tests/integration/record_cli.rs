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
