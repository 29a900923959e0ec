//! The engine against analytic results, the papers' set-ups, and itself.

use irqlens_model::sim::{
    Arrival, ConsumerResult, Costs, DesignResult, Dist, Limits, SimConfig, Source, Task, TaskKind,
};

use super::simulate;

fn us(value: f64) -> Dist {
    Dist::constant(value)
}

/// Every kernel path free, unless a test says otherwise.
fn free_costs() -> Costs {
    Costs {
        origin: "test".into(),
        hardirq: us(0.0),
        softirq_per_packet: us(0.0),
        wakeup: us(0.0),
        context_switch: us(0.0),
        return_to_user: us(0.0),
        idle_exit: us(0.0),
        dis_deferrable: 0.5,
    }
}

fn source(name: &str, arrival: Arrival, napi: bool) -> Source {
    Source {
        name: name.into(),
        cpu: 0,
        arrival,
        hardirq: None,
        napi,
        softirq_per_packet: None,
        softirq_per_packet_saturated: None,
        softirq_per_packet_dropped: None,
        timer_poll: None,
        ring: 1024,
        thread_nice: None,
    }
}

fn task(name: &str, priority: &str, kind: TaskKind) -> Task {
    Task {
        name: name.into(),
        cpu: 0,
        priority: priority.parse().unwrap(),
        kind,
    }
}

fn periodic(period_us: f64, phase_us: f64, cost_us: f64) -> TaskKind {
    TaskKind::Periodic {
        period_us,
        phase_us,
        cost: us(cost_us),
    }
}

fn consumer(source: &str, cost_us: f64, socket_queue: u32) -> TaskKind {
    TaskKind::Consumer {
        source: source.into(),
        cost_per_packet: us(cost_us),
        socket_queue,
        replies: false,
    }
}

fn config(
    duration_s: f64,
    sources: Vec<Source>,
    tasks: Vec<Task>,
    costs: Costs,
    designs: &[&str],
) -> SimConfig {
    SimConfig {
        cpus: 1,
        duration_s,
        seed: 1,
        sources,
        tasks,
        costs,
        limits: Limits::default(),
        designs: designs.iter().map(|d| d.parse().unwrap()).collect(),
    }
}

fn run(config: &SimConfig) -> Vec<DesignResult> {
    simulate(config).unwrap().designs
}

fn the_consumer(result: &DesignResult) -> &ConsumerResult {
    &result.consumers[0]
}

/// Fixed-priority response-time analysis: the smallest R with
/// R = C + Σ ceil(R / T_j) C_j over the higher-priority (period, cost) pairs.
fn response_time(cost: f64, higher: &[(f64, f64)]) -> f64 {
    let mut response = cost;
    loop {
        let next = cost
            + higher
                .iter()
                .map(|(period, c)| (response / period).ceil() * c)
                .sum::<f64>();
        if next == response {
            return response;
        }
        response = next;
    }
}

#[test]
fn a_periodic_interrupt_and_fifo_tasks_meet_response_time_analysis() {
    let (irq_period, irq_cost) = (1000.0, 100.0);
    let (high_period, high_cost) = (2000.0, 300.0);
    let (low_period, low_cost) = (5000.0, 1000.0);
    let mut tick = source(
        "tick",
        Arrival::Periodic {
            period_us: irq_period,
            phase_us: 0.0,
        },
        false,
    );
    tick.hardirq = Some(us(irq_cost));
    let config = config(
        0.1,
        vec![tick],
        vec![
            task("high", "f:90", periodic(high_period, 0.0, high_cost)),
            task("low", "f:50", periodic(low_period, 0.0, low_cost)),
            task("background", "o:0", TaskKind::Hog),
        ],
        free_costs(),
        &["stock"],
    );
    let result = &run(&config)[0];
    let expected_high = response_time(high_cost, &[(irq_period, irq_cost)]);
    let expected_low = response_time(
        low_cost,
        &[(irq_period, irq_cost), (high_period, high_cost)],
    );
    assert_eq!((expected_high, expected_low), (400.0, 1500.0));
    // All released together at 0: the critical instant, so the worst case is reached.
    let high = &result.periodic[0].response;
    let low = &result.periodic[1].response;
    assert_eq!(high.count, 50);
    assert_eq!(low.count, 20);
    assert_eq!(high.max_us, expected_high);
    assert_eq!(low.max_us, expected_low);
}

#[test]
fn poisson_packets_with_deterministic_service_match_m_d_1() {
    let (rate_per_s, service_us) = (60_000.0, 10.0);
    let config = config(
        5.0,
        vec![source("udp", Arrival::Poisson { rate_per_s }, false)],
        vec![task(
            "server",
            "f:50",
            consumer("udp", service_us, 1_000_000),
        )],
        free_costs(),
        &["stock"],
    );
    let result = &run(&config)[0];
    let lambda = rate_per_s / 1e6;
    let rho = lambda * service_us;
    // Pollaczek-Khinchine for deterministic service: Wq = ρ D / (2 (1 - ρ)).
    let expected = rho * service_us / (2.0 * (1.0 - rho));
    let server = the_consumer(result);
    let measured = server.latency.mean_us;
    let error = (measured - expected).abs() / expected;
    println!(
        "M/D/1 rho {rho}: Wq expected {expected} µs, simulated {measured} µs, error {error:.4}"
    );
    assert!(server.delivered > 290_000, "{}", server.delivered);
    assert!(error < 0.03, "M/D/1 waiting time off by {error}");
}

