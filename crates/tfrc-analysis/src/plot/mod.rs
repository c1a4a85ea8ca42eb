//! Plots in the papers' forms, as PNG or SVG (chosen by the file extension), drawn with
//! plotters.
//!
//! Two general figure kinds cover them all:
//! - [`LinePlot`]: lines of `(x, y)` points with a legend; linear or logarithmic x axis. Used
//!   for series over time ([`throughput_over_time`], [`rtt_over_time`], which overlay several
//!   runs — ours and ns-2's, simulated and real — with a legend entry per source) and for one
//!   line per group ([`grouped_xy`]: goodput vs loss rate per β, Jain index or T2/T1 vs the
//!   number of flows).
//! - [`BarChart`]: grouped bars per category (goodput or burstiness per scenario).
//!
//! Text is rendered with DejaVu Sans embedded in the crate (`assets/fonts`, Bitstream Vera
//! licence), so plotting needs no system fonts or fontconfig.
//!
//! This module is the rendering engine (the two figure kinds, their styles, axes and files);
//! [`recipes`] builds the figures of runs from it, re-exported here.

mod recipes;

pub use recipes::{
    cdf, delay_throughput, flow_color, grouped_xy, grouped_xy_with_bands, rtt_over_time,
    state_over_time, throughput_over_time, BandedGroup, NoDelayPercentile, Source,
};

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The font the plots use, registered with plotters as `sans-serif`.
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// What went wrong while drawing a figure. Each variant names the output file.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The extension is neither `.png` nor `.svg`.
    #[error("{}: unsupported image format (use a .png or .svg file name)", path.display())]
    UnsupportedFormat {
        /// The output file.
        path: PathBuf,
    },
    /// Nothing drawable: no finite point (or, on a log axis, no positive x).
    #[error("{}: nothing to plot in \"{title}\" (no finite data point)", path.display())]
    NoData {
        /// The output file.
        path: PathBuf,
        /// The figure's title.
        title: String,
    },
    /// The drawing backend failed (e.g. the file could not be written).
    #[error("{}: {message}", path.display())]
    Drawing {
        /// The output file.
        path: PathBuf,
        /// The backend's message.
        message: String,
    },
    /// The embedded font could not be loaded (a corrupted build).
    #[error("the embedded font could not be loaded")]
    Font,
}

/// Image format, from a file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// Raster image (plotters' bitmap backend).
    Png,
    /// Vector image.
    Svg,
}

impl ImageFormat {
    /// The format for `path`'s extension (case-insensitive).
    pub fn from_path(path: &Path) -> Result<ImageFormat, PlotError> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("png") => Ok(ImageFormat::Png),
            Some("svg") => Ok(ImageFormat::Svg),
            _ => Err(PlotError::UnsupportedFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// The greys of shaded spans, by label.
const SHADES: [RGBColor; 3] = [
    RGBColor(150, 150, 150),
    RGBColor(200, 170, 120),
    RGBColor(120, 160, 200),
];

/// The colour index of reference lines (black in the Okabe–Ito palette).
const REFERENCE_COLOR: usize = 6;

/// Colours by index: the Okabe–Ito colour-blind-safe palette (yellow last), then plotters'
/// 99-colour palette.
pub fn color(index: usize) -> RGBColor {
    const OKABE_ITO: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(204, 121, 167),
        RGBColor(0, 0, 0),
        RGBColor(240, 228, 66),
    ];
    if index < OKABE_ITO.len() {
        OKABE_ITO[index]
    } else {
        let (r, g, b) = Palette99::pick(index - OKABE_ITO.len()).rgb();
        RGBColor(r, g, b)
    }
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dash {
    /// Continuous.
    #[default]
    Solid,
    /// Long dashes.
    Dashed,
    /// Short dots.
    Dotted,
    /// No line at all: the points are drawn as markers only (a scatter of points that are not
    /// a series, such as one point per flow).
    Hidden,
}

impl Dash {
    /// By index: solid, dashed, dotted, then again.
    pub fn nth(index: usize) -> Dash {
        [Dash::Solid, Dash::Dashed, Dash::Dotted][index % 3]
    }

    /// (dash length, gap) in pixels, `None` for solid.
    fn pattern(self) -> Option<(u32, u32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((10, 6)),
            Dash::Dotted => Some((3, 4)),
            // Never stroked: see `LinePlot::draw`.
            Dash::Hidden => None,
        }
    }
}

/// The style of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineStyle {
    /// Index into [`color`].
    pub color: usize,
    /// Stroke pattern.
    pub dash: Dash,
    /// Draw a circle on every point (for sparse xy data).
    pub markers: bool,
}

