//! Linear-bucket histogram as rtla prints it: fixed bucket size, a number of entries, and
//! an overflow count for what lies beyond; plus count/min/avg/max of every value.

use hdrhistogram::Histogram as Quantiles;

/// The histogram itself is the documents' type: analyze fills it, present shows it.
pub use irqlens_model::hist::{
    DECADE_BOUNDS_NS, Histogram, LOG_BUCKETS_PER_DECADE, log_bucket, log_bucket_range,
};

/// Quantile recorder with 3 significant digits: 1 ns resolution up to 2 µs, 0.1% above.
/// Its size grows with the largest value recorded: 8 KiB per doubling of the range, about
/// 170 KiB for values up to 1 s; kept for each series a table shows.
pub fn quantiles() -> Quantiles<u64> {
    Quantiles::new(3).expect("3 significant digits is a valid precision")
}

/// Quantile recorder with 2 significant digits (1% above 256 ns): 1 KiB per doubling of
/// the range, about 23 KiB up to 1 s; for the many per-cause and run-time recorders,
/// whose median is a hint rather than the measurement.
pub fn coarse_quantiles() -> Quantiles<u64> {
    Quantiles::new(2).expect("2 significant digits is a valid precision")
}

/// Records `value`, growing the range as needed (saturating_record would clamp instead).
pub fn record(quantiles: &mut Quantiles<u64>, value: u64) {
    if quantiles.record(value).is_err() {
        quantiles.saturating_record(value);
    }
}

/// A linear histogram (exact count, min, avg, max, rtla's buckets) and quantiles of the
/// same values.
#[derive(Clone, Debug)]
pub struct Distribution {
    /// The linear histogram.
    pub histogram: Histogram,
    quantiles: Quantiles<u64>,
}

impl Distribution {
    /// Quantiles to 0.1%.
    pub fn new(bucket_ns: u64, entries: usize) -> Self {
        Self::with_quantiles(bucket_ns, entries, quantiles())
    }

    /// Quantiles to 1%, in a seventh of the memory: for series there are many of.
    pub fn coarse(bucket_ns: u64, entries: usize) -> Self {
        Self::with_quantiles(bucket_ns, entries, coarse_quantiles())
    }

    fn with_quantiles(bucket_ns: u64, entries: usize, quantiles: Quantiles<u64>) -> Self {
        Distribution {
            histogram: Histogram::new(bucket_ns, entries),
            quantiles,
        }
    }

    /// Counts a value.
    pub fn add(&mut self, value_ns: u64) {
        self.histogram.add(value_ns);
        record(&mut self.quantiles, value_ns);
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.histogram.count
    }

    /// The smallest value, ns (exact).
    pub fn min_ns(&self) -> Option<u64> {
        self.histogram.min_ns
    }

    /// The mean, ns.
    pub fn avg_ns(&self) -> Option<u64> {
        self.histogram.avg_ns()
    }

    /// The largest value, ns (exact).
    pub fn max_ns(&self) -> Option<u64> {
        (self.count() > 0).then_some(self.histogram.max_ns)
    }

