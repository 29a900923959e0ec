//! `irqlens trial net`: bottom-half designs measured side by side under a UDP echo load
//! (Chubb & Song, "Interrupts Considered Harmful"): the options, one result per design
//! and offered rate, and the JSON document.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::time::Duration;

use crate::bounds::{Check, Checked, check_cpus, check_time, finite_within, within};
pub use crate::design::Design;
use crate::design::{BusyPoll, DEFAULT_BUSY_POLL_US};
use crate::sched::Priority;
use crate::units::CpuList;

/// What `irqlens trial net` measures, and how.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TrialOptions {
    /// The CPU that receives: its bottom half, the echo server and the cyclic task.
    pub receiving_cpu: u32,
    /// The CPU the load generator (and the echo collector) runs on.
    pub sending_cpu: u32,
    /// The offered rates, packets/s, lowest first.
    pub rates: Vec<u64>,
    /// The designs, in the order measured.
    pub designs: Vec<Design>,
    /// How many times the whole ladder (every design at every rate) is measured, one
    /// round after the other (older recordings: 1).
    #[serde(default = "one_round")]
    pub rounds: u32,
    /// How long each point is measured, ns.
    pub duration_ns: u64,
    /// How long each point runs before it is measured, ns.
    pub warm_up_ns: u64,
    /// The UDP payload, bytes (a sequence number and the send time, then zeros).
    pub payload_bytes: usize,
    /// The echo server's (the consumer's) nice.
    pub consumer_nice: i32,
    /// The NAPI thread's nice in `threaded-niced` (the consumer's + 5 unless told, as the
    /// slides settled on for their echo; older recordings: the consumer's).
    pub napi_nice: i32,
    /// The NAPI thread's SCHED_FIFO priority in `threaded-fifo`.
    pub napi_fifo_priority: u32,
    /// The cyclic task's scheduling (irqlens wakeup's timer thread), as `f:95`.
    #[schemars(with = "String")]
    pub cyclic_priority: Priority,
    /// The cyclic task's period, ns.
    pub cyclic_period_ns: u64,
    /// `net.core.netdev_budget` in the `+budget` designs that give no count of their own
    /// (packets per NET_RX round).
    pub budget_packets: u32,
    /// `net.core.netdev_budget_usecs` in the `+budget` designs; none: left as it is (the
    /// kernel refuses less than 2 jiffies).
    pub budget_usecs: Option<u32>,
}

impl TrialOptions {
    /// The CPUs the test bed uses.
    pub fn cpus(&self) -> CpuList {
        [self.sending_cpu, self.receiving_cpu].into_iter().collect()
    }

    /// The `net.core.netdev_budget` the bed of `design` sets, if it caps the budget:
    /// `+budget=N` gives N, `+budget` this trial's `--budget`. The sysctl is set per bed
    /// and put back after each point, so a design's own count costs nothing and lets one
    /// trial put budgets side by side; `--budget` stays the count of the plain `+budget`
    /// (the slides' 32 unless told).
    pub fn budget_of(&self, design: &Design) -> Option<u32> {
        design
            .budget
            .map(|budget| budget.packets(self.budget_packets))
    }
}

/// What a design sets on the receiving veth to defer its NAPI's "IRQs" (veth's peer
/// schedules the NAPI at each transmit unless masked): `napi_defer_hard_irqs` and
/// `gro_flush_timeout`, ns (the design spells µs), per device in sysfs.
pub fn defer_knobs(design: &Design) -> Option<(u32, u64)> {
    design
        .defer
        .map(|defer| (defer.hard_irqs, u64::from(defer.flush_timeout_us) * 1_000))
}

/// How a design's echo server busy polls its socket's NAPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoBusyPoll {
    /// SO_BUSY_POLL, µs: how long a blocking receive polls before it sleeps.
    pub usecs: u32,
    /// SO_PREFER_BUSY_POLL: with deferral, the NAPI stays masked while the server polls
    /// (net/core/dev.c: a precondition is a non-zero napi_defer_hard_irqs and
    /// gro_flush_timeout).
    pub prefer: bool,
    /// Non-blocking receives in a loop that never sleeps (`busy-poll=always`, the full
    /// busy poll): each receive polls the NAPI once.
    pub spins: bool,
}

