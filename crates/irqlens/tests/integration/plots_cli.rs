//! What account's, wakeup's, trial's and sim's plots show, as headless Chromium lays the
//! pages out (`report --html` of kept recordings, `sim --html`; no root needed): the
//! interrupt time of no process, worst samples told apart, one colour per component, a
//! rate ladder on a log axis with its points, the diagonal and a legend clear of them, and
//! sim's periodic task.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use irqlens_test_support::svg::{self, bar_labels, legend_fills};

use crate::chromium::{chromium_dom, plots, scratch};
use crate::common::*;

/// The DOM Chromium lays out of the page irqlens writes with `args` and `--html PAGE`,
/// and the directory it is in.
fn page_dom(name: &str, args: &[&str]) -> (String, PathBuf) {
    let dir = scratch(name);
    let page = dir.join(format!("{name}.html"));
    let mut args = args.to_vec();
    let page_arg = page.display().to_string();
    args.extend(["--html", &page_arg]);
    irqlens_ok(&args);
    (chromium_dom(&page, &dir.join("profile")), dir)
}

fn done(dir: &Path) {
    fs::remove_dir_all(dir).unwrap();
}

/// The figure in the SERVED or CHARGED column of the text table's `name` row, in the
/// last table (the whole run), µs.
fn text_figure(text: &str, name: &str) -> u64 {
    let row = text
        .lines()
        .rev()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no {name} row in {text}"));
    row.split_whitespace()
        .skip(2)
        .find_map(|cell| cell.parse().ok())
        .unwrap_or_else(|| panic!("no figure in {row}"))
}

#[test]
fn account_page_shows_the_orphan_and_idle_time_the_text_table_shows() {
    let recording = fixture("v1/account.jsonl.gz");
    let text = String::from_utf8(irqlens_ok(&["report", &recording]).stdout).unwrap();
    let (dom, dir) = page_dom("account", &["report", &recording]);
    let cell = |text: &str| format!("<td class=\"n\">{text}</td>");
    // the HTML's µs to a tenth, the text's whole: the same figure
    let figure = |row: &str, column: usize| -> f64 {
        let at = dom
            .find(&format!("<td>{row}</td>"))
            .unwrap_or_else(|| panic!("no {row} row"));
        let row_html = &dom[at..at + dom[at..].find("</tr>").unwrap()];
        let cells: Vec<&str> = row_html.split("<td").skip(1).collect();
        let value = cells[column].split('>').nth(1).unwrap().split('<').next();
        value.unwrap().parse().unwrap()
    };
    let orphan = text_figure(&text, "[orphan]");
    let idle = text_figure(&text, "[idle]");
    // the recording's orphan time is most of its interrupt time: it must show
    assert!(orphan > idle && idle > 0, "orphan {orphan}, idle {idle}");
    // cells from the name on: the name, KERNEL, CHARGED, SERVED
    assert_eq!(figure("[orphan]", 3).floor() as u64, orphan);
    assert_eq!(figure("[idle]", 2).floor() as u64, idle);
    assert!(dom.contains(&format!("<td>[orphan]</td>{}{}", cell("-"), cell("-"))));
    let charts = plots(&dom, "causes");
    let (victims, causers) = (bar_labels(charts[0]), bar_labels(charts[1]));
    assert!(victims.contains(&"[idle]".to_owned()), "{victims:?}");
    assert_eq!(causers[0], "[orphan]", "the largest causer: {causers:?}");
    assert!(!victims.contains(&"[orphan]".to_owned()) && !causers.contains(&"[idle]".to_owned()));
    done(&dir);
}

#[test]
fn wakeup_page_tells_the_worst_samples_apart_and_colours_each_component_once() {
    let (dom, dir) = page_dom(
        "wakeup",
        &[
            "report",
            &fixture("v1/wakeup-hist.jsonl.gz"),
            &fixture("v1/wakeup-task.jsonl.gz"),
        ],
    );
    let worst = plots(&dom, "worst");
    assert_eq!(worst.len(), 2, "a worst-samples chart per recording");
    for chart in &worst {
        let labels = bar_labels(chart);
        assert_eq!(labels.len(), 3, "{labels:?}");
        // past their ranks, no two alike
        let unranked: BTreeSet<&str> = labels
            .iter()
            .map(|l| l.split_once(". ").expect("a rank").1)
            .collect();
        assert_eq!(unranked.len(), 3, "{labels:?}");
    }
    // a component's colour, from every chart that names it: the bars' legends and the
    // components' lines (their legend entries start with the component's name)
    let mut colours: HashMap<String, BTreeSet<String>> = HashMap::new();
    for chart in plots(&dom, "causes").into_iter().chain(worst) {
        for (name, fill) in legend_fills(chart) {
            colours.entry(name).or_default().insert(fill);
        }
    }
    for chart in plots(&dom, "histogram") {
        // a line's legend: its name, then (after all names) its 18 px stroke
        let names = svg::texts(chart)
            .into_iter()
            .filter(|t| t.anchor == "start")
            .filter_map(|t| Some(t.text.split_once(" (")?.0.to_owned()));
        let swatches = svg::polylines(chart).into_iter().filter(
            |l| matches!(l.points[..], [(x0, y0), (x1, y1)] if x1 - x0 == 18.0 && y0 == y1),
        );
        for (name, swatch) in names.zip(swatches) {
            colours.entry(name).or_default().insert(swatch.stroke);
        }
    }
    for component in ["irq", "handler", "sched", "return"] {
        let seen = colours.get(component);
        assert_eq!(
            seen.map(BTreeSet::len),
            Some(1),
            "{component} in several colours or none: {colours:?}"
        );
    }
    // the handler that woke the task is a cause in the handler's colour
    let causes = plots(&dom, "causes");
    assert!(
        legend_fills(causes[0])
            .iter()
            .any(|(name, _)| name == "handler")
    );
    assert!(!dom.contains("total (total)"));
    done(&dir);
}

