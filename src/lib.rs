//! nsys-explorer: load Nsight Systems SQLite exports into a compact in-memory trace,
//! analyse it, and show it. Data flows one way: `load` → `trace` → (analyses) → `ui`/`cli`.

pub mod analysis;
pub mod bench;
pub mod cli;
pub mod desktop;
pub mod load;
pub mod memory;
pub mod report;
pub mod synth;
pub mod trace;
pub mod ui;
