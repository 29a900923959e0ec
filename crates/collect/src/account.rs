//! Runs an accounting measurement: the probe on the selected CPUs, the kernel's own
//! per-thread CPU time read at each period's ends, and the attribution fed as the
//! checkpoints arrive.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;

use super::{EventStream, RunPace, Tick};
use crate::cgroup::CgroupResolver;
use crate::system;
use crate::tap::Tap;
use irqlens_analyze::account::compensate::Compensator;
use irqlens_analyze::account::report::runtimes_between;
use irqlens_analyze::account::{Attributor, Ledger, Period, Seen};
use irqlens_analyze::loss::Losses;
use irqlens_model::account::{AccountOptions, AccountRunInfo, ThreadInfo};
use irqlens_model::event::Event;
use irqlens_model::kernel::Comm;
use irqlens_model::run::RunCommon;
use irqlens_model::wakeup::Watched;
use irqlens_model::workload::{CgroupId, CgroupNames};
use irqlens_probe::checkpoint::{CheckpointProbe, Checkpoints};
use irqlens_record::{Line, Reader, ThreadReading};

/// Measures until `options.duration` passes or `stop` is set; `on_tick` sees the time
/// and the run so far once a second, `on_period` each `--interval` report. Returns the
/// whole run.
pub fn run(
    options: &AccountOptions,
    stop: &AtomicBool,
    tap: &mut Tap,
    mut on_tick: impl FnMut(Tick, SoFar<'_>),
    mut on_period: impl FnMut(&Period),
) -> Result<(Period, AccountRunInfo)> {
    // without a recording or the compensation (which need every checkpoint), the kernel
    // attributes and user space only reads the totals
    if !options.compensate && !tap.is_on() {
        return crate::account_bpf::run(options, stop, on_tick, on_period);
    }
    super::keep_freed_memory();
    // a --cgroup that names no cgroup (a typo) would filter every row out, silently
    crate::cgroup::check_paths(&options.cgroups)?;
    // the tick only matters to the compensation, and measuring it takes 100 ms
    let hz = options.compensate.then(system::kernel_hz).transpose()?;
    let mut storage = MaybeUninit::uninit();
    let probe = CheckpointProbe::load(
        &mut storage,
        Checkpoints::Accounting {
            sockets: options.sockets,
        },
        &options.cpus,
        &Watched::Process(std::process::id()),
    )?;
    let mut events = EventStream::new(probe.events()?);
    if let Some(hz) = hz {
        tap.put(Line::KernelHz { hz });
    }
    let started = Instant::now();
    let mark = |tap: &mut Tap, lost_events: u64| {
        let mark = Mark::now(started, lost_events);
        tap.put(mark.line());
        mark
    };
    let irqlens = Some(std::process::id());
    let mut pipeline = Pipeline::new(
        hz,
        options.interval.is_some(),
        irqlens,
        mark(tap, events.lost()),
    );
    pipeline.resolve_cgroups();
    probe.enable();
    let mut pace = RunPace::new(started, options.duration);
    let mut next_report = options.interval.map(|i| started + i);
    let _reader = super::raise_reader();
    while !stop.load(Ordering::Relaxed) {
        pipeline.feed(events.wait_and_take(pace.wait()), tap);
        let now = Instant::now();
        if let Some(elapsed) = pace.tick(now) {
            let lost = events.lost_by_cpu();
            let tick = Tick::new(elapsed, Losses::checkpoints, lost, &options.cpus);
            on_tick(tick, SoFar(&mut pipeline));
        }
        if pace.over(now) {
            break;
        }
        if let Some(at) = next_report.filter(|&at| now >= at) {
            next_report = options.interval.map(|i| at + i);
            pipeline.cut(mark(tap, events.lost()), false, &mut on_period);
        }
    }
    probe.disable();
    pipeline.feed(events.take_all(), tap);
    pipeline.cut(mark(tap, events.lost()), true, &mut on_period);
    let info = AccountRunInfo {
        common: RunCommon {
            elapsed_ns: pipeline.whole.elapsed_ns,
            events: pipeline.events,
            lost_events: events.lost(),
            lost_by_cpu: events.lost_by_cpu(),
            programs: probe.programs(),
            skipped_tracepoints: probe.skipped.clone(),
            interrupted: false,
        },
        hz,
    };
    Ok((pipeline.whole, info))
}

/// Re-analyzes a recorded run of `options` (the info is the recording's).
pub fn replay(
    options: &AccountOptions,
    reader: &mut Reader,
    mut on_period: impl FnMut(&Period),
) -> Result<(Period, AccountRunInfo)> {
    let mut next = reader.next_input()?;
    let hz = match next {
        Some(Line::KernelHz { hz }) if options.compensate => {
            next = reader.next_input()?;
            Some(hz)
        }
        _ if options.compensate => {
            return Err(reader.error("a compensated run's first input is the tick rate"));
        }
        _ => None,
    };
    let Some(Line::Mark {
        at_ns,
        threads,
        lost_events,
    }) = next
    else {
        return Err(reader.error("an account run's inputs begin with a mark"));
    };
    let first = Mark {
        at_ns,
        threads,
        lost_events,
    };
    let irqlens = reader.header().pid;
    let mut pipeline = Pipeline::new(hz, options.interval.is_some(), irqlens, first);
    // the cgroups' names are in the end line: the periods wait for it
    let mut periods = Vec::new();
    let mut keep = |period: &Period| periods.push(period.clone());
    // a mark ends a period; the last also ends the run, which only the end line tells
    let mut pending = None;
    while let Some(line) = reader.next_input()? {
        if let Some(mark) = pending.take() {
            pipeline.cut(mark, false, &mut keep);
        }
        match line {
            Line::Event(event) => pipeline.add(&event),
            Line::Mark {
                at_ns,
                threads,
                lost_events,
            } => {
                pending = Some(Mark {
                    at_ns,
                    threads,
                    lost_events,
                })
            }
            other => return Err(reader.unexpected(&other)),
        }
    }
    let Some(last) = pending else {
        return Err(reader.error("an account run's inputs end with a mark"));
    };
    pipeline.cut(last, true, &mut keep);
    let names = &reader.end()?.cgroups;
    let path_of = |id| names.path(id).map(str::to_owned);
    for mut period in periods {
        period.name_cgroups(path_of);
        on_period(&period);
    }
    let mut whole = pipeline.whole;
    whole.name_cgroups(path_of);
    Ok((whole, reader.info()?))
}

/// A live run so far, as its tick sees it.
pub struct SoFar<'a>(&'a mut Pipeline);

