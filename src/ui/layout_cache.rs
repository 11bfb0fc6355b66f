//! Zoomed-out rows' quads and labels kept from frame to frame. Drawn from its level of
//! detail, a row depends only on the scale (ns per pixel) and its height: its columns lie
//! on a grid fixed in time. A frame that pans or only repaints (hover, a click in a panel)
//! shifts the quads and label glyphs laid out before instead of walking the row's blocks
//! and laying text out again, so its cost no longer depends on how full the rows are. A
//! zoom lays the rows out afresh.

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Range;

use eframe::egui::epaint::Vertex;
use eframe::egui::{Color32, Mesh, Pos2, Rect, Vec2};

/// Lays a row out: (time span, the rect it spans from x = 0, mesh, report of an item drawn
/// as itself).
pub type LayOut<'a> = dyn FnMut((f64, f64), Rect, &mut Mesh, &mut dyn FnMut(usize, Rect)) + 'a;
/// Appends the glyphs of item `i`'s label, for its rect, to a mesh.
pub type BakeLabel<'a> = dyn FnMut(usize, Rect, &mut Mesh) + 'a;

/// What the rows add to a frame: one mesh, each row's quads then its labels' glyphs (a
/// row's labels lie on its own quads only), and how many quads.
#[derive(Default)]
pub struct RowMesh {
    pub mesh: Mesh,
    pub quads: usize,
}

pub struct LayoutCache<K> {
    rows: HashMap<K, Layout>,
}

impl<K> Default for LayoutCache<K> {
    fn default() -> Self {
        Self {
            rows: HashMap::new(),
        }
    }
}

/// One row laid out at one scale, from x = 0 and y = 0.
#[derive(Default)]
struct Layout {
    ns_per_px: f64,
    height: f32,
    /// The time range laid out.
    span: (f64, f64),
    /// What `lay_out` drew, quads only (four vertices each, `Mesh::add_colored_rect`).
    drawn: Mesh,
    /// The same quads by top edge, tallest first as they overlap and were painted (see
    /// `fold::ColumnPainter`), then by left edge: in each run of one top, the ones in view
    /// are one run of them. A frame makes their vertices from these (a fifth of the bytes
    /// to read of copying the mesh's).
    quads: Vec<(Rect, Color32)>,
    /// Where each run of quads with one top ends.
    run_ends: Vec<usize>,
    /// Each quad's left edge, and the furthest right edge up to it in its run: a frame
    /// finds the quads in view by two binary searches per run.
    lefts: Vec<f32>,
    reach: Vec<f32>,
    /// Items drawn as themselves, with their labels' glyphs in `text`.
    items: Vec<Item>,
    text: Mesh,
}

struct Item {
    index: usize,
    rect: Rect,
    vertices: Range<usize>,
    indices: Range<usize>,
}

impl Layout {
    fn sort_quads(&mut self) {
        // add_colored_rect's vertex order: left-top, right-top, left-bottom, right-bottom.
        let corners = self.drawn.vertices.chunks_exact(4);
        self.quads.clear();
        self.quads
            .extend(corners.map(|q| (Rect::from_min_max(q[0].pos, q[3].pos), q[0].color)));
        // Stable: quads at the same place keep the order they were painted in.
        self.quads.sort_by(|a, b| {
            (a.0.min.y.total_cmp(&b.0.min.y)).then(a.0.min.x.total_cmp(&b.0.min.x))
        });
        self.run_ends.clear();
        self.lefts.clear();
        self.reach.clear();
        let mut furthest = f32::NEG_INFINITY;
        for (k, (rect, _)) in self.quads.iter().enumerate() {
            if k > 0 && rect.min.y != self.quads[k - 1].0.min.y {
                self.run_ends.push(k);
                furthest = f32::NEG_INFINITY;
            }
            furthest = furthest.max(rect.max.x);
            self.lefts.push(rect.min.x);
            self.reach.push(furthest);
        }
        self.run_ends.push(self.quads.len());
    }

    fn fits(&self, ns_per_px: f64, height: f32) -> bool {
        // A pan moves both ends of the view by the same amount, which can change its
        // length in the last bits.
        (self.ns_per_px - ns_per_px).abs() <= ns_per_px * 1e-9 && self.height == height
    }
}

/// Layouts of this many view widths on each side of the view, made when a frame pans past
/// the last one: the next frames of a drag fall inside it.
const PAN_MARGIN: f64 = 0.5;

impl<K: Hash + Eq + Copy> LayoutCache<K> {
    /// Forgets every layout (the fonts their labels were baked with changed).
    pub fn clear(&mut self) {
        self.rows.clear();
    }

