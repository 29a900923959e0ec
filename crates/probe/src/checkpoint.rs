//! The checkpoint probe: loads checkpoint.bpf.c with the programs a capability needs,
//! selects the traced CPUs and the watched process, and decodes the checkpoints.

use std::mem::MaybeUninit;
use std::ptr::{self, addr_of_mut};

use anyhow::Result;
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, OpenObject};

use super::area::{AreaLayout, Cursor, RecordAreas};
use super::{Attached, Gate, ProgramRuns, load_and_attach, loaded_programs, program_runs};
use irqlens_model::event::{Event, EventKind, RawEvent};
use irqlens_model::kernel::Comm;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::Watched;

skeleton!(skel, "checkpoint.skel.rs");

use skel::types::{area_cursor, bss, checkpoint, checkpoint_slot};
use skel::{CheckpointSkel, CheckpointSkelBuilder};

/// Largest CPU number + 1 the BPF side has room for (MAX_CPUS in checkpoint.h).
pub const MAX_CPUS: u32 = 1024;

/// Memory for every CPU's checkpoints: a storm brings a few hundred thousand per second
/// per CPU, and an area should hold a good part of a second of it.
const AREA_BUDGET: usize = 32 << 20;
const MAX_SLOTS_PER_CPU: u64 = 1 << 17;

const _: () = assert!(size_of::<area_cursor>() == size_of::<Cursor>());
// the reader views the cursors as `Cursor`s, 64-aligned: so must .bss place them
const _: () = assert!(std::mem::offset_of!(bss, cursors) % align_of::<Cursor>() == 0);
// a slot is one cache line
const _: () = assert!(size_of::<checkpoint_slot>() == 64);

/// Which checkpoints a capability needs beyond the common ones (hardirqs, NMIs,
/// softirqs, context switches, wakeups).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoints {
    /// Tasklets and work items.
    BottomHalves,
    /// hrtimers armed by watched threads, and hrtimer callbacks; only the first raise of
    /// a softirq until it runs.
    Timers,
    /// As `Timers`, for wakeup's own timer threads: of the watched process, only the
    /// threads named [`TIMER_THREAD_PREFIX`]`...` are watched.
    TimerThreads,
    /// Every wakeup on the traced CPUs, hrtimer callbacks, and, with `sockets`, data
    /// queued to sockets with their readers.
    Accounting {
        /// Whether the socket checkpoints are attached.
        sockets: bool,
    },
    /// Only data queued to sockets with their readers (none of the common ones): who
    /// serves whom, at one checkpoint per delivery (`steer`).
    Sockets,
}

/// The start of the name of wakeup's timer threads (`Checkpoints::TimerThreads`).
pub const TIMER_THREAD_PREFIX: &str = "il-wakeup/";

impl Checkpoints {
    fn wants(self, tracepoint: &str) -> bool {
        let bottom_half =
            tracepoint.starts_with("tasklet_") || tracepoint.starts_with("workqueue_");
        let timer = tracepoint.starts_with("hrtimer_");
        let socket = crate::is_socket_tracepoint(tracepoint);
        match self {
            Checkpoints::BottomHalves => !timer && !socket,
            Checkpoints::Timers | Checkpoints::TimerThreads => !bottom_half && !socket,
            Checkpoints::Accounting { sockets } => !bottom_half && (sockets || !socket),
            Checkpoints::Sockets => socket,
        }
    }

    /// Whether switches and wakeups name their task's cgroup: every capability names
    /// the workloads of the threads it shows (account its rows, bh its delay causes and
    /// the threads a bottom half woke, wakeup the woken task, its chain and the threads
    /// in its way); steer shows none.
    fn reads_cgroups(self) -> bool {
        self != Checkpoints::Sockets
    }
}

/// The loaded checkpoint programs, and the traced CPUs' record areas. Dropping it stops
/// and detaches the programs.
pub struct CheckpointProbe<'obj> {
    /// First, so it closes before the skeleton's links are detached.
    gate: Gate,
    skel: CheckpointSkel<'obj>,
    /// The mmapped .bss, written by BPF on every CPU: volatile accesses only.
    bss: *mut bss,
    /// Tracepoints this kernel does not have.
    pub skipped: Vec<String>,
    layout: AreaLayout,
}

