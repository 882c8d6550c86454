//! VACUUM: deleting the files under the table root that no version within the retention
//! period still references, as Delta on Spark's `VacuumCommand` does (spec "Add File and
//! Remove File": a tombstone may be deleted once older than `delta.deletedFileRetentionDuration`).
//!
//! What is kept: every file of the current snapshot and its deletion vector file, every
//! tombstone newer than the cutoff (`now - retention`) and its deletion vector file, every
//! file modified after the cutoff (a write in flight), and everything hidden by Spark's rule
//! (a path segment starting with `_` or `.`, except partition directories `col=...`,
//! `_change_data` and `_delta_index`; so `_delta_log` is never touched). Only objects the
//! store lists under the table root are candidates: a file the log names by an absolute
//! path outside the root is never deleted.
//!
//! The store is listed as a stream and each object compared against a hash set of the
//! referenced paths, so memory grows with the table's live files and tombstones, not with
//! the number of objects in the directory. Deletes run [`DELETE_BATCH`] at a time, each
//! batch in parallel. A run that deletes writes two commits carrying only `commitInfo`,
//! `VACUUM START` (with `numFilesToDelete`, `sizeOfDataToDelete`) and `VACUUM END` (status
//! `COMPLETED`, or `FAILED` when a delete failed), as Spark does.

use crate::util::time::duration_ms;
use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, StructArray};
use futures::TryStreamExt;

use crate::actions::deletion_vector::{resolve as resolve_dv, DvLocation};
use crate::actions::layout::{add, remove};
use crate::actions::DeletionVectorDescriptor;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use crate::snapshot::SnapshotAt;
use crate::storage::{Storage, TableObject};

/// How many files one delete batch holds (each batch runs its deletes in parallel).
pub(crate) const DELETE_BATCH: usize = 1000;

/// The options of [`vacuum`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VacuumOptions {
    /// Files removed longer ago than this are deleted; `None`: the table's
    /// `delta.deletedFileRetentionDuration` (default 7 days). Rounded to whole hours, as Spark.
    pub retention_hours: Option<f64>,
    /// Only list what would be deleted; commit nothing.
    pub dry_run: bool,
    /// Refuse a retention below the table's (Spark's
    /// `spark.databricks.delta.retentionDurationCheck.enabled`). Default true.
    pub enforce_retention_duration: bool,
}

impl Default for VacuumOptions {
    fn default() -> Self {
        VacuumOptions {
            retention_hours: None,
            dry_run: true,
            enforce_retention_duration: true,
        }
    }
}

/// What [`vacuum`] found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VacuumResult {
    /// True when nothing was deleted because the run was a dry run.
    pub dry_run: bool,
    /// The files deleted (or to be deleted by a dry run), relative to the table root, sorted.
    pub files: Vec<String>,
    /// Their total size in bytes.
    pub size_in_bytes: u64,
    /// How many files were deleted (0 for a dry run).
    pub num_deleted: u64,
    /// How many directories were looked at (the root included), as Spark's
    /// `numVacuumedDirectories`.
    pub num_directories: u64,
    /// The versions of the `VACUUM START` and `VACUUM END` commits.
    pub start_version: Option<u64>,
    pub end_version: Option<u64>,
    /// The cutoff: files removed or modified before this (ms since the epoch) may go.
    pub cutoff_ms: i64,
}

/// Deletes (or with `dry_run` lists) the files of `table` no version within the retention
/// period references; see the module documentation for what is kept.
///
/// Errors: [`Error::InvalidArgument`] for a negative retention; [`Error::NotAllowed`] for a
/// retention below `delta.deletedFileRetentionDuration` while
/// `enforce_retention_duration` holds; [`Error::UnsupportedFeature`] for a table this library
/// may not write (Spark checks the writer protocol before vacuuming, and the reader protocol
/// too under `vacuumProtocolCheck`, which loading the snapshot does); storage errors of the
/// listing or of a delete (after which `VACUUM END` records `FAILED`).
pub async fn vacuum(storage: &Storage, options: VacuumOptions) -> Result<VacuumResult> {
    let snapshot = Snapshot::load(storage, SnapshotAt::Latest).await?;
    snapshot.table_configuration().ensure_writable(false, &[])?;
    let configured_ms = duration_ms(
        snapshot
            .table_configuration()
            .properties()
            .deleted_file_retention_duration,
    );
    let specified_ms = specified_retention_ms(&options, configured_ms)?;
    let now = chrono::Utc::now().timestamp_millis();
    let cutoff_ms = now - specified_ms.unwrap_or(configured_ms);
    let referenced = referenced_paths(&snapshot, cutoff_ms).await?;
    let partition_columns = snapshot.partition_columns().to_vec();
    let found = find_unreferenced(storage, &referenced, &partition_columns, cutoff_ms);
    let found = found.await?;
    let mut result = VacuumResult {
        dry_run: options.dry_run,
        size_in_bytes: found.candidates.iter().map(|o| o.size).sum(),
        files: found.candidates.into_iter().map(|o| o.path).collect(),
        num_directories: found.num_directories,
        cutoff_ms,
        ..VacuumResult::default()
    };
    result.files.sort();
    if options.dry_run {
        return Ok(result);
    }
    let start = snapshot
        .transaction("VACUUM START")
        .with_operation_parameter("retentionCheckEnabled", options.enforce_retention_duration)
        .with_operation_parameter("defaultRetentionMillis", configured_ms);
    let start = match specified_ms {
        Some(ms) => start.with_operation_parameter("specifiedRetentionMillis", ms),
        None => start,
    };
    let start = start
        .with_operation_metric("numFilesToDelete", result.files.len().to_string())
        .with_operation_metric("sizeOfDataToDelete", result.size_in_bytes.to_string());
    result.start_version = Some(start.commit().await?.version);
    let deleted = delete_in_batches(storage, &result.files).await;
    let end = crate::transaction::append_transaction(storage, "VACUUM END").await?;
    let end = match &deleted {
        Ok(count) => end
            .with_operation_parameter("status", "COMPLETED")
            .with_operation_metric("numDeletedFiles", count.to_string())
            .with_operation_metric("numVacuumedDirectories", result.num_directories.to_string()),
        Err(_) => end.with_operation_parameter("status", "FAILED"),
    };
    let end_version = end.commit().await?.version;
    result.num_deleted = deleted? as u64;
    result.end_version = Some(end_version);
    Ok(result)
}

