//! `irqlens --generate`: the man page and the completion scripts come out of the binary
//! and name every subcommand. No root needed.

use crate::common::{assert_fails_with, irqlens_ok};

const SUBCOMMANDS: [&str; 6] = ["noise", "bh", "wakeup", "account", "report", "compare"];

#[test]
fn man_page_and_completions_name_every_subcommand() {
    for kind in ["man", "complete-bash", "complete-zsh", "complete-fish"] {
        let output = irqlens_ok(&["--generate", kind]);
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.len() > 500, "--generate {kind}: {text}");
        for name in SUBCOMMANDS {
            assert!(text.contains(name), "--generate {kind} lacks {name}");
        }
    }
    let man = irqlens_ok(&["--generate", "man"]);
    assert!(String::from_utf8_lossy(&man.stdout).contains(".TH irqlens 1"));
}

#[test]
fn generate_stands_alone() {
    assert_fails_with(&["--generate", "man", "noise"], "cannot be used with");
    assert_fails_with(&["--generate", "nroff"], "invalid value 'nroff'");
}
