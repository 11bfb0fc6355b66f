//! Painting one row's items as quads: items wider than `MIN_PX` as themselves, runs of
//! narrower ones folded into one block per `MIN_PX` column, filled by what they hide, and
//! neighbouring blocks that look alike merged, so a zoomed-out frame stays a few hundred
//! quads. Two sources: a row's items (zoomed in) and its level of detail (zoomed out).

use eframe::egui::{Color32, Mesh, Pos2, Rect};

use super::lod::RowLod;
use super::theme::{self, kind_color};
use crate::sorted::{gallop, partition};
use crate::trace::OpKind;
use level::{Busy, round_eighths};

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

/// `t.ceil() as i64` without the libm call.
fn ceil_ns(t: f64) -> i64 {
    let whole = t as i64;
    if (whole as f64) < t { whole + 1 } else { whole }
}

mod level;

pub use level::draw_level;

#[cfg(test)]
mod tests;
