// cli's doc comments are clap's --help text, not rustdoc: `[::]:9464` there is an
// address, not a link.
#[allow(rustdoc::broken_intra_doc_links)]
mod cli;
mod command;
mod driver;
mod examples;
mod generate;
mod measure;
mod parse;
mod resolve;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command, TrialLoad};
use crate::driver::{Ended, run_tool};

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
            // an error can quote a name from the machine or a recording
            let message = irqlens_present::terminal::printable(format!("{err:#}"));
            eprintln!("irqlens: {message}");
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

/// Resolves the command line into its tool and runs it through the driver; says how the
/// run ended (a stop threshold hit exits with 2).
fn run(cli: Cli) -> Result<Ended> {
    let Some(command) = cli.command else {
        let Some(kind) = cli.generate else {
            // only `irqlens` with nothing else, which clap answers with the help
            anyhow::bail!("a command is needed: see irqlens --help");
        };
        generate::write(kind, cli.man_dir.as_deref(), &mut std::io::stdout().lock())?;
        return Ok(Ended::Normally);
    };
    match command {
        Command::Noise(command) => run_tool(command.resolve()?),
        Command::Bh(command) => run_tool(command.resolve()?),
        Command::Wakeup(command) => run_tool(command.resolve()?),
        Command::Account(args) => run_tool(args.resolve()?),
        Command::Report(args) => run_tool(args),
        Command::Compare(args) => run_tool(args),
        Command::Advise(args) => run_tool(*args),
        Command::Check(args) => run_tool(args.resolve()?),
        Command::Tune(args) => run_tool(*args),
        Command::Steer(args) => run_tool(args.resolve()?),
        Command::Trial(command) => match command.load {
            TrialLoad::Net(args) => run_tool(args),
        },
        Command::Sim(args) => run_tool(args),
        Command::Agent(args) => run_tool(args.resolve()?),
    }
}
