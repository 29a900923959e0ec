use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use irqlens::cli::{
    AccountArgs, BhCommand, BhMode, Cli, Command, NoiseCommand, NoiseMode, WakeupCommand,
    WakeupModeCommand,
};
use irqlens::collect::{
    account as account_run, bh as bh_run, noise as noise_run, wakeup as wakeup_run,
};
use irqlens::present::{
    self, account as show_account, bh as show_bh, noise as show, wakeup as show_wakeup,
};
use irqlens::probe;
use irqlens::system;

/// Set by Ctrl-C/SIGTERM (and by the run itself when it ends): every loop checks it.
static STOP: AtomicBool = AtomicBool::new(false);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("irqlens: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::Relaxed);
        STOP.store(true, Ordering::Relaxed);
    })?;
    match cli.command {
        Command::Noise(command) => noise(*command),
        Command::Bh(command) => bh(command),
        Command::Wakeup(command) => wakeup(*command),
        Command::Account(args) => account(args),
    }
}

fn noise(command: NoiseCommand) -> Result<()> {
    let (args, hist) = match command.mode {
        None => (command.args, None),
        Some(NoiseMode::Top(args)) => (args, None),
        Some(NoiseMode::Hist(hist)) => (hist.noise.clone(), Some(hist)),
    };
    let hist_options = hist.as_ref().map(|h| h.hist.clone()).unwrap_or_default();
    let options = args.options(&hist_options)?;
    let live =
        !args.output.quiet && !args.output.json && hist.is_none() && present::live_terminal();
    // without a live table, a long run still shows it is alive (on a terminal only)
    let progress = !live && !args.output.quiet && present::progress_terminal();

    let outcome = noise_run::run(&options, &STOP, |analysis, elapsed| {
        if live {
            let mut out = io::stdout().lock();
            // redraw in place, as rtla's top does
            let _ = write!(out, "\x1b[H\x1b[2J");
            let _ = show::write_summary(&mut out, analysis, elapsed.as_nanos() as u64);
            let _ = out.flush();
        } else if progress {
            present::write_progress(
                elapsed,
                options.duration,
                analysis.summaries().map(|s| s.samples).sum(),
                "noise samples",
            );
        }
    })?;
    if progress {
        present::clear_progress();
    }
    let mut info = outcome.info;
    info.interrupted = INTERRUPTED.load(Ordering::Relaxed);
    let analysis = &outcome.analysis;
    let irq_names = system::irq_line_names();
    if let Some(path) = &args.output.html {
        write_html(path, |page| {
            page.noise("irqlens noise", analysis, &info, &irq_names)
        })?;
    }

    let mut out = io::stdout().lock();
    if args.output.json {
        return print_json(
            &mut out,
            &show::to_json(analysis, &info, &options, &irq_names),
        );
    }
    if live {
        write!(out, "\x1b[H\x1b[2J")?;
    }
    match &hist {
        Some(hist) => show::write_histogram(&mut out, analysis, &hist.hist)?,
        None => {
            show::write_summary(&mut out, analysis, info.elapsed_ns)?;
            show::write_causes(&mut out, analysis, &irq_names, args.causes)?;
        }
    }
    if let Some(stop) = analysis.stop_report() {
        show::write_stop(&mut out, stop, &irq_names)?;
    }
    show::write_run_info(&mut out, analysis, &info)?;
    Ok(())
}

fn bh(command: BhCommand) -> Result<()> {
    let (args, hist) = match command.mode {
        None => (command.args, None),
        Some(BhMode::Top(args)) => (args, None),
        Some(BhMode::Hist(hist)) => (hist.bh.clone(), Some(hist.hist)),
    };
    let options = args.options(&hist.clone().unwrap_or_default())?;
    let outcome = with_progress(
        args.output.progress(),
        options.duration,
        "bottom halves",
        |show| {
            bh_run::run(&options, &STOP, |stats, elapsed| {
                show(elapsed, stats.samples())
            })
        },
    )?;
    let mut info = outcome.info;
    info.interrupted = INTERRUPTED.load(Ordering::Relaxed);
    let stats = &outcome.stats;
    let names = present::Names::load();
    let not_observable = probe::checkpoint::not_observable();
    if let Some(path) = &args.output.html {
        write_html(path, |page| page.bh("irqlens bh", stats, &info, &names))?;
    }

    let mut out = io::stdout().lock();
    if args.output.json {
        let document = show_bh::to_json(stats, &info, &options, &names, &not_observable);
        return print_json(&mut out, &document);
    }
    match &hist {
        Some(hist) => show_bh::write_histogram(&mut out, stats, hist)?,
        None => {
            show_bh::write_table(&mut out, stats, &names)?;
            show_bh::write_causes(&mut out, stats, &names, args.causes)?;
            show_bh::write_worst(&mut out, stats, &names)?;
        }
    }
    show_bh::write_run_info(&mut out, stats, &info, &options, &not_observable)?;
    Ok(())
}

