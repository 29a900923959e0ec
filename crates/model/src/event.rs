//! Checkpoints: the events every capability's probe emits (checkpoint.h), as user
//! space sees them.

use super::kernel::Comm;

/// Checkpoint kinds, in the order of `enum checkpoint_kind` in checkpoint.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A hardirq begins: `id` = IRQ line or vector, `aux` = its source (`enum irq_source`,
    /// see [`IRQ_SOURCE_NAMES`](crate::kernel::IRQ_SOURCE_NAMES)).
    IrqEntry,
    /// A hardirq ends: `id` as at its entry.
    IrqExit,
    /// A softirq is raised: `id` = vector.
    SoftirqRaise,
    /// A softirq handler begins: `id` = vector.
    SoftirqEntry,
    /// A softirq handler ends: `id` = vector.
    SoftirqExit,
    /// A tasklet begins: `ptr` = the tasklet, `func` = its function.
    TaskletEntry,
    /// A tasklet ends: `ptr` and `func` as at its entry.
    TaskletExit,
    /// A work item is queued: `ptr` = the item, `func` = its function, `aux` = the CPU
    /// asked for. Work events come from every CPU.
    WorkQueue,
    /// A queued work item becomes active (may run): `ptr`, `func` as queued.
    WorkActivate,
    /// A worker begins the item: `ptr`, `func` as queued.
    WorkStart,
    /// The item ends: `ptr` only (`func` is 0).
    WorkEnd,
    /// A context switch: `pid` = the thread switched out, `aux` = the one switched in,
    /// `ptr` = its tgid, `comm` = its name.
    Switch,
    /// A thread is woken (sched_waking, on the waker's CPU): `aux` = the woken thread,
    /// `ptr` = its tgid, `comm` = its name, `func` = 1 if it is watched.
    Wakeup,
    /// An NMI ended: `ptr` = its duration, ns.
    Nmi,
    /// A watched thread armed an hrtimer: `ptr` = the timer, `func` = its soft expiry, ns.
    TimerStart,
    /// An hrtimer callback begins: `ptr` = the timer, `func` = the callback.
    TimerExpire,
    /// An hrtimer callback ends: `ptr` = the timer.
    TimerExpireExit,
    /// Data was queued to a socket: `ptr` = the socket, `aux` = the thread that last
    /// read from it (0 if none yet).
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

    /// The kind of a raw `checkpoint_kind`; `None` if this build does not know it.
    pub fn from_raw(raw: u16) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }
}

/// One checkpoint. Field meanings per kind are those of `struct checkpoint` in checkpoint.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// The current thread.
    pub pid: u32,
    /// What happened; it gives the fields below their meaning.
    pub kind: EventKind,
    // zeros are left out of recordings (most fields are unused by most kinds)
    /// An IRQ line or vector, a softirq vector.
    #[serde(default, skip_serializing_if = "is_default")]
    pub id: u16,
    /// A thread id, an IRQ source, a CPU.
    #[serde(default, skip_serializing_if = "is_default")]
    pub aux: u32,
    /// A kernel object's address (tasklet, work item, hrtimer, socket), a tgid, a duration.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ptr: u64,
    /// A kernel function's address, an expiry, a flag.
    #[serde(default, skip_serializing_if = "is_default")]
    pub func: u64,
    /// A thread's name.
    #[serde(default, skip_serializing_if = "is_default")]
    pub comm: Comm,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl Event {
    /// A checkpoint of `kind` on `cpu` at `time_ns`, every other field zero.
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
