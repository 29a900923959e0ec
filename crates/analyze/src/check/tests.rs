use super::*;
use crate::advise::tests::idle_state as idle;
use irqlens_model::check::BannedCpus;

fn cpus(list: &str) -> CpuList {
    list.parse().unwrap()
}

/// A 4-CPU machine with the kernel's defaults: nothing isolated, every setting as a
/// distribution ships it.
fn defaults() -> Configuration {
    let sysctls = [
        ("kernel.sched_rt_runtime_us", "950000"),
        ("kernel.sched_rt_period_us", "1000000"),
        ("kernel.timer_migration", "1"),
        ("kernel.nmi_watchdog", "0"),
        ("kernel.watchdog", "1"),
        ("kernel.soft_watchdog", "1"),
        ("kernel.watchdog_cpumask", "0-3"),
    ];
    Configuration {
        machine: MachineState {
            online_cpus: cpus("0-3"),
            sysctls: sysctls
                .into_iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            workqueue_cpumask: Some("f".into()),
            workqueue_cpus: Some(cpus("0-3")),
            cmdline: "ro quiet".into(),
            ksoftirqd: (0..4)
                .map(|cpu| {
                    thread(
                        10 + cpu,
                        &format!("ksoftirqd/{cpu}"),
                        "o:0",
                        &cpu.to_string(),
                    )
                })
                .collect(),
            ..MachineState::default()
        },
        nohz_full: Some(CpuList::default()),
        transparent_hugepage: Some("madvise".into()),
        clocksource: Some("tsc".into()),
        ..Configuration::default()
    }
}

/// The same machine with CPUs 2-3 isolated as tuned's realtime profile does it.
fn isolated() -> Configuration {
    let mut config = defaults();
    config.machine.cmdline =
        "ro isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1".into();
    config.isolated = cpus("2-3");
    config.nohz_full = Some(cpus("2-3"));
    config
}

fn thread(tid: u32, comm: &str, policy: &str, affinity: &str) -> ThreadPolicy {
    ThreadPolicy {
        tid,
        comm: comm.into(),
        policy: policy.into(),
        affinity: Some(affinity.into()),
    }
}

fn line(irq: u32, handler: &str, affinity: &str, effective: &str, counts: [u64; 4]) -> IrqState {
    IrqState {
        key: irq.to_string(),
        irq: Some(irq),
        name: format!("PCI-MSIX-0000:00:02.0 1-edge {handler}"),
        affinity: Some(affinity.into()),
        effective_affinity: Some(effective.into()),
        counts: (0..4).zip(counts).collect(),
        movable: IrqMovable::Yes,
    }
}