/// The busy polling of `design`'s echo server, if it busy polls.
pub fn echo_busy_poll(design: &Design) -> Option<EchoBusyPoll> {
    let busy_poll = design.busy_poll?;
    Some(EchoBusyPoll {
        // a non-blocking receive polls once whatever the time, but only if it is not 0
        usecs: busy_poll.usecs().unwrap_or(DEFAULT_BUSY_POLL_US),
        prefer: design.defer.is_some(),
        spins: busy_poll == BusyPoll::Always,
    })
}

/// What today's NAPI mechanisms set and did at a point (measured at every point, so
/// that `stock` shows what they change).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NapiFigures {
    /// The receiving veth's `napi_defer_hard_irqs`, read back after the window.
    pub defer_hard_irqs: Option<u32>,
    /// Its `gro_flush_timeout`, ns, read back after the window.
    pub gro_flush_timeout_ns: Option<u64>,
    /// The echo socket's SO_BUSY_POLL, µs, read back (0: it does not busy poll).
    pub busy_poll_us: u32,
    /// The echo socket's SO_PREFER_BUSY_POLL, read back.
    pub prefer_busy_poll: bool,
    /// The echo socket's SO_INCOMING_NAPI_ID at the end: the NAPI its datagrams came
    /// through, which its busy polls poll (0: none the kernel could give).
    pub echo_napi_id: u32,
    /// NET_RX softirq runs on the receiving CPU in the window (/proc/softirqs): RPS's
    /// protocol work in `stock`.
    pub receiving_net_rx: u64,
    /// NET_RX softirq runs on the sending CPU in the window: where veth's peer (the
    /// load's transmit) or deferral's timer schedules the receiving NAPI in softirq
    /// designs, and where the echoes are received.
    pub sending_net_rx: u64,
    /// Packets busy polls took from the receiving veth in the window
    /// (`BusyPollRxPackets` of its namespace's /proc/net/netstat): veth's packets, each
    /// a UDP GSO batch of up to 8 datagrams.
    pub busy_polled: Option<u64>,
}

/// Quantiles of a latency, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EchoLatency {
    /// Echoes measured.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
}

/// The cyclic task's latency at one point (irqlens wakeup, timer mode, on the
/// receiving CPU).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CyclicLatency {
    /// Activations measured.
    pub activations: u64,
    /// Mean total latency (expiry to the thread's clock read), ns.
    pub avg_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// The cause that took the most time in the decomposed samples, as wakeup names it.
    pub top_cause: Option<String>,
    /// Its share of the decomposed samples' latency, percent.
    pub top_cause_percent: Option<f64>,
}

/// Where the receiving CPU's time went during a point, percent of the elapsed time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuSplit {
    /// User time (the echo server and the cyclic task), nice included.
    pub user_percent: f64,
    /// Kernel time outside the NAPI thread (system calls: the echo's receive and send).
    pub system_percent: f64,
    /// Softirq time (NET_RX in `softirq`).
    pub softirq_percent: f64,
    /// Hard IRQ time.
    pub irq_percent: f64,
    /// The NAPI thread's time (threaded designs), taken out of system time.
    pub napi_thread_percent: f64,
    /// Idle (and iowait).
    pub idle_percent: f64,
}

/// The window's time, ns, from counters that do not sample (idle residency, the
/// scheduler's sum_exec_runtime), where the CPU split's busy columns sample at the tick:
/// a CPU busy in short bursts reads its softirq or system share wrong there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Runtimes {
    /// The window's length.
    pub window_ns: u64,
    /// The receiving CPU out of idle: the window less cpuidle's residency, or without
    /// cpuidle less /proc/stat's idle (exact where the kernel stops the tick in idle).
    /// Absent in recordings made without cpuidle before 2026-11-28.
    pub busy_ns: Option<u64>,
    /// How many times the receiving CPU entered an idle state (cpuidle's count; none
    /// without cpuidle).
    #[serde(default)]
    pub idle_entries: Option<u64>,
    /// The sending CPU out of idle, as `busy_ns` (the generator, the collector and their
    /// network stack).
    #[serde(default)]
    pub sender_busy_ns: Option<u64>,
    /// The echo server's thread (with the softirqs that ran in it).
    pub echo_ns: u64,
    /// How many times the echo server blocked (waited for a datagram).
    #[serde(default)]
    pub echo_sleeps: Option<u64>,
    /// The NAPI threads (threaded designs).
    pub napi_ns: u64,
    /// How many times the NAPI threads blocked (waited for packets).
    #[serde(default)]
    pub napi_sleeps: Option<u64>,
}

