//! Painting one row's items as quads: items wider than `MIN_PX` as themselves, runs of
//! narrower ones folded into one block per `MIN_PX` column, filled by what they hide, and
//! neighbouring blocks that look alike merged, so a zoomed-out frame stays a few hundred
//! quads. Two sources: a row's items (zoomed in) and its level of detail (zoomed out).

use eframe::egui::{Color32, Mesh, Pos2, Rect};

use super::lod::{Block, Level, RowLod};
use super::theme::{self, kind_color};
use crate::trace::OpKind;

/// Items narrower than this many pixels are folded with their neighbours.
pub const MIN_PX: f32 = 3.0;

/// How a folded block is painted: one colour, or stacked from the bottom in parts whose
/// heights are shares of the row (what kind of work filled how much of the block's time).
#[derive(Clone, Copy)]
pub enum Fill {
    Solid(Color32),
    Stacked([(Color32, f32); 3]),
}

/// How a row's folded blocks are coloured: ops stacked by kind (compute, NCCL, memory), or
/// ranges and calls by the share of time they cover, in one colour.
#[derive(Clone, Copy)]
pub enum FoldStyle {
    ByKind,
    /// API calls: the others at the bottom, synchronising calls (the `nccl` part of the
    /// sums) above them in the sync colour, so a thread that mostly waits reads red.
    Calls,
    Coverage(Color32),
}

/// The heights of a folded block's three parts, in eighths of the row: coarse on purpose,
/// so neighbouring blocks of a steady run compare equal and merge into one quad.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Eighths([u8; 3]);

impl FoldStyle {
    /// The parts of a block over `span` ns whose items were busy `busy` ns, of which `nccl`
    /// NCCL and `memory` memory ops.
    pub fn eighths(self, busy: i64, span: i64, nccl: i64, memory: i64) -> Eighths {
        let busy = Busy {
            total: busy,
            nccl,
            memory,
        };
        let tops = self.exact_tops(busy, 8.0 / span.max(1) as f32);
        self.parts(tops.map(round_eighths), busy)
    }

    /// Where the parts' tops lie, in eighths of the row from its bottom: compute, compute
    /// and NCCL, all busy time. Rounding tops rather than parts keeps the block as high
    /// as its busy time, whatever the mix.
    fn exact_tops(self, busy: Busy, per_ns: f32) -> [f32; 3] {
        let all = busy.total as f32 * per_ns;
        match self {
            FoldStyle::Coverage(_) => [all; 3],
            FoldStyle::ByKind | FoldStyle::Calls => [
                (busy.total - busy.nccl - busy.memory) as f32 * per_ns,
                (busy.total - busy.memory) as f32 * per_ns,
                all,
            ],
        }
    }

    /// The parts between rounded `tops`; something that ran never shows as nothing.
    fn parts(self, tops: [u8; 3], busy: Busy) -> Eighths {
        match self {
            FoldStyle::Coverage(_) => Eighths([tops[2].max(1), 0, 0]),
            FoldStyle::ByKind | FoldStyle::Calls => {
                let mut parts = [
                    tops[0],
                    tops[1].saturating_sub(tops[0]),
                    tops[2].saturating_sub(tops[1]),
                ];
                if busy.total > 0 && parts == [0, 0, 0] {
                    let compute = busy.total - busy.nccl - busy.memory;
                    let largest = if compute >= busy.nccl && compute >= busy.memory {
                        0
                    } else if busy.nccl >= busy.memory {
                        1
                    } else {
                        2
                    };
                    parts[largest] = 1;
                }
                Eighths(parts)
            }
        }
    }

    /// The colours of the three parts, bottom up.
    fn colors(self) -> [Color32; 3] {
        match self {
            FoldStyle::ByKind => [
                kind_color(OpKind::Compute),
                kind_color(OpKind::Nccl),
                kind_color(OpKind::Memcpy),
            ],
            FoldStyle::Calls => [theme::FOLDED_API, theme::SYNC_CALL, theme::FOLDED_API],
            FoldStyle::Coverage(c) => [c; 3],
        }
    }

    pub fn fill(self, e: Eighths) -> Fill {
        let colors = self.colors();
        let share = |k: usize| e.0[k] as f32 / 8.0;
        Fill::Stacked([
            (colors[0], share(0)),
            (colors[1], share(1)),
            (colors[2], share(2)),
        ])
    }
}

/// A folded run of ranges or calls: as high as the share of `span` they cover (in eighths,
/// at least one), or the full row when `busy` is not known (a run too long to sum).
pub fn coverage_fill(color: Color32, busy: Option<i64>, span: i64) -> Fill {
    let style = FoldStyle::Coverage(color);
    style.fill(style.eighths(busy.unwrap_or(span), span, 0, 0))
}

