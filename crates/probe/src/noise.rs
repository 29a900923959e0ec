//! The noise probe: loads noise.bpf.c, marks the measured CPUs and hands out the
//! per-CPU interference counters the measurement threads read from mmapped memory.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::{self, addr_of, addr_of_mut};

use anyhow::Result;
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, OpenObject};

use super::area::{AreaLayout, Cursor, RecordAreas};
use super::{Attached, Gate, load_and_attach, loaded_programs};
use irqlens_model::kernel::Comm;
use irqlens_model::noise::{NoiseClass, Record};
use irqlens_model::units::CpuList;
use irqlens_model::workload::CgroupId;

skeleton!(skel, "noise.skel.rs");

pub use skel::types::nest_state as NestState;
use skel::types::{area_cursor, bss, noise_slot};
use skel::{NoiseSkel, NoiseSkelBuilder};

/// Largest CPU number + 1 the BPF side has room for (MAX_CPUS in noise.h).
pub const MAX_CPUS: u32 = 1024;

/// Memory for every CPU's records: records come at interference rates (thousands per
/// second per CPU), so even the smallest areas hold many drains' worth.
const AREA_BUDGET: usize = 8 << 20;
const MAX_SLOTS_PER_CPU: u64 = 1 << 16;

const _: () = assert!(size_of::<area_cursor>() == size_of::<Cursor>());
// the reader views the cursors as `Cursor`s, 64-aligned: so must .bss place them
const _: () = assert!(std::mem::offset_of!(bss, cursors) % align_of::<Cursor>() == 0);
// a slot is one cache line
const _: () = assert!(size_of::<noise_slot>() == 64);

/// The loaded noise programs, the measured CPUs' interference counters and record
/// areas. Dropping it stops and detaches the programs.
pub struct NoiseProbe<'obj> {
    /// First, so it closes before the skeleton's links are detached.
    gate: Gate,
    skel: NoiseSkel<'obj>,
    /// The mmapped .bss: BPF writes it on every CPU, so it is only touched through
    /// volatile accesses, never through references.
    bss: *mut bss,
    /// Tracepoints this kernel does not have.
    pub skipped: Vec<String>,
    layout: AreaLayout,
}

impl<'obj> NoiseProbe<'obj> {
    /// Loads and attaches the programs, disabled; `enable` starts tracing `cpus`.
    pub fn load(storage: &'obj mut MaybeUninit<OpenObject>, cpus: &CpuList) -> Result<Self> {
        Self::load_tracing(storage, cpus, |_| true)
    }

    /// Loads the programs for a CPU with no measurement thread, disabled: NMIs, hardirqs
    /// and softirqs only (sched_switch is not attached: another thread is the CPU's own
    /// work, not interference, and a context switch is the most frequent event), their
    /// records emitted on every CPU of `cpus` once enabled.
    pub fn load_passive(
        storage: &'obj mut MaybeUninit<OpenObject>,
        cpus: &CpuList,
    ) -> Result<Self> {
        let probe = Self::load_tracing(storage, cpus, |tracepoint| tracepoint != "sched_switch")?;
        for cpu in cpus.iter() {
            probe.cpu(cpu).set_sampling(true);
        }
        Ok(probe)
    }

    /// Loads and attaches the programs of the tracepoints `wanted`, disabled.
    fn load_tracing(
        storage: &'obj mut MaybeUninit<OpenObject>,
        cpus: &CpuList,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<Self> {
        let layout = AreaLayout::new(
            cpus,
            MAX_CPUS,
            AREA_BUDGET,
            size_of::<noise_slot>(),
            MAX_SLOTS_PER_CPU,
        )?;
        let size_areas = |open: &mut skel::OpenNoiseSkel<'obj>| {
            open.maps
                .records
                .set_max_entries(layout.entries())
                .map_err(Into::into)
        };
        let Attached { mut skel, skipped } =
            load_and_attach(NoiseSkelBuilder::default(), storage, size_areas, wanted)?;
        let bss: *mut bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the program has a .bss");
        let probe = NoiseProbe {
            // SAFETY: `bss` is the skeleton's mmapped .bss, which stays mapped while the
            // skeleton lives; the probe drops its gate first.
            gate: unsafe { Gate::new(addr_of_mut!((*bss).enabled)) },
            skel,
            bss,
            skipped,
            layout,
        };
        // SAFETY: the mapped .bss (see `gate`), written through a raw pointer, never a
        // reference, as BPF may run on other CPUs; the programs are still disabled.
        unsafe {
            ptr::write_volatile(
                addr_of_mut!((*probe.bss).slots_per_cpu),
                layout.slots_per_cpu(),
            )
        };
        for cpu in cpus.iter() {
            // SAFETY: as above; the index is bounds-checked (and below MAX_CPUS: the layout).
            unsafe {
                ptr::write_volatile(addr_of_mut!((*probe.bss).cpus[cpu as usize].measured), 1)
            };
        }
        Ok(probe)
    }

