//! Names drawn inside the boxes wide enough for them, cut short with "…" where they do not
//! fit. A label is baked: its glyphs are copied, as the tessellator would draw them, into
//! a mesh: a row's kept layout, which later frames only shift (`layout_cache`), so a pan
//! costs no text layout; or, for a box cut by the view's edge or a row drawn item by item,
//! the frame's. The rows' boxes and labels are then one mesh, not a text shape a label.

use std::sync::Arc;

use eframe::egui::emath::GuiRounding;
use eframe::egui::epaint::Vertex;
use eframe::egui::{self, Color32, Galley, Mesh, Pos2, Rect, Vec2};

use crate::sorted::partition;

/// Boxes narrower than this get no label.
pub const MIN_WIDTH: f32 = 40.0;
/// Room left of the text and right of it.
const PAD: f32 = 3.0;

/// What a frame needs to draw labels: the plot's painter, the font and its "…".
pub struct Labels {
    painter: egui::Painter,
    font: egui::FontId,
    ellipsis: Arc<Galley>,
    /// The font atlas's size when the frame began: a glyph's texel coordinates divided by
    /// it are its UV, as the tessellator makes them for text shapes.
    atlas: [usize; 2],
}

/// The state of the fonts baked glyphs depend on: the atlas's size (its UVs), the scale,
/// and the identity of the "…" layout, which egui makes anew when it drops its text
/// layouts (a rebuilt atlas).
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub struct FontsKey {
    atlas: [usize; 2],
    pixels_per_point: u32,
    ellipsis: usize,
}

/// How much of a laid-out text fits its room.
enum Fit {
    Whole,
    /// The first `glyphs` glyphs, ending at `x`, then "…".
    Cut {
        glyphs: usize,
        x: f32,
    },
    Nothing,
}

impl Labels {
    pub fn new(painter: &egui::Painter) -> Self {
        let font = egui::FontId::proportional(11.0);
        let ellipsis = painter.layout_no_wrap("…".into(), font.clone(), Color32::BLACK);
        let atlas = painter.ctx().fonts(|f| f.font_image_size());
        Self {
            painter: painter.clone(),
            font,
            ellipsis,
            atlas,
        }
    }

    pub fn fonts_key(&self) -> FontsKey {
        FontsKey {
            atlas: self.painter.ctx().fonts(|f| f.font_image_size()),
            pixels_per_point: self.painter.pixels_per_point().to_bits(),
            ellipsis: Arc::as_ptr(&self.ellipsis) as usize,
        }
    }

    pub fn pixels_per_point(&self) -> f32 {
        self.painter.pixels_per_point()
    }

    /// Keeps the glyphs in `text`, baked this frame, pointing at their texels if laying
    /// text out grew the font atlas since the frame began: the tessellator divides by the
    /// size the atlas has at the end of the frame. Plain quads in `text` keep their UV, the
    /// atlas's white texel at (0, 0). (The next frame's `fonts_key` differs then, so the
    /// layouts baked before are dropped.)
    pub fn follow_atlas_growth(&self, text: &mut Mesh) {
        let now = self.painter.ctx().fonts(|f| f.font_image_size());
        if now != self.atlas {
            let ratio = Vec2::new(
                self.atlas[0] as f32 / now[0] as f32,
                self.atlas[1] as f32 / now[1] as f32,
            );
            for v in &mut text.vertices {
                v.uv = (v.uv.to_vec2() * ratio).to_pos2();
            }
        }
    }

    /// Appends the glyphs of `name` in `r` to `out`, as the tessellator would draw them at a
    /// whole pixel: those that fit, then "…" if it was cut. The name is laid out whole
    /// (what its width can show of it), whatever the room: egui keeps a layout while it is
    /// used each frame, where laying it out to each new width cost ~5 µs a label on every
    /// zoom step.
    pub fn bake(&self, r: Rect, name: &str, out: &mut Mesh) {
        if r.width() <= MIN_WIDTH {
            return;
        }
        let (galley, pos) = self.lay_out(r, name);
        let pos = pos.round_to_pixels(self.painter.pixels_per_point());
        match self.fit(&galley, r) {
            Fit::Whole => self.append_glyphs(&galley, usize::MAX, pos, out),
            Fit::Cut { glyphs, x } => {
                self.append_glyphs(&galley, glyphs, pos, out);
                let after =
                    (pos + Vec2::new(x, 0.0)).round_to_pixels(self.painter.pixels_per_point());
                self.append_glyphs(&self.ellipsis, usize::MAX, after, out);
            }
            Fit::Nothing => {}
        }
    }

