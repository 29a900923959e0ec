//! Ground truth for irqlens's tests and benches: known noise (a pinned spinning thread),
//! a UDP flow through a private network namespace, a Perfetto trace checker, and a busy
//! machine (hackbench and a UDP flood); and the runner of the irqlens binary they share.

#![warn(missing_docs)]

pub mod perfetto_check;
#[cfg(feature = "live")]
pub mod runner;
#[cfg(feature = "live")]
pub mod spinner;
#[cfg(feature = "live")]
pub mod storm;
#[cfg(feature = "live")]
pub mod udp_flow;
