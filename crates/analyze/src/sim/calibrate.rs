//! `irqlens sim --calibrate`: the model's costs from irqlens's own recordings (wakeup,
//! bh, account, trial), and `--against`: a recorded `trial net` next to the simulation of
//! its test bed, which is what makes the calibrated model credible.

use irqlens_model::design::{BottomHalves, Budget, Design};
use irqlens_model::sched::Priority;
use irqlens_model::sim::{
    Arrival, Calibration, ComparedDesign, ComparedNapi, ComparedPoint, CostName, Costs,
    DesignResult, Dist, MeasuredCost, NapiCost, NapiCostName, SimConfig, Source, Task, TaskKind,
    TrialCosts,
};
use irqlens_model::trial::{GENERATOR_MAX_LAG_NS, SEND_BATCH, TrialOptions, TrialPoint};

use super::simulate_design;
use crate::account::{Ledger, Source as AccountSource};
use crate::bh::Mechanism;
use crate::bh::{BhStats, Source as BhSource, stats::Series};
use crate::first_seen;
use crate::histogram::Distribution;
use crate::trial::{
    echo_share, follows, keeps_up, knee, per_datagram, receiving_busy_share, rung_medians,
};
use crate::wakeup::{Component, WakeupStats};

/// The NET_RX softirq's vector (include/linux/interrupt.h).
const NET_RX: u16 = 3;

/// The fractions a measured distribution keeps. Its top is the 90th percentile: the
/// rarer long ones are the waits behind other work (a preemption, a busy CPU) that the
/// simulation produces itself, or the hypervisor's steal it does not model.
const FRACTIONS: [f64; 6] = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9];

/// A quantile distribution (µs) from a quantile function (ns), its top at p90.
fn quantile_dist(quantile_ns: impl Fn(f64) -> Option<u64>) -> Option<Dist> {
    let mut points: Vec<[f64; 2]> = Vec::with_capacity(FRACTIONS.len());
    for (i, &q) in FRACTIONS.iter().enumerate() {
        let us = quantile_ns(q)? as f64 / 1e3;
        let floor = points.last().map_or(0.0, |p| p[1]);
        let fraction = if i + 1 == FRACTIONS.len() { 1.0 } else { q };
        points.push([fraction, us.max(floor)]);
    }
    Some(Dist::Quantiles { points })
}

fn distribution(series: &Distribution) -> Option<Dist> {
    quantile_dist(|q| series.quantile_ns(q))
}

/// From a wakeup recording: the hrtimer handler (it runs try_to_wake_up) as the wakeup,
/// wakeup to switch-in as the context switch, switch-in to user space as the return; each
/// from the CPU with the most samples of it.
pub fn wakeup_costs(stats: &WakeupStats) -> Vec<MeasuredCost> {
    [
        (Component::Handler, CostName::Wakeup),
        (Component::Sched, CostName::ContextSwitch),
        (Component::Return, CostName::ReturnToUser),
    ]
    .into_iter()
    .filter_map(|(component, cost)| {
        let (cpu, series) = stats
            .cpus
            .iter()
            .filter_map(|(cpu, s)| Some((cpu, s.series(component)?)))
            .max_by_key(|(_, series)| series.count())?;
        Some(MeasuredCost {
            cost,
            dist: distribution(series)?,
            samples: series.count(),
            what: format!(
                "wakeup's {component} component ({}) on CPU {cpu}, up to its p90",
                component.describe()
            ),
            from: String::new(),
        })
    })
    .collect()
}

/// From a bh recording: NET_RX's run time per run. A flow slow enough to bring one
/// packet per run makes it the per-packet cost; a faster one makes it an upper bound.
pub fn bh_costs(stats: &BhStats) -> Vec<MeasuredCost> {
    let Some(series) = stats
        .sources
        .get(&(Mechanism::Softirq, BhSource::Vector(NET_RX)))
    else {
        return Vec::new();
    };
    let runtime = |q| Series::runtime_quantile_ns(series, q);
    quantile_dist(runtime)
        .map(|dist| MeasuredCost {
            cost: CostName::SoftirqPerPacket,
            dist,
            samples: series.count,
            what: "bh's NET_RX run time per run (one packet per run at a low rate), up to its \
                   p90"
            .into(),
            from: String::new(),
        })
        .into_iter()
        .collect()
}

/// From an account recording: the NET_RX time served to the thread served the most
/// units (deliveries and wakeups), per unit: a mean, so a constant.
pub fn account_costs(ledger: &Ledger) -> Vec<MeasuredCost> {
    let net_rx = AccountSource::Softirq { vector: NET_RX };
    ledger
        .threads
        .iter()
        .filter(|(tid, account)| {
            !ledger.is_irqlens(**tid) && account.units > 0 && account.served.contains_key(&net_rx)
        })
        .max_by_key(|(tid, account)| (account.units, std::cmp::Reverse(**tid)))
        .map(|(tid, account)| {
            let comm = ledger
                .seen
                .get(tid)
                .map_or_else(|| tid.to_string(), |seen| seen.comm.to_string());
            MeasuredCost {
                cost: CostName::SoftirqPerPacket,
                dist: Dist::constant(account.served[&net_rx] as f64 / account.units as f64 / 1e3),
                samples: account.units,
                what: format!("account's NET_RX time served to {comm} per unit it was served"),
                from: String::new(),
            }
        })
        .into_iter()
        .collect()
}

/// The costs a model gets: per cost, the measurement with the most samples; the rest
/// stay `defaults`. The origin names what was measured and what was not.
pub fn costs_from(measured: &[MeasuredCost], defaults: &Costs) -> Costs {
    let mut costs = defaults.clone();
    let mut origin = Vec::new();
    let mut defaulted = Vec::new();
    for name in CostName::ALL {
        let label = name.label();
        match measured
            .iter()
            .filter(|m| m.cost == name)
            .max_by_key(|m| m.samples)
        {
            Some(best) => {
                *name.of(&mut costs) = best.dist.clone();
                origin.push(format!("{label} from {}", best.from));
            }
            None => defaulted.push(label),
        }
    }
    let measured_any = !origin.is_empty();
    if !defaulted.is_empty() {
        origin.push(format!("default {}", defaulted.join(", ")));
    }
    costs.origin = if measured_any {
        format!("calibrated: {}", origin.join("; "))
    } else {
        format!("not calibrated: {}", origin.join("; "))
    };
    costs
}

/// A small datagram's skb truesize in the echo server's receive buffer, bytes: with
/// net.core.rmem_default (212992) it gives the ~200 datagrams trial's echo queues past
/// its knee on the machines measured (median latency times echo rate).
pub const DATAGRAM_TRUESIZE: u32 = 1024;
/// veth's receive ring (VETH_RING_SIZE), where threaded NAPI's datagrams wait.
const VETH_RING: u32 = 256;
/// net.core.netdev_max_backlog's default: RPS's backlog, where softirq's datagrams wait.
const NETDEV_MAX_BACKLOG: u32 = 1000;
/// The cyclic task's work per activation, µs: it reads the clock and sleeps again.
const CYCLIC_WORK_US: f64 = 1.0;

/// The design simulated for a trial design: the same, but for the budget. Trial's
/// `+budget` sets net.core.netdev_budget: under stock that is the simulated NET_RX budget,
/// at the trial's count. A threaded NAPI thread polls without it (the sysctl caps NET_RX
/// rounds of the RPS backlog, which the threaded simulation does not have; sim's threaded
/// `+budget` is 003's batch cap, another thing), so it is simulated without.
pub fn simulated_design(design: Design, options: &TrialOptions) -> Design {
    let budget = match design.threaded() {
        true => None,
        false => options.budget_of(&design).map(Budget::Packets),
    };
    Design { budget, ..design }
}