/// 001's set-up: a high-priority server woken by its NIC through an irq thread, a
/// low-priority process running when packets come.
fn migration_setup() -> (SimConfig, Costs) {
    let costs = Costs {
        origin: "test".into(),
        hardirq: us(5.0),
        softirq_per_packet: us(10.0),
        wakeup: us(8.0),
        context_switch: us(4.0),
        return_to_user: us(2.0),
        idle_exit: us(0.0),
        dis_deferrable: 0.5,
    };
    let nic = source(
        "nic",
        Arrival::Periodic {
            period_us: 1000.0,
            phase_us: 500.0,
        },
        true,
    );
    let config = config(
        0.2,
        vec![nic],
        vec![
            task("server", "f:60", consumer("nic", 20.0, 256)),
            task("prev", "o:0", TaskKind::Hog),
        ],
        costs.clone(),
        &[
            "threaded-fifo",
            "threaded-fifo+ihm",
            "threaded-fifo+ihm-dis",
        ],
    );
    (config, costs)
}

#[test]
fn ihm_saves_one_switch_per_wakeup_and_dis_shortens_the_path_further() {
    let (config, costs) = migration_setup();
    let results = run(&config);
    let [thread, ihm, dis] = [&results[0], &results[1], &results[2]];
    let wakeups = the_consumer(thread).wakeups;
    assert_eq!(wakeups, 200);
    assert_eq!(the_consumer(ihm).wakeups, wakeups);
    assert_eq!(the_consumer(dis).wakeups, wakeups);
    assert_eq!(
        thread.context_switches - ihm.context_switches,
        wakeups,
        "one switch fewer per interrupt-driven wakeup"
    );
    assert_eq!(ihm.context_switches, dis.context_switches);
    let latency = |r: &DesignResult| the_consumer(r).latency.mean_us;
    // The switch into the irq thread goes, and with it the second wakeup: the handler
    // wakes a target that already runs.
    let saved = costs.context_switch.mean() + costs.wakeup.mean();
    println!(
        "OS latency: irq thread {} µs, IHM {} µs, IHM+DIS {} µs",
        latency(thread),
        latency(ihm),
        latency(dis)
    );
    assert!((latency(thread) - latency(ihm) - saved).abs() < 1e-9);
    let deferred = costs.dis_deferrable * saved;
    assert!((latency(ihm) - latency(dis) - deferred).abs() < 1e-9);
    // DIS moves work, it does not remove it.
    let busy = |r: &DesignResult| 1.0 - r.cpu.idle;
    assert!((busy(ihm) - busy(dis)).abs() < 1e-9);
}

/// Packets a second of [`flood`], above what its CPU can receive and echo.
const FLOOD_PER_S: f64 = 120_000.0;

/// A Poisson flood of NAPI packets (9 µs of bottom half each) into a SCHED_OTHER echo
/// server (3 µs each), under `designs`.
fn flood(designs: &[&str]) -> SimConfig {
    let costs = Costs {
        hardirq: us(2.0),
        softirq_per_packet: us(9.0),
        wakeup: us(1.0),
        context_switch: us(2.0),
        return_to_user: us(1.0),
        ..free_costs()
    };
    config(
        0.5,
        vec![source(
            "flood",
            Arrival::Poisson {
                rate_per_s: FLOOD_PER_S,
            },
            true,
        )],
        vec![task("echo", "o:0", consumer("flood", 3.0, 256))],
        costs,
        designs,
    )
}

#[test]
fn a_fifo_bottom_half_thread_starves_an_other_consumer_under_a_flood_a_niced_one_does_not() {
    let offered = FLOOD_PER_S;
    let config = flood(&["threaded-fifo", "threaded-niced", "threaded-niced+budget"]);
    let results = run(&config);
    let delivered = |r: &DesignResult| the_consumer(r).delivered_per_s;
    println!(
        "flood {offered}/s: delivered/s fifo {}, niced {}, niced+budget {}",
        delivered(&results[0]),
        delivered(&results[1]),
        delivered(&results[2])
    );
    assert!(delivered(&results[0]) < 0.02 * offered);
    for niced in &results[1..] {
        assert!(delivered(niced) > 0.3 * offered);
    }
}

#[test]
fn a_niced_threads_own_nice_moves_its_share_of_a_flooded_cpu() {
    // a bottom half that would take more than the CPU, against a consumer that always
    // has datagrams
    let bottom_half_share = |thread_nice| {
        let mut config = flood(&["threaded-niced"]);
        config.costs.softirq_per_packet = us(12.0);
        config.tasks = vec![task("echo", "o:0", consumer("flood", 6.0, 16))];
        config.sources[0].thread_nice = thread_nice;
        run(&config)[0].cpu.bh_threads
    };
    // at the consumer's nice (0) by default, and the same when the model says 0
    let (default, same) = (bottom_half_share(None), bottom_half_share(Some(0)));
    let above = bottom_half_share(Some(-20));
    println!("bottom half: default {default}, nice 0 {same}, nice -20 {above}");
    assert_eq!(default, same);
    // the thread far above its consumer takes more, spent on datagrams the full socket
    // drops. One below it takes no less (nice 19 gives what 0 gives): the consumer has
    // only what the thread delivered and sleeps once its socket is empty, so the split
    // follows the socket and the thread's non-preemptible batch, not the weights
    assert!(above > default + 0.05, "{above} against {default}");
}

