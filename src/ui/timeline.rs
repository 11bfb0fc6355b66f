//! The timeline: one row per GPU stream, NVTX rows per thread and depth, a CUDA API row per
//! thread. A frame costs O(pixels × visible rows): each row finds its visible range by
//! binary search, and ops narrower than `MIN_PX` are folded into one block per run, coloured
//! by what it hides (busy fraction and compute/NCCL/memory mix, from prefix sums).

use eframe::egui::{self, Color32, Mesh, Pos2, Rect, Sense, Stroke, Vec2};

use crate::analysis::gaps::OpRef;
use crate::report::format_ns;
use crate::trace::{GpuOps, NONE, OpKind, RangeKind, Trace};

/// Ops narrower than this many pixels are folded with their neighbours.
const MIN_PX: f32 = 3.0;
const ROW_H: f32 = 18.0;
const HEADER_H: f32 = 20.0;
const RULER_H: f32 = 24.0;
const LABEL_W: f32 = 190.0;

/// Per stream: prefix sums that give the busy time and the mix of any run of ops in O(1).
struct StreamPrefix {
    busy: Vec<i64>,
    nccl: Vec<u32>,
    memory: Vec<u32>,
}

impl StreamPrefix {
    fn new(ops: &GpuOps) -> Self {
        let n = ops.len();
        let (mut busy, mut nccl, mut memory) = (
            Vec::with_capacity(n + 1),
            Vec::with_capacity(n + 1),
            Vec::with_capacity(n + 1),
        );
        busy.push(0);
        nccl.push(0);
        memory.push(0);
        for i in 0..n {
            busy.push(busy[i] + ops.duration(i));
            nccl.push(nccl[i] + (ops.kind[i] == OpKind::Nccl) as u32);
            memory.push(memory[i] + (!ops.kind[i].is_kernel()) as u32);
        }
        Self { busy, nccl, memory }
    }
}

/// What a row shows.
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// The selected item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    Op { device: usize, op: OpRef },
    Range { thread: usize, range: usize },
    Call { thread: usize, call: usize },
}

pub struct Timeline {
    prefixes: Vec<Vec<StreamPrefix>>,
    /// Per thread, per depth: indices of its ranges at that depth, by start.
    nvtx_by_depth: Vec<Vec<Vec<u32>>>,
    /// Longest range per (thread, depth), for searches by start.
    longest_range: Vec<Vec<i64>>,
    pub collapsed_gpus: Vec<bool>,
    pub collapsed_threads: Vec<bool>,
    /// Visible time range (ns, the trace's clock).
    pub view: (f64, f64),
    pub full: (i64, i64),
    pub scroll_y: f32,
    pub selection: Option<Selection>,
    /// The "current window" (Shift+drag), analysed by the panels.
    pub window: Option<(i64, i64)>,
    drag_origin: Option<(f32, bool)>,
    /// Ops drawn as quads in the last frame (for the frame benchmark).
    pub last_quads: usize,
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
        Self {
            prefixes,
            nvtx_by_depth,
            longest_range,
            collapsed_gpus: vec![false; trace.devices.len()],
            collapsed_threads: vec![false; trace.threads.len()],
            view: (full.0 as f64, full.1 as f64),
            full,
            scroll_y: 0.0,
            selection: None,
            window: None,
            drag_origin: None,
            last_quads: 0,
        }
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

    /// Shows `[start, end]` with `margin` of its length on both sides.
    pub fn zoom_to(&mut self, start: i64, end: i64, margin: f64) {
        let len = (end - start).max(100) as f64;
        self.view = (start as f64 - len * margin, end as f64 + len * margin);
    }

