//! Desktop integration for the current user (freedesktop.org): the `.desktop` entry, the
//! MIME types (`*.sqlite`, `*.nsys-rep`) and the icon, installed with the XDG tools when
//! they are there and by plain copies otherwise; optionally the default handler. A
//! manifest of what was written makes `uninstall-desktop` remove exactly that.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const DESKTOP_ID: &str = "nsys-explorer.desktop";
pub const MIME_TYPES: [&str; 2] = ["application/vnd.sqlite3", "application/x-nsys-rep"];
const DESKTOP_ENTRY: &str = include_str!("../resources/nsys-explorer.desktop");
const MIME_XML: &str = include_str!("../resources/nsys-explorer-mime.xml");
const ICON_SVG: &[u8] = include_bytes!("../resources/nsys-explorer.svg");
const ICON_PNGS: [(u32, &[u8]); 6] = [
    (
        16,
        include_bytes!("../resources/icons/16x16/nsys-explorer.png"),
    ),
    (
        32,
        include_bytes!("../resources/icons/32x32/nsys-explorer.png"),
    ),
    (
        48,
        include_bytes!("../resources/icons/48x48/nsys-explorer.png"),
    ),
    (
        64,
        include_bytes!("../resources/icons/64x64/nsys-explorer.png"),
    ),
    (
        128,
        include_bytes!("../resources/icons/128x128/nsys-explorer.png"),
    ),
    (
        256,
        include_bytes!("../resources/icons/256x256/nsys-explorer.png"),
    ),
];
/// The window icon, 64×64 RGBA (made from the SVG with ImageMagick; see resources/README).
pub const WINDOW_ICON_RGBA: &[u8] = include_bytes!("../resources/icon-64.rgba");

/// The user's XDG folders.
pub struct XdgDirs {
    pub data_home: PathBuf,
    pub config_home: PathBuf,
    /// For the legacy menu folders `xdg-desktop-menu` also fills (~/.gnome/apps).
    pub home: Option<PathBuf>,
}

impl XdgDirs {
    pub fn from_env() -> Result<Self, String> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let dir = |var: &str, fallback: &str| -> Result<PathBuf, String> {
            match std::env::var_os(var).filter(|v| !v.is_empty()) {
                Some(v) => Ok(PathBuf::from(v)),
                None => home
                    .as_ref()
                    .map(|h| h.join(fallback))
                    .ok_or_else(|| format!("neither {var} nor HOME is set")),
            }
        };
        Ok(Self {
            data_home: dir("XDG_DATA_HOME", ".local/share")?,
            config_home: dir("XDG_CONFIG_HOME", ".config")?,
            home,
        })
    }

    fn manifest(&self) -> PathBuf {
        self.data_home.join("nsys-explorer/installed-files.txt")
    }
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(tool).is_file()))
}

/// Runs an XDG tool; its failure is reported, not fatal (the plain copies are in place).
fn run(tool: &str, args: &[&str], notes: &mut Vec<String>) -> bool {
    match Command::new(tool).args(args).output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            notes.push(format!(
                "{tool} {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            false
        }
        Err(e) => {
            notes.push(format!("could not run {tool}: {e}"));
            false
        }
    }
}

/// The desktop entry with `Exec` naming this executable, so the file manager finds it
/// whatever the session's PATH.
fn desktop_entry(exe: &Path) -> String {
    let exec = exe.display().to_string();
    let quoted = if exec.contains(' ') {
        format!("\"{exec}\"")
    } else {
        exec
    };
    DESKTOP_ENTRY.replace("Exec=nsys-explorer %f", &format!("Exec={quoted} %f"))
}

