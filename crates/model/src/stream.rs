//! Synthetic checkpoint streams for unit tests (times in µs).

use crate::event::{Event, EventKind, EventKind::*};
use crate::kernel::Comm;

pub const US: u64 = 1_000;

/// A stream of one test: each call appends a checkpoint of `pid` on `cpu`.
#[derive(Default)]
pub struct Stream {
    pub events: Vec<Event>,
}

impl Stream {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn at(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind) -> &mut Event {
        self.events.push(Event {
            pid,
            ..Event::new(kind, cpu, us * US)
        });
        self.events.last_mut().expect("just pushed")
    }

    pub fn irq(&mut self, us: u64, cpu: u32, pid: u32, entry: bool, source: u16, id: u16) {
        let e = self.at(us, cpu, pid, if entry { IrqEntry } else { IrqExit });
        (e.aux, e.id) = (source.into(), id);
    }

    pub fn switch(&mut self, us: u64, cpu: u32, prev: u32, next: u32, comm: &str) {
        let e = self.at(us, cpu, prev, Switch);
        (e.aux, e.comm) = (next, Comm::new(comm));
    }

    pub fn wake(&mut self, us: u64, cpu: u32, waker: u32, woken: u32, comm: &str, watched: bool) {
        let e = self.at(us, cpu, waker, Wakeup);
        (e.aux, e.comm, e.func) = (woken, Comm::new(comm), watched as u64);
    }

    pub fn timer(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind, hrtimer: u64, func: u64) {
        let e = self.at(us, cpu, pid, kind);
        (e.ptr, e.func) = (hrtimer, func);
    }

    pub fn softirq(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind, vector: u16) {
        self.at(us, cpu, pid, kind).id = vector;
    }
}
