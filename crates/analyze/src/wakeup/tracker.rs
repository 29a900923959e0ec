//! Follows every wakeup of a watched task back to the interrupt that started it and
//! forward to the task's switch-in (in timer mode, to the thread's own report from user
//! space), and cuts the wait into causes.
//!
//! - A wakeup from a hardirq (an hrtimer callback in it, say) starts at that hardirq's
//!   entry; in timer mode the expected expiry, which the thread armed, comes first.
//! - A wakeup from a softirq starts where the softirq was raised: in a hardirq, at that
//!   hardirq's entry; in a thread, at the raise.
//! - A wakeup from an IRQ thread, ksoftirqd or a kworker carries on the chain that woke
//!   that thread, which becomes an interposed thread (Lee & Park §3).
//! - Until the wakeup the waker's CPU is followed, from then on the task's CPU.
//!
//! Events of one CPU arrive in order; events of different CPUs only roughly so: a sample
//! is cut once its CPU's checkpoints have passed its end.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

use super::{Cause, Origin, Sample, TimerPart};
use crate::bounded::AgedMap;
use crate::timeline::{Context, Slice, Timeline};
use irqlens_model::event::{Event, EventData};
use irqlens_model::kernel::Comm;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::{Report, TrackCounts};
use irqlens_model::workload::{CgroupId, NamedThread};

/// Softirq vectors (include/linux/interrupt.h).
const VECTORS: usize = 10;
/// Bounds on per-thread and per-hrtimer state (`AgedMap`s), for long runs: names, last
/// CPUs, armed hrtimers, carried chains and pending wakeups not touched for a generation
/// (half the bound) of newer entries are forgotten.
const THREADS: usize = 1 << 16;
/// Timer mode: switched-in wakeups waiting for their thread's report, and reports waiting
/// for their wakeup, per thread; past it the oldest is given up (counted as unreported or
/// undecomposed).
const UNPAIRED: usize = 1024;
/// Timer mode: reports the checkpoints have not reached yet, and paired samples waiting
/// for their CPU's checkpoints; past it the oldest are taken as they are (their window
/// may be cut short, which counts as incomplete).
const WAITING: usize = 1 << 16;
/// A bottom-half thread passes on the chain of its wakeup only this long: past it, what
/// it runs was likely requested since.
const CARRY_NS: u64 = 10_000_000;
/// Interposed threads kept per chain (threads waking each other in a loop add one each).
const INTERPOSED: usize = 8;

/// Whose wakeups are samples.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Timer mode: irqlens's measurement threads, which report every activation from
    /// user space as well.
    Timers(HashSet<u32>),
    /// Task mode: every thread the probe flags as watched.
    Watched,
}

#[derive(Clone, Copy, Debug)]
struct Armed {
    tid: u32,
    expires_ns: u64,
}

/// A softirq request: when, and the hardirq it was made in (if any).
#[derive(Clone, Copy, Debug)]
struct Raise {
    time_ns: u64,
    hardirq: Option<(Origin, u64)>,
}

/// Where a wakeup came from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Chain {
    origin: Origin,
    origin_ns: u64,
    origin_cpu: u32,
    timer: Option<TimerPart>,
    interposed: Vec<u32>,
    wakeup_ns: u64,
    waker_cpu: u32,
}

/// A chain whose task has been switched in.
#[derive(Clone, Debug)]
struct Woken {
    chain: Chain,
    tid: u32,
    cpu: u32,
    switch_in_ns: u64,
}

#[derive(Default)]
struct CpuState {
    timeline: Timeline,
    raised: [Option<Raise>; VECTORS],
    /// The softirq running now and the request it serves.
    serving: Option<(u16, Raise)>,
}

