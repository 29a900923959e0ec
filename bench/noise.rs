//! What irqlens noise costs, and how its answer compares with oslat's. Run as root after
//! `cargo build --release`: `cargo bench --bench noise`. It prints figures and asserts
//! nothing about timing.
//!
//! The machine this runs on is noisy and drifts by tens of percent between runs, so every
//! figure is a ratio or a difference against a baseline measured in the same run, the
//! variants are interleaved round by round, and each timing is the minimum over rounds
//! (the run least disturbed by noise that has nothing to do with what is measured).

use std::fs;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[path = "common.rs"]
mod common;

use anyhow::{Context, Result, ensure};
use irqlens_collect::clock::{Clock, TscClock};
use irqlens_collect::sched::{gettid, set_affinity};
use irqlens_collect::workload::read_stable;
use irqlens_model::units::CpuList;
use irqlens_probe::noise::{CpuCounters, NoiseProbe};
use irqlens_test_support::spinner::Spinner;

use common::{interleaved_min, ping_pong, vm_rss_kib};
use irqlens_test_support::runner::{self, require_root, run_json};

/// Rounds of the loop cost and of the ping-pong; the ping-pong's figure is a small
/// difference of two large times, so it takes more rounds to settle.
const ROUNDS: usize = 11;
const PING_PONG_ROUNDS: usize = 31;

/// Loop cost: iterations per timed chunk, and chunks per variant per round. Chunks are
/// short (~0.5 ms) so that some of them fall between two timer ticks.
const LOOP_ITERATIONS: u64 = 20_000;
const LOOP_CHUNKS: usize = 20;

/// Ping-pong: round trips timed per round (after a tenth as many untimed). Each round trip
/// emits about two 64-byte records; 10 000 of them fit in the CPU's record area undrained.
const ROUND_TRIPS: u64 = 10_000;

const SPINNER_NAME: &str = "bench-spin";
const SPINNER_PERIOD: Duration = Duration::from_millis(20);
const SPINNER_BUSY: Duration = Duration::from_millis(2);
const COMPARE_SECONDS: u64 = 10;

const MEMORY_SECONDS: u64 = 60;
const MEMORY_EVERY: Duration = Duration::from_secs(5);

fn main() -> Result<()> {
    require_root("the noise bench loads BPF programs")?;
    let online = irqlens_collect::system::online_cpus()?;
    let cpu = online.iter().last().context("no online CPU")?;
    let housekeeping = online.without(&CpuList::single(cpu));
    ensure!(
        !housekeeping.is_empty(),
        "needs 2 CPUs: one measured, one for the bench's own threads"
    );
    // the bench's main thread, and whatever it starts unpinned, stays off the measured CPU
    set_affinity(&housekeeping)?;
    println!("irqlens noise bench: measured CPU {cpu}, housekeeping CPUs {housekeeping}");
    println!("every timing is the minimum over interleaved rounds of its variants\n");

    loop_cost(cpu)?;
    event_cost(cpu)?;
    compare_with_oslat(cpu)?;
    memory_over_time(runner::binary(), cpu)?;
    Ok(())
}

/// ns per iteration of `body` over `iterations`, the best of `LOOP_CHUNKS` chunks.
fn ns_per_iteration(mut body: impl FnMut(u64)) -> f64 {
    (0..LOOP_CHUNKS)
        .map(|_| {
            let start = Instant::now();
            body(black_box(LOOP_ITERATIONS));
            start.elapsed().as_nanos() as f64 / LOOP_ITERATIONS as f64
        })
        .fold(f64::INFINITY, f64::min)
}

// ---------------------------------------------------------------------------------------
// 1. Loop cost