impl<'a> SoFar<'a> {
    /// Checkpoints attributed (in user space: the kernel's count only at the end).
    pub fn events(&self) -> u64 {
        self.0.events
    }

    pub(crate) fn new(pipeline: &'a mut Pipeline) -> Self {
        SoFar(pipeline)
    }

    /// The interrupt time attributed so far (what is still open left out): a copy of the
    /// run's ledger, made on demand.
    pub fn ledger(&self) -> Ledger {
        let mut ledger = self.0.whole.ledger.clone();
        ledger.absorb(self.0.attributor.ledger().clone());
        ledger.absorb(self.0.open_in_kernel.clone());
        mark_own_threads(&mut ledger);
        ledger
    }

    /// The ledger so far, as [`SoFar::ledger`], and the paths of the cgroups its threads
    /// were in (those the hierarchy has: each id new to the run costs one walk at most).
    pub fn ledger_and_cgroups(&mut self) -> (Ledger, CgroupNames) {
        let ledger = self.ledger();
        let names = self
            .0
            .resolver
            .as_mut()
            .map_or_else(CgroupNames::default, |resolver| {
                resolver.names_of(ledger.cgroup_ids().collect::<BTreeSet<_>>())
            });
        (ledger, names)
    }
}

/// Names irqlens's live threads as its own in `ledger`: the final table learns the
/// threads' process from the last mark's reading, but a live view has none for threads
/// started since (the `--prometheus` server's), whose interrupt time is irqlens's too.
fn mark_own_threads(ledger: &mut Ledger) {
    let pid = std::process::id();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    let tids = tasks
        .flatten()
        .filter_map(|task| task.file_name().to_str()?.parse().ok());
    for tid in tids {
        ledger.seen.entry(tid).or_insert(Seen {
            tgid: pid,
            comm: Comm::new("irqlens"),
            cgroup: CgroupId::UNKNOWN,
        });
    }
}

/// A period boundary: when it was taken (ns since the start of the run), the kernel's
/// per-thread CPU time then, and the checkpoints lost so far.
pub(crate) struct Mark {
    at_ns: u64,
    threads: Vec<ThreadReading>,
    lost_events: u64,
}

