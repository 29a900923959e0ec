//! Collect: user-space threads that measure (workloads), read the probes and stimulate.

pub mod account;
pub mod bh;
pub mod clock;
pub mod inject;
pub mod load;
pub mod noise;
pub mod sched;
pub mod trigger;
pub mod wakeup;
pub mod workload;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a run drains its ring buffer.
pub(crate) const DRAIN_INTERVAL: Duration = Duration::from_millis(100);
/// How often a run reports its progress.
const TICK: Duration = Duration::from_secs(1);

/// A run's pace: how long to wait for the next drain, when its once-a-second report is due, and when it is over.
pub(crate) struct RunPace {
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

    /// The wait before the next drain, cut short so the run lasts what was asked.
    pub(crate) fn wait(&self) -> Duration {
        self.deadline.map_or(DRAIN_INTERVAL, |d| {
            DRAIN_INTERVAL.min(d.saturating_duration_since(Instant::now()))
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

/// Sets the flag when dropped: a thread that ends, however it ends, stops the others.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