#[test]
fn trial_page_draws_its_ladder_on_log_rates_with_markers_the_diagonal_and_a_clear_legend() {
    let recording = fixture("trial/ladder.json");
    let trial: serde_json::Value = serde_json::from_str(&read(&recording)).unwrap();
    let rungs = |has: &dyn Fn(&serde_json::Value) -> bool| {
        let points = trial["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| has(p));
        let rungs: BTreeSet<(String, u64)> = points
            .map(|p| (p["design"].to_string(), p["offered_pps"].as_u64().unwrap()))
            .collect();
        rungs.len()
    };
    let (dom, dir) = page_dom("trial", &["report", &recording]);
    let ladders = plots(&dom, "ladder");
    assert_eq!(ladders.len(), 2);
    let expected_markers = [rungs(&|_| true), rungs(&|p| !p["cyclic"].is_null())];
    for (chart, markers) in ladders.iter().zip(expected_markers) {
        // the rates at decades, each as wide as the next: a log axis
        let (x_ticks, _) = svg::ticks(chart);
        assert!(x_ticks.len() >= 2, "{x_ticks:?}");
        for pair in x_ticks.windows(2) {
            assert_eq!(pair[1].0, pair[0].0 * 10.0, "{x_ticks:?}");
            let decade = x_ticks[1].1 - x_ticks[0].1;
            assert!((pair[1].1 - pair[0].1 - decade).abs() <= 1.0, "{x_ticks:?}");
        }
        let circles = svg::circles(chart);
        assert_eq!(circles.len(), markers, "a marker per point");
        // the legend sits above the plot, and no point under it
        let (top, _) = svg::plot_area(chart);
        let legend: Vec<svg::Text> = svg::texts(chart)
            .into_iter()
            .filter(|t| t.y < top && t.anchor == "start")
            .collect();
        assert!(legend.len() >= 2, "{legend:?}");
        for entry in &legend {
            // the swatch left of the name, the name about 7 px a character
            let (left, right) = (entry.x - 30.0, entry.x + 7.0 * entry.text.len() as f64);
            for &(x, y) in &circles {
                let covered = (left..=right).contains(&x) && (y - entry.y).abs() < 14.0;
                assert!(!covered, "{entry:?} covers the point at {x},{y}");
            }
        }
        assert!(circles.iter().all(|&(_, y)| y >= top));
    }
    // the echo: echoed = offered, grey, straight on the log rates of both axes
    let (x_ticks, y_ticks) = svg::ticks(ladders[0]);
    let diagonal = svg::polylines(ladders[0])
        .into_iter()
        .find(|l| l.width == 1.0 && l.points.len() > 2)
        .expect("a reference line");
    for (px, py) in diagonal.points {
        let offered = svg::log_value(&x_ticks, px);
        let echoed = svg::log_value(&y_ticks, py);
        assert!(
            (echoed / offered - 1.0).abs() < 0.03,
            "{echoed} at {offered}"
        );
    }
    assert!(ladders[0].contains("echoed = offered"));
    assert!(
        !ladders[1].contains(&diagonal.stroke),
        "no diagonal for a latency"
    );
    done(&dir);
}

#[test]
fn sim_page_plots_the_periodic_task_of_each_design() {
    let (dom, dir) = page_dom("sim", &["sim", "-d", "1", "-q"]);
    let example: serde_json::Value =
        serde_json::from_slice(&irqlens_ok(&["sim", "--example"]).stdout).unwrap();
    let designs = example["designs"].as_array().unwrap().len();
    let cdfs = plots(&dom, "cdf");
    for what in ["release to completion", "release to start"] {
        let chart = cdfs
            .iter()
            .find(|c| c.contains(&format!("<title>periodic task control: {what}")))
            .unwrap_or_else(|| panic!("no plot of the periodic task's {what}"));
        let drawn = svg::polylines(chart)
            .into_iter()
            .filter(|l| l.points.len() > 10)
            .count();
        assert_eq!(drawn, designs, "a line per design");
    }
    done(&dir);
}
