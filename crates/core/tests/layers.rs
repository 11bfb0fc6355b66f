//! The core's layers stay as drawn: no import cycle between its top-level modules. Read
//! from the source (`crate::MODULE` paths outside comments), so that a new edge that
//! closes a cycle fails here rather than in a review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// The code of a file, without comments and without its unit tests (a test may use
/// whatever module it likes to build its input).
fn code_of(text: &str) -> String {
    let product = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    product
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Top-level module → the top-level modules its code names.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(from) = top_module(src, f) else {
            continue;
        };
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        let uses = graph.entry(from.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name != from && modules.contains(&name) {
                uses.insert(name);
            }
        }
        // `use crate::{a, b::c}` lists.
        for (at, _) in code.match_indices("crate::{") {
            let list = &code[at + 8..];
            let list = &list[..list.find('}').unwrap_or(list.len())];
            for item in list.split(',') {
                let name = item.trim().split("::").next().unwrap_or("").to_string();
                if name != from && modules.contains(&name) {
                    uses.insert(name);
                }
            }
        }
    }
    graph
}

fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_string())
}

/// A cycle through `start`, as the modules on it, if there is one.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                return Some(path.clone());
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn the_cores_top_level_modules_import_one_another_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = edges(&src);
    assert!(graph.len() > 10, "modules read: {:?}", graph.keys());
    // The test can see an edge: the loader builds the trace.
    assert!(graph["load"].contains("trace"), "{:?}", graph["load"]);
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_from(&graph, m))
        .map(|c| c.join(" → "))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert!(cycle_from(&graph, "a").is_none());
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycle_from(&graph, "a").unwrap(), ["a", "b", "c"]);
}
