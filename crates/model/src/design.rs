//! An interrupt-handling design, as `irqlens sim` simulates it and `irqlens trial net`
//! builds it: one type and one spelling, `stock`, `threaded-fifo` or `threaded-niced`, with
//! `+budget[=N]`, `+ihm`, `+ihm-dis`, `+process-aware` (e.g. `threaded-niced+budget`), and
//! today's NAPI mechanisms: `+defer=N:T`, `+busy-poll[=US|always]`, `+suspend=US`,
//! `+thread-busy-poll` (e.g. `stock+defer=100:20+busy-poll=10+suspend=20000`).
//! Trial builds all but handler migration, suspension and threaded busy polling
//! ([`Design::trial_refusal`]); documents written before the
//! two commands shared it spell trial's designs otherwise, and still read.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where bottom halves run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BottomHalves {
    /// Softirq at hardirq exit, then ksoftirqd (a stock kernel). Trial: NAPI in softirq,
    /// NET_RX steered to the receiving CPU by RPS.
    Stock,
    /// A thread per source at SCHED_FIFO (the irq-thread default, what PREEMPT_RT does).
    /// Trial: threaded NAPI, the `napi/DEV-N` thread at `--napi-priority`.
    ThreadedFifo,
    /// A thread per source at SCHED_OTHER, at its consumer's nice (003, the slides' fix)
    /// unless a sim model's source sets another. Trial: at `--napi-nice`.
    ThreadedNiced,
}

/// How the interrupt handler reaches its target process (001).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Migration {
    /// No migration.
    None,
    /// Interrupt handler migration (001 §3): when the target waits, the hardirq wakes it
    /// and the bottom half runs in its context.
    Ihm,
    /// IHM plus direct interrupt scheduling (001 §4): for an urgent target, the
    /// deferrable part of wakeup and switch runs after the target.
    IhmDis,
}

/// A design's cap on the packets a bottom half handles in one go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Budget {
    /// `+budget`: the command's own count (sim: [`DEFAULT_BUDGET`]; trial: `--budget`).
    Default,
    /// `+budget=N`: N packets.
    Packets(u32),
}

impl Budget {
    /// The count, `default` for [`Budget::Default`].
    pub fn packets(self, default: u32) -> u32 {
        match self {
            Budget::Default => default,
            Budget::Packets(packets) => packets,
        }
    }
}

/// Deferred hard IRQs: a NAPI's `napi_defer_hard_irqs` and `gro_flush_timeout` (per
/// device in sysfs, per NAPI through netdev netlink since 6.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Defer {
    /// `napi_defer_hard_irqs`: empty polls in a row, each a timer apart, before the
    /// device's IRQ is enabled again.
    pub hard_irqs: u32,
    /// `gro_flush_timeout`, µs: the timer that polls instead of the IRQ.
    pub flush_timeout_us: u32,
}

/// How long a consumer busy polls its NAPI when its socket is empty before it sleeps
/// (`SO_BUSY_POLL`, net.core.busy_read, epoll's `busy_poll_usecs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusyPoll {
    /// `+busy-poll`: [`DEFAULT_BUSY_POLL_US`].
    Default,
    /// `+busy-poll=US`; 0: one poll, then it sleeps (epoll's busy poll with
    /// prefer_busy_poll and busy_poll_usecs 0, as the IRQ-suspension series sets it).
    Usecs(u32),
    /// `+busy-poll=always`: it never sleeps (a full busy poll, a CPU at 100%).
    Always,
}

impl BusyPoll {
    /// Its time, µs; none for [`BusyPoll::Always`].
    pub fn usecs(self) -> Option<u32> {
        match self {
            BusyPoll::Default => Some(DEFAULT_BUSY_POLL_US),
            BusyPoll::Usecs(us) => Some(us),
            BusyPoll::Always => None,
        }
    }
}

/// The busy-poll time the kernel's documentation recommends (net.core.busy_read and
/// busy_poll in Documentation/admin-guide/sysctl/net.rst: "Recommended value is 50").
pub const DEFAULT_BUSY_POLL_US: u32 = 50;

