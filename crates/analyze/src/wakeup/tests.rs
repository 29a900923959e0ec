//! The decomposition on synthetic checkpoint streams (times in µs).

use std::collections::{HashMap, HashSet};

use super::*;
use crate::histogram::Distribution;
use irqlens_model::event::{Event, EventData, EventKind::*};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::{Report, StatsConfig};
use irqlens_test_support::stream::{Stream, US};

const TIMER: u16 = 1; // SRC_LOCAL_TIMER
const VECTOR: u16 = 236;
const HRTIMER_SOFTIRQ: u16 = 8;
const HRTIMER: u64 = 0xffff_0001;
const HOG_HRTIMER: u64 = 0xffff_0002;
const WAKEUP_FN: u64 = 0xffff_1000;
const OTHER_FN: u64 = 0xffff_2000;
const TASK: u32 = 100;

/// Feeds a stream to the tracker and hands out the samples.
trait Run {
    fn run(&self, tracker: &mut Tracker, reports: &[Report]) -> Vec<Sample>;
}

impl Run for Stream {
    fn run(&self, tracker: &mut Tracker, reports: &[Report]) -> Vec<Sample> {
        for e in &self.events {
            tracker.add(e);
        }
        for &report in reports {
            tracker.add_report(report);
        }
        tracker.finish();
        tracker.take_samples()
    }
}

fn timer_tracker() -> Tracker {
    Tracker::new(Targets::Timers(HashSet::from([TASK])))
}

fn report(expected_us: u64, user_us: u64) -> Report {
    Report {
        tid: TASK,
        cpu: 0,
        expected_ns: expected_us * US,
        user_ns: user_us * US,
    }
}

fn causes_us(sample: &Sample) -> HashMap<Cause, u64> {
    sample.causes.iter().map(|&(c, ns)| (c, ns / US)).collect()
}

fn component_us(sample: &Sample, component: Component) -> Option<u64> {
    sample.component(component).map(|ns| ns / US)
}

/// The task arms its timer for 1000 µs and sleeps; the CPU goes idle.
fn armed_and_asleep(stream: &mut Stream) {
    stream.timer_start(0, 0, TASK, HRTIMER, 1_000 * US);
    stream.switch(1, 0, TASK, 0, "swapper/0");
}

/// Armed for 1000 µs, the task is woken straight from the timer IRQ of its idle CPU:
/// IRQ 1003-1008, handler 1004-1006 (the wakeup at 1005), switch-in at 1010, and it
/// arms its next expiry at 1015 (its report says 1012).
fn direct_timer_wakeup() -> Stream {
    let mut s = Stream::new();
    armed_and_asleep(&mut s);
    s.irq(1_003, 0, 0, true, TIMER, VECTOR);
    s.timer_expire(1_004, 0, 0, HRTIMER, WAKEUP_FN);
    s.wake(1_005, 0, 0, TASK, "il-wakeup/0", true);
    s.timer_exit(1_006, 0, 0, HRTIMER);
    s.irq(1_008, 0, 0, false, TIMER, VECTOR);
    s.switch(1_010, 0, 0, TASK, "il-wakeup/0");
    s.timer_start(1_015, 0, TASK, HRTIMER, 2_000 * US);
    s
}

#[test]
fn direct_wakeup_from_the_timer_irq_of_an_idle_cpu() {
    let s = direct_timer_wakeup();
    let mut tracker = timer_tracker();
    let samples = s.run(&mut tracker, &[report(1_000, 1_012)]);

    assert_eq!(samples.len(), 1);
    let sample = &samples[0];
    assert_eq!(
        sample.origin,
        Origin::Irq {
            source: TIMER,
            id: VECTOR.into()
        }
    );
    assert_eq!(component_us(sample, Component::Irq), Some(4));
    assert_eq!(component_us(sample, Component::Handler), Some(2));
    assert_eq!(component_us(sample, Component::Sched), Some(5));
    assert_eq!(component_us(sample, Component::Return), Some(2));
    assert_eq!(component_us(sample, Component::Total), Some(12));
    assert_eq!(component_us(sample, Component::Wakeup), None, "timer mode");
    assert_eq!(sample.switches, 1, "a direct wakeup is one context switch");
    assert!(sample.interposed.is_empty());
    let origin = Cause::Origin {
        source: TIMER,
        id: VECTOR.into(),
    };
    assert_eq!(
        causes_us(sample),
        HashMap::from([
            (Cause::IdleExit, 3),
            (origin, 3),
            (Cause::Handler(WAKEUP_FN), 2),
            (Cause::Scheduler, 2),
            (Cause::Return, 2),
        ])
    );
    assert_eq!(
        sample.causes.iter().map(|c| c.1).sum::<u64>(),
        sample.total_ns()
    );
    assert_eq!(tracker.counts.undecomposed + tracker.counts.unreported, 0);
    assert_eq!(tracker.counts.incomplete, 0);
}

