//! Stimuli and load a run puts on the machine.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::bh::Selection;

/// The bottom half an active `bh` run causes (see [`TriggerKind::kernel_path`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TriggerKind {
    /// A wheel timer: the TIMER softirq.
    Timer,
    /// UDP over a veth pair: the NET_RX softirq.
    Net,
    /// A pty write: a work item on the system workqueue.
    Workqueue,
    /// The VT keyboard tasklet.
    Tasklet,
    /// A direct disk read: the BLOCK softirq.
    Block,
}

impl TriggerKind {
    /// Every kind, in the order `--trigger` lists them.
    pub const ALL: [TriggerKind; 5] = [
        TriggerKind::Timer,
        TriggerKind::Net,
        TriggerKind::Workqueue,
        TriggerKind::Tasklet,
        TriggerKind::Block,
    ];

    /// The name `--trigger` takes.
    pub fn name(self) -> &'static str {
        match self {
            TriggerKind::Timer => "timer",
            TriggerKind::Net => "net",
            TriggerKind::Workqueue => "workqueue",
            TriggerKind::Tasklet => "tasklet",
            TriggerKind::Block => "block",
        }
    }

    /// The kernel path a request takes, and which samples are the stimulus's.
    pub fn kernel_path(self) -> &'static str {
        match self {
            TriggerKind::Timer => {
                "a one-tick wheel timer (SO_RCVTIMEO on an idle UDP socket) expires in the local \
                 timer IRQ, which raises TIMER; run_timer_softirq wakes the stimulus. Samples: \
                 the TIMER softirqs that woke it"
            }
            TriggerKind::Net => {
                "UDP into a private network namespace over a veth pair: veth_xmit -> netif_rx \
                 raises NET_RX in the sender's context, served at its local_bh_enable. Samples: \
                 NET_RX raised by the stimulus"
            }
            TriggerKind::Workqueue => {
                "a byte written to a pty master queues flush_to_ldisc on the unbound system \
                 workqueue (it may run on any CPU). Samples: work queued by the stimulus"
            }
            TriggerKind::Tasklet => {
                "KDSETLED on /dev/tty0 schedules the VT keyboard tasklet (kbd_bh) from process \
                 context, so TASKLET is raised outside an interrupt and runs in ksoftirqd or at \
                 the next IRQ exit. Samples: tasklets (and TASKLET) raised by the stimulus"
            }
            TriggerKind::Block => {
                "a 4 KiB O_DIRECT read: the disk's completion IRQ raises BLOCK, whose softirq \
                 completes the I/O and wakes the stimulus. Samples: the BLOCK softirqs that \
                 woke it"
            }
        }
    }

    /// Which samples are the stimulus's, given its thread id.
    pub fn selection(self, tid: u32) -> Selection {
        match self {
            TriggerKind::Timer | TriggerKind::Block => Selection::Woke(tid),
            TriggerKind::Net | TriggerKind::Workqueue | TriggerKind::Tasklet => {
                Selection::RaisedBy(tid)
            }
        }
    }
}

impl FromStr for TriggerKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown trigger '{text}': expected one of {}",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for TriggerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The thesis's "many".
pub const MANY: u32 = 256;

/// Spinning tasks run during a measurement (`--load`): `zero`, `one`, `many`, `many:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadScenario {
    /// None.
    Zero,
    /// One: the CPU never idles.
    One,
    /// This many (`many` is [`MANY`]).
    Many(u32),
}

impl LoadScenario {
    /// How many spinning tasks it runs.
    pub fn tasks(self) -> u32 {
        match self {
            LoadScenario::Zero => 0,
            LoadScenario::One => 1,
            LoadScenario::Many(n) => n,
        }
    }
}

impl FromStr for LoadScenario {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "zero" => Ok(LoadScenario::Zero),
            "one" => Ok(LoadScenario::One),
            "many" => Ok(LoadScenario::Many(MANY)),
            _ => {
                let count = text.strip_prefix("many:").ok_or_else(|| {
                    format!("unknown load '{text}': expected zero, one, many or many:N")
                })?;
                match count.parse::<u32>() {
                    Ok(n @ 1..=4096) => Ok(LoadScenario::Many(n)),
                    _ => Err(format!(
                        "load 'many:{count}': N must be a number from 1 to 4096"
                    )),
                }
            }
        }
    }
}

impl fmt::Display for LoadScenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadScenario::Zero => f.write_str("zero"),
            LoadScenario::One => f.write_str("one"),
            LoadScenario::Many(n) if *n == MANY => f.write_str("many"),
            LoadScenario::Many(n) => write!(f, "many:{n}"),
        }
    }
}

impl Serialize for LoadScenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// In JSON, the scenario as typed: `zero`, `one`, `many`, `many:N`.
impl schemars::JsonSchema for LoadScenario {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LoadScenario".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^(zero|one|many(:[0-9]+)?)$"})
    }
}

impl<'de> serde::Deserialize<'de> for LoadScenario {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::units::deserialize_text(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_name() {
        for kind in TriggerKind::ALL {
            assert_eq!(kind.name().parse::<TriggerKind>(), Ok(kind));
        }
        let err = "disk".parse::<TriggerKind>().unwrap_err();
        assert!(
            err.contains("timer, net, workqueue, tasklet, block"),
            "{err}"
        );
    }

    #[test]
    fn timer_and_block_select_by_wakeup_the_rest_by_requester() {
        assert_eq!(TriggerKind::Timer.selection(5), Selection::Woke(5));
        assert_eq!(TriggerKind::Block.selection(5), Selection::Woke(5));
        assert_eq!(TriggerKind::Net.selection(5), Selection::RaisedBy(5));
    }
}