/// The largest `napi_defer_hard_irqs`: net/core/net-sysfs.c and netdev netlink refuse
/// more than S32_MAX.
pub const MAX_DEFER_HARD_IRQS: u32 = i32::MAX as u32;

/// The largest busy-poll time, µs: epoll's EPIOCSPARAMS refuses a `busy_poll_usecs`
/// above S32_MAX (and SO_BUSY_POLL takes an int).
pub const MAX_BUSY_POLL_US: u32 = i32::MAX as u32;

/// The longest `gro_flush_timeout` and `irq-suspend-timeout` a design takes, µs (1 s).
/// The kernel takes any 64-bit count of ns; past a second the timer is no longer a
/// poll interval or a safety net but an outage, and the simulation's time is bounded.
pub const MAX_NAPI_TIMEOUT_US: u32 = 1_000_000;

/// An interrupt-handling design: where bottom halves run, and what is changed on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Design {
    /// Where bottom halves run.
    pub bottom_halves: BottomHalves,
    /// Packets per non-preemptible batch and per net_rx_action (003: 32); trial sets
    /// net.core.netdev_budget to it.
    pub budget: Option<Budget>,
    /// Handler migration.
    pub migration: Migration,
    /// Bottom halves at the priority of the process they serve (004 §3.2); trial's NAPI
    /// thread kept there by irqlens steer.
    pub process_aware: bool,
    /// Deferred hard IRQs (`+defer=N:T`).
    pub defer: Option<Defer>,
    /// The consumers busy poll (`+busy-poll[=US|always]`); with `defer`, with
    /// SO_PREFER_BUSY_POLL (the IRQ stays masked while the application polls).
    pub busy_poll: Option<BusyPoll>,
    /// IRQ suspension (`+suspend=US`, Linux 6.13): `irq-suspend-timeout`, µs. Only with
    /// `defer` and `busy_poll`.
    pub suspend_us: Option<u32>,
    /// Threaded busy polling (`+thread-busy-poll`, netdev netlink's `napi-set` with
    /// `threaded` = `busy-poll`, Linux 6.19: 6.18 lacks it): the NAPI thread polls without
    /// end and never enables the IRQ again. Only with a `threaded-*` design.
    pub thread_busy_poll: bool,
}

/// 003's batch cap: sim's `+budget`.
pub const DEFAULT_BUDGET: u32 = 32;

impl Design {
    /// A design with no option.
    pub fn plain(bottom_halves: BottomHalves) -> Self {
        Design {
            bottom_halves,
            budget: None,
            migration: Migration::None,
            process_aware: false,
            defer: None,
            busy_poll: None,
            suspend_us: None,
            thread_busy_poll: false,
        }
    }

    /// Whether it uses one of today's NAPI mechanisms (deferral, busy polling,
    /// suspension, threaded busy polling).
    pub fn napi_mechanisms(&self) -> bool {
        self.defer.is_some()
            || self.busy_poll.is_some()
            || self.suspend_us.is_some()
            || self.thread_busy_poll
    }

    /// The six designs sim compares by default.
    pub fn six() -> Vec<Design> {
        [
            "stock",
            "threaded-fifo",
            "threaded-niced+budget",
            "threaded-fifo+ihm",
            "threaded-fifo+ihm-dis",
            "stock+process-aware",
        ]
        .into_iter()
        .map(|text| text.parse().expect("known design"))
        .collect()
    }

    /// Whether the design itself puts bottom halves in threads (`threaded-*`).
    pub fn threaded(&self) -> bool {
        self.bottom_halves != BottomHalves::Stock
    }

