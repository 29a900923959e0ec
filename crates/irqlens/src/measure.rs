//! The four measuring capabilities (noise, bh, wakeup, account) as one driver tool: a
//! capability implements [`Measure`] once, and [`Measurement`] runs it live through the
//! driver while [`replay`] replays its recordings, both ending in the same [`Outcome`].

pub mod account;
pub mod bh;
pub mod noise;
pub mod wakeup;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cli::{OutputArgs, ShowArgs};
use crate::driver::{self, Actions, Done, Needs, Run};
use crate::parse::Action;
use irqlens_collect::system;
use irqlens_collect::tap::{Tap, recording_header};
use irqlens_model::bounds::Check;
use irqlens_model::hist::HistOptions;
use irqlens_model::kernel::{KernelSymbols, parse_irq_line_names};
use irqlens_model::options::RunOptions;
use irqlens_model::run::{Header, Measurement as MeasurementDocument, RunInfo};
use irqlens_model::workload::CgroupId;
use irqlens_present::document::Document;
use irqlens_present::html::Page;
use irqlens_present::perfetto::TraceWriter;
use irqlens_present::prometheus::Exporter;
use irqlens_present::{self, Names};
use irqlens_record::{End, Reader, Recorder};

/// What a capability implements once: how it runs live, how it replays a recording, and
/// the result both give.
pub trait Measure {
    /// The capability's name (`noise`), as the driver's errors say it.
    const NAME: &'static str;
    /// The capability's resolved options.
    type Options;
    /// Its result, shown the same way live and replayed.
    type Result: Outcome + 'static;
    /// What its progress line counts.
    const COUNTING: &'static str;

    /// The options as a recording keeps them.
    fn recorded(options: &Self::Options) -> RunOptions;
    /// What a live run needs of the machine.
    fn needs(_options: &Self::Options) -> Needs {
        Needs::Tracing
    }
    /// Whether the live run shows a progress line on stderr.
    fn shows_progress(_options: &Self::Options, output: &OutputArgs) -> bool {
        output.progress()
    }
    /// Measures until the duration ends, a stop condition hits or
    /// [`STOP`](crate::driver::STOP) is set.
    fn run(options: Self::Options, live: &mut Live<'_>) -> Result<Self::Result>;
    /// Re-analyzes a recording made with `options`.
    fn replay(options: Self::Options, reader: &mut Reader) -> Result<Self::Result>;
}

/// What a live run hands its capability: where its inputs go, its progress line, the
/// output options it shows with.
pub struct Live<'a> {
    pub tap: &'a mut Tap,
    /// The `--prometheus` endpoint (with none asked for, one that does nothing).
    pub exporter: &'a mut Exporter,
    pub progress: &'a mut dyn FnMut(Duration, u64),
    pub output: &'a OutputArgs,
}

/// A measurement's result, live or replayed: a document (its text, JSON, HTML section
/// and whether a stop threshold ended it), and what other commands read from it.
pub trait Outcome: Document {
    /// The numbers `compare` sets side by side.
    fn figures(&self) -> Vec<irqlens_present::compare::Figure>;
    /// How the run went.
    fn run_info(&mut self) -> &mut dyn RunInfo;
    /// The kernel release it was measured on.
    fn kernel(&self) -> &str;
    /// Its causes per CPU, for `irqlens advise`; `None` if the capability names none.
    fn causes(&self) -> Option<Vec<irqlens_model::tune::CpuCause>> {
        None
    }
    /// The figures `irqlens check` judges against its thresholds.
    fn check_figures(&self) -> Vec<irqlens_model::check::Figure> {
        Vec::new()
    }
    /// The simulation's costs it measures, for `irqlens sim --calibrate`.
    fn costs(&self) -> Vec<irqlens_model::sim::MeasuredCost> {
        Vec::new()
    }
}

/// A live measurement, resolved from its command line: the driver's tool for every
/// capability.
pub struct Measurement<M: Measure> {
    /// The capability's options.
    pub options: M::Options,
    /// How it records and shows its result.
    pub output: OutputArgs,
    /// `--on-threshold` (noise and wakeup have stop thresholds).
    pub on_threshold: Vec<Action>,
}

impl<M: Measure> driver::Tool for Measurement<M> {
    const NAME: &'static str = M::NAME;

    fn show(&self) -> &ShowArgs {
        &self.output.show
    }

    fn needs(&self) -> Needs {
        M::needs(&self.options)
    }

    fn measures(&self) -> Option<driver::Measures> {
        Some(driver::Measures {
            cpus: M::recorded(&self.options).cpus().clone(),
            alone: false,
        })
    }

    fn html(&self) -> Option<&Path> {
        self.output.page.html.as_deref()
    }

    fn files(&self) -> Vec<(&'static str, &Path)> {
        let record = self.output.record.as_deref().map(|path| ("--record", path));
        let perfetto = (self.output.perfetto.as_deref()).map(|path| ("--perfetto", path));
        record.into_iter().chain(perfetto).collect()
    }

