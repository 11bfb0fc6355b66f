//! The figures drawn with plotters, each on any of its back ends (bitmap for PNG, SVG),
//! with a bundled font so a PNG is the same on every machine.

use std::error::Error;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::format::format_ns;

use super::data::{
    Bin, FigureData, IterationHistogram, NcclHistogram, OpSpan, StreamsOneIteration, TimelineView,
};

pub type DrawResult = Result<(), Box<dyn Error>>;

/// The font every figure uses (egui's own, bundled in the binary).
const FONT: &str = "sans-serif";

/// Registers the bundled font with plotters (once per process).
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        );
    });
}

pub const COMPUTE: RGBColor = RGBColor(66, 133, 244);
pub const NCCL: RGBColor = RGBColor(245, 140, 40);
pub const OVERLAP: RGBColor = RGBColor(60, 170, 90);
pub const MEMORY: RGBColor = RGBColor(150, 90, 200);
pub const IDLE: RGBColor = RGBColor(200, 200, 200);
const SERIES: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn title_font() -> TextStyle<'static> {
    (FONT, 34).into_font().into()
}

fn label_font() -> TextStyle<'static> {
    (FONT, 22).into_font().into()
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// What is drawn: one of the five figures, or the timeline's view.
#[derive(Clone, Copy)]
pub enum Figure<'a> {
    /// The figure called `name` (one of [`super::data`]'s names) of the data.
    Named(&'a str, &'a FigureData),
    View(&'a TimelineView),
}

impl Figure<'_> {
    /// What error messages call it.
    pub fn name(&self) -> &str {
        match self {
            Figure::Named(name, _) => name,
            Figure::View(_) => "the timeline's view",
        }
    }
}

/// Draws `figure` on `area`, on a white ground.
pub fn draw<DB>(figure: Figure, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    match figure {
        Figure::Named(name, data) => named(name, data, area),
        Figure::View(view) => timeline_view(view, area),
    }
}

fn named<DB>(name: &str, data: &FigureData, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    use super::data::*;
    match name {
        WALLTIME => walltime(data, area),
        OVER_TIME => over_time(data, area),
        HISTOGRAM => match &data.iter_duration_histogram {
            Some(h) => iteration_histogram(h, area),
            None => Ok(()),
        },
        STREAMS => match &data.streams_one_iter {
            Some(s) => streams(s, area),
            None => Ok(()),
        },
        NCCL => match &data.nccl_kernel_duration_hist {
            Some(h) => nccl_histogram(h, area),
            None => Ok(()),
        },
        _ => Err(format!("no figure called {name}").into()),
    }
}

/// Per GPU a horizontal bar of its window's shares, stacked.
fn walltime<DB>(data: &FigureData, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    // The first GPU on top, a row of room above for the legend.
    let mut rows: Vec<(&String, [f64; 5])> = data
        .per_device_walltime
        .iter()
        .map(|(k, w)| {
            let parts = [
                w.compute_only_pct,
                w.nccl_only_pct,
                w.overlap_pct,
                w.memory_only_pct,
                w.idle_pct,
            ];
            (k, parts)
        })
        .collect();
    rows.reverse();
    let n = rows.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption("Where each GPU's time goes", title_font())
        .margin(30)
        .x_label_area_size(60)
        .y_label_area_size(220)
        .build_cartesian_2d(0.0..100.0, 0.0..n as f64 + 0.8)?;
    let names: Vec<String> = rows.iter().map(|r| format!("GPU {}", r.0)).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("share of the analysed window (%)")
        .label_style(label_font())
        .y_labels(0)
        .draw()?;
    row_names(area, &chart, &names)?;
    let colors = [COMPUTE, NCCL, OVERLAP, MEMORY, IDLE];
    let labels = [
        "compute only",
        "NCCL only",
        "overlap",
        "memory only",
        "idle",
    ];
    for (part, (color, label)) in colors.into_iter().zip(labels).enumerate() {
        let bars = rows.iter().enumerate().map(|(k, (_, parts))| {
            let from: f64 = parts[..part].iter().sum();
            let y = k as f64;
            Rectangle::new(
                [(from, y + 0.15), (from + parts[part], y + 0.85)],
                color.filled(),
            )
        });
        chart
            .draw_series(bars)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 8), (x + 16, y + 8)], color.filled()));
        // The share written on its part when there is room.
        let texts = rows.iter().enumerate().filter_map(|(k, (_, parts))| {
            let from: f64 = parts[..part].iter().sum();
            (parts[part] >= 4.0).then(|| {
                Text::new(
                    format!("{:.0} %", parts[part]),
                    (from + parts[part] / 2.0 - 1.5, k as f64 + 0.55),
                    label_font(),
                )
            })
        });
        chart.draw_series(texts)?;
    }
    legend(&mut chart)?;
    Ok(())
}

