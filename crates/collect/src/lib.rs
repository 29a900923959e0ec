//! Collect: the runs. User-space threads that measure (workloads), read the probes and
//! stimulate, the tap that hands their inputs to recordings, and what irqlens reads of
//! the machine (/proc, /sys).

#![warn(missing_docs)]

pub mod account;
pub mod account_bpf;
pub mod bh;
pub mod cgroup;
pub mod check;
pub mod claim;
pub mod clock;
pub mod held;
pub mod journal;
pub mod knob;
pub mod load;
pub mod machine;
pub mod netns;
pub mod noise;
pub mod sched;
pub mod steer;
pub mod system;
pub mod tap;
pub mod trial;
pub mod trigger;
pub mod wakeup;
pub mod workload;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clock::monotonic_ns;
use irqlens_analyze::loss::Losses;
use irqlens_model::event::Event;
use irqlens_model::sched::Priority;
use irqlens_model::units::CpuList;
use irqlens_probe::RecordAreas;
use irqlens_record::{Line, Reader};
use sched::RaisedPriority;

/// The longest a run waits between two drains of the probe's record areas (sooner when
/// they fill faster: nothing in the kernel wakes the reader).
pub(crate) const DRAIN_INTERVAL: Duration = Duration::from_millis(100);
/// The thread that drains the probe's record areas runs above every SCHED_OTHER task,
/// so a busy machine (hundreds of runnable tasks) cannot starve it into losing records;
/// its time is irqlens's own and shows as such (noise's irqlens thread, account's
/// [irqlens] row). Real-time tasks (priority 2 and up) still come first.
const READER_PRIORITY: Priority = Priority::Fifo(1);

/// Raises the calling thread, the reader, to READER_PRIORITY until dropped. Best effort:
/// without it the reader only risks losses, which are counted and shown.
pub(crate) fn raise_reader() -> Option<RaisedPriority> {
    RaisedPriority::raise(READER_PRIORITY).ok()
}

/// Set once a process says it outlives its runs (see [`forgo_memory_locks`]).
static MEMORY_LOCKS_FORGONE: AtomicBool = AtomicBool::new(false);

/// For a process that lives on after its runs (the agent): no run locks the process's
/// memory (mlockall) from now on. MCL_FUTURE would pin every allocation of every other
/// thread while a run lasts, and MCL_CURRENT fault in every mapping (each thread's whole
/// stack), pages that stay resident after munlockall: the agent's memory would grow at
/// each run. Its runs' measurement threads may then take a page fault, which shows as
/// hardware noise or latency, as on a machine short of memory.
pub fn forgo_memory_locks() {
    MEMORY_LOCKS_FORGONE.store(true, Ordering::Relaxed);
}

/// Whether a run may lock the process's memory (see [`forgo_memory_locks`]).
pub(crate) fn may_lock_memory() -> bool {
    !MEMORY_LOCKS_FORGONE.load(Ordering::Relaxed)
}

/// Keeps what the process frees for reuse instead of giving it back: an munmap or a
/// heap trim sends TLB-flush IPIs to every CPU the process ran on (interrupts irqlens
/// would cause on the traced CPUs), and each drain's batch would be mapped anew. RSS
/// then rises to the largest batch and stays flat.
pub(crate) fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes glibc malloc's tunables (under its own lock); memory
    // already allocated is unaffected.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// How often a run reports its progress.
const TICK: Duration = Duration::from_secs(1);

/// A run's pace: how long to wait for the next drain, when its once-a-second report is due, and when it is over.
pub(crate) struct RunPace {
    /// When measuring starts: the run's start, or the end of its warm-up.
    started: Instant,
    deadline: Option<Instant>,
    next_tick: Instant,
}

impl RunPace {
    pub(crate) fn new(started: Instant, duration: Option<Duration>) -> Self {
        RunPace {
            started,
            deadline: duration.map(|d| started + d),
            next_tick: started + TICK,
        }
    }

    /// A run that warms up for `warm_up` first: its duration and its ticks count from the
    /// end of the warm-up (as rtla's --warm-up).
    pub(crate) fn after_warm_up(
        started: Instant,
        warm_up: Option<Duration>,
        duration: Option<Duration>,
    ) -> Self {
        Self::new(started + warm_up.unwrap_or_default(), duration)
    }

    /// When measuring starts (after the warm-up).
    pub(crate) fn measuring_since(&self) -> Instant {
        self.started
    }

