//! Headless Chromium for the `--html` tests: the page as it parsed and laid it out
//! (`--dump-dom`) and as it looks (`--screenshot`). Chromium is Debian's `chromium`
//! package (scripts/setup installs it); without it the tests fail and say so.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh directory for one test's files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlens-html-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Chromium's output for `page` with `args`, offline (without the background-networking
/// flags, Chromium's connections are refused on a closed network) in the profile
/// `profile`.
fn chromium(page: &Path, profile: &Path, args: &[String]) -> String {
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
        .args(args)
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
        let mut out = String::new();
        stdout.read_to_string(&mut out).map(|_| out)
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not render {} within 90 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = reader.join().unwrap().expect("chromium's output");
    assert!(
        child.wait().unwrap().success(),
        "chromium failed on {}",
        page.display()
    );
    out
}

/// The page as headless Chromium parsed and laid it out.
pub fn chromium_dom(page: &Path, profile: &Path) -> String {
    chromium(page, profile, &["--dump-dom".into()])
}

/// A screenshot of the page's top `width` x `height` px, as PNG, written to `png`.
pub fn chromium_screenshot(page: &Path, profile: &Path, png: &Path, (width, height): (u32, u32)) {
    chromium(
        page,
        profile,
        &[
            format!("--screenshot={}", png.display()),
            format!("--window-size={width},{height}"),
            "--hide-scrollbars".into(),
        ],
    );
    assert!(png.exists(), "chromium wrote no {}", png.display());
}

/// The plots of `kind` in the DOM: each `<svg class="plot" data-plot=KIND ...>...</svg>`.
pub fn plots<'a>(dom: &'a str, kind: &str) -> Vec<&'a str> {
    let opening = format!("<svg class=\"plot\" data-plot=\"{kind}\"");
    dom.match_indices(&opening)
        .map(|(at, _)| &dom[at..at + dom[at..].find("</svg>").expect("a closed svg")])
        .collect()
}

/// Each plot of `kind` has a title and drawn content: lines, or bars besides the
/// white background rectangle.
pub fn assert_drawn(dom: &str, kind: &str) {
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

pub fn assert_self_contained(dom: &str) {
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
