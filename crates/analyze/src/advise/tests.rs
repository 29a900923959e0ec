use super::*;
use irqlens_model::system::Capability;
use irqlens_model::tune::{IdleState, IrqState, NetDevice, RpsQueue, ThreadPolicy};

fn cpus(list: &str) -> CpuList {
    list.parse().unwrap()
}

fn cause(cpu: u32, class: CauseClass, source: CauseSource, time_ns: u64) -> CpuCause {
    CpuCause {
        cpu,
        capability: Capability::Noise,
        label: format!("{source:?}"),
        class,
        source,
        time_ns,
        share_percent: 10.0,
    }
}

fn irq_cause(cpu: u32, irq: u32, time_ns: u64) -> CpuCause {
    let source = CauseSource::IrqLine {
        irq,
        name: "virtio0".into(),
    };
    cause(cpu, CauseClass::Irq, source, time_ns)
}

fn softirq_cause(cpu: u32, name: &str) -> CpuCause {
    let source = CauseSource::Softirq { name: name.into() };
    cause(cpu, CauseClass::Softirq, source, 1000)
}

fn thread_cause(cpu: u32, tid: Option<u32>, comm: &str) -> CpuCause {
    let source = CauseSource::Thread {
        tid,
        comm: comm.into(),
    };
    cause(cpu, CauseClass::Thread, source, 1000)
}

fn line(irq: u32, name: &str, movable: IrqMovable) -> IrqState {
    IrqState {
        key: irq.to_string(),
        irq: Some(irq),
        name: name.into(),
        affinity: Some("0-3".into()),
        effective_affinity: Some("1".into()),
        counts: vec![(0, 0), (1, 50), (2, 0), (3, 0)],
        movable,
    }
}