/// Each row's name left of the plot, beside the middle of row `k` (rows `[k, k + 1)`).
fn row_names<'a, DB>(
    area: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    names: &[String],
) -> DrawResult
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
{
    let x0 = chart.x_range().start;
    let style = label_font().pos(Pos::new(HPos::Right, VPos::Center));
    for (k, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(x0, k as f64 + 0.5));
        area.draw(&Text::new(name.clone(), (x - 12, y), style.clone()))?;
    }
    Ok(())
}

fn legend<'a, DB, X, Y>(chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>) -> DrawResult
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
{
    chart
        .configure_series_labels()
        .label_font(label_font())
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}

/// Each iteration's duration against when it started, warm-up shaded.
fn over_time<DB>(data: &FigureData, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let Some(o) = &data.iter_duration_over_time else {
        return Ok(());
    };
    let points = o.series.values().flatten();
    let t_max = points
        .clone()
        .map(|p| p[0] as f64 / 1e9)
        .fold(0.0, f64::max);
    let d_max = points.map(|p| ms(p[1])).fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption("Iteration duration over time", title_font())
        .margin(30)
        .x_label_area_size(60)
        .y_label_area_size(100)
        .build_cartesian_2d(0.0..(t_max * 1.02).max(1e-3), 0.0..(d_max * 1.1).max(1e-3))?;
    chart
        .configure_mesh()
        .x_desc("time since the trace's start (s)")
        .y_desc("iteration duration (ms)")
        .label_style(label_font())
        .draw()?;
    let warmup_end = o.warmup_end_ns.values().copied().max().unwrap_or(0) as f64 / 1e9;
    if warmup_end > 0.0 {
        chart
            .draw_series([Rectangle::new(
                [(0.0, 0.0), (warmup_end, d_max * 1.1)],
                BLACK.mix(0.08).filled(),
            )])?
            .label("warm-up")
            .legend(|(x, y)| {
                Rectangle::new([(x, y - 8), (x + 16, y + 8)], BLACK.mix(0.15).filled())
            });
    }
    for (k, (device, series)) in o.series.iter().enumerate() {
        let color = SERIES[k % SERIES.len()];
        chart
            .draw_series(LineSeries::new(
                series.iter().map(|p| (p[0] as f64 / 1e9, ms(p[1]))),
                color.stroke_width(2),
            ))?
            .label(format!("GPU {device}"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(3)));
    }
    legend(&mut chart)?;
    Ok(())
}

/// Bars of a histogram in ms, with `caption`.
fn bars<DB>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    x_desc: &str,
    bins: &[Bin],
    color: RGBColor,
    marks: &[(i64, String)],
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let (Some(first), Some(last)) = (bins.first(), bins.last()) else {
        return Ok(());
    };
    let top = bins.iter().map(|b| b.count).max().unwrap_or(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, title_font())
        .margin(30)
        .x_label_area_size(60)
        .y_label_area_size(100)
        .build_cartesian_2d(ms(first.from_ns)..ms(last.to_ns), 0.0..top * 1.15)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(x_desc)
        .y_desc("count")
        .label_style(label_font())
        .draw()?;
    chart.draw_series(bins.iter().map(|b| {
        Rectangle::new(
            [(ms(b.from_ns), 0.0), (ms(b.to_ns), b.count as f64)],
            color.filled(),
        )
    }))?;
    for (at, text) in marks {
        let x = ms(*at);
        chart.draw_series([PathElement::new(
            [(x, 0.0), (x, top * 1.08)],
            BLACK.mix(0.6).stroke_width(2),
        )])?;
        chart.draw_series([Text::new(text.clone(), (x, top * 1.12), label_font())])?;
    }
    Ok(())
}