fn judged(config: &Configuration, checked: &str, id: &str) -> Check {
    configuration(config, &cpus(checked), Profile::Realtime)
        .into_iter()
        .chain(configuration(config, &cpus(checked), Profile::Network))
        .find(|check| check.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

#[test]
fn each_profile_runs_its_checks_in_order_once() {
    let realtime = profile_checks(Profile::Realtime);
    assert_eq!(realtime.len(), RULES.len(), "realtime runs every check");
    assert_eq!(realtime[0], "isolcpus");
    let network = profile_checks(Profile::Network);
    assert!(network.contains(&"rps-xps") && !network.contains(&"nohz_full"));
    let hpc = profile_checks(Profile::Hpc);
    assert!(hpc.contains(&"thp") && !hpc.contains(&"rt-throttling"));
    for profile in [Profile::Realtime, Profile::Network, Profile::Hpc] {
        let ids = profile_checks(profile);
        let checks = configuration(&defaults(), &cpus("2"), profile);
        assert_eq!(
            checks.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ids
        );
        assert!(checks.iter().all(|c| c.kind == Kind::Configuration));
        // one short line each, for an 80-column screen
        for check in &checks {
            assert!(check.found.chars().count() <= 40, "{check:?}");
            assert!(check.expected.chars().count() <= 40, "{check:?}");
        }
    }
}

#[test]
fn without_cpus_every_check_is_skipped() {
    let checks = configuration(&defaults(), &CpuList::default(), Profile::Hpc);
    assert!(!checks.is_empty());
    assert!(checks.iter().all(|c| c.status == Status::Skip));
}

#[test]
fn a_tuned_realtime_machine_passes_its_boot_line() {
    let config = isolated();
    for id in ["isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity"] {
        let check = judged(&config, "2-3", id);
        assert_eq!(check.status, Status::Pass, "{check:?}");
    }
    // the housekeeping CPUs are not isolated
    let check = judged(&config, "1-2", "isolcpus");
    assert_eq!(check.status, Status::Warn);
    assert_eq!(check.found, "CPU 1 not isolated");
}

#[test]
fn irqaffinity_judges_the_default_new_lines_start_on_now() {
    // tuned's way: no irqaffinity=, the default written at run time
    let mut config = isolated();
    config.machine.cmdline = "isolcpus=managed_irq,domain,2-3 nohz_full=2-3".into();
    config.default_irq_affinity = Some(cpus("0-1"));
    let check = judged(&config, "2-3", "irqaffinity");
    assert_eq!(
        (check.status, check.found.as_str()),
        (Status::Pass, "default_smp_affinity=0-1")
    );
    // irqaffinity= at boot, widened since: what the kernel does now counts
    let mut config = isolated();
    config.default_irq_affinity = Some(cpus("0-3"));
    let check = judged(&config, "2-3", "irqaffinity");
    assert_eq!(
        (check.status, check.found.as_str()),
        (
            Status::Fail,
            "default_smp_affinity=0-3 (irqaffinity=0-1 at boot)"
        )
    );
    assert!(
        check
            .advice
            .unwrap()
            .contains("echo 3 > /proc/irq/default_smp_affinity"),
        "the housekeeping CPUs' mask"
    );
    // the kernel's default (every CPU, possible ones beyond the online included) with no
    // irqaffinity= is no setting
    let mut config = defaults();
    config.isolated = cpus("2-3");
    config.default_irq_affinity = Some(cpus("0-7"));
    let check = judged(&config, "2-3", "irqaffinity");
    assert_eq!(
        (check.status, check.found.as_str()),
        (Status::Warn, "no irqaffinity=")
    );
}

#[test]
fn the_boot_line_takes_the_kernels_cpu_list_forms() {
    let mut config = isolated();
    // N is the last CPU (3), 2-3:1/1 a group using all of its CPU, all every CPU
    config.machine.cmdline =
        "ro isolcpus=managed_irq,domain,2-N nohz_full=2-3 rcu_nocbs=2-3:1/1 irqaffinity=0-3:1/2"
            .into();
    for id in ["isolcpus", "rcu_nocbs"] {
        let check = judged(&config, "2-3", id);
        assert_eq!(check.status, Status::Pass, "{check:?}");
    }
    // irqaffinity=0-3:1/2 is 0,2: it lets IRQs onto CPU 2
    let check = judged(&config, "2-3", "irqaffinity");
    assert_eq!(check.status, Status::Fail, "{check:?}");
    config.machine.cmdline = "isolcpus=managed_irq,all nohz_full=2-3 rcu_nocbs=all".into();
    for id in ["isolcpus", "rcu_nocbs"] {
        let check = judged(&config, "2-3", id);
        assert_eq!(check.status, Status::Pass, "{check:?}");
    }
}

#[test]
fn isolation_without_managed_irq_warns_with_the_boot_line() {
    let mut config = isolated();
    config.machine.cmdline = "isolcpus=domain,2-3 nohz_full=2-3".into();
    let check = judged(&config, "2-3", "isolcpus");
    assert_eq!(check.status, Status::Warn);
    assert_eq!(check.found, "isolated, without managed_irq");
    assert!(
        check
            .advice
            .unwrap()
            .contains("isolcpus=managed_irq,domain,2-3")
    );
    // managed_irq for other CPUs than the checked ones is not enough
    config.machine.cmdline = "isolcpus=managed_irq,domain,3".into();
    assert_eq!(judged(&config, "2-3", "isolcpus").status, Status::Warn);
}

#[test]
fn the_default_boot_line_warns_and_advises() {
    let config = defaults();
    let isolcpus = judged(&config, "2", "isolcpus");
    assert_eq!(
        (isolcpus.status, isolcpus.found.as_str()),
        (Status::Warn, "CPU 2 not isolated")
    );
    assert!(
        isolcpus
            .advice
            .unwrap()
            .contains("isolcpus=managed_irq,domain,2")
    );
    let nohz = judged(&config, "2", "nohz_full");
    assert_eq!(nohz.status, Status::Warn);
    assert!(nohz.advice.unwrap().contains("nohz_full=2"));
    let rcu = judged(&config, "2", "rcu_nocbs");
    assert_eq!(rcu.status, Status::Warn);
    assert!(rcu.advice.unwrap().contains("rcu_nocbs=2"));
    // no isolated CPU: nothing says IRQ lines should start elsewhere
    let irqaffinity = judged(&config, "2", "irqaffinity");
    assert_eq!(irqaffinity.status, Status::Skip);
    assert!(irqaffinity.cause.unwrap().starts_with("no isolated CPUs"));
}

#[test]
fn nohz_full_implies_rcu_nocbs_and_a_kernel_without_it_warns() {
    let mut config = defaults();
    config.nohz_full = Some(cpus("2-3"));
    assert_eq!(judged(&config, "2-3", "rcu_nocbs").status, Status::Pass);
    // a bare rcu_nocbs offloads nothing yet
    config.nohz_full = Some(CpuList::default());
    config.machine.cmdline = "rcu_nocbs".into();
    assert_eq!(judged(&config, "2-3", "rcu_nocbs").status, Status::Warn);
    config.nohz_full = None;
    let nohz = judged(&config, "2", "nohz_full");
    assert_eq!(
        (nohz.status, nohz.found.as_str()),
        (Status::Warn, "kernel without nohz_full")
    );
    assert!(nohz.advice.unwrap().contains("CONFIG_NO_HZ_FULL"));
}

#[test]
fn irqaffinity_fails_on_the_checked_cpus_and_warns_when_missing_on_isolated_ones() {
    let mut config = isolated();
    config.machine.cmdline = "irqaffinity=0-2".into();
    let check_ = judged(&config, "2-3", "irqaffinity");
    assert_eq!(check_.status, Status::Fail);
    assert!(check_.cause.unwrap().contains("CPU 2"));
    assert_eq!(
        check_.advice.unwrap(),
        "add irqaffinity=0-1 to the kernel's command line and reboot; until then: echo 3 > \
         /proc/irq/default_smp_affinity"
    );
    config.machine.cmdline = "isolcpus=2-3".into();
    assert_eq!(judged(&config, "2-3", "irqaffinity").status, Status::Warn);
    config.machine.cmdline = "irqaffinity=x".into();
    assert_eq!(judged(&config, "2-3", "irqaffinity").status, Status::Warn);
}

#[test]
fn a_line_routed_onto_a_checked_cpu_fails_naming_it_and_its_remedy() {
    let mut config = defaults();
    config.machine.irqs = vec![
        line(30, "virtio3-rx", "0-3", "0", [900, 0, 0, 0]),
        line(42, "virtio3-tx", "1", "1", [0, 39691, 0, 0]),
        line(26, "ttyS0", "0-3", "1", [0, 14, 0, 0]),
        IrqState {
            key: "LOC".into(),
            irq: None,
            name: "Local timer interrupts".into(),
            affinity: None,
            effective_affinity: None,
            counts: vec![(1, 99999)],
            movable: IrqMovable::PerCpuVector,
        },
    ];
    let check = judged(&config, "1", "irq-affinity");
    assert_eq!(check.status, Status::Fail);
    assert_eq!(check.found, "2 lines on CPU 1, 1 routed");
    let cause = check.cause.unwrap();
    // the routed line first, then the one the kernel chose; the vector and the line
    // elsewhere are not named
    assert!(
        cause.starts_with("IRQ 42 virtio3-tx (routed to 1, 39691 interrupts here)"),
        "{cause}"
    );
    assert!(
        cause.contains("IRQ 26 ttyS0 (delivered to 1, chosen among 0-3"),
        "{cause}"
    );
    assert!(!cause.contains("IRQ 30") && !cause.contains("LOC"));
    assert_eq!(check.remedies, ["irq-42-affinity", "irq-26-affinity"]);
    assert_eq!(check.advice, None);
}

#[test]
fn a_line_the_kernel_delivers_to_a_cpu_warns_unless_that_cpu_is_isolated() {
    let mut config = defaults();
    config.machine.irqs = vec![
        line(26, "ttyS0", "0-3", "2", [0, 0, 14, 0]),
        line(27, "eth0", "0-3", "2", [0, 0, 914, 0]),
    ];
    let warn = judged(&config, "2", "irq-affinity");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "2 lines on CPU 2")
    );
    // worst first: the one with more interrupts there
    assert!(warn.cause.unwrap().starts_with("IRQ 27 eth0"));
    let mut isolated = isolated();
    isolated.machine.irqs = config.machine.irqs.clone();
    let fail = judged(&isolated, "2-3", "irq-affinity");
    assert_eq!(fail.status, Status::Fail);
    assert!(
        fail.cause
            .unwrap()
            .contains("delivered to isolated 2 (allowed 0-3)")
    );
    // lines kept to the housekeeping CPUs pass
    for line in &mut isolated.machine.irqs {
        line.affinity = Some("0-1".into());
        line.effective_affinity = Some("0".into());
    }
    let pass = judged(&isolated, "2-3", "irq-affinity");
    assert_eq!(
        (pass.status, pass.found.as_str()),
        (Status::Pass, "no IRQ line on CPUs 2-3")
    );
}