fn machine() -> MachineState {
    MachineState {
        online_cpus: cpus("0-3"),
        irqs: vec![
            line(24, "PCI-MSI virtio0-input.0", IrqMovable::Yes),
            line(30, "PCI-MSI nvme0q1", IrqMovable::LikelyManaged),
            line(31, "IO-APIC acpi", IrqMovable::NoAffinityFile),
        ],
        rps: vec![
            RpsQueue {
                netns: None,
                device: "eth0".into(),
                queue: 0,
                mask: "6".into(),
                cpus: cpus("1-2"),
            },
            RpsQueue {
                netns: Some("test".into()),
                device: "veth1".into(),
                queue: 0,
                mask: "1".into(),
                cpus: cpus("0"),
            },
        ],
        xps: vec![RpsQueue {
            netns: Some("test".into()),
            device: "veth1".into(),
            queue: 1,
            mask: "3".into(),
            cpus: cpus("0-1"),
        }],
        net_devices: vec![
            NetDevice {
                netns: None,
                device: "eth0".into(),
                threaded: Some("0".into()),
            },
            NetDevice {
                netns: None,
                device: "lo".into(),
                threaded: Some("0".into()),
            },
        ],
        sysctls: [
            ("net.core.netdev_budget", "300"),
            ("net.core.netdev_budget_usecs", "2000"),
            ("kernel.sched_rt_runtime_us", "950000"),
            ("kernel.sched_rt_period_us", "1000000"),
            ("kernel.timer_migration", "1"),
            ("kernel.nmi_watchdog", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect(),
        workqueue_cpumask: Some("f".into()),
        workqueue_cpus: Some(cpus("0-3")),
        dma_latency_us: Some(NO_DMA_LATENCY_REQUEST),
        irqbalance_running: true,
        cmdline: "ro quiet".into(),
        ksoftirqd: vec![thread_policy(15, "ksoftirqd/1", "o:0", "1")],
        threads: vec![
            thread_policy(1234, "spin", "o:0", "1"),
            thread_policy(700, "napi/eth0-8193", "f:50", "0-3"),
            thread_policy(701, "irq/24-virtio0", "f:50", "0-3"),
        ],
        idle_states: Vec::new(),
    }
}

fn thread_policy(tid: u32, comm: &str, policy: &str, affinity: &str) -> ThreadPolicy {
    ThreadPolicy {
        tid,
        comm: comm.into(),
        policy: policy.into(),
        affinity: Some(affinity.into()),
    }
}

/// A wakeup cause naming a thread by its name only, as wakeup recordings do: `label` is
/// the wakeup table's (`interposed thread X`, `thread X ran first`).
fn wakeup_thread_cause(cpu: u32, comm: &str, label: &str) -> CpuCause {
    let mut cause = thread_cause(cpu, None, comm);
    cause.capability = Capability::Wakeup;
    cause.label = label.into();
    cause
}

/// The ids and changes (`from -> to`) of the advice, in order.
fn changes(advice: &[Advice]) -> Vec<(String, Option<String>)> {
    advice
        .iter()
        .map(|a| {
            let change = a.change.as_ref().map(|c| format!("{} -> {}", c.from, c.to));
            (a.id.clone(), change)
        })
        .collect()
}

fn pairs(expected: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    expected
        .iter()
        .map(|(id, change)| (id.to_string(), change.map(str::to_string)))
        .collect()
}

fn one(cause: CpuCause, machine: &MachineState) -> Advice {
    let (advice, _) = advise(&[cause], machine);
    assert_eq!(advice.len(), 1, "{advice:#?}");
    advice.into_iter().next().unwrap()
}

#[test]
fn an_irq_line_moves_to_the_housekeeping_cpus() {
    let advice = one(irq_cause(1, 24, 5000), &machine());
    assert_eq!(advice.id, "irq-24-affinity");
    assert_eq!(
        advice.change,
        Some(Change {
            knob: Knob::IrqAffinity { irq: 24 },
            from: "0-3".into(),
            to: "0,2-3".into()
        })
    );
    assert_eq!(
        advice.command.as_deref(),
        Some("echo 0,2-3 > /proc/irq/24/smp_affinity_list")
    );
    assert_eq!(advice.blocker, None);
}

#[test]
fn without_housekeeping_cpus_nothing_moves() {
    let mut machine = machine();
    machine.online_cpus = cpus("1");
    let advice = one(irq_cause(1, 24, 5000), &machine);
    assert!(matches!(advice.blocker, Some(Blocker::Other { .. })));
    assert_eq!(advice.change, None);
}

#[test]
fn a_managed_queue_is_blocked_with_the_boot_line() {
    let advice = one(irq_cause(1, 30, 5000), &machine());
    assert_eq!(
        advice.blocker,
        Some(Blocker::BootParameter {
            line: "isolcpus=managed_irq,1".into()
        })
    );
    assert!(advice.remedy.contains("multi-queue"), "{}", advice.remedy);
    let advice = one(irq_cause(1, 31, 5000), &machine());
    assert!(matches!(advice.blocker, Some(Blocker::Other { .. })));
    let advice = one(irq_cause(1, 99, 5000), &machine());
    assert!(matches!(advice.blocker, Some(Blocker::Other { ref why }) if why.contains("99")));
}

#[test]
fn a_per_cpu_vector_cannot_move_and_the_tick_points_at_nohz_full() {
    let source = CauseSource::Vector {
        name: "local_timer".into(),
        vector: 236,
    };
    let advice = one(cause(1, CauseClass::Irq, source, 100), &machine());
    assert_eq!(advice.id, "vector-local_timer");
    assert_eq!(advice.blocker, Some(Blocker::PerCpuVector));
    assert!(advice.remedy.contains("nohz_full=1"), "{}", advice.remedy);
}

#[test]
fn net_rx_points_at_rps_threaded_napi_and_the_budget() {
    let (advice, _) = advise(&[softirq_cause(1, "NET_RX")], &machine());
    let ids: Vec<_> = advice.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "napi-eth0-threaded",
            "rps-eth0-rx0",
            "sysctl-net.core.netdev_budget",
            "sysctl-net.core.netdev_budget_usecs"
        ]
    );
    let rps = &advice[1];
    assert_eq!(rps.change.as_ref().unwrap().from, "6");
    assert_eq!(rps.change.as_ref().unwrap().to, "4");
    assert_eq!(
        rps.command.as_deref(),
        Some("echo 4 > /sys/class/net/eth0/queues/rx-0/rps_cpus")
    );
    assert_eq!(
        advice[0].command.as_deref(),
        Some("echo 1 > /sys/class/net/eth0/threaded")
    );
    assert_eq!(advice[2].change.as_ref().unwrap().to, "150");
    assert_eq!(advice[3].change.as_ref().unwrap().to, "1000");
    // a queue in another netns: named by it, the command enters it
    let (advice, _) = advise(&[softirq_cause(0, "NET_RX")], &machine());
    let rps = advice
        .iter()
        .find(|a| a.id == "rps-test-veth1-rx0")
        .unwrap();
    assert_eq!(
        rps.command.as_deref(),
        Some("ip netns exec test sh -c 'echo 0 > /sys/class/net/veth1/queues/rx-0/rps_cpus'")
    );
}

