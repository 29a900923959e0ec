//! `irqlens agent`: a long-running exporter. The passive capabilities (passive noise, bh,
//! account) run continuously and the active runs (noise, wakeup) on their schedule
//! (`active`), each in a thread of its own (`supervise`), publishing into one endpoint
//! with the agent's own figures (its CPU time, memory, the capabilities' health); a
//! capability that fails is retried after a back-off while the others go on. SIGHUP
//! reads the configuration again and starts again only what changed; SIGTERM or SIGINT
//! stops every capability, which detaches its probes, and ends the run with a summary.

mod active;
mod config;
mod logs;
mod privileges;
mod supervise;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::{AgentArgs, ShowArgs};
use crate::driver::{Done, Measures, Needs, Run, Tool};
use config::{Overrides, Resolved, Source};
use irqlens_collect::tap::Tap;
use irqlens_collect::{account as account_run, bh as bh_run, noise as noise_run, system};
use irqlens_model::account::AccountOptions;
use irqlens_model::agent::{AgentConfig, AgentReport, CapabilitySummary};
use irqlens_model::bh::BhOptions;
use irqlens_model::run::Header;
use irqlens_model::units::CpuList;
use irqlens_present::prometheus::{AgentHealth, Exporter};
use supervise::{BACKOFF, Health, RunCapability, Supervised};

/// The passive capabilities, in the order they start.
const PASSIVE: [&str; 3] = ["noise_passive", "bh", "account"];
/// The active runs, off unless enabled: they take the CPUs they measure.
const ACTIVE: [&str; 2] = ["noise", "wakeup"];

/// How often the agent publishes its own figures and looks at its signals' flags.
const TICK: Duration = Duration::from_secs(1);
/// How often the agent gives the allocator's free pages back to the kernel.
const TRIM_EVERY: Duration = Duration::from_secs(10);

/// `irqlens agent`, resolved: its configuration, checked against the machine.
pub struct AgentTool {
    show: ShowArgs,
    source: Source,
    overrides: Overrides,
    resolved: Resolved,
    signals: Signals,
}

impl AgentArgs {
    /// The configuration read and checked, before anything is loaded: a bad one is one
    /// line and exit status 1.
    pub fn resolve(self) -> Result<AgentTool> {
        // first of all: a SIGHUP's default action ends the process, and a service manager
        // may reload it as soon as it has started it
        let signals = Signals::register()?;
        let source = Source::of(self.config.as_deref());
        let overrides = Overrides::of(&self);
        let resolved = config::resolve(&source, &overrides)?;
        Ok(AgentTool {
            show: self.show,
            source,
            overrides,
            resolved,
            signals,
        })
    }
}

impl Tool for AgentTool {
    const NAME: &'static str = "agent";
    /// Its own handlers (signal-hook flags): ctrlc's would run in a thread of its own,
    /// made before the capabilities are dropped, which would keep them all.
    const STOPS_AT_SIGNAL: bool = false;

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    /// The contract's: root, or CAP_BPF and CAP_PERFMON (CAP_SYS_NICE only raises its
    /// readers, best effort).
    fn needs(&self) -> Needs {
        Needs::Probes
    }

    /// None: the agent only traces, for as long as the machine runs. A claim on every
    /// CPU would refuse every trial and put a warning on every other run for good.
    fn measures(&self) -> Option<Measures> {
        None
    }

