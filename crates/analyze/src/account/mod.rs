//! Process-aware interrupt accounting (Zhang & West): whose time interrupts
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
//!   sockets nobody reads) is **orphan** time, as Zhang & West keep orphan packets (§4).
//!
//! irqlens's own work is its own: a run whose units are all irqlens's threads (the
//! timers that wake its threads), and an IPI with no unit after which the CPU switches
//! straight to one of its threads (the remote wakeup of it), is charged to `[irqlens]`,
//! not to the task it happened to interrupt.
//! The kernel still billed that task, so the ledger keeps the time in the task's
//! `charged` and marks it `for_irqlens`: the table moves it, the correction does not.
//!
//! Times are exclusive: nested interrupts are cut out of the run they interrupted.
//!
//! A ledger's memory is bounded however many threads come and go: see [`fold`].

pub mod compensate;
pub mod fold;
mod period;
pub mod report;
#[cfg(test)]
mod tests;
pub mod workloads;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::timeline::{Context, Slice, Timeline};
use compensate::Compensator;
pub use fold::{ACCOUNTS, Folded, FoldedAccount};
use irqlens_model::event::{Event, EventData};
use irqlens_model::kernel::{Comm, WAKEUP_IPI_SOURCES};
use irqlens_model::workload::CgroupId;
pub use period::Period;

/// The idle task's pid: interrupt time on an idle CPU is billed to no process.
pub const IDLE: u32 = 0;
/// irq_vectors.h's SRC_LOCAL_TIMER.
const LOCAL_TIMER: u16 = 1;
/// Threads whose compensation counters are kept: forgotten when not touched while half
/// as many other threads were.
pub const THREADS: usize = 1 << 16;

/// Where interrupt time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `source` is irq_vectors.h's enum irq_source (0: a device line), `id` the line or
    /// vector.
    Hardirq {
        /// What raised it (0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// A softirq.
    Softirq {
        /// Its vector.
        vector: u16,
    },
    /// An NMI.
    Nmi,
}

impl Source {
    /// Whether it is a hardirq of irq_vectors.h's `irq_source`.
    fn is_hardirq_of(self, irq_source: u16) -> bool {
        matches!(self, Source::Hardirq { source, .. } if source == irq_source)
    }
}

/// Nanoseconds per interrupt source.
pub type BySource = BTreeMap<Source, u64>;

/// One thread's interrupt account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadAccount {
    /// Interrupt time that ran while the thread was current (the kernel billed it).
    pub charged: BySource,
    /// The part of `charged` that was irqlens's own work: charged to `[irqlens]`.
    pub for_irqlens: BySource,
    /// Interrupt time done on its behalf, wherever it ran.
    pub served: BySource,
    /// Deliveries and wakeups it was served.
    pub units: u64,
    /// When it was last charged or served (ns of the checkpoints' clock): a thread quiet
    /// for long is folded first.
    pub last_ns: u64,
}

impl ThreadAccount {
    /// Adds `other`'s interrupt time and units to this account.
    pub fn add(&mut self, other: &ThreadAccount) {
        add_into(&mut self.charged, &other.charged);
        add_into(&mut self.for_irqlens, &other.for_irqlens);
        add_into(&mut self.served, &other.served);
        self.units += other.units;
        self.last_ns = self.last_ns.max(other.last_ns);
    }
}

/// What the checkpoints told of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Its thread group (process) id.
    pub tgid: u32,
    /// Its name.
    pub comm: Comm,
    /// Its cgroup v2 id, the last one known (`CgroupId::UNKNOWN` if none was).
    pub cgroup: CgroupId,
}

/// What the attribution found, by thread id.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// Each thread's account, by thread id.
    pub threads: HashMap<u32, ThreadAccount>,
    /// Interrupt time done for no thread: a run with no unit, the tick's housekeeping,
    /// NMIs, deliveries to sockets nobody reads.
    pub orphan: BySource,
    /// What the checkpoints told of the threads they named.
    pub seen: HashMap<u32, Seen>,
    /// Interrupt time per CPU it ran on, by source; irqlens's own work left out.
    pub cpus: BTreeMap<u32, BySource>,
    /// irqlens's own process id: the threads whose work is its own.
    pub irqlens: Option<u32>,
    /// The accounts folded to keep at most `ACCOUNTS`, by cgroup.
    pub folded: Folded,
    /// The time of the latest checkpoint it took (ns of the checkpoints' clock): how long
    /// an account has been quiet is measured from it.
    pub now_ns: u64,
}

