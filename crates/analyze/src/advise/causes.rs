//! The causes each capability's measurement names per CPU, as `advise` takes them: the
//! class and source that decide the remedy, the time the cause took on the CPU and its
//! share of the CPU's total of that measure.

use std::collections::HashMap;

use irqlens_model::kernel::{IRQ_SOURCE_NAMES, irq_label, softirq_name};
use irqlens_model::system::Capability;
use irqlens_model::tune::{CauseClass, CauseSource, CpuCause};
use irqlens_model::units::CpuList;

use crate::account::{Ledger, Source as AccountSource};
use crate::bh::{BhStats, DelayCause, Mechanism, Source as BhSource};
use crate::noise::{Cause as NoiseCause, NoiseAnalysis};
use crate::wakeup::{Cause as WakeupCause, WakeupStats};

/// The causes of a noise run, per CPU, with their share of the CPU's noise.
pub fn noise_causes(analysis: &NoiseAnalysis, irq_names: &HashMap<u32, String>) -> Vec<CpuCause> {
    let mut causes = Vec::new();
    for (summary, breakdown) in analysis.breakdowns() {
        let total = breakdown.total_ns();
        for (cause, stats) in analysis.cpu_causes(summary.cpu) {
            let (class, source) = match cause {
                NoiseCause::Hardware => (CauseClass::Hw, CauseSource::None),
                NoiseCause::Nmi => (CauseClass::Nmi, CauseSource::None),
                NoiseCause::Irq { source, id } => {
                    (CauseClass::Irq, irq_source(source, id, irq_names))
                }
                NoiseCause::Softirq(vector) => (
                    CauseClass::Softirq,
                    CauseSource::Softirq {
                        name: softirq_name(vector),
                    },
                ),
                NoiseCause::Thread { pid, comm, .. } => (
                    CauseClass::Thread,
                    CauseSource::Thread {
                        tid: Some(pid),
                        comm: comm.to_string(),
                    },
                ),
                NoiseCause::EntryExit(_) | NoiseCause::NoRecord | NoiseCause::Dropped => {
                    (CauseClass::Other, CauseSource::None)
                }
            };
            causes.push(CpuCause {
                cpu: summary.cpu,
                capability: Capability::Noise,
                label: cause.label(irq_names),
                class,
                source,
                time_ns: stats.total_ns,
                share_percent: share(stats.total_ns, total),
            });
        }
    }
    causes
}

/// The causes of a wakeup run, per CPU, with their share of the CPU's latency;
/// `held_dma_latency_us`: the PM QoS latency target the run held meanwhile.
pub fn wakeup_causes(
    stats: &WakeupStats,
    held_dma_latency_us: Option<u32>,
    irq_names: &HashMap<u32, String>,
    symbols: &dyn Fn(u64) -> String,
) -> Vec<CpuCause> {
    let mut causes = Vec::new();
    for (&cpu, cpu_stats) in &stats.cpus {
        let ranked = cpu_stats.ranked_causes();
        let total: u64 = ranked.iter().map(|(_, stats)| stats.total_ns).sum();
        for (cause, cause_stats) in ranked {
            let thread = |comm: &irqlens_model::kernel::Comm| CauseSource::Thread {
                tid: None,
                comm: comm.to_string(),
            };
            let (class, source) = match cause {
                WakeupCause::IrqDelay => (CauseClass::Hw, CauseSource::None),
                WakeupCause::IdleExit => (
                    CauseClass::Idle,
                    CauseSource::IdleExit {
                        held_dma_latency_us,
                    },
                ),
                WakeupCause::Origin { source, id } | WakeupCause::Irq { source, id } => {
                    (CauseClass::Irq, irq_source(source, id, irq_names))
                }
                WakeupCause::Nmi => (CauseClass::Nmi, CauseSource::None),
                WakeupCause::Softirq(vector) => (
                    CauseClass::Softirq,
                    CauseSource::Softirq {
                        name: softirq_name(vector.into()),
                    },
                ),
                WakeupCause::Interposed(t) | WakeupCause::Thread(t) | WakeupCause::Blocking(t) => {
                    (CauseClass::Thread, thread(&t.comm))
                }
                WakeupCause::Handler(_)
                | WakeupCause::Timer(_)
                | WakeupCause::Scheduler
                | WakeupCause::Return
                | WakeupCause::Untraced
                | WakeupCause::Other => (CauseClass::Other, CauseSource::None),
            };
            causes.push(CpuCause {
                cpu,
                capability: Capability::Wakeup,
                label: cause.label(irq_names, symbols),
                class,
                source,
                time_ns: cause_stats.total_ns,
                share_percent: share(cause_stats.total_ns, total),
            });
        }
    }
    causes
}

/// How a bottom half's delay cause is labelled, before what delayed it.
pub const BH_DELAY: &str = "bh delay: ";

