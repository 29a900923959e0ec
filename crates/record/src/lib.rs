//! Recordings: a run's raw inputs with a description of the system it ran on, in one
//! file that `irqlens report` re-analyzes (the same code as the live run consumes the
//! same inputs in the same order, so the tables come out the same) and that anyone can
//! read without irqlens.
//!
//! # Format, version 2 (CHANGELOG.md has what changed since version 1)
//! gzip'd JSON Lines (`.jsonl.gz`): one JSON object per line, each with a `"type"`.
//! The reader also takes them gunzipped, and reads them once, front to back (a pipe does).
//! - The first line is the `header`: `format` ("irqlens-recording"), `version`,
//!   `capability`, `argv` (provenance), `options` (the run's resolved options, tagged
//!   with the capability; version 1 has none: its options come from `argv`),
//!   `irqlens_version`, `started_at` (RFC 3339, UTC), `cpus`,
//!   `load`, `pid` (irqlens's own process), and `system` (kernel release, version and
//!   config, boot command line, CPU model and count, clock source, /proc/interrupts and
//!   /proc/softirqs before).
//! - Then the inputs, in the order the analysis took them: `event` (a checkpoint: bh,
//!   wakeup, account), `noise_record` (an interference the noise probe saw),
//!   `noise_period` (a measurement thread's runtime window with its noise samples),
//!   `noise_entries`, `stimulus` and `timer_threads` (whose samples are measured),
//!   `wakeup_report` (a timer thread's activation, as it saw it from user space),
//!   `kernel_hz` (account with `--compensate`: the kernel's tick rate, measured), `mark`
//!   (account: each thread's CPU time as /proc told it at a period's end, and the
//!   checkpoints lost so far).
//! - The last line is the `end`: the run info (as in `--json`), /proc/interrupts and
//!   /proc/softirqs after, and the names of the kernel functions the events refer to.
//!   A file without it is truncated (the run was killed).
//!
//! Times are ns on CLOCK_MONOTONIC. With pandas: Python's `json` per line, then nullable
//! 64-bit integer columns (docs/output.md has the snippet; `pd.read_json` makes a column of
//! integers with gaps float64 and so loses pointers' low bits), then select rows by `type`;
//! DuckDB: `read_json(path, format='newline_delimited', compression='gzip')`.
//! A reader must refuse a `version` it does not know; new fields may appear within a
//! version, so readers should ignore fields they do not know.

#![warn(missing_docs)]

pub mod output;
mod reader;
pub mod result;
mod sink;
mod writer;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use irqlens_model::account::ThreadInfo;
use irqlens_model::event::Event;
use irqlens_model::noise::{PeriodReport, Record};
use irqlens_model::options::RunOptions;
use irqlens_model::stimulus::LoadScenario;
use irqlens_model::system::{Capability, SystemSnapshot};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::Report;
use irqlens_model::workload::CgroupNames;

pub use reader::{MAX_LINE, Opened, Reader, STDIN, is_json_text, not_a_recording, read_document};
pub use sink::{Sink, pump};
pub use writer::Recorder;

/// The `format` of the header line: what tells an irqlens recording from other JSON.
pub const FORMAT: &str = "irqlens-recording";
/// The format version this irqlens writes and the newest it reads (see CHANGELOG.md).
pub const VERSION: u32 = 2;

/// One line of a recording.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// The first line: what made the recording, and the machine.
    Header(Box<Header>),
    /// A checkpoint (bh, wakeup, account).
    Event(Event),
    /// An interference the noise probe saw.
    NoiseRecord(Record),
    /// A measurement thread's runtime window, with its noise samples.
    NoisePeriod(PeriodReport),
    /// Interference counts per class (thread, softirq, irq, nmi) of a CPU so far.
    NoiseEntries {
        /// The measured CPU.
        cpu: u32,
        /// Counts, indexed by `NoiseClass`.
        entries: [u64; 4],
        /// Of them, those whose end was never traced (0 in older recordings, which lack it).
        #[serde(default)]
        unended: u64,
    },
    /// bh: the thread whose requests are the stimulus's samples.
    Stimulus {
        /// The stimulus thread's id.
        tid: u32,
    },
    /// wakeup, timer mode: the measurement threads.
    TimerThreads {
        /// Their thread ids.
        tids: Vec<u32>,
    },
    /// A timer thread's activation, as it saw it from user space.
    WakeupReport(Report),
    /// account with `--compensate`: the kernel's tick rate, measured.
    KernelHz {
        /// Ticks per second.
        hz: u32,
    },
    /// account: a period boundary, `at_ns` after the start, with the kernel's CPU time per
    /// thread then and the checkpoints lost so far.
    Mark {
        /// Time since the run's start, ns.
        at_ns: u64,
        /// Every thread's reading.
        threads: Vec<ThreadReading>,
        /// Checkpoints lost so far.
        #[serde(default)]
        lost_events: u64,
    },
    /// The last line: the run info and the machine after; a file without it is truncated.
    End(Box<End>),
}