/// One line of a [`LinePlot`].
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend entry.
    pub label: String,
    /// `(x, y)` points, drawn in order; non-finite points are left out.
    pub points: Vec<(f64, f64)>,
    /// `(x, low, high)`: a band shaded in the line's colour around it (e.g. a 95 % confidence
    /// interval over replications); empty for none. Non-finite entries are left out.
    pub band: Vec<(f64, f64, f64)>,
    /// How it is drawn.
    pub style: LineStyle,
}

/// Scale of the x axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// Linear.
    #[default]
    Linear,
    /// Logarithmic (base 10); points with x ≤ 0 are left out.
    Log,
}

/// A figure of lines with title, axis labels (with units) and a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePlot {
    /// Title above the plot.
    pub title: String,
    /// x axis label, with its unit, e.g. `time (s)`.
    pub x_label: String,
    /// y axis label, with its unit, e.g. `throughput (kb/s)`.
    pub y_label: String,
    /// x axis scale.
    pub x_scale: Scale,
    /// Start the y axis at 0 (rates, ratios) instead of at the data's minimum.
    pub y_from_zero: bool,
    /// The lines.
    pub lines: Vec<Line>,
    /// Horizontal reference lines `(label, y, style)` across the whole x range (e.g. the
    /// paper's value: T2/T1 ≈ 0.85, a flow's target rate).
    pub references: Vec<(String, f64, LineStyle)>,
    /// Spans of x shaded in grey behind the lines, each with its legend label (a loss period, the
    /// time a perturbing flow is on).
    pub shaded: Vec<(String, Range<f64>)>,
    /// The top of the y axis, if the data should not set it: values above run off the top
    /// (a start-up peak many times the steady rate would otherwise flatten everything else).
    pub y_max: Option<f64>,
    /// Image size in pixels (width, height).
    pub size: (u32, u32),
}

