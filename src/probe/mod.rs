//! Probe: the BPF programs in the kernel and the handles user space keeps on them.

pub mod checkpoint;
pub mod noise;

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::btf::Btf;
use libbpf_rs::btf::types::Typedef;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, OpenObject, RingBuffer, RingBufferBuilder};

/// A loaded and attached skeleton, with the tracepoints this kernel lacks (whose
/// programs were not loaded).
pub(crate) struct Attached<S> {
    pub skel: S,
    pub skipped: Vec<String>,
}

/// Opens a skeleton, turns off the programs whose tracepoints this kernel lacks or that
/// `wanted` (given the tracepoint's name) leaves out, loads and attaches the rest.
pub(crate) fn load_and_attach<'obj, B>(
    builder: B,
    storage: &'obj mut MaybeUninit<OpenObject>,
    wanted: impl Fn(&str) -> bool,
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
        unsafe { std::ptr::write_volatile(self.0, enabled as u32) };
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// A BPF ring buffer whose records are decoded as they are consumed, for the caller to
/// take in batches. The programs never wake the reader per record: it drains on a timer.
pub struct RecordRing<T> {
    ring: RingBuffer<'static>,
    decoded: Rc<RefCell<Vec<T>>>,
}

impl<T: 'static> RecordRing<T> {
    /// `decode` returns None for a record that is not one of ours (it is skipped).
    pub fn new(map: &dyn MapCore, decode: fn(&[u8]) -> Option<T>) -> Result<Self> {
        let decoded = Rc::new(RefCell::new(Vec::new()));
        let sink = decoded.clone();
        let mut builder = RingBufferBuilder::new();
        builder.add(map, move |bytes: &[u8]| {
            sink.borrow_mut().extend(decode(bytes));
            0
        })?;
        Ok(RecordRing {
            ring: builder.build()?,
            decoded,
        })
    }

    /// Waits up to `timeout` for the buffer to fill past the programs' wakeup mark, then
    /// takes everything in it.
    pub fn wait_and_take(&self, timeout: Duration) -> Vec<T> {
        let _ = self.ring.poll(timeout);
        self.take()
    }

    /// Takes everything in the buffer now.
    pub fn take(&self) -> Vec<T> {
        let _ = self.ring.consume();
        std::mem::take(&mut *self.decoded.borrow_mut())
    }
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