impl Line {
    /// Its `type`, as written.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Line::Header(_) => "header",
            Line::Event(_) => "event",
            Line::NoiseRecord(_) => "noise_record",
            Line::NoisePeriod(_) => "noise_period",
            Line::NoiseEntries { .. } => "noise_entries",
            Line::Stimulus { .. } => "stimulus",
            Line::TimerThreads { .. } => "timer_threads",
            Line::WakeupReport(_) => "wakeup_report",
            Line::KernelHz { .. } => "kernel_hz",
            Line::Mark { .. } => "mark",
            Line::End(_) => "end",
        }
    }
}

/// The first line of a recording.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version ([`VERSION`] when written by this irqlens).
    pub version: u32,
    /// The subcommand that made it.
    pub capability: Capability,
    /// The command line of the run: provenance only (version 1 recordings have nothing
    /// else to tell their options by).
    pub argv: Vec<String>,
    /// The run's resolved options (version 2 on): what `report` replays it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<RunOptions>,
    /// The version of the irqlens that made it.
    pub irqlens_version: String,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    /// The CPUs measured.
    pub cpus: CpuList,
    /// The load the run put on the machine (bh's `--load`), if any.
    pub load: Option<LoadScenario>,
    /// The process id of the irqlens that made it: whose threads' work is irqlens's own.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The machine when the run started.
    pub system: SystemSnapshot,
}

/// The last line of a recording.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct End {
    /// When the run ended, RFC 3339 in UTC.
    pub finished_at: String,
    /// Input lines between the header and this one.
    pub inputs: u64,
    /// The run's information, as its `--json` prints it under `run`.
    pub info: serde_json::Value,
    /// The text of /proc/interrupts after the run.
    pub interrupts: String,
    /// The text of /proc/softirqs after the run.
    pub softirqs: String,
    /// The kernel functions the events name (tasklets, work items, timers), resolved
    /// on the machine that ran.
    pub kernel_functions: Vec<KernelFunction>,
    /// The cgroup v2 paths of the cgroup ids the inputs carry, read on the machine that ran
    /// (none in recordings older than the field).
    #[serde(default)]
    pub cgroups: CgroupNames,
}

// (lists, not maps keyed by numbers: JSON keys are strings, which the tagged lines'
// reader does not turn back into numbers)

/// A kernel function the events refer to, named.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelFunction {
    /// Its address, as the events give it.
    pub address: u64,
    /// `name` or `name+0x10`, or the address in hex if /proc/kallsyms had none.
    pub name: String,
}

/// What /proc told of a thread at a mark.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThreadReading {
    /// The thread id.
    pub tid: u32,
    /// What /proc told of it.
    #[serde(flatten)]
    pub info: ThreadInfo,
}

impl ThreadReading {
    /// Readings of `threads`, keyed by thread id, as a mark's list.
    pub fn all(threads: HashMap<u32, ThreadInfo>) -> Vec<Self> {
        threads
            .into_iter()
            .map(|(tid, info)| ThreadReading { tid, info })
            .collect()
    }

    /// A mark's list back as readings keyed by thread id.
    pub fn by_tid(readings: Vec<Self>) -> HashMap<u32, ThreadInfo> {
        readings.into_iter().map(|r| (r.tid, r.info)).collect()
    }
}

#[cfg(test)]
mod tests;
