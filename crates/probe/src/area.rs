//! The reading side of the probes' per-CPU record areas (src/bpf/record_area.h):
//! every CPU's records are read straight from the mmapped array, in each CPU's order,
//! with no system call and no wakeup; how full each area is costs a memory read, so the
//! reader paces its drains by the rate it sees.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use libbpf_rs::MapCore;

use irqlens_model::units::CpuList;

/// One CPU's positions, as `struct area_cursor` lays them out (writer and reader fields
/// on separate cache lines).
#[repr(C, align(64))]
pub(crate) struct Cursor {
    head: AtomicU64,
    lost: AtomicU64,
    _seen_tail: AtomicU64,
    _traced: AtomicU32,
    _raised: AtomicU32,
    _serving: AtomicU32,
    _writer_pad32: u32,
    _writer_pad: [u64; 3],
    tail: AtomicU64,
    _reader_pad: [u64; 7],
}

/// The slots of every CPU's area: `commit` (u64) then the record, `slot_size` bytes each.
struct Slots {
    base: NonNull<u8>,
    len: usize,
    /// Whether `base` is an mmap of the BPF map (unmapped on drop) or memory the caller
    /// owns (the unit tests').
    mapped: bool,
}

impl Drop for Slots {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: `base` and `len` are the mapping `RecordAreas::map` made, unmapped
            // nowhere else; no slice into it outlives the `&self` of a `take`.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
    }
}

/// How a probe's record areas are laid out: one per possible CPU (work items and
/// wakeups are recorded wherever they happen, and CPUs may come online during a run),
/// `slots_per_cpu` slots of `slot_size` bytes each.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AreaLayout {
    cpus: usize,
    slots_per_cpu: u64,
    slot_size: usize,
}

impl AreaLayout {
    /// Areas within `budget` bytes for this machine, whose CPUs (and the `traced` ones)
    /// must be fewer than `max_cpus`, the BPF side's room.
    pub(crate) fn new(
        traced: &CpuList,
        max_cpus: u32,
        budget: usize,
        slot_size: usize,
        max_slots: u64,
    ) -> Result<Self> {
        if let Some(cpu) = traced.iter().find(|&cpu| cpu >= max_cpus) {
            bail!("CPU {cpu} is beyond the {max_cpus} CPUs irqlens supports");
        }
        let cpus = libbpf_rs::num_possible_cpus().context("counting the possible CPUs")?;
        if cpus > max_cpus as usize {
            bail!("this machine has {cpus} possible CPUs, irqlens supports {max_cpus}");
        }
        Ok(AreaLayout {
            cpus,
            slots_per_cpu: slots_per_cpu(budget, cpus, slot_size, max_slots),
            slot_size,
        })
    }

    /// Entries of the array map that holds every area.
    pub(crate) fn entries(&self) -> u32 {
        (self.cpus as u64 * self.slots_per_cpu) as u32
    }

    pub(crate) fn slots_per_cpu(&self) -> u64 {
        self.slots_per_cpu
    }
}

/// Slots per CPU for `cpus` CPUs within `budget` bytes: a power of two, at least 1024
/// (so a burst between drains fits) and at most `max`.
pub(crate) fn slots_per_cpu(budget: usize, cpus: usize, slot_size: usize, max: u64) -> u64 {
    let fit = (budget / cpus.max(1) / slot_size) as u64;
    let pow2 = if fit == 0 { 1 } else { 1 << fit.ilog2() };
    pow2.clamp(1024, max)
}

/// Reads every CPU's record area, decoding each record with `decode` (None: skipped).
/// It reads the probe's memory: the lifetime keeps it within the probe's.
pub struct RecordAreas<'p, T> {
    slots: Slots,
    cursors: NonNull<Cursor>,
    cpus: usize,
    slots_per_cpu: u64,
    slot_size: usize,
    decode: fn(&[u8]) -> Option<T>,
    pace: DrainPace,
    _probe: PhantomData<&'p ()>,
}

