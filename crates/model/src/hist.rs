//! The histogram layout every `hist` mode prints (rtla's options).

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
