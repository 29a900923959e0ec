//! SVG charts for the HTML report, drawn with `plotters`' SVG backend only.
//!
//! Why plotters and no font backend: its SVG backend writes every label as an SVG
//! `<text>` element (escaped, in the generic `sans-serif` family the browser resolves)
//! and sizes labels with a built-in estimate, so axes, ticks, log scales and legends
//! come without fontconfig, FreeType or a font file at build or run time. We describe
//! charts as data (`XyChart`, `BarChart`) and draw them here in one place, so every
//! plot of every capability looks alike and the drawing code is not repeated.

use std::ops::Range;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, SegmentValue, ValueFormatter};
use plotters::prelude::*;

const WIDTH: u32 = 760;
const HEIGHT: u32 = 340;
const FONT: &str = "sans-serif";
/// Labels of bar charts are cut to this many characters (the table below has them whole).
const LABEL_CHARS: usize = 44;

/// What a plot shows: its `data-plot` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A histogram, as steps.
    Histogram,
    /// A cumulative distribution.
    Cdf,
    /// Bars of the top causes (victims, causers).
    Causes,
    /// Noise over time.
    Timeline,
}

impl Kind {
    /// Its `data-plot` attribute.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Histogram => "histogram",
            Kind::Cdf => "cdf",
            Kind::Causes => "causes",
            Kind::Timeline => "timeline",
        }
    }
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
                low..high
            }
            Scale::Log => 1.0..10.0,
        }
    }
}

/// From 0 to a little above `max` (to 1 when nothing is above 0).
fn from_zero(max: f64) -> Range<f64> {
    0.0..if max > 0.0 { max * 1.05 } else { 1.0 }
}

/// One named polyline (a CPU, a mechanism).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Its legend entry.
    pub name: String,
    /// Its (x, y) points.
    pub points: Vec<(f64, f64)>,
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

/// Horizontal bars, largest first at the top: the top causes, victims, causers.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// Its title (also the SVG's `<title>`).
    pub title: String,
    /// The value axis's label, unit included.
    pub value_label: String,
    /// (label, value) per bar, largest first.
    pub bars: Vec<(String, f64)>,
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

