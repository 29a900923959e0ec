//! Kernel names shared by every capability: hardirq sources, softirq vectors, task comms.

use std::collections::HashMap;
use std::fmt;

use serde::{Serialize, Serializer};

/// Names of `enum irq_source` in irq_vectors.h, in its order.
pub const IRQ_SOURCE_NAMES: [&str; 10] = [
    "irq",
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "x86_platform_ipi",
    "error_apic",
    "spurious_apic",
    "thermal_apic",
];

/// Softirq vectors by number (include/linux/interrupt.h).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// A task's comm as the kernel stores it: up to 16 bytes, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    pub fn new(name: &str) -> Self {
        let mut bytes = [0; 16];
        let len = name.len().min(15);
        bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
        Comm(bytes)
    }

    /// Whether the name starts with `prefix` (which holds no NUL), without making a String.
    pub fn starts_with(&self, prefix: &str) -> bool {
        self.0.starts_with(prefix.as_bytes())
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        f.write_str(&String::from_utf8_lossy(&self.0[..len]))
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl Serialize for Comm {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Comm {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::Deserialize::deserialize(deserializer).map(|name: String| Comm::new(&name))
    }
}

/// How rtla/osnoise users name a hardirq: `irq 11 virtio0` for a device line (named from
/// /proc/interrupts), `local_timer:236` for a local APIC vector.
pub fn irq_label(source: u16, id: u32, irq_names: &HashMap<u32, String>) -> String {
    if source == 0 {
        return match irq_names.get(&id).filter(|name| !name.is_empty()) {
            Some(name) => format!("irq {id} {name}"),
            None => format!("irq {id}"),
        };
    }
    let name = IRQ_SOURCE_NAMES
        .get(source as usize)
        .copied()
        .unwrap_or("vector");
    format!("{name}:{id}")
}

/// `hardirq irq 11 virtio0`, `hardirq local_timer:236`: a cause or origin that is a hardirq.
pub fn hardirq_label(source: u16, id: u32, irq_names: &HashMap<u32, String>) -> String {
    format!("hardirq {}", irq_label(source, id, irq_names))
}

/// `TIMER`, `NET_RX`, ... as /proc/softirqs names them.
pub fn softirq_name(vector: u32) -> String {
    match SOFTIRQ_NAMES.get(vector as usize) {
        Some(name) => name.to_string(),
        None => format!("softirq {vector}"),
    }
}
