//! The gap finder: every idle window of every GPU in a sortable, filterable table that only
//! lays out the rows on screen; a recurring view grouping gaps by signature; a click (or
//! N / Shift+N) zooms the timeline to a gap and highlights it; CSV export.

use std::sync::Arc;

use eframe::egui;
use egui_extras::{Column as TableColumn, TableBuilder};

use super::gap_table::{Column, Filter, GapOrders, filtered_order_with, to_csv};
use super::task::{Task, take_answer};
use super::timeline::{Nav, Timeline};
use crate::analysis::gaps::Gap;
use crate::analysis::recurring::{cause_text, signature};
use crate::format::format_ns;
use crate::format::shorten_middle;
use crate::overview::Overview;
use crate::trace::Trace;

/// Characters of each name in the "before -> after" column: cut in the middle, so two
/// long names that share a prefix still read apart.
const NAME_CHARS: usize = 34;

use super::gap_table::{CAUSES, FilterCounts, filter_counts};

/// A filter's rows in order, and what it leaves per cause and pattern.
type Filtered = (Vec<u32>, Arc<FilterCounts>);

/// What an order is of: the filter, the column sorted by, descending.
type OrderKey = (Filter, Column, bool);

pub struct GapFinder {
    pub filter: Filter,
    pub column: Column,
    pub descending: bool,
    /// Gap indices shown, in order.
    pub order: Vec<u32>,
    applied: Option<OrderKey>,
    /// An order being computed on a worker, and what it is for.
    pending: Option<Task<OrderKey, Filtered>>,
    pub recurring_view: bool,
    /// Position in `order` of the selected gap.
    pub current: Option<usize>,
    min_us: f64,
    message: Option<String>,
    /// What the applied filter leaves per cause and per recurring pattern.
    pub counts: Arc<FilterCounts>,
    /// The gaps sorted by every column, for the overview they are of (its address): filled
    /// on a worker once the analyses are in, so that a sort or filter is one pass.
    orders: Option<(usize, Arc<GapOrders>)>,
    filling: Option<Task<(), ()>>,
}

impl Default for GapFinder {
    fn default() -> Self {
        Self {
            filter: Filter::default(),
            column: Column::Duration,
            descending: true,
            order: Vec::new(),
            applied: None,
            pending: None,
            recurring_view: false,
            current: None,
            min_us: 0.0,
            message: None,
            counts: Arc::default(),
            orders: None,
            filling: None,
        }
    }
}

/// Tables with more gaps than this are filtered and sorted on a worker (a real-shaped trace
/// has millions: a sort takes a few hundred ms), the last order staying on screen meanwhile.
pub const GAPS_SORTED_IN_FRAME: usize = 200_000;

impl GapFinder {
    fn key(&self) -> OrderKey {
        (self.filter.clone(), self.column, self.descending)
    }

    /// The kept orders of `overview`'s gaps (new, empty ones for another overview).
    fn orders_of(&mut self, overview: &Overview) -> Arc<GapOrders> {
        let id = std::ptr::from_ref(overview) as usize;
        match &self.orders {
            Some((of, orders)) if *of == id => orders.clone(),
            _ => {
                let orders = Arc::new(GapOrders::default());
                self.orders = Some((id, orders.clone()));
                self.filling = None;
                orders
            }
        }
    }

    /// Drops the kept orders (the overview they were of is gone).
    pub fn forget_orders(&mut self) {
        self.orders = None;
        self.filling = None;
    }

    /// Starts sorting a large table by every column on a worker, once per overview.
    pub fn prepare(&mut self, trace: &Arc<Trace>, overview: &Arc<Overview>) {
        if overview.gaps.len() <= GAPS_SORTED_IN_FRAME {
            return;
        }
        let orders = self.orders_of(overview);
        if self.filling.is_none() {
            let (trace, overview) = (trace.clone(), overview.clone());
            self.filling = Some(Task::compute((), None, move |_| {
                orders.fill(&trace, &overview.gaps);
            }));
        }
    }

    /// Whether the orders started by [`Self::prepare`] are still being sorted.
    pub fn sorting(&self) -> bool {
        self.filling.is_some() && self.orders.as_ref().is_some_and(|(_, o)| !o.is_full())
    }

    /// Recomputes the order now when the filter or sort changed.
    pub fn refresh(&mut self, trace: &Trace, overview: &Overview) {
        let key = self.key();
        if self.applied.as_ref() != Some(&key) {
            let orders = self.orders_of(overview);
            let order = filtered_order_with(
                trace,
                &overview.gaps,
                &overview.recurring,
                &key.0,
                key.1,
                key.2,
                Some(&orders),
            );
            let counts = filter_counts(trace, &overview.gaps, &overview.recurring, &key.0);
            self.set_order(key, (order, Arc::new(counts)));
        }
    }