/// A folded run of API calls over `span` ns: busy `busy` ns, of which `sync` in
/// synchronising calls (drawn above the rest in the sync colour).
pub fn calls_fill(busy: i64, sync: i64, span: i64) -> Fill {
    FoldStyle::Calls.fill(FoldStyle::Calls.eighths(busy, span, sync, 0))
}

/// A folded block of ops over `span` ns, stacked by what filled its time: compute, then
/// NCCL, then memory, each as high as its share of the span; the rest, idle, stays empty.
pub fn stacked_fill(busy: i64, span: i64, nccl: i64, memory: i64) -> Fill {
    FoldStyle::ByKind.fill(FoldStyle::ByKind.eighths(busy, span, nccl, memory))
}

/// Draws items `[0, n)` (sorted by start, not overlapping much) of one row: wide ones as
/// quads, runs of narrow ones folded into one block each. O(pixels × log n); the row's
/// level of detail, when given, finds the first visible item.
#[allow(clippy::too_many_arguments)]
pub fn fold_draw_by(
    lod: Option<&RowLod>,
    n: usize,
    start: impl Fn(usize) -> i64,
    end: impl Fn(usize) -> i64,
    longest: i64,
    view: (f64, f64),
    x_of: impl Fn(f64) -> f32,
    t_of: impl Fn(f32) -> f64,
    paint: impl Fn(usize) -> Fill,
    folded: impl Fn(usize, usize, i64) -> Fill,
    mut on_wide: impl FnMut(usize, Rect, &mut Mesh),
    r: Rect,
    mesh: &mut Mesh,
    quads: &mut usize,
) {
    let mut i = match lod {
        Some(lod) => lod.first_reaching(view.0.floor() as i64, n, longest, &start),
        None => partition(n, |k| start(k) < (view.0 - longest as f64).floor() as i64),
    };
    let wide = |k: usize| x_of(end(k) as f64) - x_of(start(k) as f64) >= MIN_PX;
    while i < n && (start(i) as f64) < view.1 {
        let (s, e) = (start(i), end(i));
        if (e as f64) < view.0 {
            i += 1;
            continue;
        }
        let x0 = x_of(s as f64).max(r.left());
        let x1 = x_of(e as f64).min(r.right());
        // Wide before clipping: a long item cut by the view's edge stays itself, however
        // little of it shows, and does not fold the items after it in.
        if wide(i) {
            let rect = Rect::from_min_max(Pos2::new(x0, r.top()), Pos2::new(x1, r.bottom()));
            add_fill(mesh, rect, paint(i), quads);
            on_wide(i, rect, mesh);
            i += 1;
            continue;
        }
        // Fold every item that starts within MIN_PX of this one.
        let limit = ceil_ns(t_of(x0 + MIN_PX));
        // Galloping from here: the next block is near, and a search over the whole row
        // would miss the cache at every step on a large trace.
        let mut j = gallop(i + 1, n, |k| start(k) < limit);
        // A wide item ends the fold and is drawn as itself next; in a row whose items do
        // not overlap it can only be the fold's last.
        if j - 1 > i && wide(j - 1) {
            j -= 1;
        }
        // The block covers at least its column of MIN_PX (no item of the next block starts
        // in it), so neighbouring blocks abut and merge, and its fill says how much of the
        // column was busy.
        let last_end = end(j - 1) as f64;
        let span_ns = (last_end.max(limit as f64) - start(i) as f64).max(1.0) as i64;
        let x_end = x_of(last_end).max(x0 + MIN_PX).min(r.right());
        // Narrow, even alone: painted as folded, so a run of sparse narrow items (one short
        // range per step, at full zoom) reads as one thin block.
        let fill = folded(i, j, span_ns);
        let rect = Rect::from_min_max(Pos2::new(x0, r.top()), Pos2::new(x_end, r.bottom()));
        add_fill(mesh, rect, fill, quads);
        i = j;
    }
}

/// Paints `fill` into `r`: stacked parts from the bottom of the row up.
pub fn add_fill(mesh: &mut Mesh, r: Rect, fill: Fill, quads: &mut usize) {
    match fill {
        Fill::Solid(color) => add_rect(mesh, r, color, quads),
        Fill::Stacked(parts) => {
            let mut bottom = r.bottom();
            for (color, share) in parts {
                let h = ((share * r.height() + 0.5) as i32) as f32;
                if h > 0.0 {
                    let part = Rect::from_min_max(
                        Pos2::new(r.left(), bottom - h),
                        Pos2::new(r.right(), bottom),
                    );
                    add_rect(mesh, part, color, quads);
                    bottom -= h;
                }
            }
        }
    }
}