    /// Whether the run still warms up at `now`: what it sees is discarded.
    pub(crate) fn warming_up(&self, now: Instant) -> bool {
        now < self.started
    }

    /// The wait before the next drain, cut short so the run lasts what was asked and the
    /// warm-up ends on a drain.
    pub(crate) fn wait(&self) -> Duration {
        let now = Instant::now();
        let until = if self.warming_up(now) {
            Some(self.started)
        } else {
            self.deadline
        };
        until.map_or(DRAIN_INTERVAL, |until| {
            DRAIN_INTERVAL.min(until.saturating_duration_since(now))
        })
    }

    /// The time since the start, when a report is due at `now`.
    pub(crate) fn tick(&mut self, now: Instant) -> Option<Duration> {
        if now < self.next_tick {
            return None;
        }
        self.next_tick += TICK;
        Some(now - self.started)
    }

    pub(crate) fn over(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }
}

/// What a run tells its `on_tick` once a second besides its analysis.
#[derive(Clone, Debug)]
pub struct Tick {
    /// The time measured so far.
    pub elapsed: Duration,
    /// What the probe lost so far, per CPU: each measured CPU has a count (0 included),
    /// so that a counter of losses exists before its first loss.
    pub lost: Losses,
}

impl Tick {
    /// At `elapsed`, with the losses of a probe that counts `by_cpu` (CPUs that lost
    /// some), `what` naming what it emits, measuring `cpus`.
    pub(crate) fn new(
        elapsed: Duration,
        what: fn(u64) -> Losses,
        by_cpu: BTreeMap<u32, u64>,
        cpus: &CpuList,
    ) -> Self {
        let mut all: BTreeMap<u32, u64> = cpus.iter().map(|cpu| (cpu, 0)).collect();
        all.extend(by_cpu);
        Tick {
            elapsed,
            lost: what(all.values().sum()).per_cpu(all),
        }
    }
}

/// Checkpoints held back at a drain if they are this recent: a program on another CPU
/// may have read the clock before them and not yet committed its record.
const HOLDBACK_NS: u64 = 2_000_000;

/// Every CPU's checkpoints in one stream in time order, as the analyses match them
/// across CPUs (a wakeup on one, the switch on another).
pub(crate) struct EventStream<'p> {
    areas: RecordAreas<'p, Event>,
    /// Taken but too recent to hand on yet, in time order.
    held: Vec<Event>,
}

impl<'p> EventStream<'p> {
    pub(crate) fn new(areas: RecordAreas<'p, Event>) -> Self {
        EventStream {
            areas,
            held: Vec::new(),
        }
    }

    /// Waits until a drain is due (at most `max`), then takes the checkpoints older than
    /// a moment ago.
    pub(crate) fn wait_and_take(&mut self, max: Duration) -> Vec<Event> {
        self.areas.wait(max);
        let cut = monotonic_ns().saturating_sub(HOLDBACK_NS);
        let mut events = self.take_all();
        self.held = events.split_off(events.partition_point(|e| e.time_ns <= cut));
        events
    }

    /// Takes every checkpoint committed so far (the programs are stopped: none is late).
    pub(crate) fn take_all(&mut self) -> Vec<Event> {
        let mut events = std::mem::take(&mut self.held);
        events.extend(self.areas.take());
        // each CPU's checkpoints are already in order: the sort merges runs
        events.sort_by_key(|e| e.time_ns);
        events
    }

    pub(crate) fn lost(&self) -> u64 {
        self.areas.lost()
    }

    pub(crate) fn lost_by_cpu(&self) -> std::collections::BTreeMap<u32, u64> {
        self.areas.lost_by_cpu()
    }
}

/// Sets the flag when dropped: a thread that ends, however it ends, stops the others.
pub struct StopOnDrop<'a>(pub &'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Feeds a recording's checkpoints to `feed` in batches, as a live run drains them;
/// any other input is an error.
pub(crate) fn replay_events(
    reader: &mut Reader,
    mut feed: impl FnMut(Vec<Event>),
) -> anyhow::Result<()> {
    const BATCH: usize = 4096;
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(line) = reader.next_input()? {
        match line {
            Line::Event(event) => batch.push(event),
            other => return Err(reader.unexpected(&other)),
        }
        if batch.len() == BATCH {
            feed(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
        }
    }
    feed(batch);
    Ok(())
}
