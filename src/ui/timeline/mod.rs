//! The timeline: one row per GPU stream, NVTX rows per thread and depth, a CUDA API row per
//! thread. A frame costs O(pixels × visible rows): each row finds its visible range by
//! binary search (or, zoomed out, reads its level of detail), and ops narrower than `MIN_PX`
//! are folded into one block per run, stacked by what filled its time (compute, NCCL,
//! memory; from prefix sums), the idle rest left empty.

use std::sync::Arc;

use eframe::egui::{self, Mesh, Pos2, Rect, Sense, Stroke};
use rayon::prelude::*;

use super::figures_window::save_view_menu;
use super::labels::{FontsKey, Labels};
use super::layout_cache::{LayoutCache, RowMesh, clear_keeping_memory};
use super::lod::RowLod;
use super::nccl_bytes::transfer_tooltip;
use crate::analysis::nccl_payload::KernelTransfers;
use crate::trace::{DeviceIndex, OpKind, Trace};
use search::Search;

mod draw;
mod index;
mod input;
pub mod metric_rows;
mod nav;
mod overlays;
mod rows;
mod ruler;
pub mod search;
mod search_bar;
mod selection;
mod tooltip;
mod view;

use draw::Drawn;
use index::StreamPrefix;
use input::DragKind;
pub use nav::{Margin, Nav};
pub use rows::RowKind;
pub use selection::{LISTED_INTERVALS, Overlay, Selection};

const ROW_H: f32 = 18.0;
const HEADER_H: f32 = 20.0;
const RULER_H: f32 = 24.0;
/// The least room between two ruler ticks, in pixels (a label is up to ~80 px).
const TICK_GAP_PX: f64 = 110.0;
const LABEL_W: f32 = 190.0;
/// Room left on each side of an item double-clicked to zoom to it, as a share of its length.
const ZOOM_TO_ITEM_MARGIN: f64 = 0.05;

pub struct Timeline {
    /// What is built once per trace, on the worker: prefix sums, levels of detail, NVTX
    /// depths, which names synchronise.
    index: TimelineIndex,
    pub full: (i64, i64),
    /// Visible time range (ns, the trace's clock).
    pub view: (f64, f64),
    pub scroll_y: f32,
    pub folds: Folds,
    pub selection: Option<Selection>,
    /// The "current window" (Shift+drag), analysed by the panels.
    pub window: Option<(i64, i64)>,
    input: InputState,
    /// What is drawn over the rows: the panels' marks and a measured span.
    pub marks: Marks,
    pub search: Search,
    pub settings: Settings,
    /// What one frame leaves for the next (and for tests and the frame benchmark).
    pub frame: FrameCaches,
}

/// The per-trace indexes the rows draw from (built with the timeline, on the worker).
struct TimelineIndex {
    prefixes: Vec<Vec<StreamPrefix>>,
    /// Per thread, per depth: indices of its ranges at that depth, by start.
    nvtx_by_depth: Vec<Vec<Vec<u32>>>,
    /// Longest range per (thread, depth), for searches by start.
    longest_range: Vec<Vec<i64>>,
    stream_lods: Vec<Vec<RowLod>>,
    nvtx_lods: Vec<Vec<RowLod>>,
    api_lods: Vec<RowLod>,
    osrt_lods: Vec<RowLod>,
    sched_lods: Vec<RowLod>,
    /// Per interned name: is it a synchronising API call?
    sync_names: Vec<bool>,
    /// Per interned name: is it a blocking OS runtime call?
    blocking_os: Vec<bool>,
    /// GPU metrics' and device memory's summaries for their rows.
    metrics: metric_rows::MetricIndex,
}

