//! Turns the probe's checkpoints into samples: each invocation is matched to its request.
//!
//! - A softirq keeps the time of its first raise until it runs: raising a pending
//!   softirq again (TASKLET and SCHED often are) requests nothing new.
//! - Tasklets run in the order they were queued, and queueing one raises TASKLET (or HI),
//!   so the n-th tasklet a TASKLET softirq runs matches the n-th raise before it began.
//! - A work item is matched by its pointer, on whatever CPU it runs.
//! - An IRQ thread is matched from its wakeup to its switch-in.
//!
//! Events of one CPU arrive in order; events of different CPUs only roughly so, which
//! only the work items care about, and a work item is queued before it can run.

use std::collections::{HashMap, VecDeque};

use super::{Delay, DelayCause, Mechanism, Sample, Source, Woke};
use crate::bounded::AgedMap;
use irqlens_model::bh::MatchCounts;
use irqlens_model::event::{Event, EventData};
use irqlens_model::kernel::{Comm, WAKEUP_DELIVERY_IPI_SOURCES};
use irqlens_model::units::CpuList;
use irqlens_model::workload::NamedThread;

/// Softirq vectors (include/linux/interrupt.h) the matcher tracks.
const VECTORS: usize = 10;
const HI_SOFTIRQ: u16 = 0;
const TASKLET_SOFTIRQ: u16 = 6;
/// Window events kept per CPU; a longer window is marked incomplete.
const HISTORY: usize = 4096;
/// Queued tasklet raises kept per CPU and vector.
const TASKLET_QUEUE: usize = 4096;
/// Hardirqs open at once per CPU (they do not nest; vectors on top of a line at most):
/// entries past it are exits that were lost.
const OPEN_IRQS: usize = 8;
// Bounds on per-thread and per-work-item state (`AgedMap`s), for long runs: an entry not
// touched while half the bound of newer ones came is forgotten, and counted where a
// sample is lost with it.
/// Thread names, by pid.
const THREADS: usize = 1 << 16;
/// Work queued and not yet started (cancelled work leaves no trace, and stays until
/// forgotten).
const QUEUED_WORKS: usize = 1 << 16;
/// Work items begun and not yet ended (an end the ring lost would stay).
const RUNNING_WORKS: usize = 4096;
/// Last wakeup and switch-in of kworkers and IRQ threads (kworkers come and go).
const WORKERS: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Request {
    time_ns: u64,
    pid: u32,
    cpu: u32,
    /// A work item activated later than queued (max_active held it back).
    activated_ns: Option<u64>,
}

impl Request {
    fn at(e: &Event) -> Self {
        Request {
            time_ns: e.time_ns,
            pid: e.pid,
            cpu: e.cpu,
            activated_ns: None,
        }
    }
}

/// A bottom half that has begun and not yet ended.
#[derive(Clone, Debug)]
struct Running {
    mechanism: Mechanism,
    source: Source,
    request: Option<Request>,
    entry_ns: u64,
    woke_watched: bool,
    woke: Woke,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Happened {
    Irq { source: u16, id: u32 },
    Nmi,
    Softirq(u16),
    Work(u64),
    Switch { pid: u32, thread: NamedThread },
}

#[derive(Clone, Copy, Debug)]
struct Happening {
    start_ns: u64,
    end_ns: u64,
    what: Happened,
}

#[derive(Default)]
struct CpuState {
    raised: [Option<Request>; VECTORS],
    /// A raise of a vector that the running pass of __do_softirq will still serve (it
    /// cleared the pending mask when the pass began): a request of its own, for the
    /// run after.
    raised_again: [Option<Request>; VECTORS],
    /// When the current pass began and the vector it last ran: vectors run in
    /// increasing order within a pass.
    pass: Option<(u64, u16)>,
    /// Raises of HI and TASKLET, one per queued tasklet.
    tasklet_raises: [VecDeque<Request>; 2],
    softirq: Option<Running>,
    tasklet: Option<Running>,
    /// The work item running on the CPU, and its kworker.
    work: Option<(u64, u32)>,
    irqs: Vec<(u64, u16, u32)>,
    history: VecDeque<Happening>,
    /// Start of the newest event dropped from `history`.
    dropped_until_ns: Option<u64>,
}

impl CpuState {
    fn remember(&mut self, happening: Happening) {
        if self.history.len() == HISTORY {
            let old = self.history.pop_front().expect("history is full");
            self.dropped_until_ns = Some(old.start_ns);
        }
        self.history.push_back(happening);
    }

    /// Hardirq and NMI time inside [from, to] (and softirq time with `softirqs`).
    fn nested_ns(&self, from: u64, to: u64, softirqs: bool) -> u64 {
        self.history
            .iter()
            .rev()
            .take_while(|h| h.end_ns >= from)
            .filter(|h| h.start_ns >= from && h.end_ns <= to)
            .filter(|h| match h.what {
                Happened::Irq { .. } | Happened::Nmi => true,
                Happened::Softirq(_) => softirqs,
                Happened::Work(_) | Happened::Switch { .. } => false,
            })
            .map(|h| h.end_ns - h.start_ns)
            .sum()
    }
}

impl CpuState {
    /// The switch that put the thread running at `time` on the CPU, if still remembered.
    fn running_at(&self, time: u64) -> Option<Happened> {
        self.history
            .iter()
            .rev()
            .filter(|h| h.start_ns <= time)
            .find(|h| matches!(h.what, Happened::Switch { .. }))
            .map(|h| h.what)
    }
}

fn tasklet_queue(vector: u16) -> Option<usize> {
    match vector {
        HI_SOFTIRQ => Some(0),
        TASKLET_SOFTIRQ => Some(1),
        _ => None,
    }
}

fn is_worker(comm: &Comm) -> bool {
    comm.starts_with("kworker/")
}

fn is_irq_thread(comm: &Comm) -> bool {
    comm.starts_with("irq/")
}

/// Matches bottom-half requests to their invocations, checkpoint by checkpoint, and
/// makes samples of them.
pub struct Matcher {
    cpus: HashMap<u32, CpuState>,
    works: AgedMap<u64, Request>,
    running_works: AgedMap<u64, Running>,
    /// Keyed by IRQ threads only (one per threaded IRQ line): bounded by the lines.
    irq_thread_wakeups: HashMap<u32, Request>,
    running_irq_threads: HashMap<u32, (Running, u32)>,
    /// Last wakeup (when, and the waker's CPU) and switch-in of threads that run bottom
    /// halves.
    woken: AgedMap<u32, (u64, u32)>,
    switched_in: AgedMap<u32, u64>,
    comms: AgedMap<u32, Comm>,
    watched: Option<u32>,
    /// CPUs whose hardirqs, softirqs and switches are traced (None: all).
    traced: Option<CpuList>,
    /// What it matched and could not match so far.
    pub counts: MatchCounts,
    samples: Vec<Sample>,
}

impl Matcher {
    /// `watched`: irqlens's stimulus thread, whose wakeups mark the bottom half that
    /// woke it.
    pub fn new(watched: Option<u32>) -> Self {
        Matcher {
            cpus: HashMap::new(),
            works: AgedMap::new(QUEUED_WORKS),
            running_works: AgedMap::new(RUNNING_WORKS),
            irq_thread_wakeups: HashMap::new(),
            running_irq_threads: HashMap::new(),
            woken: AgedMap::new(WORKERS),
            switched_in: AgedMap::new(WORKERS),
            comms: AgedMap::new(THREADS),
            watched,
            traced: None,
            counts: MatchCounts::default(),
            samples: Vec::new(),
        }
    }

