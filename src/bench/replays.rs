//! `bench what-if`, `bench findings` and `bench critical-path`: the replays and the paths.

use std::path::Path;
use std::time::Instant;

use super::print_peak_rss;
use crate::load;

/// Times a what-if replay of FILE (its per-step sync removed, as `aten::item` names it,
/// and its largest kernel made twice as fast): the replay alone, then the analyses of the
/// replayed trace, with the peak RSS.
pub fn bench_what_if(file: &Path) -> Result<(), String> {
    use crate::whatif::{Change, replay};
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let o = crate::overview::overview(&trace, &Default::default());
    let top = o
        .kernels
        .first()
        .map(|k| regex::escape(&k.name))
        .unwrap_or_default();
    println!("file: {} ({} events)", file.display(), trace.event_count());
    for (what, change) in [
        ("unchanged", Change::default()),
        (
            "remove sync in aten::item",
            Change {
                remove_sync: vec!["aten::item".into()],
                ..Default::default()
            },
        ),
        (
            "top kernel x0.5",
            Change {
                scale_kernels: vec![(regex::Regex::new(&top).map_err(|e| e.to_string())?, 0.5)],
                ..Default::default()
            },
        ),
    ] {
        let t = Instant::now();
        let replayed = replay(&trace, &change);
        let replay_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let p = crate::overview::overview(&replayed, &Default::default());
        println!(
            "change={what:?} replay_s={replay_s:.3} analyses_s={:.3} iterations={}",
            t.elapsed().as_secs_f64(),
            p.iterations.count()
        );
    }
    spans_of_every_change_kind(&trace, &o, &top)?;
    print_peak_rss();
    Ok(())
}

/// Times the spans-only walk (what a finding's saving costs) of one change of each kind,
/// aimed at what this trace holds: a change kind that a shape makes slow shows here.
fn spans_of_every_change_kind(
    trace: &crate::trace::Trace,
    o: &crate::overview::Overview,
    top_kernel: &str,
) -> Result<(), String> {
    use crate::whatif::{Change, HostSpan, Prepared, predicted_spans_with};
    let t = Instant::now();
    let prepared = Prepared::new(trace);
    println!(
        "shared preparation      {:>8.3} s",
        t.elapsed().as_secs_f64()
    );
    // The texts the changes aim at: the most recurring gaps' ranges and signatures.
    let recurring = &o.recurring;
    let signature = |cause: &str| {
        recurring
            .iter()
            .find(|r| r.signature.ends_with(cause))
            .map(|r| r.signature.clone())
    };
    let range_text = recurring
        .iter()
        .filter_map(|r| r.signature.split(" in ").nth(1))
        .map(|r| {
            r.split(" [")
                .next()
                .unwrap_or(r)
                .trim_end_matches('#')
                .to_string()
        })
        .find(|r| !r.is_empty() && !r.starts_with('('))
        .unwrap_or_default();
    let busiest = trace
        .threads
        .iter()
        .max_by_key(|t| t.api.len())
        .ok_or("no threads")?;
    let (first, last) = trace.time_span().ok_or("an empty trace")?;
    let from = first + (last - first) / 3;
    let stall = HostSpan::of(trace, busiest, from, from + 1_000_000_000);
    let kinds: Vec<(&str, Change)> = vec![
        ("unchanged", Change::default()),
        (
            "remove sync (every synchronising call)",
            Change {
                remove_sync: vec![String::new()],
                ..Default::default()
            },
        ),
        (
            "top kernel x0.5",
            Change {
                scale_kernels: vec![(
                    regex::Regex::new(top_kernel).map_err(|e| e.to_string())?,
                    0.5,
                )],
                ..Default::default()
            },
        ),
        (
            "NCCL on its own stream",
            Change {
                nccl_own_stream: true,
                ..Default::default()
            },
        ),
        (
            "NCCL on its own stream, no dependencies",
            Change {
                nccl_own_stream: true,
                nccl_dependencies: crate::whatif::NcclDependencies::Unbounded,
                ..Default::default()
            },
        ),
        (
            "remove CPU in the most recurring gaps' range",
            Change {
                remove_cpu: vec![range_text.clone()],
                ..Default::default()
            },
        ),
        (
            "remove CPU in every range",
            Change {
                remove_cpu: vec![String::new()],
                ..Default::default()
            },
        ),
        (
            "remove a 1 s stall of the busiest thread",
            Change {
                remove_stalls: vec![stall],
                ..Default::default()
            },
        ),
        (
            "cut the most recurring host-bound gaps",
            Change {
                cut_host_gaps: signature("[host_bound]").into_iter().collect(),
                ..Default::default()
            },
        ),
        (
            "drop every copy",
            Change {
                drop_copies: vec![String::new()],
                ..Default::default()
            },
        ),
        (
            "capture the most recurring gaps' range as graphs",
            Change {
                capture_graphs: vec![range_text.clone()],
                ..Default::default()
            },
        ),
    ];
    println!("spans-only walk of one change (what a finding's saving costs):");
    for (what, change) in kinds {
        let t = Instant::now();
        let spans = predicted_spans_with(trace, &prepared, &change, Some(&o.gaps));
        let longest = spans.iter().max().copied().unwrap_or(0);
        println!(
            "  {what:<50} {:>8.3} s  (longest span {})",
            t.elapsed().as_secs_f64(),
            crate::format::format_ns(longest)
        );
    }
    println!("  (range aimed at: {range_text:?})");
    Ok(())
}

