//! The timeline: one row per GPU stream, NVTX rows per thread and depth, a CUDA API row per
//! thread. A frame costs O(pixels × visible rows): each row finds its visible range by
//! binary search (or, zoomed out, reads its level of detail), and ops narrower than `MIN_PX`
//! are folded into one block per run, stacked by what filled its time (compute, NCCL,
//! memory; from prefix sums), the idle rest left empty.

use std::sync::Arc;

use eframe::egui::{self, Color32, Mesh, Pos2, Rect, Sense, Stroke, Vec2};
use rayon::prelude::*;

use super::fold::{
    self, Fill, FoldStyle, MIN_PX, calls_fill, coverage_fill, fold_draw_by, partition, stacked_fill,
};
use super::labels::{FontsKey, Labels};
use super::layout_cache::{LayoutCache, RowMesh, clear_keeping_memory};
use super::lod::RowLod;
use super::ruler;
use super::search::{Match, Mode, Search};
use super::theme::{self, FOLDED_API, FOLDED_NVTX, kind_color, nvtx_color, state_color};
use crate::analysis::breakdown::State;
use crate::analysis::gaps::OpRef;
use crate::report::format_ns;
use crate::trace::{GpuOps, NONE, OpKind, Trace};

const ROW_H: f32 = 18.0;
const HEADER_H: f32 = 20.0;
const RULER_H: f32 = 24.0;
/// The least room between two ruler ticks, in pixels (a label is up to ~80 px).
const TICK_GAP_PX: f64 = 110.0;
const LABEL_W: f32 = 190.0;
/// Room left on each side of an item double-clicked to zoom to it, as a share of its length.
const ZOOM_TO_ITEM_MARGIN: f64 = 0.05;

/// Ops per block of a stream's prefix sums.
const PREFIX_BLOCK: usize = 64;

/// Per stream: the busy time and the mix of any run of ops, from sums at every
/// `PREFIX_BLOCK`-th op and the few ops between (a sum per op cost 24 bytes an op: a
/// hundred MB on a real-shaped trace).
struct StreamPrefix {
    /// Busy, NCCL and memory time of ops `[0, k × PREFIX_BLOCK)`.
    blocks: Vec<[i64; 3]>,
}

impl StreamPrefix {
    fn new(ops: &GpuOps) -> Self {
        let mut blocks = Vec::with_capacity(ops.len() / PREFIX_BLOCK + 1);
        let mut sum = [0i64; 3];
        for i in 0..ops.len() {
            if i % PREFIX_BLOCK == 0 {
                blocks.push(sum);
            }
            add_op(&mut sum, ops, i);
        }
        blocks.push(sum);
        Self { blocks }
    }

    /// Busy, NCCL and memory time of ops `[a, b)`.
    fn sums(&self, ops: &GpuOps, a: usize, b: usize) -> [i64; 3] {
        let mut out = [0i64; 3];
        if b - a < 2 * PREFIX_BLOCK {
            (a..b).for_each(|i| add_op(&mut out, ops, i));
            return out;
        }
        // Whole blocks from the block table, the ops at either end one by one.
        let (first_block, last_block) = (a.div_ceil(PREFIX_BLOCK), b / PREFIX_BLOCK);
        (a..first_block * PREFIX_BLOCK).for_each(|i| add_op(&mut out, ops, i));
        (last_block * PREFIX_BLOCK..b).for_each(|i| add_op(&mut out, ops, i));
        let (to, from) = (self.blocks[last_block], self.blocks[first_block]);
        for (k, sum) in out.iter_mut().enumerate() {
            *sum += to[k] - from[k];
        }
        out
    }

    fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * 24
    }
}

fn add_op(sum: &mut [i64; 3], ops: &GpuOps, i: usize) {
    let d = ops.duration(i);
    sum[0] += d;
    if ops.kind[i] == OpKind::Nccl {
        sum[1] += d;
    }
    if !ops.kind[i].is_kernel() {
        sum[2] += d;
    }
}

/// What one frame draws the rows with: one mesh of their quads and labels' glyphs. It
/// holds the timeline's layouts of zoomed-out rows while it draws.
struct Drawn {
    rows: RowMesh,
    labels: Labels,
    layouts: LayoutCache<RowKind>,
}

/// A row's items by index, sorted by start, as the drawing needs them.
struct RowItems<'a> {
    n: usize,
    start: &'a dyn Fn(usize) -> i64,
    end: &'a dyn Fn(usize) -> i64,
    longest: i64,
    color: &'a dyn Fn(usize) -> Color32,
    name: &'a dyn Fn(usize) -> std::borrow::Cow<'a, str>,
    /// How a folded run of items `[a, b)` over `span` ns (at least the fold's width) is
    /// filled.
    folded: &'a dyn Fn(usize, usize, i64) -> Fill,
    /// How its folded blocks are coloured when drawn from its level of detail.
    style: FoldStyle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// A group header: GPU `device` index or CPU thread index.
    GpuHeader(usize),
    ThreadHeader(usize),
    Stream {
        device: usize,
        stream: usize,
    },
    Nvtx {
        thread: usize,
        depth: u16,
    },
    Api {
        thread: usize,
    },
}

