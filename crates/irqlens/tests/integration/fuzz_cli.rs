//! Hostile input files (no root): the committed recordings, trial and calibration, and
//! the example sim model, mutated (byte flips, truncations, and extreme numbers in every
//! numeric field of the header, the options and the model), each run through `report`,
//! `compare` or `sim` under a memory cap (RLIMIT_AS) and a time cap. Every run must end
//! with status 0 or 1, and a failure must say why on one line starting with `irqlens:`:
//! never a panic (101), a signal (an abort on a failed allocation), or a hang.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use serde_json::{Value, json};

use crate::common::*;

/// Address space per run: irqlens must stay well inside it.
const MEMORY_CAP: libc::rlim_t = 1 << 30;
/// Wall time per run: a run still going then counts as a hang.
const TIME_CAP: Duration = Duration::from_secs(20);
/// Numbers every numeric field gets in turn: the edges of the integer types, the edges of
/// doubles, and a NaN as a string.
const EXTREMES: [&str; 7] = [
    "0",
    "-1",
    "4294967295",
    "9223372036854775808",
    "1e308",
    "1e-300",
    "\"NaN\"",
];
/// The fixed seed: the same mutations on every run of the test.
const SEED: u64 = 0x1a2b_3c4d;

/// splitmix64: a deterministic stream of mutations without a dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One run to make: the arguments, with `{}` standing for the mutated file, and the
/// file's bytes.
struct Case {
    what: String,
    args: Vec<String>,
    bytes: Vec<u8>,
    /// The file's name ends so (irqlens tells a gzip'd file by its content, not its name).
    suffix: &'static str,
}

fn gunzip(bytes: &[u8]) -> String {
    let mut text = String::new();
    MultiGzDecoder::new(bytes)
        .read_to_string(&mut text)
        .expect("a fixture is gzip'd text");
    text
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(text).unwrap();
    encoder.finish().unwrap()
}

