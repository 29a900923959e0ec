//! `irqlens sim`: the model a discrete-event simulation of Linux's interrupt handling runs
//! (CPUs, interrupt sources, tasks, costs, the designs to compare) and what it gives back
//! per design. Times in the configuration are microseconds (`_us`) so that a person can
//! write and edit one; the costs are meant to be filled from a calibration file later.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{Check, Checked, finite_within, within};
pub use crate::design::{
    BottomHalves, Budget, BusyPoll, DEFAULT_BUDGET, DEFAULT_BUSY_POLL_US, Defer, Design, Migration,
};
use crate::sched::Priority;

/// A cost or a time as a distribution, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Dist {
    /// Always the same.
    Constant {
        /// The value, µs.
        us: f64,
    },
    /// Uniform between two values.
    Uniform {
        /// Smallest value, µs.
        min_us: f64,
        /// Largest value, µs.
        max_us: f64,
    },
    /// Exponential with this mean.
    Exponential {
        /// Mean, µs.
        mean_us: f64,
    },
    /// An empirical distribution given by quantiles (as a recording's histogram gives
    /// them), linear between them: `[[0.0, 2.1], [0.5, 3.0], [0.99, 9.5], [1.0, 14.0]]`.
    Quantiles {
        /// `[fraction, µs]` pairs, fractions rising from 0 to 1, values not falling.
        points: Vec<[f64; 2]>,
    },
}

impl Dist {
    /// A constant of `us` microseconds.
    pub fn constant(us: f64) -> Self {
        Dist::Constant { us }
    }

    /// Why this distribution cannot be sampled, if it cannot: every value finite, from 0
    /// to [`MAX_SIM_US`].
    pub fn check(&self) -> Result<(), String> {
        let finite = |v: f64| v.is_finite() && (0.0..=MAX_SIM_US).contains(&v);
        match self {
            Dist::Constant { us } if finite(*us) => Ok(()),
            Dist::Uniform { min_us, max_us }
                if finite(*min_us) && finite(*max_us) && min_us <= max_us =>
            {
                Ok(())
            }
            Dist::Exponential { mean_us } if finite(*mean_us) => Ok(()),
            Dist::Quantiles { points }
                if points.len() >= 2
                    && points.first().is_some_and(|p| p[0] == 0.0)
                    && points.last().is_some_and(|p| p[0] == 1.0)
                    && points.iter().all(|p| finite(p[1]))
                    && points
                        .windows(2)
                        .all(|w| w[0][0] < w[1][0] && w[0][1] <= w[1][1]) =>
            {
                Ok(())
            }
            Dist::Quantiles { .. } => Err(format!(
                "quantiles need >= 2 [fraction, µs] points from 0 to 1, both rising, µs up to {MAX_SIM_US:e}"
            )),
            other => Err(format!(
                "{other:?}: values must be finite, from 0 to {MAX_SIM_US:e} µs, min <= max"
            )),
        }
    }

    /// The mean, µs.
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Constant { us } => *us,
            Dist::Uniform { min_us, max_us } => (min_us + max_us) / 2.0,
            Dist::Exponential { mean_us } => *mean_us,
            Dist::Quantiles { points } => points
                .windows(2)
                .map(|w| (w[1][0] - w[0][0]) * (w[0][1] + w[1][1]) / 2.0)
                .sum(),
        }
    }
}

/// When a source's interrupts (packets, events) arrive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Arrival {
    /// Every `period_us`, the first at `phase_us`.
    Periodic {
        /// Time between two arrivals, µs.
        period_us: f64,
        /// Time of the first arrival, µs.
        #[serde(default)]
        phase_us: f64,
    },
    /// A Poisson process.
    Poisson {
        /// Mean arrivals per second.
        rate_per_s: f64,
    },
    /// `size` arrivals `gap_us` apart, a burst every `every_us`.
    Bursts {
        /// Time between the starts of two bursts, µs.
        every_us: f64,
        /// Arrivals per burst.
        size: u32,
        /// Time between two arrivals of a burst, µs.
        gap_us: f64,
    },
    /// These arrival times (µs from the start), as a recording gives them.
    Replay {
        /// Arrival times, µs, not falling.
        times_us: Vec<f64>,
    },
}

/// A device interrupt line and what it brings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// Its name (results and `consumer`s refer to it).
    pub name: String,
    /// The CPU its hardirq (and stock softirq) runs on.
    pub cpu: u32,
    /// When its events arrive.
    pub arrival: Arrival,
    /// Hardirq cost; default: `costs.hardirq`.
    #[serde(default)]
    pub hardirq: Option<Dist>,
    /// A NAPI device: the hardirq only schedules polling (and masks the line until the
    /// poll finds the ring empty); each packet costs a bottom-half run. Without it, the
    /// hardirq itself hands the event to its consumer.
    #[serde(default)]
    pub napi: bool,
    /// Bottom-half (receive) cost per packet; default: `costs.softirq_per_packet`.
    #[serde(default)]
    pub softirq_per_packet: Option<Dist>,
    /// Bottom-half cost per packet in a saturated poll, one that uses its whole budget
    /// (more pending than the poll may take: a flood), or any poll while the source's
    /// consumer is behind (its socket half full or more); default: `softirq_per_packet`.
    #[serde(default)]
    pub softirq_per_packet_saturated: Option<Dist>,
    /// Bottom-half cost of a packet that its consumer's full socket drops (the UDP
    /// receive up to the full queue, and the free); default: the packet's cost as any
    /// other's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq_per_packet_dropped: Option<Dist>,
    /// A NAPI timer's interrupt with the poll it schedules (deferral's
    /// `gro_flush_timeout`, mostly a poll that finds nothing); default: the hardirq cost.
    #[serde(default)]
    pub timer_poll: Option<Dist>,
    /// Receive ring size: packets that find it full are dropped.
    #[serde(default = "default_ring")]
    pub ring: u32,
    /// `threaded-niced`'s NAPI thread nice (trial's `--napi-nice`); default: its
    /// consumer's, as 003 runs the bottom-half thread at the nice of the process it feeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_nice: Option<i32>,
}

