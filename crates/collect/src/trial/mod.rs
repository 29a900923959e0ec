//! `irqlens trial net`: one point of the ladder (a design at an offered rate) measured
//! on a test bed of its own: the echo load, the cyclic task (irqlens wakeup's timer
//! thread) and the receiving CPU's time, all on the receiving CPU.

pub mod flow;
pub mod testbed;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use crate::journal::Journal;
use crate::steer;
use crate::system;
use crate::tap::Tap;
use crate::wakeup::{self as wakeup_run, WakeupOutcome};
use flow::Flow;
use irqlens_analyze::trial::{CpuTimes, cpu_split, echo_latency, loss_percent};
use irqlens_analyze::wakeup::Component;
use irqlens_model::sched::Priority;
use irqlens_model::steer::SteerOptions;
use irqlens_model::trial::{
    CyclicLatency, Design, NapiFigures, Runtimes, TrialOptions, TrialPoint, echo_busy_poll,
};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::WakeupOptions;
use testbed::Testbed;

/// How long the cyclic task may take to load its probes and measure.
const CYCLIC_START_LIMIT: Duration = Duration::from_secs(20);
/// How long the process-aware design's NAPI thread keeps a served process's priority
/// after its last datagram (steer's --hold).
const STEER_HOLD: Duration = Duration::from_millis(500);
/// How long the collector waits for the echoes of the last datagrams of a window.
const ECHO_GRACE: Duration = Duration::from_millis(200);

/// The receiving CPU's and its threads' times at one moment.
struct Snapshot {
    cpu: CpuTimes,
    sender_cpu: CpuTimes,
    napi_ticks: u64,
    idle: Option<(u64, u64)>,
    sender_idle: Option<(u64, u64)>,
    echo_ns: u64,
    echo_sleeps: u64,
    napi_ns: u64,
    napi_sleeps: u64,
    receiving_net_rx: u64,
    sending_net_rx: u64,
    busy_polled: Option<u64>,
}

/// NET_RX softirq runs on `cpu` so far.
fn net_rx_runs(cpu: u32) -> u64 {
    let runs = system::softirq_runs(&CpuList::single(cpu));
    runs.get("NET_RX").copied().unwrap_or(0)
}

fn snapshot(options: &TrialOptions, bed: &Testbed, echo: u32) -> Result<Snapshot> {
    let runtime = |tid| system::thread_runtime_ns(tid).unwrap_or(0);
    let cpu = options.receiving_cpu;
    let napi_threads = &bed.napi_threads;
    Ok(Snapshot {
        receiving_net_rx: net_rx_runs(cpu),
        sending_net_rx: net_rx_runs(options.sending_cpu),
        busy_polled: bed.busy_polled(),
        cpu: system::cpu_times(cpu)?,
        sender_cpu: system::cpu_times(options.sending_cpu)?,
        napi_ticks: napi_threads
            .iter()
            .map(|&tid| system::thread_ticks(tid))
            .sum(),
        idle: system::cpu_idle(cpu),
        sender_idle: system::cpu_idle(options.sending_cpu),
        echo_ns: runtime(echo),
        echo_sleeps: system::thread_sleeps(echo).unwrap_or(0),
        napi_ns: napi_threads.iter().map(|&tid| runtime(tid)).sum(),
        napi_sleeps: napi_threads
            .iter()
            .map(|&tid| system::thread_sleeps(tid).unwrap_or(0))
            .sum(),
    })
}

/// The exact times between two snapshots `window` apart. A CPU's busy time is the window
/// less its idle time: cpuidle's residency, or without cpuidle /proc/stat's idle column,
/// which a kernel that stops the tick in idle (NO_HZ, every distribution's) keeps from
/// the idle entry and exit times, not from tick samples.
fn runtimes(before: &Snapshot, after: &Snapshot, window: Duration) -> Runtimes {
    let window_ns = window.as_nanos() as u64;
    let busy = |after: Option<(u64, u64)>, before: Option<(u64, u64)>, stat: u64| {
        let idle_ns = after.zip(before).map(|(a, b)| a.0.saturating_sub(b.0));
        Some(window_ns.saturating_sub(idle_ns.unwrap_or(stat)))
    };
    let stat_idle_ns = |after: &CpuTimes, before: &CpuTimes| {
        system::ticks_ns(after.idle.saturating_sub(before.idle))
    };
    Runtimes {
        window_ns,
        busy_ns: busy(
            after.idle,
            before.idle,
            stat_idle_ns(&after.cpu, &before.cpu),
        ),
        idle_entries: after
            .idle
            .zip(before.idle)
            .map(|(a, b)| a.1.saturating_sub(b.1)),
        sender_busy_ns: busy(
            after.sender_idle,
            before.sender_idle,
            stat_idle_ns(&after.sender_cpu, &before.sender_cpu),
        ),
        echo_ns: after.echo_ns.saturating_sub(before.echo_ns),
        echo_sleeps: Some(after.echo_sleeps.saturating_sub(before.echo_sleeps)),
        napi_ns: after.napi_ns.saturating_sub(before.napi_ns),
        napi_sleeps: Some(after.napi_sleeps.saturating_sub(before.napi_sleeps)),
    }
}