#[test]
fn process_aware_bottom_halves_leave_a_high_priority_task_alone() {
    let costs = Costs {
        hardirq: us(3.0),
        softirq_per_packet: us(10.0),
        wakeup: us(2.0),
        context_switch: us(3.0),
        return_to_user: us(1.0),
        ..free_costs()
    };
    let control = task("control", "f:80", periodic(1000.0, 100.0, 200.0));
    let alone = config(
        0.5,
        vec![],
        vec![control.clone()],
        costs.clone(),
        &["stock"],
    );
    let baseline = run(&alone)[0].periodic[0].response.max_us;
    let with_flow = config(
        0.5,
        vec![source(
            "bulk",
            Arrival::Poisson {
                rate_per_s: 50_000.0,
            },
            true,
        )],
        vec![control, task("sink", "o:0", consumer("bulk", 2.0, 256))],
        costs.clone(),
        &["stock", "stock+process-aware"],
    );
    let results = run(&with_flow);
    let worst = |r: &DesignResult| r.periodic[0].response.max_us;
    println!(
        "control task worst response: alone {baseline} µs, with the flow: stock {} µs, process-aware {} µs",
        worst(&results[0]),
        worst(&results[1])
    );
    // What process-aware still lets through: the packet in progress when the task is
    // released and its wakeup, one hardirq (the line stays masked after it, since the
    // bottom half cannot run) and the wakeup it makes.
    let allowance =
        costs.softirq_per_packet.mean() + 2.0 * costs.wakeup.mean() + costs.hardirq.mean();
    assert!(worst(&results[1]) <= baseline + allowance);
    assert!(worst(&results[0]) > baseline + 4.0 * allowance);
}

#[test]
fn the_same_seed_gives_the_same_results() {
    let costs = Costs::default();
    let make = |seed| {
        let mut config = config(
            0.2,
            vec![source(
                "nic",
                Arrival::Poisson {
                    rate_per_s: 30_000.0,
                },
                true,
            )],
            vec![
                task("server", "o:0", consumer("nic", 5.0, 128)),
                task("rt", "f:70", periodic(500.0, 0.0, 50.0)),
                task("batch", "o:5", TaskKind::Hog),
            ],
            costs.clone(),
            &[
                "stock",
                "threaded-niced+budget",
                "threaded-fifo+ihm-dis",
                "stock+process-aware",
            ],
        );
        config.seed = seed;
        serde_json::to_string(&simulate(&config).unwrap()).unwrap()
    };
    assert_eq!(make(3), make(3));
    assert_ne!(make(3), make(4));
}

#[test]
fn bad_configurations_are_refused() {
    let mut bad = config(
        1.0,
        vec![],
        vec![task("t", "o:0", consumer("none", 1.0, 1))],
        free_costs(),
        &["stock"],
    );
    assert!(simulate(&bad).unwrap_err().contains("no source 'none'"));
    bad.tasks[0].kind = TaskKind::Hog;
    bad.tasks[0].cpu = 3;
    assert!(simulate(&bad).unwrap_err().contains("CPU 3"));
    bad.tasks[0].cpu = 0;
    bad.duration_s = 0.0;
    assert!(simulate(&bad).is_err());
}

#[test]
fn the_softirq_cap_hands_a_flood_to_ksoftirqd_and_keeps_the_consumer_alive() {
    let offered = FLOOD_PER_S;
    let capped = flood(&["stock"]);
    let mut uncapped = capped.clone();
    uncapped.limits.softirq_restarts = u32::MAX;
    uncapped.limits.softirq_time_us = 1e9;
    let (capped, uncapped) = (&run(&capped)[0], &run(&uncapped)[0]);
    println!(
        "stock flood: capped softirq {:.2} ksoftirqd {:.2} delivered/s {}; uncapped softirq {:.2} delivered/s {}",
        capped.cpu.softirq,
        capped.cpu.bh_threads,
        the_consumer(capped).delivered_per_s,
        uncapped.cpu.softirq,
        the_consumer(uncapped).delivered_per_s
    );
    // Past 10 rounds or 2 ms the work goes to ksoftirqd, which shares the CPU fairly.
    assert!(capped.cpu.bh_threads > 0.2);
    assert!(the_consumer(capped).delivered_per_s > 0.3 * offered);
    // Without the cap, softirq at hardirq exit never lets the consumer run: livelock.
    assert!(uncapped.cpu.softirq > 0.9);
    assert!(the_consumer(uncapped).delivered_per_s < 0.02 * offered);
}