impl TimelineIndex {
    /// Every row's index over `full`: the streams' prefix sums and levels of detail, the
    /// NVTX ranges by depth, the API, OS runtime and scheduling rows.
    fn new(trace: &Trace, full: (i64, i64)) -> Self {
        let prefixes = trace
            .devices
            .iter()
            .map(|d| {
                d.streams
                    .iter()
                    .map(|s| StreamPrefix::new(&s.ops))
                    .collect()
            })
            .collect();
        let (nvtx_by_depth, longest_range) = nvtx_rows(trace);
        let stream_lods = trace
            .devices
            .par_iter()
            .map(|d| {
                d.streams
                    .iter()
                    .map(|s| {
                        let ops = &s.ops;
                        RowLod::new(
                            ops.len(),
                            |i| ops.start[i],
                            |i| ops.end[i],
                            |i| (ops.kind[i] == OpKind::Nccl, !ops.kind[i].is_kernel()),
                            full,
                        )
                    })
                    .collect()
            })
            .collect();
        let nvtx_lods = trace
            .threads
            .par_iter()
            .zip(&nvtx_by_depth)
            .map(|(t, depths)| {
                depths
                    .iter()
                    .map(|idx| {
                        RowLod::new(
                            idx.len(),
                            |k| t.nvtx.start[idx[k] as usize],
                            |k| t.nvtx.end[idx[k] as usize],
                            |_| (false, false),
                            full,
                        )
                    })
                    .collect()
            })
            .collect();
        let sync_names = crate::analysis::gaps::sync_call_names(trace);
        let api_lods = trace
            .threads
            .par_iter()
            .map(|t| {
                RowLod::new(
                    t.api.len(),
                    |i| t.api.start[i],
                    |i| t.api.end[i],
                    // Synchronising time is summed where NCCL time is for GPU rows.
                    |i| (sync_names[t.api.name[i] as usize], false),
                    full,
                )
            })
            .collect();
        let mut blocking_os = vec![false; trace.strings.len()];
        for t in &trace.threads {
            for &n in &t.osrt.name {
                blocking_os[n as usize] = crate::trace::is_blocking_os_call(&trace.strings.get(n));
            }
        }
        let osrt_lods = trace
            .threads
            .par_iter()
            .map(|t| {
                RowLod::new(
                    t.osrt.len(),
                    |i| t.osrt.start[i],
                    |i| t.osrt.end[i],
                    |i| (blocking_os[t.osrt.name[i] as usize], false),
                    full,
                )
            })
            .collect();
        let sched_lods = trace
            .threads
            .par_iter()
            .map(|t| {
                let s = &t.scheduling;
                RowLod::new(
                    s.len(),
                    |i| s.start[i],
                    |i| s.end[i],
                    |_| (false, false),
                    full,
                )
            })
            .collect();
        Self {
            prefixes,
            nvtx_by_depth,
            longest_range,
            stream_lods,
            nvtx_lods,
            api_lods,
            osrt_lods,
            sched_lods,
            sync_names,
            blocking_os,
            metrics: metric_rows::MetricIndex::new(trace),
        }
    }
}

/// Which GPU and thread groups are folded to their header.
#[derive(Default)]
pub struct Folds {
    pub gpus: Vec<bool>,
    pub threads: Vec<bool>,
}

/// A drag in progress.
#[derive(Default)]
struct InputState {
    /// Where a drag began (x) and what it does.
    drag: Option<(f32, DragKind)>,
    /// While a ruler or Shift drag runs: the range it will zoom to or make the window.
    pending_zoom: Option<(f64, f64)>,
    pending_window: Option<(i64, i64)>,
}

/// What the window chooses for the timeline, not the user's place in it.
pub struct Settings {
    /// Which GPU metric rows are shown (View ▸ GPU metric rows).
    pub metric_choice: metric_rows::MetricChoice,
    /// Keys move the view with the pointer anywhere (false: only over it, as a comparison's
    /// second timeline).
    pub keys_anywhere: bool,
}

/// What the panels point at on the timeline, and the span the user measured.
#[derive(Default)]
pub struct Marks {
    /// A span measured with Ctrl+drag, shown with its length until Escape or a click.
    pub measure: Option<(f64, f64)>,
    pub overlay: Option<Overlay>,
    /// A gap to point at: (device index, start, end).
    pub highlight: Option<(DeviceIndex, i64, i64)>,
    /// The chosen iteration's span on each GPU: (device index, start, end).
    pub iteration_mark: Vec<(DeviceIndex, i64, i64)>,
    /// The gap last chosen in a panel, for the Details tab.
    pub selected_gap: Option<crate::analysis::gaps::Gap>,
    /// The opened iteration's critical path, drawn as a line through its segments.
    pub critical_path: std::sync::Arc<Vec<PathMark>>,
    /// CPU samples in a frame chosen in the CPU tab, on their threads' rows.
    pub samples: Vec<search::RowMatches>,
}

/// A piece of a critical path on the timeline: the row it lies on, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathMark {
    pub row: PathRow,
    pub start: i64,
    pub end: i64,
}

/// Where a piece of a critical path is drawn (its group's header when folded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathRow {
    Stream { device: usize, stream: usize },
    Api { thread: usize },
}

