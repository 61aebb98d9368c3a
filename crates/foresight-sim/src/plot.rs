//! Line charts and grouped bar charts rendered to PNG with no system dependencies.
//!
//! A chart is rasterised into an in-memory RGB canvas and encoded with the `png` crate; nothing reads
//! a system font, a clock or the environment, so the same chart always gives the same bytes. Text is
//! drawn from a bitmap font embedded below (5x7 pixel glyphs on a 6x11 cell, with two descender rows,
//! for ASCII 32..=126; any other character is drawn as `?`) at an integer scale, and can be rotated a
//! quarter turn for the y-axis label. Shapes are plain integer rasterisation: Bresenham lines stamped
//! with a square brush for thickness, an on/off counter along the line for dashes, filled rectangles
//! and filled point markers with a white halo. Layout is computed from the text metrics: the title on
//! top, tick labels and axis labels around a plot area, and the legend in a box to its right. Axes
//! take "nice" tick values: steps of 1, 2 or 5 times a power of ten on linear axes, powers of two on a
//! log2 axis and powers of ten on a log10 axis (1, 2 and 5 times each power where fewer than three
//! powers fall in the range and those fit, else 1-2-5 values when the data span less than one
//! power). Points that cannot be placed (NaN, infinite, or not positive on a log axis) are
//! skipped and break the line there; empty or degenerate data still give a valid, labelled chart.

/// Width in pixels of the image that [`LineChart::png`] and [`BarChart::png`] produce.
pub const DEFAULT_WIDTH_PX: u32 = 960;
/// Height in pixels of the image that [`LineChart::png`] and [`BarChart::png`] produce.
pub const DEFAULT_HEIGHT_PX: u32 = 600;
/// Smallest side, in pixels, that `render_png` produces; smaller requests are raised to it.
pub const MIN_SIDE_PX: u32 = 32;
/// Largest side, in pixels, that `render_png` produces; larger requests are lowered to it.
pub const MAX_SIDE_PX: u32 = 8192;

/// Series colours (RGB): the Okabe-Ito palette, distinguishable under the common forms of colour
/// blindness, with its yellow darkened so that it shows on white. Series `i` takes colour `i % 8`.
pub const PALETTE_RGB: [[u8; 3]; 8] = [
    [0, 114, 178],   // blue
    [213, 94, 0],    // vermillion
    [0, 158, 115],   // bluish green
    [230, 159, 0],   // orange
    [204, 121, 167], // reddish purple
    [86, 180, 233],  // sky blue
    [0, 0, 0],       // black
    [190, 170, 0],   // dark yellow
];

type Rgb = [u8; 3];

const WHITE: Rgb = [255, 255, 255];
const TEXT: Rgb = [30, 30, 30];
const AXIS: Rgb = [70, 70, 70];
const GRID: Rgb = [220, 220, 220];
const GRID_MINOR: Rgb = [236, 236, 236];
const LEGEND_BORDER: Rgb = [170, 170, 170];
const MUTED: Rgb = [120, 120, 120];

/// Points beyond this magnitude are treated as not placeable, so spans stay finite.
const MAX_ABS_VALUE: f64 = 1e300;
/// Series with more points than this are drawn without markers, which would only clutter the line.
const MAX_POINTS_WITH_MARKERS: usize = 60;

/// A line chart: one polyline per series, optionally on log axes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineChart {
    /// Title drawn centred above the plot.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label left of the y axis, drawn reading upwards.
    pub y_label: String,
    /// Log scale, base 2, on x (for stream counts 1, 2, 4 .. 256 or sizes); x <= 0 is skipped.
    pub x_log2: bool,
    /// Log scale, base 10, on y; y <= 0 is skipped.
    pub y_log10: bool,
    /// The lines, in legend order.
    pub series: Vec<Series>,
}

/// One line of a [`LineChart`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Name shown in the legend ("series N" when empty).
    pub name: String,
    /// `(x, y)` points, joined in the order given; unplaceable points break the line.
    pub points: Vec<(f64, f64)>,
    /// Draw the line dashed instead of solid.
    pub dashed: bool,
}

/// A grouped bar chart: for each category, one bar per series side by side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarChart {
    /// Title drawn centred above the plot.
    pub title: String,
    /// Label under the category axis.
    pub x_label: String,
    /// Label left of the value axis, drawn reading upwards.
    pub y_label: String,
    /// Category labels, left to right.
    pub groups: Vec<String>,
    /// `(name, values)`: `values[i]` is the bar in group `i`. Missing, NaN or infinite values leave
    /// a gap; values past the last label get unlabelled groups.
    pub series: Vec<(String, Vec<f64>)>,
}

impl LineChart {
    /// Renders the chart as PNG bytes of `width_px` x `height_px` (each clamped to
    /// [`MIN_SIDE_PX`]..=[`MAX_SIDE_PX`]). The bytes depend only on the chart and the size.
    pub fn render_png(&self, width_px: u32, height_px: u32) -> Vec<u8> {
        let mut canvas = Canvas::new(width_px, height_px);
        self.draw(&mut canvas);
        canvas.encode_png()
    }

    /// The chart as a PNG of [`DEFAULT_WIDTH_PX`] x [`DEFAULT_HEIGHT_PX`], for the caller to
    /// write as it writes its other outputs (whole, or not at all).
    pub fn png(&self) -> std::io::Result<Vec<u8>> {
        encoded(self.render_png(DEFAULT_WIDTH_PX, DEFAULT_HEIGHT_PX))
    }

    fn draw(&self, canvas: &mut Canvas) {
        let text = text_scale(canvas);
        let x_scale = if self.x_log2 {
            AxisScale::Log2
        } else {
            AxisScale::Linear
        };
        let y_scale = if self.y_log10 {
            AxisScale::Log10
        } else {
            AxisScale::Linear
        };
        // Each series as a list of placeable points in axis units; `None` marks a break.
        let placed: Vec<Vec<Option<(f64, f64)>>> = self
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .map(|&(x, y)| Some((x_scale.forward(x)?, y_scale.forward(y)?)))
                    .collect()
            })
            .collect();
        let mut x_range = Range::default();
        let mut y_range = Range::default();
        for &(x, y) in placed.iter().flatten().flatten() {
            x_range.add(x);
            y_range.add(y);
        }
        let legend: Vec<LegendEntry> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| LegendEntry {
                name: display_name(&s.name, i),
                color: series_color(i),
                swatch: Swatch::Line {
                    marker: (placed.get(i).map_or(0, |p| p.iter().flatten().count())
                        <= MAX_POINTS_WITH_MARKERS)
                        .then_some(series_marker(i)),
                    dashed: s.dashed,
                },
            })
            .collect();
        let texts = Texts {
            title: &self.title,
            x_label: &self.x_label,
            y_label: &self.y_label,
        };
        let thickness = text + 1;
        let radius = 2 + text;
        let to_px = |x_axis: &Axis, y_axis: &Axis, plot: &Rect, &(x, y): &(f64, f64)| {
            (x_axis.x_px(x, plot), y_axis.y_px(y, plot))
        };
        let (layout, x_axis, y_axis) = arrange(
            canvas,
            text,
            &texts,
            &legend,
            &|len_px| {
                Axis::numeric(
                    y_scale,
                    y_range.padded(0.04),
                    len_px,
                    AxisDir::Vertical,
                    text,
                )
            },
            &|len_px| {
                Axis::numeric(
                    x_scale,
                    x_range.padded(0.04),
                    len_px,
                    AxisDir::Horizontal,
                    text,
                )
            },
            &|x_axis, y_axis, plot, area| {
                let reach = (thickness + radius + 2) as f64;
                let bounds = (
                    area.x0 as f64 - reach,
                    area.y0 as f64 - reach,
                    area.x1 as f64 + reach,
                    area.y1 as f64 + reach,
                );
                placed.iter().any(|points| {
                    let px = |p| to_px(x_axis, y_axis, plot, p);
                    let on_segment = points.windows(2).any(|pair| match pair {
                        [Some(a), Some(b)] => {
                            let ((ax, ay), (bx, by)) = (px(a), px(b));
                            clip_segment(ax, ay, bx, by, bounds).is_some()
                        }
                        _ => false,
                    });
                    on_segment
                        || points.iter().flatten().any(|p| {
                            let (x, y) = px(p);
                            x >= bounds.0 && x <= bounds.2 && y >= bounds.1 && y <= bounds.3
                        })
                })
            },
        );
        draw_chrome(canvas, &layout, text, &texts, &x_axis, &y_axis, true);
        let plot = layout.plot;
        canvas.clip = plot;
        for (i, points) in placed.iter().enumerate() {
            let color = series_color(i);
            let dashed = self.series.get(i).is_some_and(|s| s.dashed);
            let mut dash = Dash::new(dashed, text);
            let px = |p| to_px(&x_axis, &y_axis, &plot, p);
            for pair in points.windows(2) {
                if let [Some(a), Some(b)] = pair {
                    let ((ax, ay), (bx, by)) = (px(a), px(b));
                    canvas.line(ax, ay, bx, by, thickness, color, &mut dash);
                }
            }
            let count = points.iter().flatten().count();
            if count <= MAX_POINTS_WITH_MARKERS {
                for p in points.iter().flatten() {
                    let (x, y) = px(p);
                    canvas.marker(
                        series_marker(i),
                        x.round() as i64,
                        y.round() as i64,
                        radius,
                        color,
                    );
                }
            }
        }
        canvas.clip = canvas.full();
        if x_range.is_empty() {
            draw_no_data(canvas, &plot, text);
        }
        draw_legend(canvas, &layout, text, &legend);
    }
}

