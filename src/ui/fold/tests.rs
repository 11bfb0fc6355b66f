use super::super::lod::RowLod;
use super::*;
use eframe::egui::epaint::Vertex;

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
