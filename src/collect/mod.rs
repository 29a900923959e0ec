//! Collect: user-space threads that measure (workloads), read the probes and stimulate.

pub mod clock;
pub mod inject;
pub mod noise;
pub mod sched;
pub mod workload;
