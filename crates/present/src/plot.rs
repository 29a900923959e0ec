//! SVG charts for the HTML report, drawn with `plotters`' SVG backend only.
//!
//! Why plotters and no font backend: its SVG backend writes every label as an SVG
//! `<text>` element (escaped, in the generic `sans-serif` family the browser resolves)
//! and sizes labels with a built-in estimate, so axes, ticks, log scales and legends
//! come without fontconfig, FreeType or a font file at build or run time. We describe
//! charts as data (`XyChart`, `BarChart`) and draw them here in one place, so every
//! plot of every capability looks alike and the drawing code is not repeated.
//!
//! Every chart is drawn on a `WIDTH`-wide canvas and scaled by the browser to the width
//! of the page (`width="100%"` and a `viewBox`), so text stays about the size drawn.

use std::ops::Range;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The canvas's width: about the page's (70em), so the browser scales little.
const WIDTH: u32 = 1100;
const HEIGHT: u32 = 400;
const FONT: &str = "sans-serif";
/// Plotters draws a font of size N at 0.8 N px: these come out at 16 and 12 px.
const CAPTION_SIZE: f64 = 20.0;
const LABEL_SIZE: f64 = 15.0;
/// Width of one character of a label, px (12 px sans-serif, estimated).
const CHAR_PX: f64 = 6.6;
/// Room right of the plotting area: the last tick label of the x axis is centred on
/// its end (a log axis always has one there, "100000" is 40 px wide).
const RIGHT_MARGIN: u32 = 48;
/// Labels of bar charts are cut to this many characters (the table below has them whole).
const LABEL_CHARS: usize = 44;
/// Height of one bar's row, px.
const ROW_PX: u32 = 24;
/// Height of the title above a chart, px.
const CAPTION_PX: u32 = 30;
/// Height of a bar chart's legend, a row under its title, px.
const LEGEND_PX: u32 = 24;

/// What a plot shows: its `data-plot` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A histogram, as steps.
    Histogram,
    /// A cumulative distribution.
    Cdf,
    /// The exceedance, 1 - CDF, on a log axis: the tail.
    Exceedance,
    /// Bars of the top causes (victims, causers).
    Causes,
    /// The worst samples, each a bar stacked by its parts.
    Worst,
    /// Noise over time.
    Timeline,
    /// A figure per offered rate, a line per design (`irqlens trial`).
    Ladder,
}

impl Kind {
    /// Its `data-plot` attribute.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Histogram => "histogram",
            Kind::Cdf => "cdf",
            Kind::Exceedance => "exceedance",
            Kind::Causes => "causes",
            Kind::Worst => "worst",
            Kind::Timeline => "timeline",
            Kind::Ladder => "ladder",
        }
    }

    /// Where its legend hides the least: a CDF is high at large values (the lower right
    /// is free), an exceedance high at small ones (the lower left), histograms fall to
    /// the right, timelines of the share available stay near the top. A ladder's few
    /// lines run anywhere, each point a measurement: its legend goes above the plot.
    fn legend_place(self) -> LegendPlace {
        match self {
            Kind::Cdf | Kind::Timeline => LegendPlace::Inside(SeriesLabelPosition::LowerRight),
            Kind::Exceedance => LegendPlace::Inside(SeriesLabelPosition::LowerLeft),
            Kind::Ladder => LegendPlace::Above,
            _ => LegendPlace::Inside(SeriesLabelPosition::UpperRight),
        }
    }
}

/// Where an `XyChart`'s legend goes.
enum LegendPlace {
    /// In a corner of the plotting area, over the grid.
    Inside(SeriesLabelPosition),
    /// In rows between the title and the plotting area, over nothing drawn.
    Above,
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear, from 0.
    Linear,
    /// Logarithmic, whole decades.
    Log,
}

impl Scale {
    /// Log when the values span two decades or more, so both ends stay readable.
    pub fn for_span(min: f64, max: f64) -> Scale {
        if min > 0.0 && max / min >= 100.0 {
            Scale::Log
        } else {
            Scale::Linear
        }
    }

    /// For the steps of a ladder (offered rates): log when they are more evenly spaced
    /// on a log axis than on a linear one (a geometric ladder, 20k, 40k, 80k...), so no
    /// step is squeezed against the next; with fewer than three steps, as `for_span`.
    pub fn for_ladder(steps: impl IntoIterator<Item = f64>) -> Scale {
        let mut steps: Vec<f64> = steps.into_iter().filter(|s| *s > 0.0).collect();
        steps.sort_by(f64::total_cmp);
        steps.dedup();
        let (Some(&low), Some(&high)) = (steps.first(), steps.last()) else {
            return Scale::Linear;
        };
        if steps.len() < 3 {
            return Scale::for_span(low, high);
        }
        // the largest gap over the smallest: 1 for steps evenly spaced
        let unevenness = |gap: fn(f64, f64) -> f64| {
            let gaps = steps.windows(2).map(|w| gap(w[0], w[1]));
            let (min, max) = gaps.fold((f64::INFINITY, 0.0f64), |(min, max), g| {
                (min.min(g), max.max(g))
            });
            max / min
        };
        if unevenness(|a, b| (b / a).ln()) < unevenness(|a, b| b - a) {
            Scale::Log
        } else {
            Scale::Linear
        }
    }
}

/// One axis of an `XyChart`.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Its label, unit included.
    pub label: String,
    /// Its scale.
    pub scale: Scale,
    /// Fixed bounds (a CDF's 0..1); otherwise from the data.
    pub bounds: Option<Range<f64>>,
}