impl RowKind {
    pub fn height(&self) -> f32 {
        match self {
            RowKind::GpuHeader(_) | RowKind::ThreadHeader(_) => HEADER_H,
            _ => ROW_H,
        }
    }
}

/// What a drag on the timeline does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DragKind {
    Pan,
    /// On the ruler: zoom to the dragged range.
    Zoom,
    /// With Shift: set the current window.
    Window,
    /// With Ctrl: measure the dragged span.
    Measure,
}

/// The selected item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    Op { device: usize, op: OpRef },
    Range { thread: usize, range: usize },
    Call { thread: usize, call: usize },
}

impl Selection {
    /// When the item starts and ends (ns).
    pub fn span(self, trace: &Trace) -> (i64, i64) {
        match self {
            Selection::Op { device, op } => {
                let ops = &trace.devices[device].streams[op.stream as usize].ops;
                (ops.start[op.op as usize], ops.end[op.op as usize])
            }
            Selection::Range { thread, range } => {
                let n = &trace.threads[thread].nvtx;
                (n.start[range], n.end[range])
            }
            Selection::Call { thread, call } => {
                let a = &trace.threads[thread].api;
                (a.start[call], a.end[call])
            }
        }
    }
}

/// Intervals of one device's state (a clicked summary category), drawn as a band over
/// the device's rows.
pub struct Overlay {
    pub device: usize,
    pub state: State,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    /// Prefix sums of the intervals' lengths.
    pub covered: Vec<i64>,
    pub longest: i64,
    /// The longest intervals (at most `LISTED_INTERVALS`), longest first, for the list.
    pub longest_first: Vec<u32>,
}

/// How many of an overlay's intervals are listed: the longest ones.
pub const LISTED_INTERVALS: usize = 200;

impl Overlay {
    pub fn new(device: usize, state: State, starts: Vec<i64>, ends: Vec<i64>) -> Self {
        let mut covered = Vec::with_capacity(starts.len() + 1);
        covered.push(0);
        let mut longest = 0;
        for (s, e) in starts.iter().zip(&ends) {
            covered.push(covered.last().unwrap() + (e - s));
            longest = longest.max(e - s);
        }
        // The longest few in O(n): a full sort of a million idle moments took longer
        // than a click may.
        let mut longest_first: Vec<u32> = (0..starts.len() as u32).collect();
        let len = |i: &u32| std::cmp::Reverse(ends[*i as usize] - starts[*i as usize]);
        if longest_first.len() > LISTED_INTERVALS {
            longest_first.select_nth_unstable_by_key(LISTED_INTERVALS, len);
            longest_first.truncate(LISTED_INTERVALS);
        }
        longest_first.sort_by_key(|i| (len(i), *i));
        Self {
            device,
            state,
            starts,
            ends,
            covered,
            longest,
            longest_first,
        }
    }
}

pub struct Timeline {
    prefixes: Vec<Vec<StreamPrefix>>,
    /// Per thread, per depth: indices of its ranges at that depth, by start.
    nvtx_by_depth: Vec<Vec<Vec<u32>>>,
    /// Longest range per (thread, depth), for searches by start.
    longest_range: Vec<Vec<i64>>,
    stream_lods: Vec<Vec<RowLod>>,
    nvtx_lods: Vec<Vec<RowLod>>,
    api_lods: Vec<RowLod>,
    /// Per interned name: is it a synchronising API call?
    sync_names: Vec<bool>,
    pub collapsed_gpus: Vec<bool>,
    pub collapsed_threads: Vec<bool>,
    /// Visible time range (ns, the trace's clock).
    pub view: (f64, f64),
    pub full: (i64, i64),
    pub scroll_y: f32,
    pub selection: Option<Selection>,
    /// The "current window" (Shift+drag), analysed by the panels.
    pub window: Option<(i64, i64)>,
    /// Where a drag began (x) and what it does.
    drag: Option<(f32, DragKind)>,
    /// While a ruler or Shift drag runs: the range it will zoom to or make the window.
    pending_zoom: Option<(f64, f64)>,
    pending_window: Option<(i64, i64)>,
    /// A span measured with Ctrl+drag, shown with its length until Escape or a click.
    pub measure: Option<(f64, f64)>,
    /// Ops drawn as quads in the last frame (for the frame benchmark).
    pub last_quads: usize,
    pub overlay: Option<Overlay>,
    /// A gap to point at: (device index, start, end).
    pub highlight: Option<(usize, i64, i64)>,
    /// The chosen iteration's span on each GPU: (device index, start, end).
    pub iteration_mark: Vec<(usize, i64, i64)>,
    /// The gap last chosen in a panel, for the Details tab.
    pub selected_gap: Option<crate::analysis::gaps::Gap>,
    pub search: Search,
    /// Set by a frame in which a click on the plot selected something.
    pub clicked_selection: bool,
    /// Where the plot (right of the labels, below the ruler) was last drawn.
    pub last_plot: Rect,
    /// Zoomed-out rows as last laid out, reused while only the view's position changes,
    /// and the fonts their labels were baked with.
    layouts: LayoutCache<RowKind>,
    fonts_key: FontsKey,
    /// The rows' mesh handed to egui last frame: its memory is used again (growing it anew
    /// was a tenth of a frame).
    rows_mesh: Arc<Mesh>,
}

