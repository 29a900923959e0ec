//! Attribution and compensation on synthetic checkpoint streams (times in µs).

use std::collections::HashMap;

use super::compensate::Compensator;
use super::report::{relative_error, table, totals};
use super::*;
use irqlens_model::account::ThreadInfo;
use irqlens_model::event::{EventData, EventKind::*};
use irqlens_model::workload::CgroupId;
use irqlens_test_support::stream::{Stream, US};

const SPINNER: u32 = 10;
const RECEIVER: u32 = 20;
const SLEEPER: u32 = 30;
const IPI: u16 = 4; // SRC_CALL_FUNCTION_SINGLE
const TIMER: u16 = 1; // SRC_LOCAL_TIMER
const NET_RX: u16 = 3;
const RCU: u16 = 9;
const CPU: u32 = 1;

fn ipi() -> Source {
    Source::Hardirq {
        source: IPI,
        id: 251,
    }
}

fn tick() -> Source {
    Source::Hardirq {
        source: TIMER,
        id: 236,
    }
}

fn net_rx() -> Source {
    Source::Softirq { vector: NET_RX }
}

fn deliver(s: &mut Stream, us: u64, pid: u32, reader: u32) {
    s.at(us, CPU, pid, EventData::SockData { sock: 0, reader });
}

fn feed(attributor: &mut Attributor, events: &[Event]) {
    for e in events {
        attributor.add(e);
    }
}

fn attribute(s: &Stream) -> Attributor {
    let mut attributor = Attributor::new(None, None);
    feed(&mut attributor, &s.events);
    attributor.finish();
    attributor
}

fn info(tgid: u32, comm: &str, runtime_us: u64) -> ThreadInfo {
    ThreadInfo {
        tgid,
        comm: comm.into(),
        runtime_ns: Some(runtime_us * US),
        cgroup: None,
    }
}

fn in_us(by_source: &BySource) -> Vec<(Source, u64)> {
    by_source.iter().map(|(&s, &ns)| (s, ns / US)).collect()
}

/// An IPI raises NET_RX on the spinner's CPU (RPS); the run delivers two datagrams to
/// the receiver, waking it for the first.
fn rps_delivery(s: &mut Stream, at: u64) {
    s.irq(at, CPU, SPINNER, true, IPI, 251);
    s.softirq(at + 1, CPU, SPINNER, SoftirqRaise, NET_RX);
    s.irq(at + 2, CPU, SPINNER, false, IPI, 251);
    s.softirq(at + 2, CPU, SPINNER, SoftirqEntry, NET_RX);
    deliver(s, at + 3, SPINNER, RECEIVER);
    s.wake(at + 4, CPU, SPINNER, RECEIVER, "receiver", false);
    deliver(s, at + 5, SPINNER, RECEIVER);
    s.softirq(at + 6, CPU, SPINNER, SoftirqExit, NET_RX);
}

#[test]
fn rps_receive_is_charged_to_the_spinner_and_served_to_the_reader() {
    let mut s = Stream::new();
    rps_delivery(&mut s, 100);
    let ledger = attribute(&s).ledger().clone();
    let spinner = &ledger.threads[&SPINNER];
    assert_eq!(in_us(&spinner.charged), vec![(ipi(), 2), (net_rx(), 4)]);
    assert!(spinner.served.is_empty());
    let receiver = &ledger.threads[&RECEIVER];
    // the IPI raised NET_RX and woke nobody: its time goes with the NET_RX run
    assert_eq!(in_us(&receiver.served), vec![(ipi(), 2), (net_rx(), 4)]);
    assert_eq!(
        receiver.units, 2,
        "two datagrams, one of them with its wakeup"
    );
    assert!(receiver.charged.is_empty());
    assert!(ledger.orphan.is_empty());
}

