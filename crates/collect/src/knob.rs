//! The machine's knobs (`irqlens_model::tune::Knob`): where each lives, reading its value
//! and writing one, in each knob's own text form (what `cat` shows and `echo` writes).
//!
//! A network knob in another namespace (`netns: Some(NAME)`) is read and written with
//! `ip netns exec NAME`: sysfs shows the devices of the namespace that mounted it, and
//! `ip netns exec` enters the namespace and mounts a fresh /sys in a private mount
//! namespace, which is what a thread doing setns() would have to redo by hand.

use std::fs;
use std::io;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail, ensure};

use crate::{netns, sched};
use irqlens_model::sched::Priority;
use irqlens_model::tune::Knob;
use irqlens_model::units::CpuList;

/// Where unbound work items may run.
const WORKQUEUE_CPUMASK: &str = "/sys/devices/virtual/workqueue/cpumask";

/// The file a knob is, if it is one (the thread knobs are system calls, the DMA latency
/// request a held file).
pub fn path(knob: &Knob) -> Option<PathBuf> {
    let queue_file = |device: &str, dir: &str, file: &str| {
        PathBuf::from(format!("/sys/class/net/{device}/queues/{dir}/{file}"))
    };
    Some(match knob {
        Knob::IrqAffinity { irq } => format!("/proc/irq/{irq}/smp_affinity_list").into(),
        Knob::RpsCpus { device, queue, .. } => {
            queue_file(device, &format!("rx-{queue}"), "rps_cpus")
        }
        Knob::XpsCpus { device, queue, .. } => {
            queue_file(device, &format!("tx-{queue}"), "xps_cpus")
        }
        Knob::NapiThreaded { device, .. } => format!("/sys/class/net/{device}/threaded").into(),
        Knob::NapiDeferHardIrqs { device, .. } => {
            format!("/sys/class/net/{device}/napi_defer_hard_irqs").into()
        }
        Knob::GroFlushTimeout { device, .. } => {
            format!("/sys/class/net/{device}/gro_flush_timeout").into()
        }
        Knob::Sysctl { name } => sysctl_path(name),
        Knob::WorkqueueCpumask => WORKQUEUE_CPUMASK.into(),
        Knob::RtGroupRuntime { cgroup } => PathBuf::from(cgroup).join(RT_RUNTIME_FILE),
        Knob::ThreadAffinity { .. }
        | Knob::ThreadPriority { .. }
        | Knob::Netns { .. }
        | Knob::DmaLatency => {
            return None;
        }
    })
}

/// A cgroup's RT runtime file (cgroup v1's cpu controller).
const RT_RUNTIME_FILE: &str = "cpu.rt_runtime_us";

/// Where cgroup controllers are mounted: an RT group's directory must lie below it.
const CGROUP_ROOT: &str = "/sys/fs/cgroup/";

/// `/proc/sys/a/b/c` of sysctl `a.b.c`.
fn sysctl_path(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(name.replace('.', "/"))
}

/// The network namespace a knob lives in, if not irqlens's own.
fn netns(knob: &Knob) -> Option<&str> {
    match knob {
        Knob::RpsCpus { netns, .. } | Knob::XpsCpus { netns, .. } => netns.as_deref(),
        Knob::NapiThreaded { netns, .. }
        | Knob::NapiDeferHardIrqs { netns, .. }
        | Knob::GroFlushTimeout { netns, .. } => netns.as_deref(),
        _ => None,
    }
}

/// The knob in words: its file, or the thread it acts on.
pub fn describe(knob: &Knob) -> String {
    match (knob, path(knob)) {
        (Knob::ThreadAffinity { tid, comm }, _) => format!("CPU affinity of {comm}:{tid}"),
        (Knob::ThreadPriority { tid, comm }, _) => format!("priority of {comm}:{tid}"),
        (Knob::DmaLatency, _) => "/dev/cpu_dma_latency".into(),
        (Knob::Netns { name }, _) => format!("network namespace {name}"),
        (_, Some(path)) => match netns(knob) {
            Some(ns) => format!("{} in netns {ns}", path.display()),
            None => path.display().to_string(),
        },
        (_, None) => unreachable!("every other knob is a file"),
    }
}

/// Why a knob cannot be kept by `tune`, if it cannot.
pub fn not_keepable(knob: &Knob) -> Option<&'static str> {
    matches!(knob, Knob::DmaLatency).then_some(
        "/dev/cpu_dma_latency holds its request only while the file is open: tune cannot \
         apply it and put it back (irqlens wakeup --dma-latency measures with it held)",
    )
}

