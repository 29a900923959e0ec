//! Containers whose size does not grow with a run's length, for the state and the
//! per-key statistics the analyses keep over long runs and event storms.
//!
//! - `AgedMap`: pending matches (a request waiting for its invocation, a thread's last
//!   wakeup, a name by pid). Entries not touched for a while are forgotten, and counted,
//!   so a lost end event or a thread that died costs nothing forever.
//! - `TopMap`: statistics per key of an open-ended set (causes named after threads, woken
//!   threads, per-thread accounts). The heaviest keys stay exact; the light ones are
//!   folded into one `other` value, so every total still adds up.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::ops::Deref;

/// A map of at most `capacity` entries in two generations: filling the young generation
/// (half the capacity) drops the old one and makes the young one old. An entry outlives
/// at least `capacity / 2 - 1` newer insertions after it was last inserted or touched
/// (`get_mut`), at most `capacity - 1`: live entries, touched again and again, stay;
/// forgotten ones are counted in `evicted`.
#[derive(Clone, Debug)]
pub struct AgedMap<K, V> {
    young: HashMap<K, V>,
    old: HashMap<K, V>,
    /// Entries per generation: half the capacity.
    generation: usize,
    evicted: u64,
}

impl<K: Hash + Eq, V> AgedMap<K, V> {
    /// An empty map of at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        AgedMap {
            young: HashMap::new(),
            old: HashMap::new(),
            generation: (capacity / 2).max(1),
            evicted: 0,
        }
    }

    /// Inserts (or replaces, which touches) `key`; returns the value it had.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let before = self.old.remove(&key);
        let before = self.young.insert(key, value).or(before);
        if self.young.len() >= self.generation {
            // the old generation's memory is reused by the new young one
            self.evicted += self.old.len() as u64;
            std::mem::swap(&mut self.young, &mut self.old);
            self.young.clear();
        }
        before
    }

    /// The value of `key`, not touched.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.young.get(key).or_else(|| self.old.get(key))
    }

    /// The value of `key`, touched: it moves to the young generation.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V>
    where
        K: Clone,
    {
        if let Some(value) = self.old.remove(key) {
            self.insert(key.clone(), value);
        }
        // the insert may have made the young generation old
        match self.young.contains_key(key) {
            true => self.young.get_mut(key),
            false => self.old.get_mut(key),
        }
    }

    /// The value of `key`, touched, made (default) if there was none.
    pub fn get_or_default(&mut self, key: K) -> &mut V
    where
        K: Clone,
        V: Default,
    {
        if !self.contains_key(&key) {
            self.insert(key.clone(), V::default());
        }
        self.get_mut(&key).expect("inserted if it was not there")
    }

    /// Takes `key` out; returns the value it had.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.young.remove(key).or_else(|| self.old.remove(key))
    }

    /// Whether `key` is in it (not forgotten).
    pub fn contains_key(&self, key: &K) -> bool {
        self.young.contains_key(key) || self.old.contains_key(key)
    }

    /// Entries in it, both generations.
    pub fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every value, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.young.values().chain(self.old.values())
    }

    /// Entries forgotten so far.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Takes every entry out (in no particular order), as at the end of a run.
    pub fn drain(&mut self) -> impl Iterator<Item = (K, V)> + '_ {
        self.young.drain().chain(self.old.drain())
    }
}

/// A value that can stand for several keys' worth: its weight decides which keys a
/// `TopMap` keeps, and folding adds one value into another.
pub trait Foldable: Default {
    /// How much it weighs: the lighter keys are folded first.
    fn weight(&self) -> u64;
    /// Adds `other` into this value.
    fn fold(&mut self, other: Self);
}

/// Counts fold by adding up.
impl Foldable for u64 {
    fn weight(&self) -> u64 {
        *self
    }

    fn fold(&mut self, other: Self) {
        *self += other;
    }
}

/// Signed amounts (adjustments either way) weigh what they move.
impl Foldable for i64 {
    fn weight(&self) -> u64 {
        self.unsigned_abs()
    }

    fn fold(&mut self, other: Self) {
        *self += other;
    }
}

/// A map of at most `capacity` keys: a new key that finds it full first folds the
/// lighter half of the keys (least weight; ties: the larger key) into `other`. The
/// heaviest keys stay exact however many keys a run brings; a key folded and seen again
/// starts over, its earlier part staying in `other`. Read it as the `BTreeMap` it
/// derefs to (kept keys, in order).
#[derive(Clone, Debug)]
pub struct TopMap<K, V> {
    kept: BTreeMap<K, V>,
    other: Option<V>,
    folded: u64,
    capacity: usize,
}

impl<K: Ord + Clone, V: Foldable> TopMap<K, V> {
    /// An empty map of at most `capacity` keys (2 at least).
    pub fn new(capacity: usize) -> Self {
        TopMap {
            kept: BTreeMap::new(),
            other: None,
            folded: 0,
            capacity: capacity.max(2),
        }
    }

