//! GPU metric rows and the device-memory row under each GPU's streams: per pixel the
//! minimum, mean and maximum of the samples it covers, drawn as the mean's level filled,
//! the min–max range a faint band over it. A metric sampled at 10 kHz for minutes has millions of samples, so
//! each series keeps the min, max and sum of every block of samples: a pixel reads whole
//! blocks and only the ends of its range sample by sample, whatever the zoom.

use std::collections::BTreeSet;

use eframe::egui::{Color32, Mesh, Pos2, Rect};

use crate::format::format_ns;
use crate::trace::{MetricValues, Trace};

/// Samples per block at each level of a series' summaries (each 32 of the one before).
const LEVELS: [usize; 3] = [32, 1024, 32768];

/// One block's summary: together, so that a pixel reading a block misses the cache once.
#[derive(Clone, Copy)]
struct SampleBlock {
    sum: f64,
    min: f32,
    max: f32,
    count: u32,
}

/// The summaries of a series' blocks of one size.
#[derive(Default)]
struct SampleBlocks(Vec<SampleBlock>);

/// The summaries of a series' blocks (the series itself stays in the trace).
pub struct SeriesIndex {
    /// One per size of [`LEVELS`].
    levels: Vec<SampleBlocks>,
    /// The axis' top: 100 for a percent, else the series' maximum.
    pub top: f32,
}

impl SampleBlocks {
    fn push(&mut self, min: f32, max: f32, sum: f64, count: u32) {
        self.0.push(SampleBlock {
            sum,
            min,
            max,
            count,
        });
    }
}

/// A series (values at sorted times) with its blocks' summaries.
#[derive(Clone, Copy)]
pub struct Series<'a> {
    pub time: &'a [i64],
    pub value: &'a MetricValues,
    pub index: &'a SeriesIndex,
}

/// Minimum, mean and maximum of some samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub min: f32,
    pub mean: f32,
    pub max: f32,
}

impl SeriesIndex {
    pub fn new(value: &MetricValues, percent: bool) -> SeriesIndex {
        let mut levels: Vec<SampleBlocks> = Vec::with_capacity(LEVELS.len());
        // The first level from the samples, each next one from the one before.
        let mut first = SampleBlocks::default();
        for start in (0..value.len()).step_by(LEVELS[0]) {
            let end = (start + LEVELS[0]).min(value.len());
            let (mut min, mut max, mut sum, mut n) = (f32::INFINITY, f32::NEG_INFINITY, 0.0, 0);
            for v in value.iter_range(start..end).filter(|v| !v.is_nan()) {
                min = min.min(v);
                max = max.max(v);
                sum += v as f64;
                n += 1;
            }
            first.push(min, max, sum, n);
        }
        levels.push(first);
        for w in LEVELS.windows(2) {
            let per = w[1] / w[0];
            let below = levels.last().expect("the first level");
            let mut next = SampleBlocks::default();
            for part in below.0.chunks(per) {
                next.push(
                    part.iter().map(|b| b.min).fold(f32::INFINITY, f32::min),
                    part.iter().map(|b| b.max).fold(f32::NEG_INFINITY, f32::max),
                    part.iter().map(|b| b.sum).sum(),
                    part.iter().map(|b| b.count).sum(),
                );
            }
            levels.push(next);
        }
        let most = levels[0]
            .0
            .iter()
            .map(|b| b.max)
            .filter(|v| v.is_finite())
            .fold(0.0f32, f32::max);
        SeriesIndex {
            levels,
            top: if percent { 100.0 } else { most.max(1e-9) },
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.levels
            .iter()
            .map(|l| l.0.len() * std::mem::size_of::<SampleBlock>())
            .sum()
    }
}

impl Series<'_> {
    /// The summary of samples `[a, b)` (`None` when none has a value).
    pub fn summary(&self, a: usize, b: usize) -> Option<Summary> {
        let (mut min, mut max, mut sum, mut n) = (f32::INFINITY, f32::NEG_INFINITY, 0.0f64, 0u64);
        let mut i = a;
        'walk: while i < b {
            // The biggest whole block starting here.
            for (level, &size) in LEVELS.iter().enumerate().rev() {
                if i.is_multiple_of(size) && i + size <= b {
                    let (blocks, k) = (&self.index.levels[level], i / size);
                    let b = blocks.0[k];
                    if b.count > 0 {
                        min = min.min(b.min);
                        max = max.max(b.max);
                        sum += b.sum;
                        n += b.count as u64;
                    }
                    i += size;
                    continue 'walk;
                }
            }
            let v = self.value.get(i);
            if !v.is_nan() {
                min = min.min(v);
                max = max.max(v);
                sum += v as f64;
                n += 1;
            }
            i += 1;
        }
        (n > 0).then(|| Summary {
            min,
            mean: (sum / n as f64) as f32,
            max,
        })
    }
}

