//! The five figures people draw to discuss a trace (the seed card's plots), as PNG and SVG
//! files and the numbers behind them (`figures.json`): `nsys-explorer figures`, the
//! window's File ▸ Export figures…, and the Python package.

pub mod data;
pub mod draw;

use std::path::{Path, PathBuf};

use plotters::prelude::*;

pub use data::{FigureData, figure_data};
use draw::Figure;

/// Every figure's name, in the order they are numbered.
pub const NAMES: [&str; 5] = [
    data::OVER_TIME,
    data::HISTOGRAM,
    data::STREAMS,
    data::WALLTIME,
    data::NCCL,
];

/// Size of a figure's image: readable at 100 % on a slide.
pub const SIZE: (u32, u32) = (1600, 900);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }

    /// `png`, `svg` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "png" => Some(Format::Png),
            "svg" => Some(Format::Svg),
            _ => None,
        }
    }
}

/// What [`write_figures`] wrote, and what it left out and why.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub skipped: Vec<(&'static str, String)>,
}

/// Whether the figure `name` has something to draw.
fn has(data: &FigureData, name: &str) -> bool {
    match name {
        data::WALLTIME => !data.per_device_walltime.is_empty(),
        data::OVER_TIME => data.iter_duration_over_time.is_some(),
        data::HISTOGRAM => data.iter_duration_histogram.is_some(),
        data::STREAMS => data.streams_one_iter.is_some(),
        data::NCCL => data.nccl_kernel_duration_hist.is_some(),
        _ => false,
    }
}

/// Writes the figures `names` (of [`NAMES`]) of `data` in each format into `dir` (made if
/// missing), and `figures.json`. Each file is written whole under a temporary name, then
/// renamed.
pub fn write_figures(
    data: &FigureData,
    dir: &Path,
    formats: &[Format],
    names: &[&str],
) -> Result<Written, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written = Written::default();
    for name in NAMES.into_iter().filter(|n| names.contains(n)) {
        if !has(data, name) {
            let why = data
                .skipped
                .get(name)
                .cloned()
                .unwrap_or_else(|| "nothing to draw".into());
            written.skipped.push((name, why));
            continue;
        }
        for &format in formats {
            let bytes = render(name, data, format, SIZE)?;
            let path = dir.join(format!("{name}.{}", format.extension()));
            write_whole(&path, &bytes)?;
            written.files.push(path);
        }
    }
    let json = serde_json::to_vec_pretty(data).map_err(|e| e.to_string())?;
    let path = dir.join("figures.json");
    write_whole(&path, &json)?;
    written.files.push(path);
    Ok(written)
}

fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The figure `name` as a PNG or SVG file's bytes.
pub fn render(
    name: &str,
    data: &FigureData,
    format: Format,
    size: (u32, u32),
) -> Result<Vec<u8>, String> {
    render_figure(Figure::Named(name, data), format, size)
}

/// `figure` drawn on the back end of `format`, as that file's bytes.
fn render_figure(figure: Figure, format: Format, size: (u32, u32)) -> Result<Vec<u8>, String> {
    draw::register_font();
    let failed = |e: Box<dyn std::error::Error>| format!("drawing {}: {e}", figure.name());
    match format {
        Format::Svg => {
            let mut svg = String::new();
            {
                let area = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                draw::draw(figure, &area).map_err(failed)?;
                area.present().map_err(|e| failed(e.into()))?;
            }
            Ok(svg.into_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let area = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                draw::draw(figure, &area).map_err(failed)?;
                area.present().map_err(|e| failed(e.into()))?;
            }
            encode_png(&rgb, size).map_err(|e| format!("encoding {}: {e}", figure.name()))
        }
    }
}

/// Writes the timeline's view as `timeline_view.{png,svg}` and `timeline_view.json` into
/// `dir`.
pub fn write_view(
    view: &data::TimelineView,
    dir: &Path,
    formats: &[Format],
) -> Result<Written, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written = Written::default();
    for &format in formats {
        let bytes = render_figure(Figure::View(view), format, SIZE)?;
        let path = dir.join(format!("timeline_view.{}", format.extension()));
        write_whole(&path, &bytes)?;
        written.files.push(path);
    }
    let json = serde_json::to_vec_pretty(view).map_err(|e| e.to_string())?;
    let path = dir.join("timeline_view.json");
    write_whole(&path, &json)?;
    written.files.push(path);
    Ok(written)
}

/// RGB pixels as a PNG file.
pub fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.write_header()?.write_image_data(rgb)?;
    }
    Ok(out)
}