    /// Only `cpus` are traced: work run elsewhere has an untraced delay window.
    pub fn tracing_only(mut self, cpus: CpuList) -> Self {
        self.traced = Some(cpus);
        self
    }

    /// Samples completed so far; the caller takes them.
    pub fn take_samples(&mut self) -> Vec<Sample> {
        std::mem::take(&mut self.samples)
    }

    /// Requests still waiting at the end of a run: softirqs raised, work queued.
    pub fn pending(&self) -> (u64, u64) {
        let softirqs = self
            .cpus
            .values()
            .map(|c| c.raised.iter().flatten().count() as u64)
            .sum();
        (softirqs, self.works.len() as u64)
    }

    /// Takes the next checkpoint.
    pub fn add(&mut self, e: &Event) {
        self.counts.events += 1;
        match e.what {
            EventData::IrqEntry {
                source,
                line_or_vector,
            } => {
                let irqs = &mut self.cpu(e.cpu).irqs;
                if irqs.len() == OPEN_IRQS {
                    irqs.remove(0);
                }
                irqs.push((e.time_ns, source, line_or_vector.into()));
            }
            EventData::IrqExit { .. } => {
                let cpu = self.cpu(e.cpu);
                if let Some((start_ns, source, id)) = cpu.irqs.pop() {
                    cpu.remember(Happening {
                        start_ns,
                        end_ns: e.time_ns,
                        what: Happened::Irq { source, id },
                    });
                }
            }
            EventData::Nmi { duration_ns } => self.cpu(e.cpu).remember(Happening {
                start_ns: e.time_ns.saturating_sub(duration_ns),
                end_ns: e.time_ns,
                what: Happened::Nmi,
            }),
            EventData::SoftirqRaise { vector } => self.softirq_raise(e, vector),
            EventData::SoftirqEntry { vector } => self.softirq_entry(e, vector),
            EventData::SoftirqExit { vector } => self.softirq_exit(e, vector),
            EventData::TaskletEntry { func, .. } => self.tasklet_entry(e, func),
            EventData::TaskletExit { .. } => {
                if let Some(running) = self.cpu(e.cpu).tasklet.take() {
                    self.finish(running, e, false);
                }
            }
            EventData::WorkQueue { work, .. } => {
                if self.works.insert(work, Request::at(e)).is_some() {
                    self.counts.cancelled_works += 1;
                }
                self.counts.stale_works = self.works.evicted();
            }
            // Activation is part of queueing (same thread, same CPU) unless max_active
            // held the item back; then a finishing item activates it later. The latency
            // counts from the queueing either way.
            EventData::WorkActivate { work, .. } => {
                if let Some(request) = self.works.get_mut(&work) {
                    if request.pid != e.pid || request.cpu != e.cpu {
                        request.activated_ns = Some(e.time_ns);
                    }
                }
            }
            EventData::WorkStart { work, func } => self.work_start(e, work, func),
            EventData::WorkEnd { work } => self.work_end(e, work),
            EventData::Switch {
                next_pid,
                next_comm,
                next_cgroup,
                ..
            } => self.switch(e, next_pid, NamedThread::new(next_comm, next_cgroup)),
            EventData::Wakeup {
                woken_pid,
                woken_comm,
                woken_cgroup,
                ..
            } => self.wakeup(e, woken_pid, NamedThread::new(woken_comm, woken_cgroup)),
            // hrtimers are wakeup's checkpoints; the bh probe does not load them
            EventData::TimerStart { .. }
            | EventData::TimerExpire { .. }
            | EventData::TimerExpireExit { .. }
            | EventData::SockData { .. } => {}
        }
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuState {
        self.cpus.entry(cpu).or_default()
    }

    fn softirq_raise(&mut self, e: &Event, vector: u16) {
        let request = Request::at(e);
        let cpu = self.cpus.entry(e.cpu).or_default();
        if let Some(queue) = tasklet_queue(vector) {
            let raises = &mut cpu.tasklet_raises[queue];
            if raises.len() == TASKLET_QUEUE {
                raises.pop_front();
            }
            raises.push_back(request);
        }
        let vector = vector as usize;
        let Some(slot) = cpu.raised.get_mut(vector) else {
            return;
        };
        match (slot, cpu.softirq.as_ref(), cpu.pass) {
            (slot @ None, _, _) => *slot = Some(request),
            // raised again during this pass, before its turn, after the pass took it
            (Some(first), Some(running), Some((pass_start, _)))
                if first.time_ns < pass_start
                    && matches!(running.source, Source::Vector(v) if (v as usize) < vector)
                    && cpu.raised_again[vector].is_none() =>
            {
                cpu.raised_again[vector] = Some(request);
            }
            (Some(_), _, _) => self.counts.reraises += 1,
        }
    }

    fn softirq_entry(&mut self, e: &Event, vector: u16) {
        let cpu = self.cpus.entry(e.cpu).or_default();
        // A vector at or below the last one run starts a new pass; a restart whose
        // vectors keep rising goes unnoticed, which only merges more raises.
        cpu.pass = match cpu.pass {
            Some((start, last)) if vector > last => Some((start, vector)),
            _ => Some((e.time_ns, vector)),
        };
        let index = vector as usize;
        let request = cpu.raised.get_mut(index).and_then(Option::take);
        if let Some(again) = cpu.raised_again.get_mut(index).and_then(Option::take) {
            cpu.raised[index] = Some(again);
        }
        if request.is_none() {
            self.counts.unmatched_softirqs += 1;
        }
        cpu.softirq = Some(Running {
            mechanism: Mechanism::Softirq,
            source: Source::Vector(vector),
            request,
            entry_ns: e.time_ns,
            woke_watched: false,
            woke: Woke::default(),
        });
    }

    fn softirq_exit(&mut self, e: &Event, vector: u16) {
        let cpu = self.cpus.entry(e.cpu).or_default();
        let Some(running) = cpu.softirq.take() else {
            return;
        };
        if let Some(queue) = tasklet_queue(vector) {
            // Raises before this run began were served by it, or re-raised by it for
            // tasklets it could not run yet (disabled or running elsewhere).
            cpu.tasklet_raises[queue].retain(|r| r.time_ns > running.entry_ns);
        }
        cpu.remember(Happening {
            start_ns: running.entry_ns,
            end_ns: e.time_ns,
            what: Happened::Softirq(vector),
        });
        self.finish(running, e, false);
    }

    fn tasklet_entry(&mut self, e: &Event, func: u64) {
        let cpu = self.cpus.entry(e.cpu).or_default();
        let Some(softirq) = &cpu.softirq else {
            return;
        };
        let Source::Vector(vector) = softirq.source else {
            return;
        };
        let begun = softirq.entry_ns;
        let request = tasklet_queue(vector).and_then(|queue| {
            let raises = &mut cpu.tasklet_raises[queue];
            raises
                .front()
                .is_some_and(|r| r.time_ns <= begun)
                .then(|| raises.pop_front())
                .flatten()
        });
        if request.is_none() {
            self.counts.unmatched_tasklets += 1;
        }
        cpu.tasklet = Some(Running {
            mechanism: Mechanism::Tasklet,
            source: Source::Function(func),
            request,
            entry_ns: e.time_ns,
            woke_watched: false,
            woke: Woke::default(),
        });
    }

    fn work_start(&mut self, e: &Event, work: u64, func: u64) {
        let cpu = self.cpus.entry(e.cpu).or_default();
        cpu.work = Some((work, e.pid));
        // BH workqueue items (6.9+) run inside TASKLET/HI and raised it when queued:
        // that raise is theirs, not a tasklet's.
        if let Some(softirq) = &cpu.softirq {
            if let Source::Vector(vector) = softirq.source {
                if let Some(queue) = tasklet_queue(vector) {
                    let begun = softirq.entry_ns;
                    let raises = &mut cpu.tasklet_raises[queue];
                    if raises.front().is_some_and(|r| r.time_ns <= begun) {
                        raises.pop_front();
                    }
                }
            }
        }
        let request = self.works.remove(&work);
        if request.is_none() {
            self.counts.unmatched_works += 1;
        }
        self.running_works.insert(
            work,
            Running {
                mechanism: Mechanism::Workqueue,
                source: Source::Function(func),
                request,
                entry_ns: e.time_ns,
                woke_watched: false,
                woke: Woke::default(),
            },
        );
        self.counts.unended_works = self.running_works.evicted();
    }

    fn work_end(&mut self, e: &Event, work: u64) {
        self.cpu(e.cpu).work = None;
        let Some(running) = self.running_works.remove(&work) else {
            return;
        };
        let Source::Function(function) = running.source else {
            return;
        };
        self.cpu(e.cpu).remember(Happening {
            start_ns: running.entry_ns,
            end_ns: e.time_ns,
            what: Happened::Work(function),
        });
        self.finish(running, e, true);
    }

    /// `e`'s thread switches out for `next`.
    fn switch(&mut self, e: &Event, next: u32, thread: NamedThread) {
        let prev = e.pid;
        let comm = thread.comm;
        self.comms.insert(next, comm);
        // no context switch happens in a hardirq: one still open lost its exit, and would
        // otherwise keep every later wakeup on the CPU from its bottom half
        self.cpu(e.cpu).irqs.clear();
        self.cpu(e.cpu).remember(Happening {
            start_ns: e.time_ns,
            end_ns: e.time_ns,
            what: Happened::Switch { pid: next, thread },
        });
        if is_worker(&comm) || is_irq_thread(&comm) {
            self.switched_in.insert(next, e.time_ns);
        }
        self.irq_thread_wakeups.remove(&prev);
        if let Some((running, cpu)) = self.running_irq_threads.remove(&prev) {
            if cpu == e.cpu {
                let mut end = *e;
                end.pid = prev;
                self.finish(running, &end, true);
            }
        }
        if let Some(request) = self.irq_thread_wakeups.remove(&next) {
            let running = Running {
                mechanism: Mechanism::IrqThread,
                source: Source::Thread(comm),
                request: Some(request),
                entry_ns: e.time_ns,
                woke_watched: false,
                woke: Woke::default(),
            };
            self.running_irq_threads.insert(next, (running, e.cpu));
        }
    }

    /// `e` (its waker's context) woke `woken` (`thread`).
    fn wakeup(&mut self, e: &Event, woken: u32, thread: NamedThread) {
        let comm = thread.comm;
        self.comms.insert(woken, comm);
        if is_worker(&comm) {
            self.woken.insert(woken, (e.time_ns, e.cpu));
        }
        if is_irq_thread(&comm) {
            self.woken.insert(woken, (e.time_ns, e.cpu));
            // a wakeup before the thread got to sleep is superseded by this one
            self.irq_thread_wakeups.insert(woken, Request::at(e));
        }
        // the watched thread is irqlens's stimulus: marked, not listed among whom the
        // bottom half worked for
        let watched = self.watched == Some(woken);
        self.credit_waker(e, |running| {
            if watched {
                running.woke_watched = true;
            } else {
                running.woke.add(woken, thread);
            }
        });
    }

    /// Applies `credit` to the bottom halves running on the waker's CPU in the waker's
    /// context (a softirq and the tasklet in it, a work item, an IRQ thread). A hardirq
    /// interrupting them is not the bottom half: its wakeups are not theirs.
    fn credit_waker(&mut self, e: &Event, mut credit: impl FnMut(&mut Running)) {
        let cpu = self.cpus.entry(e.cpu).or_default();
        if !cpu.irqs.is_empty() {
            return;
        }
        if cpu.softirq.is_some() {
            for running in [&mut cpu.softirq, &mut cpu.tasklet].into_iter().flatten() {
                credit(running);
            }
            return;
        }
        let work = cpu.work.filter(|&(_, worker)| worker == e.pid);
        if let Some(running) = work.and_then(|(work, _)| self.running_works.get_mut(&work)) {
            credit(running);
        } else if let Some((running, _)) = self.running_irq_threads.get_mut(&e.pid) {
            credit(running);
        }
    }

    /// Completes a sample at its exit event; `thread` when it ran in a thread, which
    /// softirqs may interrupt too.
    fn finish(&mut self, running: Running, exit: &Event, thread: bool) {
        let Some(request) = running.request else {
            return;
        };
        let executor = exit.pid;
        let mut delay = self.delay(
            exit.cpu,
            request.time_ns,
            running.entry_ns,
            executor,
            &running,
        );
        if let Some(activated) = request.activated_ns {
            delay.window.activated_after_ns = Some(activated.saturating_sub(request.time_ns));
            delay.causes.retain(|c| *c != DelayCause::Undelayed);
            delay.causes.push(DelayCause::HeldBack);
            delay.causes.sort();
        }
        if !delay.window.complete {
            self.counts.incomplete_windows += 1;
        }
        let cpu = self.cpu(exit.cpu);
        let nested = cpu.nested_ns(running.entry_ns, exit.time_ns, thread);
        self.samples.push(Sample {
            mechanism: running.mechanism,
            source: running.source,
            request_cpu: request.cpu,
            cpu: exit.cpu,
            request_ns: request.time_ns,
            latency_ns: running.entry_ns.saturating_sub(request.time_ns),
            runtime_ns: exit
                .time_ns
                .saturating_sub(running.entry_ns)
                .saturating_sub(nested),
            requester: request.pid,
            executor,
            woke_watched: running.woke_watched,
            woke: running.woke,
            delay,
        });
    }

    /// When the IPI that brought a thread-run bottom half's executor its wakeup from
    /// another CPU began on `cpu`: the first reschedule or call-function-single IPI after
    /// the wakeup and before the executor was switched in (or, not seen switched in, the
    /// invocation). It is the handoff itself, not an interruption of it: counted as one,
    /// every sample of a worker woken across CPUs is interrupted, and the quantiles, which
    /// leave those out, have none. A CPU polling in idle takes the wakeup without an IPI;
    /// then the first IPI is another one, unless it comes after the switch-in.
    fn wakeup_ipi(
        &self,
        state: &CpuState,
        cpu: u32,
        from: u64,
        to: u64,
        executor: u32,
        running: &Running,
    ) -> Option<u64> {
        if !matches!(
            running.mechanism,
            Mechanism::Workqueue | Mechanism::IrqThread
        ) {
            return None;
        }
        let &(woken_ns, waker_cpu) = self.woken.get(&executor)?;
        if waker_cpu == cpu || woken_ns < from || woken_ns > to {
            return None;
        }
        let switched_in = self
            .switched_in
            .get(&executor)
            .copied()
            .filter(|&t| t > woken_ns && t <= to)
            .unwrap_or(to);
        state
            .history
            .iter()
            .rev()
            .take_while(|h| h.end_ns >= woken_ns)
            .filter(|h| h.start_ns >= woken_ns && h.start_ns < switched_in)
            .filter(|h| {
                matches!(h.what, Happened::Irq { source, .. }
                    if WAKEUP_DELIVERY_IPI_SOURCES.contains(&source))
            })
            .map(|h| h.start_ns)
            .min()
    }

    /// What ran on `cpu` between the request and the invocation.
    fn delay(&self, cpu: u32, from: u64, to: u64, executor: u32, running: &Running) -> Delay {
        let mut delay = Delay::default();
        let traced = self.traced.as_ref().is_none_or(|cpus| cpus.contains(cpu));
        let Some(state) = self.cpus.get(&cpu).filter(|_| traced) else {
            delay.causes.push(DelayCause::Untraced);
            return delay;
        };
        delay.window.complete = state.dropped_until_ns.is_none_or(|dropped| dropped < from);
        let mut causes = Vec::new();
        let wakeup_ipi = self.wakeup_ipi(state, cpu, from, to, executor, running);
        for h in state.history.iter().rev().take_while(|h| h.end_ns >= from) {
            if let (true, Happened::Irq { source, id }) = (h.start_ns <= from, h.what) {
                // the handler that made the request (or ran when it came): what it ran on
                // after the request is the first wait of a softirq raised in it
                if h.end_ns > from && h.start_ns < to {
                    delay.raised_in_ns += h.end_ns.min(to) - from;
                    causes.push(DelayCause::RaisedIn { source, id });
                }
                continue;
            }
            if h.start_ns <= from || h.start_ns >= to {
                continue;
            }
            match h.what {
                Happened::Irq { source, id } => {
                    if Some(h.start_ns) == wakeup_ipi {
                        delay.window.wakeup_ipi_ns = Some(h.end_ns - h.start_ns);
                    } else {
                        delay.window.irqs += 1;
                    }
                    delay.window.irq_ns += h.end_ns - h.start_ns;
                    causes.push(DelayCause::Irq { source, id });
                }
                Happened::Nmi => {
                    delay.window.irqs += 1;
                    delay.window.irq_ns += h.end_ns - h.start_ns;
                    causes.push(DelayCause::Nmi);
                }
                Happened::Softirq(vector) => {
                    delay.window.softirqs += 1;
                    delay.window.softirq_ns += h.end_ns - h.start_ns;
                    causes.push(DelayCause::SoftirqFirst(vector));
                }
                Happened::Work(function) => {
                    delay.window.works += 1;
                    delay.window.work_ns += h.end_ns - h.start_ns;
                    causes.push(DelayCause::WorkFirst(function));
                }
                Happened::Switch { pid, thread } => {
                    delay.window.switches += 1;
                    if pid != executor && pid != 0 {
                        causes.push(DelayCause::Thread(thread));
                    }
                }
            }
        }
        let in_thread = match running.mechanism {
            Mechanism::Softirq | Mechanism::Tasklet => {
                delay.window.ksoftirqd = self
                    .comms
                    .get(&executor)
                    .is_some_and(|c| c.starts_with("ksoftirqd/"));
                if delay.window.ksoftirqd {
                    causes.push(DelayCause::Ksoftirqd);
                }
                delay.window.ksoftirqd
            }
            Mechanism::Workqueue | Mechanism::IrqThread => {
                let after =
                    |time: Option<&u64>| time.filter(|&&t| t > from && t <= to).map(|t| t - from);
                let woken_ns = self.woken.get(&executor).map(|(time_ns, _)| time_ns);
                delay.window.woken_after_ns = after(woken_ns);
                delay.window.switched_in_after_ns = after(self.switched_in.get(&executor));
                if running.mechanism == Mechanism::Workqueue
                    && delay.window.woken_after_ns.is_some()
                {
                    causes.push(DelayCause::WorkerWakeup);
                }
                true
            }
        };
        // a bottom half run by a thread waits for whatever held its CPU
        if in_thread {
            match state.running_at(from) {
                Some(Happened::Switch { pid: 0, .. }) => causes.push(DelayCause::Idle),
                Some(Happened::Switch { pid, thread }) if pid != executor => {
                    causes.push(DelayCause::Busy(thread))
                }
                _ => {}
            }
        }
        if !delay.window.complete {
            causes.push(DelayCause::Untraced);
        }
        if causes.is_empty() {
            causes.push(DelayCause::Undelayed);
        }
        causes.sort();
        causes.dedup();
        delay.causes = causes;
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bh::WOKE_KEPT;
    use irqlens_model::workload::CgroupId;

    /// A stream builder: events on one CPU at given µs.
    struct Stream(Vec<Event>);

    impl Stream {
        fn new() -> Self {
            Stream(Vec::new())
        }

        fn at(mut self, us: u64, cpu: u32, what: EventData) -> Self {
            self.0.push(Event::new(what, cpu, us * 1_000));
            self
        }

        fn with(mut self, f: impl FnOnce(&mut Event)) -> Self {
            f(self.0.last_mut().expect("an event to change"));
            self
        }

        fn run(self, watched: Option<u32>) -> (Vec<Sample>, MatchCounts) {
            self.run_with(Matcher::new(watched))
        }

        fn run_with(self, mut m: Matcher) -> (Vec<Sample>, MatchCounts) {
            for e in &self.0 {
                m.add(e);
            }
            (m.take_samples(), m.counts)
        }
    }

    use EventData::*;
    const TIMER: u16 = 1;
    const NET_RX: u16 = 3;

    // The checkpoints of the tests, with the fields the matcher reads.

    fn raise(vector: u16) -> EventData {
        SoftirqRaise { vector }
    }

    fn entry(vector: u16) -> EventData {
        SoftirqEntry { vector }
    }

    fn exit(vector: u16) -> EventData {
        SoftirqExit { vector }
    }

    fn irq_entry(source: u16, line_or_vector: u16) -> EventData {
        IrqEntry {
            source,
            line_or_vector,
        }
    }

    fn irq_exit(line_or_vector: u16) -> EventData {
        IrqExit { line_or_vector }
    }

    fn tasklet_entry(func: u64) -> EventData {
        TaskletEntry { tasklet: 0, func }
    }

    fn tasklet_exit() -> EventData {
        TaskletExit {
            tasklet: 0,
            func: 0,
        }
    }

    fn queue(work: u64) -> EventData {
        queue_fn(work, 0)
    }

    fn queue_fn(work: u64, func: u64) -> EventData {
        WorkQueue {
            work,
            func,
            requested_cpu: 0,
        }
    }

    fn activate(work: u64) -> EventData {
        WorkActivate { work, func: 0 }
    }

    fn start(work: u64) -> EventData {
        start_fn(work, 0)
    }

    fn start_fn(work: u64, func: u64) -> EventData {
        WorkStart { work, func }
    }

    fn end(work: u64) -> EventData {
        WorkEnd { work }
    }

    fn switch(next_pid: u32, comm: &str) -> EventData {
        Switch {
            next_pid,
            next_tgid: 0,
            next_comm: Comm::new(comm),
            next_cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        }
    }

    fn wakeup(woken_pid: u32, comm: &str) -> EventData {
        Wakeup {
            woken_pid,
            woken_tgid: 0,
            woken_comm: Comm::new(comm),
            woken_cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
            watched: false,
        }
    }

    #[test]
    fn softirq_latency_from_raise_to_entry() {
        let (samples, counts) = Stream::new()
            .at(100, 0, irq_entry(0, 30))
            .at(101, 0, raise(TIMER))
            .at(103, 0, irq_exit(30))
            .at(104, 0, entry(TIMER))
            .at(110, 0, exit(TIMER))
            .run(None);
        assert_eq!(samples.len(), 1);
        let s = &samples[0];
        assert_eq!(
            (s.mechanism, s.source),
            (Mechanism::Softirq, Source::Vector(TIMER))
        );
        assert_eq!(s.latency_ns, 3_000);
        assert_eq!(s.runtime_ns, 6_000);
        // the raising IRQ is the request, not an intervening one: what it ran on after
        // the raise is its own cause
        assert!(!s.irq_in_window());
        assert_eq!(
            s.delay.causes,
            vec![DelayCause::RaisedIn { source: 0, id: 30 }]
        );
        assert_eq!(s.delay.raised_in_ns, 2_000);
        assert_eq!(counts.unmatched_softirqs, 0);
    }

    #[test]
    fn a_long_wait_in_the_raising_handler_is_its_cause_and_its_time() {
        let (samples, _) = Stream::new()
            .at(100, 0, irq_entry(1, 236))
            .at(101, 0, raise(TIMER))
            .at(161, 0, irq_exit(236))
            .at(164, 0, entry(TIMER))
            .at(166, 0, exit(TIMER))
            // raised outside any handler, run with nothing in between
            .at(200, 0, raise(TIMER))
            .at(202, 0, entry(TIMER))
            .at(203, 0, exit(TIMER))
            .run(None);
        let raised_in = DelayCause::RaisedIn { source: 1, id: 236 };
        assert_eq!(samples[0].latency_ns, 63_000);
        assert_eq!(samples[0].delay.causes, vec![raised_in]);
        assert_eq!(samples[0].delay_by_cause(), vec![(raised_in, 60_000)]);
        let label = raised_in.label(&HashMap::new(), &|_| String::new());
        assert!(
            label.starts_with("raised in hardirq ") && label.ends_with(":236"),
            "{label}"
        );
        assert_eq!(samples[1].delay.causes, vec![DelayCause::Undelayed]);
    }

    #[test]
    fn reraise_keeps_the_first_raise_and_never_goes_negative() {
        let (samples, counts) = Stream::new()
            .at(10, 0, raise(TIMER))
            .at(12, 0, raise(TIMER))
            .at(15, 0, raise(TIMER))
            .at(20, 0, entry(TIMER))
            // raised again while it runs: a new request for the next run
            .at(22, 0, raise(TIMER))
            .at(25, 0, exit(TIMER))
            .at(26, 0, entry(TIMER))
            .at(27, 0, exit(TIMER))
            // an entry nobody requested (the kernel ran a merged re-raise twice)
            .at(40, 0, entry(TIMER))
            .at(41, 0, exit(TIMER))
            .run(None);
        let latencies: Vec<u64> = samples.iter().map(|s| s.latency_ns).collect();
        assert_eq!(latencies, vec![10_000, 4_000]);
        assert_eq!(counts.reraises, 2);
        assert_eq!(counts.unmatched_softirqs, 1);
    }

    #[test]
    fn a_raise_during_the_pass_that_still_serves_the_vector_is_a_new_request() {
        let (samples, counts) = Stream::new()
            .at(0, 0, raise(TIMER))
            .at(1, 0, raise(NET_RX))
            .at(2, 0, entry(TIMER))
            // NET_RX was taken by this pass already: this raise makes it run again
            .at(3, 0, raise(NET_RX))
            .at(4, 0, exit(TIMER))
            .at(5, 0, entry(NET_RX))
            .at(6, 0, exit(NET_RX))
            .at(7, 0, entry(NET_RX))
            .at(8, 0, exit(NET_RX))
            .run(None);
        let net: Vec<u64> = samples
            .iter()
            .filter(|s| s.source == Source::Vector(NET_RX))
            .map(|s| s.latency_ns)
            .collect();
        assert_eq!(net, vec![4_000, 4_000]);
        assert_eq!((counts.reraises, counts.unmatched_softirqs), (0, 0));
    }

    #[test]
    fn a_raise_after_the_pass_began_is_merged() {
        let (samples, counts) = Stream::new()
            .at(0, 0, raise(TIMER))
            .at(2, 0, entry(TIMER))
            // NET_RX was not pending when the pass began: both raises, one run
            .at(3, 0, raise(NET_RX))
            .at(3, 0, raise(NET_RX))
            .at(4, 0, exit(TIMER))
            .at(5, 0, entry(NET_RX))
            .at(6, 0, exit(NET_RX))
            .run(None);
        assert_eq!(samples.len(), 2);
        assert_eq!((counts.reraises, counts.unmatched_softirqs), (1, 0));
    }

    #[test]
    fn bh_work_run_by_the_tasklet_softirq_takes_its_own_raise() {
        let (samples, _) = Stream::new()
            .at(0, 0, raise(TASKLET_SOFTIRQ))
            .at(1, 0, raise(TASKLET_SOFTIRQ))
            .at(5, 0, entry(TASKLET_SOFTIRQ))
            .at(6, 0, start(0xb))
            .at(7, 0, end(0xb))
            .at(8, 0, tasklet_entry(0xa))
            .at(9, 0, tasklet_exit())
            .at(10, 0, exit(TASKLET_SOFTIRQ))
            .run(None);
        let tasklet = samples
            .iter()
            .find(|s| s.mechanism == Mechanism::Tasklet)
            .unwrap();
        assert_eq!(tasklet.latency_ns, 7_000);
    }

    #[test]
    fn work_run_on_an_untraced_cpu_has_an_untraced_window() {
        let (samples, _) = Stream::new()
            .at(0, 0, queue(0x1))
            .at(3, 1, start(0x1))
            .at(4, 1, end(0x1))
            .run_with(Matcher::new(None).tracing_only(CpuList::single(0)));
        assert_eq!(samples[0].delay.causes, vec![DelayCause::Untraced]);
        assert!(!samples[0].delay.window.complete);
    }

    #[test]
    fn nested_irq_lands_in_the_irq_column_and_leaves_the_runtime() {
        let (samples, _) = Stream::new()
            .at(0, 1, raise(NET_RX))
            .at(2, 1, irq_entry(0, 41))
            .at(5, 1, irq_exit(41))
            .at(6, 1, entry(NET_RX))
            // an IRQ interrupting the softirq counts against its run time only
            .at(8, 1, irq_entry(1, 236))
            .at(9, 1, irq_exit(236))
            .at(16, 1, exit(NET_RX))
            .run(None);
        let s = &samples[0];
        assert_eq!(s.latency_ns, 6_000);
        assert!(s.irq_in_window());
        assert_eq!((s.delay.window.irqs, s.delay.window.irq_ns), (1, 3_000));
        assert_eq!(s.delay.causes, vec![DelayCause::Irq { source: 0, id: 41 }]);
        assert_eq!(s.runtime_ns, 10_000 - 1_000);
    }

    #[test]
    fn other_softirqs_first_and_ksoftirqd_are_causes() {
        let (samples, _) = Stream::new()
            .at(0, 0, raise(TIMER))
            .at(0, 0, raise(NET_RX))
            .at(1, 0, entry(TIMER))
            .at(4, 0, exit(TIMER))
            .at(5, 0, switch(15, "ksoftirqd/0"))
            .with(|e| e.pid = 100)
            .at(7, 0, entry(NET_RX))
            .with(|e| e.pid = 15)
            .at(9, 0, exit(NET_RX))
            .with(|e| e.pid = 15)
            .run(None);
        let net = samples
            .iter()
            .find(|s| s.source == Source::Vector(NET_RX))
            .unwrap();
        assert_eq!(net.latency_ns, 7_000);
        assert_eq!(
            (net.delay.window.softirqs, net.delay.window.softirq_ns),
            (1, 3_000)
        );
        assert!(net.delay.window.ksoftirqd);
        assert_eq!(net.delay.window.switches, 1);
        assert_eq!(
            net.delay.causes,
            vec![DelayCause::SoftirqFirst(TIMER), DelayCause::Ksoftirqd]
        );
    }

    #[test]
    fn tasklets_match_their_raises_in_order() {
        const TASKLET: u16 = TASKLET_SOFTIRQ;
        let (samples, counts) = Stream::new()
            .at(0, 0, raise(TASKLET))
            .at(3, 0, raise(TASKLET))
            .at(10, 0, entry(TASKLET))
            .at(11, 0, tasklet_entry(0xa))
            .at(12, 0, tasklet_exit())
            .at(13, 0, tasklet_entry(0xb))
            .at(14, 0, tasklet_exit())
            // raised while running: belongs to the next run
            .at(14, 0, raise(TASKLET))
            .at(15, 0, exit(TASKLET))
            .at(20, 0, entry(TASKLET))
            .at(22, 0, tasklet_entry(0xa))
            .at(23, 0, tasklet_exit())
            .at(24, 0, exit(TASKLET))
            .run(None);
        let tasklets: Vec<(Source, u64)> = samples
            .iter()
            .filter(|s| s.mechanism == Mechanism::Tasklet)
            .map(|s| (s.source, s.latency_ns))
            .collect();
        assert_eq!(
            tasklets,
            vec![
                (Source::Function(0xa), 11_000),
                (Source::Function(0xb), 10_000),
                (Source::Function(0xa), 8_000),
            ]
        );
        assert_eq!(counts.unmatched_tasklets, 0);
    }

    #[test]
    fn work_items_match_by_pointer_across_cpus() {
        let (samples, counts) = Stream::new()
            .at(0, 0, queue_fn(0x1000, 0xf1))
            .with(|e| e.pid = 500)
            .at(1, 0, queue_fn(0x2000, 0xf2))
            .at(2, 1, wakeup(77, "kworker/u8:1"))
            .at(5, 1, switch(77, "kworker/u8:1"))
            // the second item starts first, on the other CPU
            .at(6, 1, start_fn(0x2000, 0xf2))
            .with(|e| e.pid = 77)
            .at(7, 1, end(0x2000))
            .with(|e| e.pid = 77)
            .at(8, 1, start_fn(0x1000, 0xf1))
            .with(|e| e.pid = 77)
            .at(12, 1, end(0x1000))
            .with(|e| e.pid = 77)
            .run(None);
        let works: Vec<(Source, u32, u32, u64)> = samples
            .iter()
            .map(|s| (s.source, s.request_cpu, s.cpu, s.latency_ns))
            .collect();
        assert_eq!(
            works,
            vec![
                (Source::Function(0xf2), 0, 1, 5_000),
                (Source::Function(0xf1), 0, 1, 8_000),
            ]
        );
        let first = &samples[1];
        assert_eq!(first.requester, 500);
        assert_eq!(first.delay.window.woken_after_ns, Some(2_000));
        assert_eq!(first.delay.window.switched_in_after_ns, Some(5_000));
        assert!(first.delay.causes.contains(&DelayCause::WorkerWakeup));
        assert_eq!(first.runtime_ns, 4_000);
        assert_eq!(counts.unmatched_works, 0);
    }

    #[test]
    fn work_run_first_by_the_same_worker_is_a_cause() {
        let by_worker = |e: &mut Event| e.pid = 32;
        let (samples, _) = Stream::new()
            .at(0, 1, queue_fn(0x1, 0xa1))
            .with(by_worker)
            .at(1, 1, queue_fn(0x2, 0xa2))
            .with(by_worker)
            .at(10, 1, start_fn(0x1, 0xa1))
            .with(by_worker)
            .at(900, 1, end(0x1))
            .with(by_worker)
            .at(901, 1, start_fn(0x2, 0xa2))
            .with(by_worker)
            .at(905, 1, end(0x2))
            .with(by_worker)
            .run(None);
        let second = &samples[1];
        assert_eq!(second.latency_ns, 900_000);
        assert_eq!(
            (second.delay.window.works, second.delay.window.work_ns),
            (1, 890_000)
        );
        assert_eq!(second.delay.causes, vec![DelayCause::WorkFirst(0xa1)]);
    }

    #[test]
    fn work_activated_later_was_held_back() {
        let (samples, _) = Stream::new()
            .at(0, 0, queue(0x1))
            .with(|e| e.pid = 9)
            // activated in the same call: not held back
            .at(0, 0, activate(0x1))
            .with(|e| e.pid = 9)
            .at(1, 0, queue(0x2))
            .with(|e| e.pid = 9)
            .at(2, 0, start(0x1))
            .at(3, 0, end(0x1))
            // the finishing worker activates the second one
            .at(3, 0, activate(0x2))
            .with(|e| e.pid = 40)
            .at(4, 0, start(0x2))
            .at(5, 0, end(0x2))
            .run(None);
        assert_eq!(samples[0].delay.window.activated_after_ns, None);
        assert_eq!(samples[1].delay.window.activated_after_ns, Some(2_000));
        assert!(samples[1].delay.causes.contains(&DelayCause::HeldBack));
        assert!(!samples[0].delay.causes.contains(&DelayCause::HeldBack));
    }

    #[test]
    fn a_thread_running_at_the_request_delays_a_worker() {
        let (samples, _) = Stream::new()
            .at(0, 1, switch(500, "il-load/3"))
            .at(10, 0, queue(0x1))
            .at(14, 1, irq_entry(2, 253))
            .at(15, 1, irq_exit(253))
            .at(16, 1, switch(77, "kworker/u8:1"))
            .with(|e| e.pid = 500)
            .at(17, 1, start(0x1))
            .with(|e| e.pid = 77)
            .at(18, 1, end(0x1))
            .with(|e| e.pid = 77)
            .run(None);
        assert_eq!(
            samples[0].delay.causes,
            vec![
                DelayCause::Irq { source: 2, id: 253 },
                DelayCause::Busy(NamedThread::named("il-load/3"))
            ]
        );
    }

    #[test]
    fn the_ipi_that_wakes_a_worker_on_another_cpu_is_no_interruption_but_a_later_one_is() {
        // CPU 1 idles; work 0x1 is queued on CPU 0 at `at` µs, a reschedule IPI lands
        // on CPU 1 if `rescheduled`, the worker is woken from `waker_cpu`, then a
        // call-function-single IPI lands on CPU 1 (after the worker's switch-in if `late`)
        // and the worker runs the work
        fn woken_worker(
            stream: Stream,
            at: u64,
            rescheduled: bool,
            waker_cpu: u32,
            late: bool,
        ) -> Stream {
            let queued = stream
                .at(at, 1, switch(0, "swapper/1"))
                .at(at + 1, 0, queue(0x1));
            let queued = match rescheduled {
                true => queued
                    .at(at + 2, 1, irq_entry(2, 253))
                    .at(at + 3, 1, irq_exit(253)),
                false => queued,
            };
            let woken = queued.at(at + 4, waker_cpu, wakeup(77, "kworker/u8:1"));
            let woken = match late {
                false => woken
                    .at(at + 5, 1, irq_entry(4, 251))
                    .at(at + 6, 1, irq_exit(251))
                    .at(at + 7, 1, switch(77, "kworker/u8:1")),
                true => woken
                    .at(at + 5, 1, switch(77, "kworker/u8:1"))
                    .at(at + 6, 1, irq_entry(4, 251))
                    .at(at + 7, 1, irq_exit(251)),
            };
            let worker = |e: &mut Event| e.pid = 77;
            woken
                .at(at + 8, 1, start(0x1))
                .with(worker)
                .at(at + 9, 1, end(0x1))
                .with(worker)
        }
        let remote = woken_worker(Stream::new(), 0, false, 0, false);
        let rescheduled_first = woken_worker(remote, 20, true, 0, false);
        // woken from its own CPU: an IPI there is an interruption
        let own_cpu = woken_worker(rescheduled_first, 40, false, 1, false);
        // the IPI after the switch-in: not the wakeup's
        let (samples, _) = woken_worker(own_cpu, 60, false, 0, true).run(None);
        let windows: Vec<(u32, Option<u64>, u64)> = samples
            .iter()
            .map(|s| {
                let w = s.delay.window;
                (w.irqs, w.wakeup_ipi_ns, w.irq_ns)
            })
            .collect();
        assert_eq!(
            windows,
            vec![
                (0, Some(1_000), 1_000),
                (1, Some(1_000), 2_000),
                (1, None, 1_000),
                (1, None, 1_000)
            ]
        );
        assert!(!samples[0].irq_in_window());
        assert!(
            samples[0]
                .delay
                .causes
                .contains(&DelayCause::Irq { source: 4, id: 251 })
        );
    }

    #[test]
    fn a_worker_on_an_idle_cpu_waits_for_it_to_wake() {
        let (samples, _) = Stream::new()
            .at(0, 1, switch(0, "swapper/1"))
            .at(10, 0, queue(0x1))
            .at(900, 1, switch(77, "kworker/1:1"))
            .at(901, 1, start(0x1))
            .with(|e| e.pid = 77)
            .at(902, 1, end(0x1))
            .with(|e| e.pid = 77)
            .run(None);
        assert_eq!(samples[0].delay.causes, vec![DelayCause::Idle]);
    }

    #[test]
    fn requeued_and_unrequested_work_is_counted_not_matched() {
        let (samples, counts) = Stream::new()
            .at(0, 0, queue(0x1))
            .at(1, 0, queue(0x1))
            .at(2, 0, start(0x9))
            .at(3, 0, end(0x9))
            .at(4, 0, start(0x1))
            .at(5, 0, end(0x1))
            .run(None);
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].latency_ns, 3_000);
        assert_eq!((counts.cancelled_works, counts.unmatched_works), (1, 1));
    }