impl LinePlot {
    /// An empty plot: linear x, y from zero, 1000 × 600 pixels.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> LinePlot {
        LinePlot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_from_zero: true,
            lines: Vec::new(),
            references: Vec::new(),
            shaded: Vec::new(),
            y_max: None,
            size: (1000, 600),
        }
    }

    /// Adds a horizontal reference line at `y` (ignored if `y` is not finite), in black, each
    /// reference of the plot with its own dash (dotted, then dashed, then solid) so that two
    /// paper values are told apart in the legend.
    pub fn reference(self, label: impl Into<String>, y: f64) -> LinePlot {
        let dash = [Dash::Dotted, Dash::Dashed, Dash::Solid][self.references.len() % 3];
        let style = LineStyle {
            color: REFERENCE_COLOR,
            dash,
            markers: false,
        };
        self.reference_styled(label, y, style)
    }

    /// Adds a horizontal reference line at `y` in `style`: e.g. a flow's target rate, dotted in
    /// that flow's colour.
    pub fn reference_styled(
        mut self,
        label: impl Into<String>,
        y: f64,
        style: LineStyle,
    ) -> LinePlot {
        self.references.push((label.into(), y, style));
        self
    }

    /// Shades the x span `span` (ignored unless finite and non-empty), with `label` in the
    /// legend; spans with the same label share one legend entry.
    pub fn shade(mut self, label: impl Into<String>, span: Range<f64>) -> LinePlot {
        self.shaded.push((label.into(), span));
        self
    }

    /// Adds a line.
    pub fn line(
        mut self,
        label: impl Into<String>,
        points: Vec<(f64, f64)>,
        style: LineStyle,
    ) -> LinePlot {
        self.lines.push(Line {
            label: label.into(),
            points,
            band: Vec::new(),
            style,
        });
        self
    }

    /// Adds a line with a shaded band `(x, low, high)` around it.
    pub fn line_with_band(
        mut self,
        label: impl Into<String>,
        points: Vec<(f64, f64)>,
        band: Vec<(f64, f64, f64)>,
        style: LineStyle,
    ) -> LinePlot {
        self.lines.push(Line {
            label: label.into(),
            points,
            band,
            style,
        });
        self
    }

    /// Uses a logarithmic x axis.
    pub fn log_x(mut self) -> LinePlot {
        self.x_scale = Scale::Log;
        self
    }

    /// The distinct labels of the shaded spans, in order.
    fn shade_labels(&self) -> Vec<&str> {
        let mut labels: Vec<&str> = Vec::new();
        for (label, span) in &self.shaded {
            if drawable_span(span) && !labels.contains(&label.as_str()) {
                labels.push(label);
            }
        }
        labels
    }

    /// The points that will be drawn for `line`: finite, and x > 0 on a log axis.
    fn drawable<'a>(&self, line: &'a Line) -> impl Iterator<Item = (f64, f64)> + 'a {
        let log = self.x_scale == Scale::Log;
        line.points
            .iter()
            .copied()
            .filter(move |(x, y)| x.is_finite() && y.is_finite() && (!log || *x > 0.0))
    }

    /// The band entries that will be drawn for `line`: finite, and x > 0 on a log axis.
    fn drawable_band<'a>(&self, line: &'a Line) -> impl Iterator<Item = (f64, f64, f64)> + 'a {
        let log = self.x_scale == Scale::Log;
        line.band.iter().copied().filter(move |(x, low, high)| {
            x.is_finite() && low.is_finite() && high.is_finite() && (!log || *x > 0.0)
        })
    }

    /// Draws the plot into `path` (`.png` or `.svg`), creating its parent directory.
    pub fn draw(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        let path = path.as_ref();
        let format = ImageFormat::from_path(path)?;
        ensure_font()?;
        let points: Vec<(f64, f64)> = self.lines.iter().flat_map(|l| self.drawable(l)).collect();
        if points.is_empty() {
            return Err(PlotError::NoData {
                path: path.to_path_buf(),
                title: self.title.clone(),
            });
        }
        // Lines run edge to edge; markers alone get a margin so that none sits on an axis.
        let x_pad = if self.lines.iter().any(|l| l.style.dash == Dash::Hidden) {
            0.05
        } else {
            0.0
        };
        let x_range = match self.x_scale {
            Scale::Linear => padded_range(points.iter().map(|p| p.0), false, x_pad),
            Scale::Log => log_range(points.iter().map(|p| p.0)),
        };
        let mut lines = self.lines.clone();
        for (label, y, style) in self.references.iter().filter(|(_, y, _)| y.is_finite()) {
            lines.push(Line {
                label: label.clone(),
                points: vec![(x_range.start, *y), (x_range.end, *y)],
                band: Vec::new(),
                style: *style,
            });
        }
        let band_y: Vec<f64> = lines
            .iter()
            .flat_map(|l| self.drawable_band(l))
            .flat_map(|(_, low, high)| [low, high])
            .collect();
        let y_max = self.y_max.unwrap_or(f64::INFINITY);
        let all_y = lines
            .iter()
            .flat_map(|l| self.drawable(l))
            .map(|p| p.1)
            .chain(band_y)
            .filter(|y| *y <= y_max);
        let mut y_range = padded_range(all_y, self.y_from_zero, 0.05);
        if self.y_max.is_some() {
            y_range.end = y_range.end.min(y_max);
        }
        let y_range = with_legend_room(
            y_range,
            lines.len() + self.shade_labels().len(),
            self.size.1,
        );
        let figure = LineFigure {
            plot: self,
            lines: &lines,
            x_range,
            y_range,
        };
        draw_file(&figure, path, format, self.size)
    }

    fn render<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        lines: &[Line],
        x_range: Range<f64>,
        y_range: Range<f64>,
    ) -> Result<(), String> {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(&self.title, ("sans-serif", 24))
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(75);
        match self.x_scale {
            Scale::Linear => {
                let chart = builder
                    .build_cartesian_2d(x_range, y_range)
                    .map_err(|e| e.to_string())?;
                self.render_lines(chart, lines)
            }
            Scale::Log => {
                let chart = builder
                    .build_cartesian_2d(x_range.log_scale(), y_range)
                    .map_err(|e| e.to_string())?;
                self.render_lines(chart, lines)
            }
        }
    }

    /// Draws the mesh, the shaded spans, the lines' bands, the lines and the legend, in
    /// that order (each drawn over the one before).
    fn render_lines<'a, DB, X>(
        &self,
        mut chart: ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
        lines: &[Line],
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| tick_label(*v))
            .y_label_formatter(&|v| tick_label(*v))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 17))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| e.to_string())?;
        self.draw_shades(&mut chart)?;
        for line in lines {
            self.draw_band(&mut chart, line)?;
        }
        for line in lines {
            self.draw_line(&mut chart, line)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The shaded spans, full height, one colour and one legend entry per label.
    fn draw_shades<'a, DB, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let (y_low, y_high) = (chart.y_range().start, chart.y_range().end);
        for (index, label) in self.shade_labels().into_iter().enumerate() {
            let fill = SHADES[index % SHADES.len()].mix(0.35).filled();
            let spans = self
                .shaded
                .iter()
                .filter(|(l, span)| l == label && drawable_span(span));
            chart
                .draw_series(spans.map(|(_, span)| {
                    Rectangle::new([(span.start, y_low), (span.end, y_high)], fill)
                }))
                .map_err(|e| e.to_string())?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], fill));
        }
        Ok(())
    }

    /// A line's band (`[low, high]` around it), a light polygon in the line's colour; nothing
    /// for a line without one.
    fn draw_band<'a, DB, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
        line: &Line,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let mut band: Vec<(f64, f64, f64)> = self.drawable_band(line).collect();
        band.sort_by(|a, b| a.0.total_cmp(&b.0));
        if band.len() < 2 {
            return Ok(());
        }
        let outline: Vec<(f64, f64)> = band
            .iter()
            .map(|(x, _, high)| (*x, *high))
            .chain(band.iter().rev().map(|(x, low, _)| (*x, *low)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                color(line.style.color).mix(0.18).filled(),
            )))
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// One line in its style (solid, dashed, dotted or hidden; markers on its points if it has
    /// them) with its legend entry drawn the same way.
    fn draw_line<'a, DB, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
        line: &Line,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let points: Vec<(f64, f64)> = self.drawable(line).collect();
        let style = color(line.style.color).stroke_width(2);
        let annotation = match line.style.dash.pattern() {
            None if line.style.dash == Dash::Hidden => chart
                .draw_series(LineSeries::new(std::iter::empty(), style))
                .map_err(|e| e.to_string())?,
            None => chart
                .draw_series(LineSeries::new(points.iter().copied(), style))
                .map_err(|e| e.to_string())?,
            Some((dash, gap)) => chart
                .draw_series(DashedLineSeries::new(
                    points.iter().copied(),
                    dash,
                    gap,
                    style,
                ))
                .map_err(|e| e.to_string())?,
        };
        let dash = line.style.dash;
        let marker_color = if line.style.markers {
            color(line.style.color).to_rgba()
        } else {
            TRANSPARENT
        };
        annotation.label(&line.label).legend(move |(x, y)| {
            let segments: [(i32, i32); 3] = match dash.pattern() {
                None if dash == Dash::Hidden => [(0, 0); 3],
                None => [(0, 8), (8, 16), (16, 24)],
                Some((_, gap)) if gap > 5 => [(0, 7), (12, 19), (24, 24)],
                Some(_) => [(0, 3), (8, 11), (16, 19)],
            };
            let [a, b, c] =
                segments.map(|(from, to)| PathElement::new(vec![(from, 0), (to, 0)], style));
            EmptyElement::at((x, y)) + a + b + c + Circle::new((12, 0), 4, marker_color.filled())
        });
        if line.style.markers {
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&p| Circle::new(p, 4, color(line.style.color).filled())),
                )
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Something drawn onto any plotters backend (a PNG or an SVG file).
trait Figure {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// A line plot with its computed lines and axis ranges.
struct LineFigure<'a> {
    plot: &'a LinePlot,
    lines: &'a [Line],
    x_range: Range<f64>,
    y_range: Range<f64>,
}