#[test]
fn a_managed_line_warns_with_managed_irq_instead_of_a_remedy() {
    let mut config = isolated();
    let mut queue = line(36, "nvme0q3", "2", "2", [0, 0, 812, 0]);
    queue.movable = IrqMovable::LikelyManaged;
    config.machine.irqs = vec![queue];
    let check = judged(&config, "2-3", "irq-affinity");
    assert_eq!(check.status, Status::Warn);
    assert!(check.remedies.is_empty());
    assert!(check.cause.unwrap().contains("managed by the kernel"));
    assert!(
        check
            .advice
            .unwrap()
            .contains("isolcpus=managed_irq,domain,2-3")
    );
}

#[test]
fn checks_that_move_things_skip_when_every_cpu_is_checked() {
    let mut config = defaults();
    config.machine.irqs = vec![line(42, "virtio3-tx", "1", "1", [0, 5, 0, 0])];
    for id in [
        "irq-affinity",
        "irqaffinity",
        "rps-xps",
        "workqueue-cpumask",
        "irq-threads",
    ] {
        let check = judged(&config, "0-3", id);
        assert_eq!(check.status, Status::Skip, "{check:?}");
    }
}

#[test]
fn irqbalance_fails_unless_stopped_or_banned_from_the_cpus() {
    let mut config = defaults();
    assert_eq!(judged(&config, "2", "irqbalance").found, "not running");
    config.machine.irqbalance_running = true;
    let fail = judged(&config, "2-3", "irqbalance");
    assert_eq!(
        (fail.status, fail.found.as_str()),
        (Status::Fail, "running, CPUs 2-3 not banned")
    );
    assert!(
        fail.advice
            .unwrap()
            .contains("IRQBALANCE_BANNED_CPULIST=2-3")
    );
    config.irqbalance_banned = Some(BannedCpus {
        cpus: cpus("3"),
        from: "/etc/default/irqbalance".into(),
    });
    let partly = judged(&config, "2-3", "irqbalance");
    assert_eq!(partly.status, Status::Fail);
    assert!(
        partly
            .advice
            .unwrap()
            .contains("IRQBALANCE_BANNED_CPULIST=2-3")
    );
    assert!(
        partly
            .cause
            .unwrap()
            .contains("from /etc/default/irqbalance")
    );
    assert_eq!(judged(&config, "3", "irqbalance").status, Status::Pass);
    // unset, it bans the isolated CPUs itself
    let mut isolated = isolated();
    isolated.machine.irqbalance_running = true;
    assert_eq!(judged(&isolated, "2-3", "irqbalance").status, Status::Pass);
}

