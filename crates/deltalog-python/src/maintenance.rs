//! Table maintenance: `vacuum`, `optimize`, `restore` and `convert_to_delta`, wrapped by
//! `deltalog._maintenance`. Results come back as dicts named as Delta on Spark names them.

use deltalog_core::ops::generate_symlink_manifest as generate_symlink_manifest_core;
use deltalog_core::ops::{
    FileSizeMetrics, OptimizeOptions, OptimizeResult, RestoreOptions, RestoreResult, VacuumOptions,
    VacuumResult,
};
use deltalog_core::{SnapshotAt, Table};
use pyo3::prelude::*;
use pyo3::IntoPyObject;

use crate::convert::{PyFilter, PyPartitionColumns, PyStorageOptions};
use crate::runtime::wait_for_future;
use crate::table::RawDeltaTable;

/// Deletes (or lists, with `dry_run`) the files no version within the retention needs (see
/// [`vacuum_core`]): `files` (root-relative paths), `dry_run`, `num_deleted`,
/// `size_in_bytes`, `num_directories`, `start_version`, `end_version`.
#[pyfunction]
#[pyo3(signature = (table, retention_hours=None, dry_run=true, enforce_retention_duration=true))]
pub fn vacuum(
    py: Python<'_>,
    table: &RawDeltaTable,
    retention_hours: Option<f64>,
    dry_run: bool,
    enforce_retention_duration: bool,
) -> PyResult<VacuumDict> {
    let options = VacuumOptions {
        retention_hours,
        dry_run,
        enforce_retention_duration,
    };
    let table = table.table().clone();
    let done = wait_for_future(py, move || async move { table.vacuum(options).await })?;
    Ok(VacuumDict::from(done))
}

/// Compacts small files and purges deletion vectors, or clusters a clustered table (see
/// [`optimize_core`]); the metrics of Spark's `OptimizeResult` plus `version` (`None` when
/// nothing was rewritten, and for a dry run), `dry_run` and `filesToRewrite` (filled by a dry
/// run only).
#[pyfunction]
#[pyo3(signature = (table, filter=None, target_size=None, z_order_by=None, dry_run=false, full=false))]
pub fn optimize(
    py: Python<'_>,
    table: &RawDeltaTable,
    filter: Option<PyFilter>,
    target_size: Option<u64>,
    z_order_by: Option<Vec<String>>,
    dry_run: bool,
    full: bool,
) -> PyResult<OptimizeDict> {
    let options = OptimizeOptions {
        filter: PyFilter::expr(filter),
        target_size,
        z_order_by: z_order_by.unwrap_or_default(),
        dry_run,
        full,
        ..OptimizeOptions::default()
    };
    let table = table.table().clone();
    let done = wait_for_future(py, move || async move { table.optimize(options).await })?;
    Ok(OptimizeDict::new(done, dry_run))
}

/// Restores the table to `version`, or to the version at `timestamp_ms` (see
/// [`restore_core`]); Spark's RESTORE metrics plus `version` (`None` for a dry run, which
/// checks everything and commits nothing), `restored_version` and `dry_run`.
#[pyfunction]
#[pyo3(signature = (table, version=None, timestamp_ms=None, dry_run=false))]
pub fn restore(
    py: Python<'_>,
    table: &RawDeltaTable,
    version: Option<u64>,
    timestamp_ms: Option<i64>,
    dry_run: bool,
) -> PyResult<RestoreDict> {
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
    Ok(RestoreDict::new(done, dry_run))
}

/// Writes the symlink format manifests of the table's latest version under
/// `_symlink_format_manifest/` (see [`generate_symlink_manifest`]); returns the manifests
/// written and deleted (paths relative to the table root).
#[pyfunction]
pub fn generate_symlink_manifest(
    py: Python<'_>,
    table: &RawDeltaTable,
) -> PyResult<(Vec<String>, Vec<String>)> {
    let table = table.table().clone();
    let done = wait_for_future(py, move || async move {
        let snapshot = table.snapshot(SnapshotAt::Latest).await?;
        generate_symlink_manifest_core(&snapshot).await
    })?;
    Ok((done.written, done.deleted))
}

/// Converts the Parquet directory at `uri` into a Delta table partitioned by the columns of
/// `partition_by` (see [`Table::convert_to_delta`]); returns the table (which is opened as it
/// is when it already was one).
#[pyfunction]
#[pyo3(signature = (uri, partition_by=None, storage_options=None))]
pub fn convert_to_delta(
    py: Python<'_>,
    uri: String,
    partition_by: Option<PyPartitionColumns>,
    storage_options: Option<PyStorageOptions>,
) -> PyResult<RawDeltaTable> {
    let table = Table::from_storage(PyStorageOptions::storage(py, &uri, storage_options)?);
    let partition = partition_by.map(|columns| columns.0);
    let converter = table.clone();
    wait_for_future(py, move || async move {
        converter.convert_to_delta(partition).await
    })?;
    Ok(RawDeltaTable::new(table))
}