    fn set_order(&mut self, key: OrderKey, (order, counts): Filtered) {
        self.order = order;
        self.counts = counts;
        self.current = None;
        self.applied = Some(key);
        self.pending = None;
    }

    /// Like `refresh`, on a worker for large tables: returns whether the order shown is
    /// the one asked for.
    fn refresh_in_background(
        &mut self,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        ctx: &egui::Context,
    ) -> bool {
        if let Some((key, order)) = take_answer(&mut self.pending) {
            self.set_order(key, order);
        }
        let key = self.key();
        if self.applied.as_ref() == Some(&key) {
            return true;
        }
        if overview.gaps.len() <= GAPS_SORTED_IN_FRAME {
            self.refresh(trace, overview);
            return true;
        }
        // One order at a time: a newer filter waits for the one being computed.
        if self.pending.is_none() {
            let orders = self.orders_of(overview);
            let (trace, overview, job) = (trace.clone(), overview.clone(), key.clone());
            self.pending = Some(Task::compute(key, Some(ctx), move |_| {
                let order = filtered_order_with(
                    &trace,
                    &overview.gaps,
                    &overview.recurring,
                    &job.0,
                    job.1,
                    job.2,
                    Some(&orders),
                );
                let counts = filter_counts(&trace, &overview.gaps, &overview.recurring, &job.0);
                (order, Arc::new(counts))
            }));
        }
        false
    }