fn queue(device: &str, number: u32, mask: &str) -> RpsQueue {
    RpsQueue {
        netns: None,
        device: device.into(),
        queue: number,
        mask: mask.into(),
        cpus: irqlens_model::tune::parse_cpu_mask(mask).unwrap(),
    }
}

#[test]
fn steering_masks_on_the_cpus_warn_or_fail_with_their_ids() {
    let mut config = defaults();
    config.machine.rps = vec![queue("eth0", 0, "4"), queue("eth0", 1, "1")];
    config.machine.xps = vec![queue("eth0", 1, "c")];
    let warn = judged(&config, "2", "rps-xps");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "2 queues steer to CPU 2")
    );
    assert_eq!(warn.remedies, ["rps-eth0-rx0", "xps-eth0-tx1"]);
    assert_eq!(
        warn.cause.unwrap(),
        "RPS eth0 rx-0 mask 4; XPS eth0 tx-1 mask c"
    );
    let mut isolated = isolated();
    isolated.machine.rps = config.machine.rps.clone();
    assert_eq!(judged(&isolated, "2-3", "rps-xps").status, Status::Fail);
    config.machine.xps.clear();
    config.machine.rps.clear();
    assert_eq!(judged(&config, "2", "rps-xps").status, Status::Pass);
}