/// A source's receive ring when the model does not say, packets.
pub const DEFAULT_RING: u32 = 1024;

fn default_ring() -> u32 {
    DEFAULT_RING
}

/// What a task does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TaskKind {
    /// Released every `period_us` (first at `phase_us`), runs `cost` per job. Its timer
    /// interrupt is not modelled: the release is exact.
    Periodic {
        /// Time between releases, µs.
        period_us: f64,
        /// First release, µs.
        #[serde(default)]
        phase_us: f64,
        /// Run time per job.
        cost: Dist,
    },
    /// Sleeps on a socket fed by `source`, handles each packet (a UDP server).
    Consumer {
        /// The source whose packets it reads.
        source: String,
        /// Run time per packet, in user space.
        cost_per_packet: Dist,
        /// Socket queue length in packets: more are dropped.
        #[serde(default = "default_socket_queue")]
        socket_queue: u32,
        /// It sends a reply per packet (an echo server). A send transmits with bottom
        /// halves disabled (net/core/dev.c: `__dev_queue_xmit()` under
        /// `rcu_read_lock_bh()`), so a softirq that an interrupt raises during its work on a
        /// packet runs at that work's end, in its context (`local_bh_enable()`), not at the
        /// interrupt's exit. The whole per-packet work counts as that section.
        #[serde(default, skip_serializing_if = "is_false")]
        replies: bool,
    },
    /// Always runnable.
    Hog,
}

/// A consumer's socket queue when the model does not say, packets.
pub const DEFAULT_SOCKET_QUEUE: u32 = 256;

fn default_socket_queue() -> u32 {
    DEFAULT_SOCKET_QUEUE
}

fn is_false(value: &bool) -> bool {
    !value
}

/// A thread of the workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// Its name.
    pub name: String,
    /// The CPU it is pinned to.
    pub cpu: u32,
    /// Its policy and priority (`o:NICE`, `f:PRIO`, `r:PRIO`; SCHED_DEADLINE is not
    /// simulated).
    #[schemars(with = "String")]
    pub priority: Priority,
    /// What it does.
    pub kind: TaskKind,
}

/// The costs of the kernel's paths. Defaults: `Costs::default()`, not calibrated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Costs {
    /// Where these figures come from (a calibration's recordings, or "default").
    pub origin: String,
    /// Hardirq handler, entry to exit.
    pub hardirq: Dist,
    /// Receive processing per packet in a bottom half (NAPI poll to socket queue).
    pub softirq_per_packet: Dist,
    /// Waking a sleeping thread (try_to_wake_up), in the waker's context.
    pub wakeup: Dist,
    /// One context switch (schedule() from pick to the new thread running).
    pub context_switch: Dist,
    /// A woken task's return to user space (end of the blocking system call).
    pub return_to_user: Dist,
    /// Leaving the idle state when an interrupt finds the CPU idle (on a VM, the exit
    /// from the halt), added to that hardirq; the default is none.
    #[serde(default = "no_cost")]
    pub idle_exit: Dist,
    /// The share of wakeup + context switch that direct interrupt scheduling defers
    /// until after the target runs (001 §4.2, Fig. 9: all but `switch`).
    pub dis_deferrable: f64,
}

impl Default for Costs {
    /// Default, not calibrated: orders of magnitude seen on a small VM by `irqlens
    /// wakeup` and `irqlens bh` (wakeup to run 5-20 µs, context switch 2-5 µs).
    fn default() -> Self {
        Costs {
            origin: "default, not calibrated (orders of magnitude from irqlens wakeup/bh on a \
                     small VM: wakeup to run 5-20 µs, context switch 2-5 µs)"
                .to_string(),
            hardirq: Dist::Uniform {
                min_us: 1.0,
                max_us: 3.0,
            },
            softirq_per_packet: Dist::Uniform {
                min_us: 2.0,
                max_us: 4.0,
            },
            wakeup: Dist::Uniform {
                min_us: 1.0,
                max_us: 3.0,
            },
            context_switch: Dist::Uniform {
                min_us: 2.0,
                max_us: 5.0,
            },
            return_to_user: Dist::constant(1.0),
            idle_exit: no_cost(),
            dis_deferrable: 0.5,
        }
    }
}

fn no_cost() -> Dist {
    Dist::constant(0.0)
}