impl Timeline {
    pub fn new(trace: &Trace) -> Self {
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
        let full = full_range(trace);
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
        Self {
            prefixes,
            nvtx_by_depth,
            longest_range,
            stream_lods,
            nvtx_lods,
            api_lods,
            sync_names,
            collapsed_gpus: vec![false; trace.devices.len()],
            collapsed_threads: vec![false; trace.threads.len()],
            view: (full.0 as f64, full.1 as f64),
            full,
            scroll_y: 0.0,
            selection: None,
            window: None,
            drag: None,
            pending_zoom: None,
            pending_window: None,
            measure: None,
            last_quads: 0,
            overlay: None,
            highlight: None,
            iteration_mark: Vec::new(),
            selected_gap: None,
            search: Search::default(),
            clicked_selection: false,
            last_plot: Rect::NOTHING,
            layouts: LayoutCache::default(),
            fonts_key: FontsKey::default(),
            rows_mesh: Arc::default(),
        }
    }

    fn is_sync(&self, name: u32) -> bool {
        self.sync_names.get(name as usize).copied().unwrap_or(false)
    }

    /// Memory of the drawing indexes (prefix sums and levels of detail).
    pub fn index_bytes(&self) -> usize {
        let prefixes: usize = self
            .prefixes
            .iter()
            .flatten()
            .map(StreamPrefix::heap_bytes)
            .sum();
        let lods: usize = self
            .stream_lods
            .iter()
            .chain(&self.nvtx_lods)
            .flatten()
            .chain(&self.api_lods)
            .map(RowLod::heap_bytes)
            .sum();
        prefixes + lods
    }

    /// Rows in display order: GPUs (streams), then CPU threads with NVTX or API calls.
    pub fn rows(&self, trace: &Trace) -> Vec<RowKind> {
        let mut rows = Vec::new();
        for (d, device) in trace.devices.iter().enumerate() {
            rows.push(RowKind::GpuHeader(d));
            if !self.collapsed_gpus[d] {
                rows.extend((0..device.streams.len()).map(|s| RowKind::Stream {
                    device: d,
                    stream: s,
                }));
            }
        }
        for (t, thread) in trace.threads.iter().enumerate() {
            if thread.nvtx.is_empty() && thread.api.is_empty() {
                continue;
            }
            rows.push(RowKind::ThreadHeader(t));
            if self.collapsed_threads[t] {
                continue;
            }
            for depth in 0..self.nvtx_by_depth[t].len() as u16 {
                rows.push(RowKind::Nvtx { thread: t, depth });
            }
            if !thread.api.is_empty() {
                rows.push(RowKind::Api { thread: t });
            }
        }
        rows
    }

    pub fn fit(&mut self) {
        self.view = (self.full.0 as f64, self.full.1 as f64);
    }

    /// Zooms by `factor` (< 1 zooms in) around time `at`.
    pub fn zoom(&mut self, factor: f64, at: f64) {
        let (s, e) = self.view;
        let widest = ((self.full.1 - self.full.0) as f64 * 4.0).max(100.0);
        let span = ((e - s) * factor).clamp(100.0, widest);
        let frac = ((at - s) / (e - s)).clamp(0.0, 1.0);
        let start = at - frac * span;
        self.view = (start, start + span);
    }

    pub fn pan(&mut self, fraction: f64) {
        let d = (self.view.1 - self.view.0) * fraction;
        self.view = (self.view.0 + d, self.view.1 + d);
    }

    /// Selects a search match and brings it into view: centred at the current zoom when it
    /// fits, else zoomed to it.
    pub fn go_to(&mut self, m: Match) {
        self.selection = Some(m.selection);
        let span = self.view.1 - self.view.0;
        let len = (m.end - m.start) as f64;
        if len < span * 0.5 && span < (self.full.1 - self.full.0) as f64 * 0.05 {
            let mid = (m.start + m.end) as f64 / 2.0;
            self.view = (mid - span / 2.0, mid + span / 2.0);
        } else {
            self.zoom_to(m.start, m.end, 1.0);
        }
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
        self.overlay = old.overlay.take();
        self.highlight = old.highlight;
        self.iteration_mark = std::mem::take(&mut old.iteration_mark);
        self.search.open = old.search.open;
        self.search.query = std::mem::take(&mut old.search.query);
        self.search.mode = old.search.mode;
        if let Some(Selection::Op { .. }) = old.selection {
            self.selection = old.selection;
        }
    }