/// Per GPU (by index in the trace), its metrics' summaries and its device-memory series.
#[derive(Default)]
pub struct MetricIndex {
    /// Per device index: where its metrics are in `trace.gpu_metrics`, and each metric's
    /// summaries (in the export's order).
    pub metrics: Vec<Option<(usize, Vec<SeriesIndex>)>>,
    /// Per device index: the MiB allocated after each event (those from before the
    /// capture included), when memory was recorded.
    pub memory: Vec<Option<OwnedSeries>>,
}

/// A series worked out from the trace (device memory in use), kept with its summaries.
pub struct OwnedSeries {
    pub time: Vec<i64>,
    pub value: MetricValues,
    pub index: SeriesIndex,
    /// When the series reached its maximum (the memory peak, marked on its row).
    pub peak_at: Option<i64>,
}

impl OwnedSeries {
    pub fn series(&self) -> Series<'_> {
        Series {
            time: &self.time,
            value: &self.value,
            index: &self.index,
        }
    }
}

impl MetricIndex {
    pub fn new(trace: &Trace) -> MetricIndex {
        let metrics = trace
            .devices
            .iter()
            .map(|d| {
                let k = trace.gpu_metrics.iter().position(|m| m.device == d.id)?;
                let summaries = trace.gpu_metrics[k]
                    .metrics
                    .iter()
                    .map(|(name, values)| SeriesIndex::new(values, is_percent(name)))
                    .collect();
                Some((k, summaries))
            })
            .collect();
        let memory = trace
            .devices
            .iter()
            .map(|d| {
                let m = trace.memory_usage.iter().find(|m| m.device == d.id)?;
                // From what was allocated before the capture, as the report counts it.
                use nsys_explorer_core::analysis::memory_usage::{balances, peak};
                let (before, balance) = balances(m);
                let value = MetricValues::Float(balance.iter().map(|&b| b as f32 / MIB).collect());
                let index = SeriesIndex::new(&value, false);
                // Marked where the report puts the peak.
                let peak_at = peak(m, before, &balance).map(|p| p.1);
                Some(OwnedSeries {
                    time: m.time.clone(),
                    value,
                    index,
                    peak_at,
                })
            })
            .collect();
        MetricIndex { metrics, memory }
    }

    /// Device `d`'s metric `m`: its name and series.
    pub fn metric<'a>(
        &'a self,
        trace: &'a Trace,
        d: usize,
        m: usize,
    ) -> Option<(&'a str, Series<'a>)> {
        let (k, summaries) = self.metrics.get(d)?.as_ref()?;
        let dm = &trace.gpu_metrics[*k];
        let (name, value) = dm.metrics.get(m)?;
        Some((
            name,
            Series {
                time: &dm.time,
                value,
                index: summaries.get(m)?,
            },
        ))
    }

    /// Every metric name of any GPU, in first-seen order.
    pub fn names(trace: &Trace) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (name, _) in trace.gpu_metrics.iter().flat_map(|m| &m.metrics) {
            if seen.insert(name.clone()) {
                out.push(name.clone());
            }
        }
        out
    }

    pub fn heap_bytes(&self) -> usize {
        let m: usize = self
            .metrics
            .iter()
            .flatten()
            .flat_map(|(_, s)| s)
            .map(SeriesIndex::heap_bytes)
            .sum();
        let mem: usize = self
            .memory
            .iter()
            .flatten()
            .map(|s| s.time.len() * 12 + s.index.heap_bytes())
            .sum();
        m + mem
    }
}