/// The model of trial's receiving CPU at `rate_pps`: datagrams in the sends the
/// calibration saw, the design's bottom half at the calibrated cost per datagram, the
/// echo server and the cyclic task at trial's priorities, threaded-niced's thread at
/// trial's `--napi-nice`. The rings hold sends (one GSO skb each); the NAPI weight and
/// budgets still count datagrams, where the kernel counts skbs.
pub fn trial_model(
    options: &TrialOptions,
    calibration: &Calibration,
    costs: &TrialCosts,
    rate_pps: f64,
    seconds: f64,
    seed: u64,
) -> SimConfig {
    let design = simulated_design(costs.design, options);
    let threaded = costs.design.threaded();
    let (burst, batch) = trial_batch(rate_pps, costs.arrivals_per_s);
    let mut limits = calibration.limits.clone();
    if let Some(packets) = options.budget_of(&costs.design) {
        limits.netdev_budget = packets;
        if let Some(usecs) = options.budget_usecs {
            limits.netdev_budget_usecs = f64::from(usecs);
        }
    }
    SimConfig {
        cpus: 1,
        duration_s: seconds,
        seed,
        sources: vec![Source {
            name: "veth".into(),
            cpu: 0,
            arrival: Arrival::Bursts {
                every_us: 1e6 * f64::from(burst) / rate_pps.max(1.0),
                size: burst,
                gap_us: 0.0,
            },
            hardirq: None,
            napi: true,
            softirq_per_packet: Some(Dist::constant(costs.bottom_half_per_datagram_us)),
            softirq_per_packet_saturated: costs
                .bottom_half_flood_per_datagram_us
                .map(Dist::constant),
            softirq_per_packet_dropped: costs
                .bottom_half_dropped_per_datagram_us
                .map(Dist::constant),
            // the fitted timer poll is the sending CPU's (veth's deferred NAPI and its timer
            // run beside the sender), and this one-CPU bed is the receiving CPU: charging it
            // here would slow the wrong CPU, so the source's hardirq cost stays
            timer_poll: None,
            // both queues hold skbs, and a send's datagrams travel as one (GSO) skb: they
            // are segmented at the UDP receive, past both
            ring: batch
                * if threaded {
                    VETH_RING
                } else {
                    NETDEV_MAX_BACKLOG
                },
            thread_nice: (costs.design.bottom_halves == BottomHalves::ThreadedNiced)
                .then_some(options.napi_nice),
        }],
        tasks: vec![
            Task {
                name: "echo".into(),
                cpu: 0,
                priority: Priority::Other {
                    nice: options.consumer_nice,
                },
                kind: TaskKind::Consumer {
                    source: "veth".into(),
                    cost_per_packet: Dist::constant(costs.consumer_per_datagram_us),
                    socket_queue: costs.socket_queue,
                    // the echo server sends each datagram back
                    replies: true,
                },
            },
            Task {
                name: "cyclic".into(),
                cpu: 0,
                priority: options.cyclic_priority,
                kind: TaskKind::Periodic {
                    period_us: options.cyclic_period_ns as f64 / 1e3,
                    phase_us: 0.0,
                    cost: Dist::constant(CYCLIC_WORK_US),
                },
            },
        ],
        costs: Costs {
            idle_exit: Dist::constant(costs.idle_exit_us),
            ..calibration.costs.clone()
        },
        limits,
        designs: vec![design],
    }
}

/// Without exact times: the least busy share of the receiving CPU (percent) a point
/// needs for its costs to count. /proc/stat samples at the tick (HZ=250: 500 samples in
/// 2 s), and a CPU mostly idle between short bursts of work is under-sampled, so quieter
/// points read too low (20k datagrams/s read as 3% busy here, 40k as 45%).
const FIT_BUSY_PERCENT: f64 = 25.0;

/// Datagrams per wakeup of trial's generator at `rate_pps`, and per send: what fell due
/// since its last wakeup (`arrivals_per_s` of them a second), sent at once in GSO batches
/// of up to 8 (flow.rs: it sends until it has caught up, and sleeps only then), and no
/// more than its lag allows (it gives up on datagrams later than that); without a wakeup
/// rate, whole batches.
fn trial_batch(rate_pps: f64, arrivals_per_s: Option<f64>) -> (u32, u32) {
    let rate = rate_pps.max(1.0);
    match arrivals_per_s {
        Some(wakeups) if wakeups > 0.0 => {
            let most = (rate * GENERATOR_MAX_LAG_NS as f64 / 1e9)
                .ceil()
                .max(f64::from(SEND_BATCH));
            let burst = (rate / wakeups).ceil().clamp(1.0, most) as u32;
            (burst, burst.min(SEND_BATCH))
        }
        _ => (SEND_BATCH, SEND_BATCH),
    }
}

/// The arrivals a second trial's generator made: the median of the echo server's sleeps
/// a second over the points it kept up at (it sleeps once per arrival then).
fn arrivals_per_s(points: &[&TrialPoint]) -> Option<f64> {
    let rates = points
        .iter()
        .filter_map(|p| {
            let times = p.runtimes.filter(|t| t.window_ns > 0)?;
            Some(times.echo_sleeps? as f64 / (times.window_ns as f64 / 1e9))
        })
        .filter(|&rate| rate > 0.0)
        .collect();
    median(rates)
}

/// The middle value (the upper one of an even count); none of no values.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    (!values.is_empty()).then(|| values[values.len() / 2])
}

/// The slope of the least-squares line through the points, if they have two distinct x
/// and it rises.
fn rising_slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 0.0 && sxy > 0.0).then(|| sxy / sxx)
}

/// `y = a u + b v` by least squares (no intercept), if both come out >= 0 and the two
/// inputs are not proportional.
fn two_costs(points: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    let sum = |f: &dyn Fn(&(f64, f64, f64)) -> f64| points.iter().map(f).sum::<f64>();
    let (uu, vv, uv) = (
        sum(&|p| p.0 * p.0),
        sum(&|p| p.1 * p.1),
        sum(&|p| p.0 * p.1),
    );
    let (uy, vy) = (sum(&|p| p.0 * p.2), sum(&|p| p.1 * p.2));
    let det = uu * vv - uv * uv;
    if det.abs() <= 1e-9 * uu * vv {
        return None;
    }
    let (a, b) = ((uy * vv - vy * uv) / det, (vy * uu - uy * uv) / det);
    (a >= 0.0 && b >= 0.0).then_some((a, b))
}

/// What the receiving CPU spends, from the points' exact times if they all have them
/// (µs): per echoed datagram, the bottom half and the echo server; per idle cycle (the
/// CPU's entries into idle; without cpuidle, the echo server's and the NAPI threads'
/// sleeps and the cyclic task's activations), the rest.
/// The echo server's cost is the slope of its time over the rates (the marginal cost: at
/// low rates its wakeups weigh more, and the simulation adds those itself), or the plain
/// ratio with one rate. The bottom half is the CPU's busy time outside the echo server (softirqs,
/// the NAPI thread; without cpuidle the NAPI threads alone), split by least squares
/// between datagrams and idle cycles; with too few points to split it, all of it per
/// datagram.
fn exact_per_datagram_us(points: &[&TrialPoint], cyclic_hz: f64) -> Option<(f64, f64, f64)> {
    let mut rest = Vec::new();
    let mut consumer = Vec::new();
    for point in points {
        let times = point.runtimes.filter(|t| t.window_ns > 0)?;
        let seconds = times.window_ns as f64 / 1e9;
        let rate = point.echoed as f64 / seconds;
        let per_s = |ns: u64| us_per_s(ns, times.window_ns);
        let outside = match times.busy_ns {
            Some(all) => all.saturating_sub(times.echo_ns),
            None if times.napi_ns > 0 => times.napi_ns,
            None => return None,
        };
        // the CPU's entries into idle, or without cpuidle its threads' sleeps
        let cycles = match times.idle_entries {
            Some(entries) => entries as f64 / seconds,
            None => {
                let sleeps = times.echo_sleeps.unwrap_or(0) + times.napi_sleeps.unwrap_or(0);
                sleeps as f64 / seconds + cyclic_hz
            }
        };
        rest.push((rate, cycles, per_s(outside)));
        consumer.push((rate, per_s(times.echo_ns)));
    }
    if points.iter().all(|p| p.echoed == 0) {
        return None;
    }
    let echo = rising_slope(&consumer).unwrap_or_else(|| ratio(consumer.iter().copied()));
    let (bottom_half, idle_cycle) =
        two_costs(&rest).unwrap_or_else(|| (ratio(rest.iter().map(|&(r, _, y)| (r, y))), 0.0));
    Some((bottom_half, echo, idle_cycle))
}

/// The bottom half's cost per datagram in a flood, µs, from a design's points past the
/// knee (the echo did not keep up: the receiving CPU is saturated): its time over the
/// datagrams it took to the echo server's socket, which past the knee are all those sent
/// (measured on the veth test bed: no ring or backlog drops, the socket drops them), over
/// the points' sums. Its time is as [`flood_bottom_half`] reads it. None without such
/// points.
fn flood_per_datagram_us(points: &[&TrialPoint], read: FloodTime) -> Option<f64> {
    let (sent, busy) = flood_bottom_half(points, read)
        .fold((0.0, 0.0), |(a, b), (p, busy)| (a + p.sent_pps, b + busy));
    (sent > 0.0).then(|| busy / sent)
}