#[test]
fn every_release_of_a_periodic_task_gives_a_pending_net_rx_one_round() {
    // a flood the softirq could never finish, a consumer above ksoftirqd (as trial's
    // nice -10 echo server), and a FIFO task whose timer fires every `period_us`
    let (seconds, per_packet_us) = (0.5, 1.0);
    let flooded = |period_us: Option<f64>| {
        let costs = Costs {
            softirq_per_packet: us(per_packet_us),
            ..free_costs()
        };
        let flood = Arrival::Poisson { rate_per_s: 2e6 };
        let mut tasks = vec![task("echo", "o:-10", consumer("flood", 5.0, 256))];
        if let Some(period_us) = period_us {
            tasks.push(task("cyclic", "f:95", periodic(period_us, 0.0, 1.0)));
        }
        let config = config(
            seconds,
            vec![source("flood", flood, true)],
            tasks,
            costs,
            &["stock"],
        );
        run(&config).remove(0)
    };
    // softirq packets per release
    let per_release = |period_us: f64| {
        let result = flooded(Some(period_us));
        let releases = seconds * 1e6 / period_us;
        result.cpu.softirq * seconds * 1e6 / per_packet_us / releases
    };
    let (every_500, every_1000) = (per_release(500.0), per_release(1000.0));
    let without = flooded(None);
    println!(
        "softirq packets per release: {every_500:.0} every 500 µs, {every_1000:.0} every \
         1000 µs; without the timer softirq {:.3} ksoftirqd {:.3}",
        without.cpu.softirq, without.cpu.bh_threads
    );
    // irq_exit runs net_rx_action at each release, and only once: the task it woke sets
    // need_resched, so __do_softirq does not restart. A round stops at netdev_budget
    // packets, checked after each poll of up to a weight's packets; a round may find
    // part of the flood taken by ksoftirqd's polls meanwhile, hence the lower half.
    let limits = Limits::default();
    let most = f64::from(limits.netdev_budget + limits.napi_weight);
    for packets in [every_500, every_1000] {
        assert!(
            (most / 2.0..=most).contains(&packets),
            "{packets} packets per release"
        );
    }
    assert!((every_500 / every_1000 - 1.0).abs() < 0.1);
    // without the timer the flood's softirq stops at its cap and ksoftirqd, at nice 0
    // against the consumer's -10, gets a small share
    assert!(without.cpu.softirq < 0.05, "{without:?}");
    assert!(without.cpu.bh_threads < 0.2, "{without:?}");
}

#[test]
fn a_sleeping_other_task_preempts_a_hog_on_waking_and_hogs_share_by_slices() {
    let costs = Costs {
        context_switch: us(3.0),
        ..free_costs()
    };
    // Released once the hogs have run a while (at 0 all are even, and a hog that has
    // not run yet goes first).
    let light = task("light", "o:0", periodic(10_000.0, 5_000.0, 100.0));
    let hogs = config(
        1.0,
        vec![],
        vec![
            light,
            task("hog", "o:0", TaskKind::Hog),
            task("other-hog", "o:0", TaskKind::Hog),
        ],
        costs,
        &["stock"],
    );
    let result = &run(&hogs)[0];
    let light = &result.periodic[0];
    // It slept 9.9 ms of every 10: it is owed more than the hogs and runs at once.
    assert_eq!(light.wakeup_latency.max_us, 3.0);
    // The hogs switch once per 0.75 ms slice, not more.
    let per_second = result.context_switches as f64;
    let slices = 1e6 / Limits::default().base_slice_us;
    println!("two hogs and a light task: {per_second} switches/s, {slices} slices/s");
    assert!(per_second > 0.9 * slices && per_second < 1.1 * slices + 300.0);
}

#[test]
fn a_preempted_fifo_task_resumes_before_its_peers() {
    let config = config(
        0.01,
        vec![],
        vec![
            task("first", "f:50", periodic(20_000.0, 0.0, 300.0)),
            task("peer", "f:50", periodic(20_000.0, 100.0, 100.0)),
            task("urgent", "f:90", periodic(20_000.0, 200.0, 50.0)),
        ],
        free_costs(),
        &["stock"],
    );
    let result = &run(&config)[0];
    let response = |i: usize| result.periodic[i].response.max_us;
    // first: 0-200, preempted 200-250, resumes at the head of its list 250-350; the
    // peer, which came at 100, runs 350-450.
    assert_eq!(
        [response(0), response(1), response(2)],
        [350.0, 350.0, 50.0]
    );
}

#[test]
fn an_interrupt_that_finds_the_cpu_idle_pays_the_idle_exit_and_a_busy_one_does_not() {
    let latency = |idle_exit: f64, hog: bool| {
        let mut costs = free_costs();
        costs.hardirq = us(2.0);
        costs.idle_exit = us(idle_exit);
        let nic = source(
            "nic",
            Arrival::Periodic {
                period_us: 1000.0,
                phase_us: 10.0,
            },
            false,
        );
        let mut tasks = vec![task("server", "f:50", consumer("nic", 1.0, 16))];
        if hog {
            tasks.push(task("batch", "o:0", TaskKind::Hog));
        }
        let result = run(&config(0.05, vec![nic], tasks, costs, &["stock"]));
        the_consumer(&result[0]).latency.p50_us
    };
    assert_eq!(latency(0.0, false), 2.0);
    assert_eq!(
        latency(10.0, false),
        12.0,
        "the idle CPU's exit comes first"
    );
    assert_eq!(
        latency(10.0, true),
        2.0,
        "a busy CPU has no idle state to leave"
    );
}

#[test]
fn a_simulation_stopped_before_its_end_keeps_only_the_designs_it_finished() {
    use std::sync::atomic::AtomicBool;
    let config = SimConfig::example();
    let stopped = super::simulate_until(&config, &AtomicBool::new(true)).unwrap();
    // the example's designs each handle far more events than one stop check's worth
    assert!(stopped.designs.is_empty(), "{:?}", stopped.designs.len());
    let whole = super::simulate_until(&config, &AtomicBool::new(false)).unwrap();
    assert_eq!(whole.designs.len(), config.designs.len());
}