/// The knob's current value, trimmed.
pub fn read(knob: &Knob) -> Result<String> {
    match knob {
        Knob::ThreadAffinity { tid, comm } => {
            check_comm(*tid, comm)?;
            thread_affinity(*tid).map(|cpus| cpus.to_string())
        }
        Knob::ThreadPriority { tid, comm } => {
            check_comm(*tid, comm)?;
            sched::thread_priority(*tid).map(|p| p.to_string())
        }
        Knob::DmaLatency => bail!("{}", not_keepable(knob).unwrap_or_default()),
        Knob::Netns { name } => Ok(if netns::exists(name) {
            NETNS_PRESENT
        } else {
            NETNS_ABSENT
        }
        .into()),
        _ => {
            let path = path(knob).expect("a file knob");
            let text = match netns(knob) {
                Some(ns) => netns::exec(ns, &["cat", &path.to_string_lossy()])?,
                None => fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?,
            };
            Ok(normalize(knob, &text))
        }
    }
}

/// The value as read, in the form written back: sysctls with several fields (tabs) keep
/// them separated by one space.
fn normalize(knob: &Knob, text: &str) -> String {
    match knob {
        Knob::Sysctl { .. } => text.split_whitespace().collect::<Vec<_>>().join(" "),
        _ => text.trim().to_owned(),
    }
}

/// Writes `value` to the knob.
pub fn write(knob: &Knob, value: &str) -> Result<()> {
    match knob {
        Knob::ThreadAffinity { tid, comm } => {
            check_comm(*tid, comm)?;
            let cpus: CpuList = value.parse().map_err(|e: String| anyhow!(e))?;
            set_thread_affinity(*tid, &cpus)
        }
        Knob::ThreadPriority { tid, comm } => {
            check_comm(*tid, comm)?;
            let priority: Priority = value.parse().map_err(|e: String| anyhow!(e))?;
            sched::set_thread_priority(*tid, priority)
        }
        Knob::DmaLatency => bail!("{}", not_keepable(knob).unwrap_or_default()),
        Knob::Netns { name } => write_netns(name, value),
        _ => {
            let path = path(knob).expect("a file knob");
            let shown = describe(knob);
            let written = match netns(knob) {
                Some(ns) => netns::exec(
                    ns,
                    &[
                        "sh",
                        "-c",
                        "echo \"$1\" > \"$2\"",
                        "sh",
                        value,
                        &path.to_string_lossy(),
                    ],
                )
                .map(drop),
                None => fs::write(&path, format!("{value}\n")).map_err(|err| {
                    match (knob, err.raw_os_error()) {
                        (Knob::IrqAffinity { irq }, Some(libc::EIO | libc::EPERM)) => anyhow!(
                            "IRQ {irq}'s affinity is managed by the kernel (it places the \
                             queue IRQs of multi-queue devices itself): it cannot be moved ({err})"
                        ),
                        _ => anyhow::Error::new(err),
                    }
                }),
            };
            let written = written.map_err(|err| match knob {
                // the kernel answers EIO when the device has no NAPI instance to thread
                Knob::NapiThreaded { device, .. } if format!("{err:#}").contains("I/O error") => {
                    err.context(format!(
                        "{device} has no NAPI instance to run in a thread (a veth has one only \
                         with GRO on: ethtool -K {device} gro on)"
                    ))
                }
                _ => err,
            });
            written.with_context(|| format!("writing '{value}' to {shown}"))
        }
    }
}

/// A [`Knob::Netns`]'s value when the namespace exists.
pub const NETNS_PRESENT: &str = "present";
/// A [`Knob::Netns`]'s value when it does not.
pub const NETNS_ABSENT: &str = "absent";

/// Makes network namespace `name` (`present`) or removes it with its devices (`absent`);
/// either is done already if the namespace is as asked.
fn write_netns(name: &str, value: &str) -> Result<()> {
    let verb = match value {
        NETNS_PRESENT if !netns::exists(name) => "add",
        NETNS_ABSENT if netns::exists(name) => "del",
        NETNS_PRESENT | NETNS_ABSENT => return Ok(()),
        _ => bail!("a network namespace is {NETNS_PRESENT} or {NETNS_ABSENT}, not '{value}'"),
    };
    netns::ip(&["netns", verb, name]).map(drop)
}

