//! A cache of loaded traces and of answers about them, under the user's cache folder
//! (`$XDG_CACHE_HOME/nsys-explorer/`), never beside the trace.
//!
//! An entry is keyed by the trace's identity — canonical path, size, modification time,
//! device and inode — and by the program that wrote it (version, cache format, and the
//! executable's size and time, so a rebuilt program never reads an older one's answers),
//! plus what the entry holds (the model; a report with its options). A changed trace has
//! another key; a damaged file fails its checksum and is rebuilt (see `store`).
//!
//! Why files read into the model's columns rather than memory-mapped: the model owns its
//! columns (`Vec`s the analyses and the window share), so a mapping would be copied into
//! them anyway, and every byte is read once to check the checksum before anything is
//! trusted. Reading each column straight into its `Vec` is that one copy, with no mapping
//! left in memory beside the model and no `unsafe` (a mapped file truncated by another
//! process would fault the reader).

mod analyses;
mod codec;
mod model;
mod store;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;

pub use store::{
    DEFAULT_LIMIT_BYTES, FORMAT_VERSION, disable, folder, limit_bytes, set_folder, tidy,
};

use crate::load::LoadReport;
use crate::overview::{self, Analyses, GapFindings, Kept, Options, Overview};
use crate::trace::Trace;

/// Who a trace file is, for the cache: the same text exactly when the file is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceKey(String);

impl TraceKey {
    /// The key of the file at `path`; `None` when the cache is off or the file cannot be
    /// looked at (its load will say why).
    pub fn of(path: &Path) -> Option<TraceKey> {
        store::folder()?;
        let canonical = std::fs::canonicalize(path).ok()?;
        // Opened, not only looked at: a file the user may not read is never answered
        // from the cache (its load says why).
        let meta = std::fs::File::open(&canonical).ok()?.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mtime = meta
            .modified()
            .ok()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(TraceKey(format!(
            "trace={}\nsize={}\nmtime={mtime}\nfile={}\nprogram={}",
            canonical.display(),
            meta.len(),
            file_identity(&meta),
            program_id()
        )))
    }

    fn entry(&self, what: &str) -> String {
        format!("{}\nentry={what}", self.0)
    }
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!("{}:{}", meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> String {
    String::new()
}

/// The program's version, the cache format, and the executable's size and time.
fn program_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| {
                let t = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{}:{t}", m.len())
            })
            .unwrap_or_default();
        format!(
            "{} format {} exe {exe}",
            env!("CARGO_PKG_VERSION"),
            FORMAT_VERSION
        )
    })
}

/// The model of the trace with `key`, when the cache has it whole: its parts read in
/// parallel, each checked on its own.
pub fn read_model(key: &TraceKey) -> Option<(Trace, LoadReport)> {
    let _memory = crate::memory::LoadMemoryGuard::hold();
    let (mut trace, report, parts) = store::read(&key.entry("model"), model::read_head)?;
    let read: Vec<model::ReadPart> = parts
        .par_iter()
        .map(|part| store::read(&key.entry(&part.name()), |r| model::read_part(r, part)))
        .collect::<Option<_>>()?;
    for r in read {
        match r {
            model::ReadPart::Device(d) => trace.devices.push(d),
            model::ReadPart::Threads(t) => trace.threads.extend(t),
        }
    }
    Some((trace, report))
}

/// Decodes `payload` as a model entry's bytes after its header (its head, then each part it
/// names, read on from the same bytes) — what a damaged or forged cache file would feed
/// the decoders before its checksum is checked at the end. For the fuzzer: any bytes give
/// a model or a refusal, never a panic or an unbounded allocation.
pub fn decode_model_payload(payload: &[u8]) -> bool {
    let mut r = codec::Reader::new(payload, payload.len() as u64);
    let Ok((_, _, parts)) = model::read_head(&mut r) else {
        return false;
    };
    parts
        .iter()
        .all(|part| model::read_part(&mut r, part).is_ok())
}

/// Keeps `trace` (as loaded from its file, with `report`) for the next open, its parts
/// written in parallel, the head last. A model of more than half the file's size is not
/// kept (the cache would cost more than it saves).
pub fn store_model(key: &TraceKey, trace: &Trace, report: &LoadReport) {
    // The call stacks may still be on their way: the model is kept whole, or not at all.
    let stacks = trace.stacks();
    if stacks.read.error.is_some() {
        return;
    }
    let mut report = report.clone();
    report.add_stacks_read(&stacks.read);
    let report = &report;
    let parts = model::parts(trace);
    let thread_parts: Vec<(usize, usize)> = parts
        .iter()
        .filter_map(|p| match *p {
            model::Part::Threads(a, b) => Some((a, b)),
            _ => None,
        })
        .collect();
    let (head, rest) = parts.split_last().expect("a head");
    let write = |part: &model::Part| {
        store::write(&key.entry(&part.name()), |w| {
            model::write_part(w, trace, report, part, &thread_parts)
        })
    };
    let written: u64 = rest.par_iter().map(write).sum::<u64>() + write(head);
    if written > report.file_bytes / 2 {
        for part in &parts {
            store::remove(&key.entry(&part.name()));
        }
    }
    store::tidy();
}

