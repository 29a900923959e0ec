//! irqlens check against injected failures, one at a time: a pinned FIFO spinner, an IRQ
//! line routed onto the checked CPU, RT throttling that stops a FIFO task early. Each must
//! fail the right check and name its cause; the injections go through the journal, as
//! every change irqlens makes, and are put back however the test ends.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use irqlens_collect::journal::{Session, SystemKnobs};
use irqlens_collect::knob;
use irqlens_model::tune::Knob;
use irqlens_test_support::python::run_script;

/// The CPU checked: the last one, away from CPU 0's housekeeping.
fn checked_cpu() -> u32 {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online: irqlens_model::units::CpuList = online.trim().parse().unwrap();
    online.iter().last().unwrap()
}

/// `irqlens check ARGS --json`: its exit status and its (schema-valid) document.
fn check(args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["check", "--json", "-q"];
    all.extend_from_slice(args);
    let output = irqlens(&all);
    let code = output.status.code().expect("an exit status");
    assert!(
        code == 0 || code == 2,
        "status {code}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_valid_document(&output.stdout);
    (code, serde_json::from_slice(&output.stdout).unwrap())
}

/// The check `id` of a report.
fn the_check<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    (report["checks"].as_array().unwrap().iter())
        .find(|check| check["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {report:#}"))
}

fn failed_ids(report: &serde_json::Value) -> Vec<&str> {
    (report["checks"].as_array().unwrap().iter())
        .filter(|check| check["status"] == "fail")
        .map(|check| check["id"].as_str().unwrap())
        .collect()
}