impl PathMark {
    /// The path's segments as marks, in time order.
    pub fn of(path: &crate::critical_path::CriticalPath) -> Vec<PathMark> {
        use crate::critical_path::Place;
        path.segments
            .iter()
            .filter_map(|s| {
                let row = match s.place {
                    Place::Op(d, st, _) => PathRow::Stream {
                        device: d,
                        stream: st,
                    },
                    Place::Call(t, _) | Place::Cpu(t) if t != usize::MAX => {
                        PathRow::Api { thread: t }
                    }
                    _ => return None,
                };
                Some(PathMark {
                    row,
                    start: s.start_ns,
                    end: s.end_ns,
                })
            })
            .collect()
    }
}

/// Frame-to-frame state: caches reused while only the view's position changes, and what
/// the last frame measured.
pub struct FrameCaches {
    /// Ops drawn as quads in the last frame (for the frame benchmark).
    pub last_quads: usize,
    /// Where the plot (right of the labels, below the ruler) was last drawn.
    pub last_plot: Rect,
    /// Zoomed-out rows as last laid out, and the fonts their labels were baked with.
    layouts: LayoutCache<RowKind>,
    fonts_key: FontsKey,
    /// The rows' mesh handed to egui last frame: its memory is used again (growing it anew
    /// was a tenth of a frame).
    rows_mesh: Arc<Mesh>,
}

impl Default for FrameCaches {
    fn default() -> Self {
        Self {
            last_quads: 0,
            last_plot: Rect::NOTHING,
            layouts: LayoutCache::default(),
            fonts_key: FontsKey::default(),
            rows_mesh: Arc::default(),
        }
    }
}

impl Timeline {
    pub fn new(trace: &Trace) -> Self {
        let full = full_range(trace);
        Self {
            index: TimelineIndex::new(trace, full),
            folds: Folds {
                gpus: vec![false; trace.devices.len()],
                // Threads with OS runtime calls only (an event handler in `poll`, a data
                // loader's workers) start folded: they launch nothing.
                threads: trace
                    .threads
                    .iter()
                    .map(|t| t.api.is_empty() && t.nvtx.is_empty() && t.scheduling.is_empty())
                    .collect(),
            },
            view: (full.0 as f64, full.1 as f64),
            full,
            scroll_y: 0.0,
            selection: None,
            window: None,
            input: InputState::default(),
            marks: Marks::default(),
            search: Search::default(),
            settings: Settings {
                metric_choice: metric_rows::MetricChoice::default_for(
                    &metric_rows::MetricIndex::names(trace),
                ),
                keys_anywhere: true,
            },
            frame: FrameCaches::default(),
        }
    }

    fn is_sync(&self, name: u32) -> bool {
        self.index
            .sync_names
            .get(name as usize)
            .copied()
            .unwrap_or(false)
    }

    fn is_blocking_os(&self, name: u32) -> bool {
        self.index
            .blocking_os
            .get(name as usize)
            .copied()
            .unwrap_or(false)
    }

    /// Memory of the drawing indexes (prefix sums and levels of detail).
    pub fn index_bytes(&self) -> usize {
        let prefixes: usize = self
            .index
            .prefixes
            .iter()
            .flatten()
            .map(StreamPrefix::heap_bytes)
            .sum();
        let lods: usize = self
            .index
            .stream_lods
            .iter()
            .chain(&self.index.nvtx_lods)
            .flatten()
            .chain(&self.index.api_lods)
            .chain(&self.index.osrt_lods)
            .chain(&self.index.sched_lods)
            .map(RowLod::heap_bytes)
            .sum();
        prefixes + lods + self.index.metrics.heap_bytes()
    }

    /// Takes over the view, selection and marks of the timeline it replaces (the same
    /// file, more of it loaded).
    pub fn keep_view_of(&mut self, old: &mut Timeline) {
        // A view the user has not moved from "everything" shows everything of the new one
        // (the CPU side often starts before the first kernel).
        if old.view != (old.full.0 as f64, old.full.1 as f64) {
            self.view = old.view;
        }
        self.scroll_y = old.scroll_y;
        self.window = old.window;
        self.marks.overlay = old.marks.overlay.take();
        self.marks.highlight = old.marks.highlight;
        self.marks.iteration_mark = std::mem::take(&mut old.marks.iteration_mark);
        self.marks.critical_path = std::mem::take(&mut old.marks.critical_path);
        self.search.open = old.search.open;
        self.search.query = std::mem::take(&mut old.search.query);
        self.search.mode = old.search.mode;
        if let Some(Selection::Op { .. }) = old.selection {
            self.selection = old.selection;
        }
    }

