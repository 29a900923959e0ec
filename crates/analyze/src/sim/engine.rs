//! The discrete-event engine: one design, one run.
//!
//! Each CPU runs, from the top: the hardirq at the head of its queue (hardirqs do not
//! nest), an interrupted or running softirq, a context switch in progress, or the thread
//! the scheduler picks. Whatever runs has work left in nanoseconds; an event at the time
//! it would end lets the CPU settle again, and every other event first charges the time
//! since the last one to what was running.
//!
//! Linux's deferral, and where it comes from:
//! - A NAPI device's hardirq only schedules polling and leaves its line masked until a
//!   poll finds the ring empty (net/core/dev.c: napi_schedule, napi_complete_done).
//! - At hardirq exit, unless bottom halves are disabled there, pending softirqs run
//!   (kernel/softirq.c: irq_exit → invoke_softirq → __do_softirq), even while ksoftirqd
//!   is runnable (older kernels skipped them then: ksoftirqd_running(), not modelled).
//! - net_rx_action polls the devices on the CPU's poll list, each for up to its weight,
//!   and stops when netdev_budget packets or netdev_budget_usecs are used, checked after
//!   each poll; what is left re-raises NET_RX (net/core/dev.c: net_rx_action).
//! - __do_softirq restarts while softirqs are pending, within MAX_SOFTIRQ_TIME=2 ms,
//!   while !need_resched() and while --max_restart from MAX_SOFTIRQ_RESTART=10 is not 0
//!   (10 rounds in all); then it wakes ksoftirqd, a SCHED_OTHER nice 0 thread
//!   (kernel/softirq.c).
//! - Threaded NAPI and irq threads are threads with their own policy; each poll runs
//!   under local_bh_disable() and the thread can be preempted only between polls
//!   (net/core/dev.c: napi_threaded_poll).
//!
//! Today's NAPI mechanisms (the design's `+defer`, `+busy-poll`, `+suspend`,
//! `+thread-busy-poll`), each at the method that does it: [`Engine::complete_napi`]
//! (deferred hard IRQs), [`Engine::timer_expires`] (their timer),
//! [`Engine::busy_poll_piece`] and [`Engine::busy_poll_stop`] (busy polling,
//! prefer_busy_poll, IRQ suspension), and [`Engine::thread_busy_spin`] (threaded busy
//! polling, Linux 6.19). A CPU that idles while a NAPI timer is pending leaves no deep
//! idle state: cpuidle's governors (menu, teo) pick the state from the time to the next
//! timer (tick_nohz_get_sleep_length), so an interrupt then pays no `idle_exit`; the
//! timer interrupt never does.
//!
//! Costs: the waker pays the wakeup, the CPU pays a context switch at each change of
//! thread (idle included, as the kernel counts them), and a woken consumer pays the
//! return to user space before it starts on its first packet. A packet costs its source's
//! per-packet cost, or its saturated one in a poll that uses its whole budget
//! ([`Engine::polled_packet_cost`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use irqlens_model::sched::Priority;
use irqlens_model::sim::{Arrival, Design, Dist, SimConfig, TaskKind};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use super::designs::{self, BottomHalf};
use super::samples::{EXACT_SAMPLES, FOLDED_BYTES, Latencies};
use super::scheduler::{self, Candidate, NICE_0_WEIGHT};

/// Packets per poll of a busy poller (include/net/busy_poll.h: BUSY_POLL_BUDGET).
const BUSY_POLL_BUDGET: u32 = 8;

/// How many events the engine handles between two looks at its stop flag.
const STOP_CHECK_EVENTS: u32 = 1 << 16;

/// Simulated time, ns.
pub(super) type Ns = u64;

fn us_to_ns(us: f64) -> Ns {
    (us * 1000.0).round().max(0.0) as Ns
}

/// What simulating one design of a model takes, at most, before it runs.
pub(super) struct Footprint {
    /// Arrivals, releases and slice ends: the engine's work.
    pub events: f64,
    /// Bytes held: queues at their caps, samples, periodic jobs waiting.
    pub bytes: f64,
    /// What to lower if either is too much: the item that adds the most.
    pub heaviest: String,
}

/// The [`Footprint`] of `config` (already checked).
pub(super) fn footprint(config: &SimConfig) -> Footprint {
    let seconds = config.duration_s;
    let us = seconds * 1e6;
    let samples = |count: f64| {
        let kept = count.min(EXACT_SAMPLES as f64) * size_of::<Ns>() as f64;
        kept + if count > EXACT_SAMPLES as f64 {
            FOLDED_BYTES as f64
        } else {
            0.0
        }
    };
    // (events, bytes, what to lower) per item
    let mut items: Vec<(f64, f64, String)> = Vec::new();
    let mut arrivals = Vec::with_capacity(config.sources.len());
    for source in &config.sources {
        let count = match &source.arrival {
            Arrival::Periodic { period_us, .. } => us / period_us + 1.0,
            Arrival::Poisson { rate_per_s } => rate_per_s * seconds,
            Arrival::Bursts { every_us, size, .. } => f64::from(*size) * (us / every_us + 1.0),
            Arrival::Replay { times_us } => times_us.len() as f64,
        };
        arrivals.push(count);
        let queued = f64::from(source.ring.max(1)) * size_of::<Piece>().max(size_of::<Ns>()) as f64;
        items.push((
            count,
            queued,
            format!(
                "duration_s or the arrivals of source '{}' (or its ring)",
                source.name
            ),
        ));
    }
    let mut busy = vec![false; config.cpus as usize];
    for task in &config.tasks {
        busy[task.cpu as usize] = true;
        let lower = |what: &str| format!("duration_s or {what} of task '{}'", task.name);
        items.push(match &task.kind {
            TaskKind::Periodic { period_us, .. } => {
                let releases = us / period_us + 1.0;
                // jobs wait in a queue when the task cannot keep up
                let jobs = releases * size_of::<Ns>() as f64;
                (
                    releases,
                    jobs + 2.0 * samples(releases),
                    lower("the period_us"),
                )
            }
            TaskKind::Consumer {
                source,
                socket_queue,
                ..
            } => {
                let index = config.sources.iter().position(|s| &s.name == source);
                let packets = index.map_or(0.0, |i| arrivals[i]);
                let queued = f64::from(*socket_queue) * size_of::<Ns>() as f64;
                (0.0, queued + samples(packets), lower("the socket_queue"))
            }
            TaskKind::Hog => (0.0, 0.0, lower("the number")),
        });
    }
    // a deferring NAPI's timer polls every T, at worst all the time
    let timers = config
        .designs
        .iter()
        .filter_map(|design| design.defer)
        .map(|defer| us / f64::from(defer.flush_timeout_us))
        .fold(0.0, f64::max);
    let napi_sources = config.sources.iter().filter(|s| s.napi).count() as f64;
    items.push((
        timers * napi_sources,
        0.0,
        "duration_s or raise the designs' defer timeout T".into(),
    ));
    // threads sharing a CPU take turns of a slice
    let slices = us / config.limits.base_slice_us;
    let busy = busy.iter().filter(|&&b| b).count() as f64;
    items.push((
        busy * slices,
        0.0,
        "duration_s or raise limits.base_slice_us".into(),
    ));
    let fixed = (config.cpus as usize * size_of::<Cpu>()
        + (config.tasks.len() + config.cpus as usize * 2) * size_of::<Thread>()
        + config.sources.len() * size_of::<SourceState>()) as f64;
    let events = items.iter().map(|i| i.0).sum();
    let bytes = fixed + items.iter().map(|i| i.1).sum::<f64>();
    let heaviest = items
        .into_iter()
        .max_by(|a, b| {
            (a.0 / MAX_EVENTS + a.1 / MEMORY_BOUND as f64)
                .total_cmp(&(b.0 / MAX_EVENTS + b.1 / MEMORY_BOUND as f64))
        })
        .map_or_else(|| "duration_s".into(), |i| i.2);
    Footprint {
        events,
        bytes,
        heaviest,
    }
}

/// The most one design's simulation may hold, bytes (designs run one after the other).
pub const MEMORY_BOUND: u64 = 256 << 20;

/// The most events (arrivals, releases, slices) one design may take: some 300,000 a
/// second go through this engine on a small VM (each arrival is several steps), so about
/// five minutes.
pub const MAX_EVENTS: f64 = 1e8;