/// Follows the checkpoints (and, in timer mode, the threads' reports) and makes a
/// sample of every wakeup of a target by an interrupt.
pub struct Tracker {
    targets: Targets,
    /// None: every CPU is traced.
    traced: Option<CpuList>,
    cpus: HashMap<u32, CpuState>,
    comms: AgedMap<u32, Comm>,
    /// The cgroups of the threads seen woken or switched to, when the probe read them.
    cgroups: AgedMap<u32, CgroupId>,
    last_cpu: AgedMap<u32, u32>,
    armed: AgedMap<u64, Armed>,
    /// Chains carried by woken threads that run bottom halves.
    carried: AgedMap<u32, Chain>,
    /// Targets woken and not yet switched in.
    pending: AgedMap<u32, Chain>,
    /// Timer mode: switched in, waiting for the thread's report, and the reports
    /// waiting for their wakeup.
    switched: HashMap<u32, VecDeque<Woken>>,
    reports: HashMap<u32, VecDeque<Report>>,
    /// Reports the checkpoints have not reached yet, earliest first: a report joins the
    /// stream at its time, so its sample is cut while the history still holds it.
    incoming: BinaryHeap<Reverse<(u64, Report)>>,
    /// Paired, waiting for their CPU's checkpoints to pass the report.
    ready: Vec<(Woken, u64)>,
    samples: Vec<Sample>,
    undecomposed: Vec<Report>,
    /// What it could and could not make samples of so far.
    pub counts: TrackCounts,
}

impl Tracker {
    /// Nothing followed yet; every CPU traced.
    pub fn new(targets: Targets) -> Self {
        Tracker {
            targets,
            traced: None,
            cpus: HashMap::new(),
            comms: AgedMap::new(THREADS),
            cgroups: AgedMap::new(THREADS),
            last_cpu: AgedMap::new(THREADS),
            armed: AgedMap::new(THREADS),
            carried: AgedMap::new(THREADS),
            pending: AgedMap::new(THREADS),
            switched: HashMap::new(),
            reports: HashMap::new(),
            incoming: BinaryHeap::new(),
            ready: Vec::new(),
            samples: Vec::new(),
            undecomposed: Vec::new(),
            counts: TrackCounts::default(),
        }
    }

    /// Only `cpus` are traced: wakeups done elsewhere cannot be explained.
    pub fn tracing_only(mut self, cpus: CpuList) -> Self {
        self.traced = Some(cpus);
        self
    }

    fn traces(&self, cpu: u32) -> bool {
        self.traced.as_ref().is_none_or(|cpus| cpus.contains(cpu))
    }

    fn timer_mode(&self) -> bool {
        matches!(self.targets, Targets::Timers(_))
    }

    /// Takes the next checkpoint.
    pub fn add(&mut self, e: &Event) {
        self.counts.events += 1;
        self.release_reports(e.time_ns);
        if !self.traces(e.cpu) {
            // only wakeups and armed timers come from untraced CPUs
            if let EventData::Wakeup {
                woken_pid, watched, ..
            } = e.what
                && self.is_target(woken_pid, watched)
            {
                self.counts.untraced_wakeups += 1;
                self.pending.remove(&woken_pid);
            }
            return;
        }
        let state = self.cpus.entry(e.cpu).or_default();
        let closed = state.timeline.add(e);
        match e.what {
            EventData::SoftirqRaise { vector } => {
                let hardirq = state.timeline.stack().iter().rev().find_map(|c| match *c {
                    Context::Hardirq { source, id, since } => {
                        Some((Origin::Irq { source, id }, since))
                    }
                    _ => None,
                });
                if let Some(slot) = state.raised.get_mut(vector as usize) {
                    slot.get_or_insert(Raise {
                        time_ns: e.time_ns,
                        hardirq,
                    });
                }
            }
            EventData::SoftirqEntry { vector } => {
                let raise = state.raised.get_mut(vector as usize).and_then(Option::take);
                let raise = raise.unwrap_or(Raise {
                    time_ns: e.time_ns,
                    hardirq: None,
                });
                state.serving = Some((vector, raise));
            }
            EventData::SoftirqExit { .. } => state.serving = None,
            EventData::TimerStart {
                hrtimer,
                expires_ns,
            } => {
                let armed = Armed {
                    tid: e.pid,
                    expires_ns,
                };
                self.armed.insert(hrtimer, armed);
            }
            EventData::TimerExpireExit { .. } => {
                if let Some(Context::Timer { hrtimer, since, .. }) = closed {
                    self.handler_ended(hrtimer, since, e.time_ns);
                }
            }
            EventData::Wakeup {
                woken_pid,
                woken_comm,
                woken_cgroup,
                watched,
                ..
            } => {
                self.learn_cgroup(woken_pid, woken_cgroup);
                self.wakeup(e, woken_pid, woken_comm, watched)
            }
            EventData::Switch {
                next_pid,
                next_comm,
                next_cgroup,
                ..
            } => {
                self.learn_cgroup(next_pid, next_cgroup);
                self.comms.insert(next_pid, next_comm);
                self.switch_in(next_pid, e.cpu, e.time_ns);
            }
            _ => {}
        }
        self.cut_ready(false);
    }