impl Figure for LineFigure<'_> {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        self.plot
            .render(root, self.lines, self.x_range.clone(), self.y_range.clone())
    }
}

/// A bar chart with its computed y range.
struct BarFigure<'a> {
    chart: &'a BarChart,
    y_range: Range<f64>,
}

impl Figure for BarFigure<'_> {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        self.chart.render(root, self.y_range.clone())
    }
}

/// Draws `figure` into `path` as `format` (its parent directory created), `size` pixels.
fn draw_file(
    figure: &impl Figure,
    path: &Path,
    format: ImageFormat,
    size: (u32, u32),
) -> Result<(), PlotError> {
    create_parent(path)?;
    let result = match format {
        ImageFormat::Png => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            figure
                .render(&root)
                .and_then(|_| root.present().map_err(|e| e.to_string()))
        }
        ImageFormat::Svg => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            figure
                .render(&root)
                .and_then(|_| root.present().map_err(|e| e.to_string()))
        }
    };
    result.map_err(|message| PlotError::Drawing {
        path: path.to_path_buf(),
        message,
    })
}

/// `min..max` of finite values, with `pad` (a fraction of the span) added above (and below
/// too unless the range starts at 0), starting at 0 if `from_zero` and all values are ≥ 0;
/// never empty.
fn padded_range(values: impl Iterator<Item = f64>, from_zero: bool, pad: f64) -> Range<f64> {
    let (mut low, mut high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let starts_at_zero = from_zero && low >= 0.0;
    if starts_at_zero {
        low = 0.0;
    }
    if high <= low {
        let spread = if low == 0.0 { 1.0 } else { low.abs() * 0.1 };
        return (low - if starts_at_zero { 0.0 } else { spread })..(high + spread);
    }
    let margin = (high - low) * pad;
    high += margin;
    if !starts_at_zero {
        low -= margin;
    }
    low..high
}

/// A shaded span worth drawing: finite and not empty.
fn drawable_span(span: &Range<f64>) -> bool {
    span.start.is_finite() && span.end.is_finite() && span.start < span.end
}

/// Raises the top of `range` so that a legend of `entries` rows in the upper right corner of
/// an image `height` pixels high sits above the data instead of on it.
fn with_legend_room(range: Range<f64>, entries: usize, height: u32) -> Range<f64> {
    const ROW_PX: f64 = 20.0;
    // Caption, x label area and margins take about 120 px of the height.
    let plot_px = (f64::from(height) - 120.0).max(100.0);
    let fraction = ((entries as f64 * ROW_PX + 12.0) / plot_px).min(0.5);
    range.start..range.start + (range.end - range.start) / (1.0 - fraction)
}

/// The range of positive values for a log axis, widened by a factor 1.3 on each side so the
/// end points (often whole decades) are inside it and labelled, and to at least one decade.
fn log_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (low, high) = (low / 1.3, high * 1.3);
    if high / low < 10.0 {
        return 10f64.powf(low.log10().floor())..10f64.powf(high.log10().ceil());
    }
    low..high
}

