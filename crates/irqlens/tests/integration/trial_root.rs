//! irqlens trial against ground truth: under a flood the receiving CPU cannot carry, each
//! design's receive work runs where it says (NET_RX or the NAPI thread on the receiving
//! CPU); a SCHED_FIFO NAPI thread starves the echo server where a niced one lets it echo
//! (Chubb & Song); and whatever ends the trial (its end, SIGTERM, SIGKILL then
//! `tune --revert`), the machine is left as found. Needs root (CI runs as root).

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::*;

const JOURNAL: &str = "/run/irqlens/tune.journal";
const NETDEV_BUDGET: &str = "/proc/sys/net/core/netdev_budget";
const NETDEV_BUDGET_USECS: &str = "/proc/sys/net/core/netdev_budget_usecs";
/// The scheduler's autogroups, which the test bed turns off.
const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";
/// Far beyond what CPU 1 of the 2-CPU test VM carries (it echoes 60k to 130k/s at most).
const FLOOD: &str = "1M";

/// The trial namespaces that exist now.
fn trial_namespaces() -> Vec<String> {
    fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with("irqlens-trial-"))
                .collect()
        })
        .unwrap_or_default()
}

/// What a trial may change, as found.
#[derive(Debug, PartialEq)]
struct MachineState {
    budget: String,
    budget_usecs: String,
    autogroup: Option<String>,
    namespaces: Vec<String>,
    journal: bool,
}

fn machine_state() -> MachineState {
    MachineState {
        budget: read(NETDEV_BUDGET),
        budget_usecs: read(NETDEV_BUDGET_USECS),
        autogroup: fs::read_to_string(AUTOGROUP).ok(),
        namespaces: trial_namespaces(),
        journal: Path::new(JOURNAL).exists(),
    }
}

fn assert_left_as_found(before: &MachineState, when: &str) {
    assert_eq!(&machine_state(), before, "{when}");
    assert_eq!(
        programs_left_after_exit(),
        Vec::<String>::new(),
        "{when}: BPF programs left"
    );
}

fn point<'a>(doc: &'a serde_json::Value, design: &str) -> &'a serde_json::Value {
    doc["points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| p["design"] == design)
        .unwrap_or_else(|| panic!("no {design} point in {doc:#}"))
}

/// About 15 s: three points of 2 s after 0.5 s of warm-up, each with its bed and probes.
///
/// Each design's receive work runs where the design puts it, under a flood the CPU
/// cannot carry (one round: the echo rates of threaded-fifo and threaded-niced are
/// ordered over rounds below).
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn each_design_runs_its_receive_work_where_it_says_under_a_flood() {
    assert_root();
    let before = machine_state();
    let doc = irqlens_json(&[
        "trial",
        "net",
        "--designs",
        "stock,threaded-fifo,threaded-niced",
        "--rounds",
        "1",
        "--rates",
        FLOOD,
        "-d",
        "2",
    ]);
    assert_eq!(doc["command"], "trial");
    let number = |p: &serde_json::Value, path: &[&str]| {
        path.iter()
            .fold(p, |v, key| &v[*key])
            .as_f64()
            .unwrap_or_else(|| panic!("{path:?} in {p:#}"))
    };
    let share = |design: &str, of: &str| number(point(&doc, design), &["cpu", of]);
    let threaded = ["threaded-fifo", "threaded-niced"];
    for design in ["stock", "threaded-fifo", "threaded-niced"] {
        let p = point(&doc, design);
        let figures = format!(
            "{design}: sent {:.0}/s, echoed {:.0}/s, loss {:.1}%, CPU 1 softirq {:.0}% NAPI \
             thread {:.0}%, cyclic max {} ns",
            number(p, &["sent_pps"]),
            number(p, &["echoed_pps"]),
            number(p, &["loss_percent"]),
            number(p, &["cpu", "softirq_percent"]),
            number(p, &["cpu", "napi_thread_percent"]),
            p["cyclic"]["max_ns"],
        );
        eprintln!("{figures}");
        // a flood: CPU 1 could not echo half of what the generator sent (what it sends
        // depends on CPU 0's stolen time, what CPU 1 echoes on CPU 1's: their ratio is
        // what makes it a flood)
        assert!(number(p, &["loss_percent"]) > 50.0, "{figures}");
        assert!(number(p, &["echoed_pps"]) > 0.0, "{figures}");
        assert!(number(p, &["echo_latency", "p50_ns"]) > 0.0, "{figures}");
        // the cyclic task ran through the window: half its periods at least (a timer
        // thread late past a period skips it)
        let periods =
            number(p, &["runtimes", "window_ns"]) / number(&doc, &["options", "cyclic_period_ns"]);
        assert!(
            number(p, &["cyclic", "activations"]) > periods / 2.0,
            "{periods:.0} periods: {figures}"
        );
        // where the receive work ran, against the other designs of the same run (shares
        // of CPU 1, which stolen time lowers all together)
        let (softirq, napi) = (
            share(design, "softirq_percent"),
            share(design, "napi_thread_percent"),
        );
        if design == "stock" {
            assert!(napi == 0.0, "no NAPI thread: {figures}");
            for other in threaded {
                assert!(
                    softirq > share(other, "softirq_percent"),
                    "NET_RX on CPU 1, not in {other}'s: {figures}"
                );
            }
        } else {
            assert!(
                napi > share("stock", "napi_thread_percent"),
                "the NAPI thread on CPU 1: {figures}"
            );
            // at FIFO the NAPI thread takes CPU 1 from everything else; niced (by default
            // below the echo server) it gets the share its weight allows, which can be no
            // more than the softirq time left on CPU 1 (seen: 22% and 22%)
            if design == "threaded-fifo" {
                assert!(
                    napi > softirq,
                    "the NAPI thread ahead of softirq: {figures}"
                );
            }
        }
    }
    assert_left_as_found(&before, "after the trial");
}

