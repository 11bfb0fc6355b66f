//! Commands that move the timeline or mark things on it. Panels send these instead of
//! writing the timeline's fields, so every change of view goes through one place
//! ([`Timeline::apply`]) — and a second timeline (a compared run) can follow the same ones.

use super::{Overlay, Timeline};
use crate::analysis::gaps::Gap;
use crate::trace::{DeviceIndex, Trace};

/// How much room to leave around a span zoomed to, as a share of its length on each side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Margin {
    /// An iteration: nearly exactly its span (2 %), so neighbouring steps stay out.
    Tight,
    /// Its length again on each side: the interval and what came before and after.
    Context,
    /// Twice its length on each side: a short gap needs its neighbours to be read.
    Wide,
}

impl Margin {
    pub fn share(self) -> f64 {
        match self {
            Margin::Tight => 0.02,
            Margin::Context => 1.0,
            Margin::Wide => 2.0,
        }
    }
}

/// One change to the timeline.
pub enum Nav {
    /// The whole trace in view.
    Fit,
    /// `[start, end]` in view with `margin` around it (cut at the trace's ends).
    ZoomTo {
        start: i64,
        end: i64,
        margin: Margin,
    },
    /// Widens the view by its length on both sides (keeping its middle).
    Widen,
    /// GPU `device` (an index) unfolded and scrolled into view.
    RevealDevice(DeviceIndex),
    /// A gap zoomed to with its neighbours, outlined on its GPU's rows and named in Details.
    ShowGap(Gap),
    /// A span of one GPU outlined (device index, start, end), or none; the view stays.
    Highlight(Option<(DeviceIndex, i64, i64)>),
    /// An iteration's span on each GPU outlined: (device index, start, end).
    MarkIteration(Vec<(DeviceIndex, i64, i64)>),
    /// A critical path drawn over the rows (empty: none).
    MarkPath(std::sync::Arc<Vec<super::PathMark>>),
    /// Intervals of one GPU state shown over the rows (or none).
    Overlay(Option<Overlay>),
    /// CPU samples marked on their threads' rows (none: cleared).
    MarkSamples(Vec<super::search::RowMatches>),
    /// The current window the panels analyse (or the whole trace).
    Window(Option<(i64, i64)>),
    /// The search bar opened (Ctrl+F).
    OpenSearch,
    /// The next match of a search for `query` in `mode`, selected and brought into view.
    Find {
        query: String,
        mode: super::search::Mode,
    },
}

impl Timeline {
    /// Applies the panels' commands of a frame, in the order they were given.
    pub fn apply_all(&mut self, trace: &Trace, navs: Vec<Nav>) {
        for nav in navs {
            self.apply(trace, nav);
        }
    }

    /// Applies `nav`: the one place the view and the marks change from outside the timeline.
    pub fn apply(&mut self, trace: &Trace, nav: Nav) {
        match nav {
            Nav::Fit => self.fit(),
            Nav::ZoomTo { start, end, margin } => self.zoom_to(start, end, margin.share()),
            Nav::Widen => {
                let (a, b) = self.view;
                self.view = (a - (b - a), b + (b - a));
            }
            Nav::RevealDevice(d) => self.reveal_device(trace, d),
            Nav::ShowGap(gap) => {
                let end = gap.end_ns();
                self.zoom_to(gap.start_ns, end, Margin::Wide.share());
                if let Some(d) = trace.device_index(gap.device_id()) {
                    self.marks.highlight = Some((d, gap.start_ns, end));
                    self.reveal_device(trace, d);
                }
                self.marks.selected_gap = Some(gap);
            }
            Nav::Highlight(mark) => self.marks.highlight = mark,
            Nav::MarkIteration(marks) => self.marks.iteration_mark = marks,
            Nav::MarkPath(path) => self.marks.critical_path = path,
            Nav::Overlay(o) => self.marks.overlay = o,
            Nav::MarkSamples(m) => self.marks.samples = m,
            Nav::Window(w) => self.window = w,
            Nav::OpenSearch => self.search.open = true,
            Nav::Find { query, mode } => {
                if let Some(m) = self.search.set(&query, mode) {
                    self.go_to(m);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::builder::TraceBuilder;

    fn timeline() -> (Trace, Timeline) {
        let mut b = TraceBuilder::new();
        for k in 0..100 {
            b.kernel(0, 7, "k", (k * 1_000, k * 1_000 + 600), None);
        }
        let trace = b.build();
        let timeline = Timeline::new(&trace);
        (trace, timeline)
    }

    #[test]
    fn zooming_to_a_span_leaves_the_named_margin_cut_at_the_trace() {
        let (trace, mut t) = timeline();
        t.apply(
            &trace,
            Nav::ZoomTo {
                start: 10_000,
                end: 20_000,
                margin: Margin::Context,
            },
        );
        assert_eq!(t.view, (0.0, 30_000.0));
        t.apply(
            &trace,
            Nav::ZoomTo {
                start: 50_000,
                end: 51_000,
                margin: Margin::Tight,
            },
        );
        assert_eq!(t.view, (49_980.0, 51_020.0));
        // The first 1 000 ns of a margin would fall before the trace: cut there.
        t.apply(
            &trace,
            Nav::ZoomTo {
                start: 1_000,
                end: 2_000,
                margin: Margin::Wide,
            },
        );
        assert_eq!(t.view, (0.0, 4_000.0));
        t.apply(&trace, Nav::Fit);
        assert_eq!(t.view, (t.full.0 as f64, t.full.1 as f64));
    }

    #[test]
    fn widening_keeps_the_middle_and_triples_the_span() {
        let (trace, mut t) = timeline();
        t.view = (40_000.0, 50_000.0);
        t.apply(&trace, Nav::Widen);
        assert_eq!(t.view, (30_000.0, 60_000.0));
    }

    #[test]
    fn a_window_and_an_overlay_are_set_and_cleared_by_commands() {
        let (trace, mut t) = timeline();
        t.apply(&trace, Nav::Window(Some((5, 10))));
        assert_eq!(t.window, Some((5, 10)));
        t.apply(&trace, Nav::Window(None));
        assert_eq!(t.window, None);
        t.apply(&trace, Nav::MarkIteration(vec![(DeviceIndex(0), 1, 2)]));
        assert_eq!(t.marks.iteration_mark, vec![(DeviceIndex(0), 1, 2)]);
    }
}
