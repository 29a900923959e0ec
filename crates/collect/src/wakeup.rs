//! Runs a wakeup measurement: the timer threads (timer mode) or the watched process
//! (task mode), the probe, and the reader that feeds checkpoints and the threads'
//! reports to the tracker as they arrive.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};

use super::clock::{monotonic_ns, skip_missed, sleep_until};
use super::sched::{gettid, set_affinity, set_priority};
use super::{EventStream, RunPace, StopOnDrop, Tick};
use crate::cgroup::CgroupFilter;
use crate::held::Held;
use crate::tap::Tap;
use irqlens_analyze::loss::Losses;
use irqlens_analyze::wakeup::{Targets, Tracker, WakeupStats};
use irqlens_model::event::{Event, EventData};
use irqlens_model::run::RunCommon;
use irqlens_model::sched::Priority;
use irqlens_model::tune::comm_matches;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::{
    Report, TimerOptions, TimerThread, WakeupMode, WakeupOptions, WakeupRunInfo, Watched,
};
use irqlens_probe::checkpoint::{CheckpointProbe, Checkpoints, TIMER_THREAD_PREFIX};
use irqlens_record::{Line, Reader};

/// How often a timer thread sleeping through a long period checks for a stop.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// What a wakeup run gives.
pub struct WakeupOutcome {
    /// The statistics.
    pub stats: WakeupStats,
    /// How the run went.
    pub info: WakeupRunInfo,
}

/// Measures until `options.duration` passes, a stop threshold is hit or `stop` is set;
/// `on_tick` sees the statistics once a second, `warn` what the run goes without.
pub fn run(
    options: &WakeupOptions,
    stop: &AtomicBool,
    tap: &mut Tap,
    on_tick: impl FnMut(&WakeupStats, Tick),
    warn: impl FnMut(String),
) -> Result<WakeupOutcome> {
    run_marking(options, stop, tap, on_tick, warn, &AtomicBool::new(false))
}

