//! The bounds every option is held to, wherever it comes from: the command line, a
//! recording's header, a sim model, a calibration or a trial file. Each options type has
//! one `check`, which the command line's resolution and every reader call, so that a file
//! can set nothing the command line refuses, and nothing makes irqlens allocate or loop
//! without bound. Errors are one line, naming the option (its command-line name where it
//! has one) and its bounds.

use std::fmt::Display;
use std::time::Duration;

use crate::units::CpuList;

/// Histogram buckets (`-E`): rtla's largest is 1,000,000.
pub const MAX_ENTRIES: usize = 1_000_000;
/// Histogram bucket size, µs (`-b`): one hour; wider buckets would hold every latency in
/// the first.
pub const MAX_BUCKET_US: u64 = 3_600_000_000;
/// The largest CPU number: Linux's largest NR_CPUS is 8192.
pub const MAX_CPU: u32 = 8_191;
/// A run's duration, warm-up, stop threshold: a year (longer would overflow the sums of
/// ns some analyses keep).
pub const MAX_RUN: Duration = Duration::from_secs(365 * 24 * 3600);
/// Rows asked of a table (`--causes`, `--worst`, `--top`): the worst samples are kept
/// whole, so their number is bounded.
pub const MAX_ROWS: usize = 10_000;
/// Records kept before a stop, for its context (noise's `keep_recent`).
pub const MAX_KEEP_RECENT: usize = 10_000;
/// Samples one noise measurement thread keeps per runtime window.
pub const MAX_SAMPLES_PER_WINDOW: usize = 1 << 20;

/// A one-line error, or nothing.
pub type Checked = Result<(), String>;

/// Options held to the bounds: the command line resolves them and every reader reads them
/// through this one check.
pub trait Check {
    /// Why these options cannot be used, in one line, if they cannot.
    fn check(&self) -> Checked;
}

/// `value` is in `min..=max`, or the error says it must be.
pub fn within<T: PartialOrd + Display>(what: &str, value: T, min: T, max: T) -> Checked {
    if value < min || value > max {
        return Err(format!("{what} must be {min} to {max}, not {value}"));
    }
    Ok(())
}

/// `value` is finite and in `min..=max` (a file can hold any double, and JSON's `1e999`
/// reads as infinity).
pub fn finite_within(what: &str, value: f64, min: f64, max: f64) -> Checked {
    if !value.is_finite() || value < min || value > max {
        return Err(format!(
            "{what} must be a number from {} to {}, not {}",
            number(min),
            number(max),
            number(value)
        ));
    }
    Ok(())
}

/// A double as a person reads it: `1e308`, not 309 digits.
fn number(value: f64) -> String {
    if value != 0.0 && !(1e-3..1e7).contains(&value.abs()) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// A list of CPUs a run measures: one at least, each a CPU number Linux can have.
pub fn check_cpus(what: &str, cpus: &CpuList) -> Checked {
    if cpus.is_empty() {
        return Err(format!("{what}: no CPU"));
    }
    match cpus.iter().find(|&cpu| cpu > MAX_CPU) {
        Some(cpu) => Err(format!("{what}: CPU {cpu} is beyond Linux's CPU {MAX_CPU}")),
        None => Ok(()),
    }
}

/// A length of time given as an option: above zero (unless `zero_ok`) and at most
/// [`MAX_RUN`].
pub fn check_time(what: &str, time: Duration, zero_ok: bool) -> Checked {
    if time.is_zero() && !zero_ok {
        return Err(format!("{what} must be longer than zero"));
    }
    if time > MAX_RUN {
        return Err(format!(
            "{what} must be at most a year ({} s)",
            MAX_RUN.as_secs()
        ));
    }
    Ok(())
}

/// An optional time, checked as [`check_time`] when given.
pub fn check_optional_time(what: &str, time: Option<Duration>, zero_ok: bool) -> Checked {
    time.map_or(Ok(()), |time| check_time(what, time, zero_ok))
}

/// A histogram's buckets in ns and their number, as the analyses are given them.
pub fn check_buckets(bucket_ns: u64, entries: usize) -> Checked {
    within("bucket_ns", bucket_ns, 1, MAX_BUCKET_US * 1_000)?;
    within("entries", entries, 1, MAX_ENTRIES)
}

/// The number of rows a table is asked for.
pub fn check_rows(what: &str, rows: usize) -> Checked {
    within(what, rows, 0, MAX_ROWS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_is_refused_with_its_message() {
        assert!(within("entries", 0usize, 1, 10).unwrap_err() == "entries must be 1 to 10, not 0");
        assert!(within("entries", 11usize, 1, 10).is_err());
        assert!(within("entries", 10usize, 1, 10).is_ok());
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e308] {
            let err = finite_within("rate", bad, 0.0, 1e6).unwrap_err();
            assert!(
                err.starts_with("rate must be a number from 0 to 1000000, not "),
                "{err}"
            );
            // 1e308 as a person reads it, not in 309 digits
            assert!(err.len() < 60, "{err}");
        }
        assert!(finite_within("rate", 5.0, 0.0, 1e6).is_ok());
        assert!(
            check_cpus("cpus", &CpuList::default())
                .unwrap_err()
                .contains("no CPU")
        );
        let far: CpuList = [0, MAX_CPU + 1].into_iter().collect();
        assert!(check_cpus("cpus", &far).unwrap_err().contains("beyond"));
        assert!(check_cpus("cpus", &CpuList::single(MAX_CPU)).is_ok());
        assert!(
            check_time("duration", Duration::ZERO, false)
                .unwrap_err()
                .contains("zero")
        );
        assert!(check_time("warm_up", Duration::ZERO, true).is_ok());
        let long = MAX_RUN + Duration::from_secs(1);
        assert!(
            check_time("duration", long, false)
                .unwrap_err()
                .contains("a year")
        );
        assert!(check_optional_time("duration", None, false).is_ok());
        assert!(
            check_buckets(0, 10)
                .unwrap_err()
                .starts_with("bucket_ns must be 1")
        );
        assert!(
            check_buckets(1_000, 0)
                .unwrap_err()
                .starts_with("entries must be 1")
        );
        assert!(check_buckets(1_000, MAX_ENTRIES + 1).is_err());
        assert!(check_buckets(u64::MAX, 1).is_err());
        assert!(
            check_rows("--worst", 1 << 63)
                .unwrap_err()
                .starts_with("--worst must be")
        );
    }
}