/// The retention asked for, in ms, checked against the table's (`configured_ms`).
fn specified_retention_ms(options: &VacuumOptions, configured_ms: i64) -> Result<Option<i64>> {
    let Some(hours) = options.retention_hours else {
        return Ok(None);
    };
    if !hours.is_finite() || hours < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "the retention of VACUUM must be a number of hours, at least 0, not {hours}"
        )));
    }
    let ms = (hours.round() as i64).saturating_mul(3_600_000);
    if options.enforce_retention_duration && ms < configured_ms {
        let configured_hours = (configured_ms + 3_599_999) / 3_600_000;
        return Err(Error::NotAllowed(format!(
            "VACUUM with a retention of {hours} hours is below the table's \
             delta.deletedFileRetentionDuration ({configured_hours} hours): readers of older \
             versions and writers still writing could lose files. Use at least \
             {configured_hours} hours, or pass enforce_retention_duration=False when no \
             operation is running on the table"
        )));
    }
    Ok(Some(ms))
}

/// The root-relative store paths (as [`Storage::list_table`] names them) of every file the
/// retained versions need: live files, tombstones removed at or after `cutoff_ms`, and the
/// deletion vector files of both.
async fn referenced_paths(snapshot: &Snapshot, cutoff_ms: i64) -> Result<HashSet<String>> {
    let storage = snapshot.storage();
    let mut referenced = HashSet::new();
    for adds in snapshot.add_actions().await? {
        collect_referenced(storage, adds, None, &mut referenced)?;
    }
    for removes in snapshot.remove_actions().await? {
        collect_referenced(storage, removes, Some(cutoff_ms), &mut referenced)?;
    }
    Ok(referenced)
}

/// Adds the paths of the valid rows of `files` (an add or remove layout) to `referenced`;
/// with `cutoff_ms`, only removes deleted at or after it.
fn collect_referenced(
    storage: &Storage,
    files: &StructArray,
    cutoff_ms: Option<i64>,
    referenced: &mut HashSet<String>,
) -> Result<()> {
    let Some(paths) = files
        .column_by_name(add::PATH)
        .and_then(|c| c.as_string_opt::<i32>())
    else {
        return Ok(());
    };
    let deleted_at = files
        .column_by_name(remove::DELETION_TIMESTAMP)
        .and_then(|c| c.as_primitive_opt::<Int64Type>());
    let dvs = files
        .column_by_name(add::DELETION_VECTOR)
        .and_then(|c| c.as_struct_opt());
    for row in 0..files.len() {
        if !files.is_valid(row) || paths.is_null(row) {
            continue;
        }
        if let (Some(cutoff), Some(deleted_at)) = (cutoff_ms, deleted_at) {
            // A tombstone without a deletion timestamp counts as deleted at time 0 (Spark's
            // `delTimestamp`), hence expired.
            let at = deleted_at.is_valid(row).then(|| deleted_at.value(row));
            if at.unwrap_or(0) < cutoff {
                continue;
            }
        }
        if let Some(path) = relative_store_path(storage, paths.value(row)) {
            referenced.insert(path);
        }
        if let Some(dv) = dvs.and_then(|dvs| descriptor(dvs, row)) {
            if let Some(path) = dv_store_path(storage, &dv) {
                referenced.insert(path);
            }
        }
    }
    Ok(())
}

/// The root-relative store path of a file the log names (`log_path`, URL-encoded), or `None`
/// when it is outside the table root (or cannot be resolved, and so cannot be listed either).
pub(crate) fn relative_store_path(storage: &Storage, log_path: &str) -> Option<String> {
    let location = storage.resolve(log_path).ok()?;
    let root = storage.root_path().as_ref();
    let location = location.as_ref();
    let relative = match root {
        "" => location,
        root => location.strip_prefix(root)?.strip_prefix('/')?,
    };
    Some(relative.to_string())
}

