//! What the GUI tests share: a harness on the app, waiting for a load, clicks, and the
//! traces they open.

#![allow(
    dead_code,
    reason = "each test binary uses its own share of the helpers"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use nsys_explorer::synth::{self, Preset, SynthOptions};
use nsys_explorer::ui::{App, State};

use super::common;

pub fn harness(file: Option<&Path>) -> Harness<'static, App> {
    nsys_explorer::cache::set_folder(&common::test_cache_home().join("nsys-explorer"));
    let ctx = eframe::egui::Context::default();
    let app = App::new(file.map(Path::to_path_buf), &ctx, Vec::new());
    Harness::builder()
        .with_size([1400.0, 900.0])
        .build_ui_state(|ui, app: &mut App| app.ui(ui), app)
}

/// Steps the UI until the load and the analyses in flight have ended (or 60 s pass).
pub fn wait_for_load(h: &mut Harness<'static, App>) {
    let start = Instant::now();
    let busy = |state: &State| match state {
        State::Loading { .. } => true,
        State::Loaded(l) => l.busy(),
        _ => false,
    };
    while busy(&h.state().state) && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
        h.step();
    }
    h.run_steps(3);
}

/// The primary button pressed and released at `pos`.
pub fn button_events(pos: eframe::egui::Pos2) -> [eframe::egui::Event; 2] {
    [true, false].map(|pressed| eframe::egui::Event::PointerButton {
        pos,
        button: eframe::egui::PointerButton::Primary,
        pressed,
        modifiers: Default::default(),
    })
}

/// Clicks at `pos` (a frame per event).
pub fn click_at(h: &mut Harness<'static, App>, pos: eframe::egui::Pos2) {
    button_events(pos).into_iter().for_each(|e| h.event(e));
}

/// Clicks twice at `pos` within one frame: the harness gives each queued event a frame of
/// its own, a quarter second apart, too slow for a double click.
pub fn double_click_at(h: &mut Harness<'static, App>, pos: eframe::egui::Pos2) {
    let clicks = [button_events(pos), button_events(pos)];
    h.input_mut().events.extend(clicks.into_iter().flatten());
    h.step();
}

/// A generated tiny trace, loaded and analysed, with its ground truth.
pub fn loaded_tiny(dir: &Path) -> (Harness<'static, App>, synth::GroundTruth) {
    let path = dir.join("tiny.sqlite");
    let truth = synth::generate(&path, SynthOptions::new(Preset::Tiny)).unwrap();
    let mut h = harness(Some(&path));
    wait_for_load(&mut h);
    assert!(loaded(&h).overview.is_some(), "analysed");
    (h, truth)
}

pub fn loaded<'a>(h: &'a Harness<'static, App>) -> &'a nsys_explorer::ui::Loaded {
    match &h.state().state {
        State::Loaded(l) => l,
        _ => panic!("not loaded"),
    }
}

/// Which tab of the bottom panel to click, by its label.
pub const TABS: [&str; 5] = ["Gaps", "Iterations", "Kernels", "NCCL", "Details"];

/// A copy of a real export with its GPU tables dropped: what an export of a run captured
/// without CUDA GPU tracing looks like (API calls, NVTX, no kernels).
pub fn api_only_export(dir: &Path) -> std::path::PathBuf {
    let real = common::real_fixtures()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("2gpu-nccl-flashattn"))
        .unwrap();
    let path = dir.join("api-only.sqlite");
    std::fs::copy(&real, &path).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    for t in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        db.execute(&format!("DROP TABLE {t}"), []).unwrap();
    }
    path
}

/// Clicks the bottom panel's tab named `name` (the Findings tab opens first).
pub fn open_tab(h: &mut Harness<'static, App>, name: &str) {
    use egui_kittest::kittest::Queryable;
    h.get_by_label(name).click();
    h.run_steps(2);
}