#[test]
fn the_workqueue_cpumask_on_the_cpus_warns_or_fails() {
    let config = defaults();
    let warn = judged(&config, "2", "workqueue-cpumask");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "f (CPUs 0-3)")
    );
    assert_eq!(warn.remedies, [WORKQUEUE_ID]);
    assert_eq!(
        judged(&isolated(), "2-3", "workqueue-cpumask").status,
        Status::Fail
    );
    let mut kept = isolated();
    kept.machine.workqueue_cpumask = Some("3".into());
    kept.machine.workqueue_cpus = Some(cpus("0-1"));
    assert_eq!(
        judged(&kept, "2-3", "workqueue-cpumask").status,
        Status::Pass
    );
    // a cpumask of the checked CPUs only leaves the remedy nowhere to put them
    kept.machine.workqueue_cpus = Some(cpus("2"));
    let stuck = judged(&kept, "2", "workqueue-cpumask");
    assert!(stuck.remedies.is_empty() && stuck.advice.is_some());
    kept.machine.workqueue_cpus = None;
    assert_eq!(judged(&kept, "2", "workqueue-cpumask").status, Status::Skip);
}

#[test]
fn rt_throttling_below_the_kernel_default_fails() {
    let mut config = defaults();
    let default = judged(&config, "2", "rt-throttling");
    assert_eq!(
        (default.status, default.found.as_str()),
        (Status::Warn, "950000 of 1000000 µs")
    );
    assert_eq!(
        default.cause.unwrap(),
        "real-time tasks are stopped for 50 ms of every 1000 ms"
    );
    let set = |config: &mut Configuration, value: &str| {
        config
            .machine
            .sysctls
            .insert("kernel.sched_rt_runtime_us".into(), value.into());
    };
    set(&mut config, "500000");
    let fail = judged(&config, "2", "rt-throttling");
    assert_eq!(fail.status, Status::Fail);
    assert_eq!(fail.remedies, ["sysctl-kernel.sched_rt_runtime_us"]);
    set(&mut config, "949999");
    assert_eq!(judged(&config, "2", "rt-throttling").status, Status::Fail);
    set(&mut config, "-1");
    assert_eq!(judged(&config, "2", "rt-throttling").status, Status::Pass);
    // a runtime as long as the period never throttles
    set(&mut config, "1000000");
    assert_eq!(judged(&config, "2", "rt-throttling").status, Status::Pass);
    set(&mut config, "-1");
    // the root RT group's runtime throttles its tasks when it is the lower
    let path = "/sys/fs/cgroup/cpu/cpu.rt_runtime_us".to_string();
    config.rt_group_runtime = Some((path, 500000));
    let group = judged(&config, "2", "rt-throttling");
    assert_eq!(
        (group.status, group.found.as_str()),
        (Status::Fail, "500000 of 1000000 µs")
    );
    assert!(
        group
            .cause
            .unwrap()
            .ends_with("(the root RT group's /sys/fs/cgroup/cpu/cpu.rt_runtime_us)")
    );
    // off: the sysctl is -1 already, the group follows
    assert_eq!(group.remedies, ["sysctl-kernel.sched_rt_runtime_us"]);
    let group_off = Change {
        knob: Knob::RtGroupRuntime {
            cgroup: "/sys/fs/cgroup/cpu".into(),
        },
        from: "500000".into(),
        to: "-1".into(),
    };
    let off = |config: &Configuration| {
        remedy_changes(config, &cpus("2"))
            .into_iter()
            .find(|(id, _)| id == "sysctl-kernel.sched_rt_runtime_us")
            .unwrap()
            .1
    };
    assert_eq!(off(&config), std::slice::from_ref(&group_off));
    // the sysctl first: the kernel refuses a group more than the sysctl gives
    set(&mut config, "500000");
    let sysctl_off = Change {
        knob: Knob::Sysctl {
            name: "kernel.sched_rt_runtime_us".into(),
        },
        from: "500000".into(),
        to: "-1".into(),
    };
    assert_eq!(off(&config), [sysctl_off, group_off]);
    set(&mut config, "400000");
    assert_eq!(
        judged(&config, "2", "rt-throttling").found,
        "400000 of 1000000 µs"
    );
    config.rt_group_runtime = None;
    config.machine.sysctls.clear();
    assert_eq!(judged(&config, "2", "rt-throttling").status, Status::Skip);
}

