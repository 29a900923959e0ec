//! A task's latency samples in memory that does not grow with the simulated time: every
//! sample exactly up to [`EXACT_SAMPLES`] (so short simulations summarize exactly as
//! before), then folded into a quantile histogram of 3 significant digits, with the
//! count, mean, minimum and maximum still exact.

use hdrhistogram::Histogram;
use irqlens_model::sim::LatencySummary;

use super::engine::Ns;
use crate::histogram::{quantiles, record};

/// Samples kept one by one: 8 MiB a series. One second of a consumer at 1M packets/s
/// (trial's highest rate, `sim --against`'s default length) stays exact.
pub const EXACT_SAMPLES: usize = 1 << 20;

/// What a folded series holds, bytes, at most: the histogram grows 8 KiB per doubling of
/// the largest value (see [`crate::histogram::quantiles`]), 64 doublings of ns at most.
pub const FOLDED_BYTES: u64 = 64 * (8 << 10);

/// CDF points per latency summary.
const CDF_POINTS: usize = 100;

/// One series of latencies, ns.
#[derive(Default)]
pub struct Latencies {
    exact: Vec<Ns>,
    folded: Option<Folded>,
}

/// The samples past [`EXACT_SAMPLES`], with the ones before.
struct Folded {
    histogram: Histogram<u64>,
    sum: f64,
    min: Ns,
    max: Ns,
}

impl Latencies {
    /// Adds one sample.
    pub fn push(&mut self, ns: Ns) {
        if self.folded.is_none() && self.exact.len() < EXACT_SAMPLES {
            self.exact.push(ns);
            return;
        }
        let folded = self.folded.get_or_insert_with(|| {
            let mut folded = Folded {
                histogram: quantiles(),
                sum: 0.0,
                min: Ns::MAX,
                max: 0,
            };
            for value in std::mem::take(&mut self.exact) {
                folded.add(value);
            }
            folded
        });
        folded.add(ns);
    }

    /// Quantiles, mean and CDF, µs.
    pub fn summary(&mut self) -> LatencySummary {
        match &self.folded {
            None => summarize(&mut self.exact),
            Some(folded) => folded.summary(),
        }
    }
}

impl Folded {
    fn add(&mut self, ns: Ns) {
        record(&mut self.histogram, ns);
        self.sum += ns as f64;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    fn summary(&self) -> LatencySummary {
        let n = self.histogram.len();
        let us = |ns: Ns| ns as f64 / 1000.0;
        // the value of the sample of rank `rank` (1-based), as the exact summary takes it,
        // within the histogram's precision
        let ranked = |rank: u64| us(self.histogram.value_at_quantile(rank as f64 / n as f64));
        let quantile = |q: f64| ranked(((q * n as f64).ceil() as u64).clamp(1, n));
        let cdf = (1..=CDF_POINTS as u64)
            .map(|i| {
                let rank = (i * n).div_ceil(CDF_POINTS as u64);
                [ranked(rank), rank as f64 / n as f64]
            })
            .collect();
        LatencySummary {
            count: n,
            mean_us: self.sum / n as f64 / 1000.0,
            min_us: us(self.min),
            p50_us: quantile(0.5),
            p90_us: quantile(0.9),
            p99_us: quantile(0.99),
            p999_us: quantile(0.999),
            max_us: us(self.max),
            cdf,
        }
    }
}

/// Quantiles, mean and CDF of latencies in ns, in µs (it sorts them).
fn summarize(samples: &mut [Ns]) -> LatencySummary {
    if samples.is_empty() {
        return LatencySummary::default();
    }
    samples.sort_unstable();
    let sorted = &*samples;
    let n = sorted.len();
    let us = |ns: Ns| ns as f64 / 1000.0;
    let quantile = |q: f64| us(sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]);
    let cdf = (1..=CDF_POINTS)
        .map(|i| {
            let rank = (i * n).div_ceil(CDF_POINTS);
            [us(sorted[rank - 1]), rank as f64 / n as f64]
        })
        .collect::<Vec<_>>();
    LatencySummary {
        count: n as u64,
        mean_us: sorted.iter().map(|&v| v as f64).sum::<f64>() / n as f64 / 1000.0,
        min_us: us(sorted[0]),
        p50_us: quantile(0.5),
        p90_us: quantile(0.9),
        p99_us: quantile(0.99),
        p999_us: quantile(0.999),
        max_us: us(sorted[n - 1]),
        cdf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_exact_samples_the_summary_stays_within_the_histograms_precision() {
        let values = (0..EXACT_SAMPLES as u64 * 2).map(|i| 1_000 + (i * 7919) % 1_000_000);
        let (mut exact, mut folded) = (Vec::new(), Latencies::default());
        for value in values {
            exact.push(value);
            folded.push(value);
        }
        assert!(folded.exact.is_empty() && folded.folded.is_some());
        let (want, got) = (summarize(&mut exact), folded.summary());
        assert_eq!(
            (got.count, got.min_us, got.max_us),
            (want.count, want.min_us, want.max_us)
        );
        assert!((got.mean_us - want.mean_us).abs() < 1e-6 * want.mean_us);
        for (got, want) in [
            (got.p50_us, want.p50_us),
            (got.p99_us, want.p99_us),
            (got.p999_us, want.p999_us),
        ]
        .into_iter()
        .chain(got.cdf.iter().zip(&want.cdf).map(|(g, w)| (g[0], w[0])))
        {
            assert!((got - want).abs() <= want * 1e-3, "{got} against {want}");
        }
    }

    #[test]
    fn up_to_the_exact_samples_nothing_is_folded() {
        let mut latencies = Latencies::default();
        for value in 0..EXACT_SAMPLES as u64 {
            latencies.push(value);
        }
        assert!(latencies.folded.is_none());
        assert_eq!(latencies.summary().count, EXACT_SAMPLES as u64);
    }
}