    fn lay_out(&self, r: Rect, name: &str) -> (Arc<Galley>, Pos2) {
        let text = label_text(name, r.width());
        let galley = self
            .painter
            .layout_no_wrap(text, self.font.clone(), Color32::BLACK);
        let pos = Pos2::new(r.left() + PAD, r.center().y - galley.size().y / 2.0);
        (galley, pos)
    }

    fn fit(&self, galley: &Galley, r: Rect) -> Fit {
        let room = r.width() - 2.0 * PAD;
        if galley.size().x <= room {
            return Fit::Whole;
        }
        // The right edge of the last glyph that leaves room for the "…".
        let fits = room - self.ellipsis.size().x;
        let glyphs = galley
            .rows
            .first()
            .map_or(&[][..], |row| &row.row.glyphs[..]);
        let count = glyphs.iter().take_while(|g| g.max_x() <= fits).count();
        match count {
            0 => Fit::Nothing,
            n => Fit::Cut {
                glyphs: n,
                x: glyphs[n - 1].max_x(),
            },
        }
    }

    /// The vertices of the first `glyphs` glyphs of a one-line galley placed at `pos`.
    fn append_glyphs(&self, galley: &Galley, glyphs: usize, pos: Pos2, out: &mut Mesh) {
        let uv_scale = Vec2::new(1.0 / self.atlas[0] as f32, 1.0 / self.atlas[1] as f32);
        for row in &galley.rows {
            let mesh = &row.visuals.mesh;
            // A glyph without pixels has no vertices and shares the next one's first.
            let vertices = row
                .glyphs
                .get(glyphs)
                .map_or(mesh.vertices.len(), |g| g.first_vertex as usize);
            let base = out.vertices.len() as u32;
            // Glyphs' triangles come in the order of their vertices.
            let triangles = &mesh.indices;
            let kept = partition(triangles.len() / 3, |t| {
                triangles[3 * t..3 * t + 3]
                    .iter()
                    .all(|&k| (k as usize) < vertices)
            });
            out.indices
                .extend(triangles[..3 * kept].iter().map(|&k| k + base));
            let origin = pos + row.pos.to_vec2();
            out.vertices
                .extend(mesh.vertices[..vertices].iter().map(|v| Vertex {
                    pos: origin + v.pos.to_vec2(),
                    uv: (v.uv.to_vec2() * uv_scale).to_pos2(),
                    color: v.color,
                }));
        }
    }
}

