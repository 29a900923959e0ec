//! `--perfetto FILE` on real runs: the trace obeys the format's rules (Perfetto's
//! included: no partial overlap on a lane), shows the measured CPU's samples and
//! interrupts, and a recording converted later gives the very same events. Needs root.

use std::path::PathBuf;

use crate::common::*;
use irqlens_test_support::perfetto_check::{SliceCounts, check_trace};

fn measured_cpu() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32) - 1
}

/// The trace at `path`, checked, with its slices counted per (CPU, lane).
fn read_trace(path: &PathBuf) -> (serde_json::Value, SliceCounts) {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: serde_json::Value = serde_json::from_slice(&text).expect("the trace is JSON");
    let counts = check_trace(&doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (doc, counts)
}

fn slices_on(counts: &SliceCounts, cpu: u32, lane: &str) -> usize {
    counts
        .get(&(format!("CPU {cpu}"), lane.to_owned()))
        .copied()
        .unwrap_or(0)
}

/// Runs `capability` with --perfetto and --record, converts the recording, and returns
/// the live trace's slice counts once both traces are checked and equal.
fn live_and_replayed(capability: &str) -> SliceCounts {
    let cpu = measured_cpu().to_string();
    let (live, recording, replayed) = (
        temp_path(&format!("{capability}-live.json")),
        temp_path(&format!("{capability}.jsonl.gz")),
        temp_path(&format!("{capability}-replayed.json")),
    );
    let live_arg = live.to_str().unwrap();
    let recording_arg = recording.to_str().unwrap();
    irqlens_ok(&[
        capability,
        "-c",
        &cpu,
        "-d",
        "3",
        "-q",
        "--perfetto",
        live_arg,
        "--record",
        recording_arg,
    ]);
    irqlens_ok(&[
        "report",
        recording_arg,
        "--perfetto",
        replayed.to_str().unwrap(),
    ]);
    let (live_doc, counts) = read_trace(&live);
    let (replayed_doc, _) = read_trace(&replayed);
    assert_eq!(
        live_doc, replayed_doc,
        "the recording's trace differs from the live run's"
    );
    for path in [live, recording, replayed] {
        std::fs::remove_file(path).unwrap();
    }
    counts
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn noise_trace_shows_samples_and_their_causes() {
    assert_root();
    let counts = live_and_replayed("noise");
    let cpu = measured_cpu();
    assert!(
        slices_on(&counts, cpu, "noise") > 0,
        "no noise samples: {counts:?}"
    );
    // the tick interrupts every measurement thread at least once in 3 s
    assert!(
        slices_on(&counts, cpu, "hardirq") > 0,
        "no hardirqs: {counts:?}"
    );
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn bh_trace_shows_interrupts_softirqs_and_threads() {
    assert_root();
    let counts = live_and_replayed("bh");
    let cpu = measured_cpu();
    for lane in ["hardirq", "softirq", "thread"] {
        assert!(
            slices_on(&counts, cpu, lane) > 0,
            "no {lane} slices: {counts:?}"
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn wakeup_trace_shows_latencies_and_their_path() {
    assert_root();
    let counts = live_and_replayed("wakeup");
    let cpu = measured_cpu();
    for lane in ["latency", "hardirq", "tasklet/work/hrtimer", "thread"] {
        assert!(
            slices_on(&counts, cpu, lane) > 0,
            "no {lane} slices: {counts:?}"
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn account_trace_shows_interrupts_and_threads() {
    assert_root();
    let counts = live_and_replayed("account");
    let cpu = measured_cpu();
    for lane in ["hardirq", "thread"] {
        assert!(
            slices_on(&counts, cpu, lane) > 0,
            "no {lane} slices: {counts:?}"
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn report_perfetto_takes_one_recording() {
    assert_fails_with(
        &["report", "a.jsonl.gz", "b.jsonl.gz", "--perfetto", "x.json"],
        "--perfetto x.json takes one recording, not 2",
    );
}