    /// The search bar (Ctrl+F): query, regex switch, match count, previous/next.
    fn search_bar(&mut self, ui: &mut egui::Ui, trace: &Arc<Trace>) {
        let ctrl_f = ui.input_mut(|i| i.consume_key(egui::Modifiers::COMMAND, egui::Key::F));
        if ctrl_f {
            self.search.open = true;
        }
        if !self.search.open {
            return;
        }
        let mut step = None;
        let mut found = None;
        ui.horizontal(|ui| {
            ui.label("Find");
            let edit = ui.add(
                egui::TextEdit::singleline(&mut self.search.query)
                    .id_salt("search")
                    .hint_text("kernel, NVTX range or API call")
                    .desired_width(260.0),
            );
            if ctrl_f {
                edit.request_focus();
            }
            if edit.changed() && matches!(self.search.mode, Mode::Exact | Mode::Template) {
                self.search.mode = Mode::Substring;
            }
            if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                step = Some(!ui.input(|i| i.modifiers.shift));
                edit.request_focus();
            }
            let mut regex = self.search.mode == Mode::Regex;
            if ui.checkbox(&mut regex, "regex").changed() {
                self.search.mode = if regex { Mode::Regex } else { Mode::Substring };
            }
            if ui.button("Previous").clicked() {
                step = Some(false);
            }
            if ui.button("Next").clicked() {
                step = Some(true);
            }
            if let Some(m) = self.search.run(trace, ui.ctx()) {
                found = Some(m);
            }
            if self.search.searching() {
                ui.spinner();
            }
            match (&self.search.error, self.search.current) {
                (Some(e), _) => {
                    ui.colored_label(ui.visuals().warn_fg_color, e);
                }
                (None, Some(i)) => {
                    ui.label(format!(
                        "{} of {} matches",
                        i + 1,
                        self.search.matches.len()
                    ));
                }
                (None, None) if self.search.matches.len() >= super::search::MAX_MATCHES => {
                    ui.label(format!(
                        "the first {} matches (more not kept)",
                        self.search.matches.len()
                    ));
                }
                (None, None) => {
                    ui.label(format!("{} matches", self.search.matches.len()));
                }
            }
            if ui.button("Close").clicked() {
                self.search.open = false;
            }
        });
        if let Some(forward) = step {
            found = found.or(self.search.step(forward));
        }
        if let Some(m) = found {
            self.go_to(m);
        }
    }

    /// Shows `[start, end]` with `margin` of its length on both sides, the margins cut
    /// at the trace's ends.
    pub fn zoom_to(&mut self, start: i64, end: i64, margin: f64) {
        let len = (end - start).max(100) as f64;
        let (lo, hi) = (self.full.0.min(start) as f64, self.full.1.max(end) as f64);
        self.view = (
            (start as f64 - len * margin).max(lo),
            (end as f64 + len * margin).min(hi),
        );
    }

    /// Unfolds GPU `device` (an index) and scrolls its rows into view when they are not.
    pub fn reveal_device(&mut self, trace: &Trace, device: usize) {
        let Some(folded) = self.collapsed_gpus.get_mut(device) else {
            return;
        };
        *folded = false;
        let rows = self.rows(trace);
        let Some(band) = device_band(&rows, device, 0.0) else {
            return;
        };
        let visible = self.last_plot.height();
        if !visible.is_finite() || visible <= 0.0 {
            return;
        }
        let shown = self.scroll_y..=self.scroll_y + visible;
        if !(shown.contains(&band.min) && shown.contains(&band.max.min(band.min + visible))) {
            self.scroll_y = band.min;
        }
    }

    /// Draws the timeline in the whole of `ui` and handles its input.
    pub fn show(&mut self, ui: &mut egui::Ui, trace: &Arc<Trace>) {
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
        self.last_plot = plot;
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
        if labels.fonts_key() != self.fonts_key {
            self.fonts_key = labels.fonts_key();
            self.layouts.clear();
        }
        // Last frame's mesh is ours again once egui has tessellated it.
        let mut mesh = Arc::get_mut(&mut self.rows_mesh)
            .map(std::mem::take)
            .unwrap_or_default();
        clear_keeping_memory(&mut mesh);
        let mut drawn = Drawn {
            rows: RowMesh { mesh, quads: 0 },
            labels,
            layouts: std::mem::take(&mut self.layouts),
        };
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
        } = drawn;
        self.layouts = layouts;
        labels.follow_atlas_growth(&mut drawn_rows.mesh);
        self.last_quads = drawn_rows.quads;
        self.rows_mesh = Arc::new(drawn_rows.mesh);
        plot_painter.add(egui::Shape::Mesh(self.rows_mesh.clone()));
        self.draw_marks(&plot_painter, &rows, plot, &x_of, &t_of);
        self.draw_overlays(&plot_painter, trace, &rows, plot, &x_of);
        if let Some(x) = cursor {
            let color = ui.visuals().text_color().gamma_multiply(0.35);
            plot_painter.vline(x, plot.y_range(), Stroke::new(1.0, color));
        }
        // Clicks on the plot select what is under the pointer; on the labels, fold groups.
        if response.clicked()
            && let Some(p) = response.interact_pointer_pos()
        {
            self.measure = None;
            if p.x < plot.left() {
                self.toggle_group_at(&rows, plot.top() - self.scroll_y, p.y);
            } else if p.y > plot.top() {
                self.selection = hovered.as_ref().map(|h| h.0);
                self.clicked_selection = self.selection.is_some();
            }
        }
        // A double click zooms to what is under the pointer (an iteration's range, a kernel).
        if response.double_clicked()
            && let Some(p) = response.interact_pointer_pos()
            && p.x >= plot.left()
            && p.y > plot.top()
            && let Some((item, _)) = &hovered
        {
            let (start, end) = item.span(trace);
            self.zoom_to(start, end, ZOOM_TO_ITEM_MARGIN);
        }
        if let Some((_, text)) = hovered {
            response.on_hover_text_at_pointer(text);
        }
    }

    fn handle_input(&mut self, ui: &egui::Ui, response: &egui::Response, plot: Rect, ruler: Rect) {
        // Escape closes Find first, then drops a measured span.
        if ui.input(|i| i.key_pressed(egui::Key::Escape)) {
            if self.search.open {
                self.search.open = false;
            } else {
                self.measure = None;
            }
        }
        let (v0, v1) = self.view;
        let t_of = |x: f32| v0 + ((x - plot.left()) / plot.width()) as f64 * (v1 - v0);
        if response.hovered() {
            let (scroll, zoom, mods) =
                ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta(), i.modifiers));
            let at = response.hover_pos().map_or((v0 + v1) / 2.0, |p| t_of(p.x));
            if zoom != 1.0 {
                self.zoom(1.0 / zoom as f64, at);
            } else if mods.command && scroll.y != 0.0 {
                self.zoom((-scroll.y as f64 / 200.0).exp(), at);
            } else {
                if scroll.x != 0.0 {
                    self.pan(-scroll.x as f64 / plot.width() as f64);
                }
                self.scroll_y = (self.scroll_y - scroll.y).max(0.0);
            }
        }
        if response.hovered() || response.has_focus() {
            let keys = ui.input(|i| {
                (
                    i.key_down(egui::Key::W),
                    i.key_down(egui::Key::S),
                    i.key_down(egui::Key::A),
                    i.key_down(egui::Key::D),
                    i.key_pressed(egui::Key::F),
                    i.modifiers.any(),
                )
            });
            if !keys.5 {
                let mid = (v0 + v1) / 2.0;
                if keys.0 {
                    self.zoom(0.9, mid);
                }
                if keys.1 {
                    self.zoom(1.0 / 0.9, mid);
                }
                if keys.2 {
                    self.pan(-0.05);
                }
                if keys.3 {
                    self.pan(0.05);
                }
                if keys.4 {
                    self.fit();
                }
                if keys.0 || keys.1 || keys.2 || keys.3 {
                    ui.ctx().request_repaint();
                }
            }
        }
        // Drag: on the ruler, zoom to the dragged range; with Shift, set the current window;
        // with Ctrl, measure; otherwise pan.
        // Where the button went down: a drag is known only once the pointer has moved.
        if response.drag_started()
            && let Some(p) = ui
                .input(|i| i.pointer.press_origin())
                .or(response.interact_pointer_pos())
        {
            let mods = ui.input(|i| i.modifiers);
            let kind = if mods.shift {
                DragKind::Window
            } else if mods.command {
                DragKind::Measure
            } else if ruler.contains(p) {
                DragKind::Zoom
            } else {
                DragKind::Pan
            };
            self.drag = Some((p.x, kind));
        }
        match (self.drag, response.interact_pointer_pos()) {
            (Some((_, DragKind::Pan)), _) if response.dragged() => {
                let dx = response.drag_delta().x;
                self.pan(-dx as f64 / plot.width() as f64);
            }
            (Some((x0, kind)), Some(p)) if response.dragged() || response.drag_stopped() => {
                let (a, b) = (t_of(x0.min(p.x)), t_of(x0.max(p.x)));
                let wide = (p.x - x0).abs() > 4.0;
                match kind {
                    DragKind::Measure => self.measure = wide.then_some((a, b)),
                    DragKind::Window if wide => self.pending_window = Some((a as i64, b as i64)),
                    DragKind::Zoom if wide => self.pending_zoom = Some((a, b)),
                    _ => {}
                }
                if response.drag_stopped() {
                    if let Some(w) = self.pending_window.take() {
                        self.window = Some(w);
                    }
                    if let Some(v) = self.pending_zoom.take() {
                        self.view = v;
                    }
                }
            }
            _ => {}
        }
        if response.drag_stopped() {
            self.drag = None;
        }
    }

    /// Ticks at a 1-2-5 step of the time since the trace's first event, the length of the
    /// view in the corner, and the time under the pointer.
    fn draw_ruler(&self, painter: &egui::Painter, ruler: Rect, ui: &egui::Ui, cursor: Option<f32>) {
        if ruler.width() < 10.0 {
            return;
        }
        let (v0, v1) = self.view;
        let origin = self.full.0 as f64;
        let (from, to) = (v0 - origin, v1 - origin);
        let span = to - from;
        let x_of = |t: f64| ruler.left() + ((t - from) / span) as f32 * ruler.width();
        let step = ruler::tick_step(span * TICK_GAP_PX / ruler.width() as f64);
        let scale = from.abs().max(to.abs());
        let color = ui.visuals().text_color();
        let font = egui::FontId::proportional(11.0);
        // The time under the pointer, to a pixel's precision: drawn over the ticks, whose
        // labels it would cover are left out.
        let cursor = cursor.map(|x| {
            let t = from + ((x - ruler.left()) / ruler.width()) as f64 * span;
            let per_px = ruler::tick_step(span / ruler.width() as f64);
            let galley =
                painter.layout_no_wrap(ruler::tick_label(t, per_px, scale), font.clone(), color);
            let w = galley.size().x + 8.0;
            let left = (x - w / 2.0).clamp(ruler.left(), ruler.right() - w);
            let r = Rect::from_min_size(Pos2::new(left, ruler.top() + 1.0), Vec2::new(w, 15.0));
            (r, galley)
        });
        for t in ruler::ticks(from, to, step) {
            let x = x_of(t);
            painter.line_segment(
                [
                    Pos2::new(x, ruler.bottom() - 6.0),
                    Pos2::new(x, ruler.bottom()),
                ],
                Stroke::new(1.0, color),
            );
            let label =
                painter.layout_no_wrap(ruler::tick_label(t, step, scale), font.clone(), color);
            // A label that would run past the right edge is left out, not cut.
            let at = Rect::from_min_size(Pos2::new(x + 2.0, ruler.top() + 2.0), label.size());
            let covered = cursor.as_ref().is_some_and(|(r, _)| r.intersects(at));
            if at.right() <= ruler.right() && !covered {
                painter.galley(at.min, label, color);
            }
        }
        let corner = Pos2::new(ruler.left() - LABEL_W + 4.0, ruler.top() + 1.0);
        let small = egui::FontId::proportional(10.0);
        let weak = ui.visuals().weak_text_color();
        painter.text(
            corner,
            egui::Align2::LEFT_TOP,
            "time since the first event",
            small.clone(),
            weak,
        );
        painter.text(
            corner + Vec2::new(0.0, 11.0),
            egui::Align2::LEFT_TOP,
            format!("view {}", format_ns(span as i64)),
            small,
            color,
        );
        if let Some((r, galley)) = cursor {
            painter.rect_filled(r, 3.0, ui.visuals().widgets.active.bg_fill);
            painter.galley(Pos2::new(r.left() + 4.0, ruler.top() + 2.0), galley, color);
        }
    }

    fn draw_label(
        &self,
        painter: &egui::Painter,
        ui: &egui::Ui,
        r: Rect,
        trace: &Trace,
        row: RowKind,
    ) {
        let (text, strong) = match row {
            RowKind::GpuHeader(d) => {
                let dev = &trace.devices[d];
                let arrow = if self.collapsed_gpus[d] { "[+]" } else { "[-]" };
                (format!("{arrow} {}", dev.label()), true)
            }
            RowKind::ThreadHeader(t) => {
                let th = &trace.threads[t];
                let arrow = if self.collapsed_threads[t] {
                    "[+]"
                } else {
                    "[-]"
                };
                let name = if th.name.is_empty() {
                    "thread"
                } else {
                    &th.name
                };
                (
                    format!("{arrow} {name} (pid {}, tid {})", th.pid, th.tid),
                    true,
                )
            }
            RowKind::Stream { device, stream } => (
                format!("    stream {}", trace.devices[device].streams[stream].id),
                false,
            ),
            RowKind::Nvtx { depth, .. } => (format!("    NVTX {depth}"), false),
            RowKind::Api { .. } => ("    CUDA API".to_string(), false),
        };
        if strong {
            painter.rect_filled(r, 0.0, ui.visuals().faint_bg_color);
        }
        painter.text(
            r.left_center() + Vec2::new(4.0, 0.0),
            egui::Align2::LEFT_CENTER,
            text,
            egui::FontId::proportional(if strong { 12.5 } else { 11.5 }),
            ui.visuals().text_color(),
        );
    }

    fn toggle_group_at(&mut self, rows: &[RowKind], top: f32, y: f32) {
        let mut row_y = top;
        for row in rows {
            let h = row.height();
            if y >= row_y && y < row_y + h {
                match *row {
                    RowKind::GpuHeader(d) => self.collapsed_gpus[d] ^= true,
                    RowKind::ThreadHeader(t) => self.collapsed_threads[t] ^= true,
                    _ => {}
                }
                return;
            }
            row_y += h;
        }
    }

    /// Draws one row; returns what is under `hover_t`, if anything.
    #[allow(clippy::too_many_arguments)]
    fn draw_row(
        &self,
        trace: &Trace,
        row: RowKind,
        r: Rect,
        x_of: &dyn Fn(f64) -> f32,
        t_of: &dyn Fn(f32) -> f64,
        hover_t: Option<f64>,
        out: &mut Drawn,
    ) -> Option<(Selection, String)> {
        let inner = r.shrink2(Vec2::new(0.0, 2.0));
        let slack = |t: f64| t_of(x_of(t) + MIN_PX) - t;
        match row {
            RowKind::GpuHeader(_) | RowKind::ThreadHeader(_) => None,
            RowKind::Stream { device, stream } => {
                let ops = &trace.devices[device].streams[stream].ops;
                let prefix = &self.prefixes[device][stream];
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
                self.draw_items(row, &items, &self.stream_lods[device][stream], inner, out);
                let t = hover_t?;
                let i = item_at(&ops.start, &ops.end, items.longest, t, slack(t))?;
                Some((
                    Selection::Op {
                        device,
                        op: OpRef {
                            stream: stream as u32,
                            op: i as u32,
                        },
                    },
                    op_tooltip(trace, device, stream, i, self.full.0),
                ))
            }
            RowKind::Nvtx { thread, depth } => {
                let t = &trace.threads[thread];
                let idx = &self.nvtx_by_depth[thread][depth as usize];
                let range_of = |k: usize| idx[k] as usize;
                let items = RowItems {
                    n: idx.len(),
                    start: &|k| t.nvtx.start[range_of(k)],
                    end: &|k| t.nvtx.end[range_of(k)],
                    longest: self.longest_range[thread][depth as usize],
                    color: &|k| nvtx_color(t.nvtx.color[range_of(k)], t.nvtx.kind[range_of(k)]),
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
                let lod = &self.nvtx_lods[thread][depth as usize];
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
            RowKind::Api { thread } => {
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
                self.draw_items(row, &items, &self.api_lods[thread], inner, out);
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
        }
    }

    /// Draws a row's items: from its level of detail when zoomed out far enough, else the
    /// items themselves, folding runs narrower than `MIN_PX`.
    fn draw_items(&self, row: RowKind, items: &RowItems, lod: &RowLod, r: Rect, out: &mut Drawn) {
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
    fn draw_marks(
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
        if let Some(o) = &self.overlay
            && let Some(band) = device_band(rows, o.device, plot.top() - self.scroll_y)
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
        for &(device, a, b) in &self.iteration_mark {
            outline(device, a, b, theme::ITERATION_MARK, false);
        }
        if let Some((device, a, b)) = self.highlight {
            outline(device, a, b, theme::GAP_MARK, true);
        }
    }

    /// The current window, the selection, and the arrow from a selected kernel to its launch.
    fn draw_overlays(
        &self,
        painter: &egui::Painter,
        trace: &Trace,
        rows: &[RowKind],
        plot: Rect,
        x_of: &dyn Fn(f64) -> f32,
    ) {
        // The current window (or the one being dragged), a zoom being dragged on the ruler,
        // a measured span: each a band with its length.
        let window = self
            .pending_window
            .or(self.window)
            .map(|(a, b)| (a as f64, b as f64));
        let bands = [
            (
                window,
                Color32::from_rgba_unmultiplied(80, 140, 255, 30),
                "window",
            ),
            (
                self.pending_zoom,
                Color32::from_rgba_unmultiplied(200, 200, 200, 30),
                "zoom to",
            ),
            (
                self.measure,
                Color32::from_rgba_unmultiplied(255, 255, 255, 24),
                "measured",
            ),
        ];
        for (span, fill, what) in bands {
            let Some((a, b)) = span else { continue };
            let r = Rect::from_x_y_ranges(x_of(a)..=x_of(b), plot.y_range());
            painter.rect_filled(r, 0.0, fill);
            let edge = Stroke::new(1.0, fill.to_opaque().gamma_multiply(0.8));
            painter.vline(r.left(), plot.y_range(), edge);
            painter.vline(r.right(), plot.y_range(), edge);
            let text = format!("{what} {}", format_ns((b - a) as i64));
            let galley =
                painter.layout_no_wrap(text, egui::FontId::proportional(12.0), Color32::WHITE);
            let centre = r.center().x.clamp(plot.left() + 60.0, plot.right() - 60.0);
            let at = Pos2::new(centre - galley.size().x / 2.0, plot.top() + 4.0);
            let back = Rect::from_min_size(at, galley.size()).expand(3.0);
            painter.rect_filled(back, 3.0, Color32::from_black_alpha(190));
            painter.galley(at, galley, Color32::WHITE);
        }
        let Some(sel) = self.selection else { return };
        let row_y = |target: RowKind| row_top(rows, target, plot.top() - self.scroll_y);
        let stroke = Stroke::new(2.0, theme::SELECTION);
        match sel {
            Selection::Op { device, op } => {
                let ops = &trace.devices[device].streams[op.stream as usize].ops;
                let i = op.op as usize;
                if let Some(y) = row_y(RowKind::Stream {
                    device,
                    stream: op.stream as usize,
                }) {
                    let r = Rect::from_min_max(
                        Pos2::new(x_of(ops.start[i] as f64), y + 1.0),
                        Pos2::new(
                            x_of(ops.end[i] as f64).max(x_of(ops.start[i] as f64) + 2.0),
                            y + ROW_H - 1.0,
                        ),
                    );
                    painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Outside);
                    let (thread, call) = (ops.launch_thread[i], ops.launch_call[i]);
                    // Only from a row in view: from far above or below it, the line would run
                    // along the kernel's row over its neighbours (the Details tab names the
                    // launch).
                    if call != NONE
                        && let Some(cy) = row_y(RowKind::Api {
                            thread: thread as usize,
                        })
                        && plot.y_range().contains(cy + ROW_H / 2.0)
                    {
                        let api = &trace.threads[thread as usize].api;
                        // A launch before the view: from the view's edge on its row.
                        let x = x_of(api.start[call as usize] as f64);
                        let from = Pos2::new(x.clamp(plot.left(), plot.right()), cy + ROW_H / 2.0);
                        let to = Pos2::new(r.left(), r.center().y);
                        // egui's arrow scales its head with the length; keep it 8 px.
                        let stroke = Stroke::new(1.5, theme::SELECTION);
                        let dir = (to - from).normalized();
                        let rot = egui::emath::Rot2::from_angle(0.45);
                        painter.line_segment([from, to], stroke);
                        painter.line_segment([to, to - rot * dir * 8.0], stroke);
                        painter.line_segment([to, to - rot.inverse() * dir * 8.0], stroke);
                    }
                }
            }
            Selection::Range { thread, range } => {
                let n = &trace.threads[thread].nvtx;
                if let Some(y) = row_y(RowKind::Nvtx {
                    thread,
                    depth: n.depth[range],
                }) {
                    let r = Rect::from_min_max(
                        Pos2::new(x_of(n.start[range] as f64), y + 1.0),
                        Pos2::new(x_of(n.end[range] as f64), y + ROW_H - 1.0),
                    );
                    painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Outside);
                }
            }
            Selection::Call { thread, call } => {
                let a = &trace.threads[thread].api;
                if let Some(y) = row_y(RowKind::Api { thread }) {
                    let r = Rect::from_min_max(
                        Pos2::new(x_of(a.start[call] as f64), y + 1.0),
                        Pos2::new(x_of(a.end[call] as f64), y + ROW_H - 1.0),
                    );
                    painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Outside);
                }
            }
        }
    }
}