    /// Timer mode: one activation as its thread reported it.
    pub fn add_report(&mut self, report: Report) {
        self.incoming.push(Reverse((report.user_ns, report)));
        // checkpoints that stopped coming (all lost) must not keep every report
        while self.incoming.len() > WAITING {
            if let Some(Reverse((_, earliest))) = self.incoming.pop() {
                self.release(earliest);
            }
        }
    }

    /// Pairs the reports made before `now_ns`.
    fn release_reports(&mut self, now_ns: u64) {
        while let Some(Reverse((at, report))) = self.incoming.peek().copied() {
            if at > now_ns {
                break;
            }
            self.incoming.pop();
            self.release(report);
        }
    }

    fn release(&mut self, report: Report) {
        let reports = self.reports.entry(report.tid).or_default();
        if reports.len() == UNPAIRED
            && let Some(oldest) = reports.pop_front()
        {
            self.counts.undecomposed += 1;
            self.undecomposed.push(oldest);
        }
        reports.push_back(report);
        self.pair(report.tid);
    }

    /// Samples completed so far; the caller takes them.
    pub fn take_samples(&mut self) -> Vec<Sample> {
        std::mem::take(&mut self.samples)
    }

    /// Timer mode: reports no traced wakeup matched.
    pub fn take_undecomposed(&mut self) -> Vec<Report> {
        std::mem::take(&mut self.undecomposed)
    }

    /// The run is over: cuts what waits, and counts what never completed.
    pub fn finish(&mut self) {
        self.release_reports(u64::MAX);
        self.cut_ready(true);
        for (_, reports) in self.reports.drain() {
            self.counts.undecomposed += reports.len() as u64;
            self.undecomposed.extend(reports);
        }
        let unreported: usize = self.switched.drain().map(|(_, w)| w.len()).sum();
        self.counts.unreported += unreported as u64;
        self.counts.forgotten_wakeups = self.pending.evicted();
    }

    fn learn_cgroup(&mut self, pid: u32, cgroup: CgroupId) {
        if cgroup.is_known() {
            self.cgroups.insert(pid, cgroup);
        }
    }

    fn cgroup(&self, pid: u32) -> CgroupId {
        self.cgroups.get(&pid).copied().unwrap_or_default()
    }

    fn comm(&self, pid: u32) -> Comm {
        self.comms.get(&pid).copied().unwrap_or_default()
    }

    /// `pid` as causes and chains name it.
    fn thread(&self, pid: u32) -> NamedThread {
        NamedThread::new(self.comm(pid), self.cgroup(pid))
    }

    /// IRQ threads, ksoftirqd and kworkers: their wakeups carry a chain on.
    fn runs_bottom_halves(&self, pid: u32) -> bool {
        let comm = self.comm(pid);
        ["irq/", "ksoftirqd/", "kworker/"]
            .iter()
            .any(|prefix| comm.starts_with(prefix))
    }

    fn is_target(&self, tid: u32, watched: bool) -> bool {
        match &self.targets {
            Targets::Timers(tids) => tids.contains(&tid),
            Targets::Watched => watched,
        }
    }

