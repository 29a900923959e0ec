//! Pure analysis: no kernel, no root. Everything here is unit-tested on synthetic data.

pub mod account;
pub mod bh;
pub mod checkpoint;
pub mod histogram;
pub mod kernel;
pub mod noise;
pub mod timeline;
pub mod wakeup;

#[cfg(test)]
mod nest;