/// Adds a quad, or widens one of the last few when it has the same colour and rows and
/// ends less than a pixel before this one starts: a dense zoomed-out row becomes a few
/// long quads (a stacked block adds up to three, hence the look back).
pub fn add_rect(mesh: &mut Mesh, r: Rect, color: Color32, quads: &mut usize) {
    let n = mesh.vertices.len();
    for back in 1..=3.min(n / 4) {
        // add_colored_rect's vertex order: left-top, right-top, left-bottom, right-bottom.
        let q = &mut mesh.vertices[n - 4 * back..n - 4 * back + 4];
        if q[0].color == color
            && q[0].pos.y == r.top()
            && q[3].pos.y == r.bottom()
            && r.left() >= q[0].pos.x
            && r.left() - q[1].pos.x < 1.0
        {
            let right = q[1].pos.x.max(r.right());
            q[1].pos.x = right;
            q[3].pos.x = right;
            return;
        }
    }
    mesh.add_colored_rect(r, color);
    *quads += 1;
}

/// Draws a row from one level of its detail, as it runs for every row of a zoomed-out
/// frame. Like `fold_draw_by`, but the folded columns lie on a grid fixed in time (whole
/// buckets, 2–4 px), so a pan does not change what a column holds and a steady run gives
/// equal columns that merge into one quad; the loop needs no search or division per column.
/// Items are summed into the column they start in; the time the last one runs on past
/// its column is carried into the next ones, so a row of long ranges reads as covered.
#[allow(clippy::too_many_arguments)]
pub fn draw_level(
    level: &Level,
    view: (f64, f64),
    r: Rect,
    style: FoldStyle,
    item_color: impl Fn(usize) -> Color32,
    mut on_wide_item: impl FnMut(usize, Rect),
    mesh: &mut Mesh,
    quads: &mut usize,
) {
    let blocks = &level.blocks[..];
    let n = blocks.len();
    let px_per_ns = r.width() as f64 / (view.1 - view.0);
    let x_of = |t: i64| r.left() + ((t as f64 - view.0) * px_per_ns) as f32;
    let buckets = ((MIN_PX as f64 / px_per_ns / level.bucket_ns as f64).round() as i64).max(1);
    let column_ns = buckets * level.bucket_ns;
    let column_of = |t: i64| level.origin + (t - level.origin).div_euclid(column_ns) * column_ns;
    let view_end = view.1.ceil() as i64;
    // An item this long is drawn as itself, and ends the column before it.
    let wide_ns = (MIN_PX as f64 / px_per_ns).ceil() as i64;
    let wide_item = |b: &Block| b.count == 1 && b.end - b.start >= wide_ns;
    // Columns are drawn from the start of the view's first segment, those left of the view
    // unpainted: a column's height (held from its neighbours', see `held_tops`) does not
    // depend on where the view starts, and a pan that lays the row out again shows it alike.
    let segment_ns = column_ns * SEGMENT_COLUMNS;
    let first_column =
        level.origin + (view.0 as i64 - level.origin).div_euclid(segment_ns) * segment_ns;
    let mut painter = ColumnPainter::new(r, style, (level.origin, column_ns), mesh, quads);
    // Time of the last column's last item past its end, and what kind of work it was.
    let mut carry = Busy::default();
    // The next column not yet drawn.
    let mut next_column = i64::MIN;
    // From blocks that reach into the first column: what it holds, time carried in
    // included, does not depend on where the view cuts it.
    let first_start = first_column - level.longest;
    let mut i = partition(n, |k| blocks[k].start < first_start);
    while i < n && blocks[i].start < view_end {
        let b = &blocks[i];
        if wide_item(b) {
            let (x0, x1) = (x_of(b.start).max(r.left()), x_of(b.end).min(r.right()));
            let rect = Rect::from_x_y_ranges(x0..=x1, r.y_range());
            painter.item(rect, item_color(b.first as usize));
            on_wide_item(b.first as usize, rect);
            (carry, next_column) = (Busy::default(), column_of(b.end) + column_ns);
            i += 1;
            continue;
        }
        // Mostly the next column or the one after: no division needed.
        let column = if b.start >= next_column && b.start < next_column + column_ns {
            next_column
        } else if b.start >= next_column + column_ns && b.start < next_column + 2 * column_ns {
            next_column + column_ns
        } else {
            column_of(b.start)
        };
        // Columns before this one that only carried time covers.
        paint_carried(
            &mut painter,
            &mut carry,
            &mut next_column,
            column,
            first_column,
            &x_of,
        );
        let mut sums = carry.take(column_ns);
        let mut j = i;
        let mut last_end = b.end;
        while j < n && blocks[j].start < column + column_ns && !wide_item(&blocks[j]) {
            sums.add_block(&blocks[j]);
            last_end = blocks[j].end;
            j += 1;
        }
        carry.add(sums.split_off(last_end - (column + column_ns), &blocks[j - 1]));
        let t = (column, column + column_ns);
        painter.column(t, (x_of(t.0), x_of(t.1)), sums);
        next_column = column + column_ns;
        i = j;
    }
    paint_carried(
        &mut painter,
        &mut carry,
        &mut next_column,
        view_end,
        first_column,
        &x_of,
    );
    painter.finish();
}

