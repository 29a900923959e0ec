//! `irqlens agent` on this machine under a small storm (a UDP flood over loopback): its
//! endpoint passes promtool, its counters grow, it serves its losses and its own cost;
//! SIGHUP applies a new configuration (bh off: its families go; bh on again: its probes
//! attach again, after the capabilities were dropped) and refuses a bad one; it keeps
//! only the capabilities it documents; SIGTERM ends it with status 0 and no program left.
//! Its passive noise counts the softirqs the kernel counts; its active runs publish when
//! they end, and skip CPUs another irqlens run measures.
//! Needs root (CI runs as root).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::*;
use irqlens_test_support::hostile_http::{get, request};
use irqlens_test_support::promtool::{check_metrics, sample_sum};
use irqlens_test_support::storm::udp_flood;

/// The endpoint's body in the classic format (as curl and promtool read it).
fn scrape(address: SocketAddr) -> String {
    let response = get(address, "/metrics");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// Waits until a scrape satisfies `ready`; returns it.
fn scrape_when(address: SocketAddr, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(response) = request(address, "GET", "/metrics")
            && let Some((_, body)) = response.split_once("\r\n\r\n")
            && ready(body)
        {
            return body.to_owned();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn value(body: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample_sum(body, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in:\n{body}"))
}

fn lints_clean(body: &str) {
    if let Err(problems) = check_metrics(body) {
        panic!("{problems}\n{body}");
    }
}

fn hang_up(child: &Child) {
    // SAFETY: kill takes integers; the child is not waited for yet, so its pid is its own.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
}

/// The capabilities a process holds in `set` (`CapEff`, `CapPrm`, `CapBnd`), as a mask.
fn capabilities(pid: u32, set: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hex = status
        .lines()
        .find_map(|line| line.strip_prefix(set)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {set}"));
    u64::from_str_radix(hex.trim(), 16).unwrap()
}

/// Every thread of `pid` has at most `allowed` in each of its sets.
fn every_thread_within(pid: u32, allowed: u64) {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    for task in tasks.flatten() {
        let tid: u32 = task.file_name().to_str().unwrap().parse().unwrap();
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        for set in ["CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"] {
            let held = status
                .lines()
                .find_map(|line| line.strip_prefix(set)?.strip_prefix(':'))
                .map_or(0, |hex| u64::from_str_radix(hex.trim(), 16).unwrap());
            assert_eq!(
                held & !allowed,
                0,
                "thread {tid} ({}) holds {set} {held:#x}, beyond {allowed:#x}",
                comm.trim()
            );
        }
    }
    assert_ne!(capabilities(pid, "CapEff") & (1 << 39), 0, "CAP_BPF kept");
}

/// CAP_BPF, CAP_PERFMON, CAP_SYS_RESOURCE, CAP_DAC_READ_SEARCH, CAP_SYS_NICE.
const KEPT: u64 = (1 << 39) | (1 << 38) | (1 << 24) | (1 << 2) | (1 << 23);

fn write_config(path: &Path, port: u16, extra: &str) {
    std::fs::write(path, format!("listen = \"127.0.0.1:{port}\"\n{extra}")).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn the_agent_serves_reloads_and_detaches() {
    assert_root();
    let port = free_port();
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let config = temp_path("agent.toml");
    write_config(&config, port, "");
    let child = start(&["agent", "--config", config.to_str().unwrap()]);
    let flood = std::thread::spawn(|| udp_flood(Instant::now() + Duration::from_secs(20)));

    let up = |body: &str, capability: &str| {
        sample_sum(
            body,
            "irqlens_agent_capability_up",
            &[("capability", capability)],
        ) == Some(1.0)
    };
    let first = scrape_when(address, "both capabilities up", |body| {
        up(body, "bh") && up(body, "account")
    });
    lints_clean(&first);
    std::thread::sleep(Duration::from_secs(3));
    let second = scrape(address);
    lints_clean(&second);
    for name in [
        "irqlens_bh_samples_total",
        "irqlens_account_interrupt_seconds_total",
        "irqlens_agent_cpu_seconds_total",
    ] {
        let (before, after) = (value(&first, name, &[]), value(&second, name, &[]));
        assert!(
            after > before,
            "{name} went from {before} to {after} in 3 s"
        );
    }
    for capability in ["bh", "account"] {
        let of = [("capability", capability)];
        value(&second, "irqlens_lost_events_total", &of);
        assert_eq!(value(&second, "irqlens_probe_up", &of), 1.0);
        assert_eq!(
            value(&second, "irqlens_agent_capability_failures_total", &of),
            0.0
        );
    }
    let resident = value(&second, "irqlens_agent_resident_bytes", &[]);
    assert!(resident > 1e6, "{resident} bytes resident");
    assert_eq!(
        value(&second, "irqlens_build_info", &[("capability", "agent")]),
        1.0
    );
    assert_eq!(
        value(&second, "irqlens_agent_config_reloads_total", &[]),
        0.0
    );
    every_thread_within(child.id(), KEPT);

    // bh turned off: its families go, account's stay
    write_config(&config, port, "[bh]\nenabled = false\n");
    hang_up(&child);
    let without_bh = scrape_when(address, "bh's families to go", |body| {
        sample_sum(body, "irqlens_bh_samples_total", &[]).is_none()
            && sample_sum(body, "irqlens_agent_config_reloads_total", &[]) == Some(1.0)
    });
    lints_clean(&without_bh);
    assert!(up(&without_bh, "account"), "{without_bh}");
    assert_eq!(
        sample_sum(
            &without_bh,
            "irqlens_agent_capability_up",
            &[("capability", "bh")]
        ),
        None
    );
    assert_eq!(
        sample_sum(&without_bh, "irqlens_probe_up", &[("capability", "bh")]),
        None
    );

    // a bad configuration is refused: the one before stays
    std::fs::write(&config, "[bh]\nenabled = 3\n").unwrap();
    hang_up(&child);
    let refused = scrape_when(address, "the refused reload", |body| {
        sample_sum(body, "irqlens_agent_config_reloads_total", &[]) == Some(2.0)
    });
    assert!(up(&refused, "account"));
    assert!(sample_sum(&refused, "irqlens_bh_samples_total", &[]).is_none());

    // bh on again: it attaches with the capabilities it kept
    write_config(&config, port, "");
    hang_up(&child);
    let again = scrape_when(address, "bh up again", |body| up(body, "bh"));
    assert!(value(&again, "irqlens_bh_samples_total", &[]) >= 0.0);
    every_thread_within(child.id(), KEPT);
    flood.join().unwrap().unwrap();

    let output = signal_and_expect_end(child, libc::SIGTERM, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}\n{stderr}", output.status);
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
    assert!(
        std::net::TcpStream::connect(address).is_err(),
        "port {port} still open after the agent stopped"
    );
    // one structured line per event
    for event in [
        "capabilities dropped",
        "started",
        "attached capability=\"bh\"",
        "attached capability=\"account\"",
        "configuration reloaded restarted=bh",
        "reload refused",
        "stopped",
    ] {
        assert!(stderr.contains(event), "no '{event}' in:\n{stderr}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("3 configuration reload(s), 1 refused"),
        "{stdout}"
    );
    std::fs::remove_file(&config).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_port_it_cannot_bind_is_refused_before_anything_is_loaded() {
    assert_root();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let config = temp_path("no-keys.toml");
    std::fs::write(&config, "").unwrap();
    assert_fails_with(
        &[
            "agent",
            "--config",
            config.to_str().unwrap(),
            "--listen",
            &listen,
        ],
        &format!("--listen '{listen}': cannot listen"),
    );
    std::fs::remove_file(&config).unwrap();
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// NET_RX runs so far on every CPU, as the kernel counts them (/proc/softirqs).
fn net_rx_runs() -> f64 {
    let text = std::fs::read_to_string("/proc/softirqs").unwrap();
    let line = (text.lines())
        .find_map(|line| line.trim_start().strip_prefix("NET_RX:"))
        .expect("a NET_RX line in /proc/softirqs");
    line.split_whitespace()
        .map(|count| count.parse::<f64>().unwrap())
        .sum()
}

/// Holds CPU `cpu`'s claim as another irqlens run would (an flock on its file in
/// /run/irqlens/cpu), until dropped.
struct HeldCpu {
    path: std::path::PathBuf,
    _lock: std::fs::File,
}

impl HeldCpu {
    fn hold(cpu: u32) -> HeldCpu {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let path = Path::new("/run/irqlens/cpu").join(cpu.to_string());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut file = std::fs::File::create(&path).unwrap();
        // SAFETY: flock on a descriptor this process owns.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(locked, 0, "CPU {cpu} is claimed by another run");
        writeln!(file, "holder {}", std::process::id()).unwrap();
        HeldCpu { path, _lock: file }
    }
}

impl Drop for HeldCpu {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(self.path.parent().unwrap());
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn passive_noise_counts_the_kernels_softirqs_and_an_active_run_publishes_its_gauges() {
    assert_root();
    let port = free_port();
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let config = temp_path("active.toml");
    // the shortest schedule a configuration takes: one run of each at the start
    write_config(
        &config,
        port,
        "[bh]\nenabled = false\n[account]\nenabled = false\n\
         [noise]\nenabled = true\nevery = \"60s\"\nduration = \"3s\"\ncpus = \"1\"\n\
         [wakeup]\nenabled = true\nevery = \"60s\"\nduration = \"2s\"\ncpus = \"0\"\n",
    );
    // another irqlens run measures CPU 0: the wakeup run skips
    let held = HeldCpu::hold(0);
    let started = Instant::now();
    let child = start(&["agent", "--config", config.to_str().unwrap()]);
    let flood = std::thread::spawn(|| udp_flood(Instant::now() + Duration::from_secs(12)));

    let passive = [("capability", "noise_passive")];
    let net_rx = [("class", "softirq"), ("source", "NET_RX")];
    let count = |body: &str| {
        sample_sum(body, "irqlens_noise_passive_interferences_total", &net_rx).unwrap_or(0.0)
    };
    let first = scrape_when(address, "passive noise's NET_RX", |body| count(body) > 0.0);
    let kernel_first = net_rx_runs();
    std::thread::sleep(Duration::from_secs(6));
    let second = scrape(address);
    let kernel_second = net_rx_runs();
    lints_clean(&second);
    let (traced, kernel) = (count(&second) - count(&first), kernel_second - kernel_first);
    // each scrape serves the sums of the last second's drain: a second at most of
    // difference at each end of the 6 s between the two readings
    eprintln!("passive noise: {traced} NET_RX runs traced, {kernel} counted by the kernel");
    assert!(kernel > 100.0, "{kernel} NET_RX runs under the flood");
    assert!(
        traced > kernel * 0.5 && traced < kernel * 1.5,
        "{traced} NET_RX traced, {kernel} counted by the kernel"
    );
    let seconds = |body: &str| {
        value(
            body,
            "irqlens_noise_passive_interference_seconds_total",
            &net_rx,
        )
    };
    assert!(seconds(&second) > seconds(&first));
    value(&second, "irqlens_lost_events_total", &passive);
    assert_eq!(value(&second, "irqlens_probe_up", &passive), 1.0);

    // the noise run (3 s on CPU 1) was published when it ended, with the families of a
    // noise run's --prometheus
    let noise = scrape_when(address, "the noise run's families", |body| {
        sample_sum(body, "irqlens_noise_runtime_seconds_total", &[]).is_some()
    });
    let elapsed = started.elapsed().as_secs_f64();
    lints_clean(&noise);
    let cpu_1 = [("cpu", "1")];
    let runtime = value(&noise, "irqlens_noise_runtime_seconds_total", &cpu_1);
    assert!(
        runtime > 0.0 && runtime < elapsed,
        "{runtime} s of {elapsed} s"
    );
    value(&noise, "irqlens_noise_max_single_seconds", &cpu_1);
    value(
        &noise,
        "irqlens_noise_sample_duration_seconds_count",
        &cpu_1,
    );
    assert!(sample_sum(&noise, "irqlens_wakeup_latency_seconds_count", &[]).is_none());
    assert_eq!(
        value(
            &noise,
            "irqlens_agent_capability_failures_total",
            &[("capability", "noise")]
        ),
        0.0
    );
    // the run released its CPU
    assert!(!Path::new("/run/irqlens/cpu/1").exists());
    flood.join().unwrap().unwrap();

    let output = signal_and_expect_end(child, libc::SIGTERM, Duration::from_secs(10));
    drop(held);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{}\n{stderr}", output.status);
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
    for event in [
        "attached capability=\"noise_passive\"",
        "run started capability=\"noise\" cpus=1",
        "run published capability=\"noise\"",
        "run skipped: another irqlens run measures its CPUs capability=\"wakeup\"",
    ] {
        assert!(stderr.contains(event), "no '{event}' in:\n{stderr}");
    }
    assert!(
        !stderr.contains("run started capability=\"wakeup\""),
        "{stderr}"
    );
    std::fs::remove_file(&config).unwrap();
}