#[test]
fn sysctl_switches_warn_when_on() {
    let mut config = defaults();
    let timer = judged(&config, "2", "timer-migration");
    assert_eq!(timer.status, Status::Warn);
    assert_eq!(timer.remedies, ["sysctl-kernel.timer_migration"]);
    assert_eq!(judged(&config, "2", "nmi-watchdog").status, Status::Pass);
    let sysctls = &mut config.machine.sysctls;
    sysctls.insert("kernel.timer_migration".into(), "0".into());
    sysctls.insert("kernel.nmi_watchdog".into(), "1".into());
    assert_eq!(judged(&config, "2", "timer-migration").status, Status::Pass);
    let nmi = judged(&config, "2", "nmi-watchdog");
    assert_eq!(
        (nmi.status, nmi.remedies.clone()),
        (Status::Warn, vec!["sysctl-kernel.nmi_watchdog".to_string()])
    );
    config.machine.sysctls.clear();
    assert_eq!(judged(&config, "2", "timer-migration").status, Status::Skip);
    assert_eq!(judged(&config, "2", "nmi-watchdog").status, Status::Skip);
}

#[test]
fn the_softlockup_watchdog_warns_on_the_cpus_of_its_cpumask() {
    let mut config = defaults();
    let warn = judged(&config, "2-3", "softlockup-watchdog");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "on CPUs 2-3")
    );
    assert_eq!(warn.remedies, ["sysctl-kernel.watchdog_cpumask"]);
    assert!(warn.advice.unwrap().contains("kernel.watchdog_cpumask=0-1"));
    let sysctls = &mut config.machine.sysctls;
    sysctls.insert("kernel.watchdog_cpumask".into(), "0-1".into());
    assert_eq!(
        judged(&config, "2-3", "softlockup-watchdog").status,
        Status::Pass
    );
    config
        .machine
        .sysctls
        .insert("kernel.watchdog_cpumask".into(), "0-3".into());
    config
        .machine
        .sysctls
        .insert("kernel.soft_watchdog".into(), "0".into());
    assert_eq!(judged(&config, "2-3", "softlockup-watchdog").found, "off");
}

