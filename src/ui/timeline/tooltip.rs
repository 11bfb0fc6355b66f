//! What lies under the pointer, and its tooltip.

use crate::analysis::gaps::OpRef;
use crate::format::format_ns_at;
use crate::sorted::partition;
use crate::trace::{OpKind, Trace};

/// `resolution_ns`: what a pixel of the view spans, so that times read with the precision
/// of the zoom.
pub(super) fn op_tooltip(
    trace: &Trace,
    device: usize,
    stream: usize,
    i: usize,
    origin: i64,
    resolution_ns: f64,
) -> String {
    let dev = &trace.devices[device];
    let ops = &dev.streams[stream].ops;
    let mut text = format!(
        "{}\n{}  start {}  duration {}\nGPU {} stream {}",
        trace.strings.get(ops.name[i]),
        ops.kind[i].label(),
        format_ns_at(ops.start[i] - origin, resolution_ns),
        format_ns_at(ops.duration(i), resolution_ns),
        dev.id,
        dev.streams[stream].id
    );
    if ops.kind[i] == OpKind::Graph {
        text += &format!(
            "\nexecutable graph {}: its kernels were not recorded (nsys --cuda-graph-trace=graph, the default); profile with --cuda-graph-trace=node to see them",
            ops.detail[i]
        );
    }
    if ops.kind[i].is_kernel()
        && let Some(Ok(c)) = nsys_explorer_core::load::launch_config(trace, dev, ops, i)
    {
        text += &format!("\ngrid {:?} block {:?}", c.grid, c.block);
        if let Some(node) = c.graph_node {
            let path = nsys_explorer_core::load::captured_nvtx(trace, &c);
            text += &format!("\nCUDA graph node {node}");
            if !path.is_empty() {
                text += &format!(", captured in {}", path.join(" > "));
            }
        }
    }
    let path = crate::analysis::gaps::launch_nvtx_path(
        trace,
        dev,
        OpRef {
            stream: stream as u32,
            op: i as u32,
        },
    );
    if !path.is_empty() {
        let names: Vec<_> = path.iter().map(|id| trace.strings.get(*id)).collect();
        text += &format!("\nNVTX {}", names.join(" > "));
    }
    text
}

pub(super) fn item_at(
    starts: &[i64],
    ends: &[i64],
    longest: i64,
    t: f64,
    slack: f64,
) -> Option<usize> {
    item_at_by(
        starts.len(),
        &|i| starts[i],
        &|i| ends[i],
        longest,
        t,
        slack,
    )
}

/// The item under time `t` (within `slack`, the time of a few pixels), the closest by start.
pub(super) fn item_at_by(
    n: usize,
    start: &dyn Fn(usize) -> i64,
    end: &dyn Fn(usize) -> i64,
    longest: i64,
    t: f64,
    slack: f64,
) -> Option<usize> {
    let hi = partition(n, |k| (start(k) as f64) <= t + slack);
    let lo = partition(n, |k| (start(k) as f64) < t - slack - longest as f64);
    (lo..hi)
        .rev()
        .take(64)
        .find(|&k| (start(k) as f64) - slack <= t && (end(k) as f64) + slack >= t)
}