/// Top of `target`'s row, rows starting at `top`.
fn row_top(rows: &[RowKind], target: RowKind, top: f32) -> Option<f32> {
    let mut y = top;
    for row in rows {
        if *row == target {
            return Some(y);
        }
        y += row.height();
    }
    None
}

/// The vertical extent of a device's stream rows (its header left out).
fn streams_band(rows: &[RowKind], device: usize, top: f32) -> Option<egui::Rangef> {
    let mut y = top;
    let mut band: Option<egui::Rangef> = None;
    for row in rows {
        let h = row.height();
        if matches!(*row, RowKind::Stream { device: d, .. } if d == device) {
            band = Some(band.map_or(egui::Rangef::new(y, y + h), |b| {
                egui::Rangef::new(b.min, y + h)
            }));
        }
        y += h;
    }
    band
}

/// The vertical extent of a device's group (header and stream rows).
fn device_band(rows: &[RowKind], device: usize, top: f32) -> Option<egui::Rangef> {
    let mut y = top;
    let mut band: Option<egui::Rangef> = None;
    for row in rows {
        let h = row.height();
        let mine = match *row {
            RowKind::GpuHeader(d) => d == device,
            RowKind::Stream { device: d, .. } => d == device,
            _ => false,
        };
        if mine {
            band = Some(band.map_or(egui::Rangef::new(y, y + h), |b| {
                egui::Rangef::new(b.min, y + h)
            }));
        }
        y += h;
    }
    band
}