/// Paints the columns from `next_column` up to `until` that only `carry` covers. Those left
/// of the view (from `first_column`) are skipped in one step: a range that began long
/// before the view carries into it.
fn paint_carried(
    painter: &mut ColumnPainter,
    carry: &mut Busy,
    next_column: &mut i64,
    until: i64,
    first_column: i64,
    x_of: &impl Fn(i64) -> f32,
) {
    if carry.total > 0 && *next_column < first_column {
        carry.take(first_column - *next_column);
        *next_column = first_column;
    }
    let column_ns = painter.column_ns;
    while carry.total > 0 && *next_column < until {
        // Columns the carried time fills whole look alike: painted in one step (up to the
        // segment's end), so a long range costs the same as a short one.
        let whole = (carry.total / column_ns)
            .min((until - *next_column) / column_ns)
            .min(painter.columns_left_in_segment(*next_column))
            .max(1);
        let part = carry.take(column_ns * whole);
        let per_column = Busy {
            total: part.total / whole,
            nccl: part.nccl / whole,
            memory: part.memory / whole,
        };
        let t = (*next_column, *next_column + column_ns * whole);
        painter.column(t, (x_of(t.0), x_of(t.1)), per_column);
        *next_column = t.1;
    }
}

/// Busy time of a column: in all, and of it NCCL and memory ops.
#[derive(Clone, Copy, Default)]
struct Busy {
    total: i64,
    nccl: i64,
    memory: i64,
}

impl Busy {
    fn add(&mut self, b: Busy) {
        self.total += b.total;
        self.nccl += b.nccl;
        self.memory += b.memory;
    }

    fn add_block(&mut self, b: &Block) {
        self.total += b.busy;
        self.nccl += b.nccl;
        self.memory += b.memory;
    }

    /// Takes out `spill` ns (when positive) that ran past the column, and returns it as
    /// the work `last` mostly was: the sums do not say which item ran on.
    fn split_off(&mut self, spill: i64, last: &Block) -> Busy {
        let spill = spill.clamp(0, self.total);
        if spill == 0 {
            return Busy::default();
        }
        let compute = last.busy - last.nccl - last.memory;
        let mut out = Busy {
            total: spill,
            ..Busy::default()
        };
        if last.nccl > compute && last.nccl >= last.memory {
            out.nccl = spill.min(self.nccl);
        } else if last.memory > compute {
            out.memory = spill.min(self.memory);
        }
        self.total -= spill;
        self.nccl -= out.nccl;
        self.memory -= out.memory;
        out
    }

    /// Up to `ns` of this, for the next column; the rest stays.
    fn take(&mut self, ns: i64) -> Busy {
        if self.total <= ns {
            return std::mem::take(self);
        }
        let share = |part: i64| (part as f64 * ns as f64 / self.total as f64) as i64;
        let out = Busy {
            total: ns,
            nccl: share(self.nccl),
            memory: share(self.memory),
        };
        self.total -= out.total;
        self.nccl -= out.nccl;
        self.memory -= out.memory;
        out
    }
}

/// Paints one row's columns. A run of alike columns is held back, and so is each of its
/// three parts' quad while the next runs keep that part's top at the same height: quads
/// are added only when they end, instead of added and widened again for every column.
///
/// Each part's quad reaches down to the row's bottom, under the parts below it, and quads
/// are painted tallest first: the picture is the stacked one, but where work changes from
/// column to column (compute and NCCL taking turns on a busy stream) the tallest part,
/// as high as the busy time, stays one long quad instead of one per column.
struct ColumnPainter<'a> {
    r: Rect,
    style: FoldStyle,
    /// The grid's origin; columns of `column_ns` from there.
    origin: i64,
    column_ns: i64,
    eighths_per_ns: f32,
    colors: [Color32; 3],
    /// Pixel height of 0–8 eighths of the row.
    heights: [f32; 9],
    /// (left, right, parts) of the run of alike columns not yet painted.
    run: Option<(f32, f32, Eighths)>,
    /// Per part, its quad still growing: [left, right, top].
    open: [Option<[f32; 3]>; 3],
    /// Quads ended but not yet painted, [left, right, top] and part: they overlap, and go
    /// to the mesh tallest first once nothing open can lie under them.
    ended: Vec<([f32; 3], usize)>,
    /// The last column's end (ns) and tops, which the next one's may keep.
    shown: Option<(i64, [u8; 3])>,
    /// Where the last thing drawn ends: a column after a wide item starts there.
    drawn_to: f32,
    mesh: &'a mut Mesh,
    quads: &'a mut usize,
}

