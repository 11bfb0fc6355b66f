//! Drawing the rows: each row's items or level of detail into the frame's one mesh, then
//! the marks over them (overlay, search matches, the chosen gap and iteration); the
//! window, the measured span and the selection are `overlays.rs`'s.

use super::PathRow;
use super::ROW_H;
use super::Timeline;
use super::metric_rows;
use super::rows::RowKind;
use super::rows::device_band;
use super::rows::row_top;
use super::rows::streams_band;
use super::selection::Selection;
use super::tooltip::item_at;
use super::tooltip::item_at_by;
use super::tooltip::op_tooltip;
use crate::analysis::gaps::OpRef;
use crate::format::format_ns;
use crate::trace::{DeviceIndex, Trace};
use crate::ui::fold;
use crate::ui::fold::Fill;
use crate::ui::fold::FoldStyle;
use crate::ui::fold::MIN_PX;
use crate::ui::fold::calls_fill;
use crate::ui::fold::coverage_fill;
use crate::ui::fold::fold_draw_by;
use crate::ui::fold::stacked_fill;
use crate::ui::labels::Labels;
use crate::ui::layout_cache::LayoutCache;
use crate::ui::layout_cache::RowMesh;
use crate::ui::lod::RowLod;
use crate::ui::theme;
use crate::ui::theme::FOLDED_API;
use crate::ui::theme::FOLDED_NVTX;
use crate::ui::theme::kind_color;
use crate::ui::theme::nvtx_color;
use crate::ui::theme::state_color;
use eframe::egui;
use eframe::egui::Color32;
use eframe::egui::Mesh;
use eframe::egui::Pos2;
use eframe::egui::Rect;
use eframe::egui::Stroke;
use eframe::egui::Vec2;

/// What one frame draws the rows with: one mesh of their quads and labels' glyphs. It
/// holds the timeline's layouts of zoomed-out rows while it draws.
pub(super) struct Drawn {
    pub(super) rows: RowMesh,
    pub(super) labels: Labels,
    pub(super) layouts: LayoutCache<RowKind>,
    /// What a row with nothing to select (a metric's) says under the pointer.
    pub(super) hover_text: Option<String>,
    /// Per (GPU, its memory row or not), the first sample of each pixel column: a GPU's
    /// metrics share their sample times, so their rows share one walk a frame.
    pub(super) metric_bounds: std::collections::HashMap<(usize, bool), Vec<usize>>,
}

/// A row's items by index, sorted by start, as the drawing needs them.
pub(super) struct RowItems<'a> {
    pub(super) n: usize,
    pub(super) start: &'a dyn Fn(usize) -> i64,
    pub(super) end: &'a dyn Fn(usize) -> i64,
    pub(super) longest: i64,
    pub(super) color: &'a dyn Fn(usize) -> Color32,
    pub(super) name: &'a dyn Fn(usize) -> std::borrow::Cow<'a, str>,
    /// How a folded run of items `[a, b)` over `span` ns (at least the fold's width) is
    /// filled.
    pub(super) folded: &'a dyn Fn(usize, usize, i64) -> Fill,
    /// How its folded blocks are coloured when drawn from its level of detail.
    pub(super) style: FoldStyle,
}

/// How a chart row (a GPU metric, device memory) is drawn.
struct Chart<'a> {
    /// (GPU, its memory row or not): the rows sharing sample times share their walk.
    key: (usize, bool),
    /// A value holds until the next sample (memory), else it is a sample of a period.
    step: bool,
    colors: (Color32, Color32),
    label: &'a str,
    unit: &'a str,
}

impl Timeline {
    /// A chart row: its series per pixel, its hover text kept for the frame.
    fn draw_chart(
        &self,
        series: metric_rows::Series,
        chart: &Chart,
        inner: Rect,
        hover_t: Option<f64>,
        out: &mut Drawn,
    ) {
        let bounds = out.metric_bounds.entry(chart.key).or_insert_with(|| {
            metric_rows::pixel_bounds(series.time, self.view, inner.width() as usize)
        });
        let text = metric_rows::draw_series(
            &mut out.rows.mesh,
            series,
            bounds,
            inner,
            self.view,
            chart.step,
            chart.colors,
            hover_t,
            chart.label,
            chart.unit,
            self.full.0,
        );
        out.hover_text = text.or(out.hover_text.take());
    }