    /// Draws the timeline in the whole of `ui` and handles its input.
    pub fn show(&mut self, ui: &mut egui::Ui, trace: &Trace) {
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
        let (v0, v1) = self.view;
        let x_of = |t: f64| plot.left() + ((t - v0) / (v1 - v0)) as f32 * plot.width();
        let t_of = |x: f32| v0 + ((x - plot.left()) / plot.width()) as f64 * (v1 - v0);

        painter.rect_filled(rect, 0.0, ui.visuals().extreme_bg_color);
        self.draw_ruler(&painter, ruler, ui);
        let rows = self.rows(trace);
        let mut mesh = Mesh::default();
        let mut labels: Vec<(Rect, String)> = Vec::new();
        let mut quads = 0usize;
        let mut y = plot.top() - self.scroll_y;
        let mut hovered: Option<(Selection, String)> = None;
        let pointer = response.hover_pos();
        let label_painter = painter.with_clip_rect(Rect::from_min_max(
            Pos2::new(rect.left(), plot.top()),
            rect.max,
        ));
        let plot_painter = painter.with_clip_rect(plot);
        for row in &rows {
            let h = row.height();
            let row_rect =
                Rect::from_min_max(Pos2::new(plot.left(), y), Pos2::new(plot.right(), y + h));
            if row_rect.bottom() >= plot.top() && row_rect.top() <= plot.bottom() {
                let label_rect =
                    Rect::from_min_max(Pos2::new(rect.left(), y), Pos2::new(plot.left(), y + h));
                self.draw_label(&label_painter, ui, label_rect, trace, *row);
                let hover_t = pointer.filter(|p| row_rect.contains(*p)).map(|p| t_of(p.x));
                let found = self.draw_row(
                    trace,
                    *row,
                    row_rect,
                    &x_of,
                    &t_of,
                    hover_t,
                    &mut mesh,
                    &mut labels,
                    &mut quads,
                );
                if found.is_some() {
                    hovered = found;
                }
            }
            y += h;
        }
        plot_painter.add(egui::Shape::mesh(mesh));
        let font = egui::FontId::proportional(11.0);
        for (r, text) in labels {
            plot_painter.with_clip_rect(r.intersect(plot)).text(
                r.left_center() + Vec2::new(3.0, 0.0),
                egui::Align2::LEFT_CENTER,
                text,
                font.clone(),
                Color32::BLACK,
            );
        }
        self.draw_overlays(&plot_painter, trace, &rows, plot, &x_of);
        self.last_quads = quads;
        // Clicks on the plot select what is under the pointer; on the labels, fold groups.
        if response.clicked()
            && let Some(p) = response.interact_pointer_pos()
        {
            if p.x < plot.left() {
                self.toggle_group_at(&rows, plot.top() - self.scroll_y, p.y);
            } else if p.y > plot.top() {
                self.selection = hovered.as_ref().map(|h| h.0);
            }
        }
        if let Some((_, text)) = hovered {
            response.on_hover_text_at_pointer(text);
        }
    }

    fn handle_input(&mut self, ui: &egui::Ui, response: &egui::Response, plot: Rect, ruler: Rect) {
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
        // otherwise pan.
        if response.drag_started()
            && let Some(p) = response.interact_pointer_pos()
        {
            let shift = ui.input(|i| i.modifiers.shift);
            self.drag_origin = Some((p.x, ruler.contains(p) || shift));
        }
        if response.dragged()
            && let Some((_, false)) = self.drag_origin
        {
            let dx = response.drag_delta().x;
            self.pan(-dx as f64 / plot.width() as f64);
        }
        if response.drag_stopped()
            && let (Some((x0, true)), Some(p)) = (self.drag_origin, response.interact_pointer_pos())
        {
            let (a, b) = (t_of(x0.min(p.x)), t_of(x0.max(p.x)));
            if (p.x - x0).abs() > 4.0 {
                if ui.input(|i| i.modifiers.shift) {
                    self.window = Some((a as i64, b as i64));
                } else {
                    self.view = (a, b);
                }
            }
        }
        if response.drag_stopped() {
            self.drag_origin = None;
        }
    }

