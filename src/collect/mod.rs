//! Collect: user-space threads that measure (workloads), read the probes and stimulate.

pub mod account;
pub mod bh;
pub mod clock;
pub mod inject;
pub mod load;
pub mod noise;
pub mod sched;
pub mod trigger;
pub mod wakeup;
pub mod workload;

use std::sync::atomic::{AtomicBool, Ordering};

/// Sets the flag when dropped: a thread that ends, however it ends, stops the others.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