/// Linux's limits on deferred work, with the kernel's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// net.core.netdev_budget: packets per net_rx_action.
    pub netdev_budget: u32,
    /// net.core.netdev_budget_usecs: time per net_rx_action, µs. The kernel's default is
    /// two jiffies (net/core/hotdata.c: 2 * USEC_PER_SEC / HZ): 2000 at HZ=1000, 8000 at
    /// HZ=250; give the machine's /proc/sys/net/core/netdev_budget_usecs.
    pub netdev_budget_usecs: f64,
    /// NAPI weight: packets per poll of one device (NAPI_POLL_WEIGHT).
    pub napi_weight: u32,
    /// __do_softirq's restarts (MAX_SOFTIRQ_RESTART) before ksoftirqd takes over.
    pub softirq_restarts: u32,
    /// __do_softirq's time limit (MAX_SOFTIRQ_TIME), µs.
    pub softirq_time_us: f64,
    /// SCHED_OTHER slice (sysctl_sched_base_slice), µs: 750 scaled by 1 + log2(CPUs) by
    /// the kernel; give the machine's (/sys/kernel/debug/sched/base_slice_ns).
    pub base_slice_us: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            netdev_budget: 300,
            netdev_budget_usecs: 2000.0,
            napi_weight: 64,
            softirq_restarts: 10,
            softirq_time_us: 2000.0,
            base_slice_us: 750.0,
        }
    }
}

/// A whole simulation: the machine, the workload, the costs, the designs to compare.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimConfig {
    /// Number of CPUs.
    pub cpus: u32,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Seeds every random choice: the same seed gives the same results.
    #[serde(default)]
    pub seed: u64,
    /// Interrupt sources.
    pub sources: Vec<Source>,
    /// Tasks.
    pub tasks: Vec<Task>,
    /// Costs of the kernel's paths.
    #[serde(default)]
    pub costs: Costs,
    /// Deferral limits.
    #[serde(default)]
    pub limits: Limits,
    /// The designs to simulate, each on the same arrivals.
    pub designs: Vec<Design>,
}

impl SimConfig {
    /// A small model to start from (`irqlens sim --example`): on CPU 0, a NIC at 20k
    /// packets/s feeding a UDP server, a 1 kHz real-time control task and a niced batch
    /// job; the six designs compared, with the default (uncalibrated) costs.
    pub fn example() -> Self {
        let task = |name: &str, priority: Priority, kind| Task {
            name: name.into(),
            cpu: 0,
            priority,
            kind,
        };
        SimConfig {
            cpus: 1,
            duration_s: 2.0,
            seed: 1,
            sources: vec![Source {
                name: "nic".into(),
                cpu: 0,
                arrival: Arrival::Poisson {
                    rate_per_s: 20_000.0,
                },
                hardirq: None,
                napi: true,
                softirq_per_packet: None,
                softirq_per_packet_saturated: None,
                softirq_per_packet_dropped: None,
                timer_poll: None,
                ring: default_ring(),
                thread_nice: None,
            }],
            tasks: vec![
                task(
                    "udp-server",
                    Priority::Other { nice: 0 },
                    TaskKind::Consumer {
                        source: "nic".into(),
                        cost_per_packet: Dist::constant(5.0),
                        socket_queue: default_socket_queue(),
                        replies: false,
                    },
                ),
                task(
                    "control",
                    Priority::Fifo(80),
                    TaskKind::Periodic {
                        period_us: 1000.0,
                        phase_us: 0.0,
                        cost: Dist::constant(100.0),
                    },
                ),
                task("batch", Priority::Other { nice: 5 }, TaskKind::Hog),
            ],
            costs: Costs::default(),
            limits: Limits::default(),
            designs: Design::six(),
        }
    }
}

/// The most CPUs a model has.
pub const MAX_SIM_CPUS: u32 = 1024;
/// The most sources, tasks and designs a model has.
pub const MAX_SIM_ITEMS: usize = 1024;
/// The longest simulated time, s (about 11 days).
pub const MAX_SIM_SECONDS: f64 = 1e6;
/// The longest time or cost in a model, µs (the longest simulated time).
pub const MAX_SIM_US: f64 = MAX_SIM_SECONDS * 1e6;
/// The shortest time between two arrivals or releases, µs: 10 ns (shorter rounds to the
/// same simulated ns, and an event stream that never leaves one instant never ends).
pub const MIN_SIM_PERIOD_US: f64 = 0.01;
/// The highest Poisson rate, arrivals per second (one per [`MIN_SIM_PERIOD_US`]).
pub const MAX_SIM_RATE: f64 = 1e6 / MIN_SIM_PERIOD_US;
/// The longest queue (receive ring, socket queue) and the largest burst, packets: each
/// queued packet is memory the simulation holds.
pub const MAX_SIM_QUEUE: u32 = 1 << 20;

