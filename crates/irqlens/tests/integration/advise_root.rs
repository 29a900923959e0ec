//! `irqlens advise -c LIST -d TIME`: measured first with noise and wakeup, then advised;
//! and `irqlens advise REC` of a bh run recorded live.

use std::time::Duration;

use crate::common::{
    Spinner, assert_root, assert_valid_document, irqlens_json, irqlens_ok, temp_path,
};
use irqlens_test_support::udp_flow::UdpFlow;

/// A pinned spinning thread on CPU 1 is the noise: advise moves it off by its tid.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_spinning_thread_is_moved_off_the_measured_cpu() {
    assert_root();
    let spinner = Spinner::start(
        "il-advise",
        1,
        Duration::from_millis(20),
        Duration::from_millis(2),
    );
    let (doc, (_, spun_ns)) =
        spinner.during(|| irqlens_json(&["advise", "-c", "1", "-d", "3", "-q"]));
    let tid = spinner.stop();
    let advice = doc["advice"].as_array().unwrap();
    let moved = advice
        .iter()
        .find(|a| a["change"]["knob"] == "thread_affinity" && a["change"]["tid"] == tid)
        .unwrap_or_else(|| panic!("no thread affinity advice for tid {tid}: {doc:#}"));
    assert_eq!(moved["id"], format!("thread-{tid}-affinity"));
    assert_eq!(moved["cpu"], 1);
    assert_eq!(moved["change"]["comm"], "il-advise");
    // pinned to CPU 1 by the test, proposed everywhere else
    assert_eq!(moved["change"]["from"], "1");
    let proposed: irqlens_model::units::CpuList =
        moved["change"]["to"].as_str().unwrap().parse().unwrap();
    assert!(!proposed.contains(1) && !proposed.is_empty(), "{moved:#}");
    assert!(
        moved["remedy"].as_str().unwrap().contains("pinned"),
        "{moved:#}"
    );
    // 2 ms of every 20 ms for the 3 s measured (the run's start and end trim a little),
    // never more than the spinner spun by its own clock while advise ran
    let spun_ms = spun_ns as f64 / 1e6;
    let time_ms = moved["time_ns"].as_u64().unwrap() as f64 / 1e6;
    println!(
        "spinner on CPU 1: {time_ms:.1} ms, {:.1}% of the noise",
        moved["share_percent"].as_f64().unwrap()
    );
    assert!(
        time_ms >= 180.0 && time_ms <= spun_ms * 1.02,
        "{time_ms} ms (spun {spun_ms:.1} ms): {moved:#}"
    );
}

/// NET_RX steered onto CPU 1 by RPS in a private netns: advise names that mask and
/// proposes it without CPU 1.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn net_rx_steered_by_rps_points_at_the_mask() {
    assert_root();
    let mut flow = UdpFlow::start(1, 0);
    flow.send(20_000);
    std::thread::sleep(Duration::from_millis(300));
    let namespace = flow.namespace().to_owned();
    let doc = irqlens_json(&["advise", "-c", "1", "-d", "3", "-q", "--netns", &namespace]);
    drop(flow);
    let advice = doc["advice"].as_array().unwrap();
    let net_rx = advice
        .iter()
        .find(|a| a["cpu"] == 1 && a["cause"] == "NET_RX")
        .unwrap_or_else(|| panic!("no NET_RX advice on CPU 1: {doc:#}"));
    println!(
        "NET_RX on CPU 1: {} us, {:.1}% of the noise",
        net_rx["time_ns"].as_u64().unwrap() / 1000,
        net_rx["share_percent"].as_f64().unwrap()
    );
    assert!(net_rx["time_ns"].as_u64().unwrap() > 0);
    let peer = format!("ila{}b", std::process::id());
    let rps = advice
        .iter()
        .find(|a| a["id"] == format!("rps-{namespace}-{peer}-rx0"))
        .unwrap_or_else(|| panic!("no RPS advice for {peer}: {doc:#}"));
    assert_eq!(rps["cpu"], 1);
    assert_eq!(rps["change"]["knob"], "rps_cpus");
    assert_eq!(rps["change"]["netns"], namespace.as_str());
    assert_eq!(
        rps["change"]["from"]
            .as_str()
            .map(|m| m.trim_start_matches('0')),
        Some("2")
    );
    assert_eq!(rps["change"]["to"], "0");
    // the mask is also a conflict of the measured CPU
    let conflicts = doc["conflicts"].as_array().unwrap();
    assert!(
        conflicts.iter().any(|c| c["what"]
            .as_str()
            .unwrap()
            .contains(&format!("RPS on {peer} rx-0"))),
        "{conflicts:#?}"
    );
}