impl Axis {
    /// An axis with bounds from the data.
    pub fn new(label: impl Into<String>, scale: Scale) -> Self {
        Axis {
            label: label.into(),
            scale,
            bounds: None,
        }
    }

    /// The same axis with fixed bounds.
    pub fn with_bounds(mut self, bounds: Range<f64>) -> Self {
        self.bounds = Some(bounds);
        self
    }

    /// The drawn range: fixed bounds, or from 0 (linear) or the decade below the
    /// smallest positive value (log) to a little above the largest.
    fn range(&self, values: impl Iterator<Item = f64>) -> Range<f64> {
        if let Some(bounds) = &self.bounds {
            return bounds.clone();
        }
        let (min, max) = values.fold((f64::INFINITY, 0.0f64), |(min, max), v| {
            (if v > 0.0 { min.min(v) } else { min }, max.max(v))
        });
        match self.scale {
            Scale::Linear => from_zero(max),
            Scale::Log if min.is_finite() => {
                let low = 10f64.powf(min.log10().floor());
                let high = 10f64.powf(max.log10().ceil()).max(low * 10.0);
                // a hair under the decade, so that its tick is drawn (10^-1 computed
                // is not quite plotters' 0.1)
                low * (1.0 - 1e-6)..high
            }
            Scale::Log => 1.0..10.0,
        }
    }
}

/// From 0 to a little above `max` (to 1 when nothing is above 0).
fn from_zero(max: f64) -> Range<f64> {
    0.0..if max > 0.0 { max * 1.05 } else { 1.0 }
}

/// One named polyline (a CPU, a mechanism, a component).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Its legend entry.
    pub name: String,
    /// The class it is coloured by (a component has its colour in every chart); `None`:
    /// by its place among the chart's lines (CPUs).
    pub class: Option<String>,
    /// Its (x, y) points.
    pub points: Vec<(f64, f64)>,
    /// From this point on it is drawn faded: what it shows there is less sure (the
    /// piece of a period the end of the run left).
    pub faded_from: Option<usize>,
    /// How it is drawn.
    pub stroke: Stroke,
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stroke {
    /// A line through many points (steps, CDFs, timelines).
    #[default]
    Plain,
    /// A line with a marker on each point: few points, each measured (a rate ladder).
    Marked,
    /// A thin grey line to read the others against (delivered = offered), neither a
    /// measurement nor coloured like one.
    Reference,
}

/// The colour of reference lines.
const REFERENCE_GREY: RGBColor = RGBColor(110, 110, 110);
/// Radius of a point's marker, px.
const MARKER_PX: i32 = 4;

impl Line {
    /// A line coloured by its place in the chart.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Line {
            name: name.into(),
            class: None,
            points,
            faded_from: None,
            stroke: Stroke::Plain,
        }
    }

    /// A reference line through `points` (drawn straight between them).
    pub fn reference(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Line {
            stroke: Stroke::Reference,
            ..Line::new(name, points)
        }
    }

    /// The same line with a marker on each point.
    pub fn marked(self) -> Self {
        Line {
            stroke: Stroke::Marked,
            ..self
        }
    }
}

/// Lines over two numeric axes: histograms (as steps), CDFs, timelines.
#[derive(Clone, Debug)]
pub struct XyChart {
    /// What it shows.
    pub kind: Kind,
    /// Its title (also the SVG's `<title>`).
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The lines drawn.
    pub lines: Vec<Line>,
}

/// One bar: a single value, or several parts stacked left to right.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// What it is, left of it.
    pub label: String,
    /// (class, value) per part: the class names its colour and legend entry.
    pub parts: Vec<(String, f64)>,
}

impl Bar {
    /// A bar of one part.
    pub fn single(label: impl Into<String>, class: impl Into<String>, value: f64) -> Self {
        Bar {
            label: label.into(),
            parts: vec![(class.into(), value)],
        }
    }

    /// Its length: the sum of its parts, printed at its end.
    pub fn total(&self) -> f64 {
        self.parts.iter().map(|p| p.1).sum()
    }
}

/// Horizontal bars, largest first at the top: the top causes, victims, causers, the
/// worst samples.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// What it shows: `Causes`, or `Worst` for stacked samples.
    pub kind: Kind,
    /// Its title (also the SVG's `<title>`).
    pub title: String,
    /// The value axis's label, unit included.
    pub value_label: String,
    /// The bars, top first.
    pub bars: Vec<Bar>,
}

/// `&`, `<`, `>`, `"` and `'` as entities: for text and attribute values alike.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

/// `text` with the unit "us" spelled "µs": the terminal's tables say "us" (scripts read
/// their column names), the page and its charts µs. Only "us" standing alone as a
/// word is the unit ("(us)", "KERNEL(us)", "in us"); for irqlens's own words, not names.
pub fn micro_sign(text: &str) -> String {
    let word_char = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut spelled = String::with_capacity(text.len() + 1);
    let mut rest = text;
    while let Some(at) = rest.find("us") {
        let (before, after) = (&rest[..at], &rest[at + 2..]);
        let unit = !word_char(before.chars().next_back().or(spelled.chars().next_back()))
            && !word_char(after.chars().next());
        spelled.push_str(before);
        spelled.push_str(if unit { "µs" } else { "us" });
        rest = after;
    }
    spelled.push_str(rest);
    spelled
}