fn loop_cost(cpu: u32) -> Result<()> {
    println!(
        "1. Measurement loop cost on CPU {cpu}, ns per iteration, min of {ROUNDS} rounds x \
         {LOOP_CHUNKS} chunks of {LOOP_ITERATIONS} iterations"
    );
    let clock = TscClock::calibrate().context("the TSC is not invariant: no tsc clock")?;
    let mut storage = MaybeUninit::uninit();
    let probe = NoiseProbe::load(&mut storage, &CpuList::single(cpu))?;
    // enabled as in a run, so the counter the loop reads is live BPF-written memory
    probe.enable();
    let (counters, clock) = (probe.cpu(cpu), &clock);
    let [bare, stable, shape] = std::thread::scope(|scope| {
        scope
            .spawn(move || -> Result<[f64; 3]> {
                set_affinity(&CpuList::single(cpu))?;
                counters.set_workload_pid(gettid());
                interleaved_min(
                    ROUNDS,
                    [
                        &mut || Ok(ns_per_iteration(bare_rdtsc)),
                        &mut || Ok(ns_per_iteration(|n| stable_reads(clock, &counters, n))),
                        &mut || Ok(ns_per_iteration(|n| loop_shape(clock, &counters, n))),
                    ],
                )
            })
            .join()
            .expect("the loop thread panicked")
    })?;
    println!("   lfence; rdtsc (bare)                {bare:7.2} ns");
    println!(
        "   read_stable (counter, tsc, counter) {stable:7.2} ns   {:.2}x bare   (target <= 1.2x)",
        stable / bare
    );
    println!(
        "   loop shape (read_stable + gap test) {shape:7.2} ns   {:.2}x bare",
        shape / bare
    );
    println!();
    Ok(())
}

#[inline(never)]
fn bare_rdtsc(iterations: u64) {
    for _ in 0..iterations {
        // SAFETY: both need only SSE2 and the TSC, which every x86_64 CPU has.
        black_box(unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        });
    }
}

#[inline(never)]
fn stable_reads(clock: &TscClock, counters: &CpuCounters<'_>, iterations: u64) {
    for _ in 0..iterations {
        black_box(read_stable(clock, counters));
    }
}

/// The hot loop of workload.rs without the sample buffer (gaps above the threshold are
/// rare): read, gap test, end test, stop flag.
#[inline(never)]
fn loop_shape(clock: &TscClock, counters: &CpuCounters<'_>, iterations: u64) {
    let threshold = black_box(clock.ticks(Duration::from_micros(5)));
    let stop = AtomicBool::new(false);
    let (end, stop) = (black_box(u64::MAX), black_box(&stop));
    let (mut last, _) = read_stable(clock, counters);
    let mut noise = 0u64;
    for _ in 0..iterations {
        let (now, seq) = read_stable(clock, counters);
        let gap = now - last;
        if gap > threshold {
            noise += gap;
            black_box(seq);
        }
        last = now;
        if now >= end || stop.load(Ordering::Relaxed) {
            break;
        }
    }
    black_box(noise);
}

// ---------------------------------------------------------------------------------------
// 2. Cost per traced event

/// How much of the probe runs during a probed ping-pong round. The first two split the
/// cost of a traced event into its parts; only `Sampling` counts entries.
#[derive(Clone, Copy, PartialEq)]
enum Probing {
    /// Loaded and attached, `enabled` clear: each program runs up to its first test.
    Attached,
    /// Enabled, not sampling: counter, nesting and comm kept, nothing counted or emitted.
    Tracing,
    /// Sampling, as inside a measurement window: every interference is also counted
    /// and emits a ring buffer record.
    Sampling,
}

/// What one probed ping-pong round saw (entries stay 0 unless sampling).
struct ProbedRound {
    ns_per_round_trip: f64,
    entries: [u64; 4],
    lost_records: u64,
    load: Duration,
}

fn event_cost(cpu: u32) -> Result<()> {
    println!(
        "2. Cost per traced event: pipe ping-pong on CPU {cpu}, {ROUND_TRIPS} round trips, \
         min of {PING_PONG_ROUNDS} rounds"
    );
    let ns = |probing| probed_ping_pong(cpu, probing).map(|r| r.ns_per_round_trip);
    let mut sampled: Vec<ProbedRound> = Vec::new();
    let [baseline, attached, tracing, sampling] = interleaved_min(
        PING_PONG_ROUNDS,
        [
            &mut || ping_pong(cpu, ROUND_TRIPS, |_| {}),
            &mut || ns(Probing::Attached),
            &mut || ns(Probing::Tracing),
            &mut || {
                let round = probed_ping_pong(cpu, Probing::Sampling)?;
                let ns = round.ns_per_round_trip;
                sampled.push(round);
                Ok(ns)
            },
        ],
    )?;
    // the round with the fewest events: the one least disturbed, like the timing
    let fewest = sampled
        .iter()
        .min_by_key(|r| r.entries.iter().sum::<u64>())
        .context("no sampling round")?;
    let per_rt = |n: u64| n as f64 / ROUND_TRIPS as f64;
    let events = per_rt(fewest.entries.iter().sum());
    let [thread, softirq, irq, nmi] = fewest.entries.map(per_rt);
    let lost: u64 = sampled.iter().map(|r| r.lost_records).sum();
    let load = sampled.iter().map(|r| r.load).min().unwrap_or_default();
    println!(
        "   events per round trip (sampling) {events:6.2}   (thread {thread:.2}, softirq {softirq:.3}, irq {irq:.3}, nmi {nmi:.3})"
    );
    println!("                                     ns/round trip   added   added/event");
    println!("   no probe                          {baseline:8.0}");
    // the same switches happen in every mode, so all are divided by sampling's events
    for (name, ns) in [
        ("attached, disabled", attached),
        ("enabled, not sampling", tracing),
        ("sampling (every switch traced)", sampling),
    ] {
        let added = ns - baseline;
        println!(
            "   {name:<32} {ns:8.0} {added:+10.0} {:+10.0} ns",
            added / events
        );
    }
    println!("   target: sampling <= 150 ns added per event");
    println!(
        "   lost records: {lost} (all sampling rounds); probe load + attach: {} ms (min)",
        load.as_millis()
    );
    println!();
    Ok(())
}