    /// Quantile `q` (0..=1), ns: within 0.1% (`new`) or 1% (`coarse`), and never outside
    /// the exact min..max.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        let (min, max) = (self.min_ns()?, self.max_ns()?);
        Some(self.quantiles.value_at_quantile(q).clamp(min, max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_overflow_and_stats() {
        let mut h = Histogram::new(1_000, 4);
        for v in [0, 999, 1_000, 3_999, 4_000, 10_000] {
            h.add(v);
        }
        assert_eq!(h.buckets, vec![2, 1, 0, 1]);
        assert_eq!(h.overflow, 2);
        assert_eq!(h.count, 6);
        assert_eq!(h.min_ns, Some(0));
        assert_eq!(h.max_ns, 10_000);
        assert_eq!(h.avg_ns(), Some((999 + 1_000 + 3_999 + 4_000 + 10_000) / 6));
        assert_eq!(h.bucket_start_ns(3), 3_000);
    }

    #[test]
    fn merged_histograms_count_both() {
        let mut a = Histogram::new(1_000, 4);
        let mut b = Histogram::new(1_000, 4);
        let empty = Histogram::new(1_000, 4);
        for v in [500, 2_500] {
            a.add(v);
        }
        for v in [2_100, 9_000] {
            b.add(v);
        }
        a.merge(&b);
        a.merge(&empty);
        assert_eq!(a.buckets, vec![1, 0, 2, 0]);
        assert_eq!((a.overflow, a.count), (1, 4));
        assert_eq!((a.min_ns, a.max_ns), (Some(500), 9_000));
        assert_eq!(a.sum_ns, 500 + 2_500 + 2_100 + 9_000);
        assert_eq!(a.decades.iter().sum::<u64>(), 4);
        // b's 9 µs reaches farther than any of a's: a's log buckets grow to hold it
        let mut log = vec![0; log_bucket(9_000) + 1];
        for v in [500, 2_500, 2_100, 9_000] {
            log[log_bucket(v)] += 1;
        }
        assert_eq!(a.log_buckets, log);
    }

    #[test]
    fn log_buckets_hold_every_value_in_the_bucket_whose_range_has_it() {
        let mut h = Histogram::new(1_000, 4);
        let values = [
            0,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1_000,
            3_000_000,
            10_000_000_000,
        ];
        for v in values {
            h.add(v);
        }
        for v in values.into_iter().chain([u64::MAX]) {
            let range = log_bucket_range(log_bucket(v));
            assert!(range.contains(&(v as f64)), "{v} not in {range:?}");
        }
        assert_eq!(log_bucket(9), 0);
        // a decade is LOG_BUCKETS_PER_DECADE buckets, from the floor on
        assert_eq!(log_bucket(10), 1);
        assert_eq!(log_bucket(100), 1 + LOG_BUCKETS_PER_DECADE as usize);
        assert_eq!(log_bucket(99), LOG_BUCKETS_PER_DECADE as usize);
        assert_eq!(h.log_buckets.iter().sum::<u64>(), h.count);
        assert_eq!(h.log_buckets.len(), log_bucket(10_000_000_000) + 1);
    }

    #[test]
    fn log_buckets_tell_sub_microsecond_values_apart() {
        let mut h = Histogram::new(1_000, 256);
        for v in [250, 330, 480, 520, 700, 950] {
            h.add(v);
        }
        // the linear buckets have them all in their first
        assert_eq!(h.buckets[0], 6);
        let used = h.log_buckets.iter().filter(|&&c| c > 0).count();
        assert_eq!(used, 6, "{:?}", h.log_buckets);
        // each bucket about 12% wide
        let range = log_bucket_range(log_bucket(480));
        let ratio = range.end / range.start;
        assert!((ratio - 10f64.powf(0.05)).abs() < 1e-9, "{range:?}");
    }

    #[test]
    fn log_cumulative_reaches_all_values_at_the_largest() {
        let mut h = Histogram::new(1_000, 4);
        for v in [400, 450, 2_000, 3_000_000] {
            h.add(v);
        }
        let cdf: Vec<(f64, f64)> = h.log_cumulative().collect();
        assert_eq!(cdf.len(), 4, "{cdf:?}");
        assert_eq!(cdf[0].1, 0.25);
        assert!(cdf[0].0 > 400.0 && cdf[0].0 < 450.0, "{cdf:?}");
        assert_eq!(*cdf.last().unwrap(), (3_000_000.0, 1.0));
        assert!(cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
    }

    #[test]
    fn decades_count_each_value_under_its_first_bound_at_or_above_it() {
        let mut h = Histogram::new(1_000, 4);
        // on a bound, just above it, far beyond the linear range, past 10 s
        for v in [
            0,
            1_000,
            1_001,
            5_000,
            300_000,
            18_000_000,
            10_000_000_000,
            10_000_000_001,
        ] {
            h.add(v);
        }
        let mut expected = [0; DECADE_BOUNDS_NS.len() + 1];
        expected[0] = 2; // 0 and 1 µs: le 1 µs
        expected[1] = 1; // 1.001 µs: le 2 µs
        expected[2] = 1; // 5 µs
        expected[8] = 1; // 300 µs: le 500 µs
        expected[13] = 1; // 18 ms: le 20 ms
        expected[21] = 1; // 10 s
        expected[22] = 1; // beyond 10 s
        assert_eq!(h.decades, expected);
        assert_eq!(h.decades.iter().sum::<u64>(), h.count);
    }

    #[test]
    fn empty_histogram_has_no_average() {
        let h = Histogram::new(1_000, 4);
        assert_eq!(h.avg_ns(), None);
        assert_eq!(h.min_ns, None);
    }
}