    /// Draws row `key` for `view` into `r`, laying it out first with `lay_out` (labels with
    /// `bake_label`) unless a layout at this scale covers the view. Adds its quads and the
    /// labels of items wholly in view to `out`; reports the items cut by the view's edges,
    /// clipped, to `on_item` with `out.mesh` for their labels. Quads are not clipped: the
    /// painter's clip is the plot's.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &mut self,
        key: K,
        view: (f64, f64),
        r: Rect,
        pixels_per_point: f32,
        lay_out: &mut LayOut,
        bake_label: &mut BakeLabel,
        out: &mut RowMesh,
        mut on_item: impl FnMut(usize, Rect, &mut Mesh),
    ) {
        let ns_per_px = (view.1 - view.0) / r.width() as f64;
        let last = self.rows.get(&key);
        let covers = |l: &Layout| l.span.0 <= view.0 && view.1 <= l.span.1;
        if !last.is_some_and(|l| l.fits(ns_per_px, r.height()) && covers(l)) {
            let panned = last.is_some_and(|l| l.fits(ns_per_px, r.height()));
            let margin = if panned { PAN_MARGIN } else { 0.0 } * (view.1 - view.0);
            let span = (view.0 - margin, view.1 + margin);
            let width = ((span.1 - span.0) / ns_per_px) as f32;
            // The last layout's buffers, so a zoom does not grow fresh ones quad by quad.
            let mut layout = self.rows.remove(&key).unwrap_or_default();
            clear_keeping_memory(&mut layout.drawn);
            clear_keeping_memory(&mut layout.text);
            layout.items.clear();
            (layout.ns_per_px, layout.height, layout.span) = (ns_per_px, r.height(), span);
            let at_origin = Rect::from_min_size(Pos2::ZERO, Vec2::new(width, r.height()));
            let (text, items) = (&mut layout.text, &mut layout.items);
            lay_out(span, at_origin, &mut layout.drawn, &mut |index, rect| {
                let (v, i) = (text.vertices.len(), text.indices.len());
                bake_label(index, rect, text);
                items.push(Item {
                    index,
                    rect,
                    vertices: v..text.vertices.len(),
                    indices: i..text.indices.len(),
                });
            });
            layout.sort_quads();
            self.rows.insert(key, layout);
        }
        let layout = &self.rows[&key];
        let shift = Vec2::new(
            r.left() + ((layout.span.0 - view.0) / ns_per_px) as f32,
            r.top(),
        );
        let (left, right) = (r.left() - shift.x, r.right() - shift.x);
        let mut run_start = 0;
        for &run_end in &layout.run_ends {
            let run = run_start..run_end;
            run_start = run_end;
            let first = run.start + layout.reach[run.clone()].partition_point(|&x| x <= left);
            let end = run.start + layout.lefts[run].partition_point(|&x| x < right);
            let quads = &layout.quads[first..end.max(first)];
            out.mesh.reserve_vertices(4 * quads.len());
            out.mesh.reserve_triangles(2 * quads.len());
            for &(rect, color) in quads {
                out.mesh.add_colored_rect(rect.translate(shift), color);
            }
            out.quads += quads.len();
        }
        // Text stays on whole pixels, as the tessellator puts it.
        let text_shift = (shift * pixels_per_point).round() / pixels_per_point;
        for item in &layout.items {
            let moved = item.rect.translate(shift);
            let shown = moved.intersect(r);
            // Only the view's left and right edges cut an item (its height is the row's).
            if moved.x_range() == shown.x_range() {
                let (v, i) = (item.vertices.clone(), item.indices.clone());
                append_shifted(&layout.text, v, i, text_shift, &mut out.mesh);
            } else if shown.width() > 0.0 {
                on_item(item.index, shown, &mut out.mesh);
            }
        }
    }
}

/// Empties `mesh` and keeps its memory for the next fill (epaint 0.37's `Mesh::clear`
/// drops the vertices' buffer).
pub fn clear_keeping_memory(mesh: &mut Mesh) {
    mesh.vertices.clear();
    mesh.indices.clear();
}

