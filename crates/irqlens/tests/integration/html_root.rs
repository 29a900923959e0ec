//! `--html`: a live run writes a report that headless Chromium renders with every plot
//! drawn and nothing fetched. Needs root (BPF) and Debian's `chromium` (scripts/setup).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlens-html-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs irqlens with `args` and `--html DIR/report.html`; returns the file's path.
fn report(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("report.html");
    let mut all = args.to_vec();
    all.extend(["--html", path.to_str().unwrap()]);
    irqlens_ok(&all);
    assert!(path.exists(), "irqlens {all:?} wrote no {}", path.display());
    path
}

/// The page as headless Chromium parsed and laid it out, offline (without the
/// background-networking flags, Chromium's connections are refused on a closed network).
fn chromium_dom(page: &Path, profile: &Path) -> String {
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| {
            panic!("cannot run chromium ({err}): install it with scripts/setup (Debian's chromium package)")
        });
    // read while it runs: a DOM larger than the pipe would block it otherwise
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut dom = String::new();
        stdout.read_to_string(&mut dom).map(|_| dom)
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not render {} within 90 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let dom = reader.join().unwrap().expect("chromium's output");
    assert!(
        child.wait().unwrap().success(),
        "chromium failed on {}",
        page.display()
    );
    dom
}

/// The plots of `kind` in the DOM: each `<svg class="plot" data-plot=KIND ...>...</svg>`.
fn plots<'a>(dom: &'a str, kind: &str) -> Vec<&'a str> {
    let opening = format!("<svg class=\"plot\" data-plot=\"{kind}\"");
    dom.match_indices(&opening)
        .map(|(at, _)| &dom[at..at + dom[at..].find("</svg>").expect("a closed svg")])
        .collect()
}

/// Each plot of `kind` has a title and drawn content: lines, or bars besides the
/// white background rectangle.
fn assert_drawn(dom: &str, kind: &str) {
    let found = plots(dom, kind);
    assert!(!found.is_empty(), "no {kind} plot in the rendered page");
    for svg in found {
        assert!(svg.contains("<title>"), "{kind} plot without a title");
        let lines = svg.matches("<polyline").count();
        let rects = svg.matches("<rect").count();
        assert!(
            lines > 0 || rects > 1,
            "{kind} plot has nothing drawn: {svg}"
        );
    }
}

fn assert_self_contained(dom: &str) {
    for reference in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "href=\"//",
        "url(",
        "<script",
        "<link",
    ] {
        assert!(
            !dom.contains(reference),
            "the page refers to something outside it: {reference}"
        );
    }
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn noise_report_renders_every_plot_offline() {
    assert_root();
    let dir = scratch("noise");
    let page = report(&dir, &["noise", "-c", "1", "-d", "3", "-q"]);
    let dom = chromium_dom(&page, &dir.join("profile"));
    for kind in ["histogram", "cdf", "causes", "timeline"] {
        assert_drawn(&dom, kind);
    }
    let histogram = plots(&dom, "histogram")[0];
    assert!(histogram.contains("CPU 1"), "the histogram is not per CPU");
    assert!(dom.contains("Top causes of noise"));
    assert_self_contained(&dom);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn bh_report_renders_every_plot_offline() {
    assert_root();
    let dir = scratch("bh");
    let page = report(&dir, &["bh", "-d", "3", "-q"]);
    let dom = chromium_dom(&page, &dir.join("profile"));
    for kind in ["histogram", "cdf", "causes"] {
        assert_drawn(&dom, kind);
    }
    assert!(dom.contains("Delay causes: softirq"), "no softirq section");
    assert_self_contained(&dom);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs root: loads BPF programs (scripts/test runs it)"]
fn unwritable_report_is_refused_before_the_run() {
    assert_root();
    let started = std::time::Instant::now();
    assert_fails_with(
        &[
            "noise",
            "-c",
            "1",
            "-d",
            "60",
            "-q",
            "--html",
            "/nonexistent/dir/report.html",
        ],
        "/nonexistent/dir/report.html",
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the 60 s run was measured before the path was refused"
    );
}
