//! `irqlens trial`'s figures: echo latency quantiles, loss, the receiving CPU's time
//! split, and where each design's echo stops following the offered rate.

use std::collections::BTreeMap;

use irqlens_model::trial::{
    Compared, Comparison, CpuSplit, DesignSummary, Difference, EchoLatency, Spread, TrialPoint,
};

use crate::histogram::Distribution;

/// A point follows the offered rate while at least this share of what was sent comes
/// back echoed.
pub const FOLLOWING_SHARE: f64 = 0.95;

/// A distribution for echo latencies: 1 µs buckets up to 100 ms (quantiles to 0.1%).
pub fn echo_distribution() -> Distribution {
    Distribution::new(1_000, 100_000)
}

/// The quantiles of `latencies`; none if it is empty.
pub fn echo_latency(latencies: &Distribution) -> Option<EchoLatency> {
    Some(EchoLatency {
        count: latencies.count(),
        p50_ns: latencies.quantile_ns(0.5)?,
        p99_ns: latencies.quantile_ns(0.99)?,
        max_ns: latencies.max_ns()?,
    })
}

/// Sent but not echoed, percent (0 when nothing was sent; echoes of datagrams sent
/// before the window cannot make it negative).
pub fn loss_percent(sent: u64, echoed: u64) -> f64 {
    if sent == 0 {
        return 0.0;
    }
    100.0 * sent.saturating_sub(echoed) as f64 / sent as f64
}

/// A CPU's time counters (/proc/stat's columns, in clock ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice.
    pub user: u64,
    /// system.
    pub system: u64,
    /// idle + iowait.
    pub idle: u64,
    /// irq.
    pub irq: u64,
    /// softirq.
    pub softirq: u64,
    /// steal (the hypervisor's), counted in the total only.
    pub steal: u64,
}

impl CpuTimes {
    /// Parses the `cpuN` line of /proc/stat.
    pub fn parse(line: &str) -> Option<CpuTimes> {
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        (fields.len() >= 7).then(|| CpuTimes {
            user: at(0) + at(1),
            system: at(2),
            idle: at(3) + at(4),
            irq: at(5),
            softirq: at(6),
            steal: at(7),
        })
    }

    fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
        }
    }
}

/// The CPU's time between `before` and `after`, with `napi_thread_ticks` (the NAPI
/// thread's utime + stime meanwhile, part of system time) shown on its own.
pub fn cpu_split(before: &CpuTimes, after: &CpuTimes, napi_thread_ticks: u64) -> CpuSplit {
    let d = after.since(before);
    let total = (d.user + d.system + d.idle + d.irq + d.softirq + d.steal).max(1) as f64;
    let percent = |ticks: u64| 100.0 * ticks as f64 / total;
    let napi = napi_thread_ticks.min(d.system);
    CpuSplit {
        user_percent: percent(d.user),
        system_percent: percent(d.system - napi),
        softirq_percent: percent(d.softirq),
        irq_percent: percent(d.irq),
        napi_thread_percent: percent(napi),
        idle_percent: percent(d.idle),
    }
}

/// `count` per datagram sent; none if nothing was sent.
pub fn per_datagram(count: u64, sent: u64) -> Option<f64> {
    (sent > 0).then(|| count as f64 / sent as f64)
}

/// The receiving CPU's busy share over a point, 0 to 1 (1 - idle): from the recorded
/// busy time (cpuidle's residency or /proc/stat's idle, kept exact under NO_HZ), else,
/// in older recordings made without cpuidle, from the CPU split's idle percent.
pub fn receiving_busy_share(point: &TrialPoint) -> f64 {
    let exact = point.runtimes.as_ref().and_then(|r| {
        let busy = r.busy_ns?;
        (r.window_ns > 0).then(|| busy.min(r.window_ns) as f64 / r.window_ns as f64)
    });
    exact.unwrap_or_else(|| (1.0 - point.cpu.idle_percent / 100.0).clamp(0.0, 1.0))
}

/// The echo server's own share of the point's window, 0 to 1 (its sum_exec_runtime,
/// with the softirqs that ran in its context): what a busy-polling consumer spends,
/// which the machine's other work on its CPU does not add to as it does to the CPU's
/// busy share. None for older recordings.
pub fn echo_share(point: &TrialPoint) -> Option<f64> {
    let r = point.runtimes.as_ref()?;
    (r.window_ns > 0).then(|| r.echo_ns.min(r.window_ns) as f64 / r.window_ns as f64)
}