/// Appends `vertices` of `mesh`, moved by `shift`, and the triangles in `indices` (which
/// use only those vertices).
fn append_shifted(
    mesh: &Mesh,
    vertices: Range<usize>,
    indices: Range<usize>,
    shift: Vec2,
    out: &mut Mesh,
) {
    let offset = out.vertices.len() as u32;
    let first = vertices.start as u32;
    out.indices
        .extend(mesh.indices[indices].iter().map(|&k| k - first + offset));
    out.vertices
        .extend(mesh.vertices[vertices].iter().map(|v| Vertex {
            pos: v.pos + shift,
            ..*v
        }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of 1 ns items every 10 ns (a quad per 10 ns, as `fold` would give); counts
    /// how many times it was laid out.
    fn lay_out_counting(count: &mut usize) -> Box<LayOut<'_>> {
        Box::new(
            move |span, r: Rect, mesh: &mut Mesh, on_item: &mut dyn FnMut(usize, Rect)| {
                *count += 1;
                let px_per_ns = r.width() as f64 / (span.1 - span.0);
                let first = (span.0 / 10.0).ceil() as i64;
                for k in first.. {
                    let t = (k * 10) as f64;
                    if t >= span.1 {
                        break;
                    }
                    let x = ((t - span.0) * px_per_ns) as f32;
                    let rect =
                        Rect::from_min_max(Pos2::new(x, 0.0), Pos2::new(x + 1.0, r.height()));
                    mesh.add_colored_rect(rect, Color32::RED);
                    on_item(k as usize, rect);
                }
            },
        )
    }

    /// Draws the row into a 100 × 10 px rect at (100, 50); returns the left edges of its
    /// quads, those of its baked labels (a quad each) and the items cut by the view.
    fn draw(
        cache: &mut LayoutCache<u8>,
        lay_out: &mut LayOut,
        view: (f64, f64),
    ) -> (Vec<f32>, Vec<f32>, Vec<usize>) {
        let r = Rect::from_min_max(Pos2::new(100.0, 50.0), Pos2::new(200.0, 60.0));
        let mut bake = |_, rect, text: &mut Mesh| text.add_colored_rect(rect, Color32::BLACK);
        let (mut out, mut cut) = (RowMesh::default(), Vec::new());
        cache.draw(1, view, r, 1.0, lay_out, &mut bake, &mut out, |i, _, _| {
            cut.push(i)
        });
        // The row's quads (red), then its labels (black).
        let quads = out.mesh.vertices.chunks(4);
        let (boxes, labels): (Vec<_>, Vec<_>) = quads.partition(|q| q[0].color == Color32::RED);
        assert_eq!(out.quads, boxes.len());
        assert!(labels.iter().all(|q| q[0].color == Color32::BLACK));
        let lefts = |q: Vec<&[Vertex]>| q.iter().map(|q| q[0].pos.x).collect();
        (lefts(boxes), lefts(labels), cut)
    }

    #[test]
    fn a_pan_reuses_the_layout_shifted_and_a_zoom_lays_out_again() {
        let mut count = 0;
        let mut lay_out = lay_out_counting(&mut count);
        let mut cache = LayoutCache::default();
        // 100 px for 1000 ns: an item every 10 ns is one every pixel.
        let (lefts, labels, cut) = draw(&mut cache, &mut lay_out, (0.0, 1000.0));
        assert_eq!((lefts.len(), labels.len(), cut.len()), (100, 100, 0));
        assert_eq!(lefts[3], 103.0);
        assert_eq!(labels[3], 103.0);
        // The first pan lays out half a view more each side; the next ones reuse it.
        for step in 1..=5 {
            let d = 20.0 * step as f64;
            let (lefts, labels, cut) = draw(&mut cache, &mut lay_out, (d, 1000.0 + d));
            assert!((lefts[0] - 100.0).abs() < 1e-3, "{lefts:?}");
            assert_eq!(lefts.len(), 100, "at {d} ns");
            assert_eq!(labels.first(), Some(&100.0), "at {d} ns");
            assert_eq!((labels.len(), cut.len()), (100, 0), "at {d} ns");
        }
        // Still inside what the first pan laid out. Half a pixel on: the items at each end
        // are cut by the view's edges, their labels painted for the frame, not baked.
        let (_, labels, cut) = draw(&mut cache, &mut lay_out, (105.0, 1105.0));
        assert_eq!(cut, [10, 110]);
        assert_eq!(labels.len(), 99);
        // Text stays on whole pixels: the item at 110 ns is at 100.5 px.
        assert_eq!(labels[0], 101.0);
        // Zoomed in 2×: an item every 2 px, the first at 10 ns.
        let (lefts, _, _) = draw(&mut cache, &mut lay_out, (5.0, 505.0));
        assert!((lefts[0] - 101.0).abs() < 1e-3, "{lefts:?}");
        assert!((lefts[1] - 103.0).abs() < 1e-3, "{lefts:?}");
        drop(lay_out);
        assert_eq!(count, 3, "laid out: first frame, first pan, zoom");
    }

    #[test]
    fn a_mesh_emptied_for_the_next_frame_keeps_its_memory() {
        let mut mesh = Mesh::default();
        for k in 0..100 {
            let x = k as f32;
            mesh.add_colored_rect(
                Rect::from_min_max(Pos2::new(x, 0.0), Pos2::new(x + 1.0, 1.0)),
                Color32::RED,
            );
        }
        let capacity = (mesh.vertices.capacity(), mesh.indices.capacity());
        clear_keeping_memory(&mut mesh);
        assert!(mesh.is_empty());
        assert_eq!(
            (mesh.vertices.capacity(), mesh.indices.capacity()),
            capacity
        );
    }

    /// Which colour covers each pixel's centre of `r`, row by row.
    fn raster(mesh: &Mesh, r: Rect) -> Vec<Option<Color32>> {
        let (w, h) = (r.width() as usize, r.height() as usize);
        let mut pixels = vec![None; w * h];
        // Pixels whose centre lies in [a, b).
        let centres_in = |a: f32, b: f32, n: usize| {
            let first = |v: f32| ((v - 0.5).ceil().max(0.0) as usize).min(n);
            first(a)..first(b)
        };
        for q in mesh.vertices.chunks_exact(4) {
            let (min, max) = (q[0].pos - r.min, q[3].pos - r.min);
            for y in centres_in(min.y, max.y, h) {
                for x in centres_in(min.x, max.x, w) {
                    pixels[y * w + x] = Some(q[0].color);
                }
            }
        }
        pixels
    }

    #[test]
    fn a_row_drawn_from_a_layout_made_before_a_pan_looks_as_if_drawn_afresh() {
        use crate::ui::fold::{FoldStyle, draw_level};
        use crate::ui::lod::RowLod;
        // A steady row with irregular items: 0.2–3 µs long, every ~4 µs, some NCCL, some
        // of them long (drawn as themselves when zoomed in enough).
        let mut starts = Vec::new();
        let mut t = 0i64;
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut ends = Vec::new();
        for _ in 0..200_000 {
            let long = next(500) == 0;
            let len = if long {
                2_000_000
            } else {
                200 + next(2_800) as i64
            };
            starts.push(t);
            ends.push(t + len);
            t += len + 500 + next(2_000) as i64;
        }
        let lod = RowLod::new(
            starts.len(),
            |i| starts[i],
            |i| ends[i],
            |i| (i % 5 == 0, i % 7 == 0),
            (0, t),
        );
        let r = Rect::from_min_max(Pos2::new(200.0, 40.0), Pos2::new(1100.0, 56.0));
        let mut cache = LayoutCache::default();
        for width in [t as f64, t as f64 / 40.0, t as f64 / 200.0] {
            let fold_ns = width / r.width() as f64 * crate::ui::fold::MIN_PX as f64;
            let level = lod
                .level_for(fold_ns)
                .expect("zoomed out past the finest level");
            let mut lay_out = |span, r, mesh: &mut Mesh, on_item: &mut dyn FnMut(usize, Rect)| {
                let style = FoldStyle::ByKind;
                draw_level(
                    level,
                    span,
                    r,
                    style,
                    |_| Color32::WHITE,
                    on_item,
                    mesh,
                    &mut 0,
                )
            };
            // Drag across a third of the trace, 7 px a frame.
            let mut view = (t as f64 / 3.0, t as f64 / 3.0 + width);
            for frame in 0..60 {
                let (mut cached, mut fresh) = (RowMesh::default(), Mesh::default());
                let mut bake = |_, _, _: &mut Mesh| {};
                cache.draw(
                    1u8,
                    view,
                    r,
                    1.0,
                    &mut lay_out,
                    &mut bake,
                    &mut cached,
                    |_, _, _| {},
                );
                draw_level(
                    level,
                    view,
                    r,
                    FoldStyle::ByKind,
                    |_| Color32::WHITE,
                    |_, _| {},
                    &mut fresh,
                    &mut 0,
                );
                let (cached, fresh) = (raster(&cached.mesh, r), raster(&fresh, r));
                // (x, y) of the pixels that differ.
                let differ: Vec<_> = (0..cached.len())
                    .filter(|&k| cached[k] != fresh[k])
                    .map(|k| (k % 900, k / 900))
                    .collect();
                assert!(differ.is_empty(), "frame {frame} at {width} ns: {differ:?}");
                let d = 7.0 * width / r.width() as f64;
                view = (view.0 + d, view.1 + d);
            }
        }
    }
}