#[test]
fn timer_rcu_and_sched_softirqs_need_boot_parameters() {
    for (name, id, line) in [
        ("TIMER", "boot-nohz_full", "nohz_full=1 isolcpus=1"),
        ("RCU", "boot-rcu_nocbs", "rcu_nocbs=1 nohz_full=1"),
        ("SCHED", "boot-isolcpus", "isolcpus=domain,1"),
    ] {
        let advice = one(softirq_cause(1, name), &machine());
        assert_eq!(advice.id, id);
        assert_eq!(
            advice.blocker,
            Some(Blocker::BootParameter { line: line.into() })
        );
    }
    let advice = one(softirq_cause(1, "BLOCK"), &machine());
    assert!(matches!(advice.blocker, Some(Blocker::Other { .. })));
}

#[test]
fn a_foreign_thread_moves_off_and_its_pin_is_said() {
    let advice = one(thread_cause(1, Some(1234), "spin"), &machine());
    assert_eq!(advice.id, "thread-1234-affinity");
    assert_eq!(
        advice.change,
        Some(Change {
            knob: Knob::ThreadAffinity {
                tid: 1234,
                comm: "spin".into()
            },
            from: "1".into(),
            to: "0,2-3".into()
        })
    );
    assert_eq!(advice.command.as_deref(), Some("taskset -pc 0,2-3 1234"));
    assert!(advice.remedy.contains("pinned"), "{}", advice.remedy);
    // a thread known by name only, gone, or its tid reused
    for (tid, comm) in [(None, "ghost"), (Some(999), "spin"), (Some(1234), "other")] {
        let advice = one(thread_cause(1, tid, comm), &machine());
        assert!(
            matches!(advice.blocker, Some(Blocker::Other { .. })),
            "{advice:#?}"
        );
        assert_eq!(advice.change, None);
    }
}

#[test]
fn per_cpu_kthreads_are_pinned_and_irq_threads_follow_their_line() {
    for comm in [
        "ksoftirqd/1",
        "kworker/1:2",
        "migration/1",
        "cpuhp/1",
        "rcuc/1",
    ] {
        let advice = one(thread_cause(1, Some(20), comm), &machine());
        assert_eq!(advice.blocker, Some(Blocker::PinnedThread), "{comm}");
    }
    let advice = one(thread_cause(1, Some(20), "irq/24-virtio0"), &machine());
    assert_eq!(advice.id, "irq-24-affinity");
    let advice = one(thread_cause(1, Some(20), "kworker/u8:1"), &machine());
    assert_eq!(advice.id, "workqueue-cpumask");
    assert_eq!(
        advice
            .change
            .as_ref()
            .map(|c| (c.from.as_str(), c.to.as_str())),
        Some(("f", "d"))
    );
}

#[test]
fn hardware_noise_is_the_hypervisors_with_its_share() {
    let mut hw = cause(2, CauseClass::Hw, CauseSource::None, 700);
    hw.share_percent = 42.5;
    let advice = one(hw, &machine());
    assert_eq!(advice.blocker, Some(Blocker::Hypervisor));
    assert!(advice.remedy.contains("42.5%"), "{}", advice.remedy);
}

#[test]
fn idle_exits_point_at_dma_latency_and_nmis_at_the_watchdog() {
    let mut deep = machine();
    deep.idle_states = vec![idle_state(1, 1, "C1", 2), idle_state(1, 2, "C6", 133)];
    let advice = one(cause(1, CauseClass::Idle, CauseSource::None, 10), &deep);
    assert_eq!(advice.id, "dma-latency");
    assert_eq!(advice.change.as_ref().unwrap().knob, Knob::DmaLatency);
    assert_eq!(advice.change.as_ref().unwrap().to, "0");
    let advice = one(cause(1, CauseClass::Nmi, CauseSource::None, 10), &machine());
    assert_eq!(advice.id, "sysctl-kernel.nmi_watchdog");
    let mut quiet = machine();
    quiet
        .sysctls
        .insert("kernel.nmi_watchdog".into(), "0".into());
    let advice = one(cause(1, CauseClass::Nmi, CauseSource::None, 10), &quiet);
    assert!(matches!(advice.blocker, Some(Blocker::Other { .. })));
}

