//! The one driver every capability runs through (as rtla's `tool_ops`): a capability
//! implements [`Tool`] once, and [`measure`] runs it live while [`replay`] replays its
//! recordings, both ending in the same [`Outcome`] shown the same way.

pub mod account;
pub mod advise;
pub mod bh;
pub mod compare;
pub mod noise;
pub mod report;
pub mod sim;
pub mod steer;
pub mod trial;
pub mod tune;
pub mod wakeup;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::{OutputArgs, StopActions};
use crate::parse::{Action, SignalTarget};
use irqlens_collect::system;
use irqlens_collect::tap::{Tap, recording_header};
use irqlens_model::bounds::Check;
use irqlens_model::kernel::{KernelSymbols, parse_irq_line_names};
use irqlens_model::options::RunOptions;
use irqlens_model::run::{Header, Measurement, RunInfo};
use irqlens_present::html::Page;
use irqlens_present::perfetto::TraceWriter;
use irqlens_present::prometheus::Exporter;
use irqlens_present::{self, Names};
use irqlens_record::{End, Reader, Recorder, output};

/// Set by Ctrl-C/SIGTERM (and by the run itself when it ends): every loop checks it.
pub static STOP: AtomicBool = AtomicBool::new(false);
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// What a capability implements once: how it runs live, how it replays a recording, and
/// the result both give.
pub trait Tool {
    /// The capability's resolved options.
    type Options;
    /// Its result, shown the same way live and replayed.
    type Result: Outcome;
    /// The title of its live run's HTML report.
    const TITLE: &'static str;
    /// What its progress line counts.
    const COUNTING: &'static str;

    /// The options as a recording keeps them.
    fn recorded(options: &Self::Options) -> RunOptions;
    /// Whether the live run shows a progress line on stderr.
    fn shows_progress(_options: &Self::Options, output: &OutputArgs) -> bool {
        output.progress()
    }
    /// Measures until the duration ends, a stop condition hits or [`STOP`] is set.
    fn run(options: Self::Options, live: &mut Live<'_>) -> Result<Self::Result>;
    /// Re-analyzes a recording made with `options`.
    fn replay(options: Self::Options, reader: &mut Reader) -> Result<Self::Result>;
}

/// What a live run hands its tool: where its inputs go, its progress line, the output
/// options it shows with.
pub struct Live<'a> {
    pub tap: &'a mut Tap,
    /// The `--prometheus` endpoint (with none asked for, one that does nothing).
    pub exporter: &'a mut Exporter,
    pub progress: &'a mut dyn FnMut(Duration, u64),
    pub output: &'a OutputArgs,
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
    /// How the run went.
    fn run_info(&mut self) -> &mut dyn RunInfo;
    /// Whether a stop threshold (`-s`, `-S`, `-i`) was hit: the run then exits with
    /// status 2, as rtla's do.
    fn stopped(&self) -> bool {
        false
    }
    /// Its causes per CPU, for `irqlens advise`; `None` if the capability names none.
    fn causes(&self) -> Option<Vec<irqlens_model::tune::CpuCause>> {
        None
    }
    /// The simulation's costs it measures, for `irqlens sim --calibrate`.
    fn costs(&self) -> Vec<irqlens_model::sim::MeasuredCost> {
        Vec::new()
    }
}

/// How a live run ended, for its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The duration ran out, or Ctrl-C/SIGTERM came: exit status 0.
    Normally,
    /// A stop threshold was hit: exit status 2, as rtla documents, so that a CI script
    /// can gate on it.
    ThresholdHit,
}

impl Ended {
    /// The process's exit status for this ending.
    pub fn exit_code(self) -> std::process::ExitCode {
        match self {
            Ended::Normally => std::process::ExitCode::SUCCESS,
            Ended::ThresholdHit => std::process::ExitCode::from(THRESHOLD_HIT_STATUS),
        }
    }
}

/// The exit status of a run whose stop threshold was hit (rtla's).
pub const THRESHOLD_HIT_STATUS: u8 = 2;

