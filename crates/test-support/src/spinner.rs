//! Known noise to check irqlens against (integration tests, benches): a thread with its
//! own comm, pinned to one CPU at SCHED_FIFO, that busy-waits for `busy` at the start of
//! every `period`, and counts what it did by its own clock. An aligned spinner starts its
//! periods on the grid of whole periods of CLOCK_MONOTONIC, where `irqlens wakeup -A`'s
//! timer threads are woken too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use irqlens_collect::clock::{monotonic_ns, skip_missed, sleep_until};
use irqlens_collect::sched::{gettid, set_affinity, set_priority};
use irqlens_model::sched::Priority;
use irqlens_model::units::CpuList;

/// Clock reads further apart than this inside a busy period mean the CPU was taken
/// away (an interrupt, the hypervisor): the spinner's ground truth of stolen time.
const STOLEN_GAP: Duration = Duration::from_micros(1);

/// A running spinner thread.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    activations: Arc<AtomicU64>,
    busy_ns: Arc<AtomicU64>,
    stolen_ns: Arc<AtomicU64>,
    longest_ns: Arc<AtomicU64>,
    tid: Arc<AtomicU32>,
    handle: Option<JoinHandle<u32>>,
}

impl Spinner {
    /// At SCHED_FIFO 10, periods from now.
    pub fn start(name: &str, cpu: u32, period: Duration, busy: Duration) -> Spinner {
        Self::spawn(name, cpu, period, busy, Priority::Fifo(10), false)
    }

    /// At `priority`, periods on the CLOCK_MONOTONIC grid.
    pub fn start_aligned(
        name: &str,
        cpu: u32,
        period: Duration,
        busy: Duration,
        priority: Priority,
    ) -> Spinner {
        Self::spawn(name, cpu, period, busy, priority, true)
    }

    fn spawn(
        name: &str,
        cpu: u32,
        period: Duration,
        busy: Duration,
        priority: Priority,
        aligned: bool,
    ) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let activations = Arc::new(AtomicU64::new(0));
        let busy_ns = Arc::new(AtomicU64::new(0));
        let stolen_ns = Arc::new(AtomicU64::new(0));
        let longest_ns = Arc::new(AtomicU64::new(0));
        let (stop2, activations2, busy_ns2, stolen_ns2, longest_ns2) = (
            stop.clone(),
            activations.clone(),
            busy_ns.clone(),
            stolen_ns.clone(),
            longest_ns.clone(),
        );
        let tid = Arc::new(AtomicU32::new(0));
        let tid2 = tid.clone();
        let comm = std::ffi::CString::new(name).expect("a name without NUL");
        let handle = std::thread::spawn(move || {
            // SAFETY: `comm` is a NUL-terminated string alive for the call; the kernel
            // copies at most 16 bytes of it.
            unsafe { libc::prctl(libc::PR_SET_NAME, comm.as_ptr()) };
            set_affinity(&CpuList::single(cpu)).expect("pinning the spinner");
            set_priority(priority).expect("giving the spinner its priority");
            tid2.store(gettid(), Ordering::Release);
            let period_ns = period.as_nanos() as u64;
            let mut next = if aligned {
                (monotonic_ns() / period_ns + 1) * period_ns
            } else {
                monotonic_ns()
            };
            while !stop2.load(Ordering::Relaxed) {
                sleep_until(next);
                let start = Instant::now();
                let mut last = start;
                while last - start < busy && !stop2.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now - last > STOLEN_GAP {
                        // counted at once: a long busy period is read while it lasts
                        stolen_ns2.fetch_add((now - last).as_nanos() as u64, Ordering::Relaxed);
                    }
                    last = now;
                }
                let spun_ns = (last - start).as_nanos() as u64;
                busy_ns2.fetch_add(spun_ns, Ordering::Relaxed);
                longest_ns2.fetch_max(spun_ns, Ordering::Relaxed);
                activations2.fetch_add(1, Ordering::Relaxed);
                // a period that is already over is skipped, not made up for
                next = skip_missed(next + period_ns, period_ns, monotonic_ns()).0;
            }
            gettid()
        });
        Spinner {
            stop,
            activations,
            busy_ns,
            stolen_ns,
            longest_ns,
            tid,
            handle: Some(handle),
        }
    }

    /// Its thread id, once it runs pinned at its priority.
    pub fn tid(&self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let tid = self.tid.load(Ordering::Acquire);
            if tid != 0 {
                return tid;
            }
            assert!(Instant::now() < deadline, "the spinner did not start");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// (activations, busy ns) so far.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.activations.load(Ordering::Relaxed),
            self.busy_ns.load(Ordering::Relaxed),
        )
    }

    /// (activations, busy ns) while `f` runs.
    pub fn during<T>(&self, f: impl FnOnce() -> T) -> (T, (u64, u64)) {
        let before = self.totals();
        let result = f();
        let after = self.totals();
        (result, (after.0 - before.0, after.1 - before.1))
    }

    /// Time taken from its busy periods so far (gaps between its clock reads).
    pub fn stolen_ns(&self) -> u64 {
        self.stolen_ns.load(Ordering::Relaxed)
    }

    /// Its longest busy period so far by its own clock. A busy period can outlast `busy`:
    /// the CPU taken away (the hypervisor, invisible to the guest) just before the last
    /// clock read ends the period that much later.
    pub fn longest_busy_ns(&self) -> u64 {
        self.longest_ns.load(Ordering::Relaxed)
    }

    /// Stops the thread and returns its tid.
    pub fn stop(mut self) -> u32 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .map_or(0, |h| h.join().expect("the spinner panicked"))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}
