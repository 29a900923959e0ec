//! The subcommands that are not measurements, each a driver [`Tool`](crate::driver::Tool)
//! implemented on its resolved command line.

pub mod advise;
pub mod agent;
pub mod check;
pub mod compare;
pub mod report;
pub mod sim;
pub mod steer;
pub mod trial;
pub mod tune;
