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
//! use deltalog_core::ops::{MatchedAction, MergeClauses, MergeOptions, NotMatchedAction};
//! use deltalog_core::parse_sql;
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
//! The root re-exports the names a user starts with; every other public name lives in the
//! namespace of its layer ([`ops`] for the operations' options and results, [`maintenance`]
//! for checkpoints, cleanup and post-commit work, [`scan`], [`transaction`],
//! [`write`](mod@write), [`log`], ...) or in [`distributed`], for writes spread over
//! processes.
//!
//! The spec sections cited in doc comments are those of the Delta protocol document
//! (`PROTOCOL.md`); catalogue ids (`A-01`, `C-07`, ...) are those of the project's requirements
//! catalogue.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![warn(unreachable_pub)]

// The modules, in data-flow layers (each imports only the layers above it; ARCHITECTURE.md,
// checked by tests/test_layout.py). A layer that holds public names is a public namespace:
// its `mod.rs` re-exports them and keeps its files private. With the `internal-api` feature
// (for the crate's own benchmarks, integration tests and fuzz targets; nothing reached that
// way is API) the files and the three inner layers are public too.

// ── the ground: errors, helpers, the only IO
pub mod error;
pub mod storage;
#[cfg(feature = "internal-api")]
pub mod util;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod util;

// ── the model: the spec's values
pub mod actions;
pub mod expr;
pub mod scalar;
pub mod schema;
pub mod table_config;

// ── the log and its replay into state
pub mod log;
#[cfg(feature = "internal-api")]
pub mod replay;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod replay;
pub mod snapshot;

// ── reading rows
pub mod scan;

// ── writing: data files, maintenance, commits
pub mod maintenance;
pub mod transaction;
pub mod write;

// ── whole operations and the table handle
pub mod ops;
#[cfg(feature = "internal-api")]
pub mod table;
#[cfg(not(feature = "internal-api"))]
pub(crate) mod table;

/// Writes spread over many processes (Spark's executors): one process plans the write, many
/// write files from it, one commits them all in one version
/// ([`DistributedWrite`](distributed::DistributedWrite)).
pub mod distributed {
    pub use crate::ops::commands::optimize::{BinOutcome, DistributedOptimize, OptimizeSpec};
    pub use crate::ops::distributed::{
        file_list_batch, DistributedWrite, DistributedWriteOptions, MicroBatch,
    };
    pub use crate::ops::dml::distributed::{
        merge_pruning, ChangeOptions, DistributedChange, MergePruning, PlannedFile, RowAction,
        SchemaEvolution, TaskOutcome, ACTION_COLUMN, CLAUSE_COLUMN,
    };
    pub use crate::ops::files::adds_from_file_list;
    pub use crate::ops::streaming_sink::StreamingQuery;
    pub use crate::scan::{ROW_FILE_COLUMN, ROW_INDEX_COLUMN};
}

/// Where the golden tables (written by Delta on Spark) are kept in this repository.
#[cfg(test)]
pub(crate) fn golden_archives() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

pub use actions::{Metadata, Protocol};
pub use error::{ConflictKind, Error, ProtocolKind, Result};
pub use expr::{parse_sql, Expr};
pub use ops::{WriteMode, WriteTableOptions};
pub use scan::{ChangeScan, ChangesOptions, Scan, ScanOptions, ScanTask};
pub use schema::{StructField, StructType};
pub use snapshot::{Snapshot, SnapshotAt};
pub use storage::{IoConfig, Storage};
pub use table::Table;
pub use table_config::{TableConfiguration, TableFeature};
pub use transaction::{CommitOptions, CommitResult, Committer, Transaction};
pub use write::{DataFileWriter, WriterOptions};