    #[test]
    fn the_bottom_half_that_woke_the_watched_thread_is_marked() {
        let (samples, _) = Stream::new()
            .at(0, 0, raise(TIMER))
            .at(1, 0, raise(NET_RX))
            .at(2, 0, entry(TIMER))
            // a hardirq inside TIMER wakes the watched thread: not TIMER's doing
            .at(3, 0, irq_entry(1, 236))
            .at(3, 0, wakeup(42, ""))
            .at(4, 0, irq_exit(236))
            .at(5, 0, exit(TIMER))
            .at(6, 0, entry(NET_RX))
            .at(7, 0, wakeup(42, ""))
            .at(8, 0, exit(NET_RX))
            .run(Some(42));
        let woke: Vec<(Source, bool)> =
            samples.iter().map(|s| (s.source, s.woke_watched)).collect();
        assert_eq!(
            woke,
            vec![
                (Source::Vector(TIMER), false),
                (Source::Vector(NET_RX), true)
            ]
        );
        assert!(
            samples.iter().all(|s| s.woke.count == 0),
            "irqlens's stimulus is marked, not listed among the threads served"
        );
    }

    #[test]
    fn causes_and_woken_threads_carry_their_cgroups() {
        let (pod, neighbour) = (CgroupId(7), CgroupId(9));
        let in_cgroup = |cgroup| {
            move |e: &mut Event| match &mut e.what {
                Switch { next_cgroup, .. } => *next_cgroup = cgroup,
                Wakeup { woken_cgroup, .. } => *woken_cgroup = cgroup,
                _ => unreachable!("only switches and wakeups name a task"),
            }
        };
        let (samples, _) = Stream::new()
            .at(0, 0, raise(NET_RX))
            // two threads of one name, in two cgroups, run before the softirq
            .at(1, 0, switch(300, "worker"))
            .with(in_cgroup(neighbour))
            .at(2, 0, switch(301, "worker"))
            .with(in_cgroup(pod))
            .at(3, 0, entry(NET_RX))
            .at(4, 0, wakeup(301, "worker"))
            .with(in_cgroup(pod))
            // a hardirq's wakeup is not the softirq's
            .at(5, 0, irq_entry(0, 30))
            .at(5, 0, wakeup(302, "other"))
            .at(6, 0, irq_exit(30))
            .at(7, 0, wakeup(300, "worker"))
            .with(in_cgroup(neighbour))
            .at(8, 0, exit(NET_RX))
            .run(None);
        let worker = |cgroup| NamedThread::new(Comm::new("worker"), cgroup);
        let mut causes = samples[0].delay.causes.clone();
        causes.sort();
        assert_eq!(
            causes,
            vec![
                DelayCause::Thread(worker(pod)),
                DelayCause::Thread(worker(neighbour))
            ]
        );
        assert_eq!(
            samples[0].woke.threads,
            vec![(301, worker(pod)), (300, worker(neighbour))]
        );
        assert_eq!(samples[0].woke.count, 2);
    }

