//! `irqlens sim`: a deterministic discrete-event simulation of Linux's interrupt handling
//! (hardirq, softirq and ksoftirqd, NAPI, threaded bottom halves, the scheduler) and of
//! designs a stock kernel does not have: interrupt handler migration and direct interrupt
//! scheduling (Lee & Park), niced threads with capped batches (Chubb & Song), bottom
//! halves at the priority of the process they serve (Zhang & West). Every design runs on
//! the same arrivals; a seed gives the same results.
//!
//! Not modelled (each would need a cost nobody has calibrated yet): the IPI of a wakeup
//! across CPUs, cache effects (001's cache-hit gain from IHM), the timer interrupts that
//! release periodic tasks, RPS/RFS steering, busy polling, PREEMPT_RT's preemptible
//! bottom halves, and the load balancer (threads stay on their CPU).

pub mod calibrate;
mod designs;
mod engine;
mod scheduler;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;

use irqlens_model::sched::Priority;
use irqlens_model::sim::{
    Arrival, ConsumerResult, CostName, CpuSplit, Design, DesignResult, LatencySummary,
    PeriodicResult, SimConfig, SimReport, TaskKind,
};

use engine::{Engine, Ns};

/// CDF points per latency summary.
const CDF_POINTS: usize = 100;

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
                    latency: summarize(&mut samples.latencies),
                    delivered: samples.delivered,
                    delivered_per_s: samples.delivered as f64 / seconds,
                    offered,
                    dropped_ring,
                    dropped_socket,
                    wakeups: samples.wakeups,
                });
            }
            TaskKind::Periodic { .. } => periodic.push(PeriodicResult {
                task: task.name.clone(),
                wakeup_latency: summarize(&mut samples.latencies),
                response: summarize(&mut samples.responses),
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

/// Why `config` cannot be simulated, if it cannot.
pub fn check(config: &SimConfig) -> Result<(), String> {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    let non_negative = |v: f64| v.is_finite() && v >= 0.0;
    if config.cpus == 0 {
        return Err("sim: at least one CPU".into());
    }
    if !positive(config.duration_s) {
        return Err("sim: duration_s must be > 0".into());
    }
    if config.designs.is_empty() {
        return Err("sim: no design to simulate".into());
    }
    let on_cpu = |what: &str, name: &str, cpu: u32| {
        if cpu < config.cpus {
            Ok(())
        } else {
            Err(format!(
                "sim: {what} '{name}' is on CPU {cpu}, the model has {}",
                config.cpus
            ))
        }
    };
    let costs = &config.costs;
    let named = CostName::ALL.map(|name| (name.label(), name.get(costs)));
    for (what, dist) in named.into_iter().chain([("idle_exit", &costs.idle_exit)]) {
        dist.check()
            .map_err(|e| format!("sim: costs.{what}: {e}"))?;
    }
    if !(0.0..=1.0).contains(&costs.dis_deferrable) {
        return Err("sim: costs.dis_deferrable is a fraction from 0 to 1".into());
    }
    let limits = &config.limits;
    if limits.netdev_budget == 0 || limits.napi_weight == 0 || limits.softirq_restarts == 0 {
        return Err("sim: netdev_budget, napi_weight and softirq_restarts must be >= 1".into());
    }
    if ![
        limits.netdev_budget_usecs,
        limits.softirq_time_us,
        limits.base_slice_us,
    ]
    .into_iter()
    .all(positive)
    {
        return Err("sim: the limits' times must be > 0".into());
    }
    for source in &config.sources {
        on_cpu("source", &source.name, source.cpu)?;
        let bad = |why: &str| Err(format!("sim: source '{}': {why}", source.name));
        match &source.arrival {
            Arrival::Periodic {
                period_us,
                phase_us,
            } if !(positive(*period_us) && non_negative(*phase_us)) => {
                return bad("period_us must be > 0 and phase_us >= 0");
            }
            Arrival::Poisson { rate_per_s } if !positive(*rate_per_s) => {
                return bad("rate_per_s must be > 0");
            }
            Arrival::Bursts {
                every_us,
                size,
                gap_us,
            } if !(positive(*every_us) && *size > 0 && non_negative(*gap_us)) => {
                return bad("bursts need every_us > 0, size >= 1, gap_us >= 0");
            }
            Arrival::Replay { times_us }
                if times_us.windows(2).any(|w| w[0] > w[1])
                    || !times_us.iter().all(|&t| non_negative(t)) =>
            {
                return bad("replayed times must be >= 0 and not falling");
            }
            _ => {}
        }
        for dist in [&source.hardirq, &source.softirq_per_packet]
            .into_iter()
            .flatten()
        {
            dist.check()
                .map_err(|e| format!("sim: source '{}': {e}", source.name))?;
        }
        if source.napi && source.ring == 0 {
            return bad("a NAPI source needs a ring of >= 1 packet");
        }
        let consumers = config
            .tasks
            .iter()
            .filter(
                |t| matches!(&t.kind, TaskKind::Consumer { source: s, .. } if s == &source.name),
            )
            .count();
        if consumers > 1 {
            return bad("more than one consumer (one socket per source)");
        }
    }
    for task in &config.tasks {
        on_cpu("task", &task.name, task.cpu)?;
        let bad = |why: String| Err(format!("sim: task '{}': {why}", task.name));
        if let Priority::Deadline { .. } = task.priority {
            return bad("SCHED_DEADLINE is not simulated".into());
        }
        match &task.kind {
            TaskKind::Periodic {
                period_us,
                phase_us,
                cost,
            } => {
                if !(positive(*period_us) && non_negative(*phase_us)) {
                    return bad("period_us must be > 0 and phase_us >= 0".into());
                }
                cost.check().or_else(bad)?;
            }
            TaskKind::Consumer {
                source,
                cost_per_packet,
                socket_queue,
            } => {
                if !config.sources.iter().any(|s| &s.name == source) {
                    return bad(format!("no source '{source}'"));
                }
                if *socket_queue == 0 {
                    return bad("socket_queue must be >= 1".into());
                }
                cost_per_packet.check().or_else(bad)?;
            }
            TaskKind::Hog => {}
        }
    }
    Ok(())
}

/// Quantiles, mean and CDF of latencies in ns, in µs (it sorts them).
fn summarize(samples: &mut [Ns]) -> LatencySummary {
    if samples.is_empty() {
        return LatencySummary::default();
    }
    samples.sort_unstable();
    let sorted = &*samples;
    let n = sorted.len();
    let us = |ns: Ns| ns as f64 / 1000.0;
    let quantile = |q: f64| us(sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]);
    let cdf = (1..=CDF_POINTS)
        .map(|i| {
            let rank = (i * n).div_ceil(CDF_POINTS);
            [us(sorted[rank - 1]), rank as f64 / n as f64]
        })
        .collect::<Vec<_>>();
    LatencySummary {
        count: n as u64,
        mean_us: sorted.iter().map(|&v| v as f64).sum::<f64>() / n as f64 / 1000.0,
        min_us: us(sorted[0]),
        p50_us: quantile(0.5),
        p90_us: quantile(0.9),
        p99_us: quantile(0.99),
        p999_us: quantile(0.999),
        max_us: us(sorted[n - 1]),
        cdf,
    }
}