/// Why what `knob` acts on is gone, if it is: a thread that exited (or whose tid another
/// thread has now), an IRQ line, device, namespace or sysctl that was removed. Nothing is
/// then left to put back.
pub fn gone(knob: &Knob) -> Option<String> {
    let missing = |path: PathBuf| !path.exists();
    match knob {
        Knob::ThreadAffinity { tid, comm } | Knob::ThreadPriority { tid, comm } => {
            match crate::system::thread_comm(*tid) {
                None => Some("the thread exited".into()),
                Some(now) if now != *comm => {
                    Some(format!("the thread exited (tid {tid} is {now} now)"))
                }
                Some(_) => None,
            }
        }
        Knob::RpsCpus {
            netns: Some(ns), ..
        }
        | Knob::XpsCpus {
            netns: Some(ns), ..
        }
        | Knob::NapiThreaded {
            netns: Some(ns), ..
        }
        | Knob::NapiDeferHardIrqs {
            netns: Some(ns), ..
        }
        | Knob::GroFlushTimeout {
            netns: Some(ns), ..
        } if !netns::exists(ns) => Some(format!("network namespace {ns} was deleted")),
        Knob::RpsCpus { netns, device, .. }
        | Knob::XpsCpus { netns, device, .. }
        | Knob::NapiThreaded { netns, device }
        | Knob::NapiDeferHardIrqs { netns, device }
        | Knob::GroFlushTimeout { netns, device } => {
            let there = match netns {
                Some(ns) => netns::ip(&["-n", ns, "link", "show", "dev", device]).is_ok(),
                None => !missing(PathBuf::from("/sys/class/net").join(device)),
            };
            (!there).then(|| format!("device {device} was deleted"))
        }
        Knob::IrqAffinity { irq } => missing(PathBuf::from(format!("/proc/irq/{irq}")))
            .then(|| format!("IRQ {irq} is gone (its device was removed)")),
        Knob::Sysctl { name } => missing(sysctl_path(name))
            .then(|| format!("sysctl {name} is gone (its module was unloaded)")),
        Knob::RtGroupRuntime { cgroup } => {
            missing(PathBuf::from(cgroup)).then(|| format!("cgroup {cgroup} was removed"))
        }
        // writing `absent` to a deleted namespace is done already
        Knob::Netns { .. } | Knob::WorkqueueCpumask | Knob::DmaLatency => None,
    }
}

/// A thread id reused by another thread is not the thread that was advised.
fn check_comm(tid: u32, comm: &str) -> Result<()> {
    let now = crate::system::thread_comm(tid)
        .with_context(|| format!("thread {tid} ({comm}) is gone"))?;
    ensure!(
        now == comm,
        "thread {tid} is now {now}, not {comm}: left alone"
    );
    Ok(())
}

fn thread_affinity(tid: u32) -> Result<CpuList> {
    // SAFETY: cpu_set_t is a bit array: all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed, for the kernel to fill.
    let ret =
        unsafe { libc::sched_getaffinity(tid as i32, size_of::<libc::cpu_set_t>(), &mut set) };
    if ret != 0 {
        return Err(io::Error::last_os_error())
            .context(format!("reading thread {tid}'s CPU affinity"));
    }
    let max = 8 * size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads the set's array within its size.
    Ok((0..max)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .map(|cpu| cpu as u32)
        .collect())
}

fn set_thread_affinity(tid: u32, cpus: &CpuList) -> Result<()> {
    // SAFETY: cpu_set_t is a bit array: all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        ensure!(
            (cpu as usize) < 8 * size_of::<libc::cpu_set_t>(),
            "CPU {cpu} is out of range"
        );
        // SAFETY: the index was checked against the set's size just above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed; the kernel only reads it.
    let ret = unsafe { libc::sched_setaffinity(tid as i32, size_of::<libc::cpu_set_t>(), &set) };
    if ret != 0 {
        return Err(io::Error::last_os_error())
            .context(format!("moving thread {tid} to CPUs {cpus}"));
    }
    Ok(())
}

