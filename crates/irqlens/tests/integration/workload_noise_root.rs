//! Workloads (root): noise names the cgroup, pod and container of the threads that
//! interfere, and groups them per pod; wakeup's task mode measures the watched tasks of
//! the cgroups given only. Every cgroup made is removed, on failure too.

use std::process::Command;
use std::time::Duration;

use irqlens_test_support::cgroup_bed::CgroupBed;

use crate::cgroup_root::{Sleeper as Process, fresh_uid_and_container_id};
use crate::common::*;
use crate::noise_root::exact;

/// The CPU the tests measure: the last one, away from CPU 0's housekeeping.
fn measured_cpu() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32) - 1
}

/// Set in the environment of this test binary run as a spinner process.
const SPIN_CPU: &str = "IRQLENS_TEST_SPIN_CPU";
const SPINNER_NAME: &str = "il-podspin";

/// Not a test on its own: a spinner process when this test binary runs it with SPIN_CPU
/// set (a thread can only change cgroups with its whole process, so the spinner needs a
/// process of its own). It spins until killed.
#[test]
#[ignore = "a child of spinner_process, does nothing on its own"]
fn spinner_process_child() {
    let Some(cpu) = std::env::var(SPIN_CPU)
        .ok()
        .and_then(|cpu| cpu.parse().ok())
    else {
        return;
    };
    // a duty cycle, so the measurement thread gets samples between the busy times
    let _spinner = Spinner::start(
        SPINNER_NAME,
        cpu,
        Duration::from_millis(20),
        Duration::from_millis(2),
    );
    std::thread::sleep(Duration::from_secs(60));
}

/// A process of this test binary spinning on `cpu` (SCHED_FIFO 10, 2 ms every 20 ms).
fn spinner_process(cpu: u32) -> Process {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "workload_noise_root::spinner_process_child",
            "--ignored",
            "--test-threads=1",
            "-q",
        ])
        .env(SPIN_CPU, cpu.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    Process(child)
}

#[test]
#[ignore = "needs root: makes cgroups, loads BPF programs (scripts/test runs it)"]
fn thread_noise_names_its_pod_and_container_and_groups_per_pod() {
    assert_root();
    let cpu = measured_cpu().to_string();
    let (uid, container_id) = fresh_uid_and_container_id();
    let path = format!(
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/cri-containerd-{container_id}.scope",
        uid.replace('-', "_")
    );
    let bed = CgroupBed::make(&path).unwrap();
    let spinner = spinner_process(measured_cpu());
    bed.add(spinner.0.id()).unwrap();
    wait_until("the spinner thread", Duration::from_secs(5), || {
        std::fs::read_dir(format!("/proc/{}/task", spinner.0.id()))
            .map(|tasks| tasks.count() > 1)
            .unwrap_or(false)
    });

    let doc = irqlens_json(&["noise", "-c", &cpu, "-d", "3", "-q", "--by", "pod"]);
    let text = irqlens_ok(&["noise", "-c", &cpu, "-d", "1", "--by", "pod"]);
    drop(spinner);
    drop(bed);
    let text = String::from_utf8(text.stdout).unwrap();
    eprintln!("{text}");

    let in_pod: Vec<&serde_json::Value> = doc["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["cgroup"]["path"] == path.as_str())
        .collect();
    assert!(
        in_pod
            .iter()
            .any(|row| row["cause"].as_str().unwrap().starts_with(SPINNER_NAME)),
        "the spinner's rows name its cgroup: {doc:#}"
    );
    for row in &in_pod {
        assert_eq!(row["class"], "thread");
        let workload = &row["cgroup"]["workload"];
        assert_eq!(workload["kind"], "pod", "{row}");
        assert_eq!(workload["uid"], uid.as_str());
        assert_eq!(workload["qos"], "besteffort");
        assert_eq!(workload["container"]["id"], container_id.as_str());
        assert_eq!(workload["container"]["runtime"], "containerd");
    }
    let workloads = &doc["workloads"];
    assert_eq!(workloads["by"], "pod");
    let pod_key = format!("pod {uid}");
    let pod_rows: Vec<_> = workloads["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["workload"] == pod_key.as_str())
        .collect();
    assert_eq!(pod_rows.len(), 1, "one row for the pod: {workloads:#}");
    let threads_ns: u64 = in_pod.iter().map(|row| exact(&row["total_ns"])).sum();
    assert_eq!(exact(&pod_rows[0]["total_ns"]), threads_ns);
    assert_eq!(exact(&pod_rows[0]["threads"]), in_pod.len() as u64);
    // the text's table names the pod by its UID's first group
    assert!(text.contains("Thread noise per pod"), "{text}");
    assert!(text.contains(&format!("pod {}…", &uid[..8])), "{text}");
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// cyclictest, woken by its hrtimer every 1 ms, until killed.
fn cyclictest() -> Process {
    let child = Command::new("cyclictest")
        .args(["-t1", "-a1", "-p80", "-i1000", "-q", "-m", "-D", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cyclictest (rt-tests, installed by scripts/setup)");
    Process(child)
}

/// The wakeups of the watched process's threads that `wakeup --pid PID --cgroup PATH`
/// measured, and the cgroup paths the measured threads carry.
fn woken_in(pid: u32, cgroup: &str) -> (u64, Vec<String>) {
    let pid = pid.to_string();
    let doc = irqlens_json(&[
        "wakeup", "--pid", &pid, "--cgroup", cgroup, "-c", "1", "-d", "2", "-q",
    ]);
    let threads = doc["threads"].as_array().unwrap();
    let woken = threads.iter().map(|thread| exact(&thread["samples"])).sum();
    let paths = threads
        .iter()
        .map(|thread| {
            thread["cgroup"]["path"]
                .as_str()
                .unwrap_or("(none)")
                .to_owned()
        })
        .collect();
    (woken, paths)
}

#[test]
#[ignore = "needs root: makes cgroups, loads BPF programs (scripts/test runs it)"]
fn wakeup_measures_the_watched_tasks_of_its_cgroups_only() {
    assert_root();
    let (uid, _) = fresh_uid_and_container_id();
    let parent = format!("/irqlens-test-{uid}");
    // its sibling /irqlens-test-<uid>x shares the prefix but is not below it
    let inside_path = format!("{parent}/app");
    let (inside_bed, outside_bed) = (
        CgroupBed::make(&inside_path).unwrap(),
        CgroupBed::make(&format!("{parent}x")).unwrap(),
    );
    let (inside, outside) = (cyclictest(), cyclictest());
    inside_bed.add(inside.0.id()).unwrap();
    outside_bed.add(outside.0.id()).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    // the parent holds its descendant: the process in it is measured
    let measured = woken_in(inside.0.id(), &parent);
    // the other process is in a cgroup whose name only starts the same
    let left_out = woken_in(outside.0.id(), &parent);
    drop((inside, outside));
    drop((inside_bed, outside_bed));

    let ((measured, paths), (left_out, _)) = (measured, left_out);
    assert!(
        measured >= 500,
        "1000 wakeups a second, {measured} measured in 2 s"
    );
    assert!(
        !paths.is_empty() && paths.iter().all(|path| *path == inside_path),
        "the measured threads carry their cgroup {inside_path}: {paths:?}"
    );
    assert_eq!(left_out, 0, "a process outside the cgroup is not measured");
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}
