//! deltalog-core: the Delta Lake transaction log, with no Python in it.
//!
//! A [`Table`] is a location; every verb on a table is a method of it. A [`Snapshot`] is one
//! version, immutable: its head (protocol, metadata, transactions, domains) is known when it
//! loads, its file list replayed when it loads ([`Table::snapshot`]) or on first need
//! ([`Table::lazy_snapshot`]). A [`Scan`] reads its rows as Arrow batches. Writes go through a
//! [`Transaction`], which commits atomically or not at all; whole operations (write, delete,
//! update, merge, optimize, vacuum, restore, ...) are [`Table`] methods built on it.
//! `ARCHITECTURE.md` (at the top of the repository) says how the modules fit together.
//!
//! # Read
//!
//! ```
//! # async fn run() -> deltalog_core::Result<()> {
//! use deltalog_core::{parse_sql, Scan, ScanOptions, SnapshotAt, Table};
//! use futures::TryStreamExt;
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let uri = dir.path().to_str().unwrap();
//! # let table = deltalog_core::Table::from_storage(deltalog_core::Storage::open(uri, &Default::default())?);
//! # {
//! #     use std::sync::Arc;
//! #     use arrow_array::{Int64Array, RecordBatch};
//! #     use arrow_schema::{DataType, Field, Schema};
//! #     let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! #     let ids = Arc::new(Int64Array::from(vec![0, 1, 2, 3]));
//! #     let batch = RecordBatch::try_new(schema.clone(), vec![ids]).expect("a valid batch");
//! #     let rows = futures::stream::iter([Ok(batch)]);
//! #     table.write(schema, rows, Default::default()).await.map_err(|f| f.error)?;
//! # }
//! let table = Table::open(uri, &Default::default()).await?;
//! let snapshot = table.snapshot(SnapshotAt::Latest).await?;
//! let options = ScanOptions {
//!     filter: Some(parse_sql("id >= 2")?),
//!     ..ScanOptions::default()
//! };
//! let scan = Scan::new(&snapshot, options).await?;
//! let batches: Vec<_> = scan.stream().try_collect().await?;
//! assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Append
//!
//! ```
//! # async fn run() -> deltalog_core::Result<()> {
//! use std::sync::Arc;
//! use arrow_array::{Int64Array, RecordBatch};
//! use arrow_schema::{DataType, Field, Schema};
//! use deltalog_core::{Table, WriteMode, WriteTableOptions};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let uri = dir.path().to_str().unwrap();
//! let table = Table::from_storage(deltalog_core::Storage::open(uri, &Default::default())?);
//! let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! let ids = Arc::new(Int64Array::from(vec![1, 2]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![ids]).expect("a valid batch");
//! let options = WriteTableOptions {
//!     mode: WriteMode::Append,
//!     ..WriteTableOptions::default()
//! };
//! let stream = futures::stream::iter([Ok(batch)]);
//! let commit = table.write(schema, stream, options).await.map_err(|f| f.error)?;
//! assert_eq!(commit.version, 0);
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Merge
//!
//! ```
//! # async fn run() -> deltalog_core::Result<()> {
//! use deltalog_core::{parse_sql, MatchedAction, MergeClauses, MergeOptions, NotMatchedAction};
//! # use std::sync::Arc;
//! # use arrow_array::{Int64Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! # let dir = tempfile::tempdir().unwrap();
//! # let uri = dir.path().to_str().unwrap();
//! # let table = deltalog_core::Table::from_storage(deltalog_core::Storage::open(uri, &Default::default())?);
//! # {
//! #     use std::sync::Arc;
//! #     use arrow_array::{Int64Array, RecordBatch};
//! #     use arrow_schema::{DataType, Field, Schema};
//! #     let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! #     let ids = Arc::new(Int64Array::from(vec![0, 1, 2, 3]));
//! #     let batch = RecordBatch::try_new(schema.clone(), vec![ids]).expect("a valid batch");
//! #     let rows = futures::stream::iter([Ok(batch)]);
//! #     table.write(schema, rows, Default::default()).await.map_err(|f| f.error)?;
//! # }
//! # let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! # let ids = Arc::new(Int64Array::from(vec![3, 9]));
//! # let source = RecordBatch::try_new(schema.clone(), vec![ids]).expect("a valid batch");
//! // `source`: a batch of ids 3 and 9; the table holds ids 0 to 3.
//! let clauses = MergeClauses {
//!     matched: vec![(None, MatchedAction::Delete)],
//!     not_matched: vec![(None, NotMatchedAction::InsertAll)],
//!     not_matched_by_source: vec![],
//! };
//! let on = parse_sql("target.id = source.id")?;
//! let commit = table
//!     .merge(vec![source], schema, on, clauses, MergeOptions::default())
//!     .await
//!     .map_err(|f| f.error)?;
//! assert_eq!(commit.metrics["numTargetRowsDeleted"], 1);
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Checkpoint
//!
//! ```
//! # async fn run() -> deltalog_core::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let uri = dir.path().to_str().unwrap();
//! # let table = deltalog_core::Table::from_storage(deltalog_core::Storage::open(uri, &Default::default())?);
//! # {
//! #     use std::sync::Arc;
//! #     use arrow_array::{Int64Array, RecordBatch};
//! #     use arrow_schema::{DataType, Field, Schema};
//! #     let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
//! #     let ids = Arc::new(Int64Array::from(vec![0, 1, 2, 3]));
//! #     let batch = RecordBatch::try_new(schema.clone(), vec![ids]).expect("a valid batch");
//! #     let rows = futures::stream::iter([Ok(batch)]);
//! #     table.write(schema, rows, Default::default()).await.map_err(|f| f.error)?;
//! # }
//! let written = table.checkpoint(None).await?;
//! assert_eq!(written.version, table.latest_version().await?);
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(run()).unwrap();
//! ```
//!
//! # Modules
//!
//! In data-flow layers, each importing only the layers above it (`ARCHITECTURE.md` says what
//! each owns): `error`, `util`, `storage` (the only IO) -> `scalar`, `schema`, `actions`,
//! `table_config`, `expr` (the spec's values) -> `log` (the files of `_delta_log`: listing,
//! decoding, encoding, `.crc` files) -> `replay` -> `snapshot` -> `scan` (rows, the change
//! feed, streaming) -> `write` (data files) -> `maintenance` (checkpoints, checksums, cleanup,
//! log compaction, post-commit) -> `transaction` -> `ops` (write, create, alter, DML, merge,
//! vacuum, optimize, restore, convert, distributed writes) -> `table` ([`Table`]'s verbs).
//!
//! The spec sections cited in doc comments are those of the Delta protocol document
//! (`PROTOCOL.md`); catalogue ids (`A-01`, `C-07`, ...) are those of the project's requirements
//! catalogue.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![warn(unreachable_pub)]

