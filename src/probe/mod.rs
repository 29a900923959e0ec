//! Probe: the BPF programs in the kernel and the handles user space keeps on them.

pub mod noise;

use anyhow::{Context, Result};
use libbpf_rs::btf::Btf;
use libbpf_rs::btf::types::Typedef;

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