impl BarChart {
    /// Renders the chart as PNG bytes of `width_px` x `height_px` (each clamped to
    /// [`MIN_SIDE_PX`]..=[`MAX_SIDE_PX`]). The bytes depend only on the chart and the size.
    pub fn render_png(&self, width_px: u32, height_px: u32) -> Vec<u8> {
        let mut canvas = Canvas::new(width_px, height_px);
        self.draw(&mut canvas);
        canvas.encode_png()
    }

    /// The chart as a PNG of [`DEFAULT_WIDTH_PX`] x [`DEFAULT_HEIGHT_PX`], for the caller to
    /// write as it writes its other outputs (whole, or not at all).
    pub fn png(&self) -> std::io::Result<Vec<u8>> {
        encoded(self.render_png(DEFAULT_WIDTH_PX, DEFAULT_HEIGHT_PX))
    }

    /// The pixel rectangles of the bars as `(series, rectangle)`, bottom edge included.
    fn bars(&self, group_count: usize, y_axis: &Axis, plot: &Rect) -> Vec<(usize, Rect)> {
        let group_w = plot.width() as f64 / group_count.max(1) as f64;
        let bar_w = group_w * 0.8 / self.series.len().max(1) as f64;
        let zero_y = y_axis.y_px(0.0, plot).round() as i64;
        let mut out = Vec::new();
        for (si, (_, values)) in self.series.iter().enumerate() {
            for (gi, v) in values.iter().take(group_count).enumerate() {
                let Some(v) = AxisScale::Linear.forward(*v) else {
                    continue;
                };
                let x0 = plot.x0 as f64 + gi as f64 * group_w + group_w * 0.1 + si as f64 * bar_w;
                let left = x0.round() as i64;
                let right = ((x0 + bar_w).round() as i64 - 1).max(left);
                // A one-pixel white gap between neighbouring bars when they are wide enough.
                let right = if bar_w >= 6.0 {
                    (right - 1).max(left)
                } else {
                    right
                };
                let top = y_axis.y_px(v, plot).round() as i64;
                let (y0, y1) = if top <= zero_y {
                    (top, zero_y)
                } else {
                    (zero_y, top)
                };
                out.push((
                    si,
                    Rect {
                        x0: left,
                        y0,
                        x1: right + 1,
                        y1: y1 + 1,
                    },
                ));
            }
        }
        out
    }

    fn draw(&self, canvas: &mut Canvas) {
        let text = text_scale(canvas);
        let longest = self.series.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        let group_count = self.groups.len().max(longest);
        let mut y_range = Range::default();
        for v in self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().take(group_count))
        {
            if let Some(v) = AxisScale::Linear.forward(*v) {
                y_range.add(v);
            }
        }
        let has_data = !y_range.is_empty();
        // Bars grow from zero, so zero is always on the axis and gets no padding.
        y_range.add(0.0);
        let y_span = y_range.hi - y_range.lo;
        let y_padded = Range {
            lo: if y_range.lo < 0.0 {
                y_range.lo - 0.05 * y_span
            } else {
                0.0
            },
            hi: if y_range.hi > 0.0 {
                y_range.hi + 0.05 * y_span
            } else {
                0.0
            },
        };
        let legend: Vec<LegendEntry> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, (name, _))| LegendEntry {
                name: display_name(name, i),
                color: series_color(i),
                swatch: Swatch::Block,
            })
            .collect();
        let texts = Texts {
            title: &self.title,
            x_label: &self.x_label,
            y_label: &self.y_label,
        };
        let x_axis_for = |len_px: i64| {
            let group_w = len_px.max(0) as f64 / group_count.max(1) as f64;
            let max_chars = ((group_w - 4.0) / (CELL_W * text) as f64).floor().max(1.0) as usize;
            Axis {
                lo: 0.0,
                hi: group_count.max(1) as f64,
                minor: Vec::new(),
                ticks: (0..group_count)
                    .map(|i| {
                        let label = self.groups.get(i).map(String::as_str).unwrap_or("");
                        (i as f64 + 0.5, truncate(label, max_chars))
                    })
                    .collect(),
            }
        };
        let (layout, x_axis, y_axis) = arrange(
            canvas,
            text,
            &texts,
            &legend,
            &|len_px| Axis::numeric(AxisScale::Linear, y_padded, len_px, AxisDir::Vertical, text),
            &x_axis_for,
            &|_, y_axis, plot, area| {
                let area = area.grown(2);
                self.bars(group_count, y_axis, plot)
                    .iter()
                    .any(|(_, bar)| bar.intersects(&area))
            },
        );
        draw_chrome(canvas, &layout, text, &texts, &x_axis, &y_axis, false);
        let plot = layout.plot;
        canvas.clip = plot;
        for (si, bar) in self.bars(group_count, &y_axis, &plot) {
            canvas.fill_rect(bar.x0, bar.y0, bar.width(), bar.height(), series_color(si));
        }
        canvas.clip = canvas.full();
        if y_axis.lo < 0.0 {
            let zero_y = y_axis.y_px(0.0, &plot).round() as i64;
            canvas.fill_rect(plot.x0, zero_y, plot.width(), 1, AXIS);
        }
        if !has_data {
            draw_no_data(canvas, &plot, text);
        }
        draw_legend(canvas, &layout, text, &legend);
    }
}

/// Tick values with a step of 1, 2 or 5 times a power of ten that cover `[min, max]`: the first
/// tick is at or below `min`, the last at or above `max`, and there are about `target_count` of
/// them (at most `target_count + 3`). NaN or infinite bounds give ticks for `[0, 1]`; equal
/// bounds are widened around the value; the bounds may come in either order.
pub fn nice_ticks(min: f64, max: f64, target_count: usize) -> Vec<f64> {
    let (lo, hi) = sane_bounds(min, max);
    let step = nice_step(lo, hi, target_count);
    ticks_with_step(lo, hi, step)
}

fn sane_bounds(min: f64, max: f64) -> (f64, f64) {
    let clampf = |v: f64| v.clamp(-MAX_ABS_VALUE, MAX_ABS_VALUE);
    let (mut lo, mut hi) = match (min.is_nan(), max.is_nan()) {
        (true, true) => (0.0, 1.0),
        (true, false) => (clampf(max), clampf(max)),
        (false, true) => (clampf(min), clampf(min)),
        (false, false) => (clampf(min), clampf(max)),
    };
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    let magnitude = lo.abs().max(hi.abs());
    if hi - lo <= magnitude * 1e-12 {
        let mid = lo / 2.0 + hi / 2.0;
        if mid == 0.0 {
            return (0.0, 1.0);
        }
        let delta = mid.abs() * 0.1;
        return (mid - delta, mid + delta);
    }
    (lo, hi)
}

/// The smallest step of the form {1, 2, 5} x 10^k that splits `[lo, hi]` into at most `target`
/// intervals.
fn nice_step(lo: f64, hi: f64, target: usize) -> f64 {
    let target = target.clamp(1, 50) as f64;
    let raw = (hi - lo) / target;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let fraction = raw / base;
    let mult = if fraction <= 1.0 + 1e-9 {
        1.0
    } else if fraction <= 2.0 + 1e-9 {
        2.0
    } else if fraction <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    mult * base
}

fn ticks_with_step(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let k0 = (lo / step).floor();
    let k1 = (hi / step).ceil();
    let count = k1 - k0;
    if !(count.is_finite() && (0.0..=200.0).contains(&count)) {
        return vec![lo, hi];
    }
    let mut ticks: Vec<f64> = (0..=count as i64)
        .map(|i| {
            let v = (k0 + i as f64) * step;
            // Snap values that are zero up to rounding, so "-0" or "1e-17" never shows.
            if v.abs() < step * 1e-9 {
                0.0
            } else {
                v
            }
        })
        .collect();
    if ticks.first().is_some_and(|&t| t > lo) {
        ticks.insert(0, (k0 - 1.0) * step);
    }
    if ticks.last().is_some_and(|&t| t < hi) {
        ticks.push((k1 + 1.0) * step);
    }
    ticks
}

/// Formats a linear tick value so that neighbouring ticks `step` apart read differently.
fn format_tick(value: f64, step: f64) -> String {
    if value.abs() < step.abs() * 1e-9 || value == 0.0 {
        return "0".to_string();
    }
    let step_exp = step.abs().log10().floor();
    if value.abs() >= 1e7 || step.abs() < 1e-4 {
        let digits = (value.abs().log10().floor() - step_exp).clamp(0.0, 15.0) as usize;
        return trim_exponent(&format!("{:.*e}", digits, value));
    }
    let decimals = (-step_exp).clamp(0.0, 10.0) as usize;
    format!("{:.*}", decimals, value)
}

