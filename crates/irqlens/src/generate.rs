//! `irqlens --generate KIND`: the man pages and the shell completion scripts, generated
//! from the command line itself (as ripgrep's `rg --generate`), so they cannot drift from
//! it. scripts/install installs them.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap_complete::Shell;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use crate::cli::Generate;
use crate::examples;

/// Writes what `kind` names to `out`; `man-pages` writes its files into `directory`.
pub fn write(kind: Generate, directory: Option<&Path>, out: &mut dyn Write) -> Result<()> {
    let mut command = crate::cli::command();
    let shell = match kind {
        Generate::Man => return Ok(page(&built(command), &[], out)?),
        Generate::ManPages => {
            let directory = directory.context("--generate man-pages needs --man-dir DIR")?;
            return write_pages(&built(command), directory);
        }
        Generate::CompleteBash => Shell::Bash,
        Generate::CompleteZsh => Shell::Zsh,
        Generate::CompleteFish => Shell::Fish,
        Generate::CompleteElvish => Shell::Elvish,
        Generate::CompletePowershell => Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut command, "irqlens", out);
    Ok(())
}

/// The command with its subcommands' full names (`irqlens noise`) filled in.
fn built(command: clap::Command) -> clap::Command {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    command
}

/// irqlens(1) and a page for every subcommand, irqlens-noise(1) to irqlens-trial-net(1),
/// as rtla has one per tool.
fn write_pages(command: &clap::Command, directory: &Path) -> Result<()> {
    std::fs::create_dir_all(directory)
        .with_context(|| format!("cannot create {}", directory.display()))?;
    let mut pages = Vec::new();
    collect(command, &[], &mut pages);
    for (words, subcommand) in pages {
        let path = directory.join(format!("{}.1", page_name(&words)));
        let mut file = std::fs::File::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        page(subcommand, &words, &mut file)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Every command below `command` with the words that name it (none for irqlens itself).
fn collect<'a>(
    command: &'a clap::Command,
    words: &[&'a str],
    pages: &mut Vec<(Vec<&'a str>, &'a clap::Command)>,
) {
    pages.push((words.to_vec(), command));
    for subcommand in command.get_subcommands() {
        let mut named = words.to_vec();
        named.push(subcommand.get_name());
        collect(subcommand, &named, pages);
    }
}

/// `irqlens`, `irqlens-noise`, `irqlens-trial-net`.
fn page_name(words: &[&str]) -> String {
    std::iter::once("irqlens")
        .chain(words.iter().copied())
        .collect::<Vec<_>>()
        .join("-")
}

/// One man page: clap's sections for the command (its examples are left to EXAMPLES
/// rather than clap's EXTRA), then EXAMPLES, EXIT STATUS and SEE ALSO.
fn page(command: &clap::Command, words: &[&str], out: &mut dyn Write) -> std::io::Result<()> {
    let name = page_name(words);
    let man = Man::new(
        command
            .clone()
            .name(name.clone())
            .display_name(name.clone())
            .version(irqlens_model::run::VERSION),
    );
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if command.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    let mut roff = Roff::default();
    let examples = examples::of(&words.join(" "));
    if !examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for example in examples {
            roff.control("TP", []);
            roff.text([bold(example.command)]);
            roff.text([roman(example.answers)]);
        }
    }
    exit_status(&mut roff, command);
    see_also(&mut roff, command, words);
    roff.to_writer(out)?;
    man.render_version_section(out)
}

/// rtla's statuses: 2 only where the command has a stop threshold.
fn exit_status(roff: &mut Roff, command: &clap::Command) {
    let has_threshold = command
        .get_arguments()
        .any(|arg| arg.get_long() == Some("stop"));
    roff.control("SH", ["EXIT STATUS"]);
    let mut status = |code: &str, meaning: &str| {
        roff.control("TP", []);
        roff.text([bold(code)]);
        roff.text([roman(meaning)]);
    };
    status(
        "0",
        "It ran to its end: its duration ran out, or Ctrl-C or SIGTERM stopped it (what it measured is shown).",
    );
    status(
        "1",
        "An error: a usage error or a bad input (one line on standard error), too few privileges, or a failure during the run. Whatever it changed on the machine is put back.",
    );
    if has_threshold {
        status(
            "2",
            "A stop threshold was hit (-s, -S, -i, -T or -a, as rtla's): the results are shown and --on-threshold actions are run.",
        );
    }
}

/// The parent page and the subcommands' pages.
fn see_also(roff: &mut Roff, command: &clap::Command, words: &[&str]) {
    let mut related: Vec<String> = Vec::new();
    if !words.is_empty() {
        related.push(page_name(&words[..words.len() - 1]));
    }
    for subcommand in command.get_subcommands() {
        let mut named = words.to_vec();
        named.push(subcommand.get_name());
        related.push(page_name(&named));
    }
    if related.is_empty() {
        return;
    }
    roff.control("SH", ["SEE ALSO"]);
    let mut line = Vec::new();
    for (index, name) in related.iter().enumerate() {
        if index > 0 {
            line.push(roman(", "));
        }
        line.push(italic(name.as_str()));
        line.push(roman("(1)"));
    }
    roff.text(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    fn generated(kind: Generate) -> String {
        let mut out = Vec::new();
        write(kind, None, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Every completion script and the man page name every subcommand.
    #[test]
    fn every_kind_names_every_subcommand() {
        let subcommands: Vec<String> = crate::cli::command()
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        assert!(subcommands.len() >= 6, "{subcommands:?}");
        for kind in Generate::value_variants() {
            if *kind == Generate::ManPages {
                continue;
            }
            let text = generated(*kind);
            for name in &subcommands {
                assert!(text.contains(name.as_str()), "{kind:?} lacks {name}");
            }
        }
        let man = generated(Generate::Man);
        assert!(man.contains(".TH irqlens 1"), "{man}");
        assert!(man.contains("\\-\\-generate"), "{man}");
        assert!(man.contains("irqlens\\-noise"), "SEE ALSO: {man}");
        let bash = generated(Generate::CompleteBash);
        assert!(bash.contains("complete -F"), "{bash}");
        // the options of a subcommand complete too
        assert!(bash.contains("--stop-total"), "{bash}");
    }

    /// A page per subcommand, each with its options, examples and exit statuses; 2 only
    /// where a stop threshold exists.
    #[test]
    fn each_subcommand_has_its_page() {
        let directory = std::env::temp_dir().join(format!("irqlens-man-{}", std::process::id()));
        write(Generate::ManPages, Some(&directory), &mut Vec::new()).unwrap();
        let read = |name: &str| {
            std::fs::read_to_string(directory.join(format!("{name}.1")))
                .unwrap_or_else(|err| panic!("{name}.1: {err}"))
        };
        for subcommand in crate::cli::command().get_subcommands() {
            let name = format!("irqlens-{}", subcommand.get_name());
            let page = read(&name);
            assert!(page.contains(&format!(".TH {name} 1")), "{page}");
            assert!(page.contains(".SH EXAMPLES"), "{name}");
            assert!(page.contains(".SH \"EXIT STATUS\""), "{name}: {page}");
        }
        let noise = read("irqlens-noise");
        assert!(noise.contains("\\-\\-stop\\-total"), "{noise}");
        assert!(noise.contains("stop threshold was hit"), "{noise}");
        assert!(!read("irqlens-report").contains("stop threshold was hit"));
        assert!(read("irqlens-trial-net").contains("\\-\\-rates"));
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