    fn actions(&self) -> Actions {
        Actions {
            on_end: self.output.end.on_end.clone(),
            on_threshold: self.on_threshold.clone(),
        }
    }

    fn execute(self, _run: &mut Run) -> Result<Done> {
        let (result, closed) = run_live::<M>(self.options, &self.output)?;
        let mut done = Done::new(result);
        if let (Some(path), true, Ok(())) =
            (&self.output.record, self.output.default_record, &closed)
        {
            done = done.note(format!(
                "the run is recorded in {0} (irqlens report {0})",
                path.display()
            ));
        }
        Ok(done.failed_after(closed.err()))
    }
}

/// Runs `M` live with `options`, recording it as `output` asks: its result, and how the
/// recording was closed (an error there is shown after the result).
pub fn run_live<M: Measure>(
    options: M::Options,
    output: &OutputArgs,
) -> Result<(M::Result, Result<()>)> {
    let recorded = M::recorded(&options);
    let mut exporter = Exporter::start(output.prometheus_address()?, || names([]))?;
    if let Some(address) = exporter.address().filter(|a| !a.ip().is_loopback()) {
        eprintln!(
            "irqlens: --prometheus {address} serves this machine's thread names, IRQ lines and \
             latencies to anyone who can reach it, without authentication (see docs/output.md)"
        );
    }
    let mut tap = open_tap(output, &recorded)?;
    let show = M::shows_progress(&options, output);
    let mut result = with_progress(show, recorded.duration(), M::COUNTING, |progress| {
        let mut live = Live {
            tap: &mut tap,
            exporter: &mut exporter,
            progress,
            output,
        };
        M::run(options, &mut live)
    })?;
    drop(exporter);
    let info = result.run_info();
    info.common_mut().interrupted = driver::interrupted();
    let closed = tap.finish(info.to_json());
    Ok((result, closed))
}

/// A run of `M` another command makes for its own figures (advise -c, check): live, its
/// recording closed, and `STOP` (which ended it) clear again, so that a run after it
/// starts as any run does.
pub fn run_for_figures<M: Measure>(options: M::Options, output: &OutputArgs) -> Result<M::Result> {
    let (result, closed) = run_live::<M>(options, output)?;
    closed?;
    driver::STOP.store(false, std::sync::atomic::Ordering::Relaxed);
    Ok(result)
}

/// Re-analyzes a recording made by any capability with the options it was made with.
pub fn replay(path: &Path) -> Result<(Reader, Box<dyn Outcome>)> {
    replay_from(Reader::open(path)?)
}

/// [`replay`] of a recording already opened (its header read).
pub fn replay_from(mut reader: Reader) -> Result<(Reader, Box<dyn Outcome>)> {
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

/// The sinks the user asked for on the command line (the driver made their files before
/// the run); none is a tap that does nothing.
fn open_tap(output: &OutputArgs, options: &RunOptions) -> Result<Tap> {
    let mut tap = Tap::default();
    if output.record.is_none() && output.perfetto.is_none() {
        return Ok(tap);
    }
    let header = recording_header(options);
    if let Some(path) = &output.perfetto {
        let symbols = system::kernel_symbols();
        tap.add(Box::new(TraceWriter::create(path, &header, symbols)?));
    }
    if let Some(path) = &output.record {
        tap.add(Box::new(Recorder::create(path, header)?));
    }
    Ok(tap)
}

/// How this machine names IRQ lines and kernel functions (for a live run).
pub fn names(cgroups: impl IntoIterator<Item = CgroupId>) -> Names {
    Names {
        symbols: system::kernel_symbols(),
        irqs: system::irq_line_names(),
        cgroups: irqlens_collect::cgroup::names_now(cgroups),
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
        cgroups: end.cgroups.clone(),
    }
}

/// The `--json` document of a measurement: the envelope every command shares (tool,
/// version, command, kernel, CPUs, run), then the capability's `tables`.
pub fn measurement_json(
    options: &RunOptions,
    kernel: &str,
    run: &impl Serialize,
    tables: impl Serialize,
) -> serde_json::Value {
    irqlens_present::document::to_json(&MeasurementDocument {
        header: Header::new(options.capability()),
        kernel: kernel.into(),
        cpus: options.cpus().clone(),
        run,
        recording: None,
        tables,
    })
}

/// Whether a measurement's text is data only: a histogram without its header lines
/// (`hist --no-header`, for `> counts.txt`).
pub fn data_only(hist: Option<&HistOptions>) -> bool {
    hist.is_some_and(|hist| hist.no_header)
}

/// A live run's HTML page: its section alone under the capability's title.
pub fn page<M: Measure>(outcome: &M::Result) -> Page {
    let title = format!("irqlens {}", M::NAME);
    irqlens_present::document::page_of(outcome, &title, outcome.kernel())
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