/// What `install` or `uninstall` did, in lines for the user.
pub struct Outcome {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// Every file and folder under the places install touches (not the whole home).
fn snapshot(dirs: &XdgDirs) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for root in [
        dirs.data_home.join("applications"),
        dirs.data_home.join("mime"),
        dirs.data_home.join("icons"),
        dirs.data_home.join("man"),
        dirs.data_home.join("nsys-explorer"),
        dirs.config_home.join("menus"),
    ]
    .into_iter()
    .chain(
        dirs.home
            .iter()
            .flat_map(|h| [h.join(".gnome"), h.join(".kde")]),
    ) {
        let mut stack = vec![root];
        while let Some(path) = stack.pop() {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir()
                && let Ok(entries) = fs::read_dir(&path)
            {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
            out.insert(path);
        }
    }
    out
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Installs the desktop entry, MIME types, icons and the manual page `man_page` (roff,
/// under `~/.local/share/man/man1/`, where `man` looks by default).
pub fn install(
    dirs: &XdgDirs,
    exe: &Path,
    make_default: bool,
    man_page: &[u8],
) -> Result<Outcome, String> {
    let before = snapshot(dirs);
    let mut notes = Vec::new();
    // Staged in our own folder: the XDG tools install from files named like their targets.
    let stage = dirs.data_home.join("nsys-explorer");
    let staged_desktop = stage.join(DESKTOP_ID);
    let staged_mime = stage.join("nsys-explorer.xml");
    write_file(&staged_desktop, desktop_entry(exe).as_bytes())?;
    write_file(&staged_mime, MIME_XML.as_bytes())?;
    let apps = dirs.data_home.join("applications");
    let mime = dirs.data_home.join("mime");
    let icons = dirs.data_home.join("icons/hicolor");
    let lossy = |p: &Path| p.to_string_lossy().into_owned();

    if have("xdg-desktop-menu") {
        run(
            "xdg-desktop-menu",
            &[
                "install",
                "--mode",
                "user",
                "--novendor",
                &lossy(&staged_desktop),
            ],
            &mut notes,
        );
    } else {
        notes.push(
            "xdg-desktop-menu not found (package xdg-utils): copied the entry instead".into(),
        );
    }
    if !apps.join(DESKTOP_ID).is_file() {
        write_file(&apps.join(DESKTOP_ID), desktop_entry(exe).as_bytes())?;
    }
    if have("xdg-mime") {
        run(
            "xdg-mime",
            &[
                "install",
                "--mode",
                "user",
                "--novendor",
                &lossy(&staged_mime),
            ],
            &mut notes,
        );
    } else {
        notes.push("xdg-mime not found (package xdg-utils): copied the MIME types instead".into());
    }
    if !mime.join("packages/nsys-explorer.xml").is_file() {
        write_file(
            &mime.join("packages/nsys-explorer.xml"),
            MIME_XML.as_bytes(),
        )?;
        if have("update-mime-database") {
            run("update-mime-database", &[&lossy(&mime)], &mut notes);
        } else {
            notes.push("update-mime-database not found (package shared-mime-info): *.sqlite and *.nsys-rep are recognised once it runs".into());
        }
    }
    write_file(&icons.join("scalable/apps/nsys-explorer.svg"), ICON_SVG)?;
    write_file(&dirs.data_home.join("man/man1/nsys-explorer.1"), man_page)?;
    for (size, png) in ICON_PNGS {
        write_file(
            &icons.join(format!("{size}x{size}/apps/nsys-explorer.png")),
            png,
        )?;
    }
    if have("update-desktop-database") {
        run("update-desktop-database", &[&lossy(&apps)], &mut notes);
    } else {
        notes.push("update-desktop-database not found (package desktop-file-utils): the file manager may offer the app only after the next login".into());
    }
    if make_default {
        if have("xdg-mime") {
            let mut args = vec!["default", DESKTOP_ID];
            args.extend(MIME_TYPES);
            run("xdg-mime", &args, &mut notes);
        } else {
            notes.push("xdg-mime not found: wrote the defaults into mimeapps.list directly".into());
            set_defaults(&dirs.config_home.join("mimeapps.list"))?;
        }
    }
    // The manifest: everything that appeared, files and folders (mimeapps.list is shared
    // with other apps and is edited, not listed).
    let manifest_path = dirs.manifest();
    let mut files: Vec<PathBuf> = snapshot(dirs).difference(&before).cloned().collect();
    files.push(manifest_path.clone());
    let manifest: String = files.iter().map(|p| format!("{}\n", p.display())).collect();
    write_file(&manifest_path, manifest.as_bytes())?;
    Ok(Outcome { files, notes })
}

/// Adds `type=nsys-explorer.desktop` for our types to `[Default Applications]`.
fn set_defaults(mimeapps: &Path) -> Result<(), String> {
    let text = fs::read_to_string(mimeapps).unwrap_or_default();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !MIME_TYPES.iter().any(|t| l.starts_with(&format!("{t}="))))
        .map(str::to_string)
        .collect();
    let section = lines
        .iter()
        .position(|l| l.trim() == "[Default Applications]")
        .unwrap_or_else(|| {
            lines.push("[Default Applications]".into());
            lines.len() - 1
        });
    for (k, t) in MIME_TYPES.iter().enumerate() {
        lines.insert(section + 1 + k, format!("{t}={DESKTOP_ID}"));
    }
    write_file(mimeapps, (lines.join("\n") + "\n").as_bytes())
}

/// Removes every file and folder `install` created and our defaults from mimeapps.list,
/// then refreshes the databases if other apps' entries remain in them.
pub fn uninstall(dirs: &XdgDirs) -> Result<Outcome, String> {
    let mut notes = Vec::new();
    let manifest = dirs.manifest();
    let listed = fs::read_to_string(&manifest).map_err(|_| {
        format!(
            "nothing to uninstall: {} not found (was install-desktop run with the same XDG_DATA_HOME?)",
            manifest.display()
        )
    })?;
    let mut paths: Vec<PathBuf> = listed
        .lines()
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect();
    // Files first, then folders deepest first (each only if empty).
    paths.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    let mut removed = Vec::new();
    for p in paths.iter().filter(|p| !p.is_dir()) {
        if fs::remove_file(p).is_ok() {
            removed.push(p.clone());
        }
    }
    for p in paths.iter().filter(|p| p.is_dir()) {
        if fs::remove_dir(p).is_ok() {
            removed.push(p.clone());
        }
    }

    let mimeapps = dirs.config_home.join("mimeapps.list");
    if let Ok(text) = fs::read_to_string(&mimeapps) {
        let ours = |l: &str| {
            l.contains(&format!("={DESKTOP_ID}")) && MIME_TYPES.iter().any(|t| l.starts_with(t))
        };
        let kept: Vec<&str> = text.lines().filter(|l| !ours(l)).collect();
        if kept
            .iter()
            .all(|l| l.trim().is_empty() || l.trim().starts_with('['))
        {
            fs::remove_file(&mimeapps).ok();
            removed.push(mimeapps);
        } else {
            write_file(&mimeapps, (kept.join("\n") + "\n").as_bytes())?;
        }
    }
    let mime = dirs.data_home.join("mime");
    if have("update-mime-database") && !is_empty_dir(&mime.join("packages")) {
        run(
            "update-mime-database",
            &[&mime.to_string_lossy()],
            &mut notes,
        );
    }
    let apps = dirs.data_home.join("applications");
    if have("update-desktop-database") && !is_empty_dir(&apps) {
        run(
            "update-desktop-database",
            &[&apps.to_string_lossy()],
            &mut notes,
        );
    }
    Ok(Outcome {
        files: removed,
        notes,
    })
}

fn is_empty_dir(dir: &Path) -> bool {
    fs::read_dir(dir).map_or(true, |mut e| e.next().is_none())
}
