//! Process-aware interrupt accounting (seed 004, Zhang & West): whose time interrupts
//! took ("charged": the thread that was current), and whom they worked for ("served").
//!
//! The rule for "served", applied to every hardirq and softirq run on a traced CPU:
//! - its **units** are the data it queued to sockets (each goes to the thread that last
//!   read that socket) and the threads it woke; a delivery and the wakeup it causes are
//!   one unit. Block I/O is served through the wakeup of the thread waiting for it.
//! - a run's time is split evenly among its units; an hrtimer callback that wakes a
//!   thread (a nanosleep's) is a run of its own, and serves it with its own time only;
//! - a device or IPI hardirq with no unit of its own hands its time to the next run of
//!   the softirq vectors it raised on that CPU (a NIC's or an RPS IPI's NET_RX); the
//!   tick's raises are housekeeping and hand nothing on;
//! - what is left (a run with no unit, the tick's housekeeping, NMIs, deliveries to
//!   sockets nobody reads) is **orphan** time, as the seed keeps orphan packets.
//!
//! Times are exclusive: nested interrupts are cut out of the run they interrupted.

pub mod compensate;
pub mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::checkpoint::{Event, EventKind};
use super::kernel::Comm;
use super::timeline::{Context, Slice, Timeline};
use compensate::Compensator;

/// The idle task's pid: interrupt time on an idle CPU is billed to no process.
pub const IDLE: u32 = 0;
/// irq_vectors.h's SRC_LOCAL_TIMER.
const LOCAL_TIMER: u16 = 1;

/// Where interrupt time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `source` is irq_vectors.h's enum irq_source (0: a device line), `id` the line or
    /// vector.
    Hardirq {
        source: u16,
        id: u32,
    },
    Softirq {
        vector: u16,
    },
    Nmi,
}

/// Nanoseconds per interrupt source.
pub type BySource = BTreeMap<Source, u64>;

/// One thread's interrupt account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadAccount {
    /// Interrupt time that ran while the thread was current.
    pub charged: BySource,
    /// Interrupt time done on its behalf, wherever it ran.
    pub served: BySource,
    /// Deliveries and wakeups it was served.
    pub units: u64,
}

/// What the attribution found, by thread id.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    pub threads: HashMap<u32, ThreadAccount>,
    pub orphan: BySource,
    /// Thread group and name of the threads the checkpoints named.
    pub seen: HashMap<u32, (u32, Comm)>,
}

impl Ledger {
    /// Adds a later period's ledger to this one.
    pub fn absorb(&mut self, later: Ledger) {
        for (thread, account) in later.threads {
            let mine = self.threads.entry(thread).or_default();
            add_into(&mut mine.charged, &account.charged);
            add_into(&mut mine.served, &account.served);
            mine.units += account.units;
        }
        add_into(&mut self.orphan, &later.orphan);
        self.seen.extend(later.seen);
    }

    fn charge(&mut self, thread: u32, source: Source, ns: u64) {
        *self
            .threads
            .entry(thread)
            .or_default()
            .charged
            .entry(source)
            .or_default() += ns;
    }

    /// Splits `ns` evenly among `units` (thread ids, 0 for an unknown reader).
    fn serve(&mut self, units: &[u32], source: Source, ns: u64) {
        if units.is_empty() {
            *self.orphan.entry(source).or_default() += ns;
            return;
        }
        let share = ns / units.len() as u64;
        let mut rest = ns - share * units.len() as u64;
        for &thread in units {
            let part = share + std::mem::take(&mut rest);
            if thread == IDLE {
                *self.orphan.entry(source).or_default() += part;
                continue;
            }
            *self
                .threads
                .entry(thread)
                .or_default()
                .served
                .entry(source)
                .or_default() += part;
        }
    }

    fn count_units(&mut self, units: &[u32]) {
        for &thread in units.iter().filter(|&&t| t != IDLE) {
            self.threads.entry(thread).or_default().units += 1;
        }
    }
}

/// One hardirq or softirq run being followed.
#[derive(Debug)]
struct Run {
    source: Source,
    ns: u64,
    units: Vec<u32>,
    /// The last unit is a socket delivery whose wakeup (if any) is still to come.
    delivery_open: bool,
    /// Softirq vectors a hardirq raised.
    raised: Vec<u16>,
}

impl Run {
    fn new(source: Source) -> Self {
        Run {
            source,
            ns: 0,
            units: Vec::new(),
            delivery_open: false,
            raised: Vec::new(),
        }
    }

    fn deliver(&mut self, reader: u32) {
        self.units.push(reader);
        self.delivery_open = true;
    }

