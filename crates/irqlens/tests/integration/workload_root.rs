//! `irqlens account --by` and `--cgroup` (root, BPF, cgroups): a UDP receiver in a
//! Kubernetes-shaped pod's container cgroup gets a flow whose receive processing RPS
//! steers to CPU 1, where a SCHED_FIFO hog in `/irqlens-test-noisy` owns the CPU. The
//! kernel bills the receive path to the hog's cgroup (the interrupted view); the pod is
//! the one it was done for.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use crate::account_root::receive_path;
use crate::cgroup_root::{Sleeper, fresh_uid_and_container_id};
use crate::common::*;
use irqlens_test_support::cgroup_bed::CgroupBed;
use irqlens_test_support::udp_flow::UdpFlow;
use serde_json::Value;

const NOISY: &str = "/irqlens-test-noisy";
/// Datagrams a second: enough receive work to tell apart from CPU 1's ticks.
const RATE: u32 = 5_000;

/// The bed: the pod's container cgroup with the receiver in it, the noisy cgroup with
/// the hog in it, and the flow running. Dropped in reverse: the flow and the hog end
/// before their cgroups go (CgroupBed moves anything left to the root first).
struct Bed {
    uid: String,
    container_id: String,
    pod_slice: String,
    container: String,
    flow: UdpFlow,
    _hog: Sleeper,
    _noisy: CgroupBed,
    _pod: CgroupBed,
}

impl Bed {
    fn start() -> Bed {
        let (uid, container_id) = fresh_uid_and_container_id();
        let pod_slice = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice",
            uid.replace('-', "_")
        );
        let container = format!("{pod_slice}/cri-containerd-{container_id}.scope");
        let pod = CgroupBed::make(&container).unwrap();
        let noisy = CgroupBed::make(NOISY).unwrap();
        // the receiver on CPU 0 (untraced), its receive processing on CPU 1
        let mut flow = UdpFlow::start(1, 0);
        pod.add(flow.receiver_pid()).unwrap();
        let hog = Command::new("chrt")
            .args([
                "-f",
                "10",
                "taskset",
                "-c",
                "1",
                "sh",
                "-c",
                "while :; do :; done",
            ])
            .spawn()
            .expect("starting the hog");
        let hog = Sleeper(hog);
        noisy.add(hog.0.id()).unwrap();
        flow.send(RATE);
        std::thread::sleep(Duration::from_millis(300));
        Bed {
            uid,
            container_id,
            pod_slice,
            container,
            flow,
            _hog: hog,
            _noisy: noisy,
            _pod: pod,
        }
    }
}

fn ns(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or(0)
}

fn array<'a>(doc: &'a Value, table: &str) -> &'a Vec<Value> {
    doc["total"][table]
        .as_array()
        .unwrap_or_else(|| panic!("no {table}: {doc:#}"))
}

fn workload<'a>(doc: &'a Value, key: &str) -> &'a Value {
    array(doc, "workloads")
        .iter()
        .find(|w| w["key"] == key)
        .unwrap_or_else(|| panic!("no workload {key}: {:#}", doc["total"]["workloads"]))
}

/// Every workload's figures are its rows' sums; `key_of` gives a row's workload key.
fn assert_workloads_add_up_the_rows(doc: &Value, key_of: impl Fn(&str) -> String) {
    let mut sums: BTreeMap<String, [u64; 5]> = BTreeMap::new();
    for row in array(doc, "rows") {
        let key = row["cgroup"]
            .as_str()
            .map_or_else(|| "[unknown]".to_owned(), &key_of);
        let sum = sums.entry(key).or_default();
        for (at, field) in [
            "charged_ns",
            "served_ns",
            "kernel_ns",
            "units",
            "irqlens_ns",
        ]
        .iter()
        .enumerate()
        {
            sum[at] += ns(row, field);
        }
    }
    let workloads = array(doc, "workloads");
    assert_eq!(workloads.len(), sums.len(), "{workloads:#?}");
    for workload in workloads {
        let key = workload["key"].as_str().unwrap();
        let figures = [
            "charged_ns",
            "served_ns",
            "kernel_ns",
            "units",
            "irqlens_ns",
        ]
        .map(|field| ns(workload, field));
        assert_eq!(Some(&figures), sums.get(key), "{key}");
    }
}

