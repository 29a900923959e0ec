//! `--prometheus` on real runs: the endpoint parses with the reference OpenMetrics parser
//! (Python's prometheus_client, installed by scripts/setup), its counters grow while the
//! run goes on, and the port closes when the run ends. Needs root (CI runs as root).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(args: &[&str], port: u16) -> Child {
    let address = format!("127.0.0.1:{port}");
    Command::new(binary())
        .args(args)
        .args(["-q", "--prometheus", &address])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting irqlens")
}

/// GET /metrics: the content type and the body.
fn scrape(port: u16) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the endpoint listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
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
fn finish(child: Child, port: u16) {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "irqlens failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still open after the run"
    );
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