    /// Draws the timeline in the whole of `ui` and handles its input.
    pub fn show(&mut self, ui: &mut egui::Ui, trace: &Arc<Trace>) -> TimelineResponse {
        self.show_with(ui, trace, None)
    }

    /// Like [`Timeline::show`], NCCL kernels' tooltips telling what they moved.
    pub fn show_with(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        transfers: Option<&KernelTransfers>,
    ) -> TimelineResponse {
        nsys_explorer_core::profile_scope!("timeline frame");
        let mut out = TimelineResponse::default();
        self.search_bar(ui, trace);
        let size = ui.available_size();
        let (response, painter) = ui.allocate_painter(size, Sense::click_and_drag());
        let rect = response.rect;
        let plot = Rect::from_min_max(
            Pos2::new(rect.left() + LABEL_W, rect.top() + RULER_H),
            rect.max,
        );
        let ruler = Rect::from_min_max(
            Pos2::new(plot.left(), rect.top()),
            Pos2::new(rect.right(), plot.top()),
        );
        self.handle_input(ui, &response, plot, ruler);
        self.frame.last_plot = plot;
        let (v0, v1) = self.view;
        let x_of = |t: f64| plot.left() + ((t - v0) / (v1 - v0)) as f32 * plot.width();
        let t_of = |x: f32| v0 + ((x - plot.left()) / plot.width()) as f64 * (v1 - v0);

        painter.rect_filled(rect, 0.0, ui.visuals().extreme_bg_color);
        // The vertical cursor: a line through the rows and its time on the ruler.
        let cursor = response
            .hover_pos()
            .filter(|p| p.x >= plot.left() && p.x <= plot.right())
            .map(|p| p.x);
        self.draw_ruler(&painter, ruler, ui, cursor);
        let rows = self.rows(trace);
        let plot_painter = painter.with_clip_rect(plot);
        let labels = Labels::new(&plot_painter);
        if labels.fonts_key() != self.frame.fonts_key {
            self.frame.fonts_key = labels.fonts_key();
            self.frame.layouts.clear();
        }
        // Last frame's mesh is ours again once egui has tessellated it.
        let mut mesh = Arc::get_mut(&mut self.frame.rows_mesh)
            .map(std::mem::take)
            .unwrap_or_default();
        clear_keeping_memory(&mut mesh);
        let mut drawn = Drawn {
            rows: RowMesh { mesh, quads: 0 },
            labels,
            layouts: std::mem::take(&mut self.frame.layouts),
            hover_text: None,
            metric_bounds: Default::default(),
        };
        // Rows scroll no further than their last one at the bottom of the plot.
        let content: f32 = rows.iter().map(|r| r.height()).sum();
        self.scroll_y = self
            .scroll_y
            .min((content - plot.height()).max(0.0))
            .max(0.0);
        let mut y = plot.top() - self.scroll_y;
        let mut hovered: Option<(Selection, String)> = None;
        let pointer = response.hover_pos();
        let label_painter = painter.with_clip_rect(Rect::from_min_max(
            Pos2::new(rect.left(), plot.top()),
            rect.max,
        ));
        for row in &rows {
            let h = row.height();
            let row_rect =
                Rect::from_min_max(Pos2::new(plot.left(), y), Pos2::new(plot.right(), y + h));
            if row_rect.bottom() >= plot.top() && row_rect.top() <= plot.bottom() {
                let label_rect =
                    Rect::from_min_max(Pos2::new(rect.left(), y), Pos2::new(plot.left(), y + h));
                self.draw_label(&label_painter, ui, label_rect, trace, *row);
                let hover_t = pointer.filter(|p| row_rect.contains(*p)).map(|p| t_of(p.x));
                let found = self.draw_row(trace, *row, row_rect, &x_of, &t_of, hover_t, &mut drawn);
                if found.is_some() {
                    hovered = found;
                }
            }
            y += h;
        }
        let Drawn {
            rows: mut drawn_rows,
            labels,
            layouts,
            hover_text,
            metric_bounds: _,
        } = drawn;
        self.frame.layouts = layouts;
        labels.follow_atlas_growth(&mut drawn_rows.mesh);
        self.frame.last_quads = drawn_rows.quads;
        self.frame.rows_mesh = Arc::new(drawn_rows.mesh);
        plot_painter.add(egui::Shape::Mesh(self.frame.rows_mesh.clone()));
        self.draw_marks(&plot_painter, &rows, plot, &x_of, &t_of);
        self.draw_overlays(&plot_painter, trace, &rows, plot, &x_of);
        if let Some(x) = cursor {
            let color = ui.visuals().text_color().gamma_multiply(0.35);
            plot_painter.vline(x, plot.y_range(), Stroke::new(1.0, color));
        }
        self.on_clicks(&response, plot, &rows, hovered.as_ref(), trace, &mut out);
        let view = (self.view.0 as i64, self.view.1 as i64);
        save_view_menu(&response, view, self.window);
        hover_tooltip(response, hovered, hover_text, transfers);
        out
    }

