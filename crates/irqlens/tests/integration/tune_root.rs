//! irqlens tune against ground truth: an IRQ line a user left on the measured CPU is
//! moved and kept, a knob unrelated to the noise is put back as "no effect", a tune
//! killed with SIGKILL is undone by `tune --revert`, and a managed IRQ is refused.
//! Needs root (CI runs as root).

use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::*;

const JOURNAL: &str = "/run/irqlens/tune.journal";
const NETDEV_BUDGET: &str = "/proc/sys/net/core/netdev_budget";

fn affinity_path(irq: u32) -> String {
    format!("/proc/irq/{irq}/smp_affinity_list")
}

/// The IRQ line of the virtio device bound to `driver` whose queue name ends in one of
/// `queues` (`virtio4-input`), from /proc/interrupts.
fn virtio_irq(driver: &str, queues: &[&str]) -> Option<u32> {
    let device = fs::read_dir("/sys/bus/virtio/devices")
        .ok()?
        .find_map(|entry| {
            let entry = entry.ok()?;
            let bound = fs::read_link(entry.path().join("driver")).ok()?;
            (bound.file_name()? == driver).then(|| entry.file_name().to_string_lossy().into_owned())
        })?;
    read("/proc/interrupts").lines().find_map(|line| {
        let name = line.split_whitespace().last()?;
        let queue = name.strip_prefix(&device)?.strip_prefix('-')?;
        queues
            .iter()
            .any(|q| queue.starts_with(q))
            .then(|| line.split(':').next()?.trim().parse().ok())?
    })
}

/// `irqlens tune ARGS --json`'s document, checked against the published schema.
fn tune_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["tune"];
    all.extend_from_slice(args);
    irqlens_json(&all)
}

/// `irqlens tune` of netdev_budget to `budget` on CPU 1, rounds of 1 s.
fn tune_budget(budget: &str, rounds: &str) -> serde_json::Value {
    tune_json(&[
        "-c",
        "1",
        "--change",
        &format!("sysctl:net.core.netdev_budget={budget}"),
        "-d",
        "1",
        "--rounds",
        rounds,
    ])
}

