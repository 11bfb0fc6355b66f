//! Analyses: pure functions of (trace, device, time window), shared by the GUI and the CLI.
//! Definitions: `../shared/docs/analysis-definitions.md`.

pub mod arrivals;
pub mod breakdown;
pub mod capture_use;
pub mod cpu_samples;
pub mod cpu_sync;
pub mod drilldown;
pub mod gaps;
pub mod gpu_metrics;
pub mod graphs;
pub mod intervals;
pub mod iterations;
pub mod memory;
pub mod memory_usage;
pub mod nccl_payload;
pub mod nccl_sizes;
pub mod nccl_wait;
pub mod nvtx_gpu;
pub mod recurring;
pub mod summary;

pub use breakdown::{Breakdown, SameStream, breakdown, same_stream};
pub use intervals::Window;