impl<'a> ColumnPainter<'a> {
    fn new(
        r: Rect,
        style: FoldStyle,
        (origin, column_ns): (i64, i64),
        mesh: &'a mut Mesh,
        quads: &'a mut usize,
    ) -> Self {
        Self {
            r,
            style,
            origin,
            column_ns,
            eighths_per_ns: 8.0 / column_ns as f32,
            colors: style.colors(),
            heights: std::array::from_fn(|e| ((e as f32 / 8.0 * r.height() + 0.5) as i32) as f32),
            run: None,
            open: [None; 3],
            ended: Vec::new(),
            shown: None,
            drawn_to: r.left(),
            mesh,
            quads,
        }
    }

    /// Columns from `t` (a column's start) to the end of its segment.
    fn columns_left_in_segment(&self, t: i64) -> i64 {
        SEGMENT_COLUMNS - (t - self.origin).div_euclid(self.column_ns) % SEGMENT_COLUMNS
    }

    fn starts_segment(&self, t: i64) -> bool {
        self.columns_left_in_segment(t) == SEGMENT_COLUMNS
    }

    /// A column over `t` (ns), at `x` (px): its tops are worked out even where it lies
    /// outside the row, as the next one may keep them.
    #[inline]
    fn column(&mut self, t: (i64, i64), x: (f32, f32), busy: Busy) {
        if busy.total <= 0 {
            return;
        }
        let exact = self.style.exact_tops(busy, self.eighths_per_ns);
        let tops = match self.shown {
            Some((end, last)) if end == t.0 && !self.starts_segment(t.0) => held_tops(exact, last),
            _ => exact.map(round_eighths),
        };
        self.shown = Some((t.1, tops));
        let (x0, x1) = (
            x.0.max(self.drawn_to).max(self.r.left()),
            x.1.min(self.r.right()),
        );
        if x1 <= x0 {
            return;
        }
        let parts = self.style.parts(tops, busy);
        match &mut self.run {
            Some((_, right, run_parts)) if *run_parts == parts && x0 - *right < 1.0 => {
                *right = right.max(x1)
            }
            _ => {
                self.end_run();
                self.run = Some((x0, x1, parts));
            }
        }
        self.drawn_to = x1;
    }

    fn item(&mut self, rect: Rect, color: Color32) {
        self.finish();
        self.shown = None;
        add_rect(self.mesh, rect, color, self.quads);
        self.drawn_to = rect.right();
    }

    /// Stacks the run's parts from the bottom up, widening each part's open quad when its
    /// top is at the same height and it touches.
    fn end_run(&mut self) {
        let Some((x0, x1, parts)) = self.run.take() else {
            return;
        };
        let mut top = self.r.bottom();
        for k in 0..3 {
            let part_top = (top - self.heights[parts.0[k] as usize]).max(self.r.top());
            if part_top >= top {
                self.close(k);
                continue;
            }
            top = part_top;
            match &mut self.open[k] {
                Some(q) if q[2] == top && x0 - q[1] < 1.0 => q[1] = q[1].max(x1),
                _ => {
                    self.close(k);
                    self.open[k] = Some([x0, x1, top]);
                }
            }
        }
    }

    fn close(&mut self, part: usize) {
        if let Some(q) = self.open[part].take() {
            self.ended.push((q, part));
        }
    }

    /// Paints every quad: nothing after this lies under them.
    fn finish(&mut self) {
        self.end_run();
        (0..3).for_each(|k| self.close(k));
        // Stable, so equal tops keep their order (they do not overlap: one part each).
        self.ended.sort_by(|a, b| a.0[2].total_cmp(&b.0[2]));
        for ([x0, x1, top], part) in self.ended.drain(..) {
            let rect = Rect::from_min_max(Pos2::new(x0, top), Pos2::new(x1, self.r.bottom()));
            self.mesh.add_colored_rect(rect, self.colors[part]);
            *self.quads += 1;
        }
    }
}

/// The nearest whole eighth, 0–8. (Adding 0.5 and truncating: `f32::round` is a libm
/// call, and this runs for every folded column.)
fn round_eighths(e: f32) -> u8 {
    ((e + 0.5) as i32).clamp(0, 8) as u8
}

/// How far (in eighths) a column's exact top may stray from its left neighbour's shown
/// top and still be shown there: a share that hovers about a half eighth keeps one height
/// instead of flipping column by column, and the run stays one quad.
const HOLD_EIGHTHS: f32 = 0.75;

/// Columns in a segment of the grid: a column's tops are held from its left neighbour's
/// within one, and rounded afresh at the first.
const SEGMENT_COLUMNS: i64 = 64;

/// The tops to show for a column with `exact` tops next to one shown at `last`.
fn held_tops(exact: [f32; 3], last: [u8; 3]) -> [u8; 3] {
    let mut tops = [0; 3];
    for k in 0..3 {
        tops[k] = if (exact[k] - last[k] as f32).abs() < HOLD_EIGHTHS {
            last[k]
        } else {
            round_eighths(exact[k])
        };
    }
    // Held and rounded tops can cross where exact ones nearly touch.
    tops[1] = tops[1].max(tops[0]);
    tops[2] = tops[2].max(tops[1]);
    tops
}