impl Check for SimConfig {
    /// Why the model cannot be simulated, if it cannot: every CPU, source and task
    /// consistent, every number finite and within the bounds above.
    fn check(&self) -> Checked {
        let config = self;
        within("sim: cpus", config.cpus, 1, MAX_SIM_CPUS)?;
        if !(config.duration_s.is_finite() && config.duration_s > 0.0) {
            return Err("sim: duration_s must be > 0".into());
        }
        finite_within("sim: duration_s", config.duration_s, 0.0, MAX_SIM_SECONDS)?;
        if config.designs.is_empty() {
            return Err("sim: no design to simulate".into());
        }
        within("sim: designs", config.designs.len(), 1, MAX_SIM_ITEMS)?;
        within("sim: sources", config.sources.len(), 0, MAX_SIM_ITEMS)?;
        within("sim: tasks", config.tasks.len(), 0, MAX_SIM_ITEMS)?;
        let on_cpu = |what: &str, name: &str, cpu: u32| {
            if cpu < config.cpus {
                Ok(())
            } else {
                Err(format!(
                    "sim: {what} '{name}' is on CPU {cpu}, the model has {}",
                    config.cpus
                ))
            }
        };
        config
            .costs
            .check()
            .and_then(|()| config.limits.check())
            .map_err(|e| format!("sim: {e}"))?;
        for source in &config.sources {
            on_cpu("source", &source.name, source.cpu)?;
            source
                .check()
                .map_err(|e| format!("sim: source '{}': {e}", source.name))?;
            let consumers = config
                .tasks
                .iter()
                .filter(
                    |t| matches!(&t.kind, TaskKind::Consumer { source: s, .. } if s == &source.name),
                )
                .count();
            if consumers > 1 {
                return Err(format!(
                    "sim: source '{}': more than one consumer (one socket per source)",
                    source.name
                ));
            }
        }
        for task in &config.tasks {
            on_cpu("task", &task.name, task.cpu)?;
            let bad = |why: String| Err(format!("sim: task '{}': {why}", task.name));
            if let Priority::Deadline { .. } = task.priority {
                return bad("SCHED_DEADLINE is not simulated".into());
            }
            match &task.kind {
                TaskKind::Periodic {
                    period_us,
                    phase_us,
                    cost,
                } => {
                    check_period("period_us", *period_us)
                        .and_then(|()| check_sim_time("phase_us", *phase_us))
                        .and_then(|()| cost.check())
                        .or_else(bad)?;
                }
                TaskKind::Consumer {
                    source,
                    cost_per_packet,
                    socket_queue,
                    ..
                } => {
                    if !config.sources.iter().any(|s| &s.name == source) {
                        return bad(format!("no source '{source}'"));
                    }
                    within("socket_queue", *socket_queue, 1, MAX_SIM_QUEUE)
                        .and_then(|()| cost_per_packet.check())
                        .or_else(bad)?;
                }
                TaskKind::Hog => {}
            }
        }
        Ok(())
    }
}

/// A time between two events, µs.
fn check_period(what: &str, us: f64) -> Checked {
    finite_within(what, us, MIN_SIM_PERIOD_US, MAX_SIM_US)
}

/// A time in the model (a phase, an arrival, a gap), µs.
fn check_sim_time(what: &str, us: f64) -> Checked {
    finite_within(what, us, 0.0, MAX_SIM_US)
}

impl Check for Source {
    /// Its arrivals, costs and ring (the CPU is the model's to check).
    fn check(&self) -> Checked {
        match &self.arrival {
            Arrival::Periodic {
                period_us,
                phase_us,
            } => {
                check_period("period_us", *period_us)?;
                check_sim_time("phase_us", *phase_us)?;
            }
            Arrival::Poisson { rate_per_s } => {
                finite_within("rate_per_s", *rate_per_s, 0.0, MAX_SIM_RATE)?;
                if *rate_per_s <= 0.0 {
                    return Err("rate_per_s must be > 0".into());
                }
            }
            Arrival::Bursts {
                every_us,
                size,
                gap_us,
            } => {
                check_period("every_us", *every_us)?;
                within("size", *size, 1, MAX_SIM_QUEUE)?;
                check_sim_time("gap_us", *gap_us)?;
            }
            Arrival::Replay { times_us } => {
                if times_us.windows(2).any(|w| w[0] > w[1])
                    || !times_us
                        .iter()
                        .all(|&t| t.is_finite() && (0.0..=MAX_SIM_US).contains(&t))
                {
                    return Err(format!(
                        "replayed times must be from 0 to {MAX_SIM_US:e} µs and not falling"
                    ));
                }
            }
        }
        for dist in [
            &self.hardirq,
            &self.softirq_per_packet,
            &self.softirq_per_packet_saturated,
            &self.softirq_per_packet_dropped,
            &self.timer_poll,
        ]
        .into_iter()
        .flatten()
        {
            dist.check()?;
        }
        if self.napi && self.ring == 0 {
            return Err("a NAPI source needs a ring of >= 1 packet".into());
        }
        if let Some(nice) = self.thread_nice {
            within("thread_nice", nice, -20, 19)?;
        }
        within("ring", self.ring, 0, MAX_SIM_QUEUE)
    }
}

impl Check for Costs {
    /// Every cost a distribution that can be sampled, the deferrable share a fraction.
    fn check(&self) -> Checked {
        let named = CostName::ALL.map(|name| (name.label(), name.get(self)));
        for (what, dist) in named.into_iter().chain([("idle_exit", &self.idle_exit)]) {
            dist.check().map_err(|e| format!("costs.{what}: {e}"))?;
        }
        if !(0.0..=1.0).contains(&self.dis_deferrable) {
            return Err("costs.dis_deferrable is a fraction from 0 to 1".into());
        }
        Ok(())
    }
}

impl Check for Limits {
    /// Counts of 1 at least, times above 0.
    fn check(&self) -> Checked {
        if self.netdev_budget == 0 || self.napi_weight == 0 || self.softirq_restarts == 0 {
            return Err("netdev_budget, napi_weight and softirq_restarts must be >= 1".into());
        }
        let times = [
            self.netdev_budget_usecs,
            self.softirq_time_us,
            self.base_slice_us,
        ];
        if !times.into_iter().all(|us| check_period("", us).is_ok()) {
            return Err(format!(
                "the limits' times must be {MIN_SIM_PERIOD_US} to {MAX_SIM_US:e} µs"
            ));
        }
        Ok(())
    }
}