impl<'obj> CheckpointProbe<'obj> {
    /// Loads and attaches the programs, disabled; `enable` starts tracing `cpus`.
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        checkpoints: Checkpoints,
        cpus: &CpuList,
        watched: &Watched,
    ) -> Result<Self> {
        let layout = AreaLayout::new(
            cpus,
            MAX_CPUS,
            AREA_BUDGET,
            size_of::<checkpoint_slot>(),
            MAX_SLOTS_PER_CPU,
        )?;
        let configure = |open: &mut skel::OpenCheckpointSkel<'obj>| {
            let rodata = open
                .maps
                .rodata_data
                .as_deref_mut()
                .expect("the program has a .rodata");
            rodata.slots_per_cpu = layout.slots_per_cpu();
            let (tgid, comm, comm_len) = match (watched, checkpoints) {
                (Watched::Process(tgid), Checkpoints::TimerThreads) => (
                    *tgid,
                    Comm::new(TIMER_THREAD_PREFIX),
                    TIMER_THREAD_PREFIX.len(),
                ),
                (Watched::Process(tgid), _) => (*tgid, Comm::default(), 0),
                // a whole name, its NUL included (never empty: see
                // collect::wakeup::check_watched)
                (Watched::Name(name), _) => (0, Comm::new(name), name.len().min(15) + 1),
            };
            rodata.watched_tgid = tgid;
            rodata.watched_comm = comm.0.map(|byte| byte as _);
            rodata.watched_comm_len = comm_len as u32;
            rodata.all_wakeups = matches!(checkpoints, Checkpoints::Accounting { .. });
            rodata.read_cgroups = checkpoints.reads_cgroups();
            rodata.bottom_half_wakeups = checkpoints == Checkpoints::BottomHalves;
            rodata.first_raise_only =
                matches!(checkpoints, Checkpoints::Timers | Checkpoints::TimerThreads);
            open.maps
                .events
                .set_max_entries(layout.entries())
                .map_err(Into::into)
        };
        let Attached { mut skel, skipped } = load_and_attach(
            CheckpointSkelBuilder::default(),
            storage,
            configure,
            |tracepoint| checkpoints.wants(tracepoint),
        )?;
        let bss: *mut bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the program has a .bss");
        // SAFETY: `bss` is the skeleton's mmapped .bss, mapped while the skeleton lives;
        // written through raw pointers (no reference: BPF may run on any CPU), indices
        // bounds-checked; the programs are still disabled.
        unsafe {
            for cpu in cpus.iter() {
                ptr::write_volatile(addr_of_mut!((*bss).cursors[cpu as usize].traced), 1);
            }
        }
        Ok(CheckpointProbe {
            // SAFETY: the flag is in the mapped .bss; the probe drops its gate before the
            // skeleton that keeps it mapped.
            gate: unsafe { Gate::new(addr_of_mut!((*bss).enabled)) },
            skel,
            bss,
            skipped,
            layout,
        })
    }

    /// Starts all programs at once.
    pub fn enable(&self) {
        self.gate.set(true);
    }

    /// Stops all programs at once (dropping the probe does too, before detaching).
    pub fn disable(&self) {
        self.gate.set(false);
    }

    /// The reader of every CPU's checkpoints (one per probe: it owns the read positions).
    pub fn events(&self) -> Result<RecordAreas<'_, Event>> {
        let map: &dyn MapCore = &self.skel.maps.events;
        // SAFETY: `cursors` is MAX_CPUS `struct area_cursor`s (the layout has fewer CPUs)
        // in the mapped .bss, which outlives the reader: its lifetime is `&self`'s.
        unsafe {
            RecordAreas::map(
                map,
                addr_of_mut!((*self.bss).cursors).cast(),
                self.layout,
                decode_event,
            )
        }
    }

    /// Number of programs loaded (for the overhead line).
    pub fn programs(&self) -> usize {
        loaded_programs(self.skel.object())
    }

    /// How often each loaded program ran, and for how long, while
    /// [`RunTimeStats`](super::RunTimeStats) were on.
    pub fn program_runs(&self) -> Result<Vec<ProgramRuns>> {
        program_runs(self.skel.object())
    }
}

/// Decodes one record of an area; `None` if it is not one of ours. Its per-kind fields
/// mean what model's `RawEvent` says (checkpoint.h fills them so).
fn decode_event(bytes: &[u8]) -> Option<Event> {
    if bytes.len() < size_of::<checkpoint>() {
        return None;
    }
    // SAFETY: `bytes` holds at least one checkpoint (checked above), read unaligned; it
    // is plain integers and bytes, valid for any bit pattern.
    let raw: checkpoint = unsafe { ptr::read_unaligned(bytes.as_ptr().cast()) };
    let kind = EventKind::from_raw(raw.kind)?;
    let mut event = RawEvent {
        time_ns: raw.time,
        cpu: raw.cpu,
        pid: raw.pid,
        kind,
        id: raw.id,
        aux: raw.aux,
        ptr: raw.ptr,
        func: raw.func,
        comm: Comm(raw.comm.map(|c| c as u8)),
        cgroup: 0,
    };
    // the C record has no room for the task's cgroup: switches and wakeups carry it in
    // `func` (a wakeup's watched flag in `id`), where recordings do not
    match kind {
        EventKind::Switch => (event.cgroup, event.func) = (raw.func, 0),
        EventKind::Wakeup => {
            (event.cgroup, event.func, event.id) = (raw.func, raw.id.into(), 0);
        }
        _ => {}
    }
    Some(event.into())
}

