//! Synthetic checkpoint streams for unit tests (times in µs).

use crate::event::{Event, EventKind, EventKind::*};
use crate::kernel::Comm;

/// One µs in ns.
pub const US: u64 = 1_000;

/// A stream of one test: each call appends a checkpoint of `pid` on `cpu`.
#[derive(Default)]
pub struct Stream {
    /// The checkpoints so far, in the order appended.
    pub events: Vec<Event>,
}

impl Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// A checkpoint of `kind` at `us` µs, for the caller to fill in.
    pub fn at(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind) -> &mut Event {
        self.events.push(Event {
            pid,
            ..Event::new(kind, cpu, us * US)
        });
        self.events.last_mut().expect("just pushed")
    }

    /// A hardirq entry or exit of `source` (`enum irq_source`) and line or vector `id`.
    pub fn irq(&mut self, us: u64, cpu: u32, pid: u32, entry: bool, source: u16, id: u16) {
        let e = self.at(us, cpu, pid, if entry { IrqEntry } else { IrqExit });
        (e.aux, e.id) = (source.into(), id);
    }

    /// A switch from `prev` to `next`, named `comm`.
    pub fn switch(&mut self, us: u64, cpu: u32, prev: u32, next: u32, comm: &str) {
        let e = self.at(us, cpu, prev, Switch);
        (e.aux, e.comm) = (next, Comm::new(comm));
    }

    /// `waker` wakes `woken`, named `comm`, watched or not.
    pub fn wake(&mut self, us: u64, cpu: u32, waker: u32, woken: u32, comm: &str, watched: bool) {
        let e = self.at(us, cpu, waker, Wakeup);
        (e.aux, e.comm, e.func) = (woken, Comm::new(comm), watched as u64);
    }

    /// An hrtimer checkpoint of `kind`: the timer and its callback (or soft expiry).
    pub fn timer(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind, hrtimer: u64, func: u64) {
        let e = self.at(us, cpu, pid, kind);
        (e.ptr, e.func) = (hrtimer, func);
    }

    /// A softirq raise, entry or exit of `vector`.
    pub fn softirq(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind, vector: u16) {
        self.at(us, cpu, pid, kind).id = vector;
    }
}