/// Parses an expert's `--change KNOB=VALUE`: `irq:24=0`, `rps:[NETNS/]DEV/rx-0=1`,
/// `xps:[NETNS/]DEV/tx-0=1`, `threaded:[NETNS/]DEV=1`, `sysctl:kernel.timer_migration=0`,
/// `workqueue-cpumask=1`, `rt-runtime:/sys/fs/cgroup/cpu=-1`, `affinity:TID=0`,
/// `priority:TID=f:10`, `dma-latency=0`.
/// A thread's name is read now (`comm`), so that a tid reused meanwhile is left alone.
pub fn parse_change(spec: &str) -> Result<(Knob, String)> {
    let bad = |why: &str| anyhow!("--change '{spec}': {why}");
    let (name, value) = spec
        .split_once('=')
        .ok_or_else(|| bad("expected KNOB=VALUE, such as irq:24=0"))?;
    if value.is_empty() || value.contains(['\n', '\0']) {
        return Err(bad("the value is empty or has a line break"));
    }
    let (kind, what) = name.split_once(':').unwrap_or((name, ""));
    let number = |text: &str, of: &str| {
        text.parse::<u32>()
            .map_err(|_| bad(&format!("'{text}' is not {of} number")))
    };
    // [NETNS/]DEV, and the queue directory if `queue` names its prefix
    let device = |queue: Option<&str>| -> Result<(Option<String>, String, u32)> {
        let mut parts: Vec<&str> = what.split('/').collect();
        let queue = match queue {
            Some(prefix) => {
                let dir = parts.pop().unwrap_or_default();
                let n = dir
                    .strip_prefix(prefix)
                    .ok_or_else(|| bad(&format!("expected [NETNS/]DEV/{prefix}N")))?;
                number(n, "a queue")?
            }
            None => 0,
        };
        let valid = |p: &&str| !p.is_empty() && *p != "." && *p != "..";
        match parts.as_slice() {
            [dev] if valid(dev) => Ok((None, dev.to_string(), queue)),
            [ns, dev] if valid(ns) && valid(dev) => {
                Ok((Some(ns.to_string()), dev.to_string(), queue))
            }
            _ => Err(bad("expected [NETNS/]DEV")),
        }
    };
    let thread = || -> Result<(u32, String)> {
        let tid = number(what, "a thread")?;
        let comm = crate::system::thread_comm(tid)
            .ok_or_else(|| bad(&format!("there is no thread {tid}")))?;
        Ok((tid, comm))
    };
    let knob = match kind {
        "irq" => Knob::IrqAffinity {
            irq: number(what, "an IRQ")?,
        },
        "rps" => {
            let (netns, device, queue) = device(Some("rx-"))?;
            Knob::RpsCpus {
                netns,
                device,
                queue,
            }
        }
        "xps" => {
            let (netns, device, queue) = device(Some("tx-"))?;
            Knob::XpsCpus {
                netns,
                device,
                queue,
            }
        }
        "threaded" => {
            let (netns, device, _) = device(None)?;
            Knob::NapiThreaded { netns, device }
        }
        "defer-hard-irqs" => {
            let (netns, device, _) = device(None)?;
            Knob::NapiDeferHardIrqs { netns, device }
        }
        "gro-flush-timeout" => {
            let (netns, device, _) = device(None)?;
            Knob::GroFlushTimeout { netns, device }
        }
        "sysctl" => {
            let valid = !what.is_empty()
                && what.split('.').all(|part| {
                    !part.is_empty()
                        && part
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                });
            if !valid {
                return Err(bad("expected a sysctl name such as kernel.timer_migration"));
            }
            Knob::Sysctl { name: what.into() }
        }
        "workqueue-cpumask" if what.is_empty() => Knob::WorkqueueCpumask,
        "rt-runtime" => {
            let cgroup = what.trim_end_matches('/');
            let below_root = cgroup.strip_prefix(CGROUP_ROOT).is_some_and(|rest| {
                rest.split('/')
                    .all(|p| !p.is_empty() && p != "." && p != "..")
            });
            if !below_root {
                return Err(bad(&format!(
                    "expected a cgroup directory below {CGROUP_ROOT}, such as /sys/fs/cgroup/cpu"
                )));
            }
            Knob::RtGroupRuntime {
                cgroup: cgroup.into(),
            }
        }
        "affinity" => {
            let (tid, comm) = thread()?;
            Knob::ThreadAffinity { tid, comm }
        }
        "priority" => {
            let (tid, comm) = thread()?;
            Knob::ThreadPriority { tid, comm }
        }
        "dma-latency" if what.is_empty() => Knob::DmaLatency,
        _ => {
            return Err(bad(
                "unknown knob (irq:N, rps:[NETNS/]DEV/rx-N, xps:[NETNS/]DEV/tx-N, \
                 threaded:[NETNS/]DEV, defer-hard-irqs:[NETNS/]DEV, \
                 gro-flush-timeout:[NETNS/]DEV, sysctl:NAME, workqueue-cpumask, rt-runtime:CGROUP, \
                 affinity:TID, priority:TID, dma-latency)",
            ));
        }
    };
    check_value(&knob, value).map_err(|why| bad(&why))?;
    Ok((knob, value.to_owned()))
}