fn wakeup(command: WakeupCommand) -> Result<()> {
    let (args, hist) = match command.mode {
        None => (command.args, None),
        Some(WakeupModeCommand::Top(args)) => (args, None),
        Some(WakeupModeCommand::Hist(hist)) => (hist.wakeup.clone(), Some(hist.hist)),
    };
    let options = args.options(&hist.clone().unwrap_or_default())?;
    let outcome = with_progress(
        args.output.progress(),
        options.duration,
        "wakeups",
        |show| {
            wakeup_run::run(&options, &STOP, |stats, elapsed| {
                show(elapsed, stats.activations())
            })
        },
    )?;
    let mut info = outcome.info;
    info.interrupted = INTERRUPTED.load(Ordering::Relaxed);
    let stats = &outcome.stats;
    let names = present::Names::load();
    if let Some(path) = &args.output.html {
        write_html(path, |page| {
            page.wakeup("irqlens wakeup", stats, &info, &names)
        })?;
    }

    let mut out = io::stdout().lock();
    if args.output.json {
        return print_json(
            &mut out,
            &show_wakeup::to_json(stats, &info, &options, &names),
        );
    }
    match &hist {
        Some(hist) => show_wakeup::write_histogram(&mut out, stats, hist)?,
        None => {
            show_wakeup::write_summary(&mut out, stats, &options, info.elapsed_ns)?;
            show_wakeup::write_causes(&mut out, stats, &names, args.causes)?;
            show_wakeup::write_chains(&mut out, stats, &names)?;
            show_wakeup::write_cdf(&mut out, stats)?;
            show_wakeup::write_worst(&mut out, stats, &names)?;
        }
    }
    if let Some(stop) = &stats.stop {
        show_wakeup::write_stop(&mut out, stop, &names)?;
    }
    show_wakeup::write_run_info(&mut out, &info)?;
    Ok(())
}

fn account(args: AccountArgs) -> Result<()> {
    let options = args.options()?;
    let irq_names = system::irq_line_names();
    let view = show_account::View {
        by_thread: args.threads,
        top: args.top,
        irq_names: &irq_names,
    };
    let mut periods = Vec::new();
    let (whole, mut info) = with_progress(
        args.output.progress(),
        options.duration,
        "checkpoints",
        |show| {
            account_run::run(&options, &STOP, show, |period| {
                if args.output.json {
                    periods.push(show_account::period_json(period, &view));
                } else {
                    // a report per interval, as it comes
                    let mut out = io::stdout().lock();
                    let _ = show_account::write_period(&mut out, period, &options, &view)
                        .and_then(|()| writeln!(out));
                }
            })
        },
    )?;
    info.interrupted = INTERRUPTED.load(Ordering::Relaxed);
    if let Some(path) = &args.output.html {
        write_html(path, |page| {
            page.account("irqlens account", &whole, &info, &view)
        })?;
    }

    let mut out = io::stdout().lock();
    if args.output.json {
        let document = show_account::to_json(&whole, &periods, &info, &options, &view);
        return print_json(&mut out, &document);
    }
    show_account::write_period(&mut out, &whole, &options, &view)?;
    show_account::write_run_info(&mut out, &info)?;
    Ok(())
}

/// Writes the HTML report that `fill` makes to `path`.
fn write_html(path: &Path, fill: impl FnOnce(&mut present::html::Page)) -> Result<()> {
    let mut page = present::html::Page::new("irqlens report");
    fill(&mut page);
    let write = || -> io::Result<()> {
        let mut file = io::BufWriter::new(std::fs::File::create(path)?);
        page.write(&mut file)?;
        file.flush()
    };
    write().with_context(|| format!("cannot write the HTML report {}", path.display()))
}

/// Writes `document` as the whole of stdout.
fn print_json(out: &mut impl Write, document: &serde_json::Value) -> Result<()> {
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
            present::write_progress(elapsed, duration, count, what);
        }
    };
    let result = measure(&mut report);
    if show {
        present::clear_progress();
    }
    result
}
