//! The values Python receives from a commit, a checkpoint, a cleanup, and a snapshot's
//! protocol, metadata and version checksum: frozen classes with read-only attributes, which
//! `deltalog._results`, `deltalog._table` and `deltalog._maintenance_log` wrap into the
//! package's dataclasses.

use std::collections::{BTreeMap, HashMap};

use deltalog_core::log::VersionChecksum;
use deltalog_core::maintenance::{CheckpointResult, CleanupResult, PostCommitResult};
use deltalog_core::{CommitResult, Metadata, Protocol};
use pyo3::prelude::*;

use crate::snapshot::RawSnapshot;

/// A commit: its version (the table's when nothing was committed), whether anything was,
/// the retries after lost races, the snapshot committed (when the transaction read one), the
/// operation metrics and what ran after the commit.
#[pyclass(frozen, get_all, module = "deltalog._core")]
pub struct RawCommit {
    version: u64,
    committed: bool,
    retries: u32,
    snapshot: Option<RawSnapshot>,
    metrics: BTreeMap<String, u64>,
    post_commit: RawPostCommit,
}

impl From<CommitResult> for RawCommit {
    fn from(commit: CommitResult) -> Self {
        RawCommit {
            version: commit.version,
            committed: commit.committed,
            retries: commit.retries,
            snapshot: commit.snapshot.map(RawSnapshot::new),
            metrics: commit.metrics,
            post_commit: commit.post_commit.into(),
        }
    }
}

/// What ran after a commit: the `.crc` file written, the checkpoint and the cleanup, and the
/// steps that failed as `(step, message)`.
#[pyclass(frozen, get_all, module = "deltalog._core")]
#[derive(Clone)]
pub struct RawPostCommit {
    checksum: Option<String>,
    checkpoint: Option<RawCheckpoint>,
    checkpoint_deferred: Option<String>,
    cleanup: Option<RawCleanup>,
    errors: Vec<(String, String)>,
}

impl From<PostCommitResult> for RawPostCommit {
    fn from(report: PostCommitResult) -> Self {
        let errors = report.errors.into_iter();
        RawPostCommit {
            checksum: report.checksum,
            checkpoint: report.checkpoint.map(RawCheckpoint::from),
            checkpoint_deferred: report.checkpoint_deferred,
            cleanup: report.cleanup.map(RawCleanup::from),
            errors: errors
                .map(|error| (error.step.to_string(), error.message))
                .collect(),
        }
    }
}

/// A checkpoint written, or with `dry_run` planned (see [`CheckpointResult`]).
#[pyclass(frozen, get_all, module = "deltalog._core")]
#[derive(Clone)]
pub struct RawCheckpoint {
    version: u64,
    kind: String,
    files: Vec<String>,
    sidecars: Vec<String>,
    num_actions: u64,
    num_add_files: u64,
    size_in_bytes: u64,
    dry_run: bool,
    incremental_from: Option<u64>,
}

impl From<CheckpointResult> for RawCheckpoint {
    fn from(written: CheckpointResult) -> Self {
        RawCheckpoint {
            version: written.version,
            kind: written.kind.to_string(),
            files: written.files,
            sidecars: written.sidecars,
            num_actions: written.num_actions,
            num_add_files: written.num_add_files,
            size_in_bytes: written.size_in_bytes,
            dry_run: written.dry_run,
            incremental_from: written.incremental_from,
        }
    }
}

/// A metadata cleanup (see [`CleanupResult`]).
#[pyclass(frozen, get_all, module = "deltalog._core")]
#[derive(Clone)]
pub struct RawCleanup {
    oldest_kept_version: Option<u64>,
    deleted: Vec<String>,
    deleted_sidecars: Vec<String>,
    compat_checkpoint: Option<String>,
}

impl From<CleanupResult> for RawCleanup {
    fn from(report: CleanupResult) -> Self {
        RawCleanup {
            oldest_kept_version: report.oldest_kept_version,
            deleted: report.deleted,
            deleted_sidecars: report.deleted_sidecars,
            compat_checkpoint: report.compat_checkpoint,
        }
    }
}

