//! Checkpoints: the events every capability's probe emits (checkpoint.h), as user
//! space sees them.

use super::kernel::Comm;

/// Checkpoint kinds, in the order of `enum checkpoint_kind` in checkpoint.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
    SockData,
}

impl EventKind {
    const ALL: [EventKind; 18] = [
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
        EventKind::SockData,
    ];

    pub fn from_raw(raw: u16) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }
}

/// One checkpoint. Field meanings per kind are those of `struct checkpoint` in checkpoint.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub time_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub kind: EventKind,
    // zeros are left out of recordings (most fields are unused by most kinds)
    #[serde(default, skip_serializing_if = "is_default")]
    pub id: u16,
    #[serde(default, skip_serializing_if = "is_default")]
    pub aux: u32,
    #[serde(default, skip_serializing_if = "is_default")]
    pub ptr: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub func: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub comm: Comm,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
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
