//! Drawing a row from one level of its detail: columns of whole buckets on a grid fixed in
//! time, each summed from its blocks and the time carried into it, painted by
//! [`ColumnPainter`] as quads from the row's bottom, tallest first, their tops held from the
//! left neighbour's.

use super::Eighths;
use super::FoldStyle;
use super::MIN_PX;
use super::add_rect;
use crate::sorted::partition;
use crate::ui::lod::Block;
use crate::ui::lod::Level;
use eframe::egui::Color32;
use eframe::egui::Mesh;
use eframe::egui::Pos2;
use eframe::egui::Rect;

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
pub(super) fn paint_carried(
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
pub(super) struct Busy {
    pub(super) total: i64,
    pub(super) nccl: i64,
    pub(super) memory: i64,
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
pub(super) struct ColumnPainter<'a> {
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
pub(super) fn round_eighths(e: f32) -> u8 {
    ((e + 0.5) as i32).clamp(0, 8) as u8
}

/// How far (in eighths) a column's exact top may stray from its left neighbour's shown
/// top and still be shown there: a share that hovers about a half eighth keeps one height
/// instead of flipping column by column, and the run stays one quad.
pub(super) const HOLD_EIGHTHS: f32 = 0.75;

/// Columns in a segment of the grid: a column's tops are held from its left neighbour's
/// within one, and rounded afresh at the first.
pub(super) const SEGMENT_COLUMNS: i64 = 64;

/// The tops to show for a column with `exact` tops next to one shown at `last`.
pub(super) fn held_tops(exact: [f32; 3], last: [u8; 3]) -> [u8; 3] {
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