/// A [`VacuumResult`] as the dict Python receives.
#[derive(IntoPyObject)]
pub struct VacuumDict {
    #[pyo3(item)]
    files: Vec<String>,
    #[pyo3(item)]
    dry_run: bool,
    #[pyo3(item)]
    num_deleted: u64,
    #[pyo3(item)]
    size_in_bytes: u64,
    #[pyo3(item)]
    num_directories: u64,
    #[pyo3(item)]
    start_version: Option<u64>,
    #[pyo3(item)]
    end_version: Option<u64>,
}

impl From<VacuumResult> for VacuumDict {
    fn from(done: VacuumResult) -> Self {
        VacuumDict {
            files: done.files,
            dry_run: done.dry_run,
            num_deleted: done.num_deleted,
            size_in_bytes: done.size_in_bytes,
            num_directories: done.num_directories,
            start_version: done.start_version,
            end_version: done.end_version,
        }
    }
}

/// An [`OptimizeResult`] as the dict Python receives: Spark's `OptimizeMetrics` names.
#[derive(IntoPyObject)]
pub struct OptimizeDict {
    #[pyo3(item)]
    version: Option<u64>,
    #[pyo3(item("numFilesAdded"))]
    num_files_added: u64,
    #[pyo3(item("numFilesRemoved"))]
    num_files_removed: u64,
    #[pyo3(item("filesAdded"))]
    files_added: SizeMetricsDict,
    #[pyo3(item("filesRemoved"))]
    files_removed: SizeMetricsDict,
    #[pyo3(item("partitionsOptimized"))]
    partitions_optimized: u64,
    #[pyo3(item("numBatches"))]
    num_batches: u64,
    #[pyo3(item("totalConsideredFiles"))]
    total_considered_files: u64,
    #[pyo3(item("totalFilesSkipped"))]
    total_files_skipped: u64,
    #[pyo3(item("numDeletionVectorsRemoved"))]
    num_deletion_vectors_removed: u64,
    #[pyo3(item("numDeletionVectorRowsRemoved"))]
    num_deletion_vector_rows_removed: u64,
    #[pyo3(item("zOrderBy"))]
    z_order_by: Vec<String>,
    #[pyo3(item("clusterBy"))]
    cluster_by: Vec<String>,
    #[pyo3(item)]
    dry_run: bool,
    #[pyo3(item("filesToRewrite"))]
    files_to_rewrite: Vec<String>,
}

impl OptimizeDict {
    pub(crate) fn new(done: OptimizeResult, dry_run: bool) -> Self {
        OptimizeDict {
            version: done.version,
            num_files_added: done.num_files_added,
            num_files_removed: done.num_files_removed,
            files_added: SizeMetricsDict::from(&done.files_added),
            files_removed: SizeMetricsDict::from(&done.files_removed),
            partitions_optimized: done.partitions_optimized,
            num_batches: done.num_batches,
            total_considered_files: done.total_considered_files,
            total_files_skipped: done.total_files_skipped,
            num_deletion_vectors_removed: done.num_deletion_vectors_removed,
            num_deletion_vector_rows_removed: done.num_deletion_vector_rows_removed,
            z_order_by: done.z_order_by,
            cluster_by: done.cluster_by,
            dry_run,
            files_to_rewrite: done.files_to_rewrite,
        }
    }
}

/// [`FileSizeMetrics`] as the dict Python receives (Spark's `FileSizeStats`).
#[derive(IntoPyObject)]
pub struct SizeMetricsDict {
    #[pyo3(item)]
    min: Option<u64>,
    #[pyo3(item)]
    max: Option<u64>,
    #[pyo3(item)]
    avg: f64,
    #[pyo3(item("totalFiles"))]
    total_files: u64,
    #[pyo3(item("totalSize"))]
    total_size: u64,
}

impl From<&FileSizeMetrics> for SizeMetricsDict {
    fn from(metrics: &FileSizeMetrics) -> Self {
        SizeMetricsDict {
            min: metrics.min,
            max: metrics.max,
            avg: metrics.avg,
            total_files: metrics.total_files,
            total_size: metrics.total_size,
        }
    }
}

/// A [`RestoreResult`] as the dict Python receives: Spark's RESTORE metric names.
#[derive(IntoPyObject)]
pub struct RestoreDict {
    #[pyo3(item)]
    version: Option<u64>,
    #[pyo3(item)]
    restored_version: u64,
    #[pyo3(item("tableSizeAfterRestore"))]
    table_size_after_restore: u64,
    #[pyo3(item("numOfFilesAfterRestore"))]
    num_of_files_after_restore: u64,
    #[pyo3(item("numRemovedFiles"))]
    num_removed_files: u64,
    #[pyo3(item("numRestoredFiles"))]
    num_restored_files: u64,
    #[pyo3(item("removedFilesSize"))]
    removed_files_size: u64,
    #[pyo3(item("restoredFilesSize"))]
    restored_files_size: u64,
    #[pyo3(item)]
    dry_run: bool,
}

impl RestoreDict {
    fn new(done: RestoreResult, dry_run: bool) -> Self {
        RestoreDict {
            version: done.version,
            restored_version: done.restored_version,
            table_size_after_restore: done.table_size_after_restore,
            num_of_files_after_restore: done.num_of_files_after_restore,
            num_removed_files: done.num_removed_files,
            num_restored_files: done.num_restored_files,
            removed_files_size: done.removed_files_size,
            restored_files_size: done.restored_files_size,
            dry_run,
        }
    }
}