/// Turns `1.50e7` into `1.5e7` and `2.0e-5` into `2e-5`.
fn trim_exponent(text: &str) -> String {
    match text.split_once('e') {
        Some((mantissa, exp)) if mantissa.contains('.') => {
            let m = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{m}e{exp}")
        }
        _ => text.to_string(),
    }
}

fn format_pow2(exp: i64) -> String {
    const SUFFIXES: [&str; 5] = ["", "K", "M", "G", "T"];
    if (0..50).contains(&exp) {
        let idx = (exp / 10) as usize;
        let mantissa = 1u64 << (exp % 10);
        return format!("{mantissa}{}", SUFFIXES.get(idx).copied().unwrap_or(""));
    }
    // Halves are exact in a few decimals down to 2^-6 (0.015625); below that a short mantissa and
    // exponent read better than "2^-7", which looks like a formatting fault on a labelled axis.
    if (-6..0).contains(&exp) {
        return format!("{}", 2f64.powi(exp as i32));
    }
    trim_exponent(&format!("{:.2e}", 2f64.powi(exp.clamp(-1000, 1000) as i32)))
}

fn format_pow10(exp: i64) -> String {
    if (0..=4).contains(&exp) {
        format!("{}", 10u64.pow(exp as u32))
    } else if (-3..0).contains(&exp) {
        format!("0.{}1", "0".repeat((-exp - 1) as usize))
    } else {
        format!("1e{exp}")
    }
}

// ----------------------------------------------------------------------------------------------
// Axes

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AxisScale {
    Linear,
    Log2,
    Log10,
}

impl AxisScale {
    /// Data value to axis units, or `None` when the value cannot be placed on this axis.
    fn forward(self, v: f64) -> Option<f64> {
        if !v.is_finite() || v.abs() > MAX_ABS_VALUE {
            return None;
        }
        match self {
            AxisScale::Linear => Some(v),
            AxisScale::Log2 => (v > 0.0).then(|| v.log2()),
            AxisScale::Log10 => (v > 0.0).then(|| v.log10()),
        }
    }

    fn inverse(self, t: f64) -> f64 {
        match self {
            AxisScale::Linear => t,
            AxisScale::Log2 => t.exp2(),
            AxisScale::Log10 => 10f64.powf(t),
        }
    }
}

/// The extent of some values in axis units; empty until the first value is added.
#[derive(Clone, Copy, Debug)]
struct Range {
    lo: f64,
    hi: f64,
}

impl Default for Range {
    fn default() -> Self {
        Range {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
        }
    }
}

impl Range {
    fn add(&mut self, v: f64) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    fn is_empty(&self) -> bool {
        self.lo.is_nan() || self.hi.is_nan() || self.lo > self.hi
    }