// The modules, in data-flow layers (each imports only the layers above it; ARCHITECTURE.md,
// checked by tests/test_layout.py):
// private, or public with the `internal-api` feature (for the crate's own benchmarks,
// integration tests and fuzz targets; nothing reached that way is API).

// ── the ground: errors, helpers, the only IO
#[cfg(feature = "internal-api")]
pub mod error;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod error;
#[cfg(feature = "internal-api")]
pub mod storage;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod storage;
#[cfg(feature = "internal-api")]
pub mod util;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod util;

// ── the model: the spec's values
#[cfg(feature = "internal-api")]
pub mod actions;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod actions;
#[cfg(feature = "internal-api")]
pub mod expr;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod expr;
#[cfg(feature = "internal-api")]
pub mod scalar;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod scalar;
#[cfg(feature = "internal-api")]
pub mod schema;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod schema;
#[cfg(feature = "internal-api")]
pub mod table_config;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod table_config;

// ── the log and its replay into state
#[cfg(feature = "internal-api")]
pub mod log;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod log;
#[cfg(feature = "internal-api")]
pub mod replay;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod replay;
#[cfg(feature = "internal-api")]
pub mod snapshot;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod snapshot;

// ── reading rows
#[cfg(feature = "internal-api")]
pub mod scan;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod scan;