#[test]
#[ignore = "needs root: loads BPF programs, makes cgroups (scripts/test runs it)"]
fn the_pod_is_served_what_the_interrupted_view_charges_the_noisy_cgroup() {
    assert_root();
    let bed = Bed::start();
    let by_cgroup = irqlens_json(&["account", "-c", "1", "-d", "3", "--by", "cgroup"]);
    // removed whatever the assertions say
    let recording = TempFile(temp_path("workload.jsonl.gz"));
    let recording_text = recording.0.to_str().unwrap();
    let by_pod = irqlens_json(&[
        "account",
        "-c",
        "1",
        "-d",
        "3",
        "--by",
        "pod",
        "-q",
        "--record",
        recording_text,
    ]);
    let container_id = bed.container_id.clone();
    let (uid, pod_slice, container) = (
        &bed.uid.clone(),
        &bed.pod_slice.clone(),
        &bed.container.clone(),
    );
    drop(bed);

    for (doc, pod_key) in [
        (&by_cgroup, container.clone()),
        (&by_pod, format!("pod {uid}")),
    ] {
        let pod = workload(doc, &pod_key);
        let noisy = workload(doc, NOISY);
        // ground truth of the same run: all the receive path CPU 1 was charged, whoever
        // was current (the hog, what ran while RT throttling held it off, idle)
        let charged_on_cpu1: u64 = array(doc, "rows")
            .iter()
            .map(|row| receive_path(row, "charged_by"))
            .sum::<u64>()
            + receive_path(&doc["total"], "idle_by");
        let served = receive_path(pod, "served_by");
        println!(
            "{pod_key}: served {} us of receive path; {NOISY} charged {} us of the {} us CPU 1 was",
            served / 1000,
            receive_path(noisy, "charged_by") / 1000,
            charged_on_cpu1 / 1000
        );
        // the pod's receiver runs on CPU 0, untraced: nothing is charged to the pod
        assert_eq!(ns(pod, "charged_ns"), 0, "{pod:#}");
        assert!(
            ns(pod, "units") as f64 > 0.5 * 3.0 * f64::from(RATE),
            "about 3 s of datagrams: {pod:#}"
        );
        // what the pod was served is what CPU 1 was charged for its receive path (5 %,
        // account_root's tolerance), and the noisy cgroup bore most of that charge
        let ratio = served as f64 / charged_on_cpu1 as f64;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "served / charged {ratio:.3}"
        );
        assert!(
            receive_path(noisy, "charged_by") * 2 > charged_on_cpu1,
            "{noisy:#}"
        );
        assert_eq!(ns(noisy, "served_ns"), 0, "nothing was done for the hog");
        // the two views disagree by the receive path: the noisy cgroup's kernel error is
        // positive (over-billed), the pod's negative
        assert!(noisy["error"].as_f64().unwrap() > 0.0, "{noisy:#}");
        assert!(pod["error"].as_f64().unwrap() < 0.0, "{pod:#}");
    }

    // by cgroup: the container's path names the pod and its container
    assert_workloads_add_up_the_rows(&by_cgroup, str::to_owned);
    let in_container = workload(&by_cgroup, container);
    assert_eq!(in_container["path"], container.as_str());
    let named = &in_container["workload"];
    assert_eq!(
        (&named["kind"], &named["uid"], &named["qos"]),
        (&"pod".into(), &uid.as_str().into(), &"besteffort".into())
    );
    assert_eq!(named["container"]["id"], container_id.as_str());
    assert_eq!(named["container"]["runtime"], "containerd");
    // the receiver's row carries its cgroup
    assert!(
        array(&by_cgroup, "rows")
            .iter()
            .any(|row| row["cgroup"] == container.as_str() && ns(row, "served_ns") > 0)
    );

    // by pod: the pod's slice, its UID with dashes
    let pod_of = |path: &str| {
        if path.starts_with(pod_slice.as_str()) {
            format!("pod {uid}")
        } else {
            path.to_owned()
        }
    };
    assert_workloads_add_up_the_rows(&by_pod, pod_of);
    let pod = workload(&by_pod, &format!("pod {uid}"));
    assert_eq!(
        pod["path"],
        container.as_str(),
        "its one container's cgroup"
    );
    assert_eq!(pod["workload"]["uid"], uid.as_str());
    assert_eq!(pod["workload"]["container"], Value::Null);

    // a replay names the cgroups from the recording's end line, as the live run did
    let report = irqlens_json(&["report", recording_text]);
    assert_eq!(
        report[0]["total"]["workloads"],
        by_pod["total"]["workloads"]
    );
    let text = irqlens_ok(&["report", recording_text]);
    println!("{}", String::from_utf8_lossy(&text.stdout));
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: loads BPF programs, makes cgroups (scripts/test runs it)"]
fn a_cgroup_filter_leaves_only_the_rows_in_the_pod() {
    assert_root();
    assert_fails_with(
        &[
            "account",
            "-c",
            "1",
            "-d",
            "1",
            "--cgroup",
            "/irqlens-no-such",
        ],
        "no cgroup /irqlens-no-such",
    );
    let bed = Bed::start();
    let doc = irqlens_json(&[
        "account",
        "-c",
        "1",
        "-d",
        "2",
        "--by",
        "container",
        "--cgroup",
        &bed.pod_slice,
    ]);
    let (pod_slice, container_id, receiver) = (
        bed.pod_slice.clone(),
        bed.container_id.clone(),
        bed.flow.receiver_pid(),
    );
    drop(bed);
    let rows = array(&doc, "rows");
    assert!(
        rows.iter().any(|row| row["id"] == receiver),
        "the receiver is in: {rows:#?}"
    );
    for row in rows {
        let path = row["cgroup"].as_str().unwrap_or_default();
        assert!(path.starts_with(&format!("{pod_slice}/")), "{row:#}");
    }
    let workloads = array(&doc, "workloads");
    assert_eq!(workloads.len(), 1, "{workloads:#?}");
    assert_eq!(
        workloads[0]["workload"]["container"]["id"],
        container_id.as_str()
    );
    assert_eq!(doc["cgroups"][0], pod_slice.as_str());
    // the totals still count the whole CPU: the receive path charged to the hog, whose
    // row is left out, is in them
    let totals = &doc["total"]["totals"];
    let interrupt_ns = ns(totals, "hardirq_ns") + ns(totals, "softirq_ns");
    assert!(
        rows.iter().all(|row| ns(row, "charged_ns") == 0),
        "{rows:#?}"
    );
    assert!(interrupt_ns >= ns(&workloads[0], "served_ns") && interrupt_ns > 0);
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: loads BPF programs, makes cgroups (scripts/test runs it)"]
fn a_receive_bottom_half_names_the_pod_it_woke() {
    assert_root();
    let bed = Bed::start();
    // every sample kept (a 2 s run has fewer), so every wakeup a NET_RX run made is listed
    let doc = irqlens_json(&["bh", "-c", "1", "-d", "2", "--worst", "10000"]);
    let (container, uid, receiver) = (
        bed.container.clone(),
        bed.uid.clone(),
        bed.flow.receiver_pid(),
    );
    drop(bed);
    let softirq = doc["mechanisms"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["mechanism"] == "softirq"))
        .unwrap_or_else(|| panic!("no softirq samples: {doc:#}"));
    let net_rx: Vec<&Value> = softirq["worst"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "NET_RX")
        .collect();
    let kept = softirq["worst"].as_array().unwrap().len() as u64;
    assert_eq!(
        kept,
        softirq["count"].as_u64().unwrap(),
        "every sample kept"
    );
    let woke_receiver: Vec<&Value> = net_rx
        .iter()
        .flat_map(|s| s["woke"].as_array().unwrap())
        .filter(|t| t["tid"] == receiver)
        .collect();
    assert!(
        !woke_receiver.is_empty(),
        "no NET_RX run on CPU 1 woke the receiver {receiver}, of {} runs",
        net_rx.len()
    );
    for woken in woke_receiver {
        let cgroup = &woken["cgroup"];
        assert_eq!(cgroup["path"], container.as_str(), "{woken:#}");
        assert_eq!(cgroup["workload"]["uid"], uid.as_str(), "{woken:#}");
    }
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}