/// Reads `path` from a thread pinned to CPU 0 until dropped.
struct Reader {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Reader {
    fn start(path: &'static str, block: usize) -> Reader {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            pin_to_cpu0();
            let mut file = fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let mut buffer = vec![0u8; block];
            let mut reads = 0;
            while !stopped.load(Ordering::Relaxed) {
                if file.read(&mut buffer).is_ok() {
                    reads += 1;
                }
            }
            reads
        });
        Reader {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// IRQ noise on CPU 1 as a user's misconfiguration makes it: virtio_rng's IRQ routed to
/// CPU 1 while a thread on CPU 0 reads /dev/hwrng.
struct MisroutedIrq {
    irq: u32,
    path: String,
    reader: Reader,
    misrouted: Setting,
}

impl MisroutedIrq {
    /// None without a virtio_rng device (the test is then skipped, and says so).
    fn start() -> Option<MisroutedIrq> {
        let Some(irq) = virtio_irq("virtio_rng", &["input"]) else {
            eprintln!("skipped: no virtio_rng IRQ to inject IRQ noise with on this machine");
            return None;
        };
        let path = affinity_path(irq);
        let misrouted = Setting::set(&path, "1");
        let reader = Reader::start("/dev/hwrng", 64);
        Some(MisroutedIrq {
            irq,
            path,
            reader,
            misrouted,
        })
    }
}

fn pin_to_cpu0() {
    // SAFETY: cpu_set_t is a bit array: all zeroes is the empty set; CPU_SET(0) is in it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: index 0 is within the set.
    unsafe { libc::CPU_SET(0, &mut set) };
    // SAFETY: `set` is a live cpu_set_t of the size passed; the kernel only reads it.
    let ret = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(ret, 0, "pinning the reader to CPU 0");
}

fn remedy(doc: &serde_json::Value) -> &serde_json::Value {
    let remedies = doc["remedies"].as_array().expect("remedies");
    assert_eq!(remedies.len(), 1, "{doc:#}");
    &remedies[0]
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_disks_managed_irq_is_refused_and_left_alone() {
    assert_root();
    let Some(irq) = virtio_irq("virtio_blk", &["req", "request"]) else {
        eprintln!("skipped: no virtio_blk request queue IRQ on this machine");
        return;
    };
    let before = read(&affinity_path(irq));
    let output = irqlens(&[
        "tune",
        "-c",
        "1",
        "--change",
        &format!("irq:{irq}=0"),
        "-d",
        "1",
        "--rounds",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        // not managed on this kernel or device: then it is movable, which the next test covers
        eprintln!(
            "IRQ {irq} is movable here: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    } else {
        assert!(stderr.contains("managed by the kernel"), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    assert_eq!(read(&affinity_path(irq)), before);
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

/// The disk's IRQ is managed on this VM (virtio_blk's queue: EIO), so the injected IRQ
/// noise is the entropy device's: reading /dev/hwrng from CPU 0 raises virtio_rng's IRQ,
/// routed to CPU 1 as a user's misconfiguration would.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn an_irq_left_on_the_measured_cpu_is_moved_and_kept() {
    assert_root();
    let Some(MisroutedIrq {
        irq,
        path,
        reader,
        misrouted,
    }) = MisroutedIrq::start()
    else {
        return;
    };
    // the change given by hand, then the one advise names for that line (measured first)
    let by_hand = ["--change".to_owned(), format!("irq:{irq}=0")];
    let advised = ["--apply".to_owned(), format!("irq-{irq}-affinity")];
    for remedy_args in [by_hand, advised] {
        let mut args = vec!["-c", "1", "-d", "2", "--rounds", "2"];
        args.extend(remedy_args.iter().map(String::as_str));
        let doc = tune_json(&args);
        let remedy = remedy(&doc);
        eprintln!("{remedy:#}");
        assert_eq!(remedy["change"]["irq"], irq, "{remedy:#}");
        assert_eq!(remedy["verdict"], "kept", "{remedy:#}");
        let before = remedy["before_median"].as_f64().unwrap();
        let after = remedy["after_median"].as_f64().unwrap();
        assert!(
            before > 0.0,
            "the IRQ made noise on CPU 1 before: {remedy:#}"
        );
        assert!(
            after <= before * 0.1,
            "the IRQ's noise dropped by 90%: {remedy:#}"
        );
        // put back at exit: what it was before tune ran
        assert_eq!(read(&path), "1");
        assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
    }
    drop(reader);
    drop(misrouted);
}

/// An id advise does not give for these CPUs: refused after the measurement, nothing changed.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn an_unknown_remedy_id_is_refused() {
    assert_root();
    assert_fails_with(
        &["tune", "-c", "1", "-d", "1", "--apply", "no-such-id"],
        "--apply no-such-id: no such remedy for these CPUs (see irqlens advise and irqlens check)",
    );
    assert!(!Path::new(JOURNAL).exists(), "no journal");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_knob_unrelated_to_the_noise_is_put_back() {
    assert_root();
    let budget = read(NETDEV_BUDGET);
    let other = (budget.parse::<u32>().unwrap() * 2).to_string();
    // no network traffic on the idle CPU: the budget of NET_RX batches changes nothing
    let doc = tune_budget(&other, "4");
    let remedy = remedy(&doc);
    assert_eq!(remedy["verdict"], "no_effect", "{remedy:#}");
    assert_eq!(read(NETDEV_BUDGET), budget);
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_killed_tune_is_undone_by_revert_and_a_second_one_refused() {
    assert_root();
    let budget = read(NETDEV_BUDGET);
    let other = (budget.parse::<u32>().unwrap() + 7).to_string();
    let change = format!("sysctl:net.core.netdev_budget={other}");
    let args = [
        "tune", "-c", "1", "--change", &change, "-d", "2", "--rounds", "3",
    ];
    let mut tune = start(&args);
    wait_until("tune to change the budget", Duration::from_secs(20), || {
        read(NETDEV_BUDGET) == other
    });
    let second = irqlens(&args);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    // refused before it measures anything: the first holds the CPU and the journal
    for named in [
        format!("irqlens tune (pid {}) is measuring CPUs 1 too", tune.id()),
        format!("irqlens tune pid {}, started", tune.id()),
        "compares its own runs".to_owned(),
    ] {
        assert!(stderr.contains(&named), "{stderr}");
    }
    tune.kill().unwrap();
    tune.wait().unwrap();
    assert_eq!(read(NETDEV_BUDGET), other, "SIGKILL left the change");
    assert!(Path::new(JOURNAL).exists());
    assert_fails_with(&args, "run `irqlens tune --revert` first");
    let reverted = irqlens_ok(&["tune", "--revert"]);
    let text = String::from_utf8_lossy(&reverted.stdout);
    assert!(text.contains(&format!("to {budget}")), "{text}");
    assert_eq!(read(NETDEV_BUDGET), budget);
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn sigterm_puts_everything_back() {
    assert_root();
    let budget = read(NETDEV_BUDGET);
    let other = (budget.parse::<u32>().unwrap() + 9).to_string();
    let change = format!("sysctl:net.core.netdev_budget={other}");
    let tune = start(&[
        "tune", "-c", "1", "--change", &change, "-d", "2", "--rounds", "3",
    ]);
    wait_until("tune to change the budget", Duration::from_secs(20), || {
        read(NETDEV_BUDGET) == other
    });
    signal_and_wait(tune, libc::SIGTERM);
    assert_eq!(read(NETDEV_BUDGET), budget);
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

/// A veth pair in a private netns whose RPS mask sends NET_RX work of a UDP flow to
/// CPU 1: tune moves it to CPU 0 and keeps it, and the mask is put back at exit.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn an_rps_mask_steering_softirq_work_to_the_cpu_is_cleared() {
    assert_root();
    let mut flow = irqlens_test_support::udp_flow::UdpFlow::start(1, 0);
    let (namespace, device) = (
        flow.namespace().to_owned(),
        flow.receiving_device().to_owned(),
    );
    let mask = || {
        let output = std::process::Command::new("ip")
            .args(["netns", "exec", &namespace, "cat"])
            .arg(format!("/sys/class/net/{device}/queues/rx-0/rps_cpus"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    let steered = mask();
    flow.send(20_000);
    let doc = tune_json(&[
        "-c",
        "1",
        "--change",
        &format!("rps:{namespace}/{device}/rx-0=1"),
        "-d",
        "2",
        "--rounds",
        "2",
    ]);
    flow.stop_sending();
    let remedy = remedy(&doc);
    eprintln!("{remedy:#}");
    assert_eq!(remedy["verdict"], "kept", "{remedy:#}");
    let before = remedy["before_median"].as_f64().unwrap();
    let after = remedy["after_median"].as_f64().unwrap();
    assert!(
        before > 0.0,
        "NET_RX made noise on CPU 1 before: {remedy:#}"
    );
    assert!(
        after <= before * 0.1,
        "NET_RX noise on CPU 1 dropped by 90%: {remedy:#}"
    );
    assert_eq!(mask(), steered, "the mask is put back");
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_wakeup_metric_judges_on_the_timer_latency() {
    assert_root();
    let budget = read(NETDEV_BUDGET);
    let other = (budget.parse::<u32>().unwrap() + 11).to_string();
    let doc = tune_json(&[
        "-c",
        "1",
        "--metric",
        "wakeup",
        "--change",
        &format!("sysctl:net.core.netdev_budget={other}"),
        "-d",
        "1",
        "--rounds",
        "4",
    ]);
    assert_eq!(doc["metric"], "wakeup");
    let remedy = remedy(&doc);
    assert_eq!(remedy["unit"], "ns");
    for round in remedy["before"].as_array().unwrap() {
        let p99 = round["figures"]["p99_total_ns"].as_f64().unwrap();
        assert!(
            p99 > 0.0 && round["judged"].as_f64() == Some(p99),
            "{round}"
        );
    }
    assert_eq!(remedy["verdict"], "no_effect", "{remedy:#}");
    assert_eq!(read(NETDEV_BUDGET), budget);
}

/// `--keep` leaves what helped in place and ends the session: a later tune runs (and
/// leaves it), `--revert` lists it and leaves it too, `--revert --kept` says it undoes it
/// and does.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn keep_leaves_what_helped_through_later_runs_until_revert_kept() {
    assert_root();
    let Some(MisroutedIrq {
        irq,
        path,
        reader,
        misrouted,
    }) = MisroutedIrq::start()
    else {
        return;
    };
    let change = format!("irq:{irq}=0");
    let doc = tune_json(&[
        "-c", "1", "--change", &change, "-d", "1", "--rounds", "2", "--keep",
    ]);
    drop(reader);
    let remedy = remedy(&doc);
    assert_eq!(remedy["verdict"], "kept", "{remedy:#}");
    assert_eq!(remedy["left_in_place"], true);
    assert_eq!(read(&path), "0", "kept in place");
    let budget = read(NETDEV_BUDGET);
    let other = (budget.parse::<u32>().unwrap() + 13).to_string();
    let second = tune_budget(&other, "2");
    assert_eq!(
        second["remedies"].as_array().unwrap().len(),
        1,
        "{second:#}"
    );
    assert_eq!(
        read(NETDEV_BUDGET),
        budget,
        "the second tune put its change back"
    );
    assert_eq!(read(&path), "0", "and left the kept one");
    let listed = irqlens_ok(&["tune", "--revert"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains(&format!(
            "left in place, kept by `irqlens tune --keep`: {path} is 0 (was 1)"
        )),
        "{text}"
    );
    assert_eq!(read(&path), "0", "--revert leaves the kept change");
    let undone = irqlens_ok(&["tune", "--revert", "--kept"]);
    let text = String::from_utf8_lossy(&undone.stdout);
    let (listed_at, undone_at) = (
        text.find("undoing 1 change(s)")
            .unwrap_or_else(|| panic!("{text}")),
        text.find(&format!("put back {path} to 1 (was 0)"))
            .unwrap_or_else(|| panic!("{text}")),
    );
    assert!(listed_at < undone_at, "listed before it is undone: {text}");
    assert_eq!(read(&path), "1", "--revert --kept undid the kept change");
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
    drop(misrouted);
}

/// A thread of the test's own, parked until told to exit.
struct Parked {
    tid: u32,
    exit: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Parked {
    fn start(name: &str) -> Parked {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (exit, exit_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                tid_tx.send(irqlens_collect::sched::gettid()).unwrap();
                let _ = exit_rx.recv();
            })
            .unwrap();
        Parked {
            tid: tid_rx.recv().unwrap(),
            exit,
            thread,
        }
    }

    fn exit(self) {
        self.exit.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

/// A tune killed while it had a thread's priority changed, and the thread exited since:
/// `--revert` has nothing to write it to, drops it and says so, and the journal goes.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_change_to_a_thread_that_exited_is_dropped_by_revert() {
    use irqlens_collect::sched::thread_priority;
    use irqlens_model::sched::Priority;
    assert_root();
    let parked = Parked::start("il-vanishing");
    let tid = parked.tid;
    let mut tune = start(&[
        "tune",
        "-c",
        "1",
        "--change",
        &format!("priority:{tid}=o:7"),
        "-d",
        "2",
        "--rounds",
        "3",
    ]);
    wait_until("tune to change the thread", Duration::from_secs(20), || {
        thread_priority(tid).ok() == Some(Priority::Other { nice: 7 })
    });
    tune.kill().unwrap();
    tune.wait().unwrap();
    parked.exit();
    assert!(
        !Path::new(&format!("/proc/{tid}")).exists(),
        "the thread exited"
    );
    let reverted = irqlens_ok(&["tune", "--revert"]);
    let text = String::from_utf8_lossy(&reverted.stdout);
    assert!(
        text.contains(&format!(
            "dropped priority of il-vanishing:{tid} from the journal: the thread exited"
        )),
        "{text}"
    );
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
    // and nothing is refused after it
    assert!(
        String::from_utf8_lossy(&irqlens_ok(&["tune", "--revert"]).stdout)
            .contains("nothing to put back")
    );
}

/// The CPUs a thread may run on, as /proc lists them.
fn thread_affinity(tid: u32) -> String {
    read(&format!("/proc/{tid}/status"))
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_owned()
}

/// A real-time thread its owner pinned to CPU 1 is the noise: tune moves it to CPU 0 by
/// the remedy advise names for it, keeps it (its noise is gone from CPU 1), and puts the
/// thread back on CPU 1 at exit.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_thread_pinned_to_the_cpu_is_moved_kept_and_put_back() {
    assert_root();
    let spinner = Spinner::start(
        "il-tune",
        1,
        Duration::from_millis(10),
        Duration::from_millis(2),
    );
    let tid = spinner.tid();
    let id = format!("thread-{tid}-affinity");
    let doc = tune_json(&["-c", "1", "-d", "2", "--rounds", "2", "--apply", &id]);
    let after_exit = thread_affinity(tid);
    spinner.stop();
    let remedy = remedy(&doc);
    eprintln!("{remedy:#}");
    assert_eq!(remedy["change"]["knob"], "thread_affinity", "{remedy:#}");
    assert_eq!(remedy["change"]["tid"], tid, "{remedy:#}");
    assert_eq!(remedy["change"]["from"], "1", "{remedy:#}");
    assert_eq!(remedy["verdict"], "kept", "{remedy:#}");
    let before = remedy["before_median"].as_f64().unwrap();
    let after = remedy["after_median"].as_f64().unwrap();
    // 2 ms of every 10 ms is 200 ms/s of noise on CPU 1 while the spinner is there
    assert!(before > 100_000.0, "the spinner's noise before: {remedy:#}");
    assert!(
        after <= before * 0.1,
        "the spinner's noise dropped by 90%: {remedy:#}"
    );
    assert_eq!(after_exit, "1", "the thread is back on CPU 1 at exit");
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

/// The disk's completion IRQ fires on CPU 1 while CPU 0 reads the disk; the kernel
/// manages that IRQ's affinity on this VM. advise names it on CPU 1 as a cause that
/// cannot be moved, with the boot line that keeps it off, and so is the tick's per-CPU
/// vector; tune refuses both by their ids without changing anything.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn causes_that_cannot_be_moved_are_named_and_not_tried() {
    use irqlens_collect::trigger::Stimulus;
    use irqlens_model::stimulus::TriggerKind;
    assert_root();
    let Some(irq) = virtio_irq("virtio_blk", &["req", "request"]) else {
        eprintln!("skipped: no virtio_blk request queue IRQ on this machine");
        return;
    };
    let effective = read(&format!("/proc/irq/{irq}/effective_affinity_list"));
    if effective != "1" {
        eprintln!("skipped: the disk's IRQ {irq} is delivered to CPUs {effective}, not CPU 1");
        return;
    }
    let affinity = read(&affinity_path(irq));
    let reads = Stimulus::start(TriggerKind::Block, 2000, 0).expect("reading the disk");
    reads.begin();
    // one noise run, advised from its recording: the ranking below is noise's CPU time
    let recording = temp_path("unmovable.jsonl.gz");
    let path = recording.to_str().unwrap();
    irqlens_ok(&["noise", "-c", "1", "-d", "3", "-q", "--record", path]);
    let doc = irqlens_json(&["advise", path]);
    std::fs::remove_file(&recording).unwrap();
    let advice = doc["advice"].as_array().unwrap();
    let named = |id: &str| {
        advice
            .iter()
            .find(|a| a["id"] == id && a["cpu"] == 1)
            .unwrap_or_else(|| panic!("no {id} on CPU 1: {doc:#}"))
    };
    let disk = named(&format!("irq-{irq}-affinity"));
    eprintln!("{disk:#}");
    assert!(disk["change"].is_null(), "{disk:#}");
    let line = disk["blocker"]["line"].as_str().unwrap_or_default();
    assert!(line.starts_with("isolcpus=managed_irq,"), "{disk:#}");
    // the disk's line is the IRQ line that took the most time from CPU 1
    let top_line = advice
        .iter()
        .filter(|a| a["cpu"] == 1 && a["id"].as_str().unwrap().starts_with("irq-"))
        .max_by_key(|a| a["time_ns"].as_u64())
        .unwrap();
    assert_eq!(top_line["id"], disk["id"], "{doc:#}");
    let tick = named("vector-local_timer");
    assert_eq!(tick["blocker"]["blocker"], "per_cpu_vector", "{tick:#}");
    for id in [disk, tick].map(|a| a["id"].as_str().unwrap().to_owned()) {
        assert_fails_with(
            &["tune", "-c", "1", "-d", "1", "--apply", &id],
            "cannot be changed",
        );
    }
    reads.finish().expect("reading the disk");
    assert_eq!(read(&affinity_path(irq)), affinity);
    assert!(!Path::new(JOURNAL).exists(), "no journal");
}

/// The knobs no other test turns: the unbound workqueue cpumask and threaded NAPI on a
/// veth in a private netns. Each is written, measured and put back.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_workqueue_cpumask_and_threaded_napi_are_tried_and_put_back() {
    assert_root();
    const WORKQUEUE_CPUMASK: &str = "/sys/devices/virtual/workqueue/cpumask";
    let flow = irqlens_test_support::udp_flow::UdpFlow::start(1, 0);
    let (namespace, device) = (flow.namespace(), flow.receiving_device());
    // a veth has NAPI (so threaded NAPI) only with GRO on
    let gro = std::process::Command::new("ip")
        .args([
            "netns", "exec", namespace, "ethtool", "-K", device, "gro", "on",
        ])
        .status()
        .expect("ethtool (scripts/setup installs it)");
    assert!(gro.success(), "turning GRO on for {device}");
    let threaded = || {
        let output = std::process::Command::new("ip")
            .args(["netns", "exec", namespace, "cat"])
            .arg(format!("/sys/class/net/{device}/threaded"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    let (cpumask, napi) = (read(WORKQUEUE_CPUMASK), threaded());
    assert_eq!(napi, "0", "NAPI in softirq to begin with");
    let doc = tune_json(&[
        "-c",
        "1",
        "--change",
        "workqueue-cpumask=1",
        "--change",
        &format!("threaded:{namespace}/{device}=1"),
        "-d",
        "1",
        "--rounds",
        "2",
    ]);
    let remedies = doc["remedies"].as_array().unwrap();
    let knobs: Vec<_> = remedies.iter().map(|r| &r["change"]["knob"]).collect();
    assert_eq!(knobs, ["workqueue_cpumask", "napi_threaded"], "{doc:#}");
    for remedy in remedies {
        assert_eq!(remedy["before"].as_array().unwrap().len(), 2, "{remedy:#}");
        assert_eq!(remedy["after"].as_array().unwrap().len(), 2, "{remedy:#}");
    }
    assert_eq!(read(WORKQUEUE_CPUMASK), cpumask);
    assert_eq!(threaded(), napi);
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}

/// A thread's scheduling policy and real-time priority (`0/0`: SCHED_OTHER, `1/10`:
/// SCHED_FIFO 10), from /proc/TID/stat's fields 41 and 40.
fn sched_policy(tid: u32) -> String {
    let stat = read(&format!("/proc/{tid}/stat"));
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    format!("{}/{}", fields[41 - 3], fields[40 - 3])
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_napi_threads_priority_is_changed_for_the_trial_and_put_back() {
    assert_root();
    let flow = irqlens_test_support::udp_flow::UdpFlow::start(1, 0);
    let tid = flow.threaded_napi();
    let found = sched_policy(tid);
    assert_ne!(
        found, "1/10",
        "the test's priority differs from the thread's"
    );
    // what the thread runs at while tune runs, sampled
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(stat) = fs::read_to_string(format!("/proc/{tid}/stat")) {
                    if !stat.is_empty() {
                        seen.insert(sched_policy(tid));
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            seen
        })
    };
    let doc = tune_json(&[
        "-c",
        "1",
        "--change",
        &format!("priority:{tid}=f:10"),
        "-d",
        "1",
        "--rounds",
        "2",
    ]);
    stop.store(true, Ordering::Relaxed);
    let seen = watcher.join().unwrap();
    let remedy = remedy(&doc);
    assert_eq!(remedy["change"]["knob"], "thread_priority", "{remedy:#}");
    assert_eq!(remedy["change"]["tid"], tid, "{remedy:#}");
    assert!(
        seen.contains("1/10"),
        "SCHED_FIFO 10 during the trial: {seen:?}"
    );
    assert_eq!(sched_policy(tid), found, "the thread's policy is put back");
    assert!(!Path::new(JOURNAL).exists(), "the journal is gone");
}