#[test]
fn wakeup_through_ksoftirqd_counts_it_as_interposed() {
    let mut s = Stream::new();
    s.timer_start(0, 0, TASK, HRTIMER, 1_000 * US);
    s.switch(1, 0, TASK, 50, "work");
    s.irq(1_002, 0, 50, true, TIMER, VECTOR);
    s.softirq(1_003, 0, 50, SoftirqRaise, HRTIMER_SOFTIRQ);
    s.wake(1_004, 0, 50, 15, "ksoftirqd/0", false);
    s.irq(1_005, 0, 50, false, TIMER, VECTOR);
    s.switch(1_007, 0, 50, 15, "ksoftirqd/0");
    s.softirq(1_008, 0, 15, SoftirqEntry, HRTIMER_SOFTIRQ);
    s.timer_expire(1_009, 0, 15, HRTIMER, WAKEUP_FN);
    s.wake(1_010, 0, 15, TASK, "il-wakeup/0", true);
    s.timer_exit(1_011, 0, 15, HRTIMER);
    s.softirq(1_012, 0, 15, SoftirqExit, HRTIMER_SOFTIRQ);
    s.switch(1_014, 0, 15, TASK, "il-wakeup/0");
    s.timer_start(1_020, 0, TASK, HRTIMER, 2_000 * US);
    let samples = s.run(&mut timer_tracker(), &[report(1_000, 1_016)]);

    let sample = &samples[0];
    assert_eq!(
        sample.origin,
        Origin::Irq {
            source: TIMER,
            id: VECTOR.into()
        }
    );
    assert_eq!(
        sample.origin_ns,
        1_002 * US,
        "the hardirq that raised the softirq"
    );
    assert_eq!(sample.interposed, vec![NamedThread::named("ksoftirqd/0")]);
    assert_eq!(sample.switches, 2, "prev -> ksoftirqd -> task");
    assert_eq!(component_us(sample, Component::Irq), Some(9));
    assert_eq!(
        causes_us(sample),
        HashMap::from([
            (Cause::IrqDelay, 2),
            (
                Cause::Origin {
                    source: TIMER,
                    id: VECTOR.into()
                },
                3
            ),
            (Cause::Blocking(NamedThread::named("work")), 2),
            (Cause::Interposed(NamedThread::named("ksoftirqd/0")), 3),
            (Cause::Softirq(HRTIMER_SOFTIRQ), 2),
            (Cause::Handler(WAKEUP_FN), 2),
            (Cause::Return, 2),
        ])
    );
}

#[test]
fn a_higher_priority_thread_woken_by_the_same_interrupt_runs_first() {
    let mut s = Stream::new();
    armed_and_asleep(&mut s);
    s.irq(1_002, 0, 0, true, TIMER, VECTOR);
    s.timer_expire(1_003, 0, 0, HOG_HRTIMER, OTHER_FN);
    s.wake(1_003, 0, 0, 60, "hog", false);
    s.timer_exit(1_004, 0, 0, HOG_HRTIMER);
    s.timer_expire(1_004, 0, 0, HRTIMER, WAKEUP_FN);
    s.wake(1_005, 0, 0, TASK, "il-wakeup/0", true);
    s.timer_exit(1_005, 0, 0, HRTIMER);
    s.irq(1_006, 0, 0, false, TIMER, VECTOR);
    s.switch(1_007, 0, 0, 60, "hog");
    s.switch(1_307, 0, 60, TASK, "il-wakeup/0");
    s.timer_start(1_400, 0, TASK, HRTIMER, 2_000 * US);
    let samples = s.run(&mut timer_tracker(), &[report(1_000, 1_309)]);

    let sample = &samples[0];
    let causes = causes_us(sample);
    assert_eq!(causes[&Cause::Thread(NamedThread::named("hog"))], 300);
    assert_eq!(
        causes[&Cause::Timer(OTHER_FN)],
        1,
        "the hog's hrtimer expired first"
    );
    assert_eq!(causes[&Cause::IdleExit], 2);
    assert_eq!(
        sample.causes[0].0,
        Cause::Thread(NamedThread::named("hog")),
        "largest first"
    );
    assert_eq!(sample.switches, 2);
    assert_eq!(component_us(sample, Component::Sched), Some(302));
    assert_eq!(component_us(sample, Component::Total), Some(309));
}