impl Check for MeasuredCost {
    /// Its distribution.
    fn check(&self) -> Checked {
        self.dist
            .check()
            .map_err(|e| format!("measured {}: {e}", self.cost.label()))
    }
}

impl Check for TrialCosts {
    /// Every cost a time of the model, the rates and the queue within the model's bounds.
    fn check(&self) -> Checked {
        let bad = |e: String| format!("trial costs of {}: {e}", self.design);
        for (what, us) in [
            (
                "bottom_half_per_datagram_us",
                self.bottom_half_per_datagram_us,
            ),
            ("consumer_per_datagram_us", self.consumer_per_datagram_us),
            ("idle_exit_us", self.idle_exit_us),
            ("path_us", self.path_us),
        ]
        .into_iter()
        .chain(
            self.bottom_half_flood_per_datagram_us
                .map(|us| ("bottom_half_flood_per_datagram_us", us)),
        )
        .chain(
            self.bottom_half_dropped_per_datagram_us
                .map(|us| ("bottom_half_dropped_per_datagram_us", us)),
        )
        .chain(
            self.napi
                .iter()
                .filter_map(|napi| Some(("napi's us", napi.us?))),
        ) {
            check_sim_time(what, us).map_err(bad)?;
        }
        if let Some(rate) = self.arrivals_per_s {
            finite_within("arrivals_per_s", rate, 0.0, MAX_SIM_RATE).map_err(bad)?;
        }
        within("socket_queue", self.socket_queue, 1, MAX_SIM_QUEUE).map_err(bad)
    }
}

impl Check for Calibration {
    /// Everything a model takes from it.
    fn check(&self) -> Checked {
        self.costs.check()?;
        self.limits.check()?;
        for measured in &self.measured {
            measured.check()?;
        }
        self.trial.iter().try_for_each(Check::check)
    }
}

/// A latency distribution's summary, µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Smallest.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// CDF points `[µs, fraction <= it]`, for plotting.
    pub cdf: Vec<[f64; 2]>,
}

/// An interrupt-driven task's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConsumerResult {
    /// The task.
    pub task: String,
    /// Packet arrival to the task starting on it in user space (the OS latency of 001).
    pub latency: LatencySummary,
    /// Packets it handled.
    pub delivered: u64,
    /// Packets it handled per simulated second.
    pub delivered_per_s: f64,
    /// Packets its source brought.
    pub offered: u64,
    /// Dropped at the receive ring.
    pub dropped_ring: u64,
    /// Dropped at its full socket queue.
    pub dropped_socket: u64,
    /// Wakeups that made it runnable.
    pub wakeups: u64,
    /// Its own time (its work, its return to user space, its busy-poll loops and the
    /// packets they poll), a fraction of its CPU's: a busy-polling consumer's share.
    #[serde(default)]
    pub cpu_share: f64,
}

/// A periodic task's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeriodicResult {
    /// The task.
    pub task: String,
    /// Release to start.
    pub wakeup_latency: LatencySummary,
    /// Release to completion.
    pub response: LatencySummary,
}

/// Where CPU time went, fractions of all CPUs' time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuSplit {
    /// Hardirq handlers.
    pub hardirq: f64,
    /// Softirqs at hardirq exit.
    pub softirq: f64,
    /// Bottom-half threads (ksoftirqd, irq/NAPI threads).
    pub bh_threads: f64,
    /// The workload's tasks (with migrated handlers under IHM).
    pub tasks: f64,
    /// Context switches.
    pub switching: f64,
    /// Idle.
    pub idle: f64,
}

/// One design's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DesignResult {
    /// The design.
    pub design: Design,
    /// Hardirqs handled.
    pub interrupts: u64,
    /// Events (packets) that arrived, all sources.
    pub arrivals: u64,
    /// Context switches.
    pub context_switches: u64,
    /// Context switches per arrival.
    pub switches_per_arrival: f64,
    /// Context switches per hardirq.
    pub switches_per_interrupt: f64,
    /// NAPI timer interrupts (napi_watchdog under deferral or suspension): interrupts
    /// that are not the device's, not in `interrupts`.
    #[serde(default)]
    pub timer_interrupts: u64,
    /// NAPI schedules (by a device's hardirq, a NAPI timer, or the end of a busy poll):
    /// each a poll in softirq or in a NAPI thread; a busy poller's polls are not.
    #[serde(default)]
    pub napi_schedules: u64,
    /// Device hardirqs per arrival.
    #[serde(default)]
    pub interrupts_per_arrival: f64,
    /// NAPI schedules per arrival.
    #[serde(default)]
    pub napi_schedules_per_arrival: f64,
    /// Per CPU of the model, the share of its time not idle (the receiving CPU's busy
    /// share is its source's CPU's).
    #[serde(default)]
    pub busy_by_cpu: Vec<f64>,
    /// Busy-poll loops (a consumer's spin and the packets it polls, a busy-polling NAPI
    /// thread), fractions of all CPUs' time: part of `cpu.tasks` and `cpu.bh_threads`.
    #[serde(default)]
    pub busy_poll: f64,
    /// Interrupt-driven tasks.
    pub consumers: Vec<ConsumerResult>,
    /// Periodic tasks.
    pub periodic: Vec<PeriodicResult>,
    /// CPU split.
    pub cpu: CpuSplit,
}

