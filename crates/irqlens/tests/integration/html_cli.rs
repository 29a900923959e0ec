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

/// `report --html` of the `recordings`, as Chromium parsed it.
fn rendered_report(recordings: &[String], name: &str) -> String {
    let dir = scratch(name);
    let page = dir.join("report.html").display().to_string();
    let mut args = vec!["report"];
    args.extend(recordings.iter().map(String::as_str));
    args.extend(["--html", &page]);
    irqlens_ok(&args);
    let dom = chromium_dom(Path::new(&page), &dir.join("profile"));
    fs::remove_dir_all(&dir).unwrap();
    dom
}

/// An attribute's value in an element's opening tag.
fn attribute<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let value = element.split(&format!(" {name}=\"")).nth(1)?;
    value.split('"').next()
}

/// The numeric labels of a chart's axes as (x, y, value): the ticks.
fn ticks(svg: &str) -> Vec<(f64, f64, f64)> {
    svg.split("<text")
        .skip(1)
        .filter_map(|text| {
            let (tag, rest) = text.split_once('>')?;
            let value: f64 = rest[..rest.find("</text>")?].trim().parse().ok()?;
            let at = |name| attribute(tag, name)?.parse::<f64>().ok();
            Some((at("x")?, at("y")?, value))
        })
        .collect()
}

/// A chart's value axis: its two extreme ticks, (pixel, value), to map pixels to values
/// on a log or a linear scale.
struct Scale {
    low: (f64, f64),
    high: (f64, f64),
    log: bool,
}

impl Scale {
    /// The x axis: the ticks on the lowest row of labels.
    fn x(svg: &str, log: bool) -> Scale {
        let ticks: Vec<_> = ticks(svg).into_iter().map(|(x, y, v)| (-y, x, v)).collect();
        Scale::between(&ticks, log)
    }

    /// The y axis: the ticks in the leftmost column of labels.
    fn y(svg: &str) -> Scale {
        Scale::between(&ticks(svg), false)
    }

    /// From the ticks as (across, along, value): those of the least `across` (the
    /// labels' row or column), by their pixel `along` the axis.
    fn between(ticks: &[(f64, f64, f64)], log: bool) -> Scale {
        let line = ticks.iter().map(|t| t.0).fold(f64::INFINITY, f64::min);
        let ticks: Vec<(f64, f64)> = ticks
            .iter()
            .filter(|t| t.0 == line)
            .map(|t| (t.1, t.2))
            .collect();
        assert!(ticks.len() >= 2, "an axis of {ticks:?}");
        let low = *ticks.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        let high = *ticks.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        Scale { low, high, log }
    }

    fn value(&self, pixel: f64) -> f64 {
        let along = (pixel - self.low.0) / (self.high.0 - self.low.0);
        if self.log {
            let (low, high) = (self.low.1.log10(), self.high.1.log10());
            10f64.powf(low + along * (high - low))
        } else {
            self.low.1 + along * (self.high.1 - self.low.1)
        }
    }

    fn pixel(&self, value: f64) -> f64 {
        let along = if self.log {
            (value.log10() - self.low.1.log10()) / (self.high.1.log10() - self.low.1.log10())
        } else {
            (value - self.low.1) / (self.high.1 - self.low.1)
        };
        self.low.0 + along * (self.high.0 - self.low.0)
    }
}

/// The data lines of a chart (not its axes or legend swatches), as pixel points.
fn data_lines(svg: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polyline")
        .skip(1)
        .filter(|line| attribute(line, "stroke-width") == Some("2"))
        .filter_map(|line| {
            let points: Vec<(f64, f64)> = attribute(line, "points")?
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            (points.len() > 2).then_some(points)
        })
        .collect()
}

/// The cells of the first table row whose leading cells are `lead`, by column heading.
fn table_cell(dom: &str, lead: &[&str], heading: &str) -> String {
    let lead: String = lead.iter().map(|c| format!("<td>{c}</td>")).collect();
    let row_at = dom.find(&format!("<tr>{lead}")).expect("the row");
    let table = &dom[dom[..row_at].rfind("<table").unwrap()..];
    let header = &table[..table.find("</tr>").unwrap()];
    let column = header
        .split("<th>")
        .skip(1)
        .position(|h| h.starts_with(&format!("{heading}</th>")))
        .unwrap_or_else(|| panic!("no {heading} column in {header}"));
    let row = &dom[row_at..row_at + dom[row_at..].find("</tr>").unwrap()];
    let cell = row.split("<td").nth(column + 1).unwrap();
    let cell = &cell[cell.find('>').unwrap() + 1..];
    cell[..cell.find("</td>").unwrap()].to_owned()
}