#[test]
fn deep_c_states_warn_unless_a_latency_request_rules_them_out() {
    let mut config = defaults();
    assert_eq!(judged(&config, "2", "c-states").status, Status::Skip);
    config.machine.idle_states = vec![
        idle(2, 0, "POLL", 0),
        idle(2, 1, "C1", 2),
        idle(2, 2, "C6", 133),
    ];
    let warn = judged(&config, "2", "c-states");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "C6 133 µs enabled")
    );
    assert_eq!(warn.remedies, [DMA_LATENCY_ID]);
    config.machine.dma_latency_us = Some(10);
    let pass = judged(&config, "2", "c-states");
    assert_eq!(
        (pass.status, pass.found.as_str()),
        (Status::Pass, "deepest C6 133 µs")
    );
    config.machine.dma_latency_us = None;
    config.machine.idle_states[2].disabled = true;
    assert_eq!(judged(&config, "2", "c-states").found, "deepest C1 2 µs");
}

#[test]
fn thp_always_and_slow_clocksources_warn() {
    let mut config = defaults();
    assert_eq!(judged(&config, "2", "thp").status, Status::Pass);
    assert_eq!(judged(&config, "2", "clocksource").status, Status::Pass);
    config.transparent_hugepage = Some("always".into());
    config.clocksource = Some("hpet".into());
    assert_eq!(judged(&config, "2", "thp").status, Status::Warn);
    let clock = judged(&config, "2", "clocksource");
    assert_eq!((clock.status, clock.found.as_str()), (Status::Warn, "hpet"));
    config.transparent_hugepage = None;
    config.clocksource = None;
    assert_eq!(judged(&config, "2", "thp").status, Status::Skip);
    assert_eq!(judged(&config, "2", "clocksource").status, Status::Skip);
}

#[test]
fn ksoftirqd_above_fifo_1_warns_with_its_priority_remedy() {
    let mut config = defaults();
    let pass = judged(&config, "2-3", "ksoftirqd");
    assert_eq!((pass.status, pass.found.as_str()), (Status::Pass, "o:0"));
    config.machine.ksoftirqd[2].policy = "f:1".into();
    assert_eq!(judged(&config, "2-3", "ksoftirqd").status, Status::Pass);
    config.machine.ksoftirqd[3].policy = "f:50".into();
    // another CPU's ksoftirqd is not the checked ones'
    config.machine.ksoftirqd[0].policy = "r:90".into();
    let warn = judged(&config, "2-3", "ksoftirqd");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "f:1, f:50")
    );
    assert_eq!(warn.remedies, ["thread-13-priority"]);
    assert!(warn.cause.unwrap().starts_with("ksoftirqd/3 (13) at f:50"));
    config.machine.ksoftirqd.clear();
    assert_eq!(judged(&config, "2", "ksoftirqd").status, Status::Skip);
}

#[test]
fn bottom_half_threads_on_the_cpus_warn_with_their_remedies() {
    let mut config = defaults();
    config.bottom_half_threads = vec![
        thread(50, "irq/36-virtio1-req.0", "f:50", "2"),
        thread(60, "napi/eth0-8193", "o:0", "0-3"),
        thread(61, "napi/eth0-8194", "o:0", "0-1"),
    ];
    let warn = judged(&config, "2", "irq-threads");
    assert_eq!(
        (warn.status, warn.found.as_str()),
        (Status::Warn, "2 threads may run on CPU 2")
    );
    assert_eq!(warn.remedies, ["irq-36-affinity", "thread-60-affinity"]);
    assert!(
        warn.cause
            .unwrap()
            .contains("irq/36-virtio1-req.0 (50) f:50 on 2")
    );
    config.bottom_half_threads.truncate(0);
    assert_eq!(
        judged(&config, "2", "irq-threads").found,
        "0 threads, none on CPU 2"
    );
}

#[test]
fn a_long_cause_names_the_worst_lines_and_the_remedies_all() {
    let mut config = defaults();
    config.machine.irqs = (0..7)
        .map(|n| line(40 + n, &format!("dev{n}"), "0-3", "2", [0, 0, n as u64, 0]))
        .collect();
    let mut managed = line(60, "nvme0q2", "2", "2", [0, 0, 3, 0]);
    managed.movable = IrqMovable::LikelyManaged;
    config.machine.irqs.push(managed);
    let check = judged(&config, "2", "irq-affinity");
    assert_eq!(check.found, "8 lines on CPU 2");
    let cause = check.cause.unwrap();
    // every line warns: the managed one ranks by its interrupts among them
    assert!(
        cause.starts_with(
            "IRQ 46 dev6 (delivered to 2, chosen among 0-3, 6 interrupts here); IRQ 45"
        ),
        "{cause}"
    );
    assert!(
        cause.contains("IRQ 60 nvme0q2 (managed by the kernel"),
        "{cause}"
    );
    assert!(cause.ends_with("; and 3 more lines"), "{cause}");
    assert_eq!(check.remedies.len(), 7);
}