/// Checks what can be checked of a value before it is written: CPU lists, priorities.
fn check_value(knob: &Knob, value: &str) -> Result<(), String> {
    match knob {
        Knob::IrqAffinity { .. } | Knob::ThreadAffinity { .. } => {
            value.parse::<CpuList>().map(drop)
        }
        Knob::ThreadPriority { .. } => value.parse::<Priority>().map(drop),
        Knob::RpsCpus { .. } | Knob::XpsCpus { .. } | Knob::WorkqueueCpumask => {
            let hex = value.chars().all(|c| c.is_ascii_hexdigit() || c == ',');
            hex.then_some(())
                .ok_or_else(|| format!("'{value}' is not a hex CPU mask (such as 3 or 00000002)"))
        }
        Knob::NapiThreaded { .. } => matches!(value, "0" | "1")
            .then_some(())
            .ok_or_else(|| "threaded takes 0 or 1".into()),
        // net/core/net-sysfs.c: napi_defer_hard_irqs is at most S32_MAX, the timeout any
        // count of ns
        Knob::NapiDeferHardIrqs { .. } => match value.parse::<u32>() {
            Ok(n) if n <= i32::MAX as u32 => Ok(()),
            _ => Err(format!(
                "'{value}' is not a napi_defer_hard_irqs (a count from 0 to {})",
                i32::MAX
            )),
        },
        Knob::GroFlushTimeout { .. } => value
            .parse::<u64>()
            .map(drop)
            .map_err(|_| format!("'{value}' is not a gro_flush_timeout (ns)")),
        Knob::Sysctl { .. } | Knob::DmaLatency => Ok(()),
        Knob::RtGroupRuntime { .. } => match value.parse::<i64>() {
            Ok(us) if us >= -1 => Ok(()),
            _ => Err(format!(
                "'{value}' is not an RT runtime (µs of each period, or -1 for no limit)"
            )),
        },
        Knob::Netns { .. } => matches!(value, NETNS_PRESENT | NETNS_ABSENT)
            .then_some(())
            .ok_or_else(|| format!("a network namespace is {NETNS_PRESENT} or {NETNS_ABSENT}")),
    }
}

/// Sysctls whose negative values mean something (-1: no limit, off, forever), though
/// their value is usually non-negative: the kernel documents them so
/// (Documentation/admin-guide/sysctl/kernel.rst).
const NEGATIVE_SYSCTLS: [&str; 4] = [
    "kernel.sched_rt_runtime_us",
    "kernel.perf_event_paranoid",
    "kernel.hung_task_warnings",
    "kernel.panic",
];

/// Checks a change against the machine before anything is measured: what it acts on
/// exists (an IRQ line, a sysctl, a device's queue), and its value is one the kernel
/// takes and means: CPUs that are online, a sysctl value of the type of its current one.
/// Many kernel files take what they cannot use (`netdev_budget` takes -5) or refuse it
/// only when written, after the rounds without it were measured.
pub fn check_on_machine(knob: &Knob, value: &str) -> Result<()> {
    let exists = match knob {
        Knob::IrqAffinity { irq } => Some(format!("there is no IRQ {irq} (see /proc/interrupts)")),
        Knob::Sysctl { name } => Some(format!("there is no sysctl {name}")),
        Knob::RtGroupRuntime { cgroup } => Some(format!(
            "{cgroup} has no {RT_RUNTIME_FILE} (no cgroup v1 cpu controller with RT group \
             scheduling there)"
        )),
        Knob::RpsCpus { netns: None, .. } | Knob::XpsCpus { netns: None, .. } => {
            Some(format!("{} does not exist", describe(knob)))
        }
        _ => None,
    };
    if let (Some(missing), Some(path)) = (exists, path(knob))
        && !path.exists()
    {
        bail!("{missing}");
    }
    let current = match knob {
        Knob::Sysctl { .. } => read(knob)?,
        _ => String::new(),
    };
    let online = crate::system::online_cpus()?;
    fits(knob, value, &online, &current).map_err(|why| anyhow!(why))
}