/// `ns` of a window of `window_ns` as µs a second.
fn us_per_s(ns: u64, window_ns: u64) -> f64 {
    ns as f64 / 1e3 / (window_ns as f64 / 1e9)
}

/// How a design's bottom-half time in a flood is read.
#[derive(Clone, Copy, Debug)]
struct FloodTime {
    /// Its bottom half is the NAPI threads, whose run time trial records exactly.
    threaded: bool,
    /// The echo server's own cost per echoed datagram, µs, when the costs below the knee
    /// came from exact times and every flood point has its CPU's exact busy time: a
    /// softirq design's flood time is then that less the echo server's own work.
    echo_us: Option<f64>,
}

/// The points' bottom-half time a second (µs). A threaded design's is its NAPI threads'
/// (exact). A softirq's exact time hides in the echo server's past the knee (hardirq
/// exits and local_bh_enable() run it in the server's context, whose time per echo
/// grows from 3.0 µs below the knee to 5.4 to 5.9 at 1M/s here), so it is the receiving
/// CPU's exact busy time less the echo server's own work at its cost below the knee.
/// Without exact times, the share the CPU split gives the bottom half (the tick samples
/// a saturated CPU fairly, but that share overlaps the echo server's time: 60 to 88%
/// softirq and 74 to 78% echo server on a CPU 95% busy, measured at 1M/s).
fn flood_bottom_half<'a>(
    points: &'a [&'a TrialPoint],
    read: FloodTime,
) -> impl Iterator<Item = (&'a TrialPoint, f64)> + 'a {
    points.iter().filter(|p| p.sent_pps > 0.0).map(move |&p| {
        let exact = p.runtimes.filter(|t| t.window_ns > 0).and_then(|t| {
            match (read.threaded, read.echo_us, t.busy_ns) {
                (true, _, _) => (t.napi_ns > 0).then(|| us_per_s(t.napi_ns, t.window_ns)),
                (false, Some(echo_us), Some(busy_ns)) => {
                    Some((us_per_s(busy_ns, t.window_ns) - echo_us * p.echoed_pps).max(0.0))
                }
                (false, _, _) => None,
            }
        });
        let sampled = || {
            let share = match read.threaded {
                true => p.cpu.napi_thread_percent,
                false => p.cpu.softirq_percent,
            };
            (share + p.cpu.irq_percent) / 100.0 * 1e6
        };
        (p, exact.unwrap_or_else(sampled))
    })
}

/// The receiving CPU's busy share from which a point past the knee counts as saturated.
const SATURATED_BUSY_SHARE: f64 = 0.85;

/// The bottom half's cost in a flood split between a datagram echoed and one the echo
/// server's full socket dropped, µs: the flood points' bottom-half time by least squares
/// on the datagrams echoed and those dropped (sent, less echoed: past the knee the
/// socket drops them, after the whole receive path but the delivery and the wakeup),
/// over the points whose receiving CPU was saturated (a point just past the knee drops
/// few, in bursts, on a CPU half idle), their time read as [`flood_bottom_half`] reads
/// it. None without such points at two offered rates or more (the rounds of one rate
/// differ by the machine's noise only, and a split of that noise extrapolates wildly),
/// or with a split the receive path cannot have: a drop that costs nothing, or more than
/// an echo.
fn flood_split_us(points: &[&TrialPoint], read: FloodTime) -> Option<(f64, f64)> {
    let saturated: Vec<&TrialPoint> = points
        .iter()
        .copied()
        .filter(|p| receiving_busy_share(p) >= SATURATED_BUSY_SHARE)
        .collect();
    let rates: std::collections::BTreeSet<u64> = saturated.iter().map(|p| p.offered_pps).collect();
    if rates.len() < 2 {
        return None;
    }
    let split: Vec<(f64, f64, f64)> = flood_bottom_half(&saturated, read)
        .map(|(p, busy)| (p.echoed_pps, (p.sent_pps - p.echoed_pps).max(0.0), busy))
        .collect();
    two_costs(&split).filter(|&(echoed, dropped)| dropped > 0.0 && dropped <= echoed)
}

/// Time per datagram, µs, of a CPU share (percent) as /proc/stat samples it: over the
/// points, the share's sum over the echo rates' sum.
fn sampled_per_datagram_us(points: &[&TrialPoint], share: impl Fn(&TrialPoint) -> f64) -> f64 {
    ratio(points.iter().map(|p| (p.echoed_pps, share(p)))) / 100.0 * 1e6
}

/// The sum of the y over the sum of the x.
fn ratio(points: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (x, y) = points.fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    y / x.max(1.0)
}

/// What `design`'s NAPI mechanisms cost, as far as its points (and its base design's,
/// `busy_base` for a busy-polling one) determine them: none for a design without them.
fn napi_costs(
    design: Design,
    points: &[TrialPoint],
    busy_base: Option<Design>,
    from: &str,
) -> Vec<NapiCost> {
    let mut costs = Vec::new();
    if design.defer.is_some() {
        costs.push(timer_poll_cost(design, points, from));
    }
    if design.busy_poll.is_some() {
        let per_datagram = match busy_base {
            Some(base) => format!("its per-datagram costs are {base}'s"),
            None => "its per-datagram costs are its own points', whose echo server's time \
                     holds its busy loop (record its base design too)"
                .to_string(),
        };
        costs.push(NapiCost {
            cost: NapiCostName::BusyPollTurn,
            us: None,
            points: 0,
            what: format!(
                "the model's (none): trial counts the veth packets busy polls took \
                 (BusyPollRxPackets), not the loop's turns, and the simulated loop spins \
                 without a cost per turn (its CPU share is simulated: --against shows it \
                 beside SRV); {per_datagram}"
            ),
            from: from.to_string(),
        });
    }
    costs
}

/// The sending CPU's busy share above which a point says nothing of what extra work
/// costs there: a saturated CPU has no idle time to give to it (other work on this
/// shared VM saturates it at any rate).
const SENDER_SATURATED: f64 = 0.9;

/// The point pairs a timer poll's line needs: with one, the slope is that pair's noise.
const TIMER_POLL_PAIRS: usize = 2;

/// A deferral timer's poll, µs: against the same design without `+defer` at the same
/// rate and round (both following, neither's sending CPU saturated), the sending CPU's
/// extra busy time over its extra NET_RX runs (veth's NAPI and its timer run there:
/// deferral trades the peer's schedules for the timer's, and at low rates adds the
/// timer's tail of empty polls), a least-squares line through the origin over the pairs;
/// the base scaled to the point's sent rate. None with fewer than [`TIMER_POLL_PAIRS`]
/// pairs, if the extra runs do not cost more, or if a poll would cost more than the
/// timer's own period (noise, not a poll). Recorded for the reader: the simulated test
/// bed is the receiving CPU, which does not pay it.
fn timer_poll_cost(design: Design, points: &[TrialPoint], from: &str) -> NapiCost {
    let base = Design {
        defer: None,
        ..design
    };
    let period_us = design.defer.map_or(0.0, |d| f64::from(d.flush_timeout_us));
    // the base design's points by (rate, round): one look-up per point, however many
    let base_points: std::collections::HashMap<(u64, u32), &TrialPoint> =
        following_points(points, base)
            .into_iter()
            .map(|q| ((q.offered_pps, q.round), q))
            .collect();
    // NET_RX runs and busy µs a second on the sending CPU, and the sent rate
    let sender = |p: &TrialPoint| {
        let times = p.runtimes.filter(|t| t.window_ns > 0)?;
        let seconds = times.window_ns as f64 / 1e9;
        let runs = p.napi?.sending_net_rx as f64 / seconds;
        let busy_us = times.sender_busy_ns? as f64 / 1e3 / seconds;
        (busy_us < SENDER_SATURATED * 1e6 && p.sent_pps > 0.0)
            .then_some((runs, busy_us, p.sent_pps))
    };
    let pairs: Vec<(f64, f64)> = following_points(points, design)
        .into_iter()
        .filter_map(|p| {
            let q = base_points.get(&(p.offered_pps, p.round))?;
            let ((runs, busy, sent), (base_runs, base_busy, base_sent)) = (sender(p)?, sender(q)?);
            let scale = sent / base_sent;
            Some((runs - base_runs * scale, busy - base_busy * scale))
        })
        .collect();
    let sxx: f64 = pairs.iter().map(|(x, _)| x * x).sum();
    let sxy: f64 = pairs.iter().map(|(x, y)| x * y).sum();
    let slope = (pairs.len() >= TIMER_POLL_PAIRS && sxx > 0.0 && sxy > 0.0).then(|| sxy / sxx);
    let us = slope.filter(|&us| us <= period_us);
    let what = match (us, slope) {
        (Some(_), _) => format!(
            "the sending CPU's extra busy time over its extra NET_RX runs against {base} at \
             the same rates (veth's NAPI and its deferral timer run there), through the \
             origin; recorded, not simulated: --against's bed is the receiving CPU"
        ),
        (None, Some(slope)) => format!(
            "the model's (the source's hardirq cost): the fit gives {slope:.1} µs a poll, \
             more than the timer's {period_us} µs period: the sending CPU's noise, not a \
             poll's cost"
        ),
        (None, None) if !pairs.is_empty() && pairs.len() < TIMER_POLL_PAIRS => format!(
            "the model's (the source's hardirq cost): {} point pair(s) with {base}, fewer \
             than the {TIMER_POLL_PAIRS} a line needs",
            pairs.len()
        ),
        (None, None) if pairs.is_empty() => format!(
            "the model's (the source's hardirq cost): no point pairs with {base} at the same \
             rate and round, both following, with the sending CPU's exact time (not \
             saturated) and NET_RX counts"
        ),
        (None, None) => format!(
            "the model's (the source's hardirq cost): the extra NET_RX runs against {base} \
             cost no extra time on the sending CPU"
        ),
    };
    NapiCost {
        cost: NapiCostName::TimerPoll,
        us,
        points: pairs.len(),
        what,
        from: from.to_string(),
    }
}

/// A point's NAPI figures next to its simulation's (none without figures or if nothing
/// was sent).
fn compared_napi(point: &TrialPoint, simulated: &DesignResult) -> Option<ComparedNapi> {
    let napi = point.napi?;
    let per_sent = |count| per_datagram(count, point.sent);
    Some(ComparedNapi {
        measured_net_rx_per_datagram: per_sent(napi.receiving_net_rx)?,
        simulated_net_rx_per_datagram: (!point.design.threaded())
            .then_some(simulated.napi_schedules_per_arrival),
        measured_sending_net_rx_per_datagram: per_sent(napi.sending_net_rx)?,
        measured_busy: receiving_busy_share(point),
        simulated_busy: simulated.busy_by_cpu.first().copied().unwrap_or(0.0),
        measured_echo_share: echo_share(point),
        simulated_echo_share: simulated.consumers.first().map_or(0.0, |c| c.cpu_share),
        measured_busy_polled_per_datagram: napi.busy_polled.and_then(per_sent),
    })
}

/// From a trial recording: per design that followed the offered rate at one rate or more,
/// the per-datagram costs from those points (the busy ones, if any), and the path outside the receiving CPU
/// (the lowest following rate's measured median less the simulated one under
/// `calibration`'s costs).
pub fn trial_costs(
    options: &TrialOptions,
    points: &[TrialPoint],
    calibration: &Calibration,
    socket_queue: u32,
    from: &str,
) -> Result<Vec<TrialCosts>, String> {
    let mut found = Vec::new();
    for design in first_seen(points.iter().map(|p| p.design)) {
        if let Some(costs) = design_costs(design, options, points, calibration, socket_queue, from)?
        {
            found.push(costs);
        }
    }
    Ok(found)
}

/// The points of `design` that followed the offered rate, lowest rate first.
fn following_points(points: &[TrialPoint], design: Design) -> Vec<&TrialPoint> {
    let mut following: Vec<&TrialPoint> = points
        .iter()
        .filter(|p| p.design == design && follows(p))
        .collect();
    following.sort_by_key(|p| p.offered_pps);
    following
}

/// One design's costs from its following points; none if it followed at no rate. A
/// busy-polling design's per-datagram costs come from its base design's points when the
/// recording has them: its own echo server's time holds its busy loop, and its sleeps
/// are the loop's ends, not the arrivals.
fn design_costs(
    design: Design,
    options: &TrialOptions,
    points: &[TrialPoint],
    calibration: &Calibration,
    socket_queue: u32,
    from: &str,
) -> Result<Option<TrialCosts>, String> {
    let Some(&lowest) = following_points(points, design).first() else {
        return Ok(None);
    };
    let base = design
        .busy_poll
        .map(|_| Design {
            busy_poll: None,
            ..design
        })
        .filter(|base| !following_points(points, *base).is_empty());
    let following = following_points(points, base.unwrap_or(design));
    let past_knee: Vec<&TrialPoint> = points
        .iter()
        .filter(|p| p.design == design && !follows(p))
        .collect();
    let arrivals = arrivals_per_s(&following);
    let cyclic_hz = 1e9 / options.cyclic_period_ns.max(1) as f64;
    let exact = exact_per_datagram_us(&following, cyclic_hz);
    let (bottom_half, consumer, idle_cycle, fitted) = match exact {
        Some((bottom_half, consumer, idle_cycle)) => {
            (bottom_half, consumer, idle_cycle, following.len())
        }
        None => {
            let busy: Vec<&TrialPoint> = following
                .iter()
                .copied()
                .filter(|p| 100.0 - p.cpu.idle_percent >= FIT_BUSY_PERCENT)
                .collect();
            let fitted = if busy.is_empty() { following } else { busy };
            let bottom_half = sampled_per_datagram_us(&fitted, |p| {
                p.cpu.softirq_percent + p.cpu.napi_thread_percent + p.cpu.irq_percent
            });
            let consumer =
                sampled_per_datagram_us(&fitted, |p| p.cpu.user_percent + p.cpu.system_percent);
            (bottom_half, consumer, 0.0, fitted.len())
        }
    };
    // one scale for all the flood points: the ticks' share, which holds some of the echo
    // server's time, would not add up with exact ones
    let flood_points_exact = past_knee.iter().all(|p| {
        p.runtimes
            .is_some_and(|t| t.window_ns > 0 && t.busy_ns.is_some())
    });
    let flood_time = FloodTime {
        threaded: design.threaded(),
        echo_us: (exact.is_some() && flood_points_exact).then_some(consumer),
    };
    let flood_split = flood_split_us(&past_knee, flood_time);
    let mut costs = TrialCosts {
        design,
        bottom_half_per_datagram_us: bottom_half,
        // with the split, a datagram that reaches the socket costs the echoed share
        bottom_half_flood_per_datagram_us: flood_split
            .map(|(echoed, _)| echoed)
            .or_else(|| flood_per_datagram_us(&past_knee, flood_time)),
        bottom_half_dropped_per_datagram_us: flood_split.map(|(_, dropped)| dropped),
        consumer_per_datagram_us: consumer,
        // what the simulation charges outside the woken thread itself: the wakeup
        // and the switch from idle (the switch to idle and the return to user run
        // in the thread's own time, which the echo server's cost holds)
        idle_exit_us: (idle_cycle
            - calibration.costs.context_switch.mean()
            - calibration.costs.wakeup.mean())
        .max(0.0),
        arrivals_per_s: arrivals,
        path_us: 0.0,
        socket_queue,
        points: fitted,
        from: from.to_string(),
        per_datagram_from: base,
        napi: napi_costs(design, points, base, from),
    };
    if let Some(measured) = lowest.echo_latency {
        let model = trial_model(options, calibration, &costs, lowest.sent_pps, 1.0, 1);
        super::check(&model)?;
        let simulated = simulate_design(&model, &model.designs[0]);
        let p50 = simulated
            .consumers
            .first()
            .map_or(0.0, |c| c.latency.p50_us);
        costs.path_us = (measured.p50_ns as f64 / 1e3 - p50).max(0.0);
    }
    Ok(Some(costs))
}

/// A recorded trial's points next to the simulation of each (offered at the rate the
/// kernel took), and per design the knee (measured: also each round's), the peak and the
/// median latency's error.
pub fn compare_trial(
    options: &TrialOptions,
    points: &[TrialPoint],
    calibration: &Calibration,
    seconds: f64,
    seed: u64,
) -> Result<(Vec<ComparedPoint>, Vec<ComparedDesign>), String> {
    let mut compared = Vec::with_capacity(points.len());
    for point in points {
        let costs = calibration
            .trial
            .iter()
            .find(|c| c.design == point.design)
            .ok_or_else(|| {
                format!(
                    "the calibration has no trial costs for design {}: calibrate with a trial \
                     recording that measured it (--calibrate TRIAL.rec)",
                    point.design
                )
            })?;
        let model = trial_model(options, calibration, costs, point.sent_pps, seconds, seed);
        super::check(&model)?;
        let simulated = simulate_design(&model, &model.designs[0]);
        let echo = simulated.consumers.first().expect("the model has its echo");
        compared.push(ComparedPoint {
            design: point.design,
            offered_pps: point.offered_pps,
            round: point.round,
            sent_pps: point.sent_pps,
            measured_echoed_pps: point.echoed_pps,
            simulated_echoed_pps: echo.delivered_per_s,
            measured_p50_us: point.echo_latency.map(|l| l.p50_ns as f64 / 1e3),
            simulated_p50_us: (echo.latency.count > 0)
                .then_some(echo.latency.p50_us + costs.path_us),
            napi: compared_napi(point, &simulated),
        });
    }
    let summaries = first_seen(compared.iter().map(|p| p.design))
        .into_iter()
        .map(|design| summarize_design(design, options, &compared))
        .collect();
    Ok((compared, summaries))
}

fn summarize_design(
    design: Design,
    options: &TrialOptions,
    compared: &[ComparedPoint],
) -> ComparedDesign {
    let ladder: Vec<&ComparedPoint> = compared.iter().filter(|p| p.design == design).collect();
    let following = |echoed: fn(&ComparedPoint) -> f64| {
        move |p: &ComparedPoint| keeps_up(p.sent_pps, echoed(p))
    };
    let measured = |p: &ComparedPoint| p.measured_echoed_pps;
    let simulated = |p: &ComparedPoint| p.simulated_echoed_pps;
    let knee_of = |echoed| knee(&ladder, |p| p.offered_pps, |p| p.round, following(echoed));
    let peak = |echoed: fn(&ComparedPoint) -> f64| {
        rung_medians(&ladder, |p| p.offered_pps, echoed)
            .into_iter()
            .map(|(_, echo)| echo)
            .fold(0.0, f64::max)
    };
    let (measured_follows, simulated_follows) = (following(measured), following(simulated));
    let errors = ladder
        .iter()
        .filter(|p| measured_follows(p) && simulated_follows(p))
        .filter_map(|p| {
            let (m, s) = (p.measured_p50_us?, p.simulated_p50_us?);
            (m > 0.0).then(|| (s - m).abs() / m)
        })
        .collect();
    let (measured_peak, simulated_peak) = (peak(measured), peak(simulated));
    let measured_knee = knee_of(measured);
    ComparedDesign {
        design,
        simulated_as: simulated_design(design, options),
        measured_follows_up_to_pps: measured_knee.follows_up_to_pps,
        measured_follows_up_to_by_round_pps: measured_knee.by_round,
        simulated_follows_up_to_pps: knee_of(simulated).follows_up_to_pps,
        measured_peak_pps: measured_peak,
        simulated_peak_pps: simulated_peak,
        peak_error: (measured_peak > 0.0).then(|| simulated_peak / measured_peak - 1.0),
        median_latency_error: median(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::trial::{CpuSplit, EchoLatency, NapiFigures, Runtimes};

    fn options() -> TrialOptions {
        TrialOptions {
            receiving_cpu: 1,
            sending_cpu: 0,
            rates: vec![],
            designs: vec![],
            rounds: 1,
            duration_ns: 2_000_000_000,
            warm_up_ns: 0,
            payload_bytes: 64,
            consumer_nice: -10,
            napi_nice: -10,
            napi_fifo_priority: 50,
            cyclic_priority: Priority::Fifo(95),
            cyclic_period_ns: 500_000,
            budget_packets: 32,
            budget_usecs: None,
        }
    }

    /// The cyclic task's activations per second in `options()`.
    const CYCLIC_HZ: f64 = 2_000.0;
    /// Per idle cycle in the points below, µs.
    const IDLE_CYCLE_US: f64 = 9.0;

    /// A point of `design` at `rate` echoing `echoed` of it per second for 2 s, the echo
    /// server sleeping `sleeps` times a second; exact times of `echo_us` and `rest_us`
    /// per echo and [`IDLE_CYCLE_US`] per idle cycle.
    fn point(
        design: &str,
        rate: u64,
        echoed: f64,
        sleeps: f64,
        echo_us: f64,
        rest_us: f64,
    ) -> TrialPoint {
        let seconds = 2.0;
        let n = (echoed * seconds) as u64;
        let ns = |us: f64| (us * 1e3) as u64;
        let cycles = (sleeps + CYCLIC_HZ) * seconds;
        TrialPoint {
            design: design.parse().unwrap(),
            offered_pps: rate,
            round: 1,
            sent: rate * 2,
            sent_pps: rate as f64,
            echoed: n,
            echoed_pps: echoed,
            loss_percent: 0.0,
            echo_latency: Some(EchoLatency {
                count: n,
                p50_ns: 40_000,
                p99_ns: 90_000,
                max_ns: 200_000,
            }),
            cyclic: None,
            cpu: CpuSplit::default(),
            napi_scheduling: vec![],
            runtimes: Some(Runtimes {
                window_ns: 2_000_000_000,
                busy_ns: Some(ns((echo_us + rest_us) * n as f64 + IDLE_CYCLE_US * cycles)),
                idle_entries: None,
                sender_busy_ns: None,
                echo_ns: ns(echo_us * n as f64),
                echo_sleeps: Some((sleeps * seconds) as u64),
                napi_ns: 0,
                napi_sleeps: None,
            }),
            napi: None,
        }
    }

    fn calibration() -> Calibration {
        Calibration {
            header: irqlens_model::run::Header::new("sim-calibration"),
            measured: vec![],
            costs: Costs::default(),
            limits: irqlens_model::sim::Limits::default(),
            trial: vec![],
        }
    }

    /// The sending CPU's time per datagram sent in the points below, µs.
    const SENDER_PER_DATAGRAM_US: f64 = 5.0;

    /// `point`, with NAPI figures: `receiving` and `sending` NET_RX runs per datagram
    /// sent, and the sending CPU's exact time: [`SENDER_PER_DATAGRAM_US`] per datagram
    /// and `run_us` per NET_RX run there.
    fn napi_point(
        design: &str,
        rate: u64,
        (receiving, sending): (f64, f64),
        run_us: f64,
    ) -> TrialPoint {
        let mut p = point(
            design,
            rate,
            rate as f64,
            (rate as f64).min(10_000.0),
            6.0,
            1.5,
        );
        let runs = |per_datagram: f64| (per_datagram * p.sent as f64) as u64;
        let napi = NapiFigures {
            receiving_net_rx: runs(receiving),
            sending_net_rx: runs(sending),
            ..NapiFigures::default()
        };
        let times = p.runtimes.as_mut().unwrap();
        times.sender_busy_ns = Some(
            ((SENDER_PER_DATAGRAM_US * p.sent as f64 + run_us * napi.sending_net_rx as f64) * 1e3)
                as u64,
        );
        p.napi = Some(napi);
        p
    }

    /// `stock` and `stock+defer=100:20` at three rates: the deferral's timer tail adds
    /// NET_RX runs on the sending CPU at low rates and saves some at higher ones (as on
    /// this VM's veth bed), each run costing `run_us` there.
    fn deferral_ladder(run_us: f64) -> Vec<TrialPoint> {
        [
            ("stock", [1.9, 0.9, 0.7]),
            ("stock+defer=100:20", [6.7, 1.5, 0.6]),
        ]
        .into_iter()
        .flat_map(|(design, sending)| {
            [5_000u64, 20_000, 50_000]
                .into_iter()
                .zip(sending)
                .map(move |(rate, sending)| napi_point(design, rate, (1.9, sending), run_us))
        })
        .collect()
    }

    #[test]
    fn a_deferral_timers_poll_costs_the_sending_cpus_time_per_extra_net_rx_run() {
        let points = deferral_ladder(3.0);
        let costs = trial_costs(&options(), &points, &calibration(), 208, "t.rec").unwrap();
        let [stock, deferred] = [&costs[0], &costs[1]];
        assert!(stock.napi.is_empty());
        let timer = &deferred.napi[0];
        assert_eq!((timer.cost, timer.points), (NapiCostName::TimerPoll, 3));
        assert!((timer.us.unwrap() - 3.0).abs() < 0.01, "{timer:?}");
        assert!(timer.what.contains("against stock"), "{}", timer.what);
        assert_eq!(timer.from, "t.rec");
        // the simulated bed is the receiving CPU, which does not pay it: recorded only
        assert!(timer.what.contains("not simulated"), "{}", timer.what);
        let source = |costs: &TrialCosts| {
            trial_model(&options(), &calibration(), costs, 20_000.0, 1.0, 1).sources[0].clone()
        };
        assert_eq!(source(deferred).timer_poll, None);
        assert_eq!(source(stock).timer_poll, None);
        // one pair is that pair's noise, not a line
        let one_rate: Vec<TrialPoint> = [0, 3].map(|i| points[i].clone()).into();
        let one = trial_costs(&options(), &one_rate, &calibration(), 208, "t.rec").unwrap();
        let timer = &one[1].napi[0];
        assert_eq!((timer.us, timer.points), (None, 1));
        assert!(timer.what.contains("fewer than"), "{}", timer.what);
        // nor does a poll dearer than the timer's 20 µs period (25 µs: two pairs left unsaturated)
        let dear = trial_costs(
            &options(),
            &deferral_ladder(25.0),
            &calibration(),
            208,
            "t.rec",
        );
        let dear = dear.unwrap();
        assert_eq!(dear[1].napi_us(NapiCostName::TimerPoll), None);
        assert!(
            dear[1].napi[0].what.contains("more than the timer"),
            "{}",
            dear[1].napi[0].what
        );
        // the deferral's points alone determine nothing: the model's stays, and says why
        let alone = trial_costs(&options(), &points[3..], &calibration(), 208, "t.rec").unwrap();
        let timer = &alone[0].napi[0];
        assert_eq!((timer.us, timer.points), (None, 0));
        assert!(timer.what.starts_with("the model's"), "{}", timer.what);
        assert_eq!(source(&alone[0]).timer_poll, None);
        // nor do runs that cost nothing,
        let free = trial_costs(
            &options(),
            &deferral_ladder(0.0),
            &calibration(),
            208,
            "t.rec",
        );
        assert_eq!(free.unwrap()[1].napi_us(NapiCostName::TimerPoll), None);
        // nor a sending CPU that other work saturates: it has no idle time to give
        let mut saturated = points.clone();
        for p in &mut saturated {
            let times = p.runtimes.as_mut().unwrap();
            times.sender_busy_ns = Some(times.window_ns);
        }
        let costs = trial_costs(&options(), &saturated, &calibration(), 208, "t.rec").unwrap();
        assert_eq!((costs[1].napi[0].us, costs[1].napi[0].points), (None, 0));
    }

    #[test]
    fn a_busy_polling_design_takes_its_per_datagram_costs_from_its_base_design() {
        // the busy-polling server's time holds its loop (20 µs a datagram in all) and it
        // sleeps only when a loop ends: its own points would fit neither
        let ladder = |design: &str, echo_us: f64, sleeps: f64| {
            [20_000u64, 40_000].map(|rate| point(design, rate, rate as f64, sleeps, echo_us, 1.5))
        };
        let mut points: Vec<TrialPoint> = ladder("stock", 6.0, 10_000.0).into();
        points.extend(ladder("stock+busy-poll=50", 20.0, 3_000.0));
        let costs = trial_costs(&options(), &points, &calibration(), 208, "t.rec").unwrap();
        let [stock, polled] = [&costs[0], &costs[1]];
        assert_eq!(polled.per_datagram_from, Some("stock".parse().unwrap()));
        assert!(
            (polled.consumer_per_datagram_us - 6.0).abs() < 0.01,
            "{polled:?}"
        );
        for (a, b) in [
            (
                polled.bottom_half_per_datagram_us,
                stock.bottom_half_per_datagram_us,
            ),
            (polled.idle_exit_us, stock.idle_exit_us),
        ] {
            assert!((a - b).abs() < 1e-9);
        }
        assert_eq!(polled.arrivals_per_s, stock.arrivals_per_s);
        let turn = &polled.napi[0];
        assert_eq!((turn.cost, turn.us), (NapiCostName::BusyPollTurn, None));
        assert!(turn.what.contains("stock's"), "{}", turn.what);
        // without its base in the recording, its own points, and the calibration says so
        let own = trial_costs(&options(), &points[2..], &calibration(), 208, "t.rec").unwrap();
        assert_eq!(own[0].per_datagram_from, None);
        assert!(own[0].consumer_per_datagram_us > 15.0, "{:?}", own[0]);
        assert!(own[0].napi[0].what.contains("holds its busy loop"));
    }

    #[test]
    fn a_recording_without_napi_mechanisms_calibrates_as_before() {
        let plain: Vec<TrialPoint> = ["stock", "threaded-niced"]
            .into_iter()
            .flat_map(|design| {
                [20_000u64, 40_000, 80_000]
                    .map(|rate| point(design, rate, rate as f64, 10_000.0, 6.0, 1.5))
            })
            .collect();
        let before = trial_costs(&options(), &plain, &calibration(), 208, "t.rec").unwrap();
        // the same points with NAPI figures, and beside a deferral's: the same costs
        let mut with_napi = plain.clone();
        for p in &mut with_napi {
            p.napi = Some(NapiFigures {
                receiving_net_rx: p.sent * 2,
                sending_net_rx: p.sent,
                ..NapiFigures::default()
            });
        }
        with_napi.extend(deferral_ladder(3.0).into_iter().skip(3));
        let after = trial_costs(&options(), &with_napi, &calibration(), 208, "t.rec").unwrap();
        assert_eq!(after.len(), 3);
        assert_eq!(before[..], after[..2]);
        // and written with the fields older calibrations have, no more
        let fields = |costs: &TrialCosts| {
            let json = serde_json::to_value(costs).unwrap();
            let mut keys: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        let old_fields = [
            "arrivals_per_s",
            "bottom_half_flood_per_datagram_us",
            "bottom_half_per_datagram_us",
            "consumer_per_datagram_us",
            "design",
            "from",
            "idle_exit_us",
            "path_us",
            "points",
            "socket_queue",
        ];
        for costs in &before {
            assert!(costs.napi.is_empty() && costs.per_datagram_from.is_none());
            assert_eq!(fields(costs), old_fields);
        }
        assert!(fields(&after[2]).contains(&"napi".to_string()));
    }

    #[test]
    fn against_sets_the_napi_figures_beside_the_simulated_ones_or_says_not_simulated() {
        let mut points = deferral_ladder(3.0);
        for design in ["stock+busy-poll=always", "threaded-niced"] {
            points.extend([5_000u64, 20_000].map(|rate| napi_point(design, rate, (1.9, 1.0), 3.0)));
        }
        let mut calibration = calibration();
        calibration.trial = trial_costs(&options(), &points, &calibration, 208, "t.rec").unwrap();
        let mut old = point("stock", 20_000, 20_000.0, 10_000.0, 6.0, 1.5);
        old.napi = None;
        points.push(old);
        let (compared, _) = compare_trial(&options(), &points, &calibration, 0.2, 1).unwrap();
        let napi = |design: &str, rate: u64| {
            compared
                .iter()
                .rev()
                .find(|p| p.design.to_string() == design && p.offered_pps == rate)
                .unwrap()
                .napi
        };
        let stock = napi("stock", 5_000).unwrap();
        assert!((stock.measured_net_rx_per_datagram - 1.9).abs() < 0.01);
        assert!((stock.measured_sending_net_rx_per_datagram - 1.9).abs() < 0.01);
        let simulated_runs = stock.simulated_net_rx_per_datagram.unwrap();
        assert!(simulated_runs > 0.0 && simulated_runs <= 1.0, "{stock:?}");
        // a threaded design's polls are its thread's: no NET_RX run to compare
        let threaded = napi("threaded-niced", 5_000).unwrap();
        assert_eq!(threaded.simulated_net_rx_per_datagram, None);
        // the full busy poll takes its CPU in the simulation too
        let always = napi("stock+busy-poll=always", 5_000).unwrap();
        assert!(always.simulated_echo_share > 0.9, "{always:?}");
        assert!(always.simulated_busy > 0.99);
        assert!(stock.simulated_echo_share < 0.5 * always.simulated_echo_share);
        assert_eq!(always.measured_echo_share, echo_share(&points[6]));
        // a point recorded without NAPI figures has none to compare
        assert_eq!(napi("stock", 20_000), None);
    }

    #[test]
    fn a_distribution_keeps_its_quantiles_up_to_p90_and_never_falls() {
        let dist = quantile_dist(|q| {
            Some(if q < 0.5 {
                3_000
            } else {
                (q * 10_000.0) as u64
            })
        })
        .unwrap();
        let Dist::Quantiles { points } = &dist else {
            panic!("{dist:?}");
        };
        assert_eq!(points.first().unwrap(), &[0.0, 3.0]);
        assert_eq!(points.last().unwrap(), &[1.0, 9.0], "the top is p90");
        assert!(dist.check().is_ok());
        assert!(quantile_dist(|_| None).is_none());
    }

    #[test]
    fn each_cost_comes_from_the_measurement_with_the_most_samples() {
        let measured = |cost, us, samples, from: &str| MeasuredCost {
            cost,
            dist: Dist::constant(us),
            samples,
            what: String::new(),
            from: from.into(),
        };
        let costs = costs_from(
            &[
                measured(CostName::SoftirqPerPacket, 4.0, 10, "bh.rec"),
                measured(CostName::SoftirqPerPacket, 2.5, 900, "account.rec"),
                measured(CostName::ContextSwitch, 6.0, 50, "wakeup.rec"),
            ],
            &Costs::default(),
        );
        assert_eq!(costs.softirq_per_packet, Dist::constant(2.5));
        assert_eq!(costs.context_switch, Dist::constant(6.0));
        assert_eq!(costs.wakeup, Costs::default().wakeup);
        assert!(costs.origin.contains("softirq_per_packet from account.rec"));
        assert!(
            costs
                .origin
                .contains("default hardirq, wakeup, return_to_user")
        );
    }

    #[test]
    fn exact_times_give_the_costs_per_datagram_and_per_idle_cycle() {
        // 6 µs of echo server and 1.5 µs of bottom half per echo, 9 µs per idle cycle;
        // the server sleeps once per datagram at 8k/s, then 10k times a second
        let points: Vec<TrialPoint> = [8_000u64, 20_000, 40_000, 80_000]
            .map(|rate| {
                point(
                    "stock",
                    rate,
                    rate as f64,
                    (rate as f64).min(10_000.0),
                    6.0,
                    1.5,
                )
            })
            .into();
        let refs: Vec<&TrialPoint> = points.iter().collect();
        let (bottom_half, consumer, idle_cycle) = exact_per_datagram_us(&refs, CYCLIC_HZ).unwrap();
        assert!((bottom_half - 1.5).abs() < 0.01, "{bottom_half}");
        assert!((consumer - 6.0).abs() < 0.01, "{consumer}");
        assert!((idle_cycle - IDLE_CYCLE_US).abs() < 0.01, "{idle_cycle}");
        // one rate: the plain ratio, the idle cycles not told apart
        let (bottom_half, _, idle_cycle) = exact_per_datagram_us(&refs[..1], CYCLIC_HZ).unwrap();
        assert_eq!(idle_cycle, 0.0);
        let all_per_echo = 1.5 + IDLE_CYCLE_US * (8_000.0 + CYCLIC_HZ) / 8_000.0;
        assert!((bottom_half - all_per_echo).abs() < 0.01, "{bottom_half}");
        let mut untimed = points[0].clone();
        untimed.runtimes = None;
        assert!(exact_per_datagram_us(&[&untimed], CYCLIC_HZ).is_none());
    }

    #[test]
    fn the_simulated_test_bed_stops_following_where_its_costs_say() {
        // 8.5 µs per echo: about 100k/s fit in the CPU
        let mut calibration = calibration();
        let measured: Vec<TrialPoint> = [20_000u64, 40_000, 80_000, 160_000, 320_000]
            .into_iter()
            .map(|rate| {
                let echoed = (rate as f64).min(100_000.0);
                let sleeps = (rate as f64).min(10_000.0);
                let mut p = point("threaded-niced", rate, echoed, sleeps, 7.0, 1.5);
                p.echoed = (echoed * 2.0) as u64;
                p
            })
            .collect();
        calibration.trial =
            trial_costs(&options(), &measured[..3], &calibration, 208, "t.rec").unwrap();
        let costs = &calibration.trial[0];
        assert!(
            (costs.consumer_per_datagram_us - 7.0).abs() < 0.01,
            "{costs:?}"
        );
        // the server kept up at 10k sleeps a second: datagrams come 10k times a second
        assert_eq!(costs.arrivals_per_s, Some(10_000.0));
        // threaded-niced's thread a step below the echo server, as trial's default is
        let mut niced = options();
        niced.napi_nice = niced.consumer_nice + 5;
        let bed_of = |costs: &TrialCosts, rate: f64| {
            trial_model(&niced, &calibration, costs, rate, 1.0, 1).sources[0].clone()
        };
        let bed = |rate: f64| bed_of(costs, rate);
        let bursts = |every_us, size| Arrival::Bursts {
            every_us,
            size,
            gap_us: 0.0,
        };
        assert_eq!(bed(20_000.0).arrival, bursts(100.0, 2));
        assert_eq!(bed(5_000.0).arrival, bursts(200.0, 1));
        // a wakeup sends all that fell due (in sends of one GSO batch of 8 at most): past
        // 80k/s the bursts grow
        assert_eq!(bed(1_000_000.0).arrival, bursts(100.0, 100));
        // up to the generator's lag of 10 ms: it gives up on what is later than that
        let rare = TrialCosts {
            arrivals_per_s: Some(0.001),
            ..costs.clone()
        };
        assert_eq!(bed_of(&rare, 20_000.0).arrival, bursts(10_000.0, 200));
        assert_eq!(bed_of(&rare, 100.0).arrival, bursts(80_000.0, 8));
        // veth's ring holds skbs, each a send's datagrams; so does stock's backlog
        assert_eq!(bed(5_000.0).ring, VETH_RING);
        assert_eq!(bed(20_000.0).ring, 2 * VETH_RING);
        assert_eq!(bed(1_000_000.0).ring, 8 * VETH_RING);
        let stock = TrialCosts {
            design: "stock".parse().unwrap(),
            ..costs.clone()
        };
        assert_eq!(bed_of(&stock, 1_000_000.0).ring, 8 * NETDEV_MAX_BACKLOG);
        // trial's --napi-nice, not the echo server's; a design without a niced thread
        // has none
        assert_eq!(bed(5_000.0).thread_nice, Some(-5));
        assert_eq!(bed_of(&stock, 5_000.0).thread_nice, None);
        // the simulation's own wakeup and switch (the defaults' means) taken out of the
        // idle cycle
        let defaults = Costs::default();
        let idle_exit = IDLE_CYCLE_US - defaults.context_switch.mean() - defaults.wakeup.mean();
        assert!((costs.idle_exit_us - idle_exit).abs() < 0.05, "{costs:?}");
        let (points, designs) = compare_trial(&options(), &measured, &calibration, 0.3, 1).unwrap();
        assert_eq!(points.len(), 5);
        let design = &designs[0];
        assert_eq!(design.simulated_as.to_string(), "threaded-niced");
        assert_eq!(design.measured_follows_up_to_pps, Some(80_000));
        assert_eq!(
            design.simulated_follows_up_to_pps,
            Some(80_000),
            "{points:?}"
        );
        assert!(design.simulated_peak_pps < 110_000.0, "{design:?}");
        assert!(design.median_latency_error.is_some());
        // a design the calibration does not have is refused
        let other = point("stock", 20_000, 20_000.0, 10_000.0, 6.0, 1.0);
        let err = compare_trial(&options(), &[other], &calibration, 0.1, 1).unwrap_err();
        assert!(err.contains("no trial costs for design stock"), "{err}");
    }

    #[test]
    fn points_past_the_knee_give_the_bottom_halfs_cost_in_a_flood() {
        // 0.5 µs of bottom half per echo below the knee; past it the echo server keeps
        // 60k/s and the bottom half takes every datagram sent to its socket, 1.1 µs each
        const FLOOD_US: f64 = 1.1;
        let ladder = |design: &str| -> Vec<TrialPoint> {
            let below = [20_000u64, 40_000]
                .map(|rate| point(design, rate, rate as f64, 10_000.0, 6.0, 0.5));
            let past = [160_000u64, 320_000, 640_000].map(|rate| {
                let mut p = point(design, rate, 60_000.0, 10.0, 6.0, 0.5);
                let busy_share = FLOOD_US * rate as f64 / 1e6;
                let times = p.runtimes.as_mut().unwrap();
                if design.starts_with("threaded") {
                    // exact: the NAPI thread's time; the split's other softirq not its
                    times.napi_ns = (busy_share * times.window_ns as f64) as u64;
                    p.cpu.softirq_percent = 20.0;
                } else {
                    // the softirq ran inside the echo server's time, and the CPU did
                    // nothing else; the tick's softirq share counts some of the echo
                    // server's own time too
                    times.echo_ns += (busy_share * times.window_ns as f64) as u64;
                    times.busy_ns = Some(times.echo_ns);
                    p.cpu.softirq_percent = busy_share * 100.0 + 20.0;
                }
                p
            });
            below.into_iter().chain(past).collect()
        };
        for design in ["stock", "threaded-niced"] {
            let points = ladder(design);
            let costs = trial_costs(&options(), &points, &calibration(), 208, "t.rec").unwrap();
            let flood = costs[0].bottom_half_flood_per_datagram_us.unwrap();
            assert!((flood - FLOOD_US).abs() < 0.01, "{design}: {flood}");
            assert!(
                (costs[0].bottom_half_per_datagram_us - 0.5).abs() < 0.01,
                "{design}: {costs:?}"
            );
            // a ladder that kept up everywhere has no flood to fit
            let costs =
                trial_costs(&options(), &points[..2], &calibration(), 208, "t.rec").unwrap();
            assert_eq!(costs[0].bottom_half_flood_per_datagram_us, None);
        }
    }

    #[test]
    fn saturated_points_at_two_rates_split_the_flood_between_echoed_and_dropped() {
        // 1.2 µs of bottom half per echoed datagram and 0.6 per dropped one beside the
        // echo server's own 2.5, on a CPU the points saturate: the CPU's exact busy time
        // less the echo server's own work; the tick's softirq share, which counts the
        // echo server's time too, is read only without exact times
        const ECHO_US: f64 = 2.5;
        const ECHOED_US: f64 = 1.2;
        const DROPPED_US: f64 = 0.6;
        let exact = FloodTime {
            threaded: false,
            echo_us: Some(ECHO_US),
        };
        let flood_with = |rate: u64, echoed: f64, echoed_us: f64, dropped_us: f64| {
            let mut p = point("stock", rate, echoed, 10.0, ECHO_US, 0.0);
            let bottom_half = echoed_us * echoed + dropped_us * (rate as f64 - echoed);
            let busy = ECHO_US * echoed + bottom_half;
            let times = p.runtimes.as_mut().unwrap();
            times.busy_ns = Some((busy / 1e6 * times.window_ns as f64) as u64);
            p.cpu.softirq_percent = busy / 1e4;
            p
        };
        let flood = |rate, echoed| flood_with(rate, echoed, ECHOED_US, DROPPED_US);
        let points = [
            flood(320_000, 230_000.0),
            flood(640_000, 160_000.0),
            flood(1_000_000, 100_000.0),
        ];
        let all: Vec<&TrialPoint> = points.iter().collect();
        let (echoed, dropped) = flood_split_us(&all, exact).unwrap();
        assert!((echoed - ECHOED_US).abs() < 0.01, "{echoed}");
        assert!((dropped - DROPPED_US).abs() < 0.01, "{dropped}");
        // from the ticks, the echo server's own time lands on the echoed datagrams
        let ticks = FloodTime {
            echo_us: None,
            ..exact
        };
        let (echoed, dropped) = flood_split_us(&all, ticks).unwrap();
        assert!((echoed - ECHOED_US - ECHO_US).abs() < 0.01, "{echoed}");
        assert!((dropped - DROPPED_US).abs() < 0.01, "{dropped}");
        // the rounds of one rate do not split it
        let one_rate = [flood(640_000, 160_000.0), flood(640_000, 170_000.0)];
        let one_rate: Vec<&TrialPoint> = one_rate.iter().collect();
        assert_eq!(flood_split_us(&one_rate, exact), None);
        // nor points whose CPU was not saturated (just past the knee, half idle)
        let idle = [flood(160_000, 150_000.0), flood(200_000, 170_000.0)];
        let idle: Vec<&TrialPoint> = idle.iter().collect();
        assert_eq!(flood_split_us(&idle, exact), None);
        // nor a split in which a drop would cost more than an echo
        let inverted = [
            flood_with(320_000, 250_000.0, 0.6, 1.2),
            flood_with(640_000, 120_000.0, 0.6, 1.2),
        ];
        let inverted: Vec<&TrialPoint> = inverted.iter().collect();
        assert_eq!(flood_split_us(&inverted, exact), None);
        // the calibration keeps it, and the model charges it to the socket's drops
        let mut ladder: Vec<TrialPoint> = [20_000u64, 40_000]
            .map(|rate| point("stock", rate, rate as f64, 10_000.0, ECHO_US, 0.5))
            .into();
        ladder.extend(points);
        let costs = trial_costs(&options(), &ladder, &calibration(), 208, "t.rec").unwrap();
        let fitted = costs[0].bottom_half_dropped_per_datagram_us.unwrap();
        assert!((fitted - DROPPED_US).abs() < 0.01, "{costs:?}");
        // a datagram that reaches the socket in a flood costs the echoed share, not the
        // average over the drops
        let flood = costs[0].bottom_half_flood_per_datagram_us.unwrap();
        assert!((flood - ECHOED_US).abs() < 0.01, "{costs:?}");
        let model = trial_model(&options(), &calibration(), &costs[0], 1e6, 1.0, 1);
        assert_eq!(
            model.sources[0].softirq_per_packet_dropped,
            Some(Dist::constant(fitted))
        );
        assert_eq!(
            model.sources[0].softirq_per_packet_saturated,
            Some(Dist::constant(flood))
        );
        assert!(matches!(
            model.tasks[0].kind,
            TaskKind::Consumer { replies: true, .. }
        ));
    }

    #[test]
    fn the_flood_cost_goes_to_the_models_saturated_polls_and_old_calibrations_read() {
        let mut costs = TrialCosts {
            design: "stock".parse().unwrap(),
            bottom_half_per_datagram_us: 0.8,
            bottom_half_flood_per_datagram_us: None,
            bottom_half_dropped_per_datagram_us: None,
            consumer_per_datagram_us: 6.0,
            idle_exit_us: 0.0,
            arrivals_per_s: None,
            path_us: 0.0,
            socket_queue: 208,
            points: 4,
            from: String::new(),
            per_datagram_from: None,
            napi: vec![],
        };
        // an older calibration, without the field, reads as none: the old model
        let mut old = serde_json::to_value(&costs).unwrap();
        old.as_object_mut()
            .unwrap()
            .remove("bottom_half_flood_per_datagram_us");
        assert_eq!(serde_json::from_value::<TrialCosts>(old).unwrap(), costs);
        let source = |costs: &TrialCosts| {
            trial_model(&options(), &calibration(), costs, 20_000.0, 1.0, 1).sources[0].clone()
        };
        assert_eq!(source(&costs).softirq_per_packet_saturated, None);
        costs.bottom_half_flood_per_datagram_us = Some(1.2);
        let model = source(&costs);
        assert_eq!(model.softirq_per_packet, Some(Dist::constant(0.8)));
        assert_eq!(
            model.softirq_per_packet_saturated,
            Some(Dist::constant(1.2))
        );
    }

    #[test]
    fn a_trial_design_is_simulated_with_the_trials_budget_count() {
        let mut options = options();
        options.budget_packets = 16;
        for (trial, simulated) in [
            ("stock", "stock"),
            ("stock+budget", "stock+budget=16"),
            ("stock+budget=8", "stock+budget=8"),
            ("threaded-fifo+budget", "threaded-fifo"),
            ("threaded-niced", "threaded-niced"),
            (
                "threaded-fifo+budget=8+process-aware",
                "threaded-fifo+process-aware",
            ),
            // today's NAPI mechanisms as recorded, their parameters too
            ("stock+defer=100:20", "stock+defer=100:20"),
            ("stock+busy-poll=always", "stock+busy-poll=always"),
            (
                "stock+budget+defer=2:50+busy-poll=10",
                "stock+budget=16+defer=2:50+busy-poll=10",
            ),
        ] {
            let design = simulated_design(trial.parse().unwrap(), &options);
            assert_eq!(design.to_string(), simulated, "{trial}");
        }
    }
}