/// Sleeps `duration`, or less if `stop` is set meanwhile; says whether it slept it all.
fn sleep_unless(stop: &AtomicBool, duration: Duration) -> bool {
    let until = Instant::now() + duration;
    while !stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
    false
}

/// The cyclic task's figures on `cpu`: its total latency and the cause that took the
/// most of it.
fn cyclic_latency(outcome: &WakeupOutcome, cpu: u32) -> Option<CyclicLatency> {
    let stats = outcome.stats.cpus.get(&cpu)?;
    let total = stats.series(Component::Total)?;
    let ranked = stats.ranked_causes();
    let all_ns: u64 = ranked.iter().map(|(_, c)| c.total_ns).sum();
    let top = ranked.first().filter(|(_, c)| c.total_ns > 0);
    Some(CyclicLatency {
        activations: stats.activations,
        avg_ns: total.avg_ns()?,
        p99_ns: total.quantile_ns(0.99)?,
        max_ns: total.max_ns()?,
        // the names are read only for a cause to name: /proc/kallsyms is long
        top_cause: top.map(|(cause, _)| {
            let symbols = system::kernel_symbols();
            cause.label(&system::irq_line_names(), &|a| symbols.name(a))
        }),
        top_cause_percent: top.map(|(_, c)| 100.0 * c.total_ns as f64 / all_ns.max(1) as f64),
    })
}

/// Measures `design` at `rate` in `round`: builds its bed, starts the load, then the
/// cyclic task (`cyclic`, timer mode on the receiving CPU, measuring from its first
/// second under load to the window's end), warms up and measures for the duration, and
/// takes the bed down. `None` if `stop` was set meanwhile (the bed is taken down too).
pub fn run_point(
    journal: &mut Journal,
    design: Design,
    rate: u64,
    round: u32,
    options: &TrialOptions,
    cyclic: &WakeupOptions,
    stop: &AtomicBool,
) -> Result<Option<TrialPoint>> {
    let bed = Testbed::build(journal, design, options)?;
    let measured = measure(&bed, journal, design, rate, options, cyclic, stop)
        .map(|point| point.map(|point| TrialPoint { round, ..point }));
    let torn_down = bed.tear_down(journal);
    let point = measured?;
    torn_down.context("taking the test bed down")?;
    Ok(point)
}

