//! Analyses: pure functions of (trace, device, time window), shared by the GUI and the CLI.
//! Definitions: `../shared/docs/analysis-definitions.md`.

pub mod breakdown;
pub mod gaps;
pub mod intervals;

pub use breakdown::{Breakdown, breakdown};
pub use intervals::Window;
