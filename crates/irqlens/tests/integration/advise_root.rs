//! `irqlens advise -c LIST -d TIME`: measured first with noise, then advised.

use std::time::Duration;

use crate::common::{Spinner, assert_root, irqlens_json};

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
    let doc = irqlens_json(&["advise", "-c", "1", "-d", "3", "-q"]);
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
    // the largest cause on CPU 1: 2 ms of every 20 ms
    assert!(moved["share_percent"].as_f64().unwrap() > 50.0, "{moved:#}");
}
