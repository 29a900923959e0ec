//! `irqlens sim`: a deterministic discrete-event simulation of Linux's interrupt handling
//! (hardirq, softirq and ksoftirqd, NAPI, threaded bottom halves, the scheduler) and of
//! designs a stock kernel does not have: interrupt handler migration and direct interrupt
//! scheduling (Lee & Park), niced threads with capped batches (Chubb & Song), bottom
//! halves at the priority of the process they serve (Zhang & West). Every design runs on
//! the same arrivals; a seed gives the same results.
//!
//! Not modelled (each would need a cost nobody has calibrated yet): the IPI of a wakeup
//! across CPUs, cache effects (001's cache-hit gain from IHM), the cost of the timer
//! interrupts that release periodic tasks (their exit runs pending softirqs), the tick,
//! RPS/RFS steering, PREEMPT_RT's preemptible
//! bottom halves, and the load balancer (threads stay on their CPU).

pub mod calibrate;
mod designs;
mod engine;
mod samples;
mod scheduler;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;

use irqlens_model::bounds::Check;
use irqlens_model::sim::{
    ConsumerResult, CpuSplit, Design, DesignResult, PeriodicResult, SimConfig, SimReport, TaskKind,
};

use engine::{Engine, Ns};

/// A stop flag nobody sets: the simulation runs to its end.
static NEVER: AtomicBool = AtomicBool::new(false);

/// Simulates every design of `config`; a one-line error if the configuration is wrong.
pub fn simulate(config: &SimConfig) -> Result<SimReport, String> {
    simulate_until(config, &NEVER)
}

/// [`simulate`], until `stop` is set (Ctrl-C): the report then holds the designs
/// simulated to the end before it, in order, and not the one cut short.
pub fn simulate_until(config: &SimConfig, stop: &AtomicBool) -> Result<SimReport, String> {
    check(config)?;
    Ok(SimReport {
        duration_s: config.duration_s,
        seed: config.seed,
        costs_origin: config.costs.origin.clone(),
        designs: config
            .designs
            .iter()
            .map_while(|design| design_until(config, design, stop))
            .collect(),
    })
}

/// Simulates one design (`config` must pass [`check`]).
pub fn simulate_design(config: &SimConfig, design: &Design) -> DesignResult {
    design_until(config, design, &NEVER).expect("nobody stops NEVER")
}

/// Simulates one design until `stop` is set; `None` if it was before the end.
fn design_until(config: &SimConfig, design: &Design, stop: &AtomicBool) -> Option<DesignResult> {
    let mut outcome = Engine::new(config, design).run(stop)?;
    let seconds = config.duration_s;
    let mut consumers = Vec::new();
    let mut periodic = Vec::new();
    for (task, samples) in config.tasks.iter().zip(&mut outcome.tasks) {
        match &task.kind {
            TaskKind::Consumer { source, .. } => {
                let index = config
                    .sources
                    .iter()
                    .position(|s| &s.name == source)
                    .expect("checked");
                let (offered, dropped_ring, dropped_socket) = outcome.sources[index];
                consumers.push(ConsumerResult {
                    task: task.name.clone(),
                    latency: samples.latencies.summary(),
                    delivered: samples.delivered,
                    delivered_per_s: samples.delivered as f64 / seconds,
                    offered,
                    dropped_ring,
                    dropped_socket,
                    wakeups: samples.wakeups,
                    cpu_share: samples.ran as f64 / (seconds * 1e9).max(1.0),
                });
            }
            TaskKind::Periodic { .. } => periodic.push(PeriodicResult {
                task: task.name.clone(),
                wakeup_latency: samples.latencies.summary(),
                response: samples.responses.summary(),
            }),
            TaskKind::Hog => {}
        }
    }
    let total = (seconds * 1e9 * f64::from(config.cpus)).max(1.0);
    let share = |ns: Ns| ns as f64 / total;
    let split = &outcome.split;
    // Every arrival is offered to its source.
    let arrivals = outcome
        .sources
        .iter()
        .map(|&(offered, ..)| offered)
        .sum::<u64>();
    Some(DesignResult {
        design: *design,
        interrupts: outcome.interrupts,
        arrivals,
        context_switches: outcome.context_switches,
        switches_per_arrival: outcome.context_switches as f64 / arrivals.max(1) as f64,
        switches_per_interrupt: outcome.context_switches as f64 / outcome.interrupts.max(1) as f64,
        timer_interrupts: outcome.timer_interrupts,
        napi_schedules: outcome.napi_schedules,
        interrupts_per_arrival: outcome.interrupts as f64 / arrivals.max(1) as f64,
        napi_schedules_per_arrival: outcome.napi_schedules as f64 / arrivals.max(1) as f64,
        busy_by_cpu: split
            .idle_by_cpu
            .iter()
            .map(|&idle| 1.0 - idle as f64 / (seconds * 1e9).max(1.0))
            .collect(),
        busy_poll: share(split.busy_poll),
        consumers,
        periodic,
        cpu: CpuSplit {
            hardirq: share(split.hardirq),
            softirq: share(split.softirq),
            bh_threads: share(split.bh_threads),
            tasks: share(split.tasks),
            switching: share(split.switching),
            idle: share(split.idle),
        },
    })
}

/// Why `config` cannot be simulated, if it cannot: the model's own check (the one every
/// reader of a model calls), then what simulating it would take, refused past a bound
/// with the field to lower.
pub fn check(config: &SimConfig) -> Result<(), String> {
    config.check()?;
    let needs = engine::footprint(config);
    if needs.events > engine::MAX_EVENTS {
        return Err(format!(
            "sim: the model would take about {:.1e} events per design, more than {:.0e}: lower {}",
            needs.events,
            engine::MAX_EVENTS,
            needs.heaviest
        ));
    }
    if needs.bytes > engine::MEMORY_BOUND as f64 {
        return Err(format!(
            "sim: the model would hold up to {:.0} MiB per design, more than {} MiB: lower {}",
            needs.bytes / f64::from(1 << 20),
            engine::MEMORY_BOUND >> 20,
            needs.heaviest
        ));
    }
    Ok(())
}