    /// Why `irqlens trial net` cannot build this design, if it cannot. Trial builds what a
    /// stock kernel can be set to and its veth test bed shows: handler migration is not in
    /// Linux; IRQ suspension needs a device IRQ (veth has none: its peer's transmit
    /// schedules its NAPI) and threaded busy polling Linux 6.19; its busy poll is the echo
    /// server's socket's (SO_BUSY_POLL), which has no single poll of epoll's
    /// `busy_poll_usecs` 0; and its process-aware design is threaded-fifo's NAPI thread
    /// that irqlens steer then keeps at its consumer's priority (004's interrupt-level
    /// scheduler under `stock` is not a thread steer can move).
    pub fn trial_refusal(&self) -> Option<String> {
        let why = if self.migration != Migration::None {
            "handler migration (+ihm, +ihm-dis) is not in Linux: irqlens sim simulates it"
        } else if self.suspend_us.is_some() || self.thread_busy_poll {
            "IRQ suspension (+suspend) needs a device IRQ, which veth lacks (its peer's \
             transmit schedules its NAPI), and threaded busy polling (+thread-busy-poll) \
             Linux 6.19: irqlens sim simulates them"
        } else if self.busy_poll == Some(BusyPoll::Usecs(0)) {
            "busy-poll=0 is epoll's single poll (the IRQ-suspension series' setting); the \
             echo server busy polls its socket (SO_BUSY_POLL): give it µs, or 'always'"
        } else if self.process_aware && self.bottom_halves != BottomHalves::ThreadedFifo {
            "its process-aware design is threaded-fifo+process-aware (the NAPI thread \
             steered from SCHED_FIFO)"
        } else {
            return None;
        };
        Some(format!("trial cannot build {self}: {why}"))
    }

    /// How `irqlens trial net` spelled its designs before it shared this type with sim:
    /// `softirq` is `stock`, `budget` is `stock+budget`, `process-aware` is
    /// `threaded-fifo+process-aware`, each with an optional `+budget`.
    fn trial_spelling(text: &str) -> Option<Design> {
        let (name, budget) = match text.strip_suffix("+budget") {
            Some(name) => (name, Some(Budget::Default)),
            None => (text, None),
        };
        let design = match name {
            "softirq" => Design::plain(BottomHalves::Stock),
            "budget" if budget.is_none() => Design {
                budget: Some(Budget::Default),
                ..Design::plain(BottomHalves::Stock)
            },
            "process-aware" => Design {
                process_aware: true,
                ..Design::plain(BottomHalves::ThreadedFifo)
            },
            _ => return None,
        };
        Some(Design {
            budget: design.budget.or(budget),
            ..design
        })
    }
}

impl FromStr for Design {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let mut parts = text.split('+');
        let bottom_halves = match parts.next().unwrap_or_default() {
            "stock" => BottomHalves::Stock,
            "threaded-fifo" => BottomHalves::ThreadedFifo,
            "threaded-niced" => BottomHalves::ThreadedNiced,
            other => {
                // the command line takes one spelling; a recording's old one reads
                // (Deserialize), and the error names the new one
                let new_spelling = Design::trial_spelling(text)
                    .map(|design| format!(": trial's old '{text}' is now '{design}'"))
                    .unwrap_or_default();
                return Err(format!(
                    "'{other}' is not a design (stock, threaded-fifo, threaded-niced){new_spelling}"
                ));
            }
        };
        let mut design = Design::plain(bottom_halves);
        for option in parts {
            match option.split_once('=') {
                None if option == "budget" => design.budget = Some(Budget::Default),
                Some(("budget", n)) => match n.parse::<u32>() {
                    Ok(n @ 1..) => design.budget = Some(Budget::Packets(n)),
                    _ => return Err(format!("'{text}': budget is a packet count >= 1")),
                },
                None if option == "ihm" => design.migration = Migration::Ihm,
                None if option == "ihm-dis" => design.migration = Migration::IhmDis,
                None if option == "process-aware" => design.process_aware = true,
                Some(("defer", value)) => design.defer = Some(parse_defer(text, value)?),
                None if option == "busy-poll" => design.busy_poll = Some(BusyPoll::Default),
                Some(("busy-poll", "always")) => design.busy_poll = Some(BusyPoll::Always),
                Some(("busy-poll", us)) => {
                    let us = parse_count(text, "busy-poll", us, (0, MAX_BUSY_POLL_US), "always")?;
                    design.busy_poll = Some(BusyPoll::Usecs(us));
                }
                Some(("suspend", us)) => {
                    design.suspend_us = Some(parse_count(
                        text,
                        "suspend",
                        us,
                        (1, MAX_NAPI_TIMEOUT_US),
                        "",
                    )?);
                }
                None if option == "thread-busy-poll" => design.thread_busy_poll = true,
                _ => {
                    return Err(format!(
                        "'{text}': '{option}' is not an option (budget[=N], ihm, ihm-dis, \
                         process-aware, defer=N:T, busy-poll[=US|always], suspend=US, \
                         thread-busy-poll)"
                    ));
                }
            }
        }
        if design.suspend_us.is_some() && (design.defer.is_none() || design.busy_poll.is_none()) {
            // net/core/dev.c: irq-suspend-timeout acts only through epoll's busy poll with
            // prefer_busy_poll, over a NAPI whose IRQs are deferred
            return Err(format!(
                "'{text}': suspend needs defer and busy-poll (the kernel suspends IRQs only \
                 while a busy-polling application finds events, over deferred IRQs)"
            ));
        }
        if design.thread_busy_poll && !design.threaded() {
            return Err(format!(
                "'{text}': thread-busy-poll is the NAPI thread's: it needs threaded-fifo or \
                 threaded-niced"
            ));
        }
        Ok(design)
    }
}