#[test]
fn nested_hardirq_is_cut_out_of_the_softirq_it_interrupted() {
    let mut s = Stream::new();
    s.softirq(0, CPU, SPINNER, SoftirqEntry, NET_RX);
    s.irq(4, CPU, SPINNER, true, TIMER, 236);
    s.irq(6, CPU, SPINNER, false, TIMER, 236);
    deliver(&mut s, 8, SPINNER, RECEIVER);
    s.softirq(10, CPU, SPINNER, SoftirqExit, NET_RX);
    let ledger = attribute(&s).ledger().clone();
    assert_eq!(
        in_us(&ledger.threads[&SPINNER].charged),
        vec![(tick(), 2), (net_rx(), 8)]
    );
    assert_eq!(
        in_us(&ledger.threads[&RECEIVER].served),
        vec![(net_rx(), 8)]
    );
    assert_eq!(
        in_us(&ledger.orphan),
        vec![(tick(), 2)],
        "the tick woke nobody"
    );
}

#[test]
fn a_run_is_split_evenly_among_its_units() {
    let mut s = Stream::new();
    s.softirq(0, CPU, SPINNER, SoftirqEntry, NET_RX);
    deliver(&mut s, 1, SPINNER, RECEIVER);
    deliver(&mut s, 2, SPINNER, RECEIVER);
    s.wake(3, CPU, SPINNER, SLEEPER, "sleeper", false);
    s.wake(4, CPU, SPINNER, SLEEPER, "sleeper", false);
    s.softirq(12, CPU, SPINNER, SoftirqExit, NET_RX);
    let ledger = attribute(&s).ledger().clone();
    // a wakeup of another thread than the reader is a unit of its own
    assert_eq!(
        in_us(&ledger.threads[&RECEIVER].served),
        vec![(net_rx(), 6)]
    );
    assert_eq!(ledger.threads[&RECEIVER].units, 2);
    assert_eq!(in_us(&ledger.threads[&SLEEPER].served), vec![(net_rx(), 6)]);
    assert_eq!(ledger.threads[&SLEEPER].units, 2);
}

#[test]
fn unknown_readers_are_named_by_their_wakeup_or_left_orphan() {
    let mut s = Stream::new();
    s.softirq(0, CPU, SPINNER, SoftirqEntry, NET_RX);
    deliver(&mut s, 1, SPINNER, 0);
    s.wake(2, CPU, SPINNER, SLEEPER, "sleeper", false);
    deliver(&mut s, 3, SPINNER, RECEIVER);
    s.wake(3, CPU, SPINNER, RECEIVER, "receiver", false);
    deliver(&mut s, 3, SPINNER, 0);
    s.softirq(4, CPU, SPINNER, SoftirqExit, NET_RX);
    let ledger = attribute(&s).ledger().clone();
    // three units of 4/3 µs: the sleeper, the receiver (its wakeup folded), nobody
    assert_eq!(ledger.threads[&SLEEPER].units, 1);
    assert_eq!(ledger.threads[&RECEIVER].units, 1);
    assert_eq!(total(&ledger.threads[&SLEEPER].served), 4 * US / 3 + 1);
    assert_eq!(total(&ledger.orphan), 4 * US / 3);
}

#[test]
fn a_timer_hardirq_serves_the_thread_it_wakes() {
    let mut s = Stream::new();
    s.irq(0, CPU, SPINNER, true, TIMER, 236);
    s.wake(2, CPU, SPINNER, SLEEPER, "sleeper", false);
    s.softirq(3, CPU, SPINNER, SoftirqRaise, RCU);
    s.irq(5, CPU, SPINNER, false, TIMER, 236);
    let ledger = attribute(&s).ledger().clone();
    assert_eq!(in_us(&ledger.threads[&SLEEPER].served), vec![(tick(), 5)]);
    assert_eq!(in_us(&ledger.threads[&SPINNER].charged), vec![(tick(), 5)]);
}

#[test]
fn a_wakeup_in_an_hrtimer_callback_is_served_the_callback_only() {
    const TICK_FN: u64 = 0xa;
    const WAKEUP_FN: u64 = 0xb;
    let mut s = Stream::new();
    s.irq(0, CPU, SPINNER, true, TIMER, 236);
    s.timer_expire(1, CPU, SPINNER, 0x100, TICK_FN);
    // the tick raises TIMER: housekeeping, handed to nobody
    s.softirq(2, CPU, SPINNER, SoftirqRaise, 1);
    s.timer_exit(4, CPU, SPINNER, 0x100);
    s.timer_expire(5, CPU, SPINNER, 0x200, WAKEUP_FN);
    s.wake(6, CPU, SPINNER, SLEEPER, "sleeper", false);
    s.timer_exit(7, CPU, SPINNER, 0x200);
    s.irq(10, CPU, SPINNER, false, TIMER, 236);
    s.softirq(10, CPU, SPINNER, SoftirqEntry, 1);
    s.softirq(11, CPU, SPINNER, SoftirqExit, 1);
    let ledger = attribute(&s).ledger().clone();
    assert_eq!(in_us(&ledger.threads[&SLEEPER].served), vec![(tick(), 2)]);
    assert_eq!(
        in_us(&ledger.orphan),
        vec![(tick(), 8), (Source::Softirq { vector: 1 }, 1)]
    );
    assert_eq!(
        in_us(&ledger.threads[&SPINNER].charged),
        vec![(tick(), 10), (Source::Softirq { vector: 1 }, 1)]
    );
}