/// A NAPI source replaying `times_us` into a SCHED_OTHER consumer, every path free.
fn replayed(times_us: &[f64], designs: &[&str]) -> SimConfig {
    config(
        0.05,
        vec![source(
            "nic",
            Arrival::Replay {
                times_us: times_us.to_vec(),
            },
            true,
        )],
        vec![task("server", "o:0", consumer("nic", 0.0, 256))],
        free_costs(),
        designs,
    )
}

#[test]
fn deferral_re_arms_the_irq_at_the_nth_empty_poll_in_a_row() {
    // a poll that did work, then N = 3 empty ones a timer apart: the third re-arms
    let results = run(&replayed(
        &[100.0, 10_000.0],
        &["stock", "stock+defer=3:20"],
    ));
    let [stock, deferred] = [&results[0], &results[1]];
    assert_eq!((stock.interrupts, stock.timer_interrupts), (2, 0));
    assert_eq!(stock.napi_schedules, 2);
    // each packet: its device IRQ, then N timer polls, the last of which re-arms
    assert_eq!((deferred.interrupts, deferred.timer_interrupts), (2, 6));
    assert_eq!(deferred.napi_schedules, 2 + 6);
    let wider = run(&replayed(&[100.0, 10_000.0], &["stock+defer=7:20"]));
    assert_eq!(wider[0].timer_interrupts, 2 * 7);
}

#[test]
fn a_deferral_timers_poll_costs_its_own_cost_and_the_device_irq_the_hardirqs() {
    // 2 device IRQs at 1 µs and 2 x 3 timer polls at 5 µs: 32 µs of hardirq
    let mut config = replayed(&[100.0, 10_000.0], &["stock+defer=3:20"]);
    config.sources[0].hardirq = Some(us(1.0));
    config.sources[0].timer_poll = Some(us(5.0));
    let hardirq_us = |config: &SimConfig| run(config)[0].cpu.hardirq * config.duration_s * 1e6;
    assert!((hardirq_us(&config) - 32.0).abs() < 1e-6);
    // without its own cost a timer poll costs the source's hardirq, as before
    config.sources[0].timer_poll = None;
    assert!((hardirq_us(&config) - 8.0).abs() < 1e-6);
}

#[test]
fn a_packet_arriving_during_a_deferral_waits_for_the_timer_not_an_irq() {
    // 100: IRQ, poll, timer for 120; 120: empty poll, timer for 140; the packet of 130
    // finds the IRQ masked and is polled at 140, which did work: 160, 180 and 200 follow
    let results = run(&replayed(&[100.0, 130.0], &["stock", "stock+defer=3:20"]));
    let [stock, deferred] = [&results[0], &results[1]];
    assert_eq!(stock.interrupts, 2);
    assert_eq!(the_consumer(stock).latency.max_us, 0.0);
    assert_eq!((deferred.interrupts, deferred.timer_interrupts), (1, 5));
    assert_eq!(the_consumer(deferred).delivered, 2);
    assert_eq!(the_consumer(deferred).latency.max_us, 10.0);
}

/// A Poisson stream of NAPI packets with every path's cost, into a SCHED_OTHER server.
fn stream(rate_per_s: f64, designs: &[&str]) -> SimConfig {
    let costs = Costs {
        hardirq: us(1.5),
        softirq_per_packet: us(2.0),
        wakeup: us(1.0),
        context_switch: us(2.0),
        return_to_user: us(0.5),
        ..free_costs()
    };
    config(
        0.2,
        vec![source("nic", Arrival::Poisson { rate_per_s }, true)],
        vec![task("server", "o:0", consumer("nic", 4.0, 256))],
        costs,
        designs,
    )
}

#[test]
fn under_load_deferral_polls_at_the_timer_and_takes_hardirqs_out() {
    let results = run(&stream(60_000.0, &["stock", "stock+defer=50:20"]));
    let [stock, deferred] = [&results[0], &results[1]];
    println!(
        "60k/s: hardirqs/pkt stock {:.3} defer {:.3}; schedules/pkt {:.3} {:.3}; timer irqs {}",
        stock.interrupts_per_arrival,
        deferred.interrupts_per_arrival,
        stock.napi_schedules_per_arrival,
        deferred.napi_schedules_per_arrival,
        deferred.timer_interrupts
    );
    assert!(deferred.interrupts_per_arrival < 0.1 * stock.interrupts_per_arrival);
    assert!(deferred.napi_schedules_per_arrival < stock.napi_schedules_per_arrival);
    assert!(deferred.timer_interrupts > 0);
    // all but what still waits for the timer at the end
    let waiting = the_consumer(stock).delivered - the_consumer(deferred).delivered;
    assert!(waiting <= 2, "{waiting}");
}