/// The first round's number (and the only one of older recordings).
pub(crate) fn one_round() -> u32 {
    1
}

/// One design at one offered rate, in one round.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TrialPoint {
    /// The design.
    pub design: Design,
    /// The rate asked of the load generator, packets/s.
    pub offered_pps: u64,
    /// The round it was measured in, from 1.
    #[serde(default = "one_round")]
    pub round: u32,
    /// Datagrams sent while measuring.
    pub sent: u64,
    /// Sent per second (below offered when the sending CPU cannot keep up).
    pub sent_pps: f64,
    /// Of those, echoed back.
    pub echoed: u64,
    /// Echoed per second.
    pub echoed_pps: f64,
    /// Sent but not echoed, percent.
    pub loss_percent: f64,
    /// Send to echo received, per echo; none if nothing came back.
    pub echo_latency: Option<EchoLatency>,
    /// The cyclic task's latency; none if it measured nothing.
    pub cyclic: Option<CyclicLatency>,
    /// The receiving CPU's time.
    pub cpu: CpuSplit,
    /// The NAPI threads' scheduling at the end of the measuring window (`o:NICE`,
    /// `f:PRIO`; threaded designs): what the design set, or steer chose (process-aware).
    #[serde(default)]
    pub napi_scheduling: Vec<String>,
    /// The exact times of the window (older recordings have none).
    #[serde(default)]
    pub runtimes: Option<Runtimes>,
    /// The NAPI mechanisms' settings and counts (older recordings have none).
    #[serde(default)]
    pub napi: Option<NapiFigures>,
}

/// How one design behaved over the ladder.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DesignSummary {
    /// The design.
    pub design: Design,
    /// The knee: the highest offered rate at which at least half of the rounds echoed
    /// `FOLLOWING_SHARE` of what was sent (a rate below it that did not is not the
    /// knee); none if no rate did.
    pub follows_up_to_pps: Option<u64>,
    /// Each round's own knee by the same rule, in round order (older recordings: none).
    #[serde(default)]
    pub follows_up_to_by_round_pps: Vec<Option<u64>>,
    /// The most echoed per second at any rate (the median of its rounds).
    pub peak_echoed_pps: f64,
    /// The offered rate of that peak.
    pub peak_at_offered_pps: u64,
    /// Echoed per second at the highest offered rate (the median of its rounds).
    pub echoed_at_highest_pps: f64,
    /// The cyclic task's largest latency over the ladder, ns.
    pub cyclic_max_ns: Option<u64>,
}

/// One figure over a rate's rounds: their median and the lowest and highest round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// The median of the rounds.
    pub median: f64,
    /// The lowest round.
    pub low: f64,
    /// The highest round.
    pub high: f64,
}

impl Spread {
    /// How far the rounds differ among themselves.
    pub fn width(&self) -> f64 {
        self.high - self.low
    }
}

/// How a design's figure stands against the baseline's at one rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// Higher by more than either design's rounds differ among themselves.
    Higher,
    /// Lower by more than either design's rounds differ among themselves.
    Lower,
    /// Within the rounds' spread: no difference the trial can tell.
    Within,
}

/// One figure of a design and of the baseline at one rate, and their difference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Compared {
    /// The design's rounds.
    pub design: Spread,
    /// The baseline's rounds.
    pub baseline: Spread,
    /// The design against the baseline.
    pub difference: Difference,
}

/// A design against the trial's first design (the baseline) at one offered rate, on
/// the medians of their rounds (two rounds at least: one round has no spread to judge by).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Comparison {
    /// The offered rate, packets/s.
    pub offered_pps: u64,
    /// The design.
    pub design: Design,
    /// The trial's first design.
    pub baseline: Design,
    /// Echoed per second.
    pub echoed_pps: Compared,
    /// The echo's median latency, ns (none if either echoed nothing).
    pub echo_p50_ns: Option<Compared>,
    /// The cyclic task's largest latency, ns (none if either measured nothing).
    pub cyclic_max_ns: Option<Compared>,
}

