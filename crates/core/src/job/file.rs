//! A summary's file: `NSXSUMRY`, the format's version, the body's length and xxh3
//! checksum, then the body: the summary's JSON (all but the collectives) and each GPU's
//! collectives as columns of variable-length integers, times as steps from the one before
//! (a collective costs ~30 bytes; a 500 MB rank's summary is well under 1 % of it).
//! Written to a temporary name and renamed; read back only when the magic, the version and
//! the checksum all hold, and every length is checked against the bytes left (a damaged
//! file is an error, never a panic or a huge allocation).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::summary::{CollectiveColumn as Column, CollectiveColumns, RankSummary};

/// A summary's first bytes (the loader knows them too, to name a summary given where an
/// export is wanted).
const MAGIC: &[u8; 8] = crate::load::sniff::SUMMARY_MAGIC;
/// Bumped whenever the layout or the meaning of a field changes: a summary of another
/// version is refused (summarise the export again), never misread. 2: a collective's time
/// since the one before is never negative (one graph launch releasing both), and every
/// time and length is checked when read.
pub const FORMAT_VERSION: u32 = 2;
const HEADER_LEN: usize = 8 + 4 + 8 + 8;
/// How much of the export's head its content hash covers: SQLite's header (with its change
/// counter) and the first pages.
const HEAD_BYTES: u64 = 64 * 1024;

/// Which export a summary was made from, as it was then: a summary whose export is on this
/// machine and differs is refused.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileIdentity {
    pub path: PathBuf,
    pub size: u64,
    /// Modification time, ns since the Unix epoch.
    pub mtime_ns: i64,
    /// xxh3 of the first 64 KiB.
    pub head_hash: u64,
}

impl FileIdentity {
    pub fn of(path: &Path) -> Result<Self, String> {
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        let meta = std::fs::metadata(path).map_err(err)?;
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i64);
        let mut head = Vec::new();
        std::fs::File::open(path)
            .map_err(err)?
            .take(HEAD_BYTES)
            .read_to_end(&mut head)
            .map_err(err)?;
        Ok(Self {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            size: meta.len(),
            mtime_ns,
            head_hash: xxhash_rust::xxh3::xxh3_64(&head),
        })
    }

    /// `Err` with the reason when the export is on this machine and is no longer the file
    /// summarised; `Ok` when it is the same or not here (summaries copied off the cluster).
    pub fn check_unchanged(&self) -> Result<(), String> {
        if !self.path.exists() {
            return Ok(());
        }
        let now = Self::of(&self.path)?;
        if now.size != self.size || now.head_hash != self.head_hash || now.mtime_ns != self.mtime_ns
        {
            return Err(format!(
                "{} changed since it was summarised ({} bytes then, {} now): summarize it again",
                self.path.display(),
                self.size,
                now.size
            ));
        }
        Ok(())
    }
}

/// The summary as bytes.
pub fn encode(summary: &RankSummary) -> Vec<u8> {
    let json = serde_json::to_vec(summary).expect("a summary serialises");
    let mut body = Vec::with_capacity(json.len() + 32 * summary.collectives());
    put_uint(&mut body, json.len() as u64);
    body.extend_from_slice(&json);
    for gpu in &summary.gpus {
        put_collectives(&mut body, &gpu.collectives);
    }
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A summary from its bytes (`name` for the messages).
pub fn decode(bytes: &[u8], name: &str) -> Result<RankSummary, String> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(format!(
            "{name}: not an nsys-explorer summary (make one with `nsys-explorer summarize`)"
        ));
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(format!(
            "{name}: a summary of format {version}, made by another version of nsys-explorer (this one reads format {FORMAT_VERSION}): summarize the export again"
        ));
    }
    let (len, checksum) = (word(12), word(20));
    let body = &bytes[HEADER_LEN..];
    if body.len() as u64 != len || xxhash_rust::xxh3::xxh3_64(body) != checksum {
        return Err(format!(
            "{name}: damaged summary (its checksum does not match: truncated or altered in a copy); summarize the export again"
        ));
    }
    let damaged = |what: &str| format!("{name}: damaged summary ({what})");
    let mut r = Cursor { bytes: body, at: 0 };
    let json_len = r.uint().ok_or_else(|| damaged("length"))? as usize;
    let json = r.take(json_len).ok_or_else(|| damaged("length"))?;
    let mut summary: RankSummary =
        serde_json::from_slice(json).map_err(|e| damaged(&e.to_string()))?;
    for gpu in &mut summary.gpus {
        gpu.collectives = get_collectives(&mut r).ok_or_else(|| damaged("collectives"))?;
    }
    if r.at != body.len() {
        return Err(damaged("trailing bytes"));
    }
    let strings = summary.strings.len() as u32;
    let names_ok = |ids: &[u32]| {
        ids.iter()
            .all(|&i| i == super::summary::NO_TEXT || i < strings)
    };
    if !summary.gpus.iter().all(|g| {
        let c = &g.collectives;
        names_ok(&c.name) && names_ok(&c.comm) && names_ok(&c.call) && names_ok(&c.nvtx)
    }) {
        return Err(damaged("a name out of range"));
    }
    check_values(&summary).map_err(damaged)?;
    Ok(summary)
}