#[test]
fn advice_is_ranked_per_cpu_by_time_and_deduplicated() {
    let causes = [
        irq_cause(2, 24, 100),
        thread_cause(1, Some(1234), "spin"),
        irq_cause(1, 24, 5000),
        irq_cause(1, 24, 10),
        cause(1, CauseClass::Other, CauseSource::None, 9999),
        irq_cause(1, 31, 0),
    ];
    let (advice, _) = advise(&causes, &machine());
    let order: Vec<_> = advice
        .iter()
        .map(|a| (a.cpu, a.id.as_str(), a.time_ns))
        .collect();
    assert_eq!(
        order,
        [
            (1, "irq-24-affinity", 5000),
            (1, "thread-1234-affinity", 1000),
            (2, "irq-24-affinity", 100),
        ]
    );
    // both CPUs measured: neither is housekeeping
    assert_eq!(advice[0].change.as_ref().unwrap().to, "0,3");
}

#[test]
fn conflicts_name_what_works_against_the_remedies() {
    let (_, conflicts) = advise(&[irq_cause(1, 24, 5000)], &machine());
    let what: Vec<_> = conflicts.iter().map(|c| c.what.as_str()).collect();
    assert_eq!(what.len(), 6, "{what:#?}");
    assert!(what[0].starts_with("irqbalance"));
    assert!(conflicts[0].remedy.contains("IRQBALANCE_BANNED_CPULIST=1"));
    assert!(what[1].contains("eth0 rx-0"), "{}", what[1]);
    assert_eq!(conflicts[1].cpus, Some(cpus("1")));
    assert!(
        what[2].contains("XPS on veth1 tx-1 (netns test)"),
        "{}",
        what[2]
    );
    assert_eq!(conflicts[2].cpus, Some(cpus("1")));
    assert!(
        conflicts[2].remedy.ends_with(": 1"),
        "{}",
        conflicts[2].remedy
    );
    assert!(what[3].contains("workqueue"));
    assert!(what[4].starts_with("RT throttling"));
    assert!(what[5].starts_with("timer_migration"));
    let mut calm = machine();
    calm.irqbalance_running = false;
    calm.rps.clear();
    calm.xps.clear();
    calm.workqueue_cpus = Some(cpus("0"));
    calm.sysctls
        .insert("kernel.sched_rt_runtime_us".into(), "-1".into());
    calm.sysctls
        .insert("kernel.timer_migration".into(), "0".into());
    calm.dma_latency_us = Some(0);
    let (_, conflicts) = advise(&[irq_cause(1, 24, 5000)], &calm);
    assert_eq!(conflicts.len(), 1, "{conflicts:#?}");
    assert!(conflicts[0].what.contains("cpu_dma_latency"));
    assert!(advise(&[], &calm).1.is_empty());
    // the workqueue's every CPU measured: no mask of none is proposed
    let (_, conflicts) = advise(&[irq_cause(0, 24, 5), irq_cause(1, 24, 5)], &calm);
    assert!(conflicts[0].what.contains("workqueue"), "{conflicts:#?}");
    assert!(!conflicts[0].remedy.contains("echo"), "{conflicts:#?}");
}

#[test]
fn net_tx_clears_the_measured_cpus_from_xps_masks() {
    let advice = one(softirq_cause(1, "NET_TX"), &machine());
    assert_eq!(advice.id, "xps-test-veth1-tx1");
    assert_eq!(
        advice.change,
        Some(Change {
            knob: Knob::XpsCpus {
                netns: Some("test".into()),
                device: "veth1".into(),
                queue: 1
            },
            from: "3".into(),
            to: "1".into()
        })
    );
    assert_eq!(
        advice.command.as_deref(),
        Some("ip netns exec test sh -c 'echo 1 > /sys/class/net/veth1/queues/tx-1/xps_cpus'")
    );
    // no mask includes CPU 2: nothing to clear
    let advice = one(softirq_cause(2, "NET_TX"), &machine());
    assert_eq!(advice.id, "softirq-NET_TX");
    assert!(matches!(advice.blocker, Some(Blocker::Other { .. })));
}

