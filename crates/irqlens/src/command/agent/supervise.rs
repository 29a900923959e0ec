//! A capability of the agent in a thread of its own: it runs until told to stop; when it
//! fails (its probe does not load, its run ends in an error or a panic) it says so in the
//! log and its health, and is started again after a back-off, without touching the
//! other capabilities.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use irqlens_present::prometheus::{CapabilityHealth, Exporter};

/// How a capability goes, kept for the agent's whole life (its counters survive a
/// restart), shared by its thread and the agent's loop.
#[derive(Debug)]
pub struct Health {
    name: &'static str,
    up: AtomicBool,
    starts: AtomicU64,
    failures: AtomicU64,
}

impl Health {
    pub fn new(name: &'static str) -> Arc<Health> {
        Arc::new(Health {
            name,
            up: AtomicBool::new(false),
            starts: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        })
    }

    /// Called by a run at each of its ticks: its probes are attached and drained.
    pub fn running(&self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            tracing::info!(capability = self.name, "attached");
        }
    }

    /// As the endpoint serves it.
    pub fn now(&self) -> CapabilityHealth {
        CapabilityHealth {
            name: self.name,
            up: self.up.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
        }
    }

    /// Times started and failed so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.starts.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
        )
    }

    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The waits before a failed capability starts again: `first`, doubled at each failure
/// in a row up to `most`; a run that lasted `settled` starts the series again.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    pub first: Duration,
    pub most: Duration,
    pub settled: Duration,
}

/// A few seconds for a passing failure (a probe that lost a race with a module load),
/// five minutes at most for one that stays, so that a broken capability costs little.
pub const BACKOFF: Backoff = Backoff {
    first: Duration::from_secs(2),
    most: Duration::from_secs(300),
    settled: Duration::from_secs(600),
};

/// What a capability's run is given: when to stop, its handle on the endpoint, and its
/// health to report ticks to. It returns when `stop` is set, or with its error.
pub type RunCapability =
    Box<dyn FnMut(&AtomicBool, &mut Exporter, &Health) -> Result<()> + Send + 'static>;

/// A capability running in its thread.
pub struct Supervised {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Supervised {
    /// Starts `run` in a thread named after the capability, publishing into `exporter`.
    pub fn start(
        health: Arc<Health>,
        exporter: Exporter,
        backoff: Backoff,
        run: RunCapability,
    ) -> Result<Supervised> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("irqlens/{}", health.name))
            .spawn(move || supervise(&health, &stopping, exporter, backoff, run))
            .context("cannot start a capability's thread")?;
        Ok(Supervised {
            stop,
            thread: Some(thread),
        })
    }
}

impl Supervised {
    /// Asks the run to stop without waiting for it (so that several stop together).
    pub fn ask_to_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Drop for Supervised {
    /// Stops the run and waits for its thread: its probes are detached when it returns.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs, and runs again after each failure, until `stop`.
fn supervise(
    health: &Health,
    stop: &AtomicBool,
    mut exporter: Exporter,
    backoff: Backoff,
    mut run: RunCapability,
) {
    let name = health.name;
    let mut wait = backoff.first;
    while !stop.load(Ordering::Relaxed) {
        health.starts.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(capability = name, "starting");
        let started = Instant::now();
        // a panic is this capability's failure, not the agent's
        let result = catch_unwind(AssertUnwindSafe(|| run(stop, &mut exporter, health)))
            .unwrap_or_else(|_| Err(anyhow!("it panicked")));
        health.up.store(false, Ordering::Relaxed);
        exporter.remove(name);
        let error = match result {
            Ok(()) if stop.load(Ordering::Relaxed) => break,
            Ok(()) => anyhow!("its run ended by itself"),
            Err(error) => error,
        };
        health.failures.fetch_add(1, Ordering::Relaxed);
        if started.elapsed() >= backoff.settled {
            wait = backoff.first;
        }
        tracing::error!(
            capability = name,
            error = %format!("{error:#}"),
            retry_in_s = wait.as_secs_f64(),
            "capability failed"
        );
        sleep_unless(stop, wait);
        wait = (wait * 2).min(backoff.most);
    }
    tracing::info!(capability = name, "stopped");
}

/// Sleeps for `wait`, or until `stop` is set.
pub fn sleep_unless(stop: &AtomicBool, wait: Duration) {
    const POLL: Duration = Duration::from_millis(100);
    let end = Instant::now() + wait;
    while !stop.load(Ordering::Relaxed) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(POLL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: Backoff = Backoff {
        first: Duration::from_millis(10),
        most: Duration::from_millis(40),
        settled: Duration::from_secs(600),
    };

    /// `run` supervised with short waits, publishing nowhere.
    fn quick(health: &Arc<Health>, run: RunCapability) -> Supervised {
        let nowhere = Exporter::start(None, Default::default).unwrap();
        Supervised::start(Arc::clone(health), nowhere, QUICK, run).unwrap()
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_failing_capability_is_counted_down_and_retried_until_it_runs() {
        let health = Health::new("flaky");
        let attempts = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&attempts);
        let run: RunCapability = Box::new(move |stop, _, health| {
            // fails twice (an error, then a panic), then runs until stopped
            match counted.fetch_add(1, Ordering::Relaxed) {
                0 => Err(anyhow!("no probe")),
                1 => panic!("a bug in its analysis"),
                _ => {
                    while !stop.load(Ordering::Relaxed) {
                        health.running();
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Ok(())
                }
            }
        });
        let supervised = quick(&health, run);
        wait_for("the third start", || health.now().up);
        let now = health.now();
        assert_eq!((now.name, now.up, now.failures), ("flaky", true, 2));
        drop(supervised);
        assert!(!health.now().up);
        assert_eq!(health.counts(), (3, 2));
        assert_eq!(attempts.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn the_back_off_doubles_to_its_bound_and_a_stop_ends_the_wait() {
        let health = Health::new("broken");
        let starts: Arc<std::sync::Mutex<Vec<Instant>>> = Arc::default();
        let seen = Arc::clone(&starts);
        let run: RunCapability = Box::new(move |_, _, _| {
            seen.lock().unwrap().push(Instant::now());
            Err(anyhow!("still broken"))
        });
        let supervised = quick(&health, run);
        wait_for("six failures", || health.counts().1 >= 6);
        let stopping = Instant::now();
        drop(supervised);
        assert!(stopping.elapsed() < Duration::from_secs(1));
        let starts = starts.lock().unwrap();
        let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        // 10, 20, 40, 40, 40 ms at least: doubled, then held at the bound
        for (gap, least) in gaps.iter().zip([10, 20, 40, 40, 40]) {
            assert!(*gap >= Duration::from_millis(least), "{gaps:?}");
        }
        assert!(!health.now().up);
    }

    #[test]
    fn a_run_that_ends_by_itself_is_a_failure() {
        let health = Health::new("short");
        let run: RunCapability = Box::new(|_, _, _| Ok(()));
        let supervised = quick(&health, run);
        wait_for("a failure", || health.counts().1 >= 1);
        drop(supervised);
    }
}