#[test]
fn idle_nmi_and_softirqs_that_never_ran_are_accounted() {
    let mut s = Stream::new();
    // on an idle CPU: an IPI that raises RCU, which never runs in the stream
    s.irq(0, CPU, IDLE, true, IPI, 251);
    s.softirq(1, CPU, IDLE, SoftirqRaise, RCU);
    s.irq(4, CPU, IDLE, false, IPI, 251);
    // an NMI of 3 µs, stamped at its end, on the spinner
    s.switch(10, CPU, IDLE, SPINNER, "spinner");
    s.at(
        20,
        CPU,
        SPINNER,
        EventData::Nmi {
            duration_ns: 3 * US,
        },
    );
    let attributor = attribute(&s);
    let ledger = attributor.ledger();
    assert_eq!(in_us(&ledger.threads[&IDLE].charged), vec![(ipi(), 4)]);
    assert_eq!(
        in_us(&ledger.threads[&SPINNER].charged),
        vec![(Source::Nmi, 3)]
    );
    assert_eq!(in_us(&ledger.orphan), vec![(ipi(), 4), (Source::Nmi, 3)]);
    let totals = totals(ledger);
    assert_eq!(
        (
            totals.hardirq_ns,
            totals.nmi_ns,
            totals.idle_ns,
            totals.orphan_ns
        ),
        (4 * US, 3 * US, 4 * US, 7 * US)
    );
    assert_eq!(ledger.seen[&SPINNER].comm.to_string(), "spinner");
}

#[test]
fn rows_correct_the_kernels_bill_per_process() {
    let mut s = Stream::new();
    rps_delivery(&mut s, 100);
    let ledger = attribute(&s).ledger().clone();
    // the receiver process has a second thread that took no part
    let threads = HashMap::from([
        (SPINNER, info(SPINNER, "spinner", 1_000)),
        (RECEIVER, info(RECEIVER, "receiver", 50)),
        (RECEIVER + 1, info(RECEIVER, "receiver-aux", 10)),
    ]);
    let rows = table(&ledger, &threads, None, false).rows;
    assert_eq!(rows.len(), 2);
    let spinner = rows.iter().find(|r| r.figures.id == SPINNER).unwrap();
    assert_eq!(
        (
            spinner.figures.amounts.kernel_ns,
            spinner.figures.amounts.charged_ns,
            spinner.figures.amounts.corrected_ns
        ),
        (Some(1_000 * US), 6 * US, Some(994 * US))
    );
    assert_eq!(spinner.figures.amounts.error, relative_error(1_000, 994));
    let receiver = rows.iter().find(|r| r.figures.id == RECEIVER).unwrap();
    assert_eq!(
        (
            receiver.figures.amounts.kernel_ns,
            receiver.figures.amounts.served_ns,
            receiver.figures.amounts.corrected_ns
        ),
        (Some(60 * US), 6 * US, Some(66 * US))
    );
    assert!(
        receiver.figures.amounts.error.unwrap() < 0.0,
        "the kernel under-bills the receiver"
    );
    assert_eq!(table(&ledger, &threads, None, true).rows.len(), 2);
}