#[test]
fn a_real_time_napi_thread_in_the_way_moves_and_drops_to_sched_other() {
    let expected = pairs(&[
        ("thread-700-affinity", Some("0-3 -> 0,2-3")),
        ("thread-700-priority", Some("f:50 -> o:0")),
    ]);
    let (advice, _) = advise(&[thread_cause(1, Some(700), "napi/eth0-8193")], &machine());
    assert_eq!(changes(&advice), expected);
    assert_eq!(
        advice[1].command.as_deref(),
        Some("chrt -o -p 0 700 && renice -n 0 -p 700")
    );
    assert_eq!(
        advice[1].change.as_ref().unwrap().knob,
        Knob::ThreadPriority {
            tid: 700,
            comm: "napi/eth0-8193".into()
        }
    );
    // wakeup names it by its name only: the machine's thread of that name is the one
    let cause = wakeup_thread_cause(1, "napi/eth0-8193", "thread napi/eth0-8193 ran first");
    let (advice, _) = advise(&[cause], &machine());
    assert_eq!(changes(&advice), expected);
}

#[test]
fn a_napi_thread_on_the_wakeup_path_is_raised_above_normal_tasks() {
    let mut machine = machine();
    machine.threads[1].policy = "o:0".into();
    let cause = wakeup_thread_cause(1, "napi/eth0-8193", "interposed thread napi/eth0-8193");
    let (advice, _) = advise(&[cause], &machine);
    assert_eq!(
        changes(&advice),
        pairs(&[
            ("thread-700-affinity", Some("0-3 -> 0,2-3")),
            ("thread-700-priority", Some("o:0 -> f:1")),
        ])
    );
    assert_eq!(advice[1].command.as_deref(), Some("chrt -f -p 1 700"));
    // in the way at SCHED_OTHER: niced
    let (advice, _) = advise(&[thread_cause(1, Some(700), "napi/eth0-8193")], &machine);
    assert_eq!(advice[1].change.as_ref().unwrap().to, "o:19");
    // already at the lowest nice: left alone
    machine.threads[1].policy = "o:19".into();
    let (advice, _) = advise(&[thread_cause(1, Some(700), "napi/eth0-8193")], &machine);
    assert_eq!(changes(&advice).len(), 1, "{advice:#?}");
}

#[test]
fn an_irq_thread_follows_its_line_and_its_policy_is_advised() {
    let cause = wakeup_thread_cause(1, "irq/24-virtio0", "thread irq/24-virtio0 ran first");
    let (advice, _) = advise(&[cause], &machine());
    assert_eq!(
        changes(&advice),
        pairs(&[
            ("irq-24-affinity", Some("0-3 -> 0,2-3")),
            ("thread-701-priority", Some("f:50 -> o:0")),
        ])
    );
    // on the wakeup's path a real-time IRQ thread already runs first: only its line moves
    let cause = wakeup_thread_cause(1, "irq/24-virtio0", "interposed thread irq/24-virtio0");
    let (advice, _) = advise(&[cause], &machine());
    assert_eq!(
        changes(&advice),
        pairs(&[("irq-24-affinity", Some("0-3 -> 0,2-3"))])
    );
}

#[test]
fn ksoftirqd_stays_on_its_cpu_but_its_priority_is_advised() {
    // the wakeup waited for softirq work deferred to ksoftirqd/1
    let cause = wakeup_thread_cause(1, "ksoftirqd/1", "interposed thread ksoftirqd/1");
    let (advice, _) = advise(&[cause], &machine());
    assert_eq!(
        changes(&advice),
        pairs(&[
            ("kthread-ksoftirqd-1", None),
            ("thread-15-priority", Some("o:0 -> f:1")),
        ])
    );
    assert_eq!(advice[0].blocker, Some(Blocker::PinnedThread));
    assert_eq!(
        advice[1].change.as_ref().unwrap().knob,
        Knob::ThreadPriority {
            tid: 15,
            comm: "ksoftirqd/1".into()
        }
    );
    // its time was noise on the measured CPU: niced
    let (advice, _) = advise(&[thread_cause(1, Some(15), "ksoftirqd/1")], &machine());
    assert_eq!(
        changes(&advice),
        pairs(&[
            ("kthread-ksoftirqd-1", None),
            ("thread-15-priority", Some("o:0 -> o:19")),
        ])
    );
    // raised to real time by someone: back to SCHED_OTHER
    let mut machine = machine();
    machine.ksoftirqd[0].policy = "f:1".into();
    let (advice, _) = advise(&[thread_cause(1, Some(15), "ksoftirqd/1")], &machine);
    assert_eq!(advice[1].change.as_ref().unwrap().to, "o:0");
    // other per-CPU kthreads get no priority remedy
    machine
        .threads
        .push(thread_policy(16, "rcuc/1", "f:1", "1"));
    let (advice, _) = advise(&[thread_cause(1, Some(16), "rcuc/1")], &machine);
    assert_eq!(changes(&advice), pairs(&[("kthread-rcuc-1", None)]));
}

