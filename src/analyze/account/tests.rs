//! Attribution and compensation on synthetic checkpoint streams (times in µs).

use std::collections::HashMap;

use super::compensate::Compensator;
use super::report::{ThreadInfo, relative_error, rows, totals};
use super::*;
use crate::analyze::checkpoint::EventKind::*;
use crate::analyze::checkpoint::stream::{Stream, US};

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
    s.at(us, CPU, pid, SockData).aux = reader;
}

fn feed(attributor: &mut Attributor, events: &[Event]) {
    for e in events {
        attributor.add(e);
    }
}

fn attribute(s: &Stream) -> Attributor {
    let mut attributor = Attributor::new(None);
    feed(&mut attributor, &s.events);
    attributor.finish();
    attributor
}

fn info(tgid: u32, comm: &str, runtime_us: u64) -> ThreadInfo {
    ThreadInfo {
        tgid,
        comm: comm.into(),
        runtime_ns: Some(runtime_us * US),
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
    s.timer(1, CPU, SPINNER, TimerExpire, 0x100, TICK_FN);
    // the tick raises TIMER: housekeeping, handed to nobody
    s.softirq(2, CPU, SPINNER, SoftirqRaise, 1);
    s.timer(4, CPU, SPINNER, TimerExpireExit, 0x100, 0);
    s.timer(5, CPU, SPINNER, TimerExpire, 0x200, WAKEUP_FN);
    s.wake(6, CPU, SPINNER, SLEEPER, "sleeper", false);
    s.timer(7, CPU, SPINNER, TimerExpireExit, 0x200, 0);
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
    s.at(20, CPU, SPINNER, Nmi).ptr = 3 * US;
    let attributor = attribute(&s);
    let ledger = attributor.ledger();
    assert_eq!(in_us(&ledger.idle), vec![(ipi(), 4)]);
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
    let (named, _) = attribute(&s).take();
    let (tgid, comm) = named.threads[&SPINNER].name.unwrap();
    assert_eq!((tgid, comm.to_string().as_str()), (0, "spinner"));
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
    let table = rows(&ledger, &threads, None, false);
    assert_eq!(table.len(), 2);
    let spinner = table.iter().find(|r| r.id == SPINNER).unwrap();
    assert_eq!(
        (spinner.kernel_ns, spinner.charged_ns, spinner.corrected_ns),
        (Some(1_000 * US), 6 * US, Some(994 * US))
    );
    assert_eq!(spinner.error, relative_error(1_000, 994));
    let receiver = table.iter().find(|r| r.id == RECEIVER).unwrap();
    assert_eq!(
        (
            receiver.kernel_ns,
            receiver.served_ns,
            receiver.corrected_ns
        ),
        (Some(60 * US), 6 * US, Some(66 * US))
    );
    assert!(
        receiver.error.unwrap() < 0.0,
        "the kernel under-bills the receiver"
    );
    assert_eq!(rows(&ledger, &threads, None, true).len(), 2);
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
    let mut attributor = Attributor::new(None);
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

/// Figure 3 of seed 004: at t = 1, P1 is charged a tick in which 3 interrupts ran, 2 of
/// them for P1 (over-charged by one); while others run, 4 interrupts for P1 occur; at
/// t = 7, P1 is charged a tick with 2 interrupts for others: x_1(7) = -2 + 4 - 1 = 1.
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
    s.at(12 * TICK_US + 5, 0, RECEIVER, SoftirqRaise);
    s.at(14 * TICK_US + 5, 0, RECEIVER, SoftirqRaise);
    let mut attributor = Attributor::new(Some(TICK_US * US));
    feed(&mut attributor, &s.events);
    let c = attributor.compensator().unwrap();
    // N = 4000 / 3 µs per unit = 1333 units a tick; 240 units were charged to the
    // spinner and 240 served to the receiver: below one tick each, so unsettled
    assert_eq!(c.interrupts_per_tick(), Some(1333));
    assert_eq!(c.unaccounted(SPINNER), -220, "the last tick is still open");
    assert_eq!(c.unaccounted(RECEIVER), 240);
    assert_eq!(c.adjusted_ns(SPINNER), 0);
}

#[test]
fn a_storm_of_short_lived_threads_keeps_the_ledger_bounded() {
    const THREADS_SEEN: u32 = 100_000;
    let mut attributor = Attributor::new(None);
    let mut s = Stream::new();
    for n in 0..THREADS_SEEN {
        // a new thread runs and takes a 1 µs tick; the spinner is served a delivery
        let (at, tid) = (u64::from(n) * 10, 1_000 + n);
        s.switch(at, CPU, tid.saturating_sub(1), tid, "hackbench");
        s.irq(at + 1, CPU, tid, true, TIMER, 236);
        s.irq(at + 2, CPU, tid, false, TIMER, 236);
        s.softirq(at + 3, CPU, tid, SoftirqEntry, NET_RX);
        deliver(&mut s, at + 4, tid, SPINNER);
        s.softirq(at + 5, CPU, tid, SoftirqExit, NET_RX);
        if s.events.len() > 10_000 {
            feed(&mut attributor, &std::mem::take(&mut s.events));
        }
    }
    feed(&mut attributor, &s.events);
    let (ledger, _) = attributor.take();
    assert!(ledger.threads.len() <= ACCOUNTS);
    assert!(ledger.threads.folded() >= u64::from(THREADS_SEEN) - ACCOUNTS as u64);
    // the thread served every run is kept whole, and nothing is lost
    assert_eq!(ledger.threads[&SPINNER].units, u64::from(THREADS_SEEN));
    let totals = totals(&ledger);
    assert_eq!(totals.hardirq_ns, u64::from(THREADS_SEEN) * US);
    assert_eq!(totals.softirq_ns, u64::from(THREADS_SEEN) * 2 * US);
    assert_eq!(totals.served_ns, totals.softirq_ns);
    let shown: u64 = rows(&ledger, &HashMap::new(), None, true)
        .iter()
        .map(|row| row.charged_ns)
        .sum();
    let folded = ledger.threads.other().map_or(0, |a| total(&a.charged));
    assert_eq!(shown + folded, totals.interrupt_ns());
}

#[test]
fn hardirq_time_handed_on_to_a_softirq_that_never_runs_stays_one_value_per_source() {
    let mut s = Stream::new();
    for n in 0..10_000 {
        s.irq(n * 10, CPU, SPINNER, true, IPI, 251);
        s.softirq(n * 10 + 1, CPU, SPINNER, SoftirqRaise, NET_RX);
        s.irq(n * 10 + 2, CPU, SPINNER, false, IPI, 251);
    }
    let mut attributor = Attributor::new(None);
    feed(&mut attributor, &s.events);
    assert_eq!(
        in_us(&attributor.cpus[&CPU].deferred[&NET_RX]),
        vec![(ipi(), 20_000)]
    );
}

#[test]
fn compensation_keeps_the_adjustments_of_the_busiest_threads() {
    const TICK: u64 = 4_000_000;
    let mut c = Compensator::new(TICK);
    // a million threads each over-charged one tick of 4 interrupts served to another
    let threads = 1_000..1_001_000;
    for thread in threads.clone() {
        for _ in 0..4 {
            c.interrupts(0, &[RECEIVER], TICK / 4);
        }
        c.tick(0, thread);
    }
    assert!(c.forgotten() > 0, "x_k of the threads long gone");
    let kept = threads.filter(|&t| c.adjusted_ns(t) != 0).count();
    assert!(kept <= ACCOUNTS, "{kept}");
    // the receiver, billed for them all at its next tick
    c.tick(1, RECEIVER);
    assert_eq!(c.adjusted_ns(RECEIVER), 1_000_000 * TICK as i64);
}
