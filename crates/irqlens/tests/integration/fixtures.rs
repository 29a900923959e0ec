//! Recordings kept from earlier formats (tests/fixtures): `report` prints the tables it
//! printed when they were made, byte for byte; a version 2 recording replays from the
//! options it keeps, whatever its command line says; the kernel shown is the recorded
//! one. No root needed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde_json::Value;

use crate::common::{binary, fixture, irqlens_json, temp_path};

fn fixtures(version: &str) -> PathBuf {
    PathBuf::from(fixture(version))
}

/// irqlens run in `dir`, so that file names print as the fixtures' outputs have them.
fn irqlens_in(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running irqlens");
    assert!(
        output.status.success(),
        "irqlens {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn assert_same_text(got: &[u8], expected_file: &Path) {
    let expected = std::fs::read(expected_file).unwrap();
    if got != expected.as_slice() {
        let got = String::from_utf8_lossy(got);
        let expected = String::from_utf8_lossy(&expected);
        let line = got
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(expected.lines().count()));
        panic!(
            "{} differs from line {}:\n got: {:?}\nwant: {:?}",
            expected_file.display(),
            line + 1,
            got.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}

#[test]
fn version_1_recordings_report_the_tables_they_did() {
    let dir = fixtures("v1");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let Some(stem) = name.strip_suffix(".jsonl.gz") else {
            continue;
        };
        let output = irqlens_in(&dir, &["report", &name]);
        assert_same_text(&output.stdout, &dir.join(format!("{stem}.report.txt")));
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} v1 fixtures");
}

#[test]
fn compare_of_version_1_recordings_is_unchanged() {
    let dir = fixtures("v1");
    let output = irqlens_in(&dir, &["compare", "bh-top.jsonl.gz", "bh-top-b.jsonl.gz"]);
    assert_same_text(&output.stdout, &dir.join("compare-bh.txt"));
}

#[test]
fn version_2_recordings_report_the_tables_they_did() {
    let dir = fixtures("v2");
    let output = irqlens_in(&dir, &["report", "noise-hist.jsonl.gz"]);
    assert_same_text(&output.stdout, &dir.join("noise-hist.report.txt"));
}

/// The recording's lines, its header changed by `change`, written to a new file.
fn rewritten(recording: &Path, name: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let reader = BufReader::new(GzDecoder::new(std::fs::File::open(recording).unwrap()));
    let path = temp_path(name);
    let mut out = GzEncoder::new(std::fs::File::create(&path).unwrap(), Compression::fast());
    let mut lines = reader.lines();
    let mut header: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    change(&mut header);
    writeln!(out, "{header}").unwrap();
    for line in lines {
        writeln!(out, "{}", line.unwrap()).unwrap();
    }
    out.finish().unwrap();
    path
}

/// Everything but the first line (which names the file and its command line).
fn tables(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_once('\n').unwrap().1.to_owned()
}

#[test]
fn a_version_2_recording_replays_without_its_command_line() {
    let original = fixtures("v2").join("noise-hist.jsonl.gz");
    // an option renamed, a subcommand gone: the command line no longer parses
    let changed = rewritten(&original, "renamed.jsonl.gz", |header| {
        header["argv"] = serde_json::json!(["irqlens", "noise-was-renamed", "--bucket-width", "9"]);
    });
    let dir = changed.parent().unwrap();
    let name = changed.file_name().unwrap().to_str().unwrap();
    let replayed = irqlens_in(dir, &["report", name]);
    let expected = irqlens_in(&fixtures("v2"), &["report", "noise-hist.jsonl.gz"]);
    assert_eq!(tables(&replayed), tables(&expected));
    std::fs::remove_file(&changed).unwrap();
}

#[test]
fn a_version_1_recording_whose_command_line_does_not_parse_is_refused() {
    let original = fixtures("v1").join("noise-hist.jsonl.gz");
    let changed = rewritten(&original, "v1-renamed.jsonl.gz", |header| {
        header["argv"] = serde_json::json!(["irqlens", "noise-was-renamed"]);
    });
    let output = Command::new(binary())
        .arg("report")
        .arg(&changed)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("its command line does not parse"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    std::fs::remove_file(&changed).unwrap();
}

#[test]
fn report_shows_the_recorded_kernel_not_this_one() {
    let original = fixtures("v1").join("bh-top.jsonl.gz");
    let changed = rewritten(&original, "other-kernel.jsonl.gz", |header| {
        header["system"]["kernel_release"] = "9.9.9-elsewhere".into();
    });
    let html = temp_path("other-kernel.html");
    let output = Command::new(binary())
        .arg("report")
        .arg(&changed)
        .arg("--html")
        .arg(&html)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json = String::from_utf8_lossy(&output.stdout);
    let this_kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(json.contains("9.9.9-elsewhere"), "{json}");
    assert!(
        !json.contains(this_kernel.trim()),
        "the host's kernel in {json}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Linux 9.9.9-elsewhere"));
    assert!(!page.contains(this_kernel.trim()));
    std::fs::remove_file(&changed).unwrap();
    std::fs::remove_file(&html).unwrap();
}

/// Every command's `--json` that needs no root follows the published schema, the tables
/// of each capability included: report of each recording, compare of each capability's
/// pair, advise from each, sim (alone, calibrated from a recording and a trial, against
/// a trial), and the trial documents kept as fixtures. The live commands' documents are
/// checked by their root tests (`irqlens_json`).
#[test]
fn every_commands_json_follows_the_published_schema() {
    for version in ["v1", "v2"] {
        let dir = fixtures(version);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".jsonl.gz") {
                let output = irqlens_in(&dir, &["report", &name, "--json"]);
                crate::common::assert_valid_document(&output.stdout);
                let documents: Value = serde_json::from_slice(&output.stdout).unwrap();
                let document = &documents[0];
                assert_eq!(document["tool"], "irqlens");
                assert_eq!(document["recording"]["file"], name.as_str());
                for key in ["events", "lost_events", "elapsed_ns", "interrupted"] {
                    assert!(!document["run"][key].is_null(), "{name}: no run.{key}");
                }
                assert!(document["cpus"].is_array(), "{name}: cpus is a list");
                irqlens_json(&["advise", &fixture(&format!("{version}/{name}"))]);
            }
        }
    }
    let dir = fixtures("v1");
    for (a, b) in [
        ("bh-top", "bh-top-b"),
        ("noise-top", "noise-hist"),
        ("wakeup-task", "wakeup-hist"),
        ("account", "account-threads"),
    ] {
        let (a, b) = (format!("{a}.jsonl.gz"), format!("{b}.jsonl.gz"));
        let output = irqlens_in(&dir, &["compare", &a, &b, "--json"]);
        crate::common::assert_valid_document(&output.stdout);
    }
    irqlens_json(&["sim", "-d", "100ms"]);
    let (calibration, _) =
        crate::common::calibration_from_fixtures("fixtures-schema-calibration.json");
    let calibration = calibration.as_str();
    crate::common::assert_valid_document(&std::fs::read(calibration).unwrap());
    let ladder = fixture("trial/ladder.json");
    irqlens_json(&[
        "sim",
        "--against",
        &ladder,
        "--costs",
        calibration,
        "-d",
        "100ms",
    ]);
    std::fs::remove_file(calibration).unwrap();
    for trial in [
        "trial/ladder.json",
        "trial/calibration.json",
        "trial/knee.json",
        "trial/knee-busy.json",
        "trial/knee-2026-12-07.json",
    ] {
        crate::common::assert_valid_document(&std::fs::read(fixture(trial)).unwrap());
    }
}