/// Whether a point echoed at least [`FOLLOWING_SHARE`] of what it sent.
pub fn follows(point: &TrialPoint) -> bool {
    keeps_up(point.sent as f64, point.echoed as f64)
}

/// Whether `echoed` (a count or a rate) is at least [`FOLLOWING_SHARE`] of `sent` (the
/// same unit), something having been sent.
pub fn keeps_up(sent: f64, echoed: f64) -> bool {
    sent > 0.0 && echoed >= FOLLOWING_SHARE * sent
}

/// Where a design's echo stops following the offered rate (its knee), over the rounds of
/// its ladder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Knee {
    /// The highest offered rate whose rung follows: a rung follows when at least half of
    /// its rounds did. It is the last rung followed before the ladder stops following for
    /// good: a rung below it that did not follow was a slow moment of the machine (the
    /// hypervisor's steal, another load), which lowers a rung, never the knee. None if no
    /// rung followed.
    pub follows_up_to_pps: Option<u64>,
    /// Each round's own knee by the same rule, in round order: how far the machine's
    /// noise moves it.
    pub by_round: Vec<Option<u64>>,
}

/// The knee of a design's `points` (any order, any number of rounds per offered rate).
pub fn knee<P>(
    points: &[&P],
    offered_pps: impl Fn(&P) -> u64,
    round: impl Fn(&P) -> u32,
    follows: impl Fn(&P) -> bool,
) -> Knee {
    let mut rungs: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let mut by_round: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    for &point in points {
        let (offered, followed) = (offered_pps(point), follows(point));
        let rung = rungs.entry(offered).or_default();
        rung.0 += usize::from(followed);
        rung.1 += 1;
        let highest = by_round.entry(round(point)).or_default();
        if followed {
            *highest = (*highest).max(Some(offered));
        }
    }
    Knee {
        follows_up_to_pps: rungs
            .into_iter()
            .filter(|(_, (followed, rounds))| 2 * followed >= *rounds)
            .map(|(offered, _)| offered)
            .next_back(),
        by_round: by_round.into_values().collect(),
    }
}

/// Per offered rate (lowest first), the median over its rounds of `value`.
pub fn rung_medians<P>(
    points: &[&P],
    offered_pps: impl Fn(&P) -> u64,
    value: impl Fn(&P) -> f64,
) -> Vec<(u64, f64)> {
    let mut rungs: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for &point in points {
        rungs
            .entry(offered_pps(point))
            .or_default()
            .push(value(point));
    }
    rungs
        .into_iter()
        .filter_map(|(offered, values)| Some((offered, crate::median(&values)?)))
        .collect()
}

/// One summary per design, in the order the designs were first measured: the knee and
/// the echo from the medians of each rate's rounds.
pub fn summarize(points: &[TrialPoint]) -> Vec<DesignSummary> {
    crate::first_seen(points.iter().map(|p| p.design))
        .into_iter()
        .map(|design| {
            let ladder: Vec<&TrialPoint> = points.iter().filter(|p| p.design == design).collect();
            let knee = knee(&ladder, |p| p.offered_pps, |p| p.round, follows);
            let echoed = rung_medians(&ladder, |p| p.offered_pps, |p| p.echoed_pps);
            let (peak_at_offered_pps, peak_echoed_pps) = echoed
                .iter()
                .copied()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .expect("a design has points");
            DesignSummary {
                design,
                follows_up_to_pps: knee.follows_up_to_pps,
                follows_up_to_by_round_pps: knee.by_round,
                peak_echoed_pps,
                peak_at_offered_pps,
                echoed_at_highest_pps: echoed.last().map_or(0.0, |rung| rung.1),
                cyclic_max_ns: ladder
                    .iter()
                    .filter_map(|p| p.cyclic.as_ref().map(|c| c.max_ns))
                    .max(),
            }
        })
        .collect()
}

