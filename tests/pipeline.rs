//! One pipeline: every front end — the window, the command line, the Python package and
//! the MCP server — opens and analyses a trace through `session::run` (or
//! `session::analysed` and `session::OpenTrace::open`, which run it), never through a path
//! of its own. Checked on the source, as `crates/core/tests/layers.rs` checks the core's
//! imports: a second open path written tomorrow fails here.

use std::path::{Path, PathBuf};

/// What only the session may call to open or analyse a whole trace.
const OPEN_PATHS: &[&str] = &[
    "session::open(",
    "session::open_file(",
    "session::open_path(",
    "session::open_many(",
    "session::load_many(",
    "session::overview(",
    "session::answer(",
    "load::load(",
    "load::load_staged(",
    "cache::overview(",
    "cache::overview_kept(",
    "overview::overview(",
    "findings::findings_kept(",
    "findings::findings_staged(",
];

/// The front ends' sources, each a folder (or file) that must call the pipeline.
fn front_ends(root: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut out = vec![
        ("the window", root.join("src/ui")),
        ("the command line", root.join("src/cli")),
        ("the Python package", root.join("crates/python/src")),
    ];
    let mcp = root.join("src/mcp");
    if mcp.exists() {
        out.push(("the MCP server", mcp));
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file: its lines outside comments and `#[cfg(test)]` modules.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_front_end_opens_through_the_one_pipeline() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, dir) in front_ends(root) {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        assert!(!files.is_empty(), "{name}: no source in {}", dir.display());
        let mut calls_run = false;
        for file in &files {
            let code = code_of(file);
            for path in OPEN_PATHS {
                // `crate::session::…` and `session::…` alike.
                assert!(
                    !code.contains(path),
                    "{name}: {} calls {path} — open and analyse through session::run",
                    file.display()
                );
            }
            // `OpenTrace::open` runs it for a front end that keeps the trace open.
            calls_run |= ["session::run(", "session::analysed(", "OpenTrace::open("]
                .iter()
                .any(|call| code.contains(call));
        }
        assert!(calls_run, "{name} never calls session::run");
    }
}
