//! Scheduling of the calling thread: CPU affinity and the policies rtla's -P accepts.

use std::fmt;
use std::io;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::units::{CpuList, parse_micros};

/// `o:NICE`, `f:PRIO`, `r:PRIO` or `d:RUNTIME:PERIOD` (times in µs or with units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    Other { nice: i32 },
    Fifo(u32),
    RoundRobin(u32),
    Deadline { runtime: Duration, period: Duration },
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

fn check(ret: i64, what: &str) -> Result<()> {
    if ret < 0 {
        return Err(io::Error::last_os_error()).context(what.to_owned());
    }
    Ok(())
}

pub fn gettid() -> u32 {
    unsafe { libc::gettid() as u32 }
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &CpuList) -> Result<()> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    let ret = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    check(ret as i64, &format!("pinning a thread to CPUs {cpus}"))
}

/// struct sched_attr of sched_setattr(2), which libc does not wrap.
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Gives the calling thread `priority`.
pub fn set_priority(priority: Priority) -> Result<()> {
    let what = format!("setting scheduling priority {priority}");
    match priority {
        Priority::Other { nice } => {
            let ret = unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid(), nice) };
            check(ret as i64, &what)
        }
        Priority::Fifo(prio) | Priority::RoundRobin(prio) => {
            let policy = if matches!(priority, Priority::Fifo(_)) {
                libc::SCHED_FIFO
            } else {
                libc::SCHED_RR
            };
            let param = libc::sched_param {
                sched_priority: prio as i32,
            };
            let ret = unsafe { libc::sched_setscheduler(0, policy, &param) };
            check(ret as i64, &what)
        }
        Priority::Deadline { runtime, period } => {
            let attr = SchedAttr {
                size: size_of::<SchedAttr>() as u32,
                policy: 6, // SCHED_DEADLINE
                flags: 0,
                nice: 0,
                priority: 0,
                runtime: runtime.as_nanos() as u64,
                deadline: period.as_nanos() as u64,
                period: period.as_nanos() as u64,
            };
            let ret = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) };
            check(
                ret,
                &format!(
                    "{what} (SCHED_DEADLINE needs the thread's CPUs to form an exclusive cpuset)"
                ),
            )
        }
    }
}

/// The calling thread's scheduling as it was before `raise`, put back when dropped.
pub struct RaisedPriority {
    policy: libc::c_int,
    param: libc::sched_param,
    nice: i32,
}

impl RaisedPriority {
    /// Gives the calling thread `priority` until the guard is dropped.
    pub fn raise(priority: Priority) -> Result<Self> {
        let mut param = libc::sched_param { sched_priority: 0 };
        let policy = unsafe { libc::sched_getscheduler(0) };
        check(policy as i64, "reading the scheduling policy")?;
        check(
            unsafe { libc::sched_getparam(0, &mut param) } as i64,
            "reading the scheduling priority",
        )?;
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, gettid()) };
        set_priority(priority)?;
        Ok(RaisedPriority {
            policy,
            param,
            nice,
        })
    }
}

impl Drop for RaisedPriority {
    fn drop(&mut self) {
        unsafe {
            libc::sched_setscheduler(0, self.policy, &self.param);
            libc::setpriority(libc::PRIO_PROCESS, gettid(), self.nice);
        }
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