#[test]
fn every_remedy_a_check_names_has_its_changes() {
    // a machine on which every check that can name a remedy names one
    let mut config = defaults();
    config.machine.irqs = vec![
        line(42, "virtio3-tx", "2", "2", [0, 0, 9, 0]),
        line(26, "ttyS0", "0-3", "2", [0, 0, 5, 0]),
    ];
    config.machine.rps = vec![queue("eth0", 0, "4")];
    config.machine.xps = vec![queue("eth0", 1, "c")];
    config.machine.idle_states = vec![idle(2, 2, "C6", 133)];
    config.machine.ksoftirqd[2].policy = "f:50".into();
    config.machine.sysctls.extend(
        [
            ("kernel.sched_rt_runtime_us", "500000"),
            ("kernel.nmi_watchdog", "1"),
        ]
        .map(|(name, value)| (name.to_string(), value.to_string())),
    );
    config.rt_group_runtime = Some(("/sys/fs/cgroup/cpu/cpu.rt_runtime_us".into(), 500000));
    config.bottom_half_threads = vec![
        thread(50, "irq/36-virtio1-req.0", "f:50", "2"),
        thread(60, "napi/eth0-8193", "o:0", "1-3"),
    ];
    let checked = cpus("2");
    let changes = remedy_changes(&config, &checked);
    let mut named = Vec::new();
    for profile in Profile::ALL {
        for check in configuration(&config, &checked, profile) {
            for id in check.remedies {
                let (_, of_id) = changes
                    .iter()
                    .find(|(known, _)| *known == id)
                    .unwrap_or_else(|| panic!("{}: remedy {id} has no change", check.id));
                assert!(!of_id.is_empty(), "{id}: no change to make");
                named.push(id);
            }
        }
    }
    named.sort();
    named.dedup();
    let mut ids: Vec<&str> = changes.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, named, "every id with changes is named by a check");
    assert_eq!(
        ids,
        [
            "dma-latency",
            "irq-26-affinity",
            "irq-36-affinity",
            "irq-42-affinity",
            "rps-eth0-rx0",
            "sysctl-kernel.nmi_watchdog",
            "sysctl-kernel.sched_rt_runtime_us",
            "sysctl-kernel.timer_migration",
            "sysctl-kernel.watchdog_cpumask",
            "thread-12-priority",
            "thread-60-affinity",
            "workqueue-cpumask",
            "xps-eth0-tx1",
        ]
    );
    // each takes the checked CPU out, or turns the setting off
    let change = |id: &str| changes.iter().find(|(known, _)| known == id).unwrap().1[0].clone();
    let to = |id: &str| change(id).to;
    assert_eq!(to("irq-42-affinity"), "0-1,3");
    assert_eq!(change("irq-42-affinity").from, "2");
    assert_eq!(to("irq-36-affinity"), "0-1,3");
    assert_eq!(to("rps-eth0-rx0"), "0");
    assert_eq!(to("xps-eth0-tx1"), "8");
    assert_eq!(to("workqueue-cpumask"), "b");
    assert_eq!(to("sysctl-kernel.timer_migration"), "0");
    assert_eq!(to("sysctl-kernel.nmi_watchdog"), "0");
    assert_eq!(to("sysctl-kernel.watchdog_cpumask"), "0-1,3");
    assert_eq!(to("thread-12-priority"), "f:1");
    assert_eq!(to("thread-60-affinity"), "1,3");
    assert_eq!(to("dma-latency"), "0");
    // without CPUs to check there is nothing to remedy
    assert!(remedy_changes(&config, &CpuList::default()).is_empty());
}
