//! The cache folder: where it is, what an entry's file is called and holds in its header,
//! writing one atomically, reading one only when every check passes, and evicting the least
//! recently used entries past the size limit.
//!
//! An entry is `HEADER payload`. The header holds a magic, the format version, a byte-order
//! mark, the entry's whole key (trace identity, program, what it holds), the payload's
//! length and its xxh3 checksum. Anything that does not match is a miss, and a damaged
//! file is deleted so that it is written again.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use super::codec::{Bad, Reader, Writer};

const MAGIC: &[u8; 8] = b"NSYSXCA\x01";
const BYTE_ORDER: u32 = 0x0102_0304;
/// Bump when the payload of any entry changes shape.
pub const FORMAT_VERSION: u32 = 11;
/// The default size limit of the folder (`NSYS_EXPLORER_CACHE_LIMIT` sets another).
pub const DEFAULT_LIMIT_BYTES: u64 = 10 << 30;
/// What an entry's file name ends with (temporary files end otherwise).
const EXTENSION: &str = "nxc";

static DISABLED: AtomicBool = AtomicBool::new(false);
static FOLDER: Mutex<Option<PathBuf>> = Mutex::new(None);
static WARNED: AtomicBool = AtomicBool::new(false);

/// No cache for the rest of the process (`--no-cache`).
pub fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// Use `folder` instead of the user's cache folder (tests, benchmarks).
pub fn set_folder(folder: &Path) {
    *FOLDER.lock().unwrap_or_else(|e| e.into_inner()) = Some(folder.to_owned());
    DISABLED.store(false, Ordering::Relaxed);
}

/// `$XDG_CACHE_HOME/nsys-explorer` (default `~/.cache/nsys-explorer`); `None` when the
/// cache is off (`--no-cache`, `NSYS_EXPLORER_NO_CACHE=1`) or there is no home.
pub fn folder() -> Option<PathBuf> {
    if DISABLED.load(Ordering::Relaxed)
        || std::env::var_os("NSYS_EXPLORER_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0")
    {
        return None;
    }
    if let Some(f) = FOLDER.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Some(f);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("nsys-explorer"))
}

/// The folder's size limit: `NSYS_EXPLORER_CACHE_LIMIT` (bytes, or with K, M, G), else
/// [`DEFAULT_LIMIT_BYTES`].
pub fn limit_bytes() -> u64 {
    std::env::var("NSYS_EXPLORER_CACHE_LIMIT")
        .ok()
        .and_then(|v| parse_size(&v))
        .unwrap_or(DEFAULT_LIMIT_BYTES)
}

fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches(['B', 'I'])
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// Says once per process that the cache is not used, and why.
fn warn_once(why: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("nsys-explorer: working without a cache: {why}");
    }
}

/// The file of the entry with `key`: its name is the key's hash (the header holds the key
/// itself, so two keys with one hash cannot be confused).
pub fn entry_path(folder: &Path, key: &str) -> PathBuf {
    let hash = xxhash_rust::xxh3::xxh3_128(key.as_bytes());
    folder.join(format!("{hash:032x}.{EXTENSION}"))
}

fn header(key: &str, payload_len: u64, checksum: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(40 + key.len());
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&BYTE_ORDER.to_ne_bytes());
    h.extend_from_slice(&(key.len() as u32).to_le_bytes());
    h.extend_from_slice(key.as_bytes());
    h.extend_from_slice(&payload_len.to_le_bytes());
    h.extend_from_slice(&checksum.to_le_bytes());
    h
}

/// Reads the entry `key` with `decode`; `None` when there is none, it is another key's or
/// another version's, or anything in it is wrong (then the file is deleted).
pub fn read<T>(
    key: &str,
    decode: impl FnOnce(&mut Reader<BufReader<File>>) -> Result<T, Bad>,
) -> Option<T> {
    let folder = folder()?;
    let path = entry_path(&folder, key);
    let file = File::open(&path).ok()?;
    let handle = file.try_clone().ok()?;
    match read_file(file, key, decode) {
        Ok(value) => {
            // Recently used: eviction goes by modification time (atime is often off).
            let _ = handle.set_modified(SystemTime::now());
            Some(value)
        }
        Err(Bad::Damaged(why)) => {
            eprintln!(
                "nsys-explorer: cache entry {} is damaged ({why}); rebuilding it",
                path.display()
            );
            let _ = fs::remove_file(&path);
            None
        }
        Err(Bad::Io(_)) => None,
    }
}