impl Ledger {
    /// Adds a later period's ledger to this one (folding accounts past `ACCOUNTS`).
    pub fn absorb(&mut self, later: Ledger) {
        self.absorb_with(later, None);
    }

    /// Adds a later period's ledger to this one, and the accounts it folds take their
    /// adjustments out of `compensator` (this ledger's).
    pub(crate) fn absorb_with(&mut self, later: Ledger, compensator: Option<&mut Compensator>) {
        for (thread, account) in later.threads {
            self.threads.entry(thread).or_default().add(&account);
        }
        add_into(&mut self.orphan, &later.orphan);
        for (cpu, by_source) in later.cpus {
            add_into(self.cpus.entry(cpu).or_default(), &by_source);
        }
        self.seen.extend(later.seen);
        self.irqlens = self.irqlens.or(later.irqlens);
        self.folded.absorb(later.folded);
        self.now_ns = self.now_ns.max(later.now_ns);
        self.fold_excess(compensator, &[]);
    }

    /// Every thread account, the folded ones' sums included (the idle task's too).
    pub fn accounts(&self) -> impl Iterator<Item = &ThreadAccount> {
        let folded = self.folded.by_cgroup().map(|(_, folded)| &folded.account);
        self.threads.values().chain(folded)
    }

    /// The cgroups the checkpoints named its threads in, and those of its folded
    /// accounts.
    pub fn cgroup_ids(&self) -> impl Iterator<Item = CgroupId> + '_ {
        let ids = self.seen.values().map(|seen| seen.cgroup);
        let folded = self.folded.by_cgroup().map(|(id, _)| id);
        ids.chain(folded).filter(|id| id.is_known())
    }

    /// Whether `thread` is one of irqlens's own.
    pub fn is_irqlens(&self, thread: u32) -> bool {
        let tgid = self.seen.get(&thread).map_or(thread, |seen| seen.tgid);
        self.irqlens.is_some_and(|pid| thread == pid || tgid == pid)
    }

    /// Whether a run that ended is irqlens's own work: its units are all irqlens's
    /// threads. (irqlens's probes notify nobody: its reader drains on its own pace, so
    /// an irq_work that wakes nobody is some other kernel user's.)
    fn is_irqlens_work(&self, run: &Run) -> bool {
        !run.units.is_empty() && run.units.iter().all(|&unit| self.is_irqlens(unit))
    }

    /// Charges `part`, run on `cpu`, to the thread it interrupted.
    fn charge(&mut self, cpu: u32, part: Part, for_irqlens: bool) {
        if part.ns == 0 {
            return;
        }
        if !for_irqlens {
            *self
                .cpus
                .entry(cpu)
                .or_default()
                .entry(part.source)
                .or_default() += part.ns;
        }
        let account = self.threads.entry(part.current).or_default();
        account.last_ns = self.now_ns;
        *account.charged.entry(part.source).or_default() += part.ns;
        if for_irqlens {
            *account.for_irqlens.entry(part.source).or_default() += part.ns;
        }
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
            let account = self.threads.entry(thread).or_default();
            account.last_ns = self.now_ns;
            *account.served.entry(source).or_default() += part;
        }
    }

    fn count_units(&mut self, units: &[u32]) {
        for &thread in units.iter().filter(|&&t| t != IDLE) {
            self.threads.entry(thread).or_default().units += 1;
        }
    }
}

/// Interrupt time to settle: its source, and the thread it ran on (the kernel bills it).
#[derive(Clone, Copy, Debug)]
struct Part {
    source: Source,
    ns: u64,
    current: u32,
}

