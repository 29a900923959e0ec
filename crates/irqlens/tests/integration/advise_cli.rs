//! `irqlens advise` from recordings: no root (it reads the machine, changes nothing).

use std::collections::BTreeMap;
use std::io::Write;

use crate::common::{assert_fails_with, irqlens_json, irqlens_ok, temp_path};

const NOISE: &str = "tests/fixtures/v1/noise-top.jsonl.gz";
const WAKEUP: &str = "tests/fixtures/v1/wakeup-task.jsonl.gz";
/// `bh hist --trigger tasklet` on CPUs 0-1: the stimulus's tasklets ran in TASKLET softirqs
/// on CPU 0, deferred to ksoftirqd while the stimulus thread ran.
const BH: &str = "tests/fixtures/v1/bh-hist.jsonl.gz";
const ACCOUNT: &str = "tests/fixtures/v1/account.jsonl.gz";

#[test]
fn a_noise_recording_gives_ranked_advice_per_cpu() {
    let output = irqlens_ok(&["advise", NOISE, "--causes", "3"]);
    let text = String::from_utf8(output.stdout).unwrap();
    let cpu0 = text.find("CPU 0: remedies").expect(&text);
    let cpu1 = text.find("CPU 1: remedies").expect(&text);
    assert!(cpu0 < cpu1, "{text}");
    // the recording's largest cause on CPU 1 is its measurement's neighbor irqlens-v1
    let first_blocked = text[cpu1..]
        .lines()
        .skip_while(|line| !line.contains("WHY NOT"))
        .nth(1)
        .unwrap();
    assert!(first_blocked.contains("irqlens-v1:8686"), "{text}");
    assert!(
        text.contains("hypervisor: nothing in the guest changes it"),
        "{text}"
    );
    assert!(text.contains("more (--causes N shows more)"), "{text}");
}

