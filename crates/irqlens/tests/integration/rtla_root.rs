//! rtla's options where irqlens does the same, run: `-a` stops with status 2 and leaves
//! its recording where rtla leaves its trace (the current directory), `--on-threshold`
//! and `--on-end` act after the run, `--warm-up` runs first and measures after. Needs
//! root (thresholds of 1 µs certainly hit on any machine).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;

/// The CPU the tests measure: the last one, away from CPU 0's housekeeping.
fn measured_cpu() -> String {
    (std::thread::available_parallelism().map_or(1, |n| n.get()) - 1).to_string()
}

/// A fresh directory of this test's own, for the files irqlens and the actions write.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = temp_path(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs irqlens with `args` in `dir`.
fn irqlens_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running irqlens")
}

/// `-a 1` stops at once with status 2; the run is recorded to the default file in the
/// current directory, named on stderr, and `irqlens report` reads it back with its stop.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn auto_stops_and_leaves_a_recording_report_reads() {
    assert_root();
    let cpu = measured_cpu();
    for (command, file, stop_line) in [
        ("noise", "irqlens-noise.jsonl.gz", "Stopped: "),
        ("wakeup", "irqlens-wakeup.jsonl.gz", "Stopped by"),
    ] {
        let dir = fresh_dir(&format!("auto-{command}"));
        let args = [command, "-c", &cpu, "-d", "20", "-q", "-a", "1"];
        let output = irqlens_in(&dir, &args);
        assert_threshold_hit(&args, &output);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("recorded in {file}")),
            "{command}: {stderr}"
        );
        let recording = dir.join(file);
        assert!(recording.is_file(), "no {}", recording.display());
        let report = irqlens_ok(&["report", recording.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&report.stdout);
        assert!(text.contains(stop_line), "{command} report: {text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // noise's -a is rtla's -s US -T 1; an explicit -T still wins
    let dir = fresh_dir("auto-threshold");
    let json = irqlens_in(
        &dir,
        &["noise", "-c", &cpu, "-d", "20", "-a", "1", "--json"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["options"]["threshold_ns"], 1_000);
    assert_eq!(doc["options"]["stop_ns"], 1_000);
    std::fs::remove_file(dir.join("irqlens-noise.jsonl.gz")).unwrap();
    let recorded = dir.join("elsewhere.jsonl.gz");
    let args = [
        "noise",
        "-c",
        &cpu,
        "-d",
        "20",
        "-a",
        "1",
        "-T",
        "3",
        "--json",
        "--record",
        recorded.to_str().unwrap(),
    ];
    let json = irqlens_in(&dir, &args);
    assert_threshold_hit(&args, &json);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["options"]["threshold_ns"], 3_000);
    // --record says where: no default file, and nothing said about it
    assert!(recorded.is_file());
    assert!(!dir.join("irqlens-noise.jsonl.gz").exists());
    assert!(!String::from_utf8_lossy(&json.stderr).contains("recorded in"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// `--on-threshold shell,...` runs after a stop, in order, not after a run that ends
/// normally; `--on-end` runs after both.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn shell_actions_run_after_a_stop_and_at_the_end() {
    assert_root();
    let cpu = measured_cpu();
    let dir = fresh_dir("shell-actions");
    let log = dir.join("log");
    let append = |word: &str| format!("shell,command=echo {word} >> {}", log.display());
    let (first, second, end) = (append("first"), append("second"), append("end"));
    for (command, stop) in [("noise", "-s"), ("wakeup", "-s")] {
        let _ = std::fs::remove_file(&log);
        let args = [
            command,
            "-c",
            &cpu,
            "-d",
            "20",
            "-q",
            stop,
            "1",
            "--on-threshold",
            &first,
            "--on-threshold",
            &second,
            "--on-end",
            &end,
        ];
        let output = irqlens_in(&dir, &args);
        assert_threshold_hit(&args, &output);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "first\nsecond\nend\n",
            "{command}"
        );
    }
    // no stop: --on-threshold does nothing, --on-end still runs
    let _ = std::fs::remove_file(&log);
    let output = irqlens_in(
        &dir,
        &[
            "noise",
            "-c",
            &cpu,
            "-d",
            "1",
            "-q",
            "--on-threshold",
            &first,
            "--on-end",
            &end,
        ],
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "end\n");
    // a failing action ends the list, says so, and the run keeps its status
    let _ = std::fs::remove_file(&log);
    let args = [
        "noise",
        "-c",
        &cpu,
        "-d",
        "20",
        "-q",
        "-s",
        "1",
        "--on-threshold",
        "shell,command=exit 3",
        "--on-threshold",
        &second,
    ];
    let output = irqlens_in(&dir, &args);
    assert_threshold_hit(&args, &output);
    assert!(!log.exists(), "the action after a failed one ran");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--on-threshold shell,command=exit 3: the command failed"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// `--on-threshold signal,num=N,pid=P` sends N to P: a sleep dies of it.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_signal_action_reaches_its_process() {
    assert_root();
    let cpu = measured_cpu();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let action = format!("signal,num={},pid={}", libc::SIGUSR1, sleeper.id());
    let args = [
        "wakeup",
        "-c",
        &cpu,
        "-d",
        "20",
        "-q",
        "-i",
        "1",
        "--on-threshold",
        &action,
    ];
    let output = irqlens(&args);
    assert_threshold_hit(&args, &output);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = sleeper.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(5) {
            let _ = sleeper.kill();
            panic!("the sleep did not get the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(libc::SIGUSR1));
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

fn seconds(value: &serde_json::Value) -> f64 {
    value.as_u64().expect("a time in ns") as f64 / 1e9
}

/// `--warm-up 2 -d 2` runs 4 s and measures the last 2: the run's elapsed time and the
/// measured runtime are those 2 s; a stop threshold is not armed before (a 1 µs stop
/// that hits at once on any machine stops only after the warm-up).
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn warm_up_runs_first_and_is_not_measured() {
    assert_root();
    let cpu = measured_cpu();
    let started = Instant::now();
    let doc = irqlens_json(&[
        "noise",
        "-c",
        &cpu,
        "-d",
        "2",
        "--warm-up",
        "2",
        "-q",
        "-p",
        "100ms",
        "-r",
        "100ms",
    ]);
    let wall = started.elapsed().as_secs_f64();
    let elapsed = seconds(&doc["run"]["elapsed_ns"]);
    let runtime = seconds(&doc["per_cpu"][0]["runtime_ns"]);
    assert!(wall >= 4.0, "the run took {wall} s");
    assert!((1.9..2.5).contains(&elapsed), "elapsed {elapsed} s");
    assert!(
        (1.7..2.2).contains(&runtime),
        "measured runtime {runtime} s"
    );

    let started = Instant::now();
    let doc = irqlens_json(&["wakeup", "-c", &cpu, "-d", "1", "--warm-up", "2", "-q"]);
    let wall = started.elapsed().as_secs_f64();
    let elapsed = seconds(&doc["run"]["elapsed_ns"]);
    let activations = doc["per_cpu"][0]["activations"].as_u64().unwrap();
    assert!(wall >= 3.0, "the run took {wall} s");
    assert!((0.9..1.5).contains(&elapsed), "elapsed {elapsed} s");
    // 1 ms periods: about 1000 in the measured second, not the 3000 of the whole run
    assert!(
        (700..=1_300).contains(&activations),
        "{activations} activations"
    );

    // bh: the load runs through the warm-up, tracing starts after it
    let started = Instant::now();
    let doc = irqlens_json(&[
        "bh",
        "-c",
        &cpu,
        "-d",
        "1",
        "--warm-up",
        "2",
        "-q",
        "-l",
        "one",
    ]);
    let wall = started.elapsed().as_secs_f64();
    let elapsed = seconds(&doc["run"]["elapsed_ns"]);
    assert!(wall >= 3.0, "the run took {wall} s");
    assert!((0.9..1.5).contains(&elapsed), "elapsed {elapsed} s");

    for command in ["noise", "wakeup"] {
        let args = [
            command,
            "-c",
            &cpu,
            "-d",
            "20",
            "-q",
            "-s",
            "1",
            "--warm-up",
            "2",
        ];
        let started = Instant::now();
        let output = irqlens(&args);
        assert_threshold_hit(&args, &output);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(15),
            "irqlens {args:?} stopped after {took:?}"
        );
    }
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}
