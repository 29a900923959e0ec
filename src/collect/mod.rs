//! Collect: user-space threads that measure (workloads), read the probes and stimulate.

pub mod bh;
pub mod clock;
pub mod inject;
pub mod load;
pub mod noise;
pub mod sched;
pub mod trigger;
pub mod workload;
