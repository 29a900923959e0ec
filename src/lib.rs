//! irqlens: what interrupts cost a Linux system, and why.
//!
//! The pipeline, one module each: `probe` (BPF programs in the kernel) -> `collect`
//! (measurement threads, readers) -> `analyze` (pure correlation and arithmetic) ->
//! `present` (tables, JSON).

pub mod analyze;
pub mod cli;
pub mod collect;
pub mod present;
pub mod probe;
pub mod record;
pub mod system;
pub mod units;