#[test]
fn the_json_follows_the_schema_and_ranks_by_time() {
    let doc = irqlens_json(&["advise", NOISE, WAKEUP]);
    let advice = doc["advice"].as_array().unwrap();
    assert!(advice.len() > 10, "{doc:#}");
    for pair in advice.windows(2) {
        let key =
            |a: &serde_json::Value| (a["cpu"].as_u64().unwrap(), a["time_ns"].as_u64().unwrap());
        let (first, second) = (key(&pair[0]), key(&pair[1]));
        assert!(
            first.0 < second.0 || first.0 == second.0 && first.1 >= second.1,
            "{pair:#?}"
        );
    }
    // both capabilities' causes are advised from
    for capability in ["noise", "wakeup"] {
        assert!(
            advice.iter().any(|a| a["capability"] == capability),
            "no {capability} advice"
        );
    }
    // the wakeup recording's idle exits point at /dev/cpu_dma_latency, on a machine whose
    // CPU has idle states to rule out; without a cpuidle driver (many VMs) at the hypervisor
    let dma = advice
        .iter()
        .find(|a| a["id"] == "dma-latency")
        .expect("dma-latency");
    let has_idle_states = doc["machine"]["idle_states"]
        .as_array()
        .is_some_and(|states| states.iter().any(|s| s["cpu"] == dma["cpu"]));
    match has_idle_states {
        true => assert_eq!(dma["change"]["knob"], "dma_latency", "{dma}"),
        false => assert_eq!(dma["blocker"]["blocker"], "hypervisor", "{dma}"),
    }
    assert!(
        doc["machine"]["online_cpus"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
}

#[test]
fn bad_input_is_one_line() {
    assert_fails_with(
        &["advise", "/nonexistent.jsonl.gz"],
        "/nonexistent.jsonl.gz",
    );
    assert_fails_with(&["advise"], "advise needs recordings");
    assert_fails_with(&["advise", NOISE, "-c", "0"], "not both");
    assert_fails_with(
        &["advise", NOISE, "--netns", "il-no-such-ns"],
        "--netns il-no-such-ns",
    );
    assert_fails_with(&["advise", "-c", "4095", "-d", "1"], "CPU 4095 is offline");
    assert_fails_with(&["advise", "-c", "0"], "advise -c LIST needs -d TIME");
    assert_fails_with(
        &[
            "advise",
            "-c",
            "0",
            "-d",
            "1",
            "--record",
            "/tmp/never-written",
        ],
        "advise -c runs two measurements",
    );
}

/// The advice of `capability` as (cpu, cause) -> the advice (one per cause: its first).
fn by_cause(
    doc: &serde_json::Value,
    capability: &str,
) -> BTreeMap<(u64, String), serde_json::Value> {
    let mut causes = BTreeMap::new();
    for advice in doc["advice"].as_array().unwrap() {
        assert_eq!(advice["capability"], capability, "{advice:#}");
        let cause = advice["cause"].as_str().unwrap().to_string();
        causes
            .entry((advice["cpu"].as_u64().unwrap(), cause))
            .or_insert_with(|| advice.clone());
    }
    causes
}

#[test]
fn a_bh_recording_advises_on_the_bottom_halves_and_what_delayed_them() {
    let causes = by_cause(&irqlens_json(&["advise", BH]), "bh");
    // the stimulus's TASKLET softirqs are the bottom halves CPU 0 ran (its tasklets ran
    // inside them: not counted twice)
    let tasklet = &causes[&(0, "TASKLET softirq".to_string())];
    assert_eq!(tasklet["id"], "softirq-TASKLET");
    assert!(tasklet["time_ns"].as_u64().unwrap() > 0, "{tasklet:#}");
    assert_eq!(tasklet["share_percent"], 100.0);
    // what delayed them: ksoftirqd, a bound kthread, and the stimulus thread
    let deferred = &causes[&(0, "bh delay: deferred to ksoftirqd".to_string())];
    assert_eq!(deferred["id"], "kthread-ksoftirqd-0");
    assert_eq!(deferred["blocker"]["blocker"], "pinned_thread");
    // the stimulus thread is irqlens's own: moving it is no remedy
    let stimulus = (0, "bh delay: thread il-tasklet was running".to_string());
    assert!(!causes.contains_key(&stimulus), "{:#}", causes[&stimulus]);
    // the delays' shares are of the latency: together at most all of it
    let delayed: f64 = causes
        .iter()
        .filter(|((cpu, cause), _)| *cpu == 0 && cause.starts_with("bh delay: "))
        .map(|(_, a)| a["share_percent"].as_f64().unwrap())
        .sum();
    assert!(delayed > 50.0 && delayed <= 100.0 + 1e-6, "{delayed}");
    let text = String::from_utf8(irqlens_ok(&["advise", BH]).stdout).unwrap();
    assert!(text.contains("bh delay: deferred to ksoftirqd"), "{text}");
}

#[test]
fn an_account_recording_advises_on_each_cpus_interrupt_time() {
    let doc = irqlens_json(&["advise", ACCOUNT]);
    let causes = by_cause(&doc, "account");
    for cpu in [0, 1] {
        let tick = &causes[&(cpu, "local_timer:236".to_string())];
        assert_eq!(tick["id"], "vector-local_timer");
        assert_eq!(causes[&(cpu, "RCU".to_string())]["id"], "boot-rcu_nocbs");
        let shares: f64 = causes
            .iter()
            .filter(|((c, _), _)| *c == cpu)
            .map(|(_, a)| a["share_percent"].as_f64().unwrap())
            .sum();
        assert!((shares - 100.0).abs() < 1e-6, "CPU {cpu}: {shares}");
    }
    // the causes add up to the interrupt time the recording accounts, irqlens's own left out
    let report = irqlens_json(&["report", ACCOUNT]);
    let report = report.as_array().map_or(&report, |docs| &docs[0]);
    let totals = &report["total"]["totals"];
    let accounted = ["hardirq_ns", "softirq_ns", "nmi_ns"]
        .iter()
        .map(|key| totals[key].as_u64().unwrap())
        .sum::<u64>()
        - totals["irqlens_ns"].as_u64().unwrap();
    let advised: u64 = causes
        .values()
        .map(|a| a["time_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(advised, accounted);
}

#[test]
fn what_is_not_a_recording_advise_reads_is_one_line() {
    let document = temp_path("advise.json");
    std::fs::write(&document, irqlens_ok(&["advise", NOISE, "--json"]).stdout).unwrap();
    assert_fails_with(
        &["advise", document.to_str().unwrap()],
        "a JSON document, not an irqlens recording",
    );
    std::fs::remove_file(&document).unwrap();
    // a recording of a capability this irqlens does not know
    let header = std::process::Command::new("zcat")
        .arg(NOISE)
        .output()
        .unwrap()
        .stdout;
    let text = String::from_utf8(header).unwrap();
    let future = text.replacen("\"capability\":\"noise\"", "\"capability\":\"storm\"", 1);
    assert_ne!(future, text);
    let recording = temp_path("storm.jsonl.gz");
    let mut out = flate2::write::GzEncoder::new(
        std::fs::File::create(&recording).unwrap(),
        flate2::Compression::fast(),
    );
    out.write_all(future.as_bytes()).unwrap();
    out.finish().unwrap();
    assert_fails_with(
        &["advise", recording.to_str().unwrap()],
        "a recording of `storm`, which this irqlens does not know",
    );
    std::fs::remove_file(&recording).unwrap();
}
