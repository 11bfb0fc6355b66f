//! `nsys-explorer export`: the Python package's tables (kernels, memory, API calls, NVTX
//! ranges, gaps, iterations) written as Arrow IPC or Parquet files, so that DuckDB, Spark
//! or pandas read them without the bindings. Names are dictionary-encoded, as in Python.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema};

use crate::tables::{Column, Table};

/// What the files are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Arrow IPC files (`.arrow`): read as they are, memory-mapped.
    Arrow,
    /// Parquet (`.parquet`, Snappy): smaller, read by every engine.
    Parquet,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Arrow => "arrow",
            Format::Parquet => "parquet",
        }
    }
}

/// A table as one Arrow record batch, with a `file` column naming the export it came from
/// (the export's stem, for queries over many ranks' files).
pub fn record_batch(table: Table, file: &str) -> Result<RecordBatch, String> {
    let rows = table.rows();
    let mut fields = Vec::with_capacity(table.columns.len() + 1);
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(table.columns.len() + 1);
    let dictionary = |ids: Vec<i32>, texts: &[String]| -> ArrayRef {
        let keys: Int32Array = ids.into_iter().map(|i| (i >= 0).then_some(i)).collect();
        let values = Arc::new(StringArray::from_iter_values(texts.iter()));
        Arc::new(DictionaryArray::<Int32Type>::new(keys, values))
    };
    let dictionary_type = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    fields.push(Field::new("file", dictionary_type.clone(), false));
    arrays.push(dictionary(vec![0; rows], &[file.to_string()]));
    for (name, column) in table.columns {
        let (field, array): (Field, ArrayRef) = match column {
            Column::I64(v) => (
                Field::new(name, DataType::Int64, false),
                Arc::new(Int64Array::from(v)),
            ),
            Column::I32(v) => (
                Field::new(name, DataType::Int32, false),
                Arc::new(Int32Array::from(v)),
            ),
            Column::F64(v) => (
                Field::new(name, DataType::Float64, false),
                Arc::new(Float64Array::from(v)),
            ),
            Column::Bool(v) => (
                Field::new(name, DataType::Boolean, false),
                Arc::new(BooleanArray::from(v)),
            ),
            Column::Names { ids, texts } => (
                Field::new(name, dictionary_type.clone(), true),
                dictionary(ids, &texts),
            ),
        };
        fields.push(field);
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|e| e.to_string())
}

/// Writes `batch` to `path` in `format`.
pub fn write(batch: &RecordBatch, path: &Path, format: Format) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(|e| err(&e))?;
    match format {
        Format::Arrow => {
            let mut w = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema())
                .map_err(|e| err(&e))?;
            w.write(batch).map_err(|e| err(&e))?;
            w.finish().map_err(|e| err(&e))
        }
        Format::Parquet => {
            let props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::SNAPPY)
                .build();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props))
                .map_err(|e| err(&e))?;
            w.write(batch).map_err(|e| err(&e))?;
            w.close().map(|_| ()).map_err(|e| err(&e))
        }
    }
}

/// Every table of the export at `source` (analysed with `overview`) into `dir` as
/// `STEM.TABLE.EXT`; the paths written.
pub fn export_tables(
    trace: &crate::trace::Trace,
    overview: &crate::overview::Overview,
    source: &Path,
    dir: &Path,
    format: Format,
    min_gap_ns: i64,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem = source
        .file_stem()
        .map_or_else(|| "trace".to_string(), |s| s.to_string_lossy().into_owned());
    let mut written = Vec::new();
    for name in crate::tables::NAMES {
        let table =
            crate::tables::by_name(trace, overview, name, min_gap_ns).expect("a known table");
        let batch = record_batch(table, &stem)?;
        let path = dir.join(format!("{stem}.{name}.{}", format.extension()));
        write(&batch, &path, format)?;
        written.push(path);
    }
    Ok(written)
}