/// The spread of `values` (one per round); none of none.
pub fn spread(values: &[f64]) -> Option<Spread> {
    Some(Spread {
        median: crate::median(values)?,
        low: values.iter().copied().fold(f64::INFINITY, f64::min),
        high: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// `design` against `baseline`: a difference counts only beyond what either one's rounds
/// differ among themselves (the machine's own noise, measured in the same trial).
pub fn compared(design: Spread, baseline: Spread) -> Compared {
    let noise = design.width().max(baseline.width());
    let difference = if design.median - baseline.median > noise {
        Difference::Higher
    } else if baseline.median - design.median > noise {
        Difference::Lower
    } else {
        Difference::Within
    };
    Compared {
        design,
        baseline,
        difference,
    }
}

/// Each design but the first against the first, at each rate both measured in two rounds
/// or more (one round has no spread: a difference could be the machine's noise alone).
pub fn compare(points: &[TrialPoint]) -> Vec<Comparison> {
    let designs = crate::first_seen(points.iter().map(|p| p.design));
    let Some((&baseline, others)) = designs.split_first() else {
        return Vec::new();
    };
    let rounds_of = |design, offered| -> Vec<&TrialPoint> {
        points
            .iter()
            .filter(|p| p.design == design && p.offered_pps == offered)
            .collect()
    };
    let figure = |points: &[&TrialPoint], value: &dyn Fn(&TrialPoint) -> Option<f64>| {
        let values: Option<Vec<f64>> = points.iter().map(|&p| value(p)).collect();
        spread(&values?)
    };
    let both = |mine: &[&TrialPoint],
                theirs: &[&TrialPoint],
                value: &dyn Fn(&TrialPoint) -> Option<f64>| {
        Some(compared(figure(mine, value)?, figure(theirs, value)?))
    };
    let offered: Vec<u64> = crate::first_seen(points.iter().map(|p| p.offered_pps));
    let mut comparisons = Vec::new();
    for &design in others {
        for &rate in &offered {
            let (mine, theirs) = (rounds_of(design, rate), rounds_of(baseline, rate));
            if mine.len() < 2 || theirs.len() < 2 {
                continue;
            }
            let echoed = |p: &TrialPoint| Some(p.echoed_pps);
            let p50 = |p: &TrialPoint| p.echo_latency.map(|l| l.p50_ns as f64);
            let cyclic_max = |p: &TrialPoint| p.cyclic.as_ref().map(|c| c.max_ns as f64);
            comparisons.push(Comparison {
                offered_pps: rate,
                design,
                baseline,
                echoed_pps: both(&mine, &theirs, &echoed).expect("every point echoes a rate"),
                echo_p50_ns: both(&mine, &theirs, &p50),
                cyclic_max_ns: both(&mine, &theirs, &cyclic_max),
            });
        }
    }
    comparisons.sort_by_key(|c| c.offered_pps);
    comparisons
}

#[cfg(test)]
mod tests {
    use irqlens_model::trial::{CyclicLatency, Runtimes};

    use super::*;

    fn point(design: &str, offered: u64, sent: u64, echoed: u64, cyclic_max: u64) -> TrialPoint {
        TrialPoint {
            design: design.parse().unwrap(),
            offered_pps: offered,
            round: 1,
            sent,
            sent_pps: sent as f64,
            echoed,
            echoed_pps: echoed as f64,
            loss_percent: loss_percent(sent, echoed),
            echo_latency: None,
            cyclic: Some(CyclicLatency {
                max_ns: cyclic_max,
                ..Default::default()
            }),
            cpu: CpuSplit::default(),
            napi_scheduling: Vec::new(),
            runtimes: None,
            napi: None,
        }
    }

    /// `design`'s rounds at one rate, echoing `echoes` (one per round).
    fn rounds(design: &str, offered: u64, echoes: &[u64]) -> Vec<TrialPoint> {
        let round = |(i, &echoed): (usize, &u64)| TrialPoint {
            round: i as u32 + 1,
            ..point(design, offered, offered, echoed, 100)
        };
        echoes.iter().enumerate().map(round).collect()
    }

    #[test]
    fn a_difference_counts_only_beyond_the_rounds_spread() {
        let points = [
            rounds("stock", 1_000, &[900, 1_000, 950]),
            rounds("threaded-fifo", 1_000, &[500, 520, 540]),
            rounds("threaded-niced", 1_000, &[800, 1_050, 990]),
            rounds("stock", 2_000, &[1_000, 1_010, 1_020]),
            rounds("threaded-fifo", 2_000, &[1_200, 1_220, 1_260]),
            rounds("threaded-niced", 2_000, &[1_040, 1_050, 1_060]),
        ]
        .concat();
        let verdicts: Vec<(u64, String, Difference)> = compare(&points)
            .iter()
            .map(|c| (c.offered_pps, c.design.to_string(), c.echoed_pps.difference))
            .collect();
        let expected = [
            (1_000, "threaded-fifo", Difference::Lower),
            // 990 against 950, where its own rounds span 250
            (1_000, "threaded-niced", Difference::Within),
            (2_000, "threaded-fifo", Difference::Higher),
            // 1050 against 1010: 40 beyond spreads of 20
            (2_000, "threaded-niced", Difference::Higher),
        ]
        .map(|(rate, design, difference)| (rate, design.to_string(), difference));
        assert_eq!(verdicts, expected);
        let first = &compare(&points)[0];
        assert_eq!(first.baseline.to_string(), "stock");
        assert_eq!(
            first.echoed_pps.design,
            Spread {
                median: 520.0,
                low: 500.0,
                high: 540.0
            }
        );
        assert_eq!(
            first.echo_p50_ns, None,
            "nothing to compare without latencies"
        );
        let cyclic = first.cyclic_max_ns.expect("both measured the cyclic task");
        assert_eq!(cyclic.difference, Difference::Within);
    }

    #[test]
    fn one_round_is_not_judged() {
        let points = [
            rounds("stock", 1_000, &[900]),
            rounds("threaded-fifo", 1_000, &[10]),
        ]
        .concat();
        assert!(compare(&points).is_empty());
        assert!(compare(&rounds("stock", 1_000, &[900, 950])).is_empty());
    }

    #[test]
    fn per_datagram_figures_and_the_busy_share() {
        assert_eq!(per_datagram(30, 120), Some(0.25));
        assert_eq!(per_datagram(5, 0), None);
        let mut point = point("stock", 1000, 1000, 1000, 0);
        point.cpu.idle_percent = 75.0;
        // an older recording without a busy time: the split's idle
        assert_eq!(receiving_busy_share(&point), 0.25);
        point.runtimes = Some(Runtimes {
            window_ns: 2_000,
            busy_ns: Some(500),
            ..Runtimes::default()
        });
        // the recorded busy time wins
        assert_eq!(receiving_busy_share(&point), 0.25);
        point.runtimes.as_mut().unwrap().busy_ns = Some(1_500);
        assert_eq!(receiving_busy_share(&point), 0.75);
        // a residency read a little apart from the window cannot make it more than busy
        point.runtimes.as_mut().unwrap().busy_ns = Some(2_100);
        assert_eq!(receiving_busy_share(&point), 1.0);
        point.runtimes.as_mut().unwrap().echo_ns = 500;
        assert_eq!(echo_share(&point), Some(0.25));
        point.runtimes = None;
        assert_eq!(echo_share(&point), None);
    }

    #[test]
    fn quantiles_of_the_echoes() {
        let mut latencies = echo_distribution();
        assert_eq!(echo_latency(&latencies), None);
        for us in 1..=100 {
            latencies.add(us * 1_000);
        }
        let latency = echo_latency(&latencies).unwrap();
        assert_eq!(latency.count, 100);
        assert!((49_000..=51_000).contains(&latency.p50_ns), "{latency:?}");
        assert!((98_000..=100_000).contains(&latency.p99_ns), "{latency:?}");
        assert_eq!(latency.max_ns, 100_000);
    }

    #[test]
    fn loss_counts_what_did_not_come_back() {
        assert_eq!(loss_percent(0, 0), 0.0);
        assert_eq!(loss_percent(200, 150), 25.0);
        // echoes of datagrams sent just before the window
        assert_eq!(loss_percent(100, 103), 0.0);
    }

    #[test]
    fn the_split_takes_the_napi_thread_out_of_system_time() {
        let before = CpuTimes::parse("cpu1 100 5 50 1000 3 1 20 0 0 0").unwrap();
        let after = CpuTimes::parse("cpu1 130 5 110 1040 3 1 50 0 0 0").unwrap();
        // 30 user, 60 system (40 of it the NAPI thread), 40 idle, 30 softirq: 160 ticks
        let split = cpu_split(&before, &after, 40);
        assert_eq!(split.user_percent, 100.0 * 30.0 / 160.0);
        assert_eq!(split.system_percent, 100.0 * 20.0 / 160.0);
        assert_eq!(split.napi_thread_percent, 100.0 * 40.0 / 160.0);
        assert_eq!(split.softirq_percent, 100.0 * 30.0 / 160.0);
        assert_eq!(split.idle_percent, 100.0 * 40.0 / 160.0);
        // a thread's ticks counted a little ahead of the CPU's cannot go above system
        assert_eq!(cpu_split(&before, &after, 99).system_percent, 0.0);
        assert_eq!(CpuTimes::parse("cpu1 1 2"), None);
        assert_eq!(CpuTimes::parse("cpu1 1 2 x 4 5 6 7"), None);
    }

    /// The ladder of the fresh-clone CI run that failed: 80k/s measured in a slow moment,
    /// 160k/s followed again.
    const SLOW_RUNG: [(u64, u64); 5] = [
        (20_000, 20_000),
        (40_000, 40_000),
        (80_000, 61_000),
        (160_000, 158_000),
        (320_000, 230_000),
    ];

    fn ladder(design: &str, round: u32, echoes: &[(u64, u64)]) -> Vec<TrialPoint> {
        echoes
            .iter()
            .map(|&(rate, echoed)| TrialPoint {
                round,
                ..point(design, rate, rate, echoed, 1_000)
            })
            .collect()
    }

    fn knee_of(points: &[TrialPoint]) -> Knee {
        let refs: Vec<&TrialPoint> = points.iter().collect();
        knee(&refs, |p| p.offered_pps, |p| p.round, follows)
    }

    #[test]
    fn one_slow_rung_below_the_knee_does_not_move_it() {
        let points = ladder("stock", 1, &SLOW_RUNG);
        // up to the first rung that did not follow, the knee would be 40k
        assert_eq!(knee_of(&points).follows_up_to_pps, Some(160_000));
        assert_eq!(knee_of(&points).by_round, [Some(160_000)]);
        // whatever the order measured
        let reversed: Vec<TrialPoint> = points.into_iter().rev().collect();
        assert_eq!(knee_of(&reversed).follows_up_to_pps, Some(160_000));
        let lossy_from_the_start = ladder("stock", 1, &[(1_000, 10), (2_000, 20)]);
        assert_eq!(
            knee_of(&lossy_from_the_start),
            Knee {
                follows_up_to_pps: None,
                by_round: vec![None],
            }
        );
    }

    #[test]
    fn one_outlying_round_moves_neither_the_knee_nor_the_medians() {
        let steady = [
            (20_000, 20_000),
            (40_000, 40_000),
            (80_000, 79_000),
            (160_000, 120_000),
            (320_000, 110_000),
        ];
        // the third round: 80k/s in a slow moment, and a pass at 160k/s (a fast one)
        let outlying = [
            (20_000, 20_000),
            (40_000, 40_000),
            (80_000, 50_000),
            (160_000, 155_000),
            (320_000, 100_000),
        ];
        let mut points = ladder("threaded-niced", 1, &steady);
        points.extend(ladder("threaded-niced", 2, &steady));
        points.extend(ladder("threaded-niced", 3, &outlying));
        let knee = knee_of(&points);
        assert_eq!(knee.follows_up_to_pps, Some(80_000));
        assert_eq!(knee.by_round, [Some(80_000), Some(80_000), Some(160_000)]);
        let summary = &summarize(&points)[0];
        assert_eq!(summary.follows_up_to_pps, Some(80_000));
        assert_eq!(
            summary.follows_up_to_by_round_pps,
            [Some(80_000), Some(80_000), Some(160_000)]
        );
        // medians of the rounds: the outlying 155k/s is not the peak
        assert_eq!(summary.peak_echoed_pps, 120_000.0);
        assert_eq!(summary.peak_at_offered_pps, 160_000);
        assert_eq!(summary.echoed_at_highest_pps, 110_000.0);
        // of two rounds, one that follows is half of them: the rung follows
        let two: Vec<TrialPoint> = points.iter().filter(|p| p.round != 2).cloned().collect();
        assert_eq!(knee_of(&two).follows_up_to_pps, Some(160_000));
    }

    #[test]
    fn each_design_is_summarized_in_the_order_first_measured() {
        let points = vec![
            point("threaded-fifo", 10_000, 10_000, 10_000, 30_000),
            point("threaded-niced", 10_000, 10_000, 9_990, 20_000),
            point("threaded-fifo", 50_000, 50_000, 2_000, 9_000_000),
            point("threaded-niced", 50_000, 50_000, 30_000, 40_000),
            // a lower rate measured later
            point("threaded-fifo", 5_000, 5_000, 5_000, 10_000),
        ];
        let summaries = summarize(&points);
        assert_eq!(summaries.len(), 2);
        let fifo = &summaries[0];
        assert_eq!(fifo.design.to_string(), "threaded-fifo");
        assert_eq!(fifo.follows_up_to_pps, Some(10_000));
        assert_eq!(fifo.peak_echoed_pps, 10_000.0);
        assert_eq!(fifo.peak_at_offered_pps, 10_000);
        assert_eq!(fifo.echoed_at_highest_pps, 2_000.0);
        assert_eq!(fifo.cyclic_max_ns, Some(9_000_000));
        let niced = &summaries[1];
        assert_eq!(niced.follows_up_to_pps, Some(10_000));
        assert_eq!(niced.echoed_at_highest_pps, 30_000.0);
    }
}