/// `t.ceil() as i64` without the libm call.
fn ceil_ns(t: f64) -> i64 {
    let whole = t as i64;
    if (whole as f64) < t { whole + 1 } else { whole }
}

/// First k in [0, n) where `pred(k)` is false (pred true then false).
pub fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) { lo = mid + 1 } else { hi = mid }
    }
    lo
}

/// The first index at or after `from` where `pred` turns false (`pred` true, then false,
/// along `[from, n)`): steps doubling from `from`, then a binary search of the last step.
/// A few reads near `from` when the answer is near, where a search of the whole range
/// would miss the cache at every probe.
pub fn gallop(from: usize, n: usize, pred: impl Fn(usize) -> bool) -> usize {
    if from >= n || !pred(from) {
        return from.min(n);
    }
    // `pred(known)` holds; the answer is in (known, bound].
    let (mut known, mut step) = (from, 1);
    let bound = loop {
        let probe = known + step;
        if probe >= n {
            break n;
        }
        if !pred(probe) {
            break probe;
        }
        known = probe;
        step *= 2;
    };
    known + 1 + partition(bound - known - 1, |k| pred(known + 1 + k))
}

#[cfg(test)]
mod tests {
    use super::super::lod::RowLod;
    use super::*;
    use eframe::egui::epaint::Vertex;

    #[test]
    fn gallop_finds_where_a_predicate_turns_false_from_any_start() {
        let v: Vec<i64> = (0..1000).map(|k| k * 3).collect();
        for from in [0, 1, 7, 500, 999, 1000] {
            for t in [-5, 0, 1, 3, 700, 1500, 2997, 2998, 5000] {
                let want = v.partition_point(|&x| x < t).max(from);
                assert_eq!(
                    gallop(from, v.len(), |k| v[k] < t),
                    want,
                    "from {from} t {t}"
                );
            }
        }
    }

    #[test]
    fn a_folded_block_stacks_its_shares_of_time_in_eighths() {
        let Fill::Stacked(parts) = stacked_fill(95, 100, 40, 0) else {
            panic!("stacked")
        };
        let shares: Vec<f32> = parts.iter().map(|p| p.1).collect();
        // Compute 55 % → its top at 4/8; busy 95 % → the block's top at 8/8, NCCL between.
        assert_eq!(shares, vec![0.5, 0.5, 0.0]);
        let Fill::Stacked(parts) = stacked_fill(1, 1_000, 1, 0) else {
            panic!("stacked")
        };
        assert_eq!(parts[1].1, 0.125, "a sliver of NCCL still shows");
    }

    #[test]
    fn touching_quads_of_one_colour_merge_and_separate_ones_do_not() {
        let mut mesh = Mesh::default();
        let mut quads = 0;
        let c = Color32::RED;
        let rect = |x0: f32, x1: f32| Rect::from_min_max(Pos2::new(x0, 0.0), Pos2::new(x1, 10.0));
        add_rect(&mut mesh, rect(0.0, 3.0), c, &mut quads);
        add_rect(&mut mesh, rect(3.5, 6.0), c, &mut quads);
        assert_eq!((quads, mesh.vertices.len()), (1, 4));
        assert_eq!(mesh.vertices[1].pos.x, 6.0);
        add_rect(&mut mesh, rect(8.0, 9.0), c, &mut quads);
        add_rect(&mut mesh, rect(9.0, 10.0), Color32::BLUE, &mut quads);
        assert_eq!(quads, 3);
    }

    /// Items `[starts[i], ends[i])` (NCCL where `nccl(i)`) drawn from the row's level of
    /// detail for `view` into `width` × 16 px: the quads in the order painted.
    fn draw_lod(
        starts: &[i64],
        ends: &[i64],
        nccl: impl Fn(usize) -> bool,
        view: (f64, f64),
        width: f32,
        style: FoldStyle,
    ) -> Vec<(Rect, Color32)> {
        let full = (starts[0], *ends.last().unwrap());
        let lod = RowLod::new(
            starts.len(),
            |i| starts[i],
            |i| ends[i],
            |i| (nccl(i), false),
            full,
        );
        let r = Rect::from_min_max(Pos2::ZERO, Pos2::new(width, 16.0));
        let fold_ns = (view.1 - view.0) / width as f64 * MIN_PX as f64;
        let level = lod
            .level_for(fold_ns)
            .expect("zoomed out past the finest level");
        let (mut mesh, mut quads) = (Mesh::default(), 0);
        let color = |_| Color32::WHITE;
        draw_level(
            level,
            view,
            r,
            style,
            color,
            |_, _| {},
            &mut mesh,
            &mut quads,
        );
        assert_eq!(quads * 4, mesh.vertices.len());
        // add_colored_rect's vertex order: left-top, right-top, left-bottom, right-bottom.
        let quad = |q: &[Vertex]| (Rect::from_min_max(q[0].pos, q[3].pos), q[0].color);
        mesh.vertices.chunks(4).map(quad).collect()
    }