/// Runs `T` live with `options`, recording and showing it as `output` asks, then runs
/// the `--on-threshold` actions if a stop threshold ended it and the `--on-end` ones;
/// says whether a stop threshold ended it.
pub fn measure<T: Tool>(
    options: T::Options,
    output: &OutputArgs,
    stop_actions: &StopActions,
) -> Result<Ended> {
    let (result, closed) = run_live::<T>(options, output)?;
    // the result is shown before the recording's error is
    print(&result, output, T::TITLE)?;
    if let (Some(path), true, Ok(())) = (&output.record, output.default_record, &closed) {
        eprintln!(
            "irqlens: the run is recorded in {0} (irqlens report {0})",
            path.display()
        );
    }
    let ended = if result.stopped() {
        Ended::ThresholdHit
    } else {
        Ended::Normally
    };
    // after the results and the recording, which the actions may read (rtla runs them
    // once tracing stopped)
    if ended == Ended::ThresholdHit {
        perform("--on-threshold", &stop_actions.on_threshold, output);
    }
    perform("--on-end", &output.on_end, output);
    closed?;
    Ok(ended)
}

/// Runs `T` live with `options`, recording it as `output` asks: its result, and how the
/// recording was closed (an error there is shown after the result).
pub fn run_live<T: Tool>(
    options: T::Options,
    output: &OutputArgs,
) -> Result<(T::Result, Result<()>)> {
    let recorded = T::recorded(&options);
    // bound before any file is written: a port in use fails with nothing truncated
    let mut exporter = Exporter::start(output.prometheus_address()?, names)?;
    if let Some(address) = exporter.address().filter(|a| !a.ip().is_loopback()) {
        eprintln!(
            "irqlens: --prometheus {address} serves this machine's thread names, IRQ lines and \
             latencies to anyone who can reach it, without authentication (see docs/output.md)"
        );
    }
    let mut created = Vec::new();
    let mut tap =
        open_tap(output, &recorded, &mut created).inspect_err(|_| remove_created(&created))?;
    let show = T::shows_progress(&options, output);
    let started = with_progress(show, recorded.duration(), T::COUNTING, |progress| {
        let mut live = Live {
            tap: &mut tap,
            exporter: &mut exporter,
            progress,
            output,
        };
        T::run(options, &mut live)
    });
    let mut result = match started {
        Ok(result) => result,
        Err(err) => {
            drop(tap);
            remove_created(&created);
            return Err(err);
        }
    };
    drop(exporter);
    let info = result.run_info();
    info.common_mut().interrupted = interrupted();
    let closed = tap.finish(info.to_json());
    Ok((result, closed))
}

/// Runs `actions` in order; as rtla's, one that fails ends the list, which is said on
/// stderr (the run's exit status stays the run's).
fn perform(option: &str, actions: &[Action], output: &OutputArgs) {
    let _ = std::io::stdout().flush();
    for action in actions {
        if let Err(err) = perform_one(action, output) {
            eprintln!("irqlens: {option} {action}: {err:#}; the actions after it were not run");
            return;
        }
    }
}

fn perform_one(action: &Action, output: &OutputArgs) -> Result<()> {
    match action {
        Action::Shell(command) => {
            let mut shell = std::process::Command::new("sh");
            shell.arg("-c").arg(command);
            if output.json {
                // stdout is the JSON document's alone
                shell.stdout(std::io::stderr());
            }
            let status = shell.status().context("cannot start sh")?;
            if !status.success() {
                anyhow::bail!("the command failed ({status})");
            }
        }
        &Action::Signal { number, target } => {
            let pid = match target {
                SignalTarget::Pid(pid) => pid as libc::pid_t,
                // SAFETY: getppid only reads the calling process's parent id.
                SignalTarget::Parent => unsafe { libc::getppid() },
            };
            // SAFETY: kill only sends a signal; the pid and number were checked when parsed.
            if unsafe { libc::kill(pid, number) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("cannot send signal {number} to process {pid}"));
            }
        }
    }
    Ok(())
}