impl<T> RecordAreas<'_, T> {
    /// Maps `map` (the mmapable array `layout` sized). `cursors` must point at the
    /// probe's `cursors` array (its mmapped .bss) and outlive the reader, as the probe
    /// that owns both does.
    pub(crate) unsafe fn map(
        map: &dyn MapCore,
        cursors: *mut Cursor,
        layout: AreaLayout,
        decode: fn(&[u8]) -> Option<T>,
    ) -> Result<Self> {
        let AreaLayout {
            cpus,
            slots_per_cpu,
            slot_size,
        } = layout;
        if map.value_size() as usize != slot_size
            || map.max_entries() as u64 != cpus as u64 * slots_per_cpu
        {
            bail!("the record area map is not the size irqlens set");
        }
        // SAFETY: sysconf takes any name and only returns a value.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = (slot_size * cpus * slots_per_cpu as usize).div_ceil(page) * page;
        // SAFETY: a new read-only mapping (no address given, so nothing existing is
        // replaced) of the map's fd, borrowed from `map` for the call; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.as_fd().as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            bail!(
                "mapping the BPF record areas: {}",
                std::io::Error::last_os_error()
            );
        }
        let slots = Slots {
            base: NonNull::new(base.cast()).expect("mmap returned a mapping"),
            len,
            mapped: true,
        };
        Ok(Self::over(
            slots,
            cursors,
            cpus,
            slots_per_cpu,
            slot_size,
            decode,
        ))
    }

    fn over(
        slots: Slots,
        cursors: *mut Cursor,
        cpus: usize,
        slots_per_cpu: u64,
        slot_size: usize,
        decode: fn(&[u8]) -> Option<T>,
    ) -> Self {
        RecordAreas {
            slots,
            cursors: NonNull::new(cursors).expect("the cursors are in the probe's .bss"),
            cpus,
            slots_per_cpu,
            slot_size,
            decode,
            pace: DrainPace::new(slots_per_cpu),
            _probe: PhantomData,
        }
    }

    fn cursor(&self, cpu: usize) -> &Cursor {
        // SAFETY: `cursors` points at one `Cursor` per CPU (at least `cpus`; `map`'s
        // contract), alive for 'p; callers pass `cpu < self.cpus`. A shared reference is
        // fine while BPF writes: it only changes the atomics (the pads are never written).
        unsafe { &*self.cursors.as_ptr().add(cpu) }
    }

    fn slot(&self, cpu: usize, pos: u64) -> *const u8 {
        let index = cpu as u64 * self.slots_per_cpu + (pos & (self.slots_per_cpu - 1));
        // SAFETY: `cpu < self.cpus` and the masked position is below `slots_per_cpu` (a
        // power of two), so the slot starts inside the `cpus * slots_per_cpu` slots mapped.
        unsafe {
            self.slots
                .base
                .as_ptr()
                .add(index as usize * self.slot_size)
        }
    }

    /// Takes every record committed so far, CPU by CPU (each CPU's in its order).
    pub fn take(&mut self) -> Vec<T> {
        // one allocation for what is there now (more may come in while reading)
        let mut records = Vec::with_capacity(self.pending() as usize);
        let mut busiest = 0;
        for cpu in 0..self.cpus {
            let cursor = self.cursor(cpu);
            let start = cursor.tail.load(Ordering::Relaxed);
            let mut tail = start;
            // at most one area's worth: a writer faster than the reader cannot hold it here
            while tail - start < self.slots_per_cpu {
                let slot = self.slot(cpu, tail);
                // the commit is written after the record: acquire orders the reads after it
                // SAFETY: the slot's first 8 bytes are its commit word, 8-aligned (page-aligned
                // base, slot sizes multiples of 8) and written by the BPF side only atomically.
                let commit = unsafe { &*slot.cast::<AtomicU64>() }.load(Ordering::Acquire);
                if commit != tail + 1 {
                    break;
                }
                // SAFETY: the record after the commit word, inside the slot; committed and
                // not handed back to the writer (`tail` not advanced yet), so nothing writes
                // it while the slice lives (only during `decode`).
                let bytes = unsafe { std::slice::from_raw_parts(slot.add(8), self.slot_size - 8) };
                records.extend((self.decode)(bytes));
                tail += 1;
            }
            // release: the record reads are done before the writer may reuse the slots
            cursor.tail.store(tail, Ordering::Release);
            busiest = busiest.max(tail - start);
        }
        self.pace.drained(busiest, Instant::now());
        records
    }

    /// Sleeps until the next drain is due, at most `max`: when, at the rate of the
    /// busiest CPU, its area is about an eighth full.
    pub fn wait(&self, max: Duration) {
        std::thread::sleep(self.pace.wait(max));
    }

    /// Slots of a CPU claimed and not read yet.
    fn used(&self, cpu: usize) -> u64 {
        let cursor = self.cursor(cpu);
        let head = cursor.head.load(Ordering::Relaxed);
        head.saturating_sub(cursor.tail.load(Ordering::Relaxed))
    }

    fn pending(&self) -> u64 {
        (0..self.cpus).map(|cpu| self.used(cpu)).sum()
    }

    /// The fullest CPU's share of its area in use, 0 to 1.
    pub fn fill(&self) -> f64 {
        (0..self.cpus)
            .map(|cpu| self.used(cpu) as f64 / self.slots_per_cpu as f64)
            .fold(0.0, f64::max)
    }

    /// Records dropped because a CPU's area was full, per CPU that dropped some.
    pub fn lost_by_cpu(&self) -> BTreeMap<u32, u64> {
        (0..self.cpus)
            .map(|cpu| (cpu as u32, self.cursor(cpu).lost.load(Ordering::Relaxed)))
            .filter(|&(_, lost)| lost > 0)
            .collect()
    }

    /// Records dropped because a CPU's area was full, all CPUs together.
    pub fn lost(&self) -> u64 {
        self.lost_by_cpu().values().sum()
    }
}