/// The `protocol` action (spec "Protocol Evolution").
#[pyclass(frozen, get_all, module = "deltalog._core")]
pub struct RawProtocol {
    min_reader_version: i32,
    min_writer_version: i32,
    reader_features: Option<Vec<String>>,
    writer_features: Option<Vec<String>>,
}

impl From<Protocol> for RawProtocol {
    fn from(protocol: Protocol) -> Self {
        RawProtocol {
            min_reader_version: protocol.min_reader_version,
            min_writer_version: protocol.min_writer_version,
            reader_features: protocol.reader_features,
            writer_features: protocol.writer_features,
        }
    }
}

/// The `metaData` action (spec "Change Metadata"); `created_time` in milliseconds.
#[pyclass(frozen, get_all, module = "deltalog._core")]
pub struct RawMetadata {
    id: String,
    name: Option<String>,
    description: Option<String>,
    partition_columns: Vec<String>,
    configuration: HashMap<String, String>,
    created_time: Option<i64>,
    format_provider: String,
    format_options: HashMap<String, String>,
    schema_string: Option<String>,
}

impl From<Metadata> for RawMetadata {
    fn from(metadata: Metadata) -> Self {
        RawMetadata {
            id: metadata.id,
            name: metadata.name,
            description: metadata.description,
            partition_columns: metadata.partition_columns,
            configuration: metadata.configuration,
            created_time: metadata.created_time,
            format_provider: metadata.format.provider,
            format_options: metadata.format.options,
            schema_string: metadata.schema_string,
        }
    }
}

/// A version checksum (Delta on Spark's `VersionChecksum`): its counts, the set transactions
/// as `(app id, version, last updated)`, the domains as `(domain, configuration)`, the file
/// size histogram as `(boundaries, counts, bytes)`, the JSON line, and whether it was read
/// from the version's `.crc` file (else computed from the state).
#[pyclass(frozen, get_all, module = "deltalog._core")]
pub struct RawVersionChecksum {
    txn_id: Option<String>,
    table_size_bytes: i64,
    num_files: i64,
    num_metadata: i64,
    num_protocol: i64,
    in_commit_timestamp: Option<i64>,
    set_transactions: Option<Vec<(String, i64, Option<i64>)>>,
    domain_metadata: Option<Vec<(String, String)>>,
    histogram: Option<(Vec<i64>, Vec<i64>, Vec<i64>)>,
    num_deleted_records: Option<i64>,
    num_deletion_vectors: Option<i64>,
    json: String,
    stored: bool,
}

impl RawVersionChecksum {
    /// `checksum`, whose JSON line is `json`, read from the `.crc` file when `stored`.
    pub fn new(checksum: VersionChecksum, json: String, stored: bool) -> Self {
        let set_transactions = checksum.set_transactions.map(|txns| {
            let txns = txns.into_iter();
            txns.map(|t| (t.app_id, t.version, t.last_updated))
                .collect()
        });
        let domain_metadata = checksum.domain_metadata.map(|domains| {
            let domains = domains.into_iter();
            domains.map(|d| (d.domain, d.configuration)).collect()
        });
        let histogram = checksum
            .file_size_histogram
            .map(|h| (h.sorted_bin_boundaries, h.file_counts, h.total_bytes));
        RawVersionChecksum {
            txn_id: checksum.txn_id,
            table_size_bytes: checksum.table_size_bytes,
            num_files: checksum.num_files,
            num_metadata: checksum.num_metadata,
            num_protocol: checksum.num_protocol,
            in_commit_timestamp: checksum.in_commit_timestamp_opt,
            set_transactions,
            domain_metadata,
            histogram,
            num_deleted_records: checksum.num_deleted_records_opt,
            num_deletion_vectors: checksum.num_deletion_vectors_opt,
            json,
            stored,
        }
    }
}

/// Registers the classes on the extension module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<RawCommit>()?;
    module.add_class::<RawPostCommit>()?;
    module.add_class::<RawCheckpoint>()?;
    module.add_class::<RawCleanup>()?;
    module.add_class::<RawProtocol>()?;
    module.add_class::<RawMetadata>()?;
    module.add_class::<RawVersionChecksum>()?;
    Ok(())
}