    #[test]
    fn a_bottom_half_keeps_its_first_woken_threads_and_counts_them_all() {
        let mut stream = Stream::new()
            .at(0, 0, raise(NET_RX))
            .at(1, 0, entry(NET_RX));
        let woken = WOKE_KEPT as u32 + 3;
        for pid in 0..woken {
            stream = stream.at(2, 0, wakeup(100 + pid, "reader"));
        }
        let (samples, _) = stream.at(3, 0, exit(NET_RX)).run(None);
        let kept: Vec<u32> = samples[0]
            .woke
            .threads
            .iter()
            .map(|&(pid, _)| pid)
            .collect();
        assert_eq!(kept, (100..100 + WOKE_KEPT as u32).collect::<Vec<_>>());
        assert_eq!(samples[0].woke.count, woken);
    }

    #[test]
    fn irq_thread_from_wakeup_to_switch_in() {
        let (samples, _) = Stream::new()
            .at(0, 0, irq_entry(0, 40))
            .at(1, 0, wakeup(300, "irq/40-eth0"))
            .at(2, 0, irq_exit(40))
            .at(9, 0, switch(300, "irq/40-eth0"))
            .with(|e| e.pid = 1)
            .at(15, 0, switch(1, "bash"))
            .with(|e| e.pid = 300)
            .run(None);
        assert_eq!(samples.len(), 1);
        let s = &samples[0];
        assert_eq!(s.mechanism, Mechanism::IrqThread);
        assert_eq!(s.source, Source::Thread(Comm::new("irq/40-eth0")));
        assert_eq!((s.latency_ns, s.runtime_ns), (8_000, 6_000));
        assert_eq!(s.executor, 300);
    }

