//! irqlens's data model: what every layer hands to the next. Plain data and serde only,
//! no I/O: the probe decodes into these types, collect fills them, analyze reads them,
//! recordings keep them and present shows them.

#![warn(missing_docs)]

pub mod account;
pub mod agent;
pub mod bh;
pub mod bounds;
pub mod check;
pub mod design;
pub mod event;
pub mod hist;
pub mod kernel;
pub mod noise;
pub mod options;
pub mod run;
pub mod sched;
pub mod sim;
pub mod steer;
pub mod stimulus;
pub mod system;
pub mod tables;
pub mod trial;
pub mod tune;
pub mod units;
pub mod wakeup;
pub mod workload;

pub use units::CpuList;
