//! Recordings (root, BPF): what `report` makes of a recording is what the live run
//! showed; `compare` sees injected noise; pandas and DuckDB read the file; a killed run's file is
//! refused as truncated.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::*;
use irqlens_test_support::python::documented_pandas_reader;
use serde_json::Value;

/// Runs `args` with `-q --record path`, failing on a non-zero exit.
fn record(args: &[&str], path: &Path) -> Output {
    let mut all = args.to_vec();
    all.extend(["-q", "--record", path.to_str().unwrap()]);
    irqlens_ok(&all)
}

/// Records `args` with --json, then reports the recording with --json: both documents.
fn live_and_replayed(args: &[&str]) -> (Value, Value) {
    let path = temp_path("roundtrip.jsonl.gz");
    let path_text = path.to_str().unwrap();
    let mut recorded = args.to_vec();
    recorded.extend(["-q", "--record", path_text]);
    let live = irqlens_json(&recorded);
    let report = irqlens_json(&["report", path_text]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(report.as_array().map(Vec::len), Some(1), "{report:#}");
    let mut replayed = report[0].clone();
    // the one thing the live run cannot tell: which file it was replayed from
    let recording = replayed
        .as_object_mut()
        .and_then(|document| document.remove("recording"));
    assert_eq!(recording.unwrap()["file"], path_text, "{report:#}");
    (live, replayed)
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn report_gives_the_live_results_of_every_capability() {
    assert_root();
    for args in [
        &["noise", "-c", "1", "-d", "2"][..],
        &["noise", "hist", "-c", "1", "-d", "2", "-E", "64"],
        &[
            "bh",
            "-c",
            "1",
            "-d",
            "2",
            "--trigger",
            "timer",
            "--rate",
            "500",
        ],
        &["wakeup", "-c", "1", "-d", "2"],
        &["account", "-c", "1", "-d", "2", "-i", "1", "--compensate"],
    ] {
        let (live, replayed) = live_and_replayed(args);
        // the runs measured something: the equality below is not of two empty tables
        let measured = live.to_string().len();
        assert!(measured > 500, "{args:?}: {live:#}");
        assert_eq!(
            live, replayed,
            "irqlens {args:?}: the report differs from the live run"
        );
    }
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn report_prints_the_live_tables() {
    assert_root();
    let path = temp_path("tables.jsonl.gz");
    let path_text = path.to_str().unwrap();
    let live = record(&["bh", "-c", "1", "-d", "2"], &path);
    let report = irqlens_ok(&["report", path_text]);
    let report = String::from_utf8(report.stdout).unwrap();
    let (heading, tables) = report.split_once('\n').unwrap();
    assert!(
        heading.starts_with(&format!("# {path_text}: ")),
        "{heading}"
    );
    assert!(heading.contains(" bh -c 1 -d 2 -q --record "), "{heading}");
    assert_eq!(tables, String::from_utf8(live.stdout).unwrap());
    std::fs::remove_file(&path).unwrap();
}

/// The same noise measurement without and with a spinner stealing 2 ms every 20 ms:
/// compare shows the spinner as a cause of B only and CPU 1's noise grown by its time.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn compare_shows_what_an_injected_spinner_changed() {
    assert_root();
    let (quiet, noisy) = (temp_path("a.jsonl.gz"), temp_path("b.jsonl.gz"));
    let record_noise = |path: &Path| record(&["noise", "-c", "1", "-d", "3"], path);
    record_noise(&quiet);
    let spinner = Spinner::start(
        "il-compare",
        1,
        Duration::from_millis(20),
        Duration::from_millis(2),
    );
    record_noise(&noisy);
    let (_, spun_ns) = spinner.totals();
    spinner.stop();
    let doc = irqlens_json(&["compare", quiet.to_str().unwrap(), noisy.to_str().unwrap()]);
    let figures = doc["figures"].as_array().unwrap();
    let figure = |group: &str, name: &str| {
        figures
            .iter()
            .find(|f| f["group"] == group && f["figure"] == name)
            .unwrap_or_else(|| panic!("no {group} {name} in {doc:#}"))
    };
    // threads are compared by name: their pids differ from run to run
    let spinner_total = figure("cause thread il-compare", "total");
    assert!(spinner_total["a"].is_null(), "{spinner_total}");
    // 3 s of 2 ms every 20 ms: about 300 ms, never more than the spinner spun by its own
    // clock while B was recorded
    let stolen = spinner_total["b"].as_f64().unwrap();
    assert!(
        stolen >= 250e6 && stolen <= spun_ns as f64 * 1.02,
        "spun {spun_ns} ns: {spinner_total}"
    );
    // the spinner's time is part of B's noise (A's own noise varies too much on a VM
    // for the difference to tell)
    let noise = figure("cpu 1", "noise");
    assert!(noise["b"].as_f64().unwrap() >= stolen, "{noise}");
    assert_eq!(doc["baseline"]["per_cpu"][0]["cpu"], 1);

    let text = irqlens(&["compare", quiet.to_str().unwrap(), noisy.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("cause thread il-compare"), "{text}");
    std::fs::remove_file(&quiet).unwrap();
    std::fs::remove_file(&noisy).unwrap();
}

/// Records `noise -c 1 -d 2`, then runs the Python `script` on the file (its path is
/// `sys.argv[1]`): the live document and the words the script printed.
fn noise_recording_read_by(name: &str, script: &str) -> (Value, Vec<String>) {
    let path = temp_path(name);
    let path_text = path.to_str().unwrap();
    let live = irqlens_json(&["noise", "-c", "1", "-d", "2", "-q", "--record", path_text]);
    let output = Command::new("python3")
        .args(["-c", script, path_text])
        .output()
        .expect("python3");
    std::fs::remove_file(&path).unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let words = String::from_utf8(output.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    (live, words)
}

/// The documented way to read a recording without irqlens (docs/output.md's reader).
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn pandas_reads_a_recording() {
    assert_root();
    let use_it = r#"
import sys
df = read_recording(sys.argv[1])
header = df[df.type == "header"].iloc[0]
records = df[df.type == "noise_record"]
periods = df[df.type == "noise_period"]
end = df[df.type == "end"].iloc[0]
samples = sum(len(s) for s in periods.samples)
print(header.format, int(header.version), header.capability, len(records), end["info"]["events"], samples,
      int(records[records.cpu == 1].duration_ns.sum() > 0), len(header.system["kernel_release"]) > 0)
"#;
    let script = format!("{}\n{use_it}", documented_pandas_reader());
    let (live, fields) = noise_recording_read_by("pandas.jsonl.gz", &script);
    let version = irqlens_record::VERSION.to_string();
    assert_eq!(
        &fields[..3],
        ["irqlens-recording", version.as_str(), "noise"]
    );
    assert_eq!(fields[3], fields[4], "every record the run took is a row");
    assert_eq!(fields[3], live["run"]["events"].to_string());
    let samples: u64 = live["per_cpu"][0]["samples"].as_u64().unwrap();
    assert_eq!(fields[5], samples.to_string());
    assert_eq!(&fields[6..], ["1", "True"]);
}

/// The README's DuckDB query, on the same kind of file.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn duckdb_reads_a_recording() {
    assert_root();
    let script = r#"
import sys, duckdb
rows = f"read_json('{sys.argv[1]}', format='newline_delimited', compression='gzip')"
count = lambda kind: duckdb.sql(f"SELECT count(*) FROM {rows} WHERE type = '{kind}'").fetchall()[0][0]
samples = duckdb.sql(f"SELECT sum(len(samples)) FROM {rows} WHERE type = 'noise_period'").fetchall()[0][0]
version = duckdb.sql(f"SELECT format, version FROM {rows} WHERE type = 'header'").fetchall()[0]
print(*version, count("noise_record"), samples, count("end"))
"#;
    let (live, fields) = noise_recording_read_by("duckdb.jsonl.gz", script);
    let version = irqlens_record::VERSION.to_string();
    assert_eq!(&fields[..2], ["irqlens-recording", version.as_str()]);
    assert_eq!(
        fields[2],
        live["run"]["events"].to_string(),
        "a row per record"
    );
    assert_eq!(fields[3], live["per_cpu"][0]["samples"].to_string());
    assert_eq!(fields[4], "1");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_killed_run_leaves_a_recording_report_calls_truncated() {
    assert_root();
    let path = temp_path("killed.jsonl.gz");
    let path_text = path.to_str().unwrap();
    let mut child = Command::new(binary())
        .args(["noise", "-c", "1", "-d", "30", "-q", "--record", path_text])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_fails_with(&["report", path_text], "truncated");
    std::fs::remove_file(&path).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn an_interrupted_run_records_to_the_end() {
    assert_root();
    let path = temp_path("interrupted.jsonl.gz");
    let path_text = path.to_str().unwrap();
    interrupted_run(
        &["bh", "-c", "1", "-q", "--record", path_text],
        libc::SIGINT,
    );
    let report = irqlens_json(&["report", path_text]);
    assert_eq!(report[0]["run"]["interrupted"], true);
    assert!(report[0]["run"]["events"].as_u64().unwrap() > 0);
    std::fs::remove_file(&path).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn compare_refuses_two_different_measurements() {
    assert_root();
    let (noise, bh) = (temp_path("noise.jsonl.gz"), temp_path("bh.jsonl.gz"));
    for (path, command) in [(&noise, "noise"), (&bh, "bh")] {
        record(&[command, "-c", "1", "-d", "1"], path);
    }
    assert_fails_with(
        &["compare", noise.to_str().unwrap(), bh.to_str().unwrap()],
        "is a noise recording and",
    );
    std::fs::remove_file(&noise).unwrap();
    std::fs::remove_file(&bh).unwrap();
}