#[test]
fn task_mode_follows_an_irq_thread_across_cpus() {
    let mut s = Stream::new();
    s.switch(0, 0, 200, 0, "swapper/0");
    s.irq(100, 1, 7, true, 0, 25);
    s.wake(101, 1, 7, 30, "irq/25-virtio0", false);
    s.irq(102, 1, 7, false, 0, 25);
    s.switch(105, 1, 7, 30, "irq/25-virtio0");
    s.wake(110, 1, 30, 200, "server", true);
    s.switch(112, 1, 30, 7, "app");
    s.switch(120, 0, 0, 200, "server");
    let mut tracker = Tracker::new(Targets::Watched);
    let samples = s.run(&mut tracker, &[]);

    assert_eq!(samples.len(), 1);
    let sample = &samples[0];
    assert_eq!(sample.origin, Origin::Irq { source: 0, id: 25 });
    assert_eq!((sample.waker_cpu, sample.cpu), (1, 0));
    assert_eq!(
        sample.interposed,
        vec![NamedThread::named("irq/25-virtio0")]
    );
    assert_eq!(component_us(sample, Component::Wakeup), Some(10));
    assert_eq!(component_us(sample, Component::Sched), Some(10));
    assert_eq!(component_us(sample, Component::Total), Some(20));
    assert_eq!(component_us(sample, Component::Irq), None, "no timer");
    let causes = causes_us(sample);
    assert_eq!(causes[&Cause::Origin { source: 0, id: 25 }], 2);
    assert_eq!(
        causes[&Cause::Blocking(NamedThread::named("app"))],
        3,
        "ran on after the IRQ"
    );
    assert_eq!(
        causes[&Cause::Interposed(NamedThread::named("irq/25-virtio0"))],
        5
    );
    assert_eq!(
        causes[&Cause::Scheduler],
        10,
        "the idle CPU that ran the task"
    );
}

#[test]
fn softirq_raised_by_a_thread_is_its_own_origin() {
    let mut s = Stream::new();
    s.switch(0, 0, 1, 40, "sender");
    s.softirq(10, 0, 40, SoftirqRaise, 3);
    s.softirq(12, 0, 40, SoftirqEntry, 3);
    s.wake(15, 0, 40, 200, "server", true);
    s.softirq(16, 0, 40, SoftirqExit, 3);
    s.switch(18, 0, 40, 200, "server");
    let samples = s.run(&mut Tracker::new(Targets::Watched), &[]);

    let sample = &samples[0];
    assert_eq!(sample.origin, Origin::Softirq(3));
    assert_eq!(sample.origin_ns, 10 * US, "from the raise");
    assert!(
        sample.interposed.is_empty(),
        "run at bh enable, not by ksoftirqd"
    );
    let causes = causes_us(sample);
    assert_eq!(causes[&Cause::Softirq(3)], 4);
    assert_eq!(causes[&Cause::Blocking(NamedThread::named("sender"))], 4);
}

#[test]
fn threads_in_the_way_and_on_the_chain_carry_their_cgroups() {
    let (pod, neighbour) = (CgroupId(7), CgroupId(9));
    let mut s = Stream::new();
    s.switch(0, 0, 1, 40, "sender");
    s.in_cgroup(neighbour);
    s.irq(10, 0, 40, true, 0, 30);
    s.softirq(11, 0, 40, SoftirqRaise, 3);
    s.irq(12, 0, 40, false, 0, 30);
    // the softirq goes to ksoftirqd, which wakes the task: an interposed thread
    s.wake(13, 0, 40, 9, "ksoftirqd/0", false);
    s.in_cgroup(CgroupId(1));
    s.switch(14, 0, 40, 9, "ksoftirqd/0");
    s.in_cgroup(CgroupId(1));
    s.softirq(15, 0, 9, SoftirqEntry, 3);
    s.wake(16, 0, 9, 200, "server", true);
    s.in_cgroup(pod);
    s.softirq(17, 0, 9, SoftirqExit, 3);
    s.switch(18, 0, 9, 40, "sender");
    s.in_cgroup(neighbour);
    s.switch(20, 0, 40, 200, "server");
    s.in_cgroup(pod);
    let samples = s.run(&mut Tracker::new(Targets::Watched), &[]);

    let sample = &samples[0];
    assert_eq!(sample.cgroup, pod);
    let ksoftirqd = NamedThread::new(Comm::new("ksoftirqd/0"), CgroupId(1));
    assert_eq!(sample.interposed, vec![ksoftirqd]);
    let causes = causes_us(sample);
    assert!(
        causes.contains_key(&Cause::Interposed(ksoftirqd)),
        "{causes:?}"
    );
    let sender = NamedThread::new(Comm::new("sender"), neighbour);
    assert!(
        causes.contains_key(&Cause::Blocking(sender)),
        "the sender, in its own cgroup, kept the CPU: {causes:?}"
    );
}