/// What `irqlens sim` gives back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimReport {
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// The seed.
    pub seed: u64,
    /// Where the costs came from.
    pub costs_origin: String,
    /// Per design, in the configuration's order.
    pub designs: Vec<DesignResult>,
}

/// What `irqlens sim --json` prints: the envelope every command's document has, and the
/// simulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimDocument {
    /// Which tool and version; the command is always "sim".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The model's CPUs (simulated, not this machine's).
    pub cpus: crate::units::CpuList,
    /// The simulation.
    #[serde(flatten)]
    pub report: SimReport,
}

/// A cost of the model that a recording measures.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CostName {
    /// [`Costs::hardirq`].
    Hardirq,
    /// [`Costs::softirq_per_packet`].
    SoftirqPerPacket,
    /// [`Costs::wakeup`].
    Wakeup,
    /// [`Costs::context_switch`].
    ContextSwitch,
    /// [`Costs::return_to_user`].
    ReturnToUser,
}

impl CostName {
    /// Every cost, in [`Costs`]'s order.
    pub const ALL: [CostName; 5] = [
        CostName::Hardirq,
        CostName::SoftirqPerPacket,
        CostName::Wakeup,
        CostName::ContextSwitch,
        CostName::ReturnToUser,
    ];

    /// Its field's name in [`Costs`] (its name in JSON too).
    pub fn label(self) -> &'static str {
        match self {
            CostName::Hardirq => "hardirq",
            CostName::SoftirqPerPacket => "softirq_per_packet",
            CostName::Wakeup => "wakeup",
            CostName::ContextSwitch => "context_switch",
            CostName::ReturnToUser => "return_to_user",
        }
    }

    /// The field of [`Costs`] it reads.
    pub fn get(self, costs: &Costs) -> &Dist {
        match self {
            CostName::Hardirq => &costs.hardirq,
            CostName::SoftirqPerPacket => &costs.softirq_per_packet,
            CostName::Wakeup => &costs.wakeup,
            CostName::ContextSwitch => &costs.context_switch,
            CostName::ReturnToUser => &costs.return_to_user,
        }
    }

    /// The field of [`Costs`] it fills.
    pub fn of(self, costs: &mut Costs) -> &mut Dist {
        match self {
            CostName::Hardirq => &mut costs.hardirq,
            CostName::SoftirqPerPacket => &mut costs.softirq_per_packet,
            CostName::Wakeup => &mut costs.wakeup,
            CostName::ContextSwitch => &mut costs.context_switch,
            CostName::ReturnToUser => &mut costs.return_to_user,
        }
    }
}

/// One cost as one recording measured it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MeasuredCost {
    /// The cost.
    pub cost: CostName,
    /// Its distribution.
    pub dist: Dist,
    /// Samples it comes from.
    pub samples: u64,
    /// What of the recording it is, and why it stands for the cost.
    pub what: String,
    /// The recording.
    #[serde(default)]
    pub from: String,
}

/// What one `irqlens trial net` design costs per datagram on the receiving CPU, fitted on
/// the points where the echo followed the offered rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialCosts {
    /// The trial design.
    pub design: Design,
    /// Bottom-half time (softirq, NAPI thread, hard IRQ) per echoed datagram, µs.
    pub bottom_half_per_datagram_us: f64,
    /// Bottom-half time per datagram it received in a flood, µs: from the points past
    /// the knee, where the receiving CPU is saturated (every datagram reaches the echo
    /// server's socket, the drops are there); with a drop cost (below), per datagram the
    /// socket took. The simulated test bed charges it in saturated polls and while the
    /// echo server is behind; none (older calibrations, or no point past the knee): the
    /// cost above everywhere.
    #[serde(default)]
    pub bottom_half_flood_per_datagram_us: Option<f64>,
    /// Bottom-half time per datagram that the echo server's full socket dropped, µs: with
    /// the one per echoed datagram (the flood cost above), fitted by least squares on the
    /// saturated points past the knee at two offered rates or more. None without such
    /// points, or with a fit that makes a drop free or dearer than an echo: a drop then
    /// costs as any datagram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottom_half_dropped_per_datagram_us: Option<f64>,
    /// The echo server's time (user and system: the receive and the send) per echoed
    /// datagram, µs.
    pub consumer_per_datagram_us: f64,
    /// The receiving CPU's time per idle cycle (the echo server's sleeps and the cyclic
    /// task's activations) beyond the context switch the simulation charges itself, µs:
    /// the exit from the idle state (on a VM, the halt's), which a saturated CPU does not
    /// pay. The simulated test bed gets it as `idle_exit`.
    #[serde(default)]
    pub idle_exit_us: f64,
    /// How many times a second trial's generator wakes: the echo server's sleeps a second
    /// where it kept up (each wakeup sends what fell due, one datagram at 10k/s here, 8
    /// at 80k/s, 100 at 1M/s, back to back in sends of at most one GSO batch of 8);
    /// none: sends of 8.
    #[serde(default)]
    pub arrivals_per_s: Option<f64>,
    /// The part of the echo latency outside the receiving CPU (the sending stack, the
    /// echo's way back, the collector's wakeup), µs: the lowest rate's measured median
    /// less the simulated one.
    pub path_us: f64,
    /// The echo server's socket queue, datagrams: its receive buffer
    /// (net.core.rmem_default) over a small datagram's truesize.
    pub socket_queue: u32,
    /// The following points the costs come from.
    pub points: usize,
    /// The recording.
    pub from: String,
    /// The design whose points gave the per-datagram costs above, when not this one's: a
    /// busy-polling design's base (the same without `+busy-poll`), whose echo server's
    /// time does not hold a busy loop nor its sleeps a loop's ends. None: its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_datagram_from: Option<Design>,
    /// What the design's NAPI mechanisms cost, as its points determine them, each saying
    /// where it came from or why it stays the model's (none for a design without them,
    /// and in older calibrations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub napi: Vec<NapiCost>,
}