/// First and last time of anything in the trace, CPU side included: "fit" shows it all.
fn full_range(trace: &Trace) -> (i64, i64) {
    trace.time_span().unwrap_or((0, 1_000_000))
}

fn op_tooltip(trace: &Trace, device: usize, stream: usize, i: usize, origin: i64) -> String {
    let dev = &trace.devices[device];
    let ops = &dev.streams[stream].ops;
    let mut text = format!(
        "{}\n{}  start {}  duration {}\nGPU {} stream {}",
        trace.strings.get(ops.name[i]),
        ops.kind[i].label(),
        format_ns(ops.start[i] - origin),
        format_ns(ops.duration(i)),
        dev.id,
        dev.streams[stream].id
    );
    if ops.kind[i].is_kernel()
        && let Some(c) = trace.launch_configs.get(ops.detail[i] as usize)
    {
        text += &format!("\ngrid {:?} block {:?}", c.grid, c.block);
    }
    let path = crate::analysis::gaps::launch_nvtx_path(
        trace,
        dev,
        OpRef {
            stream: stream as u32,
            op: i as u32,
        },
    );
    if !path.is_empty() {
        let names: Vec<_> = path.iter().map(|id| trace.strings.get(*id)).collect();
        text += &format!("\nNVTX {}", names.join(" > "));
    }
    text
}