    /// `e` (its waker's context) woke `woken`.
    fn wakeup(&mut self, e: &Event, woken: u32, comm: Comm, watched: bool) {
        self.comms.insert(woken, comm);
        let target = self.is_target(woken, watched);
        if !target && !self.runs_bottom_halves(woken) {
            return;
        }
        let Some(chain) = self.origin(e, woken) else {
            // the kernel only wakes a sleeping task: what was pending was never seen
            // running (a lost switch), and a thread's old chain no longer holds
            if target {
                self.counts.thread_wakeups += 1;
                self.pending.remove(&woken);
            } else {
                self.carried.remove(&woken);
            }
            return;
        };
        if !target {
            self.carried.insert(woken, chain);
            return;
        }
        if let Some(cpu) = self.running_on(woken) {
            self.counts.woken_running += 1;
            let switch_in_ns = chain.wakeup_ns;
            self.woken(Woken {
                chain,
                tid: woken,
                cpu,
                switch_in_ns,
            });
        } else if self.pending.insert(woken, chain).is_some() {
            self.counts.rewoken += 1;
        }
        self.counts.forgotten_wakeups = self.pending.evicted();
    }

    fn running_on(&self, tid: u32) -> Option<u32> {
        let cpu = *self.last_cpu.get(&tid)?;
        (self.cpus.get(&cpu)?.timeline.thread() == tid).then_some(cpu)
    }

    /// The chain behind a wakeup by `e`'s context; None for a plain thread.
    fn origin(&self, e: &Event, woken: u32) -> Option<Chain> {
        let state = self.cpus.get(&e.cpu)?;
        let stack = state.timeline.stack();
        let timer = stack.iter().rev().find_map(|c| match *c {
            Context::Timer { hrtimer, since, .. } => {
                let armed = self.armed.get(&hrtimer).filter(|a| a.tid == woken)?;
                Some(TimerPart {
                    hrtimer,
                    expected_ns: armed.expires_ns,
                    handler_ns: since,
                    handler_end_ns: None,
                })
            }
            _ => None,
        });
        let chain = |origin, origin_ns, interposed| Chain {
            origin,
            origin_ns,
            origin_cpu: e.cpu,
            timer,
            interposed,
            wakeup_ns: e.time_ns,
            waker_cpu: e.cpu,
        };
        let thread = state.timeline.thread();
        for context in stack.iter().rev() {
            match *context {
                Context::Hardirq { source, id, since } => {
                    return Some(chain(Origin::Irq { source, id }, since, Vec::new()));
                }
                Context::Softirq(vector) => {
                    let interposed = if self.runs_bottom_halves(thread) {
                        vec![thread]
                    } else {
                        Vec::new()
                    };
                    let (origin, origin_ns) = match state.serving {
                        Some((serving, raise)) if serving == vector => raise
                            .hardirq
                            .unwrap_or((Origin::Softirq(vector), raise.time_ns)),
                        _ => (Origin::Softirq(vector), e.time_ns),
                    };
                    return Some(chain(origin, origin_ns, interposed));
                }
                Context::Timer { .. } | Context::Nmi | Context::Thread(_) => {}
            }
        }
        if !self.runs_bottom_halves(thread) {
            return None;
        }
        let carried = self
            .carried
            .get(&thread)
            .filter(|c| e.time_ns.saturating_sub(c.wakeup_ns) <= CARRY_NS)?;
        let mut interposed = carried.interposed.clone();
        if interposed.len() < INTERPOSED {
            interposed.push(thread);
        }
        Some(Chain {
            timer,
            interposed,
            wakeup_ns: e.time_ns,
            waker_cpu: e.cpu,
            ..carried.clone()
        })
    }

    fn switch_in(&mut self, tid: u32, cpu: u32, time_ns: u64) {
        self.last_cpu.insert(tid, cpu);
        if let Some(chain) = self.pending.remove(&tid) {
            self.woken(Woken {
                chain,
                tid,
                cpu,
                switch_in_ns: time_ns,
            });
        }
    }