impl TrialCosts {
    /// A NAPI cost its points determined, µs.
    pub fn napi_us(&self, cost: NapiCostName) -> Option<f64> {
        self.napi.iter().find(|napi| napi.cost == cost)?.us
    }
}

/// A cost of today's NAPI mechanisms on trial's test bed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NapiCostName {
    /// A deferral timer's interrupt with the poll it schedules, mostly one that finds
    /// nothing (`+defer`): the simulated source's [`Source::timer_poll`].
    TimerPoll,
    /// One turn of a busy-poll loop that finds nothing (`+busy-poll`).
    BusyPollTurn,
}

/// One NAPI cost of a trial design: fitted, or the model's and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NapiCost {
    /// The cost.
    pub cost: NapiCostName,
    /// µs; none: the points do not determine it, or the engine does not use it, and the
    /// model's stays (`what` says which).
    pub us: Option<f64>,
    /// The points (or pairs of points) it comes from.
    pub points: usize,
    /// What of the recording it is, or why the model's stays.
    pub what: String,
    /// The recording.
    pub from: String,
}

/// What `irqlens sim --calibrate` writes and `--costs` reads: the costs measured on a
/// machine, with where each came from. A person can read and edit it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Calibration {
    /// Which tool and version; the command is always "sim-calibration".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// Every cost the recordings measured (more than one recording may measure a cost).
    pub measured: Vec<MeasuredCost>,
    /// The costs a model gets: per cost, the measurement with the most samples, the
    /// default for a cost nothing measured (its origin says which).
    pub costs: Costs,
    /// The deferral limits of the machine calibrated on.
    pub limits: Limits,
    /// Per `irqlens trial net` design recorded, its per-datagram costs.
    #[serde(default)]
    pub trial: Vec<TrialCosts>,
}

/// One design at one offered rate in one round, as `trial` measured it and as the simulation of its
/// test bed predicts it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedPoint {
    /// The trial design.
    pub design: Design,
    /// Offered datagrams/s.
    pub offered_pps: u64,
    /// The trial's round, from 1.
    #[serde(default = "crate::trial::one_round")]
    pub round: u32,
    /// Sent per second, measured.
    pub sent_pps: f64,
    /// Echoed per second, measured.
    pub measured_echoed_pps: f64,
    /// Echoed per second, simulated (offered at the measured sent rate).
    pub simulated_echoed_pps: f64,
    /// Median echo latency, measured, µs.
    pub measured_p50_us: Option<f64>,
    /// Median echo latency, simulated (arrival to the server in user space, plus the
    /// calibrated path), µs.
    pub simulated_p50_us: Option<f64>,
    /// The NAPI figures, measured and simulated (none for a recording without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub napi: Option<ComparedNapi>,
}

/// What today's NAPI mechanisms trade at a point, as trial measured it and as the
/// simulation of its test bed gives it; a simulated figure is none where the model does
/// not produce it ("not simulated" in the text).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedNapi {
    /// NET_RX softirq runs on the receiving CPU per datagram sent, measured.
    pub measured_net_rx_per_datagram: f64,
    /// Simulated: the NAPI polls scheduled per datagram (by an interrupt or a deferral
    /// timer: a NET_RX run each); none for a threaded design, whose polls are its
    /// thread's (the model has no RPS backlog beside it).
    pub simulated_net_rx_per_datagram: Option<f64>,
    /// NET_RX runs on the sending CPU per datagram sent, measured (veth's NAPI and its
    /// deferral timer run there). Not simulated: the model is the receiving CPU.
    pub measured_sending_net_rx_per_datagram: f64,
    /// The receiving CPU's busy share (0 to 1), measured.
    pub measured_busy: f64,
    /// Likewise, simulated.
    pub simulated_busy: f64,
    /// The echo server's own share of the window (0 to 1), measured; none without
    /// exact times.
    pub measured_echo_share: Option<f64>,
    /// Likewise, simulated.
    pub simulated_echo_share: f64,
    /// veth packets busy polls took per datagram sent, measured. Not simulated: the
    /// model polls datagrams, not veth's GSO packets.
    pub measured_busy_polled_per_datagram: Option<f64>,
}

/// One design over the ladder, measured and simulated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparedDesign {
    /// The trial design.
    pub design: Design,
    /// The design simulated for it: the same, but for the budget, which the trial's
    /// options count.
    pub simulated_as: Design,
    /// The knee, measured: the highest offered rate at which at least half of the rounds
    /// followed (echoed 95% of what was sent), as trial's `follows_up_to_pps`.
    pub measured_follows_up_to_pps: Option<u64>,
    /// Each round's own measured knee, in round order: how far the machine's noise
    /// moves it.
    #[serde(default)]
    pub measured_follows_up_to_by_round_pps: Vec<Option<u64>>,
    /// Likewise, simulated (each round simulated at its own sent rate).
    pub simulated_follows_up_to_pps: Option<u64>,
    /// The most echoed per second at any rate (the median of its rounds), measured.
    pub measured_peak_pps: f64,
    /// Likewise, simulated.
    pub simulated_peak_pps: f64,
    /// Simulated peak over measured peak, less 1 (none if nothing was echoed).
    pub peak_error: Option<f64>,
    /// Over the points both followed, the median of |simulated - measured| / measured
    /// median latency.
    pub median_latency_error: Option<f64>,
}