    fn execute(self, _run: &mut Run) -> Result<Done> {
        one_arena();
        let signals = self.signals;
        let log = logs::Log::install(self.resolved.config.log_level);
        let started = Instant::now();
        let listen = self.resolved.listen;
        // bound (and the kernel's names read) before the capabilities go
        let option = self.overrides.listen_option();
        let exporter = Exporter::listen(option, listen, || crate::measure::names([]))?;
        // before any thread starts, so that every thread has the smaller sets
        let kept = privileges::keep_only_needed()?;
        // it outlives its active runs: a run's memory lock would pin the agent's memory
        irqlens_collect::forgo_memory_locks();
        tracing::info!(kept = %kept.join(","), "capabilities dropped");
        let mut agent = Agent {
            resolved: self.resolved,
            exporter,
            healths: (PASSIVE.into_iter().chain(ACTIVE))
                .map(|name| (name, Health::new(name)))
                .collect(),
            running: BTreeMap::new(),
            reloads: 0,
            refused: 0,
            log,
        };
        agent.publish_health();
        tracing::info!(
            listen = %listen,
            cpus = %agent.resolved.cpus,
            config = %self.source.name(),
            "started"
        );
        for name in PASSIVE.into_iter().chain(ACTIVE) {
            agent.restart(name)?;
        }
        let mut next_tick = Instant::now();
        let mut next_trim = next_tick + TRIM_EVERY;
        while !signals.terminate.load(Ordering::Relaxed) {
            if signals.hangup.swap(false, Ordering::Relaxed) {
                agent.reload(&self.source, &self.overrides);
            }
            if Instant::now() >= next_tick {
                agent.publish_health();
                // after a stall, the next tick is a tick away, not a burst to catch up
                next_tick = (next_tick + TICK).max(Instant::now());
            }
            // not while an active run measures: the trim's TLB-flush IPIs would land on its
            // CPUs, noise of the agent's own making
            if Instant::now() >= next_trim && !active::measuring() {
                return_free_memory();
                next_trim = Instant::now() + TRIM_EVERY;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        tracing::info!("stopping");
        let report = agent.stop(started.elapsed(), listen.to_string());
        tracing::info!("stopped");
        Ok(Done::new(report))
    }
}

/// One allocator arena for all the agent's threads, set before any starts. glibc gives
/// each thread that allocates its own arena, and each keeps its own free memory resident
/// and fragmented; the agent's threads allocate once a second or so, and never contend.
fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; called before the agent starts threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Gives the pages the allocator holds free back to the kernel. Each capability's thread
/// allocates and frees all day (map snapshots, exposition text), and freed memory stays
/// resident: without this (and [`one_arena`]) the agent's RSS climbed from 37 to 98 MiB
/// under a storm while its live heap stayed near 30 MiB. The measurement commands keep
/// what they free (`keep_freed_memory`: a trim's TLB-flush IPIs would be interrupts of
/// their own making); the agent, which runs for good, pays those IPIs once per
/// `TRIM_EVERY` for a bounded RSS.
fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; every allocation stays valid.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// SIGTERM/SIGINT and SIGHUP, as flags the agent's loop reads (no thread: a signal
/// handler sets them).
struct Signals {
    terminate: Arc<AtomicBool>,
    hangup: Arc<AtomicBool>,
}

impl Signals {
    fn register() -> Result<Signals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        use signal_hook::flag;
        let signals = Signals {
            terminate: Arc::default(),
            hangup: Arc::default(),
        };
        for signal in [SIGTERM, SIGINT] {
            // a second one while it stops ends it at once (a stop that hangs)
            flag::register_conditional_shutdown(signal, 1, Arc::clone(&signals.terminate))?;
            flag::register(signal, Arc::clone(&signals.terminate))?;
        }
        flag::register(SIGHUP, Arc::clone(&signals.hangup))?;
        Ok(signals)
    }
}

/// The running agent: its configuration, its endpoint, its capabilities.
struct Agent {
    resolved: Resolved,
    exporter: Exporter,
    /// Each capability's health, for the agent's whole life.
    healths: BTreeMap<&'static str, Arc<Health>>,
    /// The capabilities running now.
    running: BTreeMap<&'static str, Supervised>,
    reloads: u64,
    refused: u64,
    log: logs::Log,
}

impl Agent {
    /// Stops `name` if it runs, and starts it with the current configuration if enabled.
    fn restart(&mut self, name: &'static str) -> Result<()> {
        // dropping it stops its run, which detaches its probes
        drop(self.running.remove(name));
        let config = &self.resolved.config;
        let cpus = self.resolved.cpus.clone();
        let run: RunCapability = match name {
            "noise_passive" if config.noise_passive.enabled => noise_passive(cpus),
            "bh" if config.bh.enabled => bh(cpus),
            "account" if config.account.enabled => account(cpus, config),
            "noise" if config.noise.enabled => {
                let cpus = self.resolved.noise_cpus.clone();
                active::noise(&config.noise, cpus, config.account.by)
            }
            "wakeup" if config.wakeup.enabled => {
                active::wakeup(&config.wakeup, self.resolved.wakeup_cpus.clone())
            }
            _ => return Ok(()),
        };
        let health = Arc::clone(&self.healths[name]);
        let supervised = Supervised::start(health, self.exporter.share(), BACKOFF, run)?;
        self.running.insert(name, supervised);
        Ok(())
    }

