//! irqlens noise against ground truth: a pinned SCHED_FIFO thread that spins for a known
//! time at a known rate must come out as thread noise under its own name, with the count
//! and total injected. Needs root (CI runs as root).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

/// The CPU the tests measure: the last one, away from CPU 0's housekeeping.
fn measured_cpu() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32) - 1
}

fn ns(value: &serde_json::Value) -> f64 {
    exact(value) as f64
}

/// The total time of the causes rows whose class is kept.
fn total_ns(rows: &serde_json::Value, keep: impl Fn(&str) -> bool) -> u64 {
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|row| keep(row["class"].as_str().unwrap()))
        .map(|row| exact(&row["total_ns"]))
        .sum()
}

pub(crate) fn exact(value: &serde_json::Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is not a count"))
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn injected_thread_noise_is_attributed_to_its_thread() {
    assert_root();
    let cpu = measured_cpu();
    let (period, busy) = (Duration::from_millis(20), Duration::from_millis(2));
    let spinner = Spinner::start("il-spinner", cpu, period, busy);
    let (doc, (activations, spun_ns)) =
        spinner.during(|| irqlens_json(&["noise", "-c", &cpu.to_string(), "-d", "5", "-q"]));
    let longest_ns = spinner.longest_busy_ns() as f64;
    let tid = spinner.stop();

    let runtime_ns = ns(&doc["per_cpu"][0]["runtime_ns"]);
    let expected_count = runtime_ns / period.as_nanos() as f64;
    let row = cause(&doc, &format!("il-spinner:{tid}"))
        .unwrap_or_else(|| panic!("no il-spinner cause in {doc:#}"));
    assert_eq!(row["class"], "thread");
    let count = ns(&row["count"]);
    assert!(
        (count - expected_count).abs() <= expected_count * 0.1,
        "count {count}, expected {expected_count:.0} (runtime {runtime_ns} ns / {period:?})"
    );
    // interference-free: the IRQs inside the spinner's busy time are not its own. The
    // mean busy period by the spinner's clock (longer than `busy` when the hypervisor
    // stretched some) bounds the mean above; the IRQs taken out bound it below.
    let total = ns(&row["total_ns"]);
    let spun_mean_ns = spun_ns as f64 / activations as f64;
    let expected_total = count * busy.as_nanos() as f64;
    assert!(
        total <= count * spun_mean_ns * 1.02 && total >= expected_total * 0.85,
        "total {total} ns, expected about {expected_total} ns (spun {spun_mean_ns:.0} ns per \
         busy period by the spinner's clock)"
    );
    // a busy period that the hypervisor stretched is longer by the spinner's clock too
    let max = ns(&row["max_ns"]);
    assert!(
        max <= longest_ns.max(busy.as_nanos() as f64) + 0.1 * busy.as_nanos() as f64,
        "max {max} ns for a {busy:?} busy time (longest by the spinner's clock {longest_ns} ns)"
    );
    // it is the largest thread cause, and its time is part of the measured noise
    let first_thread = doc["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "thread")
        .unwrap();
    assert_eq!(first_thread["cause"], row["cause"]);
    assert!(ns(&doc["per_cpu"][0]["noise_ns"]) >= total);
    assert!(ns(&doc["per_cpu"][0]["thread"]) >= count);
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// Every ns of noise is in exactly one row: per CPU, its causes (the traced ones, entry and
/// exit around them, hardware, samples with records missing, dropped samples) add up to
/// its Noise, and so do the parts of its breakdown.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn rows_add_up_to_each_cpus_noise() {
    assert_root();
    let cpu = measured_cpu();
    let spinner = Spinner::start(
        "il-rows",
        cpu,
        Duration::from_millis(20),
        Duration::from_millis(2),
    );
    // every CPU, the collector's included
    let doc = irqlens_json(&["noise", "-d", "3", "-q"]);
    let tid = spinner.stop();
    let cpus = doc["per_cpu"].as_array().unwrap();
    assert_eq!(cpus.len() as u32, cpu + 1, "{doc:#}");
    let any = |_: &str| true;
    for summary in cpus {
        let noise = exact(&summary["noise_ns"]);
        assert!(noise > 0, "{summary:#}");
        let rows = &summary["causes"];
        assert_eq!(total_ns(rows, any), noise, "{summary:#}");
        let parts = summary["breakdown"].as_object().unwrap();
        assert_eq!(parts.values().map(exact).sum::<u64>(), noise, "{summary:#}");
        let traced = |class: &str| ["nmi", "irq", "softirq", "thread"].contains(&class);
        assert_eq!(exact(&parts["causes_ns"]), total_ns(rows, traced));
        let entry_exit = exact(&parts["entry_exit_ns"]);
        assert_eq!(entry_exit, total_ns(rows, |class| class == "entry_exit"));
        assert_eq!(
            exact(&parts["hw_ns"]),
            total_ns(rows, |class| class == "hw")
        );
        // the local timer alone leaves entry/exit time in samples every second
        assert!(entry_exit > 0, "{summary:#}");
        // the two clocks disagree by far less than the noise
        assert!(exact(&summary["clipped_ns"]) * 100 <= noise, "{summary:#}");
    }
    let all: u64 = cpus.iter().map(|s| exact(&s["noise_ns"])).sum();
    assert_eq!(total_ns(&doc["causes"], any), all);
    let spinner_row = cpus[cpu as usize]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["cause"] == format!("il-rows:{tid}"));
    assert!(spinner_row.is_some(), "{:#}", cpus[cpu as usize]);
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn samples_without_interference_are_hardware_noise() {
    assert_root();
    let cpu = measured_cpu().to_string();
    let doc = irqlens_json(&["noise", "-c", &cpu, "-d", "3", "-q"]);
    let summary = &doc["per_cpu"][0];
    let hw = ns(&summary["hw"]);
    // this VM's hypervisor steals time invisibly, hundreds of times a second
    assert!(hw > 0.0, "no hardware noise in {summary}");
    let row = cause(&doc, "hw noise").expect("a hw noise row");
    assert_eq!(ns(&row["count"]), hw);
    assert!(ns(&row["total_ns"]) <= ns(&summary["noise_ns"]));
    assert!(hw <= ns(&summary["samples"]));
    // the local timer ticks all the time: IRQ interferences are counted too
    assert!(ns(&summary["irq"]) > 0.0);
    // first, so that a lost record is named as such below
    assert_eq!(doc["run"]["lost_events"], 0);
    // a sample is unexplained only when it was interfered with but its records were not
    // kept: it is then said so, in its own row, never folded into another cause
    let not_recorded =
        cause(&doc, "samples with interferences not recorded").map_or(0.0, |row| ns(&row["count"]));
    assert_eq!(ns(&summary["unexplained"]), not_recorded, "{summary}");
    // that happens when other processes' threads take the CPU for whole milliseconds (a
    // build beside the test); on a CPU they left alone, a sample is unexplained only for an
    // interference whose end the kernel never reported, which the probe counts
    let shared = doc["causes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["class"] == "thread" && ns(&c["max_ns"]) > 1e6);
    if !shared {
        assert!(
            ns(&summary["unexplained"]) <= ns(&summary["unended"]),
            "{summary}"
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn stop_on_single_sample_shows_its_causes() {
    assert_root();
    let cpu = measured_cpu();
    let spinner = Spinner::start(
        "il-stopper",
        cpu,
        Duration::from_millis(300),
        Duration::from_millis(12),
    );
    let started = Instant::now();
    let output = irqlens(&[
        "noise",
        "-c",
        &cpu.to_string(),
        "-d",
        "20",
        "-q",
        "-s",
        "8000",
        "--json",
    ]);
    let tid = spinner.stop();
    // rtla's exit status for a stop threshold hit, with the whole document printed
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_valid_document(&output.stdout);
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the run did not stop early"
    );
    let stop = &doc["stop"];
    assert!(ns(&stop["sample"]["duration_ns"]) > 8e6, "{stop}");
    let inside: Vec<_> = stop["causes"].as_array().unwrap().iter().collect();
    assert!(
        inside
            .iter()
            .any(|r| r["class"] == "thread" && r["comm"] == "il-stopper" && r["id"] == tid),
        "the spinner is not among the causes of the stop sample: {stop:#}"
    );
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// A tiny `-s` hits at once on any machine: the run exits with status 2 and its text
/// output still has the summary and the stop report.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_stop_threshold_hit_exits_with_status_2_and_prints_the_report() {
    assert_root();
    let cpu = measured_cpu().to_string();
    for stop in [["-s", "1"], ["-S", "1"]] {
        let stdout = run_to_threshold(&["noise", "-c", &cpu, "-d", "20", "-q", stop[0], stop[1]]);
        assert!(stdout.contains("Operating System Noise"), "{stdout}");
        assert!(stdout.contains("Stopped: "), "no stop report: {stdout}");
        assert!(!stdout.contains("interrupted"), "{stdout}");
    }
    // no threshold: status 0
    let output = irqlens(&["noise", "-c", &cpu, "-d", "1", "-q"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn signals_end_the_run_with_a_summary_and_detach_everything() {
    assert_root();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let cpu = measured_cpu().to_string();
        let stdout = interrupted_run(&["noise", "-c", &cpu, "-q"], signal);
        assert!(
            stdout.contains("Operating System Noise"),
            "no summary after signal {signal}: {stdout}"
        );
        assert!(stdout.contains("Top causes"), "{stdout}");
        // the text output says the run was cut short, after the tables
        let last = stdout.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("irqlens: interrupted (Ctrl-C/SIGTERM) after "),
            "signal {signal}, last line: {last}"
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn hist_counts_every_sample() {
    assert_root();
    let cpu = measured_cpu().to_string();
    let output = irqlens_ok(&[
        "noise", "hist", "-c", &cpu, "-d", "2", "-E", "50", "-b", "2",
    ]);
    let text = String::from_utf8_lossy(&output.stdout);
    let value = |name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let buckets: u64 = text
        .lines()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(value("count:") > 0);
    assert_eq!(buckets + value("over:"), value("count:"), "{text}");
    assert!(value("min:") >= 5, "threshold is 5 us: {text}");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn without_privileges_it_says_what_is_missing() {
    assert_root();
    // user nobody may not reach the checkout: run a copy from the temp dir
    let copy = std::env::temp_dir().join(format!("irqlens-unprivileged-{}", std::process::id()));
    std::fs::copy(binary(), &copy).unwrap();
    // in the temp dir too, where user nobody may write
    let (recording, page) = (temp_path("nobody.jsonl.gz"), temp_path("nobody.html"));
    let output = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(&copy)
        .args(["noise", "-c", "0", "-d", "1"])
        .arg("--record")
        .arg(&recording)
        .arg("--html")
        .arg(&page)
        .output()
        .expect("setpriv (util-linux)");
    std::fs::remove_file(&copy).unwrap();
    // a run that could not start leaves no empty page and no header-only recording
    assert!(!recording.exists(), "{} left behind", recording.display());
    assert!(!page.exists(), "{} left behind", page.display());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("needs root, or the capabilities CAP_BPF"),
        "{stderr}"
    );
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn two_runs_on_the_same_cpu_know_of_each_other() {
    assert_root();
    let cpu = measured_cpu().to_string();
    // ends with this test's thread, whatever ends it
    let first = irqlens_test_support::storm::terminated_with_parent(&mut Command::new(binary()))
        .args(["noise", "-c", &cpu, "-d", "20", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lock = format!("/run/irqlens/cpu/{cpu}");
    let holder = format!("noise {}", first.id());
    wait_until("the first run's claim", Duration::from_secs(5), || {
        std::fs::read_to_string(&lock).is_ok_and(|text| text.trim() == holder)
    });
    let stderr =
        |output: std::process::Output| String::from_utf8_lossy(&output.stderr).into_owned();
    let second = irqlens(&["noise", "-c", &cpu, "-d", "200ms", "-q"]);
    assert!(second.status.success(), "{}", stderr(second));
    let warned = stderr(second);
    let named = format!(
        "irqlens noise (pid {}) is measuring CPUs {cpu} too",
        first.id()
    );
    assert!(warned.contains(&named), "{warned}");
    // tune judges remedies by its own rounds: refused before anything is changed (a
    // change it takes, to the value the knob has: bad input would be refused first)
    let budget = std::fs::read_to_string("/proc/sys/net/core/netdev_budget").unwrap();
    let change = format!("sysctl:net.core.netdev_budget={}", budget.trim());
    let refused = irqlens(&["tune", "-c", &cpu, "--change", &change]);
    assert_eq!(refused.status.code(), Some(1));
    let refused = stderr(refused);
    assert!(
        refused.contains(&named) && refused.contains("compares its own runs"),
        "{refused}"
    );
    // the first run started alone, and learns at its end that it was not (the refused
    // tune measured nothing, and is not named)
    let told = stderr(irqlens_test_support::runner::signal_and_wait(
        first,
        libc::SIGINT,
    ));
    let visited = told
        .lines()
        .find(|line| line.contains("during this run"))
        .unwrap_or_else(|| panic!("the first run was not told: {told}"));
    assert!(
        visited.contains("irqlens noise (pid ")
            && visited.contains(&format!("measured CPUs {cpu} during this run"))
            && !visited.contains("tune"),
        "{visited}"
    );
    // the claim is released with the process
    let alone = stderr(irqlens_ok(&["noise", "-c", &cpu, "-d", "200ms", "-q"]));
    assert!(!alone.contains("is measuring"), "{alone}");
}
