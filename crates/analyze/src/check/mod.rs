//! `irqlens check`'s verdicts: the machine's configuration and short measurements, each
//! judged for the workload's profile.

pub mod measured;
