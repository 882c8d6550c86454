//! Table maintenance: `vacuum`, `optimize`, `restore` and `convert_to_delta`, wrapped by
//! `deltalog._maintenance`. Results come back as dicts named as Delta on Spark names them.

use deltalog_core::{
    FileSizeMetrics, OptimizeOptions, RestoreOptions, SnapshotAt, Table, VacuumOptions,
};
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::convert::{to_py, PyFilter, PySchemaInput, PyStorageOptions};
use crate::runtime::wait_for_future;
use crate::table::RawDeltaTable;

/// Deletes (or lists, with `dry_run`) the files no version within the retention needs (see
/// [`vacuum_core`]): `files` (root-relative paths), `dry_run`, `num_deleted`,
/// `size_in_bytes`, `num_directories`, `start_version`, `end_version`.
#[pyfunction]
#[pyo3(signature = (table, retention_hours=None, dry_run=true, enforce_retention_duration=true))]
pub fn vacuum<'py>(
    py: Python<'py>,
    table: &RawDeltaTable,
    retention_hours: Option<f64>,
    dry_run: bool,
    enforce_retention_duration: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let options = VacuumOptions {
        retention_hours,
        dry_run,
        enforce_retention_duration,
    };
    let table = table.table().clone();
    let done = wait_for_future(py, move || async move { table.vacuum(options).await })?;
    let value = json!({
        "files": done.files,
        "dry_run": done.dry_run,
        "num_deleted": done.num_deleted,
        "size_in_bytes": done.size_in_bytes,
        "num_directories": done.num_directories,
        "start_version": done.start_version,
        "end_version": done.end_version,
    });
    to_py(py, &value)
}

/// Compacts small files and purges deletion vectors (see [`optimize_core`]); the metrics of
/// Spark's `OptimizeMetrics` plus `version` (`None` when nothing was rewritten, and for a
/// dry run), `dry_run` and `filesToRewrite` (filled by a dry run only).
#[pyfunction]
#[pyo3(signature = (table, filter=None, target_size=None, z_order_by=None, dry_run=false))]
pub fn optimize<'py>(
    py: Python<'py>,
    table: &RawDeltaTable,
    filter: Option<PyFilter>,
    target_size: Option<u64>,
    z_order_by: Option<Vec<String>>,
    dry_run: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let options = OptimizeOptions {
        filter: PyFilter::expr(filter),
        target_size,
        z_order_by: z_order_by.unwrap_or_default(),
        dry_run,
        ..OptimizeOptions::default()
    };
    let table = table.table().clone();
    let done = wait_for_future(py, move || async move { table.optimize(options).await })?;
    let value = json!({
        "version": done.version,
        "numFilesAdded": done.num_files_added,
        "numFilesRemoved": done.num_files_removed,
        "filesAdded": size_metrics(&done.files_added),
        "filesRemoved": size_metrics(&done.files_removed),
        "partitionsOptimized": done.partitions_optimized,
        "numBatches": done.num_batches,
        "totalConsideredFiles": done.total_considered_files,
        "totalFilesSkipped": done.total_files_skipped,
        "numDeletionVectorsRemoved": done.num_deletion_vectors_removed,
        "numDeletionVectorRowsRemoved": done.num_deletion_vector_rows_removed,
        "zOrderBy": done.z_order_by,
        "dry_run": dry_run,
        "filesToRewrite": done.files_to_rewrite,
    });
    to_py(py, &value)
}

/// Restores the table to `version`, or to the version at `timestamp_ms` (see
/// [`restore_core`]); Spark's RESTORE metrics plus `version` (`None` for a dry run, which
/// checks everything and commits nothing), `restored_version` and `dry_run`.
#[pyfunction]
#[pyo3(signature = (table, version=None, timestamp_ms=None, dry_run=false))]
pub fn restore<'py>(
    py: Python<'py>,
    table: &RawDeltaTable,
    version: Option<u64>,
    timestamp_ms: Option<i64>,
    dry_run: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let at = match (version, timestamp_ms) {
        (Some(version), None) => SnapshotAt::Version(version),
        (None, Some(ms)) => SnapshotAt::Timestamp(ms),
        _ => SnapshotAt::Latest,
    };
    let table = table.table().clone();
    let options = RestoreOptions { dry_run };
    let done = wait_for_future(
        py,
        move || async move { table.restore_with(at, &options).await },
    )?;
    let value = json!({
        "version": done.version,
        "restored_version": done.restored_version,
        "tableSizeAfterRestore": done.table_size_after_restore,
        "numOfFilesAfterRestore": done.num_of_files_after_restore,
        "numRemovedFiles": done.num_removed_files,
        "numRestoredFiles": done.num_restored_files,
        "removedFilesSize": done.removed_files_size,
        "restoredFilesSize": done.restored_files_size,
        "dry_run": dry_run,
    });
    to_py(py, &value)
}

/// Converts the Parquet directory at `uri` into a Delta table partitioned by the columns of
/// `partition_by` (see [`convert_core`]); returns `(version, converted, num_files)`.
#[pyfunction]
#[pyo3(signature = (uri, partition_by=None, storage_options=None))]
pub fn convert_to_delta(
    py: Python<'_>,
    uri: String,
    partition_by: Option<PySchemaInput>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<(u64, bool, u64)> {
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let partition = partition_by.map(|schema| schema.0);
    let done = wait_for_future(py, move || async move {
        table.convert_to_delta(partition).await
    })?;
    Ok((done.version, done.converted, done.num_files))
}

fn size_metrics(metrics: &FileSizeMetrics) -> Value {
    json!({
        "min": metrics.min,
        "max": metrics.max,
        "avg": metrics.avg,
        "totalFiles": metrics.total_files,
        "totalSize": metrics.total_size,
    })
}
