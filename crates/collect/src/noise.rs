//! A noise run: loads the probe, starts one measurement thread per CPU, and on the
//! collector thread (kept on housekeeping CPUs) drains the probe's records on a timer
//! and joins them with the threads' reports.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use super::clock::{Clock, MonotonicClock, monotonic_ns};
use super::sched::set_affinity;
use super::workload;
use super::{RunPace, StopOnDrop, Tick};
use crate::system;
use crate::tap::Tap;
use irqlens_analyze::loss::Losses;
use irqlens_analyze::noise::NoiseAnalysis;
use irqlens_analyze::noise_passive::PassiveNoise;
use irqlens_model::noise::{NoiseOptions, NoiseRunInfo, PeriodReport, Record, WorkloadConfig};
use irqlens_model::run::RunCommon;
use irqlens_model::units::CpuList;
use irqlens_probe::noise::{CpuCounters, NoiseProbe};
use irqlens_record::{Line, Reader};

/// What a noise run gives.
pub struct NoiseOutcome {
    /// The analysis.
    pub analysis: NoiseAnalysis,
    /// How the run went.
    pub info: NoiseRunInfo,
}

/// Runs until the duration ends, a stop condition hits, or `stop` is set (by a signal).
/// `on_tick` sees the analysis once a second.
pub fn run(
    options: &NoiseOptions,
    stop: &AtomicBool,
    tap: &mut Tap,
    mut on_tick: impl FnMut(&NoiseAnalysis, Tick),
) -> Result<NoiseOutcome> {
    let collector_cpus = place_collector(options)?;
    let _locked = MemoryLock::new();

    let mut storage = MaybeUninit::uninit();
    let probe = NoiseProbe::load(&mut storage, &options.cpus)?;
    let mut analysis = NoiseAnalysis::new(options.analysis, options.cpus.iter());
    let mut records = probe.records()?;
    let mut record_count = 0u64;
    let mut add_records = |analysis: &mut NoiseAnalysis, tap: &mut Tap, batch: Vec<Record>| {
        record_count += batch.len() as u64;
        if tap.is_on() {
            batch
                .iter()
                .for_each(|&record| tap.put(Line::NoiseRecord(record)));
        }
        analysis.add_records(batch);
    };

    let clock = RunClock::pick();

    let (report_tx, report_rx) = mpsc::channel::<PeriodReport>();
    let mut pace = RunPace::after_warm_up(Instant::now(), options.warm_up, options.duration);
    // the threads measure the windows that begin after the warm-up only
    let measure_from_ns = monotonic_ns() + options.warm_up.unwrap_or_default().as_nanos() as u64;
    probe.enable();
    let worker_results = std::thread::scope(|scope| {
        // whatever ends this scope, a panic included, must end the measurement threads
        let _stop_workers = StopOnDrop(stop);
        let workers: Vec<_> = options
            .cpus
            .iter()
            .map(|cpu| {
                let clock = &clock;
                let (counters, tx, config) = (probe.cpu(cpu), report_tx.clone(), &options.workload);
                std::thread::Builder::new()
                    .name(format!("irqlens/{cpu}"))
                    .spawn_scoped(scope, move || {
                        // an error or a panic in one thread ends the whole run
                        let _stop_all = StopOnDrop(stop);
                        clock.run_workload(cpu, counters, config, measure_from_ns, &tx, stop)
                    })
                    .expect("spawning a measurement thread")
            })
            .collect();

        let _reader = super::raise_reader();
        while !stop.load(Ordering::Relaxed) {
            records.wait(pace.wait());
            // Reports first, then records: a CPU's records are committed before its
            // thread runs again, so every record a received report refers to is in its
            // CPU's area by now.
            let reports: Vec<PeriodReport> = report_rx.try_iter().collect();
            add_records(&mut analysis, tap, records.take());
            for report in reports {
                add_period(&mut analysis, tap, report);
            }
            let now = Instant::now();
            if let Some(elapsed) = pace.tick(now) {
                refresh_entries(&probe, options, &mut analysis, tap);
                let lost = records.lost_by_cpu();
                on_tick(
                    &analysis,
                    Tick::new(elapsed, Losses::records, lost, &options.cpus),
                );
            }
            if pace.over(now) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| anyhow!("a measurement thread panicked"))?
            })
            .collect::<Result<Vec<()>>>()
    });
    drop(report_tx);
    // the threads are done: every record they can refer to is committed
    add_records(&mut analysis, tap, records.take());
    for report in report_rx.iter() {
        add_period(&mut analysis, tap, report);
    }
    refresh_entries(&probe, options, &mut analysis, tap);
    probe.disable();
    worker_results?;

    let info = NoiseRunInfo {
        common: RunCommon {
            elapsed_ns: pace.measuring_since().elapsed().as_nanos() as u64,
            events: record_count,
            lost_events: records.lost(),
            lost_by_cpu: records.lost_by_cpu(),
            programs: probe.programs(),
            skipped_tracepoints: probe.skipped.clone(),
            interrupted: false,
        },
        clock: clock.name().into(),
        collector_cpus,
    };
    Ok(NoiseOutcome { analysis, info })
}