/// A ping-pong with the probe loaded for `cpu`, every thread on it foreign.
fn probed_ping_pong(cpu: u32, probing: Probing) -> Result<ProbedRound> {
    let started = Instant::now();
    let mut storage = MaybeUninit::uninit();
    let probe = NoiseProbe::load(&mut storage, &CpuList::single(cpu))?;
    let load = started.elapsed();
    let counters = probe.cpu(cpu);
    // nothing drains the records during the round: the area holds them all
    let records = probe.records()?;
    // sched_switch treats a task whose pid differs from workload_pid as foreign; no task
    // has this pid, so both ping-pong threads (and the idle task, pid 0) are thread noise
    // and every switch ends one thread interference (a record) and begins another
    counters.set_workload_pid(u32::MAX);
    if probing != Probing::Attached {
        probe.enable();
    }
    let before = probe.entries(cpu);
    let sampling = probing == Probing::Sampling;
    let ns = ping_pong(cpu, ROUND_TRIPS, |timed| {
        if sampling {
            counters.set_sampling(timed)
        }
    })?;
    let after = probe.entries(cpu);
    Ok(ProbedRound {
        ns_per_round_trip: ns,
        entries: std::array::from_fn(|i| after[i] - before[i]),
        lost_records: records.lost(),
        load,
    })
    // dropping the probe disables and detaches it: the next round starts untraced
}

// ---------------------------------------------------------------------------------------
// 3. irqlens vs oslat under the same injected noise