/// As much of `name` as a label `width` px wide can show (no glyph is under 4 px), in steps
/// of 8 characters so a label keeps its laid-out text while the view pans: the glyphs of a
/// long kernel name past the label's edge were laid out and tessellated for nothing. A cut
/// name ends in "…".
fn label_text(name: &str, width: f32) -> String {
    let fits = ((width / 4.0) as usize).div_ceil(8) * 8;
    match name.char_indices().nth(fits) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_keeps_what_its_width_can_show_in_steps_of_eight_characters() {
        let name = "ampere_sgemm_128x64_tn_splitK_with_a_long_tail";
        assert_eq!(label_text(name, 41.0), format!("{}…", &name[..16]));
        let panned = label_text(name, 60.0);
        assert_eq!(panned, label_text(name, 41.0), "same text while it pans");
        assert_eq!(label_text(name, 400.0), name);
        assert_eq!(label_text(&"é".repeat(40), 41.0), "é".repeat(16) + "…");
    }

    /// Runs one frame with `Labels` for a label `width` px wide at (10, 10); returns the
    /// context, the shapes the frame painted and what `draw` returned.
    fn frame<R>(
        width: f32,
        pixels_per_point: f32,
        draw: impl FnOnce(&Labels, Rect) -> R,
    ) -> (egui::Context, Vec<egui::epaint::ClippedShape>, R) {
        let ctx = egui::Context::default();
        ctx.set_pixels_per_point(pixels_per_point);
        let (mut draw, mut result) = (Some(draw), None);
        let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
            let labels = Labels::new(ui.painter());
            let r = Rect::from_min_max(Pos2::new(10.0, 10.0), Pos2::new(10.0 + width, 26.0));
            result = draw.take().map(|draw| draw(&labels, r));
        });
        output.textures_delta.clear();
        (ctx, output.shapes, result.expect("the frame ran"))
    }

    /// The label as painted by egui's own means: the text laid out whole under a clip at
    /// the last glyph that leaves room for "…", then the "…".
    fn paint_reference(labels: &Labels, r: Rect, name: &str) {
        let (galley, pos) = labels.lay_out(r, name);
        match labels.fit(&galley, r) {
            Fit::Whole => labels.painter.galley(pos, galley, Color32::BLACK),
            Fit::Cut { x, .. } => {
                let clip = Rect::from_x_y_ranges(pos.x..=pos.x + x, r.y_range());
                labels
                    .painter
                    .with_clip_rect(clip)
                    .galley(pos, galley, Color32::BLACK);
                let ellipsis = labels.ellipsis.clone();
                labels
                    .painter
                    .galley(pos + Vec2::new(x, 0.0), ellipsis, Color32::BLACK);
            }
            Fit::Nothing => {}
        }
    }

    /// A baked label is the mesh the tessellator makes of the painted one, minus the glyphs
    /// the clip would hide: the same vertices, on whole pixels, within the label's room,
    /// even when the font atlas grows after the bake.
    #[test]
    fn a_baked_label_is_the_painted_one_without_the_glyphs_its_clip_hides() {
        let (_, _, narrow) = frame(MIN_WIDTH, 1.0, |labels, r| {
            let mut baked = Mesh::default();
            labels.bake(r, "gemm", &mut baked);
            baked
        });
        assert!(narrow.is_empty(), "no label in a box {MIN_WIDTH} px wide");
        // The glyph quads the tessellator makes of painted labels, and those of them
        // wholly inside their clips.
        let tessellated = |ctx: egui::Context, shapes, pixels_per_point| {
            let (mut all, mut inside) = (Vec::new(), Vec::new());
            for p in ctx.tessellate(shapes, pixels_per_point) {
                if let egui::epaint::Primitive::Mesh(m) = p.primitive {
                    for q in m.vertices.chunks_exact(4) {
                        if q.iter().all(|v| p.clip_rect.contains(v.pos)) {
                            inside.push(q.to_vec());
                        }
                        all.push(q.to_vec());
                    }
                }
            }
            (all, inside)
        };
        for (name, width, ppp) in [
            ("ampere_sgemm_128x64_tn_splitK_with_a_long_tail", 60.0, 1.0),
            ("gemm", 60.0, 1.0),
            ("nccl", 41.0, 1.0),
            ("ampere_sgemm_128x64_tn_splitK_with_a_long_tail", 60.0, 1.5),
            ("gemm", 60.0, 2.0),
        ] {
            let (ctx, shapes, baked) = frame(width, ppp, |labels, r| {
                assert_eq!(labels.pixels_per_point(), ppp);
                let mut baked = Mesh::default();
                labels.bake(r, name, &mut baked);
                paint_reference(labels, r, name);
                // Text laid out after the bake, in the same frame, grows the atlas.
                let big = egui::FontId::proportional(120.0);
                let _ = labels
                    .painter
                    .layout_no_wrap(name.repeat(2), big, Color32::BLACK);
                assert_ne!(
                    labels.atlas,
                    labels.painter.ctx().fonts(|f| f.font_image_size())
                );
                labels.follow_atlas_growth(&mut baked);
                baked
            });
            assert!(!baked.vertices.is_empty(), "{name} in {width} px");
            assert_eq!(
                baked.indices.len() * 2,
                baked.vertices.len() * 3,
                "two triangles a glyph"
            );
            for v in &baked.vertices {
                let physical = v.pos.to_vec2() * ppp;
                let off_grid = (physical - physical.round()).length();
                assert!(
                    off_grid < 1e-3,
                    "{name} at {ppp}: {physical:?}, not whole pixels"
                );
                assert!(
                    v.pos.x >= 10.0 && v.pos.x <= 10.0 + width,
                    "{name}: {:?}",
                    v.pos
                );
            }
            // Every glyph the clip lets through whole, at the same place with the same
            // texels; and nothing but painted glyphs (one the clip cuts may be baked whole).
            let (all, inside) = tessellated(ctx, shapes, ppp);
            let baked: Vec<_> = baked.vertices.chunks_exact(4).collect();
            for q in &inside {
                assert!(baked.contains(&&q[..]), "{name}: {q:?} not baked");
            }
            for q in &baked {
                assert!(all.contains(&q.to_vec()), "{name}: {q:?} not painted");
            }
            // The glyphs past the clip are left out.
            assert!(baked.len() <= inside.len() + 1, "{name} in {width} px");
            if name.len() > 10 {
                assert!(
                    (4..=16).contains(&baked.len()),
                    "cut: {} quads",
                    baked.len()
                );
            }
        }
    }
}