/// [`run`], setting `measuring` once its probes are on and its timer threads run: a run
/// beside it (trial's point) starts then, not at the first tick a second later.
pub fn run_marking(
    options: &WakeupOptions,
    stop: &AtomicBool,
    tap: &mut Tap,
    mut on_tick: impl FnMut(&WakeupStats, Tick),
    warn: impl FnMut(String),
    measuring: &AtomicBool,
) -> Result<WakeupOutcome> {
    let traced = options.mode.traced();
    // what --cgroup leaves out is never watched, in the recording too, so that a replay
    // measures what the run did without the machine's cgroups
    let mut cgroups = CgroupFilter::new(&options.cgroups)?;
    super::keep_freed_memory();
    // as cyclictest: no deep idle state to wake from, no page fault in a timer thread
    let lock_memory = options.mode.is_timer() && super::may_lock_memory();
    let held = Held::apply(options.dma_latency_us, lock_memory, warn);
    // timer mode watches its own timer threads, not the reader's sleeps
    let (watched, checkpoints) = match &options.mode {
        WakeupMode::Timer(_) => (
            Watched::Process(std::process::id()),
            Checkpoints::TimerThreads,
        ),
        WakeupMode::Task(watched) => (watched.clone(), Checkpoints::Timers),
    };
    let mut storage = MaybeUninit::uninit();
    let probe = traced
        .then(|| CheckpointProbe::load(&mut storage, checkpoints, &options.cpus, &watched))
        .transpose()?;
    let mut events = probe
        .as_ref()
        .map(|p| p.events().map(EventStream::new))
        .transpose()?;
    let missed = AtomicU64::new(0);
    let (report_tx, report_rx) = mpsc::channel::<Report>();
    let started = Instant::now();
    if let Some(probe) = &probe {
        probe.enable();
    }

    let (threads, mut pipeline, elapsed_ns) = std::thread::scope(|scope| -> Result<_> {
        let _stop_threads = StopOnDrop(stop);
        let (threads, handles) = match &options.mode {
            WakeupMode::Timer(timer) => {
                start_timer_threads(scope, &options.cpus, timer, &report_tx, &missed, stop)?
            }
            WakeupMode::Task(_) => (Vec::new(), Vec::new()),
        };
        let timer_tids = options
            .mode
            .is_timer()
            .then(|| threads.iter().map(|t| t.tid).collect::<Vec<_>>());
        if let Some(tids) = &timer_tids {
            tap.put(Line::TimerThreads { tids: tids.clone() });
        }
        let mut pipeline = Pipeline::new(options, timer_tids);
        let mut pace = RunPace::after_warm_up(started, options.warm_up, options.duration);
        let _reader = super::raise_reader();
        measuring.store(true, Ordering::Relaxed);
        while !stop.load(Ordering::Relaxed) {
            let wait = pace.wait();
            let warming_up = pace.warming_up(Instant::now());
            match &mut events {
                // what the warm-up drains is dropped: its samples and stops never exist
                Some(events) if warming_up => {
                    events.wait_and_take(wait);
                    report_rx.try_iter().for_each(drop);
                }
                Some(events) => {
                    let taken = mark_watched(events.wait_and_take(wait), cgroups.as_mut());
                    pipeline.feed(taken, report_rx.try_iter(), tap);
                }
                None => {
                    std::thread::sleep(wait);
                    if warming_up {
                        report_rx.try_iter().for_each(drop);
                    } else {
                        pipeline.feed_untraced(report_rx.try_iter(), tap);
                    }
                }
            }
            if warming_up && !pace.warming_up(Instant::now()) {
                missed.store(0, Ordering::Relaxed);
            }
            let now = Instant::now();
            if let Some(elapsed) = pace.tick(now) {
                let lost = events.as_ref().map(|e| e.lost_by_cpu()).unwrap_or_default();
                let tick = Tick::new(elapsed, Losses::checkpoints, lost, &options.cpus);
                on_tick(&pipeline.stats, tick);
            }
            if pace.over(now) || pipeline.stats.stop.is_some() {
                stop.store(true, Ordering::Relaxed);
            }
        }
        for handle in handles {
            handle
                .join()
                .map_err(|_| anyhow!("a timer thread panicked"))??;
        }
        let elapsed = pace.measuring_since().elapsed();
        Ok((threads, pipeline, elapsed.as_nanos() as u64))
    })?;
    drop(report_tx);
    // the timer threads are gone, their last wakeups long recorded: stop tracing now
    if let (Some(probe), Some(events)) = (&probe, &mut events) {
        probe.disable();
        let taken = mark_watched(events.take_all(), cgroups.as_mut());
        pipeline.feed(taken, report_rx.try_iter(), tap);
    } else {
        pipeline.feed_untraced(report_rx.try_iter(), tap);
    }
    let Pipeline { tracker, stats } = pipeline.finish();

    let info = WakeupRunInfo {
        common: RunCommon {
            elapsed_ns,
            events: tracker.counts.events,
            lost_events: events.as_ref().map_or(0, |e| e.lost()),
            lost_by_cpu: events.as_ref().map(|e| e.lost_by_cpu()).unwrap_or_default(),
            programs: probe.as_ref().map_or(0, |p| p.programs()),
            skipped_tracepoints: probe.as_ref().map_or(Vec::new(), |p| p.skipped.clone()),
            interrupted: false,
        },
        traced,
        tracking: tracker.counts.clone(),
        threads,
        missed_periods: missed.load(Ordering::Relaxed),
        held: held.settings().clone(),
    };
    Ok(WakeupOutcome { stats, info })
}

/// Re-analyzes a recorded run of `options` (the info is the recording's).
pub fn replay(options: &WakeupOptions, reader: &mut Reader) -> Result<WakeupOutcome> {
    let traced = options.mode.traced();
    let timer_tids = if options.mode.is_timer() {
        match reader.next_input()? {
            Some(Line::TimerThreads { tids }) => Some(tids),
            _ => return Err(reader.error("a timer-mode run's first input is its threads")),
        }
    } else {
        None
    };
    let mut pipeline = Pipeline::new(options, timer_tids);
    let no_tap = &mut Tap::default();
    // a live drain feeds its checkpoints, then the reports that came meanwhile; a long
    // run of checkpoints (task mode has no reports) is fed in batches, which changes
    // nothing but the memory it takes
    const BATCH: usize = 4096;
    let (mut events, mut reports) = (Vec::new(), Vec::new());
    while let Some(line) = reader.next_input()? {
        match line {
            Line::Event(event) => {
                if !reports.is_empty() || events.len() == BATCH {
                    pipeline.feed(std::mem::take(&mut events), reports.drain(..), no_tap);
                }
                events.push(event);
            }
            Line::WakeupReport(report) if traced => reports.push(report),
            Line::WakeupReport(report) => pipeline.feed_untraced(std::iter::once(report), no_tap),
            other => return Err(reader.unexpected(&other)),
        }
    }
    pipeline.feed(events, reports.into_iter(), no_tap);
    let mut info: WakeupRunInfo = reader.info()?;
    // the checkpoints it tracked, which format 1 kept under `tracking` only
    info.common.events = info.tracking.events;
    Ok(WakeupOutcome {
        stats: pipeline.finish().stats,
        info,
    })
}

/// The analysis a run feeds as checkpoints and reports arrive, live or recorded.
struct Pipeline {
    tracker: Tracker,
    stats: WakeupStats,
}

