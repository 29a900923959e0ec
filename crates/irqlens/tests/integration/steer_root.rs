//! irqlens steer against ground truth: a UDP flow into a private netns whose veth has
//! threaded NAPI; the receiver's scheduling is set by the test, and steer must give the
//! NAPI thread that scheduling while the flow runs, its own back when the flow stops,
//! and put it back at exit (normal or SIGTERM).

use std::io::Read;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::*;
use irqlens_collect::sched::{set_thread_priority, thread_priority};
use irqlens_model::sched::Priority;
use irqlens_test_support::stamped::{quantile_us, stamped_delays};
use irqlens_test_support::udp_flow::UdpFlow;

/// A flow whose receive work, socket delivery included, runs in a NAPI thread (no RPS
/// to hand it on to a softirq), and that thread's id.
fn threaded_flow() -> (UdpFlow, u32) {
    let flow = UdpFlow::start(1, 1);
    flow.clear_rps();
    let napi = flow.threaded_napi();
    (flow, napi)
}

/// Waits until `done`; on a timeout stops steer (which puts the threads back) and fails
/// with what it printed.
fn wait_for(steer: &mut Child, what: &str, limit: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            // SAFETY: kill only sends a signal to the child started by the test.
            unsafe { libc::kill(steer.id() as i32, libc::SIGTERM) };
            let mut printed = String::new();
            for pipe in [
                steer.stdout.take().map(|p| Box::new(p) as Box<dyn Read>),
                steer.stderr.take().map(|p| Box::new(p) as Box<dyn Read>),
            ]
            .into_iter()
            .flatten()
            {
                let mut pipe = pipe;
                let _ = pipe.read_to_string(&mut printed);
            }
            let _ = steer.wait();
            panic!("timed out waiting for {what}; steer printed:\n{printed}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Zhang & West's second case: a real-time receiver (FIFO 80) served by a NAPI thread at
/// SCHED_OTHER. steer raises the thread to FIFO 80 while the flow runs, lowers it back
/// once the receiver has been quiet for the hold, and leaves it as found.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_napi_thread_takes_its_real_time_receivers_priority_and_gives_it_back() {
    assert_root();
    let (mut flow, napi) = threaded_flow();
    let original = thread_priority(napi).unwrap();
    set_thread_priority(flow.receiver_pid(), Priority::Fifo(80)).unwrap();
    let device = flow.receiving_device().to_owned();
    let mut steer = steering(&["--dev", &device, "-d", "4", "--hold", "300ms", "--json"]);
    flow.send(2000);
    wait_for(
        &mut steer,
        "steer to raise the NAPI thread",
        Duration::from_secs(3),
        || thread_priority(napi).ok() == Some(Priority::Fifo(80)),
    );
    std::thread::sleep(Duration::from_millis(500));
    flow.stop_sending();
    wait_for(
        &mut steer,
        "steer to lower it after the hold",
        Duration::from_secs(2),
        || thread_priority(napi).ok() == Some(original),
    );
    let sent = flow.sent();
    let output = steer.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_valid_document(&output.stdout);
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    eprintln!("{:#}", doc["changes"]);
    let changes = doc["changes"].as_array().unwrap();
    let of_napi: Vec<_> = changes.iter().filter(|c| c["tid"] == napi).collect();
    assert_eq!(of_napi.len(), 2, "raised once, lowered once: {doc:#}");
    assert_eq!(of_napi[0]["to"], "f:80");
    assert_eq!(of_napi[0]["from"], original.to_string());
    let receiver = format!(":{} at f:80", flow.receiver_pid());
    assert!(
        of_napi[0]["why"].as_str().unwrap().contains(&receiver),
        "{doc:#}"
    );
    assert_eq!(of_napi[1]["to"], original.to_string());
    let thread = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"] == napi)
        .unwrap_or_else(|| panic!("{doc:#}"));
    // every datagram sent went through the NAPI thread while steer traced it
    assert!(
        thread["deliveries"].as_u64().unwrap() > sent / 2,
        "{sent} sent: {thread:#}"
    );
    assert_eq!(thread_priority(napi).unwrap(), original, "put back at exit");
}

/// The first case: a NAPI thread at FIFO 60 (as PREEMPT_RT would run it) serving a
/// SCHED_OTHER receiver is lowered to the receiver's nice; SIGTERM puts it back at FIFO 60.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_napi_thread_serving_a_normal_receiver_is_lowered_and_sigterm_puts_it_back() {
    assert_root();
    let (mut flow, napi) = threaded_flow();
    set_thread_priority(napi, Priority::Fifo(60)).unwrap();
    set_thread_priority(flow.receiver_pid(), Priority::Other { nice: 5 }).unwrap();
    let mut steer = steering(&["-d", "20", "--json"]);
    flow.send(2000);
    wait_for(
        &mut steer,
        "steer to lower the NAPI thread",
        Duration::from_secs(3),
        || thread_priority(napi).ok() == Some(Priority::Other { nice: 5 }),
    );
    signal_and_wait(steer, libc::SIGTERM);
    flow.stop_sending();
    assert_eq!(thread_priority(napi).unwrap(), Priority::Fifo(60));
    set_thread_priority(napi, Priority::Other { nice: 0 }).unwrap();
}