    /// What `quads` paint at `x`: per pixel of the row's 16, top down, the colour of the
    /// last quad over its centre.
    fn picture_at(quads: &[(Rect, Color32)], x: f32) -> Vec<Option<Color32>> {
        (0..16)
            .map(|y| {
                let p = Pos2::new(x, y as f32 + 0.5);
                quads.iter().rev().find(|q| q.0.contains(p)).map(|q| q.1)
            })
            .collect()
    }

    /// A row of `n` items, one every `period` ns, each `len` long, every third one NCCL,
    /// drawn whole from its level of detail into 900 × 16 px.
    fn draw_row(n: usize, period: i64, len: i64, style: FoldStyle) -> Vec<(Rect, Color32)> {
        let starts: Vec<i64> = (0..n as i64).map(|i| i * period).collect();
        let ends: Vec<i64> = starts.iter().map(|s| s + len).collect();
        let view = (0.0, (n as i64 * period) as f64);
        draw_lod(&starts, &ends, |i| i % 3 == 0, view, 900.0, style)
    }

    #[test]
    fn a_steady_row_drawn_from_its_detail_is_one_block_per_kind_of_work() {
        // 40 % busy: compute 26.7 % → its top at 2/8 of the row, compute and NCCL → 3/8.
        let quads = draw_row(300_000, 1_000, 400, FoldStyle::ByKind);
        let compute = kind_color(OpKind::Compute);
        let nccl = kind_color(OpKind::Nccl);
        for color in [compute, nccl] {
            // One block, and at most one more for the last, partly filled column.
            let parts: Vec<_> = quads.iter().filter(|q| q.1 == color).collect();
            assert!(parts.len() <= 2, "{parts:?}");
            assert!(parts[0].0.width() > 900.0 - MIN_PX, "{parts:?}");
        }
        // Painted tallest first: compute shows over NCCL's quad, which reaches the bottom.
        let mut want = vec![None; 10];
        want.extend([Some(nccl); 2].iter().chain(&[Some(compute); 4]));
        for x in [1.0, 450.0, 890.0] {
            assert_eq!(picture_at(&quads, x), want, "at {x} px");
        }
    }

    /// A busy row of 1 µs kernels, compute with chance `compute_share`, else NCCL.
    fn random_busy_row(n: usize, compute_share: f32) -> (Vec<i64>, Vec<i64>, Vec<bool>) {
        let mut rng = fastrand::Rng::with_seed(11);
        let starts: Vec<i64> = (0..n as i64).map(|i| i * 1_000).collect();
        let ends = starts.iter().map(|s| s + 1_000).collect();
        let nccl = (0..n).map(|_| rng.f32() >= compute_share).collect();
        (starts, ends, nccl)
    }

    #[test]
    fn a_share_that_hovers_about_a_half_eighth_keeps_one_height() {
        // Compute 56 % of a busy row: 4.48 eighths, give or take 0.13 from column to column
        // (~1000 kernels each). Rounded column by column, its top would flip between 4/8
        // and 5/8 at most columns.
        let (starts, ends, nccl) = random_busy_row(300_000, 0.56);
        let quads = draw_lod(
            &starts,
            &ends,
            |i| nccl[i],
            (0.0, 3e8),
            900.0,
            FoldStyle::ByKind,
        );
        let compute = kind_color(OpKind::Compute);
        for x in (0..300).map(|k| k as f32 * 3.0 + 1.5) {
            let picture = picture_at(&quads, x);
            let compute_px = picture.iter().filter(|&&c| c == Some(compute)).count();
            // Within 0.75 eighth (1.5 px) of 4.48 eighths (9 px), and the row full.
            assert!((8..=10).contains(&compute_px), "{compute_px} px at {x}");
            assert!(picture.iter().all(|c| c.is_some()), "a gap at {x}");
        }
        // Rounded column by column: 193 quads (checked).
        let compute_quads = quads.iter().filter(|q| q.1 == compute).count();
        assert!(compute_quads <= 30, "{compute_quads} compute quads");
    }

