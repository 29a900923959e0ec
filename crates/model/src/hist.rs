//! The histogram every `hist` mode counts its values in, and its layout (rtla's options).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::{Check, Checked, MAX_BUCKET_US, MAX_ENTRIES};

/// Buckets of `bucket_size` µs, `entries` of them, and what to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistOptions {
    /// Bucket size, µs.
    pub bucket_size: u64,
    /// Number of buckets.
    pub entries: usize,
    /// Print empty buckets too.
    pub with_zeros: bool,
    /// Leave out the count/min/avg/max lines.
    pub no_summary: bool,
    /// Leave out the header lines: title, time unit, column names (rtla's `--no-header`).
    #[serde(default)]
    pub no_header: bool,
    /// Leave out the index column: the bucket's start and the row names (rtla's
    /// `--no-index`).
    #[serde(default)]
    pub no_index: bool,
}

impl HistOptions {
    /// The bucket size in ns.
    pub fn bucket_ns(&self) -> u64 {
        self.bucket_size.saturating_mul(1_000)
    }
}

impl Check for HistOptions {
    /// Whether the layout is one a histogram can have (see [`crate::bounds`]).
    fn check(&self) -> Checked {
        if !(1..=MAX_BUCKET_US).contains(&self.bucket_size)
            || !(1..=MAX_ENTRIES).contains(&self.entries)
        {
            return Err(format!(
                "histogram needs a bucket size of 1 us to 1 h and 1 to {MAX_ENTRIES} entries"
            ));
        }
        Ok(())
    }
}

/// The bucket size of every histogram unless told otherwise, µs (`--bucket-size`).
pub const DEFAULT_BUCKET_SIZE: u64 = 1;
/// The number of buckets unless told otherwise (`--entries`).
pub const DEFAULT_ENTRIES: usize = 256;