#[test]
fn kernel_runtimes_between_two_readings() {
    let before = HashMap::from([
        (1, info(1, "t", 100)),
        (2, info(2, "t", 50)),
        (3, info(3, "t", 7)),
    ]);
    // 2 ended and its tid was reused by another process; 4 was born
    let after = HashMap::from([
        (1, info(1, "t", 160)),
        (2, info(9, "t", 5)),
        (4, info(4, "t", 30)),
    ]);
    let between = super::report::runtimes_between(&before, &after);
    let runtime = |tid: u32| between[&tid].runtime_ns.unwrap() / US;
    assert_eq!((runtime(1), runtime(2), runtime(4)), (60, 5, 30));
    assert!(!between.contains_key(&3));
}

#[test]
fn periodic_takes_start_a_new_ledger_and_keep_open_runs() {
    let mut s = Stream::new();
    s.softirq(0, CPU, SPINNER, SoftirqEntry, NET_RX);
    s.softirq(2, CPU, SPINNER, SoftirqExit, NET_RX);
    let mut attributor = Attributor::new(None, None);
    feed(&mut attributor, &s.events);
    let mut next = Stream::new();
    next.softirq(10, CPU, SPINNER, SoftirqEntry, NET_RX);
    attributor.add(&next.events[0]);
    let (first, _) = attributor.take();
    assert_eq!(in_us(&first.orphan), vec![(net_rx(), 2)]);
    deliver(&mut next, 13, SPINNER, RECEIVER);
    next.softirq(14, CPU, SPINNER, SoftirqExit, NET_RX);
    feed(&mut attributor, &next.events[1..]);
    let second = attributor.ledger();
    assert!(second.orphan.is_empty());
    assert_eq!(
        in_us(&second.threads[&RECEIVER].served),
        vec![(net_rx(), 4)]
    );
}

/// Figure 3 of Zhang & West (§3.1): at t = 1, P1 is charged a tick in which 3 interrupts
/// ran, 2 of them for P1 (over-charged by one); while others run, 4 interrupts for P1
/// occur; at t = 7, P1 is charged a tick with 2 interrupts for others:
/// x_1(7) = -2 + 4 - 1 = 1.
#[test]
fn compensation_follows_figure_3() {
    const P1: u32 = 1;
    const P2: u32 = 2;
    const P3: u32 = 3;
    const TICK: u64 = 10_000_000;
    // one interrupt costs a third of a tick: N(t) = 3, so nothing is settled
    let cost = TICK / 3;
    let mut c = Compensator::new(TICK);
    c.interrupts(0, &[P1], cost);
    c.interrupts(0, &[P1], cost);
    c.interrupts(0, &[P2], cost);
    c.tick(0, P1);
    assert_eq!(c.unaccounted(P1), -1);
    assert_eq!(c.interrupts_per_tick(), Some(3));
    for t in 2..=6 {
        if t <= 5 {
            c.interrupts(0, &[P1], cost);
        }
        if t % 2 == 0 {
            c.interrupts(0, &[P3], cost);
        }
        c.tick(0, if t < 4 { P2 } else { P3 });
    }
    c.interrupts(0, &[P2], cost);
    c.interrupts(0, &[P3], cost);
    c.tick(0, P1);
    assert_eq!(c.unaccounted(P1), 1, "x_1(7)");
    assert_eq!(c.adjusted_ns(P1), 0, "|x_1| < N(t): nothing settled yet");
}

#[test]
fn compensation_settles_a_tick_once_n_interrupts_are_owed() {
    const TICK: u64 = 4_000_000;
    let mut c = Compensator::new(TICK);
    // a victim is charged ticks full of interrupts for the receiver: 4 per tick
    for _ in 0..3 {
        for _ in 0..4 {
            c.interrupts(0, &[RECEIVER], TICK / 4);
        }
        c.tick(0, SPINNER);
    }
    assert_eq!(c.adjusted_ns(SPINNER), -3 * TICK as i64);
    assert_eq!(c.unaccounted(SPINNER), 0);
    // the receiver is billed when it is next charged a tick
    c.tick(1, RECEIVER);
    assert_eq!(c.adjusted_ns(RECEIVER), 3 * TICK as i64);
    // an idle CPU's tick changes no process
    c.interrupts(0, &[RECEIVER], TICK / 4);
    c.tick(0, IDLE);
    assert_eq!(c.unaccounted(RECEIVER), 1);
}