/// Random numbers from a seed and a stream: each source's arrivals and the costs have
/// their own stream, so every design sees the same arrivals.
struct Random(ChaCha8Rng);

impl Random {
    fn new(seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Random(rng)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    fn sample(&mut self, dist: &Dist) -> Ns {
        let us = match dist {
            Dist::Constant { us } => *us,
            Dist::Uniform { min_us, max_us } => min_us + (max_us - min_us) * self.unit(),
            Dist::Exponential { mean_us } => self.exponential(*mean_us),
            Dist::Quantiles { points } => {
                let u = self.unit();
                let at = points
                    .partition_point(|p| p[0] <= u)
                    .clamp(1, points.len() - 1);
                let ([q0, v0], [q1, v1]) = (points[at - 1], points[at]);
                v0 + (v1 - v0) * (u - q0) / (q1 - q0)
            }
        };
        us_to_ns(us)
    }
}

/// A source's arrival times, one after the other.
struct Arrivals {
    arrival: Arrival,
    random: Random,
    count: u64,
    last: f64,
}

impl Arrivals {
    fn next(&mut self) -> Option<Ns> {
        let n = self.count;
        self.count += 1;
        let us = match &self.arrival {
            Arrival::Periodic {
                period_us,
                phase_us,
            } => phase_us + n as f64 * period_us,
            Arrival::Poisson { rate_per_s } => {
                self.last += self.random.exponential(1e6 / rate_per_s);
                self.last
            }
            Arrival::Bursts {
                every_us,
                size,
                gap_us,
            } => {
                let size = u64::from(*size);
                (n / size) as f64 * every_us + (n % size) as f64 * gap_us
            }
            Arrival::Replay { times_us } => *times_us.get(n as usize)?,
        };
        Some(us_to_ns(us))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrival(usize),
    Release(usize),
    /// What runs on the CPU ends, unless the CPU settled again since (generation).
    Done(usize, u64),
    /// Another CPU made a thread of this one runnable: settle.
    Kick(usize),
    /// A source's NAPI timer expires, unless it was armed again since (generation).
    Timer(usize, u64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Work {
    /// Receive one packet (arrived at the time given) of a source.
    Packet(usize, Ns),
    /// Wake a thread.
    Wake(usize),
    /// Wake an urgent target under direct interrupt scheduling (its switch is shorter).
    WakeDirect(usize),
    /// Wake ksoftirqd and leave the softirq.
    WakeKsoftirqd,
    /// A hardirq handler (for a non-NAPI source, with the event it hands over).
    Handler(usize, Option<Ns>),
    /// A woken consumer's return to user space.
    ReturnToUser,
    /// A consumer's user-space work on one packet.
    Consume,
    /// A periodic job.
    Job,
    /// A hog's endless work.
    Spin,
    /// A busy poller's poll of one packet of a source (arrived at the time given), in
    /// process context.
    BusyPoll(usize, Ns),
    /// A busy poller spinning on an empty ring: ends at its time or when kicked.
    BusySpin,
    /// A NAPI timer's interrupt (napi_watchdog) for a source.
    Watchdog(usize),
    /// napi_schedule from process context (napi_resume_irqs): no interrupt, the
    /// softirq runs at local_bh_enable as at an interrupt's exit.
    Schedule(usize),
}

#[derive(Clone, Copy, Debug)]
struct Piece {
    left: Ns,
    work: Work,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    Periodic,
    Consumer(usize),
    Hog,
    Ksoftirqd,
    BottomHalf(usize),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Sleeping,
    /// A wakeup is under way (its cost being paid).
    Waking,
    Runnable,
}

struct Thread {
    role: Role,
    task: Option<usize>,
    cpu: usize,
    priority: Priority,
    weight: f64,
    state: State,
    vruntime: f64,
    queued_at: u64,
    piece: Option<Piece>,
    /// Packets it may still take in the poll it is in; `Some`: bottom halves disabled,
    /// not preemptible by threads.
    poll: Option<u32>,
    /// Its poll size.
    batch: u32,
    // Consumer:
    socket: VecDeque<Ns>,
    socket_cap: usize,
    /// It replies to each packet: its work on one holds bottom halves disabled.
    replies: bool,
    return_pending: bool,
    migrated_handler: bool,
    direct_switch: bool,
    cost: Dist,
    // Periodic:
    period: Ns,
    jobs: VecDeque<Ns>,
    started: bool,
    // Busy polling:
    /// In a busy-poll loop since then (a threaded busy poller: since it started).
    busy_since: Option<Ns>,
    /// Packets left in the busy poller's current poll.
    busy_batch: u32,
    /// A NAPI thread that busy polls (`+thread-busy-poll`).
    thread_busy_poll: bool,
}

struct SourceState {
    cpu: usize,
    napi: bool,
    hardirq: Dist,
    /// A NAPI timer's interrupt with the poll it schedules.
    timer_poll: Dist,
    per_packet: Dist,
    /// Per packet in a saturated poll (a flood).
    per_packet_saturated: Dist,
    /// Per packet that the consumer's full socket drops; none: as any other.
    per_packet_dropped: Option<Dist>,
    ring: VecDeque<Ns>,
    ring_cap: usize,
    /// Not NAPI: events whose handler has not ended (the ring caps them too).
    handlers_waiting: usize,
    masked: bool,
    consumer: Option<usize>,
    /// Its bottom-half thread; none: its bottom half is the NET_RX softirq.
    thread: Option<usize>,
    offered: u64,
    dropped_ring: u64,
    dropped_socket: u64,
    /// NAPI_STATE_SCHED by a hardirq, a timer or a resume: on a poll list, or its
    /// thread's to poll, until a poll completes.
    scheduled: bool,
    /// NAPI_STATE_SCHED held by its consumer's busy-poll loop (NAPI_STATE_IN_BUSY_POLL).
    busy_polled: bool,
    /// napi_struct's defer_hard_irqs_count.
    defer_count: u32,
    /// The generation of its timer (arming again or cancelling moves it).
    timer: u64,
    timer_pending: bool,
    /// Where its timer fires: the CPU that started it (HRTIMER_MODE_REL_PINNED), the
    /// polling one, which a busy poller's is.
    timer_cpu: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Running {
    Idle,
    Hardirq,
    Softirq,
    Switch,
    Thread(usize),
}

struct Softirq {
    start: Ns,
    restarts_left: u32,
    round_start: Ns,
    budget_left: i64,
    weight_left: u32,
    piece: Option<Piece>,
}

struct Cpu {
    hardirqs: VecDeque<Piece>,
    softirq: Option<Softirq>,
    switching: Option<(Option<usize>, Ns)>,
    current: Option<usize>,
    running: Running,
    since: Ns,
    generation: u64,
    poll_list: VecDeque<usize>,
    /// Softirqs left pending by a hardirq that interrupted a bh-disabled section: they
    /// run at its local_bh_enable().
    softirq_at_bh_enable: bool,
    slice_used: Ns,
    /// A woken SCHED_OTHER thread is ahead of the running one: it preempts it.
    wakeup_preempt: bool,
    min_vruntime: f64,
    /// Direct interrupt scheduling's deferred work, paid at the next switch.
    deferred: Ns,
    ksoftirqd: usize,
    threads: Vec<usize>,
}

/// Time per CPU-split category, ns.
#[derive(Default)]
pub(super) struct Split {
    pub hardirq: Ns,
    pub softirq: Ns,
    pub bh_threads: Ns,
    pub tasks: Ns,
    pub switching: Ns,
    pub idle: Ns,
    /// Busy-poll loops (within tasks and bh_threads).
    pub busy_poll: Ns,
    /// Idle per CPU.
    pub idle_by_cpu: Vec<Ns>,
}

/// What one run gives back, raw.
pub(super) struct Outcome {
    pub interrupts: u64,
    /// NAPI timer interrupts (napi_watchdog).
    pub timer_interrupts: u64,
    /// NAPI schedules (not a busy poller's polls).
    pub napi_schedules: u64,
    pub context_switches: u64,
    pub split: Split,
    /// Per task in the configuration's order.
    pub tasks: Vec<TaskOutcome>,
    /// Per source in the configuration's order: (offered, dropped at ring, at socket).
    pub sources: Vec<(u64, u64, u64)>,
}

/// One task's samples, ns.
#[derive(Default)]
pub(super) struct TaskOutcome {
    pub latencies: Latencies,
    pub responses: Latencies,
    pub delivered: u64,
    pub wakeups: u64,
    /// Its thread's own time.
    pub ran: Ns,
}

pub(super) struct Engine<'a> {
    config: &'a SimConfig,
    end: Ns,
    events: BinaryHeap<Reverse<(Ns, u64, Event)>>,
    sequence: u64,
    cpus: Vec<Cpu>,
    threads: Vec<Thread>,
    sources: Vec<SourceState>,
    arrivals: Vec<Arrivals>,
    costs: Random,
    migrate: bool,
    direct: bool,
    softirq_time: Ns,
    budget_time: Ns,
    base_slice: Ns,
    /// The softirq's budget and weight: every source on the softirq path shares the
    /// design's figures.
    softirq_limits: (u32, u32),
    /// [`Engine::pick`]'s candidates (kept to reuse its allocation).
    runnable: Vec<Candidate>,
    /// `+defer=N:T`: napi_defer_hard_irqs and gro_flush_timeout.
    defer: Option<(u32, Ns)>,
    /// `+busy-poll`: how long a consumer busy polls an empty socket (`Ns::MAX`: always).
    busy_poll: Option<Ns>,
    /// `+suspend=US`: irq-suspend-timeout.
    suspend: Option<Ns>,
    out: Outcome,
}

impl<'a> Engine<'a> {
    /// Sets up `config` (already checked) under `design`.
    pub(super) fn new(config: &'a SimConfig, design: &Design) -> Self {
        let limits = &config.limits;
        let (migrate, direct) = designs::migrates(design);
        let mut engine = Engine {
            config,
            end: us_to_ns(config.duration_s * 1e6),
            events: BinaryHeap::new(),
            sequence: 0,
            cpus: Vec::new(),
            threads: Vec::new(),
            sources: Vec::new(),
            arrivals: Vec::new(),
            costs: Random::new(config.seed, 0),
            migrate,
            direct,
            softirq_time: us_to_ns(limits.softirq_time_us),
            budget_time: us_to_ns(limits.netdev_budget_usecs),
            base_slice: us_to_ns(limits.base_slice_us),
            softirq_limits: (limits.netdev_budget, limits.napi_weight),
            runnable: Vec::new(),
            defer: design
                .defer
                .map(|d| (d.hard_irqs, us_to_ns(f64::from(d.flush_timeout_us)))),
            busy_poll: design
                .busy_poll
                .map(|b| b.usecs().map_or(Ns::MAX, |us| us_to_ns(f64::from(us)))),
            suspend: design.suspend_us.map(|us| us_to_ns(f64::from(us))),
            out: Outcome {
                interrupts: 0,
                timer_interrupts: 0,
                napi_schedules: 0,
                context_switches: 0,
                split: Split {
                    idle_by_cpu: vec![0; config.cpus as usize],
                    ..Split::default()
                },
                tasks: config
                    .tasks
                    .iter()
                    .map(|_| TaskOutcome::default())
                    .collect(),
                sources: Vec::new(),
            },
        };
        for cpu in 0..config.cpus as usize {
            let ksoftirqd =
                engine.add_thread(Role::Ksoftirqd, None, cpu, Priority::Other { nice: 0 });
            engine.cpus.push(Cpu {
                hardirqs: VecDeque::new(),
                softirq: None,
                switching: None,
                current: None,
                running: Running::Idle,
                since: 0,
                generation: 0,
                poll_list: VecDeque::new(),
                softirq_at_bh_enable: false,
                slice_used: 0,
                wakeup_preempt: false,
                min_vruntime: 0.0,
                deferred: 0,
                ksoftirqd,
                threads: Vec::new(),
            });
        }
        for (index, task) in config.tasks.iter().enumerate() {
            let mut add =
                |role| engine.add_thread(role, Some(index), task.cpu as usize, task.priority);
            match &task.kind {
                TaskKind::Periodic {
                    period_us,
                    phase_us,
                    cost,
                } => {
                    let id = add(Role::Periodic);
                    let thread = &mut engine.threads[id];
                    thread.cost = cost.clone();
                    thread.period = us_to_ns(*period_us);
                    engine.push(us_to_ns(*phase_us), Event::Release(id));
                }
                TaskKind::Consumer {
                    source,
                    cost_per_packet,
                    socket_queue,
                    replies,
                } => {
                    let source = config
                        .sources
                        .iter()
                        .position(|s| &s.name == source)
                        .expect("checked");
                    let id = add(Role::Consumer(source));
                    let thread = &mut engine.threads[id];
                    thread.cost = cost_per_packet.clone();
                    thread.socket_cap = *socket_queue as usize;
                    thread.replies = *replies;
                }
                TaskKind::Hog => {
                    let id = add(Role::Hog);
                    engine.threads[id].state = State::Runnable;
                }
            }
        }
        for (index, source) in config.sources.iter().enumerate() {
            let per_packet = source
                .softirq_per_packet
                .clone()
                .unwrap_or_else(|| config.costs.softirq_per_packet.clone());
            let consumer = engine
                .threads
                .iter()
                .position(|t| t.role == Role::Consumer(index));
            let bottom_half = source.napi.then(|| {
                designs::bottom_half(
                    design,
                    limits,
                    consumer.map(|c| engine.threads[c].priority),
                    source.thread_nice,
                )
            });
            let thread = match bottom_half {
                Some(BottomHalf::Thread { priority, batch }) => {
                    let id = engine.add_thread(
                        Role::BottomHalf(index),
                        None,
                        source.cpu as usize,
                        priority,
                    );
                    engine.threads[id].batch = batch;
                    engine.threads[id].thread_busy_poll = design.thread_busy_poll;
                    Some(id)
                }
                Some(BottomHalf::Softirq { budget, weight }) => {
                    engine.softirq_limits = (budget, weight);
                    None
                }
                None => None,
            };
            let hardirq = source
                .hardirq
                .clone()
                .unwrap_or_else(|| config.costs.hardirq.clone());
            engine.sources.push(SourceState {
                cpu: source.cpu as usize,
                napi: source.napi,
                hardirq: hardirq.clone(),
                timer_poll: source.timer_poll.clone().unwrap_or(hardirq),
                per_packet_saturated: source
                    .softirq_per_packet_saturated
                    .clone()
                    .unwrap_or_else(|| per_packet.clone()),
                per_packet_dropped: source.softirq_per_packet_dropped.clone(),
                per_packet,
                ring: VecDeque::new(),
                ring_cap: source.ring as usize,
                handlers_waiting: 0,
                masked: false,
                consumer,
                thread,
                offered: 0,
                dropped_ring: 0,
                dropped_socket: 0,
                scheduled: false,
                busy_polled: false,
                defer_count: 0,
                timer: 0,
                timer_pending: false,
                timer_cpu: source.cpu as usize,
            });
            let mut arrivals = Arrivals {
                arrival: source.arrival.clone(),
                random: Random::new(config.seed, 1 + index as u64),
                count: 0,
                last: 0.0,
            };
            if let Some(first) = arrivals.next() {
                engine.push(first, Event::Arrival(index));
            }
            engine.arrivals.push(arrivals);
        }
        for id in 0..engine.threads.len() {
            let cpu = engine.threads[id].cpu;
            engine.cpus[cpu].threads.push(id);
        }
        for cpu in 0..engine.cpus.len() {
            engine.push(0, Event::Kick(cpu));
        }
        engine
    }

    fn add_thread(
        &mut self,
        role: Role,
        task: Option<usize>,
        cpu: usize,
        priority: Priority,
    ) -> usize {
        self.threads.push(Thread {
            role,
            task,
            cpu,
            priority,
            weight: scheduler::weight(priority),
            state: State::Sleeping,
            vruntime: 0.0,
            queued_at: 0,
            piece: None,
            poll: None,
            batch: self.config.limits.napi_weight,
            socket: VecDeque::new(),
            socket_cap: 0,
            replies: false,
            return_pending: false,
            migrated_handler: false,
            direct_switch: false,
            cost: Dist::constant(0.0),
            period: 0,
            jobs: VecDeque::new(),
            started: false,
            busy_since: None,
            busy_batch: 0,
            thread_busy_poll: false,
        });
        self.threads.len() - 1
    }

    fn push(&mut self, at: Ns, event: Event) {
        self.sequence += 1;
        self.events.push(Reverse((at, self.sequence, event)));
    }

    /// Runs to the end of the simulated time; `None` if `stop` was set first.
    pub(super) fn run(mut self, stop: &AtomicBool) -> Option<Outcome> {
        let mut handled: u32 = 0;
        while let Some(Reverse((now, _, event))) = self.events.pop() {
            if now > self.end {
                break;
            }
            handled = handled.wrapping_add(1);
            // often enough for Ctrl-C to feel immediate, rarely enough to cost nothing
            if handled % STOP_CHECK_EVENTS == 0 && stop.load(Ordering::Relaxed) {
                return None;
            }
            match event {
                Event::Arrival(source) => self.arrive(source, now),
                Event::Release(thread) => self.release(thread, now),
                Event::Done(cpu, generation) => {
                    if self.cpus[cpu].generation == generation {
                        self.charge(cpu, now);
                        self.settle(cpu, now);
                    }
                }
                Event::Kick(cpu) => {
                    self.charge(cpu, now);
                    self.settle(cpu, now);
                }
                Event::Timer(source, generation) => self.timer_expires(source, generation, now),
            }
        }
        for cpu in 0..self.cpus.len() {
            self.charge(cpu, self.end);
        }
        self.out.sources = self
            .sources
            .iter()
            .map(|s| (s.offered, s.dropped_ring, s.dropped_socket))
            .collect();
        Some(self.out)
    }

    fn arrive(&mut self, index: usize, now: Ns) {
        if let Some(next) = self.arrivals[index].next() {
            self.push(next.max(now), Event::Arrival(index));
        }
        let cpu = self.sources[index].cpu;
        self.charge(cpu, now);
        let cost = self.costs.sample(&self.sources[index].hardirq) + self.idle_exit(cpu);
        let source = &mut self.sources[index];
        source.offered += 1;
        if !source.napi {
            // an event per interrupt: past the ring's worth waiting for their handler,
            // events are dropped (so that a flood is memory bounded, as a NAPI ring is)
            if source.handlers_waiting >= source.ring_cap.max(1) {
                source.dropped_ring += 1;
            } else {
                source.handlers_waiting += 1;
                self.cpus[cpu].hardirqs.push_back(Piece {
                    left: cost,
                    work: Work::Handler(index, Some(now)),
                });
            }
        } else if source.ring.len() >= source.ring_cap {
            source.dropped_ring += 1;
        } else {
            source.ring.push_back(now);
            let polled = source.busy_polled || source.thread.is_some();
            if polled {
                self.kick_busy_pollers(index, now);
            }
            let source = &mut self.sources[index];
            if !source.masked {
                source.masked = true;
                self.cpus[cpu].hardirqs.push_back(Piece {
                    left: cost,
                    work: Work::Handler(index, None),
                });
            }
        }
        self.settle(cpu, now);
    }

    /// A periodic thread's next job is released.
    fn release(&mut self, id: usize, now: Ns) {
        self.push(now + self.threads[id].period, Event::Release(id));
        let cpu = self.threads[id].cpu;
        self.charge(cpu, now);
        self.threads[id].jobs.push_back(now);
        if self.threads[id].state == State::Sleeping {
            // The timer's interrupt costs nothing but the exit from the idle state it
            // finds (the release is exact), yet it is an interrupt: pending softirqs run
            // at its exit (kernel/softirq.c: irq_exit). Under a flood that gives NET_RX a
            // round at every release, cut to one by the need_resched() of the task it woke.
            let exit = self.idle_exit(cpu);
            self.cpus[cpu].hardirqs.push_back(Piece {
                left: exit,
                work: Work::Wake(id),
            });
        }
        self.settle(cpu, now);
    }

    /// What an interrupt arriving now pays to leave the CPU's idle state: nothing on a
    /// busy CPU, nor on one idling shallow for a pending NAPI timer (call after `charge`).
    fn idle_exit(&mut self, cpu: usize) -> Ns {
        let timer_pending = self
            .sources
            .iter()
            .any(|s| s.timer_pending && s.timer_cpu == cpu);
        if self.cpus[cpu].running == Running::Idle && !timer_pending {
            self.costs.sample(&self.config.costs.idle_exit)
        } else {
            0
        }
    }

    /// Charges the time since the CPU last settled to what ran.
    fn charge(&mut self, cpu: usize, now: Ns) {
        let state = &mut self.cpus[cpu];
        let ran = now.saturating_sub(state.since);
        state.since = now;
        if ran == 0 {
            return;
        }
        let split = &mut self.out.split;
        match state.running {
            Running::Idle => {
                split.idle += ran;
                split.idle_by_cpu[cpu] += ran;
            }
            Running::Hardirq => {
                split.hardirq += ran;
                if let Some(piece) = state.hardirqs.front_mut() {
                    piece.left = piece.left.saturating_sub(ran);
                }
            }
            Running::Softirq => {
                split.softirq += ran;
                if let Some(piece) = state.softirq.as_mut().and_then(|s| s.piece.as_mut()) {
                    piece.left = piece.left.saturating_sub(ran);
                }
            }
            Running::Switch => {
                split.switching += ran;
                if let Some((_, left)) = state.switching.as_mut() {
                    *left = left.saturating_sub(ran);
                }
            }
            Running::Thread(id) => {
                let thread = &mut self.threads[id];
                match thread.role {
                    Role::Ksoftirqd | Role::BottomHalf(_) => split.bh_threads += ran,
                    _ => split.tasks += ran,
                }
                if let Some(piece) = thread.piece.as_mut() {
                    piece.left = piece.left.saturating_sub(ran);
                }
                if let Some(task) = thread.task {
                    self.out.tasks[task].ran += ran;
                }
                if thread.busy_since.is_some() {
                    split.busy_poll += ran;
                }
                if !scheduler::is_realtime(thread.priority) {
                    thread.vruntime += ran as f64 * NICE_0_WEIGHT / thread.weight;
                    state.slice_used += ran;
                    let floor = state
                        .threads
                        .iter()
                        .map(|&t| &self.threads[t])
                        .filter(|t| {
                            t.state == State::Runnable && !scheduler::is_realtime(t.priority)
                        })
                        .map(|t| t.vruntime)
                        .fold(f64::INFINITY, f64::min);
                    if floor.is_finite() {
                        state.min_vruntime = state.min_vruntime.max(floor);
                    }
                }
            }
        }
    }

    fn run_for(&mut self, cpu: usize, now: Ns, running: Running, left: Ns) {
        let state = &mut self.cpus[cpu];
        state.running = running;
        state.generation += 1;
        let generation = state.generation;
        if running != Running::Idle {
            self.push(now + left, Event::Done(cpu, generation));
        }
    }

    /// The thread the scheduler runs next on the CPU.
    fn pick(&mut self, cpu: usize) -> Option<usize> {
        // Called several times per packet: the candidates' buffer is reused.
        let mut runnable = std::mem::take(&mut self.runnable);
        runnable.clear();
        runnable.extend(
            self.cpus[cpu]
                .threads
                .iter()
                .map(|&id| (id, &self.threads[id]))
                .filter(|(_, t)| t.state == State::Runnable)
                .map(|(id, t)| Candidate {
                    id,
                    priority: t.priority,
                    vruntime: t.vruntime,
                    queued_at: t.queued_at,
                }),
        );
        let state = &self.cpus[cpu];
        let next = scheduler::pick(
            &runnable,
            state.current,
            state.slice_used >= self.base_slice || state.wakeup_preempt,
        );
        self.runnable = runnable;
        next
    }

    /// Whether the scheduler would run another thread than the current one.
    fn need_resched(&mut self, cpu: usize) -> bool {
        self.pick(cpu) != self.cpus[cpu].current
    }

    /// Runs what is due on the CPU until something takes time.
    fn settle(&mut self, cpu: usize, now: Ns) {
        loop {
            if let Some(piece) = self.cpus[cpu].hardirqs.front() {
                if piece.left > 0 {
                    return self.run_for(cpu, now, Running::Hardirq, piece.left);
                }
                let piece = self.cpus[cpu].hardirqs.pop_front().expect("front");
                self.end_hardirq(cpu, now, piece.work);
                if self.cpus[cpu].hardirqs.is_empty() {
                    self.irq_exit(cpu, now);
                }
                continue;
            }
            if let Some(softirq) = &self.cpus[cpu].softirq {
                match softirq.piece {
                    Some(piece) if piece.left > 0 => {
                        return self.run_for(cpu, now, Running::Softirq, piece.left);
                    }
                    _ => {
                        self.advance_softirq(cpu, now);
                        continue;
                    }
                }
            }
            if let Some((to, left)) = self.cpus[cpu].switching {
                if left > 0 {
                    return self.run_for(cpu, now, Running::Switch, left);
                }
                let state = &mut self.cpus[cpu];
                state.switching = None;
                state.current = to;
                state.slice_used = 0;
                continue;
            }
            let current = self.cpus[cpu].current;
            let in_poll = current.is_some_and(|t| self.threads[t].poll.is_some());
            if !in_poll {
                let next = self.pick(cpu);
                if next != current {
                    // a replying consumer is preempted no sooner than its send's
                    // local_bh_enable(), which runs the softirq held back meanwhile
                    if self.cpus[cpu].softirq_at_bh_enable
                        && current.is_some_and(|t| self.threads[t].replies)
                        && self.cpus[cpu].softirq.is_none()
                        && !self.cpus[cpu].poll_list.is_empty()
                    {
                        self.start_softirq(cpu, now);
                        continue;
                    }
                    self.start_switch(cpu, next);
                    continue;
                }
                let state = &mut self.cpus[cpu];
                if state.slice_used >= self.base_slice {
                    state.slice_used = 0;
                }
                state.wakeup_preempt = false;
            }
            let Some(id) = current else {
                return self.run_for(cpu, now, Running::Idle, 0);
            };
            match self.threads[id].piece {
                Some(piece) if piece.left > 0 => {
                    let mut left = piece.left;
                    let others = self.cpus[cpu].threads.iter().any(|&t| {
                        t != id
                            && self.threads[t].state == State::Runnable
                            && !scheduler::is_realtime(self.threads[t].priority)
                    });
                    if others && !in_poll && !scheduler::is_realtime(self.threads[id].priority) {
                        left = left.min(
                            self.base_slice
                                .saturating_sub(self.cpus[cpu].slice_used)
                                .max(1),
                        );
                    }
                    return self.run_for(cpu, now, Running::Thread(id), left);
                }
                Some(piece) => {
                    self.threads[id].piece = None;
                    self.end_piece(id, now, piece.work);
                }
                None => self.next_piece(id, now),
            }
        }
    }

    fn start_switch(&mut self, cpu: usize, to: Option<usize>) {
        self.out.context_switches += 1;
        let cost = self.costs.sample(&self.config.costs.context_switch);
        let left = match to {
            Some(t) if self.threads[t].direct_switch => {
                self.threads[t].direct_switch = false;
                self.defer(cpu, cost)
            }
            _ => cost + std::mem::take(&mut self.cpus[cpu].deferred),
        };
        let state = &mut self.cpus[cpu];
        if let Some(from) = state.current
            && self.threads[from].state == State::Runnable
            && !scheduler::is_realtime(self.threads[from].priority)
        {
            // A preempted SCHED_OTHER thread queues again; a preempted real-time one
            // keeps its place at the head of its priority's list.
            self.sequence += 1;
            self.threads[from].queued_at = self.sequence;
        }
        state.switching = Some((to, left));
        state.wakeup_preempt = false;
    }

    /// Direct interrupt scheduling: the deferrable part of `cost` is left to the CPU's
    /// next switch; what is paid now.
    fn defer(&mut self, cpu: usize, cost: Ns) -> Ns {
        let deferred = (cost as f64 * self.config.costs.dis_deferrable).round() as Ns;
        self.cpus[cpu].deferred += deferred;
        cost - deferred
    }

    /// The thread on the CPU, or the one it is switching to.
    fn on_cpu(&self, cpu: usize) -> Option<usize> {
        match self.cpus[cpu].switching {
            Some((to, _)) => to,
            None => self.cpus[cpu].current,
        }
    }

    fn make_runnable(&mut self, id: usize, now: Ns, direct: bool) {
        let cpu = self.threads[id].cpu;
        self.sequence += 1;
        // A sleeper keeps up to one slice of credit (see the scheduler module).
        let floor = self.cpus[cpu].min_vruntime - self.base_slice as f64;
        let running = self
            .on_cpu(cpu)
            .filter(|&c| c != id && self.threads[c].state == State::Runnable)
            .map(|c| (self.threads[c].priority, self.threads[c].vruntime));
        let thread = &mut self.threads[id];
        thread.state = State::Runnable;
        thread.queued_at = self.sequence;
        thread.vruntime = thread.vruntime.max(floor);
        thread.direct_switch = direct;
        if let Some((priority, vruntime)) = running
            && !scheduler::is_realtime(priority)
            && !scheduler::is_realtime(thread.priority)
            && thread.vruntime < vruntime
        {
            self.cpus[cpu].wakeup_preempt = true;
        }
        if let Some(task) = thread.task {
            self.out.tasks[task].wakeups += 1;
        }
        if matches!(thread.role, Role::Consumer(_)) {
            thread.return_pending = true;
        }
        // A wakeup from another CPU: that CPU settles on its own (no reentry here).
        self.push(now, Event::Kick(cpu));
    }

    /// The work to wake a sleeping thread, or none if it is awake or being woken.
    fn wake(&mut self, id: usize) -> Option<Piece> {
        (self.threads[id].state == State::Sleeping).then(|| {
            self.threads[id].state = State::Waking;
            Piece {
                left: self.costs.sample(&self.config.costs.wakeup),
                work: Work::Wake(id),
            }
        })
    }

    /// Hands a received packet to its consumer's socket; the wakeup it needs, if any.
    fn deliver(&mut self, index: usize, arrived: Ns, now: Ns) -> Option<Piece> {
        let source = &mut self.sources[index];
        let consumer = source.consumer?;
        let thread = &mut self.threads[consumer];
        if thread.socket.len() >= thread.socket_cap {
            source.dropped_socket += 1;
            return None;
        }
        thread.socket.push_back(arrived);
        let busy = thread.busy_since.is_some();
        if busy {
            // the busy poller's loop ends on a socket with data (sk_busy_loop_end)
            self.end_spin(consumer, now);
        }
        self.wake(consumer)
    }

    fn end_hardirq(&mut self, cpu: usize, now: Ns, work: Work) {
        match work {
            Work::Handler(index, event) => {
                self.out.interrupts += 1;
                if let Some(arrived) = event {
                    self.sources[index].handlers_waiting -= 1;
                    if let Some(wake) = self.deliver(index, arrived, now) {
                        self.cpus[cpu].hardirqs.push_front(wake);
                    }
                    return;
                }
                let source = &self.sources[index];
                let waiting = source
                    .consumer
                    .filter(|&c| self.migrate && self.threads[c].state == State::Sleeping);
                if let Some(target) = waiting {
                    // 001 §3: the target is the handler thread now; with DIS (§4), an
                    // urgent target skips the deferrable part of wakeup and switch.
                    let target_cpu = self.threads[target].cpu;
                    let running = self.on_cpu(target_cpu).map(|t| self.threads[t].priority);
                    let direct =
                        self.direct && scheduler::preempts(self.threads[target].priority, running);
                    self.threads[target].migrated_handler = true;
                    let mut wake = self.wake(target).expect("sleeping");
                    if direct {
                        wake.left = self.defer(target_cpu, wake.left);
                        wake.work = Work::WakeDirect(target);
                    }
                    self.cpus[cpu].hardirqs.push_front(wake);
                    return;
                }
                if let Some(wake) = self.schedule_napi(cpu, index) {
                    self.cpus[cpu].hardirqs.push_front(wake);
                }
            }
            Work::Watchdog(index) | Work::Schedule(index) => {
                if matches!(work, Work::Watchdog(_)) {
                    self.out.timer_interrupts += 1;
                }
                if let Some(wake) = self.schedule_napi(cpu, index) {
                    self.cpus[cpu].hardirqs.push_front(wake);
                }
            }
            Work::Wake(id) => self.make_runnable(id, now, false),
            Work::WakeDirect(id) => self.make_runnable(id, now, true),
            _ => unreachable!("hardirqs only handle and wake"),
        }
    }

    /// Hardirq exit: pending softirqs run unless bottom halves are disabled here.
    fn irq_exit(&mut self, cpu: usize, now: Ns) {
        let state = &self.cpus[cpu];
        if state.softirq.is_some() || state.poll_list.is_empty() {
            return;
        }
        let bh_disabled = state.switching.is_none()
            && state.current.is_some_and(|t| {
                let thread = &self.threads[t];
                let replying = thread
                    .piece
                    .is_some_and(|p| p.work == Work::Consume && p.left > 0);
                thread.poll.is_some() || (thread.replies && replying)
            });
        if bh_disabled {
            self.cpus[cpu].softirq_at_bh_enable = true;
        } else {
            self.start_softirq(cpu, now);
        }
    }

    fn start_softirq(&mut self, cpu: usize, now: Ns) {
        let (budget, weight) = self.softirq_limits;
        self.cpus[cpu].softirq_at_bh_enable = false;
        self.cpus[cpu].softirq = Some(Softirq {
            start: now,
            restarts_left: self.config.limits.softirq_restarts,
            round_start: now,
            budget_left: i64::from(budget),
            weight_left: weight,
            piece: None,
        });
    }

    /// The softirq's piece ended (or it just started): what it does next.
    fn advance_softirq(&mut self, cpu: usize, now: Ns) {
        let finished = self.cpus[cpu].softirq.as_mut().and_then(|s| s.piece.take());
        match finished.map(|p| p.work) {
            Some(Work::Packet(index, arrived)) => {
                if let Some(wake) = self.deliver(index, arrived, now) {
                    self.softirq_mut(cpu).piece = Some(wake);
                    return;
                }
            }
            Some(Work::Wake(id)) => self.make_runnable(id, now, false),
            Some(Work::WakeKsoftirqd) => {
                let ksoftirqd = self.cpus[cpu].ksoftirqd;
                self.make_runnable(ksoftirqd, now, false);
                self.cpus[cpu].softirq = None;
                return;
            }
            _ => {}
        }
        let (budget, weight) = self.softirq_limits;
        let (budget_time, softirq_time) = (self.budget_time, self.softirq_time);
        loop {
            let Some(&index) = self.cpus[cpu].poll_list.front() else {
                self.cpus[cpu].softirq = None;
                return;
            };
            let softirq = self.softirq_mut(cpu);
            // what this poll may still take: its weight, within the round's budget
            let allowed = softirq
                .weight_left
                .min(u32::try_from(softirq.budget_left.max(1)).unwrap_or(u32::MAX));
            if softirq.weight_left > 0
                && let Some(arrived) = self.sources[index].ring.pop_front()
            {
                let left = self.polled_packet_cost(index, allowed);
                let softirq = self.softirq_mut(cpu);
                softirq.weight_left -= 1;
                softirq.budget_left -= 1;
                softirq.piece = Some(Piece {
                    left,
                    work: Work::Packet(index, arrived),
                });
                return;
            }
            let work_done = self.softirq_mut(cpu).weight_left < weight;
            self.end_poll(cpu, index, work_done, now);
            if self.cpus[cpu].poll_list.is_empty() {
                self.cpus[cpu].softirq = None;
                return;
            }
            let softirq = self.softirq_mut(cpu);
            softirq.weight_left = weight;
            if softirq.budget_left > 0 && now - softirq.round_start < budget_time {
                continue;
            }
            let need_resched = self.need_resched(cpu);
            let softirq = self.softirq_mut(cpu);
            if now - softirq.start < softirq_time && !need_resched && softirq.restarts_left > 1 {
                softirq.restarts_left -= 1;
                softirq.round_start = now;
                softirq.budget_left = i64::from(budget);
                continue;
            }
            let ksoftirqd = self.cpus[cpu].ksoftirqd;
            match self.wake(ksoftirqd) {
                Some(mut wake) => {
                    wake.work = Work::WakeKsoftirqd;
                    self.softirq_mut(cpu).piece = Some(wake);
                }
                None => self.cpus[cpu].softirq = None,
            }
            return;
        }
    }

    /// The bottom-half cost of a packet just taken off a source's ring by a poll that
    /// may take `allowed` packets more (this one included). The poll is saturated when
    /// the ring held at least that many: it uses its whole budget (net/core/dev.c:
    /// napi_poll's work == weight, which keeps the NAPI on the poll list, and
    /// net_rx_action's budget), as in a flood, and the packet costs the saturated cost.
    /// Packets come in while the poll runs, so a poll can turn saturated midway; the
    /// ones it took before cost the plain cost. So is it while the consumer's socket is
    /// half full or more: the consumer is behind, the state of a flood past the knee
    /// whatever the polls' sizes (the machine's bottom half pays the flood's cost there,
    /// in polls of 30 datagrams as in full ones: docs/sim.md).
    fn polled_packet_cost(&mut self, index: usize, allowed: u32) -> Ns {
        let source = &self.sources[index];
        // the socket's state now stands for the one at the packet's end
        let dropped = source.per_packet_dropped.as_ref().filter(|_| {
            source
                .consumer
                .is_some_and(|c| self.threads[c].socket.len() >= self.threads[c].socket_cap)
        });
        if let Some(dist) = dropped {
            return self.costs.sample(dist);
        }
        let behind = source
            .consumer
            .is_some_and(|c| self.threads[c].socket.len() * 2 >= self.threads[c].socket_cap);
        let saturated = source.ring.len() + 1 >= allowed as usize || behind;
        let dist = match saturated {
            true => &source.per_packet_saturated,
            false => &source.per_packet,
        };
        self.costs.sample(dist)
    }

    fn softirq_mut(&mut self, cpu: usize) -> &mut Softirq {
        self.cpus[cpu].softirq.as_mut().expect("in softirq")
    }

    /// A poll of a device on the CPU's list ended: off the list (and completed) if its
    /// ring is empty, else to the list's tail.
    fn end_poll(&mut self, cpu: usize, index: usize, work_done: bool, now: Ns) {
        let list = &mut self.cpus[cpu].poll_list;
        list.retain(|&i| i != index);
        if self.sources[index].ring.is_empty() {
            self.complete_napi(cpu, index, work_done, now);
        } else {
            list.push_back(index);
        }
    }

    /// napi_schedule (by the device's hardirq, the NAPI's timer or a resume): the NAPI
    /// on the CPU's poll list, or its thread woken (the wakeup to make, if any). Nothing
    /// if it is scheduled already or a busy poller holds it (napi_schedule_prep finds
    /// NAPI_STATE_SCHED: the device's IRQ only sets NAPI_STATE_MISSED, napi_watchdog
    /// does nothing).
    fn schedule_napi(&mut self, cpu: usize, index: usize) -> Option<Piece> {
        let source = &mut self.sources[index];
        if source.scheduled || source.busy_polled {
            return None;
        }
        source.scheduled = true;
        self.out.napi_schedules += 1;
        match source.thread {
            Some(thread) => self.wake(thread),
            None => {
                if !self.cpus[cpu].poll_list.contains(&index) {
                    self.cpus[cpu].poll_list.push_back(index);
                }
                None
            }
        }
    }

    /// A poll found the ring empty: napi_complete_done (net/core/dev.c). Without
    /// deferral the driver enables the device's IRQ again. With `+defer=N:T`, a poll that
    /// did work sets defer_hard_irqs_count to N; while the count is above 0 it is
    /// decremented and napi_complete_done returns false: the IRQ stays masked and the
    /// NAPI's hrtimer is started for gro_flush_timeout T instead (napi_watchdog then
    /// schedules the poll). So the IRQ comes back at the Nth poll in a row that found
    /// nothing.
    /// It runs on `cpu`, the polling CPU, where the timer is pinned.
    fn complete_napi(&mut self, cpu: usize, index: usize, work_done: bool, now: Ns) {
        let source = &mut self.sources[index];
        source.scheduled = false;
        let deferred = match self.defer {
            Some((hard_irqs, timeout)) => {
                if work_done {
                    source.defer_count = hard_irqs;
                }
                let deferred = source.defer_count > 0;
                if deferred {
                    source.defer_count -= 1;
                    self.arm_timer(cpu, index, now + timeout);
                }
                deferred
            }
            None => false,
        };
        if !deferred {
            self.sources[index].masked = false;
        }
        // a busy poller that found the NAPI taken may take it now
        self.kick_busy_pollers(index, now);
    }

    /// Starts (or starts again: hrtimer_start) a source's NAPI timer, pinned to `cpu`.
    fn arm_timer(&mut self, cpu: usize, index: usize, at: Ns) {
        let source = &mut self.sources[index];
        source.timer_cpu = cpu;
        source.timer += 1;
        source.timer_pending = true;
        let generation = source.timer;
        self.push(at, Event::Timer(index, generation));
    }

    /// A NAPI timer expires: the hrtimer interrupt runs napi_watchdog, which schedules
    /// the NAPI as the device's IRQ would (net/core/dev.c: napi_watchdog), from the timer
    /// interrupt: no device hardirq. It costs the source's `timer_poll` if the model sets
    /// one, else its hardirq (an interrupt's entry and exit are most of it), and, the CPU
    /// having idled shallow for it, no idle exit. Suspension's timer is this one.
    fn timer_expires(&mut self, index: usize, generation: u64, now: Ns) {
        let source = &mut self.sources[index];
        if source.timer != generation {
            return;
        }
        source.timer_pending = false;
        let cpu = source.timer_cpu;
        self.charge(cpu, now);
        let left = self.costs.sample(&self.sources[index].timer_poll);
        self.cpus[cpu].hardirqs.push_back(Piece {
            left,
            work: Work::Watchdog(index),
        });
        self.settle(cpu, now);
    }

    /// Ends the spin of a source's busy pollers (its consumer in a busy-poll loop, its
    /// busy-polling NAPI thread): something changed (a packet in the ring or the socket,
    /// the NAPI free).
    fn kick_busy_pollers(&mut self, index: usize, now: Ns) {
        let source = &self.sources[index];
        for id in [source.consumer, source.thread].into_iter().flatten() {
            self.end_spin(id, now);
        }
    }

    /// Ends a thread's spin now, if it spins.
    fn end_spin(&mut self, id: usize, now: Ns) {
        let spinning = self.threads[id]
            .piece
            .is_some_and(|p| p.work == Work::BusySpin);
        if !spinning {
            return;
        }
        let cpu = self.threads[id].cpu;
        self.charge(cpu, now);
        if let Some(piece) = self.threads[id].piece.as_mut() {
            piece.left = 0;
        }
        self.push(now, Event::Kick(cpu));
    }

    /// A thread's piece ended.
    fn end_piece(&mut self, id: usize, now: Ns, work: Work) {
        match work {
            Work::Packet(index, arrived) | Work::BusyPoll(index, arrived) => {
                if let Some(wake) = self.deliver(index, arrived, now) {
                    self.threads[id].piece = Some(wake);
                }
            }
            Work::BusySpin => {}
            Work::Wake(other) => self.make_runnable(other, now, false),
            Work::ReturnToUser => self.threads[id].return_pending = false,
            Work::Consume => {
                let task = self.threads[id].task.expect("a task");
                self.out.tasks[task].delivered += 1;
                // its send's local_bh_enable(): what an interrupt raised meanwhile runs now
                let cpu = self.threads[id].cpu;
                self.run_softirq_at_bh_enable(cpu, now);
            }
            Work::Job => {
                let task = self.threads[id].task.expect("a task");
                let thread = &mut self.threads[id];
                let released = thread.jobs.pop_front().expect("a job");
                thread.started = false;
                self.out.tasks[task].responses.push(now - released);
            }
            Work::Spin => {}
            Work::WakeKsoftirqd
            | Work::WakeDirect(_)
            | Work::Handler(..)
            | Work::Watchdog(_)
            | Work::Schedule(_) => {
                unreachable!("not thread work")
            }
        }
    }

    /// The thread runs and has nothing under way: what it does next (or it sleeps).
    fn next_piece(&mut self, id: usize, now: Ns) {
        let (role, cpu) = (self.threads[id].role, self.threads[id].cpu);
        let piece = match role {
            Role::Hog => Some((Ns::MAX / 4, Work::Spin)),
            Role::Periodic => self.next_job(id, now),
            Role::Consumer(index) => self.next_consumer_piece(id, index, now),
            Role::Ksoftirqd => {
                self.cpus[cpu].softirq_at_bh_enable = false;
                match self.cpus[cpu].poll_list.front() {
                    Some(&index) => self.poll_piece(id, index, true, now),
                    None => None,
                }
            }
            Role::BottomHalf(index) => self
                .poll_piece(id, index, false, now)
                .or_else(|| self.thread_busy_spin(id, now)),
        };
        match piece {
            Some((left, work)) => self.threads[id].piece = Some(Piece { left, work }),
            // A poll just ended (a preemption point) or there is nothing to do.
            None if self.threads[id].poll.is_none()
                && self.threads[id].state == State::Runnable
                && self.thread_idle(id) =>
            {
                self.threads[id].state = State::Sleeping;
            }
            None => {}
        }
    }

    /// Whether a thread has nothing left to do (it sleeps).
    fn thread_idle(&self, id: usize) -> bool {
        let thread = &self.threads[id];
        match thread.role {
            Role::Hog => false,
            Role::Periodic => thread.jobs.is_empty(),
            Role::Consumer(_) => {
                thread.socket.is_empty() && !thread.migrated_handler && !thread.return_pending
            }
            Role::Ksoftirqd => self.cpus[thread.cpu].poll_list.is_empty(),
            Role::BottomHalf(index) => {
                self.sources[index].ring.is_empty() && thread.busy_since.is_none()
            }
        }
    }

    /// Threaded busy polling (`+thread-busy-poll`, Linux 6.19, commit c18d4b190a46;
    /// net/core/dev.c: napi_threaded_poll with NAPI_STATE_THREADED_BUSY_POLL): once
    /// woken, the NAPI thread stays in NAPI_STATE_IN_BUSY_POLL, so napi_complete_done
    /// never enables the IRQ again, and it polls in a loop with cond_resched() between
    /// polls instead of sleeping: it spins on an empty ring, taking its CPU.
    fn thread_busy_spin(&mut self, id: usize, now: Ns) -> Option<(Ns, Work)> {
        let thread = &mut self.threads[id];
        if !thread.thread_busy_poll || thread.poll.is_some() {
            return None;
        }
        thread.busy_since.get_or_insert(now);
        Some((self.end.saturating_sub(now).max(1), Work::BusySpin))
    }

    /// The next packet of a poll by a thread, or the end of the poll (None).
    fn poll_piece(
        &mut self,
        id: usize,
        index: usize,
        on_list: bool,
        now: Ns,
    ) -> Option<(Ns, Work)> {
        let batch = self.threads[id].batch;
        let allowed = self.threads[id].poll.unwrap_or(batch);
        if allowed > 0
            && let Some(arrived) = self.sources[index].ring.pop_front()
        {
            self.threads[id].poll = Some(allowed - 1);
            let left = self.polled_packet_cost(index, allowed);
            return Some((left, Work::Packet(index, arrived)));
        }
        // The poll ends: bottom halves enabled again, pending softirqs run.
        let work_done = allowed < batch;
        self.threads[id].poll = None;
        let cpu = self.threads[id].cpu;
        if on_list {
            self.end_poll(cpu, index, work_done, now);
        } else if self.sources[index].ring.is_empty() && !self.threads[id].thread_busy_poll {
            self.complete_napi(cpu, index, work_done, now);
        }
        self.run_softirq_at_bh_enable(cpu, self.cpus[cpu].since);
        None
    }

    /// Bottom halves enabled again on `cpu`: the softirq an interrupt raised while they
    /// were disabled runs now (kernel/softirq.c: `__local_bh_enable_ip()`).
    fn run_softirq_at_bh_enable(&mut self, cpu: usize, now: Ns) {
        if std::mem::take(&mut self.cpus[cpu].softirq_at_bh_enable)
            && self.cpus[cpu].softirq.is_none()
            && !self.cpus[cpu].poll_list.is_empty()
        {
            self.start_softirq(cpu, now);
        }
    }

    fn next_job(&mut self, id: usize, now: Ns) -> Option<(Ns, Work)> {
        let thread = &mut self.threads[id];
        let released = *thread.jobs.front()?;
        if !thread.started {
            thread.started = true;
            let task = thread.task.expect("a task");
            self.out.tasks[task].latencies.push(now - released);
        }
        let cost = self.costs.sample(&self.threads[id].cost);
        Some((cost, Work::Job))
    }

    fn next_consumer_piece(&mut self, id: usize, index: usize, now: Ns) -> Option<(Ns, Work)> {
        if self.threads[id].migrated_handler {
            // The migrated bottom half, in the target's context (001 §3.4: hardirq and
            // softirq handlers both run there).
            if let Some(arrived) = self.sources[index].ring.pop_front() {
                let left = self.costs.sample(&self.sources[index].per_packet);
                return Some((left, Work::Packet(index, arrived)));
            }
            self.threads[id].migrated_handler = false;
            self.sources[index].masked = false;
        }
        if self.threads[id].return_pending {
            let left = self.costs.sample(&self.config.costs.return_to_user);
            return Some((left, Work::ReturnToUser));
        }
        if self.threads[id].busy_since.is_some() {
            let thread = &self.threads[id];
            let mid_poll = self.sources[index].busy_polled
                && (1..BUSY_POLL_BUDGET).contains(&thread.busy_batch)
                && !self.sources[index].ring.is_empty();
            // the loop ends after a poll that left data in the socket
            if thread.socket.is_empty() || mid_poll {
                return self.busy_poll_piece(id, index, now);
            }
            self.busy_poll_stop(id, index, true, now);
        } else if self.threads[id].socket.is_empty() {
            return self.busy_poll_piece(id, index, now);
        }
        let arrived = self.threads[id].socket.pop_front()?;
        let task = self.threads[id].task.expect("a task");
        self.out.tasks[task].latencies.push(now - arrived);
        let cost = self.costs.sample(&self.threads[id].cost);
        Some((cost, Work::Consume))
    }

    /// Busy polling (`+busy-poll`; net/core/dev.c: __napi_busy_loop, called by
    /// include/net/busy_poll.h's sk_busy_loop and fs/eventpoll.c's ep_busy_loop): a
    /// consumer that finds its socket empty, rather than sleep, takes its NAPI
    /// (NAPI_STATE_SCHED | NAPI_STATE_IN_BUSY_POLL, if no poll holds it) and polls it
    /// from process context, BUSY_POLL_BUDGET packets a poll, each packet's receive on
    /// its own CPU time; on an empty ring (or a NAPI another poll holds) it spins. The
    /// loop ends when a poll leaves data in the socket (sk_busy_loop_end,
    /// ep_busy_loop_end) or when its busy-poll time since the loop began is up
    /// (busy_loop_timeout; 0: after one poll); then it sleeps as before. `None`: no busy
    /// polling, or the time is up (it sleeps). Not modelled: need_resched() ending the
    /// loop early (the consumer is preempted as any thread), and a preferring poller's
    /// NAPI_STATE_PREFER_BUSY_POLL making the softirq's full-budget polls yield to it.
    fn busy_poll_piece(&mut self, id: usize, index: usize, now: Ns) -> Option<(Ns, Work)> {
        let busy_for = self.busy_poll.filter(|_| self.sources[index].napi)?;
        let source = &mut self.sources[index];
        let thread = &mut self.threads[id];
        let since = *thread.busy_since.get_or_insert(now);
        if !source.busy_polled && !source.scheduled {
            source.busy_polled = true;
            thread.busy_batch = 0;
        }
        if source.busy_polled {
            if thread.busy_batch == 0 {
                thread.busy_batch = BUSY_POLL_BUDGET;
            }
            if let Some(arrived) = source.ring.pop_front() {
                let allowed = thread.busy_batch;
                thread.busy_batch -= 1;
                let left = self.polled_packet_cost(index, allowed);
                return Some((left, Work::BusyPoll(index, arrived)));
            }
            // the poll ended on an empty ring
            thread.busy_batch = 0;
        }
        let elapsed = now - since;
        if elapsed < busy_for {
            let until_end = self.end.saturating_sub(now).max(1);
            return Some(((busy_for - elapsed).min(until_end), Work::BusySpin));
        }
        self.busy_poll_stop(id, index, false, now);
        None
    }

    /// The end of a busy-poll loop, `found`: with data in the socket.
    ///
    /// net/core/dev.c: busy_poll_stop gives the NAPI back with a last poll: without
    /// prefer_busy_poll, napi_complete_done enables the IRQ again if the ring is empty,
    /// else the NAPI is scheduled. With prefer_busy_poll (here: `+busy-poll` with
    /// `+defer`), it sets defer_hard_irqs_count to N and starts the timer for
    /// gro_flush_timeout T instead of scheduling it, and the last poll's completion
    /// counts one deferral: the IRQ stays masked while the application polls, and the
    /// timer polls for it while it does not. (What that last poll would find is left
    /// to the timer's poll.)
    ///
    /// IRQ suspension (`+suspend=S`, Linux 6.13; fs/eventpoll.c: ep_try_send_events,
    /// ep_busy_loop, and net/core/dev.c: napi_suspend_irqs, napi_resume_irqs): when the
    /// loop returns events, the timer is started again for irq-suspend-timeout S, a
    /// safety net longer than T, so that neither IRQ nor timer polls while the
    /// application works; when a loop finds nothing and the application goes to
    /// block, the NAPI is scheduled at once, and its polls fall back to deferral (N, T),
    /// then to the IRQ.
    fn busy_poll_stop(&mut self, id: usize, index: usize, found: bool, now: Ns) {
        self.threads[id].busy_since = None;
        self.threads[id].busy_batch = 0;
        // the poller's CPU: busy_poll_stop and napi_resume_irqs run there, their timer is
        // pinned there and their napi_schedule puts the NAPI on its poll list
        let cpu = self.threads[id].cpu;
        if std::mem::take(&mut self.sources[index].busy_polled) {
            match self.defer {
                Some((hard_irqs, _)) => {
                    self.sources[index].defer_count = hard_irqs;
                    self.complete_napi(cpu, index, false, now);
                }
                None if self.sources[index].ring.is_empty() => {
                    self.complete_napi(cpu, index, false, now);
                }
                None => self.schedule_from_process(cpu, index, now),
            }
        }
        match self.suspend {
            Some(timeout) if found => self.arm_timer(cpu, index, now + timeout),
            Some(_) => self.schedule_from_process(cpu, index, now),
            None => {}
        }
    }

    /// napi_schedule from process context: pending softirqs run at the
    /// local_bh_enable() after it, as at a hardirq's exit.
    fn schedule_from_process(&mut self, cpu: usize, index: usize, now: Ns) {
        self.charge(cpu, now);
        self.cpus[cpu].hardirqs.push_back(Piece {
            left: 0,
            work: Work::Schedule(index),
        });
        self.push(now, Event::Kick(cpu));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_have_their_distributions_mean() {
        let mut random = Random::new(9, 0);
        for dist in [
            Dist::constant(4.0),
            Dist::Uniform {
                min_us: 2.0,
                max_us: 6.0,
            },
            Dist::Exponential { mean_us: 5.0 },
            Dist::Quantiles {
                points: vec![[0.0, 1.0], [0.5, 2.0], [0.99, 10.0], [1.0, 40.0]],
            },
        ] {
            let n = 200_000;
            let mean = (0..n).map(|_| random.sample(&dist) as f64).sum::<f64>() / n as f64 / 1e3;
            let expected = dist.mean();
            assert!(
                (mean - expected).abs() < 0.01 * expected,
                "{dist:?}: {mean} vs {expected}"
            );
        }
    }

    fn times(arrival: Arrival) -> Vec<Ns> {
        let mut arrivals = Arrivals {
            arrival,
            random: Random::new(1, 1),
            count: 0,
            last: 0.0,
        };
        std::iter::from_fn(|| arrivals.next()).take(7).collect()
    }

    #[test]
    fn arrival_processes_give_their_times() {
        assert_eq!(
            times(Arrival::Periodic {
                period_us: 10.0,
                phase_us: 5.0
            })[..3],
            [5_000, 15_000, 25_000]
        );
        assert_eq!(
            times(Arrival::Bursts {
                every_us: 100.0,
                size: 3,
                gap_us: 1.0
            }),
            [0, 1_000, 2_000, 100_000, 101_000, 102_000, 200_000]
        );
        assert_eq!(
            times(Arrival::Replay {
                times_us: vec![1.0, 2.5, 2.5]
            }),
            [1_000, 2_500, 2_500]
        );
        let poisson = times(Arrival::Poisson { rate_per_s: 1e5 });
        assert!(poisson.windows(2).all(|w| w[0] <= w[1]));
    }
}
