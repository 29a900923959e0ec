//! `--html`: a live run writes a report that headless Chromium renders with every plot
//! drawn and nothing fetched. Needs root (BPF) and Debian's `chromium` (scripts/setup).

use std::fs;
use std::path::{Path, PathBuf};

use crate::chromium::{assert_drawn, assert_self_contained, chromium_dom, plots, scratch};
use crate::common::*;

/// Runs irqlens with `args` and `--html DIR/report.html`; returns the file's path.
fn report(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("report.html");
    let mut all = args.to_vec();
    all.extend(["--html", path.to_str().unwrap()]);
    irqlens_ok(&all);
    assert!(path.exists(), "irqlens {all:?} wrote no {}", path.display());
    path
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
