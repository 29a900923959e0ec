//! `irqlens --generate KIND`: the man page and the shell completion scripts, generated
//! from the command line itself (as ripgrep's `rg --generate`), so they cannot drift from
//! it. The README's set-up installs them.

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, Generate};

/// Writes what `kind` names to `out`.
pub fn write(kind: Generate, out: &mut dyn Write) -> Result<()> {
    let mut command = Cli::command();
    let shell = match kind {
        Generate::Man => {
            clap_mangen::Man::new(command).render(out)?;
            return Ok(());
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    fn generated(kind: Generate) -> String {
        let mut out = Vec::new();
        write(kind, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Every kind is generated and names every subcommand (and the man page its options).
    #[test]
    fn every_kind_names_every_subcommand() {
        let subcommands: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        assert!(subcommands.len() >= 6, "{subcommands:?}");
        for kind in Generate::value_variants() {
            let text = generated(*kind);
            for name in &subcommands {
                assert!(text.contains(name.as_str()), "{kind:?} lacks {name}");
            }
        }
        let man = generated(Generate::Man);
        assert!(
            man.starts_with(".ie") || man.contains(".TH irqlens 1"),
            "{man}"
        );
        assert!(man.contains("\\-\\-generate"), "{man}");
        let bash = generated(Generate::CompleteBash);
        assert!(bash.contains("complete -F"), "{bash}");
        // the options of a subcommand complete too
        assert!(bash.contains("--stop-total"), "{bash}");
    }
}