    #[test]
    fn work_never_started_is_forgotten_and_counted() {
        let mut matcher = Matcher::new(None);
        // a million work items queued and never started (cancelled, or a lost start)
        for i in 0..1_000_000u64 {
            matcher.add(&Event::new(queue(i + 1), 0, i));
            assert!(matcher.works.len() <= QUEUED_WORKS);
        }
        let (_, pending) = matcher.pending();
        assert_eq!(matcher.counts.stale_works + pending, 1_000_000);
        // the latest ones still match
        let (samples, _) = Stream::new()
            .at(2_000, 0, start(1_000_000))
            .at(2_001, 0, end(1_000_000))
            .run_with(matcher);
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].latency_ns, 2_000_000 - 999_999);
    }

    #[test]
    fn work_never_ended_and_irqs_never_left_are_forgotten() {
        let mut matcher = Matcher::new(None);
        for i in 0..1_000_000u64 {
            matcher.add(&Event::new(start(i + 1), 0, i));
            matcher.add(&Event::new(irq_entry(0, 11), 0, i));
        }
        assert!(matcher.running_works.len() <= RUNNING_WORKS);
        assert_eq!(
            matcher.counts.unended_works + matcher.running_works.len() as u64,
            1_000_000
        );
        assert_eq!(matcher.cpus[&0].irqs.len(), OPEN_IRQS);
    }

    #[test]
    fn worker_and_thread_state_stays_bounded() {
        let mut matcher = Matcher::new(None);
        for pid in 0..1_000_000u32 {
            let comm = if pid % 2 == 0 {
                "kworker/0:1"
            } else {
                "irq/9-acpi"
            };
            let woken = Event::new(wakeup(pid, comm), 0, pid.into());
            matcher.add(&woken);
            // the thread before it switches out for it
            matcher.add(&Event {
                pid: pid.saturating_sub(1),
                ..Event::new(switch(pid, comm), 0, pid.into())
            });
            assert!(matcher.comms.len() <= THREADS);
            assert!(matcher.woken.len() <= WORKERS && matcher.switched_in.len() <= WORKERS);
        }
        // IRQ threads leave their maps at their switch-out (here: the next one's switch)
        assert!(matcher.irq_thread_wakeups.len() + matcher.running_irq_threads.len() <= 2);
    }

    #[test]
    fn an_overrun_history_marks_the_window_incomplete() {
        let mut stream = Stream::new().at(0, 0, raise(TIMER));
        for i in 0..HISTORY as u64 + 10 {
            stream = stream
                .at(1 + i, 0, irq_entry(1, 236))
                .at(1 + i, 0, irq_exit(236));
        }
        let (samples, counts) = stream
            .at(10_000, 0, entry(TIMER))
            .at(10_001, 0, exit(TIMER))
            .run(None);
        assert!(!samples[0].delay.window.complete);
        assert!(samples[0].delay.causes.contains(&DelayCause::Untraced));
        assert_eq!(counts.incomplete_windows, 1);
    }
}
