//! How irqlens's threads are scheduled.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::units::{deserialize_text, parse_micros};

/// `o:NICE`, `f:PRIO`, `r:PRIO` or `d:RUNTIME:PERIOD` (times in µs or with units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// SCHED_OTHER at a nice value (-20 to 19).
    Other {
        /// The nice value.
        nice: i32,
    },
    /// SCHED_FIFO at a real-time priority (1 to 99).
    Fifo(u32),
    /// SCHED_RR at a real-time priority (1 to 99).
    RoundRobin(u32),
    /// SCHED_DEADLINE.
    Deadline {
        /// Runtime per period.
        runtime: Duration,
        /// Period (and deadline).
        period: Duration,
    },
}

impl Default for Priority {
    fn default() -> Self {
        Priority::Other { nice: 0 }
    }
}

impl FromStr for Priority {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad =
            || format!("'{text}' is not a priority (o:NICE, f:PRIO, r:PRIO or d:RUNTIME:PERIOD)");
        let rt_prio = |value: &str| match value.parse::<u32>() {
            Ok(prio @ 1..=99) => Ok(prio),
            _ => Err(format!("'{text}': real-time priorities go from 1 to 99")),
        };
        let (policy, value) = text.split_once(':').ok_or_else(bad)?;
        match policy {
            "o" => match value.parse::<i32>() {
                Ok(nice @ -20..=19) => Ok(Priority::Other { nice }),
                _ => Err(format!("'{text}': nice goes from -20 to 19")),
            },
            "f" => rt_prio(value).map(Priority::Fifo),
            "r" => rt_prio(value).map(Priority::RoundRobin),
            "d" => {
                let (runtime, period) = value.split_once(':').ok_or_else(bad)?;
                let (runtime, period) = (parse_micros(runtime)?, parse_micros(period)?);
                if runtime.is_zero() || runtime > period {
                    return Err(format!(
                        "'{text}': deadline runtime must be > 0 and <= period"
                    ));
                }
                Ok(Priority::Deadline { runtime, period })
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Priority::Other { nice } => write!(f, "o:{nice}"),
            Priority::Fifo(prio) => write!(f, "f:{prio}"),
            Priority::RoundRobin(prio) => write!(f, "r:{prio}"),
            Priority::Deadline { runtime, period } => {
                write!(f, "d:{}us:{}us", runtime.as_micros(), period.as_micros())
            }
        }
    }
}

impl serde::Serialize for Priority {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Priority {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_text(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rtla_priorities() {
        assert_eq!("o:-5".parse(), Ok(Priority::Other { nice: -5 }));
        assert_eq!("f:95".parse(), Ok(Priority::Fifo(95)));
        assert_eq!("r:1".parse(), Ok(Priority::RoundRobin(1)));
        assert_eq!(
            "d:500us:1ms".parse(),
            Ok(Priority::Deadline {
                runtime: Duration::from_micros(500),
                period: Duration::from_millis(1)
            })
        );
    }

    #[test]
    fn rejects_bad_priorities() {
        for bad in ["x:1", "f:0", "f:100", "o:20", "d:2ms:1ms", "d:1ms", "95"] {
            assert!(bad.parse::<Priority>().is_err(), "{bad}");
        }
    }

    #[test]
    fn displays_as_parsed() {
        for text in ["o:-5", "f:95", "r:1", "d:500us:1000us"] {
            assert_eq!(text.parse::<Priority>().unwrap().to_string(), text);
        }
    }
}
