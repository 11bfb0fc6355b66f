//! A trace opened and analysed through [`super::run`], kept by a front end between
//! questions — the Python package's `Trace`, the MCP server's traces: what `report`,
//! `what-if` and `critical-path` print of it comes from here, the same for each.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{Quiet, Source, Stages, Until, find, run};
use crate::cache::TraceKey;
use crate::findings::Finding;
use crate::load::LoadReport;
use crate::load::many::FileInfo;
use crate::overview::{Options, Overview};
use crate::trace::Trace;

pub struct OpenTrace {
    pub trace: Arc<Trace>,
    pub overview: Arc<Overview>,
    pub options: Options,
    /// Each file's load report (one for one file).
    pub reports: Vec<LoadReport>,
    /// Several files: how each was put on the first one's clock.
    pub files: Vec<FileInfo>,
    /// The files read (a folder given stands for its exports).
    pub paths: Vec<PathBuf>,
    /// Its key in the cache (one file, the cache on): the findings' replays kept there.
    pub key: Option<TraceKey>,
    findings: OnceLock<Vec<Finding>>,
}

impl OpenTrace {
    /// Opens `paths` (one export, several ranks' exports, a folder of them, an
    /// `.nsys-rep`) and analyses it, `until` the analyses or the findings too; `Err` says
    /// why in words, naming the file.
    pub fn open(
        paths: &[PathBuf],
        options: Options,
        until: Until,
        use_cache: bool,
        stages: &dyn Stages,
        cancel: &AtomicBool,
    ) -> Result<OpenTrace, String> {
        let source = Source::of(paths)?;
        let paths = match &source {
            Source::One(p) => vec![p.clone()],
            Source::Many { paths, .. } => paths.clone(),
        };
        let ran = run(
            &source,
            &options,
            until.max(Until::Analysed),
            stages,
            cancel,
            use_cache,
        )
        .map_err(|e| match paths.as_slice() {
            [one] if !e.to_string().contains(&one.display().to_string()) => {
                format!("{}: {e}", one.display())
            }
            _ => e.to_string(),
        })?;
        let overview = ran.overview.ok_or("cancelled")?;
        if until == Until::Findings && ran.findings.is_none() {
            return Err("cancelled".into());
        }
        let findings = OnceLock::new();
        if let Some(found) = ran.findings {
            let _ = findings.set(found);
        }
        let opened = ran.opened;
        Ok(OpenTrace {
            key: opened.key,
            trace: opened.trace,
            overview,
            options,
            reports: opened.reports,
            files: opened.files,
            paths,
            findings,
        })
    }

    /// What to fix first, ranked by the replayed saving (replayed on the first call when
    /// the open did not go that far, then kept).
    pub fn findings(&self) -> &[Finding] {
        self.findings.get_or_init(|| {
            find(
                &self.trace,
                &self.overview,
                self.key.as_ref(),
                &AtomicBool::new(false),
                &Quiet,
            )
            .unwrap_or_default()
        })
    }

    /// The files, as a person names the trace.
    pub fn name(&self) -> String {
        let names: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    }

    /// `report --json`'s answer.
    pub fn report_json(&self) -> Value {
        let findings = self.findings();
        if self.paths.len() > 1 {
            crate::report::many_json(
                &self.trace,
                &self.reports,
                &self.files,
                &self.overview,
                findings,
                &self.options,
            )
        } else {
            crate::report::report_json(
                &self.trace,
                &self.reports[0],
                &self.overview,
                findings,
                &self.options,
            )
        }
    }

    /// `what-if --json`'s answer for `change`.
    pub fn what_if_json(&self, change: &crate::whatif::Change) -> Value {
        let w = crate::whatif::report::what_if(&self.trace, &self.overview, change, &self.options);
        crate::whatif::report::what_if_json(&self.trace, &self.name(), change, &w)
    }

    /// `critical-path --json`'s answer for iteration `k` (default: the slowest; without
    /// iterations, the whole run's).
    pub fn critical_path_json(&self, iteration: Option<usize>) -> Result<Value, String> {
        let its = &self.overview.iterations;
        let count = its.count();
        let k = match iteration.or(its.slowest_index) {
            Some(k) if k < count => Some(k),
            Some(k) => return Err(format!("no iteration {k}: the trace has {count}")),
            None if count > 0 => Some(count / 2),
            None => None,
        };
        // The collectives the analyses matched already.
        let graph = crate::critical_path::Graph::with_collectives(
            &self.trace,
            self.overview.collectives(&self.trace),
        );
        let path = match k {
            Some(k) => graph.path(its, k),
            None => graph.run_path(),
        }
        .ok_or("no kernel ran on any GPU in it, so there is no critical path")?;
        let summary = crate::critical_path::report::summarise_path(&graph, path);
        Ok(crate::critical_path::report::path_json(
            &self.trace,
            &summary,
        ))
    }
}
