//! `irqlens tune`'s statistics: what a remedy is judged on, the figures of a round, and
//! the verdict of alternating before/after rounds; and the changes picked from advice.

use std::collections::BTreeMap;

use irqlens_model::kernel::SOFTIRQ_NAMES;
use irqlens_model::noise::NoiseClass;
use irqlens_model::tune::{Advice, Blocker, Change, Knob, TuneRound, Verdict};
use irqlens_model::units::CpuList;

use crate::noise::{Cause, NoiseAnalysis};
use crate::wakeup::Component;
use crate::wakeup::stats::WakeupStats;

/// The unit of a noise round's figures.
pub const NOISE_UNIT: &str = "ns of noise per s";
/// The unit of a wakeup round's figures.
pub const WAKEUP_UNIT: &str = "ns";

/// What a remedy is judged on: the noise it targets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    /// The IRQ line's own time.
    IrqLine(u32),
    /// NET_RX and NET_TX softirq time, and the NAPI threads' (threaded NAPI moves the
    /// same work there: it helps only if the threads leave the CPU too).
    NetReceive,
    /// One thread's own time.
    Thread(u32),
    /// All noise.
    Total,
}

impl Figure {
    /// The figure a change of `knob` is judged on.
    pub fn of(knob: &Knob) -> Figure {
        match knob {
            Knob::IrqAffinity { irq } => Figure::IrqLine(*irq),
            Knob::RpsCpus { .. }
            | Knob::XpsCpus { .. }
            | Knob::NapiThreaded { .. }
            | Knob::NapiDeferHardIrqs { .. }
            | Knob::GroFlushTimeout { .. } => Figure::NetReceive,
            Knob::ThreadAffinity { tid, .. } | Knob::ThreadPriority { tid, .. } => {
                Figure::Thread(*tid)
            }
            _ => Figure::Total,
        }
    }

    /// The figure in words, on `cpus`.
    pub fn name(&self, cpus: &CpuList) -> String {
        match self {
            Figure::IrqLine(irq) => format!("IRQ {irq} noise on CPUs {cpus}"),
            Figure::NetReceive => format!("NET_RX+NET_TX and NAPI thread noise on CPUs {cpus}"),
            Figure::Thread(tid) => format!("thread {tid}'s noise on CPUs {cpus}"),
            Figure::Total => format!("noise on CPUs {cpus}"),
        }
    }

    /// Whether the time of `cause` counts in the figure.
    pub fn counts(&self, cause: &Cause) -> bool {
        let net = |vector: &u32| {
            SOFTIRQ_NAMES
                .get(*vector as usize)
                .is_some_and(|name| matches!(*name, "NET_RX" | "NET_TX"))
        };
        match (self, cause) {
            (Figure::IrqLine(irq), Cause::Irq { source: 0, id }) => id == irq,
            (Figure::NetReceive, Cause::Softirq(vector)) => net(vector),
            (Figure::NetReceive, Cause::Thread { comm, .. }) => comm.starts_with("napi/"),
            (Figure::Thread(tid), Cause::Thread { pid, .. }) => pid == tid,
            (Figure::Total, _) => true,
            _ => false,
        }
    }
}

/// What a wakeup round is judged on, in words, on `cpus`.
pub fn wakeup_figure(cpus: &CpuList) -> String {
    format!("99th percentile of the timer wakeup latency, worst of CPUs {cpus}")
}