impl Mark {
    /// A live run's mark, now: `started` is the run's start.
    pub(crate) fn now(started: Instant, lost_events: u64) -> Self {
        Mark {
            at_ns: started.elapsed().as_nanos() as u64,
            threads: ThreadReading::all(system::thread_runtimes()),
            lost_events,
        }
    }

    fn line(&self) -> Line {
        Line::Mark {
            at_ns: self.at_ns,
            threads: self.threads.clone(),
            lost_events: self.lost_events,
        }
    }
}

/// The attribution a run feeds as checkpoints arrive and cuts into periods at marks,
/// live or recorded.
pub(crate) struct Pipeline {
    attributor: Attributor,
    /// The open period's ledger as the kernel's totals have it (account attributed in
    /// BPF), for the live views.
    pub(crate) open_in_kernel: Ledger,
    /// Each period is reported, not only the whole run (--interval).
    periodic: bool,
    events: u64,
    first: HashMap<u32, ThreadInfo>,
    /// The mark the current period began at: ns since the start, readings, losses.
    last: (u64, HashMap<u32, ThreadInfo>, u64),
    /// The run so far, its periods added up.
    pub(crate) whole: Period,
    /// Names each period's cgroups as it ends (a live run's).
    resolver: Option<CgroupResolver>,
}

impl Pipeline {
    /// A run whose tick rate is `hz` (if compensating), begun at `first`; `periodic`:
    /// each period is reported; `irqlens`: irqlens's own process id.
    pub(crate) fn new(hz: Option<u32>, periodic: bool, irqlens: Option<u32>, first: Mark) -> Self {
        let tick_ns = hz.map(|hz| 1_000_000_000 / hz as u64);
        let threads = ThreadReading::by_tid(first.threads);
        Pipeline {
            attributor: Attributor::new(tick_ns, irqlens),
            open_in_kernel: Ledger::default(),
            periodic,
            events: 0,
            first: threads.clone(),
            last: (first.at_ns, threads, first.lost_events),
            whole: Period {
                start_ns: 0,
                elapsed_ns: 0,
                ledger: Ledger::default(),
                compensator: tick_ns.map(Compensator::new),
                threads: HashMap::new(),
                lost_events: 0,
                cgroups: CgroupNames::default(),
            },
            resolver: None,
        }
    }

    /// Names the cgroups of the periods (a live run's).
    pub(crate) fn resolve_cgroups(&mut self) {
        // a machine without cgroup v2 names no cgroup: its rows have no path
        self.resolver = CgroupResolver::new().ok();
    }

    /// Attributes `events` and puts them on `tap`.
    fn feed(&mut self, events: Vec<Event>, tap: &mut Tap) {
        for event in events {
            self.add(&event);
            tap.put(Line::Event(event));
        }
    }

    fn add(&mut self, event: &Event) {
        self.events += 1;
        self.attributor.add(event);
    }

    /// Ends the current period at a mark, and the run if `last`: the ledger so far and
    /// the kernel's bill since the previous mark, shown to `report` if periodic.
    fn cut(&mut self, mark: Mark, last: bool, report: &mut dyn FnMut(&Period)) {
        if last {
            self.attributor.finish();
        }
        let (ledger, compensator) = self.attributor.take();
        self.close_period(ledger, compensator, mark, last, report);
    }

    /// Ends the current period at a mark with its `ledger` (and the run if `last`), as
    /// `cut` does.
    pub(crate) fn close_period(
        &mut self,
        ledger: Ledger,
        compensator: Option<Compensator>,
        mark: Mark,
        last: bool,
        report: &mut dyn FnMut(&Period),
    ) {
        self.open_in_kernel = Ledger::default();
        let threads = ThreadReading::by_tid(mark.threads);
        let mut period = Period {
            start_ns: self.last.0,
            elapsed_ns: mark.at_ns - self.last.0,
            ledger,
            compensator,
            threads: runtimes_between(&self.last.1, &threads),
            lost_events: mark.lost_events.saturating_sub(self.last.2),
            cgroups: CgroupNames::default(),
        };
        if let Some(resolver) = self.resolver.as_mut() {
            period.name_cgroups(|id| resolver.path_of(id).map(str::to_owned));
        }
        if last {
            self.whole.elapsed_ns = mark.at_ns;
            self.whole.threads = runtimes_between(&self.first, &threads);
        }
        self.last = (mark.at_ns, threads, mark.lost_events);
        if self.periodic {
            report(&period);
        }
        self.whole.absorb(period);
    }
}
