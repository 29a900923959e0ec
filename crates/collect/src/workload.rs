//! The measurement thread (osnoise's workload, osnoise paper §5.1): pinned to one CPU, it
//! reads the clock in a loop for `runtime` of every `period`, and every gap between two
//! reads above `threshold` is a noise sample. Each clock read sits between two reads of
//! the CPU's interference counter and is retried until both agree (§5.5.2), so a sample
//! knows exactly which interferences happened inside it.

use std::sync::atomic::{AtomicBool, Ordering, compiler_fence};
use std::sync::mpsc::Sender;
use std::time::Duration;

use anyhow::Result;

use super::clock::{Clock, monotonic_ns};
use super::sched::{gettid, set_affinity, set_priority};
use irqlens_model::noise::{PeriodReport, Sample, StopHit, WorkloadConfig};
use irqlens_model::units::CpuList;
use irqlens_probe::noise::CpuCounters;

/// Limits of one runtime window, in clock ticks.
struct Limits {
    runtime: u64,
    threshold: u64,
    stop_single: u64,
    stop_total: u64,
}

/// One runtime window, in clock ticks.
struct Window {
    start: u64,
    end: u64,
    last_seq: u64,
    noise: u64,
    max_single: u64,
    dropped: u64,
    stop: Option<StopHit>,
}

/// Runs on the calling thread until `stop` is set, sending a report per window. The
/// windows that begin before `measure_from_ns` (monotonic) are the warm-up's: run the
/// same, but unseen (the probe does not sample them), unreported, and without stops.
pub fn run<C: Clock>(
    cpu: u32,
    counters: CpuCounters<'_>,
    clock: &C,
    config: &WorkloadConfig,
    measure_from_ns: u64,
    reports: &Sender<PeriodReport>,
    stop: &AtomicBool,
) -> Result<()> {
    set_affinity(&CpuList::single(cpu))?;
    set_priority(config.priority)?;
    counters.set_workload_pid(gettid());
    let limits = Limits {
        runtime: clock.ticks(config.runtime),
        threshold: clock.ticks(config.threshold),
        stop_single: config.stop_single.map_or(u64::MAX, |d| clock.ticks(d)),
        stop_total: config.stop_total.map_or(u64::MAX, |d| clock.ticks(d)),
    };
    let warm_up_limits = Limits {
        stop_single: u64::MAX,
        stop_total: u64::MAX,
        ..limits
    };
    // one buffer for the whole run: a fresh one per window would be freed by the
    // collector, and an munmap sends TLB-flush IPIs to the measured CPUs
    let mut samples = prefaulted(config.max_samples);
    while !stop.load(Ordering::Relaxed) {
        let period_start = monotonic_ns();
        let warming_up = period_start < measure_from_ns;
        samples.clear();
        if warming_up {
            measure_window(clock, &counters, &warm_up_limits, &mut samples, stop);
        } else {
            counters.set_sampling(true);
            let window = measure_window(clock, &counters, &limits, &mut samples, stop);
            counters.set_sampling(false);

            let report = to_report(cpu, clock, &window, samples.to_vec());
            let hit = report.stop.is_some();
            if reports.send(report).is_err() || hit {
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        // sleep out the period in slices, so a stop is not held up by a long period
        let next = period_start + config.period.as_nanos() as u64;
        while !stop.load(Ordering::Relaxed) {
            let now = monotonic_ns();
            if now >= next {
                break;
            }
            std::thread::sleep(Duration::from_nanos(next - now).min(Duration::from_millis(50)));
        }
    }
    // A traced switch out of this thread before the collector's join can return (the
    // kernel wakes the joiner before an exiting thread's last switch): the probe settles
    // a thread context whose end it missed there, or at a tick meanwhile, before the
    // counts are read. Long enough that the timer cannot fire before the thread sleeps.
    std::thread::sleep(Duration::from_millis(1));
    Ok(())
}

/// A sample buffer whose pages are already touched, so the loop takes no page fault
/// (which would look like hardware noise).
fn prefaulted(capacity: usize) -> Vec<Sample> {
    let mut samples = vec![Sample::default(); capacity];
    samples.clear();
    samples
}

/// The clock and the interference counter, read consistently: retried until no
/// interference began between the two counter reads around the clock read.
#[inline(always)]
pub fn read_stable<C: Clock>(clock: &C, counters: &CpuCounters<'_>) -> (u64, u64) {
    loop {
        let before = counters.interference();
        compiler_fence(Ordering::SeqCst);
        let now = clock.now();
        compiler_fence(Ordering::SeqCst);
        let after = counters.interference();
        if before == after {
            return (now, after);
        }
    }
}

/// The hot loop: nothing in it but two counter reads, a clock read and a comparison,
/// unless a gap is found.
#[inline(never)]
fn measure_window<C: Clock>(
    clock: &C,
    counters: &CpuCounters<'_>,
    limits: &Limits,
    samples: &mut Vec<Sample>,
    stop: &AtomicBool,
) -> Window {
    let (mut last, mut last_seq) = read_stable(clock, counters);
    let mut w = Window {
        start: last,
        end: last,
        last_seq,
        noise: 0,
        max_single: 0,
        dropped: 0,
        stop: None,
    };
    let end = last + limits.runtime;
    loop {
        let (now, seq) = read_stable(clock, counters);
        let gap = now - last;
        if gap > limits.threshold {
            w.noise += gap;
            w.max_single = w.max_single.max(gap);
            let sample = Sample {
                cpu: 0,
                start_ns: last,
                duration_ns: gap,
                seq_before: last_seq,
                seq_after: seq,
            };
            if samples.len() < samples.capacity() {
                samples.push(sample);
            } else {
                w.dropped += 1;
                // a full buffer still keeps the sample that stops the run
                if gap > limits.stop_single {
                    samples.pop();
                    samples.push(sample);
                }
            }
            if gap > limits.stop_single && !samples.is_empty() {
                w.stop = Some(StopHit::Single(samples.len() - 1));
            } else if w.noise > limits.stop_total {
                w.stop = Some(StopHit::Total);
            }
        }
        last = now;
        last_seq = seq;
        if now >= end || w.stop.is_some() || stop.load(Ordering::Relaxed) {
            break;
        }
    }
    w.end = last;
    w.last_seq = last_seq;
    w
}

/// Converts a window from clock ticks to ns, outside the loop.
fn to_report<C: Clock>(cpu: u32, clock: &C, w: &Window, mut samples: Vec<Sample>) -> PeriodReport {
    let ns = |ticks: u64| clock.to_ns(w.start + ticks) - clock.to_ns(w.start);
    for sample in &mut samples {
        sample.cpu = cpu;
        sample.duration_ns = ns(sample.duration_ns);
        sample.start_ns = clock.to_ns(sample.start_ns);
    }
    PeriodReport {
        cpu,
        runtime_ns: ns(w.end - w.start),
        noise_ns: ns(w.noise),
        max_single_ns: ns(w.max_single),
        samples,
        dropped_samples: w.dropped,
        last_seq: w.last_seq,
        stop: w.stop,
    }
}