/// What a histogram leaves out, for its caption.
fn outside(below: usize, above: usize) -> String {
    match (below, above) {
        (0, 0) => String::new(),
        (b, a) => format!(" ({b} below, {a} above the bins)"),
    }
}

fn iteration_histogram<DB>(h: &IterationHistogram, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let caption = format!(
        "Steady-state iteration durations: {} iterations, median {}, σ {} ({:.2} %){}",
        h.count,
        format_ns(h.median_ns),
        format_ns(h.sigma_ns.round() as i64),
        h.sigma_pct,
        outside(h.below, h.above)
    );
    let marks = [(h.median_ns, "median".to_string())];
    bars(
        area,
        &caption,
        "iteration duration (ms)",
        &h.bins,
        COMPUTE,
        &marks,
    )
}

fn nccl_histogram<DB>(h: &NcclHistogram, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let modes: Vec<String> = h.modes_ns.iter().map(|&m| format_ns(m)).collect();
    let caption = format!(
        "NCCL kernel durations: {} kernels, modes {}",
        h.count,
        if modes.is_empty() {
            "none".into()
        } else {
            modes.join(", ")
        }
    );
    let marks: Vec<(i64, String)> = h.modes_ns.iter().map(|&m| (m, format_ns(m))).collect();
    bars(
        area,
        &caption,
        "kernel duration (ms)",
        &h.bins,
        NCCL,
        &marks,
    )
}

/// One iteration of one GPU: a row per stream, its ops coloured by kind.
fn streams<DB>(s: &StreamsOneIteration, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let rows: Vec<(String, &[OpSpan])> = s
        .spans
        .iter()
        .map(|(id, ops)| (format!("stream {id}"), ops.as_slice()))
        .collect();
    let title = format!(
        "GPU {}, iteration {}: {}, stream by stream",
        s.device,
        s.iteration,
        format_ns(s.end_ns - s.start_ns)
    );
    let x_desc = "time since the iteration's start (ms)";
    rows_chart(area, &title, x_desc, (s.start_ns, s.end_ns), &rows)
}

/// The timeline's view: a row per GPU stream.
fn timeline_view<DB>(v: &TimelineView, area: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let rows: Vec<(String, &[OpSpan])> = v
        .rows
        .iter()
        .map(|r| (r.name.clone(), r.spans.as_slice()))
        .collect();
    let title = format!(
        "The timeline from {:.3} s to {:.3} s ({})",
        v.start_ns as f64 / 1e9,
        v.end_ns as f64 / 1e9,
        format_ns(v.end_ns - v.start_ns)
    );
    let x_desc = format!("time since {:.3} s (ms)", v.start_ns as f64 / 1e9);
    rows_chart(area, &title, &x_desc, (v.start_ns, v.end_ns), &rows)
}

/// Rows of ops over `[start, end]` (ns), the first row on top, coloured by kind.
fn rows_chart<DB>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    (start, end): (i64, i64),
    rows: &[(String, &[OpSpan])],
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let rows: Vec<&(String, &[OpSpan])> = rows.iter().rev().collect();
    let n = rows.len().max(1);
    let length = ms(end - start).max(1e-3);
    let mut chart = ChartBuilder::on(area)
        .caption(title, title_font())
        .margin(30)
        .x_label_area_size(60)
        .y_label_area_size(220)
        .build_cartesian_2d(0.0..length, 0.0..n as f64 + 0.6)?;
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .label_style(label_font())
        .y_labels(0)
        .draw()?;
    row_names(area, &chart, &names)?;
    let x = |t: i64| ms(t.clamp(start, end) - start);
    for (kind, color) in [
        ("compute", COMPUTE),
        ("NCCL", NCCL),
        ("memcpy", MEMORY),
        ("memset", MEMORY),
    ] {
        let boxes = rows.iter().enumerate().flat_map(|(k, (_, ops))| {
            ops.iter().filter(move |o| o.kind == kind).map(move |o| {
                let y = k as f64;
                Rectangle::new(
                    [(x(o.start_ns), y + 0.15), (x(o.end_ns), y + 0.85)],
                    color.filled(),
                )
            })
        });
        let series = chart.draw_series(boxes)?;
        if kind != "memset" {
            series
                .label(if kind == "memcpy" { "memory" } else { kind })
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 8), (x + 16, y + 8)], color.filled())
                });
        }
    }
    legend(&mut chart)?;
    Ok(())
}
