//! The measured checks: the worst figure of a short run against its threshold, and, when
//! it fails, the top cause the same run named on that CPU with advise's remedies for it.

use crate::advise::BH_DELAY;
use crate::bh::Mechanism;
use crate::bh::stats::BhStats;
use crate::noise::NoiseAnalysis;
use crate::wakeup::Component;
use crate::wakeup::stats::WakeupStats;
use irqlens_model::check::{Check, Figure, Kind, Metric, Status, Thresholds};
use irqlens_model::tune::{Advice, CauseSource, CpuCause, is_irqlens_thread};

/// A noise run's figures: per CPU it measured, its longest single sample and the share
/// left. A CPU whose measurement thread never ran a window (a run cut short, a spinner
/// that starved it) gives no figure: its check is skipped, not passed on nothing.
pub fn noise_figures(analysis: &NoiseAnalysis) -> Vec<Figure> {
    analysis
        .summaries()
        .filter(|summary| summary.runtime_ns > 0)
        .flat_map(|summary| {
            let cpu = Some(summary.cpu);
            [
                Figure {
                    metric: Metric::MaxNoise,
                    cpu,
                    of: None,
                    value: micros(summary.max_single_ns),
                },
                Figure {
                    metric: Metric::Available,
                    cpu,
                    of: None,
                    value: summary.cpu_available_percent(),
                },
            ]
        })
        .collect()
}

/// A wakeup run's figures: per CPU with activations, its largest latency.
pub fn wakeup_figures(stats: &WakeupStats) -> Vec<Figure> {
    (stats.cpus.iter())
        .filter_map(|(&cpu, cpu_stats)| {
            let max_ns = cpu_stats.series(Component::Total)?.max_ns()?;
            Some(Figure {
                metric: Metric::MaxLatency,
                cpu: Some(cpu),
                of: None,
                value: micros(max_ns),
            })
        })
        .collect()
}

/// A bh run's figure: the largest softirq latency (NET_RX's and the others' that share
/// its CPU: the limit is a receive ring's); work items and IRQ threads wait on the
/// scheduler by design, and are left to `irqlens bh`.
pub fn bh_figures(stats: &BhStats) -> Vec<Figure> {
    (stats.mechanisms.iter())
        .filter(|(mechanism, _)| **mechanism == Mechanism::Softirq)
        .filter_map(|(mechanism, mechanism_stats)| {
            Some(Figure {
                metric: Metric::MaxBh,
                cpu: None,
                of: Some(mechanism.name().to_owned()),
                value: micros(mechanism_stats.series.max_ns()?),
            })
        })
        .collect()
}

fn micros(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

/// A check per metric that has a threshold, in [`Metric::ALL`]'s order: `figures` are
/// the runs' values, `causes` what they named per CPU, `advice` advise's remedies for
/// those causes. A metric with a threshold and no figure was not measured (a run
/// interrupted first, no bottom half ran): skipped, with `unmeasured` saying why.
pub fn measured_checks(
    figures: &[Figure],
    thresholds: &Thresholds,
    causes: &[CpuCause],
    advice: &[Advice],
    unmeasured: &dyn Fn(Metric) -> String,
) -> Vec<Check> {
    Metric::ALL
        .into_iter()
        .filter_map(|metric| Some((metric, metric.threshold(thresholds)?)))
        .map(|(metric, limit)| {
            let of_metric: Vec<&Figure> = figures.iter().filter(|f| f.metric == metric).collect();
            match worst(&of_metric, metric) {
                None => Check::new(
                    metric.id(),
                    Kind::Measured,
                    Status::Skip,
                    unmeasured(metric),
                    expected(metric, limit),
                ),
                Some(figure) => judge(figure, limit, causes, advice),
            }
        })
        .collect()
}

/// The figure farthest on the wrong side: the largest latency, the least CPU left.
fn worst<'a>(figures: &[&'a Figure], metric: Metric) -> Option<&'a Figure> {
    let badness = |figure: &&&Figure| {
        if metric.larger_is_worse() {
            figure.value
        } else {
            -figure.value
        }
    };
    figures
        .iter()
        .max_by(|a, b| badness(a).total_cmp(&badness(b)))
        .copied()
}

fn judge(figure: &Figure, limit: f64, causes: &[CpuCause], advice: &[Advice]) -> Check {
    let metric = figure.metric;
    let failed = if metric.larger_is_worse() {
        figure.value > limit
    } else {
        figure.value < limit
    };
    let status = if failed { Status::Fail } else { Status::Pass };
    let check = Check::new(
        metric.id(),
        Kind::Measured,
        status,
        found(figure),
        expected(metric, limit),
    );
    if !failed {
        return check;
    }
    let Some(cause) = top_cause(figure, causes) else {
        return check;
    };
    let about = match metric {
        Metric::MaxNoise | Metric::Available => "the noise",
        Metric::MaxLatency => "the latency",
        Metric::MaxBh => "the delay",
    };
    let check = check.caused_by(format!(
        "{}, {:.0}% of {about}",
        cause.label, cause.share_percent
    ));
    let remedies: Vec<&Advice> = advice
        .iter()
        .filter(|a| {
            a.cpu == cause.cpu && a.cause == cause.label && a.capability == cause.capability
        })
        .collect();
    let applicable = remedies.iter().filter(|a| a.change.is_some());
    let check = check.remedied_by(applicable.map(|a| a.id.clone()));
    match remedies.iter().find(|a| a.change.is_none()) {
        Some(unchangeable) if check.remedies.is_empty() => check.advised(&unchangeable.remedy),
        _ => check,
    }
}

/// The cause that took the most of the figure's CPU (of any CPU for a figure of several)
/// in the capability that measured it; not irqlens's own (never a remedy's target).
fn top_cause<'a>(figure: &Figure, causes: &'a [CpuCause]) -> Option<&'a CpuCause> {
    causes
        .iter()
        .filter(|c| c.capability == figure.metric.capability())
        .filter(|c| figure.cpu.is_none_or(|cpu| c.cpu == cpu))
        .filter(
            |c| !matches!(&c.source, CauseSource::Thread { comm, .. } if is_irqlens_thread(comm)),
        )
        // of a bottom half's latency, what delayed it (not what ran)
        .filter(|c| figure.metric != Metric::MaxBh || c.label.starts_with(BH_DELAY))
        .max_by_key(|c| c.time_ns)
}

fn found(figure: &Figure) -> String {
    let mut found = String::new();
    if let Some(cpu) = figure.cpu {
        found += &format!("CPU {cpu}: ");
    }
    if let Some(of) = &figure.of {
        found += &format!("{of}: ");
    }
    found + &value(figure.metric, figure.value)
}

fn expected(metric: Metric, limit: f64) -> String {
    let bound = if metric.larger_is_worse() {
        "at most"
    } else {
        "at least"
    };
    format!("{bound} {}", value(metric, limit))
}

/// A value in its unit: µs to 0.1, a share to 0.01%.
fn value(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Available => format!("{value:.2}%"),
        _ => format!("{value:.1} µs"),
    }
}

#[cfg(test)]
mod tests;
