//! Synthetic checkpoint streams (times in µs) and noise records for unit tests.

use irqlens_model::event::{Event, EventData, EventKind};
use irqlens_model::kernel::Comm;
use irqlens_model::workload::CgroupId;

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

    /// A checkpoint saying `what` at `us` µs, for the caller to adjust.
    pub fn at(&mut self, us: u64, cpu: u32, pid: u32, what: EventData) -> &mut Event {
        self.events.push(Event {
            pid,
            ..Event::new(what, cpu, us * US)
        });
        self.events.last_mut().expect("just pushed")
    }

    /// A hardirq entry or exit of `source` (`enum irq_source`) and line or vector `id`.
    pub fn irq(&mut self, us: u64, cpu: u32, pid: u32, entry: bool, source: u16, id: u16) {
        let what = if entry {
            EventData::IrqEntry {
                source,
                line_or_vector: id,
            }
        } else {
            EventData::IrqExit { line_or_vector: id }
        };
        self.at(us, cpu, pid, what);
    }

    /// A switch from `prev` to `next`, named `comm`.
    pub fn switch(&mut self, us: u64, cpu: u32, prev: u32, next: u32, comm: &str) {
        let what = EventData::Switch {
            next_pid: next,
            next_tgid: 0,
            next_comm: Comm::new(comm),
            next_cgroup: CgroupId::UNKNOWN,
        };
        self.at(us, cpu, prev, what);
    }

    /// `waker` wakes `woken`, named `comm`, watched or not.
    pub fn wake(&mut self, us: u64, cpu: u32, waker: u32, woken: u32, comm: &str, watched: bool) {
        let what = EventData::Wakeup {
            woken_pid: woken,
            woken_tgid: 0,
            woken_comm: Comm::new(comm),
            woken_cgroup: CgroupId::UNKNOWN,
            watched,
        };
        self.at(us, cpu, waker, what);
    }

    /// Puts the task the last checkpoint names (a switch's next, a wakeup's woken) in
    /// cgroup `cgroup`.
    pub fn in_cgroup(&mut self, cgroup: CgroupId) {
        match &mut self.events.last_mut().expect("a checkpoint to change").what {
            EventData::Switch { next_cgroup, .. } => *next_cgroup = cgroup,
            EventData::Wakeup { woken_cgroup, .. } => *woken_cgroup = cgroup,
            other => panic!("{other:?} names no task"),
        }
    }

    /// A watched thread arms `hrtimer` to expire at `expires_ns`.
    pub fn timer_start(&mut self, us: u64, cpu: u32, pid: u32, hrtimer: u64, expires_ns: u64) {
        self.at(
            us,
            cpu,
            pid,
            EventData::TimerStart {
                hrtimer,
                expires_ns,
            },
        );
    }

    /// `hrtimer`'s callback `function` begins.
    pub fn timer_expire(&mut self, us: u64, cpu: u32, pid: u32, hrtimer: u64, function: u64) {
        self.at(us, cpu, pid, EventData::TimerExpire { hrtimer, function });
    }

    /// `hrtimer`'s callback ends.
    pub fn timer_exit(&mut self, us: u64, cpu: u32, pid: u32, hrtimer: u64) {
        self.at(us, cpu, pid, EventData::TimerExpireExit { hrtimer });
    }

    /// `kind` is SoftirqRaise, SoftirqEntry or SoftirqExit.
    pub fn softirq(&mut self, us: u64, cpu: u32, pid: u32, kind: EventKind, vector: u16) {
        let what = match kind {
            EventKind::SoftirqRaise => EventData::SoftirqRaise { vector },
            EventKind::SoftirqEntry => EventData::SoftirqEntry { vector },
            EventKind::SoftirqExit => EventData::SoftirqExit { vector },
            other => panic!("{other:?} is not a softirq checkpoint"),
        };
        self.at(us, cpu, pid, what);
    }
}

/// A noise probe's record of an interference (no thread's, no sequence number): class
/// `class` on `cpu`, its line, vector or softirq `id`, lasting `duration_ns`.
pub fn interference(
    cpu: u32,
    class: irqlens_model::noise::NoiseClass,
    id: u32,
    duration_ns: u64,
) -> irqlens_model::noise::Record {
    irqlens_model::noise::Record {
        cpu,
        class,
        source: 0,
        id,
        comm: Comm::default(),
        start_ns: 0,
        duration_ns,
        seq: 0,
        cgroup: CgroupId::UNKNOWN,
    }
}
