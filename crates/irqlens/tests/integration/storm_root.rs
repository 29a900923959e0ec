//! Issue #14's storm in small (root, BPF): `hackbench -g 4` in a loop and a UDP flood on
//! 127.0.0.1 for a few seconds. irqlens must measure it without making interrupts of its
//! own that it then bills to the workload (its old ring buffer woke the reader with an
//! irq_work interrupt per record once a quarter full), and lose nothing or say so.

use std::time::{Duration, Instant};

use crate::common::*;
use irqlens_test_support::storm;
use serde_json::Value;

const SECONDS: u64 = 4;
const HACKBENCH_LOOPS: u32 = 50;
/// The longest an irq_work run plausibly takes: a bound for the time that irq_work
/// interrupts the workload makes itself can be charged with.
const IRQ_WORK_MAX_NS: u64 = 50_000;

/// The storm for SECONDS, with `during` running beside it: irq_work interrupts per second.
fn storm<T: Send>(during: impl FnOnce() -> T + Send) -> (f64, T) {
    let before = storm::irq_work_interrupts().expect("/proc/interrupts");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(SECONDS);
    let result = std::thread::scope(|scope| {
        let hackbench = scope.spawn(|| storm::hackbench_loop(HACKBENCH_LOOPS, deadline));
        let flood = scope.spawn(|| storm::udp_flood(deadline));
        let result = during();
        hackbench.join().unwrap().expect("the hackbench loop");
        assert!(
            flood.join().unwrap().expect("the UDP flood") > 0,
            "no datagram flowed"
        );
        result
    });
    let irq_work = storm::irq_work_interrupts().expect("/proc/interrupts") - before;
    (irq_work as f64 / started.elapsed().as_secs_f64(), result)
}

/// irq_work time charged to the rows of processes other than irqlens.
fn irq_work_charged_to_others(doc: &Value) -> u64 {
    doc["total"]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|row| row["comm"] != "irqlens" && row["comm"] != "[irqlens]")
        .flat_map(|row| row["charged_by"].as_object().expect("charged_by"))
        .filter(|(source, _)| source.starts_with("irq_work"))
        .map(|(_, ns)| ns.as_u64().unwrap_or(0))
        .sum()
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn account_under_a_storm_makes_no_irq_work_and_loses_nothing_unsaid() {
    assert_root();
    let (plain_per_s, ()) = storm(|| std::thread::sleep(Duration::from_secs(SECONDS)));
    let seconds = (SECONDS - 1).to_string();
    let (traced_per_s, doc) = storm(|| irqlens_json(&["account", "-d", &seconds]));
    let run = &doc["run"];
    let charged = irq_work_charged_to_others(&doc);
    println!(
        "irq_work/s plain {plain_per_s:.0}, with account {traced_per_s:.0}; \
         account: {} checkpoints, {} lost; irq_work charged to other processes {} us",
        run["events"],
        run["lost_events"],
        charged / 1_000
    );
    assert!(
        run["events"].as_u64().unwrap() > 10_000,
        "the storm was hardly traced"
    );
    assert!(
        traced_per_s <= 2.0 * plain_per_s + 100.0,
        "irqlens made irq_work interrupts: {traced_per_s:.0}/s against {plain_per_s:.0}/s plain"
    );
    let plain_irq_works = plain_per_s * (SECONDS - 1) as f64 + 100.0;
    assert!(
        charged as f64 <= plain_irq_works * IRQ_WORK_MAX_NS as f64,
        "{charged} ns of irq_work charged to the workload, more than {plain_irq_works:.0} irq_works of a plain run can take"
    );
    let lost = run["lost_events"].as_u64().unwrap();
    assert!(
        lost == 0 || doc["lost"]["affected"] == true,
        "{lost} checkpoints lost and the run does not say so in its tables"
    );
}