/// An axis tick label: at most 6 significant digits, no trailing zeros (`600`, `0.25`,
/// `0.0001`), so float noise such as `0.30000000000000004` never shows.
pub fn tick_label(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value == 0.0 {
            "0".into()
        } else {
            value.to_string()
        };
    }
    let magnitude = value.abs().log10().floor() as i32;
    if !(-5..=6).contains(&magnitude) {
        return format!("{value:.2e}");
    }
    let decimals = (5 - magnitude).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn create_parent(path: &Path) -> Result<(), PlotError> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            std::fs::create_dir_all(parent).map_err(|e| PlotError::Drawing {
                path: path.to_path_buf(),
                message: format!("cannot create directory {}: {e}", parent.display()),
            })
        }
        _ => Ok(()),
    }
}

/// Grouped bars: one group of bars per category (e.g. a scenario), one bar per series (e.g.
/// TCP and TFRC) with its value written above it.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Title above the chart.
    pub title: String,
    /// y axis label with unit.
    pub y_label: String,
    /// Category names along the x axis.
    pub categories: Vec<String>,
    /// `(legend label, value per category)`; `None` draws no bar and writes `n/a`.
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// Decimal places of the value labels.
    pub precision: usize,
    /// Image size in pixels.
    pub size: (u32, u32),
}

impl BarChart {
    /// An empty chart of the given categories.
    pub fn new(
        title: impl Into<String>,
        y_label: impl Into<String>,
        categories: Vec<String>,
    ) -> BarChart {
        BarChart {
            title: title.into(),
            y_label: y_label.into(),
            categories,
            series: Vec::new(),
            precision: 2,
            size: (1000, 600),
        }
    }

