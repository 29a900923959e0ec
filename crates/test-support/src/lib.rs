//! Ground truth for irqlens's tests and benches: known noise (a pinned spinning thread),
//! workloads' cgroups made with real machines' paths,
//! a UDP flow through a private network namespace, a Perfetto trace checker, and a busy
//! machine (hackbench and a UDP flood), synthetic checkpoint streams for the analysis's
//! unit tests, hostile clients of an HTTP server, promtool's verdict, the HTML report's
//! charts read back; and the runner of the irqlens binary they share. Without the `live` feature only the stream builder, the trace
//! checker, the HTTP clients and the reference checkers are left: no BPF tooling needed.

#![warn(missing_docs)]

pub mod alone;
#[cfg(feature = "live")]
pub mod cgroup_bed;
pub mod hostile_http;
pub mod perfetto_check;
pub mod promtool;
pub mod python;
#[cfg(feature = "live")]
pub mod runner;
#[cfg(feature = "live")]
pub mod spinner;
#[cfg(feature = "live")]
pub mod stamped;
#[cfg(feature = "live")]
pub mod storm;
pub mod stream;
pub mod svg;
#[cfg(feature = "live")]
pub mod udp_flow;