#[test]
fn a_name_several_threads_share_is_not_guessed() {
    let mut machine = machine();
    machine
        .threads
        .push(thread_policy(1235, "spin", "o:0", "1"));
    let advice = one(
        wakeup_thread_cause(1, "spin", "thread spin ran first"),
        &machine,
    );
    assert_eq!(advice.change, None);
    assert!(
        matches!(advice.blocker, Some(Blocker::Other { ref why }) if why.contains("1234,1235")),
        "{advice:#?}"
    );
}

pub(crate) fn idle_state(cpu: u32, index: u32, name: &str, latency_us: u32) -> IdleState {
    IdleState {
        cpu,
        index,
        name: name.into(),
        latency_us,
        disabled: false,
    }
}

#[test]
fn deep_c_states_are_a_conflict_unless_disabled_or_held_off() {
    let mut machine = machine();
    machine.idle_states = vec![
        idle_state(1, 0, "POLL", 0),
        idle_state(1, 1, "C1", 2),
        idle_state(1, 2, "C6", 133),
        idle_state(2, 2, "C6", 133),
        idle_state(0, 2, "C6", 133),
    ];
    let deep = |machine: &MachineState| {
        let (_, conflicts) = advise(&[irq_cause(1, 24, 5), irq_cause(2, 24, 5)], machine);
        conflicts
            .into_iter()
            .filter(|c| c.what.contains("idle state"))
            .collect::<Vec<_>>()
    };
    let conflicts = deep(&machine);
    assert_eq!(conflicts.len(), 1, "{conflicts:#?}");
    assert!(
        conflicts[0].what.contains("C6 (133 µs"),
        "{}",
        conflicts[0].what
    );
    assert_eq!(conflicts[0].cpus, Some(cpus("1-2")));
    assert!(
        conflicts[0]
            .remedy
            .contains("/sys/devices/system/cpu/cpu2/cpuidle/state2/disable"),
        "{}",
        conflicts[0].remedy
    );
    // a request below the exit latency keeps the CPUs out of it
    machine.dma_latency_us = Some(100);
    assert!(deep(&machine).is_empty());
    machine.dma_latency_us = Some(NO_DMA_LATENCY_REQUEST);
    for state in &mut machine.idle_states {
        state.disabled = state.name == "C6";
    }
    assert!(deep(&machine).is_empty());
}

#[test]
fn idle_exits_name_the_deepest_state_the_cpu_enters() {
    let mut machine = machine();
    let idle = || cause(1, CauseClass::Idle, CauseSource::None, 10);
    machine.idle_states = vec![idle_state(1, 1, "C1", 2)];
    machine.idle_states[0].disabled = true;
    assert!(!one(idle(), &machine).remedy.contains("deepest"));
    machine.idle_states = vec![
        idle_state(1, 1, "C1", 2),
        idle_state(1, 2, "C6", 133),
        idle_state(0, 3, "C10", 500),
    ];
    let remedy = one(idle(), &machine).remedy;
    assert!(
        remedy.contains("the deepest state CPU 1 enters: C6, 133 µs"),
        "{remedy}"
    );
    machine.idle_states[1].disabled = true;
    let remedy = one(idle(), &machine).remedy;
    assert!(remedy.contains("C1, 2 µs"), "{remedy}");
}