    fn draw_ruler(&self, painter: &egui::Painter, ruler: Rect, ui: &egui::Ui) {
        let (v0, v1) = self.view;
        let span = v1 - v0;
        // A tick step of 1, 2 or 5 × 10^k ns giving ~100 px between ticks.
        let target = span / (ruler.width() as f64 / 100.0).max(1.0);
        let mag = 10f64.powf(target.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= target)
            .unwrap_or(10.0 * mag);
        let color = ui.visuals().text_color();
        let mut t = (v0 / step).ceil() * step;
        while t <= v1 {
            let x = ruler.left() + ((t - v0) / span) as f32 * ruler.width();
            painter.line_segment(
                [
                    Pos2::new(x, ruler.bottom() - 6.0),
                    Pos2::new(x, ruler.bottom()),
                ],
                Stroke::new(1.0, color),
            );
            painter.text(
                Pos2::new(x + 2.0, ruler.top() + 2.0),
                egui::Align2::LEFT_TOP,
                format_ns((t - self.full.0 as f64) as i64),
                egui::FontId::proportional(11.0),
                color,
            );
            t += step;
        }
        painter.text(
            Pos2::new(ruler.left() - LABEL_W + 4.0, ruler.top() + 4.0),
            egui::Align2::LEFT_TOP,
            format!("view {}", format_ns(span as i64)),
            egui::FontId::proportional(11.0),
            color,
        );
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
                (format!("{arrow} GPU {} {}", dev.id, dev.name), true)
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
        mesh: &mut Mesh,
        labels: &mut Vec<(Rect, String)>,
        quads: &mut usize,
    ) -> Option<(Selection, String)> {
        let inner = r.shrink2(Vec2::new(0.0, 2.0));
        match row {
            RowKind::GpuHeader(_) | RowKind::ThreadHeader(_) => None,
            RowKind::Stream { device, stream } => {
                let ops = &trace.devices[device].streams[stream].ops;
                let prefix = &self.prefixes[device][stream];
                let longest = trace.devices[device].streams[stream].longest_op_ns;
                let mut hovered = None;
                fold_draw(
                    &ops.start,
                    &ops.end,
                    longest,
                    self.view,
                    x_of,
                    t_of,
                    |i| kind_color(ops.kind[i]),
                    |a, b| {
                        let n = (b - a) as f32;
                        let nccl = (prefix.nccl[b] - prefix.nccl[a]) as f32 / n;
                        let mem = (prefix.memory[b] - prefix.memory[a]) as f32 / n;
                        let span = (ops.end[b - 1] - ops.start[a]).max(1) as f32;
                        let busy = (prefix.busy[b] - prefix.busy[a]) as f32 / span;
                        folded_color(1.0 - nccl - mem, nccl, mem, busy)
                    },
                    |i, rect| {
                        if rect.width() > 40.0 {
                            labels.push((rect, trace.strings.get(ops.name[i]).to_string()));
                        }
                    },
                    inner,
                    mesh,
                    quads,
                );
                if let Some(t) = hover_t
                    && let Some(i) =
                        item_at(&ops.start, &ops.end, longest, t, t_of(x_of(t) + MIN_PX) - t)
                {
                    hovered = Some((
                        Selection::Op {
                            device,
                            op: OpRef {
                                stream: stream as u32,
                                op: i as u32,
                            },
                        },
                        op_tooltip(trace, device, stream, i),
                    ));
                }
                hovered
            }
            RowKind::Nvtx { thread, depth } => {
                let t = &trace.threads[thread];
                let idx = &self.nvtx_by_depth[thread][depth as usize];
                let longest = self.longest_range[thread][depth as usize];
                let start_of = |k: usize| t.nvtx.start[idx[k] as usize];
                let end_of = |k: usize| t.nvtx.end[idx[k] as usize];
                let n = idx.len();
                let range_of = |k: usize| idx[k] as usize;
                let mut hovered = None;
                fold_draw_by(
                    n,
                    &start_of,
                    &end_of,
                    longest,
                    self.view,
                    x_of,
                    t_of,
                    |k| nvtx_color(t.nvtx.color[range_of(k)], t.nvtx.kind[range_of(k)]),
                    |_, _| Color32::from_rgb(120, 130, 160),
                    |k, rect| {
                        if rect.width() > 40.0 {
                            labels.push((
                                rect,
                                trace.strings.get(t.nvtx.text[range_of(k)]).to_string(),
                            ));
                        }
                    },
                    inner,
                    mesh,
                    quads,
                );
                if let Some(time) = hover_t
                    && let Some(k) = item_at_by(
                        n,
                        &start_of,
                        &end_of,
                        longest,
                        time,
                        t_of(x_of(time) + MIN_PX) - time,
                    )
                {
                    let range = range_of(k);
                    hovered = Some((
                        Selection::Range { thread, range },
                        format!(
                            "{}\nstart {}  duration {}\nthread {}",
                            trace.strings.get(t.nvtx.text[range]),
                            format_ns(t.nvtx.start[range] - self.full.0),
                            format_ns(t.nvtx.end[range] - t.nvtx.start[range]),
                            t.tid
                        ),
                    ));
                }
                hovered
            }
            RowKind::Api { thread } => {
                let t = &trace.threads[thread];
                let longest = t.longest_call_ns;
                fold_draw(
                    &t.api.start,
                    &t.api.end,
                    longest,
                    self.view,
                    x_of,
                    t_of,
                    |i| {
                        if crate::analysis::gaps::is_synchronizing(trace.strings.get(t.api.name[i]))
                        {
                            Color32::from_rgb(220, 80, 80)
                        } else {
                            Color32::from_rgb(110, 170, 110)
                        }
                    },
                    |_, _| Color32::from_rgb(90, 140, 90),
                    |i, rect| {
                        if rect.width() > 40.0 {
                            labels.push((rect, trace.strings.get(t.api.name[i]).to_string()));
                        }
                    },
                    inner,
                    mesh,
                    quads,
                );
                let time = hover_t?;
                let i = item_at(
                    &t.api.start,
                    &t.api.end,
                    longest,
                    time,
                    t_of(x_of(time) + MIN_PX) - time,
                )?;
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

    /// The current window, the selection, and the arrow from a selected kernel to its launch.
    fn draw_overlays(
        &self,
        painter: &egui::Painter,
        trace: &Trace,
        rows: &[RowKind],
        plot: Rect,
        x_of: &dyn Fn(f64) -> f32,
    ) {
        if let Some((a, b)) = self.window {
            let r = Rect::from_x_y_ranges(x_of(a as f64)..=x_of(b as f64), plot.y_range());
            painter.rect_filled(r, 0.0, Color32::from_rgba_unmultiplied(80, 140, 255, 30));
        }
        let Some(sel) = self.selection else { return };
        let row_y = |target: RowKind| -> Option<f32> {
            let mut y = plot.top() - self.scroll_y;
            for row in rows {
                let h = row.height();
                if *row == target {
                    return Some(y);
                }
                y += h;
            }
            None
        };
        let stroke = Stroke::new(2.0, Color32::from_rgb(255, 200, 0));
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
                    if call != NONE
                        && let Some(cy) = row_y(RowKind::Api {
                            thread: thread as usize,
                        })
                    {
                        let api = &trace.threads[thread as usize].api;
                        let from =
                            Pos2::new(x_of(api.start[call as usize] as f64), cy + ROW_H / 2.0);
                        let to = Pos2::new(r.left(), r.center().y);
                        // egui's arrow scales its head with the length; keep it 8 px.
                        let stroke = Stroke::new(1.5, Color32::from_rgb(255, 200, 0));
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

/// First and last time of anything in the trace.
fn full_range(trace: &Trace) -> (i64, i64) {
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for d in &trace.devices {
        for s in &d.streams {
            if let (Some(a), Some(b)) = (s.ops.start.first(), s.ops.end.iter().max()) {
                lo = lo.min(*a);
                hi = hi.max(*b);
            }
        }
    }
    if lo > hi {
        for t in &trace.threads {
            if let (Some(a), Some(b)) = (t.api.start.first(), t.api.end.last()) {
                lo = lo.min(*a);
                hi = hi.max(*b);
            }
        }
    }
    if lo > hi {
        (0, 1_000_000)
    } else {
        (lo, hi.max(lo + 1))
    }
}

pub fn kind_color(kind: OpKind) -> Color32 {
    match kind {
        OpKind::Compute => Color32::from_rgb(76, 140, 220),
        OpKind::Nccl => Color32::from_rgb(236, 146, 48),
        OpKind::Memcpy => Color32::from_rgb(170, 110, 200),
        OpKind::Memset => Color32::from_rgb(140, 90, 170),
    }
}

/// A folded block: the mix of what it hides, lighter the less busy it is.
fn folded_color(compute: f32, nccl: f32, memory: f32, busy: f32) -> Color32 {
    let mix = |k: OpKind| {
        let c = kind_color(k);
        [c.r() as f32, c.g() as f32, c.b() as f32]
    };
    let (a, b, c) = (mix(OpKind::Compute), mix(OpKind::Nccl), mix(OpKind::Memcpy));
    let busy = busy.clamp(0.25, 1.0);
    let ch = |i: usize| {
        let v = a[i] * compute + b[i] * nccl + c[i] * memory;
        (v * busy + 235.0 * (1.0 - busy)) as u8
    };
    Color32::from_rgb(ch(0), ch(1), ch(2))
}

fn nvtx_color(argb: u32, kind: RangeKind) -> Color32 {
    if argb != 0 {
        let [_, r, g, b] = argb.to_be_bytes();
        return Color32::from_rgb(r, g, b);
    }
    match kind {
        RangeKind::PushPop => Color32::from_rgb(120, 190, 170),
        RangeKind::StartEnd => Color32::from_rgb(190, 170, 120),
    }
}

fn op_tooltip(trace: &Trace, device: usize, stream: usize, i: usize) -> String {
    let dev = &trace.devices[device];
    let ops = &dev.streams[stream].ops;
    let mut text = format!(
        "{}\n{}  start {}  duration {}\nGPU {} stream {}",
        trace.strings.get(ops.name[i]),
        ops.kind[i].label(),
        format_ns(ops.start[i]),
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
        let names: Vec<&str> = path.iter().map(|id| trace.strings.get(*id)).collect();
        text += &format!("\nNVTX {}", names.join(" > "));
    }
    text
}

/// Draws items `[0, n)` (sorted by start, not overlapping much) of one row: wide ones as
/// quads, runs of narrow ones folded into one block each. O(pixels × log n).
#[allow(clippy::too_many_arguments)]
fn fold_draw(
    starts: &[i64],
    ends: &[i64],
    longest: i64,
    view: (f64, f64),
    x_of: &dyn Fn(f64) -> f32,
    t_of: &dyn Fn(f32) -> f64,
    color: impl Fn(usize) -> Color32,
    folded: impl Fn(usize, usize) -> Color32,
    on_wide: impl FnMut(usize, Rect),
    r: Rect,
    mesh: &mut Mesh,
    quads: &mut usize,
) {
    fold_draw_by(
        starts.len(),
        &|i| starts[i],
        &|i| ends[i],
        longest,
        view,
        x_of,
        t_of,
        color,
        folded,
        on_wide,
        r,
        mesh,
        quads,
    );
}

#[allow(clippy::too_many_arguments)]
fn fold_draw_by(
    n: usize,
    start: &dyn Fn(usize) -> i64,
    end: &dyn Fn(usize) -> i64,
    longest: i64,
    view: (f64, f64),
    x_of: &dyn Fn(f64) -> f32,
    t_of: &dyn Fn(f32) -> f64,
    color: impl Fn(usize) -> Color32,
    folded: impl Fn(usize, usize) -> Color32,
    mut on_wide: impl FnMut(usize, Rect),
    r: Rect,
    mesh: &mut Mesh,
    quads: &mut usize,
) {
    let first_start = (view.0 - longest as f64).floor() as i64;
    let mut i = partition(n, |k| start(k) < first_start);
    while i < n && (start(i) as f64) < view.1 {
        let (s, e) = (start(i), end(i));
        if (e as f64) < view.0 {
            i += 1;
            continue;
        }
        let x0 = x_of(s as f64).max(r.left());
        let x1 = x_of(e as f64).min(r.right());
        if x1 - x0 >= MIN_PX {
            let rect = Rect::from_min_max(Pos2::new(x0, r.top()), Pos2::new(x1, r.bottom()));
            mesh.add_colored_rect(rect, color(i));
            on_wide(i, rect);
            *quads += 1;
            i += 1;
            continue;
        }
        // Fold every item that starts within MIN_PX of this one.
        let limit = t_of(x0 + MIN_PX).ceil() as i64;
        // Gallop forward from i: the next block is near, and a search over the whole row
        // would miss the cache at every step on a large trace.
        let mut step = 1;
        while i + step < n && start(i + step) < limit {
            step *= 2;
        }
        let lo = i + step / 2 + 1;
        let hi = (i + step).min(n);
        let j =
            (i + 1).max(lo.min(hi) + partition(hi - lo.min(hi), |k| start(lo.min(hi) + k) < limit));
        let x_end = x_of(end(j - 1) as f64).min(r.right()).max(x0 + 1.0);
        let c = if j - i == 1 { color(i) } else { folded(i, j) };
        mesh.add_colored_rect(
            Rect::from_min_max(
                Pos2::new(x0, r.top()),
                Pos2::new(x_end.max(x0 + 1.0), r.bottom()),
            ),
            c,
        );
        *quads += 1;
        i = j;
    }
}

/// First k in [0, n) where `pred(k)` is false (pred true then false).
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) { lo = mid + 1 } else { hi = mid }
    }
    lo
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
