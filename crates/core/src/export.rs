//! Opening an Nsight Systems report (`.nsys-rep`, `.qdrep`) directly: the installed `nsys`
//! exports it to SQLite under the user's cache folder, never beside the report (whose
//! folder may be read-only or shared), and the export is opened. The export is keyed like
//! the loader's cache (path, size, modification time, inode, and the `nsys` version), so
//! a second open of the same report runs no export; it counts in the cache's size limit.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::load::{LoadError, Phase, Progress};

static DISABLED: AtomicBool = AtomicBool::new(false);
static NSYS: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Use `nsys` instead of looking for one (tests; `$NSYS` does the same for a process).
pub fn use_nsys(nsys: &Path) {
    *NSYS.lock().unwrap_or_else(|e| e.into_inner()) = Some(nsys.to_owned());
}

/// Never run `nsys` (`--no-export`): a report gets the page that says how to export it.
pub fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    !DISABLED.load(Ordering::Relaxed)
}

pub use crate::load::is_report;

/// The SQLite export beside `report` (same stem) when it is newer than the report: opened
/// as it is, without running `nsys`.
pub fn export_beside(report: &Path) -> Option<PathBuf> {
    let sqlite = report.with_extension("sqlite");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    (sqlite.is_file() && modified(&sqlite)? >= modified(report)?).then_some(sqlite)
}

/// Where `nsys` was looked for, in order: `$NSYS` alone when it is set, else the PATH,
/// then the usual install folders (newest version first).
pub fn places_to_look() -> Vec<PathBuf> {
    if let Some(nsys) = NSYS.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return vec![nsys];
    }
    if let Some(nsys) = std::env::var_os("NSYS").filter(|v| !v.is_empty()) {
        return vec![PathBuf::from(nsys)];
    }
    let mut places: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("nsys")).collect())
        .unwrap_or_default();
    places.extend(newest_first(
        Path::new("/opt/nvidia/nsight-systems"),
        |_| true,
        "bin/nsys",
    ));
    places.extend(newest_first(
        Path::new("/usr/local"),
        |name| name.starts_with("cuda"),
        "bin/nsys",
    ));
    places.push(PathBuf::from("/usr/lib/nsight-systems/bin/nsys"));
    places
}

/// `folder/*/tail` for the subfolders whose names `keep`, the highest version first.
fn newest_first(folder: &Path, keep: impl Fn(&str) -> bool, tail: &str) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = listing
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| keep(n))
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(version_numbers(n)));
    names
        .into_iter()
        .map(|n| folder.join(n).join(tail))
        .collect()
}

/// "2024.6.2" → [2024, 6, 2]: names compared as versions, not as text.
fn version_numbers(name: &str) -> Vec<u64> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter_map(|d| d.parse().ok())
        .collect()
}