    /// Widened by `fraction` of the span on each side (by half a unit when the span is zero).
    fn padded(self, fraction: f64) -> Range {
        if self.is_empty() {
            return self;
        }
        let span = self.hi - self.lo;
        let pad = if span > 0.0 { span * fraction } else { 0.5 };
        Range {
            lo: self.lo - pad,
            hi: self.hi + pad,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AxisDir {
    Horizontal,
    Vertical,
}

/// An axis: its extent in axis units and its ticks as `(position in axis units, label)`.
#[derive(Clone, Debug)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    /// Unlabelled positions that get a fainter gridline (2..9 times each power on a log10 axis).
    minor: Vec<f64>,
}

impl Axis {
    /// Builds an axis over `range` (axis units, possibly empty) with as many ticks as fit in
    /// `len_px` without labels colliding.
    fn numeric(scale: AxisScale, range: Range, len_px: i64, dir: AxisDir, text: i64) -> Axis {
        let (lo, hi) = if range.is_empty() {
            (0.0, 1.0)
        } else {
            (range.lo, range.hi)
        };
        let (lo, hi) = sane_bounds(lo, hi);
        // Labels fit when each neighbouring pair is far enough apart on screen not to touch.
        let px_per_unit = len_px.max(0) as f64 / (hi - lo);
        let fits = |ticks: &[(f64, String)]| -> bool {
            ticks.len() <= 2
                || ticks.windows(2).all(|pair| {
                    let distance = (pair[1].0 - pair[0].0).abs() * px_per_unit;
                    let needed = match dir {
                        AxisDir::Vertical => 2 * CELL_H * text,
                        AxisDir::Horizontal => {
                            (text_width(&pair[0].1, text) + text_width(&pair[1].1, text)) / 2
                                + 2 * CELL_W * text
                        }
                    };
                    distance >= needed as f64
                })
        };
        let ticks = match scale {
            AxisScale::Linear => linear_ticks(lo, hi, &fits),
            AxisScale::Log2 | AxisScale::Log10 => log_ticks(scale, lo, hi, &fits),
        };
        // Minor gridlines on a log10 axis, when each decade is tall enough to hold them apart.
        let decades = hi - lo;
        let minor = if scale == AxisScale::Log10 && len_px as f64 / decades >= 60.0 {
            let first = lo.floor() as i64;
            let last = hi.ceil() as i64;
            (first..=last)
                .flat_map(|k| (2..=9).map(move |m| k as f64 + (m as f64).log10()))
                .filter(|&t| t > lo && t < hi)
                .collect()
        } else {
            Vec::new()
        };
        Axis {
            lo,
            hi,
            ticks,
            minor,
        }
    }

    /// Where `t` (axis units) falls between the axis ends, as a fraction (clamped to a few axis
    /// lengths either side, so far-off values stay cheap to draw).
    fn frac(&self, t: f64) -> f64 {
        let frac = (t - self.lo) / (self.hi - self.lo);
        if frac.is_finite() {
            frac.clamp(-4.0, 5.0)
        } else {
            0.0
        }
    }

    /// Pixel column of `t` on a horizontal axis spanning `plot`.
    fn x_px(&self, t: f64, plot: &Rect) -> f64 {
        plot.x0 as f64 + self.frac(t) * (plot.width() - 1) as f64
    }

    /// Pixel row of `t` on a vertical axis spanning `plot` (up is larger).
    fn y_px(&self, t: f64, plot: &Rect) -> f64 {
        (plot.y1 - 1) as f64 - self.frac(t) * (plot.height() - 1) as f64
    }

    fn max_label_width(&self, text: i64) -> i64 {
        self.ticks
            .iter()
            .map(|(_, l)| text_width(l, text))
            .max()
            .unwrap_or(0)
    }
}

/// A tick: its position in axis units and its label.
type Tick = (f64, String);
/// Whether a set of tick labels fits along an axis without touching.
type Fits<'a> = &'a dyn Fn(&[Tick]) -> bool;

fn linear_ticks(lo: f64, hi: f64, fits: Fits<'_>) -> Vec<Tick> {
    let mut best = Vec::new();
    for target in (2..=10).rev() {
        let step = nice_step(lo, hi, target);
        let ticks: Vec<(f64, String)> = ticks_with_step(lo, hi, step)
            .into_iter()
            .filter(|&t| t >= lo - step * 1e-9 && t <= hi + step * 1e-9)
            .map(|t| (t, format_tick(t, step)))
            .collect();
        let ok = fits(&ticks);
        best = ticks;
        if ok {
            break;
        }
    }
    best
}

fn log_ticks(scale: AxisScale, lo: f64, hi: f64, fits: Fits<'_>) -> Vec<Tick> {
    let e0 = lo.ceil() as i64;
    let e1 = hi.floor() as i64;
    let powers = e1.saturating_sub(e0).saturating_add(1);
    // A log10 axis over less than about two decades has at most two powers to label, which leaves
    // most of its height unread; 1, 2 and 5 times each power label it evenly where they fit.
    if scale == AxisScale::Log10 && powers < 3 && hi - lo < 4.0 {
        let ticks: Vec<Tick> = (lo.floor() as i64..=hi.ceil() as i64)
            .flat_map(|k| [1.0, 2.0, 5.0].map(|m| (k, m)))
            .filter_map(|(k, m)| {
                let power = 10f64.powi(k as i32);
                let t = (m * power).log10();
                (t >= lo && t <= hi).then(|| (t, format_tick(m * power, power)))
            })
            .collect();
        if ticks.len() >= 3 && fits(&ticks) {
            return ticks;
        }
    }
    if (2..=2000).contains(&powers) {
        let mut stride = 1;
        loop {
            let ticks: Vec<(f64, String)> = (e0..=e1)
                .filter(|e| (e - e0) % stride == 0)
                .map(|e| {
                    let label = match scale {
                        AxisScale::Log2 => format_pow2(e),
                        _ => format_pow10(e),
                    };
                    (e as f64, label)
                })
                .collect();
            if fits(&ticks) || ticks.len() <= 2 {
                return ticks;
            }
            stride += 1;
        }
    }
    // Less than two powers in range: place 1-2-5 values of the data instead.
    let (vlo, vhi) = (scale.inverse(lo), scale.inverse(hi));
    let mut best = Vec::new();
    for target in (2..=8).rev() {
        let step = nice_step(vlo, vhi, target);
        let ticks: Vec<(f64, String)> = ticks_with_step(vlo, vhi, step)
            .into_iter()
            .filter(|&v| v >= vlo && v <= vhi)
            .filter_map(|v| Some((scale.forward(v)?, format_tick(v, step))))
            .collect();
        let ok = fits(&ticks);
        best = ticks;
        if ok {
            break;
        }
    }
    best
}

// ----------------------------------------------------------------------------------------------
// Layout and chart furniture

/// Where everything goes on the canvas.
#[derive(Clone, Debug)]
struct Layout {
    plot: Rect,
    /// The legend box, inside the plot area or to its right; `None` when there is no legend.
    legend: Option<Rect>,
}

impl Layout {
    /// Places the plot's top, bottom and right edges, keeping `legend_w` px (plus padding) free on
    /// the right when it is not zero; the left edge waits for the y tick labels.
    fn new(canvas: &Canvas, text: i64, texts: &Texts<'_>, legend_w: i64) -> Layout {
        let pad = 6 * text;
        let top = pad
            + if texts.title.is_empty() {
                0
            } else {
                CELL_H * text + pad
            };
        let bottom = TICK_LEN
            + pad / 2
            + CELL_H * text
            + if texts.x_label.is_empty() {
                0
            } else {
                pad + CELL_H * text
            }
            + pad;
        let right = pad + if legend_w > 0 { legend_w + pad } else { 0 };
        Layout {
            plot: Rect {
                x0: pad,
                y0: top,
                x1: canvas.width - right,
                y1: canvas.height - bottom,
            },
            legend: None,
        }
    }

    /// Places the plot's left edge once the widest y tick label is known.
    fn set_left(&mut self, text: i64, y_label: &str, tick_label_w: i64) {
        let pad = 6 * text;
        self.plot.x0 =
            pad + if y_label.is_empty() {
                0
            } else {
                CELL_H * text + pad
            } + tick_label_w
                + pad / 2
                + TICK_LEN;
    }
}

type AxisFor<'a> = &'a dyn Fn(i64) -> Axis;
type Overlaps<'a> = &'a dyn Fn(&Axis, &Axis, &Rect, &Rect) -> bool;

/// Lays a chart out and builds its axes. The legend goes into the first corner of the plot area
/// (top right, top left, bottom right, bottom left) where `overlaps(x_axis, y_axis, plot, box)`
/// finds no data under it; when every corner is taken, the plot narrows to make room for the
/// legend on its right. `y_axis_for` and `x_axis_for` build an axis for a length in pixels.
fn arrange(
    canvas: &Canvas,
    text: i64,
    texts: &Texts<'_>,
    legend: &[LegendEntry],
    y_axis_for: AxisFor<'_>,
    x_axis_for: AxisFor<'_>,
    overlaps: Overlaps<'_>,
) -> (Layout, Axis, Axis) {
    let build = |legend_w: i64| {
        let mut layout = Layout::new(canvas, text, texts, legend_w);
        let y_axis = y_axis_for(layout.plot.height());
        layout.set_left(text, texts.y_label, y_axis.max_label_width(text));
        let x_axis = x_axis_for(layout.plot.width());
        (layout, x_axis, y_axis)
    };
    let (legend_w, legend_h) = legend_size(canvas, text, legend);
    let (mut layout, x_axis, y_axis) = build(0);
    if legend.is_empty() {
        return (layout, x_axis, y_axis);
    }
    let pad = 6 * text;
    let p = layout.plot;
    if legend_w + 2 * pad <= p.width() && legend_h + 2 * pad <= p.height() {
        let left = p.x0 + pad;
        let right = p.x1 - pad - legend_w;
        let top = p.y0 + pad;
        let bottom = p.y1 - pad - legend_h;
        for (x0, y0) in [(right, top), (left, top), (right, bottom), (left, bottom)] {
            let spot = Rect {
                x0,
                y0,
                x1: x0 + legend_w,
                y1: y0 + legend_h,
            };
            if !overlaps(&x_axis, &y_axis, &p, &spot) {
                layout.legend = Some(spot);
                return (layout, x_axis, y_axis);
            }
        }
    }
    let (mut layout, x_axis, y_axis) = build(legend_w);
    let p = layout.plot;
    layout.legend = Some(Rect {
        x0: p.x1 + pad,
        y0: p.y0,
        x1: p.x1 + pad + legend_w,
        y1: p.y0 + legend_h,
    });
    (layout, x_axis, y_axis)
}

const TICK_LEN: i64 = 5;

struct Texts<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
}

/// Draws title, grid, frame, ticks, tick labels and axis labels.
fn draw_chrome(
    canvas: &mut Canvas,
    layout: &Layout,
    text: i64,
    texts: &Texts<'_>,
    x_axis: &Axis,
    y_axis: &Axis,
    x_grid: bool,
) {
    let plot = layout.plot;
    let pad = 6 * text;
    if plot.width() > 2 && plot.height() > 2 {
        for t in &y_axis.minor {
            let y = y_axis.y_px(*t, &plot).round() as i64;
            canvas.fill_rect(plot.x0, y, plot.width(), 1, GRID_MINOR);
        }
        for (t, _) in &y_axis.ticks {
            let y = y_axis.y_px(*t, &plot).round() as i64;
            canvas.fill_rect(plot.x0, y, plot.width(), 1, GRID);
        }
        if x_grid {
            for (t, _) in &x_axis.ticks {
                let x = x_axis.x_px(*t, &plot).round() as i64;
                canvas.fill_rect(x, plot.y0, 1, plot.height(), GRID);
            }
        }
        canvas.stroke_rect(plot, AXIS);
    }
    // y ticks and labels, right-aligned against the ticks.
    for (t, label) in &y_axis.ticks {
        let y = y_axis.y_px(*t, &plot).round() as i64;
        canvas.fill_rect(plot.x0 - TICK_LEN, y, TICK_LEN, 1, AXIS);
        let w = text_width(label, text);
        let x = plot.x0 - TICK_LEN - pad / 2 - w;
        canvas.text(x, y - (CAP_H * text) / 2, label, text, TEXT);
    }
    // x ticks and labels, centred under the ticks but kept inside the canvas.
    let label_y = plot.y1 + TICK_LEN + pad / 2;
    for (t, label) in &x_axis.ticks {
        let x = x_axis.x_px(*t, &plot).round() as i64;
        canvas.fill_rect(x, plot.y1, 1, TICK_LEN, AXIS);
        let w = text_width(label, text);
        let lx = (x - w / 2).clamp(0, (canvas.width - w).max(0));
        canvas.text(lx, label_y, label, text, TEXT);
    }
    let max_chars = |avail: i64| (avail / (CELL_W * text)).max(1) as usize;
    if !texts.x_label.is_empty() {
        let label = truncate(texts.x_label, max_chars(canvas.width));
        let w = text_width(&label, text);
        let cx = (plot.x0 + plot.x1) / 2;
        let x = (cx - w / 2).clamp(0, (canvas.width - w).max(0));
        canvas.text(x, label_y + CELL_H * text + pad, &label, text, TEXT);
    }
    if !texts.y_label.is_empty() {
        let label = truncate(texts.y_label, max_chars(canvas.height));
        let w = text_width(&label, text);
        let cy = (plot.y0 + plot.y1) / 2;
        let bottom = (cy + w / 2).clamp(w.min(canvas.height - 1), canvas.height - 1);
        canvas.text_up(pad, bottom, &label, text, TEXT);
    }
    if !texts.title.is_empty() {
        let label = truncate(texts.title, max_chars(canvas.width - 2 * pad));
        let w = text_width(&label, text) + 1;
        let cx = (plot.x0 + plot.x1) / 2;
        let x = (cx - w / 2).clamp(pad.min(canvas.width), (canvas.width - w - pad).max(0));
        canvas.text(x, pad, &label, text, TEXT);
        canvas.text(x + 1, pad, &label, text, TEXT);
    }
}

fn draw_no_data(canvas: &mut Canvas, plot: &Rect, text: i64) {
    let msg = "no data";
    let w = text_width(msg, text);
    let x = (plot.x0 + plot.x1) / 2 - w / 2;
    let y = (plot.y0 + plot.y1) / 2 - CAP_H * text / 2;
    canvas.text(x, y, msg, text, MUTED);
}

#[derive(Clone, Debug)]
struct LegendEntry {
    name: String,
    color: Rgb,
    swatch: Swatch,
}

#[derive(Clone, Copy, Debug)]
enum Swatch {
    /// A line sample, with the series' marker when its points are drawn with markers.
    Line {
        marker: Option<Marker>,
        dashed: bool,
    },
    /// A filled square in the series colour.
    Block,
}

fn legend_sample_w(text: i64) -> i64 {
    24 * text
}

fn legend_row_h(text: i64) -> i64 {
    CELL_H * text + 3 * text
}

/// The most characters of a series name that the legend shows.
fn legend_max_chars(canvas: &Canvas, text: i64) -> usize {
    // A third of the width cut names of about 20 characters ("streams R=8MiB N=1 M=16MiB" lost
    // its memory size); 45% keeps a 28-character name whole and leaves the plot most of the width.
    let budget = canvas.width * 45 / 100 - legend_sample_w(text) - 3 * 6 * text;
    (budget / (CELL_W * text)).max(4) as usize
}

/// Width and height in pixels of the legend box.
fn legend_size(canvas: &Canvas, text: i64, legend: &[LegendEntry]) -> (i64, i64) {
    if legend.is_empty() {
        return (0, 0);
    }
    let max_chars = legend_max_chars(canvas, text);
    let name_w = legend
        .iter()
        .map(|e| text_width(&truncate(&e.name, max_chars), text))
        .max()
        .unwrap_or(0);
    let pad = 6 * text;
    let width = pad + legend_sample_w(text) + pad + name_w + pad;
    let height = pad + legend_row_h(text) * legend.len() as i64 + pad - 3 * text;
    (width, height)
}

fn draw_legend(canvas: &mut Canvas, layout: &Layout, text: i64, legend: &[LegendEntry]) {
    let Some(box_rect) = layout.legend else {
        return;
    };
    let pad = 6 * text;
    let row_h = legend_row_h(text);
    let max_chars = legend_max_chars(canvas, text);
    canvas.fill_rect(
        box_rect.x0,
        box_rect.y0,
        box_rect.width(),
        box_rect.height(),
        WHITE,
    );
    canvas.stroke_rect(box_rect, LEGEND_BORDER);
    for (i, entry) in legend.iter().enumerate() {
        let top = box_rect.y0 + pad + row_h * i as i64;
        let mid = top + (CAP_H * text) / 2;
        let sx = box_rect.x0 + pad;
        let sw = legend_sample_w(text);
        match entry.swatch {
            Swatch::Line { marker, dashed } => {
                let mut dash = Dash::new(dashed, text);
                canvas.line(
                    sx as f64,
                    mid as f64,
                    (sx + sw - 1) as f64,
                    mid as f64,
                    text + 1,
                    entry.color,
                    &mut dash,
                );
                if let Some(marker) = marker {
                    canvas.marker(marker, sx + sw / 2, mid, 2 + text, entry.color);
                }
            }
            Swatch::Block => {
                let side = CAP_H * text + 2;
                canvas.fill_rect(
                    sx + (sw - side) / 2,
                    mid - side / 2,
                    side,
                    side,
                    entry.color,
                );
            }
        }
        let name = truncate(&entry.name, max_chars);
        canvas.text(sx + sw + pad, top, &name, text, TEXT);
    }
}

fn text_scale(canvas: &Canvas) -> i64 {
    if canvas.width >= 640 && canvas.height >= 400 {
        2
    } else {
        1
    }
}

fn series_color(i: usize) -> Rgb {
    PALETTE_RGB[i % PALETTE_RGB.len()]
}

/// Markers cycle with the colours but shift by one every full palette, so that series `i` and
/// `i + 8` differ in marker.
fn series_marker(i: usize) -> Marker {
    const MARKERS: [Marker; 4] = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
    ];
    MARKERS[(i + i / PALETTE_RGB.len()) % MARKERS.len()]
}

