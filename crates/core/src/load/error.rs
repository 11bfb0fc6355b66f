//! Every way a load can fail, each with a message that names the file and the next step.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}: no such file")]
    NotFound(PathBuf),
    #[error("{0} is a directory; choose an .sqlite file exported by `nsys export --type sqlite`")]
    IsDirectory(PathBuf),
    #[error("{0}: permission denied; check that you may read this file")]
    PermissionDenied(PathBuf),
    #[error("{path}: cannot read the file: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is empty (0 bytes); the export may have failed or is still being written")]
    Empty(PathBuf),
    #[error(
        "{0} is an Nsight Systems report, not an SQLite export. Export it first:\n    nsys export --type sqlite --include-blobs=true --output {1} {0}\nthen open the .sqlite file"
    )]
    NsysReport(PathBuf, PathBuf),
    #[error(
        "{report} is an Nsight Systems report, and no `nsys` was found to export it (looked at: {looked}). Install Nsight Systems, set NSYS=/path/to/nsys, or export it yourself:\n    nsys export --type sqlite --include-blobs=true {report}\nthen open the .sqlite file"
    )]
    NoNsys { report: PathBuf, looked: String },
    #[error("{report}: the export to SQLite failed: {detail}")]
    ExportFailed { report: PathBuf, detail: String },
    #[error(
        "{0} is a rank summary (`nsys-explorer summarize`), not an export: `nsys-explorer report` and the window read summaries, as a job of many ranks; give this command the export it was made from"
    )]
    RankSummary(PathBuf),
    #[error(
        "{0} is not an SQLite database. nsys-explorer reads the SQLite exports of Nsight Systems (`nsys export --type sqlite REPORT.nsys-rep`)"
    )]
    NotSqlite(PathBuf),
    #[error(
        "{path} is a damaged or truncated SQLite file ({detail}); export it again with `nsys export --type sqlite`"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path} is an SQLite database but not an Nsight Systems export (it has none of the tables nsys writes, such as StringIds or CUPTI_ACTIVITY_KIND_KERNEL; it has {found})"
    )]
    NotNsysExport { path: PathBuf, found: String },
    #[error(
        "{0} is an nvprof / Visual Profiler database, not an Nsight Systems export. Profile with `nsys profile` and export with `nsys export --type sqlite`, or open this file in NVIDIA Visual Profiler"
    )]
    NvprofDatabase(PathBuf),
    #[error(
        "{path} is an SQLite database whose text is {encoding}; nsys writes its exports in UTF-8: export the report again with `nsys export --type sqlite`"
    )]
    NotUtf8 { path: PathBuf, encoding: String },
    #[error("{path}: SQLite error while reading {table}: {detail}")]
    Sqlite {
        path: PathBuf,
        table: String,
        detail: String,
    },
    #[error("loading was cancelled")]
    Cancelled,
}