/// Only the configuration checks: the injections below are about settings.
const NO_MEASUREMENT: &str = "max-noise,max-latency";

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_machine_within_generous_thresholds_passes_and_its_junit_is_read_by_a_consumer() {
    assert_root();
    let cpu = checked_cpu().to_string();
    let dir = std::env::temp_dir().join(format!("irqlens-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junit = dir.join("check.xml");
    // an hour: no sample of a 1 s run is that long (CI would have stopped first)
    let (code, report) = check(&[
        "-c",
        &cpu,
        "-d",
        "1",
        "--max-noise",
        "3600s",
        "--max-latency",
        "3600s",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{report:#}");
    assert!(failed_ids(&report).is_empty(), "{report:#}");
    for id in ["max-noise", "max-latency"] {
        assert_eq!(the_check(&report, id)["status"], "pass", "{report:#}");
    }
    // what a CI system reads: one test case per check, none failed
    let script = "import sys, junitparser\n\
                  xml = junitparser.JUnitXml.fromfile(sys.argv[1])\n\
                  cases = [case for suite in xml for case in suite]\n\
                  failed = [case.name for case in cases if not case.is_passed and not case.is_skipped]\n\
                  print(len(cases), len(failed))";
    let read = run_script(script, &[junit.to_str().unwrap()], b"")
        .unwrap_or_else(|err| panic!("junitparser refused {}: {err}", junit.display()));
    let read = String::from_utf8(read).unwrap();
    let checks = report["checks"].as_array().unwrap().len();
    assert_eq!(read.trim(), format!("{checks} 0"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_pinned_fifo_spinner_fails_the_noise_check_and_is_named() {
    assert_root();
    let cpu = checked_cpu();
    let name = "chk-spinner";
    let spinner = Spinner::start(
        name,
        cpu,
        Duration::from_millis(100),
        Duration::from_millis(20),
    );
    let limit_us = 5_000;
    let (code, report) = check(&[
        "-c",
        &cpu.to_string(),
        "-d",
        "2",
        "--max-noise",
        &format!("{limit_us}us"),
        "--skip",
        "max-latency",
    ]);
    let longest_busy_us = spinner.longest_busy_ns() / 1_000;
    spinner.stop();
    // the ground truth: the spinner kept the CPU longer than the limit at a stretch
    assert!(
        longest_busy_us > limit_us,
        "the spinner ran {longest_busy_us} µs at most"
    );
    assert_eq!(code, 2, "{report:#}");
    let noise = the_check(&report, "max-noise");
    assert_eq!(noise["status"], "fail", "{noise:#}");
    let cause = noise["cause"].as_str().unwrap_or_default();
    assert!(cause.contains(name), "the cause named: {cause}");
}

/// A movable IRQ line: the first numbered line whose affinity the journal can change to
/// `cpu` (a managed line refuses the write), with the session that changed it.
fn route_a_line_onto(cpu: u32, session: &mut Session) -> u32 {
    let lines = std::fs::read_dir("/proc/irq").unwrap().flatten();
    let mut irqs: Vec<u32> = lines
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|irq| Path::new(&format!("/proc/irq/{irq}/smp_affinity_list")).exists())
        .collect();
    irqs.sort_unstable();
    for irq in irqs {
        let knob = Knob::IrqAffinity { irq };
        if session
            .journal()
            .change(&SystemKnobs, knob, &cpu.to_string())
            .is_ok()
        {
            return irq;
        }
    }
    panic!("no IRQ line's affinity could be changed");
}

#[test]
#[ignore = "needs root: changes an IRQ line's affinity (scripts/test runs it)"]
fn an_irq_line_routed_onto_the_cpu_fails_the_affinity_check_and_is_named() {
    assert_root();
    let cpu = checked_cpu();
    let mut session = Session::begin("check-test").unwrap();
    let irq = route_a_line_onto(cpu, &mut session);
    let (code, report) = check(&["-c", &cpu.to_string(), "--skip", NO_MEASUREMENT]);
    let unrestored = session.finish();
    assert_eq!(unrestored, 0);
    assert_eq!(code, 2, "{report:#}");
    let affinity = the_check(&report, "irq-affinity");
    assert_eq!(affinity["status"], "fail", "{affinity:#}");
    let cause = affinity["cause"].as_str().unwrap_or_default();
    assert!(
        cause.contains(&format!("IRQ {irq} ")),
        "IRQ {irq} not named: {cause}"
    );
    let remedy = format!("irq-{irq}-affinity");
    assert!(
        affinity["remedies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == remedy.as_str()),
        "{affinity:#}"
    );
}

/// The root RT group's runtime where RT group scheduling has one (a cgroup v1 cpu
/// controller), as collect::check reads it.
fn rt_group() -> Option<Knob> {
    let config = irqlens_collect::check::read_configuration(&Default::default()).unwrap();
    let (path, _) = config.rt_group_runtime?;
    let cgroup = Path::new(&path).parent()?.to_string_lossy().into_owned();
    Some(Knob::RtGroupRuntime { cgroup })
}

fn sched_rt_runtime() -> Knob {
    Knob::Sysctl {
        name: "kernel.sched_rt_runtime_us".into(),
    }
}

#[test]
#[ignore = "needs root: changes kernel.sched_rt_runtime_us (scripts/test runs it)"]
fn rt_throttling_that_stops_a_fifo_task_early_fails_its_check() {
    assert_root();
    let cpu = checked_cpu().to_string();
    let knob = sched_rt_runtime();
    let group = rt_group();
    let before = knob::read(&knob).unwrap();
    let group_before = group.as_ref().map(|group| knob::read(group).unwrap());
    let mut session = Session::begin("check-test").unwrap();
    // the kernel refuses a sysctl below the root group's runtime: the group first (the
    // journal puts back last first: the sysctl, then the group)
    if let Some(group) = &group {
        session
            .journal()
            .change(&SystemKnobs, group.clone(), "500000")
            .unwrap();
    }
    let injected = session
        .journal()
        .change(&SystemKnobs, knob.clone(), "500000");
    let report = injected.map(|_| check(&["-c", &cpu, "--skip", NO_MEASUREMENT]));
    assert_eq!(session.finish(), 0);
    assert_eq!(knob::read(&knob).unwrap(), before, "put back");
    if let Some(group) = &group {
        assert_eq!(Some(knob::read(group).unwrap()), group_before, "put back");
    }
    let (code, report) = report.unwrap();
    assert_eq!(code, 2, "{report:#}");
    assert!(failed_ids(&report).contains(&"rt-throttling"), "{report:#}");
    let throttling = the_check(&report, "rt-throttling");
    assert!(
        throttling["found"].as_str().unwrap().contains("500000"),
        "{throttling:#}"
    );
}

/// The remedy ids of check `id` in a report.
fn remedies<'a>(report: &'a serde_json::Value, id: &str) -> Vec<&'a str> {
    let remedies = the_check(report, id)["remedies"].as_array().unwrap();
    remedies.iter().map(|r| r.as_str().unwrap()).collect()
}

#[test]
#[ignore = "needs root: tune changes an IRQ line's affinity and sysctls (scripts/test runs it)"]
fn the_remedies_check_names_are_what_tune_apply_makes_and_puts_back() {
    assert_root();
    let cpu = checked_cpu();
    let cpus = cpu.to_string();
    let online: irqlens_model::units::CpuList =
        read("/sys/devices/system/cpu/online").parse().unwrap();
    let housekeeping = online.without(&irqlens_model::units::CpuList::single(cpu));
    // timer migration on, as the kernel's default has it, so that check names its remedy
    let _migrating = Setting::set("/proc/sys/kernel/timer_migration", "1");
    let mut session = Session::begin("check-test").unwrap();
    let irq = route_a_line_onto(cpu, &mut session);
    let (_, report) = check(&["-c", &cpus, "--skip", NO_MEASUREMENT]);
    let line = format!("irq-{irq}-affinity");
    assert!(
        remedies(&report, "irq-affinity").contains(&line.as_str()),
        "{report:#}"
    );
    // the line's remedy as tune would make it: onto the other CPUs
    let plan = irqlens_json(&[
        "tune",
        "-c",
        &cpus,
        "-d",
        "1",
        "--apply",
        &line,
        "--dry-run",
    ]);
    let changes = plan["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{plan:#}");
    assert_eq!(changes[0]["irq"], irq, "{plan:#}");
    assert_eq!(changes[0]["from"], cpus.as_str(), "{plan:#}");
    assert_eq!(changes[0]["to"], housekeeping.to_string(), "{plan:#}");
    assert_eq!(session.finish(), 0);
    // made for the rounds, measured, and put back
    let timer = "sysctl-kernel.timer_migration";
    assert!(
        remedies(&report, "timer-migration").contains(&timer),
        "{report:#}"
    );
    let migration = Knob::Sysctl {
        name: "kernel.timer_migration".into(),
    };
    let doc = tune(&cpus, timer);
    let trial = &doc["remedies"][0];
    assert_eq!(trial["change"]["name"], "kernel.timer_migration", "{doc:#}");
    assert_eq!(
        (&trial["change"]["from"], &trial["change"]["to"]),
        (&"1".into(), &"0".into())
    );
    assert_eq!(trial["after"].as_array().unwrap().len(), 2, "{doc:#}");
    assert_eq!(knob::read(&migration).unwrap(), "1", "put back");
    // RT throttling off: the sysctl, then the root RT group's runtime where there is one
    let throttling = "sysctl-kernel.sched_rt_runtime_us";
    assert!(
        remedies(&report, "rt-throttling").contains(&throttling),
        "{report:#}"
    );
    let runtime = knob::read(&sched_rt_runtime()).unwrap();
    let group = rt_group();
    let group_runtime = group.as_ref().map(|group| knob::read(group).unwrap());
    let doc = tune(&cpus, throttling);
    let trial = &doc["remedies"][0];
    assert_eq!(trial["change"]["to"], "-1", "{doc:#}");
    let together = trial["together_with"].as_array().unwrap().len();
    assert_eq!(together, usize::from(group.is_some()), "{doc:#}");
    assert_eq!(
        knob::read(&sched_rt_runtime()).unwrap(),
        runtime,
        "put back"
    );
    if let Some(group) = &group {
        assert_eq!(trial["together_with"][0]["to"], "-1", "{doc:#}");
        assert_eq!(Some(knob::read(group).unwrap()), group_runtime, "put back");
    }
    assert!(
        !Path::new("/run/irqlens/tune.journal").exists(),
        "the journal is gone"
    );
}

/// `irqlens tune -c CPUS --apply ID`, two rounds of 1 s.
fn tune(cpus: &str, id: &str) -> serde_json::Value {
    irqlens_json(&[
        "tune", "-c", cpus, "-d", "1", "--rounds", "2", "--apply", id,
    ])
}

/// SIGTERM in the middle of the measured checks: the report is printed with the
/// unfinished checks skipped, not passed, and the run exits 1 (a CI job stopped by its
/// timeout must not read as a pass), leaving nothing loaded.
#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_check_cut_short_prints_what_it_has_and_is_no_pass() {
    assert_root();
    let cpu = checked_cpu().to_string();
    let args = [
        "check",
        "-c",
        &cpu,
        "-d",
        "30",
        "--profile",
        "hpc",
        "--json",
        "-q",
    ];
    let child = start(&args);
    wait_until("check's noise run", Duration::from_secs(20), || {
        !loaded_irqlens_programs().is_empty()
    });
    let output = signal_and_expect_end(child, libc::SIGTERM, Duration::from_secs(20));
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_valid_document(&output.stdout);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["interrupted"], true, "{report:#}");
    for id in ["max-noise", "min-available"] {
        assert_ne!(the_check(&report, id)["status"], "pass", "{report:#}");
    }
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn a_measured_run_that_fails_leaves_the_configuration_judged_and_exits_1() {
    use std::os::unix::process::CommandExt;
    assert_root();
    let cpu = checked_cpu().to_string();
    // too few file descriptors to load the probes, enough to read the configuration
    let mut command = std::process::Command::new(irqlens_test_support::runner::binary());
    command.args(["check", "-c", &cpu, "-d", "1", "--json", "-q"]);
    // SAFETY: setrlimit is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 32,
                rlim_max: 32,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a measured run failed") && stderr.contains("open files"),
        "{stderr}"
    );
    assert_valid_document(&output.stdout);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let noise = the_check(&report, "max-noise");
    assert_eq!(noise["status"], "skip", "{noise}");
    assert!(
        noise["found"]
            .as_str()
            .unwrap()
            .starts_with("not measured: noise"),
        "{noise}"
    );
    // the configuration was judged all the same
    let clocksource = the_check(&report, "clocksource");
    assert_ne!(clocksource["status"], "skip", "{clocksource}");
    assert_eq!(programs_left_after_exit(), Vec::<String>::new());
}

/// A process named irqbalance, run as `uid` until dropped.
struct FakeIrqbalance(std::process::Child, std::path::PathBuf);

impl FakeIrqbalance {
    fn start(uid: u32) -> Self {
        use std::os::unix::process::CommandExt;
        let dir = std::env::temp_dir().join(format!("irqlens-fake-{}-{uid}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let program = dir.join("irqbalance");
        std::fs::copy("/bin/sleep", &program).unwrap();
        let mut command = std::process::Command::new(&program);
        command.arg("60").uid(uid);
        let child = command.spawn().unwrap();
        // until it has exec'd, it is named after the test
        let comm = format!("/proc/{}/comm", child.id());
        while std::fs::read_to_string(&comm).unwrap_or_default().trim() != "irqbalance" {
            std::thread::sleep(Duration::from_millis(5));
        }
        FakeIrqbalance(child, dir)
    }
}

impl Drop for FakeIrqbalance {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn only_an_irqbalance_that_can_move_lines_counts() {
    assert_root();
    let cpu = checked_cpu().to_string();
    let verdict = || {
        let (_, report) = check(&["-c", &cpu, "--skip", NO_MEASUREMENT]);
        the_check(&report, "irqbalance")["found"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let before = verdict();
    // any user can name a process irqbalance; only root's moves IRQ lines
    let nobody = FakeIrqbalance::start(65534);
    assert_eq!(verdict(), before, "a user's irqbalance changed the verdict");
    drop(nobody);
    if before == "not running" {
        let root = FakeIrqbalance::start(0);
        assert!(
            verdict().starts_with("running"),
            "root's irqbalance is seen"
        );
        drop(root);
    }
}