/// A noise run's figures, per s measured: `figure`'s judged, and the total, IRQ and
/// softirq noise (with their entry/exit) summed over the CPUs.
pub fn noise_round(analysis: &NoiseAnalysis, figure: &Figure) -> TuneRound {
    let runtime_ns: u64 = analysis.summaries().map(|s| s.runtime_ns).sum();
    let per_second = |ns: u64| ns as f64 * 1e9 / runtime_ns.max(1) as f64;
    let causes: Vec<(Cause, u64)> = analysis
        .summaries()
        .flat_map(|s| analysis.cpu_causes(s.cpu))
        .map(|(cause, stats)| (cause, stats.total_ns))
        .collect();
    let sum = |keep: &dyn Fn(&Cause) -> bool| {
        per_second(
            causes
                .iter()
                .filter(|(c, _)| keep(c))
                .map(|(_, ns)| ns)
                .sum(),
        )
    };
    let class = |class: NoiseClass| {
        move |cause: &Cause| match (class, cause) {
            (NoiseClass::Irq, Cause::Irq { .. }) | (NoiseClass::Softirq, Cause::Softirq(_)) => true,
            (_, Cause::EntryExit(c)) => *c == class,
            _ => false,
        }
    };
    TuneRound {
        judged: sum(&|c| figure.counts(c)),
        figures: BTreeMap::from([
            ("total_ns_per_s".into(), sum(&|_| true)),
            ("irq_ns_per_s".into(), sum(&class(NoiseClass::Irq))),
            ("softirq_ns_per_s".into(), sum(&class(NoiseClass::Softirq))),
        ]),
    }
}

/// A wakeup run's figures: the worst CPU's. An error if it measured no wakeup.
pub fn wakeup_round(stats: &WakeupStats) -> Result<TuneRound, String> {
    let worst = |component: Component, q: f64| {
        stats
            .cpus
            .values()
            .filter_map(|cpu| cpu.series(component)?.quantile_ns(q))
            .max()
            .map_or(0.0, |ns| ns as f64)
    };
    if stats.activations() == 0 {
        return Err("the wakeup run measured no wakeup: a longer -d is needed".into());
    }
    let p99 = worst(Component::Total, 0.99);
    Ok(TuneRound {
        judged: p99,
        figures: BTreeMap::from([
            ("p99_total_ns".into(), p99),
            ("max_total_ns".into(), worst(Component::Total, 1.0)),
            ("p99_irq_ns".into(), worst(Component::Irq, 0.99)),
        ]),
    })
}

/// The verdict rule: with N rounds each, every after round below every before round
/// happens by chance with probability 1/C(2N,N) when the remedy changes nothing (the
/// rounds are then exchangeable: N=2 1/6, N=3 1/20, N=4 1/70); the medians must also
/// differ by more than the before rounds' max-min, so a consistent but tiny change is not
/// kept, unless the after median is below half the lowest before round: a change that
/// halves the noise of every before round is not tiny, however much the noise it removed
/// varied between them (an IRQ line moved away took 238 and 72 µs/s before, 0 and 2 after).
pub fn judge(before: &[f64], after: &[f64]) -> Verdict {
    let (lowest_before, highest_before) = bounds(before);
    let (_, highest_after) = bounds(after);
    let separated = highest_after < lowest_before;
    let after_median = median(after);
    let beyond_spread = median(before) - after_median > highest_before - lowest_before
        || after_median < lowest_before / 2.0;
    if separated && beyond_spread {
        Verdict::Kept
    } else {
        Verdict::NoEffect
    }
}

/// 1/C(2N,N): the chance of a complete separation of N before and N after rounds when
/// they are exchangeable.
pub fn separation_chance(rounds: usize) -> f64 {
    (1..=rounds)
        .map(|k| k as f64 / (rounds + k) as f64)
        .product()
}