const MIB: f32 = 1024.0 * 1024.0;

/// Which metric rows are shown: the names chosen (default: those nsys's GPU view leads
/// with, where the export has them) and whether the device-memory row is.
pub struct MetricChoice {
    pub chosen: BTreeSet<String>,
    pub memory: bool,
}

impl MetricChoice {
    /// SMs Active, Tensor Active, DRAM read and write bandwidth, by the start of the name
    /// (units differ between versions).
    pub fn default_for(names: &[String]) -> MetricChoice {
        const DEFAULTS: [&str; 4] = ["SMs Active", "Tensor Active", "DRAM Read", "DRAM Write"];
        MetricChoice {
            chosen: names
                .iter()
                .filter(|n| DEFAULTS.iter().any(|d| n.starts_with(d)))
                .cloned()
                .collect(),
            memory: true,
        }
    }
}

/// The View menu's choice of rows: every metric of the capture, and device memory.
pub fn choice_menu(ui: &mut eframe::egui::Ui, trace: &Trace, choice: &mut MetricChoice) {
    if !trace.gpu_metrics.is_empty() {
        ui.label("GPU metric rows (under each GPU)");
        for name in MetricIndex::names(trace) {
            let mut on = choice.chosen.contains(&name);
            if ui.checkbox(&mut on, &name).changed() {
                if on {
                    choice.chosen.insert(name);
                } else {
                    choice.chosen.remove(&name);
                }
            }
        }
    }
    if !trace.memory_usage.is_empty() {
        ui.separator();
        ui.checkbox(&mut choice.memory, "Device memory row");
    }
}

/// A percent of peak (`[Throughput %]`, `[%]`): drawn on a 0–100 axis.
pub fn is_percent(name: &str) -> bool {
    name.contains('%')
}

/// The name as a row label: nsys's unit in brackets shortened ("SMs Active %").
pub fn short_name(name: &str) -> String {
    match name.split_once(" [") {
        Some((base, unit)) => {
            let unit = unit.trim_end_matches(']');
            let unit = unit.strip_prefix("Throughput ").unwrap_or(unit);
            format!("{base} {unit}")
        }
        None => name.to_string(),
    }
}

pub const AREA: Color32 = Color32::from_rgb(70, 130, 190);
pub const MEAN: Color32 = Color32::from_rgb(150, 200, 250);
pub const MEMORY_AREA: Color32 = Color32::from_rgb(150, 110, 60);
pub const MEMORY_LINE: Color32 = Color32::from_rgb(240, 190, 110);
/// The memory peak's mark.
pub const PEAK: Color32 = Color32::from_rgb(240, 90, 70);

/// Per pixel column of a row `width` px wide showing `view`, the first sample at or after
/// the column's start (`width + 1` entries, the last one the end): one forward walk with
/// galloping steps, not a search of the whole series per pixel (which missed the cache at
/// every probe: 16 ms a frame for 16 rows of 200k samples).
pub fn pixel_bounds(time: &[i64], view: (f64, f64), width: usize) -> Vec<usize> {
    let ns_per_px = (view.1 - view.0) / width.max(1) as f64;
    let mut out = Vec::with_capacity(width + 1);
    let mut i = 0;
    for px in 0..=width {
        let t = (view.0 + px as f64 * ns_per_px).floor() as i64;
        i = nsys_explorer_core::sorted::gallop(i, time.len(), |k| time[k] < t);
        out.push(i);
    }
    out
}