    #[test]
    fn a_pan_does_not_change_the_height_a_column_is_drawn_at() {
        let (starts, ends, nccl) = random_busy_row(300_000, 0.56);
        // The compute pixels at each 0.1 ms from 100 to 190 ms, in a 100 ms view from `t0`.
        let draw = |t0: f64| {
            let view = (t0, t0 + 1e8);
            let quads = draw_lod(&starts, &ends, |i| nccl[i], view, 900.0, FoldStyle::ByKind);
            let compute = Some(kind_color(OpKind::Compute));
            (0..900)
                .map(|k| {
                    let x = ((1e8 + k as f64 * 1e5 - view.0) / 1e8 * 900.0) as f32;
                    picture_at(&quads, x)
                        .iter()
                        .filter(|&&c| c == compute)
                        .count()
                })
                .collect::<Vec<_>>()
        };
        // Views that start anywhere, laid out afresh, show the same row.
        let reference = draw(0.9e8);
        for t0 in [0.95e8, 0.97e8, 0.999e8] {
            let picture = draw(t0);
            let differ = (0..900).filter(|&k| picture[k] != reference[k]).count();
            assert_eq!(
                differ, 0,
                "view from {t0} ns: {differ} of 900 places differ"
            );
        }
    }

    #[test]
    fn a_thread_mostly_in_synchronising_calls_reads_in_the_sync_colour_zoomed_out() {
        // Back-to-back calls, 9 in 10 of them synchronising (summed as the sync part).
        let (starts, ends, _) = random_busy_row(300_000, 1.0);
        let view = (0.0, 300_000.0 * 1_000.0);
        let quads = draw_lod(
            &starts,
            &ends,
            |i| i % 10 != 0,
            view,
            900.0,
            FoldStyle::Calls,
        );
        for x in [5.0, 450.0, 895.0] {
            let picture = picture_at(&quads, x);
            let sync = picture
                .iter()
                .filter(|c| **c == Some(theme::SYNC_CALL))
                .count();
            let other = picture
                .iter()
                .filter(|c| **c == Some(theme::FOLDED_API))
                .count();
            assert!(sync >= 12 && other >= 1, "at {x}: {picture:?}");
        }
    }

    #[test]
    fn back_to_back_ranges_read_as_covered_though_each_spills_into_the_next_column() {
        // Ranges 0.7 columns long, back to back: each column holds one or two starts, and
        // without the carried time half the columns would show 70 % and half 140 %.
        let n = (300.0 / 0.7) as usize;
        let quads = draw_row(n, 1_000_000, 1_000_000, FoldStyle::Coverage(Color32::GRAY));
        assert!(quads.len() <= 2, "{quads:?}");
        assert_eq!(quads[0].0.height(), 16.0);
        assert!(quads[0].0.width() > 900.0 - MIN_PX, "{quads:?}");
    }

    /// Items drawn by `fold_draw_by` across `width` px (wide ones green, folds grey): the
    /// wide items' indices, the mesh and the quad count.
    fn fold_items(
        starts: &[i64],
        ends: &[i64],
        view: (f64, f64),
        width: f32,
    ) -> (Vec<usize>, Mesh, usize) {
        let r = Rect::from_min_max(Pos2::ZERO, Pos2::new(width, 16.0));
        let x_of = |t: f64| ((t - view.0) / (view.1 - view.0)) as f32 * width;
        let t_of = |x: f32| view.0 + (x / width) as f64 * (view.1 - view.0);
        let longest = starts
            .iter()
            .zip(ends)
            .map(|(s, e)| e - s)
            .max()
            .unwrap_or(0);
        let (mut mesh, mut quads, mut wide) = (Mesh::default(), 0, Vec::new());
        fold_draw_by(
            None,
            starts.len(),
            |i| starts[i],
            |i| ends[i],
            longest,
            view,
            x_of,
            t_of,
            |_| Fill::Solid(Color32::GREEN),
            |_, _, _| Fill::Solid(Color32::GRAY),
            |i, _, _| wide.push(i),
            r,
            &mut mesh,
            &mut quads,
        );
        (wide, mesh, quads)
    }

    #[test]
    fn a_long_item_cut_by_the_view_edge_does_not_fold_the_next_one_in() {
        // Two long ranges; the view starts 1.5 px before the first one ends and the second
        // starts 1 px after it: both are wide, so both are drawn as themselves.
        let (wide, mesh, _) = fold_items(&[0, 1_001], &[1_000, 3_000], (998.5, 3_000.0), 2_001.5);
        assert_eq!(wide, vec![0, 1]);
        assert!(mesh.vertices.iter().all(|v| v.color == Color32::GREEN));
    }

    #[test]
    fn a_wide_item_right_after_a_dense_run_of_narrow_ones_is_drawn_as_itself() {
        // 20 items of 1 ns within the first 3 px (10 ns a pixel), then a long one: the
        // fold gallops over the narrow ones but stops before the long one.
        let mut starts: Vec<i64> = (0..20).collect();
        let mut ends: Vec<i64> = (1..21).collect();
        starts.push(25);
        ends.push(5_000);
        let (wide, _, quads) = fold_items(&starts, &ends, (0.0, 20_000.0), 2_000.0);
        assert_eq!(wide, vec![20]);
        assert_eq!(quads, 2, "one folded block, then the long item");
    }
}