    fn wake(&mut self, thread: u32) {
        let delivered = std::mem::take(&mut self.delivery_open);
        match self.units.last_mut() {
            // the wakeup the delivery caused is part of it, and names an unknown reader
            Some(last) if delivered && (*last == IDLE || *last == thread) => *last = thread,
            _ => self.units.push(thread),
        }
    }
}

/// The runs open on one CPU: a softirq, a hardirq on top of it, an hrtimer callback in
/// either.
#[derive(Debug, Default)]
struct Runs {
    hardirq: Option<Run>,
    softirq: Option<Run>,
    /// An hrtimer callback, in a hardirq or the HRTIMER softirq.
    callback: Option<Run>,
}

#[derive(Debug, Default)]
struct CpuState {
    timeline: Timeline,
    runs: Runs,
    /// Hardirq time handed on to the next run of a softirq vector.
    deferred: HashMap<u16, Vec<(Source, u64)>>,
    /// Start of the clock tick in progress (compensation).
    tick_start: Option<u64>,
}

impl CpuState {
    /// A callback that woke nobody is part of the run around it (none to settle).
    fn fold_in(&mut self, run: Run) -> Option<Run> {
        if run.units.is_empty() {
            if let Some(enclosing) = self.runs.enclosing() {
                enclosing.ns += run.ns;
            }
            return None;
        }
        Some(run)
    }

    /// A device or IPI hardirq with no unit hands its time to the softirq vectors it
    /// raised (none to settle).
    fn hand_on(&mut self, run: Run) -> Option<Run> {
        let tick = matches!(
            run.source,
            Source::Hardirq {
                source: LOCAL_TIMER,
                ..
            }
        );
        if run.units.is_empty() && !run.raised.is_empty() && !tick {
            let share = run.ns / run.raised.len() as u64;
            for vector in run.raised {
                self.deferred
                    .entry(vector)
                    .or_default()
                    .push((run.source, share));
            }
            return None;
        }
        Some(run)
    }

    /// A softirq run's time and the hardirq time handed on to its vector.
    fn with_handed_on(&mut self, run: &Run) -> Vec<(Source, u64)> {
        let mut parts = vec![(run.source, run.ns)];
        if let Source::Softirq { vector } = run.source {
            parts.extend(self.deferred.remove(&vector).unwrap_or_default());
        }
        parts
    }
}

impl Runs {
    /// The innermost run open: wakeups and deliveries belong to it.
    fn innermost(&mut self) -> Option<&mut Run> {
        self.callback
            .as_mut()
            .or(self.hardirq.as_mut())
            .or(self.softirq.as_mut())
    }

    /// The hardirq or softirq run around an hrtimer callback.
    fn enclosing(&mut self) -> Option<&mut Run> {
        self.hardirq.as_mut().or(self.softirq.as_mut())
    }
}

/// Follows the checkpoints of the traced CPUs (in time order) and keeps the ledger.
#[derive(Debug, Default)]
pub struct Attributor {
    cpus: HashMap<u32, CpuState>,
    ledger: Ledger,
    compensator: Option<Compensator>,
}

impl Attributor {
    /// With `tick_ns`, also runs the compensation algorithm of §3.1 over the stream.
    pub fn new(tick_ns: Option<u64>) -> Self {
        Attributor {
            compensator: tick_ns.map(Compensator::new),
            ..Default::default()
        }
    }

    pub fn add(&mut self, e: &Event) {
        self.learn_name(e);
        let cpu = self.cpus.entry(e.cpu).or_default();
        if let Some(compensator) = self.compensator.as_mut() {
            cross_ticks(compensator, e.cpu, cpu, e.time_ns);
        }
        cpu.timeline.add(e);
        for slice in cpu.timeline.take_closed() {
            route(&mut self.ledger, &mut cpu.runs, slice);
        }
        match e.kind {
            EventKind::IrqEntry if cpu.runs.hardirq.is_none() => {
                cpu.runs.hardirq = Some(Run::new(Source::Hardirq {
                    source: e.aux as u16,
                    id: e.id.into(),
                }));
            }
            EventKind::IrqExit => {
                if let Some(run) = cpu.runs.hardirq.take().and_then(|run| cpu.hand_on(run)) {
                    self.settle(e.cpu, &run.units, &[(run.source, run.ns)]);
                }
            }
            EventKind::SoftirqEntry => {
                cpu.runs.softirq = Some(Run::new(Source::Softirq { vector: e.id }));
            }
            EventKind::SoftirqExit => {
                if let Some(run) = cpu.runs.softirq.take() {
                    let parts = cpu.with_handed_on(&run);
                    self.settle(e.cpu, &run.units, &parts);
                }
            }
            EventKind::TimerExpire => {
                let source = cpu.runs.enclosing().map(|run| run.source);
                cpu.runs.callback = source.map(Run::new);
            }
            EventKind::TimerExpireExit => {
                if let Some(run) = cpu.runs.callback.take().and_then(|run| cpu.fold_in(run)) {
                    self.settle(e.cpu, &run.units, &[(run.source, run.ns)]);
                }
            }
            EventKind::SoftirqRaise => {
                if let Some(run) = cpu
                    .runs
                    .hardirq
                    .as_mut()
                    .filter(|r| !r.raised.contains(&e.id))
                {
                    run.raised.push(e.id);
                }
            }
            EventKind::Wakeup => {
                if let Some(run) = cpu.runs.innermost() {
                    run.wake(e.aux);
                }
            }
            EventKind::SockData => {
                if let Some(run) = cpu.runs.innermost() {
                    run.deliver(e.aux);
                }
            }
            _ => {}
        }
    }

