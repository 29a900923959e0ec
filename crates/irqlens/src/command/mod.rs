//! The subcommands: each measuring one runs live (or replays a recording) and shows its
//! result with the same code either way.

pub mod account;
pub mod bh;
pub mod compare;
pub mod noise;
pub mod report;
pub mod wakeup;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::OutputArgs;
use irqlens_collect::system;
use irqlens_collect::tap::{Tap, recording_header};
use irqlens_model::kernel::{KernelSymbols, parse_irq_line_names};
use irqlens_model::stimulus::LoadScenario;
use irqlens_model::system::Capability;
use irqlens_model::units::CpuList;
use irqlens_present::html::Page;
use irqlens_present::perfetto::TraceWriter;
use irqlens_present::{self, Names};
use irqlens_record::{End, Recorder};

/// Set by Ctrl-C/SIGTERM (and by the run itself when it ends): every loop checks it.
pub static STOP: AtomicBool = AtomicBool::new(false);
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The sinks the user asked for on the command line; none is a tap that does nothing.
/// Made before the run, so a file that cannot be written fails before anything loads.
pub fn open_tap(
    output: &OutputArgs,
    capability: Capability,
    cpus: &CpuList,
    load: Option<LoadScenario>,
) -> Result<Tap> {
    if let Some(path) = &output.html {
        // the page is written at the end: a path that cannot be is refused before the run
        std::fs::File::create(path).with_context(|| format!("--html {}", path.display()))?;
    }
    let mut tap = Tap::default();
    if output.record.is_none() && output.perfetto.is_none() {
        return Ok(tap);
    }
    let header = recording_header(capability, cpus, load);
    if let Some(path) = &output.perfetto {
        let symbols = system::kernel_symbols();
        tap.add(Box::new(TraceWriter::create(path, &header, symbols)?));
    }
    if let Some(path) = &output.record {
        tap.add(Box::new(Recorder::create(path, header)?));
    }
    Ok(tap)
}

/// Ends the tap with the run's `info`; the result is shown before its error is.
pub fn close_tap(tap: Tap, info: &impl Serialize) -> Result<()> {
    tap.finish(serde_json::to_value(info)?)
}

/// How this machine names IRQ lines and kernel functions (for a live run).
pub fn names() -> Names {
    Names {
        symbols: system::kernel_symbols(),
        irqs: system::irq_line_names(),
    }
}

/// The names the machine that recorded `end` gave to IRQ lines and kernel functions.
pub fn recorded_names(end: &End) -> Names {
    Names {
        symbols: KernelSymbols::from_names(
            end.kernel_functions
                .iter()
                .map(|f| (f.address, f.name.clone())),
        ),
        irqs: parse_irq_line_names(&end.interrupts),
    }
}

pub fn write_html(page: &Page, path: &Path) -> Result<()> {
    let write = || -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        page.write(&mut out)?;
        out.flush()
    };
    write().with_context(|| format!("cannot write the HTML report {}", path.display()))
}

/// Writes `document` as the whole of stdout.
pub fn print_json(out: &mut impl Write, document: &serde_json::Value) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, document)?;
    writeln!(out)?;
    Ok(())
}

/// Runs `measure`, which reports (elapsed, count) as it goes, with a progress line on
/// stderr when `show`, cleared at the end.
pub fn with_progress<T>(
    show: bool,
    duration: Option<Duration>,
    what: &str,
    measure: impl FnOnce(&mut dyn FnMut(Duration, u64)) -> Result<T>,
) -> Result<T> {
    let mut report = |elapsed: Duration, count: u64| {
        if show {
            irqlens_present::write_progress(elapsed, duration, count, what);
        }
    };
    let result = measure(&mut report);
    if show {
        irqlens_present::clear_progress();
    }
    result
}

/// A measurement's result, live or replayed: what every output is made from.
pub trait Outcome {
    /// The `--json` document.
    fn json(&self) -> serde_json::Value;
    /// The tables, as the live run prints them.
    fn write_text(&self, out: &mut dyn Write) -> Result<()>;
    /// The numbers `compare` sets side by side.
    fn figures(&self) -> Vec<irqlens_present::compare::Figure>;
    /// Its section of an HTML report.
    fn html(&self, page: &mut Page, heading: &str);
}

/// Shows a live run's result: on stdout, as JSON or as tables, and as an HTML report if
/// the user asked for one.
pub fn print(outcome: &dyn Outcome, output: &OutputArgs, heading: &str) -> Result<()> {
    if let Some(path) = &output.html {
        let mut page = Page::new(heading, &system::kernel_release());
        outcome.html(&mut page, heading);
        write_html(&page, path)?;
    }
    let mut out = std::io::stdout().lock();
    let json = output.json;
    if json {
        print_json(&mut out, &outcome.json())
    } else {
        outcome.write_text(&mut out)
    }
}