    /// The value of `key`, made (default) if new.
    pub fn entry(&mut self, key: K) -> &mut V {
        if self.kept.len() >= self.capacity && !self.kept.contains_key(&key) {
            self.fold_lighter_half();
        }
        self.kept.entry(key).or_default()
    }

    /// The kept values, to change (their weights decide the next fold).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.kept.iter_mut()
    }

    /// What the folded keys add up to (None while none was).
    pub fn other(&self) -> Option<&V> {
        self.other.as_ref()
    }

    /// Keys folded so far (a key folded twice counts twice).
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Adds `later` into this map: key by key, and its folded part into `other`.
    pub fn absorb(&mut self, later: TopMap<K, V>) {
        for (key, value) in later.kept {
            self.entry(key).fold(value);
        }
        if let Some(other) = later.other {
            self.other.get_or_insert_with(V::default).fold(other);
        }
        self.folded += later.folded;
    }

    fn fold_lighter_half(&mut self) {
        let mut by_weight: Vec<(u64, K)> = self
            .kept
            .iter()
            .map(|(key, value)| (value.weight(), key.clone()))
            .collect();
        // lightest first; among equals the larger key goes first, so the order of
        // arrival never matters and a replay folds what the live run did
        by_weight.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let other = self.other.get_or_insert_with(V::default);
        for (_, key) in by_weight.into_iter().take(self.capacity / 2) {
            if let Some(value) = self.kept.remove(&key) {
                other.fold(value);
                self.folded += 1;
            }
        }
    }
}

impl<K, V> Deref for TopMap<K, V> {
    type Target = BTreeMap<K, V>;

    fn deref(&self) -> &Self::Target {
        &self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aged_map_keeps_touched_entries_and_counts_the_forgotten() {
        let mut map = AgedMap::new(8);
        map.insert(1, "live");
        for key in 2..1_000_000 {
            map.insert(key, "dead");
            // the live entry is touched now and then (a thread that keeps running): at
            // least every capacity / 2 - 1 insertions
            if key % 3 == 0 {
                assert!(map.get_mut(&1).is_some(), "touched at {key}");
            }
            assert!(map.len() <= 8);
        }
        assert_eq!(map.get(&1), Some(&"live"));
        assert!(map.get(&2).is_none());
        // every dead key but the newest few was forgotten, and counted
        assert_eq!(map.evicted() + map.len() as u64, 1_000_000 - 1);
    }

    #[test]
    fn aged_map_insert_replaces_and_remove_takes_from_either_generation() {
        let mut map = AgedMap::new(4);
        assert_eq!(map.insert(1, 10), None);
        assert_eq!(map.insert(2, 20), None); // young is full: becomes old
        assert_eq!(map.insert(1, 11), Some(10));
        assert_eq!(map.remove(&2), Some(20));
        assert_eq!(map.remove(&2), None);
        assert!(map.contains_key(&1));
        assert_eq!(map.drain().collect::<Vec<_>>(), vec![(1, 11)]);
        assert!(map.is_empty());
        assert_eq!(map.evicted(), 0);
    }

    #[test]
    fn top_map_keeps_the_heaviest_keys_and_folds_the_rest() {
        let mut map: TopMap<u32, u64> = TopMap::new(8);
        // two heavy keys among a million light ones, each seen once
        for key in 0..1_000_000u32 {
            *map.entry(key) += 1;
            *map.entry(u32::MAX) += 5;
            *map.entry(u32::MAX - 1) += 3;
            assert!(map.len() <= 8);
        }
        assert_eq!(map[&u32::MAX], 5_000_000);
        assert_eq!(map[&(u32::MAX - 1)], 3_000_000);
        let kept_light: u64 = map
            .iter()
            .filter(|(k, _)| **k < u32::MAX - 1)
            .map(|(_, v)| v)
            .sum();
        assert_eq!(map.other().copied().unwrap_or(0) + kept_light, 1_000_000);
        assert_eq!(map.folded() + map.len() as u64 - 2, 1_000_000);
    }

    #[test]
    fn top_map_folds_the_same_keys_whatever_the_order_of_arrival() {
        let fill = |keys: &[u32]| {
            let mut map: TopMap<u32, u64> = TopMap::new(4);
            for &key in keys {
                *map.entry(key) += 1;
            }
            map.keys().copied().collect::<Vec<_>>()
        };
        assert_eq!(fill(&[1, 2, 3, 4, 5]), fill(&[4, 3, 2, 1, 5]));
        assert_eq!(fill(&[1, 2, 3, 4, 5]), vec![1, 2, 5]);
    }

    #[test]
    fn top_map_absorbs_kept_and_folded_parts() {
        let mut whole: TopMap<u32, u64> = TopMap::new(4);
        *whole.entry(1) += 2;
        let mut later: TopMap<u32, u64> = TopMap::new(4);
        for key in [1, 2, 3, 4, 5] {
            *later.entry(key) += 1;
        }
        whole.absorb(later);
        let total: u64 = whole.values().sum::<u64>() + whole.other().copied().unwrap_or(0);
        assert_eq!(total, 7);
        assert_eq!(whole.folded(), 2);
    }
}