/// The first `nsys` that exists and is executable; else every place looked.
pub fn locate() -> Result<PathBuf, Vec<PathBuf>> {
    let places = places_to_look();
    places
        .iter()
        .find(|p| is_executable(p))
        .cloned()
        .ok_or(places)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `nsys --version`'s version ("NVIDIA Nsight Systems version 2024.6.2.225-…" → "2024.6.2.225-…").
pub fn version_of(nsys: &Path) -> Result<String, String> {
    let out = Command::new(nsys)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nsys.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match (out.status.success(), line.split_whitespace().last()) {
        (true, Some(v)) => Ok(v.to_string()),
        _ => Err(format!(
            "{} --version failed ({}): {}",
            nsys.display(),
            out.status,
            last_lines(&String::from_utf8_lossy(&out.stderr), 3)
        )),
    }
}

/// An export ready to open, and how it came to be (said in the load report).
pub struct Exported {
    pub sqlite: PathBuf,
    pub how: String,
}

/// The SQLite export of `report`: the one beside it when newer, the one kept in the cache
/// for this version of the report and of `nsys`, or a new one written there by `nsys`.
/// `progress` hears every few tenths of a second while `nsys` runs; `cancel` ends it.
pub fn export(
    report: &Path,
    progress: &(dyn Fn(Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<Exported, LoadError> {
    if let Some(sqlite) = export_beside(report) {
        let how = format!(
            "the export beside the report ({}), newer than it: nsys not run",
            sqlite.display()
        );
        return Ok(Exported { sqlite, how });
    }
    let nsys = locate().map_err(|looked| LoadError::NoNsys {
        report: report.to_owned(),
        looked: looked
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    let failed = |detail| export_failed(report, detail);
    let version = version_of(&nsys).map_err(failed)?;
    let meta = std::fs::metadata(report).map_err(|e| crate::load::io_error(report, e))?;
    let folder = exports_folder();
    std::fs::create_dir_all(&folder)
        .map_err(|e| failed(format!("cannot create {}: {e}", folder.display())))?;
    let target = folder.join(format!("{}.sqlite", key_of(report, &meta, &version)));
    if target.is_file() {
        // Touched: the size limit evicts the least recently used first.
        let _ = std::fs::File::options()
            .append(true)
            .open(&target)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        let how = format!(
            "exported with nsys {version} before, kept in {}",
            target.display()
        );
        return Ok(Exported {
            sqlite: target,
            how,
        });
    }
    let temp = folder.join(format!(
        "{}.{}-{:x}.tmp.sqlite",
        target
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("export"),
        std::process::id(),
        fastrand::u64(..)
    ));
    let t0 = Instant::now();
    let result = run_nsys(&nsys, &version, report, &temp, progress, cancel).and_then(|()| {
        if temp.is_file() {
            std::fs::rename(&temp, &target)
                .map_err(|e| failed(format!("cannot keep the export: {e}")))
        } else {
            Err(failed(format!(
                "nsys {version} ended well but wrote no {}",
                temp.display()
            )))
        }
    });
    if let Err(e) = result {
        // Nothing half-written is left for a later open to trust.
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    crate::cache::tidy();
    let how = format!(
        "exported with nsys {version} in {:.1} s, kept in {}",
        t0.elapsed().as_secs_f64(),
        target.display()
    );
    Ok(Exported {
        sqlite: target,
        how,
    })
}

/// Runs the export into `temp`, polling so that a cancel ends the child at once.
fn run_nsys(
    nsys: &Path,
    version: &str,
    report: &Path,
    temp: &Path,
    progress: &(dyn Fn(Progress) + Sync),
    cancel: &AtomicBool,
) -> Result<(), LoadError> {
    let failed = |detail| export_failed(report, detail);
    let mut child = Command::new(nsys)
        .args([
            "export",
            "--type",
            "sqlite",
            "--include-blobs=true",
            "--force-overwrite=true",
            "--output",
        ])
        .arg(temp)
        .arg(report)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // A group of its own, so that a cancel ends whatever the export started too.
        .process_group(0)
        .spawn()
        .map_err(|e| failed(format!("cannot run {}: {e}", nsys.display())))?;
    // Read on a thread of its own: a full pipe would stop the child.
    let mut stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_string(&mut text);
        }
        text
    });
    let version: &'static str = interned(version);
    let t0 = Instant::now();
    let status = loop {
        if cancel.load(Ordering::Relaxed) {
            end_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            return Err(LoadError::Cancelled);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(failed(format!("waiting for nsys: {e}"))),
        }
        progress(Progress {
            phase: Phase::Exporting {
                nsys_version: version,
                seconds: t0.elapsed().as_secs() as u32,
            },
            fraction: 0.0,
            rows_read: 0,
        });
        std::thread::sleep(Duration::from_millis(50));
    };
    let errors = errors.join().unwrap_or_default();
    if status.success() {
        Ok(())
    } else {
        Err(failed(format!(
            "nsys {version} failed ({status}):\n{}",
            last_lines(&errors, 8)
        )))
    }
}

fn export_failed(report: &Path, detail: String) -> LoadError {
    LoadError::ExportFailed {
        report: report.to_owned(),
        detail,
    }
}

/// Ends the process group `leader` leads (the export and any process it started).
fn end_group(leader: u32) {
    // `kill -KILL -- -PGID`: the group as a whole, without unsafe code for libc's kill.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{leader}")])
        .stderr(Stdio::null())
        .status();
}

/// A version string that lives as long as the process, for the progress (one per version).
fn interned(text: &str) -> &'static str {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = seen.iter().find(|s| **s == text) {
        return s;
    }
    let s: &'static str = Box::leak(text.to_string().into_boxed_str());
    seen.push(s);
    s
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `$XDG_CACHE_HOME/nsys-explorer/exports`, or a folder of the system's temporary one when
/// the cache is off (`--no-cache`): an export is never written beside the report.
pub fn exports_folder() -> PathBuf {
    match crate::cache::folder() {
        Some(folder) => folder.join("exports"),
        None => std::env::temp_dir().join(format!("nsys-explorer-exports-{}", user_id())),
    }
}

fn user_id() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

/// The report's identity: canonical path, size, modification time, inode, nsys version.
fn key_of(report: &Path, meta: &std::fs::Metadata, version: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let canonical = std::fs::canonicalize(report).unwrap_or_else(|_| report.to_owned());
    let h = xxhash_rust::xxh3::xxh3_64(
        format!(
            "{}\0{}\0{}.{}\0{}\0{}",
            canonical.display(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ino(),
            version
        )
        .as_bytes(),
    );
    let stem = report
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("report")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_".contains(*c))
        .take(40)
        .collect::<String>();
    format!("{stem}-{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_folders_are_tried_newest_version_first() {
        let mut names = ["2023.4.1", "2024.10.1", "2024.6.2"];
        names.sort_by_key(|n| std::cmp::Reverse(version_numbers(n)));
        assert_eq!(names, ["2024.10.1", "2024.6.2", "2023.4.1"]);
    }

    #[test]
    fn only_the_last_lines_of_a_long_message_are_kept() {
        assert_eq!(last_lines("a\n\nb\nc\nd\n", 2), "c\nd");
        assert_eq!(last_lines("one", 5), "one");
    }
}
