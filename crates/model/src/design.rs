//! An interrupt-handling design, as `irqlens sim` simulates it and `irqlens trial net`
//! builds it: one type and one spelling, `stock`, `threaded-fifo` or `threaded-niced`, with
//! `+budget[=N]`, `+ihm`, `+ihm-dis`, `+process-aware` (e.g. `threaded-niced+budget`).
//! Trial builds only some of them ([`Design::trial_refusal`]); documents written before the
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
    /// A thread per source at SCHED_OTHER, at its consumer's nice (003, the slides' fix).
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
        }
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
    /// stock kernel can be set to: handler migration is not in Linux, and its
    /// process-aware design is threaded-fifo's NAPI thread that irqlens steer then keeps
    /// at its consumer's priority (004's interrupt-level scheduler under `stock` is not a
    /// thread steer can move).
    pub fn trial_refusal(&self) -> Option<String> {
        let why = if self.migration != Migration::None {
            "handler migration (+ihm, +ihm-dis) is not in Linux: irqlens sim simulates it"
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
                _ => {
                    return Err(format!(
                        "'{text}': '{option}' is not an option (budget[=N], ihm, ihm-dis, process-aware)"
                    ));
                }
            }
        }
        Ok(design)
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
                            threaded-niced, with +budget[=N], +ihm, +ihm-dis, +process-aware. \
                            Older trial documents: softirq, budget, process-aware, the first \
                            and last with +budget.",
            "type": "string",
            "pattern": "^((stock|threaded-fifo|threaded-niced)(\\+(budget(=[1-9][0-9]*)?|ihm|ihm-dis|process-aware))*|softirq(\\+budget)?|budget|process-aware(\\+budget)?)$",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn designs_parse_and_display_alike() {
        for text in [
            "stock",
            "threaded-fifo+ihm-dis",
            "threaded-niced+budget",
            "stock+budget=32",
            "stock+budget=8+process-aware",
        ] {
            let design: Design = text.parse().unwrap();
            assert_eq!(design.to_string(), text);
            let json = serde_json::to_string(&design).unwrap();
            assert_eq!(serde_json::from_str::<Design>(&json).unwrap(), design);
        }
        for bad in ["", "fast", "stock+ihm2", "stock+budget=0", "stock+budget=x"] {
            assert!(bad.parse::<Design>().is_err(), "{bad}");
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
