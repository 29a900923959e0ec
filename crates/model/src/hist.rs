//! The histogram layout every `hist` mode prints (rtla's options).

use serde::{Deserialize, Serialize};

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

impl Default for HistOptions {
    fn default() -> Self {
        HistOptions {
            bucket_size: 1,
            entries: 256,
            with_zeros: false,
            no_summary: false,
            no_header: false,
            no_index: false,
        }
    }
}