    /// Reads the configuration again and applies what changed; a configuration it cannot
    /// honour is refused, and the one before stays.
    fn reload(&mut self, source: &Source, overrides: &Overrides) {
        self.reloads += 1;
        let mut new = match config::resolve(source, overrides) {
            Ok(new) => new,
            Err(error) => {
                self.refused += 1;
                tracing::warn!(
                    error = %format!("{error:#}"),
                    "reload refused: the configuration stays as it was"
                );
                return;
            }
        };
        let changes = self.resolved.config.changes(&new.config);
        // the endpoint stays up, where it is: a reload binds nothing, so an address that
        // cannot be bound refuses nothing now, and the start that tries it says so
        for key in &changes.at_restart {
            match *key {
                "listen" => tracing::warn!(
                    serving = %self.resolved.listen,
                    listen = %new.listen,
                    "listen: the endpoint stays where it serves; the new address is bound (or refused) when the agent starts again"
                ),
                key => tracing::warn!(key, "takes effect when the agent starts again"),
            }
        }
        new.config.listen = self.resolved.config.listen.clone();
        new.listen = self.resolved.listen;
        if changes.log_level {
            self.log.set_level(new.config.log_level);
        }
        // the CPUs the configuration names may stay and the CPUs they resolve to move
        // ("all" with a CPU brought online since): measured CPUs are the resolved ones
        let mut restart = changes.restart;
        let moved = [
            (self.resolved.cpus != new.cpus, &PASSIVE[..]),
            (self.resolved.noise_cpus != new.noise_cpus, &["noise"]),
            (self.resolved.wakeup_cpus != new.wakeup_cpus, &["wakeup"]),
        ];
        for (_, names) in moved.into_iter().filter(|(moved, _)| *moved) {
            let missing: Vec<&'static str> = (names.iter().copied())
                .filter(|name| !restart.contains(name))
                .collect();
            restart.extend(missing);
        }
        self.resolved = new;
        let mut restarted = Vec::new();
        for &name in &restart {
            if let Err(error) = self.restart(name) {
                tracing::error!(capability = name, error = %format!("{error:#}"), "cannot start");
            }
            restarted.push(name);
        }
        self.publish_health();
        tracing::info!(restarted = %restarted.join(","), "configuration reloaded");
    }

    /// Publishes the agent's own figures.
    fn publish_health(&mut self) {
        let health = AgentHealth {
            cpu_ns: system::own_cpu_time().as_nanos() as u64,
            resident_bytes: system::own_resident_bytes(),
            capabilities: self
                .running
                .keys()
                .map(|name| self.healths[name].now())
                .collect(),
            config_reloads: self.reloads,
        };
        self.exporter.agent(&health);
    }

    /// Stops every capability (each detaches its probes) and sums the run up.
    fn stop(mut self, elapsed: Duration, listen: String) -> AgentReport {
        let running_at_end: Vec<&str> = (self.running.iter())
            .filter(|(name, _)| self.healths[*name].now().up)
            .map(|(name, _)| *name)
            .collect();
        // all asked first: one waits for another's turn only until its own stop
        self.running.values().for_each(Supervised::ask_to_stop);
        self.running.clear();
        let capabilities = (self.healths.values())
            .filter(|health| health.counts().0 > 0)
            .map(|health| {
                let (starts, failures) = health.counts();
                CapabilitySummary {
                    name: health.name().to_owned(),
                    starts,
                    failures,
                    running_at_end: running_at_end.contains(&health.name()),
                }
            })
            .collect();
        AgentReport {
            header: Header::new(AgentTool::NAME),
            kernel: system::kernel_release(),
            listen,
            elapsed_ns: elapsed.as_nanos() as u64,
            config_reloads: self.reloads,
            refused_reloads: self.refused,
            capabilities,
        }
    }
}

/// Interference per CPU and cause on `cpus`, until stopped: the noise probe without its
/// measurement threads.
fn noise_passive(cpus: CpuList) -> RunCapability {
    Box::new(move |stop, exporter, health| {
        noise_run::passive(&cpus, stop, |noise, tick| {
            exporter.noise_passive(noise, &tick.lost);
            health.running();
        })
    })
}

/// Bottom halves on `cpus`, until stopped: every bottom half (passive mode), no worst
/// samples kept (the endpoint serves none).
fn bh(cpus: CpuList) -> RunCapability {
    let mut options = BhOptions::defaults(cpus);
    options.stats.worst = 0;
    Box::new(move |stop, exporter, health| {
        bh_run::run(&options, stop, &mut Tap::default(), |stats, tick| {
            exporter.bh(stats, &tick.lost);
            health.running();
        })?;
        Ok(())
    })
}

/// Interrupt time per process and workload on `cpus`, until stopped (attributed in the
/// kernel: no recording, no compensation).
fn account(cpus: CpuList, config: &AgentConfig) -> RunCapability {
    let by = config.account.by;
    let options = AccountOptions {
        by: Some(by),
        sockets: config.account.sockets,
        ..AccountOptions::defaults(cpus)
    };
    Box::new(move |stop, exporter, health| {
        let on_tick = |tick: irqlens_collect::Tick, mut so_far: account_run::SoFar<'_>| {
            exporter.account(|| so_far.ledger_and_cgroups(), by, &tick.lost);
            health.running();
        };
        account_run::run(&options, stop, &mut Tap::default(), on_tick, |_| {})?;
        Ok(())
    })
}
