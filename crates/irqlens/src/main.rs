// cli's doc comments are clap's --help text, not rustdoc: `[::]:9464` there is an
// address, not a link.
#[allow(rustdoc::broken_intra_doc_links)]
mod cli;
mod command;
mod examples;
mod generate;
mod parse;
mod resolve;

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Result;

use crate::cli::{Cli, Command, StopActions};
use command::account::AccountTool;
use command::bh::BhTool;
use command::noise::NoiseTool;
use command::wakeup::WakeupTool;
use command::{Ended, INTERRUPTED, STOP};

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    match run(cli) {
        Ok(ended) => ended.exit_code(),
        // a reader that has seen enough (`| head`) is no error
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("irqlens: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--help` and `--version` exit 0; `irqlens` alone shows the help and exits 1; any other
/// usage error is one line and exits 1, as every error does: 2 is kept for a stop
/// threshold hit (rtla's statuses), so that a script's `[ $? -eq 2 ]` never reads a typo
/// as a latency spike.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            ExitCode::FAILURE
        }
        _ => {
            // clap's message runs to the first blank line (a list of missing or
            // conflicting options may follow its first line); its usage and tips after
            // that are left to --help
            let rendered = err.render().to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|line| !line.trim().is_empty())
                .map(str::trim)
                .collect();
            eprintln!(
                "irqlens: {}",
                message.join(" ").trim_start_matches("error: ")
            );
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Runs the command; a live run says how it ended (a stop threshold hit exits with 2).
fn run(cli: Cli) -> Result<Ended> {
    let Some(command) = cli.command else {
        let Some(kind) = cli.generate else {
            // only `irqlens` with nothing else, which clap answers with the help
            anyhow::bail!("a command is needed: see irqlens --help");
        };
        generate::write(kind, cli.man_dir.as_deref(), &mut std::io::stdout().lock())?;
        return Ok(Ended::Normally);
    };
    // report and compare only read files and change nothing: Ctrl-C and SIGTERM end them
    // as they end any reader, even blocked in a read from a FIFO or a pipe. Every other
    // command stops at the flag, to put back what it changed and print what it has.
    if !matches!(command, Command::Report(_) | Command::Compare(_)) {
        ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::Relaxed);
            STOP.store(true, Ordering::Relaxed);
        })?;
    }
    match command {
        Command::Noise(command) => {
            let (mut args, hist) = command.split()?;
            args.output
                .record_by_default(args.auto, "irqlens-noise.jsonl.gz");
            let options = args.options(hist)?;
            command::measure::<NoiseTool>(options, &args.output, &args.stop_actions)
        }
        Command::Bh(command) => {
            let (args, hist) = command.split()?;
            command::measure::<BhTool>(args.options(hist)?, &args.output, &StopActions::default())
        }
        Command::Wakeup(command) => {
            let (mut args, hist) = command.split()?;
            args.output
                .record_by_default(args.auto, "irqlens-wakeup.jsonl.gz");
            let options = args.options(hist)?;
            command::measure::<WakeupTool>(options, &args.output, &args.stop_actions)
        }
        Command::Account(args) => {
            command::measure::<AccountTool>(args.options()?, &args.output, &StopActions::default())
        }
        Command::Report(args) => command::report::run(&args).map(|()| Ended::Normally),
        Command::Compare(args) => command::compare::run(&args).map(|()| Ended::Normally),
        Command::Advise(args) => command::advise::run(&args).map(|()| Ended::Normally),
        Command::Tune(args) => command::tune::run(&args).map(|()| Ended::Normally),
        Command::Steer(args) => command::steer::run(&args).map(|()| Ended::Normally),
        Command::Trial(command) => match &command.load {
            cli::TrialLoad::Net(args) => command::trial::run(args).map(|()| Ended::Normally),
        },
        Command::Sim(args) => command::sim::run(&args).map(|()| Ended::Normally),
    }
}