/// The JSON document of `irqlens trial net`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TrialReport {
    /// Which tool and version; the command is always "trial".
    #[serde(flatten)]
    pub header: crate::run::Header,
    /// What was put under load: "net".
    pub load: String,
    /// The kernel release measured.
    pub kernel: String,
    /// The CPUs used (sending, receiving).
    pub cpus: CpuList,
    /// The options.
    pub options: TrialOptions,
    /// Whether Ctrl-C/SIGTERM cut the ladder short (the points after it were not run).
    pub interrupted: bool,
    /// One per design, rate and round, in the order measured.
    pub points: Vec<TrialPoint>,
    /// One per design.
    pub designs: Vec<DesignSummary>,
    /// Each design but the first against the first, rate by rate (with two rounds or more).
    #[serde(default)]
    pub comparisons: Vec<Comparison>,
}

impl TrialReport {
    /// The points of one design by offered rate, each rate's rounds in order.
    pub fn points_of(&self, design: Design) -> Vec<&TrialPoint> {
        let mut ladder: Vec<&TrialPoint> =
            self.points.iter().filter(|p| p.design == design).collect();
        ladder.sort_by_key(|p| (p.offered_pps, p.round));
        ladder
    }
}

/// How many nice levels below its consumer `threaded-niced` puts the NAPI thread unless
/// told (`--napi-nice`): the slides' setting.
pub const NAPI_NICE_BELOW_CONSUMER: i32 = 5;

/// Datagrams in one send of trial's load generator (one GSO packet). Small: veth's NAPI
/// polls 64 packets with bottom halves off, each segmented into this many datagrams, and
/// with bottom halves off its thread cannot be preempted: larger batches would make every
/// design look non-preemptible.
pub const SEND_BATCH: u32 = 8;

/// How far trial's load generator may fall behind its schedule before it gives up on
/// the datagrams it is late for (they count as offered, not sent), ns: what one of its
/// wakeups sends at most.
pub const GENERATOR_MAX_LAG_NS: u64 = 10_000_000;

/// The highest offered rate (`--rates`), datagrams/s.
pub const MAX_RATE: u64 = 10_000_000;
/// The UDP payload's bounds (`--payload`), bytes: a sequence number and a send time, and
/// what fits a 1500-byte MTU.
pub const PAYLOAD_BYTES: std::ops::RangeInclusive<usize> = 16..=1400;

impl Check for TrialOptions {
    /// Whether `irqlens trial net` takes them (see [`crate::bounds`]).
    fn check(&self) -> Checked {
        check_cpus("--receiving-cpu/--sending-cpu", &self.cpus())?;
        if self.rates.is_empty() {
            return Err("--rates: no rate".into());
        }
        for &rate in &self.rates {
            within("--rates", rate, 1, MAX_RATE)?;
        }
        if self.designs.is_empty() {
            return Err("--designs: no design".into());
        }
        if let Some(refusal) = self.designs.iter().find_map(Design::trial_refusal) {
            return Err(format!("--designs: {refusal}"));
        }
        check_time("--duration", Duration::from_nanos(self.duration_ns), false)?;
        check_time("--warm-up", Duration::from_nanos(self.warm_up_ns), true)?;
        within(
            "--payload",
            self.payload_bytes,
            *PAYLOAD_BYTES.start(),
            *PAYLOAD_BYTES.end(),
        )?;
        within("--consumer-nice", self.consumer_nice, -20, 19)?;
        within("--napi-nice", self.napi_nice, -20, 19)?;
        within("--napi-priority", self.napi_fifo_priority, 1, 99)?;
        let period = Duration::from_nanos(self.cyclic_period_ns);
        if !(crate::wakeup::MIN_PERIOD..=crate::wakeup::MAX_PERIOD).contains(&period) {
            return Err("--period must be 100 us to 10 s".into());
        }
        within("--budget", self.budget_packets, 1, u32::MAX)?;
        if let Some(usecs) = self.budget_usecs {
            within("--budget-usecs", usecs, 1, u32::MAX)?;
        }
        Ok(())
    }
}

