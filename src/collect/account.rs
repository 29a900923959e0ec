//! Runs an accounting measurement: the probe on the selected CPUs, the kernel's own
//! per-thread CPU time read at each period's ends, and the attribution fed as the
//! checkpoints arrive.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::RunPace;
use crate::analyze::account::compensate::Compensator;
use crate::analyze::account::report::{ThreadInfo, runtimes_between};
use crate::analyze::account::{Attributor, Ledger};
use crate::analyze::checkpoint::Event;
use crate::probe::RecordRing;
use crate::probe::checkpoint::{CheckpointProbe, Checkpoints, Watched, decode_event};
use crate::system;
use crate::units::CpuList;

#[derive(Clone, Debug)]
pub struct AccountOptions {
    pub cpus: CpuList,
    pub duration: Option<Duration>,
    /// A report every this long, besides the one of the whole run.
    pub interval: Option<Duration>,
    /// Also run the compensation algorithm of seed 004 §3.1.
    pub compensate: bool,
}

/// One stretch of the run and what was accounted in it.
pub struct Period {
    /// Since the start of the run.
    pub start_ns: u64,
    pub elapsed_ns: u64,
    pub ledger: Ledger,
    pub compensator: Option<Compensator>,
    /// What the kernel accounted to each thread in the period.
    pub threads: HashMap<u32, ThreadInfo>,
}

#[derive(Clone, Debug, Serialize)]
pub struct AccountRunInfo {
    pub elapsed_ns: u64,
    pub programs: usize,
    pub skipped_tracepoints: Vec<String>,
    pub events: u64,
    pub lost_events: u64,
    /// The tick rate the compensation settled on (measured).
    pub hz: Option<u32>,
    pub interrupted: bool,
}

/// The readings a period is cut at.
struct Mark {
    at: Instant,
    threads: HashMap<u32, ThreadInfo>,
}

impl Mark {
    fn now() -> Self {
        Mark {
            threads: system::thread_runtimes(),
            at: Instant::now(),
        }
    }
}

/// Measures until `options.duration` passes or `stop` is set; `on_tick` sees the time
/// and checkpoint count once a second, `on_period` each `--interval` report. Returns
/// the whole run.
pub fn run(
    options: &AccountOptions,
    stop: &AtomicBool,
    mut on_tick: impl FnMut(Duration, u64),
    mut on_period: impl FnMut(&Period),
) -> Result<(Period, AccountRunInfo)> {
    system::check_can_trace()?;
    // the tick only matters to the compensation, and measuring it takes 100 ms
    let hz = options.compensate.then(system::kernel_hz).transpose()?;
    let tick_ns = hz.map(|hz| 1_000_000_000 / hz as u64);
    let mut storage = MaybeUninit::uninit();
    let probe = CheckpointProbe::load(
        &mut storage,
        Checkpoints::Accounting,
        &options.cpus,
        &Watched::Process(std::process::id()),
    )?;
    let ring = RecordRing::new(probe.events_map(), decode_event)?;
    let mut attributor = Attributor::new(tick_ns);
    let mut events = 0u64;

    let first = Mark::now();
    probe.enable();
    let started = first.at;
    let mut last = Mark {
        at: first.at,
        threads: first.threads.clone(),
    };
    let mut whole = Period {
        start_ns: 0,
        elapsed_ns: 0,
        ledger: Ledger::default(),
        compensator: tick_ns.map(Compensator::new),
        threads: HashMap::new(),
    };
    let mut pace = RunPace::new(started, options.duration);
    let mut next_report = options.interval.map(|i| started + i);
    while !stop.load(Ordering::Relaxed) {
        feed(
            &mut attributor,
            &mut events,
            ring.wait_and_take(pace.wait()),
        );
        let now = Instant::now();
        if let Some(elapsed) = pace.tick(now) {
            on_tick(elapsed, events);
        }
        if pace.over(now) {
            break;
        }
        if let Some(at) = next_report.filter(|&at| now >= at) {
            next_report = options.interval.map(|i| at + i);
            let period = cut(&mut attributor, &mut last, started);
            on_period(&period);
            whole.absorb(period);
        }
    }
    probe.disable();
    feed(&mut attributor, &mut events, ring.take());
    attributor.finish();
    let period = cut(&mut attributor, &mut last, started);
    if options.interval.is_some() {
        on_period(&period);
    }
    whole.absorb(period);
    whole.elapsed_ns = (last.at - started).as_nanos() as u64;
    whole.threads = runtimes_between(&first.threads, &last.threads);
    let info = AccountRunInfo {
        elapsed_ns: whole.elapsed_ns,
        programs: probe.programs(),
        skipped_tracepoints: probe.skipped.clone(),
        events,
        lost_events: probe.lost_events(),
        hz,
        interrupted: false,
    };
    Ok((whole, info))
}

fn feed(attributor: &mut Attributor, events: &mut u64, batch: Vec<Event>) {
    *events += batch.len() as u64;
    for event in &batch {
        attributor.add(event);
    }
}

impl Period {
    /// Adds a later period's accounting (the kernel's bill is read for the whole run).
    fn absorb(&mut self, later: Period) {
        self.ledger.absorb(later.ledger);
        if let (Some(mine), Some(theirs)) = (self.compensator.as_mut(), later.compensator) {
            mine.absorb(theirs);
        }
    }
}

/// Ends the period begun at `last`: the ledger so far and the kernel's bill since.
fn cut(attributor: &mut Attributor, last: &mut Mark, started: Instant) -> Period {
    let (ledger, compensator) = attributor.take();
    let mark = Mark::now();
    let period = Period {
        start_ns: (last.at - started).as_nanos() as u64,
        elapsed_ns: (mark.at - last.at).as_nanos() as u64,
        ledger,
        compensator,
        threads: runtimes_between(&last.threads, &mark.threads),
    };
    *last = mark;
    period
}
