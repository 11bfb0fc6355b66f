//! Every colour the window uses, in one place: kinds of GPU work, device states, CPU rows
//! and the marks laid over the timeline. The marks are chosen unlike any fill: a search
//! mark, the selection and the chosen gap must each read as themselves over any row.

use eframe::egui::Color32;

use crate::analysis::breakdown::State;
use crate::trace::{OpKind, RangeKind};

pub const COMPUTE: Color32 = Color32::from_rgb(76, 140, 220);
pub const NCCL: Color32 = Color32::from_rgb(236, 146, 48);
pub const MEMCPY: Color32 = Color32::from_rgb(170, 110, 200);
pub const MEMSET: Color32 = Color32::from_rgb(140, 90, 170);
/// A CUDA graph's execution recorded whole: compute of unknown kernels, a deeper blue.
pub const GRAPH: Color32 = Color32::from_rgb(40, 95, 190);
pub const OVERLAP: Color32 = Color32::from_rgb(90, 180, 120);
pub const IDLE: Color32 = Color32::from_rgb(200, 70, 70);

/// CUDA API calls: synchronising ones (the CPU waits for the GPU) and the rest.
pub const SYNC_CALL: Color32 = Color32::from_rgb(220, 80, 80);
pub const API_CALL: Color32 = Color32::from_rgb(110, 170, 110);
/// OS runtime calls: blocking ones (read, poll, waits) like synchronising calls, in a
/// lighter red; the rest grey.
pub const OS_BLOCKING_CALL: Color32 = Color32::from_rgb(200, 110, 110);
pub const OS_CALL: Color32 = Color32::from_rgb(140, 140, 150);
/// Folded runs of NVTX ranges and of API calls.
pub const FOLDED_NVTX: Color32 = Color32::from_rgb(120, 130, 160);
pub const FOLDED_API: Color32 = Color32::from_rgb(90, 140, 90);

/// Search matches: a strip on top of their rows.
pub const SEARCH_MARK: Color32 = Color32::from_rgb(255, 70, 220);
/// CPU samples of the frame chosen in the CPU tab, along their thread's row.
pub const SAMPLE_MARK: Color32 = Color32::from_rgb(120, 230, 120);
/// The selected item's outline and its launch arrow.
pub const SELECTION: Color32 = Color32::from_rgb(255, 210, 0);
/// The chosen gap's outline (not the idle overlay's red).
pub const GAP_MARK: Color32 = Color32::from_rgb(0, 220, 255);
/// The chosen iteration's span, outlined on every GPU.
pub const ITERATION_MARK: Color32 = Color32::from_rgb(250, 250, 250);
/// The critical path's line over the rows.
pub const CRITICAL_PATH: Color32 = Color32::from_rgb(255, 214, 10);
/// The straggler, named in the drill-down.
pub const STRAGGLER: Color32 = Color32::from_rgb(230, 90, 60);

pub fn kind_color(kind: OpKind) -> Color32 {
    match kind {
        OpKind::Compute => COMPUTE,
        OpKind::Nccl => NCCL,
        OpKind::Memcpy => MEMCPY,
        OpKind::Memset => MEMSET,
        OpKind::Graph => GRAPH,
    }
}

pub fn state_color(state: State) -> Color32 {
    match state {
        State::ComputeOnly => COMPUTE,
        State::NcclOnly => NCCL,
        State::Overlap => OVERLAP,
        State::MemoryOnly => MEMCPY,
        State::Idle => IDLE,
    }
}

/// One colour per GPU in plots and legends.
pub fn device_color(i: usize) -> Color32 {
    const COLORS: [Color32; 8] = [
        COMPUTE,
        NCCL,
        OVERLAP,
        MEMCPY,
        Color32::from_rgb(200, 180, 60),
        Color32::from_rgb(60, 180, 190),
        Color32::from_rgb(220, 110, 150),
        Color32::from_rgb(140, 140, 140),
    ];
    COLORS[i % COLORS.len()]
}

/// An NVTX range's colour: its own (ARGB) when given, else one per kind. A colour close to
/// a mark's is darkened, so a range never reads as a search match or the selection.
pub fn nvtx_color(argb: u32, kind: RangeKind) -> Color32 {
    if argb == 0 {
        return match kind {
            RangeKind::PushPop => Color32::from_rgb(120, 190, 170),
            RangeKind::StartEnd => Color32::from_rgb(190, 170, 120),
        };
    }
    let [_, r, g, b] = argb.to_be_bytes();
    let color = Color32::from_rgb(r, g, b);
    if [SEARCH_MARK, SELECTION, GAP_MARK]
        .iter()
        .any(|m| distance(*m, color) < 90)
    {
        let dim = |c: u8| (c as f32 * 0.6) as u8;
        Color32::from_rgb(dim(r), dim(g), dim(b))
    } else {
        color
    }
}

/// The largest difference of one channel.
fn distance(a: Color32, b: Color32) -> u8 {
    a.r()
        .abs_diff(b.r())
        .max(a.g().abs_diff(b.g()))
        .max(a.b().abs_diff(b.b()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_nvtx_colour_like_a_mark_is_darkened_and_others_are_kept() {
        let yellow = 0xFF_FF_D8_00;
        let shown = nvtx_color(yellow, RangeKind::PushPop);
        assert!(distance(shown, SELECTION) >= 90, "{shown:?}");
        assert_eq!(
            nvtx_color(0xFF_1F_77_B4, RangeKind::PushPop),
            Color32::from_rgb(0x1F, 0x77, 0xB4)
        );
    }
}