    fn woken(&mut self, woken: Woken) {
        if !self.timer_mode() {
            let sample = self.cut(&woken, None);
            self.samples.push(sample);
            return;
        }
        if woken.chain.timer.is_none() {
            // not its timer (a signal, say): the thread reports no activation for it
            self.counts.unreported += 1;
            return;
        }
        let tid = woken.tid;
        let switched = self.switched.entry(tid).or_default();
        if switched.len() == UNPAIRED {
            switched.pop_front();
            self.counts.unreported += 1;
        }
        switched.push_back(woken);
        self.pair(tid);
    }

    /// Timer mode: matches switched-in wakeups and reports by the expiry they were for.
    fn pair(&mut self, tid: u32) {
        let (Some(wakeups), Some(reports)) =
            (self.switched.get_mut(&tid), self.reports.get_mut(&tid))
        else {
            return;
        };
        while let (Some(woken), Some(report)) = (wakeups.front(), reports.front()) {
            let expected = woken.chain.timer.map_or(0, |t| t.expected_ns);
            match expected.cmp(&report.expected_ns) {
                std::cmp::Ordering::Equal => {
                    let (woken, report) = (wakeups.pop_front(), reports.pop_front());
                    if let (Some(woken), Some(report)) = (woken, report) {
                        self.ready.push((woken, report.user_ns));
                    }
                }
                std::cmp::Ordering::Less => {
                    wakeups.pop_front();
                    self.counts.unreported += 1;
                }
                std::cmp::Ordering::Greater => {
                    if let Some(report) = reports.pop_front() {
                        self.counts.undecomposed += 1;
                        self.undecomposed.push(report);
                    }
                }
            }
        }
    }

    /// Cuts the paired samples whose CPU's checkpoints have passed their end (all of
    /// them at the end of the run).
    fn cut_ready(&mut self, all: bool) {
        if self.ready.is_empty() {
            return;
        }
        // a CPU whose checkpoints stopped coming must not keep every sample waiting
        let all = all || self.ready.len() > WAITING;
        // borrowed out for `cut`, which does not read it; its buffer is kept
        let mut ready = std::mem::take(&mut self.ready);
        ready.retain(|(woken, user_ns)| {
            let due = all
                || self
                    .cpus
                    .get(&woken.cpu)
                    .is_some_and(|s| s.timeline.last_ns() >= *user_ns);
            if due {
                let sample = self.cut(woken, Some(*user_ns));
                self.samples.push(sample);
            }
            !due
        });
        self.ready = ready;
    }

    fn handler_ended(&mut self, hrtimer: u64, since: u64, end_ns: u64) {
        let Some(armed) = self.armed.get(&hrtimer).copied() else {
            return;
        };
        // the latest wakeup of its thread: switched in, or not yet
        let switched = self
            .switched
            .get_mut(&armed.tid)
            .and_then(|w| w.back_mut())
            .into_iter();
        let ready = self.ready.iter_mut().map(|(w, _)| w);
        let chains = switched
            .chain(ready)
            .map(|w| &mut w.chain)
            .chain(self.pending.get_mut(&armed.tid));
        for chain in chains {
            if let Some(timer) = chain
                .timer
                .as_mut()
                .filter(|t| t.hrtimer == hrtimer && t.handler_ns == since)
            {
                timer.handler_end_ns = Some(end_ns);
            }
        }
    }