    /// Selects the gap at `pos` of the current order and shows it on the timeline.
    pub fn select(&mut self, pos: usize, overview: &Overview, nav: &mut Vec<Nav>) {
        let Some(&i) = self.order.get(pos) else {
            return;
        };
        self.current = Some(pos);
        show_gap(&overview.gaps[i as usize], nav);
    }

    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Arc<Trace>,
        overview: &Arc<Overview>,
        timeline: &Timeline,
        nav: &mut Vec<Nav>,
    ) {
        if trace.devices.is_empty() {
            ui.label(
                "No GPU activity recorded: a gap is idle time of a GPU, and this export has none.",
            );
            return;
        }
        // The table follows the current window (Shift+drag) while one is set.
        self.filter.window = timeline.window;
        let ready = self.refresh_in_background(trace, overview, ui.ctx());
        self.controls(ui, trace, overview, timeline, ready);
        // N / Shift+N step through the current order, unless a text field has the keys.
        let typing = ui.ctx().egui_wants_keyboard_input();
        if !typing && !self.order.is_empty() {
            let (next, prev) = ui.input_mut(|i| {
                (
                    i.consume_key(egui::Modifiers::NONE, egui::Key::N),
                    i.consume_key(egui::Modifiers::SHIFT, egui::Key::N),
                )
            });
            if next || prev {
                let n = self.order.len();
                let pos = match (self.current, next) {
                    (None, _) => 0,
                    (Some(p), true) => (p + 1) % n,
                    (Some(p), false) => (p + n - 1) % n,
                };
                self.select(pos, overview, nav);
            }
        }
        ui.separator();
        if self.recurring_view {
            self.recurring_table(ui, trace, overview, nav);
        } else {
            self.gap_table(ui, trace, overview, timeline, nav);
        }
    }

    fn controls(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Trace,
        overview: &Overview,
        timeline: &Timeline,
        ready: bool,
    ) {
        ui.horizontal_wrapped(|ui| {
            ui.selectable_value(&mut self.recurring_view, false, "All gaps");
            ui.selectable_value(&mut self.recurring_view, true, "Recurring");
            ui.separator();
            ui.label("min");
            if ui
                .add(
                    egui::DragValue::new(&mut self.min_us)
                        .range(0.0..=1e9)
                        .suffix(" µs")
                        .speed(10.0),
                )
                .changed()
            {
                self.filter.min_duration_ns = (self.min_us * 1e3) as i64;
            }
            egui::ComboBox::from_id_salt("gap device")
                .selected_text(match self.filter.device {
                    Some(d) => trace.gpu_name(d),
                    None => "all GPUs".into(),
                })
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.filter.device, None, "all GPUs");
                    for d in &trace.devices {
                        ui.selectable_value(
                            &mut self.filter.device,
                            Some(d.id),
                            trace.gpu_name(d.id),
                        );
                    }
                });
            ui.separator();
            // What each cause would show with the other filters as they are.
            let counts = self.counts.clone();
            ui.selectable_value(
                &mut self.filter.cause,
                None,
                format!("any cause ({})", counts.any_cause),
            );
            for (c, n) in CAUSES.into_iter().zip(counts.causes) {
                ui.selectable_value(
                    &mut self.filter.cause,
                    Some(c),
                    format!("{} ({n})", c.label()),
                )
                .on_hover_text(c.help());
            }
            ui.separator();
            ui.add(
                egui::TextEdit::singleline(&mut self.filter.text)
                    .hint_text("filter by name or cause")
                    .desired_width(140.0),
            );
            if let Some(r) = self.filter.recurring {
                let sig = overview
                    .recurring
                    .get(r)
                    .map_or("", |g| g.signature.as_str());
                if ui
                    .button(format!(
                        "group: {} ×",
                        shorten_middle(&sig.replace('→', "->"), 60)
                    ))
                    .on_hover_text("Show every gap again")
                    .clicked()
                {
                    self.filter.recurring = None;
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            if !ready {
                crate::ui::busy(ui);
                ui.label("sorting…");
            }
            ui.label(format!(
                "{} gaps shown of {}{}",
                self.order.len(),
                overview.gaps.len(),
                if self.filter.window.is_some() {
                    " (in the current window)"
                } else {
                    ""
                }
            ));
            if ui.button("Export CSV…").clicked() {
                self.message = Some(self.export(trace, overview, timeline.full.0));
            }
            if let Some(m) = &self.message {
                ui.label(m);
            }
            ui.label("· click a row to zoom to it; N / Shift+N: next / previous");
        });
    }

    fn export(&self, trace: &Trace, overview: &Overview, origin: i64) -> String {
        let Some(path) = rfd::FileDialog::new()
            .set_file_name("gaps.csv")
            .add_filter("CSV", &["csv"])
            .save_file()
        else {
            return String::new();
        };
        match to_csv(trace, &overview.gaps, &self.order, origin)
            .and_then(|bytes| std::fs::write(&path, bytes).map_err(|e| e.to_string()))
        {
            Ok(()) => format!("wrote {} rows to {}", self.order.len(), path.display()),
            Err(e) => format!("could not write {}: {e}", path.display()),
        }
    }

    fn gap_table(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Trace,
        overview: &Overview,
        timeline: &Timeline,
        nav: &mut Vec<Nav>,
    ) {
        let origin = timeline.full.0;
        let mut clicked = None;
        let mut sort_by = None;
        let name_w = name_width(ui, 330.0);
        // Wider than the panel, it scrolls sideways (Shift+wheel): every column reachable.
        egui::ScrollArea::horizontal()
            .id_salt("gap table")
            .show(ui, |ui| {
                TableBuilder::new(ui)
                    .striped(true)
                    .sense(egui::Sense::click())
                    .column(TableColumn::exact(50.0))
                    .column(TableColumn::exact(90.0))
                    .column(TableColumn::exact(80.0))
                    .column(TableColumn::initial(name_w).clip(true).resizable(true))
                    .column(TableColumn::initial(150.0).clip(true).resizable(true))
                    // The cause's text is read whole: a column of its own width, past the
                    // panel's edge if need be.
                    .column(TableColumn::remainder().at_least(300.0).clip(true))
                    .header(20.0, |mut header| {
                        for column in Column::ALL {
                            header.col(|ui| {
                                let arrow = match (self.column == column, self.descending) {
                                    (true, true) => " v",
                                    (true, false) => " ^",
                                    _ => "",
                                };
                                if ui.button(format!("{}{arrow}", column.label())).clicked() {
                                    sort_by = Some(column);
                                }
                            });
                        }
                    })
                    .body(|body| {
                        body.rows(18.0, self.order.len(), |mut row| {
                            let pos = row.index();
                            let g = &overview.gaps[self.order[pos] as usize];
                            row.set_selected(self.current == Some(pos));
                            let name = |id| trace.strings.get(id);
                            for text in [
                                trace.gpu_name(g.device_id()),
                                format_ns(g.start_ns - origin),
                                format_ns(g.duration_ns),
                                format!(
                                    "{}  ->  {}",
                                    shorten_middle(&name(g.before_name(trace)), NAME_CHARS),
                                    shorten_middle(&name(g.after_name(trace)), NAME_CHARS)
                                ),
                                g.enclosing()
                                    .map_or("-".into(), |n| shorten_middle(&name(n), 40)),
                            ] {
                                row.col(|ui| cell(ui, text));
                            }
                            // The cause with what the CPU was doing, for the rows on screen only.
                            row.col(|ui| {
                                let text = cause_text(trace, g);
                                let help = format!("{text}\n\n{}", g.cause.help());
                                ui.add(egui::Label::new(text).selectable(false))
                                    .on_hover_text(help);
                            });
                            if row.response().clicked() {
                                clicked = Some(pos);
                            }
                        });
                    });
            });
        if let Some(column) = sort_by {
            if self.column == column {
                self.descending = !self.descending;
            } else {
                self.column = column;
                self.descending = matches!(column, Column::Duration);
            }
        }
        if let Some(pos) = clicked {
            self.select(pos, overview, nav);
        }
    }

    /// The patterns seen at least twice, then the largest gaps whose pattern occurs once.
    fn recurring_table(
        &mut self,
        ui: &mut egui::Ui,
        trace: &Trace,
        overview: &Overview,
        nav: &mut Vec<Nav>,
    ) {
        let mut open = None;
        let mut single = None;
        // The filters apply here too: each pattern counted over its gaps that pass them
        // (patterns none of whose gaps pass are left out), single gaps likewise.
        let f = &self.filter;
        let filtered = f.min_duration_ns > 0
            || f.device.is_some()
            || f.cause.is_some()
            || f.window.is_some()
            || !f.text.is_empty();
        let patterns: Vec<(usize, usize, i64, i64)> = if filtered {
            let mut p = self.counts.patterns.clone();
            p.sort_by_key(|x| (std::cmp::Reverse(x.2), x.0));
            p
        } else {
            (overview.recurring.iter().enumerate())
                .map(|(k, r)| (k, r.count, r.total_ns, r.median_ns))
                .collect()
        };
        let passes = |g: &Gap| {
            g.duration_ns >= f.min_duration_ns
                && f.device.is_none_or(|d| g.device_id() == d)
                && f.cause.is_none_or(|c| g.cause == c)
                && f.window
                    .is_none_or(|(a, b)| g.start_ns < b && g.end_ns() > a)
        };
        let single_gaps: Vec<u32> = overview
            .single_gaps
            .iter()
            .copied()
            .filter(|&i| passes(&overview.gaps[i as usize]))
            .take(MAX_SINGLES_LISTED)
            .collect();
        let groups = patterns.len();
        let singles = single_gaps.len();
        let name_w = name_width(ui, 640.0);
        // Wider than the panel, it scrolls sideways (Shift+wheel): every column reachable.
        egui::ScrollArea::horizontal()
            .id_salt("recurring gaps table")
            .show(ui, |ui| {
                TableBuilder::new(ui)
                .striped(true)
                .sense(egui::Sense::click())
                .column(TableColumn::initial(name_w).clip(true).resizable(true))
                .column(TableColumn::exact(70.0))
                .column(TableColumn::exact(90.0))
                .column(TableColumn::remainder().at_least(90.0))
                .header(20.0, |mut header| {
                    for name in [
                        "pattern, seen at least twice (click to list its gaps); then single gaps",
                        "count",
                        "total",
                        "median",
                    ] {
                        header.col(|ui| {
                            ui.strong(name);
                        });
                    }
                })
                .body(|body| {
                    body.rows(18.0, groups + singles, |mut row| {
                        let k = row.index();
                        if k < groups {
                            let (p, count, total, median) = patterns[k];
                            let r = &overview.recurring[p];
                            for text in [
                                shorten_middle(&r.signature.replace('→', "->"), 110),
                                count.to_string(),
                                format_ns(total),
                                format_ns(median),
                            ] {
                                row.col(|ui| cell(ui, text));
                            }
                            if row.response().clicked() {
                                open = Some(p);
                            }
                            return;
                        }
                        let i = single_gaps[k - groups];
                        let g = &overview.gaps[i as usize];
                        let sig = signature(trace, g);
                        let text = format!(
                            "single: {} — {}",
                            sig.rsplit_once(" [").map_or(sig.as_str(), |x| x.0),
                            cause_text(trace, g)
                        );
                        for text in [
                            shorten_middle(&text.replace('→', "->"), 110),
                            "1".into(),
                            format_ns(g.duration_ns),
                            format_ns(g.duration_ns),
                        ] {
                            row.col(|ui| cell(ui, text));
                        }
                        if row.response().clicked() {
                            single = Some(*g);
                        }
                    });
                });
            });
        if let Some(r) = open {
            self.filter.recurring = Some(r);
            self.recurring_view = false;
        }
        if let Some(g) = single {
            show_gap(&g, nav);
        }
    }
}

/// How many single gaps the recurring view lists after the patterns.
const MAX_SINGLES_LISTED: usize = 200;

/// Zooms the timeline to `gap` with context on both sides, outlines it, and names it in
/// the Details tab.
pub fn show_gap(gap: &Gap, nav: &mut Vec<Nav>) {
    nav.push(Nav::ShowGap(*gap));
}

/// A table cell's text; not selectable, so a click on it selects the row.
fn cell(ui: &mut egui::Ui, text: String) {
    ui.add(egui::Label::new(text).selectable(false));
}

/// A name column's first width: at most `widest`, and at most 40 % of the panel, so that a
/// narrow window still shows the numbers beside it (the column can be dragged wider).
fn name_width(ui: &egui::Ui, widest: f32) -> f32 {
    (ui.available_width() * 0.4).clamp(160.0, widest)
}