#[test]
fn busy_polling_takes_its_consumers_cpu_and_a_full_busy_poll_all_of_it() {
    let results = run(&stream(
        20_000.0,
        &[
            "stock",
            "stock+busy-poll",
            "stock+busy-poll=always",
            "stock+defer=100:20+busy-poll=always",
        ],
    ));
    let [stock, polled, always, preferred] = [&results[0], &results[1], &results[2], &results[3]];
    let busy = |r: &DesignResult| r.busy_by_cpu[0];
    let latency = |r: &DesignResult| the_consumer(r).latency.mean_us;
    println!(
        "20k/s: CPU busy stock {:.3}, busy-poll {:.3} (in loops {:.3}), always {:.3}; \
         mean latency {:.1} {:.1} {:.1} µs (with prefer {:.1}); hardirqs/pkt {:.3} {:.3} {:.3} \
         (with prefer {:.4})",
        busy(stock),
        busy(polled),
        polled.busy_poll,
        busy(always),
        latency(stock),
        latency(polled),
        latency(always),
        latency(preferred),
        stock.interrupts_per_arrival,
        polled.interrupts_per_arrival,
        always.interrupts_per_arrival,
        preferred.interrupts_per_arrival,
    );
    assert_eq!(stock.busy_poll, 0.0);
    assert!(busy(polled) > busy(stock) + 0.1);
    assert!(polled.busy_poll > 0.1);
    assert!(busy(always) > 0.999 && busy(preferred) > 0.999);
    // the poller receives what it finds: no wakeup or switch on the packet's path
    assert!(latency(polled) < latency(stock));
    assert!(latency(always) < latency(polled));
    // without prefer_busy_poll, each busy_poll_stop enables the IRQ again, which then
    // interrupts the application (and cannot schedule the NAPI it holds); with it
    // (and deferral), the IRQ stays masked
    assert!(always.interrupts_per_arrival > 0.5);
    assert!(preferred.interrupts_per_arrival < 0.001);
    assert!(latency(preferred) < latency(always));
    for r in [polled, always, preferred] {
        assert_eq!(the_consumer(r).delivered, the_consumer(stock).delivered);
    }
    // the consumer's own time: its work alone, then its loops too (hardirqs and deferral
    // timers interrupt even the full busy poll's)
    let share = |r: &DesignResult| the_consumer(r).cpu_share;
    let work = 20_000.0 * (4.0 + 2.0) / 1e6;
    assert!(share(stock) < busy(stock) && share(stock) > 0.5 * work);
    assert!(share(polled) > share(stock) + 0.1);
    assert!(share(always) > 0.95 && share(preferred) > 0.95);
}

#[test]
fn suspension_keeps_irqs_and_timers_off_while_the_application_finds_work_and_ends_when_it_blocks() {
    // 5 ms of a packet every 30 µs, each 25 µs of the server's time (longer than T),
    // then one packet at 20 ms, after the load
    let mut times: Vec<f64> = (0..167).map(|i| 100.0 + 30.0 * f64::from(i)).collect();
    times.push(20_000.0);
    let mut config = replayed(
        &times,
        &[
            "stock+defer=10:20+busy-poll=20",
            "stock+defer=10:20+busy-poll=20+suspend=10000",
        ],
    );
    config.tasks[0].kind = consumer("nic", 25.0, 256);
    let results = run(&config);
    let [deferred, suspended] = [&results[0], &results[1]];
    println!(
        "without suspension: {} hardirqs, {} timer irqs, {} schedules; with: {} {} {}",
        deferred.interrupts,
        deferred.timer_interrupts,
        deferred.napi_schedules,
        suspended.interrupts,
        suspended.timer_interrupts,
        suspended.napi_schedules
    );
    for r in [deferred, suspended] {
        assert_eq!(the_consumer(r).delivered, times.len() as u64);
    }
    // the first packet's IRQ, and the last one's: once the application blocked, the
    // NAPI fell back to deferral, then to the IRQ
    assert_eq!(suspended.interrupts, 2);
    // while the application works, the timer of T polls for it without suspension
    // (once per packet), not with it: what is left is mostly the two deferrals' N
    // timer polls, after the resume and after the last packet
    assert!(deferred.napi_schedules > 100, "{}", deferred.napi_schedules);
    assert!(suspended.napi_schedules < deferred.napi_schedules / 5);
    assert!(suspended.timer_interrupts < deferred.timer_interrupts / 5);
}

#[test]
fn a_busy_polling_napi_thread_takes_its_cpu_and_keeps_the_irq_off() {
    let mut config = stream(
        20_000.0,
        &["threaded-niced", "threaded-niced+thread-busy-poll"],
    );
    config.cpus = 2;
    config.sources[0].cpu = 1;
    let results = run(&config);
    let [threaded, busy] = [&results[0], &results[1]];
    println!(
        "NAPI thread on CPU 1: busy {:.3} / {:.3}, hardirqs {} / {}",
        threaded.busy_by_cpu[1], busy.busy_by_cpu[1], threaded.interrupts, busy.interrupts
    );
    assert!(threaded.busy_by_cpu[1] < 0.5);
    assert!(busy.busy_by_cpu[1] > 0.999);
    assert_eq!(busy.interrupts, 1);
    assert_eq!(
        the_consumer(busy).delivered,
        the_consumer(threaded).delivered
    );
}

/// Karsten & Damato's memcached set-up (the IRQ-suspension series' v7 cover letter,
/// 200K qps) as one of its cores: a request every 40 µs on average (Poisson, 25k/s, an
/// eighth of the load), 2 µs of receive and 4 µs (exponential) of memcached per request,
/// a 1 µs hardirq, a 20 µs exit from a deep idle state for an interrupt the governor
/// did not expect; as the letter sets them, "defer 20" is 100 deferrals of 20 µs,
/// "suspend 20" the same with epoll's busy poll (prefer_busy_poll, busy_poll_usecs 0:
/// one poll per epoll_wait) and a 20 ms suspension; the full busy poll is the same with
/// a poll that never ends (the letter's: 1 ms polls and 5 ms deferrals). The docs ship
/// it for `irqlens sim` to run: the test reads that file.
fn published_table_model() -> SimConfig {
    serde_json::from_str(include_str!(
        "../../../../docs/examples/published-table.json"
    ))
    .expect("docs/examples/published-table.json is a model")
}

