//! The charts of irqlens's HTML report read back, as plotters writes them and as headless
//! Chromium lays them out (`--dump-dom`): one element per line, a text's content on the
//! line after its tag. What a chart shows is checked from where its texts, markers, lines
//! and rectangles are, its plotting area and its axes' ticks.

/// An attribute's value in one element's line.
pub fn attribute<'a>(element: &'a str, name: &str) -> &'a str {
    let value = element
        .split(&format!(" {name}=\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no {name} in {element}"));
    value.split('"').next().unwrap_or_default()
}

/// A numeric attribute's value.
pub fn number(element: &str, name: &str) -> f64 {
    let value = attribute(element, name);
    value
        .parse()
        .unwrap_or_else(|_| panic!("{name}={value} is no number in {element}"))
}

/// One text of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    /// Where it is anchored, px.
    pub x: f64,
    /// Its baseline, px down.
    pub y: f64,
    /// Its font size.
    pub size: f64,
    /// `start`, `middle` or `end`.
    pub anchor: String,
    /// Rotated (an axis's description).
    pub rotated: bool,
    /// What it says, as escaped in the markup.
    pub text: String,
}

/// The texts of the chart, in drawing order.
pub fn texts(svg: &str) -> Vec<Text> {
    let lines: Vec<&str> = svg.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<text"))
        .map(|(i, l)| Text {
            x: number(l, "x"),
            y: number(l, "y"),
            size: number(l, "font-size"),
            anchor: attribute(l, "text-anchor").to_owned(),
            rotated: l.contains("rotate("),
            text: lines.get(i + 1).copied().unwrap_or_default().to_owned(),
        })
        .collect()
}

/// (x, y, width, height, fill) of the coloured rectangles (not the white background).
pub fn rects(svg: &str) -> Vec<(f64, f64, f64, f64, String)> {
    svg.lines()
        .filter(|l| l.starts_with("<rect") && !l.contains("#FFFFFF"))
        .map(|l| {
            let n = |name| number(l, name);
            (
                n("x"),
                n("y"),
                n("width"),
                n("height"),
                attribute(l, "fill").into(),
            )
        })
        .collect()
}

/// The centres of the point markers.
pub fn circles(svg: &str) -> Vec<(f64, f64)> {
    svg.lines()
        .filter(|l| l.starts_with("<circle"))
        .map(|l| (number(l, "cx"), number(l, "cy")))
        .collect()
}

/// One polyline: a line of data, an axis tick or a legend's swatch.
#[derive(Clone, Debug, PartialEq)]
pub struct Polyline {
    /// Its colour, `#RRGGBB`.
    pub stroke: String,
    /// Its width, px.
    pub width: f64,
    /// Its points, px.
    pub points: Vec<(f64, f64)>,
}

/// The polylines, in drawing order.
pub fn polylines(svg: &str) -> Vec<Polyline> {
    svg.lines()
        .filter(|l| l.starts_with("<polyline"))
        .map(|l| Polyline {
            stroke: attribute(l, "stroke").to_owned(),
            width: number(l, "stroke-width"),
            points: attribute(l, "points")
                .split_whitespace()
                .filter_map(|p| p.split_once(','))
                .map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap()))
                .collect(),
        })
        .collect()
}

/// The top and bottom of the plotting area: where the vertical grid lines run.
pub fn plot_area(svg: &str) -> (f64, f64) {
    let line = svg
        .lines()
        .find(|l| l.starts_with("<line") && number(l, "x1") == number(l, "x2"))
        .expect("a vertical grid line");
    (number(line, "y2"), number(line, "y1"))
}

/// An axis's numeric tick labels as (value, px).
pub type Ticks = Vec<(f64, f64)>;

/// The numeric tick labels of the x axis (centred under it, px across) and of the y
/// axis (right-aligned left of it, px down).
pub fn ticks(svg: &str) -> (Ticks, Ticks) {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for text in texts(svg).into_iter().filter(|t| !t.rotated) {
        let Ok(value) = text.text.parse::<f64>() else {
            continue;
        };
        match text.anchor.as_str() {
            "middle" => x.push((value, text.x)),
            "end" => y.push((value, text.y)),
            _ => {}
        }
    }
    (x, y)
}

/// The value at `px` on a log axis whose `ticks` (value, px) are two or more.
pub fn log_value(ticks: &[(f64, f64)], px: f64) -> f64 {
    let ((v0, p0), (v1, p1)) = (ticks[0], ticks[ticks.len() - 1]);
    let decades = (px - p0) / (p1 - p0) * (v1.log10() - v0.log10());
    10f64.powf(v0.log10() + decades)
}

/// (name, fill) of each entry of a bar chart's legend: a 14 px swatch, then its name.
pub fn legend_fills(svg: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = svg.lines().collect();
    lines
        .windows(3)
        .filter(|w| w[0].starts_with("<rect") && w[0].contains(" width=\"14\" height=\"14\""))
        .map(|w| (w[2].to_owned(), attribute(w[0], "fill").to_owned()))
        .collect()
}

/// The labels of a bar chart's bars, top first: the texts right-aligned left of its
/// value axis that are no numbers.
pub fn bar_labels(svg: &str) -> Vec<String> {
    texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "end" && !t.rotated && t.text.parse::<f64>().is_err())
        .map(|t| t.text)
        .collect()
}