/// When to drain next: the reader is never woken, so it estimates from the last drains
/// how soon the busiest CPU's area fills up and comes back well before.
#[derive(Clone, Debug)]
struct DrainPace {
    /// Records a CPU may gather between two drains (an eighth of its area).
    per_drain: u64,
    last: Option<Instant>,
    /// Records per second of the busiest CPU, smoothed over drains.
    rate: f64,
}

/// Never drain more often than this: each drain is a wakeup of the reader.
const MIN_DRAIN_WAIT: Duration = Duration::from_millis(1);

impl DrainPace {
    fn new(slots_per_cpu: u64) -> Self {
        DrainPace {
            per_drain: slots_per_cpu / 8,
            last: None,
            rate: 0.0,
        }
    }

    fn drained(&mut self, busiest: u64, now: Instant) {
        if let Some(last) = self.last {
            let seconds = (now - last).as_secs_f64();
            if seconds > 0.0 {
                let rate = busiest as f64 / seconds;
                // rise at once (a burst must not overflow), fall slowly (bursts recur)
                self.rate = if rate > self.rate {
                    rate
                } else {
                    0.75 * self.rate + 0.25 * rate
                };
            }
        }
        self.last = Some(now);
    }

    fn wait(&self, max: Duration) -> Duration {
        // a rate decayed over many quiet drains gives a wait beyond any Duration
        let seconds = self.per_drain as f64 / self.rate;
        if seconds.is_nan() || seconds >= max.as_secs_f64() {
            return max.max(MIN_DRAIN_WAIT);
        }
        Duration::from_secs_f64(seconds).max(MIN_DRAIN_WAIT)
    }
}

#[cfg(test)]
mod tests {
    //! The writer side is record_area.h itself, compiled for the host (nest_host.c); the
    //! reader is the one above, over the same memory.
    use super::*;

    unsafe extern "C" {
        fn irqlens_area_claim(c: *mut Cursor, slots: u64, pos: *mut u64) -> i32;
        fn irqlens_area_index(cpu: u32, slots: u64, pos: u64) -> u32;
        fn irqlens_area_commit(commit: *mut u64, pos: u64);
    }

    const SLOT: usize = 16; // commit + one u64 record

    /// `cpus` areas of `slots` slots on the heap, a host writer and the reader.
    struct Areas {
        memory: Vec<u64>,
        cursors: Vec<Cursor>,
        slots: u64,
    }

    fn decode(bytes: &[u8]) -> Option<u64> {
        Some(u64::from_ne_bytes(bytes[..8].try_into().unwrap()))
    }

    impl Areas {
        fn new(cpus: usize, slots: u64) -> Self {
            Areas {
                memory: vec![0; cpus * slots as usize * SLOT / 8],
                // SAFETY: a Cursor is atomics and integers, for which all zeroes is valid.
                cursors: (0..cpus).map(|_| unsafe { std::mem::zeroed() }).collect(),
                slots,
            }
        }

        fn reader(&mut self) -> RecordAreas<'_, u64> {
            let slots = Slots {
                base: NonNull::new(self.memory.as_mut_ptr().cast()).unwrap(),
                len: self.memory.len() * 8,
                mapped: false,
            };
            RecordAreas::over(
                slots,
                self.cursors.as_mut_ptr(),
                self.cursors.len(),
                self.slots,
                SLOT,
                decode,
            )
        }

        /// Claims a slot of `cpu` and writes `value`; committed only if `commit`.
        fn write(&mut self, cpu: u32, value: u64, commit: bool) -> Option<u64> {
            let mut pos = 0;
            let cursor: *mut Cursor = &mut self.cursors[cpu as usize];
            // SAFETY: `cursor` and `pos` point at live values of the C types (Cursor is
            // `struct area_cursor`); area_claim only reads and writes those.
            if unsafe { irqlens_area_claim(cursor, self.slots, &mut pos) } != 0 {
                return None;
            }
            // SAFETY: area_index is arithmetic on its arguments.
            let index = unsafe { irqlens_area_index(cpu, self.slots, pos) } as usize;
            let slot = &mut self.memory[index * SLOT / 8..][..2];
            slot[1] = value;
            if commit {
                self.commit(cpu, pos);
            }
            Some(pos)
        }

