//! The capabilities the agent keeps: those its capabilities need to attach their probes
//! (again, after a failure or a reload), and no other. Linux keeps capabilities per
//! thread, so they are dropped on the main thread before any other thread starts: every
//! thread the agent makes (the server's, each capability's) inherits the smaller sets.

use anyhow::{Context, Result};
use caps::{CapSet, Capability, CapsHashSet};

/// What the agent keeps, and why:
/// - CAP_BPF, CAP_PERFMON: load and attach the tracepoint programs, at the start and
///   whenever a capability starts again (after a failure, or a reload that turns it on);
/// - CAP_SYS_RESOURCE: raise RLIMIT_MEMLOCK for the probes' maps on kernels that still
///   charge them to it (before 5.11);
/// - CAP_DAC_READ_SEARCH: read other processes' /proc files (account's thread times)
///   where /proc is mounted with hidepid, and tracefs;
/// - CAP_SYS_NICE: raise each capability's reader above SCHED_OTHER work, so that a busy
///   machine does not starve it into losing events (best effort: without it, losses are
///   counted and served).
///
/// Not CAP_SYSLOG, which the manifests grant: /proc/kallsyms (its addresses hidden without
/// it under kptr_restrict=1) is read once, with /proc/interrupts, before the drop, and
/// never again.
pub const KEPT: [Capability; 5] = [
    Capability::CAP_BPF,
    Capability::CAP_PERFMON,
    Capability::CAP_SYS_RESOURCE,
    Capability::CAP_DAC_READ_SEARCH,
    Capability::CAP_SYS_NICE,
];

/// Drops every capability of the calling thread but [`KEPT`] (those it has), from its
/// effective, permitted, inheritable, ambient and bounding sets, and sets no_new_privs:
/// nothing it runs later can gain one back. Returns the names of those kept.
pub fn keep_only_needed() -> Result<Vec<String>> {
    let keep: CapsHashSet = KEPT.into_iter().collect();
    let permitted = caps::read(None, CapSet::Permitted).context("reading the capabilities")?;
    // the bounding set first: dropping from it takes CAP_SETPCAP, which goes below
    for capability in caps::all().difference(&keep) {
        // a capability the kernel does not know, or a process without CAP_SETPCAP: the
        // bounding set only matters to programs it would execute, and it executes none
        let _ = caps::drop(None, CapSet::Bounding, *capability);
    }
    let kept: CapsHashSet = permitted.intersection(&keep).copied().collect();
    caps::clear(None, CapSet::Ambient).context("clearing the ambient capabilities")?;
    caps::set(None, CapSet::Inheritable, &CapsHashSet::new())
        .context("clearing the inheritable capabilities")?;
    // effective within permitted at every step: the effective set shrinks first
    caps::set(None, CapSet::Effective, &kept).context("dropping effective capabilities")?;
    caps::set(None, CapSet::Permitted, &kept).context("dropping permitted capabilities")?;
    // SAFETY: prctl with integer arguments; PR_SET_NO_NEW_PRIVS only restricts the process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error()).context("setting no_new_privs");
    }
    let mut names: Vec<String> = kept.iter().map(|c| c.to_string()).collect();
    names.sort();
    Ok(names)
}