/// A NET_RX recording (its median near 1 µs): its histogram has several buckets below
/// 1 µs, and the CDF drawn crosses 0.05, 0.5 and 0.95 within a bucket (12%) of the
/// table's quantiles.
#[test]
fn bh_plots_sub_microsecond_latencies_as_the_table_has_them() {
    let dom = rendered_report(&[fixture("v2/bh-net.jsonl.gz")], "bh-net");
    let histogram = plots(&dom, "histogram")[0];
    let x = Scale::x(histogram, true);
    let softirq = &data_lines(histogram)[0];
    let baseline = softirq.iter().map(|p| p.1).fold(0.0, f64::max);
    let one_us = x.pixel(1.0);
    let below_1us = softirq
        .windows(2)
        .filter(|pair| pair[0].1 == pair[1].1 && pair[0].1 < baseline && pair[1].0 <= one_us)
        .count();
    assert!(
        below_1us >= 5,
        "{below_1us} buckets below 1 µs: {softirq:?}"
    );

    let cdf = plots(&dom, "cdf")[0];
    let (x, y) = (Scale::x(cdf, true), Scale::y(cdf));
    let line = &data_lines(cdf)[0];
    for (q, column) in [(0.05, "Q0.05"), (0.5, "Q0.50"), (0.95, "Q0.95")] {
        let exact: f64 = table_cell(&dom, &["softirq", "(all)"], column)
            .parse()
            .unwrap();
        let at = y.pixel(q);
        // y pixels grow downwards
        let pair = line
            .windows(2)
            .find(|pair| pair[1].1 <= at)
            .expect("the CDF reaches the quantile");
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        let drawn = x.value(x0 + (x1 - x0) * (at - y0) / (y1 - y0));
        let bucket = 10f64.powf(0.05);
        assert!(
            drawn / exact < bucket && exact / drawn < bucket,
            "the table's {column} is {exact} µs, the CDF crosses {q} at {drawn} µs"
        );
    }
}

/// Recordings with samples far past rtla's 256 µs of buckets: the histogram's x axis
/// and its line reach the largest sample (the JSON's, from the same analysis).
#[test]
fn noise_and_wakeup_histograms_show_the_tail_to_the_largest_sample() {
    let largest = |name: &str, max_ns: fn(&serde_json::Value) -> u64| {
        let doc = irqlens_json(&["report", &recording(name)]);
        let per_cpu = doc[0]["per_cpu"].as_array().unwrap();
        per_cpu.iter().map(max_ns).max().unwrap() as f64 / 1e3
    };
    for (name, max_us) in [
        (
            "noise-hist",
            largest("noise-hist", |cpu| cpu["max_single_ns"].as_u64().unwrap()),
        ),
        (
            "wakeup-task",
            largest("wakeup-task", |cpu| {
                cpu["components"]["total"]["histogram"]["max_ns"]
                    .as_u64()
                    .unwrap()
            }),
        ),
    ] {
        assert!(max_us > 1_000.0, "{name}: no sample far past 256 µs");
        let dom = rendered_report(&[recording(name)], name);
        assert!(
            !dom.contains("beyond the last bucket"),
            "{name}: a footnote"
        );
        let histogram = plots(&dom, "histogram")[0];
        let x = Scale::x(histogram, true);
        assert!(
            x.high.1 >= max_us,
            "{name}: the axis ends at {} µs",
            x.high.1
        );
        let reach = data_lines(histogram)
            .iter()
            .flatten()
            .map(|p| p.0)
            .fold(0.0, f64::max);
        let drawn = x.value(reach);
        // the last step ends where the largest sample's bucket does
        assert!(
            drawn >= max_us && drawn < max_us * 1.2,
            "{name}: the histogram ends at {drawn} µs, the largest sample is {max_us} µs"
        );
    }
}

/// A page of one section headed as the page is titled (`irqlens sim`, as every live
/// run's) shows the title once.
#[test]
fn a_page_shows_its_title_once() {
    let dir = scratch("title");
    let page = dir.join("sim.html");
    irqlens_ok(&["sim", "-d", "100ms", "--html", &page.display().to_string()]);
    let dom = chromium_dom(&page, &dir.join("profile"));
    let body = &dom[dom.find("<body").unwrap()..];
    assert_eq!(body.matches("irqlens sim").count(), 1, "{body}");
    fs::remove_dir_all(&dir).unwrap();
}

/// Every capability's page says µs, in its text and its charts, with the micro sign
/// that plotters and the page's UTF-8 carry into Chromium intact.
#[test]
fn report_page_spells_the_unit_with_the_micro_sign() {
    let mut recordings: Vec<String> = RECORDINGS.iter().map(|(name, _)| recording(name)).collect();
    recordings.push(fixture("v2/bh-net.jsonl.gz"));
    let dom = rendered_report(&recordings, "units");
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    for (at, _) in dom.match_indices("us") {
        let (before, after) = (dom[..at].chars().next_back(), dom[at + 2..].chars().next());
        assert!(
            word(before) || word(after),
            "\"us\" as a unit: {}",
            &dom[dom.floor_char_boundary(at.saturating_sub(60))..(at + 20).min(dom.len())]
        );
    }
    for said in ["(µs)</th>", "(µs)</h3>"] {
        assert!(dom.contains(said), "no {said}");
    }
    for kind in ["histogram", "cdf", "exceedance"] {
        assert!(
            plots(&dom, kind)
                .iter()
                .all(|svg| svg.contains("(µs)\n</text>")),
            "a {kind} axis without µs"
        );
    }
}