/// The causes of a bh run, per CPU: the bottom halves that ran there (their runtime, its
/// share of the bottom halves' runtime on the CPU: NET_RX there is noise the CPU takes)
/// and what delayed them there (each delay cause's part of the latency,
/// `Sample::delay_by_cause`, its share of the latency of the bottom halves the CPU ran).
/// Tasklets are left out of the runs: they ran inside their TASKLET or HI softirq, whose
/// runtime has theirs. Only the `traced` CPUs are: a work item queued on one may run on
/// another, which the run did not measure.
pub fn bh_causes(
    stats: &BhStats,
    traced: &CpuList,
    irq_names: &HashMap<u32, String>,
    symbols: &dyn Fn(u64) -> String,
) -> Vec<CpuCause> {
    let mut causes = Vec::new();
    let cpus = stats.cpus.iter().filter(|(cpu, _)| traced.contains(**cpu));
    for (&cpu, bh) in cpus {
        let cause = |label: String, (class, source), time_ns, total| CpuCause {
            cpu,
            capability: Capability::Bh,
            label,
            class,
            source,
            time_ns,
            share_percent: share(time_ns, total),
        };
        let runs: Vec<_> = bh
            .runs
            .iter()
            .filter(|((mechanism, _), _)| *mechanism != Mechanism::Tasklet)
            .collect();
        let runtime_ns: u64 = runs.iter().map(|(_, runs)| runs.runtime_ns).sum();
        let mut ran: Vec<CpuCause> = runs
            .into_iter()
            .map(|(&(mechanism, source), runs)| {
                let label = format!("{} {mechanism}", source.label(symbols));
                cause(
                    label,
                    bh_run(mechanism, source),
                    runs.runtime_ns,
                    runtime_ns,
                )
            })
            .collect();
        ran.sort_by_key(|cause| std::cmp::Reverse(cause.time_ns));
        causes.extend(ran);
        for (delay, ns) in bh.ranked_delays() {
            let label = format!("{BH_DELAY}{}", delay.label(irq_names, symbols));
            causes.push(cause(
                label,
                bh_delay(delay, cpu, irq_names),
                ns,
                bh.latency_ns,
            ));
        }
    }
    causes
}

/// The class and source of a bottom half that ran.
fn bh_run(mechanism: Mechanism, source: BhSource) -> (CauseClass, CauseSource) {
    match (mechanism, source) {
        (Mechanism::Softirq, BhSource::Vector(vector)) => (
            CauseClass::Softirq,
            CauseSource::Softirq {
                name: softirq_name(vector.into()),
            },
        ),
        // an IRQ thread follows its line (`irq/24-virtio0`)
        (Mechanism::IrqThread, BhSource::Thread(comm)) => (
            CauseClass::Thread,
            CauseSource::Thread {
                tid: None,
                comm: comm.to_string(),
            },
        ),
        // a work item's kworker is not known from its samples
        _ => (CauseClass::Other, CauseSource::None),
    }
}

/// The class and source of what delayed a bottom half on `cpu`.
fn bh_delay(
    delay: DelayCause,
    cpu: u32,
    irq_names: &HashMap<u32, String>,
) -> (CauseClass, CauseSource) {
    let thread = |comm: String| (CauseClass::Thread, CauseSource::Thread { tid: None, comm });
    match delay {
        DelayCause::Irq { source, id } | DelayCause::RaisedIn { source, id } => {
            (CauseClass::Irq, irq_source(source, id, irq_names))
        }
        DelayCause::Nmi => (CauseClass::Nmi, CauseSource::None),
        DelayCause::SoftirqFirst(vector) => (
            CauseClass::Softirq,
            CauseSource::Softirq {
                name: softirq_name(vector.into()),
            },
        ),
        DelayCause::Ksoftirqd => thread(format!("ksoftirqd/{cpu}")),
        DelayCause::Thread(t) | DelayCause::Busy(t) => thread(t.comm.to_string()),
        DelayCause::Idle => (CauseClass::Idle, CauseSource::None),
        DelayCause::Undelayed
        | DelayCause::WorkerWakeup
        | DelayCause::WorkFirst(_)
        | DelayCause::HeldBack
        | DelayCause::Untraced
        | DelayCause::Other => (CauseClass::Other, CauseSource::None),
    }
}

/// The causes of an account run, per CPU: each hardirq line or vector, softirq vector and
/// NMI's time on the CPU, its share of the CPU's interrupt time (irqlens's own work left
/// out).
pub fn account_causes(ledger: &Ledger, irq_names: &HashMap<u32, String>) -> Vec<CpuCause> {
    let mut causes = Vec::new();
    for (&cpu, by_source) in &ledger.cpus {
        let total: u64 = by_source.values().sum();
        let mut ranked: Vec<_> = by_source.iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (&source, &ns) in ranked {
            let (label, class, source) = match source {
                AccountSource::Hardirq { source, id } => (
                    irq_label(source, id, irq_names),
                    CauseClass::Irq,
                    irq_source(source, id, irq_names),
                ),
                AccountSource::Softirq { vector } => {
                    let name = softirq_name(vector.into());
                    (
                        name.clone(),
                        CauseClass::Softirq,
                        CauseSource::Softirq { name },
                    )
                }
                AccountSource::Nmi => ("NMI".into(), CauseClass::Nmi, CauseSource::None),
            };
            causes.push(CpuCause {
                cpu,
                capability: Capability::Account,
                label,
                class,
                source,
                time_ns: ns,
                share_percent: share(ns, total),
            });
        }
    }
    causes
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

fn irq_source(source: u16, id: u32, irq_names: &HashMap<u32, String>) -> CauseSource {
    if source == 0 {
        CauseSource::IrqLine {
            irq: id,
            name: irq_names.get(&id).cloned().unwrap_or_default(),
        }
    } else {
        CauseSource::Vector {
            name: IRQ_SOURCE_NAMES
                .get(source as usize)
                .copied()
                .unwrap_or("vector")
                .into(),
            vector: id,
        }
    }
}

#[cfg(test)]
mod tests;