/// Pins thread `tid` to `cpu` (taskset: the test's own helpers pin only the calling thread).
fn pin(tid: u32, cpu: u32) {
    let status = Command::new("taskset")
        .args(["-pc", &cpu.to_string(), &tid.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "pinning {tid} to CPU {cpu}");
}

/// Starts steer in the background and waits until it has traced for a moment: a second,
/// and longer if its programs are not loaded by then (a slow VM: its duration and its
/// view of the flow start only then).
fn steering(args: &[&str]) -> Child {
    let mut all = vec!["steer"];
    all.extend_from_slice(args);
    let child = start(&all);
    std::thread::sleep(Duration::from_millis(1000));
    wait_until("steer's BPF programs", Duration::from_secs(20), || {
        !loaded_irqlens_programs().is_empty()
    });
    child
}

/// Zhang & West's second direction: a FIFO 80 receiver of a sparse flow, and a FIFO 50
/// CPU hog (30 ms busy of every 50 ms) on its CPU, with the NAPI thread at SCHED_OTHER:
/// datagrams wait behind the hog's bursts. With steer the thread runs at 80 while the
/// receiver waits, and the receive delay falls to the scale of a wakeup.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_real_time_receiver_is_served_ahead_of_a_lower_priority_hog() {
    assert_root();
    let (flow, napi) = threaded_flow();
    pin(napi, 1);
    let hog = Spinner::start_aligned(
        "il-hog",
        1,
        Duration::from_millis(50),
        Duration::from_millis(30),
        Priority::Fifo(50),
    );
    let mut unsteered = stamped_delays(flow.namespace(), 3);
    let steer = steering(&["--hold", "1s"]);
    // the NAPI thread's scheduling is watched while the flow runs: read after it, a
    // stalled VM can let the hold run out first
    let flowing = AtomicBool::new(true);
    let (mut steered, seen) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut seen: Vec<Priority> = Vec::new();
            while flowing.load(Ordering::Relaxed) {
                if let Ok(priority) = thread_priority(napi)
                    && !seen.contains(&priority)
                {
                    seen.push(priority);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            seen
        });
        let delays = stamped_delays(flow.namespace(), 3);
        flowing.store(false, Ordering::Relaxed);
        (delays, watcher.join().unwrap())
    });
    signal_and_wait(steer, libc::SIGTERM);
    hog.stop();
    let put_back = thread_priority(napi).unwrap();
    let (before, after) = (
        [0.5, 0.9, 1.0].map(|q| quantile_us(&mut unsteered, q)),
        [0.5, 0.9, 1.0].map(|q| quantile_us(&mut steered, q)),
    );
    println!(
        "receive delay p50/p90/max of a FIFO 80 receiver behind a FIFO 50 hog: NAPI thread at \
         o:0 {before:.0?} µs, steered ({seen:?} seen meanwhile) {after:.0?} µs"
    );
    assert!(
        seen.contains(&Priority::Fifo(80)),
        "steer raised it: {seen:?}"
    );
    assert_eq!(put_back, Priority::Other { nice: 0 }, "and put it back");
    assert!(
        after[1] * 10.0 < before[1],
        "p90 {:.0} µs -> {:.0} µs: not a large factor",
        before[1],
        after[1]
    );
}

