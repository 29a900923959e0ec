//! `--prometheus` on real runs: the endpoint parses with the reference OpenMetrics parser
//! (Python's prometheus_client, installed by scripts/setup) and, in the classic format,
//! passes `promtool check metrics`; its counters grow while the run goes on, hostile clients neither stop it nor grow the process, and the port closes
//! when the run ends. Needs root (CI runs as root).

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use irqlens_test_support::hostile_http::{
    Closed, claimed_body, closed_within, get, get_accepting, idle, large_header, request,
    status_field, still_open,
};
use irqlens_test_support::promtool;
use irqlens_test_support::python::run_script;

/// A sample as the parser read it: (name, labels, value).
type Parsed = Vec<(String, serde_json::Map<String, serde_json::Value>, f64)>;

const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
samples = [[s.name, s.labels, s.value]
           for family in text_string_to_metric_families(sys.stdin.read())
           for s in family.samples]
print(json.dumps(samples))
"#;

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn start(args: &[&str], port: u16) -> Child {
    Command::new(binary())
        .args(args)
        .args(["-q", "--prometheus", &loopback(port).to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting irqlens")
}

/// GET /metrics asking for OpenMetrics, as Prometheus does: the content type and the body.
fn scrape(port: u16) -> (String, String) {
    let response = get_accepting(loopback(port), "/metrics", "application/openmetrics-text");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or_default();
    (content_type.to_owned(), body.to_owned())
}

/// The exposition as the reference parser reads it (it rejects what is not OpenMetrics).
fn parse(text: &str) -> Parsed {
    let stdout = run_script(PARSE, &[], text.as_bytes()).unwrap_or_else(|stderr| {
        panic!("the OpenMetrics parser rejects the endpoint: {stderr}\n{text}")
    });
    serde_json::from_slice(&stdout).unwrap()
}

/// The sum of the samples named `name` whose labels include `labels`.
fn total(samples: &Parsed, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).and_then(|x| x.as_str()) == Some(*v))
        })
        .map(|(_, _, value)| value)
        .sum()
}

fn scrape_parsed(port: u16) -> Parsed {
    let (content_type, body) = scrape(port);
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    parse(&body)
}