fn display_name(name: &str, index: usize) -> String {
    if name.trim().is_empty() {
        format!("series {}", index + 1)
    } else {
        name.to_string()
    }
}

/// At most `max_chars` characters, ending in `..` when shortened.
fn truncate(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    if max_chars <= 2 {
        return text.chars().take(max_chars).collect();
    }
    let mut out: String = text.chars().take(max_chars - 2).collect();
    out.push_str("..");
    out
}

fn encoded(bytes: Vec<u8>) -> std::io::Result<Vec<u8>> {
    if bytes.is_empty() {
        return Err(std::io::Error::other("PNG encoding failed"));
    }
    Ok(bytes)
}

// ----------------------------------------------------------------------------------------------
// Raster canvas

/// A half-open pixel rectangle `[x0, x1) x [y0, y1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rect {
    x0: i64,
    y0: i64,
    x1: i64,
    y1: i64,
}

impl Rect {
    fn width(&self) -> i64 {
        (self.x1 - self.x0).max(0)
    }

    fn height(&self) -> i64 {
        (self.y1 - self.y0).max(0)
    }

    fn contains(&self, x: i64, y: i64) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }

    fn intersects(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    fn grown(&self, by: i64) -> Rect {
        Rect {
            x0: self.x0 - by,
            y0: self.y0 - by,
            x1: self.x1 + by,
            y1: self.y1 + by,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// The on/off state of a dashed stroke, carried from one segment to the next so that a polyline's
/// dashes run on across its vertices.
#[derive(Clone, Copy, Debug)]
struct Dash {
    on_px: u32,
    off_px: u32,
    pos: u32,
}

impl Dash {
    fn solid() -> Dash {
        Dash {
            on_px: 1,
            off_px: 0,
            pos: 0,
        }
    }

    fn new(dashed: bool, text: i64) -> Dash {
        if dashed {
            let unit = text.clamp(1, 4) as u32;
            Dash {
                on_px: 5 * unit,
                off_px: 3 * unit,
                pos: 0,
            }
        } else {
            Dash::solid()
        }
    }

    /// Whether the next pixel along the stroke is inked; advances the pattern.
    fn step(&mut self) -> bool {
        let period = self.on_px + self.off_px;
        let ink = self.pos % period.max(1) < self.on_px;
        self.pos = (self.pos + 1) % period.max(1);
        ink
    }
}

/// An RGB image with a clip rectangle; every write outside the clip or the image is ignored.
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
    clip: Rect,
}

impl Canvas {
    fn new(width_px: u32, height_px: u32) -> Canvas {
        let width = width_px.clamp(MIN_SIDE_PX, MAX_SIDE_PX) as i64;
        let height = height_px.clamp(MIN_SIDE_PX, MAX_SIDE_PX) as i64;
        Canvas {
            width,
            height,
            pixels: vec![255; (width * height * 3) as usize],
            clip: Rect {
                x0: 0,
                y0: 0,
                x1: width,
                y1: height,
            },
        }
    }

    fn full(&self) -> Rect {
        Rect {
            x0: 0,
            y0: 0,
            x1: self.width,
            y1: self.height,
        }
    }

    fn put(&mut self, x: i64, y: i64, color: Rgb) {
        if !self.clip.contains(x, y) || !self.full().contains(x, y) {
            return;
        }
        let idx = ((y * self.width + x) * 3) as usize;
        if let Some(px) = self.pixels.get_mut(idx..idx + 3) {
            px.copy_from_slice(&color);
        }
    }

    fn fill_rect(&mut self, x: i64, y: i64, w: i64, h: i64, color: Rgb) {
        let area = self.full();
        let xa = x.max(area.x0).max(self.clip.x0);
        let ya = y.max(area.y0).max(self.clip.y0);
        let xb = x.saturating_add(w).min(area.x1).min(self.clip.x1);
        let yb = y.saturating_add(h).min(area.y1).min(self.clip.y1);
        for py in ya..yb {
            for px in xa..xb {
                self.put(px, py, color);
            }
        }
    }

    /// A one-pixel outline just inside `r`.
    fn stroke_rect(&mut self, r: Rect, color: Rgb) {
        self.fill_rect(r.x0, r.y0, r.width(), 1, color);
        self.fill_rect(r.x0, r.y1 - 1, r.width(), 1, color);
        self.fill_rect(r.x0, r.y0, 1, r.height(), color);
        self.fill_rect(r.x1 - 1, r.y0, 1, r.height(), color);
    }

    /// A line of `thickness` px (1..=3) from `(x0, y0)` to `(x1, y1)`, first clipped to the clip
    /// rectangle (so far-off coordinates cost nothing), then rasterised with Bresenham's algorithm.
    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        x0: f64,
        y0: f64,
        x1: f64,
        y1: f64,
        thickness: i64,
        color: Rgb,
        dash: &mut Dash,
    ) {
        let margin = 2.0;
        let bounds = (
            self.clip.x0 as f64 - margin,
            self.clip.y0 as f64 - margin,
            self.clip.x1 as f64 + margin,
            self.clip.y1 as f64 + margin,
        );
        let Some((x0, y0, x1, y1)) = clip_segment(x0, y0, x1, y1, bounds) else {
            return;
        };
        let thickness = thickness.clamp(1, 3);
        let lo = -(thickness - 1) / 2;
        let hi = lo + thickness - 1;
        let (mut x, mut y) = (x0.round() as i64, y0.round() as i64);
        let (xe, ye) = (x1.round() as i64, y1.round() as i64);
        let dx = (xe - x).abs();
        let dy = -(ye - y).abs();
        let sx = if x < xe { 1 } else { -1 };
        let sy = if y < ye { 1 } else { -1 };
        let mut err = dx + dy;
        loop {
            if dash.step() {
                for oy in lo..=hi {
                    for ox in lo..=hi {
                        self.put(x + ox, y + oy, color);
                    }
                }
            }
            if x == xe && y == ye {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// A filled marker of about `radius` px centred on `(cx, cy)`, with a white halo.
    fn marker(&mut self, kind: Marker, cx: i64, cy: i64, radius: i64, color: Rgb) {
        let r = radius.clamp(1, 12);
        self.marker_shape(kind, cx, cy, r + 1, WHITE);
        self.marker_shape(kind, cx, cy, r, color);
    }

    fn marker_shape(&mut self, kind: Marker, cx: i64, cy: i64, r: i64, color: Rgb) {
        for dy in -r - 1..=r + 1 {
            for dx in -r - 1..=r + 1 {
                let inside = match kind {
                    Marker::Circle => dx * dx + dy * dy <= r * r + r / 2,
                    Marker::Square => dx.abs() < r && dy.abs() < r,
                    Marker::Diamond => dx.abs() + dy.abs() <= r + 1,
                    Marker::Triangle => {
                        // Apex at the top, base at the bottom; the half width grows by half a
                        // pixel per row.
                        let row = dy + r;
                        (-r..=r).contains(&dy) && 2 * dx.abs() <= row + 1
                    }
                };
                if inside {
                    self.put(cx + dx, cy + dy, color);
                }
            }
        }
    }

    /// Draws `text` with its top-left corner at `(x, y)`, each font pixel `scale` px square.
    fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, color: Rgb) {
        let scale = scale.clamp(1, 8);
        for (i, ch) in text.chars().enumerate() {
            let gx = x + i as i64 * CELL_W * scale;
            if gx >= self.width {
                break;
            }
            let glyph = glyph(ch);
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..GLYPH_W {
                    if bits & (1 << (GLYPH_W - 1 - col)) != 0 {
                        self.fill_rect(
                            gx + col * scale,
                            y + row as i64 * scale,
                            scale,
                            scale,
                            color,
                        );
                    }
                }
            }
        }
    }

    /// Draws `text` turned a quarter turn anticlockwise, reading upwards, with the start of its
    /// baseline side at the bottom-left corner `(x, bottom)`.
    fn text_up(&mut self, x: i64, bottom: i64, text: &str, scale: i64, color: Rgb) {
        let scale = scale.clamp(1, 8);
        for (i, ch) in text.chars().enumerate() {
            let along = i as i64 * CELL_W * scale;
            if bottom - along < 0 {
                break;
            }
            let glyph = glyph(ch);
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..GLYPH_W {
                    if bits & (1 << (GLYPH_W - 1 - col)) != 0 {
                        let px = x + row as i64 * scale;
                        let py = bottom - along - (col + 1) * scale + 1;
                        self.fill_rect(px, py, scale, scale, color);
                    }
                }
            }
        }
    }

    fn encode_png(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self.encode_into(&mut out) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }

    fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), png::EncodingError> {
        let mut encoder = png::Encoder::new(out, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Best);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&self.pixels)?;
        writer.finish()
    }
}