/// Whether `value` is one `knob` takes on a machine whose online CPUs are `online`, when
/// its value is `current` now (read for sysctls only).
fn fits(knob: &Knob, value: &str, online: &CpuList, current: &str) -> Result<(), String> {
    let offline = |cpus: &CpuList| match cpus.iter().find(|&cpu| !online.contains(cpu)) {
        Some(cpu) => Err(format!(
            "CPU {cpu} is offline or does not exist (online CPUs: {online})"
        )),
        None => Ok(()),
    };
    match knob {
        Knob::IrqAffinity { .. } | Knob::ThreadAffinity { .. } => {
            let cpus: CpuList = value.parse()?;
            if cpus.is_empty() {
                return Err("an affinity needs at least one CPU".into());
            }
            offline(&cpus)
        }
        Knob::RpsCpus { .. } | Knob::XpsCpus { .. } | Knob::WorkqueueCpumask => {
            let cpus = irqlens_model::tune::parse_cpu_mask(value).ok_or_else(|| {
                format!("'{value}' is not a hex CPU mask (such as 3 or 00000002)")
            })?;
            if cpus.is_empty() && matches!(knob, Knob::WorkqueueCpumask) {
                return Err("the workqueue cpumask needs at least one CPU".into());
            }
            offline(&cpus)
        }
        Knob::Sysctl { name } => sysctl_fits(name, value, current),
        _ => Ok(()),
    }
}

/// A sysctl's new value has the form of its current one: as many fields, each an integer
/// where the current one is, and not negative where the current one is not.
fn sysctl_fits(name: &str, value: &str, current: &str) -> Result<(), String> {
    let (now, new): (Vec<&str>, Vec<&str>) = (
        current.split_whitespace().collect(),
        value.split_whitespace().collect(),
    );
    if now.len() != new.len() {
        return Err(format!(
            "sysctl {name} holds {} value(s) ('{current}'), not {}",
            now.len(),
            new.len()
        ));
    }
    for (now, new) in now.iter().zip(&new) {
        let Ok(now) = now.parse::<i64>() else {
            continue;
        };
        let Ok(new) = new.parse::<i64>() else {
            return Err(format!(
                "sysctl {name} holds integers ('{current}'): '{new}' is not one"
            ));
        };
        if now >= 0 && new < 0 && !NEGATIVE_SYSCTLS.contains(&name) {
            return Err(format!(
                "sysctl {name} holds a count or size ('{current}'): {new} is negative"
            ));
        }
    }
    Ok(())
}