#[test]
fn the_published_tables_order_busy_poll_fastest_at_full_cpu_defer_and_suspend_below_base() {
    // published: base 112 µs avg / 416 p99 / 26% CPU; defer 20: 60/153/26%; suspend 20:
    // 58/151/30%; full busy poll: 46/133/100%
    let results = run(&published_table_model());
    let [base, defer, suspend, busy] = [&results[0], &results[1], &results[2], &results[3]];
    let mean = |r: &DesignResult| the_consumer(r).latency.mean_us;
    let p99 = |r: &DesignResult| the_consumer(r).latency.p99_us;
    let cpu = |r: &DesignResult| r.busy_by_cpu[0];
    for r in &results {
        println!(
            "{:46} avg {:5.1} µs ({:.2} of base) p99 {:5.1} ({:.2}) CPU {:5.1}% ({:.2}); \
             hardirqs/req {:.3}, NAPI schedules/req {:.3}",
            r.design.to_string(),
            mean(r),
            mean(r) / mean(base),
            p99(r),
            p99(r) / p99(base),
            100.0 * cpu(r),
            cpu(r) / cpu(base),
            r.interrupts_per_arrival,
            r.napi_schedules_per_arrival
        );
    }
    for r in &results {
        assert_eq!(
            the_consumer(r).dropped_socket + the_consumer(r).dropped_ring,
            0
        );
    }
    // busy poll: the lowest latency at the highest CPU, all of it
    for other in [base, defer, suspend] {
        assert!(mean(busy) < mean(other) && p99(busy) < p99(other));
        assert!(cpu(busy) > 1.5 * cpu(other));
    }
    assert!(cpu(busy) > 0.99);
    // defer and suspend: below base's latency at a CPU like base's (here less, at least
    // half)
    for napi in [defer, suspend] {
        assert!(mean(napi) < 0.9 * mean(base));
        assert!(p99(napi) < p99(base));
        assert!(cpu(napi) > 0.5 * cpu(base) && cpu(napi) <= cpu(base));
        assert!(napi.interrupts_per_arrival < 0.01 * base.interrupts_per_arrival);
    }
    // suspend a little faster than defer, as published; its CPU is not the published
    // 30% against 26% but about defer's: the model charges nothing for a poll that
    // finds nothing, which is what suspend's epoll polls add
    assert!(mean(suspend) <= mean(defer));
}

#[test]
fn a_busy_pollers_deferral_timer_fires_on_its_cpu_not_the_irqs() {
    // the device's IRQ on CPU 0, its server busy polling on CPU 1: busy_poll_stop starts
    // the NAPI timer from CPU 1 (HRTIMER_MODE_REL_PINNED), so its expiries, and the
    // polls they schedule, are CPU 1's
    let mut config = stream(20_000.0, &["stock+defer=100:20+busy-poll"]);
    config.cpus = 2;
    config.tasks[0].cpu = 1;
    let result = &run(&config)[0];
    println!(
        "busy by CPU {:?}, device irqs {}, timer irqs {}",
        result.busy_by_cpu, result.interrupts, result.timer_interrupts
    );
    assert!(result.timer_interrupts > 100, "{}", result.timer_interrupts);
    // CPU 0 takes the device IRQs the deferral lets through, and nothing else
    let device_time = result.interrupts as f64 * 1.5e-6 / config.duration_s;
    assert!(
        result.busy_by_cpu[0] <= device_time + 1e-3,
        "CPU 0 busy {:.4} for {} device IRQs",
        result.busy_by_cpu[0],
        result.interrupts
    );
}

#[test]
fn a_poll_that_uses_its_whole_weight_pays_the_saturated_cost() {
    // bursts of packets at once, 10 ms apart: of a burst of 200, polls of up to `weight`
    // packets find 200, 136, 72 pending (saturated: they use their whole weight), then 8;
    // ten bursts, the last one's polls done before the end; the first arrival's hardirq
    // (1 µs) starts the polls once the whole burst is in the ring
    let (seconds, every_us): (f64, f64) = (0.095, 10_000.0);
    let (plain_us, saturated_us) = (1.0, 3.0);
    let weight = Limits::default().napi_weight;
    let bursts = (seconds * 1e6 / every_us).ceil() as u32;
    let bottom_half_us = |design: &str, size: u32, saturated: Option<f64>| {
        let mut flood = source(
            "flood",
            Arrival::Bursts {
                every_us,
                size,
                gap_us: 0.0,
            },
            true,
        );
        flood.softirq_per_packet = Some(us(plain_us));
        flood.softirq_per_packet_saturated = saturated.map(us);
        flood.hardirq = Some(us(1.0));
        let config = config(seconds, vec![flood], vec![], free_costs(), &[design]);
        let result = run(&config).remove(0);
        assert_eq!(result.arrivals, u64::from(bursts * size), "{result:?}");
        (result.cpu.softirq + result.cpu.bh_threads) * seconds * 1e6
    };
    let plain = |size: u32| f64::from(bursts * size) * plain_us;
    let burst = 200;
    let saturated_per_burst = burst - burst % weight;
    let expected = f64::from(bursts)
        * (f64::from(saturated_per_burst) * saturated_us
            + f64::from(burst - saturated_per_burst) * plain_us);
    for design in ["stock", "threaded-fifo"] {
        let with = bottom_half_us(design, burst, Some(saturated_us));
        assert!((with - expected).abs() < 1.0, "{design}: {with} µs");
        // without a saturated cost every packet pays the plain one, as before
        let without = bottom_half_us(design, burst, None);
        assert!(
            (without - plain(burst)).abs() < 1.0,
            "{design}: {without} µs"
        );
        // a burst one poll takes whole never saturates it
        let small = bottom_half_us(design, weight - 1, Some(saturated_us));
        assert!(
            (small - plain(weight - 1)).abs() < 1.0,
            "{design}: {small} µs"
        );
    }
}