    /// Draws one row; returns what is under `hover_t`, if anything.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn draw_row(
        &self,
        trace: &Trace,
        row: RowKind,
        r: Rect,
        x_of: &dyn Fn(f64) -> f32,
        t_of: &dyn Fn(f32) -> f64,
        hover_t: Option<f64>,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let place = RowPlace {
            inner: r.shrink2(Vec2::new(0.0, 2.0)),
            x_of,
            t_of,
            hover_t,
        };
        match row {
            RowKind::GpuHeader(_) | RowKind::ThreadHeader(_) => None,
            RowKind::Metric { device, metric } => {
                self.draw_metric_row(trace, device, metric, &place, out)
            }
            RowKind::Memory { device } => self.draw_memory_row(device, &place, out),
            RowKind::Stream { device, stream } => {
                self.draw_stream_row(trace, row, device, stream, &place, out)
            }
            RowKind::Nvtx { thread, depth } => {
                self.draw_nvtx_row(trace, row, thread, depth, &place, out)
            }
            RowKind::Api { thread } => self.draw_api_row(trace, row, thread, &place, out),
            RowKind::Sched { thread } => self.draw_sched_row(trace, row, thread, &place, out),
            RowKind::Osrt { thread } => self.draw_osrt_row(trace, row, thread, &place, out),
        }
    }

    /// One of a GPU's sampled metrics, as a chart.
    fn draw_metric_row(
        &self,
        trace: &Trace,
        device: usize,
        metric: usize,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let inner = place.inner;
        let (name, series) = self.index.metrics.metric(trace, device, metric)?;
        let unit = if metric_rows::is_percent(name) {
            " %"
        } else {
            ""
        };
        let chart = Chart {
            key: (device, false),
            step: false,
            colors: (metric_rows::AREA, metric_rows::MEAN),
            label: name,
            unit,
        };
        self.draw_chart(series, &chart, inner, hover_t, out);
        None
    }

    /// A GPU's device memory over time, as a chart, its peak marked.
    fn draw_memory_row(
        &self,
        device: usize,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let x_of = place.x_of;
        let inner = place.inner;
        let owned = self.index.metrics.memory.get(device)?.as_ref()?;
        let series = owned.series();
        let chart = Chart {
            key: (device, true),
            step: true,
            colors: (metric_rows::MEMORY_AREA, metric_rows::MEMORY_LINE),
            label: "device memory allocated",
            unit: " MiB",
        };
        self.draw_chart(series, &chart, inner, hover_t, out);
        // The peak: a mark across the row where it was reached.
        if let Some(t) = owned.peak_at {
            let x = x_of(t as f64);
            if x >= inner.left() && x <= inner.right() {
                out.rows.mesh.add_colored_rect(
                    Rect::from_min_max(
                        Pos2::new(x - 1.0, inner.top()),
                        Pos2::new(x + 1.0, inner.bottom()),
                    ),
                    metric_rows::PEAK,
                );
            }
        }
        None
    }

    /// A stream's ops, and the one under the pointer.
    fn draw_stream_row(
        &self,
        trace: &Trace,
        row: RowKind,
        device: usize,
        stream: usize,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let t_of = place.t_of;
        let inner = place.inner;
        let slack = |t: f64| place.slack(t);
        let ops = &trace.devices[device].streams[stream].ops;
        let prefix = &self.index.prefixes[device][stream];
        let items = RowItems {
            n: ops.len(),
            start: &|i| ops.start[i],
            end: &|i| ops.end[i],
            longest: trace.devices[device].streams[stream].longest_op_ns,
            color: &|i| kind_color(ops.kind[i]),
            name: &|i| trace.strings.get(ops.name[i]),
            folded: &|a, b, span| {
                let [busy, nccl, memory] = prefix.sums(ops, a, b);
                stacked_fill(busy, span, nccl, memory)
            },
            style: FoldStyle::ByKind,
        };
        self.draw_items(
            row,
            &items,
            &self.index.stream_lods[device][stream],
            inner,
            out,
        );
        let t = hover_t?;
        let i = item_at(&ops.start, &ops.end, items.longest, t, slack(t))?;
        Some((
            Selection::Op {
                device: DeviceIndex(device),
                op: OpRef {
                    stream: stream as u32,
                    op: i as u32,
                },
            },
            // A pixel's span of time: the tooltip's precision.
            op_tooltip(trace, device, stream, i, self.full.0, t_of(1.0) - t_of(0.0)),
        ))
    }

    /// A thread's NVTX ranges at one depth, and the one under the pointer.
    fn draw_nvtx_row(
        &self,
        trace: &Trace,
        row: RowKind,
        thread: usize,
        depth: u16,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let inner = place.inner;
        let slack = |t: f64| place.slack(t);
        let t = &trace.threads[thread];
        let idx = &self.index.nvtx_by_depth[thread][depth as usize];
        let range_of = |k: usize| idx[k] as usize;
        let items = RowItems {
            n: idx.len(),
            start: &|k| t.nvtx.start[range_of(k)],
            end: &|k| t.nvtx.end[range_of(k)],
            longest: self.index.longest_range[thread][depth as usize],
            color: &|k| nvtx_color(t.nvtx.argb(range_of(k)), t.nvtx.kind[range_of(k)]),
            name: &|k| trace.strings.get(t.nvtx.text[range_of(k)]),
            folded: &|a, b, span| {
                let busy = (b - a <= 32).then(|| {
                    (a..b)
                        .map(|k| t.nvtx.end[range_of(k)] - t.nvtx.start[range_of(k)])
                        .sum()
                });
                coverage_fill(FOLDED_NVTX, busy, span)
            },
            style: FoldStyle::Coverage(FOLDED_NVTX),
        };
        let lod = &self.index.nvtx_lods[thread][depth as usize];
        self.draw_items(row, &items, lod, inner, out);
        let time = hover_t?;
        let k = item_at_by(
            items.n,
            items.start,
            items.end,
            items.longest,
            time,
            slack(time),
        )?;
        let range = range_of(k);
        Some((
            Selection::Range { thread, range },
            format!(
                "{}\nstart {}  duration {}\nthread {}",
                trace.strings.get(t.nvtx.text[range]),
                format_ns(t.nvtx.start[range] - self.full.0),
                format_ns(t.nvtx.end[range] - t.nvtx.start[range]),
                t.tid
            ),
        ))
    }

    /// A thread's CUDA API calls, and the one under the pointer.
    fn draw_api_row(
        &self,
        trace: &Trace,
        row: RowKind,
        thread: usize,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let inner = place.inner;
        let slack = |t: f64| place.slack(t);
        let t = &trace.threads[thread];
        let items = RowItems {
            n: t.api.len(),
            start: &|i| t.api.start[i],
            end: &|i| t.api.end[i],
            longest: t.longest_call_ns,
            color: &|i| {
                if self.is_sync(t.api.name[i]) {
                    theme::SYNC_CALL
                } else {
                    theme::API_CALL
                }
            },
            name: &|i| trace.strings.get(t.api.name[i]),
            folded: &|a, b, span| {
                // A run too long to sum (rare: the level of detail draws views
                // this dense) is drawn covered.
                if b - a > 512 {
                    return coverage_fill(FOLDED_API, None, span);
                }
                let (mut busy, mut sync) = (0, 0);
                for i in a..b {
                    let d = t.api.end[i] - t.api.start[i];
                    busy += d;
                    if self.is_sync(t.api.name[i]) {
                        sync += d;
                    }
                }
                calls_fill(busy, sync, span)
            },
            style: FoldStyle::Calls,
        };
        self.draw_items(row, &items, &self.index.api_lods[thread], inner, out);
        let time = hover_t?;
        let i = item_at(&t.api.start, &t.api.end, items.longest, time, slack(time))?;
        Some((
            Selection::Call { thread, call: i },
            format!(
                "{}\nstart {}  duration {}",
                trace.strings.get(t.api.name[i]),
                format_ns(t.api.start[i] - self.full.0),
                format_ns(t.api.end[i] - t.api.start[i])
            ),
        ))
    }

    /// When a thread ran on a CPU, and the slice under the pointer.
    fn draw_sched_row(
        &self,
        trace: &Trace,
        row: RowKind,
        thread: usize,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let inner = place.inner;
        let slack = |t: f64| place.slack(t);
        let t = &trace.threads[thread];
        let sc = &t.scheduling;
        let items = RowItems {
            n: sc.len(),
            start: &|i| sc.start[i],
            end: &|i| sc.end[i],
            longest: sc.longest_ns(),
            color: &|_| theme::OS_CALL,
            name: &|i| format!("CPU {}", sc.cpu[i]).into(),
            folded: &|a, b, span| {
                let busy: i64 = (a..b).map(|i| sc.end[i] - sc.start[i]).sum();
                calls_fill(busy, 0, span)
            },
            style: FoldStyle::Calls,
        };
        self.draw_items(row, &items, &self.index.sched_lods[thread], inner, out);
        let time = hover_t?;
        let i = item_at(&sc.start, &sc.end, items.longest, time, slack(time))?;
        Some((
            Selection::Running { thread, slice: i },
            format!(
                "running on CPU {}\nstart {}  duration {}",
                sc.cpu[i],
                format_ns(sc.start[i] - self.full.0),
                format_ns(sc.end[i] - sc.start[i])
            ),
        ))
    }

    /// A thread's OS runtime calls, and the one under the pointer.
    fn draw_osrt_row(
        &self,
        trace: &Trace,
        row: RowKind,
        thread: usize,
        place: &RowPlace,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let hover_t = place.hover_t;
        let inner = place.inner;
        let slack = |t: f64| place.slack(t);
        let t = &trace.threads[thread];
        let os = &t.osrt;
        let items = RowItems {
            n: os.len(),
            start: &|i| os.start[i],
            end: &|i| os.end[i],
            longest: t.longest_osrt_ns,
            color: &|i| {
                if self.is_blocking_os(os.name[i]) {
                    theme::OS_BLOCKING_CALL
                } else {
                    theme::OS_CALL
                }
            },
            name: &|i| trace.strings.get(os.name[i]),
            folded: &|a, b, span| {
                if b - a > 512 {
                    return coverage_fill(FOLDED_API, None, span);
                }
                let (mut busy, mut blocking) = (0, 0);
                for i in a..b {
                    let d = os.end[i] - os.start[i];
                    busy += d;
                    if self.is_blocking_os(os.name[i]) {
                        blocking += d;
                    }
                }
                calls_fill(busy, blocking, span)
            },
            style: FoldStyle::Calls,
        };
        self.draw_items(row, &items, &self.index.osrt_lods[thread], inner, out);
        let time = hover_t?;
        let i = item_at(&os.start, &os.end, items.longest, time, slack(time))?;
        Some((
            Selection::OsCall { thread, call: i },
            format!(
                "{}() (OS runtime)\nstart {}  duration {}\nreturned {}",
                trace.strings.get(os.name[i]),
                format_ns(os.start[i] - self.full.0),
                format_ns(os.end[i] - os.start[i]),
                os.return_value[i]
            ),
        ))
    }

    /// Draws a row's items: from its level of detail when zoomed out far enough, else the
    /// items themselves, folding runs narrower than `MIN_PX`.
    pub(super) fn draw_items(
        &self,
        row: RowKind,
        items: &RowItems,
        lod: &RowLod,
        r: Rect,
        out: &mut Drawn,
    ) {
        // Concrete copies of the row's transform, so the folding loop inlines them.
        let (v0, v1) = self.view;
        let (left, width) = (r.left(), r.width());
        let x_of = |t: f64| left + ((t - v0) / (v1 - v0)) as f32 * width;
        let t_of = |x: f32| v0 + ((x - left) / width) as f64 * (v1 - v0);
        let fold_ns = t_of(r.left() + MIN_PX) - t_of(r.left());
        let label =
            |i: usize, rect: Rect, text: &mut Mesh| out.labels.bake(rect, &(items.name)(i), text);
        if let Some(level) = lod.level_for(fold_ns) {
            let mut lay_out = |span, r, mesh: &mut Mesh, on_item: &mut dyn FnMut(usize, Rect)| {
                fold::draw_level(
                    level,
                    span,
                    r,
                    items.style,
                    items.color,
                    on_item,
                    mesh,
                    &mut 0,
                )
            };
            out.layouts.draw(
                row,
                self.view,
                r,
                out.labels.pixels_per_point(),
                &mut lay_out,
                &mut { label },
                &mut out.rows,
                label,
            );
        } else {
            fold_draw_by(
                Some(lod),
                items.n,
                items.start,
                items.end,
                items.longest,
                self.view,
                x_of,
                t_of,
                |i| Fill::Solid((items.color)(i)),
                items.folded,
                label,
                r,
                &mut out.rows.mesh,
                &mut out.rows.quads,
            );
        }
    }

    /// The state overlay over a device's rows, the highlighted gap, and search matches.
    pub(super) fn draw_marks(
        &self,
        painter: &egui::Painter,
        rows: &[RowKind],
        plot: Rect,
        x_of: &dyn Fn(f64) -> f32,
        t_of: &dyn Fn(f32) -> f64,
    ) {
        let mut mesh = Mesh::default();
        let mut quads = 0;
        let fold = |starts: &[i64],
                    ends: &[i64],
                    longest: i64,
                    r: Rect,
                    color: Color32,
                    mesh: &mut Mesh| {
            fold_draw_by(
                None,
                starts.len(),
                |i| starts[i],
                |i| ends[i],
                longest,
                self.view,
                x_of,
                t_of,
                |_| Fill::Solid(color),
                |_, _, _| Fill::Solid(color),
                |_, _, _| {},
                r,
                mesh,
                &mut 0,
            );
        };
        if let Some(o) = &self.marks.overlay
            && let Some(band) = device_band(rows, o.device.0, plot.top() - self.scroll_y)
        {
            // A folded run of short intervals is as opaque as the share of it they cover,
            // so a band of many tiny idle moments does not read as one long one.
            let color = state_color(o.state);
            let tint = |coverage: f64| {
                let alpha = (20.0 + 140.0 * coverage.clamp(0.0, 1.0)) as u8;
                Color32::from_rgba_unmultiplied(color.r(), color.g(), color.b(), alpha)
            };
            fold_draw_by(
                None,
                o.starts.len(),
                |i: usize| o.starts[i],
                |i: usize| o.ends[i],
                o.longest,
                self.view,
                x_of,
                t_of,
                |_| Fill::Solid(tint(1.0)),
                |a, b, span| Fill::Solid(tint((o.covered[b] - o.covered[a]) as f64 / span as f64)),
                |_, _, _| {},
                Rect::from_x_y_ranges(plot.x_range(), band),
                &mut mesh,
                &mut quads,
            );
        }
        for m in &self.search.by_row {
            if let Some(y) = row_top(rows, m.row, plot.top() - self.scroll_y) {
                let r = Rect::from_x_y_ranges(plot.x_range(), y..=y + 4.0);
                let color = theme::SEARCH_MARK;
                fold(&m.starts, &m.ends, m.longest, r, color, &mut mesh);
            }
        }
        // Samples of a frame chosen in the CPU tab: a strip along the bottom of the row.
        for m in &self.marks.samples {
            if let Some(y) = row_top(rows, m.row, plot.top() - self.scroll_y) {
                let bottom = y + ROW_H - 1.0;
                let r = Rect::from_x_y_ranges(plot.x_range(), bottom - 5.0..=bottom);
                fold(
                    &m.starts,
                    &m.ends,
                    m.longest,
                    r,
                    theme::SAMPLE_MARK,
                    &mut mesh,
                );
            }
        }
        painter.add(egui::Shape::mesh(mesh));
        // The chosen iteration on every GPU, then the chosen gap: outlines over the stream
        // rows (not the headers' text), the gap's tinted.
        let top = plot.top() - self.scroll_y;
        let outline = |device: usize, a: i64, b: i64, color: Color32, tint: bool| {
            let Some(band) = streams_band(rows, device, top) else {
                return;
            };
            let x0 = x_of(a as f64);
            let x1 = x_of(b as f64).max(x0 + 2.0);
            let r = Rect::from_x_y_ranges(x0..=x1, band);
            if tint {
                painter.rect_filled(r, 0.0, color.gamma_multiply(0.18));
            }
            painter.rect_stroke(r, 0.0, Stroke::new(2.0, color), egui::StrokeKind::Inside);
        };
        for &(device, a, b) in &self.marks.iteration_mark {
            outline(device.0, a, b, theme::ITERATION_MARK, false);
        }
        if let Some((device, a, b)) = self.marks.highlight {
            outline(device.0, a, b, theme::GAP_MARK, true);
        }
        self.draw_critical_path(painter, rows, plot, x_of);
    }

    /// The opened iteration's critical path: a line through its segments, from row to row
    /// (a GPU's stream, a thread's API calls; a folded group's header). Only the segments
    /// in view are drawn, and points under a pixel apart are joined: O(pixels).
    fn draw_critical_path(
        &self,
        painter: &egui::Painter,
        rows: &[RowKind],
        plot: Rect,
        x_of: &dyn Fn(f64) -> f32,
    ) {
        let path = &self.marks.critical_path;
        if path.is_empty() {
            return;
        }
        let top = plot.top() - self.scroll_y;
        let mut centres: rustc_hash::FxHashMap<PathRow, Option<f32>> = Default::default();
        let mut centre_of = |row: PathRow| {
            *centres.entry(row).or_insert_with(|| {
                let (own, header) = match row {
                    PathRow::Stream { device, stream } => (
                        RowKind::Stream { device, stream },
                        RowKind::GpuHeader(device),
                    ),
                    PathRow::Api { thread } => {
                        (RowKind::Api { thread }, RowKind::ThreadHeader(thread))
                    }
                };
                row_top(rows, own, top)
                    .map(|y| y + own.height() / 2.0)
                    .or_else(|| row_top(rows, header, top).map(|y| y + header.height() / 2.0))
            })
        };
        let (a, b) = self.view;
        let first = path.partition_point(|m| (m.end as f64) < a);
        let mut points: Vec<egui::Pos2> = Vec::new();
        for m in path[first..].iter().take_while(|m| (m.start as f64) <= b) {
            let Some(y) = centre_of(m.row) else {
                continue;
            };
            let x0 = x_of(m.start as f64).max(plot.left() - 1.0);
            let x1 = x_of(m.end as f64).min(plot.right() + 1.0);
            for p in [egui::pos2(x0, y), egui::pos2(x1, y)] {
                match points.last() {
                    Some(last) if (last.x - p.x).abs() < 1.0 && last.y == p.y => {}
                    _ => points.push(p),
                }
            }
        }
        if points.len() >= 2 {
            painter.with_clip_rect(plot).add(egui::Shape::line(
                points,
                Stroke::new(2.0, theme::CRITICAL_PATH),
            ));
        }
    }
}

/// Where a row is drawn: its rectangle inside its margins, the mapping between time and x,
/// and the time under the pointer.
struct RowPlace<'a> {
    inner: Rect,
    x_of: &'a dyn Fn(f64) -> f32,
    t_of: &'a dyn Fn(f32) -> f64,
    hover_t: Option<f64>,
}

impl RowPlace<'_> {
    /// The time `MIN_PX` pixels span at `t`: how near the pointer an item counts as under it.
    fn slack(&self, t: f64) -> f64 {
        (self.t_of)((self.x_of)(t) + MIN_PX) - t
    }
}