/// The journal's changes and its size in bytes, while steer runs.
fn journal_now() -> (usize, u64) {
    let text = read(JOURNAL);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    (doc["changes"].as_array().unwrap().len(), text.len() as u64)
}

const JOURNAL: &str = "/run/irqlens/tune.journal";

/// A flow that starts and stops: steer raises and lowers its NAPI thread on each burst,
/// and journals the thread once (its own scheduling, what goes back), so the journal does
/// not grow with the changes.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_flow_that_starts_and_stops_keeps_one_journal_entry_per_thread() {
    assert_root();
    let (mut flow, napi) = threaded_flow();
    let original = thread_priority(napi).unwrap();
    set_thread_priority(flow.receiver_pid(), Priority::Fifo(80)).unwrap();
    let device = flow.receiving_device().to_owned();
    let mut steer = steering(&[
        "--dev",
        &device,
        "--no-ksoftirqd",
        "--hold",
        "100ms",
        "--json",
    ]);
    let mut journal = Vec::new();
    for _ in 0..5 {
        flow.send(2000);
        wait_for(&mut steer, "the raise", Duration::from_secs(3), || {
            thread_priority(napi).ok() == Some(Priority::Fifo(80))
        });
        flow.stop_sending();
        wait_for(&mut steer, "the lowering", Duration::from_secs(3), || {
            thread_priority(napi).ok() == Some(original)
        });
        journal.push(journal_now());
    }
    let output = signal_and_wait(steer, libc::SIGTERM);
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let changes = doc["changes"].as_array().unwrap();
    let threads: std::collections::BTreeSet<_> =
        changes.iter().filter_map(|c| c["tid"].as_u64()).collect();
    println!(
        "steer made {} changes to {} thread(s); the journal after each burst (entries, bytes): \
         {journal:?}",
        changes.len(),
        threads.len()
    );
    assert!(changes.len() >= 10, "raised and lowered 5 times: {doc:#}");
    for &(entries, bytes) in &journal {
        assert_eq!(entries, threads.len(), "one entry per thread: {journal:?}");
        assert_eq!(
            bytes, journal[0].1,
            "the journal does not grow: {journal:?}"
        );
    }
    assert_eq!(thread_priority(napi).unwrap(), original, "put back at exit");
    assert!(
        !std::path::Path::new(JOURNAL).exists(),
        "the journal is gone"
    );
}

/// A network namespace made with `ip netns add` that no process is in, holding a veth
/// pair; removed with its devices when dropped (on a failed assertion too).
struct EmptyNamespace(String);

impl EmptyNamespace {
    fn with_veth(device: &str, peer: &str) -> EmptyNamespace {
        let name = format!("irqlens-devcheck-{}", std::process::id());
        let ip = |args: &[&str]| {
            let status = Command::new("ip")
                .args(args)
                .status()
                .expect("ip (iproute2)");
            assert!(status.success(), "ip {args:?}");
        };
        ip(&["netns", "add", &name]);
        let namespace = EmptyNamespace(name);
        let link = ["link", "add", device, "type", "veth", "peer", "name", peer];
        ip(&[&["-n", namespace.0.as_str()][..], &link].concat());
        namespace
    }
}

impl Drop for EmptyNamespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// A device in a namespace no process is in still has its NAPI threads to steer: `--dev`
/// takes it (and still refuses a name found nowhere).
#[test]
#[ignore = "needs root: makes a network namespace (scripts/test runs it)"]
fn a_device_in_a_namespace_no_process_is_in_is_taken() {
    assert_root();
    let (device, peer) = ("irqlensdc0", "irqlensdc1");
    let _namespace = EmptyNamespace::with_veth(device, peer);
    let taken = irqlens(&["steer", "--dev", device, "-d", "200ms", "--dry-run", "-q"]);
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    let refused = irqlens(&["steer", "--dev", "irqlensdc9", "-d", "200ms", "--dry-run"]);
    assert_eq!(refused.status.code(), Some(1));
}
