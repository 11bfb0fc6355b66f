//! The documentation stays true: the README short, every relative link in it and in docs/
//! resolving, and the command-line reference naming every subcommand and option clap
//! knows (so a new option cannot ship undocumented).

use std::path::{Path, PathBuf};

use clap::CommandFactory;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    for e in std::fs::read_dir(root().join("docs")).expect("a docs folder") {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    files
}

/// The targets of `[text](target)` and `![alt](target)` links.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
        }
    }
    out
}

#[test]
fn the_readme_is_short_and_keeps_the_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines");
    assert!(
        readme.contains("cargo run --release"),
        "the command that runs the app"
    );
    assert!(
        readme.contains(".ci/run") || readme.contains("cargo test"),
        "the test command"
    );
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for target in links(&text) {
            let path = target.split('#').next().unwrap_or("");
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|p| target.starts_with(p));
            if external || path.is_empty() || path.contains(' ') {
                continue;
            }
            if !dir.join(path).exists() {
                broken.push(format!("{}: {target}", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

fn names(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if let Some(long) = arg.get_long()
            && !arg.is_hide_set()
            && long != "help"
            && long != "version"
        {
            out.push(format!("--{long}"));
        }
    }
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let name = format!("{prefix}{}", sub.get_name());
        out.push(sub.get_name().to_string());
        names(sub, &format!("{name} "), out);
    }
}

#[test]
fn the_cli_reference_names_every_subcommand_and_option() {
    let reference = std::fs::read_to_string(root().join("docs/cli.md")).unwrap();
    let mut all = Vec::new();
    names(&nsys_explorer::cli::Cli::command(), "", &mut all);
    assert!(all.len() > 20, "{all:?}");
    let missing: Vec<&String> = all
        .iter()
        .filter(|n| !reference.contains(n.as_str()))
        .collect();
    assert!(missing.is_empty(), "not in docs/cli.md: {missing:?}");
    assert!(Path::new(&root().join("docs/cli.md")).is_file());
}
