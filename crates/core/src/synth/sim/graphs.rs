//! CUDA graphs in the simulation: a launch's nodes run back to back on the compute stream,
//! stopping at a collective node until the collective ends; the capture's rows recorded at
//! the graph's first launch.

use super::rows::{
    GraphEventRow, GraphExecRow, NodeEventRow, Wait, captured_node, exec_node, exec_of,
};
use super::{COMPUTE_STREAM, LAUNCH_CALL_NS, RankSim, Stop};
use crate::synth::program::KERNELS;

/// A graph launch part-way through its nodes.
pub(super) struct GraphInFlight {
    pub(super) graph: u32,
    pub(super) nodes: &'static [(usize, &'static str)],
    /// The next node to run.
    pub(super) next: usize,
    pub(super) corr: u32,
    pub(super) path: (u32, u8),
    pub(super) first_start: i64,
    pub(super) first_wait: Wait,
}

impl RankSim {
    /// A CUDA graph launch: one `cudaGraphLaunch` call, its kernels back to back on the
    /// compute stream (captured and instantiated at the graph's first launch); stops at a
    /// collective node, the rest run once it has (see [`Self::graph_nodes`]).
    pub(super) fn graph_launch(
        &mut self,
        graph: u32,
        nodes: &'static [(usize, &'static str)],
    ) -> Option<Stop> {
        if !self.captured.contains(&graph) {
            self.captured.push(graph);
            self.capture(graph, nodes);
        }
        let corr = self.next_corr();
        let call_ns = self.jitter(8_000, 0.2);
        let (_, call_end) = self.api("cudaGraphLaunch_v10000", call_ns, corr);
        let ready = call_end + self.launch_latency();
        let path = self.current_path();
        let mut dependency = if self.nccl_separate {
            self.needed_collective_end()
        } else {
            0
        };
        if self.pending_extra_wait > 0 {
            dependency = dependency.max(self.stream_free[0] + self.pending_extra_wait);
            self.pending_extra_wait = 0;
        }
        let (first_start, first_wait) = self.schedule(0, ready, dependency);
        self.synced_since_launch = false;
        self.graph_launches += 1;
        self.graph_in_flight = Some(GraphInFlight {
            graph,
            nodes,
            next: 0,
            corr,
            path,
            first_start,
            first_wait,
        });
        self.graph_nodes()
    }

    /// Runs the nodes of the graph launch in flight back to back on the compute stream,
    /// until a collective node (the rank stops there: the others must reach it) or the
    /// last (the launch's row then written).
    pub(super) fn graph_nodes(&mut self) -> Option<Stop> {
        let mut g = self.graph_in_flight.take()?;
        while g.next < g.nodes.len() {
            let i = g.next;
            g.next += 1;
            let kernel = g.nodes[i].0;
            let (start, wait) = if i == 0 {
                (g.first_start, g.first_wait)
            } else {
                (self.stream_free[0] + self.spacing(), Wait::None)
            };
            if KERNELS[kernel].nccl {
                if self.nccl_calls.is_some() {
                    self.collectives_launched += 1;
                }
                self.pending_nccl = Some((start, g.corr, wait, g.path));
                self.graph_in_flight = Some(g);
                return Some(Stop::AtCollective { start });
            }
            let dur = self.kernel_ns(kernel);
            self.finish_kernel(
                kernel,
                COMPUTE_STREAM,
                start,
                start + dur,
                g.corr,
                wait,
                g.path,
            );
            if let Some(row) = self.rows.kernels.last_mut() {
                row.graph_node = Some((exec_node(g.graph, i), g.graph));
            }
            self.graph_kernels += 1;
        }
        self.rows.graph_execs.push(GraphExecRow {
            start: g.first_start,
            end: self.stream_free[0],
            stream: COMPUTE_STREAM,
            correlation_id: g.corr,
            graph: g.graph,
            exec: exec_of(g.graph),
        });
        None
    }

    /// Stream capture of a graph: each op's NVTX range and launch, recorded but not run;
    /// the graph made and instantiated (its nodes cloned).
    fn capture(&mut self, graph: u32, nodes: &[(usize, &'static str)]) {
        let corr = self.next_corr();
        self.api("cudaStreamBeginCapture_v10000", 3_000, corr);
        for (i, &(_, op)) in nodes.iter().enumerate() {
            self.push_range(op.to_string(), false);
            self.cpu += 6_000;
            let corr = self.next_corr();
            let (start, end) = self.api("cudaLaunchKernel_v7000", LAUNCH_CALL_NS, corr);
            self.rows.node_events.push(NodeEventRow {
                start,
                end,
                node: captured_node(graph, i),
                original: None,
            });
            self.pop_range();
        }
        let corr = self.next_corr();
        let (start, end) = self.api("cudaStreamEndCapture_v10000", 4_000, corr);
        self.rows.graph_events.push(GraphEventRow {
            start,
            end,
            graph,
            exec: None,
        });
        let corr = self.next_corr();
        let (start, end) = self.api("cudaGraphInstantiate_v10000", 200_000, corr);
        self.rows.graph_events.push(GraphEventRow {
            start,
            end,
            graph,
            exec: Some(exec_of(graph)),
        });
        for i in 0..nodes.len() {
            self.rows.node_events.push(NodeEventRow {
                start,
                end,
                node: exec_node(graph, i),
                original: Some(captured_node(graph, i)),
            });
        }
    }
}