/// One hardirq or softirq run being followed.
#[derive(Debug)]
struct Run {
    source: Source,
    ns: u64,
    /// The thread it interrupted.
    current: u32,
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
            current: IDLE,
            units: Vec::new(),
            delivery_open: false,
            raised: Vec::new(),
        }
    }

    fn deliver(&mut self, reader: u32) {
        self.units.push(reader);
        self.delivery_open = true;
    }

    fn part(&self) -> Part {
        Part {
            source: self.source,
            ns: self.ns,
            current: self.current,
        }
    }

    /// A wakeup IPI that woke nobody here: whether it was for irqlens shows in what the
    /// CPU switches to next.
    fn may_wake_remotely(&self) -> bool {
        WAKEUP_IPI_SOURCES
            .iter()
            .any(|&ipi| self.source.is_hardirq_of(ipi))
            && self.units.is_empty()
            && self.raised.is_empty()
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
    deferred: HashMap<u16, Vec<Part>>,
    /// A wakeup IPI that woke nobody here, until the CPU switches or takes another
    /// hardirq: irqlens's own work if the switch is to one of its threads.
    ipi: Option<Run>,
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
        let tick = run.source.is_hardirq_of(LOCAL_TIMER);
        if run.units.is_empty() && !run.raised.is_empty() && !tick {
            let share = Part {
                ns: run.ns / run.raised.len() as u64,
                ..run.part()
            };
            for vector in run.raised {
                self.deferred.entry(vector).or_default().push(share);
            }
            return None;
        }
        Some(run)
    }

    /// A softirq run's time and the hardirq time handed on to its vector.
    fn with_handed_on(&mut self, run: &Run) -> Vec<Part> {
        let mut parts = vec![run.part()];
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
    /// With `tick_ns`, also runs the compensation algorithm of Zhang & West §3.1 over the
    /// stream; `irqlens` is irqlens's own process id (its work is charged to `[irqlens]`).
    pub fn new(tick_ns: Option<u64>, irqlens: Option<u32>) -> Self {
        Attributor {
            compensator: tick_ns.map(Compensator::new),
            ledger: Ledger {
                irqlens,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Takes the next checkpoint.
    pub fn add(&mut self, e: &Event) {
        self.ledger.now_ns = self.ledger.now_ns.max(e.time_ns);
        self.attribute(e);
        self.bound();
    }

    /// Folds accounts and forgets names past the ledger's bounds (see [`fold`]); the
    /// names of the threads running now are kept, whatever the bound.
    fn bound(&mut self) {
        if self.ledger.over_bounds(self.compensator.as_ref()) {
            let running: Vec<u32> = self.cpus.values().map(|c| c.timeline.thread()).collect();
            self.ledger.fold_excess(self.compensator.as_mut(), &running);
        }
    }

    fn attribute(&mut self, e: &Event) {
        self.learn_name(e);
        self.settle_ipi(e);
        let cpu = self.cpus.entry(e.cpu).or_default();
        if let Some(compensator) = self.compensator.as_mut() {
            cross_ticks(compensator, e.cpu, cpu, e.time_ns);
        }
        cpu.timeline.add(e);
        for slice in cpu.timeline.take_closed() {
            route(&mut self.ledger, e.cpu, &mut cpu.runs, slice);
        }
        match e.what {
            EventData::IrqEntry {
                source,
                line_or_vector,
            } if cpu.runs.hardirq.is_none() => {
                cpu.runs.hardirq = Some(Run::new(Source::Hardirq {
                    source,
                    id: line_or_vector.into(),
                }));
            }
            EventData::IrqExit { .. } => {
                match cpu.runs.hardirq.take().and_then(|run| cpu.hand_on(run)) {
                    Some(run) if run.may_wake_remotely() && self.ledger.irqlens.is_some() => {
                        cpu.ipi = Some(run);
                    }
                    Some(run) => self.settle(e.cpu, &run, &[run.part()]),
                    None => {}
                }
            }
            EventData::SoftirqEntry { vector } => {
                cpu.runs.softirq = Some(Run::new(Source::Softirq { vector }));
            }
            EventData::SoftirqExit { .. } => {
                if let Some(run) = cpu.runs.softirq.take() {
                    let parts = cpu.with_handed_on(&run);
                    self.settle(e.cpu, &run, &parts);
                }
            }
            EventData::TimerExpire { .. } => {
                let source = cpu.runs.enclosing().map(|run| run.source);
                cpu.runs.callback = source.map(Run::new);
            }
            EventData::TimerExpireExit { .. } => {
                if let Some(run) = cpu.runs.callback.take().and_then(|run| cpu.fold_in(run)) {
                    self.settle(e.cpu, &run, &[run.part()]);
                }
            }
            EventData::SoftirqRaise { vector } => {
                if let Some(run) = cpu
                    .runs
                    .hardirq
                    .as_mut()
                    .filter(|r| !r.raised.contains(&vector))
                {
                    run.raised.push(vector);
                }
            }
            EventData::Wakeup { woken_pid, .. } => {
                if let Some(run) = cpu.runs.innermost() {
                    run.wake(woken_pid);
                }
            }
            EventData::SockData { reader, .. } => {
                if let Some(run) = cpu.runs.innermost() {
                    run.deliver(reader);
                }
            }
            _ => {}
        }
    }

    /// The ledger so far; runs still open are left out.
    /// What was attributed so far.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The compensation algorithm's state, if it runs.
    pub fn compensator(&self) -> Option<&Compensator> {
        self.compensator.as_ref()
    }

    /// Hands out the ledger (and compensation) so far and starts new ones, for periodic
    /// reports; what is open carries on.
    pub fn take(&mut self) -> (Ledger, Option<Compensator>) {
        let next = Ledger {
            seen: self.ledger.seen.clone(),
            irqlens: self.ledger.irqlens,
            now_ns: self.ledger.now_ns,
            ..Default::default()
        };
        let ledger = std::mem::replace(&mut self.ledger, next);
        let compensator = self.compensator.as_mut().map(Compensator::take_adjustments);
        (ledger, compensator)
    }

    /// Hardirq time deferred to softirq runs that never came is orphan time; a wakeup
    /// IPI still waiting for its switch woke nobody known.
    pub fn finish(&mut self) {
        let mut left: Vec<(u32, Run)> = Vec::new();
        for (&cpu_id, cpu) in &mut self.cpus {
            for part in cpu.deferred.drain().flat_map(|(_, parts)| parts) {
                self.ledger.charge(cpu_id, part, false);
                *self.ledger.orphan.entry(part.source).or_default() += part.ns;
            }
            left.extend(cpu.ipi.take().map(|run| (cpu_id, run)));
        }
        for (cpu, run) in left {
            self.settle_as(cpu, &run.units, &[run.part()], false);
        }
    }

    /// Settles the wakeup IPI waiting on the event's CPU once the CPU switches (to
    /// irqlens's thread: irqlens's own work) or takes another hardirq.
    fn settle_ipi(&mut self, e: &Event) {
        let for_irqlens = match e.what {
            EventData::Switch { next_pid, .. } => Some(self.ledger.is_irqlens(next_pid)),
            EventData::IrqEntry { .. } => Some(false),
            _ => None,
        };
        let Some(for_irqlens) = for_irqlens else {
            return;
        };
        let Some(run) = self.cpus.get_mut(&e.cpu).and_then(|cpu| cpu.ipi.take()) else {
            return;
        };
        self.settle_as(e.cpu, &run.units, &[run.part()], for_irqlens);
    }

    fn learn_name(&mut self, e: &Event) {
        let (pid, tgid, comm) = match e.what {
            EventData::Switch {
                next_pid,
                next_tgid,
                next_comm,
                ..
            } => (next_pid, next_tgid, next_comm),
            EventData::Wakeup {
                woken_pid,
                woken_tgid,
                woken_comm,
                ..
            } => (woken_pid, woken_tgid, woken_comm),
            _ => return,
        };
        if pid == IDLE {
            return;
        }
        // a reading without a cgroup (an old recording's, a task the probe could not
        // read) keeps the one known
        let known = self.ledger.seen.get(&pid).map(|seen| seen.cgroup);
        let cgroup = e.what.cgroup().or(known).unwrap_or(CgroupId::UNKNOWN);
        self.ledger.seen.insert(pid, Seen { tgid, comm, cgroup });
    }

    /// Charges and serves a run that ended, as irqlens's own work if it is.
    fn settle(&mut self, cpu: u32, run: &Run, parts: &[Part]) {
        let for_irqlens = self.ledger.is_irqlens_work(run);
        self.settle_as(cpu, &run.units, parts, for_irqlens);
    }

    fn settle_as(&mut self, cpu: u32, units: &[u32], parts: &[Part], for_irqlens: bool) {
        for &part in parts {
            self.ledger.charge(cpu, part, for_irqlens);
            self.ledger.serve(units, part.source, part.ns);
        }
        self.ledger.count_units(units);
        if let Some(compensator) = self.compensator.as_mut() {
            let ns: u64 = parts.iter().map(|part| part.ns).sum();
            compensator.interrupts(cpu, units, ns);
        }
    }
}

/// Adds a closed interrupt slice to its run (charged when the run is settled), or
/// charges it to the thread it ran on if no run is followed.
fn route(ledger: &mut Ledger, cpu: u32, runs: &mut Runs, slice: &Slice) {
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
            run.current = slice.thread;
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
            let part = Part {
                source,
                ns,
                current: slice.thread,
            };
            ledger.charge(cpu, part, false);
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