#[test]
fn thread_wakeups_and_unmatched_activations_are_counted() {
    let mut s = Stream::new();
    // a plain thread wakes the watched task: not interrupt-driven
    s.wake(5, 0, 40, TASK, "il-wakeup/0", true);
    // an activation the trace saw (woken while still running: no switch) ...
    s.switch(9, 0, 0, TASK, "il-wakeup/0");
    s.timer_start(10, 0, TASK, HRTIMER, 20 * US);
    s.irq(20, 0, TASK, true, TIMER, VECTOR);
    s.timer_expire(21, 0, TASK, HRTIMER, WAKEUP_FN);
    s.wake(22, 0, TASK, TASK, "il-wakeup/0", true);
    s.timer_exit(23, 0, TASK, HRTIMER);
    s.irq(24, 0, TASK, false, TIMER, VECTOR);
    s.timer_start(30, 0, TASK, HRTIMER, 40 * US);
    let mut tracker = timer_tracker();
    // ... reported, and one reported with no trace at all
    let samples = s.run(&mut tracker, &[report(20, 26), report(40, 45)]);

    assert_eq!(tracker.counts.thread_wakeups, 1);
    assert_eq!(tracker.counts.woken_running, 1);
    assert_eq!(samples.len(), 1);
    assert_eq!(component_us(&samples[0], Component::Sched), Some(0));
    assert_eq!(component_us(&samples[0], Component::Total), Some(6));
    let undecomposed = tracker.take_undecomposed();
    assert_eq!(undecomposed, vec![report(40, 45)]);
    assert_eq!(tracker.counts.undecomposed, 1);
}

#[test]
fn a_window_older_than_the_trace_is_incomplete_and_untraced() {
    let mut s = Stream::new();
    s.timer_start(990, 0, TASK, HRTIMER, 1_000 * US);
    // tracing of CPU 1 began after the expiry the task waits on there
    s.irq(1_010, 1, 0, true, TIMER, VECTOR);
    s.timer_expire(1_011, 1, 0, HRTIMER, WAKEUP_FN);
    s.wake(1_012, 1, 0, TASK, "il-wakeup/1", true);
    s.timer_exit(1_013, 1, 0, HRTIMER);
    s.irq(1_014, 1, 0, false, TIMER, VECTOR);
    s.switch(1_015, 1, 0, TASK, "il-wakeup/1");
    let mut tracker = timer_tracker();
    let reports = [Report {
        cpu: 1,
        ..report(1_000, 1_016)
    }];
    let samples = s.run(&mut tracker, &reports);

    assert_eq!(tracker.counts.incomplete, 1);
    assert_eq!(causes_us(&samples[0])[&Cause::Untraced], 10);
    assert_eq!(
        samples[0].causes.iter().map(|c| c.1).sum::<u64>(),
        samples[0].total_ns()
    );
}

#[test]
fn a_lost_switch_in_never_pairs_with_a_later_wakeup() {
    let mut s = Stream::new();
    s.switch(1, 0, TASK, 0, "swapper/0");
    s.irq(10, 0, 0, true, 0, 25);
    s.wake(11, 0, 0, TASK, "server", true);
    s.irq(12, 0, 0, false, 0, 25);
    // the switch-in is lost; much later a plain thread wakes the task
    s.switch(4_000, 0, 0, 40, "sender");
    s.wake(5_000, 0, 40, TASK, "server", true);
    s.switch(5_001, 0, 40, TASK, "server");
    let mut tracker = Tracker::new(Targets::Watched);
    let samples = s.run(&mut tracker, &[]);
    assert!(samples.is_empty(), "no 4990 us sample: {samples:?}");
    assert_eq!(tracker.counts.thread_wakeups, 1);
}