/// The points of one design, one per round.
fn rounds<'a>(doc: &'a serde_json::Value, design: &str) -> Vec<&'a serde_json::Value> {
    let points: Vec<_> = doc["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter(|p| p["design"] == design)
        .collect();
    assert!(!points.is_empty(), "no {design} point in {doc:#}");
    points
}

/// About 30 s: three rounds of two points of 2 s after 0.5 s of warm-up. The slides'
/// collapse, with their remedy: the NAPI thread niced below its consumer (5 levels, the
/// default, as the slides), with the bed's autogroups off (docs/trial.md). Measured on
/// the test VM at 1M/s, before the bed turned them off,
/// with the consumer at -10: threaded-fifo 11k echoes/s, the thread at nice -5 30k and
/// at 5 90k; but in some rounds the FIFO thread holds the CPU less (54%, and 88k/s
/// echoed in one fresh-clone CI run), so the designs are compared on the medians of
/// rounds taken one after the other, and only by more than their own rounds' spread, as
/// trial's own verdict does.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_fifo_napi_thread_starves_the_echo_server_and_a_niced_one_does_not() {
    assert_root();
    let before = machine_state();
    let doc = irqlens_json(&[
        "trial",
        "net",
        "--designs",
        "threaded-fifo,threaded-niced",
        "--rates",
        FLOOD,
        "--rounds",
        "3",
        "-d",
        "2",
        "--consumer-nice",
        "-10",
    ]);
    let (fifo, niced) = (
        rounds(&doc, "threaded-fifo"),
        rounds(&doc, "threaded-niced"),
    );
    let figure = |points: &[&serde_json::Value], key: &str| -> Vec<f64> {
        points.iter().map(|p| p[key].as_f64().unwrap()).collect()
    };
    let field = |points: &[&serde_json::Value], path: [&str; 2]| -> Vec<String> {
        points
            .iter()
            .map(|p| p[path[0]][path[1]].to_string())
            .collect()
    };
    let figures = format!(
        "per round, echoed/s: threaded-fifo {:.0?}, threaded-niced {:.0?}; sent/s {:.0?} and \
         {:.0?}; NAPI thread % of CPU 1 {:?} and {:?}; cyclic max ns {:?} and {:?}",
        figure(&fifo, "echoed_pps"),
        figure(&niced, "echoed_pps"),
        figure(&fifo, "sent_pps"),
        figure(&niced, "sent_pps"),
        field(&fifo, ["cpu", "napi_thread_percent"]),
        field(&niced, ["cpu", "napi_thread_percent"]),
        field(&fifo, ["cyclic", "max_ns"]),
        field(&niced, ["cyclic", "max_ns"]),
    );
    eprintln!("{figures}");
    assert_eq!((fifo.len(), niced.len()), (3, 3), "{figures}");
    // the niced thread competes with the echo server at its nice, not with the echo
    // server's session (the bed turns autogroups off): at 5 below the echo server's nice
    // its weight is a third of the server's, and it gets less of the CPU than the server
    // in every round (with autogroups on it took 70%, the server 18%)
    for p in &niced {
        let (napi, echo) = (
            p["runtimes"]["napi_ns"].as_f64().unwrap(),
            p["runtimes"]["echo_ns"].as_f64().unwrap(),
        );
        assert!(
            napi < echo,
            "NAPI thread {napi} ns, echo server {echo} ns: {figures}"
        );
    }
    // the default nice: the slides' 5 below the consumer
    for (points, scheduling) in [(&fifo, "f:50"), (&niced, "o:-5")] {
        for p in points.iter() {
            assert_eq!(p["napi_scheduling"][0], scheduling, "{figures}");
            assert!(p["cyclic"]["max_ns"].as_u64().unwrap() > 0, "{figures}");
        }
        // a flood: CPU 1 could not echo half of what was sent, in most rounds
        let (loss, _) = median_and_spread(&figure(points, "loss_percent"));
        assert!(loss > 50.0, "{figures}");
    }
    let ((fifo_echo, fifo_spread), (niced_echo, niced_spread)) = (
        median_and_spread(&figure(&fifo, "echoed_pps")),
        median_and_spread(&figure(&niced, "echoed_pps")),
    );
    // the designs differ only where their medians differ by more than either design's
    // rounds differ among themselves; then the FIFO thread must be the one that echoes
    // less
    let spread = fifo_spread.max(niced_spread);
    eprintln!(
        "medians: threaded-fifo {fifo_echo:.0}/s, threaded-niced {niced_echo:.0}/s; rounds' \
         spread {spread:.0}/s: {}",
        if (fifo_echo - niced_echo).abs() > spread {
            "told apart"
        } else {
            "within the spread, not told apart"
        }
    );
    assert!(
        fifo_echo - niced_echo <= spread,
        "threaded-fifo echoed more than threaded-niced, beyond the rounds' spread: {figures}"
    );
    // trial's own verdict says the same, against its first design
    let verdict = &doc["comparisons"][0];
    assert_eq!(
        (&verdict["baseline"], &verdict["design"]),
        (&"threaded-fifo".into(), &"threaded-niced".into())
    );
    let told = &verdict["echoed_pps"]["difference"];
    let expected = if (fifo_echo - niced_echo).abs() > spread {
        "higher"
    } else {
        "within"
    };
    assert_eq!(told, expected, "{verdict:#}: {figures}");
    assert_left_as_found(&before, "after the trial");
}

