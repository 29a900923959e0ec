//! The bottom-half probe: loads bh.bpf.c, selects the traced CPUs and the stimulus
//! process, and decodes its checkpoints.

use std::mem::MaybeUninit;
use std::ptr::{self, addr_of, addr_of_mut};

use anyhow::{Result, bail};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, OpenObject};

use super::{Attached, Gate, load_and_attach, loaded_programs};
use crate::analyze::bh::{Event, EventKind};
use crate::analyze::kernel::Comm;
use crate::units::CpuList;

mod skel {
    #![allow(clippy::all, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/bh.skel.rs"));
}

use skel::types::{bh_event, bss};
use skel::{BhSkel, BhSkelBuilder};

/// Largest CPU number + 1 the BPF side has room for (BH_MAX_CPUS in bh.h).
pub const MAX_CPUS: u32 = 1024;

pub struct BhProbe<'obj> {
    /// First, so it closes before the skeleton's links are detached.
    gate: Gate,
    skel: BhSkel<'obj>,
    /// The mmapped .bss, written by BPF on every CPU: volatile accesses only.
    bss: *mut bss,
    /// Tracepoints this kernel does not have.
    pub skipped: Vec<String>,
}

impl<'obj> BhProbe<'obj> {
    /// Loads and attaches the programs, disabled; `enable` starts tracing `cpus`.
    /// Wakeups of `stimulus_tgid`'s threads are always traced.
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        cpus: &CpuList,
        stimulus_tgid: u32,
    ) -> Result<Self> {
        if let Some(cpu) = cpus.iter().find(|&cpu| cpu >= MAX_CPUS) {
            bail!("CPU {cpu} is beyond the {MAX_CPUS} CPUs irqlens supports");
        }
        let Attached { mut skel, skipped } = load_and_attach(BhSkelBuilder::default(), storage)?;
        let bss: *mut bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the program has a .bss");
        unsafe {
            ptr::write_volatile(addr_of_mut!((*bss).trigger_tgid), stimulus_tgid);
            for cpu in cpus.iter() {
                ptr::write_volatile(addr_of_mut!((*bss).traced_cpu[cpu as usize]), 1);
            }
        }
        Ok(BhProbe {
            gate: unsafe { Gate::new(addr_of_mut!((*bss).enabled)) },
            skel,
            bss,
            skipped,
        })
    }

    pub fn enable(&self) {
        self.gate.set(true);
    }

    /// Stops all programs at once (dropping the probe does too, before detaching).
    pub fn disable(&self) {
        self.gate.set(false);
    }

    /// Checkpoints the ring buffer had no room for.
    pub fn lost_events(&self) -> u64 {
        unsafe { ptr::read_volatile(addr_of!((*self.bss).lost_events)) }
    }

    pub fn events_map(&self) -> &dyn MapCore {
        &self.skel.maps.events
    }

    pub fn programs(&self) -> usize {
        loaded_programs(self.skel.object())
    }
}

/// Decodes one ring buffer record; `None` if it is not one of ours.
pub fn decode_event(bytes: &[u8]) -> Option<Event> {
    if bytes.len() < size_of::<bh_event>() {
        return None;
    }
    let raw: bh_event = unsafe { ptr::read_unaligned(bytes.as_ptr().cast()) };
    Some(Event {
        time_ns: raw.time,
        cpu: raw.cpu,
        pid: raw.pid,
        kind: EventKind::from_raw(raw.kind)?,
        id: raw.id,
        aux: raw.aux,
        ptr: raw.ptr,
        func: raw.func,
        comm: Comm(raw.comm.map(|c| c as u8)),
    })
}

mod fentry_check {
    #![allow(clippy::all, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/fentry_check.skel.rs"));
}

/// Delay causes of §5.4 that need a probe on a kernel function, and why this kernel
/// does not give irqlens one (the check loads a program and unloads it at once).
pub fn not_observable() -> Vec<String> {
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    let mut storage = MaybeUninit::uninit();
    // The refusal is the expected answer here, not an error for libbpf to print.
    let print = libbpf_rs::set_print(None);
    let loaded = fentry_check::FentryCheckSkelBuilder::default()
        .open(&mut storage)
        .and_then(|open| open.load());
    libbpf_rs::set_print(print);
    let what = "entropy mixing (add_interrupt_randomness) and scheduler runtime accounting (update_curr) have no tracepoint";
    match loaded {
        Err(err) => vec![format!(
            "{what}, and this kernel refuses fentry probes ({err}): their delays count as undelayed time"
        )],
        Ok(_) => vec![format!(
            "{what}; this kernel allows fentry, but irqlens does not attribute them yet: their delays count as undelayed time"
        )],
    }
}