#[test]
fn a_bottom_half_thread_woken_by_a_thread_drops_its_old_chain() {
    let mut s = Stream::new();
    s.irq(10, 0, 40, true, TIMER, VECTOR);
    s.wake(11, 0, 40, 20, "kworker/0:1", false);
    s.irq(12, 0, 40, false, TIMER, VECTOR);
    // a thread queues work much later and wakes the kworker itself
    s.wake(9_001, 0, 40, 20, "kworker/0:1", false);
    s.switch(9_002, 0, 40, 20, "kworker/0:1");
    s.wake(9_005, 0, 20, 200, "server", true);
    s.switch(9_006, 0, 20, 200, "server");
    let mut tracker = Tracker::new(Targets::Watched);
    let samples = s.run(&mut tracker, &[]);
    assert!(
        samples.is_empty(),
        "not blamed on the old timer IRQ: {samples:?}"
    );
    assert_eq!(tracker.counts.thread_wakeups, 1);
}

#[test]
fn a_record_stamped_before_the_one_ahead_of_it_cuts_no_negative_slice() {
    let mut s = direct_timer_wakeup();
    // after the handler's start at 1004, an NMI record stamped 1003
    let nmi = Event::new(EventData::Nmi { duration_ns: 500 }, 0, 1_003 * US);
    s.events.insert(4, nmi);
    let samples = s.run(&mut timer_tracker(), &[report(1_000, 1_012)]);
    let sample = &samples[0];
    assert!(
        sample.causes.iter().all(|&(_, ns)| ns <= sample.total_ns()),
        "{sample:?}"
    );
    assert_eq!(
        sample.causes.iter().map(|c| c.1).sum::<u64>(),
        sample.total_ns()
    );
}

#[test]
fn a_report_joins_the_stream_at_its_time_and_is_cut_there() {
    let s = direct_timer_wakeup();
    let mut tracker = timer_tracker();
    // the thread's report comes in before the checkpoints are drained, as it does live
    tracker.add_report(report(1_000, 1_012));
    for e in &s.events {
        tracker.add(e);
    }
    let samples = tracker.take_samples();
    assert_eq!(
        samples.len(),
        1,
        "cut without waiting for the end of the run"
    );
    assert_eq!(component_us(&samples[0], Component::Total), Some(12));
}

#[test]
fn wakeups_on_an_untraced_cpu_are_counted_not_explained() {
    let mut s = Stream::new();
    s.wake(10, 1, 40, 200, "server", true);
    s.switch(12, 0, 0, 200, "server");
    let mut tracker = Tracker::new(Targets::Watched).tracing_only(CpuList::single(0));
    let samples = s.run(&mut tracker, &[]);
    assert!(samples.is_empty());
    assert_eq!(
        (
            tracker.counts.untraced_wakeups,
            tracker.counts.thread_wakeups
        ),
        (1, 0)
    );
}

fn sample_with_total(us: u64, cause: Cause) -> Sample {
    Sample {
        tid: TASK,
        comm: Comm::new("t"),
        cgroup: CgroupId::UNKNOWN,
        cpu: 0,
        waker_cpu: 0,
        origin: Origin::Irq {
            source: TIMER,
            id: VECTOR.into(),
        },
        origin_ns: 0,
        timer: Some(TimerPart {
            hrtimer: HRTIMER,
            expected_ns: 0,
            handler_ns: US,
            handler_end_ns: Some(2 * US),
        }),
        wakeup_ns: US,
        switch_in_ns: us * US,
        user_ns: Some(us * US),
        interposed: Vec::new(),
        switches: 1,
        causes: vec![(cause, us * US)],
    }
}