/// Zhang & West's first direction through irqlens steer: a flood into a SCHED_OTHER echo
/// server whose NAPI thread starts at SCHED_FIFO 60 (as PREEMPT_RT runs IRQ threads), and
/// the cyclic task at FIFO 50 below it on the same CPU. Left at FIFO 60 (threaded-fifo)
/// the thread keeps the CPU from the cyclic task; steered (process-aware) it runs at the
/// echo server's level and the cyclic task's worst latency falls. Measured on the test
/// VM (one max of 3 s each, so it scatters): 4855 -> 458, 28173 -> 1195, 60363 -> 9476,
/// 62665 -> 8474 µs, 3589 -> 1845 µs while builds loaded the machine, and 4019 -> 4449
/// µs in a run where the FIFO thread did not hold the CPU: the test checks that steer
/// set the thread's scheduling and prints the figures.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_steered_napi_thread_no_longer_delays_a_real_time_task() {
    assert_root();
    let before = machine_state();
    let recording = temp_path("trial.json.gz");
    let path = recording.to_str().unwrap();
    let doc = irqlens_json(&[
        "trial",
        "net",
        "--designs",
        "threaded-fifo,threaded-fifo+process-aware",
        "--rounds",
        "1",
        "--rates",
        FLOOD,
        "-d",
        "3",
        "--napi-priority",
        "60",
        "-P",
        "f:50",
        "--record",
        path,
    ]);
    // the recording shows the same result again
    let reported = irqlens_json(&["report", path]);
    let text = String::from_utf8(irqlens_ok(&["report", path]).stdout).unwrap();
    std::fs::remove_file(&recording).unwrap();
    assert_eq!(reported["points"], doc["points"]);
    assert!(
        text.contains("threaded-fifo+process-aware: threaded NAPI started at SCHED_FIFO 60"),
        "{text}"
    );
    let (fifo, steered) = (
        point(&doc, "threaded-fifo"),
        point(&doc, "threaded-fifo+process-aware"),
    );
    let max_us = |p: &serde_json::Value| p["cyclic"]["max_ns"].as_f64().unwrap() / 1e3;
    let figures = format!(
        "cyclic FIFO 50 task's max latency: NAPI thread at FIFO 60 {:.0} µs, steered {:.0} µs; \
         echoed/s {} and {}",
        max_us(fifo),
        max_us(steered),
        fifo["echoed_pps"],
        steered["echoed_pps"],
    );
    eprintln!("{figures}");
    // steer ran and set the NAPI thread to the echo server's scheduling (SCHED_OTHER,
    // the consumer's nice -10); threaded-fifo left it at FIFO 60
    assert_eq!(fifo["napi_scheduling"][0], "f:60", "{figures}");
    assert_eq!(steered["napi_scheduling"][0], "o:-10", "{figures}");
    // what that does to the cyclic task's max is measured, not asserted: it falls by 2
    // to 50x when the FIFO thread holds the CPU, and not at all in runs where it does not
    // (one fresh-clone CI run: 4019 -> 4449 µs, the thread at 54% of the CPU)
    assert_left_as_found(&before, "after the trial");
}