/// The root-relative store path of the file of an on-disk deletion vector.
pub(crate) fn dv_store_path(storage: &Storage, dv: &DeletionVectorDescriptor) -> Option<String> {
    match resolve_dv(dv, storage.root_url()).ok()? {
        DvLocation::File { url, .. } => relative_store_path(storage, url.as_str()),
        DvLocation::Inline(_) => None,
    }
}

/// The deletion vector descriptor of row `row` of a `deletionVector` struct column.
pub(crate) fn descriptor(dvs: &StructArray, row: usize) -> Option<DeletionVectorDescriptor> {
    if dvs.is_null(row) {
        return None;
    }
    let text = |name: &str| {
        dvs.column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row).to_string())
    };
    let int32 = |name: &str| {
        dvs.column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int32Type>())
            .filter(|c| c.is_valid(row))
            .map(|c| c.value(row))
    };
    Some(DeletionVectorDescriptor {
        storage_type: text("storageType")?,
        path_or_inline_dv: text("pathOrInlineDv")?,
        offset: int32("offset"),
        size_in_bytes: int32("sizeInBytes").unwrap_or_default(),
        cardinality: 0,
    })
}

/// What the listing found.
struct Unreferenced {
    candidates: Vec<TableObject>,
    num_directories: u64,
}

/// Streams the listing of the table root and keeps the objects that are not hidden, not
/// referenced and last modified before `cutoff_ms`.
async fn find_unreferenced(
    storage: &Storage,
    referenced: &HashSet<String>,
    partition_columns: &[String],
    cutoff_ms: i64,
) -> Result<Unreferenced> {
    let mut directories: HashSet<String> = HashSet::new();
    let mut candidates = Vec::new();
    let mut listing = storage.list_table();
    while let Some(object) = listing.try_next().await? {
        if is_hidden(&object.path, partition_columns) {
            continue;
        }
        if let Some((directory, _)) = object.path.rsplit_once('/') {
            if !directories.contains(directory) {
                for (at, _) in directory.match_indices('/') {
                    directories.insert(directory[..at].to_string());
                }
                directories.insert(directory.to_string());
            }
        }
        if object.modified_ms < cutoff_ms && !referenced.contains(&object.path) {
            candidates.push(object);
        }
    }
    Ok(Unreferenced {
        candidates,
        num_directories: directories.len() as u64 + 1,
    })
}

/// Spark's `DeltaTableUtils.isHiddenDirectory` applied to every segment of `path`: a segment
/// starting with `_` or `.` is hidden unless it is a partition directory (`col=...` of a
/// partition column), `_change_data` or `_delta_index`; `metadata` is hidden too.
pub(crate) fn is_hidden(path: &str, partition_columns: &[String]) -> bool {
    path.split('/').any(|segment| {
        let partition = partition_columns
            .iter()
            .any(|column| segment.starts_with(&format!("{column}=")));
        segment == "metadata"
            || ((segment.starts_with('.') || segment.starts_with('_'))
                && !segment.starts_with("_delta_index")
                && !segment.starts_with("_change_data")
                && !partition)
    })
}

/// Deletes `files` [`DELETE_BATCH`] at a time; returns how many were deleted.
async fn delete_in_batches(storage: &Storage, files: &[String]) -> Result<usize> {
    let mut deleted = 0;
    for batch in files.chunks(DELETE_BATCH) {
        deleted += storage.delete_relative(batch.to_vec()).await?;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths_follow_sparks_rule() {
        let partitions = vec!["_p".to_string(), "year".to_string()];
        assert!(is_hidden("_delta_log/00000.json", &partitions));
        assert!(is_hidden(".part-0.parquet.crc", &partitions));
        assert!(is_hidden("year=2020/_SUCCESS", &partitions));
        assert!(is_hidden("metadata/x.json", &partitions));
        assert!(!is_hidden("_p=1/part-0.parquet", &partitions));
        assert!(!is_hidden("_change_data/cdc-0.parquet", &partitions));
        assert!(!is_hidden("year=2020/part-0.parquet", &partitions));
        assert!(!is_hidden("deletion_vector_1.bin", &partitions));
    }

    #[test]
    fn retention_below_the_tables_is_refused_unless_told() {
        let week = 7 * 24 * 3_600_000;
        let short = VacuumOptions {
            retention_hours: Some(1.0),
            ..VacuumOptions::default()
        };
        assert!(matches!(
            specified_retention_ms(&short, week),
            Err(Error::NotAllowed(_))
        ));
        let unchecked = VacuumOptions {
            enforce_retention_duration: false,
            ..short
        };
        assert_eq!(
            specified_retention_ms(&unchecked, week).unwrap(),
            Some(3_600_000)
        );
        let negative = VacuumOptions {
            retention_hours: Some(-1.0),
            ..unchecked
        };
        assert!(matches!(
            specified_retention_ms(&negative, week),
            Err(Error::InvalidArgument(_))
        ));
    }
}
