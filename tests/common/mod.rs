//! Helpers of the integration tests: run the irqlens binary, inject known noise.
#![allow(dead_code)]

use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const IRQLENS: &str = env!("CARGO_BIN_EXE_irqlens");

pub fn irqlens(args: &[&str]) -> Output {
    Command::new(IRQLENS)
        .args(args)
        .output()
        .expect("running irqlens")
}

/// Runs irqlens with --json and parses its document, failing on a non-zero exit.
pub fn irqlens_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let output = irqlens(&all);
    assert!(
        output.status.success(),
        "irqlens {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("irqlens --json prints JSON")
}

pub fn assert_root() {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test loads BPF programs: run the suite as root"
    );
}

/// Names of irqlens's BPF programs still loaded once the kernel has had up to 3 s to
/// free them (it releases a program asynchronously after its last file is closed).
pub fn programs_left_after_exit() -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = loaded_irqlens_programs();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Names of loaded BPF programs that are irqlens's.
pub fn loaded_irqlens_programs() -> Vec<String> {
    libbpf_rs::query::ProgInfoIter::default()
        .map(|info| info.name.to_string_lossy().into_owned())
        .filter(|name| name.starts_with("irqlens_"))
        .collect()
}

/// A thread with its own comm, pinned to one CPU at SCHED_FIFO, that busy-waits for
/// `busy` at the start of every `period`: known thread noise for the measured CPU.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    activations: Arc<AtomicU64>,
    handle: Option<JoinHandle<u32>>,
}

impl Spinner {
    pub fn start(name: &str, cpu: usize, period: Duration, busy: Duration) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let activations = Arc::new(AtomicU64::new(0));
        let (stop2, activations2, name) = (stop.clone(), activations.clone(), name.to_owned());
        let handle = std::thread::spawn(move || {
            let comm = std::ffi::CString::new(name).unwrap();
            unsafe {
                libc::prctl(libc::PR_SET_NAME, comm.as_ptr());
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                assert_eq!(
                    libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set),
                    0
                );
                let param = libc::sched_param { sched_priority: 10 };
                assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &param), 0);
            }
            let mut next = Instant::now();
            while !stop2.load(Ordering::Relaxed) {
                next += period;
                let start = Instant::now();
                while start.elapsed() < busy {
                    std::hint::spin_loop();
                }
                activations2.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            unsafe { libc::gettid() as u32 }
        });
        Spinner {
            stop,
            activations,
            handle: Some(handle),
        }
    }

    pub fn activations(&self) -> u64 {
        self.activations.load(Ordering::Relaxed)
    }

    /// Stops the thread and returns its tid.
    pub fn stop(mut self) -> u32 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap()
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The row of the causes table whose label starts with `prefix`.
pub fn cause<'a>(doc: &'a serde_json::Value, prefix: &str) -> Option<&'a serde_json::Value> {
    doc["causes"]
        .as_array()?
        .iter()
        .find(|c| c["cause"].as_str().is_some_and(|s| s.starts_with(prefix)))
}