// Times a summary may hold, as a trace may: the ns of a clock (or of the Unix epoch,
// ~2^60.6 today) with room to subtract any two and add a few differences without overflow.
use crate::trace::TIME_LIMIT;

/// What the reduce relies on, checked once as the summary is read (a summary is a file: its
/// checksum says it was not damaged in a copy, not that whoever wrote it was right): every
/// time within [`TIME_LIMIT`], every span, collective and duration not negative,
/// collectives in start order, iterations counted alike and the warm-up among them.
fn check_values(summary: &RankSummary) -> Result<(), &'static str> {
    let time = |t: i64| (-TIME_LIMIT..=TIME_LIMIT).contains(&t);
    let length = |ns: i64| (0..=TIME_LIMIT).contains(&ns);
    let span = |(a, b): (i64, i64)| time(a) && time(b) && a <= b;
    if !summary
        .utc_start_ns
        .is_none_or(|t| (0..=2 * TIME_LIMIT).contains(&t))
    {
        return Err("its UTC start");
    }
    for g in &summary.gpus {
        if !span(g.window_ns) {
            return Err("a GPU's window");
        }
        let b = &g.breakdown_ns;
        if ![
            b.compute_only,
            b.nccl_only,
            b.overlap,
            b.memory_only,
            b.idle,
        ]
        .into_iter()
        .all(length)
        {
            return Err("a GPU's breakdown");
        }
        if !g
            .top_gaps
            .iter()
            .all(|x| time(x.start_ns) && length(x.duration_ns))
        {
            return Err("a gap");
        }
        if g.iteration_spans.len() != g.iteration_durations_ns.len()
            || g.iteration_warmup > g.iteration_spans.len()
            || !length(g.iteration_median_ns)
            || !g.iteration_durations_ns.iter().all(|&d| length(d))
            || !g.iteration_spans.iter().flatten().all(|&s| span(s))
        {
            return Err("iterations");
        }
        let c = &g.collectives;
        let starts_in_order = c.start.windows(2).all(|w| w[0] <= w[1]);
        let each = (0..c.len()).all(|i| {
            span((c.start[i], c.end[i]))
                && time(c.call_start[i])
                && time(c.cpu_start[i])
                && length(c.call_ns[i])
                && length(c.cpu_ns[i])
                && length(c.since_ns[i])
        });
        // Their time in all within the limit too: the reduce adds them up.
        let total = each
            .then(|| (0..c.len()).try_fold(0i64, |sum, i| sum.checked_add(c.end[i] - c.start[i])))
            .flatten();
        if !starts_in_order || total.is_none_or(|t| t > TIME_LIMIT) {
            return Err("collectives");
        }
    }
    Ok(())
}

