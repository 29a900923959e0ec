//! Checkpoints: the events every capability's probe emits (checkpoint.h), as user
//! space sees them.

use super::kernel::Comm;

/// Checkpoint kinds, in the order of `enum checkpoint_kind` in checkpoint.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    IrqEntry,
    IrqExit,
    SoftirqRaise,
    SoftirqEntry,
    SoftirqExit,
    TaskletEntry,
    TaskletExit,
    WorkQueue,
    WorkActivate,
    WorkStart,
    WorkEnd,
    Switch,
    Wakeup,
    Nmi,
    TimerStart,
    TimerExpire,
    TimerExpireExit,
}

impl EventKind {
    const ALL: [EventKind; 17] = [
        EventKind::IrqEntry,
        EventKind::IrqExit,
        EventKind::SoftirqRaise,
        EventKind::SoftirqEntry,
        EventKind::SoftirqExit,
        EventKind::TaskletEntry,
        EventKind::TaskletExit,
        EventKind::WorkQueue,
        EventKind::WorkActivate,
        EventKind::WorkStart,
        EventKind::WorkEnd,
        EventKind::Switch,
        EventKind::Wakeup,
        EventKind::Nmi,
        EventKind::TimerStart,
        EventKind::TimerExpire,
        EventKind::TimerExpireExit,
    ];

    pub fn from_raw(raw: u16) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }
}

/// One checkpoint. Field meanings per kind are those of `struct checkpoint` in checkpoint.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub kind: EventKind,
    pub id: u16,
    pub aux: u32,
    pub ptr: u64,
    pub func: u64,
    pub comm: Comm,
}

impl Event {
    pub fn new(kind: EventKind, cpu: u32, time_ns: u64) -> Self {
        Event {
            time_ns,
            cpu,
            pid: 0,
            kind,
            id: 0,
            aux: 0,
            ptr: 0,
            func: 0,
            comm: Comm::default(),
        }
    }
}