impl Default for HistOptions {
    fn default() -> Self {
        HistOptions {
            bucket_size: DEFAULT_BUCKET_SIZE,
            entries: DEFAULT_ENTRIES,
            with_zeros: false,
            no_summary: false,
            no_header: false,
            no_index: false,
        }
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

/// Log-spaced buckets per decade of [`Histogram::log_buckets`]: each 12% wide, so that a
/// quantile read off a plot of them is within 12% of the exact one.
pub const LOG_BUCKETS_PER_DECADE: u32 = 20;
/// Where the log-spaced buckets begin, ns: the first holds the values below it (no
/// latency irqlens measures is that short).
pub const LOG_FLOOR_NS: u64 = 10;

/// The log-spaced bucket `value_ns` falls in: 0 below [`LOG_FLOOR_NS`], then
/// [`LOG_BUCKETS_PER_DECADE`] a decade, each from its [`log_bucket_range`]'s start
/// (included) to its end.
pub fn log_bucket(value_ns: u64) -> usize {
    if value_ns < LOG_FLOOR_NS {
        return 0;
    }
    let decades = (value_ns as f64 / LOG_FLOOR_NS as f64).log10();
    let index = 1 + (decades * LOG_BUCKETS_PER_DECADE as f64).floor() as usize;
    // the logarithm can round across a bound: the bounds decide
    let range = log_bucket_range(index);
    let value = value_ns as f64;
    if value < range.start {
        index - 1
    } else if value >= range.end {
        index + 1
    } else {
        index
    }
}

/// The values log-spaced bucket `index` holds, ns: from its start up to its end.
pub fn log_bucket_range(index: usize) -> std::ops::Range<f64> {
    let bound =
        |i: usize| LOG_FLOOR_NS as f64 * 10f64.powf(i as f64 / LOG_BUCKETS_PER_DECADE as f64);
    match index {
        0 => 0.0..LOG_FLOOR_NS as f64,
        _ => bound(index - 1)..bound(index),
    }
}

/// A latency histogram: buckets of `bucket_ns` from 0, the values beyond, and their
/// count, extremes and sum.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Histogram {
    /// Bucket size, ns.
    pub bucket_ns: u64,
    /// Count per bucket; bucket `i` holds `i * bucket_ns` up to `(i + 1) * bucket_ns`.
    pub buckets: Vec<u64>,
    /// Values beyond the last bucket.
    pub overflow: u64,
    /// All values, overflow included.
    pub count: u64,
    /// The smallest value, ns; none without values.
    pub min_ns: Option<u64>,
    /// The largest value, ns (0 without values).
    pub max_ns: u64,
    /// The sum of the values, ns.
    pub sum_ns: u64,
    /// Values at or below each of `DECADE_BOUNDS_NS` and above the one before; the last
    /// count is of the values above 10 s. (Not in the JSON: rtla's buckets are.)
    #[serde(skip)]
    pub decades: [u64; DECADE_BOUNDS_NS.len() + 1],
    /// Count per log-spaced bucket ([`log_bucket`]), up to the largest value's: every
    /// value however large, fine below 1 µs, for the plots. (Not in the JSON, as
    /// `decades`.)
    #[serde(skip)]
    pub log_buckets: Vec<u64>,
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
            log_buckets: Vec::new(),
        }
    }

    /// Counts a value.
    pub fn add(&mut self, value_ns: u64) {
        match self.buckets.get_mut((value_ns / self.bucket_ns) as usize) {
            Some(bucket) => *bucket += 1,
            None => self.overflow += 1,
        }
        self.decades[DECADE_BOUNDS_NS.partition_point(|&bound| bound < value_ns)] += 1;
        let log_index = log_bucket(value_ns);
        if self.log_buckets.len() <= log_index {
            self.log_buckets.resize(log_index + 1, 0);
        }
        self.log_buckets[log_index] += 1;
        self.count += 1;
        self.min_ns = Some(self.min_ns.map_or(value_ns, |min| min.min(value_ns)));
        self.max_ns = self.max_ns.max(value_ns);
        self.sum_ns += value_ns;
    }

    /// Adds `other`'s values, counted in buckets of the same size: several CPUs'
    /// histograms as one.
    pub fn merge(&mut self, other: &Histogram) {
        assert_eq!(self.bucket_ns, other.bucket_ns, "merging unlike histograms");
        add_counts(&mut self.buckets, &other.buckets);
        add_counts(&mut self.log_buckets, &other.log_buckets);
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

    /// The fraction of the values at or below the end of every non-empty log-spaced
    /// bucket, with that end in ns, the last at the largest value: the CDF over every
    /// value, whose polyline crosses each quantile within the quantile's bucket.
    pub fn log_cumulative(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.running_fraction(&self.log_buckets, |index| {
            log_bucket_range(index).end.min(self.max_ns as f64)
        })
    }

    /// (the end of bucket `index`, by `end`; the fraction of the values up to it) for
    /// every non-empty bucket of `counts`.
    fn running_fraction<'a, End>(
        &self,
        counts: &'a [u64],
        end: impl Fn(usize) -> End + 'a,
    ) -> impl Iterator<Item = (End, f64)> + 'a {
        let total = self.count.max(1) as f64;
        let mut seen = 0;
        counts
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(move |(index, count)| {
                seen += count;
                (end(index), seen as f64 / total)
            })
    }

    /// The mean, ns; `None` without values.
    pub fn avg_ns(&self) -> Option<u64> {
        (self.count > 0).then(|| self.sum_ns / self.count)
    }

    /// Lower bound of bucket `index`, in ns.
    pub fn bucket_start_ns(&self, index: usize) -> u64 {
        index as u64 * self.bucket_ns
    }

    /// The fraction of the samples at or below the end of every non-empty bucket, with
    /// that end in ns: the CDF over the buckets (short of 1 when some overflowed).
    pub fn cumulative(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.running_fraction(&self.buckets, |index| self.bucket_start_ns(index + 1))
    }
}

/// `theirs` added to `mine` count by count, `mine` grown to hold them all.
fn add_counts(mine: &mut Vec<u64>, theirs: &[u64]) {
    if mine.len() < theirs.len() {
        mine.resize(theirs.len(), 0);
    }
    for (mine, theirs) in mine.iter_mut().zip(theirs) {
        *mine += theirs;
    }
}