/// `[a, b)` with both ends moved to the nearest boundary of the biggest blocks a quarter of
/// its length: a pixel of many samples reads whole blocks alone (neighbours of one size
/// move their shared end alike), one of few reads every sample. Drawing only: the numbers
/// of the reports never come from here.
fn snapped(a: usize, b: usize) -> (usize, usize) {
    match LEVELS.iter().rev().find(|&&size| b - a >= 4 * size) {
        Some(&size) => {
            let round = |i: usize| (i + size / 2) / size * size;
            (round(a), round(b))
        }
        None => (a, b),
    }
}

/// Draws `series` into `r` (the row; `bounds` from [`pixel_bounds`] for its width and
/// `view`) as its per-pixel min–max area and the mean over it; `step`: a value holds
/// until the next sample (memory), so a pixel with no sample shows the one in force.
/// Returns the hover text at `hover_t`.
#[allow(clippy::too_many_arguments)]
pub fn draw_series(
    mesh: &mut Mesh,
    series: Series,
    bounds: &[usize],
    r: Rect,
    view: (f64, f64),
    step: bool,
    colors: (Color32, Color32),
    hover_t: Option<f64>,
    label: &str,
    unit: &str,
    origin: i64,
) -> Option<String> {
    let (v0, v1) = view;
    let width = bounds.len().saturating_sub(1);
    let ns_per_px = (v1 - v0) / width.max(1) as f64;
    let px_w = r.width() / width.max(1) as f32;
    let y_of = |v: f32| r.bottom() - (v / series.index.top).clamp(0.0, 1.0) * r.height();
    // The value in force at a column's start: the sample before it (a sampled metric only
    // while within a sampling period of it, as the next sample is due).
    let period = nsys_explorer_core::sorted::sample_period(series.time).unwrap_or(0);
    let mut hover = None;
    // Columns of one level so far: (left, right, level).
    let mut run: Option<(f32, f32, ColumnDrawing)> = None;
    for px in 0..width {
        let (a, b) = (bounds[px], bounds[px + 1]);
        let t0 = v0 + px as f64 * ns_per_px;
        // Read only where needed: a sample away from the pixel's own misses the cache.
        let before = || {
            a.checked_sub(1)
                .filter(|&i| step || (t0 as i64) - series.time[i] <= period)
                .map(|i| series.value.get(i))
                .filter(|v| !v.is_nan())
        };
        let (sa, sb) = snapped(a, b);
        let own = series.summary(sa, sb);
        let before = if step || own.is_none() {
            before()
        } else {
            None
        };
        let summary = own.or(before.map(|v| Summary {
            min: v,
            mean: v,
            max: v,
        }));
        let Some(s) = summary else {
            continue;
        };
        let (lo, hi) = match (step, before) {
            (true, Some(v)) => (s.min.min(v), s.max.max(v)),
            _ => (s.min, s.max),
        };
        let x = r.left() + px as f32 * px_w;
        // Levels to whole pixels: neighbouring columns alike are drawn as one.
        let level = ColumnDrawing {
            mean: y_of(s.mean).round(),
            top: y_of(hi).round(),
            bottom: y_of(lo).round().max(y_of(hi).round() + 1.0),
        };
        match &mut run {
            Some((x0, x1, l)) if *l == level && (*x1 - x).abs() < 0.01 => *x1 = x + px_w,
            _ => {
                if let Some((x0, x1, l)) = run.take() {
                    draw_level(mesh, r, x0, x1, l, colors);
                }
                run = Some((x, x + px_w, level));
            }
        }
        if let Some(h) = hover_t
            && h >= t0
            && h < t0 + ns_per_px
        {
            let at = format_ns(h as i64 - origin);
            hover = Some(if s.min == s.max {
                format!("{label}\n{:.1}{unit} at {at}", s.mean)
            } else {
                format!(
                    "{label}\nmean {:.1}{unit}, min {:.1}{unit}, max {:.1}{unit} over this pixel ({} at {at})",
                    s.mean,
                    s.min,
                    s.max,
                    format_ns(ns_per_px as i64)
                )
            });
        }
    }
    if let Some((x0, x1, l)) = run {
        draw_level(mesh, r, x0, x1, l, colors);
    }
    hover
}