/// A count from `min` to `max` for `option` of the design `text` (`also` names another
/// value the option takes, if any).
fn parse_count(
    text: &str,
    option: &str,
    value: &str,
    (min, max): (u32, u32),
    also: &str,
) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => {
            let also = if also.is_empty() {
                String::new()
            } else {
                format!(" or '{also}'")
            };
            Err(format!(
                "'{text}': {option} is a count of µs from {min} to {max}{also}"
            ))
        }
    }
}

/// `N:T` of `+defer=N:T`.
fn parse_defer(text: &str, value: &str) -> Result<Defer, String> {
    let Some((hard_irqs, timeout)) = value.split_once(':') else {
        return Err(format!(
            "'{text}': defer is N:T, napi_defer_hard_irqs and gro_flush_timeout in µs (defer=100:20)"
        ));
    };
    match hard_irqs.parse::<u32>() {
        Ok(n) if (1..=MAX_DEFER_HARD_IRQS).contains(&n) => Ok(Defer {
            hard_irqs: n,
            flush_timeout_us: parse_count(
                text,
                "defer's T",
                timeout,
                (1, MAX_NAPI_TIMEOUT_US),
                "",
            )?,
        }),
        _ => Err(format!(
            "'{text}': defer's N (napi_defer_hard_irqs) is from 1 to {MAX_DEFER_HARD_IRQS}"
        )),
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.bottom_halves {
            BottomHalves::Stock => "stock",
            BottomHalves::ThreadedFifo => "threaded-fifo",
            BottomHalves::ThreadedNiced => "threaded-niced",
        })?;
        match self.budget {
            Some(Budget::Default) => f.write_str("+budget")?,
            Some(Budget::Packets(n)) => write!(f, "+budget={n}")?,
            None => {}
        }
        if let Some(defer) = self.defer {
            write!(f, "+defer={}:{}", defer.hard_irqs, defer.flush_timeout_us)?;
        }
        match self.busy_poll {
            Some(BusyPoll::Default) => f.write_str("+busy-poll")?,
            Some(BusyPoll::Usecs(us)) => write!(f, "+busy-poll={us}")?,
            Some(BusyPoll::Always) => f.write_str("+busy-poll=always")?,
            None => {}
        }
        if let Some(us) = self.suspend_us {
            write!(f, "+suspend={us}")?;
        }
        if self.thread_busy_poll {
            f.write_str("+thread-busy-poll")?;
        }
        match self.migration {
            Migration::None => {}
            Migration::Ihm => f.write_str("+ihm")?,
            Migration::IhmDis => f.write_str("+ihm-dis")?,
        }
        if self.process_aware {
            f.write_str("+process-aware")?;
        }
        Ok(())
    }
}