/// Waits for the run to end well, then checks nothing listens on its port any more.
/// Returns what it printed.
fn finish(child: Child, port: u16) -> Vec<u8> {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "irqlens failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        TcpStream::connect(loopback(port)).is_err(),
        "port {port} still open after the run"
    );
    output.stdout
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn noise_counters_grow_while_the_run_goes_on() {
    assert_root();
    let port = free_port();
    let child = start(&["noise", "-c", "1", "-d", "8"], port);
    std::thread::sleep(Duration::from_secs(3));
    let first = scrape_parsed(port);
    std::thread::sleep(Duration::from_secs(2));
    let second = scrape_parsed(port);

    let cpu1 = [("cpu", "1")];
    for name in [
        "irqlens_noise_runtime_seconds_total",
        "irqlens_noise_samples_total",
    ] {
        let (before, after) = (total(&first, name, &cpu1), total(&second, name, &cpu1));
        assert!(before > 0.0, "{name} is {before} after 3 s");
        assert!(
            after > before,
            "{name} went from {before} to {after} in 2 s"
        );
    }
    let histogram_count = total(
        &second,
        "irqlens_noise_sample_duration_seconds_count",
        &cpu1,
    );
    assert_eq!(
        histogram_count,
        total(&second, "irqlens_noise_samples_total", &cpu1)
    );
    // the buckets reach the samples (up to 10 s), whatever the linear histogram's -E
    let under_10_s = total(
        &second,
        "irqlens_noise_sample_duration_seconds_bucket",
        &[("cpu", "1"), ("le", "10.0")],
    );
    assert_eq!(under_10_s, histogram_count);
    assert_eq!(
        total(&second, "irqlens_build_info", &[("capability", "noise")]),
        1.0
    );
    assert!(total(&second, "irqlens_noise_cause_seconds_total", &[]) > 0.0);
    // health to alert on: the probe is drained, and CPU 1's losses counted from 0 on
    let noise = ("capability", "noise");
    assert_eq!(total(&second, "irqlens_probe_up", &[noise]), 1.0);
    let lost = "irqlens_lost_events_total";
    assert!(
        second.iter().any(|(name, labels, _)| name == lost
            && labels.get("cpu").and_then(|c| c.as_str()) == Some("1")),
        "no {lost} of CPU 1"
    );
    // the classic format, as curl gets it, is what Prometheus's linter accepts
    let classic = get(loopback(port), "/metrics");
    let (head, body) = classic.split_once("\r\n\r\n").unwrap();
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    if let Err(problems) = promtool::check_metrics(body) {
        panic!("{problems}\n{body}");
    }
    finish(child, port);
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn bh_latency_is_served() {
    assert_root();
    let port = free_port();
    let child = start(&["bh", "-c", "1", "-d", "6"], port);
    std::thread::sleep(Duration::from_secs(3));
    let samples = scrape_parsed(port);
    // the timer softirq runs on every CPU all the time
    let bottom_halves = total(&samples, "irqlens_bh_samples_total", &[]);
    assert!(bottom_halves > 0.0, "no bottom half after 3 s");
    let measured = total(&samples, "irqlens_bh_latency_seconds_count", &[])
        + total(&samples, "irqlens_bh_irq_samples_total", &[]);
    assert_eq!(measured, bottom_halves);
    finish(child, port);
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn account_interrupt_time_is_served() {
    assert_root();
    let port = free_port();
    let child = start(&["account", "-d", "8"], port);
    std::thread::sleep(Duration::from_secs(3));
    let first = scrape_parsed(port);
    std::thread::sleep(Duration::from_secs(2));
    let second = scrape_parsed(port);

    assert_eq!(
        total(&second, "irqlens_build_info", &[("capability", "account")]),
        1.0
    );
    // the local timer interrupts every CPU all the time
    let interrupts = |samples| total(samples, "irqlens_account_interrupt_seconds_total", &[]);
    let (before, after) = (interrupts(&first), interrupts(&second));
    assert!(before > 0.0, "no interrupt time after 3 s");
    assert!(
        after > before,
        "interrupt time went from {before} to {after} in 2 s"
    );
    // every interrupt ran while some thread was current: a comm's, an idle CPU's or
    // irqlens's (the comms past the largest left out)
    let billed: f64 = [
        "irqlens_account_charged_seconds_total",
        "irqlens_account_idle_seconds_total",
        "irqlens_account_irqlens_seconds_total",
    ]
    .iter()
    .map(|name| total(&second, name, &[]))
    .sum();
    assert!(billed > 0.0);
    assert!(
        billed <= after * (1.0 + 1e-9),
        "{billed} s billed of {after} s of interrupts"
    );
    finish(child, port);
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn wakeup_latency_and_causes_are_served_per_cpu() {
    assert_root();
    let port = free_port();
    let child = start(&["wakeup", "-c", "1", "-d", "6"], port);
    std::thread::sleep(Duration::from_secs(3));
    let samples = scrape_parsed(port);
    let cpu1_total = [("cpu", "1"), ("component", "total")];
    let count = total(
        &samples,
        "irqlens_wakeup_latency_seconds_count",
        &cpu1_total,
    );
    assert!(count > 0.0, "no wakeup after 3 s");
    let mut under_10_s = cpu1_total.to_vec();
    under_10_s.push(("le", "10.0"));
    assert_eq!(
        total(
            &samples,
            "irqlens_wakeup_latency_seconds_bucket",
            &under_10_s
        ),
        count
    );
    // the traced timer wakeups' causes, on the CPU they were measured on
    let causes: Vec<_> = samples
        .iter()
        .filter(|(name, _, _)| name == "irqlens_wakeup_cause_seconds_total")
        .collect();
    assert!(!causes.is_empty(), "no wakeup cause after 3 s");
    for (_, labels, _) in causes {
        assert_eq!(
            labels.get("cpu").and_then(|c| c.as_str()),
            Some("1"),
            "{labels:?}"
        );
    }
    finish(child, port);
}

/// What an attack may add to irqlens's resident memory (the old server's took more than a
/// GiB of it, locked).
const RSS_GROWTH_BOUND_KIB: u64 = 64 * 1024;

const IDLE_CONNECTIONS: usize = 500;

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn noise_survives_hostile_clients_of_its_endpoint() {
    assert_root();
    let port = free_port();
    let address = loopback(port);
    let child = start(&["noise", "-c", "1", "-d", "8", "--json"], port);
    let pid = child.id().to_string();
    // until it serves some measured time
    let measuring = || {
        let response = request(address, "GET", "/metrics").unwrap_or_default();
        let runtime = response
            .lines()
            .find_map(|line| line.strip_prefix("irqlens_noise_runtime_seconds_total{cpu=\"1\"} "));
        runtime
            .and_then(|s| s.parse::<f64>().ok())
            .is_some_and(|s| s > 0.0)
    };
    wait_until("the endpoint to serve", Duration::from_secs(10), measuring);
    // the HTTP exchange alone, not the parser
    let timed_scrape = || {
        let started = Instant::now();
        let (_, body) = scrape(port);
        (started.elapsed(), body)
    };
    let baseline = (0..5).map(|_| timed_scrape().0).max().unwrap();
    let rss_kib = || status_field(&pid, "VmRSS");
    let (rss_before_kib, threads_before) = (rss_kib(), status_field(&pid, "Threads"));

    let attack = Instant::now();
    let idle = idle(address, IDLE_CONNECTIONS);
    let rss_idle_kib = rss_kib();
    let mut claimed = claimed_body(address, 1_000_000_000_000_000);
    // answered and closed: the server is done with it
    assert_eq!(
        closed_within(&mut claimed, Duration::from_secs(5)),
        Some(Closed::Eof)
    );
    let rss_claimed_kib = rss_kib();
    let mut large = large_header(address, 100 << 20);
    assert!(closed_within(&mut large, Duration::from_secs(5)).is_some());
    let rss_large_kib = rss_kib();
    let threads_during = status_field(&pid, "Threads");
    // each answered; the fastest at about the usual speed (one may wait for the CPU)
    let (during, body) = (0..3).map(|_| timed_scrape()).min().unwrap();
    eprintln!(
        "irqlens VmRSS: {rss_before_kib} KiB before the attack, {rss_idle_kib} KiB with \
         {IDLE_CONNECTIONS} idle connections, {rss_claimed_kib} KiB after a claimed body of \
         1e15 bytes, {rss_large_kib} KiB after a 100 MiB header; threads {threads_before} \
         before, {threads_during} during; scrape {baseline:?} at most before, {during:?} \
         during"
    );
    // the idle connections were all there for the scrape
    assert!(
        idle.iter().all(still_open),
        "idle connections closed before the scrape, {:?} into the attack",
        attack.elapsed()
    );
    assert!(
        threads_during <= threads_before,
        "{threads_before} threads before the attack, {threads_during} during it"
    );
    let largest_kib = rss_idle_kib.max(rss_claimed_kib).max(rss_large_kib);
    assert!(
        largest_kib < rss_before_kib + RSS_GROWTH_BOUND_KIB,
        "VmRSS went from {rss_before_kib} KiB to {largest_kib} KiB"
    );
    assert!(
        during <= baseline * 100,
        "a scrape took {during:?} under attack, {baseline:?} at most before"
    );
    let cpu1 = [("cpu", "1")];
    let served_runtime = total(&parse(&body), "irqlens_noise_runtime_seconds_total", &cpu1);
    assert!(served_runtime > 0.0);

    // the run went on and ended as usual, its whole document printed
    let stdout = finish(child, port);
    assert_valid_document(&stdout);
    let doc: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let runtime_s = doc["per_cpu"][0]["runtime_ns"].as_f64().unwrap() / 1e9;
    assert!(
        runtime_s > served_runtime,
        "measured {runtime_s} s in all, {served_runtime} s already during the attack"
    );
}
