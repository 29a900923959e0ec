//! irqlens wakeup against ground truth: every timer activation is counted (duration /
//! period), a known higher-priority thread shows up as the cause with its busy time, an
//! existing process (cyclictest) is followed in task mode, a signal leaves nothing
//! behind, /dev/cpu_dma_latency is held during a timer-mode run and given back after, and
//! -A aligns the threads' first expiries. Needs root (CI runs as root).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use irqlens_model::sched::Priority;
use serde_json::Value;

fn count(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is not a count"))
}

/// The entry of `cpu` in a wakeup document.
fn cpu_entry(doc: &Value, cpu: u64) -> &Value {
    doc["per_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == cpu)
        .unwrap_or_else(|| panic!("no CPU {cpu} in {doc:#}"))
}

/// Median of a component on a CPU, in µs.
fn median_us(doc: &Value, cpu: u64, component: &str) -> f64 {
    let quantiles = cpu_entry(doc, cpu)["components"][component]["quantiles"]
        .as_array()
        .unwrap_or_else(|| panic!("no {component} on CPU {cpu}: {doc:#}"));
    let median = quantiles.iter().find(|q| q["quantile"] == 0.5).unwrap();
    count(&median["ns"]) as f64 / 1_000.0
}

/// The row of the origins table whose origin contains `needle`.
fn origin<'a>(doc: &'a Value, needle: &str) -> Option<&'a Value> {
    doc["origins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["origin"].as_str().unwrap().contains(needle))
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn every_timer_activation_is_counted_and_decomposed() {
    assert_root();
    let doc = irqlens_json(&["wakeup", "-c", "0-1", "-d", "4", "-p", "1000", "-q"]);
    let missed = count(&doc["run"]["missed_periods"]);
    for cpu in [0, 1] {
        let entry = cpu_entry(&doc, cpu);
        let activations = count(&entry["activations"]);
        // 4 s of 1 ms periods, the first two spent arming, less the periods missed (one
        // count for all the timer threads: up to all of them on this CPU)
        let all = 4_000.0 - 2.0;
        let tolerance = all * 0.01 + 3.0;
        assert!(
            (all - missed as f64 - tolerance..=all + tolerance).contains(&(activations as f64)),
            "CPU {cpu}: {activations} activations, expected about {all} less up to {missed} missed"
        );
        let samples = count(&entry["samples"]);
        assert!(
            samples as f64 >= activations as f64 * 0.98,
            "CPU {cpu}: only {samples} of {activations} activations were decomposed"
        );
        for component in ["irq", "handler", "sched", "return", "total"] {
            assert!(
                entry["components"][component]["count"].as_u64().is_some(),
                "CPU {cpu} has no {component} component"
            );
        }
        let total = median_us(&doc, cpu, "total");
        assert!(
            (1.0..2_000.0).contains(&total),
            "CPU {cpu}: median total {total} us is implausible"
        );
    }
    let timer = origin(&doc, "local_timer").expect("woken from the local timer");
    let samples: u64 = [0, 1]
        .iter()
        .map(|&c| count(&cpu_entry(&doc, c)["samples"]))
        .sum();
    assert_eq!(
        count(&timer["samples"]),
        samples,
        "every timer thread is woken by the timer IRQ"
    );
    assert_eq!(count(&doc["run"]["lost_events"]), 0);
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// A SCHED_FIFO 96 thread woken on the same CPU at the same instants as irqlens's
/// FIFO 95 timer thread runs first, for `busy` each time: the thread latency grows by
/// about `busy`, and the cause names the thread.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_higher_priority_thread_delays_by_its_busy_time_and_is_named() {
    assert_root();
    // -A: the timer thread's expiries on the grid of whole milliseconds, as the hog's
    let args = [
        "wakeup", "-c", "1", "-d", "3", "-p", "1000", "-P", "f:95", "-q", "-A",
    ];
    let baseline = irqlens_json(&args);
    let busy = Duration::from_micros(300);
    let hog = Spinner::start_aligned(
        "wakeup-hog",
        1,
        Duration::from_millis(1),
        busy,
        Priority::Fifo(96),
    );
    let (loaded, (activations, busy_ns)) = hog.during(|| irqlens_json(&args));
    hog.stop();

    let busy_us = busy_ns as f64 / activations.max(1) as f64 / 1_000.0;
    let grown = median_us(&loaded, 1, "total") - median_us(&baseline, 1, "total");
    assert!(
        (busy_us * 0.75..busy_us * 1.3).contains(&grown),
        "the median total latency grew by {grown:.1} us for a {busy_us:.1} us busy thread"
    );
    let sched = median_us(&loaded, 1, "sched");
    assert!(
        sched >= busy_us * 0.75,
        "wakeup -> switch-in {sched:.1} us, busy {busy_us:.1} us"
    );
    let top = &loaded["causes"][0];
    assert_eq!(top["cause"], "thread wakeup-hog ran first", "{loaded:#}");
    let samples = count(&cpu_entry(&loaded, 1)["samples"]);
    assert!(
        count(&top["samples"]) as f64 >= samples as f64 * 0.9,
        "the hog ran first in only {} of {samples} samples",
        top["samples"]
    );
    let per_sample_us = count(&top["total_ns"]) as f64 / count(&top["samples"]) as f64 / 1_000.0;
    assert!(
        (per_sample_us - busy_us).abs() <= busy_us * 0.15,
        "the hog took {per_sample_us:.1} us per sample, it was busy {busy_us:.1} us"
    );
    let switches = &loaded["context_switches"];
    assert!(
        count(&switches["2"]) as f64 >= samples as f64 * 0.9,
        "prev -> hog -> timer thread is two switches: {switches}"
    );
}

/// cyclictest, run on its own, is a process woken by its hrtimer every 1 ms.
fn start_cyclictest(seconds: u32) -> Child {
    Command::new("cyclictest")
        .args(["-t1", "-a1", "-p80", "-i1000", "-q", "-m", "-D"])
        .arg(seconds.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cyclictest (rt-tests, installed by scripts/setup)")
}

/// The sleeps so far of `pid`'s threads but its main one (their voluntary context
/// switches): each sleep ends in one wakeup.
fn sleeps_of_other_threads(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's threads");
    tasks
        .filter_map(|task| task.ok())
        .filter(|task| task.file_name().to_string_lossy() != pid.to_string())
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .filter_map(|status| {
            let line = status
                .lines()
                .find(|l| l.starts_with("voluntary_ctxt_switches:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn task_mode_follows_an_existing_process() {
    assert_root();
    let mut cyclictest = start_cyclictest(8);
    std::thread::sleep(Duration::from_millis(500));
    let pid = cyclictest.id().to_string();
    // the ground truth: how often its thread really slept around the run (a stalled VM
    // makes it miss periods, and then it is woken less often than every 1 ms)
    let (sleeps_before, started) = (sleeps_of_other_threads(cyclictest.id()), Instant::now());
    let doc = irqlens_json(&["wakeup", "--pid", &pid, "-c", "1", "-d", "3", "-q"]);
    let around = started.elapsed().as_secs_f64() * 1e3;
    let slept = sleeps_of_other_threads(cyclictest.id()) - sleeps_before;
    let _ = cyclictest.kill();
    let _ = cyclictest.wait();

    // its measurement thread is the busiest (the main thread wakes every 10 ms)
    let busiest = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|t| count(&t["samples"]))
        .expect("woken threads");
    assert_eq!(busiest["comm"], "cyclictest");
    assert_ne!(busiest["tid"].to_string(), pid, "not the main thread");
    // its wakeups over the run (which ends a little after its 3 s), at the rate it slept
    // around the run
    let woken = count(&busiest["samples"]) as f64;
    let elapsed = count(&doc["run"]["elapsed_ns"]) as f64 / 1e6;
    let expected = slept as f64 * elapsed / around;
    assert!(
        (woken - expected).abs() <= expected * 0.02 + 5.0,
        "cyclictest's thread slept {slept} times in {around:.0} ms around the run, so about \
         {expected:.0} in its {elapsed:.0} ms: {woken} samples"
    );
    let samples = count(&cpu_entry(&doc, 1)["samples"]);
    let by_timer = origin(&doc, "local_timer").map_or(0, |o| count(&o["samples"]));
    assert!(by_timer as f64 >= samples as f64 * 0.95, "{doc:#}");
    let irq = median_us(&doc, 1, "irq");
    assert!(
        (0.1..1_000.0).contains(&irq),
        "the hrtimer it arms gives its IRQ latency: {irq}"
    );
    assert!(
        cpu_entry(&doc, 1)["components"]["return"].is_null(),
        "no return-to-user part without the task's own report"
    );
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_signal_prints_the_results_and_leaves_nothing_loaded() {
    assert_root();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let output = interrupted_run(&["wakeup", "-d", "60", "-q"], signal);
        assert!(output.contains("COMPONENT"), "the summary table: {output}");
        assert!(output.contains("Interrupted"), "{output}");
    }
}

/// Any activation takes more than 1 µs: `-s 1` (`-T 1`, rtla's name) and `-i 1` hit at once, the run exits
/// with rtla's status 2 and still prints its results and the sample that stopped it.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_stop_threshold_hit_exits_with_status_2_and_prints_the_report() {
    assert_root();
    for stop in [["-s", "1"], ["-T", "1"], ["--thread", "1"], ["-i", "1"]] {
        let stdout = run_to_threshold(&["wakeup", "-c", "0", "-d", "20", "-q", stop[0], stop[1]]);
        assert!(stdout.contains("Stopped by"), "no stop report: {stdout}");
    }
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// The CPUs' PM QoS latency target as the kernel aggregates it (the smallest request), µs:
/// /dev/cpu_dma_latency reads as a binary s32.
fn dma_latency() -> i32 {
    let bytes = std::fs::read("/dev/cpu_dma_latency").expect("reading /dev/cpu_dma_latency");
    i32::from_ne_bytes(bytes[..4].try_into().expect("an s32"))
}

/// Starts irqlens with `args`, and waits (up to 10 s) until /dev/cpu_dma_latency reads
/// `expected`; returns the child and whether it did.
fn start_until_dma_latency(args: &[&str], expected: i32) -> (Child, bool) {
    let child = start(args);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if dma_latency() == expected {
            return (child, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, false)
}

/// Timer mode holds /dev/cpu_dma_latency at 0 by default, at what --dma-latency says
/// otherwise, not at all with `off`, locks its memory, records both in its run
/// information, and the target is back to what it was once irqlens ends: by its duration
/// or by SIGINT.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_dma_latency_is_held_while_the_run_goes_and_given_back_after() {
    assert_root();
    let before = dma_latency();
    assert!(
        before > 7,
        "something else holds the latency target at {before} us: this test cannot tell irqlens's request from it"
    );
    for (dma_latency_args, held) in [(&[][..], 0), (&["--dma-latency", "7us"][..], 7)] {
        let mut args = vec!["wakeup", "-c", "0", "-d", "3", "--no-trace", "--json"];
        args.extend_from_slice(dma_latency_args);
        let (child, seen) = start_until_dma_latency(&args, held);
        let locked = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("VmLck:").map(|kb| kb.trim().to_owned()));
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "irqlens {args:?}");
        assert!(seen, "irqlens {args:?}: the target never read {held} us");
        assert_ne!(
            locked.as_deref(),
            Some("0 kB"),
            "irqlens {args:?}: no memory locked"
        );
        assert_eq!(dma_latency(), before, "irqlens {args:?}: not given back");
        let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(doc["run"]["dma_latency_us"], held, "{}", doc["run"]);
        assert_eq!(doc["run"]["memory_locked"], true, "{}", doc["run"]);
    }

    // off: untouched all along
    let args = [
        "wakeup",
        "-c",
        "0",
        "-d",
        "2",
        "--no-trace",
        "--json",
        "--dma-latency",
        "off",
    ];
    let (child, changed) = start_until_dma_latency(&args, 0);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    assert!(!changed, "--dma-latency off changed the target");
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(doc["run"]["dma_latency_us"].is_null(), "{}", doc["run"]);

    // Ctrl-C
    let args = ["wakeup", "-c", "0", "-d", "60", "-q"];
    let (child, seen) = start_until_dma_latency(&args, 0);
    let output = signal_and_wait(child, libc::SIGINT);
    assert!(seen, "the target never read 0 us");
    assert!(String::from_utf8_lossy(&output.stdout).contains("Interrupted"));
    assert_eq!(dma_latency(), before, "not given back after SIGINT");
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// The first expiry of each timer thread in a recording of a `--no-trace` run on CPUs 0
/// and 1 with `extra` options, by CPU.
fn first_expiries(name: &str, extra: &[&str]) -> [u64; 2] {
    use std::io::BufRead;
    let path = temp_path(name);
    let path_text = path.to_str().unwrap();
    let mut args = vec![
        "wakeup",
        "-c",
        "0-1",
        "-d",
        "1",
        "--no-trace",
        "-q",
        "--record",
        path_text,
    ];
    args.extend_from_slice(extra);
    irqlens_ok(&args);
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&path).unwrap(),
    ));
    let mut first = [None; 2];
    for line in reader.lines() {
        let line: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if line["type"] == "wakeup_report" {
            let cpu = line["cpu"].as_u64().unwrap() as usize;
            first[cpu].get_or_insert(line["expected_ns"].as_u64().unwrap());
        }
    }
    let _ = std::fs::remove_file(&path);
    first.map(|expiry| expiry.expect("each thread reported"))
}

/// -A: both threads' first expiries on one whole millisecond (-A alone), or 100 µs apart
/// (-A 100);
/// without it each thread's phase is its own, not whole milliseconds of CLOCK_MONOTONIC
/// (where every 4th expiry would meet a 250 Hz tick).
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn aligned_threads_share_their_first_expiry_and_others_do_not_sit_on_the_millisecond() {
    assert_root();
    let [cpu0, cpu1] = first_expiries("wakeup-aligned.jsonl.gz", &["-A"]);
    assert_eq!(cpu0, cpu1, "-A: the same first expiry");
    assert_eq!(cpu0 % 1_000_000, 0, "-A: on whole milliseconds");
    let [cpu0, cpu1] = first_expiries("wakeup-aligned-100.jsonl.gz", &["-A", "100"]);
    assert_eq!(cpu1 - cpu0, 100_000, "-A 100: 100 µs apart");
    let [cpu0, cpu1] = first_expiries("wakeup-own-phase.jsonl.gz", &[]);
    assert_ne!(cpu0, cpu1, "each thread at its own phase");
    assert!(
        cpu0 % 1_000_000 != 0 || cpu1 % 1_000_000 != 0,
        "phases on whole milliseconds: {cpu0} {cpu1}"
    );
}
