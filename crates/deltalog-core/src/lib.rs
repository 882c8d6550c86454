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

/// Declares the crate's modules: private, or public with the `internal-api` feature (for the
/// crate's own benchmarks and integration tests; nothing reached that way is API).
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internal-api")]
        pub mod $name;
        #[cfg(not(feature = "internal-api"))]
        pub(crate) mod $name;
    )*};
}
pub(crate) use internal_modules;

internal_modules!(
    action_schema,
    actions,
    changes,
    checkpoint,
    checkpoint_write,
    commit,
    cpu,
    deletion_vector,
    error,
    expr,
    file_action_scan,
    file_list,
    json_text,
    load,
    log,
    log_cleanup,
    log_compaction,
    operations,
    partition,
    post_commit,
    replay,
    scalar,
    scan,
    schema,
    snapshot,
    snapshot_head,
    stats,
    storage,
    streaming,
    table,
    table_config,
    transaction,
    version_checksum,
    write,
);

/// Where the golden tables (written by Delta on Spark) are kept in this repository.
#[cfg(test)]
pub(crate) fn golden_archives() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden")
}

pub use actions::{
    CommitInfo, DeletionVectorDescriptor, DomainMetadata, Format, Metadata, Protocol, Txn,
};
pub use changes::{ChangeScan, ChangesOptions};
pub use checkpoint_write::{CheckpointOptions, CheckpointWritten};
pub use error::{ConflictKind, Error, ProtocolKind, Result};
pub use expr::{from_dnf, parse_sql, CompareOp, DnfLiteral, Expr};
pub use expr::{parse_value_sql, ArithOp, Function, ValueExpr};
pub use file_list::FileListOptions;
pub use log::path::CheckpointFormat;
pub use log_cleanup::CleanupReport;
pub use operations::MicroBatch;
pub use operations::{
    adds_from_file_list, create_table, parse_isolation_level, struct_type_from_arrow, write_table,
    CreateMode, CreateTable, SchemaMode, WriteMode, WriteTableOptions,
};
pub use operations::{alter_snapshot, alter_table, Alteration, NewColumn};
pub use operations::{
    convert_to_delta, optimize, restore, vacuum, ConvertResult, FileSizeMetrics, OptimizeMetrics,
    OptimizeOptions, RestoreMetrics, VacuumOptions, VacuumResult, DEFAULT_OPTIMIZE_FILE_SIZE,
};
pub use operations::{delete, update, DeleteOptions, UpdateOptions};
pub use operations::{file_list_batch, DistributedWrite, DistributedWriteOptions};
pub use operations::{
    merge, MatchedAction, MergeClauses, MergeOptions, NotMatchedAction, NotMatchedBySourceAction,
};
pub use operations::{restore_with, RestoreOptions};
pub use post_commit::{PostCommitError, PostCommitOptions, PostCommitReport, PostCommitStep};
pub use scalar::{parse_user_timestamp_ms, Scalar, SessionTimeZone};
pub use scan::{
    deletion_vectors, NativeColumn, NativeColumns, NativeFiles, Scan, ScanOptions, ScanTask,
    DEFAULT_OPEN_COST, DEFAULT_TARGET_SIZE,
};
pub use schema::{parse_schema, ColumnMappingMode, StructField, StructType};
pub use snapshot::{Snapshot, SnapshotAt};
pub use snapshot_head::{HeadSource, SnapshotHead, TableSize};
pub use storage::MAX_WHOLE_READ_BYTES;
pub use storage::{IoConfig, Storage};
pub use streaming::{stream_files, StreamFiles, StreamOffset, StreamOptions, StreamStart};
pub use table::Table;
pub use table_config::{TableConfiguration, TableFeature, TableProperties};
pub use transaction::{
    AddFile, CommitOptions, CommitOutcome, CommitResult, Committer, FileSystemCommitter,
    MetadataUpdate, TableCommit, TableSpec, TableTransaction, Transaction,
};
pub use version_checksum::{FileSizeHistogram, VersionChecksum};
pub use write::{
    unsupported_writer_duties, write_batches, Codec, DataFileWriter, RowOrigin, UnsupportedDuty,
    WriteFailure, WriteResult, WriterOptions, WrittenFile,
};