fn bounds(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

fn median(values: &[f64]) -> f64 {
    crate::median(values).unwrap_or(0.0)
}

/// The change of `after` from `before`, percent (`None` from 0).
pub fn change_percent(before: f64, after: f64) -> Option<f64> {
    (before > 0.0).then(|| (after - before) / before * 100.0)
}

/// The median of the figure `pick` takes from each of `rounds` (0 of none).
pub fn medians(rounds: &[TuneRound], pick: impl Fn(&TuneRound) -> f64) -> f64 {
    median(&rounds.iter().map(pick).collect::<Vec<_>>())
}

/// Why the remedies asked for cannot be tried.
#[derive(Clone, Debug, PartialEq)]
pub enum Unpicked {
    /// `--all`: none of the causes found has a change irqlens can make.
    NoneChangeable,
    /// No remedy has this id.
    NoSuchRemedy(String),
    /// The remedy has no change irqlens can make.
    NotChangeable {
        /// Its id.
        id: String,
        /// The cause it is for.
        cause: String,
        /// Why not, if known.
        blocker: Option<Blocker>,
    },
}

/// The changes of the remedies `ids` (all advised ones with `all`), in the order given,
/// each remedy's changes made together in order: an id among the `advice` (measured
/// causes) is its change; otherwise an id among the `configured` remedies (`irqlens
/// check`'s configuration checks) is their changes.
pub fn advised_changes(
    advice: Vec<Advice>,
    configured: &[(String, Vec<Change>)],
    ids: &[String],
    all: bool,
) -> Result<Vec<Vec<Change>>, Unpicked> {
    if all {
        // a knob advised for several causes or CPUs is tried once
        let mut changes: Vec<Change> = Vec::new();
        for change in advice.into_iter().filter_map(|a| a.change) {
            if !changes.iter().any(|c| c.knob == change.knob) {
                changes.push(change);
            }
        }
        if changes.is_empty() {
            return Err(Unpicked::NoneChangeable);
        }
        return Ok(changes.into_iter().map(|change| vec![change]).collect());
    }
    ids.iter()
        .map(|id| {
            let Some(advice) = advice.iter().find(|a| &a.id == id) else {
                return configured
                    .iter()
                    .find(|(known, _)| known == id)
                    .map(|(_, changes)| changes.clone())
                    .ok_or_else(|| Unpicked::NoSuchRemedy(id.clone()));
            };
            let change = advice
                .change
                .clone()
                .ok_or_else(|| Unpicked::NotChangeable {
                    id: id.clone(),
                    cause: advice.cause.clone(),
                    blocker: advice.blocker.clone(),
                })?;
            Ok(vec![change])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::kernel::Comm;

    #[test]
    fn kept_only_beyond_the_spread() {
        assert_eq!(
            judge(&[100.0, 110.0, 105.0], &[10.0, 12.0, 9.0]),
            Verdict::Kept
        );
        // one after round among the before ones
        assert_eq!(
            judge(&[100.0, 110.0, 105.0], &[10.0, 101.0, 9.0]),
            Verdict::NoEffect
        );
        // separated, but by less than the before rounds' spread
        assert_eq!(
            judge(&[100.0, 140.0, 120.0], &[95.0, 90.0, 99.0]),
            Verdict::NoEffect
        );
        // separated by less than a spread that is wider than half the level, but the
        // noise is gone
        assert_eq!(
            judge(&[238_332.0, 71_524.0], &[0.0, 2_335.0]),
            Verdict::Kept
        );
        // one noisy before round, the quiet one barely beaten
        assert_eq!(judge(&[1_000.0, 100.0], &[95.0, 90.0]), Verdict::NoEffect);
        // next to nothing, halved by the median of the before rounds only
        assert_eq!(
            judge(&[3.0, 5.0, 8.0, 200.0], &[0.0, 1.0, 2.0, 2.0]),
            Verdict::NoEffect
        );
        // worse
        assert_eq!(judge(&[10.0, 11.0], &[20.0, 21.0]), Verdict::NoEffect);
        // nothing either way
        assert_eq!(judge(&[0.0, 0.0], &[0.0, 0.0]), Verdict::NoEffect);
    }

    #[test]
    fn the_chance_of_a_separation_is_one_in_2n_choose_n() {
        for (rounds, choose) in [(1, 2.0), (2, 6.0), (3, 20.0), (4, 70.0)] {
            assert!((separation_chance(rounds) - 1.0 / choose).abs() < 1e-12);
        }
    }

    #[test]
    fn medians_and_changes() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(change_percent(200.0, 50.0), Some(-75.0));
        assert_eq!(change_percent(0.0, 50.0), None);
    }

    #[test]
    fn remedies_are_judged_on_what_they_target() {
        let irq = Figure::of(&Knob::IrqAffinity { irq: 34 });
        assert!(irq.counts(&Cause::Irq { source: 0, id: 34 }));
        assert!(!irq.counts(&Cause::Irq { source: 0, id: 35 }));
        assert!(!irq.counts(&Cause::Irq { source: 1, id: 34 }));
        let rps = Figure::of(&Knob::RpsCpus {
            netns: None,
            device: "veth1".into(),
            queue: 0,
        });
        let net_rx = SOFTIRQ_NAMES.iter().position(|n| *n == "NET_RX").unwrap() as u32;
        assert!(rps.counts(&Cause::Softirq(net_rx)));
        assert!(!rps.counts(&Cause::Softirq(1)));
        let napi = |comm: &str| Cause::Thread {
            pid: 7,
            comm: Comm::new(comm),
            cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        };
        assert!(rps.counts(&napi("napi/veth1-8193")));
        assert!(!rps.counts(&napi("ksoftirqd/1")));
        let thread = Figure::of(&Knob::ThreadAffinity {
            tid: 7,
            comm: "spin".into(),
        });
        assert!(thread.counts(&napi("spin")));
        assert!(!thread.counts(&Cause::Thread {
            pid: 8,
            comm: Comm::new("spin"),
            cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        }));
        assert!(!thread.counts(&Cause::Softirq(net_rx)));
        let sysctl = Figure::of(&Knob::Sysctl {
            name: "kernel.timer_migration".into(),
        });
        assert!(sysctl.counts(&Cause::Hardware));
    }

    #[test]
    fn advised_ids_pick_their_changes() {
        let advice = |id: &str, change: Option<Change>| Advice {
            id: id.into(),
            cpu: 1,
            cause: format!("cause of {id}"),
            capability: irqlens_model::system::Capability::Noise,
            time_ns: 1,
            share_percent: 1.0,
            remedy: String::new(),
            change,
            command: None,
            blocker: None,
        };
        let move_24 = Change {
            knob: Knob::IrqAffinity { irq: 24 },
            from: "1".into(),
            to: "0".into(),
        };
        let mut tick = advice("timer", None);
        tick.blocker = Some(Blocker::PerCpuVector);
        let list = vec![
            advice("irq-24", Some(move_24.clone())),
            // the same knob for another cause: tried once by --all
            advice("irq-24-again", Some(move_24.clone())),
            tick.clone(),
        ];
        let ids = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            advised_changes(list.clone(), &[], &ids(&["irq-24"]), false),
            Ok(vec![vec![move_24.clone()]])
        );
        assert_eq!(
            advised_changes(list.clone(), &[], &[], true),
            Ok(vec![vec![move_24.clone()]])
        );
        assert_eq!(
            advised_changes(list.clone(), &[], &ids(&["nope"]), false),
            Err(Unpicked::NoSuchRemedy("nope".into()))
        );
        // an id no measured cause gave is looked up in the configuration's remedies,
        // which may be several changes; the measured advice comes first
        let timer_off = Change {
            knob: Knob::Sysctl {
                name: "kernel.timer_migration".into(),
            },
            from: "1".into(),
            to: "0".into(),
        };
        let configured = vec![
            (
                "timer-off".to_string(),
                vec![timer_off.clone(), move_24.clone()],
            ),
            ("irq-24".to_string(), vec![timer_off.clone()]),
        ];
        assert_eq!(
            advised_changes(
                list.clone(),
                &configured,
                &ids(&["timer-off", "irq-24"]),
                false
            ),
            Ok(vec![vec![timer_off, move_24.clone()], vec![move_24]])
        );
        assert_eq!(
            advised_changes(list.clone(), &configured, &ids(&["nope"]), false),
            Err(Unpicked::NoSuchRemedy("nope".into()))
        );
        assert_eq!(
            advised_changes(list, &[], &ids(&["timer"]), false),
            Err(Unpicked::NotChangeable {
                id: "timer".into(),
                cause: "cause of timer".into(),
                blocker: Some(Blocker::PerCpuVector),
            })
        );
        assert_eq!(
            advised_changes(vec![tick], &[], &[], true),
            Err(Unpicked::NoneChangeable)
        );
    }
}
