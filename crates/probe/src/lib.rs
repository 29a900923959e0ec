//! Probe: the BPF programs in the kernel and the handles user space keeps on them.

#![warn(missing_docs)]

/// A module `$name` holding the skeleton libbpf-cargo generated for `$file` (in OUT_DIR),
/// with the lints generated code trips allowed. Before the modules, which use it.
macro_rules! skeleton {
    ($name:ident, $file:literal) => {
        mod $name {
            #![allow(
                clippy::all,
                clippy::undocumented_unsafe_blocks,
                non_camel_case_types,
                non_snake_case,
                dead_code
            )]
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
    };
}

pub mod account;
pub mod area;
pub mod checkpoint;
pub mod noise;

#[cfg(test)]
mod nest;

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use anyhow::{Context, Result, bail};
use libbpf_rs::OpenObject;
use libbpf_rs::btf::Btf;
use libbpf_rs::btf::types::Typedef;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};

pub use area::RecordAreas;

/// A loaded and attached skeleton, with the tracepoints this kernel lacks (whose
/// programs were not loaded).
pub(crate) struct Attached<S> {
    pub skel: S,
    pub skipped: Vec<String>,
}

/// Whether a tracepoint follows data to a socket and its reader (`sk_data_ready`,
/// `sock_recv_length`): they run for every socket on the machine, local ones too.
pub(crate) fn is_socket_tracepoint(tracepoint: &str) -> bool {
    tracepoint.starts_with("sock_") || tracepoint.starts_with("sk_")
}

/// Opens a skeleton, lets `configure` size its maps, turns off the programs whose
/// tracepoints this kernel lacks or that `wanted` (given the tracepoint's name) leaves
/// out, loads and attaches the rest.
pub(crate) fn load_and_attach<'obj, B>(
    builder: B,
    storage: &'obj mut MaybeUninit<OpenObject>,
    configure: impl FnOnce(&mut B::Output) -> Result<()>,
    wanted: impl Fn(&str) -> bool,
) -> Result<Attached<<B::Output as OpenSkel<'obj>>::Output>>
where
    B: SkelBuilder<'obj>,
{
    let mut open = builder
        .open(storage)
        .map_err(|e| explain(e, "opening the BPF object"))?;
    configure(&mut open)?;
    let tracepoint = |section: &std::ffi::OsStr| {
        section
            .to_string_lossy()
            .trim_start_matches("tp_btf/")
            .to_owned()
    };
    let sections: Vec<String> = open
        .open_object_mut()
        .progs_mut()
        .map(|p| tracepoint(p.section()))
        .filter(|name| wanted(name))
        .collect();
    let skipped: Vec<String> = missing_tracepoints(sections.iter().map(String::as_str))?
        .into_iter()
        .map(String::from)
        .collect();
    for mut prog in open.open_object_mut().progs_mut() {
        let name = tracepoint(prog.section());
        if !wanted(&name) || skipped.contains(&name) {
            prog.set_autoload(false);
        }
    }
    let mut skel = open
        .load()
        .map_err(|e| explain(e, "loading irqlens's BPF programs"))?;
    skel.attach()
        .map_err(|e| explain(e, "attaching irqlens's BPF programs"))?;
    Ok(Attached { skel, skipped })
}

/// The `enabled` flag every program of an object checks first. Detaching is not atomic
/// (links go one by one), so the flag is cleared before: when the gate is dropped, which
/// a probe makes happen before its skeleton detaches by declaring the gate first.
pub(crate) struct Gate(*mut u32);

impl Gate {
    /// `flag` must point into the object's mmapped .bss and outlive the gate.
    pub(crate) unsafe fn new(flag: *mut u32) -> Self {
        Gate(flag)
    }

    pub(crate) fn set(&self, enabled: bool) {
        // SAFETY: `new`'s contract: the flag is in the mmapped .bss, which the probe's
        // skeleton keeps mapped and the probe drops after its gate; an aligned u32 that
        // BPF only reads, so a volatile store.
        unsafe { std::ptr::write_volatile(self.0, enabled as u32) };
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// Number of programs an object loaded (for the overhead line).
pub(crate) fn loaded_programs(object: &libbpf_rs::Object) -> usize {
    object.progs().filter(|p| p.autoload()).count()
}

/// How often a loaded program ran and for how long in all, while [`RunTimeStats`] were on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramRuns {
    /// The program's name (its C function's).
    pub name: String,
    /// Runs counted.
    pub runs: u64,
    /// Time spent in it, ns, over those runs.
    pub run_time_ns: u64,
}

/// The kernel counts every BPF program's runs and run time while this lives (the
/// BPF_ENABLE_STATS form of kernel.bpf_stats_enabled: the kernel stops counting when the
/// last such fd closes, however the process ends, and leaves the sysctl as it was). Each
/// run then costs two clock reads more: time events with it off.
pub struct RunTimeStats(#[allow(dead_code)] OwnedFd);

impl RunTimeStats {
    /// Turns the counting on (root only).
    pub fn enable() -> Result<Self> {
        // SAFETY: a system call wrapper taking an integer; it returns a new fd or < 0.
        let fd = unsafe {
            libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
        };
        if fd < 0 {
            bail!(
                "enabling BPF run time statistics: {}",
                std::io::Error::from_raw_os_error(-fd)
            );
        }
        // SAFETY: a new fd that nothing else owns.
        Ok(RunTimeStats(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
}

/// Runs of each program an object loaded, by name.
pub(crate) fn program_runs(object: &libbpf_rs::Object) -> Result<Vec<ProgramRuns>> {
    let ids: HashMap<u32, String> = object
        .progs()
        .filter(|p| p.autoload())
        .map(|p| {
            let id = libbpf_rs::Program::id_from_fd(p.as_fd())?;
            Ok((id, p.name().to_string_lossy().into_owned()))
        })
        .collect::<Result<_>>()?;
    let mut runs: Vec<ProgramRuns> = libbpf_rs::query::ProgInfoIter::default()
        .filter_map(|info| {
            Some(ProgramRuns {
                name: ids.get(&info.id)?.clone(),
                runs: info.run_cnt,
                run_time_ns: info.run_time_ns,
            })
        })
        .collect();
    runs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(runs)
}

/// Tracepoints `names` that this kernel lacks (tp_btf programs need their BTF type to
/// load; a kernel without, say, x86's irq_vectors simply does not trace them).
fn missing_tracepoints<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<&'a str>> {
    let btf = Btf::from_vmlinux().context("reading the kernel's BTF")?;
    Ok(names
        .into_iter()
        .filter(|name| {
            btf.type_by_name::<Typedef>(&format!("btf_trace_{name}"))
                .is_none()
        })
        .collect())
}

/// One line for a load or attach failure, naming the likely cause.
fn explain(err: libbpf_rs::Error, what: &str) -> anyhow::Error {
    let hint = match err.kind() {
        // as root, EACCES/EPERM on load is the verifier or lockdown, not privileges
        // SAFETY: geteuid has no preconditions and cannot fail.
        libbpf_rs::ErrorKind::PermissionDenied if unsafe { libc::geteuid() } == 0 => {
            " (refused even as root: the verifier rejected a program (its log is above) or kernel lockdown forbids BPF)"
        }
        libbpf_rs::ErrorKind::PermissionDenied => {
            " (permission denied: run as root, and check kernel.unprivileged_bpf_disabled and lockdown)"
        }
        libbpf_rs::ErrorKind::NotFound => {
            " (a tracepoint or kernel type is missing on this kernel)"
        }
        _ => "",
    };
    anyhow::anyhow!("{what} failed: {err}{hint}")
}