/// The paths of every numeric leaf of `value`, as JSON pointers.
fn numeric_leaves(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Number(_) => out.push(at),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                numeric_leaves(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                numeric_leaves(
                    item,
                    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// `value` with the leaf at `pointer` replaced by the JSON text `number`, as text (a
/// `serde_json::Value` cannot hold 1e308's neighbours or 2^63 as written).
fn with_number(value: &Value, pointer: &str, number: &str) -> String {
    const MARK: &str = "@@fuzzed@@";
    let mut value = value.clone();
    *value.pointer_mut(pointer).expect("a leaf found above") = MARK.into();
    value.to_string().replace(&format!("\"{MARK}\""), number)
}

/// How the numeric leaves of a file get extremes.
#[derive(Clone, Copy)]
enum Leaves {
    /// Every leaf, with every extreme.
    All,
    /// Every leaf, with `n` extremes of the list in turn (leaf i: i, i + 3, ...), so that
    /// every extreme lands on some leaves.
    Each(usize),
    /// `n` leaves at random, each with an extreme at random.
    Sample(usize),
}

/// Extreme numbers in the numeric leaves of `line` under `root`, as `leaves` says.
fn extreme_lines(
    line: &Value,
    root: &str,
    leaves_taken: Leaves,
    random: &mut Random,
) -> Vec<(String, String)> {
    let mut leaves = Vec::new();
    if let Some(under) = line.pointer(root) {
        numeric_leaves(under, root.to_owned(), &mut leaves);
    }
    let mut out = Vec::new();
    match leaves_taken {
        Leaves::All | Leaves::Each(_) => {
            let per_leaf = match leaves_taken {
                Leaves::Each(n) => n.min(EXTREMES.len()),
                _ => EXTREMES.len(),
            };
            for (i, leaf) in leaves.iter().enumerate() {
                for k in 0..per_leaf {
                    let number = EXTREMES[(i + k * 3) % EXTREMES.len()];
                    out.push((format!("{leaf}={number}"), with_number(line, leaf, number)));
                }
            }
        }
        Leaves::Sample(count) => {
            for _ in 0..count.min(leaves.len() * EXTREMES.len()) {
                let leaf = &leaves[random.below(leaves.len())];
                let number = EXTREMES[random.below(EXTREMES.len())];
                out.push((format!("{leaf}={number}"), with_number(line, leaf, number)));
            }
        }
    }
    out
}

/// Byte flips and truncations of `bytes`: `count` of each.
fn damaged(bytes: &[u8], count: usize, random: &mut Random) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for _ in 0..count {
        let mut flipped = bytes.to_vec();
        let flips = 1 + random.below(4);
        for _ in 0..flips {
            let at = random.below(flipped.len());
            flipped[at] ^= 1 << random.below(8);
        }
        out.push((format!("{flips} byte flips"), flipped));
        let at = random.below(bytes.len());
        out.push((format!("cut at {at}"), bytes[..at].to_vec()));
    }
    out
}

/// The options a version 2 recording of each version 1 fixture would keep: what the
/// v1 recordings' command lines resolve to (a v2 header's options go through the bounds
/// directly, not through a command line).
fn v2_options(name: &str) -> Option<Value> {
    let secs = |s: u64| json!({"secs": s, "nanos": 0});
    let hist = json!({"bucket_size": 1, "entries": 256, "with_zeros": false, "no_summary": false});
    Some(match name {
        "bh-top" | "bh-hist" => json!({
            "capability": "bh", "cpus": [0, 1], "duration": secs(2), "warm_up": null,
            "trigger": {"kind": if name == "bh-top" { "timer" } else { "tasklet" }, "rate_hz": 50},
            "load": "zero",
            "stats": {"bucket_ns": 1000, "entries": 256, "selection": "All", "worst": 3},
            "hist": if name == "bh-hist" { hist.clone() } else { Value::Null },
            "causes": 8,
        }),
        "wakeup-hist" => json!({
            "capability": "wakeup", "cpus": [0, 1], "duration": secs(2), "warm_up": null,
            "mode": {"Timer": {"period": {"secs": 0, "nanos": 2_000_000}, "priority": "f:95",
                               "trace": true, "aligned_ns": null}},
            "stats": {"bucket_ns": 1000, "entries": 256, "worst": 3,
                      "stop_total_ns": null, "stop_irq_ns": null},
            "hist": hist, "causes": 10, "dma_latency_us": 0,
        }),
        "account" => json!({
            "capability": "account", "cpus": [0, 1], "duration": secs(3),
            "interval": secs(1), "compensate": true, "threads": false, "top": 10,
        }),
        _ => return None,
    })
}

/// The cases of one recording fixture: its header's numbers (options included), its
/// command line's numbers, a sample of its inputs' and end's numbers, flips and cuts.
fn recording_cases(path: &Path, random: &mut Random, cases: &mut Vec<Case>) {
    let name = path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_end_matches(".jsonl.gz");
    let text = gunzip(&std::fs::read(path).unwrap());
    let lines: Vec<&str> = text.lines().collect();
    let mut header: Value = serde_json::from_str(lines[0]).unwrap();
    if header["options"].is_null()
        && let Some(options) = v2_options(name)
    {
        header["version"] = 2.into();
        header["options"] = options;
    }
    let report = |what: String, lines: &[String]| Case {
        what: format!("report {name}: {what}"),
        args: vec!["report".into(), "{}".into()],
        bytes: gzip((lines.join("\n") + "\n").as_bytes()),
        suffix: ".jsonl.gz",
    };
    let replaced = |index: usize, line: String| {
        let mut all: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        all[0] = header.to_string();
        all[index] = line;
        all
    };
    // unchanged (with its v2 options): it must still report
    cases.push(report("as it is".into(), &replaced(0, header.to_string())));
    for (what, line) in extreme_lines(&header, "/options", Leaves::Each(2), random)
        .into_iter()
        .chain(extreme_lines(&header, "/cpus", Leaves::Sample(2), random))
        .chain(extreme_lines(&header, "/system", Leaves::Sample(2), random))
    {
        cases.push(report(what, &replaced(0, line)));
    }
    // a version 1 command line's numbers (its options come from it)
    let mut v1 = header.clone();
    v1["version"] = 1.into();
    v1.as_object_mut().unwrap().remove("options");
    let argv = v1["argv"].as_array().unwrap().clone();
    for (i, arg) in argv.iter().enumerate() {
        if arg
            .as_str()
            .is_some_and(|a| a.starts_with(|c: char| c.is_ascii_digit()))
        {
            for k in 0..3 {
                let number = EXTREMES[(i + k * 3) % EXTREMES.len()];
                let mut line = v1.clone();
                line["argv"][i] = number.trim_matches('"').into();
                cases.push(report(
                    format!("argv {i}={number}"),
                    &replaced(0, line.to_string()),
                ));
            }
        }
    }
    // inputs and the end line: numbers at random
    for _ in 0..2 {
        let index = 1 + random.below(lines.len() - 1);
        let line: Value = serde_json::from_str(lines[index]).unwrap();
        for (what, mutated) in extreme_lines(&line, "", Leaves::Sample(2), random) {
            cases.push(report(
                format!("line {index} {what}"),
                &replaced(index, mutated),
            ));
        }
    }
    let end: Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    for (what, mutated) in extreme_lines(&end, "", Leaves::Sample(2), random) {
        cases.push(report(
            format!("end {what}"),
            &replaced(lines.len() - 1, mutated),
        ));
    }
    // flips and cuts, of the text and of the gzip'd file
    let whole = replaced(0, header.to_string()).join("\n") + "\n";
    for (what, bytes) in damaged(whole.as_bytes(), 2, random) {
        cases.push(Case {
            what: format!("report {name}: text {what}"),
            args: vec!["report".into(), "{}".into()],
            bytes: gzip(&bytes),
            suffix: ".jsonl.gz",
        });
    }
    for (what, bytes) in damaged(&gzip(whole.as_bytes()), 2, random) {
        cases.push(Case {
            what: format!("report {name}: gzip {what}"),
            args: vec!["report".into(), "{}".into()],
            bytes,
            suffix: ".jsonl.gz",
        });
    }
}

/// Every case: recordings (report, and compare against their unchanged selves), trial
/// and calibration files, and sim models.
fn all_cases() -> Vec<Case> {
    let mut random = Random(SEED);
    let mut cases = Vec::new();
    for version in ["v1", "v2"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(fixture(version))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_str().unwrap().ends_with(".jsonl.gz"))
            .collect();
        paths.sort();
        for path in paths {
            recording_cases(&path, &mut random, &mut cases);
        }
    }
    // compare: the mutated file against the one it came from, for a sample
    let compared: Vec<Case> = cases
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 12 == 0)
        .map(|(_, case)| {
            let original = case
                .what
                .split(':')
                .next()
                .unwrap()
                .trim_start_matches("report ");
            let version = if original == "noise-hist" && case.what.contains("v2") {
                "v2"
            } else {
                "v1"
            };
            Case {
                what: case.what.replacen("report", "compare", 1),
                args: vec![
                    "compare".into(),
                    fixture(&format!("{version}/{original}.jsonl.gz")),
                    "{}".into(),
                ],
                bytes: case.bytes.clone(),
                suffix: case.suffix,
            }
        })
        .collect();
    cases.extend(compared);
    sim_cases(&mut random, &mut cases);
    cases
}