#[test]
fn n_of_t_is_an_ewma_of_the_measured_cost() {
    const TICK: u64 = 1_000;
    let mut c = Compensator::new(TICK);
    c.interrupts(0, &[SPINNER], TICK / 10);
    c.tick(0, IDLE);
    assert_eq!(c.interrupts_per_tick(), Some(10));
    c.interrupts(0, &[SPINNER], TICK / 20);
    c.tick(0, IDLE);
    // 0.7 * 10 + 0.3 * 20
    assert_eq!(c.interrupts_per_tick(), Some(13));
}

#[test]
fn attribution_runs_the_compensation_per_tick() {
    const TICK_US: u64 = 4_000;
    let mut s = Stream::new();
    // 12 ticks of RPS deliveries on the spinner's CPU, 2 units of 6 µs per run
    for tick in 0..12 {
        for run in 0..10 {
            rps_delivery(&mut s, tick * TICK_US + run * 100 + 10);
        }
    }
    // the receiver is current on CPU 0 at a later tick
    s.softirq(12 * TICK_US + 5, 0, RECEIVER, SoftirqRaise, 0);
    s.softirq(14 * TICK_US + 5, 0, RECEIVER, SoftirqRaise, 0);
    let mut attributor = Attributor::new(Some(TICK_US * US), None);
    feed(&mut attributor, &s.events);
    let c = attributor.compensator().unwrap();
    // N = 4000 / 3 µs per unit = 1333 units a tick; 240 units were charged to the
    // spinner and 240 served to the receiver: below one tick each, so unsettled
    assert_eq!(c.interrupts_per_tick(), Some(1333));
    assert_eq!(c.unaccounted(SPINNER), -220, "the last tick is still open");
    assert_eq!(c.unaccounted(RECEIVER), 240);
    assert_eq!(c.adjusted_ns(SPINNER), 0);
}

const HACKBENCH: u32 = 40;
/// irqlens's process and its collector thread.
const IRQLENS: u32 = 50;
const COLLECTOR: u32 = 51;
const IRQ_WORK: u16 = 5; // SRC_IRQ_WORK
const RESCHEDULE: u16 = 2; // SRC_RESCHEDULE
const DEVICE: u16 = 0;

fn irq_work() -> Source {
    Source::Hardirq {
        source: IRQ_WORK,
        id: 246,
    }
}

/// A wakeup of `tid`, a thread of process `tgid`, on the CPU of the test.
fn wake_thread(s: &mut Stream, us: u64, waker: u32, tid: u32, tgid: u32) {
    let wakeup = EventData::Wakeup {
        woken_pid: tid,
        woken_tgid: tgid,
        woken_comm: Comm::new("thread"),
        woken_cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        watched: false,
    };
    s.at(us, CPU, waker, wakeup);
}

fn attribute_with_irqlens(s: &Stream) -> Ledger {
    let mut attributor = Attributor::new(None, Some(IRQLENS));
    feed(&mut attributor, &s.events);
    attributor.finish();
    attributor.ledger().clone()
}

/// An irq_work wakes irqlens's collector while hackbench runs.
fn irq_work_for_the_collector(s: &mut Stream, at: u64) {
    s.irq(at, CPU, HACKBENCH, true, IRQ_WORK, 246);
    wake_thread(s, at + 1, HACKBENCH, COLLECTOR, IRQLENS);
    s.irq(at + 3, CPU, HACKBENCH, false, IRQ_WORK, 246);
}