    /// Starts all programs at once.
    pub fn enable(&self) {
        self.gate.set(true);
    }

    /// Stops all programs at once (dropping the probe does too, before detaching).
    pub fn disable(&self) {
        self.gate.set(false);
    }

    /// The measurement thread's handle on `cpu`'s state. Panics if `cpu` is not below
    /// [`MAX_CPUS`].
    pub fn cpu(&self, cpu: u32) -> CpuCounters<'_> {
        assert!(cpu < MAX_CPUS);
        // SAFETY: only field addresses inside the mapped .bss (the probe keeps it mapped),
        // computed without a reference; the array index is bounds-checked.
        let (interference, sampling, workload_pid) = unsafe {
            let state = addr_of_mut!((*self.bss).cpus[cpu as usize]);
            (
                addr_of!((*state).interference),
                addr_of_mut!((*state).sampling),
                addr_of_mut!((*state).workload_pid),
            )
        };
        CpuCounters {
            interference,
            sampling,
            workload_pid,
            _probe: PhantomData,
        }
    }

    /// Interferences that began while sampling, indexed by `NoiseClass`.
    pub fn entries(&self, cpu: u32) -> [u64; 4] {
        // SAFETY: a volatile read from the mapped .bss (the probe keeps it mapped) of plain
        // integers BPF updates; the index is bounds-checked.
        unsafe { ptr::read_volatile(addr_of!((*self.bss).cpus[cpu as usize].entries)) }
    }

    /// Contexts begun while sampling whose end the kernel never reported (a missed
    /// context switch, a context entered again before it ended).
    pub fn unended(&self, cpu: u32) -> u64 {
        // SAFETY: as `entries`.
        unsafe { ptr::read_volatile(addr_of!((*self.bss).cpus[cpu as usize].unended)) }
    }

    /// The reader of every CPU's records (one per probe: it owns the read positions).
    pub fn records(&self) -> Result<RecordAreas<'_, Record>> {
        let map: &dyn MapCore = &self.skel.maps.records;
        // SAFETY: `cursors` is MAX_CPUS `struct area_cursor`s (the layout has fewer CPUs)
        // in the mapped .bss, which outlives the reader: its lifetime is `&self`'s.
        unsafe {
            RecordAreas::map(
                map,
                addr_of_mut!((*self.bss).cursors).cast(),
                self.layout,
                decode_record,
            )
        }
    }

    /// Number of programs loaded (for the overhead line).
    pub fn programs(&self) -> usize {
        loaded_programs(self.skel.object())
    }
}

/// A measurement thread's view of its CPU's state in the probe. Valid as long as the
/// probe it came from, which the lifetime enforces.
#[derive(Clone, Copy)]
pub struct CpuCounters<'p> {
    interference: *const u64,
    sampling: *mut u32,
    workload_pid: *mut u32,
    _probe: PhantomData<&'p ()>,
}

// SAFETY: the pointers target the probe's mmapped .bss, which outlives 'p and belongs to
// no thread; every access through them is volatile, as BPF writes it from every CPU.
unsafe impl Send for CpuCounters<'_> {}

impl CpuCounters<'_> {
    /// The CPU's interference counter: interferences begun so far.
    #[inline(always)]
    pub fn interference(&self) -> u64 {
        // SAFETY: an aligned u64 in the mapped .bss, alive for 'p (see `NoiseProbe::cpu`).
        unsafe { ptr::read_volatile(self.interference) }
    }

    /// Marks a runtime window open or closed: only inside one are interferences counted
    /// per class and their records emitted.
    pub fn set_sampling(&self, on: bool) {
        // SAFETY: an aligned u32 in the mapped .bss, alive for 'p; BPF only reads it.
        unsafe { ptr::write_volatile(self.sampling, on as u32) }
    }

    /// Names the CPU's measurement thread, whose own context switches are no noise.
    pub fn set_workload_pid(&self, tid: u32) {
        // SAFETY: an aligned u32 in the mapped .bss, alive for 'p; BPF only reads it.
        unsafe { ptr::write_volatile(self.workload_pid, tid) }
    }
}

/// Decodes one record of an area; `None` if it is not one of ours.
fn decode_record(bytes: &[u8]) -> Option<Record> {
    if bytes.len() < size_of::<skel::types::noise_record>() {
        return None;
    }
    // SAFETY: `bytes` holds at least one record (checked above), read unaligned; the
    // record is plain integers and bytes, valid for any bit pattern.
    let raw: skel::types::noise_record = unsafe { ptr::read_unaligned(bytes.as_ptr().cast()) };
    Some(Record {
        cpu: raw.cpu.into(),
        class: NoiseClass::from_raw(raw.class.into())?,
        source: raw.source.into(),
        id: raw.id,
        comm: Comm(raw.comm.map(|c| c as u8)),
        start_ns: raw.start,
        duration_ns: raw.duration,
        seq: raw.seq,
        cgroup: CgroupId(raw.cgroup),
    })
}