// ── writing: data files, maintenance, commits
#[cfg(feature = "internal-api")]
pub mod maintenance;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod maintenance;
#[cfg(feature = "internal-api")]
pub mod transaction;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod transaction;
#[cfg(feature = "internal-api")]
pub mod write;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod write;

// ── whole operations and the table handle
#[cfg(feature = "internal-api")]
pub mod ops;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod ops;
#[cfg(feature = "internal-api")]
pub mod table;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod table;

/// Where the golden tables (written by Delta on Spark) are kept in this repository.
#[cfg(test)]
pub(crate) fn golden_archives() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

pub use actions::{
    CommitInfo, DeletionVectorDescriptor, DomainMetadata, Format, Metadata, Protocol, Txn,
};
pub use error::{ConflictKind, Error, ProtocolKind, Result};
pub use expr::{from_dnf, parse_sql, CompareOp, DnfLiteral, Expr};
pub use expr::{parse_value_sql, ArithOp, Function, ValueExpr};
pub use log::checksum::{FileSizeHistogram, VersionChecksum};
pub use log::path::CheckpointFormat;
pub use maintenance::checkpoint::{CheckpointOptions, CheckpointWritten};
pub use maintenance::cleanup::CleanupReport;
pub use maintenance::post_commit::{
    PostCommitError, PostCommitOptions, PostCommitReport, PostCommitStep,
};
pub use ops::MicroBatch;
pub use ops::{
    adds_from_file_list, create_table, parse_isolation_level, struct_type_from_arrow, write_table,
    CreateMode, CreateTable, SchemaMode, WriteMode, WriteTableOptions,
};
pub use ops::{alter_snapshot, alter_table, Alteration, NewColumn};
pub use ops::{
    convert_to_delta, optimize, restore, vacuum, ConvertResult, FileSizeMetrics, OptimizeMetrics,
    OptimizeOptions, RestoreMetrics, VacuumOptions, VacuumResult, DEFAULT_OPTIMIZE_FILE_SIZE,
};
pub use ops::{delete, update, DeleteOptions, UpdateOptions};
pub use ops::{file_list_batch, DistributedWrite, DistributedWriteOptions};
pub use ops::{
    merge, MatchedAction, MergeClauses, MergeOptions, NotMatchedAction, NotMatchedBySourceAction,
};
pub use ops::{restore_with, RestoreOptions};
pub use replay::file_list::FileListOptions;
pub use scalar::{parse_user_timestamp_ms, Scalar, SessionTimeZone};
pub use scan::changes::{ChangeScan, ChangesOptions};
pub use scan::streaming::{stream_files, StreamFiles, StreamOffset, StreamOptions, StreamStart};
pub use scan::{
    deletion_vectors, NativeColumn, NativeColumns, NativeFiles, Scan, ScanOptions, ScanTask,
    DEFAULT_OPEN_COST, DEFAULT_TARGET_SIZE,
};
pub use schema::{parse_schema, ColumnMappingMode, StructField, StructType};
pub use snapshot::{HeadSource, Snapshot, SnapshotAt, TableSize};
pub use storage::MAX_WHOLE_READ_BYTES;
pub use storage::{IoConfig, Storage};
pub use table::Table;
pub use table_config::{TableConfiguration, TableFeature, TableProperties};
pub use transaction::{
    AddFile, CommitOptions, CommitOutcome, CommitResult, Committer, FileSystemCommitter,
    MetadataUpdate, TableCommit, TableSpec, TableTransaction, Transaction,
};
pub use write::{
    unsupported_writer_duties, write_batches, Codec, DataFileWriter, RowOrigin, UnsupportedDuty,
    WriteFailure, WriteResult, WriterOptions, WrittenFile,
};
