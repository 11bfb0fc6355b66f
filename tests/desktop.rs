//! Desktop integration, installed into temporary XDG folders: with the XDG tools (the
//! default handler as `xdg-mime` sees it, the entry as `desktop-file-validate` sees it),
//! and without them (plain copies); uninstall leaves nothing behind either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_nsys-explorer");

struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for d in ["data", "config"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Self { _dir: dir, root }
    }

    /// `program` with this home's XDG folders and no desktop session to detect.
    fn command(&self, program: &str, path: Option<&Path>) -> Command {
        let mut c = Command::new(program);
        c.env("HOME", &self.root)
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_DIRS", self.root.join("data"))
            .env_remove("XDG_CURRENT_DESKTOP")
            .env_remove("DESKTOP_SESSION")
            .env_remove("KDE_FULL_SESSION")
            .env_remove("GNOME_DESKTOP_SESSION_ID");
        if let Some(p) = path {
            c.env("PATH", p);
        }
        c
    }

    fn run(&self, program: &str, args: &[&str], path: Option<&Path>) -> Output {
        let out = self.command(program, path).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Every file (not folder) under the home.
    fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
            } else {
                out.push(p);
            }
        }
        out
    }
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(tool).is_file()))
}

#[test]
fn install_with_the_xdg_tools_makes_the_default_handler_and_uninstall_removes_it_all() {
    let tools = ["xdg-mime", "xdg-desktop-menu", "desktop-file-validate"];
    if let Some(missing) = tools.iter().find(|t| !have(t)) {
        // .ci/run installs them (xdg-utils, desktop-file-utils); say so loudly elsewhere.
        eprintln!("SKIPPED: {missing} is not installed (apt install xdg-utils desktop-file-utils)");
        return;
    }
    let home = Home::new();
    let out = home.run(BIN, &["install-desktop", "--default"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let entry = home.root.join("data/applications/nsys-explorer.desktop");
    assert!(entry.is_file(), "{stdout}");
    let text = std::fs::read_to_string(&entry).unwrap();
    assert!(text.contains(&format!("Exec={BIN} %f")), "{text}");
    assert!(text.contains("MimeType=application/vnd.sqlite3;application/x-nsys-rep;"));
    assert!(
        home.root
            .join("data/mime/packages/nsys-explorer.xml")
            .is_file()
    );
    assert!(
        home.root
            .join("data/icons/hicolor/48x48/apps/nsys-explorer.png")
            .is_file()
    );
    assert!(
        home.root
            .join("data/icons/hicolor/scalable/apps/nsys-explorer.svg")
            .is_file()
    );

    let validate = home.run("desktop-file-validate", &[entry.to_str().unwrap()], None);
    assert!(
        validate.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&validate.stdout)
    );
    for mime in ["application/vnd.sqlite3", "application/x-nsys-rep"] {
        let q = home.run("xdg-mime", &["query", "default", mime], None);
        assert_eq!(
            String::from_utf8_lossy(&q.stdout).trim(),
            "nsys-explorer.desktop",
            "{mime}"
        );
    }

    home.run(BIN, &["uninstall-desktop"], None);
    assert_eq!(
        home.files(),
        Vec::<PathBuf>::new(),
        "uninstall leaves nothing"
    );
    let q = home.run(
        "xdg-mime",
        &["query", "default", "application/vnd.sqlite3"],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&q.stdout).trim(), "");
}

#[test]
fn install_without_the_xdg_tools_copies_and_says_so_and_uninstall_removes_it_all() {
    let home = Home::new();
    let empty_path = home.root.join("bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let out = home.run(BIN, &["install-desktop", "--default"], Some(&empty_path));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("xdg-mime not found"), "{stdout}");
    assert!(
        home.root
            .join("data/applications/nsys-explorer.desktop")
            .is_file()
    );
    assert!(
        home.root
            .join("data/mime/packages/nsys-explorer.xml")
            .is_file()
    );
    // The manual page, where `man` finds it, naming every subcommand.
    let man = std::fs::read_to_string(home.root.join("data/man/man1/nsys-explorer.1")).unwrap();
    assert!(
        man.starts_with(".ie") || man.contains(".TH"),
        "{}",
        &man[..80.min(man.len())]
    );
    for sub in ["report", "diff", "what-if", "install-desktop"] {
        assert!(
            man.replace("\\-", "-").contains(sub),
            "{sub} in the manual page"
        );
    }
    let defaults = std::fs::read_to_string(home.root.join("config/mimeapps.list")).unwrap();
    assert!(
        defaults
            .contains("[Default Applications]\napplication/vnd.sqlite3=nsys-explorer.desktop\n"),
        "{defaults}"
    );

    // A default of another app's, added later, survives the uninstall.
    let other = "text/plain=other.desktop";
    std::fs::write(
        home.root.join("config/mimeapps.list"),
        format!("{defaults}{other}\n"),
    )
    .unwrap();
    home.run(BIN, &["uninstall-desktop"], Some(&empty_path));
    let left = std::fs::read_to_string(home.root.join("config/mimeapps.list")).unwrap();
    assert!(
        left.contains(other) && !left.contains("nsys-explorer"),
        "{left}"
    );
    std::fs::remove_file(home.root.join("config/mimeapps.list")).unwrap();
    assert_eq!(
        home.files(),
        Vec::<PathBuf>::new(),
        "uninstall leaves nothing else"
    );
}

#[test]
fn uninstall_without_an_install_says_so() {
    let home = Home::new();
    let out = home
        .command(BIN, None)
        .arg("uninstall-desktop")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to uninstall"));
}