/// A column's drawing: its mean's height and its samples' range (y, whole pixels).
#[derive(Clone, Copy, PartialEq)]
struct ColumnDrawing {
    mean: f32,
    top: f32,
    bottom: f32,
}

/// Columns `x0..x1` at `l`: the mean as a filled level (what the eye reads at any zoom),
/// the range of the samples a faint band over it, the mean's edge a line.
fn draw_level(
    mesh: &mut Mesh,
    r: Rect,
    x0: f32,
    x1: f32,
    l: ColumnDrawing,
    colors: (Color32, Color32),
) {
    mesh.add_colored_rect(
        Rect::from_min_max(Pos2::new(x0, l.mean), Pos2::new(x1, r.bottom())),
        colors.0,
    );
    if l.bottom - l.top > 1.0 {
        mesh.add_colored_rect(
            Rect::from_min_max(Pos2::new(x0, l.top), Pos2::new(x1, l.bottom)),
            colors.0.gamma_multiply(0.35),
        );
    }
    mesh.add_colored_rect(
        Rect::from_min_max(Pos2::new(x0, l.mean - 0.75), Pos2::new(x1, l.mean + 0.75)),
        colors.1,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_from_blocks_is_the_summary_of_the_samples() {
        let n = 2 * LEVELS[2] + 5 * LEVELS[1] + 37;
        let time: Vec<i64> = (0..n as i64).map(|i| i * 100).collect();
        let value: Vec<f32> = (0..n)
            .map(|i| {
                if i % 97 == 5 {
                    f32::NAN
                } else {
                    ((i * 37) % 101) as f32
                }
            })
            .collect();
        let values = MetricValues::Float(value.clone());
        let index = SeriesIndex::new(&values, true);
        let s = Series {
            time: &time,
            value: &values,
            index: &index,
        };
        let (l1, l2) = (LEVELS[1], LEVELS[2]);
        for (a, b) in [
            (0, n),
            (3, 700),
            (l1, 3 * l1),
            (l1 - 1, l2 + 1),
            (5, l2 * 2 + 40),
            (10, 10),
        ] {
            let naive: Vec<f32> = value[a..b]
                .iter()
                .copied()
                .filter(|v| !v.is_nan())
                .collect();
            let got = s.summary(a, b);
            if naive.is_empty() {
                assert_eq!(got, None);
                continue;
            }
            let got = got.unwrap();
            let min = naive.iter().copied().fold(f32::INFINITY, f32::min);
            let max = naive.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mean = naive.iter().map(|&v| v as f64).sum::<f64>() / naive.len() as f64;
            assert_eq!((got.min, got.max), (min, max), "{a}..{b}");
            assert!((got.mean as f64 - mean).abs() < 1e-3, "{a}..{b}");
        }
        assert_eq!(index.top, 100.0);
    }

    #[test]
    fn names_are_shortened_and_the_default_set_found() {
        assert_eq!(short_name("SMs Active [Throughput %]"), "SMs Active %");
        assert_eq!(short_name("GR Active"), "GR Active");
        let names: Vec<String> = [
            "GPC Clock Frequency [MHz]",
            "SMs Active [Throughput %]",
            "Tensor Active [Throughput %]",
            "DRAM Read Bandwidth [Throughput %]",
            "PCIe RX Throughput [Throughput %]",
        ]
        .map(String::from)
        .to_vec();
        let choice = MetricChoice::default_for(&names);
        assert_eq!(choice.chosen.len(), 3);
        assert!(!choice.chosen.contains("GPC Clock Frequency [MHz]"));
    }
}