    /// A click on the plot selects what is under the pointer (`hovered`), on the labels
    /// folds a group; a double click zooms to the item under the pointer.
    fn on_clicks(
        &mut self,
        response: &egui::Response,
        plot: Rect,
        rows: &[RowKind],
        hovered: Option<&(Selection, String)>,
        trace: &Trace,
        out: &mut TimelineResponse,
    ) {
        // Clicks on the plot select what is under the pointer; on the labels, fold groups.
        if response.clicked()
            && let Some(p) = response.interact_pointer_pos()
        {
            self.marks.measure = None;
            if p.x < plot.left() {
                self.toggle_group_at(rows, plot.top() - self.scroll_y, p.y);
            } else if p.y > plot.top() {
                self.selection = hovered.map(|h| h.0);
                out.selected = self.selection.is_some();
                // A new selection is what Details shows: the gap a panel chose before is
                // not kept above it.
                if out.selected {
                    self.marks.selected_gap = None;
                }
            }
        }
        // A double click zooms to what is under the pointer (an iteration's range, a kernel).
        if response.double_clicked()
            && let Some(p) = response.interact_pointer_pos()
            && p.x >= plot.left()
            && p.y > plot.top()
            && let Some((item, _)) = hovered
        {
            let (start, end) = item.span(trace);
            self.zoom_to(start, end, ZOOM_TO_ITEM_MARGIN);
        }
    }
}

/// The tooltip of what is under the pointer (a kernel's with its NCCL transfer when
/// known), else of a row's own hover text.
fn hover_tooltip(
    response: egui::Response,
    hovered: Option<(Selection, String)>,
    hover_text: Option<String>,
    transfers: Option<&KernelTransfers>,
) {
    if let Some((item, mut text)) = hovered {
        if let Selection::Op { device, op } = item
            && let Some(k) =
                transfers.and_then(|t| t.get(device, op.stream as usize, op.op as usize))
        {
            text += &transfer_tooltip(k);
        }
        response.on_hover_text_at_pointer(text);
    } else if let Some(text) = hover_text {
        response.on_hover_text_at_pointer(text);
    }
}

/// What a frame of the timeline did that the panels around it follow.
#[derive(Debug, Default, Clone, Copy)]
pub struct TimelineResponse {
    /// A click on the plot selected something (the window opens its Details).
    pub selected: bool,
}

/// First and last time of anything in the trace, CPU side included: "fit" shows it all.
/// Per thread, per NVTX depth: its ranges (by start), and the longest one's length (how far
/// back a row's search for what overlaps a time must look).
fn nvtx_rows(trace: &Trace) -> (Vec<Vec<Vec<u32>>>, Vec<Vec<i64>>) {
    let mut nvtx_by_depth = Vec::new();
    let mut longest_range = Vec::new();
    for t in &trace.threads {
        let max_depth = t
            .nvtx
            .depth
            .iter()
            .copied()
            .max()
            .map_or(0, |d| d as usize + 1);
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); max_depth];
        let mut longest = vec![0i64; max_depth];
        for r in 0..t.nvtx.len() {
            let d = t.nvtx.depth[r] as usize;
            rows[d].push(r as u32);
            longest[d] = longest[d].max(t.nvtx.end[r] - t.nvtx.start[r]);
        }
        nvtx_by_depth.push(rows);
        longest_range.push(longest);
    }
    (nvtx_by_depth, longest_range)
}

fn full_range(trace: &Trace) -> (i64, i64) {
    trace.time_span().unwrap_or((0, 1_000_000))
}