/// `advise -c 1 -d 2` measures noise, then wakeup, and says so: both runs' causes are
/// advised from.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn live_advice_measures_noise_then_wakeup() {
    assert_root();
    let spinner = Spinner::start(
        "il-advise2",
        1,
        Duration::from_millis(20),
        Duration::from_millis(2),
    );
    let output = irqlens_ok(&["advise", "-c", "1", "-d", "2", "--json"]);
    spinner.stop();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let noise = stderr
        .find("measuring noise on CPUs 1 for 2s")
        .unwrap_or_else(|| panic!("{stderr}"));
    let wakeup = stderr
        .find("measuring wakeup (timer mode) on CPUs 1 for 2s")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(noise < wakeup, "{stderr}");
    assert_valid_document(&output.stdout);
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let advice = doc["advice"].as_array().unwrap();
    for capability in ["noise", "wakeup"] {
        let of = advice
            .iter()
            .filter(|a| a["capability"] == capability)
            .count();
        println!("{capability}: {of} advice");
        assert!(of > 0, "no {capability} advice: {doc:#}");
    }
    assert!(advice.iter().all(|a| a["cpu"] == 1), "{doc:#}");
}

/// A bh run recorded while RPS steers a UDP flow's receive work onto CPU 1: advising from
/// the recording names NET_RX on CPU 1 and the RPS mask that sends it there.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_live_bh_recording_of_rps_net_rx_points_at_the_mask() {
    assert_root();
    let mut flow = UdpFlow::start(1, 0);
    flow.send(20_000);
    std::thread::sleep(Duration::from_millis(300));
    let recording = temp_path("advise-bh.jsonl.gz");
    let path = recording.to_str().unwrap();
    irqlens_ok(&["bh", "-c", "1", "-d", "2", "-q", "--record", path]);
    flow.stop_sending();
    let namespace = flow.namespace().to_owned();
    let doc = irqlens_json(&["advise", path, "--netns", &namespace]);
    drop(flow);
    std::fs::remove_file(&recording).unwrap();
    let advice = doc["advice"].as_array().unwrap();
    assert!(advice.iter().all(|a| a["capability"] == "bh"), "{doc:#}");
    let peer = format!("ila{}b", std::process::id());
    let rps = advice
        .iter()
        .find(|a| a["id"] == format!("rps-{namespace}-{peer}-rx0"))
        .unwrap_or_else(|| panic!("no RPS advice for {peer}: {doc:#}"));
    println!(
        "{}: {} us, {:.1}% on CPU 1",
        rps["cause"],
        rps["time_ns"].as_u64().unwrap() / 1000,
        rps["share_percent"].as_f64().unwrap()
    );
    assert_eq!(rps["cpu"], 1);
    assert_eq!(rps["cause"], "NET_RX softirq");
    assert!(rps["time_ns"].as_u64().unwrap() > 0, "{rps:#}");
    assert_eq!(rps["change"]["knob"], "rps_cpus");
    assert_eq!(rps["change"]["to"], "0");
}

/// A threaded NAPI kthread at SCHED_FIFO 50 pinned to CPU 1, polling a UDP flow: advise
/// moves it off and drops it to SCHED_OTHER (a bottom half in the way of the measured work).
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_real_time_napi_thread_on_the_cpu_is_moved_and_dropped_to_sched_other() {
    assert_root();
    let mut flow = UdpFlow::start(0, 0);
    let tid = flow.threaded_napi();
    // the thread goes with the namespace: nothing to put back
    let tid_text = tid.to_string();
    for command in [
        ["taskset", "-pc", "1", &tid_text].as_slice(),
        ["chrt", "-f", "-p", "50", &tid_text].as_slice(),
    ] {
        let status = std::process::Command::new(command[0])
            .args(&command[1..])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{command:?}");
    }
    flow.send(20_000);
    std::thread::sleep(Duration::from_millis(300));
    let namespace = flow.namespace().to_owned();
    let doc = irqlens_json(&["advise", "-c", "1", "-d", "2", "-q", "--netns", &namespace]);
    drop(flow);
    let advice = doc["advice"].as_array().unwrap();
    let find = |id: String| {
        advice
            .iter()
            .find(|a| a["id"] == id.as_str())
            .unwrap_or_else(|| panic!("no {id}: {doc:#}"))
    };
    let priority = find(format!("thread-{tid}-priority"));
    println!(
        "NAPI thread on CPU 1: {} us, {:.1}% of the noise",
        priority["time_ns"].as_u64().unwrap() / 1000,
        priority["share_percent"].as_f64().unwrap()
    );
    assert_eq!(priority["cpu"], 1);
    assert_eq!(priority["change"]["knob"], "thread_priority");
    assert_eq!(priority["change"]["from"], "f:50");
    assert_eq!(priority["change"]["to"], "o:0");
    assert!(
        priority["change"]["comm"]
            .as_str()
            .unwrap()
            .starts_with("napi/"),
        "{priority:#}"
    );
    let moved = find(format!("thread-{tid}-affinity"));
    assert_eq!(moved["change"]["from"], "1");
}
