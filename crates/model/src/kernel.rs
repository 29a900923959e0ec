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

/// The sources of `enum irq_source` a remote wakeup sends: SRC_RESCHEDULE, SRC_CALL_FUNCTION
/// and SRC_CALL_FUNCTION_SINGLE (`try_to_wake_up()` queues the wakeup on the target CPU, or
/// makes it reschedule).
pub const WAKEUP_IPI_SOURCES: [u16; 3] = [2, 3, 4];

/// The two of them that deliver a remote wakeup itself: SRC_RESCHEDULE (the target must
/// reschedule) and SRC_CALL_FUNCTION_SINGLE (the wakeup queued on its wake list).
pub const WAKEUP_DELIVERY_IPI_SOURCES: [u16; 2] = [2, 4];

/// Softirq vectors by number (include/linux/interrupt.h).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// A task's comm as the kernel stores it: up to 16 bytes, NUL-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    /// `name`, cut to 15 bytes as the kernel does.
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

/// Kernel text symbols from /proc/kallsyms, to name tasklet and work functions.
#[derive(Default)]
pub struct KernelSymbols {
    /// (address, name), sorted by address.
    symbols: Vec<(u64, String)>,
}

impl KernelSymbols {
    /// Names resolved before, on the machine that ran (a recording's).
    pub fn from_names(names: impl IntoIterator<Item = (u64, String)>) -> Self {
        let mut symbols: Vec<(u64, String)> = names.into_iter().collect();
        symbols.sort_unstable();
        KernelSymbols { symbols }
    }

    /// `flush_to_ldisc`, `name+0x10` inside a function, or the address in hex.
    pub fn name(&self, address: u64) -> String {
        let at = self.symbols.partition_point(|(a, _)| *a <= address);
        match at.checked_sub(1).map(|i| &self.symbols[i]) {
            Some((start, name)) if *start == address => name.clone(),
            Some((start, name)) if address - start < 1 << 20 => {
                format!("{name}+{:#x}", address - start)
            }
            _ => format!("{address:#x}"),
        }
    }
}

/// IRQ line names from the text of /proc/interrupts (a recorded one included).
pub fn parse_irq_line_names(text: &str) -> HashMap<u32, String> {
    let mut lines = text.lines();
    let cpus = lines
        .next()
        .map_or(0, |header| header.split_whitespace().count());
    lines
        .filter_map(|line| {
            let (irq, rest) = line.split_once(':')?;
            let irq: u32 = irq.trim().parse().ok()?;
            // counts per CPU, then the chip, the hwirq/trigger, then the action names
            let fields: Vec<&str> = rest.split_whitespace().skip(cpus).collect();
            let name = fields
                .get(2..)
                .map(|names| names.join(" "))
                .unwrap_or_default();
            Some((irq, name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irq_names_from_proc_interrupts() {
        let text = "           CPU0       CPU1
  0:         45          0   IO-APIC   2-edge      timer
 11:          0       3021   PCI-MSI 49152-edge      virtio0-input.0, virtio0-output.0
NMI:          0          0   Non-maskable interrupts
LOC:     123456     654321   Local timer interrupts
";
        let names = parse_irq_line_names(text);
        assert_eq!(names[&0], "timer");
        assert_eq!(names[&11], "virtio0-input.0, virtio0-output.0");
        assert_eq!(names.len(), 2);
    }
}