fn read_file<T>(
    file: File,
    key: &str,
    decode: impl FnOnce(&mut Reader<BufReader<File>>) -> Result<T, Bad>,
) -> Result<T, Bad> {
    let file_len = file.metadata()?.len();
    let mut inp = BufReader::with_capacity(1 << 20, file);
    let mut fixed = [0u8; 20];
    inp.read_exact(&mut fixed)?;
    if &fixed[..8] != MAGIC {
        return Err(Bad::Damaged("not a cache file"));
    }
    let word = |at: usize| u32::from_le_bytes(fixed[at..at + 4].try_into().unwrap());
    if word(8) != FORMAT_VERSION {
        return Err(Bad::Damaged("another format version"));
    }
    if fixed[12..16] != BYTE_ORDER.to_ne_bytes() {
        return Err(Bad::Damaged("another byte order"));
    }
    let key_len = word(16) as u64;
    if key_len != key.len() as u64 {
        return Err(Bad::Damaged("another key"));
    }
    let mut stored_key = vec![0u8; key.len()];
    inp.read_exact(&mut stored_key)?;
    if stored_key != key.as_bytes() {
        return Err(Bad::Damaged("another key"));
    }
    let mut lengths = [0u8; 16];
    inp.read_exact(&mut lengths)?;
    let payload_len = u64::from_le_bytes(lengths[..8].try_into().unwrap());
    let checksum = u64::from_le_bytes(lengths[8..].try_into().unwrap());
    let header_len = 20 + key_len + 16;
    if file_len != header_len + payload_len {
        return Err(Bad::Damaged("truncated or extended"));
    }
    let mut reader = Reader::new(inp, payload_len);
    let value = decode(&mut reader)?;
    reader.finish(checksum)?;
    Ok(value)
}

/// Writes the entry `key` with `encode`: into a temporary file of the folder, renamed into
/// place once whole, so a reader (or a second process writing the same entry) only ever
/// sees a complete file. Failures are said once and otherwise ignored: the cache only ever
/// saves time. Returns the bytes kept. (Eviction is the caller's, once a whole answer is
/// written: see [`tidy`].)
pub fn write(
    key: &str,
    encode: impl FnOnce(&mut Writer<BufWriter<File>>) -> io::Result<()>,
) -> u64 {
    let Some(folder) = folder() else { return 0 };
    let path = entry_path(&folder, key);
    let temp = folder.join(format!(
        "{}.{}-{:x}.tmp",
        path.file_stem().and_then(|s| s.to_str()).unwrap_or("entry"),
        std::process::id(),
        fastrand::u64(..)
    ));
    let result = (|| -> io::Result<u64> {
        fs::create_dir_all(&folder)?;
        let mut file = File::create(&temp)?;
        let placeholder = header(key, 0, 0);
        file.write_all(&placeholder)?;
        let mut w = Writer::new(BufWriter::with_capacity(1 << 20, file));
        encode(&mut w)?;
        let (out, len, checksum) = w.finish()?;
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header(key, len, checksum))?;
        drop(file);
        fs::rename(&temp, &path)?;
        Ok(placeholder.len() as u64 + len)
    })();
    match result {
        Ok(bytes) => bytes,
        Err(e) => {
            let _ = fs::remove_file(&temp);
            warn_once(&format!("cannot write {} ({e})", folder.display()));
            0
        }
    }
}

/// Evicts what is past the size limit ([`limit_bytes`]) from the cache folder.
pub fn tidy() {
    if let Some(folder) = folder() {
        evict(&folder, limit_bytes());
    }
}

/// Deletes the entry `key`, if there is one.
pub fn remove(key: &str) {
    if let Some(folder) = folder() {
        let _ = fs::remove_file(entry_path(&folder, key));
    }
}

/// Deletes the least recently used entries until the folder holds at most `limit` bytes,
/// and temporary files an interrupted write left (untouched for ten minutes). Reports'
/// SQLite exports (`exports/`, see `crate::export`) count and go by the same rule.
pub fn evict(folder: &Path, limit: u64) {
    let now = SystemTime::now();
    let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for (dir, kept) in [
        (folder.to_owned(), EXTENSION),
        (folder.join("exports"), "sqlite"),
    ] {
        let Ok(listing) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().unwrap_or(now);
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let temporary = name.ends_with(".tmp") || name.ends_with(".tmp.sqlite");
            if temporary {
                if now.duration_since(modified).unwrap_or_default() > Duration::from_secs(600) {
                    let _ = fs::remove_file(&path);
                }
            } else if path.extension().and_then(|e| e.to_str()) == Some(kept) {
                entries.push((modified, meta.len(), path));
            }
        }
    }
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= limit {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("10G"), Some(10 << 30));
        assert_eq!(parse_size("500 MB"), Some(500 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn the_least_recently_used_entries_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(3600);
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            let path = dir.path().join(format!("{name}.{EXTENSION}"));
            fs::write(&path, vec![0u8; 100]).unwrap();
            let f = File::options().write(true).open(&path).unwrap();
            f.set_modified(old + Duration::from_secs(i as u64 * 60))
                .unwrap();
        }
        let stale = dir.path().join("x.123-ab.tmp");
        fs::write(&stale, b"half").unwrap();
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        evict(dir.path(), 250);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            vec![format!("b.{EXTENSION}"), format!("c.{EXTENSION}")]
        );
    }
}
