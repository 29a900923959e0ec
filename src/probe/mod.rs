//! Probe: the BPF programs in the kernel and the handles user space keeps on them.

pub mod bh;
pub mod noise;

use std::mem::MaybeUninit;

use anyhow::{Context, Result};
use libbpf_rs::OpenObject;
use libbpf_rs::btf::Btf;
use libbpf_rs::btf::types::Typedef;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};

/// A loaded and attached skeleton, with the tracepoints this kernel lacks (whose
/// programs were not loaded).
pub(crate) struct Attached<S> {
    pub skel: S,
    pub skipped: Vec<String>,
}

/// Opens a skeleton, turns off the programs whose tracepoints this kernel lacks, loads
/// and attaches the rest.
pub(crate) fn load_and_attach<'obj, B>(
    builder: B,
    storage: &'obj mut MaybeUninit<OpenObject>,
) -> Result<Attached<<B::Output as OpenSkel<'obj>>::Output>>
where
    B: SkelBuilder<'obj>,
{
    let mut open = builder
        .open(storage)
        .map_err(|e| explain(e, "opening the BPF object"))?;
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
        .collect();
    let skipped: Vec<String> = missing_tracepoints(sections.iter().map(String::as_str))?
        .into_iter()
        .map(String::from)
        .collect();
    for mut prog in open.open_object_mut().progs_mut() {
        if skipped.contains(&tracepoint(prog.section())) {
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

/// Number of programs an object loaded (for the overhead line).
pub(crate) fn loaded_programs(object: &libbpf_rs::Object) -> usize {
    object.progs().filter(|p| p.autoload()).count()
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