fn item_at(starts: &[i64], ends: &[i64], longest: i64, t: f64, slack: f64) -> Option<usize> {
    item_at_by(
        starts.len(),
        &|i| starts[i],
        &|i| ends[i],
        longest,
        t,
        slack,
    )
}

/// The item under time `t` (within `slack`, the time of a few pixels), the closest by start.
fn item_at_by(
    n: usize,
    start: &dyn Fn(usize) -> i64,
    end: &dyn Fn(usize) -> i64,
    longest: i64,
    t: f64,
    slack: f64,
) -> Option<usize> {
    let hi = partition(n, |k| (start(k) as f64) <= t + slack);
    let lo = partition(n, |k| (start(k) as f64) < t - slack - longest as f64);
    (lo..hi)
        .rev()
        .take(64)
        .find(|&k| (start(k) as f64) - slack <= t && (end(k) as f64) + slack >= t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_sums_from_blocks_equal_its_ops_summed() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut ops = GpuOps::default();
        let mut t = 0;
        for _ in 0..5_000 {
            let d = rng.i64(1..5_000);
            ops.start.push(t);
            ops.end.push(t + d);
            ops.kind
                .push([OpKind::Compute, OpKind::Nccl, OpKind::Memcpy][rng.usize(0..3)]);
            t += d + rng.i64(0..3_000);
        }
        let prefix = StreamPrefix::new(&ops);
        for _ in 0..2_000 {
            let a = rng.usize(0..ops.len());
            let b = rng.usize(a..=ops.len());
            let mut want = [0; 3];
            (a..b).for_each(|i| add_op(&mut want, &ops, i));
            assert_eq!(prefix.sums(&ops, a, b), want, "ops {a}..{b}");
        }
    }
}