    /// Makes the sample: the waker's CPU until the wakeup, the task's CPU after.
    fn cut(&mut self, woken: &Woken, user_ns: Option<u64>) -> Sample {
        let chain = &woken.chain;
        let start = chain.timer.map_or(chain.origin_ns, |t| t.expected_ns);
        let end = user_ns.unwrap_or(woken.switch_in_ns);
        let wakeup = chain.wakeup_ns.clamp(start, end.max(start));
        let (before, traced_before) = self.slices(chain.waker_cpu, start, wakeup);
        let (after, traced_after) = self.slices(woken.cpu, wakeup, end);
        // running when the interrupt came, or when the task was woken
        let at_origin = before
            .iter()
            .find(|s| s.start <= chain.origin_ns && chain.origin_ns < s.end)
            .filter(|_| chain.waker_cpu == chain.origin_cpu)
            .map(|s| s.thread);
        let blocking = [at_origin, after.first().map(|s| s.thread)];
        let mut causes: HashMap<Cause, u64> = HashMap::new();
        for (slice, cpu) in before
            .iter()
            .map(|s| (s, chain.waker_cpu))
            .chain(after.iter().map(|s| (s, woken.cpu)))
        {
            let cause = self.cause(slice, cpu, woken, blocking);
            *causes.entry(cause).or_default() += slice.end.saturating_sub(slice.start);
        }
        let total = end.saturating_sub(start);
        let accounted: u64 = causes.values().sum();
        if accounted < total {
            *causes.entry(Cause::Untraced).or_default() += total - accounted;
        }
        if !(traced_before && traced_after) {
            self.counts.incomplete += 1;
        }
        let mut causes: Vec<(Cause, u64)> = causes.into_iter().filter(|&(_, ns)| ns > 0).collect();
        causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let switches = self.cpus.get(&woken.cpu).map_or(0, |s| {
            s.timeline
                .switches_between(chain.origin_ns, woken.switch_in_ns)
        });
        Sample {
            tid: woken.tid,
            comm: self.comm(woken.tid),
            cgroup: self.cgroup(woken.tid),
            cpu: woken.cpu,
            waker_cpu: chain.waker_cpu,
            origin: chain.origin,
            origin_ns: chain.origin_ns,
            timer: chain.timer,
            wakeup_ns: chain.wakeup_ns,
            switch_in_ns: woken.switch_in_ns,
            user_ns,
            interposed: chain
                .interposed
                .iter()
                .map(|&pid| self.thread(pid))
                .collect(),
            switches,
            causes,
        }
    }

    fn slices(&self, cpu: u32, from: u64, to: u64) -> (Vec<Slice>, bool) {
        match self.cpus.get(&cpu) {
            Some(state) if to > from => state.timeline.slices(from, to),
            Some(_) => (Vec::new(), true),
            None => (Vec::new(), false),
        }
    }

    /// What one slice of a sample's window was spent on.
    fn cause(&self, slice: &Slice, cpu: u32, woken: &Woken, blocking: [Option<u32>; 2]) -> Cause {
        let chain = &woken.chain;
        let handler = chain.timer.map(|t| (t.hrtimer, t.handler_ns));
        match slice.context {
            Context::Hardirq { source, id, since } => {
                if cpu == chain.origin_cpu
                    && since == chain.origin_ns
                    && chain.origin == (Origin::Irq { source, id })
                {
                    Cause::Origin { source, id }
                } else {
                    Cause::Irq { source, id }
                }
            }
            Context::Timer {
                hrtimer,
                function,
                since,
            } => {
                if handler == Some((hrtimer, since)) {
                    Cause::Handler(function)
                } else {
                    Cause::Timer(function)
                }
            }
            Context::Softirq(vector) => Cause::Softirq(vector),
            Context::Nmi => Cause::Nmi,
            // before the timer interrupt came
            Context::Thread(0) if slice.end <= chain.origin_ns => Cause::IdleExit,
            Context::Thread(_) if slice.end <= chain.origin_ns => Cause::IrqDelay,
            Context::Thread(pid) if pid == woken.tid => {
                if slice.start >= woken.switch_in_ns {
                    Cause::Return
                } else {
                    Cause::Scheduler
                }
            }
            Context::Thread(pid) if chain.interposed.contains(&pid) => {
                Cause::Interposed(self.thread(pid))
            }
            Context::Thread(0) => Cause::Scheduler,
            Context::Thread(pid) if blocking.contains(&Some(pid)) => {
                Cause::Blocking(self.thread(pid))
            }
            Context::Thread(pid) => Cause::Thread(self.thread(pid)),
        }
    }
}

#[cfg(test)]
impl Tracker {
    /// What could grow with a run: wakeups pending, reports the checkpoints have not
    /// reached, the longest queue of reports waiting for their wakeup.
    pub(super) fn held(&self) -> (usize, usize, usize) {
        let longest = self.reports.values().map(VecDeque::len).max();
        (
            self.pending.len(),
            self.incoming.len(),
            longest.unwrap_or(0),
        )
    }
}
