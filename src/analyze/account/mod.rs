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
//!
//! Memory does not grow with the run: a ledger keeps at most `ACCOUNTS` thread accounts
//! (threads come and go by the thousand in a storm: the lighter half is folded into one
//! account when it fills), names by pid are forgotten when not seen for a generation of
//! `THREADS / 2` other threads, and per CPU only the open runs, the timeline's history and
//! at most a value per (vector, source) of hardirq time handed on.

pub mod compensate;
pub mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::bounded::{AgedMap, Foldable, TopMap};
use super::checkpoint::{Event, EventKind};
use super::kernel::Comm;
use super::timeline::{Context, Slice, Timeline};
use compensate::Compensator;

/// The idle task's pid: interrupt time on an idle CPU is billed to no process.
pub const IDLE: u32 = 0;
/// irq_vectors.h's SRC_LOCAL_TIMER.
const LOCAL_TIMER: u16 = 1;
/// Thread accounts a ledger keeps; past it the half with the least interrupt time (dead
/// threads, mostly) is folded into one. Each is a few hundred bytes.
pub const ACCOUNTS: usize = 4096;
/// Thread names (and compensation counters) by pid: forgotten when not touched while
/// half as many other threads were.
pub const THREADS: usize = 1 << 16;

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
    /// Its thread group and name, if a checkpoint named it.
    pub name: Option<(u32, Comm)>,
}

impl Foldable for ThreadAccount {
    fn weight(&self) -> u64 {
        total(&self.charged) + total(&self.served)
    }

    fn fold(&mut self, other: Self) {
        add_into(&mut self.charged, &other.charged);
        add_into(&mut self.served, &other.served);
        self.units += other.units;
        self.name = other.name.or(self.name);
    }
}

/// What the attribution found, by thread id.
#[derive(Clone, Debug)]
pub struct Ledger {
    /// At most `ACCOUNTS`; the folded ones are `threads.other()`.
    pub threads: TopMap<u32, ThreadAccount>,
    /// Interrupt time on idle CPUs, charged to no process (kept apart, never folded).
    pub idle: BySource,
    pub orphan: BySource,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            threads: TopMap::new(ACCOUNTS),
            idle: BySource::new(),
            orphan: BySource::new(),
        }
    }
}

impl Ledger {
    /// Adds a later period's ledger to this one.
    pub fn absorb(&mut self, later: Ledger) {
        self.threads.absorb(later.threads);
        add_into(&mut self.idle, &later.idle);
        add_into(&mut self.orphan, &later.orphan);
    }

    fn charge(&mut self, thread: u32, source: Source, ns: u64) {
        let charged = match thread {
            IDLE => &mut self.idle,
            _ => &mut self.threads.entry(thread).charged,
        };
        *charged.entry(source).or_default() += ns;
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
            *self.threads.entry(thread).served.entry(source).or_default() += part;
        }
    }

    fn count_units(&mut self, units: &[u32]) {
        for &thread in units.iter().filter(|&&t| t != IDLE) {
            self.threads.entry(thread).units += 1;
        }
    }

    /// Names the accounts not named yet, from what the checkpoints said of their threads.
    fn name_threads(&mut self, names: &AgedMap<u32, (u32, Comm)>) {
        for (thread, account) in self.threads.iter_mut() {
            if account.name.is_none() {
                account.name = names.get(thread).copied();
            }
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
    /// Hardirq time handed on to the next run of a softirq vector, by the hardirq's source.
    deferred: HashMap<u16, BySource>,
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
                *self
                    .deferred
                    .entry(vector)
                    .or_default()
                    .entry(run.source)
                    .or_default() += share;
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
#[derive(Debug)]
pub struct Attributor {
    cpus: HashMap<u32, CpuState>,
    ledger: Ledger,
    /// Thread group and name of the threads the checkpoints named.
    names: AgedMap<u32, (u32, Comm)>,
    compensator: Option<Compensator>,
}

impl Attributor {
    /// With `tick_ns`, also runs the compensation algorithm of §3.1 over the stream.
    pub fn new(tick_ns: Option<u64>) -> Self {
        Attributor {
            cpus: HashMap::new(),
            ledger: Ledger::default(),
            names: AgedMap::new(THREADS),
            compensator: tick_ns.map(Compensator::new),
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

    /// The ledger so far (named at `take`); runs still open are left out.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn compensator(&self) -> Option<&Compensator> {
        self.compensator.as_ref()
    }

    /// Hands out the ledger (and compensation) so far and starts new ones, for periodic
    /// reports; what is open carries on.
    pub fn take(&mut self) -> (Ledger, Option<Compensator>) {
        let mut ledger = std::mem::take(&mut self.ledger);
        ledger.name_threads(&self.names);
        let compensator = self.compensator.as_mut().map(Compensator::take_adjustments);
        (ledger, compensator)
    }

    /// Hardirq time deferred to softirq runs that never came is orphan time.
    pub fn finish(&mut self) {
        for cpu in self.cpus.values_mut() {
            for (_, parts) in cpu.deferred.drain() {
                add_into(&mut self.ledger.orphan, &parts);
            }
        }
    }

    fn learn_name(&mut self, e: &Event) {
        if matches!(e.kind, EventKind::Switch | EventKind::Wakeup) && e.aux != IDLE {
            self.names.insert(e.aux, (e.ptr as u32, e.comm));
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