/// The knob as `--change` spells it, with its value.
pub fn change_spec(knob: &Knob, value: &str) -> String {
    let device = |netns: &Option<String>, device: &str| match netns {
        Some(ns) => format!("{ns}/{device}"),
        None => device.to_owned(),
    };
    let name = match knob {
        Knob::IrqAffinity { irq } => format!("irq:{irq}"),
        Knob::RpsCpus {
            netns,
            device: dev,
            queue,
        } => {
            format!("rps:{}/rx-{queue}", device(netns, dev))
        }
        Knob::XpsCpus {
            netns,
            device: dev,
            queue,
        } => {
            format!("xps:{}/tx-{queue}", device(netns, dev))
        }
        Knob::NapiThreaded { netns, device: dev } => format!("threaded:{}", device(netns, dev)),
        Knob::NapiDeferHardIrqs { netns, device: dev } => {
            format!("defer-hard-irqs:{}", device(netns, dev))
        }
        Knob::GroFlushTimeout { netns, device: dev } => {
            format!("gro-flush-timeout:{}", device(netns, dev))
        }
        Knob::Sysctl { name } => format!("sysctl:{name}"),
        Knob::WorkqueueCpumask => "workqueue-cpumask".into(),
        Knob::RtGroupRuntime { cgroup } => format!("rt-runtime:{cgroup}"),
        Knob::ThreadAffinity { tid, .. } => format!("affinity:{tid}"),
        Knob::ThreadPriority { tid, .. } => format!("priority:{tid}"),
        Knob::DmaLatency => "dma-latency".into(),
        Knob::Netns { name } => format!("netns:{name}"),
    };
    format!("{name}={value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(spec: &str) -> (Knob, String) {
        parse_change(spec).unwrap_or_else(|e| panic!("{spec}: {e:#}"))
    }

    #[test]
    fn a_namespace_knob_is_present_or_absent() {
        let knob = Knob::Netns {
            name: format!("irqlens-test-none-{}", std::process::id()),
        };
        assert_eq!(read(&knob).unwrap(), NETNS_ABSENT);
        // already as asked: nothing to run
        write(&knob, NETNS_ABSENT).unwrap();
        let err = write(&knob, "maybe").unwrap_err().to_string();
        assert!(err.contains("present or absent"), "{err}");
        assert!(describe(&knob).starts_with("network namespace irqlens-test-none-"));
        assert!(change_spec(&knob, NETNS_PRESENT).starts_with("netns:irqlens-test-none-"));
    }

    #[test]
    fn changes_parse_and_print_back() {
        for spec in [
            "irq:24=0",
            "rps:il-ns/veth1/rx-0=1",
            "rps:eth0/rx-3=00000002",
            "xps:eth0/tx-1=3",
            "threaded:il-ns/veth1=1",
            "defer-hard-irqs:il-ns/veth1=100",
            "gro-flush-timeout:veth1=20000",
            "sysctl:kernel.timer_migration=0",
            "sysctl:net.core.netdev_budget=600",
            "workqueue-cpumask=1",
            "rt-runtime:/sys/fs/cgroup/cpu=-1",
            "rt-runtime:/sys/fs/cgroup/cpu/rt-group=500000",
            "dma-latency=0",
        ] {
            let (knob, value) = parsed(spec);
            assert_eq!(change_spec(&knob, &value), spec);
        }
        let (knob, value) = parsed("rps:il-ns/veth1/rx-2=f");
        assert_eq!(
            knob,
            Knob::RpsCpus {
                netns: Some("il-ns".into()),
                device: "veth1".into(),
                queue: 2
            }
        );
        assert_eq!(value, "f");
    }

    #[test]
    fn a_thread_change_names_the_thread_it_read() {
        let me = std::process::id();
        let (knob, value) = parsed(&format!("priority:{me}=o:0"));
        let comm = fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
        assert_eq!(
            knob,
            Knob::ThreadPriority {
                tid: me,
                comm: comm.trim().into()
            }
        );
        assert_eq!(value, "o:0");
    }

    #[test]
    fn bad_changes_say_what_is_wrong() {
        for (spec, why) in [
            ("irq:24", "expected KNOB=VALUE"),
            ("irq:x=0", "not an IRQ number"),
            ("irq:24=zero", "not a CPU list"),
            ("irq:24=", "empty"),
            ("rps:eth0=1", "expected [NETNS/]DEV/rx-N"),
            ("rps:a/b/c/rx-0=1", "expected [NETNS/]DEV"),
            ("rps:../rx-0=1", "expected [NETNS/]DEV"),
            ("rps:eth0/rx-0=xyz", "not a hex CPU mask"),
            ("threaded:eth0=2", "0 or 1"),
            (
                "defer-hard-irqs:eth0=2147483648",
                "a count from 0 to 2147483647",
            ),
            ("defer-hard-irqs:eth0=-1", "not a napi_defer_hard_irqs"),
            (
                "gro-flush-timeout:eth0=20us",
                "not a gro_flush_timeout (ns)",
            ),
            ("sysctl:../../etc/passwd=1", "a sysctl name"),
            ("sysctl:kernel..x=1", "a sysctl name"),
            ("priority:1=f:100", "1 to 99"),
            ("affinity:4000000000=0", "no thread"),
            ("frobnicate:1=0", "unknown knob"),
            ("rt-runtime:/etc=-1", "a cgroup directory below"),
            (
                "rt-runtime:/sys/fs/cgroup/../../etc=-1",
                "a cgroup directory below",
            ),
            ("rt-runtime:/sys/fs/cgroup/cpu=-2", "not an RT runtime"),
            ("rt-runtime:/sys/fs/cgroup/cpu=lots", "not an RT runtime"),
        ] {
            let err = parse_change(spec).unwrap_err().to_string();
            assert!(err.contains(why), "{spec}: {err}");
            assert!(!err.contains('\n'), "{spec}: one line: {err}");
        }
    }

    #[test]
    fn changes_are_checked_against_the_machines_cpus_and_the_sysctls_type() {
        let online: CpuList = "0-1".parse().unwrap();
        let fits = |spec: &str, current: &str| {
            let (knob, value) = parsed(spec);
            fits(&knob, &value, &online, current)
        };
        for (spec, current) in [
            ("irq:42=1", ""),
            ("irq:42=0-1", ""),
            ("rps:eth0/rx-0=3", ""),
            ("rps:eth0/rx-0=0", ""),
            ("workqueue-cpumask=1", ""),
            ("sysctl:net.core.netdev_budget=600", "300"),
            (
                "sysctl:net.ipv4.ip_local_port_range=1024 65000",
                "32768 60999",
            ),
            ("sysctl:kernel.sched_rt_runtime_us=-1", "950000"),
            ("sysctl:kernel.core_pattern=core", "|/usr/lib/systemd"),
        ] {
            assert_eq!(fits(spec, current), Ok(()), "{spec}");
        }
        for (spec, current, why) in [
            (
                "irq:42=7",
                "",
                "CPU 7 is offline or does not exist (online CPUs: 0-1)",
            ),
            ("xps:eth0/tx-0=4", "", "CPU 2 is offline"),
            ("workqueue-cpumask=0", "", "at least one CPU"),
            ("sysctl:net.core.netdev_budget=-5", "300", "-5 is negative"),
            (
                "sysctl:net.core.netdev_budget=lots",
                "300",
                "'lots' is not one",
            ),
            (
                "sysctl:net.ipv4.ip_local_port_range=1024",
                "32768 60999",
                "holds 2 value(s)",
            ),
        ] {
            let err = fits(spec, current).unwrap_err();
            assert!(err.contains(why), "{spec}: {err}");
        }
    }

    #[test]
    fn a_change_to_what_does_not_exist_is_refused_before_it_is_read() {
        let err = |spec: &str| {
            let (knob, value) = parsed(spec);
            format!("{:#}", check_on_machine(&knob, &value).unwrap_err())
        };
        assert_eq!(
            err("irq:999999=0"),
            "there is no IRQ 999999 (see /proc/interrupts)"
        );
        assert_eq!(
            err("sysctl:net.core.no_such_knob=1"),
            "there is no sysctl net.core.no_such_knob"
        );
    }

    #[test]
    fn knobs_live_where_the_kernel_documents_them() {
        let file = |spec: &str| path(&parsed(spec).0).unwrap();
        assert_eq!(
            file("irq:24=0"),
            PathBuf::from("/proc/irq/24/smp_affinity_list")
        );
        assert_eq!(
            file("rps:ns/eth0/rx-1=1"),
            PathBuf::from("/sys/class/net/eth0/queues/rx-1/rps_cpus")
        );
        assert_eq!(
            file("sysctl:net.core.netdev_budget=1"),
            PathBuf::from("/proc/sys/net/core/netdev_budget")
        );
        assert_eq!(
            file("rt-runtime:/sys/fs/cgroup/cpu/=-1"),
            PathBuf::from("/sys/fs/cgroup/cpu/cpu.rt_runtime_us")
        );
        assert_eq!(
            describe(&parsed("threaded:ns/veth1=1").0),
            "/sys/class/net/veth1/threaded in netns ns"
        );
    }

    #[test]
    fn values_read_are_written_back_as_they_were() {
        let sysctl = Knob::Sysctl {
            name: "net.ipv4.ip_local_port_range".into(),
        };
        assert_eq!(normalize(&sysctl, "32768\t60999\n"), "32768 60999");
        assert_eq!(normalize(&Knob::IrqAffinity { irq: 1 }, "0-1\n"), "0-1");
    }

    #[test]
    fn the_calling_threads_own_settings_read_back() {
        let me = sched::gettid();
        let comm = fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
        let comm = comm.trim().to_owned();
        let affinity = read(&Knob::ThreadAffinity {
            tid: me,
            comm: comm.clone(),
        })
        .unwrap();
        assert!(affinity.parse::<CpuList>().is_ok(), "{affinity}");
        // writing back what was read changes nothing and needs no privilege
        write(
            &Knob::ThreadAffinity {
                tid: me,
                comm: comm.clone(),
            },
            &affinity,
        )
        .unwrap();
        let priority = read(&Knob::ThreadPriority {
            tid: me,
            comm: comm.clone(),
        })
        .unwrap();
        assert!(priority.parse::<Priority>().is_ok(), "{priority}");
        let other = Knob::ThreadAffinity {
            tid: me,
            comm: "not-this-one".into(),
        };
        assert!(read(&other).unwrap_err().to_string().contains("left alone"));
    }
}