/// The entry of the gap findings for `options` (what they depend on).
fn gap_findings_entry(options: &Options) -> String {
    format!(
        "gap findings device={:?} window={:?} min_gap_ns={}",
        options.device, options.window, options.min_gap_ns
    )
}

/// The gap findings an earlier run kept for this trace and these options: the patterns
/// and NVTX figures in one entry, the gaps in one per run of a device's, read in parallel.
pub fn read_gap_findings(key: &TraceKey, options: &Options) -> Option<GapFindings> {
    let entry = gap_findings_entry(options);
    let (mut findings, lens) = store::read(&key.entry(&entry), analyses::read_rest)?;
    let parts = (0..lens.len())
        .into_par_iter()
        .map(|k| {
            store::read(
                &key.entry(&format!("{entry} gaps {k}")),
                analyses::read_gap_columns,
            )
        })
        .collect::<Option<Vec<_>>>()?;
    if parts
        .iter()
        .map(analyses::GapColumns::len)
        .ne(lens.iter().copied())
    {
        return None;
    }
    // One list, written once, in parallel; each entry's columns freed once copied.
    let mut gaps = Vec::with_capacity(lens.iter().sum());
    for part in parts {
        gaps.par_extend((0..part.len()).into_par_iter().map(|i| part.gap(i)));
    }
    findings.gaps = gaps;
    Some(findings)
}

/// Keeps `overview`'s gap findings (worked out with `options`) for the next open: a gap
/// entry per run of one device's gaps (written in parallel), then the rest, which names
/// them (a reader that finds it finds them written).
pub fn store_gap_findings(key: &TraceKey, options: &Options, overview: &Overview) {
    let entry = gap_findings_entry(options);
    let gaps = &overview.gaps;
    let runs: Vec<&[crate::analysis::gaps::Gap]> =
        gaps.chunk_by(|a, b| a.device == b.device).collect();
    runs.par_iter().enumerate().for_each(|(k, run)| {
        store::write(&key.entry(&format!("{entry} gaps {k}")), |w| {
            analyses::write_gaps(w, run)
        });
    });
    let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
    let (_, recurring, single, nvtx) = overview.gap_findings();
    store::write(&key.entry(&entry), |w| {
        analyses::write_rest(w, (recurring, single, nvtx), &lens)
    });
    store::tidy();
}

fn analyses_entry(options: &Options) -> String {
    format!("analyses {:?}", options.kept_key())
}

/// The other analyses an earlier run kept for this trace and these very options.
pub fn read_analyses(key: &TraceKey, options: &Options, trace: &Trace) -> Option<Analyses> {
    let text = read_text(key, &analyses_entry(options))?;
    analyses::analyses_from_json(&text, trace.threads.len())
}

pub fn store_analyses(key: &TraceKey, options: &Options, overview: &Overview) {
    if let Some(text) = analyses::analyses_json(overview) {
        store_text(key, &analyses_entry(options), &text);
    }
}

/// What the cache keeps of an overview of `trace` with `options`, read in parallel.
pub fn read_kept(key: &TraceKey, options: &Options, trace: &Trace) -> Kept {
    let (gap_findings, analyses) = rayon::join(
        || read_gap_findings(key, options),
        || read_analyses(key, options, trace),
    );
    Kept {
        gap_findings,
        analyses,
    }
}

/// Every analysis of `trace`, from the cache what it kept under `key`; `None` when
/// cancelled. `publish` gets the overview first (the window shows it), then what was
/// worked out afresh is kept.
pub fn overview(
    trace: &Trace,
    options: &Options,
    cancel: &AtomicBool,
    key: Option<&TraceKey>,
    publish: impl FnOnce(&Arc<Overview>),
) -> Option<Arc<Overview>> {
    let kept = key
        .map(|k| read_kept(k, options, trace))
        .unwrap_or_default();
    overview_kept(trace, options, cancel, key, kept, publish)
}

/// [`overview`] with what the cache kept already read (the window reads it while it
/// builds the timeline's indexes).
pub fn overview_kept(
    trace: &Trace,
    options: &Options,
    cancel: &AtomicBool,
    key: Option<&TraceKey>,
    kept: Kept,
    publish: impl FnOnce(&Arc<Overview>),
) -> Option<Arc<Overview>> {
    let (had_gaps, had_analyses) = (kept.gap_findings.is_some(), kept.analyses.is_some());
    let overview = Arc::new(overview::overview_with(trace, options, cancel, kept)?);
    publish(&overview);
    if let Some(key) = key {
        if !had_gaps {
            store_gap_findings(key, options, &overview);
        }
        if !had_analyses {
            store_analyses(key, options, &overview);
        }
    }
    Some(overview)
}

/// An answer kept as text (a report in one format with one set of options: `what` says
/// which).
pub fn read_text(key: &TraceKey, what: &str) -> Option<String> {
    store::read(&key.entry(what), |r| r.str())
}

pub fn store_text(key: &TraceKey, what: &str, text: &str) {
    store::write(&key.entry(what), |w| w.str(text));
    store::tidy();
}
