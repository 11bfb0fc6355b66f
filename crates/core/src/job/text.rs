//! A job reduced from rank summaries, as `report` prints it.

use std::fmt::Write;

use super::reduce::Job;
use crate::format::format_ns;

fn pct(part: i64, all: i64) -> f64 {
    if all > 0 {
        100.0 * part as f64 / all as f64
    } else {
        0.0
    }
}

/// The report's text: files and their alignment, findings, iterations, each GPU's NCCL wait
/// vs transfer, the late collectives, the slowest iteration's critical path, the top gaps.
pub fn text(job: &Job, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Job of {} ranks ({} GPUs) from their summaries, {} long; {} of {} clocks aligned by collectives",
        job.files.len(),
        job.devices.len(),
        format_ns(job.span_ns.1 - job.span_ns.0),
        job.clocks_aligned(),
        job.files.len()
    );
    if job.findings.is_empty() {
        let _ = writeln!(
            out,
            "\nNo straggler: no rank held the others back enough to matter."
        );
    }
    for f in &job.findings {
        let _ = writeln!(
            out,
            "\n[{}] {}\n  {}\n  saves {} ({:.1} %), {}",
            f.severity.label(),
            f.title,
            f.detail,
            format_ns(f.saving_ns),
            f.saving_pct,
            f.assumes
        );
    }
    let its = &job.iterations;
    if its.count > 0 {
        let _ = writeln!(
            out,
            "\nIterations: {} (median {}, {} slow{})",
            its.count,
            format_ns(its.median_ns),
            its.slow_indices.len(),
            its.slowest_index.map_or(String::new(), |k| format!(
                ", slowest {k}: {}",
                format_ns(its.durations_ns[k])
            ))
        );
    }
    let w = &job.nccl_wait;
    if w.collectives > 0 {
        let _ = writeln!(
            out,
            "\nNCCL wait vs transfer ({} collectives on every GPU), most waiting first:",
            w.collectives
        );
        let mut rows: Vec<_> = w.per_device.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.wait_ns));
        for r in rows.iter().take(top) {
            let _ = writeln!(
                out,
                "  {:<28} wait {:>10} ({:>4.1} %)  transfer {:>10}  last {} times",
                r.device,
                format_ns(r.wait_ns),
                pct(r.wait_ns, r.wait_ns + r.transfer_ns),
                format_ns(r.transfer_ns),
                r.last_arrivals
            );
        }
        if rows.len() > top {
            let _ = writeln!(out, "  … {} more", rows.len() - top);
        }
        let _ = writeln!(out, "\nCollectives held back longest:");
        for l in w.late.iter().take(top) {
            let _ = writeln!(out, "  {}", l.describe(job.span_ns.0));
        }
    }
    if let Some(p) = &job.critical_path {
        let _ = writeln!(
            out,
            "\nCritical path of iteration {} by collective (the rank each waited for):",
            p.iteration
        );
        let mut steps: Vec<_> = p.steps.iter().collect();
        steps.sort_by_key(|s| std::cmp::Reverse(s.lateness_ns));
        for s in steps.iter().take(top) {
            let _ = writeln!(
                out,
                "  #{:<5} {:<28} {:>10} late, {}",
                s.collective,
                s.last_device,
                format_ns(s.lateness_ns),
                s.doing
            );
        }
    }
    if !job.top_gaps.is_empty() {
        let _ = writeln!(out, "\nLongest gaps:");
        for g in job.top_gaps.iter().take(top) {
            let _ = writeln!(
                out,
                "  {:>10} on {:<28} {} → {} ({})",
                format_ns(g.gap.duration_ns),
                g.device,
                g.gap.before,
                g.gap.after,
                g.gap.cause
            );
        }
    }
    out
}