/// Times what to fix first on FILE: detecting the findings, then every finding's replay
/// (in parallel), against one what-if replay of the trace (the `what-if` command's), with
/// the peak RSS.
pub fn bench_findings(file: &Path) -> Result<(), String> {
    use std::sync::atomic::AtomicBool;
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let o = crate::overview::overview(&trace, &Default::default());
    println!("file: {} ({} events)", file.display(), trace.event_count());
    println!("threads: {}", rayon::current_num_threads());
    let t = Instant::now();
    let found = crate::findings::detect(&trace, &o);
    let detect_s = t.elapsed().as_secs_f64();
    let replays = found
        .iter()
        .map(|f| f.change.is_some() as usize + f.upper_change.is_some() as usize)
        .sum::<usize>();
    let t = Instant::now();
    let savings =
        crate::findings::replay_savings(&trace, &o, &found, &AtomicBool::new(false), |_, _| {})
            .unwrap_or_default();
    let replays_s = t.elapsed().as_secs_f64();
    let ranked = crate::findings::finish(&trace, &o, found, &savings);
    // The findings' peak first: the what-if replay below builds a whole replayed trace.
    if let Some(peak) = crate::memory::peak_rss_bytes() {
        println!("peak RSS (findings)    {:>8.1} MB", peak as f64 / 1e6);
    }
    let t = Instant::now();
    let replayed = crate::whatif::replay(&trace, &crate::whatif::Change::default());
    let one = t.elapsed().as_secs_f64();
    drop(replayed);
    println!("one what-if replay      {one:>8.3} s");
    println!("findings: detect        {detect_s:>8.3} s");
    println!("findings: {replays:>2} replays    {replays_s:>8.3} s");
    println!(
        "ratio (detect + replays) / one replay   {:.2}",
        (detect_s + replays_s) / one
    );
    for f in &ranked {
        println!(
            "  [{}] {} {}",
            f.severity.label(),
            f.saving_ns
                .map_or("fact".to_string(), crate::format::format_ns),
            f.title
        );
    }
    print_peak_rss();
    Ok(())
}

/// Times the critical path on FILE: the graph (collectives, launches per thread), the
/// slowest iteration's path with its slack, and the whole run's table (every iteration),
/// after the load and the iterations, with the peak RSS.
pub fn bench_critical_path(file: &Path) -> Result<(), String> {
    use crate::critical_path::{Graph, report as cp};
    let t = Instant::now();
    let (trace, _) = load::load(file).map_err(|e| e.to_string())?;
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let its = crate::analysis::iterations::iterations(&trace, None);
    let iterations_s = t.elapsed().as_secs_f64();
    println!("file: {} ({} events)", file.display(), trace.event_count());
    println!("load                    {load_s:>8.3} s");
    println!("iterations ({:>5})      {iterations_s:>8.3} s", its.count());
    let k = its
        .slowest_index
        .ok_or("no slow iteration: nothing to time")?;
    let t = Instant::now();
    let graph = Graph::new(&trace);
    let graph_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let one = cp::summarise(&graph, &its, k).ok_or("the slowest iteration has no path")?;
    let one_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let table = cp::run_table(&graph, &its, 20);
    let table_s = t.elapsed().as_secs_f64();
    println!("graph                   {graph_s:>8.3} s");
    println!(
        "one iteration ({k}, {} segments, slack of {} kernels) {one_s:>8.3} s; with the graph {:.3} s",
        one.path.segments.len(),
        one.slack.len(),
        graph_s + one_s
    );
    println!(
        "whole run ({} iterations)  {table_s:>8.3} s; with the graph {:.3} s",
        table.iterations,
        graph_s + table_s
    );
    print_peak_rss();
    Ok(())
}
