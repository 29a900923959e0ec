//! A 100-column terminal: with the width forced (`COLUMNS`, as a terminal's would be), no
//! line of the text is wider; without it, the same runs keep lines wider than that (the
//! expected files of the other tests hold their full widths).

use std::process::Command;

use crate::common::{binary, fixture, irqlens_ok};

const WIDTH: usize = 100;

/// The stdout of irqlens `args` in a `columns`-wide terminal.
fn text_within(args: &[&str], columns: usize) -> String {
    let output = Command::new(binary())
        .args(args)
        .env("COLUMNS", columns.to_string())
        .output()
        .expect("running irqlens");
    assert!(output.status.success(), "irqlens {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The widest line's characters (µ is one column, two bytes).
fn widest(text: &str) -> usize {
    text.lines()
        .map(|line| line.chars().count())
        .max()
        .unwrap_or(0)
}

/// Every recording of the fixtures.
fn recordings() -> Vec<String> {
    let mut found = Vec::new();
    for version in ["v1", "v2"] {
        let directory = fixture(version);
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.to_str().is_some_and(|p| p.ends_with(".jsonl.gz")) {
                found.push(path.to_str().unwrap().to_owned());
            }
        }
    }
    found.sort();
    assert!(found.len() >= 10, "{found:?}");
    found
}

#[test]
fn report_advise_and_compare_fit_a_100_column_terminal() {
    let recordings = recordings();
    let at = |name: &str| fixture(&format!("v1/{name}.jsonl.gz"));
    let mut runs: Vec<Vec<String>> = recordings
        .iter()
        .map(|recording| vec!["report".into(), recording.clone()])
        .collect();
    for advised in [
        vec![at("noise-top"), at("wakeup-task")],
        vec![at("bh-hist")],
        vec![at("account")],
    ] {
        runs.push([vec!["advise".to_owned()], advised].concat());
    }
    for (a, b) in [
        (at("bh-top"), at("bh-top-b")),
        (at("noise-hist"), fixture("v2/noise-hist.jsonl.gz")),
    ] {
        runs.push(vec!["compare".into(), a, b]);
    }
    let mut wider_unforced = 0;
    for run in &runs {
        let args: Vec<&str> = run.iter().map(String::as_str).collect();
        let fitted = text_within(&args, WIDTH);
        assert!(
            widest(&fitted) <= WIDTH,
            "irqlens {args:?} at {WIDTH} columns:\n{fitted}"
        );
        let full = String::from_utf8(irqlens_ok(&args).stdout).unwrap();
        if widest(&full) > WIDTH {
            wider_unforced += 1;
        }
    }
    // most of these runs are wider than the terminal unless fitted into it
    assert!(
        wider_unforced * 2 > runs.len(),
        "{wider_unforced} of {}",
        runs.len()
    );
}

/// What is for a program (a sim model, a `--json` document) is never wrapped, however
/// narrow the terminal: it must still read as JSON.
#[test]
fn json_printed_to_a_narrow_terminal_is_not_wrapped() {
    let recording = fixture("v1/noise-top.jsonl.gz");
    for args in [&["sim", "--example"][..], &["report", &recording, "--json"]] {
        let text = text_within(args, 40);
        assert!(widest(&text) > 40, "the example has lines wider than 40");
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("irqlens {args:?} in 40 columns: {e}"));
    }
}
