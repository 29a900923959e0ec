//! irqlens steer against ground truth: a UDP flow into a private netns whose veth has
//! threaded NAPI; the receiver's scheduling is set by the test, and steer must give the
//! NAPI thread that scheduling while the flow runs, its own back when the flow stops,
//! and put it back at exit (normal or SIGTERM).

use std::io::Read;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common::*;
use irqlens_collect::sched::{set_thread_priority, thread_priority};
use irqlens_model::sched::Priority;
use irqlens_test_support::udp_flow::UdpFlow;

/// A flow whose receive work runs in a NAPI thread (GRO on, threaded, no RPS), and that
/// thread's id. A veth hands a datagram to its peer's NAPI only if the sender has no TSO
/// (veth_skb_is_eligible_for_gro in drivers/net/veth.c); otherwise to the backlog.
fn threaded_flow() -> (UdpFlow, u32) {
    let flow = UdpFlow::start(1, 1);
    let (namespace, device) = (flow.namespace(), flow.receiving_device());
    let tso = Command::new("ethtool")
        .args(["-K", flow.sending_device(), "tso", "off"])
        .output()
        .expect("ethtool (scripts/setup installs it)");
    assert!(tso.status.success(), "{tso:?}");
    let in_ns = |script: &str| {
        let status = Command::new("ip")
            .args(["netns", "exec", namespace, "sh", "-c", script])
            .status()
            .unwrap();
        assert!(status.success(), "{script}");
    };
    in_ns(&format!(
        "echo 0 > /sys/class/net/{device}/queues/rx-0/rps_cpus && \
         ethtool -K {device} gro on >/dev/null && echo 1 > /sys/class/net/{device}/threaded"
    ));
    let prefix = format!("napi/{device}-");
    let napi = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.starts_with(&prefix))
        })
        .unwrap_or_else(|| panic!("no {prefix}* thread after threaded=1"));
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
    let mut steer = start(&[
        "steer", "--dev", &device, "-d", "4", "--hold", "300ms", "--json",
    ]);
    std::thread::sleep(Duration::from_millis(500));
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
    assert!(thread["deliveries"].as_u64().unwrap() > 500, "{thread:#}");
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
    let mut steer = start(&["steer", "-d", "20", "--json"]);
    std::thread::sleep(Duration::from_millis(500));
    flow.send(2000);
    wait_for(
        &mut steer,
        "steer to lower the NAPI thread",
        Duration::from_secs(3),
        || thread_priority(napi).ok() == Some(Priority::Other { nice: 5 }),
    );
    // SAFETY: kill only sends a signal to the child started above.
    unsafe { libc::kill(steer.id() as i32, libc::SIGTERM) };
    let status = steer.wait().unwrap();
    flow.stop_sending();
    assert!(status.success(), "{status}");
    assert_eq!(thread_priority(napi).unwrap(), Priority::Fifo(60));
    set_thread_priority(napi, Priority::Other { nice: 0 }).unwrap();
}