impl Pipeline {
    /// `timer_tids`: timer mode's measurement threads; task mode has none.
    fn new(options: &WakeupOptions, timer_tids: Option<Vec<u32>>) -> Self {
        let targets = match timer_tids {
            Some(tids) => Targets::Timers(tids.into_iter().collect()),
            None => Targets::Watched,
        };
        Pipeline {
            tracker: Tracker::new(targets).tracing_only(options.cpus.clone()),
            stats: WakeupStats::new(options.stats),
        }
    }

    fn feed(&mut self, events: Vec<Event>, reports: impl Iterator<Item = Report>, tap: &mut Tap) {
        for event in events {
            self.tracker.add(&event);
            tap.put(Line::Event(event));
        }
        for report in reports {
            self.tracker.add_report(report);
            tap.put(Line::WakeupReport(report));
        }
        self.drain();
    }

    /// `--no-trace`: the threads' totals are all there is.
    fn feed_untraced(&mut self, reports: impl Iterator<Item = Report>, tap: &mut Tap) {
        for report in reports {
            self.stats.add_total_only(&report);
            tap.put(Line::WakeupReport(report));
        }
    }

    fn finish(mut self) -> Self {
        self.tracker.finish();
        self.drain();
        self
    }

    fn drain(&mut self) {
        for sample in self.tracker.take_samples() {
            self.stats.add(sample);
        }
        for report in self.tracker.take_undecomposed() {
            self.stats.add_total_only(&report);
        }
    }
}

type TimerHandles<'scope> = Vec<std::thread::ScopedJoinHandle<'scope, Result<()>>>;

/// One pinned thread per CPU; returns once each has its priority and has been told to
/// start (or one failed, and none starts).
fn start_timer_threads<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    cpus: &CpuList,
    timer: &'env TimerOptions,
    reports: &Sender<Report>,
    missed: &'env AtomicU64,
    stop: &'env AtomicBool,
) -> Result<(Vec<TimerThread>, TimerHandles<'scope>)> {
    let (ready_tx, ready_rx) = mpsc::channel::<Result<TimerThread>>();
    let mut starts = Vec::new();
    let handles: TimerHandles<'scope> = cpus
        .iter()
        .enumerate()
        .map(|(index, cpu)| {
            let (reports, ready) = (reports.clone(), ready_tx.clone());
            let (start_tx, start_rx) = mpsc::channel::<u64>();
            starts.push(start_tx);
            std::thread::Builder::new()
                .name(format!("{TIMER_THREAD_PREFIX}{cpu}"))
                .spawn_scoped(scope, move || {
                    let _stop_all = StopOnDrop(stop);
                    let tid = match prepare(cpu, timer.priority) {
                        Ok(tid) => tid,
                        Err(err) => {
                            let _ = ready.send(Err(err));
                            return Ok(());
                        }
                    };
                    let _ = ready.send(Ok(TimerThread { cpu, tid }));
                    drop(ready);
                    // no start: another thread failed
                    let Ok(start_ns) = start_rx.recv() else {
                        return Ok(());
                    };
                    let now = monotonic_ns();
                    let first = first_expiry(now, timer, start_ns, index);
                    let thread = ThreadId { cpu, tid };
                    sleep_and_report(thread, first, now, timer.period, &reports, missed, stop);
                    Ok(())
                })
                .map_err(|e| anyhow!("starting a timer thread: {e}"))
        })
        .collect::<Result<_>>()?;
    drop(ready_tx);
    let threads = ready_rx
        .iter()
        .take(handles.len())
        .collect::<Result<Vec<_>>>();
    match threads {
        Ok(threads) => {
            // the aligned threads' common start, read once all are ready
            let start_ns = monotonic_ns();
            for start in starts {
                let _ = start.send(start_ns);
            }
            Ok((threads, handles))
        }
        Err(err) => {
            stop.store(true, Ordering::Relaxed);
            Err(err)
        }
    }
}

fn prepare(cpu: u32, priority: Priority) -> Result<u32> {
    set_affinity(&CpuList::single(cpu))?;
    set_priority(priority)?;
    Ok(gettid())
}

/// A timer thread's first expiry, CLOCK_MONOTONIC ns. By default one period after the
/// thread reads `now_ns`, as cyclictest: each thread at a phase of its own, which does
/// not sit on the scheduler tick (a grid of whole periods would put every 4th expiry of
/// a 1 ms period on a 250 Hz tick). Aligned (-A): on the grid of whole periods of
/// CLOCK_MONOTONIC, from the second grid point after the common `start_ns`, so every
/// thread (and anything else on that grid) wakes at the same phase; the thread of
/// `index` `index` offsets later, as cyclictest -A (whole periods later for a thread
/// that was not woken in time to make it: its phase is what counts).
fn first_expiry(now_ns: u64, timer: &TimerOptions, start_ns: u64, index: usize) -> u64 {
    let period = timer.period.as_nanos() as u64;
    match timer.aligned_ns {
        None => now_ns + period,
        Some(offset) => {
            let aligned = (start_ns / period + 2) * period + offset * index as u64;
            skip_missed(aligned, period, now_ns).0
        }
    }
}