/// Passive noise on `cpus` until `stop` is set: the probe without measurement threads,
/// its records summed per CPU and cause; `on_tick` sees the sums once a second. Returns
/// when stopped (the probe detached), or with the error that kept it from loading.
pub fn passive(
    cpus: &CpuList,
    stop: &AtomicBool,
    mut on_tick: impl FnMut(&PassiveNoise, Tick),
) -> Result<()> {
    let mut storage = MaybeUninit::uninit();
    let probe = NoiseProbe::load_passive(&mut storage, cpus)?;
    let mut records = probe.records()?;
    let mut noise = PassiveNoise::new(cpus.iter());
    let mut pace = RunPace::new(Instant::now(), None);
    probe.enable();
    let _reader = super::raise_reader();
    while !stop.load(Ordering::Relaxed) {
        // sooner when the areas fill faster: an idle machine is read once a second
        records.wait(super::TICK);
        noise.add_records(records.take());
        if let Some(elapsed) = pace.tick(Instant::now()) {
            on_tick(
                &noise,
                Tick::new(elapsed, Losses::records, records.lost_by_cpu(), cpus),
            );
        }
    }
    probe.disable();
    Ok(())
}

fn refresh_entries(
    probe: &NoiseProbe<'_>,
    options: &NoiseOptions,
    analysis: &mut NoiseAnalysis,
    tap: &mut Tap,
) {
    for cpu in options.cpus.iter() {
        let (entries, unended) = (probe.entries(cpu), probe.unended(cpu));
        analysis.set_entries(cpu, entries, unended);
        tap.put(Line::NoiseEntries {
            cpu,
            entries,
            unended,
        });
    }
}

fn add_period(analysis: &mut NoiseAnalysis, tap: &mut Tap, report: PeriodReport) {
    analysis.add_period(&report);
    tap.put(Line::NoisePeriod(report));
}

/// Re-analyzes a recorded run of `options` (the info is the recording's).
pub fn replay(options: &NoiseOptions, reader: &mut Reader) -> Result<NoiseOutcome> {
    let mut analysis = NoiseAnalysis::new(options.analysis, options.cpus.iter());
    while let Some(line) = reader.next_input()? {
        match line {
            Line::NoiseRecord(record) => analysis.add_records([record]),
            Line::NoisePeriod(report) => analysis.add_period(&report),
            Line::NoiseEntries {
                cpu,
                entries,
                unended,
            } => analysis.set_entries(cpu, entries, unended),
            other => return Err(reader.unexpected(&other)),
        }
    }
    Ok(NoiseOutcome {
        analysis,
        info: reader.info()?,
    })
}

/// Keeps the collector off the measured CPUs: on -H's CPUs, else on the unmeasured ones
/// if there are any. Returns where it runs, `None` if it shares the measured CPUs.
fn place_collector(options: &NoiseOptions) -> Result<Option<CpuList>> {
    let cpus = match &options.housekeeping {
        Some(cpus) => system::select_cpus(Some(cpus)).context("-H/--house-keeping")?,
        None => system::online_cpus()?.without(&options.cpus),
    };
    if cpus.is_empty() {
        return Ok(None);
    }
    set_affinity(&cpus)?;
    Ok(Some(cpus))
}

/// Locks the process's memory for the run, so the measurement loops take no page faults
/// (unless the process forwent it: [`crate::forgo_memory_locks`]); best effort (a
/// failure only risks a few faults that look like hardware noise).
struct MemoryLock(bool);

impl MemoryLock {
    fn new() -> Self {
        super::keep_freed_memory();
        if !super::may_lock_memory() {
            return MemoryLock(false);
        }
        // SAFETY: mlockall only changes how the process's pages are kept in memory.
        MemoryLock(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0)
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: munlockall only lets the pages be paged out again.
            unsafe { libc::munlockall() };
        }
    }
}

/// The clock picked at run time. The measurement loop is generic over the clock, so
/// there is no dynamic call inside it: this dispatches once per thread.
enum RunClock {
    #[cfg(target_arch = "x86_64")]
    Tsc(super::clock::TscClock),
    Monotonic(MonotonicClock),
}

impl RunClock {
    fn pick() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(tsc) = super::clock::TscClock::calibrate() {
            return RunClock::Tsc(tsc);
        }
        RunClock::Monotonic(MonotonicClock)
    }

    fn name(&self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            RunClock::Tsc(clock) => clock.name(),
            RunClock::Monotonic(clock) => clock.name(),
        }
    }

    fn run_workload(
        &self,
        cpu: u32,
        counters: CpuCounters<'_>,
        config: &WorkloadConfig,
        measure_from_ns: u64,
        reports: &mpsc::Sender<PeriodReport>,
        stop: &AtomicBool,
    ) -> Result<()> {
        match self {
            #[cfg(target_arch = "x86_64")]
            RunClock::Tsc(clock) => {
                workload::run(cpu, counters, clock, config, measure_from_ns, reports, stop)
            }
            RunClock::Monotonic(clock) => {
                workload::run(cpu, counters, clock, config, measure_from_ns, reports, stop)
            }
        }
    }
}