/// Writes `summary` to `path` (its folder made if missing): to a temporary name in the same
/// folder, renamed once whole.
pub fn write(summary: &RankSummary, path: &Path) -> Result<u64, String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let bytes = encode(summary);
    let temp = path.with_extension(format!("summary.{}.tmp", std::process::id()));
    std::fs::write(&temp, &bytes).map_err(err)?;
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        err(e)
    })?;
    Ok(bytes.len() as u64)
}

/// Reads the summary at `path` and checks that its export, when on this machine, is
/// still the file it was made from.
pub fn read(path: &Path) -> Result<RankSummary, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let summary = decode(&bytes, &path.display().to_string())?;
    summary
        .source
        .check_unchanged()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(summary)
}

/// The summary file of `export` in `dir`: `DIR/STEM.summary` (one export alone; for
/// several, `summary_names` keeps their names apart).
pub fn summary_path(dir: &Path, export: &Path) -> PathBuf {
    dir.join(format!("{}.summary", stem_of(export)))
}

fn stem_of(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned())
}

/// The names the summaries of `exports` take in one folder (without `.summary`): each
/// export's stem; when two stems are alike (`n0/report.sqlite`, `n1/report.sqlite`: what
/// `nsys profile -o report` leaves on every node), every name is the export's path below
/// the exports' common folder, its separators as `_` (`n0_report`). `Err` naming the two
/// exports when names are still alike (the same file given twice, or `a_b.sqlite` beside
/// `a/b.sqlite`): nothing may be written over another rank's summary.
pub fn summary_names(exports: &[PathBuf]) -> Result<Vec<String>, String> {
    let stems: Vec<String> = exports.iter().map(|p| stem_of(p)).collect();
    let names = if all_distinct(&stems) {
        stems
    } else {
        let absolute: Vec<PathBuf> = exports
            .iter()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
            .collect();
        let root = common_folder(&absolute);
        absolute
            .iter()
            .map(|p| {
                let below = p.strip_prefix(&root).unwrap_or(p).with_extension("");
                let parts: Vec<String> = below
                    .components()
                    .filter_map(|c| match c {
                        std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect();
                parts.join("_")
            })
            .collect()
    };
    for (i, name) in names.iter().enumerate() {
        if let Some(j) = names[..i].iter().position(|n| n == name) {
            return Err(format!(
                "{} and {} would both be summarised as {name}.summary: give each export once, or rename one (nothing was written)",
                exports[j].display(),
                exports[i].display()
            ));
        }
    }
    Ok(names)
}

fn all_distinct(names: &[String]) -> bool {
    let mut seen = std::collections::HashSet::new();
    names.iter().all(|n| seen.insert(n.as_str()))
}

/// The deepest folder holding every path of `paths`.
fn common_folder(paths: &[PathBuf]) -> PathBuf {
    let mut root: Option<PathBuf> = None;
    for p in paths {
        let folder = p.parent().unwrap_or(Path::new("")).to_path_buf();
        root = Some(match root {
            None => folder,
            Some(r) => r
                .components()
                .zip(folder.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    root.unwrap_or_default()
}

fn put_uint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_int(out: &mut Vec<u8>, v: i64) {
    put_uint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Columns: the count, then each column; times as steps (start from the previous start,
/// the rest from the collective's start), names as indices + 1 (0 for none).
fn put_collectives(out: &mut Vec<u8>, c: &CollectiveColumns) {
    put_uint(out, c.len() as u64);
    let mut previous = 0i64;
    for &s in &c.start {
        put_int(out, s.wrapping_sub(previous));
        previous = s;
    }
    // A copy, as `columns` lends them to be read or written alike (a summary is small).
    let mut c = c.clone();
    let (start, columns) = c.columns();
    for (_, column) in columns {
        match column {
            Column::FromStart(v) => {
                for (v, s) in v.iter().zip(start) {
                    put_int(out, v.wrapping_sub(*s));
                }
            }
            Column::Name(v) => {
                for &v in v.iter() {
                    put_uint(out, u64::from(v.wrapping_add(1)));
                }
            }
            Column::Count(v) => v.iter().for_each(|&v| put_uint(out, u64::from(v))),
            Column::Bytes(v) => v.iter().for_each(|&v| put_uint(out, v)),
            Column::Ns(v) => v.iter().for_each(|&v| put_int(out, v)),
        }
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn uint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn int(&mut self) -> Option<i64> {
        let u = self.uint()?;
        Some((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Some(out)
    }

    fn ints(&mut self, n: usize) -> Option<Vec<i64>> {
        (0..n).map(|_| self.int()).collect()
    }

    fn names(&mut self, n: usize) -> Option<Vec<u32>> {
        (0..n)
            .map(|_| Some((self.uint()? as u32).wrapping_sub(1)))
            .collect()
    }
}

fn get_collectives(r: &mut Cursor) -> Option<CollectiveColumns> {
    let n = r.uint()? as usize;
    // Every entry takes at least a byte a column: a count beyond the bytes left is damage.
    if n > r.bytes.len() - r.at {
        return None;
    }
    let mut previous = 0i64;
    let start: Vec<i64> = (0..n)
        .map(|_| {
            previous = previous.wrapping_add(r.int()?);
            Some(previous)
        })
        .collect::<Option<_>>()?;
    let mut c = CollectiveColumns {
        start,
        ..Default::default()
    };
    let (start, columns) = c.columns();
    for (_, column) in columns {
        match column {
            Column::FromStart(v) => {
                *v = start
                    .iter()
                    .map(|s| Some(s.wrapping_add(r.int()?)))
                    .collect::<Option<_>>()?;
            }
            Column::Name(v) => *v = r.names(n)?,
            Column::Count(v) => {
                *v = (0..n)
                    .map(|_| Some(r.uint()? as u32))
                    .collect::<Option<_>>()?;
            }
            Column::Bytes(v) => *v = (0..n).map(|_| r.uint()).collect::<Option<_>>()?,
            Column::Ns(v) => *v = r.ints(n)?,
        }
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::breakdown::Breakdown;
    use crate::job::summary::{GpuSummary, NO_TEXT};

    fn sample() -> RankSummary {
        let collectives = CollectiveColumns {
            start: vec![1_000, 5_000, 9_000_000_000],
            end: vec![2_000, 7_000, 9_000_100_000],
            name: vec![0, 0, 1],
            comm: vec![2, 2, NO_TEXT],
            seq: vec![0, 1, 0],
            bytes: vec![1 << 20, 1 << 20, 0],
            call: vec![NO_TEXT, 3, NO_TEXT],
            call_start: vec![1_000, 4_000, 8_000_000_000],
            call_ns: vec![0, 500, 0],
            cpu_start: vec![900, 4_500, 8_900_000_000],
            cpu_ns: vec![10, 20, 1_200_000_000],
            nvtx: vec![NO_TEXT, NO_TEXT, 4],
            since_ns: vec![0, 3_000, 9_000_000_000],
        };
        RankSummary {
            source: FileIdentity {
                path: "/nowhere/rank00.sqlite".into(),
                size: 123,
                mtime_ns: 5,
                head_hash: 6,
            },
            tool_version: "0.1.0".into(),
            nsys_version: None,
            utc_start_ns: Some(1_764_504_000_000_000_000),
            iteration_marker: Some("step_#".into()),
            gpus: vec![GpuSummary {
                device: 0,
                model: None,
                window_ns: (0, 10),
                breakdown_ns: Breakdown::default(),
                top_gaps: Vec::new(),
                iteration_spans: vec![Some((0, 5)), None],
                iteration_durations_ns: vec![5, 0],
                iteration_warmup: 0,
                iteration_median_ns: 5,
                collectives,
            }],
            strings: ["nccl_a", "nccl_b", "0x1", "read()", "attention"]
                .map(String::from)
                .to_vec(),
        }
    }

    #[test]
    fn a_summary_reads_back_equal() {
        let s = sample();
        assert_eq!(decode(&encode(&s), "x").unwrap(), s);
    }

    /// Issue 67, bug 6: a summary whose checksum holds can still say what no export does
    /// (written by a broken tool, or crafted): each such value is refused when read, so the
    /// reduce never meets it.
    #[test]
    fn values_no_export_has_are_refused_when_read() {
        type Change = fn(&mut RankSummary);
        let changes: [(&str, Change); 9] = [
            ("collectives", |s| s.gpus[0].collectives.end[1] = 4_000),
            ("collectives", |s| s.gpus[0].collectives.start.swap(0, 1)),
            ("collectives", |s| s.gpus[0].collectives.since_ns[1] = -1),
            ("collectives", |s| s.gpus[0].collectives.cpu_ns[0] = -5),
            ("collectives", |s| s.gpus[0].collectives.start[2] = i64::MAX),
            ("a GPU's window", |s| s.gpus[0].window_ns = (10, 0)),
            ("iterations", |s| {
                s.gpus[0].iteration_spans[0] = Some((5, 0))
            }),
            ("iterations", |s| s.gpus[0].iteration_warmup = 3),
            ("a GPU's breakdown", |s| s.gpus[0].breakdown_ns.idle = -1),
        ];
        for (what, change) in changes {
            let mut s = sample();
            change(&mut s);
            let err = decode(&encode(&s), "x").unwrap_err();
            assert!(err.contains(what), "{what}: {err}");
        }
    }

    #[test]
    fn summaries_of_exports_named_alike_get_names_apart() {
        let p = |s: &str| PathBuf::from(s);
        // Distinct stems stay as they are.
        assert_eq!(
            summary_names(&[p("/runs/rank00.sqlite"), p("/runs/rank01.sqlite")]).unwrap(),
            ["rank00", "rank01"]
        );
        // One folder a node, each `report.sqlite`: named by the folder.
        assert_eq!(
            summary_names(&[p("/runs/n0/report.sqlite"), p("/runs/n1/report.sqlite")]).unwrap(),
            ["n0_report", "n1_report"]
        );
        assert_eq!(
            summary_names(&[p("/a/x/report.sqlite"), p("/a/y/z/report.sqlite")]).unwrap(),
            ["x_report", "y_z_report"]
        );
        // The same file twice, or names that still collide: refused, naming both.
        let err =
            summary_names(&[p("/runs/n0/report.sqlite"), p("/runs/n0/report.sqlite")]).unwrap_err();
        assert!(err.contains("nothing was written"), "{err}");
        assert!(
            summary_names(&[p("/r/a/b.sqlite"), p("/r/a_b.sqlite"), p("/r/c/b.sqlite")]).is_err()
        );
    }

    #[test]
    fn damage_version_and_strangers_are_refused_without_panicking() {
        let bytes = encode(&sample());
        let mut flipped = bytes.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 0x40;
        assert!(decode(&flipped, "x").unwrap_err().contains("damaged"));
        assert!(
            decode(&bytes[..bytes.len() - 1], "x")
                .unwrap_err()
                .contains("damaged")
        );
        let mut other = bytes.clone();
        other[8] = 99;
        assert!(decode(&other, "x").unwrap_err().contains("another version"));
        assert!(
            decode(b"SQLite format 3\0", "x")
                .unwrap_err()
                .contains("not an")
        );
        // Every truncation and every single-byte change is an error (the header's checks or
        // the body's checksum), never a panic nor a summary.
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], "x").is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 0x5A;
            assert!(decode(&changed, "x").is_err(), "byte {at} changed");
        }
    }

    #[test]
    fn a_summary_whose_export_changed_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("rank00.sqlite");
        std::fs::write(&export, b"SQLite format 3\0 first").unwrap();
        let mut s = sample();
        s.source = FileIdentity::of(&export).unwrap();
        let path = summary_path(dir.path(), &export);
        write(&s, &path).unwrap();
        assert_eq!(read(&path).unwrap(), s);
        std::fs::write(&export, b"SQLite format 3\0 second, longer").unwrap();
        assert!(read(&path).unwrap_err().contains("changed since"));
        // Copied off the machine (the export not here): read.
        std::fs::remove_file(&export).unwrap();
        assert!(read(&path).is_ok());
    }
}
