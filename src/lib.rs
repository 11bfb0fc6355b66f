//! nsys-explorer: the window (`ui`), the command line (`cli`), benchmarks and desktop
//! integration, on top of `nsys-explorer-core` (the trace model, the loader and the
//! analyses, re-exported here under their own names).

pub use nsys_explorer_core::{
    analysis, cache, compare, critical_path, export, figures, findings, format, job, load, memory,
    overview, profile, report, session, sorted, summaries, synth, tables, trace, whatif,
};

pub mod bench;
pub mod cli;
pub mod desktop;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub mod huge_pages;
pub mod mcp;
pub mod table_files;
pub mod ui;