/// Liang-Barsky clipping of a segment to `(xmin, ymin, xmax, ymax)`.
fn clip_segment(
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
    (xmin, ymin, xmax, ymax): (f64, f64, f64, f64),
) -> Option<(f64, f64, f64, f64)> {
    if ![x0, y0, x1, y1].iter().all(|v| v.is_finite()) {
        return None;
    }
    let (dx, dy) = (x1 - x0, y1 - y0);
    let mut t0: f64 = 0.0;
    let mut t1: f64 = 1.0;
    for (p, q) in [
        (-dx, x0 - xmin),
        (dx, xmax - x0),
        (-dy, y0 - ymin),
        (dy, ymax - y0),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    (t0 <= t1).then_some((x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy))
}

// ----------------------------------------------------------------------------------------------
// Bitmap font

const GLYPH_W: i64 = 5;
/// Height of the capitals and digits, in font pixels.
const CAP_H: i64 = 7;
/// Horizontal advance per character, in font pixels.
const CELL_W: i64 = 6;
/// Line height (7 rows above the baseline, 2 descender rows, 2 rows of leading), in font pixels.
const CELL_H: i64 = 11;

/// Text width in pixels at `scale`, without trailing spacing.
fn text_width(text: &str, scale: i64) -> i64 {
    let n = text.chars().count() as i64;
    if n == 0 {
        0
    } else {
        n * CELL_W * scale - scale
    }
}

fn glyph(ch: char) -> &'static [u8; 9] {
    let code = ch as usize;
    let fallback = &FONT[('?' as usize) - 32];
    if (32..=126).contains(&code) {
        FONT.get(code - 32).unwrap_or(fallback)
    } else {
        fallback
    }
}