/// In JSON, the design's text: `"threaded-niced+budget"`.
impl Serialize for Design {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The design's text, or trial's old spelling of it (older recordings, `--json`
/// documents and calibrations).
impl<'de> Deserialize<'de> for Design {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match Design::trial_spelling(text.trim()) {
            Some(design) => Ok(design),
            None => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl JsonSchema for Design {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Design".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An interrupt-handling design: stock, threaded-fifo or \
                            threaded-niced, with +budget[=N], +ihm, +ihm-dis, +process-aware, \
                            +defer=N:T (T in µs), +busy-poll[=US|always], +suspend=US (with \
                            defer and busy-poll), +thread-busy-poll (threaded only). Older \
                            trial documents: softirq, budget, process-aware, the first and \
                            last with +budget.",
            "type": "string",
            "pattern": "^((stock|threaded-fifo|threaded-niced)(\\+(budget(=[1-9][0-9]*)?|ihm|ihm-dis|process-aware|defer=[1-9][0-9]*:[1-9][0-9]*|busy-poll(=(0|[1-9][0-9]*|always))?|suspend=[1-9][0-9]*|thread-busy-poll))*|softirq(\\+budget)?|budget|process-aware(\\+budget)?)$",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The design `text` parses, displays as `text`, and reads back from its JSON.
    fn assert_round_trips(text: &str) {
        let design: Design = text.parse().unwrap();
        assert_eq!(design.to_string(), text);
        let json = serde_json::to_string(&design).unwrap();
        assert_eq!(serde_json::from_str::<Design>(&json).unwrap(), design);
    }

    #[test]
    fn designs_parse_and_display_alike() {
        for text in [
            "stock",
            "threaded-fifo+ihm-dis",
            "threaded-niced+budget",
            "stock+budget=32",
            "stock+budget=8+process-aware",
        ] {
            assert_round_trips(text);
        }
        for bad in ["", "fast", "stock+ihm2", "stock+budget=0", "stock+budget=x"] {
            assert!(bad.parse::<Design>().is_err(), "{bad}");
        }
        let napi: Design = "stock+defer=100:20+busy-poll=10+suspend=20000"
            .parse()
            .unwrap();
        assert_eq!(
            napi.defer,
            Some(Defer {
                hard_irqs: 100,
                flush_timeout_us: 20
            })
        );
        assert_eq!(napi.busy_poll.and_then(BusyPoll::usecs), Some(10));
        assert_eq!(napi.suspend_us, Some(20_000));
        assert_eq!(
            "stock+busy-poll".parse::<Design>().unwrap().busy_poll,
            Some(BusyPoll::Default)
        );
        assert_eq!(BusyPoll::Default.usecs(), Some(DEFAULT_BUSY_POLL_US));
        assert_eq!(BusyPoll::Always.usecs(), None);
    }

    #[test]
    fn napi_designs_round_trip_and_keep_to_the_kernels_bounds() {
        for text in [
            "stock+defer=1:1",
            "stock+defer=2147483647:1000000",
            "stock+busy-poll",
            "stock+busy-poll=0",
            "stock+busy-poll=2147483647",
            "stock+busy-poll=always",
            "stock+budget=8+defer=100:20+busy-poll+suspend=20000",
            "threaded-niced+thread-busy-poll",
            "threaded-fifo+defer=2:50+thread-busy-poll",
        ] {
            assert_round_trips(text);
        }
        // the options in any order read as the one spelling
        assert_eq!(
            "stock+suspend=5+busy-poll=always+defer=3:4"
                .parse::<Design>()
                .unwrap()
                .to_string(),
            "stock+defer=3:4+busy-poll=always+suspend=5"
        );
        for (bad, says) in [
            (
                "stock+defer=0:20",
                "napi_defer_hard_irqs) is from 1 to 2147483647",
            ),
            ("stock+defer=2147483648:20", "from 1 to 2147483647"),
            (
                "stock+defer=100:0",
                "defer's T is a count of µs from 1 to 1000000",
            ),
            ("stock+defer=100:1000001", "from 1 to 1000000"),
            ("stock+defer=100", "defer is N:T"),
            ("stock+defer", "not an option"),
            (
                "stock+busy-poll=-1",
                "busy-poll is a count of µs from 0 to 2147483647 or 'always'",
            ),
            ("stock+busy-poll=2147483648", "busy-poll is a count"),
            ("stock+busy-poll=never", "busy-poll is a count"),
            ("stock+suspend=20", "suspend needs defer and busy-poll"),
            (
                "stock+defer=100:20+suspend=20",
                "suspend needs defer and busy-poll",
            ),
            (
                "stock+busy-poll+suspend=20",
                "suspend needs defer and busy-poll",
            ),
            ("stock+defer=1:1+busy-poll+suspend=0", "suspend is a count"),
            (
                "stock+thread-busy-poll",
                "needs threaded-fifo or threaded-niced",
            ),
        ] {
            let err = bad.parse::<Design>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(!err.contains('\n') && err.len() < 200, "{err}");
            assert!(serde_json::from_str::<Design>(&format!("\"{bad}\"")).is_err());
        }
        assert_eq!(Design::six().len(), 6);
    }

    #[test]
    fn trials_old_spellings_read_as_the_one_spelling() {
        for (old, new) in [
            ("softirq", "stock"),
            ("budget", "stock+budget"),
            ("softirq+budget", "stock+budget"),
            ("process-aware", "threaded-fifo+process-aware"),
            ("process-aware+budget", "threaded-fifo+budget+process-aware"),
            ("threaded-niced+budget", "threaded-niced+budget"),
        ] {
            let design: Design = serde_json::from_str(&format!("\"{old}\"")).unwrap();
            assert_eq!(design.to_string(), new, "{old}");
            assert_eq!(
                serde_json::to_string(&design).unwrap(),
                format!("\"{new}\"")
            );
        }
        // the command line takes the one spelling, and says which it is
        let err = "softirq".parse::<Design>().unwrap_err();
        assert!(
            err.contains("trial's old 'softirq' is now 'stock'"),
            "{err}"
        );
        assert!(serde_json::from_str::<Design>("\"budget+budget\"").is_err());
    }

    #[test]
    fn trial_refuses_what_it_cannot_build_and_names_it() {
        for buildable in [
            "stock",
            "stock+budget=8",
            "threaded-fifo+budget",
            "threaded-niced",
            "threaded-fifo+process-aware",
            "stock+defer=100:20",
            "stock+busy-poll",
            "stock+busy-poll=always",
            "threaded-niced+defer=2:50+busy-poll=10",
        ] {
            let design: Design = buildable.parse().unwrap();
            assert_eq!(design.trial_refusal(), None, "{buildable}");
        }
        for (design, why) in [
            ("threaded-fifo+ihm", "handler migration"),
            ("stock+ihm-dis", "handler migration"),
            ("stock+process-aware", "threaded-fifo+process-aware"),
            (
                "threaded-niced+process-aware",
                "threaded-fifo+process-aware",
            ),
            (
                "stock+defer=100:20+busy-poll+suspend=20000",
                "needs a device IRQ, which veth lacks",
            ),
            ("threaded-fifo+thread-busy-poll", "Linux 6.19"),
            ("stock+busy-poll=0", "give it µs, or 'always'"),
        ] {
            let refusal = design.parse::<Design>().unwrap().trial_refusal().unwrap();
            assert!(
                refusal.starts_with(&format!("trial cannot build {design}: ")),
                "{refusal}"
            );
            assert!(refusal.contains(why), "{refusal}");
        }
    }
}