    /// The ledger so far; runs still open are left out.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn compensator(&self) -> Option<&Compensator> {
        self.compensator.as_ref()
    }

    /// Hands out the ledger (and compensation) so far and starts new ones, for periodic
    /// reports; what is open carries on.
    pub fn take(&mut self) -> (Ledger, Option<Compensator>) {
        let seen = self.ledger.seen.clone();
        let ledger = std::mem::replace(
            &mut self.ledger,
            Ledger {
                seen,
                ..Default::default()
            },
        );
        let compensator = self.compensator.as_mut().map(Compensator::take_adjustments);
        (ledger, compensator)
    }

    /// Hardirq time deferred to softirq runs that never came is orphan time.
    pub fn finish(&mut self) {
        for cpu in self.cpus.values_mut() {
            for (source, ns) in cpu.deferred.drain().flat_map(|(_, parts)| parts) {
                *self.ledger.orphan.entry(source).or_default() += ns;
            }
        }
    }

    fn learn_name(&mut self, e: &Event) {
        if matches!(e.kind, EventKind::Switch | EventKind::Wakeup) && e.aux != IDLE {
            self.ledger.seen.insert(e.aux, (e.ptr as u32, e.comm));
        }
    }

    fn settle(&mut self, cpu: u32, units: &[u32], parts: &[(Source, u64)]) {
        for &(source, ns) in parts {
            self.ledger.serve(units, source, ns);
        }
        self.ledger.count_units(units);
        if let Some(compensator) = self.compensator.as_mut() {
            let ns: u64 = parts.iter().map(|&(_, ns)| ns).sum();
            compensator.interrupts(cpu, units, ns);
        }
    }
}

/// Charges a closed interrupt slice to the thread it ran on, and adds it to its run.
fn route(ledger: &mut Ledger, runs: &mut Runs, slice: &Slice) {
    let ns = slice.end - slice.start;
    let run = match slice.context {
        Context::Thread(_) => return,
        Context::Nmi => None,
        Context::Hardirq { .. } => runs.hardirq.as_mut(),
        Context::Softirq(_) => runs.softirq.as_mut(),
        Context::Timer { .. } => runs.callback.as_mut(),
    };
    match run {
        Some(run) => {
            run.ns += ns;
            ledger.charge(slice.thread, run.source, ns);
        }
        // an NMI, or a run whose entry came before tracing began: served nobody known
        None => {
            let source = match slice.context {
                Context::Hardirq { source, id, .. } => Source::Hardirq { source, id },
                Context::Softirq(vector) => Source::Softirq { vector },
                // hrtimer callbacks run in the local timer's hardirq (its vector unknown)
                Context::Timer { .. } => Source::Hardirq {
                    source: LOCAL_TIMER,
                    id: 0,
                },
                _ => Source::Nmi,
            };
            ledger.charge(slice.thread, source, ns);
            *ledger.orphan.entry(source).or_default() += ns;
        }
    }
}

/// Settles the clock ticks that ended on this CPU before `now`, each with the thread
/// that was current then (the kernel charges a whole tick to it).
fn cross_ticks(compensator: &mut Compensator, cpu_id: u32, cpu: &mut CpuState, now: u64) {
    let tick = compensator.tick_ns();
    let start = *cpu.tick_start.get_or_insert(now - now % tick);
    if now < start + tick {
        return;
    }
    let current = cpu.timeline.thread();
    // only the first tick has interrupts to settle; the rest of an idle gap are empty
    compensator.tick(cpu_id, current);
    cpu.tick_start = Some(now - now % tick);
}

pub(crate) fn add_into(into: &mut BySource, from: &BySource) {
    for (&source, &ns) in from {
        *into.entry(source).or_default() += ns;
    }
}

/// Sum of a source map.
pub fn total(by_source: &BySource) -> u64 {
    by_source.values().sum()
}