/// Glyphs for ASCII 32..=126. Each glyph is 9 rows of 5 bits, top row first, most significant of
/// the 5 bits leftmost; rows 0..=6 sit on the baseline, rows 7 and 8 hold descenders.
#[rustfmt::skip]
const FONT: [[u8; 9]; 95] = [
    [0, 0, 0, 0, 0, 0, 0, 0, 0],                                                 // ' '
    [0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0, 0b00100, 0, 0],             // !
    [0b01010, 0b01010, 0b01010, 0, 0, 0, 0, 0, 0],                               // "
    [0b01010, 0b01010, 0b11111, 0b01010, 0b11111, 0b01010, 0b01010, 0, 0],       // #
    [0b00100, 0b01111, 0b10100, 0b01110, 0b00101, 0b11110, 0b00100, 0, 0],       // $
    [0b11000, 0b11001, 0b00010, 0b00100, 0b01000, 0b10011, 0b00011, 0, 0],       // %
    [0b01100, 0b10010, 0b10100, 0b01000, 0b10101, 0b10010, 0b01101, 0, 0],       // &
    [0b00100, 0b00100, 0b01000, 0, 0, 0, 0, 0, 0],                               // '
    [0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010, 0, 0],       // (
    [0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000, 0, 0],       // )
    [0, 0b00100, 0b10101, 0b01110, 0b10101, 0b00100, 0, 0, 0],                   // *
    [0, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0, 0, 0],                   // +
    [0, 0, 0, 0, 0, 0b01100, 0b00100, 0b01000, 0],                               // ,
    [0, 0, 0, 0b11111, 0, 0, 0, 0, 0],                                           // -
    [0, 0, 0, 0, 0, 0b01100, 0b01100, 0, 0],                                     // .
    [0, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0, 0, 0],                   // /
    [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110, 0, 0],       // 0
    [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0, 0],       // 1
    [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111, 0, 0],       // 2
    [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110, 0, 0],       // 3
    [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010, 0, 0],       // 4
    [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110, 0, 0],       // 5
    [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110, 0, 0],       // 6
    [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0, 0],       // 7
    [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110, 0, 0],       // 8
    [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100, 0, 0],       // 9
    [0, 0b01100, 0b01100, 0, 0b01100, 0b01100, 0, 0, 0],                         // :
    [0, 0b01100, 0b01100, 0, 0b01100, 0b00100, 0b01000, 0, 0],                   // ;
    [0b00010, 0b00100, 0b01000, 0b10000, 0b01000, 0b00100, 0b00010, 0, 0],       // <
    [0, 0, 0b11111, 0, 0b11111, 0, 0, 0, 0],                                     // =
    [0b01000, 0b00100, 0b00010, 0b00001, 0b00010, 0b00100, 0b01000, 0, 0],       // >
    [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0, 0b00100, 0, 0],             // ?
    [0b01110, 0b10001, 0b00001, 0b01101, 0b10101, 0b10101, 0b01110, 0, 0],       // @
    [0b01110, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001, 0, 0],       // A
    [0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110, 0, 0],       // B
    [0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110, 0, 0],       // C
    [0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100, 0, 0],       // D
    [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111, 0, 0],       // E
    [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000, 0, 0],       // F
    [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111, 0, 0],       // G
    [0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001, 0, 0],       // H
    [0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0, 0],       // I
    [0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100, 0, 0],       // J
    [0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001, 0, 0],       // K
    [0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111, 0, 0],       // L
    [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001, 0, 0],       // M
    [0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001, 0, 0],       // N
    [0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110, 0, 0],       // O
    [0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000, 0, 0],       // P
    [0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101, 0, 0],       // Q
    [0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001, 0, 0],       // R
    [0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110, 0, 0],       // S
    [0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0, 0],       // T
    [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110, 0, 0],       // U
    [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0, 0],       // V
    [0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010, 0, 0],       // W
    [0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001, 0, 0],       // X
    [0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100, 0, 0],       // Y
    [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111, 0, 0],       // Z
    [0b01110, 0b01000, 0b01000, 0b01000, 0b01000, 0b01000, 0b01110, 0, 0],       // [
    [0, 0b10000, 0b01000, 0b00100, 0b00010, 0b00001, 0, 0, 0],                   // \
    [0b01110, 0b00010, 0b00010, 0b00010, 0b00010, 0b00010, 0b01110, 0, 0],       // ]
    [0b00100, 0b01010, 0b10001, 0, 0, 0, 0, 0, 0],                               // ^
    [0, 0, 0, 0, 0, 0, 0, 0b11111, 0],                                           // _
    [0b01000, 0b00100, 0b00010, 0, 0, 0, 0, 0, 0],                               // `
    [0, 0, 0b01110, 0b00001, 0b01111, 0b10001, 0b01111, 0, 0],                   // a
    [0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b11110, 0, 0],       // b
    [0, 0, 0b01110, 0b10000, 0b10000, 0b10001, 0b01110, 0, 0],                   // c
    [0b00001, 0b00001, 0b01101, 0b10011, 0b10001, 0b10001, 0b01111, 0, 0],       // d
    [0, 0, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110, 0, 0],                   // e
    [0b00110, 0b01001, 0b01000, 0b11100, 0b01000, 0b01000, 0b01000, 0, 0],       // f
    [0, 0, 0b01111, 0b10001, 0b10001, 0b10011, 0b01101, 0b00001, 0b01110],       // g
    [0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001, 0, 0],       // h
    [0b00100, 0, 0b01100, 0b00100, 0b00100, 0b00100, 0b01110, 0, 0],             // i
    [0b00010, 0, 0b00110, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100], // j
    [0b10000, 0b10000, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0, 0],       // k
    [0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0, 0],       // l
    [0, 0, 0b11010, 0b10101, 0b10101, 0b10101, 0b10101, 0, 0],                   // m
    [0, 0, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001, 0, 0],                   // n
    [0, 0, 0b01110, 0b10001, 0b10001, 0b10001, 0b01110, 0, 0],                   // o
    [0, 0, 0b10110, 0b11001, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000],       // p
    [0, 0, 0b01101, 0b10011, 0b10001, 0b10001, 0b01111, 0b00001, 0b00001],       // q
    [0, 0, 0b10110, 0b11001, 0b10000, 0b10000, 0b10000, 0, 0],                   // r
    [0, 0, 0b01111, 0b10000, 0b01110, 0b00001, 0b11110, 0, 0],                   // s
    [0b01000, 0b01000, 0b11100, 0b01000, 0b01000, 0b01001, 0b00110, 0, 0],       // t
    [0, 0, 0b10001, 0b10001, 0b10001, 0b10011, 0b01101, 0, 0],                   // u
    [0, 0, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0, 0],                   // v
    [0, 0, 0b10001, 0b10001, 0b10101, 0b10101, 0b01010, 0, 0],                   // w
    [0, 0, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0, 0],                   // x
    [0, 0, 0b10001, 0b10001, 0b10001, 0b10011, 0b01101, 0b00001, 0b01110],       // y
    [0, 0, 0b11111, 0b00010, 0b00100, 0b01000, 0b11111, 0, 0],                   // z
    [0b00010, 0b00100, 0b00100, 0b01000, 0b00100, 0b00100, 0b00010, 0, 0],       // {
    [0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0, 0],       // |
    [0b01000, 0b00100, 0b00100, 0b00010, 0b00100, 0b00100, 0b01000, 0, 0],       // }
    [0, 0, 0b01000, 0b10101, 0b00010, 0, 0, 0, 0],                               // ~
];

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(bytes);
        let mut reader = decoder.read_info().expect("valid PNG header");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("valid PNG data");
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    fn example_line() -> LineChart {
        let streams = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];
        let curve = |peak: f64, knee: f64| -> Vec<(f64, f64)> {
            streams
                .iter()
                .map(|&n| (n, peak * n / (n + knee)))
                .collect()
        };
        LineChart {
            title: "Throughput vs. streams (HDD, 128 KiB reads)".into(),
            x_label: "concurrent streams".into(),
            y_label: "throughput [MiB/s]".into(),
            x_log2: true,
            y_log10: false,
            series: vec![
                Series {
                    name: "no prefetch".into(),
                    points: curve(60.0, 40.0),
                    dashed: true,
                },
                Series {
                    name: "readahead 128 KiB".into(),
                    points: curve(110.0, 12.0),
                    dashed: false,
                },
                Series {
                    name: "Foresight (adaptive)".into(),
                    points: curve(150.0, 3.0),
                    dashed: false,
                },
                Series {
                    name: "oracle".into(),
                    points: curve(165.0, 1.5),
                    dashed: true,
                },
            ],
        }
    }

    fn example_log() -> LineChart {
        let sizes: Vec<f64> = (0..=60)
            .map(|i| 2f64.powf(12.0 + i as f64 * 0.15))
            .collect();
        LineChart {
            title: "Service time vs. request size".into(),
            x_label: "request size [bytes]".into(),
            y_label: "service time [ms]".into(),
            x_log2: true,
            y_log10: true,
            series: vec![
                Series {
                    name: "HDD".into(),
                    points: sizes.iter().map(|&s| (s, 5.0 + s / 150e3)).collect(),
                    dashed: false,
                },
                Series {
                    name: "SSD".into(),
                    points: sizes.iter().map(|&s| (s, 0.08 + s / 2e6)).collect(),
                    dashed: false,
                },
                Series {
                    name: "RAID-0 x4; measured".into(),
                    points: vec![
                        (4096.0, 5.2),
                        (65536.0, 5.9),
                        (1048576.0, 8.1),
                        (f64::NAN, 1.0),
                    ],
                    dashed: true,
                },
            ],
        }
    }

    fn example_bar() -> BarChart {
        BarChart {
            title: "Mean read latency by workload".into(),
            x_label: "workload".into(),
            y_label: "latency [ms]".into(),
            groups: vec![
                "seq-1".into(),
                "seq-16".into(),
                "random".into(),
                "tpcc".into(),
                "hm_0".into(),
            ],
            series: vec![
                ("no prefetch".into(), vec![0.9, 6.5, 8.1, 4.2, 3.3]),
                ("readahead".into(), vec![0.4, 4.8, 8.6, 4.0, 2.9]),
                ("Foresight".into(), vec![0.3, 1.9, 8.0, 3.1, 2.2]),
            ],
        }
    }

    #[test]
    fn line_chart_is_a_valid_png_of_the_requested_size() {
        let bytes = example_line().render_png(800, 500);
        let (w, h, pixels) = decode(&bytes);
        assert_eq!((w, h), (800, 500));
        // Something other than background was drawn, in more than one colour.
        let blue = PALETTE_RGB[0];
        assert!(pixels.chunks(3).any(|p| p == blue));
        assert!(pixels.chunks(3).any(|p| p == TEXT));
    }

    #[test]
    fn bar_chart_is_a_valid_png_of_the_requested_size() {
        let bytes = example_bar().render_png(640, 400);
        let (w, h, pixels) = decode(&bytes);
        assert_eq!((w, h), (640, 400));
        assert!(pixels.chunks(3).any(|p| p == PALETTE_RGB[2]));
    }

    #[test]
    fn rendering_is_deterministic() {
        let line = example_line();
        assert_eq!(line.render_png(700, 450), line.render_png(700, 450));
        let bar = example_bar();
        assert_eq!(bar.render_png(700, 450), bar.render_png(700, 450));
    }

    fn edge_chart() -> LineChart {
        LineChart {
            title: "edge cases: NaN, inf, empty, single point, all-equal y".into(),
            x_label: String::new(),
            y_label: String::new(),
            x_log2: true,
            y_log10: true,
            series: vec![
                Series::default(),
                Series {
                    name: "nan".into(),
                    points: vec![
                        (f64::NAN, 1.0),
                        (1.0, f64::INFINITY),
                        (-4.0, 2.0),
                        (2.0, -1.0),
                    ],
                    dashed: true,
                },
                Series {
                    name: "single".into(),
                    points: vec![(4.0, 3.0)],
                    dashed: false,
                },
                Series {
                    name: "flat".into(),
                    points: vec![(1.0, 5.0), (8.0, 5.0), (f64::NAN, f64::NAN), (64.0, 5.0)],
                    dashed: false,
                },
            ],
        }
    }

    #[test]
    fn degenerate_charts_render() {
        let nasty = edge_chart();
        for (w, h) in [
            (0, 0),
            (1, 1),
            (33, 40),
            (300, 200),
            (960, 600),
            (100_000, 40),
        ] {
            let bytes = nasty.render_png(w, h);
            let (dw, dh, _) = decode(&bytes);
            assert_eq!(dw, w.clamp(MIN_SIDE_PX, MAX_SIDE_PX));
            assert_eq!(dh, h.clamp(MIN_SIDE_PX, MAX_SIDE_PX));
        }
        let linear = LineChart {
            x_log2: false,
            y_log10: false,
            ..nasty.clone()
        };
        decode(&linear.render_png(400, 300));
        decode(&LineChart::default().render_png(400, 300));
        let huge = LineChart {
            series: vec![Series {
                name: "x".repeat(10_000),
                points: vec![
                    (-1e308, 1e308),
                    (1e308, -1e308),
                    (0.0, 1e-308),
                    (1e-300, 0.0),
                ],
                dashed: true,
            }],
            title: "t".repeat(5_000),
            ..LineChart::default()
        };
        decode(&huge.render_png(500, 300));
        let bars = BarChart {
            title: "edge".into(),
            groups: vec!["a".into(), "a very long category label indeed".into()],
            series: vec![
                ("empty".into(), vec![]),
                ("odd".into(), vec![f64::NAN, -3.0, f64::INFINITY, 7.0]),
                (String::new(), vec![0.0, 0.0]),
            ],
            ..BarChart::default()
        };
        decode(&bars.render_png(500, 300));
        decode(&BarChart::default().render_png(500, 300));
        let zeros = BarChart {
            series: vec![("z".into(), vec![0.0; 3])],
            ..BarChart::default()
        };
        decode(&zeros.render_png(500, 300));
    }

    #[test]
    fn nice_ticks_are_1_2_5_steps_covering_the_range() {
        let cases = [
            (0.0, 1.0),
            (0.0, 100.0),
            (3.2, 17.9),
            (-7.5, 42.0),
            (0.001, 0.0047),
            (123_456.0, 987_654.0),
            (-1e-6, -1e-7),
            (5.0, 5.0),
            (0.0, 0.0),
            (9.0, 1.0),
            (1.0, 1.0 + 1e-15),
            (-1e300, 1e300),
        ];
        for (lo, hi) in cases {
            for target in [2, 5, 8, 12] {
                let ticks = nice_ticks(lo, hi, target);
                assert!(ticks.len() >= 2, "{lo}..{hi}: {ticks:?}");
                assert!(
                    ticks.len() <= target + 3,
                    "{lo}..{hi} target {target}: {ticks:?}"
                );
                let first = ticks[0];
                let last = ticks[ticks.len() - 1];
                assert!(
                    first <= lo.min(hi) && last >= hi.max(lo),
                    "{lo}..{hi}: {ticks:?}"
                );
                let step = ticks[1] - ticks[0];
                let mantissa = step / 10f64.powf(step.log10().floor());
                assert!(
                    [1.0, 2.0, 5.0, 10.0]
                        .iter()
                        .any(|m| (mantissa - m).abs() < 1e-6),
                    "{lo}..{hi}: step {step}"
                );
                for pair in ticks.windows(2) {
                    assert!(
                        ((pair[1] - pair[0]) - step).abs() <= step * 1e-6,
                        "{ticks:?}"
                    );
                }
            }
        }
        assert_eq!(
            nice_ticks(0.0, 100.0, 5),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(nice_ticks(f64::NAN, f64::NAN, 5).first(), Some(&0.0));
    }

    #[test]
    fn tick_labels_read_cleanly() {
        assert_eq!(format_tick(0.30000000000000004, 0.1), "0.3");
        assert_eq!(format_tick(-0.0, 1.0), "0");
        assert_eq!(format_tick(2e-5, 1e-5), "2e-5");
        assert_eq!(format_tick(15_000_000.0, 5_000_000.0), "1.5e7");
        assert_eq!(format_tick(250.0, 50.0), "250");
        assert_eq!(format_pow2(0), "1");
        assert_eq!(format_pow2(8), "256");
        assert_eq!(format_pow2(12), "4K");
        assert_eq!(format_pow2(20), "1M");
        assert_eq!(format_pow2(-1), "0.5");
        // A one-way delay axis from 0.05 ms reaches 2^-4; its label is a number, not "2^-4".
        assert_eq!(format_pow2(-4), "0.0625");
        assert_eq!(format_pow2(-6), "0.015625");
        assert_eq!(format_pow2(-10), "9.77e-4");
        for exp in -40..50 {
            assert!(
                !format_pow2(exp).contains('^'),
                "{exp}: {}",
                format_pow2(exp)
            );
        }
        assert_eq!(format_pow10(-2), "0.01");
        assert_eq!(format_pow10(3), "1000");
        assert_eq!(format_pow10(6), "1e6");
    }

    #[test]
    fn log_axes_tick_at_powers() {
        let fits = |_: &[(f64, String)]| true;
        let ticks = log_ticks(AxisScale::Log2, 0.0, 8.0, &fits);
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["1", "2", "4", "8", "16", "32", "64", "128", "256"]);
        let ticks = log_ticks(AxisScale::Log10, -1.2, 2.3, &fits);
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0.1", "1", "10", "100"]);
        // Less than a decade: 1-2-5 values inside the range instead.
        let ticks = log_ticks(AxisScale::Log10, 2f64.log10(), 8f64.log10(), &fits);
        assert!(ticks.len() >= 2, "{ticks:?}");
        // Under two decades (Table 7.3's 22 to 1402 s): 1, 2 and 5 times each power.
        let ticks = log_ticks(AxisScale::Log10, 22f64.log10(), 1402f64.log10(), &fits);
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["50", "100", "200", "500", "1000"]);
        let ticks = log_ticks(AxisScale::Log10, 1794f64.log10(), 26878f64.log10(), &fits);
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["2000", "5000", "10000", "20000"]);
    }

    /// Table 7.15's elapsed times (1794 to 26878 s) on a chart's log axis of ordinary height were
    /// labelled only at 10000 and 20000, leaving the lower two thirds of the axis unread.
    #[test]
    fn a_log_axis_of_about_a_decade_is_labelled_along_its_height() {
        let mut range = Range::default();
        range.add(1794f64.log10());
        range.add(26878f64.log10());
        let axis = Axis::numeric(
            AxisScale::Log10,
            range.padded(0.05),
            420,
            AxisDir::Vertical,
            2,
        );
        let below_10000 = axis.ticks.iter().filter(|(t, _)| *t < 4.0).count();
        assert!(below_10000 >= 2, "{:?}", axis.ticks);
    }

    /// A legend keeps a series name of 26 characters whole on the default image.
    #[test]
    fn the_legend_keeps_a_long_series_name_whole() {
        let canvas = Canvas::new(DEFAULT_WIDTH_PX, DEFAULT_HEIGHT_PX);
        let text = text_scale(&canvas);
        let name = "streams R=8MiB N=1 M=16MiB";
        assert_eq!(truncate(name, legend_max_chars(&canvas, text)), name);
    }

    #[test]
    fn every_printable_ascii_character_has_a_glyph() {
        for code in 33u8..=126 {
            let g = glyph(code as char);
            assert!(
                g.iter().any(|&row| row != 0),
                "glyph {:?} is blank",
                code as char
            );
            assert!(g.iter().all(|&row| row < 32));
        }
        assert_eq!(glyph('µ'), glyph('?'));
        assert_eq!(text_width("", 2), 0);
        assert_eq!(text_width("ab", 1), 11);
    }

    fn value() -> impl proptest::strategy::Strategy<Value = f64> {
        use proptest::prelude::*;
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            -1e6..1e6f64,
            any::<f64>(),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(48))]

        #[test]
        fn any_line_chart_renders(
            points in proptest::collection::vec(proptest::collection::vec((value(), value()), 0..12), 0..11),
            x_log2: bool,
            y_log10: bool,
            width_px in 0u32..420,
            height_px in 0u32..300,
            name in "[ -~]{0,30}",
        ) {
            let chart = LineChart {
                title: name.clone(),
                x_label: name.clone(),
                y_label: name.clone(),
                x_log2,
                y_log10,
                series: points
                    .into_iter()
                    .enumerate()
                    .map(|(i, points)| Series { name: name.clone(), points, dashed: i % 2 == 1 })
                    .collect(),
            };
            let (w, h, _) = decode(&chart.render_png(width_px, height_px));
            proptest::prop_assert_eq!(w, width_px.clamp(MIN_SIDE_PX, MAX_SIDE_PX));
            proptest::prop_assert_eq!(h, height_px.clamp(MIN_SIDE_PX, MAX_SIDE_PX));
        }

        #[test]
        fn any_bar_chart_renders(
            series in proptest::collection::vec(proptest::collection::vec(value(), 0..8), 0..10),
            groups in proptest::collection::vec("[ -~]{0,12}", 0..8),
            width_px in 0u32..420,
            height_px in 0u32..300,
        ) {
            let chart = BarChart {
                title: "t".into(),
                x_label: "x".into(),
                y_label: "y".into(),
                groups,
                series: series.into_iter().map(|v| ("s".to_string(), v)).collect(),
            };
            let (w, h, _) = decode(&chart.render_png(width_px, height_px));
            proptest::prop_assert_eq!(w, width_px.clamp(MIN_SIDE_PX, MAX_SIDE_PX));
            proptest::prop_assert_eq!(h, height_px.clamp(MIN_SIDE_PX, MAX_SIDE_PX));
        }
    }

    /// Renders the two example charts; set FORESIGHT_PLOT_EXAMPLES_DIR to also write them there as
    /// `example_line.png` and `example_bar.png` for a person to look at.
    #[test]
    fn example_charts() {
        let line = example_line();
        let bar = example_bar();
        if let Some(dir) = std::env::var_os("FORESIGHT_PLOT_EXAMPLES_DIR") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::write(dir.join("example_line.png"), line.png().expect("encode"))
                .expect("write line chart");
            std::fs::write(dir.join("example_bar.png"), bar.png().expect("encode"))
                .expect("write bar chart");
            std::fs::write(
                dir.join("example_log_small.png"),
                example_log().render_png(600, 380),
            )
            .expect("write log chart");
            std::fs::write(
                dir.join("example_edge.png"),
                edge_chart().render_png(640, 400),
            )
            .expect("write edge chart");
            let empty = BarChart {
                title: "empty".into(),
                ..BarChart::default()
            };
            std::fs::write(
                dir.join("example_empty_bar.png"),
                empty.render_png(400, 300),
            )
            .expect("write empty chart");
        }
        let (w, h, _) = decode(&line.render_png(DEFAULT_WIDTH_PX, DEFAULT_HEIGHT_PX));
        assert_eq!((w, h), (DEFAULT_WIDTH_PX, DEFAULT_HEIGHT_PX));
        decode(&bar.render_png(DEFAULT_WIDTH_PX, DEFAULT_HEIGHT_PX));
    }
}