/// Re-analyzes a recording made by any capability with the options it was made with.
pub fn replay(path: &Path) -> Result<(Reader, Box<dyn Outcome>)> {
    let mut reader = Reader::open(path)?;
    let header = reader.header();
    let options = match &header.options {
        Some(options) => options.clone(),
        None => crate::resolve::recorded_options(&header.argv, header.cpus.clone())
            .with_context(|| reader.name().to_owned())?,
    };
    // a file can say anything: its options are held to the command line's bounds
    options
        .check()
        .map_err(|e| anyhow::anyhow!("{}: its options: {e}", reader.name()))?;
    let outcome: Box<dyn Outcome> = match options {
        RunOptions::Noise(o) => Box::new(noise::NoiseTool::replay(o, &mut reader)?),
        RunOptions::Bh(o) => Box::new(bh::BhTool::replay(o, &mut reader)?),
        RunOptions::Wakeup(o) => Box::new(wakeup::WakeupTool::replay(o, &mut reader)?),
        RunOptions::Account(o) => Box::new(account::AccountTool::replay(o, &mut reader)?),
    };
    Ok((reader, outcome))
}

/// The sinks the user asked for on the command line; none is a tap that does nothing.
/// Made before the run, so a file that cannot be written fails before anything loads.
/// `created` gets each file made, so that a run that fails to start can take them back.
fn open_tap(output: &OutputArgs, options: &RunOptions, created: &mut Vec<PathBuf>) -> Result<Tap> {
    if let Some(path) = &output.html {
        // the page is written at the end: a path that cannot be is refused before the run
        output::create(path).with_context(|| format!("--html {}", path.display()))?;
        created.push(path.clone());
    }
    let mut tap = Tap::default();
    if output.record.is_none() && output.perfetto.is_none() {
        return Ok(tap);
    }
    let header = recording_header(options);
    if let Some(path) = &output.perfetto {
        let symbols = system::kernel_symbols();
        tap.add(Box::new(TraceWriter::create(path, &header, symbols)?));
        created.push(path.clone());
    }
    if let Some(path) = &output.record {
        tap.add(Box::new(Recorder::create(path, header)?));
        created.push(path.clone());
    }
    Ok(tap)
}

/// Removes the files a run made before it failed: no empty page, no recording with a
/// header only.
fn remove_created(created: &[PathBuf]) {
    for path in created {
        let _ = std::fs::remove_file(path);
    }
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
        let mut out = std::io::BufWriter::new(output::create(path)?);
        page.write(&mut out)?;
        out.flush()
    };
    write().with_context(|| format!("cannot write the HTML report {}", path.display()))
}

/// The `--json` document of a measurement: the envelope every command shares (tool,
/// version, command, kernel, CPUs, run), then the capability's `tables`.
pub fn measurement_json(
    options: &RunOptions,
    kernel: &str,
    run: &impl Serialize,
    tables: impl Serialize,
) -> serde_json::Value {
    let document = Measurement {
        header: Header::new(options.capability()),
        kernel: kernel.into(),
        cpus: options.cpus().clone(),
        run,
        recording: None,
        tables,
    };
    serde_json::to_value(document).expect("a document of plain data")
}

/// Writes `document` as the whole of stdout.
pub fn print_json(out: &mut impl Write, document: &serde_json::Value) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, document)?;
    writeln!(out)?;
    Ok(())
}

/// Runs `measure`, which reports (elapsed, count) as it goes, with a progress line on
/// stderr when `show`, cleared at the end.
fn with_progress<T>(
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

/// Shows a live run's result: on stdout, as JSON or as tables, and as an HTML report if
/// the user asked for one.
fn print(outcome: &dyn Outcome, output: &OutputArgs, title: &str) -> Result<()> {
    if let Some(path) = &output.html {
        let mut page = Page::new(title, &system::kernel_release());
        outcome.html(&mut page, title);
        write_html(&page, path)?;
    }
    let mut out = std::io::stdout().lock();
    if output.json {
        print_json(&mut out, &outcome.json())
    } else {
        outcome.write_text(&mut out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_hit_exits_with_rtlas_status_2() {
        assert_eq!(Ended::Normally.exit_code(), std::process::ExitCode::SUCCESS);
        assert_eq!(
            Ended::ThresholdHit.exit_code(),
            std::process::ExitCode::from(2)
        );
    }
}
