//! nsys-explorer's core: Nsight Systems SQLite exports loaded into a compact, immutable
//! trace, and every analysis of it, with no user interface. Data flows one way:
//! `load` → `trace` → `analysis` → `report` (text and JSON). The window and the command
//! line (the `nsys-explorer` crate) are built on it; that this crate cannot see egui is
//! what keeps the model from ever depending on the UI.

pub mod analysis;
pub mod cache;
pub mod compare;
pub mod critical_path;
pub mod export;
pub mod figures;
pub mod findings;
pub mod format;
pub mod load;
pub mod memory;
pub mod profile;
pub mod report;
pub mod sorted;
pub mod summaries;
pub mod synth;
pub mod tables;
pub mod trace;
pub mod whatif;