fn measure(
    bed: &Testbed,
    journal: &mut Journal,
    design: Design,
    rate: u64,
    options: &TrialOptions,
    cyclic: &WakeupOptions,
    stop: &AtomicBool,
) -> Result<Option<TrialPoint>> {
    let consumer = Priority::Other {
        nice: options.consumer_nice,
    };
    let mut flow = Flow::start(
        bed,
        rate,
        options.payload_bytes,
        (options.receiving_cpu, options.sending_cpu),
        consumer,
        echo_busy_poll(&design),
    )?;
    let warm_up = Duration::from_nanos(options.warm_up_ns);
    let duration = Duration::from_nanos(options.duration_ns);
    // the cyclic task's own flag: it ends with the window, or at once on Ctrl-C
    let cyclic_stop = AtomicBool::new(false);
    // its probes take a while to load on a flooded CPU: the warm-up starts once it
    // measures, so that it measures the whole point
    let cyclic_measures = AtomicBool::new(false);
    // process-aware: steer keeps the NAPI thread at its consumer's priority meanwhile
    let steer_stop = AtomicBool::new(false);
    let steer_options = SteerOptions {
        devices: vec![bed.receiver.device.clone()],
        duration: None,
        hold: STEER_HOLD,
        dry_run: false,
        no_ksoftirqd: true,
    };
    let measured = std::thread::scope(|scope| {
        let steering = design.process_aware.then(|| {
            scope.spawn(|| steer::run_in(&steer_options, &steer_stop, Some(journal), |_| {}))
        });
        let cyclic_run = scope.spawn(|| {
            let outcome = wakeup_run::run_marking(
                cyclic,
                &cyclic_stop,
                &mut Tap::default(),
                |_, _| {},
                |_| {},
                &cyclic_measures,
            );
            cyclic_measures.store(true, Ordering::Relaxed);
            outcome
        });
        let windowed = (|| -> Result<Option<_>> {
            let started = Instant::now();
            while !cyclic_measures.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                anyhow::ensure!(
                    started.elapsed() < CYCLIC_START_LIMIT,
                    "the cyclic task did not start measuring within {CYCLIC_START_LIMIT:?}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            if !sleep_unless(stop, warm_up) {
                return Ok(None);
            }
            let opened = Instant::now();
            let before = snapshot(options, bed, flow.echo_tid)?;
            flow.open_window();
            let full = sleep_unless(stop, duration);
            flow.close_window();
            let after = snapshot(options, bed, flow.echo_tid)?;
            let window = opened.elapsed();
            // what the NAPI threads run at now, before steer (process-aware) puts them back
            let scheduling = bed
                .napi_threads
                .iter()
                .map(|&tid| {
                    crate::sched::thread_priority(tid)
                        .map_or_else(|_| "?".into(), |p| p.to_string())
                })
                .collect::<Vec<String>>();
            Ok(full.then_some((runtimes(&before, &after, window), before, after, scheduling)))
        })();
        cyclic_stop.store(true, Ordering::Relaxed);
        steer_stop.store(true, Ordering::Relaxed);
        if let Some(steering) = steering {
            steering
                .join()
                .map_err(|_| anyhow!("steer panicked"))?
                .context("steering the NAPI thread")?;
        }
        let outcome = cyclic_run
            .join()
            .map_err(|_| anyhow!("the cyclic task panicked"))?;
        Ok::<_, anyhow::Error>((windowed?, outcome?))
    });
    let counts = flow.finish(ECHO_GRACE)?;
    let (window, outcome) = measured?;
    let Some((runtimes, before, after, napi_scheduling)) = window else {
        return Ok(None);
    };
    // what the bed set, read back from the device while it stands
    let [defer, timeout] = bed.defer_knobs();
    let read_back = |knob| crate::knob::read(&knob).ok()?.parse::<u64>().ok();
    let socket = counts.echo_socket;
    let napi = NapiFigures {
        defer_hard_irqs: read_back(defer).and_then(|n| n.try_into().ok()),
        gro_flush_timeout_ns: read_back(timeout),
        busy_poll_us: socket.busy_poll_us,
        prefer_busy_poll: socket.prefer_busy_poll,
        echo_napi_id: socket.napi_id,
        receiving_net_rx: after
            .receiving_net_rx
            .saturating_sub(before.receiving_net_rx),
        sending_net_rx: after.sending_net_rx.saturating_sub(before.sending_net_rx),
        busy_polled: after
            .busy_polled
            .zip(before.busy_polled)
            .map(|(a, b)| a.saturating_sub(b)),
    };
    let seconds = duration.as_secs_f64();
    Ok(Some(TrialPoint {
        design,
        offered_pps: rate,
        // run_point numbers it
        round: 1,
        sent: counts.sent,
        sent_pps: counts.sent as f64 / seconds,
        echoed: counts.echoed,
        echoed_pps: counts.echoed as f64 / seconds,
        loss_percent: loss_percent(counts.sent, counts.echoed),
        echo_latency: echo_latency(&counts.latencies),
        cyclic: cyclic_latency(&outcome, options.receiving_cpu),
        cpu: cpu_split(
            &before.cpu,
            &after.cpu,
            after.napi_ticks.saturating_sub(before.napi_ticks),
        ),
        napi_scheduling,
        runtimes: Some(runtimes),
        napi: Some(napi),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(idle_ticks: u64, cpuidle: Option<(u64, u64)>, echo_ns: u64) -> Snapshot {
        let cpu = CpuTimes {
            idle: idle_ticks,
            ..CpuTimes::default()
        };
        Snapshot {
            cpu,
            sender_cpu: cpu,
            napi_ticks: 0,
            idle: cpuidle,
            sender_idle: None,
            echo_ns,
            echo_sleeps: 0,
            napi_ns: 0,
            napi_sleeps: 0,
            receiving_net_rx: 0,
            sending_net_rx: 0,
            busy_polled: None,
        }
    }

    #[test]
    fn the_busy_time_is_the_window_less_cpuidles_residency_or_else_proc_stats_idle() {
        let window = Duration::from_secs(2);
        let ticks_per_s = 1_000_000_000 / system::ticks_ns(1);
        // without cpuidle: 1.5 s of the 2 s window idle on both CPUs (in clock ticks)
        let (before, after) = (
            snapshot(1_000, None, 0),
            snapshot(1_000 + 3 * ticks_per_s / 4 * 2, None, 400),
        );
        let times = runtimes(&before, &after, window);
        assert_eq!(times.busy_ns, Some(500_000_000));
        assert_eq!(times.sender_busy_ns, Some(500_000_000));
        assert_eq!(times.idle_entries, None);
        assert_eq!(times.echo_ns, 400);
        // cpuidle's residency wins where the CPU has it
        let (before, after) = (
            snapshot(0, Some((7, 10)), 0),
            snapshot(0, Some((7 + 1_200_000_000, 31)), 0),
        );
        let times = runtimes(&before, &after, window);
        assert_eq!(times.busy_ns, Some(800_000_000));
        assert_eq!(times.idle_entries, Some(21));
        assert_eq!(times.sender_busy_ns, Some(2_000_000_000));
    }
}