/// Tick labels: whole numbers plainly, fractions with as few digits as they need.
pub fn tick_label(value: f64) -> String {
    if value == value.round() && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// Plotters' error, whose backend error type is not `Send + Sync`.
fn drawing<E: std::fmt::Debug>(error: E) -> anyhow::Error {
    anyhow!("drawing a chart: {error:?}")
}

/// `svg` as plotters wrote it, tagged for the page: `class="plot"`, `data-plot`, a
/// unique id, and a `<title>` that browsers show and tests find.
fn tag(svg: &str, kind: Kind, id: &str, title: &str) -> String {
    let body = svg.strip_prefix("<svg ").unwrap_or(svg);
    let (attributes, rest) = body.split_once('>').unwrap_or((body, ""));
    format!(
        "<svg class=\"plot\" data-plot=\"{}\" id=\"{}\" role=\"img\" {attributes}><title>{}</title>{rest}",
        kind.name(),
        escape(id),
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

fn color(index: usize) -> RGBColor {
    // Paul Tol's bright scheme: distinguishable, also for colour-blind readers
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

impl XyChart {
    /// The chart as an `<svg class="plot">` element with id `id`.
    pub fn to_svg(&self, id: &str) -> Result<String> {
        let x = self
            .x
            .range(self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
        let y = self
            .y
            .range(self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)));
        let svg = match (self.x.scale, self.y.scale) {
            (Scale::Linear, Scale::Linear) => render(HEIGHT, |root| self.draw(root, x, y)),
            (Scale::Linear, Scale::Log) => render(HEIGHT, |root| self.draw(root, x, y.log_scale())),
            (Scale::Log, Scale::Linear) => render(HEIGHT, |root| self.draw(root, x.log_scale(), y)),
            (Scale::Log, Scale::Log) => {
                render(HEIGHT, |root| self.draw(root, x.log_scale(), y.log_scale()))
            }
        }?;
        Ok(tag(&svg, self.kind, id, &self.title))
    }

    fn draw<X, Y>(&self, root: &DrawingArea<SVGBackend, Shift>, x: X, y: Y) -> Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FONT, 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x, y)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(self.x.label.as_str())
            .y_desc(self.y.label.as_str())
            .x_label_formatter(&|v| tick_label(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .label_style((FONT, 12))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(drawing)?;
        let (x_range, y_range) = (chart.x_range(), chart.y_range());
        // a log axis cannot show 0 (an empty bucket): it lies on the axis' lower end
        let clamp = |axis: &Axis, range: &Range<f64>, v: f64| match axis.scale {
            Scale::Log => v.max(range.start),
            Scale::Linear => v,
        };
        for (index, line) in self.lines.iter().enumerate() {
            let style = color(index).stroke_width(2);
            let points = line
                .points
                .iter()
                .map(|&(px, py)| (clamp(&self.x, &x_range, px), clamp(&self.y, &y_range, py)));
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(drawing)?
                .label(line.name.as_str())
                .legend(move |(lx, ly)| PathElement::new([(lx, ly), (lx + 18, ly)], style));
        }
        // even a single line is named: which CPU or mechanism it is
        if !self.lines.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .label_font((FONT, 12))
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .draw()
                .map_err(drawing)?;
        }
        Ok(())
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
    /// The chart as an `<svg class="plot">` element with id `id`.
    pub fn to_svg(&self, id: &str) -> Result<String> {
        let labels: Vec<String> = self.bars.iter().map(|(label, _)| shorten(label)).collect();
        let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let rows = self.bars.len().max(1);
        let height = (HEIGHT as usize).max(70 + 22 * rows) as u32;
        let max = self.bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
        let svg = render(height, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&self.title, (FONT, 16))
                .margin(10)
                .x_label_area_size(40)
                // about 6.5 px per character of a 12 px sans-serif label
                .y_label_area_size((longest as f64 * 6.5) as u32 + 12)
                .build_cartesian_2d(from_zero(max), (0..rows).into_segmented())
                .map_err(drawing)?;
            // the largest bar, first in `bars`, is drawn at the top
            let row_of = |index: usize| rows - 1 - index;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(rows)
                .x_desc(self.value_label.as_str())
                .x_label_formatter(&|v| tick_label(*v))
                .y_label_formatter(&|v| match v {
                    SegmentValue::CenterOf(row) if *row < rows => {
                        labels.get(row_of(*row)).cloned().unwrap_or_default()
                    }
                    _ => String::new(),
                })
                .label_style((FONT, 12))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(drawing)?;
            let bars = self.bars.iter().enumerate().map(|(index, (_, value))| {
                let row = row_of(index);
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(row)),
                        (*value, SegmentValue::Exact(row + 1)),
                    ],
                    color(0).filled(),
                );
                bar.set_margin(3, 3, 0, 0);
                bar
            });
            chart.draw_series(bars).map_err(drawing)?;
            Ok(())
        })?;
        Ok(tag(&svg, Kind::Causes, id, &self.title))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(points: &[(f64, f64)]) -> Line {
        Line {
            name: "CPU 0".into(),
            points: points.to_vec(),
        }
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
        assert_eq!(axis.range([0.0, 3.0, 4_500.0].into_iter()), 1.0..10_000.0);
        assert_eq!(axis.range([0.2, 0.5].into_iter()), 0.1..1.0);
        assert_eq!(axis.range([0.0].into_iter()), 1.0..10.0);
        let linear = Axis::new("us", Scale::Linear);
        assert_eq!(linear.range([2.0, 10.0].into_iter()), 0.0..10.5);
        let fixed = Axis::new("fraction", Scale::Linear).with_bounds(0.0..1.0);
        assert_eq!(fixed.range([7.0].into_iter()), 0.0..1.0);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(0.1 + 0.2), "0.3");
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
        assert!(svg.contains("duration (us)"));
    }

    #[test]
    fn bars_are_largest_first_with_their_labels() {
        let chart = BarChart {
            title: "Top causes".into(),
            value_label: "us".into(),
            bars: vec![
                ("irq 11 <virtio>".into(), 300.0),
                ("TIMER".into(), 100.0),
                ("x".repeat(60), 10.0),
            ],
        };
        let svg = chart.to_svg("s2-causes").unwrap();
        assert!(svg.starts_with(r#"<svg class="plot" data-plot="causes""#));
        assert!(svg.contains("irq 11 &lt;virtio&gt;"));
        assert!(svg.contains(&format!("{}…", "x".repeat(LABEL_CHARS - 1))));
        // three filled bars besides the white background, widths in ratio 300:100:10
        let widths: Vec<f64> = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && !l.contains("#FFFFFF"))
            .map(|l| {
                let width = l.split("width=\"").nth(1).unwrap();
                width.split('"').next().unwrap().parse().unwrap()
            })
            .collect();
        assert_eq!(widths.len(), 3, "{svg}");
        assert!(widths[0] > widths[1] && widths[1] > widths[2], "{widths:?}");
        assert!((widths[0] / widths[1] - 3.0).abs() < 0.1, "{widths:?}");
    }
}