/// What `irqlens sim --against TRIAL.rec` prints: a recorded trial next to the
/// simulation of the same test bed, designs and rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrialComparison {
    /// Which tool and version; the command is always "sim".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// The trial recording.
    pub against: String,
    /// Where the costs came from.
    pub costs_origin: String,
    /// Simulated seconds per point.
    pub seconds_per_point: f64,
    /// Per design, rate and round.
    pub points: Vec<ComparedPoint>,
    /// Per design.
    pub designs: Vec<ComparedDesign>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_labels_are_their_json_names_and_fields() {
        let mut costs = Costs::default();
        for (i, name) in CostName::ALL.into_iter().enumerate() {
            *name.of(&mut costs) = Dist::constant(i as f64 + 10.0);
        }
        let json = serde_json::to_value(&costs).unwrap();
        for (i, name) in CostName::ALL.into_iter().enumerate() {
            let dist = Dist::constant(i as f64 + 10.0);
            assert_eq!(serde_json::to_value(name).unwrap(), name.label());
            assert_eq!(name.get(&costs), &dist, "{name:?}");
            assert_eq!(json[name.label()], serde_json::to_value(&dist).unwrap());
        }
    }

    #[test]
    fn quantile_dists_are_checked() {
        let good = Dist::Quantiles {
            points: vec![[0.0, 1.0], [0.5, 2.0], [1.0, 4.0]],
        };
        assert!(good.check().is_ok());
        assert!((good.mean() - 2.25).abs() < 1e-12);
        let falling = Dist::Quantiles {
            points: vec![[0.0, 3.0], [1.0, 2.0]],
        };
        assert!(falling.check().is_err());
        assert!(Dist::constant(-1.0).check().is_err());
    }

    #[test]
    fn a_config_reads_back() {
        let config = SimConfig {
            cpus: 1,
            duration_s: 1.0,
            seed: 7,
            sources: vec![],
            tasks: vec![Task {
                name: "rt".into(),
                cpu: 0,
                priority: Priority::Fifo(80),
                kind: TaskKind::Hog,
            }],
            costs: Costs::default(),
            limits: Limits::default(),
            designs: Design::six(),
        };
        let text = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<SimConfig>(&text).unwrap(), config);
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    /// An edit of the example model and what the check must say of it.
    type Case = (fn(&mut SimConfig), &'static str);

    #[test]
    fn each_bound_of_a_model_is_refused_with_its_message() {
        assert_eq!(SimConfig::example().check(), Ok(()));
        let cases: [Case; 10] = [
            (|c| c.cpus = 1_000_000_000, "cpus must be 1 to 1024"),
            (
                |c| c.duration_s = 1e9,
                "duration_s must be a number from 0 to 1000000, not 1e9",
            ),
            (|c| c.duration_s = f64::NAN, "duration_s must be > 0"),
            (
                |c| c.sources[0].arrival = Arrival::Poisson { rate_per_s: 1e308 },
                "rate_per_s must be a number from 0 to 1e8, not 1e308",
            ),
            (
                |c| {
                    c.sources[0].arrival = Arrival::Periodic {
                        period_us: 1e-300,
                        phase_us: 0.0,
                    }
                },
                "period_us must be a number from 0.01",
            ),
            (
                |c| c.sources[0].ring = u32::MAX,
                "ring must be 0 to 1048576",
            ),
            (
                |c| c.sources[0].thread_nice = Some(20),
                "thread_nice must be -20 to 19, not 20",
            ),
            (|c| c.costs.wakeup = Dist::constant(1e308), "costs.wakeup"),
            (|c| c.limits.base_slice_us = 1e-300, "the limits' times"),
            (
                |c| {
                    if let TaskKind::Consumer { socket_queue, .. } = &mut c.tasks[0].kind {
                        *socket_queue = u32::MAX;
                    }
                },
                "socket_queue must be 1 to 1048576",
            ),
        ];
        for (edit, message) in cases {
            let mut config = SimConfig::example();
            edit(&mut config);
            let err = config.check().unwrap_err();
            assert!(err.contains(message), "{message}: {err}");
            assert!(err.len() < 120, "{err}");
        }
    }

    #[test]
    fn a_calibrations_costs_and_trial_costs_are_checked() {
        let mut calibration = Calibration {
            header: crate::run::Header::new("sim-calibration"),
            measured: vec![],
            costs: Costs::default(),
            limits: Limits::default(),
            trial: vec![],
        };
        assert_eq!(calibration.check(), Ok(()));
        calibration.limits.netdev_budget_usecs = f64::INFINITY;
        assert!(
            calibration
                .check()
                .unwrap_err()
                .contains("the limits' times")
        );
        calibration.limits = Limits::default();
        calibration.costs.dis_deferrable = f64::NAN;
        assert!(calibration.check().unwrap_err().contains("dis_deferrable"));
    }
}
