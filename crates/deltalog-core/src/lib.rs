//! deltalog-core: the Delta Lake transaction log, with no Python in it. It reads a table's log
//! into an immutable [`Snapshot`] and its rows through a [`Scan`], and writes: data files
//! ([`DataFileWriter`]) committed atomically by a [`Transaction`]. `ARCHITECTURE.md` (at the
//! top of the repository) says how the modules fit together.
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