#[test]
fn a_poll_while_the_consumer_is_behind_pays_the_saturated_cost() {
    // one packet every 10 µs: every poll takes one, far under its weight; a consumer at
    // 20 µs a packet falls behind and its socket fills, one at 1 µs keeps it empty
    let (plain_us, saturated_us) = (1.0, 3.0);
    let bottom_half_per_packet_us = |consumer_us: f64| {
        let mut source = source(
            "flood",
            Arrival::Periodic {
                period_us: 10.0,
                phase_us: 0.0,
            },
            true,
        );
        source.softirq_per_packet = Some(us(plain_us));
        source.softirq_per_packet_saturated = Some(us(saturated_us));
        let seconds = 0.05;
        let tasks = vec![task("echo", "o:0", consumer("flood", consumer_us, 64))];
        let config = config(seconds, vec![source], tasks, free_costs(), &["stock"]);
        let result = run(&config).remove(0);
        (result.cpu.softirq + result.cpu.bh_threads) * seconds * 1e6 / result.arrivals as f64
    };
    let (behind, keeping_up) = (
        bottom_half_per_packet_us(20.0),
        bottom_half_per_packet_us(1.0),
    );
    // the socket fills within its 64 packets' time, and from then on every packet pays
    // the saturated cost
    assert!(behind > saturated_us - 0.2, "{behind} µs a packet");
    assert!(
        (keeping_up - plain_us).abs() < 0.05,
        "{keeping_up} µs a packet"
    );
}

/// A stock flood that the softirq and the consumer cannot both keep up with: its socket
/// fills and drops.
fn stock_flood(replies: bool, dropped_us: Option<f64>) -> DesignResult {
    let mut config = flood(&["stock"]);
    config.costs.softirq_per_packet = us(2.0);
    config.sources[0].arrival = Arrival::Poisson {
        rate_per_s: 300_000.0,
    };
    config.sources[0].softirq_per_packet_dropped = dropped_us.map(us);
    config.tasks = vec![task(
        "echo",
        "o:0",
        TaskKind::Consumer {
            source: "flood".into(),
            cost_per_packet: us(3.0),
            socket_queue: 16,
            replies,
        },
    )];
    run(&config).remove(0)
}

#[test]
fn a_datagram_the_full_socket_drops_costs_the_drop_cost() {
    let (default, same) = (stock_flood(false, None), stock_flood(false, Some(2.0)));
    // a drop cost equal to any packet's changes nothing
    assert_eq!(default, same);
    let cheap = stock_flood(false, Some(0.5));
    let delivered = |r: &DesignResult| the_consumer(r).delivered_per_s;
    println!(
        "delivered: drops at 2 µs {:.0}/s (softirq {:.2}), at 0.5 µs {:.0}/s (softirq {:.2})",
        delivered(&default),
        default.cpu.softirq,
        delivered(&cheap),
        cheap.cpu.softirq
    );
    assert!(the_consumer(&default).dropped_socket > the_consumer(&default).delivered);
    // the softirq spends less on the drops, and the consumer gets what it saved
    assert!(cheap.cpu.softirq < default.cpu.softirq - 0.1);
    assert!(delivered(&cheap) > 1.2 * delivered(&default));
}

#[test]
fn a_replying_consumer_runs_the_softirq_its_interrupts_raise_at_its_sends_end() {
    let (plain, replying) = (stock_flood(false, None), stock_flood(true, None));
    println!(
        "interrupts per arrival: {:.3}, replying {:.3}",
        plain.interrupts_per_arrival, replying.interrupts_per_arrival
    );
    // NET_RX waits for the end of the consumer's work on a datagram, so the NAPI stays
    // scheduled meanwhile and the arrivals then raise no interrupt of their own: the
    // polls batch
    assert!(replying.interrupts_per_arrival < 0.8 * plain.interrupts_per_arrival);
    // and the held-back softirq does run: the polls take the flood as before (a NAPI
    // left scheduled would mask the interrupts too, and starve the consumer)
    let delivered = |r: &DesignResult| the_consumer(r).delivered_per_s;
    println!(
        "delivered {:.0}/s, replying {:.0}/s; softirq {:.2}, replying {:.2}",
        delivered(&plain),
        delivered(&replying),
        plain.cpu.softirq,
        replying.cpu.softirq
    );
    assert!(delivered(&replying) > 0.8 * delivered(&plain));
    assert!(replying.cpu.softirq > 0.8 * plain.cpu.softirq);
}
