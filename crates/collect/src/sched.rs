//! Scheduling of the calling thread: CPU affinity and the policies rtla's -P accepts.

use std::io;

use anyhow::{Context, Result};

use irqlens_model::sched::Priority;
use irqlens_model::units::CpuList;

fn check(ret: i64, what: &str) -> Result<()> {
    if ret < 0 {
        return Err(io::Error::last_os_error()).context(what.to_owned());
    }
    Ok(())
}

/// The calling thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &CpuList) -> Result<()> {
    // SAFETY: cpu_set_t is a bit array: all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        // SAFETY: CPU_SET indexes the set's array with bounds checks (it panics beyond it).
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a live cpu_set_t of the size passed; the kernel only reads it.
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
    set_thread_priority(0, priority)
}

/// Gives thread `tid` (0: the calling thread) `priority`; going back to SCHED_OTHER
/// resets the policy first, then the nice value.
pub fn set_thread_priority(tid: u32, priority: Priority) -> Result<()> {
    let what = format!("setting scheduling priority {priority}");
    let pid = tid as libc::pid_t;
    match priority {
        Priority::Other { nice } => {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: `param` is a live sched_param the kernel only reads.
            let ret = unsafe { libc::sched_setscheduler(pid, libc::SCHED_OTHER, &param) };
            check(ret as i64, &what)?;
            let who = if tid == 0 { gettid() } else { tid };
            // SAFETY: plain integer arguments; errors are returned.
            let ret = unsafe { libc::setpriority(libc::PRIO_PROCESS, who, nice) };
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
            // SAFETY: `param` is a live sched_param the kernel only reads.
            let ret = unsafe { libc::sched_setscheduler(pid, policy, &param) };
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
            // SAFETY: `attr` is a live struct sched_attr (repr(C), its size in `size`) the
            // kernel only reads; the other arguments are integers.
            let ret = unsafe { libc::syscall(libc::SYS_sched_setattr, pid, &attr, 0) };
            check(
                ret,
                &format!(
                    "{what} (SCHED_DEADLINE needs the thread's CPUs to form an exclusive cpuset)"
                ),
            )
        }
    }
}

/// Thread `tid`'s policy and priority as `Priority` (SCHED_DEADLINE as its parameters are
/// not read here: an error).
pub fn thread_priority(tid: u32) -> Result<Priority> {
    let pid = tid as libc::pid_t;
    // SAFETY: an integer argument; errors are returned.
    let policy = unsafe { libc::sched_getscheduler(pid) };
    check(
        policy as i64,
        &format!("reading thread {tid}'s scheduling policy"),
    )?;
    let mut param = libc::sched_param { sched_priority: 0 };
    check(
        // SAFETY: `param` is a live sched_param for the kernel to fill.
        unsafe { libc::sched_getparam(pid, &mut param) } as i64,
        &format!("reading thread {tid}'s priority"),
    )?;
    let prio = param.sched_priority as u32;
    Ok(match policy & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_FIFO => Priority::Fifo(prio),
        libc::SCHED_RR => Priority::RoundRobin(prio),
        libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE => {
            // getpriority returns -1 for nice -1 too: errno tells them apart
            // SAFETY: __errno_location returns the calling thread's errno.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: integer arguments; errors are returned.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
            let errno = std::io::Error::last_os_error();
            if nice == -1 && errno.raw_os_error() != Some(0) {
                return Err(errno).context(format!("reading thread {tid}'s nice value"));
            }
            Priority::Other { nice }
        }
        other => anyhow::bail!(
            "thread {tid} runs under scheduling policy {other}, which irqlens does not change"
        ),
    })
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
        // SAFETY: an integer argument; errors are returned.
        let policy = unsafe { libc::sched_getscheduler(0) };
        check(policy as i64, "reading the scheduling policy")?;
        check(
            // SAFETY: `param` is a live sched_param for the kernel to fill.
            unsafe { libc::sched_getparam(0, &mut param) } as i64,
            "reading the scheduling priority",
        )?;
        // SAFETY: integer arguments; errors are returned.
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
        // SAFETY: `self.param` is a live sched_param the kernel only reads; the rest are
        // integers. Best effort: a failure leaves the raised priority.
        unsafe {
            libc::sched_setscheduler(0, self.policy, &self.param);
            libc::setpriority(libc::PRIO_PROCESS, gettid(), self.nice);
        }
    }
}