/// Who reports.
#[derive(Clone, Copy)]
struct ThreadId {
    cpu: u32,
    tid: u32,
}

/// The cyclictest loop: sleep until the next expiry (clock_nanosleep, TIMER_ABSTIME),
/// read the clock once, report. `now` is the last clock read, before `next`.
fn sleep_and_report(
    thread: ThreadId,
    mut next: u64,
    mut now: u64,
    period: Duration,
    reports: &Sender<Report>,
    missed: &AtomicU64,
    stop: &AtomicBool,
) {
    let period = period.as_nanos() as u64;
    let stop_check = STOP_CHECK.as_nanos() as u64;
    while !stop.load(Ordering::Relaxed) {
        // long periods sleep in slices, so a stop is seen within one
        let woken = sleep_until(next.min(now + stop_check));
        // the wakeup's one clock read: the latency ends here
        now = monotonic_ns();
        if !woken || now < next {
            continue;
        }
        let report = Report {
            tid: thread.tid,
            cpu: thread.cpu,
            expected_ns: next,
            user_ns: now,
        };
        if reports.send(report).is_err() {
            return;
        }
        let (after, behind) = skip_missed(next + period, period, now);
        next = after;
        if behind > 0 {
            missed.fetch_add(behind, Ordering::Relaxed);
        }
    }
}

/// With `--cgroup`, the wakeups of watched tasks outside the cgroups become wakeups of
/// tasks not watched; otherwise the events pass untouched.
fn mark_watched(mut events: Vec<Event>, filter: Option<&mut CgroupFilter>) -> Vec<Event> {
    let Some(filter) = filter else {
        return events;
    };
    for event in &mut events {
        if let EventData::Wakeup {
            woken_cgroup,
            watched: watched @ true,
            ..
        } = &mut event.what
        {
            *watched = filter.admits(*woken_cgroup);
        }
    }
    events
}

/// Task mode: the watched process must exist now (its threads are followed as they
/// come and go), and so must a thread of the watched name: a name is matched as its
/// threads wake, so one that starts later would be measured, but a run where none runs
/// measures nothing and says nothing (a name mistyped), so it is refused, as `--pid` of
/// a process that is gone is.
pub fn check_watched(watched: &Watched) -> Result<()> {
    match watched {
        Watched::Process(pid) => {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                bail!("--pid {pid}: no such process");
            }
        }
        Watched::Name(name) => {
            if name.is_empty() || name.len() > 15 {
                bail!("--comm '{name}': a thread name has 1 to 15 bytes (the kernel's comm)");
            }
            let threads = crate::system::thread_runtimes();
            if !threads
                .values()
                .any(|thread| comm_matches(name, &thread.comm))
            {
                bail!(
                    "--comm '{name}': no thread has that name now (start it first, or watch \
                     a process with --pid)"
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(period_us: u64, aligned_us: Option<u64>) -> TimerOptions {
        TimerOptions {
            period: Duration::from_micros(period_us),
            priority: Priority::Fifo(95),
            trace: false,
            aligned_ns: aligned_us.map(|us| us * 1_000),
        }
    }

    #[test]
    fn each_thread_starts_one_period_after_it_is_ready() {
        // not rounded to a whole period: the phase is the thread's own
        let timer = timer(1_000, None);
        assert_eq!(first_expiry(7_123_457, &timer, 5_000_000, 0), 8_123_457);
        assert_eq!(first_expiry(7_123_999, &timer, 5_000_000, 1), 8_123_999);
    }

    #[test]
    fn aligned_threads_start_on_the_period_grid_together_or_offset() {
        let together = timer(1_000, Some(0));
        let firsts: Vec<u64> = (0..3)
            .map(|index| first_expiry(5_000_200 + index as u64, &together, 5_000_123, index))
            .collect();
        assert_eq!(firsts, [7_000_000; 3]);
        let staggered = timer(1_000, Some(100));
        let firsts: Vec<u64> = (0..3)
            .map(|index| first_expiry(5_000_200, &staggered, 5_000_123, index))
            .collect();
        assert_eq!(firsts, [7_000_000, 7_100_000, 7_200_000]);
        // a thread that read the clock after its aligned expiry keeps the phase
        assert_eq!(first_expiry(7_150_000, &staggered, 5_000_123, 1), 8_100_000);
    }
}