/// Starts a trial whose first point caps the budget at its own count (over --budget's),
/// and waits until its bed is up.
fn start_budget_trial() -> std::process::Child {
    let trial = start(&[
        "trial",
        "net",
        "--designs",
        "stock+budget=17,threaded-fifo",
        "--rounds",
        "1",
        "--rates",
        "100k",
        "-d",
        "20",
        "--budget",
        "9",
    ]);
    wait_until("the trial's bed", Duration::from_secs(20), || {
        read(NETDEV_BUDGET) == "17" && trial_namespaces().len() == 2
    });
    trial
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn sigterm_mid_point_puts_everything_back() {
    assert_root();
    let before = machine_state();
    let trial = start_budget_trial();
    // into the point: the load and the cyclic task run
    std::thread::sleep(Duration::from_secs(2));
    let output = signal_and_wait(trial, libc::SIGTERM);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("interrupted"), "{text}");
    assert_left_as_found(&before, "after SIGTERM");
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_killed_trial_is_undone_by_tune_revert() {
    assert_root();
    let before = machine_state();
    let mut trial = start_budget_trial();
    trial.kill().unwrap();
    trial.wait().unwrap();
    assert_eq!(read(NETDEV_BUDGET), "17", "SIGKILL left the change");
    assert_eq!(trial_namespaces().len(), 2, "SIGKILL left the namespaces");
    if before.autogroup.as_deref().map(str::trim) == Some("1") {
        assert_eq!(read(AUTOGROUP), "0", "the bed turns autogroups off");
    }
    let reverted = irqlens_ok(&["tune", "--revert"]);
    let text = String::from_utf8_lossy(&reverted.stdout);
    assert!(
        text.contains("put back network namespace irqlens-trial-"),
        "{text}"
    );
    assert_left_as_found(&before, "after tune --revert");
}

/// The bed's `napi` figures of point `p` (numbers as u64).
fn napi_figure(p: &serde_json::Value, name: &str) -> u64 {
    p["napi"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("napi.{name} in {p:#}"))
}

/// The share of point `p`'s window that `runtimes.FIELD` (ns) took.
fn window_share(p: &serde_json::Value, field: &str) -> f64 {
    let runtimes = &p["runtimes"];
    let share = runtimes[field].as_f64().zip(runtimes["window_ns"].as_f64());
    share.map_or(f64::NAN, |(ns, window)| ns / window)
}

/// About 30 s: three designs at two rates, 1 s a point.
///
/// Deferral's knobs read back set on the receiving veth while its bed stands (and the
/// other designs' fresh veth reads the kernel's 0: nothing leaked from the bed before);
/// the busy-polling echo socket has veth's NAPI id, its busy polls take packets, and at
/// the low rate, where stock's echo server sleeps between datagrams, the busy-polling
/// one polls through the gaps: it runs at least twice stock's share, as measured in the
/// same run. At 5k/s a gap (200 µs) is over ten times what echoing a datagram takes
/// (stock's share over the rate: 8 to 16 µs here), and a 1 ms busy poll fills it unless
/// another task wants the CPU (need_resched ends a busy loop): 0.95 against 0.04 on a
/// quiet VM, 0.41 against 0.08 under other builds. The echo server's own time is
/// compared, not the receiving CPU's busy share, which other work on a shared machine
/// fills (stock's CPU 1 was 99 to 100% busy at 5k/s in runs under other builds).
/// The receiving CPU's recorded busy time holds the echo server's run time there.
/// Everything is put back.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn defer_sets_its_knobs_and_busy_polling_takes_the_receiving_cpu() {
    assert_root();
    let before = machine_state();
    let (low, high) = (5_000u64, 50_000u64);
    let (stock, defer, busy_poll) = ("stock", "stock+defer=100:20", "stock+busy-poll=1000");
    let doc = irqlens_json(&[
        "trial",
        "net",
        "--designs",
        &format!("{stock},{defer},{busy_poll}"),
        "--rates",
        &format!("{low},{high}"),
        "-d",
        "1",
    ]);
    let at = |design: &str, rate: u64| {
        doc["points"]
            .as_array()
            .expect("points")
            .iter()
            .find(|p| p["design"] == design && p["offered_pps"] == rate)
            .unwrap_or_else(|| panic!("no {design} point at {rate}/s in {doc:#}"))
    };
    for rate in [low, high] {
        for design in [stock, defer, busy_poll] {
            let p = at(design, rate);
            let figures = format!(
                "{design} at {rate}/s: echoed {}/{}, CPU 1 busy {:.2}, echo server {:.2}, napi {}",
                p["echoed"],
                p["sent"],
                window_share(p, "busy_ns"),
                window_share(p, "echo_ns"),
                p["napi"]
            );
            eprintln!("{figures}");
            let (hard_irqs, timeout_ns) = if design == defer {
                (100, 20_000)
            } else {
                (0, 0)
            };
            assert_eq!(napi_figure(p, "defer_hard_irqs"), hard_irqs, "{figures}");
            assert_eq!(
                napi_figure(p, "gro_flush_timeout_ns"),
                timeout_ns,
                "{figures}"
            );
            if design == busy_poll {
                assert_eq!(napi_figure(p, "busy_poll_us"), 1000, "{figures}");
                // ids up to NR_CPUS are sender CPUs, which the kernel reports as 0
                assert!(napi_figure(p, "echo_napi_id") > 0, "{figures}");
                assert!(napi_figure(p, "busy_polled") > 0, "{figures}");
            } else {
                assert_eq!(napi_figure(p, "busy_poll_us"), 0, "{figures}");
                assert_eq!(napi_figure(p, "busy_polled"), 0, "{figures}");
            }
            assert!(p["echoed"].as_u64() > Some(0), "{figures}");
            // the CPU's busy time (cpuidle's or, without it, /proc/stat's idle: kept in
            // clock ticks, so up to a tick off at each end) holds the echo server's exact
            // run time there
            let busy = window_share(p, "busy_ns");
            let tick_slack = 2.0 * 0.01 * 1e9 / p["runtimes"]["window_ns"].as_f64().unwrap();
            assert!(busy + tick_slack >= window_share(p, "echo_ns"), "{figures}");
        }
    }
    let (stock_share, polling_share) = (
        window_share(at(stock, low), "echo_ns"),
        window_share(at(busy_poll, low), "echo_ns"),
    );
    assert!(
        polling_share > 2.0 * stock_share,
        "at {low}/s the busy-polling echo server ran {polling_share:.2} of the time, stock's \
         {stock_share:.2}"
    );
    assert_left_as_found(&before, "after the trial");
}