/// A change to a document that the schema must refuse.
type Breakage = fn(&mut Value);

#[test]
fn a_document_that_breaks_the_envelope_is_refused_by_the_schema() {
    let dir = fixtures("v2");
    let output = irqlens_in(&dir, &["report", "noise-hist.jsonl.gz", "--json"]);
    let documents: Value = serde_json::from_slice(&output.stdout).unwrap();
    let breakages: [(&str, Breakage); 5] = [
        ("a CPU list written as text", |d| d["cpus"] = "0-1".into()),
        ("a CPU's noise written as text", |d| {
            d["per_cpu"][0]["noise_ns"] = "12".into()
        }),
        ("a cause without its share", |d| {
            d["causes"][0]
                .as_object_mut()
                .unwrap()
                .remove("noise_percent");
        }),
        ("a noise run called bh", |d| d["command"] = "bh".into()),
        ("a run without its events", |d| {
            d["run"].as_object_mut().unwrap().remove("events");
        }),
    ];
    for (what, breakage) in breakages {
        let mut broken = documents.clone();
        breakage(&mut broken[0]);
        let broken = serde_json::to_vec(&broken).unwrap();
        let result = std::panic::catch_unwind(|| crate::common::assert_valid_document(&broken));
        assert!(result.is_err(), "{what} passed the schema");
    }
}
