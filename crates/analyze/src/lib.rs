//! Pure analysis: no kernel, no root. Everything here is unit-tested on synthetic data.

#![warn(missing_docs)]

pub mod account;
pub mod advise;
pub mod bh;
pub mod bounded;
pub mod check;

pub mod histogram;

pub mod loss;
pub mod noise;
pub mod noise_passive;
pub mod sim;
pub mod steer;
pub mod timeline;
pub mod trial;
pub mod tune;
pub mod wakeup;
pub mod workload;

/// Each item once, in the order first seen (designs in the order measured; a handful,
/// so a linear search).
pub fn first_seen<T: PartialEq>(seen: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut once: Vec<T> = Vec::new();
    for item in seen {
        if !once.contains(&item) {
            once.push(item);
        }
    }
    once
}

/// The median of `values` (the mean of the middle two of an even count); none of none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Keeps `worst` (largest `key` first, at most `keep`) with `item` in its place: after
/// the items of an equal key, and not at all if `worst` is full of items as large.
pub(crate) fn keep_worst<T>(worst: &mut Vec<T>, item: T, keep: usize, key: impl Fn(&T) -> u64) {
    let value = key(&item);
    if keep == 0 || worst.len() == keep && worst.last().is_some_and(|w| key(w) >= value) {
        return;
    }
    let at = worst.partition_point(|w| key(w) >= value);
    worst.insert(at, item);
    worst.truncate(keep);
}
