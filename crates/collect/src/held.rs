//! What a timer-mode run changes on the machine for its duration, as cyclictest does: the
//! CPUs' PM QoS latency target (/dev/cpu_dma_latency) and the process's memory locked.
//! Both are held by the process, not written into the system: the kernel drops the QoS
//! request when its file is closed and the lock with the process, so any exit (SIGKILL
//! too) leaves the machine as it was. Neither is needed to measure: when one cannot be
//! had, the caller is warned and the run goes on without it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};

use irqlens_model::wakeup::HeldSettings;

/// The kernel's PM QoS interface for the CPUs' wakeup latency target.
pub const DMA_LATENCY_PATH: &str = "/dev/cpu_dma_latency";

/// Holds the settings until dropped.
pub struct Held {
    /// The open request: closing it withdraws it.
    dma_latency: Option<File>,
    settings: HeldSettings,
}

impl Held {
    /// Holds the latency target at `dma_latency_us` (if any) and locks the memory (if
    /// `lock_memory`); what fails is told to `warn` in one line and left out.
    pub fn apply(dma_latency_us: Option<u32>, lock_memory: bool, warn: impl FnMut(String)) -> Held {
        Self::apply_at(DMA_LATENCY_PATH, dma_latency_us, lock_memory, warn)
    }

    /// [`Held::apply`] with the QoS file at `dma_latency_path`.
    fn apply_at(
        dma_latency_path: &str,
        dma_latency_us: Option<u32>,
        lock_memory: bool,
        mut warn: impl FnMut(String),
    ) -> Held {
        let mut held = Held {
            dma_latency: None,
            settings: HeldSettings::default(),
        };
        if let Some(us) = dma_latency_us {
            match request_dma_latency(dma_latency_path, us) {
                Ok(file) => {
                    held.dma_latency = Some(file);
                    held.settings.dma_latency_us = Some(us);
                }
                Err(err) => warn(format!(
                    "{dma_latency_path}: {err}: the CPUs' latency target is left as it is"
                )),
            }
        }
        if lock_memory {
            match lock_all_memory() {
                Ok(()) => held.settings.memory_locked = true,
                Err(err) => warn(format!("memory not locked (mlockall): {err}")),
            }
        }
        held
    }

    /// What is held, for the run information.
    pub fn settings(&self) -> &HeldSettings {
        &self.settings
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // closing the file withdraws the request
        self.dma_latency.take();
        if self.settings.memory_locked {
            // SAFETY: munlockall takes no pointer; it only unlocks this process's pages.
            unsafe { libc::munlockall() };
        }
    }
}

/// Opens the PM QoS file and writes the target as cyclictest does (a binary s32 of µs);
/// the request stands while the file stays open.
fn request_dma_latency(path: &str, us: u32) -> io::Result<File> {
    let value = i32::try_from(us).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut file = OpenOptions::new().write(true).open(path)?;
    file.write_all(&value.to_ne_bytes())?;
    Ok(file)
}

/// CAP_IPC_LOCK's bit in the capability sets.
const CAP_IPC_LOCK: u32 = 14;

/// mlockall(MCL_CURRENT | MCL_FUTURE), as cyclictest -m. Only with CAP_IPC_LOCK or no
/// limit on locked memory: under a limit, MCL_FUTURE would make a later allocation that
/// crosses it fail, and the run with it.
fn lock_all_memory() -> io::Result<()> {
    if !may_lock_without_limit() {
        return Err(io::Error::other(
            "needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK",
        ));
    }
    // SAFETY: mlockall takes flags only; it changes no memory, only how it is paged.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn may_lock_without_limit() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a live rlimit for the call to fill.
    let unlimited = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } == 0
        && limit.rlim_cur == libc::RLIM_INFINITY;
    unlimited
        || std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| effective_capabilities(&status))
            .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The CapEff mask of a /proc/PID/status text.
fn effective_capabilities(status: &str) -> Option<u64> {
    let hex = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_capabilities_are_read_from_status() {
        let status = "Name:\tirqlens\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        let caps = effective_capabilities(status).unwrap();
        assert_ne!(caps & (1 << CAP_IPC_LOCK), 0);
        let without = "CapEff:\t0000000000000000\n";
        assert_eq!(effective_capabilities(without), Some(0));
        assert_eq!(effective_capabilities("Name:\tx\n"), None);
    }

    #[test]
    fn a_missing_qos_file_is_one_warning_and_nothing_held() {
        let mut warnings = Vec::new();
        let held = Held::apply_at("/nonexistent/cpu_dma_latency", Some(0), false, |w| {
            warnings.push(w)
        });
        assert_eq!(held.settings().dma_latency_us, None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("/nonexistent/cpu_dma_latency: "),
            "{warnings:?}"
        );
        assert!(!warnings[0].contains('\n'));
    }

    #[test]
    fn nothing_asked_holds_nothing() {
        let mut warnings = Vec::new();
        let held = Held::apply(None, false, |w| warnings.push(w));
        assert_eq!(held.settings(), &HeldSettings::default());
        assert!(warnings.is_empty());
    }
}