/// The example model (shortened: a run must take milliseconds), the calibration and the
/// trial, each number extreme in turn, and flips and cuts.
fn sim_cases(random: &mut Random, cases: &mut Vec<Case>) {
    let mut model: Value =
        serde_json::from_slice(&irqlens_ok(&["sim", "--example"]).stdout).unwrap();
    model["duration_s"] = 0.01.into();
    model["designs"] = json!(["stock", "threaded-fifo+ihm-dis"]);
    let model_path = temp_path("fuzz-model.json");
    std::fs::write(&model_path, model.to_string()).unwrap();
    let model_path = model_path.to_str().unwrap().to_owned();
    let sim = |what: String, args: &[&str], bytes: Vec<u8>| Case {
        what,
        args: args.iter().map(|a| a.to_string()).collect(),
        bytes,
        suffix: ".json",
    };
    for (what, text) in extreme_lines(&model, "", Leaves::All, random) {
        cases.push(sim(
            format!("sim model {what}"),
            &["sim", "{}"],
            text.into_bytes(),
        ));
    }
    for (what, bytes) in damaged(model.to_string().as_bytes(), 10, random) {
        cases.push(sim(format!("sim model {what}"), &["sim", "{}"], bytes));
    }
    // a calibration made from the committed recordings (trial/calibration.json is the
    // trial it is calibrated on)
    let (calibration_path, calibration) = calibration_from_fixtures("fuzz-calibration.json");
    for (what, text) in extreme_lines(&calibration, "", Leaves::Sample(30), random) {
        cases.push(sim(
            format!("sim --costs {what}"),
            &["sim", &model_path, "--costs", "{}"],
            text.into_bytes(),
        ));
    }
    let ladder_path = fixture("trial/ladder.json");
    let ladder: Value =
        serde_json::from_str(&std::fs::read_to_string(&ladder_path).unwrap()).unwrap();
    let against = |what: String, bytes: Vec<u8>, trial_file: bool| {
        let (trial, costs) = if trial_file {
            ("{}", calibration_path.as_str())
        } else {
            (ladder_path.as_str(), "{}")
        };
        sim(
            what,
            &["sim", "--against", trial, "--costs", costs, "-d", "20ms"],
            bytes,
        )
    };
    for (what, text) in extreme_lines(&ladder, "/options", Leaves::Each(3), random)
        .into_iter()
        .chain(extreme_lines(
            &ladder,
            "/points",
            Leaves::Sample(20),
            random,
        ))
    {
        cases.push(Case {
            what: format!("report trial {what}"),
            args: vec!["report".into(), "{}".into()],
            bytes: gzip(text.as_bytes()),
            suffix: ".rec",
        });
        cases.push(against(
            format!("sim --against {what}"),
            text.into_bytes(),
            true,
        ));
    }
    for (what, text) in extreme_lines(&calibration, "/trial", Leaves::Each(2), random) {
        cases.push(against(
            format!("sim --against --costs {what}"),
            text.into_bytes(),
            false,
        ));
    }
    for (what, bytes) in damaged(ladder.to_string().as_bytes(), 5, random) {
        cases.push(against(format!("sim --against {what}"), bytes, true));
    }
    for (what, bytes) in damaged(calibration.to_string().as_bytes(), 5, random) {
        cases.push(against(
            format!("sim --against --costs {what}"),
            bytes,
            false,
        ));
    }
}