/// Tick labels: whole numbers plainly, fractions with as few digits as they need, the
/// small decades of a log axis as powers of ten (1e-4).
pub fn tick_label(value: f64) -> String {
    if value == value.round() && value.abs() < 1e15 {
        format!("{value:.0}")
    } else if value.abs() < 0.01 {
        format!("{value:e}")
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A value printed at a bar's end: counts whole, else about three significant digits.
pub fn value_label(value: f64) -> String {
    match value.abs() {
        v if v >= 100.0 || v == v.round() => format!("{value:.0}"),
        v if v >= 10.0 => format!("{value:.1}"),
        _ => format!("{value:.2}"),
    }
}

/// Plotters' error, whose backend error type is not `Send + Sync`.
fn drawing<E: std::fmt::Debug>(error: E) -> anyhow::Error {
    anyhow!("drawing a chart: {error:?}")
}

/// `svg` as plotters wrote it, tagged for the page: `class="plot"`, `data-plot`, a
/// unique id, a `<title>` that browsers show and tests find, and the page's width
/// (`width="100%"` in place of plotters' pixel size; the `viewBox` keeps the shape).
fn tag(svg: &str, kind: Kind, id: &str, title: &str) -> String {
    let body = svg.strip_prefix("<svg ").unwrap_or(svg);
    let (attributes, rest) = body.split_once('>').unwrap_or((body, ""));
    let attributes: Vec<&str> = attributes
        .split(' ')
        .filter(|a| !a.starts_with("width=") && !a.starts_with("height="))
        .collect();
    format!(
        "<svg class=\"plot\" data-plot=\"{}\" id=\"{}\" role=\"img\" width=\"100%\" {}><title>{}</title>{rest}",
        kind.name(),
        escape(id),
        attributes.join(" "),
        escape(title)
    )
}

fn render(
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        draw(&root)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// Lines without a class: Paul Tol's bright scheme, distinguishable also for
/// colour-blind readers.
fn color(index: usize) -> RGBColor {
    const COLORS: [RGBColor; 7] = [
        RGBColor(68, 119, 170),
        RGBColor(238, 102, 119),
        RGBColor(34, 136, 51),
        RGBColor(204, 187, 68),
        RGBColor(102, 204, 238),
        RGBColor(170, 51, 119),
        RGBColor(102, 102, 102),
    ];
    COLORS[index % COLORS.len()]
}

/// Every class bars and lines are coloured by, each its own colour (Paul Tol's
/// schemes), fixed so that a class looks the same in every chart and every page.
const CLASS_COLORS: [(&str, RGBColor); 20] = [
    ("irq", RGBColor(68, 119, 170)),
    ("softirq", RGBColor(34, 136, 51)),
    ("nmi", RGBColor(170, 51, 119)),
    ("thread", RGBColor(238, 102, 119)),
    ("hw", RGBColor(204, 187, 68)),
    ("entry_exit", RGBColor(102, 204, 238)),
    ("no_record", RGBColor(187, 187, 187)),
    ("dropped", RGBColor(68, 68, 68)),
    ("idle", RGBColor(153, 221, 255)),
    ("scheduler", RGBColor(136, 34, 85)),
    ("timer", RGBColor(51, 34, 136)),
    ("work", RGBColor(68, 170, 153)),
    ("untraced", RGBColor(119, 119, 119)),
    ("other", RGBColor(221, 221, 221)),
    ("undelayed", RGBColor(204, 221, 170)),
    ("handler", RGBColor(238, 136, 102)),
    ("wakeup", RGBColor(119, 170, 221)),
    ("sched", RGBColor(153, 68, 85)),
    ("return", RGBColor(17, 119, 51)),
    ("interrupt", RGBColor(102, 153, 204)),
];

/// The colour of `class`: its own if it is one of `CLASS_COLORS`, else one of theirs
/// picked by its name (the same name, the same colour).
pub fn class_color(class: &str) -> RGBColor {
    if let Some((_, color)) = CLASS_COLORS.iter().find(|(name, _)| *name == class) {
        return *color;
    }
    // FNV-1a: stable across runs and builds, unlike the std hasher
    let hash = class.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    CLASS_COLORS[(hash % CLASS_COLORS.len() as u64) as usize].1
}

impl XyChart {
    /// The chart as an `<svg class="plot">` element with id `id`.
    pub fn to_svg(&self, id: &str) -> Result<String> {
        let x = self
            .x
            .range(self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
        let y = self
            .y
            .range(self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
        // a legend above the plot takes its own rows: the plot keeps its height
        let height = HEIGHT
            + self
                .legend_above()
                .map_or(0, |entries| legend_height(&entries));
        let svg = match (self.x.scale, self.y.scale) {
            (Scale::Linear, Scale::Linear) => render(height, |root| self.draw(root, x, y)),
            (Scale::Linear, Scale::Log) => render(height, |root| self.draw(root, x, y.log_scale())),
            (Scale::Log, Scale::Linear) => render(height, |root| self.draw(root, x.log_scale(), y)),
            (Scale::Log, Scale::Log) => {
                render(height, |root| self.draw(root, x.log_scale(), y.log_scale()))
            }
        }?;
        Ok(tag(&svg, self.kind, id, &self.title))
    }

    /// Each line's colour: its class's, or by its place among the measured lines
    /// (a reference line, grey, takes none of theirs).
    fn colors(&self) -> Vec<RGBColor> {
        let mut measured = 0;
        self.lines
            .iter()
            .map(|line| match (line.stroke, line.class.as_deref()) {
                (Stroke::Reference, _) => REFERENCE_GREY,
                (_, Some(class)) => class_color(class),
                (_, None) => {
                    measured += 1;
                    color(measured - 1)
                }
            })
            .collect()
    }

    /// The legend's entries when it goes above the plot, measured lines first.
    fn legend_above(&self) -> Option<Vec<LegendEntry>> {
        if !matches!(self.kind.legend_place(), LegendPlace::Above) {
            return None;
        }
        let mut entries: Vec<(bool, LegendEntry)> = self
            .lines
            .iter()
            .zip(self.colors())
            .map(|(line, color)| {
                let entry = LegendEntry {
                    name: line.name.clone(),
                    swatch: Swatch::Line(line_style(line.stroke, color)),
                };
                (line.stroke == Stroke::Reference, entry)
            })
            .collect();
        entries.sort_by_key(|(reference, _)| *reference);
        Some(entries.into_iter().map(|(_, entry)| entry).collect())
    }

    fn draw<X, Y>(&self, root: &DrawingArea<SVGBackend, Shift>, x: X, y: Y) -> Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let legend_above = self.legend_above();
        let area = match &legend_above {
            Some(entries) => {
                let area = root
                    .titled(&self.title, (FONT, CAPTION_SIZE))
                    .map_err(drawing)?;
                let (legend, area) = area.split_vertically(legend_height(entries));
                draw_legend(&legend, entries)?;
                area
            }
            None => root.clone(),
        };
        let mut builder = ChartBuilder::on(&area);
        if legend_above.is_none() {
            builder.caption(&self.title, (FONT, CAPTION_SIZE));
        }
        let mut chart = builder
            .margin(10)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d(x, y)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(micro_sign(&self.x.label))
            .y_desc(micro_sign(&self.y.label))
            .x_label_formatter(&|v| tick_label(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .label_style((FONT, LABEL_SIZE))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(drawing)?;
        let (x_range, y_range) = (chart.x_range(), chart.y_range());
        // a log axis cannot show 0 (an empty bucket): it lies on the axis' lower end
        let clamp = |axis: &Axis, range: &Range<f64>, v: f64| match axis.scale {
            Scale::Log => v.max(range.start),
            Scale::Linear => v,
        };
        // references first: the measured lines are drawn over them
        let mut order: Vec<usize> = (0..self.lines.len()).collect();
        order.sort_by_key(|&index| self.lines[index].stroke != Stroke::Reference);
        let colors = self.colors();
        for index in order {
            let (line, color) = (&self.lines[index], colors[index]);
            let style = line_style(line.stroke, color);
            let points: Vec<(f64, f64)> = line
                .points
                .iter()
                .map(|&(px, py)| (clamp(&self.x, &x_range, px), clamp(&self.y, &y_range, py)))
                .collect();
            let faded_from = line.faded_from.unwrap_or(points.len()).min(points.len());
            chart
                // up to and with the point the faded part starts at: they join
                .draw_series(LineSeries::new(
                    points[..points.len().min(faded_from + 1)].iter().copied(),
                    style,
                ))
                .map_err(drawing)?
                .label(line.name.as_str())
                .legend(move |(lx, ly)| PathElement::new([(lx, ly), (lx + 18, ly)], style));
            if faded_from + 1 < points.len() {
                let faded = color.mix(0.35).stroke_width(2);
                chart
                    .draw_series(LineSeries::new(points[faded_from..].iter().copied(), faded))
                    .map_err(drawing)?;
            }
            if line.stroke == Stroke::Marked {
                let markers = points
                    .iter()
                    .map(|&point| Circle::new(point, MARKER_PX, color.filled()));
                chart.draw_series(markers).map_err(drawing)?;
            }
        }
        // even a single line is named: which CPU or mechanism it is
        if let (LegendPlace::Inside(position), false) =
            (self.kind.legend_place(), self.lines.is_empty())
        {
            chart
                .configure_series_labels()
                .position(position)
                .label_font((FONT, LABEL_SIZE))
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .draw()
                .map_err(drawing)?;
        }
        Ok(())
    }
}

/// How a line of `stroke` in `color` is drawn.
fn line_style(stroke: Stroke, color: RGBColor) -> ShapeStyle {
    match stroke {
        Stroke::Reference => color.stroke_width(1),
        Stroke::Plain | Stroke::Marked => color.stroke_width(2),
    }
}

/// At most `LABEL_CHARS` characters, with an ellipsis when cut.
fn shorten(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return label.to_owned();
    }
    let mut short: String = label.chars().take(LABEL_CHARS - 1).collect();
    short.push('…');
    short
}

impl BarChart {
    /// The chart as an `<svg class="plot">` element with id `id`: a row per bar, its
    /// label left of it, its parts coloured by class, its total printed at its end,
    /// and, when there are several classes, a legend of them under the title.
    pub fn to_svg(&self, id: &str) -> Result<String> {
        let labels: Vec<String> = self.bars.iter().map(|bar| shorten(&bar.label)).collect();
        let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let rows = self.bars.len().max(1);
        let mut classes: Vec<&str> = Vec::new();
        for (class, _) in self.bars.iter().flat_map(|bar| &bar.parts) {
            if !classes.contains(&class.as_str()) {
                classes.push(class);
            }
        }
        // one class needs no legend: the title says what the bars are
        if classes.len() == 1 {
            classes.clear();
        }
        let legend: Vec<LegendEntry> = classes
            .iter()
            .map(|class| LegendEntry {
                name: class.to_string(),
                swatch: Swatch::Fill(class_color(class)),
            })
            .collect();
        let legend_px = legend_height(&legend);
        // the rows, the title, the legend, the value axis and the margins
        let height = ROW_PX * rows as u32 + CAPTION_PX + legend_px + 48 + 20;
        let max = self.bars.iter().map(Bar::total).fold(0.0f64, f64::max);
        let widest_value = self
            .bars
            .iter()
            .map(|bar| value_label(bar.total()).len())
            .max()
            .unwrap_or(0);
        let svg = render(height, |root| {
            let area = root
                .titled(&self.title, (FONT, CAPTION_SIZE))
                .map_err(drawing)?;
            let (legend_area, area) = area.split_vertically(legend_px);
            draw_legend(&legend_area, &legend)?;
            let label_area = (longest as f64 * CHAR_PX) as u32 + 16;
            // room right of the longest bar for its value
            let plot_px = (WIDTH - label_area - 20 - RIGHT_MARGIN) as f64;
            let value_px = widest_value as f64 * CHAR_PX + 10.0;
            let x_end = if max > 0.0 {
                max * plot_px / (plot_px - value_px).max(plot_px / 2.0)
            } else {
                1.0
            };
            let mut chart = ChartBuilder::on(&area)
                .margin(10)
                .margin_right(RIGHT_MARGIN)
                .x_label_area_size(48)
                .y_label_area_size(label_area)
                // one row per bar, row 0 at the bottom
                .build_cartesian_2d(0.0..x_end, 0.0..rows as f64)
                .map_err(drawing)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_desc(micro_sign(&self.value_label))
                .x_label_formatter(&|v| tick_label(*v))
                .label_style((FONT, LABEL_SIZE))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(drawing)?;
            let label_style = TextStyle::from((FONT, LABEL_SIZE).into_font());
            let left = label_style.pos(Pos::new(HPos::Right, VPos::Center));
            let right = label_style.pos(Pos::new(HPos::Left, VPos::Center));
            for (index, bar) in self.bars.iter().enumerate() {
                // the first bar at the top
                let row = (rows - 1 - index) as f64;
                let mut start = 0.0;
                let parts = bar.parts.iter().map(|(class, value)| {
                    let mut part = Rectangle::new(
                        [(start, row), (start + value, row + 1.0)],
                        class_color(class).filled(),
                    );
                    part.set_margin(3, 3, 0, 0);
                    start += value;
                    part
                });
                chart.draw_series(parts).map_err(drawing)?;
                let middle = row + 0.5;
                let texts = [
                    EmptyElement::at((0.0, middle))
                        + Text::new(labels[index].clone(), (-6, 0), left.clone()),
                    EmptyElement::at((bar.total(), middle))
                        + Text::new(value_label(bar.total()), (5, 0), right.clone()),
                ];
                chart.draw_series(texts).map_err(drawing)?;
            }
            Ok(())
        })?;
        Ok(tag(&svg, self.kind, id, &self.title))
    }
}

/// One entry of a legend drawn outside the plotting area.
struct LegendEntry {
    name: String,
    swatch: Swatch,
}

/// What shows an entry's colour.
enum Swatch {
    /// A filled square: a bar's part.
    Fill(RGBColor),
    /// A short stroke: a line.
    Line(ShapeStyle),
}

const SWATCH_PX: i32 = 14;

/// An entry's width: its swatch, its name and the space after it, px.
fn entry_px(entry: &LegendEntry) -> i32 {
    SWATCH_PX + 6 + (entry.name.chars().count() as f64 * CHAR_PX) as i32 + 18
}

/// The entries in rows that fit the canvas's width.
fn legend_rows(entries: &[LegendEntry]) -> Vec<&[LegendEntry]> {
    let room = WIDTH as i32 - 40;
    let mut rows = Vec::new();
    let (mut start, mut width) = (0, 0);
    for (index, entry) in entries.iter().enumerate() {
        if index > start && width + entry_px(entry) > room {
            rows.push(&entries[start..index]);
            (start, width) = (index, 0);
        }
        width += entry_px(entry);
    }
    if start < entries.len() {
        rows.push(&entries[start..]);
    }
    rows
}

/// The height of the legend of `entries`, px.
fn legend_height(entries: &[LegendEntry]) -> u32 {
    LEGEND_PX * legend_rows(entries).len() as u32
}

/// The entries' swatches and names, each row centred in `area`.
fn draw_legend(area: &DrawingArea<SVGBackend, Shift>, entries: &[LegendEntry]) -> Result<()> {
    let style =
        TextStyle::from((FONT, LABEL_SIZE).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, entries) in legend_rows(entries).into_iter().enumerate() {
        let total: i32 = entries.iter().map(entry_px).sum();
        let mut x = (WIDTH as i32 - total).max(0) / 2;
        let middle = LEGEND_PX as i32 * row as i32 + LEGEND_PX as i32 / 2;
        for entry in entries {
            match entry.swatch {
                Swatch::Fill(color) => area.draw(&Rectangle::new(
                    [
                        (x, middle - SWATCH_PX / 2),
                        (x + SWATCH_PX, middle + SWATCH_PX / 2),
                    ],
                    color.filled(),
                )),
                Swatch::Line(style) => area.draw(&PathElement::new(
                    [(x, middle), (x + SWATCH_PX, middle)],
                    style,
                )),
            }
            .map_err(drawing)?;
            area.draw(&Text::new(
                entry.name.clone(),
                (x + SWATCH_PX + 6, middle),
                style.clone(),
            ))
            .map_err(drawing)?;
            x += entry_px(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn line(points: &[(f64, f64)]) -> Line {
        Line::new("CPU 0", points.to_vec())
    }

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("kworker/1:1:9"), "kworker/1:1:9");
    }

    #[test]
    fn log_scale_when_values_span_decades() {
        assert_eq!(Scale::for_span(5.0, 40.0), Scale::Linear);
        assert_eq!(Scale::for_span(5.0, 500.0), Scale::Log);
        assert_eq!(Scale::for_span(0.0, 500.0), Scale::Linear);
    }

    #[test]
    fn log_range_covers_whole_decades_and_skips_zero() {
        let axis = Axis::new("count", Scale::Log);
        // from a hair under the decade below, so that its tick is drawn
        let decades = |values: &[f64], low: f64, high: f64| {
            let range = axis.range(values.iter().copied());
            assert!(
                range.start < low && range.start > low * 0.9999 && range.end == high,
                "{range:?}"
            );
        };
        decades(&[0.0, 3.0, 4_500.0], 1.0, 10_000.0);
        decades(&[0.2, 0.5], 0.1, 1.0);
        assert_eq!(axis.range([0.0].into_iter()), 1.0..10.0);
        // the tick at the lower end is drawn
        let chart = XyChart {
            kind: Kind::Histogram,
            title: "sub-µs".into(),
            x: Axis::new("latency (µs)", Scale::Log),
            y: Axis::new("samples", Scale::Linear),
            lines: vec![line(&[(0.2, 1.0), (40.0, 2.0)])],
        };
        let svg = chart.to_svg("s1-histogram-1").unwrap();
        assert!(svg.contains(">\n0.1\n</text>"), "{svg}");
        let linear = Axis::new("us", Scale::Linear);
        assert_eq!(linear.range([2.0, 10.0].into_iter()), 0.0..10.5);
        let fixed = Axis::new("fraction", Scale::Linear).with_bounds(0.0..1.0);
        assert_eq!(fixed.range([7.0].into_iter()), 0.0..1.0);
    }

    #[test]
    fn the_unit_us_is_spelled_with_the_micro_sign() {
        assert_eq!(micro_sign("duration (us)"), "duration (µs)");
        assert_eq!(micro_sign("KERNEL(us)"), "KERNEL(µs)");
        assert_eq!(micro_sign("time in us, us: us"), "time in µs, µs: µs");
        assert_eq!(micro_sign("us"), "µs");
        // words that hold the letters are not the unit
        for word in ["status", "bus_id", "usage", "focus", "µs", "usus", "run_us"] {
            assert_eq!(micro_sign(word), word);
        }
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(0.1 + 0.2), "0.3");
        assert_eq!(tick_label(0.01), "0.01");
        assert_eq!(tick_label(0.0001), "1e-4");
    }

    #[test]
    fn log_chart_has_decade_ticks_and_a_tagged_svg() {
        let chart = XyChart {
            kind: Kind::Histogram,
            title: "Noise <CPU 0> & more".into(),
            x: Axis::new("duration (us)", Scale::Linear),
            y: Axis::new("samples", Scale::Log),
            lines: vec![line(&[(1.0, 0.0), (2.0, 5.0), (3.0, 4_000.0)])],
        };
        let svg = chart.to_svg("s1-histogram").unwrap();
        assert!(svg.starts_with(r#"<svg class="plot" data-plot="histogram" id="s1-histogram""#));
        assert!(svg.contains("<title>Noise &lt;CPU 0&gt; &amp; more</title>"));
        assert!(!svg.contains("<CPU"), "a title went in unescaped");
        for decade in ["1", "10", "100", "1000", "10000"] {
            assert!(
                svg.contains(&format!(">\n{decade}\n</text>")),
                "no {decade} tick in {svg}"
            );
        }
        assert!(svg.contains("<polyline"));
        // the unit as the page spells it, whatever the caller wrote
        assert!(svg.contains("duration (µs)"));
    }

    pub(crate) use irqlens_test_support::svg::{attribute, circles, plot_area, polylines, rects};

    /// The texts of the chart as (x, font size, text, anchor, rotated).
    pub(crate) fn texts(svg: &str) -> Vec<(f64, f64, String, String, bool)> {
        irqlens_test_support::svg::texts(svg)
            .into_iter()
            .map(|t| (t.x, t.size, t.text, t.anchor, t.rotated))
            .collect()
    }

    fn view_box_width(svg: &str) -> f64 {
        let view_box = attribute(svg.lines().next().unwrap(), "viewBox");
        view_box.split(' ').nth(2).unwrap().parse().unwrap()
    }

    fn causes(bars: &[(&str, &str, f64)]) -> BarChart {
        BarChart {
            kind: Kind::Causes,
            title: "Top causes".into(),
            value_label: "us".into(),
            bars: bars
                .iter()
                .map(|(label, class, value)| Bar::single(*label, *class, *value))
                .collect(),
        }
    }

    #[test]
    fn bars_are_largest_first_with_their_labels() {
        let chart = causes(&[
            ("irq 11 <virtio>", "irq", 300.0),
            ("TIMER", "softirq", 100.0),
            (&"x".repeat(60), "thread", 10.0),
        ]);
        let svg = chart.to_svg("s2-causes").unwrap();
        assert!(svg.starts_with(r#"<svg class="plot" data-plot="causes""#));
        assert!(svg.contains("irq 11 &lt;virtio&gt;"));
        assert!(svg.contains(&format!("{}…", "x".repeat(LABEL_CHARS - 1))));
        let (top, _) = plot_area(&svg);
        // the bars, below the legend's swatches: widths in ratio 300:100:10, top first
        let bars: Vec<_> = rects(&svg).into_iter().filter(|r| r.1 >= top).collect();
        assert_eq!(bars.len(), 3, "{svg}");
        let widths: Vec<f64> = bars.iter().map(|r| r.2).collect();
        assert!(widths[0] > widths[1] && widths[1] > widths[2], "{widths:?}");
        assert!((widths[0] / widths[1] - 3.0).abs() < 0.1, "{widths:?}");
        assert!(bars[0].1 < bars[1].1 && bars[1].1 < bars[2].1, "{bars:?}");
    }

    #[test]
    fn n_bars_fill_exactly_n_rows() {
        for n in [1, 3, 15] {
            let bars: Vec<(String, f64)> = (0..n)
                .map(|i| (format!("cause {i}"), 100.0 - i as f64))
                .collect();
            let bars: Vec<(&str, &str, f64)> = bars
                .iter()
                .map(|(label, value)| (label.as_str(), "irq", *value))
                .collect();
            let svg = causes(&bars).to_svg("s1-causes-1").unwrap();
            let (top, bottom) = plot_area(&svg);
            let bars = rects(&svg);
            assert_eq!(bars.len(), n);
            // each bar has 3 px of its row above and below: no row is left empty
            let (first, last) = (&bars[0], &bars[n - 1]);
            assert!(
                (first.1 - 3.0 - top).abs() <= 1.5,
                "{n} bars: {first:?} under {top}"
            );
            let end = last.1 + last.3 + 3.0;
            assert!(
                (end - bottom).abs() <= 1.5,
                "{n} bars end at {end}, the rows at {bottom}"
            );
        }
    }

    #[test]
    fn bars_print_their_values() {
        let svg = causes(&[("a", "irq", 1234.4), ("b", "irq", 56.78), ("c", "irq", 3.0)])
            .to_svg("s1-causes-1")
            .unwrap();
        let texts: Vec<String> = texts(&svg).into_iter().map(|t| t.2).collect();
        for value in ["1234", "56.8", "3"] {
            assert!(texts.iter().any(|t| t == value), "no {value} in {texts:?}");
        }
    }

    #[test]
    fn one_colour_per_class_the_same_in_every_chart() {
        let colours: std::collections::HashSet<_> =
            CLASS_COLORS.iter().map(|(_, c)| (c.0, c.1, c.2)).collect();
        assert_eq!(
            colours.len(),
            CLASS_COLORS.len(),
            "two classes share a colour"
        );
        let first = causes(&[("a", "thread", 100.0), ("b", "irq", 50.0)])
            .to_svg("s1-causes-1")
            .unwrap();
        let second = causes(&[("c", "irq", 100.0), ("d", "hw", 10.0)])
            .to_svg("s1-causes-2")
            .unwrap();
        let (top, _) = plot_area(&first);
        let bars = |svg: &str| -> Vec<String> {
            rects(svg)
                .into_iter()
                .filter(|r| r.1 >= top)
                .map(|r| r.4)
                .collect()
        };
        let (first, second) = (bars(&first), bars(&second));
        assert_ne!(first[0], first[1], "thread and irq look alike");
        assert_eq!(first[1], second[0], "irq changed colour between charts");
        assert_ne!(second[0], second[1]);
        assert_eq!(class_color("some new class"), class_color("some new class"));
    }

    #[test]
    fn stacked_bars_show_their_parts_in_order_and_a_legend() {
        let chart = BarChart {
            kind: Kind::Worst,
            title: "worst".into(),
            value_label: "us".into(),
            bars: vec![Bar {
                label: "1.".into(),
                parts: vec![
                    ("irq".into(), 30.0),
                    ("sched".into(), 60.0),
                    ("return".into(), 10.0),
                ],
            }],
        };
        let svg = chart.to_svg("s1-worst-1").unwrap();
        assert!(svg.starts_with(r#"<svg class="plot" data-plot="worst""#));
        let (top, _) = plot_area(&svg);
        let (swatches, parts): (Vec<_>, Vec<_>) = rects(&svg).into_iter().partition(|r| r.1 < top);
        assert_eq!(parts.len(), 3);
        assert!((parts[1].2 / parts[0].2 - 2.0).abs() < 0.1, "{parts:?}");
        assert!(
            (parts[0].0 + parts[0].2 - parts[1].0).abs() <= 1.0,
            "parts do not join"
        );
        let legend: Vec<String> = swatches.into_iter().map(|r| r.4).collect();
        let part_colours: Vec<String> = parts.into_iter().map(|r| r.4).collect();
        assert_eq!(legend, part_colours);
        let texts: Vec<String> = texts(&svg).into_iter().map(|t| t.2).collect();
        assert!(
            ["irq", "sched", "return", "100"]
                .iter()
                .all(|t| texts.iter().any(|x| x == t))
        );
    }

    #[test]
    fn charts_take_the_page_width() {
        let bars = causes(&[("a", "irq", 1.0)]).to_svg("b").unwrap();
        let lines = XyChart {
            kind: Kind::Cdf,
            title: "cdf".into(),
            x: Axis::new("us", Scale::Linear),
            y: Axis::new("fraction", Scale::Linear),
            lines: vec![line(&[(1.0, 0.0), (2.0, 1.0)])],
        }
        .to_svg("c")
        .unwrap();
        for svg in [bars, lines] {
            let tag = svg.lines().next().unwrap();
            let tag = &tag[..tag.find('>').unwrap()];
            assert!(tag.contains(" width=\"100%\""), "{tag}");
            assert!(!tag.contains(" height="), "a fixed height: {tag}");
            assert_eq!(view_box_width(&svg), WIDTH as f64, "{tag}");
        }
    }

    #[test]
    fn log_axis_tick_labels_stay_inside_the_view_box() {
        let chart = XyChart {
            kind: Kind::Exceedance,
            title: "tail".into(),
            x: Axis::new("duration (us)", Scale::Log),
            y: Axis::new("fraction above", Scale::Log).with_bounds(0.000_999..1.0),
            lines: vec![line(&[(1.0, 1.0), (50.0, 0.01), (70_000.0, 0.001)])],
        };
        let svg = chart.to_svg("s1-exceedance-1").unwrap();
        let width = view_box_width(&svg);
        let texts = texts(&svg);
        assert!(texts.iter().any(|t| t.2 == "100000"), "{texts:?}");
        assert!(texts.iter().any(|t| t.2 == "1e-3"), "{texts:?}");
        for (x, size, text, anchor, rotated) in texts {
            // a generous estimate of a sans-serif character's width
            let half = text.chars().count() as f64 * size * 0.6 / 2.0;
            let right = match anchor.as_str() {
                "middle" => x + half,
                "start" => x + 2.0 * half,
                _ => x,
            };
            assert!(
                rotated || right <= width,
                "{text:?} ends at {right} of {width}"
            );
        }
    }

    #[test]
    fn a_geometric_ladder_gets_a_log_axis() {
        let doubling = [20e3, 40e3, 80e3, 160e3, 320e3, 640e3, 1e6];
        assert_eq!(Scale::for_ladder(doubling), Scale::Log);
        // in any order, rounds repeated
        assert_eq!(Scale::for_ladder([80e3, 20e3, 40e3, 20e3]), Scale::Log);
        assert_eq!(
            Scale::for_ladder([100e3, 200e3, 300e3, 400e3]),
            Scale::Linear
        );
        // two rungs say nothing of a ladder: their span decides
        assert_eq!(Scale::for_ladder([10e3, 20e3]), Scale::Linear);
        assert_eq!(Scale::for_ladder([1e3, 1e6]), Scale::Log);
        assert_eq!(Scale::for_ladder([]), Scale::Linear);
    }

    /// A ladder of two designs over five rates and the diagonal, log-log.
    fn ladder() -> XyChart {
        let rates: [f64; 5] = [20e3, 40e3, 80e3, 160e3, 320e3];
        let design = |name: &str, ceiling: f64| {
            let points = rates.iter().map(|&r| (r, r.min(ceiling))).collect();
            Line::new(name, points).marked()
        };
        XyChart {
            kind: Kind::Ladder,
            title: "echoed".into(),
            x: Axis::new("offered (datagrams/s)", Scale::Log),
            y: Axis::new("echoed (datagrams/s)", Scale::Log),
            lines: vec![
                design("stock", 100e3),
                design("threaded", 300e3),
                Line::reference("echoed = offered", rates.map(|r| (r, r)).to_vec()),
            ],
        }
    }

    #[test]
    fn a_ladder_marks_each_point_and_draws_its_reference_thin_grey_and_first() {
        let svg = ladder().to_svg("s1-ladder-1").unwrap();
        let (top, _) = plot_area(&svg);
        let markers = circles(&svg);
        assert_eq!(markers.len(), 10, "a marker per point of the two designs");
        let drawn: Vec<_> = polylines(&svg)
            .into_iter()
            .filter(|l| l.points.len() == 5 && l.points[0].1 > top)
            .collect();
        assert_eq!(drawn.len(), 3, "{drawn:?}");
        let grey = "#6E6E6E";
        assert_eq!((drawn[0].stroke.as_str(), drawn[0].width), (grey, 1.0));
        // the markers sit on their lines, in their colours
        for line in &drawn[1..] {
            assert_ne!(line.stroke, grey);
            for point in &line.points {
                assert!(markers.contains(point), "no marker at {point:?}");
            }
            let fill = format!("fill=\"{}\"", line.stroke);
            assert_eq!(
                svg.lines()
                    .filter(|l| l.starts_with("<circle") && l.contains(&fill))
                    .count(),
                5
            );
        }
        // the plain lines of other charts have none
        let cdf = XyChart {
            kind: Kind::Cdf,
            lines: vec![line(&[(1.0, 0.0), (2.0, 0.5), (3.0, 1.0)])],
            ..ladder()
        };
        assert!(circles(&cdf.to_svg("c").unwrap()).is_empty());
    }

    #[test]
    fn a_ladders_legend_is_above_the_plot_where_it_hides_no_point() {
        let chart = ladder();
        let svg = chart.to_svg("s1-ladder-1").unwrap();
        let (top, bottom) = plot_area(&svg);
        let texts = irqlens_test_support::svg::texts(&svg);
        for line in &chart.lines {
            let y = texts
                .iter()
                .find(|t| t.text == line.name)
                .unwrap_or_else(|| panic!("no legend entry {}", line.name))
                .y;
            // half a row of text under its middle, still above the plot
            assert!(y + 8.0 < top, "{} at {y}, the plot from {top}", line.name);
        }
        // no box over the plot: the only rectangle is the background
        assert_eq!(rects(&svg).len(), 0, "{svg}");
        for (x, y) in circles(&svg) {
            assert!(
                (top..=bottom).contains(&y),
                "a point at {x},{y} off the plot"
            );
        }
        // the plot keeps its height: the canvas grows by the legend's row
        let height = attribute(svg.lines().next().unwrap(), "viewBox")
            .split(' ')
            .nth(3)
            .unwrap()
            .parse::<u32>()
            .unwrap();
        assert_eq!(height, HEIGHT + LEGEND_PX);
    }

    #[test]
    fn a_long_legend_wraps_into_rows_that_fit() {
        let entries: Vec<LegendEntry> = (0..12)
            .map(|i| LegendEntry {
                name: format!("threaded-niced+budget {i}"),
                swatch: Swatch::Fill(color(i)),
            })
            .collect();
        let rows = legend_rows(&entries);
        assert!(rows.len() > 1);
        assert_eq!(rows.iter().map(|r| r.len()).sum::<usize>(), entries.len());
        for row in &rows {
            let width: i32 = row.iter().map(entry_px).sum();
            assert!(width <= WIDTH as i32 - 40, "a row of {width} px");
        }
        assert_eq!(legend_height(&entries), LEGEND_PX * rows.len() as u32);
        assert_eq!(legend_height(&[]), 0);
    }
}