#[test]
fn irq_work_waking_irqlens_is_charged_to_irqlens_not_to_hackbench() {
    let mut s = Stream::new();
    irq_work_for_the_collector(&mut s, 100);
    let ledger = attribute_with_irqlens(&s);
    let hackbench = &ledger.threads[&HACKBENCH];
    // the kernel billed hackbench, and the ledger knows it was irqlens's work
    assert_eq!(in_us(&hackbench.charged), vec![(irq_work(), 3)]);
    assert_eq!(in_us(&hackbench.for_irqlens), vec![(irq_work(), 3)]);
    assert_eq!(
        in_us(&ledger.threads[&COLLECTOR].served),
        vec![(irq_work(), 3)]
    );

    let threads = HashMap::from([
        (HACKBENCH, info(HACKBENCH, "hackbench", 1_000)),
        (IRQLENS, info(IRQLENS, "irqlens", 100)),
        (COLLECTOR, info(IRQLENS, "irqlens", 20)),
    ]);
    let table = table(&ledger, &threads, None, false);
    let hackbench = table
        .rows
        .iter()
        .find(|r| r.figures.id == HACKBENCH)
        .unwrap();
    assert_eq!(
        (
            hackbench.figures.amounts.charged_ns,
            hackbench.figures.amounts.irqlens_ns
        ),
        (0, 3 * US),
        "not charged to hackbench"
    );
    // hackbench did not run those 3 µs: its corrected time still leaves them out
    assert_eq!(hackbench.figures.amounts.corrected_ns, Some(997 * US));
    let irqlens = table.irqlens.expect("the [irqlens] row");
    assert_eq!(
        (irqlens.figures.id, irqlens.figures.comm.as_str()),
        (IRQLENS, "[irqlens]")
    );
    assert_eq!(
        (
            irqlens.figures.amounts.charged_ns,
            irqlens.figures.amounts.served_ns,
            irqlens.figures.amounts.irqlens_ns
        ),
        (3 * US, 3 * US, 3 * US)
    );
    // the kernel billed irqlens 120 µs; it was served 3 µs more on hackbench's time
    assert_eq!(
        (
            irqlens.figures.amounts.kernel_ns,
            irqlens.figures.amounts.corrected_ns
        ),
        (Some(120 * US), Some(123 * US))
    );
    assert!(
        table.rows.iter().all(|r| r.figures.id != IRQLENS),
        "irqlens is its own row, not one of the processes"
    );
    let totals = totals(&ledger);
    assert_eq!(totals.irqlens_ns, 3 * US);
}

#[test]
fn irq_work_that_wakes_nobody_is_charged_to_the_task_it_interrupted() {
    // irqlens's probes never notify its reader: such an irq_work is another kernel
    // user's (perf, RCU, cpufreq) and bills the task it interrupted, as any other
    let mut s = Stream::new();
    s.irq(100, CPU, HACKBENCH, true, IRQ_WORK, 246);
    s.irq(102, CPU, HACKBENCH, false, IRQ_WORK, 246);
    let ledger = attribute_with_irqlens(&s);
    let hackbench = &ledger.threads[&HACKBENCH];
    assert_eq!(in_us(&hackbench.charged), vec![(irq_work(), 2)]);
    assert!(hackbench.for_irqlens.is_empty());
    assert_eq!(
        in_us(&ledger.orphan),
        vec![(irq_work(), 2)],
        "it served no thread"
    );
}

#[test]
fn a_device_irq_serving_another_process_is_still_charged_to_the_current_one() {
    let mut s = Stream::new();
    irq_work_for_the_collector(&mut s, 100);
    // a disk completion wakes the receiver, and irqlens's collector with it
    s.irq(200, CPU, HACKBENCH, true, DEVICE, 11);
    wake_thread(&mut s, 201, HACKBENCH, RECEIVER, RECEIVER);
    wake_thread(&mut s, 202, HACKBENCH, COLLECTOR, IRQLENS);
    s.irq(204, CPU, HACKBENCH, false, DEVICE, 11);
    let ledger = attribute_with_irqlens(&s);
    let disk = Source::Hardirq {
        source: DEVICE,
        id: 11,
    };
    let hackbench = &ledger.threads[&HACKBENCH];
    assert_eq!(in_us(&hackbench.charged), vec![(disk, 4), (irq_work(), 3)]);
    assert_eq!(
        in_us(&hackbench.for_irqlens),
        vec![(irq_work(), 3)],
        "a run with a unit of another process is not irqlens's own"
    );
    assert_eq!(in_us(&ledger.threads[&RECEIVER].served), vec![(disk, 2)]);
    let table = table(&ledger, &HashMap::new(), None, false);
    let hackbench = table
        .rows
        .iter()
        .find(|r| r.figures.id == HACKBENCH)
        .unwrap();
    assert_eq!(in_us(&hackbench.charged_by), vec![(disk, 4)]);
}

