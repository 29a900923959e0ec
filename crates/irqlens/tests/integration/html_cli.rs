//! `report --html` of kept recordings, no root needed: headless Chromium lays the page
//! out with every plot of every capability drawn and titled, and its screenshot is a
//! picture, not a blank or one-colour page.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::Path;

use crate::chromium::{
    assert_drawn, assert_self_contained, chromium_dom, chromium_screenshot, plots, scratch,
};
use crate::common::*;

/// One recording of each capability, with the plots its section must have.
const RECORDINGS: [(&str, &[&str]); 4] = [
    (
        "noise-hist",
        &["histogram", "cdf", "exceedance", "causes", "timeline"],
    ),
    ("bh-hist", &["histogram", "cdf", "exceedance", "causes"]),
    (
        "wakeup-hist",
        &["histogram", "cdf", "exceedance", "causes", "worst"],
    ),
    ("account", &["causes"]),
];

fn recording(name: &str) -> String {
    fixture(&format!("v1/{name}.jsonl.gz"))
}

/// The text of every `<title>` in `svg`.
fn titles(svg: &str) -> Vec<&str> {
    svg.match_indices("<title>")
        .map(|(at, tag)| {
            let rest = &svg[at + tag.len()..];
            &rest[..rest.find("</title>").expect("a closed title")]
        })
        .collect()
}

/// The distinct colours of a PNG's pixels, and the share of them that is not white.
fn colours(png: &Path) -> (usize, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let channels = frame.color_type.samples();
    assert!(frame.bit_depth == png::BitDepth::Eight && channels >= 3);
    let pixels: Vec<&[u8]> = pixels[..frame.buffer_size()]
        .chunks(channels)
        .map(|p| &p[..3])
        .collect();
    let distinct: HashSet<&[u8]> = pixels.iter().copied().collect();
    let inked = pixels.iter().filter(|p| **p != [255, 255, 255]).count();
    (distinct.len(), inked as f64 / pixels.len() as f64)
}

#[test]
fn report_page_renders_every_plot_in_chromium() {
    let dir = scratch("report");
    let page = dir.join("report.html");
    let mut args = vec!["report".to_owned()];
    args.extend(RECORDINGS.iter().map(|(name, _)| recording(name)));
    args.extend(["--html".to_owned(), page.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    irqlens_ok(&args);

    let dom = chromium_dom(&page, &dir.join("profile"));
    assert_self_contained(&dom);
    let sections: Vec<&str> = dom.split("<section id=").skip(1).collect();
    assert_eq!(sections.len(), RECORDINGS.len(), "a section per recording");
    for ((name, kinds), section) in RECORDINGS.iter().zip(&sections) {
        assert!(section.contains(name), "the sections are out of order");
        for kind in *kinds {
            assert!(!plots(section, kind).is_empty(), "{name}: no {kind} plot");
        }
    }
    for kind in [
        "histogram",
        "cdf",
        "exceedance",
        "causes",
        "timeline",
        "worst",
    ] {
        assert_drawn(&dom, kind);
    }
    // every chart of the page is one of those, titled, and takes the page's width
    let svgs = dom.matches("<svg").count();
    let titled: Vec<&str> = dom
        .match_indices("<svg class=\"plot\"")
        .map(|(at, _)| &dom[at..at + dom[at..].find("</svg>").unwrap()])
        .collect();
    assert_eq!(titled.len(), svgs, "an <svg> that is not a plot");
    for svg in titled {
        let tag = &svg[..svg.find('>').unwrap()];
        assert!(tag.contains("width=\"100%\""), "{tag}");
        assert!(
            titles(svg).iter().any(|t| !t.trim().is_empty()),
            "{tag}: no title"
        );
    }

    let screenshot = dir.join("report.png");
    chromium_screenshot(&page, &dir.join("profile"), &screenshot, (1400, 3000));
    let (distinct, inked) = colours(&screenshot);
    // text, grid, lines in several colours: a page with charts, not a blank one
    assert!(distinct >= 16, "only {distinct} colours in the screenshot");
    assert!(
        inked > 0.02,
        "only {:.1}% of the screenshot is not white",
        inked * 100.0
    );
    fs::remove_dir_all(&dir).unwrap();
}