    /// Adds one bar per category (values in category order).
    pub fn series(mut self, label: impl Into<String>, values: Vec<Option<f64>>) -> BarChart {
        self.series.push((label.into(), values));
        self
    }

    /// Draws the chart into `path` (`.png` or `.svg`).
    pub fn draw(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        let path = path.as_ref();
        let format = ImageFormat::from_path(path)?;
        ensure_font()?;
        let values: Vec<f64> = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
            .filter(|v| v.is_finite())
            .collect();
        if values.is_empty() || self.categories.is_empty() {
            return Err(PlotError::NoData {
                path: path.to_path_buf(),
                title: self.title.clone(),
            });
        }
        let y_range = padded_range(values.into_iter(), true, 0.12);
        let y_range = with_legend_room(y_range, self.series.len(), self.size.1);
        let figure = BarFigure {
            chart: self,
            y_range,
        };
        draw_file(&figure, path, format, self.size)
    }

    fn render<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        y_range: Range<f64>,
    ) -> Result<(), String> {
        let error = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(error)?;
        let categories = self.categories.len() as f64;
        let x_range = -0.5..categories - 0.5;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 24))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(x_range, y_range.clone())
            .map_err(error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(&self.y_label)
            .y_label_formatter(&|v| tick_label(*v))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 17))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(error)?;
        let groups = self.series.len().max(1) as f64;
        let width = 0.8 / groups;
        let value_style = TextStyle::from(("sans-serif", 13).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (index, (label, values)) in self.series.iter().enumerate() {
            let fill = color(index).filled();
            let left = |category: usize| category as f64 - 0.4 + index as f64 * width;
            let bars = values
                .iter()
                .take(self.categories.len())
                .enumerate()
                .filter_map(|(c, v)| v.filter(|v| v.is_finite()).map(|v| (c, v)))
                .map(|(c, v)| Rectangle::new([(left(c), 0.0), (left(c) + width, v)], fill));
            chart
                .draw_series(bars)
                .map_err(error)?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], fill));
            for (category, value) in values.iter().enumerate().take(self.categories.len()) {
                let middle = left(category) + width / 2.0;
                let (text, y) = match value.filter(|v| v.is_finite()) {
                    Some(v) => (format!("{v:.*}", self.precision), v),
                    None => ("n/a".to_string(), 0.0),
                };
                let (px, py) = chart.backend_coord(&(middle, y));
                root.draw(&Text::new(text, (px, py - 3), value_style.clone()))
                    .map_err(error)?;
            }
        }
        let label_style =
            TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (index, category) in self.categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(index as f64, y_range.start));
            root.draw(&Text::new(
                category.clone(),
                (px, py + 8),
                label_style.clone(),
            ))
            .map_err(error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(600.0), "600");
        assert_eq!(tick_label(0.1 + 0.2), "0.3");
        assert_eq!(tick_label(0.0001), "0.0001");
        assert_eq!(tick_label(-2.5), "-2.5");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(1.5e9), "1.50e9");
    }

    #[test]
    fn ranges_are_never_empty() {
        assert_eq!(padded_range([5.0, 5.0].into_iter(), true, 0.05), 0.0..5.25);
        assert_eq!(padded_range([5.0, 5.0].into_iter(), false, 0.05), 4.5..5.5);
        assert_eq!(padded_range([0.0].into_iter(), true, 0.05), 0.0..1.0);
        assert_eq!(padded_range([0.0, 10.0].into_iter(), true, 0.1), 0.0..11.0);
        assert_eq!(padded_range([2.0, 12.0].into_iter(), false, 0.1), 1.0..13.0);
        assert_eq!(padded_range([-2.0, 2.0].into_iter(), true, 0.0), -2.0..2.0);
        // 4 legend rows take 92 px of the 480 px plot: the data keeps the lower 80.8 %.
        let room = with_legend_room(0.0..10.0, 4, 600);
        assert!(
            (room.end - 10.0 / (1.0 - 92.0 / 480.0)).abs() < 1e-9,
            "{room:?}"
        );
        assert_eq!(with_legend_room(0.0..10.0, 100, 600), 0.0..20.0);
        let log = log_range([0.02, 0.05].into_iter());
        assert!(log.start <= 0.01 && log.end >= 0.1, "{log:?}");
    }
}