impl Check for TrialReport {
    /// Its options, and every point's figures finite and within what a point can measure
    /// (a hostile file's NaN or 1e308 would reach the simulation and the tables).
    fn check(&self) -> Checked {
        self.options.check()?;
        for point in &self.points {
            let bad = |e: String| {
                format!(
                    "the point of {} at {}/s: {e}",
                    point.design, point.offered_pps
                )
            };
            within("offered_pps", point.offered_pps, 0, MAX_RATE).map_err(bad)?;
            let cpu = &point.cpu;
            let percents = [
                ("loss_percent", point.loss_percent),
                ("cpu.user_percent", cpu.user_percent),
                ("cpu.system_percent", cpu.system_percent),
                ("cpu.softirq_percent", cpu.softirq_percent),
                ("cpu.irq_percent", cpu.irq_percent),
                ("cpu.napi_thread_percent", cpu.napi_thread_percent),
                ("cpu.idle_percent", cpu.idle_percent),
            ];
            let top_cause = point.cyclic.as_ref().and_then(|c| c.top_cause_percent);
            for (what, percent) in percents
                .into_iter()
                .chain(top_cause.map(|p| ("cyclic.top_cause_percent", p)))
            {
                finite_within(what, percent, 0.0, 100.0).map_err(bad)?;
            }
            for (what, rate) in [
                ("sent_pps", point.sent_pps),
                ("echoed_pps", point.echoed_pps),
            ] {
                finite_within(what, rate, 0.0, MAX_RATE as f64 * 2.0).map_err(bad)?;
            }
        }
        for design in &self.designs {
            finite_within("peak_echoed_pps", design.peak_echoed_pps, 0.0, f64::MAX)
                .and_then(|()| {
                    finite_within(
                        "echoed_at_highest_pps",
                        design.echoed_at_highest_pps,
                        0.0,
                        f64::MAX,
                    )
                })
                .map_err(|e| format!("design {}: {e}", design.design))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options as an older trial recorded them: its own spelling of the designs.
    const OLD_OPTIONS: &str = r#"{"receiving_cpu": 1, "sending_cpu": 0, "rates": [20000],
        "designs": ["softirq", "threaded-fifo", "threaded-niced", "budget", "process-aware"],
        "duration_ns": 3000000000, "warm_up_ns": 500000000, "payload_bytes": 64,
        "consumer_nice": -10, "napi_nice": -10, "napi_fifo_priority": 50,
        "cyclic_priority": "f:95", "cyclic_period_ns": 500000, "budget_packets": 16,
        "budget_usecs": null}"#;

    #[test]
    fn an_old_trials_designs_read_and_are_written_in_the_one_spelling() {
        let options: TrialOptions = serde_json::from_str(OLD_OPTIONS).unwrap();
        assert_eq!(options.check(), Ok(()));
        let written = serde_json::to_value(&options).unwrap();
        assert_eq!(
            written["designs"],
            serde_json::json!([
                "stock",
                "threaded-fifo",
                "threaded-niced",
                "stock+budget",
                "threaded-fifo+process-aware"
            ])
        );
        // the old `budget` took --budget's count, as the plain `+budget` does
        assert_eq!(options.budget_of(&options.designs[3]), Some(16));
        assert_eq!(options.budget_of(&options.designs[0]), None);
        assert_eq!(
            options.budget_of(&"stock+budget=8".parse().unwrap()),
            Some(8)
        );
    }

    #[test]
    fn a_design_sets_the_knobs_and_socket_options_it_names() {
        let design = |text: &str| text.parse::<Design>().unwrap();
        assert_eq!(defer_knobs(&design("stock")), None);
        assert_eq!(
            defer_knobs(&design("threaded-fifo+defer=100:20")),
            Some((100, 20_000))
        );
        assert_eq!(echo_busy_poll(&design("stock+defer=100:20")), None);
        assert_eq!(
            echo_busy_poll(&design("stock+busy-poll")),
            Some(EchoBusyPoll {
                usecs: DEFAULT_BUSY_POLL_US,
                prefer: false,
                spins: false
            })
        );
        // with deferral the server prefers its busy poll to the NAPI's softirq
        assert_eq!(
            echo_busy_poll(&design("stock+defer=2:50+busy-poll=10")),
            Some(EchoBusyPoll {
                usecs: 10,
                prefer: true,
                spins: false
            })
        );
        let always = echo_busy_poll(&design("stock+busy-poll=always")).unwrap();
        assert!(always.spins && always.usecs > 0 && !always.prefer);
    }

    #[test]
    fn a_design_trial_cannot_build_is_refused_by_name() {
        let mut options: TrialOptions = serde_json::from_str(OLD_OPTIONS).unwrap();
        options
            .designs
            .push("threaded-fifo+ihm-dis".parse().unwrap());
        let err = options.check().unwrap_err();
        assert!(
            err.starts_with("--designs: trial cannot build threaded-fifo+ihm-dis: "),
            "{err}"
        );
    }
}