skeleton!(fentry_check, "fentry_check.skel.rs");

/// What bh cannot observe on any kernel: these have no tracepoint.
const NO_TRACEPOINT: &str = "entropy mixing (add_interrupt_randomness) and scheduler runtime accounting (update_curr) have no tracepoint";

/// What a recording that did not keep [`not_observable`] (format 1) can say of it.
pub fn not_recorded() -> Vec<String> {
    vec![format!(
        "{NO_TRACEPOINT}, and whether the recorded kernel allowed fentry probes was not recorded: their delays count as undelayed time"
    )]
}

/// Delay causes of INTSPECT thesis §5.4 that need a probe on a kernel function, and why
/// this kernel does not give irqlens one (the check loads a program and unloads it at
/// once).
pub fn not_observable() -> Vec<String> {
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    let mut storage = MaybeUninit::uninit();
    // The refusal is the expected answer here, not an error for libbpf to print.
    let print = libbpf_rs::set_print(None);
    let loaded = fentry_check::FentryCheckSkelBuilder::default()
        .open(&mut storage)
        .and_then(|open| open.load());
    libbpf_rs::set_print(print);
    let what = NO_TRACEPOINT;
    match loaded {
        Err(err) => vec![format!(
            "{what}, and this kernel refuses fentry probes ({err}): their delays count as undelayed time"
        )],
        Ok(_) => vec![format!(
            "{what}; this kernel allows fentry, but irqlens does not attribute them yet: their delays count as undelayed time"
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `kind` with every field set, each to its own value.
    fn record(kind: u16) -> checkpoint {
        let mut comm = [0; 16];
        comm[..3].copy_from_slice(&[b'c' as _, b'p' as _, b'u' as _]);
        checkpoint {
            time: 1_000,
            ptr: 33,
            func: 5121,
            cpu: 2,
            pid: 7,
            aux: 22,
            kind,
            id: 11,
            comm,
        }
    }

    fn bytes(record: &checkpoint) -> &[u8] {
        // SAFETY: a plain-data struct, read as the bytes it is made of while borrowed
        unsafe { std::slice::from_raw_parts(ptr::from_ref(record).cast(), size_of::<checkpoint>()) }
    }

    /// What the probe decodes is what a recording keeps: the `event` line has the
    /// record's own fields (those the kind uses), and reads back as the same event.
    #[test]
    fn every_kind_is_recorded_as_its_record_and_replayed_as_decoded() {
        for kind in 0..18 {
            let raw = record(kind);
            let event = decode_event(bytes(&raw)).expect("a known kind");
            assert_eq!(event.what.kind(), EventKind::from_raw(kind).unwrap());
            let line = serde_json::to_value(event).unwrap();
            // switches and wakeups carry their task's cgroup in the record's `func` (and
            // a wakeup its watched flag in `id`); recordings name them
            let (id, func, cgroup) = match event.what.kind() {
                EventKind::Switch => (None, None, Some(raw.func)),
                EventKind::Wakeup => (None, Some(1), Some(raw.func)),
                _ => (Some(raw.id), Some(raw.func), None),
            };
            assert_eq!(
                line.get("cgroup").and_then(|v| v.as_u64()),
                cgroup,
                "cgroup of {line}"
            );
            let fields = [
                ("id", serde_json::json!(id)),
                ("aux", serde_json::json!(raw.aux)),
                ("ptr", serde_json::json!(raw.ptr)),
                ("func", serde_json::json!(func)),
                ("comm", serde_json::json!("cpu")),
            ];
            for (name, value) in fields {
                if let Some(recorded) = line.get(name) {
                    assert_eq!(recorded, &value, "{name} of {line}");
                }
            }
            let replayed: Event = serde_json::from_value(line).unwrap();
            assert_eq!(replayed, event);
        }
    }

    #[test]
    fn accounting_without_sockets_attaches_everything_else() {
        let with = Checkpoints::Accounting { sockets: true };
        let without = Checkpoints::Accounting { sockets: false };
        for socket in ["sk_data_ready", "sock_recv_length"] {
            assert!(with.wants(socket) && !without.wants(socket), "{socket}");
        }
        for other in ["sched_waking", "softirq_entry", "hrtimer_expire_entry"] {
            assert!(with.wants(other) && without.wants(other), "{other}");
        }
    }

    #[test]
    fn unknown_kinds_and_short_records_are_not_events() {
        assert_eq!(decode_event(bytes(&record(18))), None);
        assert_eq!(decode_event(&bytes(&record(0))[..40]), None);
    }
}