        fn commit(&mut self, cpu: u32, pos: u64) {
            // SAFETY: area_index is arithmetic on its arguments.
            let index = unsafe { irqlens_area_index(cpu, self.slots, pos) } as usize;
            // SAFETY: a pointer to a live u64 of `memory` (bounds-checked), only stored to.
            unsafe { irqlens_area_commit(&mut self.memory[index * SLOT / 8], pos) };
        }
    }

    #[test]
    fn records_come_out_per_cpu_in_order_and_only_once() {
        let mut areas = Areas::new(2, 1024);
        for value in 0..10 {
            areas.write((value % 2) as u32, value, true);
        }
        let mut reader = areas.reader();
        assert_eq!(reader.take(), vec![0, 2, 4, 6, 8, 1, 3, 5, 7, 9]);
        assert_eq!(reader.take(), Vec::<u64>::new());
        drop(reader);
        areas.write(1, 42, true);
        assert_eq!(areas.reader().take(), vec![42]);
    }

    #[test]
    fn the_reader_stops_at_a_slot_not_committed_yet() {
        // a program interrupted between its claim and its commit by one that nests
        let mut areas = Areas::new(1, 1024);
        areas.write(0, 1, true);
        let outer = areas.write(0, 2, false).unwrap();
        areas.write(0, 3, true);
        assert_eq!(areas.reader().take(), vec![1]);
        areas.commit(0, outer);
        assert_eq!(areas.reader().take(), vec![2, 3]);
    }

    #[test]
    fn a_full_area_drops_and_counts_instead_of_overwriting() {
        let slots = 1024;
        let mut areas = Areas::new(1, slots);
        let room = slots - 8; // AREA_NESTING slots stay free for nested programs
        for value in 0..room + 5 {
            areas.write(0, value, true);
        }
        let mut reader = areas.reader();
        assert_eq!(reader.lost(), 5);
        assert!((reader.fill() - room as f64 / slots as f64).abs() < 1e-9);
        let first: Vec<u64> = reader.take();
        assert_eq!(first, (0..room).collect::<Vec<_>>());
        assert_eq!(reader.fill(), 0.0);
        drop(reader);
        // after the drain the writer wraps around into the freed slots
        for value in 0..room {
            assert!(areas.write(0, 1000 + value, true).is_some());
        }
        let second = areas.reader().take();
        assert_eq!(second, (1000..1000 + room).collect::<Vec<_>>());
    }

    #[test]
    fn drains_come_sooner_as_the_rate_rises() {
        let max = Duration::from_millis(100);
        let mut pace = DrainPace::new(1 << 16);
        assert_eq!(pace.wait(max), max, "no rate known yet");
        let start = Instant::now();
        pace.drained(0, start);
        pace.drained(100, start + Duration::from_millis(100));
        assert_eq!(pace.wait(max), max, "1000/s fills an eighth in 8 s");
        pace.drained(81_920, start + Duration::from_millis(200));
        // 819 200/s: an eighth of 65 536 slots in 10 ms
        assert!((pace.wait(max).as_secs_f64() - 0.010).abs() < 1e-6);
        pace.drained(0, start + Duration::from_millis(210));
        assert!(
            pace.wait(max) > Duration::from_millis(10),
            "falls back when quiet"
        );
        assert!(pace.wait(max) < Duration::from_millis(20), "but slowly");
    }

    #[test]
    fn a_long_quiet_run_waits_the_longest() {
        let max = Duration::from_millis(10);
        let mut pace = DrainPace::new(1 << 16);
        let mut now = Instant::now();
        pace.drained(0, now);
        pace.drained(1, now + max);
        // the rate decays by a quarter per empty drain, towards 0 and past f64's range
        for _ in 0..5000 {
            now += max;
            pace.drained(0, now);
            assert_eq!(pace.wait(max), max);
        }
    }

    #[test]
    fn areas_are_sized_to_the_budget_in_powers_of_two() {
        assert_eq!(slots_per_cpu(16 << 20, 2, 64, 1 << 17), 1 << 17);
        assert_eq!(slots_per_cpu(16 << 20, 3, 64, 1 << 20), 1 << 16);
        assert_eq!(slots_per_cpu(16 << 20, 4096, 64, 1 << 20), 1024);
    }
}
