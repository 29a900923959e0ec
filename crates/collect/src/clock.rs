//! The clock the measurement loop reads. On x86 with an invariant TSC that is
//! `lfence; rdtsc` (about 20 ns), calibrated against CLOCK_MONOTONIC (the BPF side's
//! bpf_ktime_get_ns) so sample times and record times share one time line; elsewhere
//! the vDSO's clock_gettime.

use std::fs;
use std::time::Duration;

/// A clock a measurement thread reads in its loop.
pub trait Clock: Sync {
    /// A raw reading in ticks; cheap and monotonic on one CPU.
    fn now(&self) -> u64;
    /// CLOCK_MONOTONIC ns of a reading.
    fn to_ns(&self, ticks: u64) -> u64;
    /// Ticks in a duration.
    fn ticks(&self, duration: Duration) -> u64;
    /// What it reads, for the run information.
    fn name(&self) -> &'static str;
}

/// CLOCK_MONOTONIC now, ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// clock_gettime(CLOCK_MONOTONIC): ticks are ns.
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        monotonic_ns()
    }

    fn to_ns(&self, ticks: u64) -> u64 {
        ticks
    }

    fn ticks(&self, duration: Duration) -> u64 {
        duration.as_nanos() as u64
    }

    fn name(&self) -> &'static str {
        "clock_gettime(CLOCK_MONOTONIC)"
    }
}

/// The TSC (`lfence; rdtsc`), calibrated against CLOCK_MONOTONIC.
#[cfg(target_arch = "x86_64")]
pub struct TscClock {
    ns_per_tick: f64,
    tsc0: u64,
    mono0: u64,
}

#[cfg(target_arch = "x86_64")]
impl TscClock {
    /// `None` unless the TSC is invariant (constant and non-stop), i.e. usable as a clock.
    pub fn calibrate() -> Option<Self> {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").ok()?;
        let flags = cpuinfo.lines().find(|line| line.starts_with("flags"))?;
        let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
        if !(has("constant_tsc") && has("nonstop_tsc")) {
            return None;
        }
        let (tsc0, mono0) = Self::pair();
        std::thread::sleep(Duration::from_millis(50));
        let (tsc1, mono1) = Self::pair();
        let ns_per_tick = (mono1 - mono0) as f64 / (tsc1 - tsc0) as f64;
        Some(TscClock {
            ns_per_tick,
            tsc0,
            mono0,
        })
    }

    /// A (TSC, CLOCK_MONOTONIC) pair read as close together as a few tries allow.
    fn pair() -> (u64, u64) {
        (0..16)
            .map(|_| {
                let before = monotonic_ns();
                let tsc = Self::read();
                let after = monotonic_ns();
                (after - before, tsc, before + (after - before) / 2)
            })
            .min()
            .map(|(_, tsc, mono)| (tsc, mono))
            .expect("16 tries")
    }

    #[inline(always)]
    fn read() -> u64 {
        // lfence keeps rdtsc from running ahead of the counter read before it
        // SAFETY: both need only SSE2 and the TSC, which every x86_64 CPU has.
        unsafe {
            std::arch::x86_64::_mm_lfence();
            std::arch::x86_64::_rdtsc()
        }
    }

    /// The TSC's rate as calibrated, MHz.
    pub fn mhz(&self) -> f64 {
        1_000.0 / self.ns_per_tick
    }
}

#[cfg(target_arch = "x86_64")]
impl Clock for TscClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        Self::read()
    }

    fn to_ns(&self, ticks: u64) -> u64 {
        let delta = ticks as i128 - self.tsc0 as i128;
        (self.mono0 as i128 + (delta as f64 * self.ns_per_tick) as i128).max(0) as u64
    }

    fn ticks(&self, duration: Duration) -> u64 {
        (duration.as_nanos() as f64 / self.ns_per_tick) as u64
    }

    fn name(&self) -> &'static str {
        "tsc (lfence; rdtsc)"
    }
}

/// clock_nanosleep to an absolute CLOCK_MONOTONIC time; false if a signal cut it short.
pub fn sleep_until(ns: u64) -> bool {
    let until = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `until` is a live timespec; no remaining time is asked for (null).
    let ret = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &until,
            std::ptr::null_mut(),
        )
    };
    ret == 0
}

/// A periodic loop's next expiry when `next` may be past already: the first of `next`,
/// `next + period`, ... after `now`, and how many it skipped (missed, not made up for).
pub fn skip_missed(next: u64, period: u64, now: u64) -> (u64, u64) {
    if next > now {
        return (next, 0);
    }
    let skipped = (now - next) / period + 1;
    (next + skipped * period, skipped)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn tsc_agrees_with_monotonic() {
        let Some(tsc) = TscClock::calibrate() else {
            return;
        };
        let mono = monotonic_ns();
        let from_tsc = tsc.to_ns(tsc.now());
        assert!(
            from_tsc.abs_diff(mono) < 1_000_000,
            "tsc {from_tsc} vs monotonic {mono}"
        );
        let ticks = tsc.ticks(Duration::from_micros(100));
        assert!((tsc.to_ns(tsc.tsc0 + ticks) - tsc.mono0).abs_diff(100_000) < 100);
    }
}

#[cfg(test)]
mod skip_tests {
    use super::skip_missed;

    #[test]
    fn skip_missed_lands_after_now() {
        assert_eq!(skip_missed(2_000, 1_000, 1_500), (2_000, 0));
        assert_eq!(skip_missed(2_000, 1_000, 2_000), (3_000, 1));
        assert_eq!(skip_missed(2_000, 1_000, 4_500), (5_000, 3));
    }
}