#[test]
fn a_kernel_threads_name_cut_by_the_recording_is_its_full_name_in_proc() {
    let mut machine = machine();
    // /proc shows kernel threads' full names; tracepoints keep their first 15 bytes
    machine.threads[1].comm = "napi/veth1234-8193".into();
    let recorded = "napi/veth1234-8";
    let full = Knob::ThreadPriority {
        tid: 700,
        comm: "napi/veth1234-8193".into(),
    };
    for cause in [
        thread_cause(1, Some(700), recorded),
        wakeup_thread_cause(1, recorded, "thread napi/veth1234-8 ran first"),
    ] {
        let (advice, _) = advise(&[cause], &machine);
        assert_eq!(
            changes(&advice),
            pairs(&[
                ("thread-700-affinity", Some("0-3 -> 0,2-3")),
                ("thread-700-priority", Some("f:50 -> o:0")),
            ])
        );
        // tune checks the name /proc shows before it writes
        assert_eq!(advice[1].change.as_ref().unwrap().knob, full);
    }
}

#[test]
fn a_remedy_changes_something() {
    let mut machine = machine();
    // the thread runs on the housekeeping CPUs already: moving it there is no remedy
    machine.threads[0].affinity = Some("0,3".into());
    let (advice, _) = advise(
        &[
            thread_cause(1, Some(1234), "spin"),
            thread_cause(2, Some(1234), "spin"),
        ],
        &machine,
    );
    let changes: Vec<&Change> = advice.iter().filter_map(|a| a.change.as_ref()).collect();
    assert!(changes.iter().all(|c| c.from != c.to), "{advice:#?}");
    assert!(
        !advice.iter().any(|a| a.id == "thread-1234-affinity"),
        "{advice:#?}"
    );
    machine.threads[0].affinity = Some("1".into());
    let (advice, _) = advise(&[thread_cause(1, Some(1234), "spin")], &machine);
    assert!(advice.iter().any(|a| a.id == "thread-1234-affinity"));
}

#[test]
fn irqlens_never_advises_moving_its_own_threads() {
    let mut machine = machine();
    for (tid, comm) in [(900, "irqlens/1"), (901, "il-wakeup/1"), (902, "irqlens")] {
        machine.threads.push(thread_policy(tid, comm, "f:95", "1"));
        let advice = advise(&[thread_cause(1, Some(tid), comm)], &machine).0;
        assert!(advice.is_empty(), "{comm}: {advice:#?}");
        let advice = advise(&[thread_cause(1, None, comm)], &machine).0;
        assert!(advice.is_empty(), "{comm} by name: {advice:#?}");
    }
    // a thread merely named like it is someone else's (the tests' spinners among them)
    for (tid, comm) in [(903, "irqlensd"), (904, "il-tune")] {
        machine.threads.push(thread_policy(tid, comm, "o:0", "0-3"));
        assert!(
            !advise(&[thread_cause(1, Some(tid), comm)], &machine)
                .0
                .is_empty()
        );
    }
}

#[test]
fn an_idle_exit_the_runs_own_latency_target_or_the_hypervisor_took_is_no_dma_latency_remedy() {
    let exit = |held| {
        let source = CauseSource::IdleExit {
            held_dma_latency_us: held,
        };
        cause(1, CauseClass::Idle, source, 10)
    };
    // no cpuidle driver: nothing for a latency target to rule out
    let advice = one(exit(None), &machine());
    assert_eq!(advice.change, None, "{advice:#?}");
    assert_eq!(advice.blocker, Some(Blocker::Hypervisor));
    let mut deep = machine();
    deep.idle_states = vec![idle_state(1, 1, "C1", 2), idle_state(1, 2, "C6", 133)];
    // the run held 0 (wakeup's timer mode does): holding 0 again changes nothing
    let advice = one(exit(Some(0)), &deep);
    assert_eq!(advice.change, None, "{advice:#?}");
    assert!(matches!(advice.blocker, Some(Blocker::Other { ref why }) if why.contains("0 µs")));
    // a target of 10 µs still let the CPU into C1 (2 µs): 0 keeps it out
    let advice = one(exit(Some(10)), &deep);
    assert_eq!(advice.change.as_ref().map(|c| c.to.as_str()), Some("0"));
    let advice = one(exit(None), &deep);
    assert_eq!(
        advice.change.as_ref().map(|c| c.knob.clone()),
        Some(Knob::DmaLatency)
    );
}