/// How one run ended.
enum Ended {
    Valid,
    CleanError(String),
    Bad(String),
}

/// Runs irqlens on `case` under the caps.
fn run(case: &Case, index: usize) -> Ended {
    let path = temp_path(&format!("fuzz-{index}{}", case.suffix));
    std::fs::write(&path, &case.bytes).unwrap();
    let path_text = path.to_str().unwrap();
    let args: Vec<&str> = case
        .args
        .iter()
        .map(|a| if a == "{}" { path_text } else { a.as_str() })
        .collect();
    let mut command = Command::new(binary());
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        command.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: MEMORY_CAP,
                rlim_max: MEMORY_CAP,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("irqlens starts");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > TIME_CAP {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stderr = reader.join().unwrap();
    let _ = std::fs::remove_file(&path);
    let Some(status) = status else {
        return Ended::Bad(format!("still running after {TIME_CAP:?}"));
    };
    match status.code() {
        Some(0) => Ended::Valid,
        Some(1) if stderr.starts_with("irqlens:") && stderr.trim_end().lines().count() == 1 => {
            Ended::CleanError(stderr)
        }
        Some(code) => Ended::Bad(format!("exit {code}: {}", stderr.trim_end())),
        None => Ended::Bad(format!(
            "killed by a signal ({status}): {}",
            stderr.trim_end()
        )),
    }
}

#[test]
fn hostile_files_end_in_a_result_or_one_line_of_error() {
    let started = Instant::now();
    let cases = all_cases();
    // IRQLENS_FUZZ_VERBOSE=1: each case, how long it took and what irqlens said
    let verbose = std::env::var_os("IRQLENS_FUZZ_VERBOSE").is_some();
    let next = Mutex::new(0usize);
    let tally = Mutex::new((0usize, 0usize, Vec::new()));
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().unwrap();
                        *next += 1;
                        *next - 1
                    };
                    let Some(case) = cases.get(index) else { break };
                    let started = Instant::now();
                    let ended = run(case, index);
                    if verbose {
                        let said = match &ended {
                            Ended::Valid => "ok",
                            Ended::CleanError(e) | Ended::Bad(e) => e.trim_end(),
                        };
                        eprintln!("{} ({:.2?}): {said}", case.what, started.elapsed());
                    }
                    let mut tally = tally.lock().unwrap();
                    match ended {
                        Ended::Valid => tally.0 += 1,
                        Ended::CleanError(_) => tally.1 += 1,
                        Ended::Bad(why) => tally.2.push(format!("{}: {why}", case.what)),
                    }
                }
            });
        }
    });
    let (valid, errors, bad) = tally.into_inner().unwrap();
    eprintln!(
        "fuzz: {} runs in {:.0?}: {valid} valid results, {errors} clean errors, {} bad",
        cases.len(),
        started.elapsed(),
        bad.len()
    );
    // the unchanged fixtures (with their v2 options) report: the templates are right
    assert!(valid > 0 && errors > 0, "{valid} valid, {errors} errors");
    assert!(
        bad.is_empty(),
        "{} runs ended badly:\n{}",
        bad.len(),
        bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
}