#[test]
fn a_wakeup_ipi_the_cpu_leaves_for_irqlens_is_irqlens_own() {
    let resched = Source::Hardirq {
        source: RESCHEDULE,
        id: 253,
    };
    let mut s = Stream::new();
    // a remote wakeup of the collector: the IPI, the softirqs of its exit, the switch
    s.irq(100, CPU, HACKBENCH, true, RESCHEDULE, 253);
    s.irq(102, CPU, HACKBENCH, false, RESCHEDULE, 253);
    s.softirq(103, CPU, HACKBENCH, SoftirqEntry, RCU);
    s.softirq(104, CPU, HACKBENCH, SoftirqExit, RCU);
    let to_collector = EventData::Switch {
        next_pid: COLLECTOR,
        next_tgid: IRQLENS,
        next_comm: Comm::new("irqlens"),
        next_cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
    };
    s.at(105, CPU, HACKBENCH, to_collector);
    // one for another task: the CPU switches to the spinner
    s.switch(200, CPU, COLLECTOR, HACKBENCH, "hackbench");
    s.irq(300, CPU, HACKBENCH, true, RESCHEDULE, 253);
    s.irq(301, CPU, HACKBENCH, false, RESCHEDULE, 253);
    s.switch(302, CPU, HACKBENCH, SPINNER, "spinner");
    // one still waiting for its switch when the run ends
    s.irq(400, CPU, SPINNER, true, RESCHEDULE, 253);
    s.irq(405, CPU, SPINNER, false, RESCHEDULE, 253);
    let ledger = attribute_with_irqlens(&s);
    let hackbench = &ledger.threads[&HACKBENCH];
    assert_eq!(
        in_us(&hackbench.charged),
        vec![(resched, 3), (Source::Softirq { vector: RCU }, 1)]
    );
    assert_eq!(in_us(&hackbench.for_irqlens), vec![(resched, 2)]);
    assert_eq!(in_us(&ledger.threads[&SPINNER].charged), vec![(resched, 5)]);
    assert!(ledger.threads[&SPINNER].for_irqlens.is_empty());
    assert_eq!(
        in_us(&ledger.orphan),
        vec![(resched, 8), (Source::Softirq { vector: RCU }, 1)]
    );
}

#[test]
fn without_irqlens_pid_nothing_is_irqlens_own() {
    let mut s = Stream::new();
    irq_work_for_the_collector(&mut s, 100);
    let ledger = attribute(&s).ledger().clone();
    assert!(ledger.threads[&HACKBENCH].for_irqlens.is_empty());
    let table = table(&ledger, &HashMap::new(), None, false);
    assert!(table.irqlens.is_none());
    assert_eq!(table.rows.len(), 2, "hackbench and the collector");
}

#[test]
fn interrupt_time_is_kept_per_cpu_without_irqlens_own_work() {
    let mut s = Stream::new();
    rps_delivery(&mut s, 100);
    s.irq(200, 0, SLEEPER, true, TIMER, 236);
    s.irq(205, 0, SLEEPER, false, TIMER, 236);
    irq_work_for_the_collector(&mut s, 300);
    let ledger = attribute_with_irqlens(&s);
    // the RPS IPI's and NET_RX's time on CPU 1; the collector's irq_work is irqlens's
    assert_eq!(in_us(&ledger.cpus[&CPU]), vec![(ipi(), 2), (net_rx(), 4)]);
    assert_eq!(in_us(&ledger.cpus[&0]), vec![(tick(), 5)]);
    let mut twice = ledger.clone();
    twice.absorb(ledger);
    assert_eq!(in_us(&twice.cpus[&CPU]), vec![(ipi(), 4), (net_rx(), 8)]);
}

#[test]
fn the_checkpoints_name_each_threads_cgroup_and_an_unknown_one_keeps_it() {
    let mut s = Stream::new();
    s.wake(10, CPU, SPINNER, RECEIVER, "receiver", false);
    if let EventData::Wakeup { woken_cgroup, .. } = &mut s.events.last_mut().unwrap().what {
        *woken_cgroup = CgroupId(77);
    }
    // a reading without a cgroup (an old recording's) keeps the one known
    s.switch(20, CPU, SPINNER, RECEIVER, "receiver");
    s.switch(30, CPU, RECEIVER, SPINNER, "spinner");
    let ledger = attribute(&s).ledger().clone();
    assert_eq!(ledger.seen[&RECEIVER].cgroup, CgroupId(77));
    assert_eq!(ledger.seen[&SPINNER].cgroup, CgroupId::UNKNOWN);
}