fn compare_with_oslat(cpu: u32) -> Result<()> {
    println!(
        "3. irqlens vs oslat on CPU {cpu}, {COMPARE_SECONDS} s each, injected: SCHED_FIFO thread \
         '{SPINNER_NAME}' busy {} ms every {} ms",
        SPINNER_BUSY.as_millis(),
        SPINNER_PERIOD.as_millis()
    );
    let spinner = Spinner::start(SPINNER_NAME, cpu, SPINNER_PERIOD, SPINNER_BUSY);
    let (oslat, oslat_spin) = spinner.during(|| run_oslat(cpu));
    let (doc, irqlens_spin) = spinner.during(|| {
        let cpu = cpu.to_string();
        let duration = COMPARE_SECONDS.to_string();
        run_json(&["noise", "-c", &cpu, "-d", &duration, "-q"])
    });
    drop(spinner);
    let (oslat, doc) = (oslat?, doc?);

    let thread = &oslat["thread"]["0"];
    let histogram = thread["histogram"]
        .as_object()
        .context("oslat's JSON has no histogram")?;
    // oslat's buckets are 1 us wide, keyed by the latency rounded up to the next us:
    // keys above 5 are loops of 5 us or more, irqlens's default threshold
    let over_5us: u64 = histogram
        .iter()
        .filter(|(us, _)| us.parse::<u64>().is_ok_and(|us| us > 5))
        .filter_map(|(_, count)| count.as_u64())
        .sum();
    let summary = &doc["per_cpu"][0];
    let num = |value: &serde_json::Value| value.as_f64().unwrap_or(f64::NAN);
    let ms = |ns: &serde_json::Value| num(ns) / 1e6;
    let runtime_s = ms(&summary["runtime_ns"]) / 1000.0;
    let expected = runtime_s / SPINNER_PERIOD.as_secs_f64();
    let spinner_row = doc["causes"].as_array().and_then(|causes| {
        causes.iter().find(|c| {
            c["cause"]
                .as_str()
                .is_some_and(|s| s.starts_with(SPINNER_NAME))
        })
    });
    let row = |label: &str, oslat: String, irqlens: String| {
        println!("   {label:<36} {oslat:<18} {irqlens}")
    };
    row("", "oslat".into(), "irqlens".into());
    row(
        "measured time",
        format!("{:.2} s", num(&thread["duration"])),
        format!("{runtime_s:.2} s"),
    );
    row(
        "min / avg loop latency",
        format!("{} / {:.3} us", thread["min"], num(&thread["avg"])),
        "-".into(),
    );
    // oslat rounds latencies up to the next us
    row(
        "max latency / max single",
        format!("{} us", thread["max"]),
        format!("{:.0} us", ms(&summary["max_single_ns"]) * 1000.0),
    );
    row(
        "loops / samples over 5 us",
        over_5us.to_string(),
        summary["samples"].to_string(),
    );
    row(
        "noise",
        "-".into(),
        format!(
            "{:.1} ms ({:.2} % of the time)",
            ms(&summary["noise_ns"]),
            100.0 - num(&summary["cpu_available_percent"])
        ),
    );
    row(
        "spinner activations (its own count)",
        oslat_spin.0.to_string(),
        format!(
            "{} ({expected:.0} in irqlens's measured time)",
            irqlens_spin.0
        ),
    );
    row(
        "spinner busy time (its own clock)",
        format!("{:.1} ms", oslat_spin.1 as f64 / 1e6),
        format!("{:.1} ms", irqlens_spin.1 as f64 / 1e6),
    );
    // interference-free: the IRQs inside the spinner's busy time are not its own
    row(
        "irqlens's row for the spinner",
        "-".into(),
        match spinner_row {
            Some(c) => format!(
                "{}: count {}, total {:.1} ms, max {:.0} us",
                c["cause"].as_str().unwrap_or_default(),
                c["count"],
                ms(&c["total_ns"]),
                ms(&c["max_ns"]) * 1000.0
            ),
            None => format!("MISSING: no cause starts with {SPINNER_NAME}"),
        },
    );
    println!();
    Ok(())
}

fn run_oslat(cpu: u32) -> Result<serde_json::Value> {
    let json =
        std::env::temp_dir().join(format!("irqlens-bench-oslat-{}.json", std::process::id()));
    let status = Command::new("oslat")
        .args([
            "-q",
            "-c",
            &cpu.to_string(),
            "-D",
            &COMPARE_SECONDS.to_string(),
        ])
        .arg(format!("--json={}", json.display()))
        .stdout(Stdio::null())
        .status()
        .context("running oslat (Debian/Ubuntu package rt-tests; scripts/setup installs it)")?;
    ensure!(status.success(), "oslat failed: {status}");
    let text = fs::read_to_string(&json).with_context(|| format!("reading {}", json.display()))?;
    let _ = fs::remove_file(&json);
    serde_json::from_str(&text).context("parsing oslat's JSON")
}

// ---------------------------------------------------------------------------------------
// 4. Memory over a long run

fn memory_over_time(irqlens: &Path, cpu: u32) -> Result<()> {
    println!("4. irqlens memory over a {MEMORY_SECONDS} s run on CPU {cpu} (VmRSS)");
    let mut child = Command::new(irqlens)
        .args([
            "noise",
            "-c",
            &cpu.to_string(),
            "-d",
            &MEMORY_SECONDS.to_string(),
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("running {}", irqlens.display()))?;
    let started = Instant::now();
    let mut series: Vec<(u64, u64)> = Vec::new();
    for at in (1..).map(|i| MEMORY_EVERY * i) {
        if at > Duration::from_secs(MEMORY_SECONDS) {
            break;
        }
        std::thread::sleep(at.saturating_sub(started.elapsed()));
        // None once the process has exited (a zombie has no VmRSS line)
        let Some(kib) = vm_rss_kib(child.id()) else {
            break;
        };
        series.push((at.as_secs(), kib));
        println!("   {:3} s  {kib:7} KiB", at.as_secs());
    }
    let exit = child.wait()?;
    ensure!(exit.success(), "irqlens exited with {exit}");
    let at = |s: u64| series.iter().find(|(t, _)| *t == s).map(|(_, kib)| *kib);
    match (at(10), series.last()) {
        (Some(early), Some(&(t, late))) => println!(
            "   growth from 10 s to {t} s: {:+} KiB",
            late as i64 - early as i64
        ),
        _ => println!("   growth: not enough samples (irqlens ended early)"),
    }
    Ok(())
}