#[test]
fn stats_keep_the_worst_rank_causes_and_stop() {
    let mut stats = WakeupStats::new(StatsConfig {
        bucket_ns: US,
        entries: 64,
        worst: 2,
        stop_total_ns: Some(40 * US),
        stop_irq_ns: None,
    });
    for (us, cause) in [
        (10, Cause::Scheduler),
        (50, Cause::IrqDelay),
        (30, Cause::Scheduler),
        (45, Cause::Scheduler),
    ] {
        stats.add(sample_with_total(us, cause));
    }
    stats.add_total_only(&report(0, 70));
    let totals: Vec<u64> = stats.worst.iter().map(|s| s.total_ns() / US).collect();
    assert_eq!(totals, vec![50, 45]);
    match &stats.stop {
        Some(Stop::Sample(sample)) => assert_eq!(sample.total_ns(), 50 * US, "the first over 40"),
        other => panic!("expected a stop sample, got {other:?}"),
    }
    let ranked = stats.ranked_causes();
    assert_eq!(ranked[0].0, Cause::Scheduler);
    assert_eq!(
        ranked[0].1,
        CauseStats {
            samples: 3,
            total_ns: 85 * US,
            max_ns: 45 * US
        }
    );
    let cpu = &stats.cpus[&0];
    assert_eq!((cpu.activations, cpu.samples), (5, 4));
    let total = cpu.series(Component::Total).expect("totals");
    assert_eq!(
        (total.min_ns(), total.max_ns()),
        (Some(10 * US), Some(70 * US))
    );
    assert_eq!(
        cpu.series(Component::Handler).map(Distribution::count),
        Some(4)
    );
    assert_eq!(stats.latency_ns, 135 * US, "decomposed samples only");
    assert_eq!(
        (stats.threads[&TASK].samples, stats.threads[&TASK].max_ns),
        (4, 50 * US)
    );
}

#[test]
fn stats_of_a_million_threads_and_causes_stay_bounded_and_add_up() {
    let mut stats = WakeupStats::new(StatsConfig {
        bucket_ns: US,
        entries: 64,
        worst: 2,
        ..StatsConfig::default()
    });
    for tid in 0..1_000_000u32 {
        // each sample a new thread, blocked by a new short-lived thread, through a new
        // kworker; and one thread that keeps coming back
        let thread = NamedThread::named(&format!("t{tid}"));
        let mut sample = sample_with_total(1, Cause::Thread(thread));
        (sample.tid, sample.interposed) = (TASK + 1 + tid, vec![thread]);
        stats.add(sample);
        stats.add(sample_with_total(2, Cause::Scheduler));
    }
    assert!(stats.causes.len() <= stats::CAUSES);
    assert!(stats.threads.len() <= stats::THREADS);
    assert!(stats.interposed.len() <= stats::INTERPOSED);
    let ranked = stats.ranked_causes();
    assert_eq!(ranked[0].0, Cause::Scheduler);
    assert_eq!(ranked[0].1.samples, 1_000_000);
    let cause_time: u64 = ranked.iter().map(|(_, s)| s.total_ns).sum();
    assert_eq!(
        cause_time, stats.latency_ns,
        "the folded causes still add up"
    );
    assert!(ranked.iter().any(|(cause, _)| *cause == Cause::Other));
    assert_eq!(stats.threads[&TASK].samples, 1_000_000);
    let thread_samples: u64 = stats.threads.values().map(|t| t.samples).sum();
    let folded = stats.threads.other().map_or(0, |t| t.samples);
    assert_eq!(thread_samples + folded, 2_000_000);
    let interposed: u64 = stats.interposed.values().sum();
    assert_eq!(interposed + stats.interposed.other().unwrap(), 1_000_000);
}

#[test]
fn task_mode_forgets_wakeups_whose_switch_never_came() {
    let mut tracker = Tracker::new(Targets::Watched);
    let mut s = Stream::new();
    for tid in 1..=1_000_000u32 {
        // an interrupt wakes a watched thread, whose switch-in the ring lost
        let us = u64::from(tid) * 10;
        s.irq(us, 0, 0, true, 0, 11);
        s.wake(us + 1, 0, 0, tid, "hackbench", true);
        s.irq(us + 2, 0, 0, false, 0, 11);
    }
    s.run(&mut tracker, &[]);
    let (pending, _, _) = tracker.held();
    assert!(pending <= 1 << 16);
    assert_eq!(tracker.counts.forgotten_wakeups + pending as u64, 1_000_000);
}

#[test]
fn timer_mode_gives_up_reports_whose_wakeups_never_came() {
    let mut tracker = timer_tracker();
    // the checkpoints stopped (all lost): the reports pile up, the oldest are given up
    let mut s = Stream::new();
    armed_and_asleep(&mut s);
    let reports: Vec<Report> = (1..=200_000)
        .map(|n| report(n * 1_000, n * 1_000 + 5))
        .collect();
    for e in &s.events {
        tracker.add(e);
    }
    for &report in &reports {
        tracker.add_report(report);
        let (_, incoming, waiting) = tracker.held();
        assert!(incoming <= 1 << 16 && waiting <= 1024);
    }
    tracker.finish();
    assert_eq!(tracker.counts.undecomposed, 200_000);
    assert_eq!(tracker.take_undecomposed().len(), 200_000);
}
