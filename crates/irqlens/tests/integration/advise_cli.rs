//! `irqlens advise` from recordings: no root (it reads the machine, changes nothing).

use crate::common::{assert_fails_with, irqlens_json, irqlens_ok};

const NOISE: &str = "tests/fixtures/v1/noise-top.jsonl.gz";
const WAKEUP: &str = "tests/fixtures/v1/wakeup-task.jsonl.gz";

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
    // the wakeup recording's idle exits point at /dev/cpu_dma_latency
    let dma = advice
        .iter()
        .find(|a| a["id"] == "dma-latency")
        .expect("dma-latency");
    assert_eq!(dma["change"]["knob"], "dma_latency");
    assert!(
        doc["machine"]["online_cpus"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
}

#[test]
fn bad_input_is_one_line() {
    assert_fails_with(
        &["advise", "tests/fixtures/v1/bh-top.jsonl.gz"],
        "a recording of bh: advise reads the causes of noise and wakeup recordings",
    );
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
}
