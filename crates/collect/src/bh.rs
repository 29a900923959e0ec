//! Runs a bottom-half measurement: load, stimulus, probe, and the reader that feeds the
//! checkpoints to the matcher as they arrive.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;

use super::load::Load;
use super::trigger::Stimulus;
use super::{DRAIN_INTERVAL, EventStream, RunPace, Tick, replay_events};
use crate::system;
use crate::tap::Tap;
use irqlens_analyze::bh::{BhStats, Event, Matcher};
use irqlens_analyze::loss::Losses;
use irqlens_model::bh::{BhOptions, BhRunInfo, Selection, TriggerReport};
use irqlens_model::run::RunCommon;
use irqlens_model::wakeup::Watched;
use irqlens_probe::checkpoint::{CheckpointProbe, Checkpoints};
use irqlens_record::{Line, Reader};

/// What a bottom-half run gives.
pub struct BhOutcome {
    /// The statistics.
    pub stats: BhStats,
    /// How the run went.
    pub info: BhRunInfo,
}

/// Measures until `options.duration` passes or `stop` is set; `on_tick` sees the
/// statistics once a second.
pub fn run(
    options: &BhOptions,
    stop: &AtomicBool,
    tap: &mut Tap,
    mut on_tick: impl FnMut(&BhStats, Tick),
) -> Result<BhOutcome> {
    super::keep_freed_memory();
    let first_cpu = options
        .cpus
        .iter()
        .next()
        .expect("at least one CPU is selected");
    // Load first, so the measurement sees the system already loaded (INTSPECT thesis
    // §5.6).
    let load = Load::start(options.load, &options.cpus)?;
    let stimulus = options
        .trigger
        .map(|t| Stimulus::start(t.kind, t.rate_hz, first_cpu))
        .transpose()?;

    let mut storage = MaybeUninit::uninit();
    let probe = CheckpointProbe::load(
        &mut storage,
        Checkpoints::BottomHalves,
        &options.cpus,
        &Watched::Process(std::process::id()),
    )?;
    let stimulus_tid = stimulus.as_ref().map(|s| s.tid);
    if let Some(tid) = stimulus_tid {
        tap.put(Line::Stimulus { tid });
    }
    let mut pipeline = Pipeline::new(options, stimulus_tid);
    let mut events = EventStream::new(probe.events()?);

    // the warm-up: the load runs, nothing is traced or requested yet
    if let Some(warm_up) = options.warm_up {
        let end = Instant::now() + warm_up;
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            std::thread::sleep(DRAIN_INTERVAL.min(end.saturating_duration_since(Instant::now())));
        }
    }
    let started = Instant::now();
    let softirqs_before = system::softirq_runs(&options.cpus);
    probe.enable();
    if let Some(stimulus) = &stimulus {
        stimulus.begin();
    }
    let mut pace = RunPace::new(started, options.duration);
    let _reader = super::raise_reader();
    while !stop.load(Ordering::Relaxed) {
        pipeline.feed(events.wait_and_take(DRAIN_INTERVAL), tap);
        let now = Instant::now();
        if let Some(elapsed) = pace.tick(now) {
            let lost = events.lost_by_cpu();
            let tick = Tick::new(elapsed, Losses::checkpoints, lost, &options.cpus);
            on_tick(&pipeline.stats, tick);
        }
        if pace.over(now) {
            break;
        }
    }
    // The stimulus stops first, and its last requests are served while still traced.
    let mut resources = None;
    let trigger = match stimulus {
        Some(stimulus) => {
            let (kind, tid) = (stimulus.kind, stimulus.tid);
            let (requests, prepared) = stimulus.finish()?;
            resources = Some(prepared);
            std::thread::sleep(DRAIN_INTERVAL);
            let rate_hz = options.trigger.map_or(0, |t| t.rate_hz);
            Some(TriggerReport {
                kind,
                rate_hz,
                cpu: first_cpu,
                tid,
                requests,
                kernel_path: kind.kernel_path().into(),
            })
        }
        None => None,
    };
    let elapsed_ns = started.elapsed().as_nanos() as u64;
    probe.disable();
    let kernel_softirq_runs = system::softirq_runs(&options.cpus)
        .into_iter()
        .map(|(vector, after)| {
            let before = softirqs_before.get(&vector).copied().unwrap_or(0);
            (vector, after.saturating_sub(before))
        })
        .collect();
    pipeline.feed(events.take_all(), tap);
    drop(resources);
    drop(load);

    let Pipeline { matcher, stats } = pipeline;
    let (pending_softirqs, pending_works) = matcher.pending();
    let info = BhRunInfo {
        common: RunCommon {
            elapsed_ns,
            events: matcher.counts.events,
            lost_events: events.lost(),
            lost_by_cpu: events.lost_by_cpu(),
            programs: probe.programs(),
            skipped_tracepoints: probe.skipped.clone(),
            interrupted: false,
        },
        matching: matcher.counts.clone(),
        pending_softirqs,
        pending_works,
        kernel_softirq_runs,
        load: options.load,
        load_tasks: options.load.tasks(),
        trigger,
        not_observable: irqlens_probe::checkpoint::not_observable(),
    };
    Ok(BhOutcome { stats, info })
}

/// Re-analyzes a recorded run of `options` (the info is the recording's).
pub fn replay(options: &BhOptions, reader: &mut Reader) -> Result<BhOutcome> {
    let stimulus_tid = match options.trigger {
        Some(_) => match reader.next_input()? {
            Some(Line::Stimulus { tid }) => Some(tid),
            _ => return Err(reader.error("a triggered run's first input is its stimulus")),
        },
        None => None,
    };
    let mut pipeline = Pipeline::new(options, stimulus_tid);
    replay_events(reader, |events| pipeline.feed(events, &mut Tap::default()))?;
    let mut info: BhRunInfo = reader.info()?;
    if info.not_observable.is_empty() {
        // format 1 did not keep it: say so rather than probe this machine
        info.not_observable = irqlens_probe::checkpoint::not_recorded();
    }
    Ok(BhOutcome {
        stats: pipeline.stats,
        info,
    })
}

/// The analysis a run feeds as checkpoints arrive, live or recorded.
struct Pipeline {
    matcher: Matcher,
    stats: BhStats,
}

impl Pipeline {
    fn new(options: &BhOptions, stimulus_tid: Option<u32>) -> Self {
        let mut config = options.stats;
        config.selection = match (options.trigger, stimulus_tid) {
            (Some(trigger), Some(tid)) => trigger.kind.selection(tid),
            _ => Selection::All,
        };
        Pipeline {
            matcher: Matcher::new(stimulus_tid).tracing_only(options.cpus.clone()),
            stats: BhStats::new(config),
        }
    }

    fn feed(&mut self, events: Vec<Event>, tap: &mut Tap) {
        for event in events {
            self.matcher.add(&event);
            tap.put(Line::Event(event));
        }
        for sample in self.matcher.take_samples() {
            self.stats.add(sample);
        }
    }
}
