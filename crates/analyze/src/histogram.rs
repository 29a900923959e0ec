//! Linear-bucket histogram as rtla prints it: fixed bucket size, a number of entries, and
//! an overflow count for what lies beyond; plus count/min/avg/max of every value.

use hdrhistogram::Histogram as Quantiles;
use serde::Serialize;

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

/// Upper bounds (ns) of the 1-2-5 buckets Prometheus users expect, 1 µs to 10 s: whatever
/// the linear buckets' size and number, every value lands under its exact bound.
pub const DECADE_BOUNDS_NS: [u64; 22] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Buckets of `bucket_ns` from 0, an overflow count, and count/min/max/sum of every
/// value; and the count under each of `DECADE_BOUNDS_NS`.
#[derive(Clone, Debug, Serialize)]
pub struct Histogram {
    /// Bucket size, ns.
    pub bucket_ns: u64,
    /// Count per bucket; bucket `i` holds `i * bucket_ns` up to `(i + 1) * bucket_ns`.
    pub buckets: Vec<u64>,
    /// Values beyond the last bucket.
    pub overflow: u64,
    /// All values, overflow included.
    pub count: u64,
    /// The smallest value, ns; `None` without values.
    pub min_ns: Option<u64>,
    /// The largest value, ns (0 without values).
    pub max_ns: u64,
    /// The sum of the values, ns.
    pub sum_ns: u64,
    /// Values at or below each of `DECADE_BOUNDS_NS` and above the one before; the last
    /// count is of the values above 10 s. (Not in the JSON: rtla's buckets are.)
    #[serde(skip)]
    pub decades: [u64; DECADE_BOUNDS_NS.len() + 1],
}

impl Histogram {
    /// `entries` empty buckets of `bucket_ns`; panics if either is 0.
    pub fn new(bucket_ns: u64, entries: usize) -> Self {
        assert!(
            bucket_ns > 0 && entries > 0,
            "histogram needs a bucket size and entries"
        );
        Histogram {
            bucket_ns,
            buckets: vec![0; entries],
            overflow: 0,
            count: 0,
            min_ns: None,
            max_ns: 0,
            sum_ns: 0,
            decades: [0; DECADE_BOUNDS_NS.len() + 1],
        }
    }

    /// Counts a value.
    pub fn add(&mut self, value_ns: u64) {
        match self.buckets.get_mut((value_ns / self.bucket_ns) as usize) {
            Some(bucket) => *bucket += 1,
            None => self.overflow += 1,
        }
        self.decades[DECADE_BOUNDS_NS.partition_point(|&bound| bound < value_ns)] += 1;
        self.count += 1;
        self.min_ns = Some(self.min_ns.map_or(value_ns, |min| min.min(value_ns)));
        self.max_ns = self.max_ns.max(value_ns);
        self.sum_ns += value_ns;
    }

    /// Adds `other`'s values, counted in buckets of the same size: several CPUs'
    /// histograms as one.
    pub fn merge(&mut self, other: &Histogram) {
        assert_eq!(self.bucket_ns, other.bucket_ns, "merging unlike histograms");
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        for (mine, theirs) in self.decades.iter_mut().zip(&other.decades) {
            *mine += theirs;
        }
        self.overflow += other.overflow;
        self.count += other.count;
        self.min_ns = match (self.min_ns, other.min_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
    }

    /// The mean, ns; `None` without values.
    pub fn avg_ns(&self) -> Option<u64> {
        (self.count > 0).then(|| self.sum_ns / self.count)
    }

    /// Lower bound of bucket `index`, in ns.
    pub fn bucket_start_ns(&self, index: usize) -> u64 {
        index as u64 * self.bucket_ns
    }

    /// The histogram as the `--json` documents show it.
    pub fn table(&self) -> irqlens_model::tables::Histogram {
        irqlens_model::tables::Histogram {
            bucket_ns: self.bucket_ns,
            buckets: self.buckets.clone(),
            overflow: self.overflow,
            count: self.count,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            sum_ns: self.sum_ns,
        }
    }

    /// The fraction of the samples at or below the end of every non-empty bucket, with
    /// that end in ns: the CDF over the buckets (short of 1 when some overflowed).
    pub fn cumulative(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        let total = self.count.max(1) as f64;
        let mut seen = 0;
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(move |(index, count)| {
                seen += count;
                (self.bucket_start_ns(index + 1), seen as f64 / total)
            })
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
