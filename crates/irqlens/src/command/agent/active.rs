//! The agent's active runs (`[noise]`, `[wakeup]`): a measurement of `duration` every
//! `every` on the CPUs named, its results published when it ends (the families a run's
//! `--prometheus` serves, those of the last run until the next one ends). A run claims
//! its CPUs for its duration only; CPUs another irqlens measures are a skipped run,
//! logged, not a failure.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::supervise::{RunCapability, sleep_unless};
use irqlens_analyze::loss::RunLosses;
use irqlens_collect::StopOnDrop;
use irqlens_collect::cgroup::CgroupNamer;
use irqlens_collect::claim::{CLAIM_DIR, Claims, Holder};
use irqlens_collect::tap::Tap;
use irqlens_collect::{noise as noise_run, wakeup as wakeup_run};
use irqlens_model::agent::ActiveConfig;
use irqlens_model::noise::NoiseOptions;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_model::workload::WorkloadBy;
use irqlens_present::prometheus::Exporter;

/// The command a run's CPU claims name, as other irqlens runs see it.
const CLAIMANT: &str = "agent";

/// Held by the agent's active run in progress: one at a time, so that `[noise]` and
/// `[wakeup]`, whose schedules start together, neither measure each other nor find the
/// other's claims and skip for good: the later one waits (a `duration` at most).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The active runs' turn, once the run in progress ends; none if `stop` comes first (a
/// blocking lock would hold the agent's SIGTERM for the other run's whole `duration`).
fn wait_for_turn(stop: &AtomicBool) -> Option<MutexGuard<'static, ()>> {
    const POLL: Duration = Duration::from_millis(100);
    loop {
        match ONE_AT_A_TIME.try_lock() {
            Ok(turn) => return Some(turn),
            Err(TryLockError::Poisoned(turn)) => return Some(turn.into_inner()),
            Err(TryLockError::WouldBlock) => {}
        }
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether an active run measures now (its threads on their CPUs, which the agent's
/// other work then leaves alone).
pub fn measuring() -> bool {
    matches!(ONE_AT_A_TIME.try_lock(), Err(TryLockError::WouldBlock))
}

/// When the runs start: the first at once, then one every `every` on the grid it sets.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    due: Instant,
    every: Duration,
}

impl Schedule {
    /// A run at `first`, then one every `every` (not zero).
    pub fn new(first: Instant, every: Duration) -> Schedule {
        assert!(!every.is_zero(), "a schedule needs a period");
        Schedule { due: first, every }
    }

    /// When the next run is due.
    pub fn due(&self) -> Instant {
        self.due
    }

    /// The run due starts (or is skipped) at `now`: the next is due at the first slot of
    /// the grid after `now`. Slots already past (a run late by more than `every`: a
    /// machine that slept, a wait for the other active run) are skipped, not made up for.
    pub fn passed(&mut self, now: Instant) {
        let late = now.saturating_duration_since(self.due);
        let slots = late.as_nanos() / self.every.as_nanos() + 1;
        let ahead = self.every.as_nanos().saturating_mul(slots);
        self.due += Duration::from_nanos(u64::try_from(ahead).unwrap_or(u64::MAX));
    }
}

/// Runs `measure` with a stop flag of its own, which it sets itself when its duration
/// ends (a run stops so, and the agent must go on): that flag is set too when
/// `agent_stop` is, so a SIGTERM ends a run midway; `agent_stop` is only read.
pub fn with_own_stop<T>(agent_stop: &AtomicBool, measure: impl FnOnce(&AtomicBool) -> T) -> T {
    const POLL: Duration = Duration::from_millis(100);
    let own = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !own.load(Ordering::Relaxed) {
                if agent_stop.load(Ordering::Relaxed) {
                    own.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(POLL);
            }
        });
        // however the run ends, a panic included, the watcher ends with it
        let _ended = StopOnDrop(&own);
        measure(&own)
    })
}

/// `[noise]`: a noise run of `config.duration` on `cpus` every `config.every`, its
/// threads' noise labelled by workload at the level `by`.
pub fn noise(config: &ActiveConfig, cpus: CpuList, by: WorkloadBy) -> RunCapability {
    let options = NoiseOptions {
        duration: Some(config.duration),
        ..NoiseOptions::defaults(cpus.clone())
    };
    let measure = move |stop: &AtomicBool| {
        let outcome = noise_run::run(&options, stop, &mut Tap::default(), |_, _| {})?;
        Ok(move |exporter: &mut Exporter| {
            let mut cgroups = CgroupNamer::default();
            let names = || cgroups.name(outcome.analysis.thread_cgroups()).clone();
            exporter.noise(&outcome.analysis, &outcome.info.losses(), names, by);
        })
    };
    scheduled("noise", config.every, cpus, measure)
}

