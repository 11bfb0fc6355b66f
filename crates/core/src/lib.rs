//! nsys-explorer's core: Nsight Systems SQLite exports loaded into a compact, immutable
//! trace, and every analysis of it, with no user interface. The layers, each using only
//! those below it (`tests/layers.rs` fails on an import cycle):
//!
//! 1. `format`, `memory`, `profile`, `sorted`, `summaries`: helpers of no layer;
//! 2. `trace`: the model;
//! 3. `load`: SQLite (or a report's export) into the model;
//! 4. `analysis`: what each number means, one module an analysis;
//! 5. `critical_path`, then `overview` (every analysis of a trace, composed);
//! 6. `cache` (models and answers under the user's cache folder), `export` (`.nsys-rep`);
//! 7. `whatif` (the replay), `compare`, `findings`, `figures`, `tables`, `synth`;
//! 8. `report` (text and JSON), and `session`: open and analyse, the one path the
//!    command line, the window, the Python package and the MCP server share; `fuzzing`:
//!    what the fuzz targets run on an input.
//!
//! The window and the command line (the `nsys-explorer` crate) are built on it; that this
//! crate cannot see egui is what keeps the model from ever depending on the UI.

pub mod analysis;
pub mod cache;
pub mod compare;
pub mod critical_path;
pub mod export;
pub mod figures;
pub mod findings;
pub mod format;
pub mod fuzzing;
pub mod job;
pub mod load;
pub mod memory;
pub mod overview;
pub mod profile;
pub mod report;
pub mod session;
pub mod sorted;
pub mod summaries;
pub mod synth;
pub mod tables;
pub mod trace;
pub mod whatif;