/// `[wakeup]`: a timer-mode wakeup run of `config.duration` on `cpus` every
/// `config.every`.
pub fn wakeup(config: &ActiveConfig, cpus: CpuList) -> RunCapability {
    let options = WakeupOptions {
        duration: Some(config.duration),
        ..WakeupOptions::timer(cpus.clone())
    };
    let measure = move |stop: &AtomicBool| {
        let warn = |warning: String| tracing::warn!(capability = "wakeup", "{warning}");
        let outcome = wakeup_run::run(&options, stop, &mut Tap::default(), |_, _| {}, warn)?;
        Ok(move |exporter: &mut Exporter| {
            exporter.wakeup(&outcome.stats, &outcome.info.losses());
        })
    };
    scheduled("wakeup", config.every, cpus, measure)
}

/// Runs `measure` on its schedule until stopped, each run on CPUs it claims, and
/// publishes what it gives when it ends (a run that a stop cut short is not published).
fn scheduled<P>(
    name: &'static str,
    every: Duration,
    cpus: CpuList,
    mut measure: impl FnMut(&AtomicBool) -> Result<P> + Send + 'static,
) -> RunCapability
where
    P: FnOnce(&mut Exporter),
{
    // outside the run: a run started again after a failure keeps the schedule, which
    // begins when the capability first runs
    let mut schedule: Option<Schedule> = None;
    Box::new(move |stop, exporter, health| {
        let schedule = schedule.get_or_insert_with(|| Schedule::new(Instant::now(), every));
        loop {
            // up while it is scheduled: a failed run is counted down until its next start
            health.running();
            let wait = schedule.due().saturating_duration_since(Instant::now());
            tracing::debug!(capability = name, in_s = wait.as_secs(), "next run");
            sleep_unless(stop, wait);
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let Some(_alone) = wait_for_turn(stop) else {
                return Ok(());
            };
            // begun or skipped, this run is past: the next is due a period on
            schedule.passed(Instant::now());
            let (claims, holders) = Claims::take(Path::new(CLAIM_DIR), &cpus, CLAIMANT);
            if !holders.is_empty() {
                tracing::warn!(
                    capability = name,
                    held_by = %held_by(&holders),
                    "run skipped: another irqlens run measures its CPUs"
                );
                continue;
            }
            tracing::info!(capability = name, cpus = %cpus, "run started");
            let publish = with_own_stop(stop, &mut measure)?;
            drop(claims);
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            publish(exporter);
            tracing::info!(capability = name, "run published");
        }
    })
}

/// `cpu N: COMMAND PID` for each CPU held.
fn held_by(holders: &[Holder]) -> String {
    let each: Vec<String> = (holders.iter())
        .map(|h| format!("cpu {}: {} {}", h.cpu, h.command, h.pid))
        .collect();
    each.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn the_first_run_is_at_once_then_one_every_period_on_its_grid() {
        let start = Instant::now();
        let mut schedule = Schedule::new(start, MINUTE);
        assert_eq!(schedule.due(), start);
        // a run that starts a little late keeps the grid
        schedule.passed(start + Duration::from_millis(300));
        assert_eq!(schedule.due(), start + MINUTE);
        schedule.passed(start + MINUTE);
        assert_eq!(schedule.due(), start + 2 * MINUTE);
    }

    #[test]
    fn slots_missed_are_skipped_not_made_up_for() {
        let start = Instant::now();
        let mut schedule = Schedule::new(start, MINUTE);
        // the machine slept through two and a half periods
        schedule.passed(start + MINUTE * 5 / 2);
        assert_eq!(schedule.due(), start + 3 * MINUTE);
        // exactly on a slot: that slot is this run's, the next one follows
        schedule.passed(start + 4 * MINUTE);
        assert_eq!(schedule.due(), start + 5 * MINUTE);
    }

    #[test]
    fn a_runs_own_end_leaves_the_agent_running() {
        let agent_stop = AtomicBool::new(false);
        let ran = with_own_stop(&agent_stop, |own| {
            // as a run does when its duration is over
            own.store(true, Ordering::Relaxed);
            7
        });
        assert_eq!(ran, 7);
        assert!(!agent_stop.load(Ordering::Relaxed));
    }

    #[test]
    fn the_agents_stop_ends_a_run_midway() {
        let agent_stop = AtomicBool::new(false);
        let started = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                agent_stop.store(true, Ordering::Relaxed);
            });
            // a run of an hour, unless stopped
            with_own_stop(&agent_stop, |own| {
                while !own.load(Ordering::Relaxed) && started.elapsed() < 60 * MINUTE {
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        });
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_run_that_panics_ends_its_watcher_too() {
        let agent_stop = AtomicBool::new(false);
        let ended = std::panic::catch_unwind(|| {
            with_own_stop(&agent_stop, |_| panic!("a bug in a run"));
        });
        // returning at all shows the watcher ended: the scope waits for it
        assert!(ended.is_err());
        assert!(!agent_stop.load(Ordering::Relaxed));
    }
}
